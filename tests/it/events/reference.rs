//! The reference receiver (`examples/events_receiver/receiver.py`, the official
//! `standardwebhooks` library and SQLite) as a merchant would run it: every final order is
//! fulfilled once, also when payrecon delivers an event again (a replay, or a crash between
//! the 2xx and its record) and when the merchant's own handler fulfilled it first.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use payrecon::domain::State;
use payrecon::store::EventFilter;

use super::delivery::{advance, app, deliverer, pending_orders};
use super::receiver::Receiver;
use super::SECRET;
use crate::support;

pub(crate) struct Python(std::process::Child);
impl Drop for Python {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn the_reference_receiver_fulfils_each_final_order_once() {
    if !has_standardwebhooks() {
        support::skip("python3 with standardwebhooks (pip install standardwebhooks) is missing");
        return;
    }
    crate::reconcile::on_backends(|url| async move {
        let dir = payrecon_testkit::tmp::dir().unwrap();
        let (guard, db, port) = reference_receiver(dir.path()).await;
        // The merchant's own handler fulfilled D-1 already (its conditional update won).
        sqlite_exec(
            &db,
            "INSERT INTO fulfilments (order_ref, to_state, via) VALUES ('D-1', 'final', 'merchant')",
        );

        // A stand-in whose URL is replaced: the App must point at the Python receiver.
        let stand_in = Receiver::start().await;
        let mut a = app(&url, &stand_in, 2, "5s").await;
        let mut cfg = a.config.events.clone().unwrap();
        cfg.url = format!("http://127.0.0.1:{port}/payrecon/events");
        a.events = Some(std::sync::Arc::new(
            payrecon::events::Deliverer::new(
                cfg,
                a.engine.store.clone(),
                a.engine.metrics.clone(),
                "ref-test".into(),
                std::sync::Arc::new(tokio::sync::Notify::new()),
            )
            .unwrap(),
        ));
        let store = a.engine.store.clone();
        let ids = pending_orders(&store, 5).await;
        advance(&store, &ids, State::Pending, State::Final).await;
        let f = deliverer(&a).flush(Duration::from_secs(20)).await;
        assert_eq!(f.delivered, 10, "{f:?}");
        // Everything again, with the same ids.
        let n = store
            .replay_events(
                &EventFilter {
                    since: Some(jiff::Timestamp::UNIX_EPOCH),
                    limit: 0,
                    ..Default::default()
                },
                jiff::Timestamp::now(),
            )
            .await
            .unwrap();
        assert_eq!(n, 10);
        let f = deliverer(&a).flush(Duration::from_secs(20)).await;
        assert_eq!(f.delivered, 10, "{f:?}");
        drop(guard);

        assert_eq!(sqlite_count(&db, "SELECT COUNT(*) FROM received_events"), 10);
        assert_eq!(
            sqlite_count(&db, "SELECT COUNT(*) FROM fulfilments WHERE to_state = 'final'"),
            5,
            "each final order fulfilled once"
        );
        assert_eq!(
            sqlite_count(&db, "SELECT COUNT(*) FROM fulfilments WHERE via = 'payrecon'"),
            4,
            "D-1 was the merchant handler's"
        );
        assert!(stand_in.received().is_empty());
    })
    .await;
}

/// Runs `sql` on the receiver's SQLite file with Python's sqlite3 (committed); the rows it
/// returns, `;` between rows and `,` between columns (one value: just that value).
pub(crate) fn sqlite(db: &str, sql: &str) -> String {
    let script = "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); \
                  r=c.execute(sys.argv[2]).fetchall(); c.commit(); \
                  print(';'.join(','.join(map(str, x)) for x in r))";
    let out = Command::new("python3")
        .args(["-c", script, db, sql])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn sqlite_exec(db: &str, sql: &str) {
    sqlite(db, sql);
}

fn sqlite_count(db: &str, sql: &str) -> i64 {
    sqlite(db, sql).parse().unwrap()
}

/// Whether python3 has the official `standardwebhooks` library (the receiver needs it).
pub(crate) fn has_standardwebhooks() -> bool {
    Command::new("python3")
        .args(["-c", "import standardwebhooks"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The reference receiver (`examples/events_receiver/receiver.py`) on a free port, its
/// database in `dir` and the events secret `SECRET`: the guard that stops it, the database
/// file and the port.
pub(crate) async fn reference_receiver(dir: &std::path::Path) -> (Python, String, u16) {
    let db = dir.join("shop.db").to_str().unwrap().to_string();
    let secret = dir.join("secret");
    std::fs::write(&secret, format!("{SECRET}\n")).unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/events_receiver/receiver.py"
    );
    let mut child = Command::new("python3")
        .args([script, "--db", &db, "--port", "0", "--secret-file"])
        .arg(&secret)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the reference receiver");
    let stdout = child.stdout.take().unwrap();
    let guard = Python(child);
    let line = tokio::task::spawn_blocking(move || {
        let mut l = String::new();
        BufReader::new(stdout).read_line(&mut l).unwrap();
        l
    })
    .await
    .unwrap();
    let port = line.trim().rsplit(':').next().unwrap().parse().unwrap();
    (guard, db, port)
}
