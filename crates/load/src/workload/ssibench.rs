//! `ssibench` and `simple-ssibench`: the SSI conflict-tracking benchmarks.
//!
//! Source: the liumx10/pg-bench repository (Go, lib/pq), used in a 2017
//! report on the performance of PostgreSQL's SSI conflict tracking (linked
//! list vs hash table vs skip list); ssibench itself is from Cahill's
//! thesis work (University of Sydney TR 693). Defaults are the original's
//! `default.json` / `ssibench.json`: tables of 100000 rows, range reads of
//! 100 keys, updates of 20 keys, read ratio 0.5 (it ran 40 clients for
//! simple, 90 for ssibench, every transaction SERIALIZABLE through the
//! server's `default_transaction_isolation`).
//!
//! Tables `ssibench1..3(b_int_key serial primary key, b_int int,
//! b_value_1 .. b_value_10 varchar)`, `b_int` random, values NULL.
//! The statements are the original's, statement by statement, in the
//! same protocol, so the server plans what it planned for the original:
//! - read-only (both): `SELECT sum(b_int) FROM ssibench<t> WHERE
//!   b_int_key > $1 AND b_int_key < $2` with `$1 = x`, `$2 = x +
//!   read-size` as parameters of the unnamed statement (lib/pq's
//!   parse-bind-execute: a custom plan for every execution); `x` uniform
//!   over `0 .. table-size - read-size - 1`, so `read-size - 1` rows.
//!   Table t uniform over 1..3 (ssibench), 1 (simple).
//! - read-update (ssibench): the same read with the values written into
//!   the text, then `UPDATE ssibench<t%3+1> SET b_value_k = '...' WHERE
//!   b_int_key=k1 OR b_int_key=k2 OR ... OR b_int_key=k20` as one literal
//!   statement (simple query protocol, as lib/pq sends a query without
//!   arguments): 20 distinct keys uniform over `0 .. table-size - 1` (the
//!   original's `rand.Intn`; key 0 has no row), column k uniform over
//!   1..10. Reads of table i and writes of table i+1 chain rw-conflicts,
//!   so read-update transactions can be pivots (the original saw about
//!   25 % aborts).
//! - update-only (simple-ssibench): the literal 20-key update of
//!   `ssibench1` alone.
//!
//! The plans (PostgreSQL 15, 100000 rows, after ANALYZE): the range read
//! is an index scan of the primary key, the OR list a `BitmapOr` of 20
//! bitmap index scans under a bitmap heap scan. The `= ANY($2)` array
//! isobench sent before was one bitmap index scan with an array key: the
//! same leaf pages and tuples SIRead-locked, but not the original's
//! statement. Without statistics (the original's table right after its
//! row-by-row load, before autovacuum analyzed it) the range read is a
//! bitmap heap scan instead; it locks the same leaf pages and tuples.
//!
//! Deliberate differences: the value written is `k:client:seq` (9-12
//! bytes), not the original's constant `'bilibili'` (8 bytes), so the
//! written-values invariant can tell which column a value was written to;
//! rows are loaded with one COPY and the database is `VACUUM ANALYZE`d
//! before each run (the original inserted row by row and left statistics
//! to autovacuum). The original
//! drew a new transaction after an abort and ignored a read-only
//! transaction's COMMIT error; isobench retries with the same inputs up
//! to `--max-tries` (`--max-tries 1` is the original's behaviour) and
//! counts every failed COMMIT.
//!
//! Reported as the original did: KTPS and abort ratio (attempts that did
//! not commit / attempts), besides the usual figures.

use crate::wire::{Conn, TextParams};
use bytes::BufMut;
use rand::rngs::Xoshiro256PlusPlus;
use rand::seq::index::sample;
use rand::{RngExt, SeedableRng};
use tokio_postgres::Client;

use super::{
    Ended, ExplainStatement, Loader, ParamSpec, Setup, StrategySpec, TxControl, Workload,
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
    source: "liumx10/pg-bench src/ssibench/ssibench.go (2017 SSI conflict-tracking performance report)",
    scale: None,
    params: PARAMS,
    strategies: STRATEGIES,
    transactions: &[
        "read-only (read-ratio): SELECT sum(b_int) FROM ssibench<t> WHERE b_int_key > $1 AND b_int_key < $2 (t uniform 1..3; unnamed statement, as lib/pq)",
        "read-update: the same read as literal text, then one literal UPDATE ssibench<t%3+1> SET b_value_k = '..' WHERE b_int_key=k1 OR ... OR b_int_key=k<update-size>",
    ],
    invariants: INVARIANTS,
    example: "--workload ssibench --isolation ser --clients 8,40 --repeat 5",
};

/// `isobench workloads simple-ssibench`.
pub static SIMPLE_SSIBENCH: WorkloadSpec = WorkloadSpec {
    name: "simple-ssibench",
    summary: "1 table, range reads or 20-key updates: more conflicts; the updaters are pivots among themselves",
    source: "liumx10/pg-bench src/simple/simple.go (2017 SSI conflict-tracking performance report)",
    scale: None,
    params: PARAMS,
    strategies: STRATEGIES,
    transactions: &[
        "read-only (read-ratio): SELECT sum(b_int) FROM ssibench1 WHERE b_int_key > $1 AND b_int_key < $2 (unnamed statement)",
        "update-only: one literal UPDATE ssibench1 SET b_value_k = '..' WHERE b_int_key=k1 OR ... OR b_int_key=k<update-size>",
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

/// The read-only transaction's statement: `$1 = x`, `$2 = x + read-size`
/// (the original's parameterised `QueryRow`).
pub fn read_sql(table: i32) -> String {
    format!("SELECT sum(b_int) FROM ssibench{table} WHERE b_int_key > $1 AND b_int_key < $2")
}

/// The read-update transaction's read: the same statement with the bounds
/// written into the text (the original's `Sprintf`).
pub fn read_literal(table: i32, x: i32, read_size: i32) -> String {
    format!(
        "SELECT sum(b_int) FROM ssibench{table} WHERE b_int_key > {x} AND b_int_key < {}",
        i64::from(x) + i64::from(read_size)
    )
}

/// The update: one literal statement, `b_int_key=k` for each key joined
/// by `OR`, as the original builds it. `value` must not contain a quote
/// (isobench's values are digits and colons).
pub fn update_literal(table: i32, column: i32, value: &str, keys: &[i32]) -> String {
    debug_assert!(!value.contains('\''));
    let mut sql = format!("UPDATE ssibench{table} SET b_value_{column} = '{value}' WHERE ");
    for (n, k) in keys.iter().enumerate() {
        if n > 0 {
            sql.push_str(" OR ");
        }
        sql.push_str("b_int_key=");
        sql.push_str(&k.to_string());
    }
    sql
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

    /// The statements as the original sends them, at mid-table: the
    /// range read (the read-only transaction's custom plan is the plan of
    /// these literal bounds) and the 20-key OR update.
    fn explain_statements(&self) -> Vec<ExplainStatement> {
        let mid = (self.table_size - self.read_size).max(0) / 2;
        let step = (self.table_size / self.update_size.max(1) as i32).max(1);
        let keys: Vec<i32> = (0..self.update_size as i32)
            .map(|n| (1 + n * step).min(self.table_size))
            .collect();
        vec![
            ExplainStatement {
                label: "range read".into(),
                sql: read_literal(1, mid, self.read_size),
            },
            ExplainStatement {
                label: "update".into(),
                sql: update_literal(self.tables.min(2), 1, "1:0:0", &keys),
            },
        ]
    }

    fn client(&self, client_id: u32, seed: u64) -> SsibenchClient {
        SsibenchClient {
            w: self.clone(),
            client_id,
            seq: 0,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            text: Vec::new(),
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

/// One client. No prepared statements: the original's statements are
/// the unnamed statement or literal text, planned at every execution.
#[derive(Debug)]
pub struct SsibenchClient {
    w: Ssibench,
    client_id: u32,
    seq: u64,
    rng: Xoshiro256PlusPlus,
    /// The read-only statement's text parameters (reused).
    text: Vec<u8>,
}

/// One transaction's inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SsibenchInput {
    /// (table 1-based, x) of the range read `b_int_key > x AND b_int_key <
    /// x + read-size`; `None` for simple-ssibench's update-only.
    pub read: Option<(i32, i32)>,
    /// (table, column, keys, value) of the update, if any.
    pub update: Option<(i32, i32, Vec<i32>, String)>,
}

impl WorkloadClient for SsibenchClient {
    type Input = SsibenchInput;
    type Ledger = ();

    async fn prepare(
        &mut self,
        _conn: &mut Conn,
        _tx: &TxControl,
    ) -> Result<(), crate::wire::Error> {
        Ok(())
    }

    fn next_input(&mut self) -> SsibenchInput {
        let w = &self.w;
        let read_only = self.rng.random_bool(w.read_ratio);
        let t = self.rng.random_range(1..=w.tables);
        let read = (read_only || w.tables == 3).then(|| {
            // The original's rand.Intn(TableSize - ReadSize).
            (
                t,
                self.rng
                    .random_range(0..(w.table_size - w.read_size).max(1)),
            )
        });
        let update = (!read_only).then(|| {
            // The original's rand.Intn(TableSize), distinct: 0 .. size-1.
            let keys: Vec<i32> = sample(&mut self.rng, w.table_size as usize, w.update_size)
                .into_iter()
                .map(|i| i as i32)
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
    ) -> Result<Ended, AttemptError> {
        tx.begin(conn).await?;
        match (i.read, &i.update) {
            (Some((t, x)), None) => {
                // Read-only: parameters of the unnamed statement.
                self.text.clear();
                let first = x.to_string();
                let second = (i64::from(x) + i64::from(self.w.read_size)).to_string();
                self.text.extend_from_slice(first.as_bytes());
                self.text.extend_from_slice(second.as_bytes());
                let spans = [Some(0..first.len()), Some(first.len()..self.text.len())];
                let params = TextParams {
                    bytes: &self.text,
                    spans: &spans,
                };
                conn.execute_unnamed(&read_sql(t), params)
                    .await
                    .map_err(|e| AttemptError::body(e).at("range read"))?;
            }
            (read, Some((t, k, keys, value))) => {
                if let Some((rt, x)) = read {
                    conn.batch_execute(&read_literal(rt, x, self.w.read_size))
                        .await
                        .map_err(|e| AttemptError::body(e).at("range read"))?;
                }
                conn.batch_execute(&update_literal(*t, *k, value, keys))
                    .await
                    .map_err(|e| AttemptError::body(e).at("update"))?;
            }
            (None, None) => {}
        }
        tx.commit(conn).await
    }

    fn into_ledger(self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(tables: i32) -> Ssibench {
        Ssibench {
            tables,
            table_size: 1000,
            read_size: 100,
            update_size: 20,
            read_ratio: 0.5,
        }
    }

    #[test]
    fn update_is_one_literal_statement_with_an_or_of_twenty_keys() {
        let keys: Vec<i32> = (0..20).map(|n| n * 7).collect();
        let sql = update_literal(2, 3, "3:1:9", &keys);
        let (head, condition) = sql.split_once(" WHERE ").unwrap();
        assert_eq!(head, "UPDATE ssibench2 SET b_value_3 = '3:1:9'");
        let terms: Vec<&str> = condition.split(" OR ").collect();
        assert_eq!(terms.len(), 20, "{sql}");
        for (t, k) in terms.iter().zip(&keys) {
            assert_eq!(*t, format!("b_int_key={k}"));
        }
        assert!(!sql.contains('$') && !sql.contains("ANY"), "{sql}");
    }

    #[test]
    fn range_read_is_open_at_both_ends() {
        assert_eq!(
            read_literal(3, 500, 100),
            "SELECT sum(b_int) FROM ssibench3 WHERE b_int_key > 500 AND b_int_key < 600"
        );
        // The read-only form: both bounds are parameters, no arithmetic.
        assert_eq!(
            read_sql(1),
            "SELECT sum(b_int) FROM ssibench1 WHERE b_int_key > $1 AND b_int_key < $2"
        );
    }

    #[test]
    fn inputs_are_drawn_as_the_original_draws_them() {
        for tables in [1, 3] {
            let w = workload(tables);
            let mut c = w.client(1, 7);
            let (mut reads, mut updates, mut key0) = (0, 0, false);
            for _ in 0..5000 {
                let i = c.next_input();
                if let Some((t, x)) = i.read {
                    assert!((1..=tables).contains(&t));
                    // rand.Intn(TableSize - ReadSize)
                    assert!((0..900).contains(&x), "{x}");
                    reads += 1;
                }
                if let Some((t, k, keys, value)) = &i.update {
                    updates += 1;
                    assert_eq!(keys.len(), 20);
                    let mut sorted = keys.clone();
                    sorted.sort();
                    sorted.dedup();
                    assert_eq!(sorted.len(), 20, "distinct keys");
                    // rand.Intn(TableSize): 0 .. 999
                    assert!(keys.iter().all(|k| (0..1000).contains(k)));
                    key0 |= keys.contains(&0);
                    assert!((1..=COLUMNS).contains(k));
                    assert!(value.starts_with(&format!("{k}:")));
                    if tables == 3 {
                        // Read table t, update table t % 3 + 1.
                        let (rt, _) = i.read.expect("read-update reads");
                        assert_eq!(*t, rt % 3 + 1);
                    } else {
                        assert_eq!(*t, 1);
                        assert!(i.read.is_none(), "update-only reads nothing");
                    }
                }
            }
            assert!(key0, "key 0 is drawn as in the original");
            assert!((2000..3000).contains(&(updates)), "{updates}");
            if tables == 1 {
                assert_eq!(reads + updates, 5000);
            }
        }
    }
}
