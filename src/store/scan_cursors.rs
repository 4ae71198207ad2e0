//! `payrecon_scan_cursors`: where Solana's deposit scan left each account it lists
//! (docs/configuration.md, "Solana"). One statement loads a page of orders' cursors by owner;
//! one statement per `INSERT_ROWS` cursors saves them.

use std::collections::HashMap;

use super::backend::dispatch;
use super::rows::{counted, db_error, LOOKUP_CHUNK};
use super::{Store, StoreError};
use crate::domain::ScanCursor;

impl Store {
    /// The cursors of every account listed for one of `owners` (wallets, references) on
    /// `chain`, by account.
    pub async fn scan_cursors(
        &self,
        chain: &str,
        owners: &[String],
    ) -> Result<HashMap<String, ScanCursor>, StoreError> {
        let mut out = HashMap::new();
        for chunk in owners.chunks(LOOKUP_CHUNK) {
            let rows: Vec<(String, String, i64)> = dispatch!(self, p => {
                let sql = format!(
                    "SELECT {}, {}, slot FROM payrecon_scan_cursors WHERE chain = {} AND {}",
                    D::exact_text("account"),
                    D::exact_text("signature"),
                    D::p(1),
                    D::any("owner", 2)
                );
                sqlx::query_as(&sql)
                    .bind(chain)
                    .bind(D::texts(chunk))
                    .fetch_all(counted(p))
                    .await
            })
            .map_err(|e| db_error("read the deposit scan's cursors", e))?;
            for (account, signature, slot) in rows {
                let slot = u64::try_from(slot).unwrap_or(0);
                out.insert(account, ScanCursor { signature, slot });
            }
        }
        Ok(out)
    }

    /// Saves `(owner, account, cursor)`s of `chain`, replacing each account's.
    pub async fn save_scan_cursors(
        &self,
        chain: &str,
        cursors: &[(String, String, ScanCursor)],
    ) -> Result<(), StoreError> {
        dispatch!(self, p => {
            for chunk in cursors.chunks(D::INSERT_ROWS) {
                let mut qb = sqlx::QueryBuilder::<D>::new(
                    "INSERT INTO payrecon_scan_cursors (chain, account, owner, signature, slot) ",
                );
                qb.push_values(chunk, |mut b, (owner, account, c)| {
                    b.push_bind(chain)
                        .push_bind(account.as_str())
                        .push_bind(owner.as_str())
                        .push_bind(c.signature.as_str())
                        .push_bind(i64::try_from(c.slot).unwrap_or(i64::MAX));
                });
                qb.push(" ").push(D::upsert(
                    "(chain, account)",
                    "owner = excluded.owner, signature = excluded.signature, \
                     slot = excluded.slot",
                ));
                qb.build()
                    .execute(counted(p))
                    .await
                    .map_err(|e| db_error("save the deposit scan's cursors", e))?;
            }
            Ok::<(), StoreError>(())
        })
    }
}
