//! The generic HTTP provider (`kind = "http"`) over real HTTP on loopback: the Qvard and
//! Paymos presets against their fakes end to end, records rejected or kept, faults, secrets,
//! resends. Pagination styles and time formats: `generic.rs`.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use payrecon::config::http_settings_from_toml;
use payrecon::domain::{State, U256};
use payrecon::providers::http::{HttpClient, HttpSettings};
use payrecon::providers::{ListKind, Page, ProviderError, StatusClass};
use payrecon_testkit::paymos::{FakePaymos, PaymosData, PaymosEvent};
use payrecon_testkit::qvard::{FakeQvard, QvardPayment};
use payrecon_testkit::HttpFault;

mod generic;

pub(crate) const KEY: &str = "qk_test_9d81c2a4b7e6f053";
pub(crate) const USDT: &str = "0xdac17f958d2ee523a2206206994597c13d831ec7";

pub(crate) fn hash(n: u64) -> String {
    format!("0x{n:064x}")
}

pub(crate) fn t(s: &str) -> jiff::Timestamp {
    s.parse().unwrap()
}

/// The window every test reads: 2026-11-01 (Unix 1793491200) to 2026-11-02.
pub(crate) fn window() -> (jiff::Timestamp, jiff::Timestamp) {
    (t("2026-11-01T00:00:00Z"), t("2026-11-02T00:00:00Z"))
}

pub(crate) fn decimals() -> HashMap<String, u8> {
    HashMap::from([(format!("ethereum:{USDT}"), 6)])
}

/// Settings from a provider table's TOML, as the configuration reads it.
pub(crate) fn settings(preset: &str, base_url: &str, extra: &str) -> HttpSettings {
    let text = format!(
        "kind = \"http\"\npreset = \"{preset}\"\nbase_url = \"{base_url}\"\napi_key = \"{KEY}\"\nchains = [\"ethereum\"]\nmax_retries = 3\nbackoff = \"5ms\"\ntimeout = \"2s\"\n{extra}"
    );
    let chains = vec!["ethereum".to_string(), "polygon".to_string()];
    http_settings_from_toml(preset, &text, &chains, &decimals()).unwrap()
}

pub(crate) type Seen = Arc<Mutex<Vec<StatusClass>>>;

pub(crate) fn client(s: HttpSettings) -> (HttpClient, Seen) {
    let seen: Seen = Arc::default();
    let log = seen.clone();
    let observer = Arc::new(move |c: StatusClass| log.lock().unwrap().push(c));
    (HttpClient::new(s, observer).unwrap(), seen)
}

/// Every page of a list for the window, or the first error.
pub(crate) async fn read_all(c: &HttpClient, list: ListKind) -> Result<Vec<Page>, ProviderError> {
    let (since, until) = window();
    let items: Vec<_> = c.pages(list, since, until).collect().await;
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

fn payment(i: u64, amount: &str, completed_at: &str) -> QvardPayment {
    QvardPayment {
        id: format!("A-{i:03}"),
        status: "completed".into(),
        chain: "ethereum".into(),
        tx_hash: Some(hash(i)),
        log_index: Some(i as i64),
        asset: USDT.into(),
        amount: amount.into(),
        completed_at: t(completed_at),
    }
}

#[tokio::test]
async fn qvard_lists_completed_payments_in_the_window_with_cursor_pages() {
    let fake = FakeQvard::start(KEY).await;
    fake.set_page_size(3);
    for i in 1..=8 {
        fake.add_payment(&payment(i, "25.00", "2026-11-01T12:00:00Z"));
    }
    fake.add_payment(&payment(90, "1.00", "2026-10-31T23:59:59Z"));
    fake.add_payment(&QvardPayment {
        status: "pending".into(),
        ..payment(91, "1.00", "2026-11-01T12:00:00Z")
    });
    let (c, seen) = client(settings("qvard", fake.base_url(), ""));
    assert!(c.has_list(ListKind::All) && !c.has_list(ListKind::Failed));

    let pages = read_all(&c, ListKind::All).await.unwrap();

    let want: Vec<String> = (1..=8).map(|i| format!("A-{i:03}")).collect();
    assert_eq!(ids(&pages), want, "each payment exactly once");
    assert_eq!(pages.len(), 3);
    let r = &pages[0].records[0];
    assert_eq!(
        r.order_ref.as_deref(),
        Some("A-001"),
        "Qvard's id is the order id"
    );
    assert_eq!(
        r.tx_hash.as_ref().map(|h| h.as_str().to_string()),
        Some(hash(1))
    );
    assert_eq!((r.log_index, r.status), (Some(1), Some(State::Final)));
    assert_eq!(
        r.amount_hint,
        Some(U256::from(25_000_000u64)),
        "25.00 with 6 decimals"
    );
    assert!(!r.failed);
    let requests = fake.requests();
    assert_eq!(fake.list_requests(), 3);
    assert!(
        requests[0].ends_with("status=completed&from=1793491200&to=1793577600&cursor="),
        "{requests:?}"
    );
    assert!(requests[1].ends_with("&cursor=c_3"), "{requests:?}");
    assert_eq!(
        seen.lock().unwrap().len(),
        3,
        "the observer sees each attempt"
    );
}

#[tokio::test]
async fn qvard_records_are_kept_or_rejected_one_by_one() {
    let fake = FakeQvard::start(KEY).await;
    fake.set_page_size(2);
    let at = "2026-11-01T12:00:00Z";
    fake.add_payment(&payment(1, "25.00", at));
    fake.add_payment(&payment(2, "25.0000001", at));
    fake.add_payment(&payment(3, "99999999999999999999999999999999999", at));
    fake.add_payment(&QvardPayment {
        chain: "tron".into(),
        ..payment(4, "1", at)
    });
    fake.add_payment(&QvardPayment {
        tx_hash: None,
        log_index: None,
        ..payment(5, "7.5", at)
    });
    fake.add_payment(&QvardPayment {
        tx_hash: Some("0x1234".into()),
        ..payment(6, "1", at)
    });
    let (c, _) = client(settings("qvard", fake.base_url(), ""));

    let pages = read_all(&c, ListKind::All).await.unwrap();

    assert_eq!(ids(&pages), ["A-001", "A-005"]);
    let no_tx = pages
        .iter()
        .flat_map(|p| &p.records)
        .find(|r| r.id == "A-005")
        .unwrap();
    assert_eq!(
        (no_tx.tx_hash.as_ref(), no_tx.order_ref.as_deref()),
        (None, Some("A-005"))
    );
    assert_eq!(no_tx.amount_hint, Some(U256::from(7_500_000u64)));
    let rejected: BTreeSet<(String, String)> = pages
        .iter()
        .flat_map(|p| &p.rejected)
        .map(|r| (r.id.clone().unwrap(), r.reason.clone()))
        .collect();
    let reason = |id: &str| {
        rejected
            .iter()
            .find(|(i, _)| i == id)
            .map(|(_, r)| r.clone())
            .unwrap_or_else(|| panic!("{id} not rejected: {rejected:?}"))
    };
    assert!(
        reason("A-002").contains("more than 6 decimal places"),
        "{rejected:?}"
    );
    assert!(reason("A-003").starts_with("amount"), "{rejected:?}");
    assert!(
        reason("A-004").contains("unknown chain \"tron\""),
        "{rejected:?}"
    );
    assert!(reason("A-006").starts_with("tx_hash"), "{rejected:?}");
    assert_eq!(rejected.len(), 4);
}

fn event(i: u64, state: &str, delivery: &str, created_at: &str) -> PaymosEvent {
    PaymosEvent {
        event_id: format!("evt_{i}"),
        event_type: "payment.updated".into(),
        created_at: t(created_at),
        attempts: 11,
        status: delivery.into(),
        data: PaymosData {
            order_ref: format!("B-{i}"),
            chain: "ethereum".into(),
            tx_hash: Some(hash(i)),
            log_index: Some(-1),
            amount: format!("{i}000000"),
            state: state.into(),
        },
    }
}

#[tokio::test]
async fn paymos_lists_failed_events_by_page_and_resends_them() {
    let fake = FakePaymos::start(KEY).await;
    fake.set_page_size(2);
    let at = "2026-11-01T08:30:00Z";
    for i in 1..=5 {
        fake.add_event(&event(i, "confirmed", "failed", at));
    }
    fake.add_event(&event(6, "final", "delivered", at));
    fake.add_event(&event(7, "final", "failed", "2026-10-31T08:30:00Z"));
    fake.add_event(&event(8, "expired", "failed", at));
    fake.add_event(&event(9, "refunded", "failed", at));
    let mut no_state = event(10, "final", "failed", at).to_json();
    no_state["data"].as_object_mut().unwrap().remove("state");
    fake.add_raw(no_state);
    let (c, _) = client(settings("paymos", fake.base_url(), ""));
    assert!(c.has_list(ListKind::Failed) && !c.has_list(ListKind::All));

    let pages = read_all(&c, ListKind::Failed).await.unwrap();

    assert_eq!(ids(&pages), ["evt_1", "evt_2", "evt_3", "evt_4", "evt_5"]);
    assert_eq!(
        fake.list_requests(),
        4,
        "8 failed events in the window, 2 a page"
    );
    let first = fake.requests()[0].clone();
    assert!(
        first.ends_with("status=failed&created_after=2026-11-01T00%3A00%3A00Z&page=1"),
        "{first}"
    );
    let r = &pages[0].records[0];
    assert!(r.failed);
    assert_eq!((r.status, r.log_index), (Some(State::Confirmed), Some(-1)));
    assert_eq!(
        r.amount_hint,
        Some(U256::from(1_000_000u64)),
        "base units as given"
    );
    assert_eq!(r.order_ref.as_deref(), Some("B-1"));
    let rejected: Vec<_> = pages.iter().flat_map(|p| &p.rejected).collect();
    assert_eq!(rejected.len(), 2, "{rejected:?}");
    assert!(rejected.iter().any(|r| r.id.as_deref() == Some("evt_9")
        && r.reason.contains("\"refunded\" is not in status_map")));
    assert!(rejected.iter().any(|r| r.id.as_deref() == Some("evt_10")
        && r.reason.starts_with("status (/data/state): missing")));

    c.resend("evt_3").await.unwrap();
    assert_eq!(fake.resends(), ["evt_3"]);
    assert_eq!(fake.attempts("evt_3"), Some(0));
    assert_eq!(fake.attempts("evt_4"), Some(11));
    let e = c.resend("evt_404").await.unwrap_err().to_string();
    assert!(e.contains("404"), "{e}");
}

#[tokio::test]
async fn resend_percent_encodes_the_id() {
    let fake = FakeQvard::start(KEY).await;
    fake.add_payment(&QvardPayment {
        id: "A/1 ü?".into(),
        ..payment(1, "1", "2026-11-01T12:00:00Z")
    });
    let (c, seen) = client(settings("qvard", fake.base_url(), ""));

    c.resend("A/1 ü?").await.unwrap();

    assert_eq!(fake.resends(), ["A/1 ü?"]);
    assert_eq!(fake.resend_count("A/1 ü?"), 1);
    assert_eq!(
        fake.requests(),
        ["POST /v1/payments/A%2F1%20%C3%BC%3F/resend-webhook"]
    );
    assert_eq!(*seen.lock().unwrap(), [StatusClass::Ok2xx]);
}

#[tokio::test]
async fn a_page_that_is_not_json_is_retried_then_fails_the_list_without_the_key() {
    let fake = FakeQvard::start(KEY).await;
    fake.set_page_size(2);
    for i in 1..=4 {
        fake.add_payment(&payment(i, "1", "2026-11-01T12:00:00Z"));
    }
    let (c, seen) = client(settings("qvard", fake.base_url(), ""));
    // Page 1 is fine; page 2 is broken on every attempt (3).
    let (since, until) = window();
    let mut pages = c.pages(ListKind::All, since, until);
    assert!(pages.next().await.unwrap().is_ok());
    fake.push_fault(HttpFault::MalformedJson, 3);

    let e = pages.next().await.unwrap().unwrap_err().to_string();

    assert!(
        pages.next().await.is_none(),
        "the stream ends after the error"
    );
    assert!(e.contains("not JSON") && e.contains("3 attempts"), "{e}");
    assert!(!e.contains(KEY), "{e}");
    assert_eq!(fake.requests().len(), 4);
    assert_eq!(seen.lock().unwrap().len(), 4);

    // A transient fault is retried away.
    fake.push_fault(HttpFault::Status(503), 2);
    let pages = read_all(&c, ListKind::All).await.unwrap();
    assert_eq!(ids(&pages).len(), 4);
}

#[tokio::test]
async fn a_wrong_key_fails_fast_and_is_not_shown() {
    let fake = FakePaymos::start(KEY).await;
    fake.add_event(&event(1, "final", "failed", "2026-11-01T08:30:00Z"));
    let mut s = settings("paymos", fake.base_url(), "");
    let wrong = "qk_wrong_4f1e9b7c2d";
    s.api_key = Some(payrecon::secret::Secret::new(wrong));
    let (c, seen) = client(s);

    let e = read_all(&c, ListKind::Failed)
        .await
        .unwrap_err()
        .to_string();

    assert!(e.contains("401"), "{e}");
    assert!(!e.contains(wrong) && !e.contains(KEY), "{e}");
    assert_eq!(fake.requests().len(), 1, "a 401 is not retried");
    assert_eq!(*seen.lock().unwrap(), [StatusClass::Client4xx]);
    let e = c.resend("evt_1").await.unwrap_err().to_string();
    assert!(e.contains("401") && !e.contains(wrong), "{e}");
}
