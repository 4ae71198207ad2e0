//! Retries and faults: 5xx, 429 with Retry-After, timeouts, unreadable bodies, a provider down.

use std::time::{Duration, Instant};

use payrecon::providers::{ListKind, StatusClass};
use payrecon_testkit::sandbox::chaingateway::{FakeChaingateway, Fault};

use super::*;

#[tokio::test]
async fn a_server_error_is_retried() {
    let (fake, base) = FakeChaingateway::start(KEY).await;
    fake.add_notification("ethereum", record(1));
    fake.push_fault(Fault::ServerError, 1);
    let (c, seen) = client(settings(&base));
    let pages = read_all(&c, ListKind::All).await.unwrap();
    assert_eq!(ids(&pages), vec!["n-1"]);
    assert_eq!(fake.requests(), 2);
    assert_eq!(
        *seen.lock().unwrap(),
        vec![StatusClass::Server5xx, StatusClass::Ok2xx]
    );
}

#[tokio::test]
async fn too_many_requests_waits_for_retry_after() {
    let (fake, base) = FakeChaingateway::start(KEY).await;
    fake.add_notification("ethereum", record(1));
    fake.push_fault(
        Fault::TooManyRequests {
            retry_after_secs: 1,
        },
        1,
    );
    let (c, seen) = client(settings(&base));
    let started = Instant::now();
    let pages = read_all(&c, ListKind::All).await.unwrap();
    let waited = started.elapsed();
    assert_eq!(ids(&pages), vec!["n-1"]);
    assert!(waited >= Duration::from_millis(950), "waited {waited:?}");
    assert!(waited < Duration::from_secs(3), "waited {waited:?}");
    assert_eq!(
        *seen.lock().unwrap(),
        vec![StatusClass::Client4xx, StatusClass::Ok2xx]
    );
}

#[tokio::test]
async fn a_timeout_is_retried() {
    let (fake, base) = FakeChaingateway::start(KEY).await;
    fake.add_notification("ethereum", record(1));
    fake.push_fault(Fault::Hang(Duration::from_secs(5)), 1);
    let mut s = settings(&base);
    s.timeout = Duration::from_millis(300);
    let (c, seen) = client(s);
    let started = Instant::now();
    let pages = read_all(&c, ListKind::All).await.unwrap();
    assert_eq!(ids(&pages), vec!["n-1"]);
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(
        *seen.lock().unwrap(),
        vec![StatusClass::Error, StatusClass::Ok2xx]
    );
}

#[tokio::test]
async fn unreadable_bodies_and_dropped_connections_are_retried() {
    let (fake, base) = FakeChaingateway::start(KEY).await;
    fake.add_notification("ethereum", record(1));
    fake.push_fault(Fault::MalformedJson, 1);
    fake.push_fault(Fault::CloseConnection, 1);
    let mut s = settings(&base);
    s.max_retries = 4;
    let (c, _) = client(s.clone());
    let pages = read_all(&c, ListKind::All).await.unwrap();
    assert_eq!(ids(&pages), vec!["n-1"]);
    assert_eq!(fake.requests(), 3);

    fake.push_fault(Fault::MissingData, 1);
    let pages = read_all(&c, ListKind::All).await.unwrap();
    assert_eq!(ids(&pages), vec!["n-1"]);
}

#[tokio::test]
async fn malformed_json_that_persists_fails_after_max_retries() {
    let (fake, base) = FakeChaingateway::start(KEY).await;
    fake.add_notification("ethereum", record(1));
    fake.push_fault(Fault::MalformedJson, 3);
    let (c, _) = client(settings(&base));
    let err = read_all(&c, ListKind::All).await.unwrap_err();
    assert_eq!(fake.requests(), 3);
    let text = err.to_string();
    assert!(
        text.starts_with("provider cg: GET ethereum notifications page 1"),
        "{text}"
    );
    assert!(
        text.contains("gave up after 3 attempts: the body is not JSON"),
        "{text}"
    );
}

#[tokio::test]
async fn a_provider_that_is_down_fails_in_bounded_time() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let (c, seen) = client(settings(&format!("http://127.0.0.1:{port}/api/v2")));
    let started = Instant::now();
    let err = read_all(&c, ListKind::All).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(*seen.lock().unwrap(), vec![StatusClass::Error; 3]);
    assert!(
        err.to_string().contains("gave up after 3 attempts"),
        "{err}"
    );
    assert_no_key(&err);
    let err = c.block_number("ethereum").await.unwrap_err();
    assert_no_key(&err);
}
