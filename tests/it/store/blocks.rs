//! `Store::record_blocks`: the blocks of payments the merchant's handler keyed without one,
//! written for a whole sweep page in one statement, never over a row that changed.

use payrecon::domain::{BlockRef, TxHash};
use payrecon::stats::statements_issued;
use payrecon::store::Rekey;

use super::{exec, hash, new_order, open};
use crate::support;
use payrecon_testkit::inspect::Inspect;

fn rekey(order_id: i64, n: u64, log_index: i64, block: u64) -> Rekey {
    Rekey {
        order_id,
        chain: "ethereum".into(),
        tx_hash: TxHash::parse(&hash(n)).unwrap(),
        old_log_index: log_index,
        old_block_hash: None,
        new_log_index: log_index,
        new_block: BlockRef {
            number: block,
            hash: hash(9000 + block),
        },
    }
}

#[tokio::test]
async fn blocks_of_handler_keyed_rows_are_recorded_in_one_statement_and_only_where_missing() {
    let (_dir, urls) = support::all_backends().await;
    for url in &urls {
        let store = open(url).await;
        let orders: Vec<_> = (1..=5)
            .map(|i| new_order(&format!("RB-{i}"), 100 + i, 1_000))
            .collect();
        store.insert_orders(&orders).await.unwrap();
        // The handler's writes: keys without blocks (NULL for 1, 2 and 4; empty for 3), and
        // one row (5) that already holds a block.
        for i in 1..=5u64 {
            let block = match i {
                3 => ", block_hash = ''".to_string(),
                5 => format!(", block_number = 7, block_hash = '{}'", hash(77)),
                _ => String::new(),
            };
            exec(
                &store,
                &format!(
                    "UPDATE orders SET state = 'final', tx_hash = '{}', log_index = {i}{block} \
                     WHERE order_ref = 'RB-{i}'",
                    hash(i)
                ),
            )
            .await;
        }
        let id = |r: &str| {
            let store = store.clone();
            let r = r.to_string();
            async move { store.order_by_ref(&r).await.unwrap().unwrap().id }
        };
        let batch = vec![
            rekey(id("RB-1").await, 1, 1, 101),
            rekey(id("RB-2").await, 2, 2, 102),
            rekey(id("RB-3").await, 3, 3, 103),
            // Read with log index 9, but the row holds 4: it changed since; left alone.
            rekey(id("RB-4").await, 4, 9, 104),
            // Already has a block: left alone.
            rekey(id("RB-5").await, 5, 5, 105),
        ];
        let before = statements_issued();
        let written = store.record_blocks(&batch).await.unwrap();
        assert_eq!(statements_issued() - before, 1, "{url}: one statement");
        assert_eq!(written, 3, "{url}");
        for (r, want) in [
            ("RB-1", Some((101, hash(9101)))),
            ("RB-2", Some((102, hash(9102)))),
            ("RB-3", Some((103, hash(9103)))),
            ("RB-4", None),
            ("RB-5", Some((7, hash(77)))),
        ] {
            let o = store.order_by_ref(r).await.unwrap().unwrap();
            let got = o
                .block_hash
                .clone()
                .filter(|h| !h.is_empty())
                .map(|h| (o.block_number.unwrap_or(-1), h));
            assert_eq!(got, want, "{url} {r}: {o:?}");
        }
        assert_eq!(store.record_blocks(&[]).await.unwrap(), 0);
    }
}
