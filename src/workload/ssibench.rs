//! `ssibench` and `simple-ssibench`: the SSI conflict-tracking benchmarks.
//!
//! Source: the liumx10/pg-bench repository, used in a 2017 report on the
//! performance of PostgreSQL's SSI conflict tracking (linked list vs hash
//! table vs skip list). Defaults are the original's: tables of 100000 rows,
//! range reads of 100 keys, updates of 20 keys, read ratio 0.5 (it ran 40
//! clients).
//!
//! Tables `ssibench1..3(b_int_key serial primary key, b_int int,
//! b_value_1 .. b_value_10 varchar)`, `b_int` random, values NULL.
//! - ssibench (3 tables): *read-only* sums `b_int` over a range of table
//!   t; *read-update* reads the same way, then updates column `b_value_k`
//!   of 20 distinct random keys of table `t % 3 + 1`. Reads of table i and
//!   writes of table i+1 chain rw-conflicts, so read-update transactions
//!   can be pivots (the original saw about 25 % aborts).
//! - simple-ssibench (1 table): the range read, or the 20-key update
//!   alone. Few aborts but long rw-conflict lists.
//!
//! Reported as the original did: KTPS and abort ratio (attempts that did
//! not commit / attempts), besides the usual figures.

use crate::wire::{Conn, Statement};
use bytes::BufMut;
use rand::rngs::Xoshiro256PlusPlus;
use rand::seq::index::sample;
use rand::{RngExt, SeedableRng};
use tokio_postgres::Client;

use super::{
    ExplainStatement, Loader, Outcome, ParamSpec, Setup, StrategySpec, TxControl, Workload,
    WorkloadClient, WorkloadError, WorkloadSpec, copy_rows, put_int,
};
use crate::model::InvariantResult;
use crate::model::Lifetime;
use crate::workload::AttemptError;

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "table-size",
        default: "100000",
        help: "rows per table",
    },
    ParamSpec {
        name: "read-size",
        default: "100",
        help: "keys per range read",
    },
    ParamSpec {
        name: "update-size",
        default: "20",
        help: "distinct keys per update",
    },
    ParamSpec {
        name: "read-ratio",
        default: "0.5",
        help: "share of read-only transactions, 0 .. 1",
    },
];

const STRATEGIES: &[StrategySpec] = &[StrategySpec {
    name: "optimistic",
    help: "no row locks: the isolation level protects; retry 40001/40P01",
}];

const INVARIANTS: &[&str] = &[
    "row-count: every table still holds table-size rows",
    "written-values: every b_value_k is NULL or a value written to column k",
];

/// `isobench workloads ssibench`.
pub static SSIBENCH: WorkloadSpec = WorkloadSpec {
    name: "ssibench",
    summary: "3 tables, range reads of table t + updates of table t+1: rw-conflict chains and pivots",
    source: "liumx10/pg-bench (2017 SSI conflict-tracking performance report)",
    scale: None,
    params: PARAMS,
    strategies: STRATEGIES,
    transactions: &[
        "read-only (read-ratio): SELECT sum(b_int) over read-size keys of table t (t uniform 1..3)",
        "read-update: the same read, then UPDATE b_value_k of update-size random keys of table t%3+1",
    ],
    invariants: INVARIANTS,
    example: "--workload ssibench --isolation ser --clients 8,40 --repeat 5",
};

/// `isobench workloads simple-ssibench`.
pub static SIMPLE_SSIBENCH: WorkloadSpec = WorkloadSpec {
    name: "simple-ssibench",
    summary: "1 table, range reads or 20-key updates: few aborts, long rw-conflict lists",
    source: "liumx10/pg-bench (2017 SSI conflict-tracking performance report)",
    scale: None,
    params: PARAMS,
    strategies: STRATEGIES,
    transactions: &[
        "read-only (read-ratio): SELECT sum(b_int) over read-size keys",
        "update-only: UPDATE b_value_k of update-size random keys",
    ],
    invariants: INVARIANTS,
    example: "--workload simple-ssibench --isolation rr,ser --clients 40",
};

/// ssibench (3 tables) or simple-ssibench (1 table).
#[derive(Debug, Clone)]
pub struct Ssibench {
    tables: i32,
    table_size: i32,
    read_size: i32,
    update_size: usize,
    read_ratio: f64,
}

const COLUMNS: i32 = 10;
/// Seed of the loaded `b_int` values (data must not depend on the run).
const DATA_SEED: u64 = 0x5eed_0551;

fn read_sql(table: i32) -> String {
    format!("SELECT sum(b_int) FROM ssibench{table} WHERE b_int_key > $1 AND b_int_key < $1 + $2")
}

fn update_sql(table: i32, column: i32) -> String {
    format!("UPDATE ssibench{table} SET b_value_{column} = $1 WHERE b_int_key = ANY($2)")
}

impl Workload for Ssibench {
    type Client = SsibenchClient;

    fn new(setup: &Setup) -> Result<Self, WorkloadError> {
        let table_size = setup.int("table-size", 1..=100_000_000)? as i32;
        let read_size = setup.int("read-size", 1..=i64::from(table_size))? as i32;
        let update_size = setup.int("update-size", 1..=i64::from(table_size))? as usize;
        Ok(Ssibench {
            tables: if setup.spec.name == "ssibench" { 3 } else { 1 },
            table_size,
            read_size,
            update_size,
            read_ratio: setup.float("read-ratio", 0.0..=1.0)?,
        })
    }

    fn data_key(&self) -> String {
        format!("table-size={}", self.table_size)
    }

    fn tx_types(&self) -> Vec<&'static str> {
        if self.tables == 3 {
            vec!["read-only", "read-update"]
        } else {
            vec!["read-only", "update-only"]
        }
    }

    async fn load(&self, db: &Loader) -> Result<u64, WorkloadError> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(DATA_SEED);
        let mut rows = 0;
        for t in 1..=self.tables {
            let values: Vec<String> = (1..=COLUMNS)
                .map(|k| format!("b_value_{k} varchar"))
                .collect();
            let ddl = format!(
                "CREATE TABLE ssibench{t} (b_int_key serial PRIMARY KEY, b_int int, {})",
                values.join(", ")
            );
            db.batch_execute(&ddl)
                .await
                .map_err(WorkloadError::db(format!("create ssibench{t}")))?;
            let sql = format!("COPY ssibench{t} (b_int_key, b_int) FROM STDIN");
            rows += copy_rows(db, &sql, i64::from(self.table_size), |buf, key| {
                put_int(buf, key);
                buf.put_u8(b'\t');
                put_int(buf, rng.random_range(0..1_000_000));
                buf.put_u8(b'\n');
            })
            .await?;
            db.batch_execute(&format!(
                "SELECT setval(pg_get_serial_sequence('ssibench{t}', 'b_int_key'), {})",
                self.table_size
            ))
            .await
            .map_err(WorkloadError::db("set ssibench sequence"))?;
        }
        Ok(rows)
    }

    fn explain_statements(&self) -> Vec<ExplainStatement> {
        vec![
            ExplainStatement {
                label: "range read".into(),
                sql: read_sql(1)
                    .replace("$1 + $2", &format!("1 + {}", self.read_size))
                    .replace("$1", "1"),
            },
            ExplainStatement {
                label: "update".into(),
                sql: update_sql(self.tables.min(2), 1)
                    .replace("$1", "'x'")
                    .replace("$2", "ARRAY[1, 2, 3]"),
            },
        ]
    }

    fn client(&self, client_id: u32, seed: u64) -> SsibenchClient {
        SsibenchClient {
            w: self.clone(),
            client_id,
            seq: 0,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            reads: Vec::new(),
            updates: Vec::new(),
        }
    }

    async fn check(
        &self,
        db: &Client,
        _lifetime: Lifetime,
        _ledger: (),
    ) -> Result<Vec<InvariantResult>, WorkloadError> {
        let mut counts = Vec::new();
        let mut count_ok = true;
        let mut foreign = 0i64;
        let mut example = None;
        for t in 1..=self.tables {
            let n: i64 = db
                .query_one(&format!("SELECT count(*) FROM ssibench{t}"), &[])
                .await
                .map_err(WorkloadError::db("ssibench row count"))?
                .get(0);
            count_ok &= n == i64::from(self.table_size);
            counts.push(format!("ssibench{t}: {n}"));
            // A value written to column k starts with "k:".
            let wrong: Vec<String> = (1..=COLUMNS)
                .map(|k| {
                    format!("(SELECT count(*) FROM ssibench{t} WHERE b_value_{k} NOT LIKE '{k}:%')")
                })
                .collect();
            let n: i64 = db
                .query_one(&format!("SELECT {}", wrong.join(" + ")), &[])
                .await
                .map_err(WorkloadError::db("ssibench written values"))?
                .get(0);
            if n > 0 && example.is_none() {
                example = Some(format!("ssibench{t}"));
            }
            foreign += n;
        }
        Ok(vec![
            InvariantResult::check(
                "row-count",
                count_ok,
                format!("{} (expected {} each)", counts.join(", "), self.table_size),
            ),
            InvariantResult::count(
                "written-values",
                foreign as u64,
                match example {
                    None => "every b_value_k is NULL or written to column k".into(),
                    Some(t) => format!("{foreign} values not written to their column, e.g. in {t}"),
                },
            ),
        ])
    }
}

/// One client: reads[t-1], updates[(t-1) * 10 + k-1].
#[derive(Debug)]
pub struct SsibenchClient {
    w: Ssibench,
    client_id: u32,
    seq: u64,
    rng: Xoshiro256PlusPlus,
    reads: Vec<Statement>,
    updates: Vec<Statement>,
}

/// One transaction's inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SsibenchInput {
    /// The table read, 1-based; `None` for simple-ssibench's update-only.
    pub read: Option<(i32, i32)>,
    /// (table, column, keys, value) of the update, if any.
    pub update: Option<(i32, i32, Vec<i32>, String)>,
}

impl WorkloadClient for SsibenchClient {
    type Input = SsibenchInput;
    type Ledger = ();

    async fn prepare(
        &mut self,
        conn: &mut Conn,
        _tx: &TxControl,
    ) -> Result<(), crate::wire::Error> {
        // Again after a reconnect: the old connection's statements are gone.
        self.reads.clear();
        self.updates.clear();
        for t in 1..=self.w.tables {
            self.reads.push(conn.prepare(&read_sql(t)).await?);
            for k in 1..=COLUMNS {
                self.updates.push(conn.prepare(&update_sql(t, k)).await?);
            }
        }
        Ok(())
    }

    fn next_input(&mut self) -> SsibenchInput {
        let w = &self.w;
        let read_only = self.rng.random_bool(w.read_ratio);
        let t = self.rng.random_range(1..=w.tables);
        let read = (read_only || w.tables == 3).then(|| {
            (
                t,
                self.rng
                    .random_range(0..=(w.table_size - w.read_size).max(0)),
            )
        });
        let update = (!read_only).then(|| {
            let keys: Vec<i32> = sample(&mut self.rng, w.table_size as usize, w.update_size)
                .into_iter()
                .map(|i| i as i32 + 1)
                .collect();
            let k = self.rng.random_range(1..=COLUMNS);
            self.seq += 1;
            let value = format!("{k}:{}:{}", self.client_id, self.seq);
            (t % w.tables + 1, k, keys, value)
        });
        SsibenchInput { read, update }
    }

    fn tx_type(&self, input: &SsibenchInput) -> usize {
        usize::from(input.update.is_some())
    }

    async fn attempt(
        &mut self,
        conn: &mut Conn,
        tx: &TxControl,
        i: &SsibenchInput,
    ) -> Result<Outcome, AttemptError> {
        tx.begin(conn).await?;
        if let Some((t, x)) = i.read {
            let stmt = &self.reads[(t - 1) as usize];
            conn.query_one(stmt, &[&x, &self.w.read_size])
                .await
                .map_err(|e| AttemptError::body(e).at("range read"))?;
        }
        if let Some((t, k, keys, value)) = &i.update {
            let stmt = &self.updates[((t - 1) * COLUMNS + k - 1) as usize];
            conn.execute(stmt, &[value, keys])
                .await
                .map_err(|e| AttemptError::body(e).at("update"))?;
        }
        tx.commit(conn).await
    }

    fn into_ledger(self) {}
}
