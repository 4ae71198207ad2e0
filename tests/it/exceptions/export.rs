//! `payrecon export`: every credited payment of the window, read back with a real CSV parser
//! (the `csv` crate, RFC 4180) and checked against the database amount by amount; JSON lines
//! with the same rows; a path that cannot be written fails before the database is read.

use payrecon::cli::export::COLUMNS;
use payrecon_testkit::inspect::Inspect;
use serde_json::Value;

use super::{order, pay, pay_units};
use crate::cli::harness::{payrecon, World};

/// `(tx_hash, log_index) -> amount` of every payment row, as the database holds them.
async fn payments(w: &World) -> Vec<(String, i64, String)> {
    let sql = "SELECT tx_hash, log_index, CAST(amount AS TEXT) FROM payrecon_payments ORDER BY id";
    let mut out: Vec<(String, i64, String)> = w
        .store
        .rows(sql)
        .await
        .unwrap()
        .into_iter()
        .map(|r| {
            let [tx, li, amount] = <[Option<String>; 3]>::try_from(r).unwrap();
            (tx.unwrap(), li.unwrap().parse().unwrap(), amount.unwrap())
        })
        .collect();
    out.sort();
    out
}

/// `units` of a 6-decimal asset written out by hand.
fn six(units: &str) -> String {
    let n: u128 = units.parse().unwrap();
    format!("{}.{:06}", n / 1_000_000, n % 1_000_000)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_export_reads_back_with_every_amount_as_the_database_has_it() {
    let (_guard, urls) = crate::support::all_backends().await;
    for url in urls {
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        let config = w.config("");
        for i in 1..=3 {
            order(&w, i, 25).await;
            pay(&w, i, 25, &format!("n-{i}"));
        }
        let held = order(&w, 4, 30).await;
        let short = pay_units(&w, 4, 20_000_001, "n-4");
        // A field that needs quoting in CSV.
        w.store
            .insert_orders(&[payrecon::store::NewOrder {
                order_ref: "Q-\"1\", quoted".into(),
                chain: "ethereum".into(),
                pay_to: crate::cli::harness::addr(5).to_string(),
                asset: payrecon_testkit::sandbox::SANDBOX_TOKEN.into(),
                amount_due: crate::cli::harness::usdt(7),
            }])
            .await
            .unwrap();
        pay_units(&w, 5, 7_000_000, "n-5");
        payrecon(&config, &["run"]).await.assert_code(0);
        let db = payments(&w).await;
        assert_eq!(db.len(), 5, "{url}");

        let path = w.dir.path().join("payments.csv");
        let out = payrecon(&config, &["export", "--output", path.to_str().unwrap()]).await;
        out.assert_code(0);
        let bytes = std::fs::read(&path).unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(
            text.ends_with("\r\n") && !text.replace("\r\n", "").contains('\n'),
            "CRLF records"
        );
        let mut rd = csv::ReaderBuilder::new().from_reader(bytes.as_slice());
        let header: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
        assert_eq!(header, COLUMNS, "{url}");
        let col = |name: &str| COLUMNS.iter().position(|c| *c == name).unwrap();
        let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
        let mut got: Vec<(String, i64, String)> = rows
            .iter()
            .map(|r| {
                (
                    r[col("tx_hash")].to_string(),
                    r[col("log_index")].parse().unwrap(),
                    r[col("amount")].to_string(),
                )
            })
            .collect();
        got.sort();
        assert_eq!(got, db, "{url}: every payment, every amount");
        for r in &rows {
            assert_eq!(r[col("amount_decimal")], six(&r[col("amount")]), "{url}");
            assert_eq!(
                (&r[col("symbol")], &r[col("chain")], &r[col("state")]),
                ("USDT", "ethereum", "final"),
                "{url}"
            );
            assert!(
                r[col("credited_at")].parse::<jiff::Timestamp>().is_ok(),
                "{r:?}"
            );
            assert!(r[col("block_number")].parse::<u64>().is_ok(), "{r:?}");
        }
        let row_of = |tx: &str| rows.iter().find(|r| &r[col("tx_hash")] == tx).unwrap();
        let h = row_of(&short);
        assert_eq!(
            (
                &h[col("order_ref")],
                &h[col("order_state")],
                &h[col("amount_decimal")],
                &h[col("amount_paid")],
                &h[col("exception")]
            ),
            (
                held.as_str(),
                "unpaid",
                "20.000001",
                "20000001",
                "amount_mismatch/open"
            ),
            "{url}"
        );
        assert!(
            rows.iter()
                .any(|r| &r[col("order_ref")] == "Q-\"1\", quoted"),
            "{text}"
        );

        // JSON lines: the same rows.
        let out = payrecon(&config, &["export", "--format", "json"]).await;
        out.assert_code(0);
        let lines: Vec<Value> = out
            .stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), db.len(), "{url}");
        assert!(lines
            .iter()
            .all(|l| l.as_object().unwrap().len() == COLUMNS.len()));
        assert!(lines
            .iter()
            .any(|l| l["amount"] == "20000001" && l["exception"] == "amount_mismatch/open"));

        // A window before every block: the header only.
        let out = payrecon(&config, &["export", "--until", "2001-01-01"]).await;
        out.assert_code(0);
        assert_eq!(out.stdout, format!("{}\r\n", COLUMNS.join(",")), "{url}");
    }
}

#[tokio::test]
async fn a_path_that_cannot_be_written_fails_before_the_database_is_read() {
    let w = World::sqlite().await;
    // A database nothing listens on: reading it would fail with a database error.
    let text = payrecon_testkit::sandbox::config_toml(
        "postgres://payrecon@127.0.0.1:1/none",
        &w.cg_url,
        &w.rpc_url,
        "",
    );
    let config = w.write("unreachable.toml", &text);
    let out = payrecon(
        &config,
        &["export", "--output", "/nonexistent-dir/payments.csv"],
    )
    .await;
    out.assert_code(1);
    assert!(
        out.stderr
            .contains("cannot write /nonexistent-dir/payments.csv"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("database"), "{}", out.stderr);
    let out = payrecon(
        &config,
        &["export", "--since", "2026-12-02", "--until", "2026-12-01"],
    )
    .await;
    out.assert_code(2);
}

#[tokio::test]
async fn an_unreachable_database_is_one_line_without_its_password() {
    let w = World::sqlite().await;
    let url = "postgres://payrecon:s3cret-pw-42@127.0.0.1:1/none";
    let text = payrecon_testkit::sandbox::config_toml(url, &w.cg_url, &w.rpc_url, "");
    let config = w.write("secret.toml", &text);
    let commands = [
        vec!["exceptions"],
        vec!["exceptions", "show", "1"],
        vec!["exceptions", "dismiss", "1", "--reason", "r", "--by", "x"],
        vec!["exceptions", "accept", "1", "--reason", "r", "--by", "x"],
        vec!["export"],
    ];
    // All at once: each waits out the pool's connect timeout.
    let outs = futures::future::join_all(commands.iter().map(|args| payrecon(&config, args))).await;
    for (args, out) in commands.iter().zip(outs) {
        out.assert_code(1);
        assert!(!out.stderr.is_empty(), "{args:?}");
        assert!(
            !out.stderr.contains("s3cret-pw-42") && !out.stdout.contains("s3cret-pw-42"),
            "{args:?}: {}",
            out.stderr
        );
    }
}

/// An export that fails (the database cannot be reached) leaves an existing `--output` as it
/// was, byte for byte, and no temporary file beside it.
#[tokio::test]
async fn a_failed_export_leaves_the_existing_file_untouched() {
    let w = World::sqlite().await;
    let text = payrecon_testkit::sandbox::config_toml(
        "postgres://payrecon@127.0.0.1:1/none",
        &w.cg_url,
        &w.rpc_url,
        "",
    );
    let config = w.write("unreachable.toml", &text);
    let folder = w.dir.path().join("out");
    std::fs::create_dir(&folder).unwrap();
    let target = folder.join("payments.csv");
    std::fs::write(&target, "yesterday's export\n").unwrap();
    let out = payrecon(&config, &["export", "--output", target.to_str().unwrap()]).await;
    out.assert_code(1);
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "yesterday's export\n"
    );
    let names: Vec<_> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["payments.csv"], "{names:?}");
}
