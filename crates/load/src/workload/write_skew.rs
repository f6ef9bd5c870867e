//! `write-skew`: doctors on call, the textbook write skew.
//!
//! Source: the classic snapshot-isolation write-skew example (Berenson et
//! al., "A Critique of ANSI SQL Isolation Levels", SIGMOD 1995, anomaly
//! A5B; the on-call example of Cahill's thesis and of Kleppmann's
//! "Designing Data-Intensive Applications", ch. 7) and the PostgreSQL
//! documentation, "Transaction Isolation", Serializable Isolation Level.
//!
//! `oncall(shift, doctor, on_call)`: `shifts` shifts of `doctors` doctors,
//! all on call. *go-off-call* reads the shift's rows, and if at least two
//! doctors are on call sets the chosen doctor off call; *go-on-call* puts a
//! doctor back, so the load continues. The rule "every shift keeps at
//! least one doctor on call" holds under SERIALIZABLE and under the
//! `locking` strategy (`SELECT ... FOR UPDATE` of the shift's rows); under
//! READ COMMITTED and REPEATABLE READ two concurrent go-off-calls on a
//! shift with two doctors on call both see two and both leave.

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

/// `isobench workloads write-skew`.
pub static SPEC: WorkloadSpec = WorkloadSpec {
    name: "write-skew",
    summary: "doctors on call: read the shift, leave if someone else is on call (write skew)",
    source: "Berenson et al., SIGMOD 1995 (A5B); PostgreSQL docs, Transaction Isolation",
    scale: None,
    params: &[
        ParamSpec {
            name: "shifts",
            default: "10",
            help: "number of shifts (fewer: more contention)",
        },
        ParamSpec {
            name: "doctors",
            default: "2",
            help: "doctors per shift, all on call at the start (2..1000)",
        },
    ],
    strategies: &[
        StrategySpec {
            name: "none",
            help: "no row locks: protected only by the isolation level (write skew below SERIALIZABLE)",
        },
        StrategySpec {
            name: "optimistic",
            help: "the same statements as none, named for SERIALIZABLE + retry studies",
        },
        StrategySpec {
            name: "locking",
            help: "read the shift's rows FOR UPDATE (in doctor order) before deciding",
        },
    ],
    transactions: &[
        "go-off-call (50%): read the shift's rows; if >= 2 on call, set the chosen doctor off call",
        "go-on-call (50%): set a doctor of a shift on call",
    ],
    invariants: &[
        "shift-covered: count of shifts with nobody on call after the run",
        "empty-shift-observed: times a transaction read a shift with nobody on call",
    ],
    example: "--workload write-skew --param shifts=2 --isolation rc,rr,ser --strategy none,locking",
};

/// The doctors-on-call workload.
#[derive(Debug, Clone)]
pub struct WriteSkew {
    shifts: i32,
    doctors: i32,
    locking: bool,
}

const READ: &str = "SELECT doctor, on_call FROM oncall WHERE shift = $1";
/// Locks in doctor order: locking in heap order, which updates keep
/// changing, deadlocks (measured: 6 tx/s at rc with 8 clients, every
/// wait ending at deadlock_timeout).
const READ_LOCKING: &str =
    "SELECT doctor, on_call FROM oncall WHERE shift = $1 ORDER BY doctor FOR UPDATE";
const OFF: &str = "UPDATE oncall SET on_call = false WHERE shift = $1 AND doctor = $2";
const ON: &str = "UPDATE oncall SET on_call = true WHERE shift = $1 AND doctor = $2";

/// Empty shifts that transactions observed.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Observed {
    pub count: u64,
    /// The first observation, e.g. `shift 3`.
    pub example: Option<i32>,
}

impl Ledger for Observed {
    fn merge(&mut self, o: Self) {
        self.count += o.count;
        self.example = self.example.or(o.example);
    }
}

impl Workload for WriteSkew {
    type Client = WriteSkewClient;

    fn new(setup: &Setup) -> Result<Self, WorkloadError> {
        Ok(WriteSkew {
            shifts: setup.int("shifts", 1..=1_000_000)? as i32,
            doctors: setup.int("doctors", 2..=1000)? as i32,
            locking: setup.strategy == "locking",
        })
    }

    fn data_key(&self) -> String {
        format!("shifts={} doctors={}", self.shifts, self.doctors)
    }

    fn tx_types(&self) -> Vec<&'static str> {
        vec!["go-off-call", "go-on-call"]
    }

    async fn load(&self, db: &Loader) -> Result<u64, WorkloadError> {
        db.batch_execute(
            "CREATE TABLE oncall (shift int, doctor int, on_call bool NOT NULL, PRIMARY KEY (shift, doctor))",
        )
        .await
        .map_err(WorkloadError::db("create oncall"))?;
        let rows = db
            .execute(
                "INSERT INTO oncall SELECT s, d, true
                   FROM generate_series(1, $1::int) s, generate_series(1, $2::int) d",
                &[&self.shifts, &self.doctors],
            )
            .await
            .map_err(WorkloadError::db("load oncall"))?;
        Ok(rows)
    }

    fn explain_statements(&self) -> Vec<ExplainStatement> {
        vec![
            ExplainStatement {
                label: "read shift".into(),
                sql: if self.locking { READ_LOCKING } else { READ }.replace("$1", "1"),
            },
            ExplainStatement {
                label: "go off call".into(),
                sql: OFF.replace("$1", "1").replace("$2", "1"),
            },
        ]
    }

    fn client(&self, _client_id: u32, seed: u64) -> WriteSkewClient {
        WriteSkewClient {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            shifts: self.shifts,
            doctors: self.doctors,
            locking: self.locking,
            stmts: None,
            observed: Observed::default(),
        }
    }

    async fn check(
        &self,
        db: &Client,
        _lifetime: Lifetime,
        observed: Observed,
    ) -> Result<Vec<InvariantResult>, WorkloadError> {
        let rows = db
            .query(
                "SELECT shift FROM oncall GROUP BY shift HAVING NOT bool_or(on_call) ORDER BY shift",
                &[],
            )
            .await
            .map_err(WorkloadError::db("write-skew invariant query"))?;
        let empty: Vec<i32> = rows.iter().map(|r| r.get(0)).collect();
        let shown: Vec<String> = empty.iter().take(5).map(i32::to_string).collect();
        Ok(vec![
            InvariantResult::count(
                "shift-covered",
                empty.len() as u64,
                if empty.is_empty() {
                    format!("every one of {} shifts has a doctor on call", self.shifts)
                } else {
                    format!(
                        "{} of {} shifts with nobody on call, e.g. shift {}",
                        empty.len(),
                        self.shifts,
                        shown.join(", ")
                    )
                },
            ),
            InvariantResult::count(
                "empty-shift-observed",
                observed.count,
                match observed.example {
                    None => "no transaction saw a shift with nobody on call".into(),
                    Some(s) => format!(
                        "{} reads found a shift with nobody on call, first shift {s}",
                        observed.count
                    ),
                },
            ),
        ])
    }
}

/// One client.
#[derive(Debug)]
pub struct WriteSkewClient {
    rng: Xoshiro256PlusPlus,
    shifts: i32,
    doctors: i32,
    locking: bool,
    stmts: Option<[Statement; 3]>,
    observed: Observed,
}

/// Which doctor of which shift wants to go off (or back on) call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteSkewInput {
    pub off: bool,
    pub shift: i32,
    pub doctor: i32,
}

impl WorkloadClient for WriteSkewClient {
    type Input = WriteSkewInput;
    type Ledger = Observed;

    async fn prepare(
        &mut self,
        conn: &mut Conn,
        _tx: &TxControl,
    ) -> Result<(), crate::wire::Error> {
        let read = if self.locking { READ_LOCKING } else { READ };
        self.stmts = Some([
            conn.prepare(read).await?,
            conn.prepare(OFF).await?,
            conn.prepare(ON).await?,
        ]);
        Ok(())
    }

    fn next_input(&mut self) -> WriteSkewInput {
        WriteSkewInput {
            off: self.rng.random_bool(0.5),
            shift: self.rng.random_range(1..=self.shifts),
            doctor: self.rng.random_range(1..=self.doctors),
        }
    }

    fn tx_type(&self, input: &WriteSkewInput) -> usize {
        usize::from(!input.off)
    }

    async fn attempt(
        &mut self,
        conn: &mut Conn,
        tx: &TxControl,
        i: &WriteSkewInput,
    ) -> Result<Ended, AttemptError> {
        let [read, off, on] = self.stmts.as_ref().expect("prepare() before attempt()");
        tx.begin(conn).await?;
        if !i.off {
            conn.execute(on, &[&i.shift, &i.doctor])
                .await
                .map_err(|e| AttemptError::body(e).at("go on call"))?;
            return tx.commit(conn).await;
        }
        let rows = conn
            .query(read, &[&i.shift])
            .await
            .map_err(|e| AttemptError::body(e).at("read shift"))?;
        let on_call = rows.iter().filter(|r| r.get::<bool>(1)).count();
        let me_on = rows
            .iter()
            .any(|r| r.get::<i32>(0) == i.doctor && r.get::<bool>(1));
        if on_call == 0 {
            // Counted once per transaction, on its committed attempt only.
            let outcome = tx.commit(conn).await?;
            self.observed.count += 1;
            self.observed.example.get_or_insert(i.shift);
            return Ok(outcome);
        }
        if on_call >= 2 && me_on {
            conn.execute(off, &[&i.shift, &i.doctor])
                .await
                .map_err(|e| AttemptError::body(e).at("go off call"))?;
        }
        tx.commit(conn).await
    }

    fn into_ledger(self) -> Observed {
        self.observed
    }
}
