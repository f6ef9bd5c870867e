//! A fake workload whose plan says, per client, input and try, what each
//! attempt does (commit, fail with a SQLSTATE, fail at COMMIT, break the
//! connection at COMMIT), and a ledger of what the clients saw.

use std::collections::HashMap;
use std::time::Instant;

use tokio_postgres::Client;

use crate::wire::{Conn, Statement};

use crate::model::{InvariantResult, Lifetime};
use crate::workload::{
    AttemptError, Ended, ExplainStatement, Ledger, Loader, Setup, TxControl, Workload,
    WorkloadClient, WorkloadError,
};

/// What one attempt does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Act {
    Commit,
    /// Fails before COMMIT with this SQLSTATE.
    Fail(&'static str),
    /// COMMIT fails with this SQLSTATE.
    FailAtCommit(&'static str),
    /// The connection breaks while COMMIT is in flight.
    BreakAtCommit,
    /// COMMIT succeeds, then the server ends the session with a FATAL
    /// 57P01 while the client is idle (as `pg_terminate_backend` does).
    TerminateAfterCommit,
}

/// What attempt `try_no` (from 1) of client `client`'s input `n` (its
/// n-th, from 0) does.
pub(super) type Plan = fn(client: u32, n: u64, try_no: u32) -> Act;

/// SQLSTATEs a plan may use.
pub(super) const CODES: [&str; 3] = ["40001", "40P01", "23505"];

pub(super) struct Fake {
    pub(super) plan: Plan,
    /// Each client's pause before every transaction
    /// (`WorkloadClient::pause_before`, an emulated user's think time).
    pub(super) pause: std::time::Duration,
}

/// One attempt as the client saw it.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub(super) struct Tried {
    pub(super) client: u32,
    pub(super) n: u64,
    pub(super) try_no: u32,
    /// When the attempt started (before BEGIN); not carried over a
    /// serialized ledger.
    #[serde(skip, default = "Instant::now")]
    pub(super) at: Instant,
}

#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct FakeLedger {
    pub(super) tried: Vec<Tried>,
    pub(super) committed: u64,
    pub(super) unknown: u64,
}

impl Ledger for FakeLedger {
    fn merge(&mut self, other: Self) {
        self.tried.extend(other.tried);
        self.committed += other.committed;
        self.unknown += other.unknown;
    }
}

impl FakeLedger {
    /// Attempts per input, in the order each client tried them.
    pub(super) fn tries_of(&self, client: u32) -> Vec<(u64, u32)> {
        let mut out: Vec<(u64, u32)> = Vec::new();
        for t in self.tried.iter().filter(|t| t.client == client) {
            match out.last_mut() {
                Some((n, tries)) if *n == t.n => *tries = (*tries).max(t.try_no),
                _ => out.push((t.n, t.try_no)),
            }
        }
        out
    }
}

pub(super) struct FakeClient {
    pub(super) id: u32,
    pub(super) plan: Plan,
    pub(super) next: u64,
    pub(super) stmts: HashMap<String, Statement>,
    pub(super) last: Option<(u32, u64)>,
    pub(super) tries: u32,
    pub(super) ledger: FakeLedger,
    pub(super) pause: std::time::Duration,
}

impl Workload for Fake {
    type Client = FakeClient;

    fn new(_setup: &Setup) -> Result<Self, WorkloadError> {
        Err(WorkloadError::Invalid("test workload".into()))
    }

    fn data_key(&self) -> String {
        String::new()
    }

    fn tx_types(&self) -> Vec<&'static str> {
        vec!["fake"]
    }

    async fn load(&self, _db: &Loader) -> Result<u64, WorkloadError> {
        Ok(0)
    }

    fn explain_statements(&self) -> Vec<ExplainStatement> {
        Vec::new()
    }

    fn client(&self, client_id: u32, _seed: u64) -> FakeClient {
        FakeClient {
            id: client_id,
            plan: self.plan,
            next: 0,
            stmts: HashMap::new(),
            last: None,
            tries: 0,
            ledger: FakeLedger::default(),
            pause: self.pause,
        }
    }

    async fn check(
        &self,
        _db: &Client,
        _lifetime: Lifetime,
        _ledger: FakeLedger,
    ) -> Result<Vec<InvariantResult>, WorkloadError> {
        Ok(Vec::new())
    }
}

impl WorkloadClient for FakeClient {
    /// (client, n): the client's n-th input.
    type Input = (u32, u64);
    type Ledger = FakeLedger;

    async fn prepare(
        &mut self,
        conn: &mut Conn,
        _tx: &TxControl,
    ) -> Result<(), crate::wire::Error> {
        let mut sqls = vec![
            "BREAK AT COMMIT".to_string(),
            "TERMINATE AFTER COMMIT".to_string(),
        ];
        for c in CODES {
            sqls.push(format!("FAIL {c}"));
            sqls.push(format!("FAIL AT COMMIT {c}"));
        }
        for sql in sqls {
            let s = conn.prepare(&sql).await?;
            self.stmts.insert(sql, s);
        }
        Ok(())
    }

    fn next_input(&mut self) -> (u32, u64) {
        self.next += 1;
        (self.id, self.next - 1)
    }

    fn tx_type(&self, _input: &(u32, u64)) -> usize {
        0
    }

    fn pause_before(&mut self, _input: &(u32, u64)) -> std::time::Duration {
        self.pause
    }

    async fn attempt(
        &mut self,
        conn: &mut Conn,
        tx: &TxControl,
        input: &(u32, u64),
    ) -> Result<Ended, AttemptError> {
        self.tries = if self.last == Some(*input) {
            self.tries + 1
        } else {
            1
        };
        self.last = Some(*input);
        self.ledger.tried.push(Tried {
            client: input.0,
            n: input.1,
            try_no: self.tries,
            at: Instant::now(),
        });
        tx.begin(conn).await?;
        let sql = match (self.plan)(input.0, input.1, self.tries) {
            Act::Commit => None,
            Act::Fail(c) => Some(format!("FAIL {c}")),
            Act::FailAtCommit(c) => Some(format!("FAIL AT COMMIT {c}")),
            Act::BreakAtCommit => Some("BREAK AT COMMIT".to_string()),
            Act::TerminateAfterCommit => Some("TERMINATE AFTER COMMIT".to_string()),
        };
        if let Some(sql) = sql {
            conn.execute(&self.stmts[&sql], &[])
                .await
                .map_err(AttemptError::body)?;
        }
        let out = tx.commit(conn).await?;
        self.ledger.committed += 1;
        Ok(out)
    }

    fn unknown_outcome(&mut self, _input: &(u32, u64)) {
        self.ledger.unknown += 1;
    }

    fn into_ledger(self) -> FakeLedger {
        self.ledger
    }
}
