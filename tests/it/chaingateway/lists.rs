//! One chain's lists in the fake (`ChainLists`): records inserted at the head, removed,
//! replaced in place, and the failed list kept on the same records through all of it.

use payrecon_testkit::sandbox::chaingateway::ChainLists;
use serde_json::{json, Value};

fn id(record: &str) -> String {
    serde_json::from_str::<Value>(record).unwrap()["id"].to_string()
}

fn ids(d: &ChainLists) -> Vec<String> {
    d.records().map(id).collect()
}

fn failed(d: &ChainLists) -> Vec<String> {
    d.failed().map(id).collect()
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
    assert!(d.records().nth(2).unwrap().contains("\"v\":2"));
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
    assert_eq!((d.len(), d.failed_len()), (4, 1));
    // Every id still finds its own record after the shifts and the removal: a known id is
    // replaced where it stands, and marks that record.
    for (i, name) in ["c", "a", "b", "d"].into_iter().enumerate() {
        d.push(json!({"id": name, "v": i}));
        assert_eq!(
            d.records().nth(i).unwrap(),
            json!({"id": name, "v": i}).to_string()
        );
    }
    assert_eq!(d.len(), 4);
    assert!(d.mark("d"));
    assert_eq!(failed(&d), ["\"c\"", "\"d\""]);
    assert!(!d.mark("nope") && !d.is_empty());
}
