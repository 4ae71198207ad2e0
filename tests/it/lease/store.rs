//! The lease primitives on both backends: acquire, renew, release, expiry, and the fencing
//! check inside `apply_fenced`'s transaction.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use payrecon::domain::State;
use payrecon::store::{Fence, Store, StoreError};

use crate::store::{ctx, new_order, open, plan};
use crate::support;
use payrecon_testkit::inspect::Inspect;

const P: &str = "cg";

async fn acquire(store: &Store, holder: &str, ttl: Duration) -> Option<Fence> {
    store
        .acquire_lease(P, holder, Timestamp::now(), ttl)
        .await
        .expect("acquire")
}

/// `(holder, token)` of the lease row.
async fn row(store: &Store) -> (String, i64) {
    let sql = "SELECT holder, token FROM payrecon_leases WHERE provider = 'cg'";
    payrecon_testkit::on_pool!(store, p => sqlx::query_as(sql).fetch_one(p).await)
        .expect("the lease row")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_acquire_renew_expire_fence_and_release_on_every_backend() {
    let (_dir, urls) = support::all_backends().await;
    if support::strict() {
        assert_eq!(
            urls.len(),
            support::backends_chosen(),
            "strict mode runs SQLite, PostgreSQL and MariaDB (those chosen)"
        );
    }
    for url in urls {
        scenario(&url).await;
    }
}

async fn scenario(url: &str) {
    let store = open(url).await;
    let long = Duration::from_secs(60);

    // A takes the free lease: token 1. B cannot while it is valid.
    let a1 = acquire(&store, "A", long).await.expect("free lease");
    assert_eq!((a1.holder.as_str(), a1.token), ("A", 1), "{url}");
    assert_eq!(acquire(&store, "B", long).await, None, "{url}: A holds it");
    assert_eq!(
        row(&store).await,
        ("A".into(), 1),
        "{url}: B changed nothing"
    );

    // A takes it again: a new fencing token; the old one is stale.
    let a2 = acquire(&store, "A", Duration::from_secs(1)).await.unwrap();
    assert_eq!(a2.token, 2, "{url}");
    let now = Timestamp::now();
    assert!(store
        .renew_lease(&a2, now, Duration::from_secs(1))
        .await
        .unwrap());
    assert!(
        !store.renew_lease(&a1, now, long).await.unwrap(),
        "{url}: a stale token renews nothing"
    );
    let forged = Fence {
        holder: "B".into(),
        ..a2.clone()
    };
    assert!(
        !store.renew_lease(&forged, now, long).await.unwrap(),
        "{url}"
    );
    assert_eq!(
        acquire(&store, "B", long).await,
        None,
        "{url}: renewed, still A's"
    );

    // Work for the fenced batches: two unpaid orders.
    store
        .insert_orders(&[new_order("F-1", 1, 100), new_order("F-2", 2, 100)])
        .await
        .unwrap();
    let batch = vec![
        plan(&store, "F-1", State::Final, Some((1, 0, 100))).await,
        plan(&store, "F-2", State::Final, Some((2, 0, 100))).await,
    ];

    // A's lease (1 s) runs out on the wall clock: renewing fails, and so does A's write,
    // even before anyone else took the lease.
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert!(
        !store
            .renew_lease(&a2, Timestamp::now(), long)
            .await
            .unwrap(),
        "{url}: an expired lease cannot be renewed"
    );
    let err = store
        .apply_fenced(&batch, &ctx(), Some(&a2))
        .await
        .expect_err("an expired fence writes nothing");
    assert!(
        matches!(&err, StoreError::LeaseLost { provider } if provider == "cg"),
        "{url}: {err:?}"
    );
    assert!(!err.is_retryable(), "{url}: a lost lease is final");

    // B takes the expired lease: token 3.
    let b3 = acquire(&store, "B", long).await.expect("expired lease");
    assert_eq!((b3.holder.as_str(), b3.token), ("B", 3), "{url}");
    assert_eq!(row(&store).await, ("B".into(), 3), "{url}");
    assert_eq!(
        acquire(&store, "A", long).await,
        None,
        "{url}: B holds it now"
    );

    // A, stalled, presents its old fences: refused, nothing written.
    for old in [&a1, &a2] {
        let err = store
            .apply_fenced(&batch, &ctx(), Some(old))
            .await
            .expect_err("a lost lease writes nothing");
        assert!(
            matches!(err, StoreError::LeaseLost { .. }),
            "{url}: {err:?}"
        );
        assert!(err.to_string().contains("lease"), "{url}: {err}");
    }
    for r in ["F-1", "F-2"] {
        let o = store.order_by_ref(r).await.unwrap().unwrap();
        assert_eq!(o.state, State::Unpaid, "{url}: {r} untouched");
        assert_eq!(o.tx_hash, None, "{url}: {r} not keyed");
    }
    assert_eq!(
        store.count("payrecon_transitions").await.unwrap(),
        0,
        "{url}"
    );
    // A releasing with its stale fence does not free B's lease.
    store.release_lease(&a2).await.unwrap();
    assert_eq!(acquire(&store, "A", long).await, None, "{url}: still B's");

    // B's fence applies.
    let out = store.apply_fenced(&batch, &ctx(), Some(&b3)).await;
    assert_eq!(out.expect("B holds the lease").len(), 2, "{url}");
    for r in ["F-1", "F-2"] {
        let o = store.order_by_ref(r).await.unwrap().unwrap();
        assert_eq!(o.state, State::Final, "{url}: {r}");
    }
    assert_eq!(
        store.count("payrecon_transitions").await.unwrap(),
        2,
        "{url}"
    );

    // A lease taken with a `now` in the future is still B's until then; from then on, A's.
    let later = Timestamp::now() + SignedDuration::from_secs(61);
    let a4 = store
        .acquire_lease(P, "A", later, long)
        .await
        .unwrap()
        .expect("expired at that time");
    assert_eq!(a4.token, 4, "{url}");
    let err = store.apply_fenced(&batch, &ctx(), Some(&b3)).await;
    assert!(err.is_err(), "{url}: B's token is stale now");

    // Release frees it at once.
    store.release_lease(&a4).await.unwrap();
    let b5 = acquire(&store, "B", long)
        .await
        .expect("released: free at once");
    assert_eq!(b5.token, 5, "{url}");
    assert_eq!(row(&store).await, ("B".into(), 5), "{url}");
}
