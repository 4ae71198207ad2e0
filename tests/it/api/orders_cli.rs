//! `payrecon orders add|import` on SQLite and PostgreSQL: the API's validation and
//! idempotency from the command line; an import commits per 1,000 rows, names the line of
//! every bad row and keeps the good ones.

use std::fmt::Write as _;

use payrecon::domain::{expected_order, OrderInput};

use super::USDT;
use crate::cli::harness::{addr, payrecon, World};

fn add_args<'a>(r: &'a str, pay_to: &'a str, amount: &'a str) -> Vec<&'a str> {
    vec![
        "orders", "add", "--ref", r, "--chain", "ethereum", "--pay-to", pay_to, "--asset", USDT,
        "--amount", amount,
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_and_import_validate_keep_the_good_rows_and_name_the_bad_lines() {
    let (_guard, urls) = crate::support::all_backends().await;
    for url in urls {
        let w = World::new(payrecon_testkit::tmp::dir().unwrap(), url.clone()).await;
        let config = w.config("");
        let a1 = addr(1).to_string();
        let out = payrecon(&config, &add_args("C-1", &a1, "25000000")).await;
        out.assert_code(0);
        assert!(out.stdout.starts_with("registered: C-1 "), "{}", out.stdout);
        let out = payrecon(&config, &add_args("C-1", &a1, "25000000")).await;
        out.assert_code(0);
        assert!(
            out.stdout.starts_with("already registered"),
            "{}",
            out.stdout
        );
        let out = payrecon(&config, &add_args("C-1", &a1, "1")).await;
        out.assert_code(1);
        assert!(out.stderr.contains("another amount_due"), "{}", out.stderr);
        let bad = "0x52908400098527886E0F7030069857D2E4169Ee7";
        let out = payrecon(&config, &add_args("C-2", bad, "2.5")).await;
        out.assert_code(2);
        assert!(
            out.stderr.contains("--pay-to: ") && out.stderr.contains("--amount: "),
            "{}",
            out.stderr
        );
        out.assert_no_panic();
        assert_eq!(w.count("orders").await, 1, "{url}");
        // An asset the chain does not take: the error names what it takes.
        let other = "0x00000000000000000000000000000000000000ab";
        let mut args = add_args("C-3", &a1, "1");
        args[9] = other;
        let out = payrecon(&config, &args).await;
        out.assert_code(2);
        assert!(
            out.stderr.contains("\"native\"") && out.stderr.contains(&USDT.to_lowercase()),
            "{}",
            out.stderr
        );

        // 2,500 rows: a conflict on line 7, bad rows on lines 11, 1500 and 2000, a quoted ref.
        let mut csv = String::from("order_ref,chain,pay_to,asset,amount_due,expires_at\r\n");
        for line in 2..=2501u32 {
            let r = format!("I-{line}");
            let a = addr(line).to_string();
            let row = match line {
                7 => format!("C-1,ethereum,{a1},{USDT},1,\r\n"),
                11 => format!("{r},ethereum,{a},{USDT},25.00,\r\n"),
                1500 => format!("{r},ethereum,0x12,{USDT},1,\r\n"),
                2000 => format!("{r},ethereum,{a}\r\n"),
                42 => format!("\"I-42, gift\",ethereum,{a},native,1,2026-12-31T00:00:00Z\r\n"),
                // A date, as --since takes one: midnight UTC.
                43 => format!("{r},ethereum,{a},native,1,2027-01-15\r\n"),
                _ => format!("{r},ethereum,{a},{USDT},{line},\r\n"),
            };
            csv.write_str(&row).unwrap();
        }
        let file = w.write("orders.csv", &csv);
        let out = payrecon(&config, &["orders", "import", file.to_str().unwrap()]).await;
        out.assert_code(1);
        out.assert_no_panic();
        assert_eq!(
            out.stdout.trim(),
            "2496 registered, 0 already registered, 1 conflicting, 3 invalid",
            "{}",
            out.stderr
        );
        for needle in [
            "line 7: order \"C-1\" is registered with another amount_due",
            "line 11: amount_due: ",
            "line 1500: pay_to: ",
            "line 2000: ",
        ] {
            assert!(out.stderr.contains(needle), "{needle:?} in\n{}", out.stderr);
        }
        assert_eq!(w.count("orders").await, 1 + 2496, "{url}");
        let gift = w.store.order_view("I-42, gift").await.unwrap().unwrap();
        assert_eq!(gift.amount_due, "1");
        assert_eq!(gift.expires_at.as_deref(), Some("2026-12-31T00:00:00.000Z"));
        let dated = w.store.order_view("I-43").await.unwrap().unwrap();
        assert_eq!(
            dated.expires_at.as_deref(),
            Some("2027-01-15T00:00:00.000Z")
        );
        // Again: nothing new, the same lines named.
        let again = payrecon(&config, &["orders", "import", file.to_str().unwrap()]).await;
        again.assert_code(1);
        assert_eq!(
            again.stdout.trim(),
            "0 registered, 2496 already registered, 1 conflicting, 3 invalid"
        );
        // A header that is not the contract's is refused before anything is written.
        let wrong = w.write("wrong.csv", "ref,chain\r\nX,ethereum\r\n");
        let out = payrecon(&config, &["orders", "import", wrong.to_str().unwrap()]).await;
        out.assert_code(2);
        assert!(
            out.stderr.contains("line 1: unknown column \"ref\""),
            "{}",
            out.stderr
        );
        assert_eq!(w.count("orders").await, 2497);
    }
}

/// `register_orders` commits 1,000 orders per transaction: 4 statements each (BEGIN, the
/// INSERT, the read, COMMIT) on SQLite and PostgreSQL; on MariaDB/MySQL 5 (the taken refs are
/// read first, having no `ON CONFLICT … RETURNING`), or 4 when every ref is taken (no INSERT).
#[tokio::test]
async fn registration_is_four_statements_per_thousand_orders() {
    let (_guard, urls) = crate::support::all_backends().await;
    let catalog = payrecon::domain::Catalog::new([(
        "ethereum".to_string(),
        payrecon::domain::ChainKind::Evm,
    )]);
    for url in urls {
        let store = payrecon::store::Store::connect(&url, 2).await.unwrap();
        store.migrate().await.unwrap();
        let addrs: Vec<String> = (0..2_500).map(|i| addr(i).to_string()).collect();
        let refs: Vec<String> = (0..2_500).map(|i| format!("S-{i}")).collect();
        let orders: Vec<_> = (0..2_500)
            .map(|i| {
                let input = OrderInput {
                    order_ref: &refs[i],
                    chain: "ethereum",
                    pay_to: &addrs[i],
                    asset: "native",
                    amount_due: "7",
                    expires_at: None,
                    reference: None,
                };
                expected_order(&input, &catalog).unwrap()
            })
            .collect();
        let per_batch = if url.starts_with("mysql") { 5 } else { 4 };
        let before = payrecon::stats::statements_issued();
        let outcomes = store
            .register_orders(&orders, &Default::default())
            .await
            .unwrap();
        assert_eq!(
            payrecon::stats::statements_issued() - before,
            3 * per_batch,
            "{url}"
        );
        assert!(outcomes
            .iter()
            .all(|o| matches!(o, payrecon::store::Registered::Created(_))));
        let before = payrecon::stats::statements_issued();
        let again = store
            .register_orders(&orders, &Default::default())
            .await
            .unwrap();
        assert_eq!(
            payrecon::stats::statements_issued() - before,
            3 * 4,
            "{url}"
        );
        assert!(again
            .iter()
            .all(|o| matches!(o, payrecon::store::Registered::Same(_))));
        store.close().await;
    }
}
