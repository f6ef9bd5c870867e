//! `sibench`: Cahill's SIBENCH, the cost of read tracking.
//!
//! Source: M. J. Cahill, "Serializable Isolation for Snapshot Databases",
//! PhD thesis, University of Sydney, 2009; D. R. K. Ports and K. Grittner,
//! "Serializable Snapshot Isolation in PostgreSQL", VLDB 2012, section 8.1.
//!
//! One table `sibench(k int primary key, v int)` of `rows` rows, all `v =
//! 0`. Two transaction types in equal numbers: *query* reads the whole
//! table and returns the key with the lowest value (a sequential scan, so a
//! relation-level SIRead lock under SERIALIZABLE), *update* increments the
//! value of one uniformly chosen key. No transaction is a pivot, so SSI
//! should abort little; the benchmark measures what read tracking costs,
//! and with the `locking` strategy (the query takes `FOR SHARE` on every
//! row, emulating strict two-phase locking) what reader/writer blocking
//! costs.

use crate::wire::{Conn, Statement};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use tokio_postgres::Client;

use super::{
    Ended, ExplainStatement, Ledger, Loader, ParamSpec, Setup, StrategySpec, TxControl, Workload,
    WorkloadClient, WorkloadError, WorkloadSpec,
};
use crate::model::InvariantResult;
use crate::model::Lifetime;
use crate::workload::AttemptError;

/// `isobench workloads sibench`.
pub static SPEC: WorkloadSpec = WorkloadSpec {
    name: "sibench",
    summary: "Cahill's SIBENCH: full-table query vs single-row update; the cost of read tracking",
    source: "Cahill 2009 (PhD thesis); Ports & Grittner, VLDB 2012, section 8.1",
    scale: None,
    params: &[ParamSpec {
        name: "rows",
        default: "100",
        help: "rows in the table (the paper's main factor; it used 10 .. 100000)",
    }],
    strategies: &[
        StrategySpec {
            name: "optimistic",
            help: "no row locks: the isolation level protects; retry 40001/40P01",
        },
        StrategySpec {
            name: "locking",
            help: "the query reads every row FOR SHARE (strict two-phase locking emulation)",
        },
    ],
    transactions: &[
        "query (50%): SELECT the key with the lowest value, reading the whole table",
        "update (50%): UPDATE one uniformly chosen row, v = v + 1",
    ],
    invariants: &[
        "sum-matches-updates: sum(v) = committed updates (+ unknown outcomes)",
        "row-count: count(*) = rows",
    ],
    example: "--workload sibench --param rows=10,100,1000 --isolation rr,ser --strategy optimistic,locking",
};

/// The SIBENCH workload.
#[derive(Debug, Clone)]
pub struct Sibench {
    rows: i32,
    locking: bool,
}

const QUERY: &str = "SELECT k FROM sibench ORDER BY v, k LIMIT 1";
/// The locking clause sits in a subquery so that every row read is locked,
/// not only the one LIMIT returns.
const QUERY_LOCKING: &str =
    "SELECT k FROM (SELECT k, v FROM sibench FOR SHARE) s ORDER BY v, k LIMIT 1";
const UPDATE: &str = "UPDATE sibench SET v = v + 1 WHERE k = $1";

/// Committed (and possibly committed) updates.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Updates {
    pub committed: u64,
    pub unknown: u64,
}

impl Ledger for Updates {
    fn merge(&mut self, o: Self) {
        self.committed += o.committed;
        self.unknown += o.unknown;
    }
}

impl Workload for Sibench {
    type Client = SibenchClient;

    fn new(setup: &Setup) -> Result<Self, WorkloadError> {
        Ok(Sibench {
            rows: setup.int("rows", 1..=10_000_000)? as i32,
            locking: setup.strategy == "locking",
        })
    }

    fn data_key(&self) -> String {
        format!("rows={}", self.rows)
    }

    fn tx_types(&self) -> Vec<&'static str> {
        vec!["query", "update"]
    }

    async fn load(&self, db: &Loader) -> Result<u64, WorkloadError> {
        db.batch_execute("CREATE TABLE sibench (k int PRIMARY KEY, v int NOT NULL)")
            .await
            .map_err(WorkloadError::db("create sibench"))?;
        let n = db
            .execute(
                "INSERT INTO sibench SELECT k, 0 FROM generate_series(1, $1::int) k",
                &[&self.rows],
            )
            .await
            .map_err(WorkloadError::db("load sibench"))?;
        Ok(n)
    }

    fn explain_statements(&self) -> Vec<ExplainStatement> {
        vec![
            ExplainStatement {
                label: "query".into(),
                sql: if self.locking { QUERY_LOCKING } else { QUERY }.into(),
            },
            ExplainStatement {
                label: "update".into(),
                sql: UPDATE.replace("$1", "1"),
            },
        ]
    }

    fn client(&self, _client_id: u32, seed: u64) -> SibenchClient {
        SibenchClient {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            rows: self.rows,
            locking: self.locking,
            stmts: None,
            ledger: Updates::default(),
        }
    }

    async fn check(
        &self,
        db: &Client,
        _lifetime: Lifetime,
        ledger: Updates,
    ) -> Result<Vec<InvariantResult>, WorkloadError> {
        let row = db
            .query_one(
                "SELECT coalesce(sum(v), 0)::bigint, count(*) FROM sibench",
                &[],
            )
            .await
            .map_err(WorkloadError::db("sibench invariant query"))?;
        let (sum, count): (i64, i64) = (row.get(0), row.get(1));
        let sum = sum as u64;
        Ok(vec![
            InvariantResult::check(
                "sum-matches-updates",
                (ledger.committed..=ledger.committed + ledger.unknown).contains(&sum),
                format!(
                    "sum(v)={sum} committed updates={} unknown outcomes={}",
                    ledger.committed, ledger.unknown
                ),
            ),
            InvariantResult::check(
                "row-count",
                count == i64::from(self.rows),
                format!("count(*)={count} rows={}", self.rows),
            ),
        ])
    }
}

/// One SIBENCH client.
#[derive(Debug)]
pub struct SibenchClient {
    rng: Xoshiro256PlusPlus,
    rows: i32,
    locking: bool,
    stmts: Option<(Statement, Statement)>,
    ledger: Updates,
}

/// A query, or an update of key `k`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SibenchInput {
    Query,
    Update(i32),
}

impl WorkloadClient for SibenchClient {
    type Input = SibenchInput;
    type Ledger = Updates;

    async fn prepare(
        &mut self,
        conn: &mut Conn,
        _tx: &TxControl,
    ) -> Result<(), crate::wire::Error> {
        let query = conn
            .prepare(if self.locking { QUERY_LOCKING } else { QUERY })
            .await?;
        self.stmts = Some((query, conn.prepare(UPDATE).await?));
        Ok(())
    }

    fn next_input(&mut self) -> SibenchInput {
        if self.rng.random_bool(0.5) {
            SibenchInput::Query
        } else {
            SibenchInput::Update(self.rng.random_range(1..=self.rows))
        }
    }

    fn tx_type(&self, input: &SibenchInput) -> usize {
        match input {
            SibenchInput::Query => 0,
            SibenchInput::Update(_) => 1,
        }
    }

    async fn attempt(
        &mut self,
        conn: &mut Conn,
        tx: &TxControl,
        input: &SibenchInput,
    ) -> Result<Ended, AttemptError> {
        let (query, update) = self.stmts.as_ref().expect("prepare() before attempt()");
        tx.begin(conn).await?;
        match input {
            SibenchInput::Query => {
                conn.query_one(query, &[])
                    .await
                    .map_err(|e| AttemptError::body(e).at("query"))?;
                tx.commit(conn).await
            }
            SibenchInput::Update(k) => {
                conn.execute(update, &[k])
                    .await
                    .map_err(|e| AttemptError::body(e).at("update"))?;
                let outcome = tx.commit(conn).await?;
                self.ledger.committed += 1;
                Ok(outcome)
            }
        }
    }

    fn unknown_outcome(&mut self, input: &SibenchInput) {
        if let SibenchInput::Update(_) = input {
            self.ledger.unknown += 1;
        }
    }

    fn into_ledger(self) -> Updates {
        self.ledger
    }
}
