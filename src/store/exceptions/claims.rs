//! An operator's decision in the apply path: the claim of its exception (open → resolved)
//! in the same transaction as its steps (`SharedSql::claim` sends it).

use crate::store::dialect::Dialect;

/// The claim: 1 resolution, 2 by, 3 note, 4 now, 5 id (each placeholder once, in order:
/// MariaDB/MySQL's `?` are positional); changes one row only while it is open.
pub(crate) fn claim_sql<D: Dialect>() -> String {
    format!(
        "UPDATE payrecon_exceptions SET status = 'resolved', resolution = {res}, \
         resolved_by = {by}, note = {note}, resolved_at = {now} \
         WHERE id = {id} AND status = 'open'",
        res = D::p(1),
        by = D::p(2),
        note = D::p(3),
        now = D::ts(4),
        id = D::p(5),
    )
}
