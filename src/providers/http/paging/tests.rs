use super::*;
use serde_json::json;

#[test]
fn values_are_percent_encoded() {
    assert_eq!(encode("2026-11-01T00:00:00Z"), "2026-11-01T00%3A00%3A00Z");
    assert_eq!(encode("a/b c+d"), "a%2Fb%20c%2Bd");
    let vars = [("cursor", "x&y=1".to_string())];
    assert_eq!(
        fill("/p?c={cursor}&k={other}", &vars),
        "/p?c=x%26y%3D1&k={other}"
    );
    assert_eq!(
        join("http://h/api/", "/v1/x?a=1").unwrap().as_str(),
        "http://h/api/v1/x?a=1"
    );
}

#[test]
fn link_headers() {
    let h = r#"<https://a/x?page=1>; rel="prev", <https://a/x?page=3>; rel="next""#;
    assert_eq!(link_next([h]).as_deref(), Some("https://a/x?page=3"));
    assert_eq!(
        link_next(["</x?p=2>; rel=\"last next\""]).as_deref(),
        Some("/x?p=2")
    );
    assert_eq!(link_next(["</x?p=2>; REL=next"]).as_deref(), Some("/x?p=2"));
    assert_eq!(link_next(["</x?p=1>; rel=\"prev\""]), None);
    assert_eq!(link_next(["<broken"]), None);
    assert_eq!(link_next([]), None);
}

#[test]
fn hints_are_read_or_refused() {
    let page = Pagination::Page {
        first: 1,
        has_more: Some("/more".into()),
    };
    assert_eq!(
        read_hint(&page, &json!({"more": false}), None),
        Ok(Hint::HasMore(Some(false)))
    );
    assert_eq!(read_hint(&page, &json!({}), None), Ok(Hint::HasMore(None)));
    assert!(read_hint(&page, &json!({"more": "no"}), None).is_err());
    let cursor = Pagination::Cursor {
        next: "/next".into(),
    };
    assert_eq!(
        read_hint(&cursor, &json!({"next": ""}), None),
        Ok(Hint::Cursor(None))
    );
    assert_eq!(
        read_hint(&cursor, &json!({"next": 7}), None),
        Ok(Hint::Cursor(Some("7".into())))
    );
    assert!(read_hint(&cursor, &json!({"next": [1]}), None).is_err());
}

fn spec(pagination: Pagination) -> ListSpec {
    ListSpec {
        path: "/l?c={cursor}&p={page}&o={offset}&n={limit}&s={since}".into(),
        time_format: TimeFormat::Unix,
        pagination,
        items: "/data".into(),
    }
}

#[test]
fn a_repeated_cursor_fails_the_walk() {
    let s = spec(Pagination::Cursor { next: "/n".into() });
    let t = jiff::Timestamp::UNIX_EPOCH;
    let mut w = Walker::new(&s, "http://h", t, t);
    let u = w.url().unwrap().unwrap();
    assert_eq!(u.as_str(), "http://h/l?c=&p=0&o=0&n=0&s=0");
    w.advance(&u, 1, Hint::Cursor(Some("a".into()))).unwrap();
    w.advance(&u, 1, Hint::Cursor(Some("b".into()))).unwrap();
    let e = w
        .advance(&u, 1, Hint::Cursor(Some("a".into())))
        .unwrap_err();
    assert!(e.0.contains("twice"), "{e}");
}

#[test]
fn offset_and_page_walks_stop() {
    let s = spec(Pagination::Offset { limit: 2 });
    let t = jiff::Timestamp::UNIX_EPOCH;
    let mut w = Walker::new(&s, "http://h", t, t);
    let u = w.url().unwrap().unwrap();
    w.advance(&u, 2, Hint::None).unwrap();
    assert!(w.url().unwrap().unwrap().as_str().contains("o=2&n=2"));
    w.advance(&u, 1, Hint::None).unwrap();
    assert_eq!(w.url().unwrap(), None);

    let s = spec(Pagination::Page {
        first: 1,
        has_more: None,
    });
    let mut w = Walker::new(&s, "http://h", t, t);
    w.advance(&u, 5, Hint::HasMore(None)).unwrap();
    assert!(w.url().unwrap().unwrap().as_str().contains("p=2"));
    w.advance(&u, 0, Hint::HasMore(None)).unwrap();
    assert_eq!(w.url().unwrap(), None);
}
