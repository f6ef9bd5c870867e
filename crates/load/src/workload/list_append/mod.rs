//! `list-append`: Jepsen's list-append test, checked by [`crate::elle`].
//!
//! Source: Kingsbury & Alvaro, "Elle: Inferring Isolation Anomalies from
//! Experimental Observations", VLDB 2020, and Jepsen's PostgreSQL 12.3
//! analysis (2020), whose transactions append with `INSERT ... ON CONFLICT
//! DO UPDATE` and read whole lists; anomalies are classified by Adya's
//! phenomena (Adya, "Weak Consistency", MIT 1999).
//!
//! Tables `la_0 .. la_<tables-1>(k bigint primary key, sk bigint, v
//! bigint[])` (Jepsen's shape: `sk` is a secondary key equal to `k`)
//! start empty: a key is created by its first append, so inserts and
//! reads of absent keys keep happening. `shape` holds the variants a
//! bug hunter narrows a race with (key order, upsert, read path, index
//! kind, fillfactor, range scans). A window of `keys` hot keys moves up by one
//! fresh key every `rotate-every` transactions (all clients together, one
//! shared counter), which keeps contention on a few keys while the lists
//! stay short (about `1.25 x rotate-every` values each at the default
//! operation mix). A transaction is 1..`max-ops` operations, each an
//! `append(k, v)` or a `read(k)` (a scan of a few keys with
//! `reads=range`) with equal odds, in ascending key order (so that
//! appends cannot deadlock); with `read-only` > 0 that share of
//! transactions only reads and declares it (`BEGIN ... READ ONLY`, and
//! `DEFERRABLE` with `deferrable=true`). `v` is unique per run,
//! made from the client id and the client's counter (`counter * 10000 +
//! client` below 10000 clients). Every attempt, aborted or not, is
//! recorded in the client's own [`Recorded`] ledger, with its backend's
//! pid and the client's times of each statement; after the run the merged
//! history is checked and every anomaly class becomes an invariant; the
//! lists on the server are checked against the acknowledged appends
//! (`kept.rs`: the commits a failover lost).
//!
//! Reads on a standby (`--read-from standby|any`) are kept apart from
//! the primary's history, which is checked alone as before: a standby's
//! snapshot is a consistent past state of the primary (a prefix of its
//! WAL), so a stale read there is no anomaly of the primary's isolation
//! level, yet the checker, which orders transactions by what they read
//! and not by time, places it before the writes it missed (an
//! anti-dependency to each). And a hot standby has no SERIALIZABLE (it
//! runs REPEATABLE READ instead), so its read-only transactions may show
//! the read-only anomaly (Fekete, O'Neil and O'Neil, SIGMOD Record 2004)
//! that SSI prevents on the primary. The committed standby reads are then
//! checked with the primary's history for what no past state can show
//! (`standby.rs`, the invariant `standby-reads-consistent`, present when
//! a standby read committed): an aborted or intermediate append, a value
//! never appended, a list that is not a prefix of its key's order. What
//! staleness breaks is counted by the session-guarantee checks instead
//! (`engine::reads`: read-your-writes, monotonic reads).

mod kept;
mod shape;
mod standby;

pub use shape::{Shape, literal};

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
use crate::elle::{self, Class, History, Op, Status, Timing, Txn};
use crate::model::{Cycle, CycleStep, Dependency, InvariantResult, Lifetime};

/// `isobench workloads list-append`.
pub static SPEC: WorkloadSpec = WorkloadSpec {
    name: "list-append",
    summary: "Jepsen's list-append: appends and whole-list reads, every anomaly class found by an Elle-style checker",
    source: "Kingsbury & Alvaro, Elle, VLDB 2020; Jepsen PostgreSQL 12.3 (2020); Adya 1999",
    scale: None,
    params: SPEC_PARAMS,
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
        "read-only, append-only, read-append: 1..max-ops of append(k, v) (INSERT ... ON CONFLICT DO UPDATE SET v = v || ... by default) and read(k) (or a range scan), 50% each; read-only share declared READ ONLY",
    ],
    invariants: &[
        "G0, G1a, G1b, G1c, G-single, G2-item: Adya's phenomena, counted by the Elle-style checker over the run's history",
        "incompatible-order: keys whose reads are not prefixes of one order; internal: a transaction not seeing its own appends",
        "acknowledged-appends-kept: every append of a transaction the client saw commit is in its key's list after the run (lost_commits counts those that are not: a failover to a standby that lacked them)",
        "standby-reads-consistent (with committed standby reads): what no past state of the primary shows in a standby read, i.e. G1a, G1b, a value never appended, a list not a prefix of its key's order; G-single and G2-item cycles through standby reads are expected (a stale snapshot), not counted",
    ],
    example: "--workload list-append --isolation rc,rr,ser --clients 16",
};

/// list-append's parameters (`rw-register` takes all but the scans').
static SPEC_PARAMS: &[ParamSpec] = &[
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
    ParamSpec {
        name: "key-order",
        default: "ascending",
        help: "ascending: fresh keys at the right edge of the index; random: anywhere (positions scrambled over 2^40)",
    },
    ParamSpec {
        name: "upsert",
        default: "on-conflict",
        help: "how an append writes: on-conflict (INSERT ... ON CONFLICT DO UPDATE), select-insert (SELECT, then UPDATE or INSERT), merge (MERGE)",
    },
    ParamSpec {
        name: "read",
        default: "pk",
        help: "pk: reads by the primary key k; secondary: by Jepsen's sk column through its own index",
    },
    ParamSpec {
        name: "index",
        default: "btree",
        help: "the kind of the reads' index besides the primary key: btree, or hash (on sk, or with read=pk on k)",
    },
    ParamSpec {
        name: "fillfactor",
        default: "100",
        help: "table and index fillfactor, % (10..100)",
    },
    ParamSpec {
        name: "reads",
        default: "point",
        help: "point: read one key; range: scan range-width keys of a table (k BETWEEN lo AND hi, a predicate read)",
    },
    ParamSpec {
        name: "range-width",
        default: "4",
        help: "keys of one table a range scan spans (reads=range)",
    },
    ParamSpec {
        name: "read-only",
        default: "0",
        help: "share of transactions (0..1) that only read and say so (BEGIN ... READ ONLY); 0: the mix of reads and appends alone",
    },
    ParamSpec {
        name: "deferrable",
        default: "false",
        help: "read-only transactions are READ ONLY DEFERRABLE (SERIALIZABLE waits for a safe snapshot)",
    },
];

/// `isobench workloads rw-register`: the same transactions over registers.
pub static REGISTER_SPEC: WorkloadSpec = WorkloadSpec {
    name: "rw-register",
    summary: "Elle's rw-register: writes and reads of single values, every anomaly class a register history can prove",
    source: "Kingsbury & Alvaro, Elle, VLDB 2020 (section 4.1); Adya 1999",
    scale: None,
    params: REGISTER_PARAMS,
    strategies: SPEC.strategies,
    transactions: &[
        "read-only, write-only, read-write: 1..max-ops of write(k, v) (INSERT ... ON CONFLICT DO UPDATE SET v = EXCLUDED.v by default) and read(k), 50% each",
    ],
    invariants: &[
        "G0, G1a, G1b, G1c, G-single, G2-item as a register history proves them: a read names its writer, but the version order is known only where a transaction read a value and then wrote another, so fewer cycles are seen than list-append would see",
        "incompatible-order: version facts that contradict each other; internal: a read after the transaction's own write that does not return it",
    ],
    example: "--workload rw-register --isolation rr,ser --clients 16",
};

/// The parameters of `rw-register`: list-append's, without range scans.
static REGISTER_PARAMS: &[ParamSpec] = &[
    SPEC_PARAMS[0],
    SPEC_PARAMS[1],
    SPEC_PARAMS[2],
    SPEC_PARAMS[3],
    SPEC_PARAMS[4],
    SPEC_PARAMS[5],
    SPEC_PARAMS[6],
    SPEC_PARAMS[7],
    SPEC_PARAMS[8],
    SPEC_PARAMS[9],
    SPEC_PARAMS[12],
    SPEC_PARAMS[13],
];

/// The list-append workload.
#[derive(Debug, Clone)]
pub struct ListAppend {
    keys: u64,
    max_ops: u32,
    rotate: u64,
    shape: Arc<Shape>,
    /// Share of transactions that only read and say so.
    read_only: f64,
    /// Record every attempt and check the history after the run.
    record: bool,
    /// Transactions drawn by all clients: where the hot-key window is.
    drawn: Arc<AtomicU64>,
}

/// The history of every attempt, merged over clients: those on the
/// primary, and apart from them the committed ones on a standby.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Recorded {
    pub primary: History,
    pub standby: History,
}

impl Ledger for Recorded {
    fn merge(&mut self, other: Self) {
        self.primary.txns.extend(other.primary.txns);
        self.standby.txns.extend(other.standby.txns);
    }

    /// `histories/run-N.jsonl.gz`: one transaction per line as JSON (the
    /// checker's [`elle::Txn`]: ops, values read, outcome with SQLSTATE),
    /// gzip-compressed, so that the history can be checked again or by
    /// another tool.
    fn save(&self, dir: &std::path::Path, run: u32) -> std::io::Result<Option<String>> {
        use std::io::Write;
        if self.primary.txns.is_empty() {
            return Ok(None);
        }
        let rel = format!("histories/run-{run}.jsonl.gz");
        std::fs::create_dir_all(dir.join("histories"))?;
        let file = std::fs::File::create(dir.join(&rel))?;
        let mut out = flate2::write::GzEncoder::new(
            std::io::BufWriter::new(file),
            flate2::Compression::fast(),
        );
        for t in &self.primary.txns {
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
        let register = setup.spec.name == REGISTER_SPEC.name;
        setup.int("tables", 1..=100)?;
        setup.int("fillfactor", 10..=100)?;
        setup.bool("deferrable")?;
        if !register {
            setup.int("range-width", 1..=1000)?;
        }
        for (name, choices) in shape::CHOICES {
            if !(register && name == "reads") {
                setup.choice(name, choices)?;
            }
        }
        let shape = Shape::for_workload(setup.spec.name, &setup.params, &setup.strategy)
            .map_err(WorkloadError::Invalid)?;
        Ok(ListAppend {
            keys: setup.int("keys", 1..=1_000_000)? as u64,
            max_ops: setup.int("max-ops", 1..=100)? as u32,
            rotate: setup.int("rotate-every", 1..=1_000_000_000)? as u64,
            shape: Arc::new(shape),
            read_only: setup.float("read-only", 0.0..=1.0)?,
            record: setup.bool("record")?,
            drawn: Arc::new(AtomicU64::new(0)),
        })
    }

    fn data_key(&self) -> String {
        self.shape.data_key()
    }

    fn tx_types(&self) -> Vec<&'static str> {
        if self.shape.register {
            vec!["read-only", "write-only", "read-write"]
        } else {
            vec!["read-only", "append-only", "read-append"]
        }
    }

    async fn load(&self, db: &Loader) -> Result<u64, WorkloadError> {
        for t in 0..self.shape.tables {
            for sql in self.shape.ddl(t) {
                db.batch_execute(&sql)
                    .await
                    .map_err(WorkloadError::db(sql.clone()))?;
            }
        }
        Ok(0)
    }

    fn explain_statements(&self) -> Vec<ExplainStatement> {
        let s = &self.shape;
        let mut out: Vec<ExplainStatement> = s
            .append_sql(0)
            .iter()
            .enumerate()
            .map(|(i, sql)| ExplainStatement {
                label: if s.append_sql(0).len() == 1 {
                    "append".into()
                } else {
                    format!("append {}", ["check", "update", "insert"][i]).into()
                },
                sql: literal(sql, &[1, 1]),
            })
            .collect();
        out.push(match s.reads {
            shape::Reads::Point => ExplainStatement {
                label: "read".into(),
                sql: literal(&s.read_sql(0), &[1]),
            },
            shape::Reads::Range => ExplainStatement {
                label: "scan".into(),
                sql: literal(&s.scan_sql(0), &[1, 1 + s.range_width as i64]),
            },
        });
        out
    }

    fn client(&self, client_id: u32, seed: u64) -> ListAppendClient {
        ListAppendClient {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            id: client_id,
            counter: 0,
            workload: self.clone(),
            stmts: Vec::new(),
            begin_read_only: None,
            history: Vec::new(),
            standby: Vec::new(),
            attempt_from: 0,
        }
    }

    async fn check(
        &self,
        db: &Client,
        _lifetime: Lifetime,
        ledger: Recorded,
    ) -> Result<Vec<InvariantResult>, WorkloadError> {
        if !self.record {
            return Ok(Vec::new());
        }
        let Recorded {
            primary: history,
            standby: reads,
        } = ledger;
        // A register's value is overwritten: only lists keep every write.
        let kept = if self.shape.register {
            None
        } else {
            let lists = kept::final_lists(db, &self.shape).await?;
            let durable = crate::workload::tpcb::commits_are_durable(db).await?;
            Some(kept::appends_kept(&history, &lists, durable))
        };
        let (report, took, standby) = tokio::task::spawn_blocking(move || {
            let start = std::time::Instant::now();
            let report = elle::check(&history);
            let took = start.elapsed();
            // Standby reads, checked with the primary's history after it
            // (`standby.rs`), when there were any.
            let standby = (!reads.is_empty()).then(|| {
                let mut mixed = history;
                let primary = mixed.len();
                mixed.txns.extend(reads.txns);
                let with = elle::check(&mixed);
                standby::consistent(&mixed, primary, &report, &with)
            });
            (report, took, standby)
        })
        .await
        .map_err(|e| WorkloadError::Invalid(format!("list-append checker: {e}")))?;
        let mut out = invariants(&report, took);
        out.extend(kept);
        out.extend(standby);
        Ok(out)
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

/// The prepared statements of one table.
#[derive(Debug)]
struct TableStmts {
    /// One, or for `upsert=select-insert` the check, the update and the
    /// insert.
    append: Vec<Statement>,
    read: Statement,
    scan: Statement,
}

/// One client: its statements per table and its own history.
#[derive(Debug)]
pub struct ListAppendClient {
    rng: Xoshiro256PlusPlus,
    id: u32,
    counter: u64,
    workload: ListAppend,
    stmts: Vec<TableStmts>,
    /// `BEGIN ... READ ONLY [DEFERRABLE]` at the run's level.
    begin_read_only: Option<Statement>,
    history: Vec<Txn>,
    /// Committed attempts that ran on a standby (`standby.rs`).
    standby: Vec<Txn>,
    /// The history's length when the running attempt began.
    attempt_from: usize,
}

/// What one operation of a transaction does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    Append,
    Read,
    /// A scan of the table's keys from this key on
    /// ([`Shape::range_width`] of them).
    Scan,
}

/// A transaction's operations on keys, and whether it declares itself
/// read-only. A retry appends fresh values to the same keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListAppendInput {
    pub read_only: bool,
    pub ops: Vec<(OpKind, u64)>,
}

/// What an attempt's history entry says besides its operations.
struct Attempt {
    read_only: bool,
    pid: i32,
    clock: Option<Clock>,
}

/// The client's clock over one attempt: the Unix time of BEGIN and
/// offsets from it (the history's [`Timing`]).
struct Clock {
    start: std::time::Instant,
    timing: Timing,
}

impl Clock {
    fn start() -> Clock {
        let begin_us = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64);
        Clock {
            start: std::time::Instant::now(),
            timing: Timing {
                begin_us,
                ops: Vec::new(),
                commit: None,
            },
        }
    }

    /// µs since BEGIN was sent.
    fn now(&self) -> u32 {
        self.start.elapsed().as_micros().min(u128::from(u32::MAX)) as u32
    }
}

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

    fn record(&mut self, ops: Vec<Op>, status: Status, tx: Attempt) {
        if !self.workload.record {
            return;
        }
        self.history.push(Txn {
            process: self.id,
            status,
            ops,
            read_only: tx.read_only,
            pid: u32::try_from(tx.pid).ok(),
            timing: tx.clock.map(|c| c.timing),
        });
    }

    /// Records an attempt that failed with `e` before or at COMMIT: aborted
    /// with the server's SQLSTATE, or of unknown outcome when COMMIT got no
    /// answer from the server.
    fn failed(&mut self, ops: Vec<Op>, e: &crate::wire::Error, at_commit: bool, tx: Attempt) {
        let status = match e.code() {
            Some(code) => Status::Aborted {
                sqlstate: Some(String::from_utf8_lossy(&code).into_owned()),
            },
            None if at_commit => Status::Unknown,
            None => Status::Aborted { sqlstate: None },
        };
        self.record(ops, status, tx);
    }

    /// One operation: its statements sent, its history entry pushed (a
    /// read's with what it returned, `None` when it failed).
    async fn operate(
        &mut self,
        conn: &mut Conn,
        kind: OpKind,
        key: u64,
        ops: &mut Vec<Op>,
    ) -> Result<(), crate::wire::Error> {
        let shape = Arc::clone(&self.workload.shape);
        let record = self.workload.record;
        let table = shape.table(key) as usize;
        let k = key as i64;
        match kind {
            OpKind::Append => {
                let value = self.next_value();
                if record {
                    ops.push(if shape.register {
                        Op::Write { key, value }
                    } else {
                        Op::Append { key, value }
                    });
                }
                let v = value as i64;
                let s = &self.stmts[table];
                if s.append.len() == 1 {
                    conn.execute(&s.append[0], &[&k, &v]).await.map(drop)
                } else {
                    // select-insert: the update when the key exists.
                    let exists = conn.query_opt(&s.append[0], &[&k]).await?.is_some();
                    let s = &self.stmts[table];
                    if exists {
                        conn.execute(&s.append[1], &[&k, &v]).await.map(drop)
                    } else {
                        conn.execute(&s.append[2], &[&k, &v]).await.map(drop)
                    }
                }
            }
            OpKind::Read if shape.register => {
                let row = conn.query_opt(&self.stmts[table].read, &[&k]).await?;
                if record {
                    ops.push(Op::Get {
                        key,
                        value: row.map(|r| r.get::<i64>(0) as u64),
                    });
                }
                Ok(())
            }
            OpKind::Read => match conn.query_opt(&self.stmts[table].read, &[&k]).await {
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
            },
            OpKind::Scan => {
                // The table's keys from `key`: every `tables`-th key.
                let hi = key + (shape.range_width - 1) * shape.tables;
                match conn
                    .query(&self.stmts[table].scan, &[&k, &(hi as i64)])
                    .await
                {
                    Ok(rows) => {
                        if record {
                            let rows = rows
                                .iter()
                                .map(|r| {
                                    let list: Vec<i64> = r.get(1);
                                    (
                                        r.get::<i64>(0) as u64,
                                        list.into_iter().map(|v| v as u64).collect(),
                                    )
                                })
                                .collect();
                            ops.push(Op::Scan {
                                lo: key,
                                hi,
                                stride: shape.tables,
                                rows: Some(rows),
                            });
                        }
                        Ok(())
                    }
                    Err(e) => {
                        if record {
                            ops.push(Op::Scan {
                                lo: key,
                                hi,
                                stride: shape.tables,
                                rows: None,
                            });
                        }
                        Err(e)
                    }
                }
            }
        }
    }
}

impl WorkloadClient for ListAppendClient {
    type Input = ListAppendInput;
    type Ledger = Recorded;

    async fn prepare(&mut self, conn: &mut Conn, tx: &TxControl) -> Result<(), crate::wire::Error> {
        self.stmts.clear();
        let shape = Arc::clone(&self.workload.shape);
        for t in 0..shape.tables {
            let mut append = Vec::new();
            for sql in shape.append_sql(t) {
                append.push(conn.prepare(&sql).await?);
            }
            let read = conn.prepare(&shape.read_sql(t)).await?;
            let scan = conn.prepare(&shape.scan_sql(t)).await?;
            self.stmts.push(TableStmts { append, read, scan });
        }
        self.begin_read_only = if self.workload.read_only > 0.0 {
            let sql = Shape::begin_sql(tx.isolation(), true, self.workload.shape.deferrable);
            Some(conn.prepare(&sql).await?)
        } else {
            None
        };
        Ok(())
    }

    fn next_input(&mut self) -> ListAppendInput {
        let w = &self.workload;
        let base = w.drawn.fetch_add(1, Ordering::Relaxed) / w.rotate;
        let n = self.rng.random_range(1..=w.max_ops);
        let read_only = w.read_only > 0.0 && self.rng.random_bool(w.read_only);
        let read = match w.shape.reads {
            shape::Reads::Point => OpKind::Read,
            shape::Reads::Range => OpKind::Scan,
        };
        let mut ops: Vec<(OpKind, u64)> = (0..n)
            .map(|_| {
                let append = !read_only && self.rng.random_bool(0.5);
                let key = w.shape.key(base + self.rng.random_range(0..w.keys));
                (if append { OpKind::Append } else { read }, key)
            })
            .collect();
        // Keys in ascending order (a stable sort: the operations on one key
        // keep theirs), so that appends lock rows in one global order:
        // random orders deadlock and every deadlock costs
        // deadlock_timeout (measured: 12 tx/s at rc, 16 clients).
        ops.sort_by_key(|&(_, key)| key);
        ListAppendInput { read_only, ops }
    }

    fn tx_type(&self, input: &ListAppendInput) -> usize {
        let appends = |a: bool| input.ops.iter().any(|o| (o.0 == OpKind::Append) == a);
        match (appends(false), appends(true)) {
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
        let record = self.workload.record;
        self.attempt_from = self.history.len();
        let pid = conn.pid();
        let mut clock = record.then(Clock::start);
        match (&self.begin_read_only, input.read_only) {
            (Some(begin), true) => conn
                .execute(begin, &[])
                .await
                .map(drop)
                .map_err(AttemptError::body)?,
            _ => tx.begin(conn).await?,
        }
        let mut ops = Vec::with_capacity(if record { input.ops.len() } else { 0 });
        for &(kind, key) in &input.ops {
            let sent = clock.as_ref().map(Clock::now);
            let result = self.operate(conn, kind, key, &mut ops).await;
            if let (Some(c), Some(sent)) = (clock.as_mut(), sent) {
                let answered = c.now();
                c.timing.ops.push([sent, answered]);
            }
            if let Err(e) = result {
                let tx = Attempt {
                    read_only: input.read_only,
                    pid,
                    clock,
                };
                self.failed(ops, &e, false, tx);
                let at = match kind {
                    OpKind::Append if self.workload.shape.register => "write",
                    OpKind::Append => "append",
                    OpKind::Read => "read",
                    OpKind::Scan => "scan",
                };
                return Err(AttemptError::body(e).at(at));
            }
        }
        let sent = clock.as_ref().map(Clock::now);
        let committed = tx.commit(conn).await;
        if let (Some(c), Some(sent)) = (clock.as_mut(), sent) {
            let answered = c.now();
            c.timing.commit = Some([sent, answered]);
        }
        let tx = Attempt {
            read_only: input.read_only,
            pid,
            clock,
        };
        match committed {
            Ok(outcome) => {
                self.record(ops, Status::Committed, tx);
                Ok(outcome)
            }
            Err(e) => {
                if let super::Cause::Db(db) = &e.error {
                    self.failed(ops, db, true, tx);
                }
                Err(e)
            }
        }
    }

    /// Reads only (the `read-only` share, and transactions that drew no
    /// append).
    fn read_only(&self, input: &ListAppendInput) -> bool {
        input.ops.iter().all(|o| o.0 != OpKind::Append)
    }

    /// A standby read leaves the primary's history for the standby's,
    /// when it committed (see the module docs).
    fn ran_on_standby(&mut self, _input: &ListAppendInput) {
        let ran = self.history.drain(self.attempt_from..);
        self.standby.extend(ran.filter(Txn::committed));
    }

    fn unknown_outcome(&mut self, _input: &ListAppendInput) {
        if let Some(last) = self.history.last_mut() {
            last.status = Status::Unknown;
        }
    }

    fn into_ledger(self) -> Recorded {
        Recorded {
            primary: History { txns: self.history },
            standby: History { txns: self.standby },
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// A violation's evidence rebuilds the shape from a cell's parameters
    /// (the ones a study gave): the shape's defaults must be the spec's.
    #[test]
    fn the_shapes_defaults_are_the_specs() {
        let setup = Setup::new(&SPEC, None, None, &BTreeMap::new()).unwrap();
        let w = ListAppend::new(&setup).unwrap();
        assert_eq!(
            *w.shape,
            Shape::from_params(&BTreeMap::new(), "optimistic").unwrap()
        );
        let given = BTreeMap::from([
            ("read".to_string(), "secondary".to_string()),
            ("deferrable".to_string(), "true".to_string()),
        ]);
        let setup = Setup::new(&SPEC, None, Some("locking"), &given).unwrap();
        let w = ListAppend::new(&setup).unwrap();
        assert_eq!(*w.shape, Shape::from_params(&given, "locking").unwrap());
        assert!(w.shape.deferrable && w.shape.locking);
    }
}
