//! The data pgbench scripts run over, and the checks after each run.
//!
//! - pgbench's tables (the default, and `-w tpcb`): loaded as `pgbench -i`
//!   does; with `-w tpcb --init-sql FILE` the file runs after them (e.g.
//!   to create a function the scripts call). After every run the TPC-B
//!   balance checks and the history check ([`super::history`]) run.
//! - `--init-sql FILE` alone: the scripts' own schema, without pgbench's
//!   tables; no check runs, since isobench knows nothing of that data.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio_postgres::Client;

use super::history::{self, Inserts};
use crate::model::{HISTORY_CHECK, InvariantResult, Lifetime};
use crate::workload::tpcb::{Tpcb, Variant};
use crate::workload::{Ledger, Loader, Workload, WorkloadError};

/// An `--init-sql` file: its path and text.
#[derive(Debug, Clone)]
pub struct InitSql {
    pub path: PathBuf,
    pub text: String,
}

impl InitSql {
    /// Runs the file on `db`; returns its statements and the rows they
    /// wrote (the counts of their command tags; a statement that returns
    /// rows, a SELECT, writes none). Errors: the server's, naming the
    /// file.
    async fn run(&self, db: &Client) -> Result<(u64, u64), WorkloadError> {
        use tokio_postgres::SimpleQueryMessage as M;
        let messages = db
            .simple_query(&self.text)
            .await
            .map_err(WorkloadError::db(format!(
                "--init-sql {}",
                self.path.display()
            )))?;
        let (mut statements, mut rows, mut returned) = (0, 0, false);
        for m in messages {
            match m {
                M::RowDescription(_) | M::Row(_) => returned = true,
                M::CommandComplete(n) => {
                    statements += 1;
                    if !std::mem::take(&mut returned) {
                        rows += n;
                    }
                }
                _ => {}
            }
        }
        Ok((statements, rows))
    }
}

/// `pgbench_history`'s row count in each loaded template (by data key),
/// shared by the cells of a study: rows the init SQL inserted are not the
/// runs' rows.
pub type HistoryBase = Arc<Mutex<BTreeMap<String, u64>>>;

/// Where a script study's data comes from.
#[derive(Debug, Clone)]
pub enum Data {
    /// pgbench's tables at `scale` (the default, or `-w tpcb`), then `then`
    /// (`-w tpcb --init-sql FILE`); `base` receives the history's rows
    /// after loading.
    Tpcb {
        scale: u32,
        /// pgbench's five foreign keys (`pgbench -i -I f`; the study's
        /// `foreign-keys` parameter, `--param foreign-keys=true`).
        foreign_keys: bool,
        then: Option<InitSql>,
        base: HistoryBase,
    },
    /// `--init-sql FILE` alone: its text, run once into the template
    /// database instead of pgbench's tables.
    InitSql(InitSql),
}

impl Data {
    /// pgbench's tables at `scale`, nothing after them, with a history
    /// base of its own (one study cell).
    pub fn pgbench(scale: u32) -> Self {
        Data::Tpcb {
            scale,
            foreign_keys: false,
            then: None,
            base: HistoryBase::default(),
        }
    }
}

/// The data of a script study: what to load, and the pgbench tables'
/// workload when the data is pgbench's.
#[derive(Debug)]
pub(super) struct ScriptData {
    data: Data,
    tpcb: Option<Tpcb>,
    /// Per script, its inserts into `pgbench_history` (from its text).
    inserts: Vec<Inserts>,
    /// The statements of the `--init-sql` file the last load ran.
    statements: AtomicU64,
}

impl ScriptData {
    /// `data` for scripts with `inserts`. Errors: a scale TPC-B refuses.
    pub(super) fn new(data: Data, inserts: Vec<Inserts>) -> Result<Self, String> {
        let tpcb = match &data {
            Data::Tpcb {
                scale,
                foreign_keys,
                ..
            } => Some(
                Tpcb::with_variant(*scale, Variant::TpcbLike)
                    .map_err(|e| e.to_string())?
                    .with_foreign_keys(*foreign_keys),
            ),
            Data::InitSql(_) => None,
        };
        Ok(ScriptData {
            data,
            tpcb,
            inserts,
            statements: AtomicU64::new(0),
        })
    }

    /// `:scale`: pgbench's tables' scale, 1 on the scripts' own schema.
    pub(super) fn scale(&self) -> i64 {
        match &self.data {
            Data::Tpcb { scale, .. } => i64::from(*scale),
            Data::InitSql(_) => 1,
        }
    }

    /// What the load loads when it is the scripts' own schema: `--init-sql
    /// FILE` (see [`Workload::data_name`]).
    pub(super) fn name(&self) -> Option<String> {
        match &self.data {
            Data::InitSql(i) => Some(format!("--init-sql {}", i.path.display())),
            Data::Tpcb { .. } => None,
        }
    }

    /// What the last load did, with `rows` it returned: the `--init-sql`
    /// file's statements and rows (see [`Workload::load_summary`]).
    pub(super) fn summary(&self, rows: u64) -> Option<String> {
        let statements = self.statements.load(Ordering::Relaxed);
        match &self.data {
            Data::InitSql(i) => Some(format!(
                "--init-sql {}: {statements} statements, {rows} rows",
                i.path.display()
            )),
            Data::Tpcb { then: Some(i), .. } => Some(format!(
                "pgbench tables, {rows} rows; then --init-sql {}: {statements} statements",
                i.path.display()
            )),
            Data::Tpcb { .. } => None,
        }
    }

    /// Identifies the data (see [`Workload::data_key`]).
    pub(super) fn key(&self) -> String {
        match &self.data {
            Data::Tpcb {
                scale,
                foreign_keys,
                then,
                ..
            } => {
                let fk = if *foreign_keys {
                    " with foreign keys"
                } else {
                    ""
                };
                match then {
                    None => format!("pgbench tables, scale {scale}{fk}"),
                    Some(i) => format!(
                        "pgbench tables, scale {scale}{fk}, then --init-sql {}",
                        i.path.display()
                    ),
                }
            }
            Data::InitSql(i) => format!("--init-sql {}", i.path.display()),
        }
    }

    /// Loads the data into the template `db`; returns the rows written.
    /// Errors: loading or the init SQL failed.
    pub(super) async fn load(&self, db: &Loader) -> Result<u64, WorkloadError> {
        match (&self.data, &self.tpcb) {
            (Data::Tpcb { then, base, .. }, Some(t)) => {
                let rows = t.load(db).await?;
                if let Some(init) = then {
                    let (statements, _) = init.run(db).await?;
                    self.statements.store(statements, Ordering::Relaxed);
                }
                let n: i64 = db
                    .query_one("SELECT count(*) FROM pgbench_history", &[])
                    .await
                    .map_err(WorkloadError::db("counting pgbench_history after loading"))?
                    .get(0);
                base.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(self.key(), n as u64);
                Ok(rows)
            }
            (Data::InitSql(init), _) => {
                let (statements, rows) = init.run(db).await?;
                self.statements.store(statements, Ordering::Relaxed);
                Ok(rows)
            }
            (Data::Tpcb { .. }, None) => Ok(0),
        }
    }

    /// The checks after a run over pgbench's tables (none on the scripts'
    /// own schema): the TPC-B balances, which hold for every pgbench
    /// built-in script and their rewrites (each transaction adds its delta
    /// to one account and to the history, and to a teller and its branch
    /// together or to neither), and the history check. `names` are the
    /// scripts', `ledger` counts their commits, `lifetime` the unknown
    /// outcomes.
    pub(super) async fn check(
        &self,
        db: &Client,
        names: &[&str],
        lifetime: Lifetime,
        ledger: &ScriptLedger,
    ) -> Result<Vec<InvariantResult>, WorkloadError> {
        let Data::Tpcb { base, .. } = &self.data else {
            return Ok(Vec::new());
        };
        let (a, t, b, h, n) =
            crate::workload::tpcb::sums(db, "pgbench script invariant query").await?;
        let inserting = history::inserting_functions(db, &history::candidates(&self.inserts))
            .await
            .map_err(WorkloadError::db(
                "looking up the functions the scripts call",
            ))?;
        let loaded = base
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&self.key())
            .copied()
            .unwrap_or(0);
        let (count, scripts, lost) = history::check(
            names,
            &self.inserts,
            &ledger.committed,
            lifetime.unknown_outcome,
            &inserting,
            (n as u64).saturating_sub(loaded),
        );
        Ok(vec![
            InvariantResult::check(
                "accounts-match-history",
                a == h,
                format!("sum(abalance)={a} sum(history.delta)={h}"),
            ),
            InvariantResult::check(
                "tellers-match-branches",
                t == b,
                format!("sum(tbalance)={t} sum(bbalance)={b}"),
            ),
            InvariantResult {
                lost_commits: lost,
                ..InvariantResult::count(HISTORY_CHECK, count.violations(), count.detail(&scripts))
            },
        ])
    }
}

/// Committed transactions per script, over a client's whole life (warm-up
/// and drain included), for the history check.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct ScriptLedger {
    /// Indexed by script.
    pub committed: Vec<u64>,
}

impl ScriptLedger {
    /// Counts one committed transaction of script `script`.
    pub(super) fn commit(&mut self, script: usize) {
        if self.committed.len() <= script {
            self.committed.resize(script + 1, 0);
        }
        self.committed[script] += 1;
    }
}

impl Ledger for ScriptLedger {
    fn merge(&mut self, other: Self) {
        if self.committed.len() < other.committed.len() {
            self.committed.resize(other.committed.len(), 0);
        }
        for (a, b) in self.committed.iter_mut().zip(other.committed) {
            *a += b;
        }
    }
}
