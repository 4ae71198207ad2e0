//! An operator's decisions on exceptions (README.md, "Exceptions"), carried out like a run's:
//! planned by the domain (`plan_accept`, `plan_attach`), written through
//! `Store::apply_resolving` (the transition or payment with source `operator`, its audit row,
//! its event, and the claim on the exception, in one transaction), so that every invariant of a
//! run holds for them too.

use super::Engine;
use crate::chain::{Lookup, TransferQuery};
use crate::domain::{ledger_tx_hash, plan_accept, plan_attach, LedgerView, PaymentKey, OPERATOR};
use crate::store::{
    ApplyContext, ApplyOutcome, ExceptionFilter, ExceptionRow, Resolve, Source, Store, StoreError,
};

/// What became of a decision.
#[derive(Debug)]
pub enum Decision {
    /// Written: what it did, in a sentence.
    Done(String),
    /// The exception was resolved already (by someone else, or by payrecon): the row says
    /// who and when. Nothing was written.
    Taken(Box<ExceptionRow>),
}

#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    /// No exception has this id (exit 2).
    #[error("no exception with id {0}")]
    Unknown(i64),
    /// The decision does not apply to this exception or order; nothing was written.
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Store(#[from] StoreError),
}

/// Dismiss: the exception closed, the ledger unchanged (one conditional UPDATE; needs no
/// chain, so the command opens only the database).
pub async fn dismiss(store: &Store, r: Resolve) -> Result<Decision, OperatorError> {
    match store.dismiss_exception(&r).await {
        Ok(None) => Ok(Decision::Done("the ledger is unchanged".into())),
        Ok(Some(x)) => Ok(Decision::Taken(Box::new(x))),
        Err(StoreError::Invalid(_)) => Err(OperatorError::Unknown(r.id)),
        Err(e) => Err(e.into()),
    }
}

impl Engine {
    /// `payrecon exceptions accept`: a held order (amount_mismatch or late_payment) moves to
    /// the state its payments have.
    pub async fn accept_exception(&self, r: Resolve) -> Result<Decision, OperatorError> {
        let id = r.id;
        let done = self.accept_open(r).await;
        self.told(id, done).await
    }

    /// `payrecon exceptions dismiss`, and the console's: `dismiss` on this engine's store.
    pub async fn dismiss_exception(&self, r: Resolve) -> Result<Decision, OperatorError> {
        dismiss(&self.store, r).await
    }

    async fn accept_open(&self, mut r: Resolve) -> Result<Decision, OperatorError> {
        let ex = self.open_exception(r.id).await?;
        let ex = match ex {
            Ok(ex) => ex,
            Err(taken) => return Ok(Decision::Taken(Box::new(taken))),
        };
        if ex.kind != "amount_mismatch" && ex.kind != "late_payment" {
            return Err(OperatorError::Refused(format!(
                "exception {} is {}: only a held order (amount_mismatch, late_payment) is \
                 accepted; {}",
                ex.id,
                ex.kind,
                if ex.kind == "unknown_payment" {
                    "attach it to an order, or dismiss it"
                } else {
                    "dismiss it once settled"
                }
            )));
        }
        let row = self.order_of(&ex).await?;
        // Accepting settles this problem only: while another holds the order (late and short
        // are two), it stays held and nothing moves or goes out.
        if let Some(other) = self.other_hold(&ex, &row.order_ref).await? {
            let what = format!(
                "{} accepted; order {} stays {} (held) while exception {} ({}) is open",
                ex.kind, row.order_ref, row.state, other.id, other.kind
            );
            return match self.store.dismiss_exception(&r).await {
                Ok(None) => {
                    tracing::info!(exception = r.id, resolution = r.resolution, by = %r.by, "Exception resolved: {what}.");
                    Ok(Decision::Done(what))
                }
                Ok(Some(taken)) => Ok(Decision::Taken(Box::new(taken))),
                Err(e) => Err(e.into()),
            };
        }
        if ex.kind == "late_payment" {
            self.refuse_short(&ex, &row).await?;
        }
        let t = plan_accept(&row).map_err(|e| OperatorError::Refused(e.0))?;
        // Checked again under the decision's lock: a top-up credited meanwhile fails it.
        r.order_paid = Some((row.id, row.amount_paid.map(|a| a.to_string())));
        let what = format!("order {} moved from {} to {}", t.order_ref, t.from, t.to);
        self.decide(&[t], r, what).await
    }

    /// Another open exception that holds the same order (`amount_mismatch` beside a
    /// `late_payment`, or the reverse), if any.
    async fn other_hold(
        &self,
        ex: &ExceptionRow,
        order_ref: &str,
    ) -> Result<Option<ExceptionRow>, OperatorError> {
        let open = self
            .store
            .list_exceptions(&ExceptionFilter {
                status: Some("open".into()),
                order_ref: Some(order_ref.to_string()),
                limit: 100,
                ..Default::default()
            })
            .await?;
        Ok(open
            .into_iter()
            .find(|o| o.id != ex.id && (o.kind == "amount_mismatch" || o.kind == "late_payment")))
    }

    /// Accepting a late payment never pays an order its payments do not cover (every payment
    /// on chain counted, less the tolerance), unless a person accepted the shortfall: the
    /// refusal says so. (A run opens the `amount_mismatch` beside it; accept that too.)
    async fn refuse_short(
        &self,
        ex: &ExceptionRow,
        row: &crate::domain::LedgerRow,
    ) -> Result<(), OperatorError> {
        let paid = row
            .credits
            .iter()
            .filter(|c| !c.gone)
            .fold(crate::domain::U256::ZERO, |a, c| a.saturating_add(c.amount));
        let due = self
            .amounts
            .tolerance(&row.chain, &row.asset)
            .due(row.amount_due);
        if paid >= due {
            return Ok(());
        }
        let settled = self
            .store
            .list_exceptions(&ExceptionFilter {
                status: Some("resolved".into()),
                kind: Some("amount_mismatch".into()),
                order_ref: Some(row.order_ref.clone()),
                limit: 100,
                ..Default::default()
            })
            .await?;
        if settled
            .iter()
            .any(|s| s.resolution.as_deref() == Some("accepted"))
        {
            return Ok(());
        }
        Err(OperatorError::Refused(format!(
            "exception {} is late, and order {} is short too: paid {paid} of {}; accepting \
             the late payment would not pay it. Accept its amount_mismatch exception as well \
             (the next run opens it), or dismiss both and refund",
            ex.id, row.order_ref, row.amount_due
        )))
    }

    /// `payrecon exceptions attach`: a payment to no order is credited to `order_ref`; the
    /// chain decides its state, the cover rule whether the order advances.
    pub async fn attach_exception(
        &self,
        r: Resolve,
        order_ref: &str,
    ) -> Result<Decision, OperatorError> {
        let id = r.id;
        let done = self.attach_open(r, order_ref).await;
        self.told(id, done).await
    }

    async fn attach_open(&self, r: Resolve, order_ref: &str) -> Result<Decision, OperatorError> {
        let ex = match self.open_exception(r.id).await? {
            Ok(ex) => ex,
            Err(taken) => return Ok(Decision::Taken(Box::new(taken))),
        };
        let refuse = |m: String| Err(OperatorError::Refused(m));
        if ex.kind != "unknown_payment" {
            return refuse(format!(
                "exception {} is {}: only a payment to no order (unknown_payment) is attached",
                ex.id, ex.kind
            ));
        }
        let (Some(tx), Some(log_index)) = (ex.tx_hash.as_deref(), ex.log_index) else {
            return refuse(format!(
                "exception {} names no transaction and log index: there is no payment to attach",
                ex.id
            ));
        };
        let Some(row) = self.store.order_with_payments(order_ref).await? else {
            return refuse(format!("no order {order_ref:?}: nothing attached"));
        };
        let key = PaymentKey {
            chain: ex.chain.clone(),
            tx_hash: ledger_tx_hash(tx).map_err(|e| OperatorError::Refused(e.to_string()))?,
            log_index,
        };
        if !self
            .store
            .attached_keys(std::slice::from_ref(&key))
            .await?
            .is_empty()
        {
            return refuse(format!(
                "the payment {tx} (log index {log_index}) is credited to an order already: \
                 nothing attached"
            ));
        }
        let transfer = self.read_payment(&key, &row).await?;
        let view = LedgerView {
            policy: self.amounts.clone(),
            ..LedgerView::default()
        };
        let plan = plan_attach(&transfer, &row, &view).map_err(|e| OperatorError::Refused(e.0))?;
        let what = format!(
            "payment {tx} (log index {log_index}, {} base units, {}) credited to order {}",
            transfer.amount, transfer.state, row.order_ref
        );
        self.decide(&plan.transitions, r, what).await
    }

    /// A refusal that came from someone else's decision (the exception was resolved while
    /// this one was read or planned) is told as that decision: who and when.
    async fn told(
        &self,
        id: i64,
        done: Result<Decision, OperatorError>,
    ) -> Result<Decision, OperatorError> {
        match done {
            Err(OperatorError::Refused(why)) => match self.store.exception(id).await? {
                Some(ex) if ex.status != "open" => Ok(Decision::Taken(Box::new(ex))),
                _ => Err(OperatorError::Refused(why)),
            },
            other => other,
        }
    }

    /// The exception while it is open: `Ok(Err(row))` when it is resolved already.
    async fn open_exception(
        &self,
        id: i64,
    ) -> Result<Result<ExceptionRow, ExceptionRow>, OperatorError> {
        match self.store.exception(id).await? {
            None => Err(OperatorError::Unknown(id)),
            Some(ex) if ex.status != "open" => Ok(Err(ex)),
            Some(ex) => Ok(Ok(ex)),
        }
    }

    async fn order_of(&self, ex: &ExceptionRow) -> Result<crate::domain::LedgerRow, OperatorError> {
        let Some(order_ref) = ex.order_ref.as_deref() else {
            return Err(OperatorError::Refused(format!(
                "exception {} names no order",
                ex.id
            )));
        };
        self.store
            .order_with_payments(order_ref)
            .await?
            .ok_or_else(|| OperatorError::Refused(format!("order {order_ref:?} is gone")))
    }

    /// The payment at `key` as the chain has it now, with its block's time (late payments;
    /// the console's payment-to-event delay), or a refusal saying why not.
    async fn read_payment(
        &self,
        key: &PaymentKey,
        row: &crate::domain::LedgerRow,
    ) -> Result<crate::domain::ChainTransfer, OperatorError> {
        let refuse = |m: String| OperatorError::Refused(m);
        let client = self
            .chains
            .get(&key.chain)
            .ok_or_else(|| refuse(format!("chain {:?} is not configured", key.chain)))?;
        let unreadable = |e: crate::chain::ChainError| {
            refuse(format!(
                "the chain could not be read ({}): nothing attached",
                self.redact(&e)
            ))
        };
        let head = client.head().await.map_err(unreadable)?;
        let q = TransferQuery {
            tx_hash: key.tx_hash.clone(),
            asset: Some(row.asset.clone()),
            to: None,
            log_index: Some(key.log_index),
        };
        let found = client.lookup(&head, &[q]).await.map_err(unreadable)?;
        let mut t = match found.into_iter().next() {
            Some(Lookup::Found(ts)) => ts
                .into_iter()
                .find(|t| t.key.log_index == key.log_index)
                .ok_or_else(|| refuse("the payment is not in its receipt now".into()))?,
            _ => {
                return Err(refuse(format!(
                    "the chain has no payment of {} at {} (log index {}) now: nothing attached",
                    row.asset, key.tx_hash, key.log_index
                )))
            }
        };
        if t.block_time.is_none() {
            let times = client
                .block_times(&[t.block.number])
                .await
                .map_err(unreadable)?;
            t.block_time = times.get(&t.block.number).copied();
        }
        Ok(t)
    }

    /// Writes a decision with its claim; tells who won when another got there first.
    async fn decide(
        &self,
        batch: &[crate::domain::PlannedTransition],
        r: Resolve,
        what: String,
    ) -> Result<Decision, OperatorError> {
        let ctx = ApplyContext {
            source: Source::Operator,
            provider: OPERATOR.into(),
            run_id: String::new(),
            events: self.events_wake.is_some(),
            retries: crate::store::Retries::to(&self.metrics.database_retries),
        };
        match self.store.apply_resolving(batch, &ctx, &r).await {
            Ok(outcomes) => {
                tracing::info!(exception = r.id, resolution = r.resolution, by = %r.by, "Exception resolved: {what}.");
                let held = outcomes.iter().any(|o| matches!(o, ApplyOutcome::Credited));
                Ok(Decision::Done(if held {
                    format!("{what}; the order is still short of its amount (held)")
                } else {
                    what
                }))
            }
            Err(StoreError::ExceptionTaken { .. }) => match self.store.exception(r.id).await? {
                Some(ex) => Ok(Decision::Taken(Box::new(ex))),
                None => Err(OperatorError::Unknown(r.id)),
            },
            Err(e @ StoreError::Unchanged) => match self.store.exception(r.id).await? {
                Some(ex) if ex.status != "open" => Ok(Decision::Taken(Box::new(ex))),
                _ => Err(OperatorError::Refused(e.to_string())),
            },
            Err(e) => Err(e.into()),
        }
    }
}
