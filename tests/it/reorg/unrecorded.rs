//! Rows the merchant's handler keyed without a block (no `block_hash`): the sweep records
//! their blocks, all of a page in one statement, so that a later reorg of them is seen.

use payrecon::domain::State;
use payrecon::stats::statements_issued;
use payrecon::store::Store;

use super::world;
use crate::reconcile::{on_backends, payee, usdt};

async fn forget_block(store: &Store, order_ref: &str) {
    let sql = format!(
        "UPDATE orders SET block_number = NULL, block_hash = NULL WHERE order_ref = '{order_ref}'"
    );
    payrecon_testkit::on_pool!(store, p => sqlx::query(&sql).execute(p).await.map(|_| ()))
        .expect("the handler's write");
}

#[tokio::test]
async fn the_sweep_records_the_blocks_of_handler_keyed_rows_in_one_statement() {
    on_backends(|url| async move {
        let Some(w) = world(&url, 6, "1h").await else {
            return;
        };
        let refs = ["UR-1", "UR-2", "UR-3", "UR-4"];
        let orders: Vec<_> = refs
            .iter()
            .enumerate()
            .map(|(i, r)| (*r, payee(i as u64 + 1), usdt(10)))
            .collect();
        let rows: Vec<_> = orders
            .iter()
            .map(|(r, p, a)| (*r, p.as_str(), *a))
            .collect();
        w.orders(&rows).await;
        let mut held = Vec::new();
        for (r, p, _) in &orders {
            let tx = w.pay(p, usdt(10)).await;
            let (block, hash, li) = w.where_is(&tx).await;
            w.seed(r, &tx, li, usdt(10), State::Pending).await;
            forget_block(w.store(), r).await;
            held.push((*r, block, hash));
        }
        // The first run records the blocks (and moves the rows on); then the handler drops
        // them again, and two more runs on an unchanged chain differ only in the recording.
        let report = w.run().await;
        check(&w, &url, &held, &report).await;
        for r in refs {
            forget_block(w.store(), r).await;
        }
        let before = statements_issued();
        let report = w.run().await;
        let recording = statements_issued() - before;
        check(&w, &url, &held, &report).await;
        let before = statements_issued();
        w.run().await;
        let idle = statements_issued() - before;
        assert_eq!(
            recording,
            idle + 1,
            "{url}: recording the blocks of 4 rows takes one statement"
        );
    })
    .await;
}

async fn check(
    w: &crate::reconcile::World,
    url: &str,
    held: &[(&str, u64, String)],
    report: &payrecon::report::Report,
) {
    for (r, block, hash) in held {
        let o = w.order(r).await;
        assert_eq!(
            (o.block_number, o.block_hash.as_deref()),
            (Some(*block as i64), Some(hash.as_str())),
            "{url} {r}: {}",
            report.to_json()
        );
        assert!(o.state >= State::Pending, "{url} {r}: {o:?}");
    }
}
