//! A small generic JSON API on loopback serving the same items in every pagination style
//! (page + has_more, cursor, offset, Link header) and both time formats; the client must read
//! every item exactly once, send the window as configured, and refuse a list that loops.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use payrecon::providers::http::{
    AmountUnit, FieldPointers, HttpSettings, ListSpec, Pagination, StatusAction, TimeFormat,
};
use payrecon::providers::ListKind;
use payrecon::secret::Secret;
use serde_json::{json, Value};

use super::{client, hash, ids, read_all, KEY};

#[derive(Default)]
struct Fake {
    items: Vec<Value>,
    page_size: usize,
    /// The query of every request.
    queries: Vec<BTreeMap<String, String>>,
    /// Cursor and Link styles answer the same next page forever.
    looping: bool,
}

type Shared = Arc<Mutex<Fake>>;
type Q = Query<BTreeMap<String, String>>;

/// Requires `X-Api-Key: <KEY>` (a raw key in a custom header).
fn authorised(headers: &HeaderMap) -> bool {
    headers.get("x-api-key").and_then(|v| v.to_str().ok()) == Some(KEY)
}

fn take(f: &Shared, q: &BTreeMap<String, String>, start: usize) -> (Vec<Value>, bool, usize) {
    let mut fake = f.lock().unwrap();
    fake.queries.push(q.clone());
    let page: Vec<Value> = fake
        .items
        .iter()
        .skip(start)
        .take(fake.page_size)
        .cloned()
        .collect();
    let more = start + page.len() < fake.items.len();
    (page, more || fake.looping, fake.page_size)
}

fn num(q: &BTreeMap<String, String>, k: &str) -> usize {
    q.get(k).and_then(|v| v.parse().ok()).unwrap_or(0)
}

async fn by_page(State(f): State<Shared>, h: HeaderMap, Query(q): Q) -> Response {
    if !authorised(&h) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let size = f.lock().unwrap().page_size;
    let (items, more, _) = take(&f, &q, (num(&q, "page").max(1) - 1) * size);
    Json(json!({"result": {"items": items}, "meta": {"more": more}})).into_response()
}

async fn by_cursor(State(f): State<Shared>, h: HeaderMap, Query(q): Q) -> Response {
    if !authorised(&h) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let start = q
        .get("cursor")
        .and_then(|c| c.strip_prefix('k'))
        .and_then(|n| n.parse().ok());
    let (items, more, _) = take(&f, &q, start.unwrap_or(0));
    let looping = f.lock().unwrap().looping;
    let next = match (more, looping) {
        (_, true) => json!("k1"),
        (true, _) => json!(format!("k{}", start.unwrap_or(0) + items.len())),
        (false, _) => Value::Null,
    };
    Json(json!({"items": items, "next": next})).into_response()
}

async fn by_offset(State(f): State<Shared>, h: HeaderMap, Query(q): Q) -> Response {
    if !authorised(&h) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    f.lock().unwrap().page_size = num(&q, "limit");
    let (items, _, _) = take(&f, &q, num(&q, "offset"));
    Json(json!({"items": items})).into_response()
}

/// The body is the bare array; the next page is a relative `Link`.
async fn by_link(State(f): State<Shared>, h: HeaderMap, Query(q): Q) -> Response {
    if !authorised(&h) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let p = num(&q, "p").max(1);
    let size = f.lock().unwrap().page_size;
    let (items, more, _) = take(&f, &q, (p - 1) * size);
    let looping = f.lock().unwrap().looping;
    let mut headers = HeaderMap::new();
    let next = if looping { 2 } else { p + 1 };
    let link = match more {
        true => format!("</link?p=1>; rel=\"first\", </link?p={next}>; rel=\"next\""),
        false => "</link?p=1>; rel=\"first\"".to_string(),
    };
    headers.insert("link", link.parse().unwrap());
    (headers, Json(Value::Array(items))).into_response()
}

async fn start(items: Vec<Value>, page_size: usize) -> (Shared, String) {
    let fake: Shared = Arc::new(Mutex::new(Fake {
        items,
        page_size,
        ..Fake::default()
    }));
    let app = Router::new()
        .route("/page", get(by_page))
        .route("/cursor", get(by_cursor))
        .route("/offset", get(by_offset))
        .route("/link", get(by_link))
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (fake, url)
}

fn item(i: u64) -> Value {
    json!({"id": i, "state": "paid", "net": "ethereum", "tx": hash(i), "log": i,
           "amount": format!("{i}000"), "at": 1_793_500_000 + i})
}

fn settings(base_url: &str, path: &str, pagination: Pagination, items: &str) -> HttpSettings {
    HttpSettings {
        kinds: Default::default(),
        name: "generic".into(),
        base_url: base_url.into(),
        api_key: Some(Secret::new(KEY)),
        auth_header: "X-Api-Key".into(),
        auth_scheme: String::new(),
        chains: vec!["ethereum".into()],
        timeout: std::time::Duration::from_secs(2),
        max_retries: 2,
        backoff: std::time::Duration::from_millis(5),
        max_concurrency: 1,
        payments: Some(ListSpec {
            path: path.into(),
            time_format: TimeFormat::Rfc3339,
            pagination,
            items: items.into(),
        }),
        failed: None,
        fields: FieldPointers {
            event_id: "/id".into(),
            order_ref: None,
            chain: Some("/net".into()),
            tx_hash: Some("/tx".into()),
            log_index: Some("/log".into()),
            amount: Some("/amount".into()),
            asset: None,
            status: "/state".into(),
            updated_at: "/at".into(),
        },
        amount_unit: AmountUnit::Base,
        status_map: BTreeMap::from([
            ("paid".into(), StatusAction::Confirmed),
            ("void".into(), StatusAction::Ignore),
        ]),
        resend: None,
        retry_window: std::time::Duration::ZERO,
        preset: None,
        decimals: Default::default(),
    }
}

/// Each style over 10 items, 3 a page: every id once, in the expected number of requests.
#[tokio::test]
async fn every_pagination_style_reads_each_record_once() {
    let cursor = Pagination::Cursor {
        next: "/next".into(),
    };
    let has_more = Some("/meta/more".to_string());
    let cases = [
        (
            "/page?page={page}",
            Pagination::Page { first: 1, has_more },
            "/result/items",
            4,
        ),
        (
            "/page?page={page}",
            Pagination::Page {
                first: 1,
                has_more: None,
            },
            "/result/items",
            5,
        ),
        ("/cursor?cursor={cursor}", cursor, "/items", 4),
        (
            "/offset?offset={offset}&limit={limit}",
            Pagination::Offset { limit: 3 },
            "/items",
            4,
        ),
        ("/link?p=1", Pagination::Link, "", 4),
    ];
    let want: Vec<String> = (1..=10).map(|i: u64| i.to_string()).collect::<Vec<_>>();
    let mut want = want;
    want.sort();
    for (path, pagination, items, requests) in cases {
        let (fake, url) = start((1..=10).map(item).collect(), 3).await;
        let (c, _) = client(settings(&url, path, pagination.clone(), items));

        let pages = read_all(&c, ListKind::All).await.unwrap();

        assert_eq!(ids(&pages), want, "{pagination:?}");
        assert_eq!(
            fake.lock().unwrap().queries.len(),
            requests,
            "{pagination:?}"
        );
        let r = &pages[0].records[0];
        assert_eq!(r.amount_hint.map(|a| a.to::<u64>()), Some(1000));
        assert_eq!(r.created_at.as_second(), 1_793_500_001);
    }
}

#[tokio::test]
async fn the_window_reaches_the_server_in_each_time_format() {
    let (fake, url) = start(vec![item(1)], 3).await;
    let path = "/offset?offset={offset}&limit={limit}&since={since}&until={until}&u={since_unix}&r={until_rfc3339}";
    for (format, since, until) in [
        (
            TimeFormat::Rfc3339,
            "2026-11-01T00:00:00Z",
            "2026-11-02T00:00:00Z",
        ),
        (TimeFormat::Unix, "1793491200", "1793577600"),
    ] {
        let mut s = settings(&url, path, Pagination::Offset { limit: 3 }, "/items");
        s.payments.as_mut().unwrap().time_format = format;
        let (c, _) = client(s);
        read_all(&c, ListKind::All).await.unwrap();
        let q = fake.lock().unwrap().queries.pop().unwrap();
        assert_eq!(q["since"], since, "{format:?}");
        assert_eq!(q["until"], until, "{format:?}");
        assert_eq!(q["u"], "1793491200");
        assert_eq!(q["r"], "2026-11-02T00:00:00Z");
        assert_eq!((q["offset"].as_str(), q["limit"].as_str()), ("0", "3"));
    }
}

#[tokio::test]
async fn ignored_and_unknown_statuses_leave_the_rest_of_the_page() {
    let mut items: Vec<Value> = (1..=6).map(item).collect();
    items[1]["state"] = json!("void");
    items[2]["state"] = json!("chargeback");
    items[3].as_object_mut().unwrap().remove("tx");
    let (_fake, url) = start(items, 10).await;
    let (c, _) = client(settings(
        &url,
        "/offset?offset={offset}&limit={limit}",
        Pagination::Offset { limit: 10 },
        "/items",
    ));

    let pages = read_all(&c, ListKind::All).await.unwrap();

    assert_eq!(ids(&pages), ["1", "5", "6"]);
    let rejected = &pages[0].rejected;
    assert_eq!(rejected.len(), 2, "{rejected:?}");
    assert_eq!(rejected[0].id.as_deref(), Some("3"));
    assert!(
        rejected[0]
            .reason
            .contains("status \"chargeback\" is not in status_map"),
        "{rejected:?}"
    );
    assert_eq!(rejected[1].id.as_deref(), Some("4"));
    assert!(
        rejected[1].reason.contains("neither tx_hash nor order_ref"),
        "{rejected:?}"
    );
}

#[tokio::test]
async fn a_provider_that_pages_in_a_circle_fails_the_list() {
    for (path, pagination, items) in [
        (
            "/cursor?cursor={cursor}",
            Pagination::Cursor {
                next: "/next".into(),
            },
            "/items",
        ),
        ("/link?p=1", Pagination::Link, ""),
    ] {
        let (fake, url) = start((1..=10).map(item).collect(), 3).await;
        fake.lock().unwrap().looping = true;
        let (c, _) = client(settings(&url, path, pagination.clone(), items));

        let e = read_all(&c, ListKind::All).await.unwrap_err().to_string();

        assert!(
            e.contains("twice") && e.contains("circle"),
            "{pagination:?}: {e}"
        );
        assert!(fake.lock().unwrap().queries.len() <= 4, "{pagination:?}");
    }
}

#[tokio::test]
async fn the_custom_auth_header_is_sent_and_an_unconfigured_list_is_an_error() {
    let (_fake, url) = start(vec![item(1)], 3).await;
    let mut s = settings(&url, "/link?p=1", Pagination::Link, "");
    s.auth_header = "X-Other".into();
    let (c, _) = client(s);
    let e = read_all(&c, ListKind::All).await.unwrap_err().to_string();
    assert!(e.contains("401") && !e.contains(KEY), "{e}");
    let e = read_all(&c, ListKind::Failed)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("not configured"), "{e}");
    let e = c.resend("1").await.unwrap_err().to_string();
    assert!(e.contains("no resend call"), "{e}");
}
