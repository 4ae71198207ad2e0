use super::*;

fn pages(c: &Cover, from: u64) -> Vec<u64> {
    c.missing_pages(from).into_iter().flatten().collect()
}

#[test]
fn pages_read_in_any_order_merge_into_one_interval() {
    let mut c = Cover::new(Frame::Head, 15, 100);
    for p in [3, 1, 7, 2, 5, 4, 6] {
        c.add(p, 100, if p == 7 { 10 } else { 15 });
    }
    assert_eq!(c.read.len(), 1);
    assert!(c.gaps(0).is_empty());
    assert_eq!(pages(&c, 0), Vec::<u64>::new());
}

#[test]
fn growth_at_the_end_is_missing_from_the_head_frame() {
    let mut c = Cover::new(Frame::Head, 15, 30);
    c.add(1, 30, 15);
    c.add(2, 47, 15); // 17 appended meanwhile: pages 3 and 4 now
    assert_eq!(c.gaps(0), vec![(30, 47)]);
    assert_eq!(pages(&c, 0), vec![3, 4]);
    assert_eq!(pages(&c, 15), vec![3, 4]);
}

#[test]
fn records_pushed_past_a_page_read_early_are_found_in_the_tail_frame() {
    // 45 records newest first; page 2 is served, then 5 arrive at the head, then page 1
    // and page 3: the 5 oldest records of the old page 1 moved to page 2, already read.
    let mut c = Cover::new(Frame::Tail, 15, 45);
    c.add(2, 45, 15); // tail offsets [15, 30)
    c.add(1, 50, 15); // [35, 50)
    c.add(3, 50, 15); // [5, 20)
    assert_eq!(c.gaps(0), vec![(0, 5), (30, 35)]);
    // Tail offsets 30..35 are positions 15..20 now: page 2; 0..5 are 45..50: page 4.
    assert_eq!(pages(&c, 0), vec![2, 4]);
    assert_eq!(pages(&c, 20), vec![2]);
    c.add(2, 50, 15);
    assert_eq!(pages(&c, 5), Vec::<u64>::new());
}

#[test]
fn a_list_that_shrank_asks_for_nothing_past_its_end() {
    let mut c = Cover::new(Frame::Head, 15, 45);
    c.add(1, 45, 15);
    c.add(2, 20, 5);
    assert!(c.gaps(0).is_empty());
    let mut e = Cover::new(Frame::Head, 15, 0);
    e.add(1, 0, 0);
    assert!(pages(&e, 0).is_empty());
}
