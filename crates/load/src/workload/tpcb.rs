//! `tpcb`: pgbench's built-in "TPC-B (sort of)".
//!
//! Source: the pgbench documentation ("What Is the Transaction Actually
//! Performed in pgbench?") and `pgbench -i`. Schema, fillfactor, row counts,
//! initial values and input distributions match pgbench 15: scale `s` gives
//! `s` branches, `10 s` tellers, `100000 s` accounts, all balances 0;
//! `aid` is bigint from scale 20000 on. Branch and teller `filler` are NULL,
//! account `filler` is the empty string, as `pgbench -i` leaves them.
//! `foreign-keys=true` adds the five foreign keys of `pgbench -i -I f`.
//!
//! Variants (`--param variant=`): pgbench's `tpcb-like`, `simple-update`
//! (`-N`) and `select-only` (`-S`), and `single-statement`: the four
//! changes of tpcb-like in one autocommit statement with data-modifying
//! CTEs, the form an evaluator used to avoid client-side retries; and
//! `pg-bench`, the TPC-B of liumx10/pg-bench (`src/tpcb/tpcb.go`,
//! `tpcb.json`, Go with lib/pq, 2017), which differs from pgbench's:
//! - its own tables, ids from 0, primary keys from the start:
//!   `branch(branch_id int PRIMARY KEY, branch_balance bigint, padding
//!   char(88))`, `teller(teller_id int PRIMARY KEY, branch_id int,
//!   teller_balance bigint, padding char(84))`, `account(account_id int
//!   PRIMARY KEY, branch_id int, account_balance bigint, padding
//!   char(84))`, `history(account_id, teller_id, branch_id int, amount
//!   bigint, padding char(30))`; every `padding` NULL (pgbench's account
//!   filler is 84 blanks), so the rows are short and many share a page;
//! - 10 tellers and 10,000 accounts per branch; its `tpcb.json` has 100
//!   branches, which is scale 10 here (scale s: 10 s branches, the same
//!   1,000,000 accounts as pgbench's scale 10, in ten times the branches);
//! - the branch is drawn first, the teller and the account within it;
//!   `delta` is -500 ..= 499 (pgbench: -5000 ..= 5000, aid independent);
//! - update account, insert history, update teller, update branch, in
//!   that order, no SELECT of the balance;
//! - the branch update is keyed by the *teller* id (`WHERE branch_id =
//!   tid`, as the original has it): only tellers 0 .. branches-1 match a
//!   branch, so 9 transactions in 10 update no branch, and branch row b
//!   is updated by teller b alone: a branch row is no more contended than
//!   a teller row (in pgbench every transaction updates one of `scale`
//!   branch rows, its hot spot);
//! - the original ignored COMMIT's error (a transaction failing at commit
//!   was counted as committed); isobench counts it as failed.
//!
//! Its statements were literal text; here they are prepared: each looks
//! up one key, and the literal and the parameter get the same scan (a
//! sequential scan of the one-page `branch`, index scans elsewhere).

use crate::wire::{Conn, Statement};
use bytes::BufMut;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use tokio_postgres::Client;

use super::{
    Ended, ExplainStatement, Loader, ParamSpec, ScaleSpec, Setup, StrategySpec, TxControl,
    Workload, WorkloadClient, WorkloadError, WorkloadSpec, copy_binary, copy_rows, put_int,
};
use crate::model::InvariantResult;
use crate::model::Lifetime;
use crate::workload::AttemptError;

const ACCOUNTS_PER_BRANCH: i64 = 100_000;
const TELLERS_PER_BRANCH: i64 = 10;
/// pg-bench's `tpcb.json`: `AccountPerBranch`, `TellerPerBranch`, and
/// branches per unit of scale (its 100 branches are scale 10).
pub const PG_BENCH_ACCOUNTS_PER_BRANCH: i64 = 10_000;
pub const PG_BENCH_TELLERS_PER_BRANCH: i64 = 10;
pub const PG_BENCH_BRANCHES_PER_SCALE: i64 = 10;

/// `isobench workloads tpcb`.
pub static SPEC: WorkloadSpec = WorkloadSpec {
    name: "tpcb",
    summary: "pgbench's TPC-B (sort of): accounts/tellers/branches updates + history insert",
    source: "pgbench documentation and `pgbench -i` (PostgreSQL 15)",
    scale: Some(ScaleSpec {
        default: 10,
        unit: "1 branch, 10 tellers, 100000 accounts",
    }),
    params: &[
        ParamSpec {
            name: "variant",
            default: "tpcb-like",
            help: "tpcb-like | simple-update | select-only | single-statement | pg-bench (liumx10/pg-bench's TPC-B: scale s = 10 s branches of 10 tellers and 10000 accounts)",
        },
        ParamSpec {
            name: "foreign-keys",
            default: "false",
            help: "true: add pgbench's foreign keys (pgbench -I f)",
        },
    ],
    strategies: &[StrategySpec {
        name: "optimistic",
        help: "no row locks: the isolation level protects; retry 40001/40P01",
    }],
    transactions: &[
        "tpcb-like (100%): update account, select it, update teller, update branch, insert history",
        "simple-update: update account, select it, insert history",
        "select-only: select one account (autocommit)",
        "single-statement: the tpcb-like changes in one statement with data-modifying CTEs (autocommit)",
        "pg-bench: update account, insert history, update teller, update branch WHERE branch_id = tid (liumx10/pg-bench)",
    ],
    invariants: &[
        "balances-consistent: sum(abalance) = sum(tbalance) = sum(bbalance) = sum(history.delta) (pg-bench: each branch's balance = the history amounts of the teller with its id)",
        "history-matches-commits: count(history) = client-counted commits (+ unknown outcomes)",
    ],
    example: "--workload tpcb --param variant=tpcb-like,single-statement --isolation rr,ser",
};

/// Which of pgbench's built-in scripts runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// `-b tpcb-like`: BEGIN; 3 updates, a select, an insert; END.
    TpcbLike,
    /// `-b simple-update` (`-N`): no teller or branch update.
    SimpleUpdate,
    /// `-b select-only` (`-S`): the account SELECT alone, autocommit.
    SelectOnly,
    /// tpcb-like's changes in one autocommit statement.
    SingleStatement,
    /// liumx10/pg-bench's TPC-B: its own tables and sizes, branch update
    /// keyed by the teller id.
    PgBench,
}

impl Variant {
    const NAMES: [&'static str; 5] = [
        "tpcb-like",
        "simple-update",
        "select-only",
        "single-statement",
        "pg-bench",
    ];
    const ALL: [Variant; 5] = [
        Variant::TpcbLike,
        Variant::SimpleUpdate,
        Variant::SelectOnly,
        Variant::SingleStatement,
        Variant::PgBench,
    ];

    pub fn name(self) -> &'static str {
        Self::NAMES[Self::ALL.iter().position(|v| *v == self).expect("listed")]
    }

    /// Whether a commit updates tellers and branches.
    fn updates_branches(self) -> bool {
        matches!(self, Variant::TpcbLike | Variant::SingleStatement)
    }
}

/// The TPC-B workload at a scale factor.
#[derive(Debug, Clone)]
pub struct Tpcb {
    scale: i64,
    variant: Variant,
    foreign_keys: bool,
}

impl Tpcb {
    /// This workload with pgbench's foreign keys added after loading
    /// (`pgbench -i -I f`) when `on`.
    pub fn with_foreign_keys(mut self, on: bool) -> Self {
        self.foreign_keys = on;
        self
    }

    /// `variant` at `scale`, without foreign keys. Errors: scale 0.
    pub fn with_variant(scale: u32, variant: Variant) -> Result<Self, WorkloadError> {
        if scale == 0 {
            return Err(WorkloadError::Invalid("--scale must be at least 1".into()));
        }
        Ok(Tpcb {
            scale: i64::from(scale),
            variant,
            foreign_keys: false,
        })
    }

    /// pgbench switches `aid` to bigint at scale 20000.
    fn big_aid(&self) -> bool {
        self.scale >= 20_000
    }

    /// Copies accounts `aids` (binary COPY: the server spends a quarter
    /// less time than on text). `freeze`: the table was created in this
    /// transaction, so the rows can be written frozen.
    ///
    /// Why the accounts are loaded in parallel: the server's COPY is one
    /// backend on one core, and at scale 50 it is most of `pgbench -i`'s
    /// time. Split by `aid` range over [`load_streams`] connections,
    /// the rows are the same, but they cannot be written frozen (FREEZE
    /// needs the table created in the loading transaction) and the heap
    /// interleaves the ranges block by block, so `aid` is no longer in
    /// physical order (`pg_stats.correlation` below 1); point lookups,
    /// which the TPC-B scripts do, are unaffected.
    async fn load_accounts(
        &self,
        db: &Client,
        aids: std::ops::RangeInclusive<i64>,
        freeze: bool,
    ) -> Result<u64, WorkloadError> {
        let sql = if freeze {
            "COPY pgbench_accounts FROM STDIN WITH (FORMAT binary, FREEZE ON)"
        } else {
            "COPY pgbench_accounts FROM STDIN WITH (FORMAT binary)"
        };
        let big = self.big_aid();
        copy_binary(db, sql, aids, |b, aid| {
            b.put_i16(4);
            if big {
                b.put_i32(8);
                b.put_i64(aid);
            } else {
                b.put_i32(4);
                b.put_i32(aid as i32);
            }
            b.put_i32(4);
            b.put_i32(((aid - 1) / ACCOUNTS_PER_BRANCH + 1) as i32);
            b.put_i32(4);
            b.put_i32(0);
            // filler: '' (pgbench's), padded to char(84) by the server.
            b.put_i32(0);
        })
        .await
    }
}

/// Parallel COPY streams for `rows` rows: one per 250,000 rows, at most
/// the CPU count (and 8). One stream, which keeps pgbench's frozen rows
/// and physical order, below 500,000 rows and on 2 CPUs or fewer: there
/// two plain streams copied no faster than one COPY FREEZE stream (the
/// server's WAL insertion and page-cache writes do not split), and the
/// lost FREEZE cost a VACUUM pass over every page on top: ~1 s more
/// server CPU at scale 50, and slower in 4 of 5 interleaved pairs on
/// 2 CPUs (BENCHMARKS.md, "Loading (product path)").
fn load_streams(rows: i64) -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if rows < 500_000 || cpus <= 2 {
        return 1;
    }
    (rows as usize).div_ceil(250_000).min(cpus).clamp(1, 8)
}

/// `maintenance_work_mem` (kB) that sorts the primary key of `rows`
/// accounts in one run instead of spilling to temporary files and
/// merging (an `int` key takes ~40 B in the sort; 100 B a row leaves room
/// for the parallel build's split): 64 MB (the server's default) to 1 GB.
pub(super) fn index_sort_kb(rows: i64) -> i64 {
    (rows * 100 / 1024).clamp(64 * 1024, 1024 * 1024)
}

/// Raises `maintenance_work_mem` for `db`'s session only (`SET`, never
/// `ALTER SYSTEM`) to [`index_sort_kb`] when the server's setting is
/// lower, for the primary keys' index builds. Returns whether it did, so
/// the caller can `RESET` it. Errors: the server refused.
pub(super) async fn raise_index_memory(db: &Client, rows: i64) -> Result<bool, WorkloadError> {
    let what = "raising maintenance_work_mem for the index builds";
    let current: i64 = db
        .query_one(
            "SELECT setting::bigint FROM pg_settings WHERE name = 'maintenance_work_mem'",
            &[],
        )
        .await
        .map_err(WorkloadError::db(what))?
        .get(0);
    let want = index_sort_kb(rows);
    if want <= current {
        return Ok(false);
    }
    db.batch_execute(&format!("SET maintenance_work_mem = '{want}kB'"))
        .await
        .map_err(WorkloadError::db(what))?;
    Ok(true)
}

/// `1..=rows` cut into `n` contiguous ranges of nearly equal length.
pub(super) fn split_range(rows: i64, n: usize) -> Vec<std::ops::RangeInclusive<i64>> {
    let n = n.max(1) as i64;
    (0..n)
        .map(|k| (rows * k / n + 1)..=(rows * (k + 1) / n))
        .filter(|r| !r.is_empty())
        .collect()
}

impl Workload for Tpcb {
    type Client = TpcbClient;

    fn new(setup: &Setup) -> Result<Self, WorkloadError> {
        let variant = Variant::ALL[setup.choice("variant", &Variant::NAMES)?];
        let mut w = Tpcb::with_variant(setup.scale(), variant)?;
        w.foreign_keys = setup.bool("foreign-keys")?;
        if w.foreign_keys && variant == Variant::PgBench {
            return Err(WorkloadError::Invalid(
                "--param foreign-keys=true: variant=pg-bench has no foreign keys (its tables are liumx10/pg-bench's); drop one of the two".into(),
            ));
        }
        Ok(w)
    }

    fn data_key(&self) -> String {
        if self.variant == Variant::PgBench {
            "pg-bench".into()
        } else if self.foreign_keys {
            "foreign-keys".into()
        } else {
            String::new()
        }
    }

    fn tx_types(&self) -> Vec<&'static str> {
        vec![self.variant.name()]
    }

    /// Loads what `pgbench -i` loads, faster: see `Tpcb::load_accounts`.
    /// Errors: any statement failing, naming it.
    async fn load(&self, db: &Loader) -> Result<u64, WorkloadError> {
        if self.variant == Variant::PgBench {
            return self.load_pg_bench(db).await;
        }
        let aid = if self.big_aid() { "bigint" } else { "int" };
        let ddl = format!(
            "CREATE TABLE pgbench_history (tid int, bid int, aid {aid}, delta int, mtime timestamp, filler char(22));
             CREATE TABLE pgbench_tellers (tid int not null, bid int, tbalance int, filler char(84)) WITH (fillfactor=100);
             CREATE TABLE pgbench_accounts (aid {aid} not null, bid int, abalance int, filler char(84)) WITH (fillfactor=100);
             CREATE TABLE pgbench_branches (bid int not null, bbalance int, filler char(88)) WITH (fillfactor=100);"
        );
        let s = self.scale;
        let accounts = s * ACCOUNTS_PER_BRANCH;
        let streams = load_streams(accounts);
        let t0 = std::time::Instant::now();
        let phase = |what: &str| {
            tracing::debug!(
                "tpcb load: {what} done at {:.2} s",
                t0.elapsed().as_secs_f64()
            )
        };
        // The small tables are created and filled in one transaction so
        // COPY can FREEZE them, as pgbench -i does on PostgreSQL 14+; so
        // are the accounts when they are loaded by one stream.
        db.batch_execute(&format!("BEGIN; {ddl}"))
            .await
            .map_err(WorkloadError::db("create tpcb tables"))?;
        let mut rows = copy_rows(
            db,
            "COPY pgbench_branches FROM STDIN WITH (FREEZE ON)",
            s,
            |b, i| {
                put_int(b, i);
                b.put_slice(b"\t0\t\\N\n");
            },
        )
        .await?;
        rows += copy_rows(
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
        if streams == 1 {
            rows += self.load_accounts(db, 1..=accounts, true).await?;
        }
        db.batch_execute("COMMIT")
            .await
            .map_err(WorkloadError::db("commit tpcb load"))?;
        let pkeys = "ALTER TABLE pgbench_branches ADD PRIMARY KEY (bid);
             ALTER TABLE pgbench_tellers ADD PRIMARY KEY (tid);
             ALTER TABLE pgbench_accounts ADD PRIMARY KEY (aid)";
        let vacuum =
            "VACUUM ANALYZE pgbench_branches, pgbench_tellers, pgbench_accounts, pgbench_history";
        // pgbench -i's order, VACUUM then primary keys, also after a
        // parallel load: there VACUUM sets each page's hint bits and its
        // all-visible flag in one visit, and the index build then reads
        // pages it has no reason to dirty. Keys first dirtied every page
        // twice (hint bits in the index build's scan, then the all-visible
        // flag), one more pass of the whole table through the server's
        // buffer ring and the kernel: ~0.5 s more server CPU at scale 50
        // (BENCHMARKS.md, "Loading (product path)").
        if streams > 1 {
            let chunks = split_range(accounts, streams);
            let mut conns = Vec::with_capacity(streams - 1);
            for _ in 1..streams {
                conns.push(db.connect().await?);
            }
            let loads = chunks.iter().enumerate().map(|(k, r)| {
                let conn: &Client = if k == 0 { db } else { &conns[k - 1] };
                self.load_accounts(conn, r.clone(), false)
            });
            for n in futures_util::future::try_join_all(loads).await? {
                rows += n;
            }
        }
        phase(&format!("accounts ({streams} streams)"));
        let raised = raise_index_memory(db, accounts).await?;
        for sql in [vacuum, pkeys] {
            db.batch_execute(sql)
                .await
                .map_err(WorkloadError::db(sql))?;
            phase(
                sql.split_whitespace()
                    .take(4)
                    .collect::<Vec<_>>()
                    .join(" ")
                    .as_str(),
            );
        }
        if raised {
            db.batch_execute("RESET maintenance_work_mem")
                .await
                .map_err(WorkloadError::db("RESET maintenance_work_mem"))?;
        }
        if self.foreign_keys {
            let sql =
                "ALTER TABLE pgbench_tellers ADD FOREIGN KEY (bid) REFERENCES pgbench_branches;
                 ALTER TABLE pgbench_accounts ADD FOREIGN KEY (bid) REFERENCES pgbench_branches;
                 ALTER TABLE pgbench_history ADD FOREIGN KEY (bid) REFERENCES pgbench_branches;
                 ALTER TABLE pgbench_history ADD FOREIGN KEY (tid) REFERENCES pgbench_tellers;
                 ALTER TABLE pgbench_history ADD FOREIGN KEY (aid) REFERENCES pgbench_accounts";
            db.batch_execute(sql)
                .await
                .map_err(WorkloadError::db("add tpcb foreign keys"))?;
        }
        Ok(rows)
    }

    fn explain_statements(&self) -> Vec<ExplainStatement> {
        if self.variant == Variant::PgBench {
            // Branch 1: teller 12, account 10001; the branch update keyed
            // by the teller id, as the original's.
            let bound = [
                ["1", "10001", "", ""],
                ["10001", "12", "1", "1"],
                ["1", "12", "", ""],
                ["1", "12", "", ""],
            ];
            return PG_BENCH_SQL
                .iter()
                .zip(PG_BENCH_LABELS)
                .zip(bound)
                .map(|((sql, label), v)| ExplainStatement {
                    label: label.into(),
                    sql: sql
                        .replace("$1", v[0])
                        .replace("$2", v[1])
                        .replace("$3", v[2])
                        .replace("$4", v[3]),
                })
                .collect();
        }
        if self.variant == Variant::SingleStatement {
            return vec![ExplainStatement {
                label: "single statement".into(),
                sql: SINGLE_STATEMENT
                    .replace("$1", "1")
                    .replace("$2", "1")
                    .replace("$3", "1")
                    .replace("$4", "1"),
            }];
        }
        vec![
            ExplainStatement {
                label: "update account".into(),
                sql: "UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = 1".into(),
            },
            ExplainStatement {
                label: "select account".into(),
                sql: "SELECT abalance FROM pgbench_accounts WHERE aid = 1".into(),
            },
            ExplainStatement {
                label: "update teller".into(),
                sql: "UPDATE pgbench_tellers SET tbalance = tbalance + 1 WHERE tid = 1".into(),
            },
            ExplainStatement {
                label: "update branch".into(),
                sql: "UPDATE pgbench_branches SET bbalance = bbalance + 1 WHERE bid = 1".into(),
            },
            ExplainStatement {
                label: "insert history".into(),
                sql: "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (1, 1, 1, 1, CURRENT_TIMESTAMP)"
                    .into(),
            },
        ]
    }

    fn client(&self, _client_id: u32, seed: u64) -> TpcbClient {
        TpcbClient {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            scale: self.scale,
            big_aid: self.big_aid() && self.variant != Variant::PgBench,
            variant: self.variant,
            stmts: None,
            pg_bench: Vec::new(),
        }
    }

    async fn check(
        &self,
        db: &Client,
        lifetime: Lifetime,
        _ledger: (),
    ) -> Result<Vec<InvariantResult>, WorkloadError> {
        if self.variant == Variant::PgBench {
            return pg_bench_check(db, lifetime).await;
        }
        let (a, t, b, h, n) = sums(db, "tpcb invariant query").await?;
        let n = n as u64;
        // simple-update leaves tellers and branches at 0.
        let balances_ok = if self.variant.updates_branches() {
            a == t && t == b && b == h
        } else {
            a == h && t == 0 && b == 0
        };
        let balances = InvariantResult::check(
            "balances-consistent",
            balances_ok,
            format!("sum(abalance)={a} sum(tbalance)={t} sum(bbalance)={b} sum(history.delta)={h}"),
        );
        // Every committed tpcb-like transaction inserts one history row;
        // select-only inserts none.
        if self.variant == Variant::SelectOnly {
            return Ok(vec![
                balances,
                InvariantResult::check(
                    "history-matches-commits",
                    n == 0,
                    format!("count(pgbench_history)={n}"),
                ),
            ]);
        }
        let durable = commits_are_durable(db).await?;
        Ok(vec![
            balances,
            history_matches_commits(n, lifetime, durable),
        ])
    }
}

/// Whether the server promises that an acknowledged commit survives a
/// crash: `synchronous_commit` is not `off` (PostgreSQL documentation,
/// "Asynchronous Commit": with it off, a crash can lose the last commits,
/// up to three times `wal_writer_delay`, but never leaves a transaction
/// half applied).
///
/// Errors: the query failed.
pub(crate) async fn commits_are_durable(db: &Client) -> Result<bool, WorkloadError> {
    let row = db
        .query_one("SELECT current_setting('synchronous_commit')", &[])
        .await
        .map_err(WorkloadError::db("invariant query: synchronous_commit"))?;
    Ok(row.get::<_, String>(0) != "off")
}

/// TPC-B's history against what the clients saw: `n` history rows must
/// be at least the commits they saw acknowledged and at most those plus
/// the unknown outcomes (each committed transaction inserts one row). Rows
/// missing are lost commits: a violation each when commits are `durable`,
/// else only counted (an asynchronous commit lost in a crash). Rows beyond
/// the upper bound (a transaction counted as failed that committed) are
/// one violation.
fn history_matches_commits(n: u64, lifetime: Lifetime, durable: bool) -> InvariantResult {
    let (lo, hi) = (
        lifetime.committed,
        lifetime.committed + lifetime.unknown_outcome,
    );
    let lost = lo.saturating_sub(n);
    let violations = if n > hi {
        1
    } else if durable {
        lost
    } else {
        0
    };
    let mut detail = format!(
        "count(pgbench_history)={n} client-counted commits={lo} unknown outcomes={}",
        lifetime.unknown_outcome
    );
    if lost > 0 {
        detail.push_str(&format!(
            "; {lost} acknowledged commits lost{}",
            if durable {
                ""
            } else {
                " (synchronous_commit=off: not durable by design)"
            }
        ));
    }
    InvariantResult {
        lost_commits: Some(lost),
        ..InvariantResult::count("history-matches-commits", violations, detail)
    }
}

/// pg-bench's four statements, in its order (its text with the values as
/// parameters): $1 delta, $2 account id; history $1 account, $2 teller,
/// $3 branch, $4 amount; $1 delta, $2 teller id; $1 delta, $2 the
/// *teller* id again (the original's `where branch_id = tid`).
pub const PG_BENCH_SQL: [&str; 4] = [
    "UPDATE account SET account_balance = account_balance + $1 WHERE account_id = $2",
    "INSERT INTO history (account_id, teller_id, branch_id, amount) VALUES ($1, $2, $3, $4)",
    "UPDATE teller SET teller_balance = teller_balance + $1 WHERE teller_id = $2",
    "UPDATE branch SET branch_balance = branch_balance + $1 WHERE branch_id = $2",
];
const PG_BENCH_LABELS: [&str; 4] = [
    "update account",
    "insert history",
    "update teller",
    "update branch",
];

/// pg-bench's schema (`createTable` in its `tpcb.go`).
const PG_BENCH_DDL: &str = "CREATE TABLE branch (branch_id integer PRIMARY KEY, branch_balance bigint, padding char(88));
     CREATE TABLE account (account_id integer PRIMARY KEY, branch_id integer, account_balance bigint, padding char(84));
     CREATE TABLE teller (teller_id integer PRIMARY KEY, branch_id integer, teller_balance bigint, padding char(84));
     CREATE TABLE history (account_id integer, teller_id integer, branch_id integer, amount bigint, padding char(30))";

impl Tpcb {
    /// (branches, tellers, accounts) of the pg-bench variant at this scale.
    pub fn pg_bench_sizes(&self) -> (i64, i64, i64) {
        let b = self.scale * PG_BENCH_BRANCHES_PER_SCALE;
        (
            b,
            b * PG_BENCH_TELLERS_PER_BRANCH,
            b * PG_BENCH_ACCOUNTS_PER_BRANCH,
        )
    }

    /// Loads pg-bench's tables: ids from 0, balances 0, padding NULL;
    /// teller `t` and account `a` belong to branch `t / 10` and
    /// `a / 10000`. Errors: any statement failing, naming it.
    async fn load_pg_bench(&self, db: &Loader) -> Result<u64, WorkloadError> {
        let (branches, tellers, accounts) = self.pg_bench_sizes();
        db.batch_execute(PG_BENCH_DDL)
            .await
            .map_err(WorkloadError::db("create pg-bench tables"))?;
        let mut rows = copy_rows(
            db,
            "COPY branch (branch_id, branch_balance) FROM STDIN",
            branches,
            |b, i| {
                put_int(b, i - 1);
                b.put_slice(b"\t0\n");
            },
        )
        .await?;
        rows += copy_rows(
            db,
            "COPY teller (teller_id, branch_id, teller_balance) FROM STDIN",
            tellers,
            |b, i| {
                put_int(b, i - 1);
                b.put_u8(b'\t');
                put_int(b, (i - 1) / PG_BENCH_TELLERS_PER_BRANCH);
                b.put_slice(b"\t0\n");
            },
        )
        .await?;
        rows += copy_rows(
            db,
            "COPY account (account_id, branch_id, account_balance) FROM STDIN",
            accounts,
            |b, i| {
                put_int(b, i - 1);
                b.put_u8(b'\t');
                put_int(b, (i - 1) / PG_BENCH_ACCOUNTS_PER_BRANCH);
                b.put_slice(b"\t0\n");
            },
        )
        .await?;
        Ok(rows)
    }
}

/// pg-bench's invariants: Σ account = Σ teller = Σ history.amount; each
/// branch's balance = the amounts of the history rows whose *teller* id
/// is that branch's id (what the branch update keyed by teller adds up
/// to); history rows = commits.
async fn pg_bench_check(
    db: &Client,
    lifetime: Lifetime,
) -> Result<Vec<InvariantResult>, WorkloadError> {
    let row = db
        .query_one(
            "SELECT (SELECT coalesce(sum(account_balance), 0) FROM account)::bigint,
                    (SELECT coalesce(sum(teller_balance), 0) FROM teller)::bigint,
                    (SELECT coalesce(sum(branch_balance), 0) FROM branch)::bigint,
                    (SELECT coalesce(sum(amount), 0) FROM history)::bigint,
                    (SELECT count(*) FROM history)::bigint,
                    (SELECT count(*) FROM branch b WHERE b.branch_balance <>
                        (SELECT coalesce(sum(amount), 0) FROM history h WHERE h.teller_id = b.branch_id))",
            &[],
        )
        .await
        .map_err(WorkloadError::db("pg-bench invariant query"))?;
    let (a, t, b, h, n, wrong): (i64, i64, i64, i64, i64, i64) = (
        row.get(0),
        row.get(1),
        row.get(2),
        row.get(3),
        row.get(4),
        row.get(5),
    );
    let balances = InvariantResult::check(
        "balances-consistent",
        a == t && t == h && wrong == 0,
        format!(
            "sum(account_balance)={a} sum(teller_balance)={t} sum(amount)={h} sum(branch_balance)={b}; \
             {wrong} branches whose balance is not the amounts of the teller with their id"
        ),
    );
    let durable = commits_are_durable(db).await?;
    Ok(vec![
        balances,
        history_matches_commits(n as u64, lifetime, durable),
    ])
}

/// `single-statement`: $1 delta, $2 aid, $3 tid, $4 bid.
const SINGLE_STATEMENT: &str = "WITH a AS (UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2 RETURNING abalance), \
     t AS (UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $3), \
     b AS (UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $4), \
     h AS (INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($3, $4, $2, $1, CURRENT_TIMESTAMP)) \
     SELECT abalance FROM a";

/// Prepared statements of one connection.
#[derive(Debug)]
struct Stmts {
    single: Option<Statement>,
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
    /// pg-bench's statements, in [`PG_BENCH_SQL`]'s order.
    pg_bench: Vec<Statement>,
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
    type Ledger = ();

    async fn prepare(
        &mut self,
        conn: &mut Conn,
        _tx: &TxControl,
    ) -> Result<(), crate::wire::Error> {
        if self.variant == Variant::PgBench {
            self.pg_bench.clear();
            for sql in PG_BENCH_SQL {
                self.pg_bench.push(conn.prepare(sql).await?);
            }
            return Ok(());
        }
        let single = match self.variant {
            Variant::SingleStatement => Some(conn.prepare(SINGLE_STATEMENT).await?),
            _ => None,
        };
        self.stmts = Some(Stmts {
            single,
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
        if self.variant == Variant::PgBench {
            // pg-bench: the branch, then a teller and an account in it.
            let bid = self.rng.random_range(0..s * PG_BENCH_BRANCHES_PER_SCALE);
            return TpcbInput {
                bid: bid as i32,
                tid: (self.rng.random_range(0..PG_BENCH_TELLERS_PER_BRANCH)
                    + bid * PG_BENCH_TELLERS_PER_BRANCH) as i32,
                aid: self.rng.random_range(0..PG_BENCH_ACCOUNTS_PER_BRANCH)
                    + bid * PG_BENCH_ACCOUNTS_PER_BRANCH,
                delta: self.rng.random_range(-500..500),
            };
        }
        TpcbInput {
            aid: self.rng.random_range(1..=ACCOUNTS_PER_BRANCH * s),
            bid: self.rng.random_range(1..=s) as i32,
            tid: self.rng.random_range(1..=TELLERS_PER_BRANCH * s) as i32,
            delta: self.rng.random_range(-5000..=5000),
        }
    }

    fn tx_type(&self, _input: &TpcbInput) -> usize {
        0
    }

    async fn attempt(
        &mut self,
        conn: &mut Conn,
        tx: &TxControl,
        i: &TpcbInput,
    ) -> Result<Ended, AttemptError> {
        if self.variant == Variant::PgBench {
            return self.attempt_pg_bench(conn, tx, i).await;
        }
        let s = self.stmts.as_ref().expect("prepare() before attempt()");
        let aid32 = i.aid as i32;
        let aid: &(dyn tokio_postgres::types::ToSql + Sync) =
            if self.big_aid { &i.aid } else { &aid32 };
        // One autocommit statement is the whole transaction; its isolation
        // level is the session's default_transaction_isolation. Errors
        // name the statement by its `explain_statements` label.
        let autocommit = |r: Result<u64, crate::wire::Error>, label| {
            r.map(|_| Ended::Committed)
                .map_err(|e| AttemptError::commit(e).at(label))
        };
        let at = |label| move |e| AttemptError::body(e).at(label);
        match self.variant {
            Variant::SelectOnly => {
                let r = conn.execute(&s.select_account, &[aid]).await;
                return autocommit(r, "select account");
            }
            Variant::SingleStatement => {
                let stmt = s.single.as_ref().expect("prepared for single-statement");
                let r = conn.execute(stmt, &[&i.delta, aid, &i.tid, &i.bid]).await;
                return autocommit(r, "single statement");
            }
            Variant::TpcbLike | Variant::SimpleUpdate => {}
            Variant::PgBench => unreachable!("attempt_pg_bench"),
        }
        let full = self.variant == Variant::TpcbLike;
        tx.begin(conn).await?;
        conn.execute(&s.update_account, &[&i.delta, aid])
            .await
            .map_err(at("update account"))?;
        conn.execute(&s.select_account, &[aid])
            .await
            .map_err(at("select account"))?;
        if full {
            conn.execute(&s.update_teller, &[&i.delta, &i.tid])
                .await
                .map_err(at("update teller"))?;
            conn.execute(&s.update_branch, &[&i.delta, &i.bid])
                .await
                .map_err(at("update branch"))?;
        }
        conn.execute(&s.insert_history, &[&i.tid, &i.bid, aid, &i.delta])
            .await
            .map_err(at("insert history"))?;
        tx.commit(conn).await
    }

    fn into_ledger(self) {}
}

impl TpcbClient {
    /// One pg-bench transaction: its four statements in its order.
    async fn attempt_pg_bench(
        &mut self,
        conn: &mut Conn,
        tx: &TxControl,
        i: &TpcbInput,
    ) -> Result<Ended, AttemptError> {
        let [account, history, teller, branch] = &self.pg_bench[..] else {
            panic!("prepare() before attempt()");
        };
        let delta = i64::from(i.delta);
        let aid = i.aid as i32;
        let at = |label| move |e| AttemptError::body(e).at(label);
        tx.begin(conn).await?;
        conn.execute(account, &[&delta, &aid])
            .await
            .map_err(at("update account"))?;
        conn.execute(history, &[&aid, &i.tid, &i.bid, &delta])
            .await
            .map_err(at("insert history"))?;
        conn.execute(teller, &[&delta, &i.tid])
            .await
            .map_err(at("update teller"))?;
        // Keyed by the teller id, as the original: 9 in 10 match no row.
        conn.execute(branch, &[&delta, &i.tid])
            .await
            .map_err(at("update branch"))?;
        tx.commit(conn).await
    }
}

/// Σ abalance, Σ tbalance, Σ bbalance, Σ history.delta and the history's
/// row count of pgbench's tables, in one query; `what` names it in an
/// error.
pub async fn sums(
    db: &Client,
    what: &'static str,
) -> Result<(i64, i64, i64, i64, i64), WorkloadError> {
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
        .map_err(WorkloadError::db(what))?;
    Ok((row.get(0), row.get(1), row.get(2), row.get(3), row.get(4)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_history_rows_are_lost_commits_violations_only_when_durable() {
        let life = Lifetime {
            committed: 100,
            unknown_outcome: 3,
        };
        // In range: nothing lost, whether or not commits are durable.
        for n in [100, 101, 103] {
            let r = history_matches_commits(n, life, true);
            assert!(r.ok && r.violations == 0, "{r:?}");
            assert_eq!(r.lost_commits, Some(0));
        }
        // 4 rows missing: each a violation with durable commits...
        let r = history_matches_commits(96, life, true);
        assert_eq!((r.ok, r.violations, r.lost_commits), (false, 4, Some(4)));
        assert!(
            r.detail.contains("4 acknowledged commits lost"),
            "{}",
            r.detail
        );
        // ... and only counted with synchronous_commit=off.
        let r = history_matches_commits(96, life, false);
        assert_eq!((r.ok, r.violations, r.lost_commits), (true, 0, Some(4)));
        assert!(r.detail.contains("synchronous_commit=off"), "{}", r.detail);
        // More rows than commits and unknown outcomes: a failed
        // transaction committed after all, durable or not.
        for durable in [true, false] {
            let r = history_matches_commits(104, life, durable);
            assert_eq!((r.ok, r.violations, r.lost_commits), (false, 1, Some(0)));
        }
    }

    #[test]
    fn inputs_are_in_pgbench_ranges_and_deterministic() {
        let w = Tpcb::with_variant(3, Variant::TpcbLike).unwrap();
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
    fn index_sort_memory_is_sized_to_the_accounts() {
        // Never below the server's default, 100 B per account, at most 1 GB.
        assert_eq!(index_sort_kb(100_000), 64 * 1024);
        assert_eq!(index_sort_kb(5_000_000), 488_281);
        assert_eq!(index_sort_kb(1_000_000_000), 1024 * 1024);
    }

    #[test]
    fn ranges_cover_every_row_once() {
        for (rows, n) in [(5_000_000, 2), (1_000_000, 3), (7, 4), (3, 8), (1, 1)] {
            let r = split_range(rows, n);
            assert_eq!(*r[0].start(), 1);
            assert_eq!(*r.last().unwrap().end(), rows);
            for w in r.windows(2) {
                assert_eq!(*w[0].end() + 1, *w[1].start(), "{rows} {n}");
            }
            assert!(r.len() <= n);
        }
        assert_eq!(load_streams(100_000), 1);
        assert!(load_streams(5_000_000) >= 1);
    }

    #[test]
    fn pg_bench_sizes_and_inputs_are_the_originals() {
        let w = Tpcb::with_variant(10, Variant::PgBench).unwrap();
        // tpcb.json: 100 branches, 10 tellers and 10000 accounts each.
        assert_eq!(w.pg_bench_sizes(), (100, 1000, 1_000_000));
        let mut c = w.client(0, 5);
        let mut branch_hits = 0;
        for _ in 0..20_000 {
            let i = c.next_input();
            assert!((0..100).contains(&i.bid));
            assert_eq!(i.tid / 10, i.bid, "teller in the branch");
            assert_eq!(i.aid / 10_000, i64::from(i.bid), "account in the branch");
            assert!((-500..500).contains(&i.delta));
            // The branch update `WHERE branch_id = tid` matches a row only
            // for tellers below 100.
            branch_hits += usize::from(i.tid < 100);
        }
        assert!((1_500..2_500).contains(&branch_hits), "{branch_hits}");
        assert!(PG_BENCH_SQL[3].ends_with("WHERE branch_id = $2"));
        let explained = w.explain_statements();
        assert_eq!(
            explained[3].sql,
            "UPDATE branch SET branch_balance = branch_balance + 1 WHERE branch_id = 12"
        );
        assert_eq!(explained[1].label, "insert history");
    }

    #[test]
    fn scale_zero_is_rejected() {
        assert!(Tpcb::with_variant(0, Variant::TpcbLike).is_err());
    }
}
