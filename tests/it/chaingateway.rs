//! The Chaingateway client against the fake Chaingateway over real HTTP on loopback:
//! pagination and concurrency, retries and faults, record validation, headers, secrets.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use payrecon::domain::{Address, Asset, U256};
use payrecon::providers::chaingateway::{ChaingatewayClient, ChaingatewaySettings};
use payrecon::providers::{ListKind, ListPlan, Page, ProviderError, StatsCell, StatusClass};
use payrecon::secret::Secret;
use payrecon_testkit::sandbox::chaingateway::{notification, BlockShape, FakeChaingateway, Fault};
use serde_json::{json, Value};

mod contract;
mod faults;
mod lists;
mod window;

pub(crate) const KEY: &str = "sk_test_5f3c9a1e7d2b4c6f";
pub(crate) const USDT: &str = "0xdac17f958d2ee523a2206206994597c13d831ec7";

pub(crate) fn hash(n: u64) -> String {
    format!("0x{n:064x}")
}

pub(crate) fn addr(n: u64) -> String {
    format!("0x{n:040x}")
}

pub(crate) fn ts() -> jiff::Timestamp {
    "2026-11-01T12:00:00Z".parse().unwrap()
}

pub(crate) fn record(i: u64) -> Value {
    notification(
        &format!("n-{i}"),
        &hash(i),
        USDT,
        &addr(i),
        Some("25.5"),
        ts(),
    )
}

pub(crate) fn settings(base: &str) -> ChaingatewaySettings {
    ChaingatewaySettings {
        name: "cg".into(),
        base_url: base.into(),
        api_key: Secret::new(KEY),
        network: "mainnet".into(),
        timeout: Duration::from_secs(2),
        max_concurrency: 3,
        max_retries: 3,
        backoff: Duration::from_millis(10),
        chains: vec!["ethereum".into()],
        decimals: HashMap::from([(format!("ethereum:{USDT}"), 6)]),
        list_margin: Duration::from_secs(600),
        full_scan_every: Duration::from_secs(24 * 3600),
        kinds: Default::default(),
    }
}

pub(crate) type Seen = Arc<Mutex<Vec<StatusClass>>>;

pub(crate) fn client(s: ChaingatewaySettings) -> (ChaingatewayClient, Seen) {
    let seen: Seen = Arc::default();
    let log = seen.clone();
    let observer = Arc::new(move |c: StatusClass| log.lock().unwrap().push(c));
    (ChaingatewayClient::new(s, observer).unwrap(), seen)
}

/// Every page, or the first error.
pub(crate) async fn read_all(
    c: &ChaingatewayClient,
    list: ListKind,
) -> Result<Vec<Page>, ProviderError> {
    let items: Vec<_> = c
        .pages("ethereum", list, ListPlan::default(), StatsCell::default())
        .collect()
        .await;
    items.into_iter().collect()
}

pub(crate) fn ids(pages: &[Page]) -> Vec<String> {
    let mut ids: Vec<String> = pages
        .iter()
        .flat_map(|p| p.records.iter().map(|r| r.id.clone()))
        .collect();
    ids.sort();
    ids
}

pub(crate) fn assert_no_key(err: &ProviderError) {
    for text in [format!("{err}"), format!("{err:?}")] {
        assert!(!text.contains(KEY), "the API key leaked: {text}");
    }
}
#[tokio::test]
async fn pages_are_read_once_each_and_concurrently() {
    let (fake, base) = FakeChaingateway::start(KEY).await;
    for i in 0..100 {
        fake.add_notification("ethereum", record(i));
    }
    fake.set_latency(Duration::from_millis(50));
    let (c, seen) = client(settings(&base));

    let pages = read_all(&c, ListKind::All).await.unwrap();

    assert_eq!(pages.len(), 7);
    assert_eq!(pages[0].records.len(), 15, "page 1 comes first");
    let got = ids(&pages);
    let mut want: Vec<String> = (0..100).map(|i| format!("n-{i}")).collect();
    want.sort();
    assert_eq!(got, want, "all 100 records exactly once");
    assert_eq!(fake.requests(), 7);
    let max = fake.max_in_flight();
    assert!(max > 1 && max <= 3, "max in flight {max}");
    assert_eq!(seen.lock().unwrap().len(), 7);
    let r = pages[0].records.iter().find(|r| r.id == "n-0").unwrap();
    assert_eq!(r.tx_hash.as_ref().unwrap().as_str(), hash(0));
    assert_eq!(r.to.as_ref().unwrap().as_str(), addr(0));
    assert_eq!(r.asset, Some(Asset::Token(Address::parse(USDT).unwrap())));
    assert_eq!(r.amount_hint, Some(U256::from(25_500_000u64)));
    assert_eq!(r.created_at, ts());
    assert_eq!(r.chain, "ethereum");
    assert!(!r.failed);
}

#[tokio::test]
async fn an_empty_list_is_one_empty_page() {
    let (_fake, base) = FakeChaingateway::start(KEY).await;
    let (c, _) = client(settings(&base));
    let pages = read_all(&c, ListKind::All).await.unwrap();
    assert_eq!(pages, vec![Page::default()]);
}

#[tokio::test]
async fn the_failed_list_marks_records_failed() {
    let (fake, base) = FakeChaingateway::start(KEY).await;
    for i in 0..20 {
        fake.add_notification("ethereum", record(i));
    }
    for i in [3, 7, 19] {
        assert!(fake.mark_failed("ethereum", &format!("n-{i}")));
    }
    let (c, _) = client(settings(&base));
    let pages = read_all(&c, ListKind::Failed).await.unwrap();
    assert_eq!(ids(&pages), vec!["n-19", "n-3", "n-7"]);
    assert!(pages.iter().flat_map(|p| &p.records).all(|r| r.failed));
}

#[tokio::test]
async fn malformed_records_are_rejected_and_the_rest_accepted() {
    let (fake, base) = FakeChaingateway::start(KEY).await;
    let add = |id: &str, edit: &dyn Fn(&mut Value)| {
        let mut r = notification(id, &hash(9), USDT, &addr(9), Some("1"), ts());
        edit(&mut r);
        fake.add_notification("ethereum", r);
    };
    add("good", &|_| {});
    add("bad-txid", &|r| {
        r["txid"] = json!(format!("0x{}", "zz".repeat(32)))
    });
    add("short-txid", &|r| {
        r["txid"] = json!(format!("0x{}", "ab".repeat(31)))
    });
    add("bad-to", &|r| r["to"] = json!("0x1234"));
    add("bad-time", &|r| r["created_at"] = json!("last tuesday"));
    add("bad-block", &|r| r["blocknumber"] = json!("0x12ab"));
    add("huge-amount", &|r| r["amount"] = json!("1".repeat(80)));
    add("laravel-time", &|r| {
        r["created_at"] = json!("2026-11-01 12:00:00")
    });
    add("native", &|r| {
        r["type"] = json!("ETH");
        r["contractaddress"] = Value::Null;
        r["amount"] = json!(1.5);
    });
    add("numeric-id", &|r| r["id"] = json!(42));
    fake.add_notification("ethereum", json!("not an object"));
    let (c, _) = client(settings(&base));

    let pages = read_all(&c, ListKind::All).await.unwrap();

    let page = &pages[0];
    let accepted: BTreeSet<&str> = page.records.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        accepted,
        BTreeSet::from(["good", "huge-amount", "laravel-time", "native", "42"])
    );
    let reasons: HashMap<Option<&str>, &str> = page
        .rejected
        .iter()
        .map(|r| (r.id.as_deref(), r.reason.as_str()))
        .collect();
    assert_eq!(reasons.len(), 6, "{reasons:?}");
    for (id, field) in [
        (Some("bad-txid"), "txid: "),
        (Some("short-txid"), "txid: must have 64 hex digits, has 62"),
        (Some("bad-to"), "to: "),
        (Some("bad-time"), "created_at: "),
        (Some("bad-block"), "blocknumber: "),
        (None, "record is not an object"),
    ] {
        assert!(reasons[&id].starts_with(field), "{id:?}: {}", reasons[&id]);
    }
    let by_id = |id: &str| page.records.iter().find(|r| r.id == id).unwrap();
    assert_eq!(by_id("huge-amount").amount_hint, None);
    assert_eq!(by_id("laravel-time").created_at, ts());
    assert_eq!(by_id("native").asset, Some(Asset::Native));
    assert_eq!(
        by_id("native").amount_hint,
        Some(U256::from(1_500_000_000_000_000_000u64))
    );
}

#[tokio::test]
async fn a_wrong_key_is_a_4xx_error_not_retried() {
    let (fake, base) = FakeChaingateway::start("sk_test_the_right_one").await;
    fake.add_notification("ethereum", record(1));
    let (c, seen) = client(settings(&base));
    let err = read_all(&c, ListKind::All).await.unwrap_err();
    assert_eq!(fake.requests(), 1);
    assert_eq!(*seen.lock().unwrap(), vec![StatusClass::Client4xx]);
    assert!(err.to_string().contains("401"), "{err}");
    assert_no_key(&err);
}

#[tokio::test]
async fn an_error_body_echoing_the_key_is_redacted() {
    let (fake, base) = FakeChaingateway::start(KEY).await;
    fake.push_fault(Fault::EchoHeaders, 1);
    let (c, _) = client(settings(&base));
    let err = read_all(&c, ListKind::All).await.unwrap_err();
    let text = err.to_string();
    assert!(text.contains("authorization: Bearer ***"), "{text}");
    assert!(text.contains("x-network: mainnet"), "{text}");
    assert!(text.contains("accept: application/json"), "{text}");
    assert_no_key(&err);
}

#[tokio::test]
async fn the_network_header_is_sent() {
    let (fake, base) = FakeChaingateway::start(KEY).await;
    fake.add_notification("ethereum", record(1));
    fake.set_network("testnet");
    let mut s = settings(&base);
    let (c, _) = client(s.clone());
    let err = read_all(&c, ListKind::All).await.unwrap_err();
    assert!(err.to_string().contains("400"), "{err}");
    s.network = "testnet".into();
    let (c, _) = client(s);
    assert_eq!(
        ids(&read_all(&c, ListKind::All).await.unwrap()),
        vec!["n-1"]
    );
}

#[test]
fn bad_settings_are_refused_without_printing_the_key() {
    let observer = Arc::new(|_: StatusClass| {});
    let mut s = settings("http://127.0.0.1:1/api/v2");
    s.api_key = Secret::new(format!("{KEY}\n"));
    let err = ChaingatewayClient::new(s, observer.clone()).err().unwrap();
    assert!(
        err.to_string().contains("not a valid HTTP header value"),
        "{err}"
    );
    assert_no_key(&err);
    let err = ChaingatewayClient::new(settings("api.chaingateway.io/api/v2"), observer)
        .err()
        .unwrap();
    assert!(err.to_string().contains("is not an http(s) URL"), "{err}");
}

#[tokio::test]
async fn block_number_reads_both_shapes() {
    let (fake, base) = FakeChaingateway::start(KEY).await;
    fake.set_block_number("ethereum", 19_151_363, BlockShape::Integer);
    fake.set_block_number("tron", 44_776_190, BlockShape::Object);
    fake.set_block_number("polygon", 61_000_001, BlockShape::ObjectString);
    let (c, _) = client(settings(&base));
    assert_eq!(c.block_number("ethereum").await.unwrap(), 19_151_363);
    assert_eq!(c.block_number("tron").await.unwrap(), 44_776_190);
    assert_eq!(c.block_number("polygon").await.unwrap(), 61_000_001);
    assert!(c.block_number("bsc").await.is_err());
}

#[tokio::test]
async fn retry_is_recorded_and_repeated_only_when_safe() {
    let (fake, base) = FakeChaingateway::start(KEY).await;
    fake.add_notification("ethereum", record(1));
    let (c, seen) = client(settings(&base));

    c.retry("ethereum", "n-1").await.unwrap();
    assert_eq!(fake.retries(), vec![("ethereum".into(), "n-1".into())]);

    // 503 and 429 did not take effect: repeated.
    fake.push_fault(Fault::Unavailable, 1);
    fake.push_fault(
        Fault::TooManyRequests {
            retry_after_secs: 0,
        },
        1,
    );
    c.retry("ethereum", "n-1").await.unwrap();
    assert_eq!(fake.retries().len(), 2);

    // A 500 may have taken effect: not repeated.
    fake.reset_counters();
    fake.push_fault(Fault::ServerError, 1);
    let err = c.retry("ethereum", "n-1").await.unwrap_err();
    assert!(err.to_string().contains("500"), "{err}");
    assert_eq!(fake.requests(), 1);
    assert_eq!(fake.retries().len(), 2);
    assert!(c.retry("ethereum", "unknown").await.is_err());
    // Ids are path segments, percent-encoded.
    let mut odd = record(2);
    odd["id"] = json!("odd/id?x");
    fake.add_notification("ethereum", odd);
    c.retry("ethereum", "odd/id?x").await.unwrap();
    assert_eq!(fake.retries()[2], ("ethereum".into(), "odd/id?x".into()));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen[..5],
        [
            StatusClass::Ok2xx,
            StatusClass::Server5xx,
            StatusClass::Client4xx,
            StatusClass::Ok2xx,
            StatusClass::Server5xx
        ]
    );
}

#[tokio::test]
async fn a_timed_out_retry_is_not_repeated() {
    let (fake, base) = FakeChaingateway::start(KEY).await;
    fake.add_notification("ethereum", record(1));
    fake.push_fault(Fault::Hang(Duration::from_secs(3)), 1);
    let mut s = settings(&base);
    s.timeout = Duration::from_millis(300);
    let (c, _) = client(s);
    let err = c.retry("ethereum", "n-1").await.unwrap_err();
    assert!(err.to_string().contains("not repeated"), "{err}");
    assert_eq!(fake.requests(), 1);
}
