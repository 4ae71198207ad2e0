use super::*;
use serde_json::json;

fn ids(d: &ChainLists) -> Vec<String> {
    d.records
        .iter()
        .map(|r| serde_json::from_str::<Value>(r).unwrap()["id"].to_string())
        .collect()
}

fn failed(d: &ChainLists) -> Vec<String> {
    let all = ids(d);
    d.failed.iter().map(|&i| all[i].clone()).collect()
}

#[test]
fn records_inserted_at_the_head_shift_the_list_and_keep_the_failed_list() {
    let mut d = ChainLists::default();
    d.push(json!({"id": "a"}));
    d.push(json!({"id": "b"}));
    assert!(d.mark("b"));
    d.push_front(vec![
        json!({"id": "c"}),
        json!({"id": "d"}),
        json!({"id": "a", "v": 2}), // known: replaced in place, not moved
    ]);
    assert_eq!(ids(&d), ["\"c\"", "\"d\"", "\"a\"", "\"b\""]);
    assert!(d.records[2].contains("\"v\":2"));
    assert_eq!(failed(&d), ["\"b\""]);
    assert!(d.mark("c"));
    assert!(!d.mark("nope"));
    assert!(d.mark("b"));
    assert_eq!(failed(&d), ["\"b\"", "\"c\""]);
    d.unmark("b");
    assert_eq!(failed(&d), ["\"c\""]);
    d.remove(&["d".into(), "nope".into()]);
    assert_eq!(ids(&d), ["\"c\"", "\"a\"", "\"b\""]);
    assert_eq!(failed(&d), ["\"c\""]);
    d.push(json!({"id": "d"}));
    assert_eq!(ids(&d), ["\"c\"", "\"a\"", "\"b\"", "\"d\""]);
    assert_eq!((d.len(), d.ids.len(), d.failed_len()), (4, 4, 1));
    assert!(d
        .ids
        .iter()
        .all(|(id, &i)| ids(&d)[i] == format!("\"{id}\"")));
}
