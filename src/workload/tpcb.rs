//! `tpcb`: pgbench's built-in "TPC-B (sort of)".
//!
//! Source: the pgbench documentation ("What Is the Transaction Actually
//! Performed in pgbench?") and `pgbench -i`. Schema, fillfactor, row counts,
//! initial values and input distributions match pgbench 15: scale `s` gives
//! `s` branches, `10 s` tellers, `100000 s` accounts, all balances 0;
//! `aid` is bigint from scale 20000 on. Branch and teller `filler` are NULL,
//! account `filler` is the empty string, as `pgbench -i` leaves them.

use std::time::Instant;

use bytes::{BufMut, BytesMut};
use futures_util::SinkExt;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use tokio_postgres::{Client, Statement};

use super::{
    ExplainStatement, InvariantResult, LoadReport, TxControl, Workload, WorkloadClient,
    WorkloadError,
};
use crate::engine::retry::AttemptError;
use crate::metrics::Lifetime;

const ACCOUNTS_PER_BRANCH: i64 = 100_000;
const TELLERS_PER_BRANCH: i64 = 10;

/// Which of pgbench's built-in scripts runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// `-b tpcb-like`: BEGIN; 3 updates, a select, an insert; END.
    TpcbLike,
    /// `-b select-only` (`-S`): the account SELECT alone, autocommit.
    SelectOnly,
}

/// The TPC-B workload at a scale factor.
#[derive(Debug, Clone)]
pub struct Tpcb {
    scale: i64,
    variant: Variant,
}

impl Tpcb {
    /// The tpcb-like transaction. Errors: scale 0.
    pub fn new(scale: u32) -> Result<Self, WorkloadError> {
        Self::with_variant(scale, Variant::TpcbLike)
    }

    /// Errors: scale 0.
    pub fn with_variant(scale: u32, variant: Variant) -> Result<Self, WorkloadError> {
        if scale == 0 {
            return Err(WorkloadError::Invalid("--scale must be at least 1".into()));
        }
        Ok(Tpcb {
            scale: i64::from(scale),
            variant,
        })
    }

    /// pgbench switches `aid` to bigint at scale 20000.
    fn big_aid(&self) -> bool {
        self.scale >= 20_000
    }

    async fn copy(
        db: &Client,
        sql: &str,
        rows: i64,
        mut line: impl FnMut(&mut BytesMut, i64),
    ) -> Result<u64, WorkloadError> {
        let sink = db.copy_in(sql).await.map_err(WorkloadError::db(sql))?;
        futures_util::pin_mut!(sink);
        let mut buf = BytesMut::with_capacity(1 << 17);
        for i in 1..=rows {
            line(&mut buf, i);
            if buf.len() >= 1 << 16 {
                sink.send(buf.split().freeze())
                    .await
                    .map_err(WorkloadError::db(sql))?;
            }
        }
        if !buf.is_empty() {
            sink.send(buf.split().freeze())
                .await
                .map_err(WorkloadError::db(sql))?;
        }
        sink.finish().await.map_err(WorkloadError::db(sql))
    }
}

fn put_int(buf: &mut BytesMut, v: i64) {
    let mut b = itoa::Buffer::new();
    buf.put_slice(b.format(v).as_bytes());
}

impl Workload for Tpcb {
    type Client = TpcbClient;

    fn name(&self) -> &'static str {
        "tpcb"
    }

    async fn load(&self, db: &Client) -> Result<LoadReport, WorkloadError> {
        let started = Instant::now();
        let aid = if self.big_aid() { "bigint" } else { "int" };
        // Tables created in the loading transaction so COPY can FREEZE, as
        // pgbench -i does on PostgreSQL 14+.
        let ddl = format!(
            "BEGIN;
             CREATE TABLE pgbench_history (tid int, bid int, aid {aid}, delta int, mtime timestamp, filler char(22));
             CREATE TABLE pgbench_tellers (tid int not null, bid int, tbalance int, filler char(84)) WITH (fillfactor=100);
             CREATE TABLE pgbench_accounts (aid {aid} not null, bid int, abalance int, filler char(84)) WITH (fillfactor=100);
             CREATE TABLE pgbench_branches (bid int not null, bbalance int, filler char(88)) WITH (fillfactor=100);"
        );
        db.batch_execute(&ddl)
            .await
            .map_err(WorkloadError::db("create tpcb tables"))?;
        let s = self.scale;
        let mut rows = Self::copy(
            db,
            "COPY pgbench_branches FROM STDIN WITH (FREEZE ON)",
            s,
            |b, i| {
                put_int(b, i);
                b.put_slice(b"\t0\t\\N\n");
            },
        )
        .await?;
        rows += Self::copy(
            db,
            "COPY pgbench_tellers FROM STDIN WITH (FREEZE ON)",
            s * TELLERS_PER_BRANCH,
            |b, i| {
                put_int(b, i);
                b.put_u8(b'\t');
                put_int(b, (i - 1) / TELLERS_PER_BRANCH + 1);
                b.put_slice(b"\t0\t\\N\n");
            },
        )
        .await?;
        rows += Self::copy(
            db,
            "COPY pgbench_accounts FROM STDIN WITH (FREEZE ON)",
            s * ACCOUNTS_PER_BRANCH,
            |b, i| {
                put_int(b, i);
                b.put_u8(b'\t');
                put_int(b, (i - 1) / ACCOUNTS_PER_BRANCH + 1);
                b.put_slice(b"\t0\t\n");
            },
        )
        .await?;
        db.batch_execute("COMMIT")
            .await
            .map_err(WorkloadError::db("commit tpcb load"))?;
        // As pgbench -i: vacuum, then primary keys (VACUUM cannot share a
        // transaction with other statements).
        for sql in [
            "VACUUM ANALYZE pgbench_branches, pgbench_tellers, pgbench_accounts, pgbench_history",
            "ALTER TABLE pgbench_branches ADD PRIMARY KEY (bid);
             ALTER TABLE pgbench_tellers ADD PRIMARY KEY (tid);
             ALTER TABLE pgbench_accounts ADD PRIMARY KEY (aid)",
        ] {
            db.batch_execute(sql)
                .await
                .map_err(WorkloadError::db(sql))?;
        }
        Ok(LoadReport {
            elapsed: started.elapsed(),
            rows,
        })
    }

    fn explain_statements(&self) -> Vec<ExplainStatement> {
        vec![
            ExplainStatement {
                label: "update account",
                sql: "UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = 1".into(),
            },
            ExplainStatement {
                label: "select account",
                sql: "SELECT abalance FROM pgbench_accounts WHERE aid = 1".into(),
            },
            ExplainStatement {
                label: "update teller",
                sql: "UPDATE pgbench_tellers SET tbalance = tbalance + 1 WHERE tid = 1".into(),
            },
            ExplainStatement {
                label: "update branch",
                sql: "UPDATE pgbench_branches SET bbalance = bbalance + 1 WHERE bid = 1".into(),
            },
            ExplainStatement {
                label: "insert history",
                sql: "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (1, 1, 1, 1, CURRENT_TIMESTAMP)"
                    .into(),
            },
        ]
    }

    fn client(&self, _client_id: u32, seed: u64) -> TpcbClient {
        TpcbClient {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            scale: self.scale,
            big_aid: self.big_aid(),
            variant: self.variant,
            stmts: None,
        }
    }

    async fn check(
        &self,
        db: &Client,
        lifetime: Lifetime,
    ) -> Result<Vec<InvariantResult>, WorkloadError> {
        let row = db
            .query_one(
                "SELECT (SELECT coalesce(sum(abalance), 0) FROM pgbench_accounts)::bigint,
                        (SELECT coalesce(sum(tbalance), 0) FROM pgbench_tellers)::bigint,
                        (SELECT coalesce(sum(bbalance), 0) FROM pgbench_branches)::bigint,
                        (SELECT coalesce(sum(delta), 0) FROM pgbench_history)::bigint,
                        (SELECT count(*) FROM pgbench_history)::bigint",
                &[],
            )
            .await
            .map_err(WorkloadError::db("tpcb invariant query"))?;
        let (a, t, b, h, n): (i64, i64, i64, i64, i64) =
            (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
        let n = n as u64;
        // Every committed tpcb-like transaction inserts one history row;
        // select-only inserts none.
        let (lo, hi) = match self.variant {
            Variant::TpcbLike => (
                lifetime.committed,
                lifetime.committed + lifetime.unknown_outcome,
            ),
            Variant::SelectOnly => (0, 0),
        };
        Ok(vec![
            InvariantResult {
                name: "balances-consistent".into(),
                ok: a == t && t == b && b == h,
                detail: format!(
                    "sum(abalance)={a} sum(tbalance)={t} sum(bbalance)={b} sum(history.delta)={h}"
                ),
            },
            InvariantResult {
                name: "history-matches-commits".into(),
                ok: (lo..=hi).contains(&n),
                detail: format!(
                    "count(pgbench_history)={n} client-counted commits={} unknown outcomes={}",
                    lifetime.committed, lifetime.unknown_outcome
                ),
            },
        ])
    }
}

/// Prepared statements of one connection.
#[derive(Debug)]
struct Stmts {
    update_account: Statement,
    select_account: Statement,
    update_teller: Statement,
    update_branch: Statement,
    insert_history: Statement,
}

/// One TPC-B client: its generator and prepared statements.
#[derive(Debug)]
pub struct TpcbClient {
    rng: Xoshiro256PlusPlus,
    scale: i64,
    big_aid: bool,
    variant: Variant,
    stmts: Option<Stmts>,
}

/// Inputs of one tpcb-like transaction, drawn as pgbench does: each
/// uniform over its inclusive range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TpcbInput {
    /// 1 ..= 100000 * scale
    pub aid: i64,
    /// 1 ..= scale
    pub bid: i32,
    /// 1 ..= 10 * scale
    pub tid: i32,
    /// -5000 ..= 5000
    pub delta: i32,
}

impl WorkloadClient for TpcbClient {
    type Input = TpcbInput;

    async fn prepare(&mut self, conn: &Client) -> Result<(), tokio_postgres::Error> {
        self.stmts = Some(Stmts {
            update_account: conn
                .prepare("UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2")
                .await?,
            select_account: conn.prepare("SELECT abalance FROM pgbench_accounts WHERE aid = $1").await?,
            update_teller: conn
                .prepare("UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2")
                .await?,
            update_branch: conn
                .prepare("UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2")
                .await?,
            insert_history: conn
                .prepare(
                    "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)",
                )
                .await?,
        });
        Ok(())
    }

    fn next_input(&mut self) -> TpcbInput {
        let s = self.scale;
        TpcbInput {
            aid: self.rng.random_range(1..=ACCOUNTS_PER_BRANCH * s),
            bid: self.rng.random_range(1..=s) as i32,
            tid: self.rng.random_range(1..=TELLERS_PER_BRANCH * s) as i32,
            delta: self.rng.random_range(-5000..=5000),
        }
    }

    async fn attempt(
        &mut self,
        conn: &Client,
        tx: &TxControl,
        i: &TpcbInput,
    ) -> Result<(), AttemptError> {
        let s = self.stmts.as_ref().expect("prepare() before attempt()");
        let aid32 = i.aid as i32;
        let aid: &(dyn tokio_postgres::types::ToSql + Sync) =
            if self.big_aid { &i.aid } else { &aid32 };
        if self.variant == Variant::SelectOnly {
            // One autocommit statement is the whole transaction; its
            // isolation level is the session's default_transaction_isolation.
            return conn
                .execute(&s.select_account, &[aid])
                .await
                .map(drop)
                .map_err(AttemptError::commit);
        }
        let body = async {
            conn.execute(&s.update_account, &[&i.delta, aid]).await?;
            conn.execute(&s.select_account, &[aid]).await?;
            conn.execute(&s.update_teller, &[&i.delta, &i.tid]).await?;
            conn.execute(&s.update_branch, &[&i.delta, &i.bid]).await?;
            conn.execute(&s.insert_history, &[&i.tid, &i.bid, aid, &i.delta])
                .await
        };
        tx.begin(conn).await?;
        body.await.map_err(AttemptError::body)?;
        tx.commit(conn).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_in_pgbench_ranges_and_deterministic() {
        let w = Tpcb::new(3).unwrap();
        let mut a = w.client(0, 42);
        let mut b = w.client(0, 42);
        let (mut min_delta, mut max_delta) = (0, 0);
        for _ in 0..20_000 {
            let i = a.next_input();
            assert_eq!(i, b.next_input());
            assert!((1..=300_000).contains(&i.aid));
            assert!((1..=3).contains(&i.bid));
            assert!((1..=30).contains(&i.tid));
            min_delta = min_delta.min(i.delta);
            max_delta = max_delta.max(i.delta);
        }
        assert!(
            min_delta < -4900 && max_delta > 4900,
            "{min_delta} {max_delta}"
        );
        assert_ne!(w.client(1, 43).next_input(), w.client(0, 42).next_input());
    }

    #[test]
    fn scale_zero_is_rejected() {
        assert!(Tpcb::new(0).is_err());
    }
}
