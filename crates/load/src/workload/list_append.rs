//! `list-append`: Jepsen's list-append test, checked by [`crate::elle`].
//!
//! Source: Kingsbury & Alvaro, "Elle: Inferring Isolation Anomalies from
//! Experimental Observations", VLDB 2020, and Jepsen's PostgreSQL 12.3
//! analysis (2020), whose transactions append with `INSERT ... ON CONFLICT
//! DO UPDATE` and read whole lists; anomalies are classified by Adya's
//! phenomena (Adya, "Weak Consistency", MIT 1999).
//!
//! Tables `la_0 .. la_<tables-1>(k bigint primary key, v bigint[])` start
//! empty: a key is created by its first append, so inserts and reads of
//! absent keys keep happening. A window of `keys` hot keys moves up by one
//! fresh key every `rotate-every` transactions (all clients together, one
//! shared counter), which keeps contention on a few keys while the lists
//! stay short (about `1.25 x rotate-every` values each at the default
//! operation mix). A transaction is 1..`max-ops` operations, each an
//! `append(k, v)` or a `read(k)` with equal odds, in ascending key order
//! (so that appends cannot deadlock); `v` is unique per run,
//! made from the client id and the client's counter (`counter * 10000 +
//! client` below 10000 clients). Every attempt, aborted or not, is
//! recorded in the client's own [`Recorded`] ledger; after the run the
//! merged history is checked and every anomaly class becomes an invariant.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::wire::{Conn, Statement};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use tokio_postgres::Client;

use super::{
    AttemptError, Ended, ExplainStatement, Ledger, Loader, ParamSpec, Setup, StrategySpec,
    TxControl, Workload, WorkloadClient, WorkloadError, WorkloadSpec,
};
use crate::elle::{self, Class, History, Op, Status, Txn};
use crate::model::{Cycle, CycleStep, Dependency, InvariantResult, Lifetime};

/// `isobench workloads list-append`.
pub static SPEC: WorkloadSpec = WorkloadSpec {
    name: "list-append",
    summary: "Jepsen's list-append: appends and whole-list reads, every anomaly class found by an Elle-style checker",
    source: "Kingsbury & Alvaro, Elle, VLDB 2020; Jepsen PostgreSQL 12.3 (2020); Adya 1999",
    scale: None,
    params: &[
        ParamSpec {
            name: "keys",
            default: "10",
            help: "hot keys at a time (fewer: more contention)",
        },
        ParamSpec {
            name: "tables",
            default: "1",
            help: "tables the keys are spread over (key modulo tables)",
        },
        ParamSpec {
            name: "max-ops",
            default: "4",
            help: "operations per transaction at most (1..max-ops, uniform)",
        },
        ParamSpec {
            name: "rotate-every",
            default: "16",
            help: "transactions (all clients) after which the hot keys move up by one fresh key",
        },
        ParamSpec {
            name: "record",
            default: "true",
            help: "record and check the history; false measures what recording costs (no anomaly is checked)",
        },
    ],
    strategies: &[
        StrategySpec {
            name: "optimistic",
            help: "no row locks: protected only by the isolation level",
        },
        StrategySpec {
            name: "locking",
            help: "reads take SELECT ... FOR UPDATE (no lock on a key that does not exist yet)",
        },
    ],
    transactions: &[
        "read-only, append-only, read-append: 1..max-ops of append(k, v) (INSERT ... ON CONFLICT DO UPDATE SET v = v || ...) and read(k), 50% each",
    ],
    invariants: &[
        "G0, G1a, G1b, G1c, G-single, G2-item: Adya's phenomena, counted by the Elle-style checker over the run's history",
        "incompatible-order: keys whose reads are not prefixes of one order; internal: a transaction not seeing its own appends",
    ],
    example: "--workload list-append --isolation rc,rr,ser --clients 16",
};

/// The list-append workload.
#[derive(Debug, Clone)]
pub struct ListAppend {
    keys: u64,
    tables: u64,
    max_ops: u32,
    rotate: u64,
    locking: bool,
    /// Record every attempt and check the history after the run.
    record: bool,
    /// Transactions drawn by all clients: where the hot-key window is.
    drawn: Arc<AtomicU64>,
}

fn append_sql(table: u64) -> String {
    format!(
        "INSERT INTO la_{table} AS t (k, v) VALUES ($1, ARRAY[$2::bigint]) \
         ON CONFLICT (k) DO UPDATE SET v = t.v || $2::bigint"
    )
}

fn read_sql(table: u64, locking: bool) -> String {
    let lock = if locking { " FOR UPDATE" } else { "" };
    format!("SELECT v FROM la_{table} WHERE k = $1{lock}")
}

/// The history of every attempt, merged over clients.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Recorded(pub History);

impl Ledger for Recorded {
    fn merge(&mut self, other: Self) {
        self.0.txns.extend(other.0.txns);
    }

    /// `histories/run-N.jsonl.gz`: one transaction per line as JSON (the
    /// checker's [`elle::Txn`]: ops, values read, outcome with SQLSTATE),
    /// gzip-compressed, so that the history can be checked again or by
    /// another tool.
    fn save(&self, dir: &std::path::Path, run: u32) -> std::io::Result<Option<String>> {
        use std::io::Write;
        if self.0.txns.is_empty() {
            return Ok(None);
        }
        let rel = format!("histories/run-{run}.jsonl.gz");
        std::fs::create_dir_all(dir.join("histories"))?;
        let file = std::fs::File::create(dir.join(&rel))?;
        let mut out = flate2::write::GzEncoder::new(
            std::io::BufWriter::new(file),
            flate2::Compression::fast(),
        );
        for t in &self.0.txns {
            serde_json::to_writer(&mut out, t)?;
            out.write_all(b"\n")?;
        }
        out.finish()?.flush()?;
        Ok(Some(rel))
    }
}

impl Workload for ListAppend {
    type Client = ListAppendClient;

    fn new(setup: &Setup) -> Result<Self, WorkloadError> {
        Ok(ListAppend {
            keys: setup.int("keys", 1..=1_000_000)? as u64,
            tables: setup.int("tables", 1..=100)? as u64,
            max_ops: setup.int("max-ops", 1..=100)? as u32,
            rotate: setup.int("rotate-every", 1..=1_000_000_000)? as u64,
            locking: setup.strategy == "locking",
            record: setup.bool("record")?,
            drawn: Arc::new(AtomicU64::new(0)),
        })
    }

    fn data_key(&self) -> String {
        format!("tables={}", self.tables)
    }

    fn tx_types(&self) -> Vec<&'static str> {
        vec!["read-only", "append-only", "read-append"]
    }

    async fn load(&self, db: &Loader) -> Result<u64, WorkloadError> {
        for t in 0..self.tables {
            let sql = format!("CREATE TABLE la_{t} (k bigint PRIMARY KEY, v bigint[] NOT NULL)");
            db.batch_execute(&sql)
                .await
                .map_err(WorkloadError::db(sql.clone()))?;
        }
        Ok(0)
    }

    fn explain_statements(&self) -> Vec<ExplainStatement> {
        vec![
            ExplainStatement {
                label: "append".into(),
                sql: append_sql(0).replace("$1", "1").replace("$2", "1"),
            },
            ExplainStatement {
                label: "read".into(),
                sql: read_sql(0, self.locking).replace("$1", "1"),
            },
        ]
    }

    fn client(&self, client_id: u32, seed: u64) -> ListAppendClient {
        ListAppendClient {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            id: client_id,
            counter: 0,
            workload: self.clone(),
            stmts: Vec::new(),
            history: Vec::new(),
        }
    }

    async fn check(
        &self,
        _db: &Client,
        _lifetime: Lifetime,
        ledger: Recorded,
    ) -> Result<Vec<InvariantResult>, WorkloadError> {
        if !self.record {
            return Ok(Vec::new());
        }
        let history = ledger.0;
        let (report, took) = tokio::task::spawn_blocking(move || {
            let start = std::time::Instant::now();
            let report = elle::check(&history);
            (report, start.elapsed())
        })
        .await
        .map_err(|e| WorkloadError::Invalid(format!("list-append checker: {e}")))?;
        Ok(invariants(&report, took))
    }
}

/// One invariant per anomaly class, named by the class.
pub fn invariants(report: &elle::Report, took: std::time::Duration) -> Vec<InvariantResult> {
    let checked = format!(
        "{} transactions, {} dependencies, checked in {:.0} ms ({:.1} µs per transaction)",
        report.txns,
        report.edges,
        took.as_secs_f64() * 1e3,
        took.as_secs_f64() * 1e6 / report.txns.max(1) as f64
    );
    Class::ALL
        .iter()
        .map(|&class| {
            let f = report.finding(class);
            let mut detail = match &f.example {
                Some(e) => format!("{} found; e.g. {e} ({checked})", f.count),
                None => format!("none in {checked}"),
            };
            if matches!(class, Class::GSingle | Class::G2Item) && report.unclassified > 0 {
                detail.push_str(&format!(
                    "; {} anti-dependencies on cycles left unclassified by the search budget",
                    report.unclassified
                ));
            }
            let mut inv = InvariantResult::count(class.name(), f.count, detail);
            inv.checked = Some(report.committed as u64);
            inv.cycles = f.cycles.iter().map(|steps| cycle(steps)).collect();
            inv
        })
        .collect()
}

/// The checker's cycle as the model's.
fn cycle(steps: &[elle::Step]) -> Cycle {
    Cycle {
        steps: steps
            .iter()
            .map(|s| CycleStep {
                from: u64::from(s.from),
                to: u64::from(s.to),
                kind: match s.kind {
                    elle::Dep::Ww => Dependency::Ww,
                    elle::Dep::Wr => Dependency::Wr,
                    elle::Dep::Rw => Dependency::Rw,
                },
                why: s.why.clone(),
            })
            .collect(),
        evidence: None,
    }
}

/// One client: its statements per table and its own history.
#[derive(Debug)]
pub struct ListAppendClient {
    rng: Xoshiro256PlusPlus,
    id: u32,
    counter: u64,
    workload: ListAppend,
    /// `(append, read)` per table.
    stmts: Vec<(Statement, Statement)>,
    history: Vec<Txn>,
}

/// A transaction's operations: `(append?, key)`. A retry appends fresh
/// values to the same keys.
pub type ListAppendInput = Vec<(bool, u64)>;

impl ListAppendClient {
    /// The next value unique in the run: `counter * 10000 + client`, or
    /// `(client + 1) * 10^12 + counter` for client ids from 10000.
    fn next_value(&mut self) -> u64 {
        self.counter += 1;
        let id = u64::from(self.id);
        if id < 10_000 {
            self.counter * 10_000 + id
        } else {
            (id + 1) * 1_000_000_000_000 + self.counter
        }
    }

    fn record(&mut self, ops: Vec<Op>, status: Status) {
        if !self.workload.record {
            return;
        }
        self.history.push(Txn {
            process: self.id,
            status,
            ops,
        });
    }

    /// Records an attempt that failed with `e` before or at COMMIT: aborted
    /// with the server's SQLSTATE, or of unknown outcome when COMMIT got no
    /// answer from the server.
    fn failed(&mut self, ops: Vec<Op>, e: &crate::wire::Error, at_commit: bool) {
        let status = match e.code() {
            Some(code) => Status::Aborted {
                sqlstate: Some(String::from_utf8_lossy(&code).into_owned()),
            },
            None if at_commit => Status::Unknown,
            None => Status::Aborted { sqlstate: None },
        };
        self.record(ops, status);
    }
}

impl WorkloadClient for ListAppendClient {
    type Input = ListAppendInput;
    type Ledger = Recorded;

    async fn prepare(
        &mut self,
        conn: &mut Conn,
        _tx: &TxControl,
    ) -> Result<(), crate::wire::Error> {
        self.stmts.clear();
        for t in 0..self.workload.tables {
            let append = conn.prepare(&append_sql(t)).await?;
            let read = conn.prepare(&read_sql(t, self.workload.locking)).await?;
            self.stmts.push((append, read));
        }
        Ok(())
    }

    fn next_input(&mut self) -> ListAppendInput {
        let w = &self.workload;
        let base = w.drawn.fetch_add(1, Ordering::Relaxed) / w.rotate;
        let n = self.rng.random_range(1..=w.max_ops);
        let mut ops: ListAppendInput = (0..n)
            .map(|_| {
                (
                    self.rng.random_bool(0.5),
                    base + self.rng.random_range(0..w.keys),
                )
            })
            .collect();
        // Keys in ascending order (a stable sort: the operations on one key
        // keep theirs), so that appends lock rows in one global order:
        // random orders deadlock and every deadlock costs
        // deadlock_timeout (measured: 12 tx/s at rc, 16 clients).
        ops.sort_by_key(|&(_, key)| key);
        ops
    }

    fn tx_type(&self, input: &ListAppendInput) -> usize {
        match (input.iter().any(|o| !o.0), input.iter().any(|o| o.0)) {
            (true, false) => 0,
            (false, true) => 1,
            _ => 2,
        }
    }

    async fn attempt(
        &mut self,
        conn: &mut Conn,
        tx: &TxControl,
        input: &ListAppendInput,
    ) -> Result<Ended, AttemptError> {
        tx.begin(conn).await?;
        let record = self.workload.record;
        let mut ops = Vec::with_capacity(if record { input.len() } else { 0 });
        for &(append, key) in input {
            let table = (key % self.workload.tables) as usize;
            let k = key as i64;
            let result = if append {
                let value = self.next_value();
                if record {
                    ops.push(Op::Append { key, value });
                }
                conn.execute(&self.stmts[table].0, &[&k, &(value as i64)])
                    .await
                    .map(drop)
            } else {
                match conn.query_opt(&self.stmts[table].1, &[&k]).await {
                    Ok(row) => {
                        let list: Vec<i64> = row.map(|r| r.get(0)).unwrap_or_default();
                        if record {
                            ops.push(Op::Read {
                                key,
                                values: Some(list.into_iter().map(|v| v as u64).collect()),
                            });
                        }
                        Ok(())
                    }
                    Err(e) => {
                        if record {
                            ops.push(Op::Read { key, values: None });
                        }
                        Err(e)
                    }
                }
            };
            if let Err(e) = result {
                self.failed(ops, &e, false);
                return Err(AttemptError::body(e).at(if append { "append" } else { "read" }));
            }
        }
        match tx.commit(conn).await {
            Ok(outcome) => {
                self.record(ops, Status::Committed);
                Ok(outcome)
            }
            Err(e) => {
                if let super::Cause::Db(db) = &e.error {
                    self.failed(ops, db, true);
                }
                Err(e)
            }
        }
    }

    fn unknown_outcome(&mut self, _input: &ListAppendInput) {
        if let Some(last) = self.history.last_mut() {
            last.status = Status::Unknown;
        }
    }

    fn into_ledger(self) -> Recorded {
        Recorded(History { txns: self.history })
    }
}
