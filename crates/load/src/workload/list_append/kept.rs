//! Acknowledged appends kept (issue #50): after the run, every append of
//! a transaction the client saw commit must be in its key's list on the
//! server the run ends on. A failover to a standby that had not received
//! a commit loses it, as does a crash with `synchronous_commit = off`;
//! this is list-append's ledger, the count TPC-B's
//! `history-matches-commits` gives from its history rows. Values are
//! unique per key, so a value missing from its key's list names the
//! transaction that lost it. Transactions whose outcome is unknown (the
//! connection broke during COMMIT) are not counted either way.

use std::collections::{HashMap, HashSet};

use tokio_postgres::Client;

use super::Shape;
use crate::elle::{History, Op, Status};
use crate::model::InvariantResult;
use crate::workload::WorkloadError;

/// The invariant's name.
pub const NAME: &str = "acknowledged-appends-kept";

/// Every key's list on the server, from each table of `shape`.
///
/// Errors: a query failed.
pub(super) async fn final_lists(
    db: &Client,
    shape: &Shape,
) -> Result<HashMap<u64, HashSet<u64>>, WorkloadError> {
    let mut lists = HashMap::new();
    for t in 0..shape.tables {
        let sql = format!("SELECT k, v FROM {}", shape.table_name(t));
        let rows = db
            .query(&sql, &[])
            .await
            .map_err(WorkloadError::db(sql.clone()))?;
        for row in rows {
            let k: i64 = row.get(0);
            let v: Vec<i64> = row.get(1);
            lists.insert(k as u64, v.into_iter().map(|x| x as u64).collect());
        }
    }
    Ok(lists)
}

/// The committed transactions of `history` that appended, and those of
/// them with an append missing from `lists` (each key's final list):
/// lost acknowledged commits, each a violation when commits are
/// `durable` (`synchronous_commit` is not `off`), else only counted.
pub(super) fn appends_kept(
    history: &History,
    lists: &HashMap<u64, HashSet<u64>>,
    durable: bool,
) -> InvariantResult {
    let (mut committed, mut lost) = (0u64, 0u64);
    let mut example = None;
    for t in &history.txns {
        if !matches!(t.status, Status::Committed) {
            continue;
        }
        let mut appended = false;
        let mut missing = None;
        for op in &t.ops {
            if let Op::Append { key, value } = op {
                appended = true;
                if !lists.get(key).is_some_and(|l| l.contains(value)) {
                    missing.get_or_insert((*key, *value));
                }
            }
        }
        committed += u64::from(appended);
        if let Some((key, value)) = missing {
            lost += 1;
            example.get_or_insert((t.process, key, value));
        }
    }
    let mut detail = format!(
        "{committed} acknowledged transactions that appended, checked against the final lists"
    );
    if let Some((client, key, value)) = example {
        detail.push_str(&format!(
            "; {lost} acknowledged commits lost (e.g. client {client}'s append of {value} to key {key}){}",
            if durable {
                ""
            } else {
                " (synchronous_commit=off: not durable by design)"
            }
        ));
    }
    let violations = if durable { lost } else { 0 };
    InvariantResult {
        lost_commits: Some(lost),
        ..InvariantResult::count(NAME, violations, detail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elle::Txn;

    fn txn(process: u32, status: Status, appends: &[(u64, u64)]) -> Txn {
        Txn {
            process,
            status,
            ops: appends
                .iter()
                .map(|&(key, value)| Op::Append { key, value })
                .collect(),
            ..Txn::default()
        }
    }

    /// A committed append missing from its key's list is a lost commit
    /// (a violation when durable); failed and unknown ones are not
    /// counted, nor committed transactions that only read.
    #[test]
    fn a_committed_append_missing_from_the_final_list_is_a_lost_commit() {
        let history = History {
            txns: vec![
                txn(0, Status::Committed, &[(1, 10), (2, 20)]),
                txn(1, Status::Committed, &[(1, 11)]),
                txn(2, Status::Aborted { sqlstate: None }, &[(1, 12)]),
                txn(3, Status::Unknown, &[(2, 21)]),
                txn(4, Status::Committed, &[]),
            ],
        };
        let lists: HashMap<u64, HashSet<u64>> =
            [(1, HashSet::from([10])), (2, HashSet::from([20]))].into();
        let r = appends_kept(&history, &lists, true);
        assert_eq!((r.ok, r.violations, r.lost_commits), (false, 1, Some(1)));
        assert!(r.detail.starts_with("2 acknowledged"), "{}", r.detail);
        assert!(
            r.detail.contains("client 1's append of 11 to key 1"),
            "{}",
            r.detail
        );
        let r = appends_kept(&history, &lists, false);
        assert_eq!((r.ok, r.violations, r.lost_commits), (true, 0, Some(1)));
        let all: HashMap<u64, HashSet<u64>> =
            [(1, HashSet::from([10, 11])), (2, HashSet::from([20]))].into();
        let r = appends_kept(&history, &all, true);
        assert_eq!((r.ok, r.lost_commits), (true, Some(0)));
    }
}
