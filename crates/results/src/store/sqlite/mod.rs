//! The results store: one SQLite database per results directory
//! ([`DB_FILE`], `results.sqlite`), holding everything of [`Results`] in
//! normalized tables that can be queried with SQL. `results.json` is an
//! export of the same data written next to it.
//!
//! The layout is versioned by migrations ([`MIGRATIONS`], run by the
//! `rusqlite_migration` crate), one per store version, in order:
//!
//! 1. the first store: every table below but the two next;
//! 2. `external_loads`;
//! 3. `tx_type_commands` (first added to version 2 stores without a version
//!    bump, so some version 2 stores have it already);
//! 4. `host_cpu`, `plan_changes` and `per_second_lag`;
//! 5. `tx_type_failure_reasons` and the view `run_failure_reasons`;
//! 6. `run_faults` and `connection_losses`;
//! 7. `injected_faults`;
//! 8. `lost_commits`.
//! 9. `cell_fault_plans`;
//! 10. `run_windows`;
//! 11. `cell_work_factors`;
//! 12. `run_hosts`;
//! 13. `declared_checks` and `check_rows`.
//! 14. `cell_poolers` and `run_pooler`.
//! 15. `history_checks`.
//! 16. `run_standbys` and `injected_failovers`.
//! 17. `staleness`.
//! 18. `failover_split_brain`.
//!
//! `PRAGMA user_version` is the number of migrations applied, the store
//! version ([`STORE_VERSION`] when current), and the `meta` table repeats
//! it (`store_version`, set by each migration) next to the `results.json`
//! schema version of the data (`results_schema_version`).
//!
//! Writers upgrade the file: [`Store::create`] applies every migration,
//! [`Store::open`] (`isobench run --resume`) the ones an older store
//! lacks. Readers ([`Store::load`]: `isobench report`, `compare`) open the
//! file read-only and never change it, so a write-protected store reads;
//! an older store is copied into memory and the copy upgraded (the file
//! keeps its version until a writer opens it). Both refuse a file without
//! a store version (not a store) or with a newer one (a newer isobench).
//!
//! # Tables
//!
//! Experiment level (rewritten by [`Store::save_header`]):
//!
//! - `meta (key, value)`: `store_version`, `results_schema_version`,
//!   `created_by` (the isobench version that created the file).
//! - `experiment`: one row: `schema_version`, `isobench_version`,
//!   `started_at`, `finished_at`, `complete`, then the configuration's
//!   scalars (`workload`, `repeat`, `duration_s`, `warmup_s`,
//!   `sample_interval_s`, `latency_limit_ms`, `threads`, `retry_max_tries`,
//!   `seed`, `target`, `run_order`, `baseline`, `file`) and the whole
//!   `StoredConfig` as JSON in `config_json`.
//! - `config_rates (ordinal, rate)`: the open-loop rates factor, tx/s.
//! - `environment (key, value)`: `host`, `os`, `cpus`, `server_version`,
//!   `server_version_num`; `server_settings (name, value)`: the
//!   environment's server settings.
//! - `load (ordinal, data, load_ms, load_ns, rows)`: one row per template
//!   database loaded; the load time in ms (to read) and in ns (exact, read
//!   back).
//!
//! Run level (written by [`Store::save_run`]; every table after `runs` has a
//! `run` column referencing `runs(run)` with `ON DELETE CASCADE`, so
//! deleting a run's row deletes all of it when foreign keys are on, as they
//! are on every [`Store`] connection):
//!
//! - `cells`: one row per distinct `Cell` (`id`, `key` = the cell as
//!   JSON, unique; `label`, `workload`, `isolation` (`read-committed`,
//!   `repeatable-read`, `serializable`), `strategy`, `clients`, `scale`,
//!   `pool_size`, `rate`, `max_tries`, `pg_bin`, `params_json`,
//!   `settings_json`), shared by its runs; cells without runs are removed.
//!   `cell_fault_plans (cell, plan)`: a cell's fault plan when the fault
//!   is a factor; `cell_work_factors (cell, factor)`: `workload` or
//!   `script` when that is a factor (the cell's `workload` is its value);
//!   `cell_poolers (cell, pooler, pool_size)`: a cell's connection pooler
//!   (`none`, `pgbouncer:transaction`, `pgbouncer:session`) and
//!   pgbouncer's pool size (NULL: pgbouncer's default) when `--pooler`
//!   was given.
//! - `runs`: one row per run; `run` is [`RunRecord::index`], `cell_id`
//!   references `cells(id)`; the counters and ratios of the record, the
//!   latency summary as `latency_{mean,p50,p90,p95,p99,p999,max}_ms`,
//!   `lifetime_committed`, `lifetime_unknown`, pool wait and schedule lag as
//!   `pool_wait_{count,mean_ms,p50_ms,p99_ms,max_ms}` and
//!   `schedule_lag_{...}` (all NULL when the run had none),
//!   `wait_samples` and `siread_samples` (samples of the server
//!   observations), and `failed` (Σ of the run's failures; a convenience
//!   copy, not read back).
//! - `run_failures (run, tx_type, sqlstate, count)`: `tx_type` NULL for the
//!   run's total (`RunRecord::failed`), else a transaction type's name
//!   (`RunRecord::failed_by_type`).
//! - `tx_types (run, ordinal, name, committed, user_aborts, attempts,
//!   unknown_outcome, wasted_ms, latency_*_ms)`, in the workload's order;
//!   `tx_type_failures (run, ordinal, sqlstate, count)`: their failures.
//! - `histograms (run, tx_type, kind, unit, encoding, data)`: latency
//!   histograms: `tx_type` NULL for the whole run, else the `tx_types`
//!   ordinal; `kind` `latency`, `unit` `us`, `encoding`
//!   `hdr-v2-deflate-base64`.
//! - `per_second (run, ordinal, t_s, committed, tps, p99_ms, failed)`;
//!   `per_second_lag (run, ordinal, lag_ms)`: the open-loop schedule lag
//!   of those seconds that had one.
//! - `host_cpu (run, busy_pct, steal_pct, cpus)`: the host's CPU use in
//!   the measured window (`/proc/stat`), when it was measured.
//! - `stat_intervals (run, ordinal, t_s, duration_s)` and
//!   `stat_counters (run, ordinal, counter, delta, rate)`: the
//!   `pg_stat_database` intervals; the view `stat_samples (run, ordinal,
//!   t_s, duration_s, counter, delta, rate)` joins them (long form).
//! - `wait_events (run, event, count)`; `siread_locks (run, kind, name,
//!   mean, max)` with `kind` `granularity` or `relation`.
//! - `plans (run, ordinal, label, sql, plan)`; `plan_changes (run,
//!   ordinal, label, sql, start_plan, end_plan)`: statements whose plan
//!   differed at the end of the window; `invariants (run, ordinal,
//!   name, ok, violations, detail)` and `lost_commits (run, ordinal,
//!   lost)` for the checks that count lost commits, `history_checks (run,
//!   ordinal, checked, cycles_json)` for a history checker's classes,
//!   `staleness (run, ordinal, json)` for the read-your-writes check of
//!   reads on standbys,
//!   `run_errors (run,
//!   ordinal, message)`,
//!   `server_errors (run, ordinal, message)` (the observer's sampling
//!   problems), `run_server_settings (run, name, value)`.
//! - `external_loads`: one row per run driven by an external load (`run`
//!   is the key): `command`, `format`, `exit_code`, `wall_s`, `ready_s`,
//!   `output_dir`, `parsed`, and the tool's figures (NULL when not
//!   parsed or not reported): `unit`, `throughput`, `count`,
//!   `duration_s`, `latency_{mean,stddev,p50,p90,p99,max}_ms`,
//!   `bytes_per_s`, `responses_2xx`, `non_2xx`, `errors`, `timeouts`,
//!   `failed`, `serialization_failures`, `deadlock_failures`, `retried`,
//!   `retries`, `skipped`.
//! - `tx_type_commands (run, ordinal, step, command, executions, mean_ms,
//!   failures)`: per-command latency of a transaction type (`ordinal`, as
//!   in `tx_types`) of a pgbench script, commands in script order (`step`).
//! - `tx_type_failure_reasons (run, ordinal, seq, sqlstate, reason,
//!   statement, attempts, failed)`: a transaction type's attempts that
//!   failed with a server error, by SQLSTATE, reason (e.g. `pivot, during
//!   commit attempt`; NULL when the error gives none) and statement (NULL
//!   when not known), most attempts first (`seq`); `failed` counts the
//!   transactions that gave up after it. The view `run_failure_reasons
//!   (run, sqlstate, reason, attempts, failed)` sums them per run.
//! - `run_faults (run, cause, connections_lost, reconnects, outage_s,
//!   recovery_s, server_wait_s)`: a run that lost connections or whose
//!   server crashed or restarted (no row: no fault); `connection_losses
//!   (run, seq, t_s, client, sqlstate)` its first 100 losses in time order;
//!   `injected_faults (run, seq, kind, t_s, detail)` the faults isobench
//!   injected (`--fault`), in time order.
//! - `run_windows (run, window_start, shard_clients)`: when the run's
//!   measured window opened (RFC 3339) and, sharded, the shard's clients.
//! - `run_hosts (run, ordinal, host, clients, refused, committed, failed,
//!   tps, p50_ms, p99_ms, latency_histogram)`: per host of a DSN with
//!   several hosts (`--host-policy`), in the DSN's order; no rows with one
//!   host.
//! - `declared_checks (run, ordinal, columns_json, during_samples,
//!   during_violated, during_max, during_first_s, during_columns_json)`:
//!   the run's invariants (`ordinal` as in `invariants`) that the study
//!   declared (`[[check]]`, `--check`, `--check-file`): the column names
//!   of their violating rows after the run (a JSON array; NULL without
//!   rows), and for a `during` check what its samples saw (NULL without
//!   `during`); `check_rows (run, ordinal, phase, seq, values_json)`:
//!   their violating rows, the first 10 after the run (`phase` `after`)
//!   and those of the first sample that found violations (`during`), each
//!   a JSON array of text (null for NULL).
//! - `run_pooler (run, version, pool_mode, pool_size, samples,
//!   cl_waiting_mean, cl_waiting_max, cl_active_mean, cl_active_max,
//!   sv_active_mean, sv_active_max, sv_idle_mean, sv_idle_max, maxwait_ms,
//!   xacts, queries, wait_ms, wait_per_xact_ms, wait_per_query_ms,
//!   xact_time_ms, query_time_ms)`: a run behind pgbouncer, what its admin
//!   console showed in the measured window (`SHOW POOLS` gauges as mean
//!   and max over the samples, `SHOW STATS` totals as differences).
//! - `run_standbys (run, ordinal, name, samples, sync_state,
//!   {write,flush,replay}_lag_{mean,max}_ms, {write,flush,replay}_lag_samples,
//!   replay_lag_{mean,max}_bytes, replay_lag_bytes_samples)`: a replicated
//!   server's standbys as the primary's `pg_stat_replication` showed them
//!   in the measured window (sampled once a second).
//!
//! Vectors keep their order in an `ordinal` column (from 0); maps come back
//! sorted by key, as `BTreeMap` keeps them.
//!
//! # Values
//!
//! - Times are RFC 3339 text; durations are named by unit (`_s`, `_ms`).
//! - `f64` is stored as REAL (exact). SQLite cannot store NaN: a NaN
//!   becomes NULL, and a NULL in a column of a non-optional `f64` reads back
//!   as NaN. An optional `f64` (`latency_limit_ms`, a cell's `rate`) is NULL
//!   for `None`, so `Some(NaN)` reads back as `None`, and a NaN `rate` in a
//!   `stat_counters` row reads back as absent. ±infinity is stored as is
//!   (the `sqlite3` CLI shows `Inf`); -0.0 reads back as 0.0 (SQLite keeps
//!   integral REALs as integers).
//! - Seeds (`u64`, possibly above `i64::MAX`) are decimal TEXT. Other
//!   counters are INTEGER; one above `i64::MAX` is refused with an error.
//! - The configuration: `config_json` (serde_json) supplies the lists, maps
//!   and retry policy; every field that has its own `experiment` column, and
//!   the `rate` list (`config_rates`), is read from there, so `f64`s never
//!   depend on JSON float parsing (serde_json guarantees exact parsing only
//!   with its `float_roundtrip` feature, which isobench does not enable),
//!   and a non-finite one (null in JSON) reads back.
//!
//! # Example
//!
//! Mean throughput and p99 latency per isolation level over complete runs:
//!
//! ```text
//! sqlite3 results/20250102-100000/results.sqlite \
//!   "SELECT c.isolation, count(*) AS runs, avg(r.tps) AS tps,
//!           avg(r.latency_p99_ms) AS p99_ms
//!      FROM runs r JOIN cells c ON c.id = r.cell_id
//!     WHERE r.complete GROUP BY c.isolation"
//! ```
//!
//! The tables are STRICT (a value of the wrong type is an error), which
//! needs SQLite 3.37 or later to read. Writes are short transactions in
//! the default rollback-journal mode, so the file can be queried while an
//! experiment runs (a writer waits up to 10 s for readers). A write that a
//! crash interrupted leaves its journal (`results.sqlite-journal`); a
//! reader, being read-only, cannot roll it back and says so, a writer
//! (`isobench run --resume`) does.
//!
//! # Files
//!
//! This file holds [`Store`] (opening, creating, upgrading, the
//! transactions) and the error plumbing; `schema` the DDL and the
//! migration list; `write` the inserts of the experiment header and of a
//! run; `read` the queries that load rows back into the model types;
//! `checks` both for the declared checks' rows.

mod checks;
mod cluster;
mod pooler;
mod read;
mod schema;
mod write;

use std::fmt::Display;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::backup::{Backup, StepResult};
use rusqlite::{Connection, MAIN_DB, OpenFlags, Transaction, TransactionBehavior, params};

use crate::store::{Results, RunRecord, SCHEMA_VERSION};

pub use schema::{MIGRATIONS, STORE_VERSION};

/// File name of the store inside a results directory.
pub const DB_FILE: &str = "results.sqlite";

/// An open results store (see the module docs). Writes go through
/// [`Store::save_header`], [`Store::save_run`] and [`Store::delete_run`],
/// each one transaction; [`Store::load`] (a reader, read-only) and
/// [`Store::read`] (through a writer's connection) read everything back.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

/// An error of the store, naming its file. [`StoreError::Unreadable`] is
/// input to fix (a results directory named on the command line that does
/// not hold a store this isobench reads); [`StoreError::Unwritable`] a
/// failure at run time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// Missing, not a SQLite database, without a store version or with a
    /// newer one, a journal only a writer can roll back, malformed values.
    #[error("{}: {message}", path.display())]
    Unreadable { path: PathBuf, message: String },
    /// The store cannot be created, upgraded or written (an existing file,
    /// permissions, a full disk).
    #[error("{}: {message}", path.display())]
    Unwritable { path: PathBuf, message: String },
}

impl StoreError {
    /// Whether the user has to fix the input (exit status 2).
    pub fn is_bad_input(&self) -> bool {
        matches!(self, StoreError::Unreadable { .. })
    }

    fn unreadable(path: &Path, Error(message): Error) -> Self {
        StoreError::Unreadable {
            path: path.to_path_buf(),
            message,
        }
    }

    fn unwritable(path: &Path, Error(message): Error) -> Self {
        StoreError::Unwritable {
            path: path.to_path_buf(),
            message,
        }
    }
}

/// An internal error message (the public API adds the file path).
#[derive(Debug)]
struct Error(String);

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        Error(e.to_string())
    }
}

impl From<rusqlite_migration::Error> for Error {
    fn from(e: rusqlite_migration::Error) -> Self {
        Error(e.to_string())
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error(format!("JSON: {e}"))
    }
}

impl From<String> for Error {
    fn from(e: String) -> Self {
        Error(e)
    }
}

type R<T> = Result<T, Error>;

/// Adds what was being done to an error.
trait Context<T> {
    fn context(self, what: impl Display) -> R<T>;
}

impl<T, E: Into<Error>> Context<T> for Result<T, E> {
    fn context(self, what: impl Display) -> R<T> {
        self.map_err(|e| Error(format!("{what}: {}", e.into().0)))
    }
}

impl Store {
    /// Creates a new database at `path` with the current schema (every
    /// migration of [`MIGRATIONS`]: store version [`STORE_VERSION`]).
    ///
    /// Errors (naming `path`): the file already exists, or it cannot be
    /// created or written.
    pub fn create(path: &Path) -> Result<Store, StoreError> {
        // create_new: refuse an existing file atomically. SQLite treats an
        // empty file as an empty database.
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| {
                let message = if e.kind() == std::io::ErrorKind::AlreadyExists {
                    "already exists; a results store is never overwritten".to_string()
                } else {
                    format!("cannot create: {e}")
                };
                StoreError::unwritable(path, Error(message))
            })?;
        let init = || -> R<Store> {
            let mut store = Store::connect(path, OpenFlags::SQLITE_OPEN_READ_WRITE)?;
            MIGRATIONS
                .to_latest(&mut store.conn)
                .context("creating the tables")?;
            let tx = store.conn.transaction()?;
            {
                let mut meta = tx.prepare("INSERT INTO meta (key, value) VALUES (?1, ?2)")?;
                meta.execute(params![
                    "results_schema_version",
                    SCHEMA_VERSION.to_string()
                ])?;
                meta.execute(params!["created_by", env!("CARGO_PKG_VERSION")])?;
            }
            tx.commit()?;
            Ok(store)
        };
        init().map_err(|e| {
            // Leave no half-made file behind (it would block a retry).
            let _ = std::fs::remove_file(path);
            StoreError::unwritable(path, e)
        })
    }

    /// Opens an existing database to write it (`isobench run --resume`):
    /// a write that a crash left unfinished is rolled back (SQLite does so
    /// on the first read), and a store of an older version is upgraded to
    /// [`STORE_VERSION`] by the [`MIGRATIONS`] it lacks, in one
    /// transaction. Readers use [`Store::load`], which changes nothing.
    ///
    /// Errors (naming `path`): the file is missing, not a SQLite database
    /// or read-only; it has no store version (not a store) or a newer one
    /// than [`STORE_VERSION`]; the upgrade fails (and is rolled back).
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let open = || -> R<(Store, i64)> {
            if !path.exists() {
                return Err(Error("no such file".into()));
            }
            // READ_WRITE without CREATE: never creates a file (and opens a
            // write-protected one read-only, refused here).
            let store = Store::connect(path, OpenFlags::SQLITE_OPEN_READ_WRITE)?;
            if store.conn.is_readonly(MAIN_DB)? {
                return Err(Error("read-only, but opened to be written".into()));
            }
            let version = store_version(&store.conn)?;
            Ok((store, version))
        };
        let (mut store, version) = open().map_err(|e| StoreError::unreadable(path, e))?;
        if version < STORE_VERSION {
            MIGRATIONS
                .to_latest(&mut store.conn)
                .context(format_args!(
                    "upgrading store version {version} to {STORE_VERSION}"
                ))
                .map_err(|e| StoreError::unwritable(path, e))?;
        }
        Ok(store)
    }

    /// Writes (or replaces) everything of `results` except the runs: the
    /// experiment row, the configuration, the environment and the load
    /// reports, in one transaction.
    ///
    /// Errors (naming the file): the database cannot be written, or a
    /// counter exceeds `i64::MAX`.
    pub fn save_header(&mut self, results: &Results) -> Result<(), StoreError> {
        self.in_transaction(|tx| write::write_header(tx, results))
            .context("saving the experiment")
            .map_err(|e| StoreError::unwritable(&self.path, e))
    }

    /// Inserts run `run.index`, or replaces it and everything under it, in
    /// one transaction. Cells left without runs are removed.
    ///
    /// Errors (naming the file and the run): the database cannot be
    /// written, or a counter exceeds `i64::MAX`.
    pub fn save_run(&mut self, run: &RunRecord) -> Result<(), StoreError> {
        self.in_transaction(|tx| {
            write::write_run(tx, run)?;
            write::delete_orphan_cells(tx)
        })
        .context(format_args!("saving run {}", run.index))
        .map_err(|e| StoreError::unwritable(&self.path, e))
    }

    /// Removes run `index` and everything under it (used by `--resume` to
    /// redo an interrupted run); a missing run is not an error.
    ///
    /// Errors (naming the file and the run): the database cannot be
    /// written.
    pub fn delete_run(&mut self, index: u32) -> Result<(), StoreError> {
        self.in_transaction(|tx| {
            tx.execute("DELETE FROM runs WHERE run = ?1", [index])?;
            write::delete_orphan_cells(tx)
        })
        .context(format_args!("deleting run {index}"))
        .map_err(|e| StoreError::unwritable(&self.path, e))
    }

    /// Reads the whole experiment back from the database at `path` (for
    /// `isobench report` and `compare`), runs in index order, leaving the
    /// file as it is: opened read-only, so never created, upgraded or
    /// written, and a write-protected file reads. A store of an older
    /// version is copied into memory and the copy upgraded (the file keeps
    /// its version until [`Store::open`] upgrades it).
    ///
    /// Errors (naming `path`): the file is missing or not a SQLite
    /// database; it has no store version or a newer one than
    /// [`STORE_VERSION`]; a crash interrupted a write and left its journal,
    /// which only a writer can roll back (`isobench run --resume` does);
    /// see also [`Store::read`].
    pub fn load(path: &Path) -> Result<Results, StoreError> {
        let reader = || -> R<Store> {
            if !path.exists() {
                return Err(Error("no such file".into()));
            }
            let store = Store::connect(path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
            if store_version(&store.conn)? < STORE_VERSION {
                store.migrated_copy()
            } else {
                Ok(store)
            }
        };
        reader()
            .map_err(|e| StoreError::unreadable(path, e))?
            .read()
    }

    /// Reads the whole experiment back through this store's connection
    /// (a writer's, e.g. to resume; readers use [`Store::load`]), runs in
    /// index order.
    ///
    /// Errors (naming the file): a store without an experiment row (no
    /// [`Store::save_header`] yet) or with malformed values.
    pub fn read(&self) -> Result<Results, StoreError> {
        let read = || -> R<Results> {
            // One read transaction: a consistent snapshot even while
            // another process writes.
            let tx = self.conn.unchecked_transaction()?;
            let results = read::read_results(&tx)?;
            tx.finish()?;
            Ok(results)
        };
        read().map_err(|e| StoreError::unreadable(&self.path, e))
    }

    /// Runs `f` in one transaction, committed when `f` succeeds.
    fn in_transaction(&mut self, f: impl FnOnce(&Transaction) -> R<()>) -> R<()> {
        // IMMEDIATE: take the write lock (waiting for readers) up front.
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        f(&tx)?;
        tx.commit()?;
        Ok(())
    }

    /// A connection to `path` with the settings every store connection
    /// uses (foreign keys on, busy timeout, statement cache).
    fn connect(path: &Path, flags: OpenFlags) -> R<Store> {
        let conn = Connection::open_with_flags(path, flags | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
        conn.busy_timeout(Duration::from_secs(10))?;
        conn.pragma_update(None, "foreign_keys", true)?;
        conn.set_prepared_statement_cache_capacity(64);
        Ok(Store {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// This store copied into memory and the copy upgraded to
    /// [`STORE_VERSION`]: how a reader reads an older store without
    /// changing the file. The copy is as large as the file.
    fn migrated_copy(self) -> R<Store> {
        let mut copy = Connection::open_in_memory()?;
        copy.set_prepared_statement_cache_capacity(64);
        {
            // Every page in one step, under one read lock: a consistent
            // snapshot even while another process writes.
            let backup = Backup::new(&self.conn, &mut copy)?;
            match backup.step(-1).context("copying the store into memory")? {
                StepResult::Done => {}
                other => {
                    return Err(Error(format!("copying the store into memory: {other:?}")));
                }
            }
        }
        let version = store_version(&copy)?;
        MIGRATIONS.to_latest(&mut copy).context(format_args!(
            "upgrading an in-memory copy of store version {version} to {STORE_VERSION}"
        ))?;
        Ok(Store {
            conn: copy,
            path: self.path,
        })
    }
}

/// The store version of `conn` (`PRAGMA user_version`).
///
/// Errors: not a readable SQLite database; a hot journal that a read-only
/// connection cannot roll back; no version (0: not a store) or a newer one
/// than [`STORE_VERSION`].
fn store_version(conn: &Connection) -> R<i64> {
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(|e| {
            let rollback = rusqlite::ffi::SQLITE_READONLY_ROLLBACK;
            if e.sqlite_error()
                .is_some_and(|f| f.extended_code == rollback)
            {
                Error(
                    "a crash interrupted a write and left its journal (the `-journal` file), \
                     which this reader cannot roll back (it opens the store read-only); \
                     `isobench run --resume` on the results directory does"
                        .into(),
                )
            } else {
                Error(format!("not a readable SQLite database: {e}"))
            }
        })?;
    if (1..=STORE_VERSION).contains(&version) {
        return Ok(version);
    }
    Err(Error(format!(
        "store version {version}, but this isobench reads store versions 1 to {STORE_VERSION}{}",
        if version == 0 {
            " (not an isobench results store?)"
        } else {
            " (written by a newer isobench?)"
        }
    )))
}

/// The serde name of a unit enum variant, e.g. `interleaved`.
fn enum_name<T: serde::Serialize>(v: &T) -> R<String> {
    match serde_json::to_value(v)? {
        serde_json::Value::String(s) => Ok(s),
        other => Err(Error(format!("expected a name, got {other}"))),
    }
}

/// Reverses [`enum_name`].
fn from_name<T: serde::de::DeserializeOwned>(s: &str) -> R<T> {
    Ok(serde_json::from_value(serde_json::Value::String(s.into()))?)
}

/// Rows of `sql` (with `?1` = the run) mapped by `f`.
fn children<T>(
    conn: &Connection,
    table: &str,
    sql: &str,
    run: u32,
    f: impl FnMut(&rusqlite::Row) -> rusqlite::Result<T>,
) -> R<Vec<T>> {
    conn.prepare_cached(sql)?
        .query_map([run], f)?
        .collect::<rusqlite::Result<Vec<T>>>()
        .context(table)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::model::{Backoff, PlanChange, RetryPolicy};
    use crate::model::{
        CountStat, LatencySummary, LoadFigures, LoadReport, Order, SecondPoint, SireadLocks,
        StatInterval,
    };
    use crate::store::{
        CommandRecord, FailureReasonRecord, LoadRecord, Rate, TxTypeRecord, WaitSummary,
    };

    use crate::model::fixture;

    /// A store at `dir/results.sqlite` holding all of `r`.
    fn saved(dir: &Path, r: &Results) -> (Store, PathBuf) {
        let path = dir.join(DB_FILE);
        let mut store = Store::create(&path).unwrap();
        store.save_header(r).unwrap();
        for run in &r.runs {
            store.save_run(run).unwrap();
        }
        (store, path)
    }

    /// Rows with `run = run` in every table that has a `run` column.
    fn rows_of_run(conn: &Connection, run: u32) -> BTreeMap<String, i64> {
        let tables: Vec<String> = conn
            .prepare(
                "SELECT s.name FROM sqlite_schema s WHERE s.type = 'table'
                   AND EXISTS (SELECT 1 FROM pragma_table_info(s.name) c WHERE c.name = 'run')",
            )
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert!(tables.len() >= 15, "{tables:?}");
        tables
            .into_iter()
            .map(|t| {
                let n = conn
                    .query_row(
                        &format!("SELECT count(*) FROM {t} WHERE run = ?1"),
                        [run],
                        |r| r.get(0),
                    )
                    .unwrap();
                (t, n)
            })
            .collect()
    }

    fn count(conn: &Connection, table: &str) -> i64 {
        conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
            .unwrap()
    }

    fn tx_type(name: &str, committed: u64, failed: &[(&str, u64)], p99: f64) -> TxTypeRecord {
        let mut h = crate::model::new_histogram();
        h.record((p99 * 1000.0) as u64).unwrap();
        h.record(committed.max(1)).unwrap();
        TxTypeRecord {
            name: name.into(),
            committed,
            user_aborts: committed / 7,
            attempts: committed * 2 + 1,
            failed: failed.iter().map(|(c, n)| (c.to_string(), *n)).collect(),
            unknown_outcome: 1,
            wasted_ms: 0.1 + 0.2,
            latency_ms: LatencySummary {
                mean: p99 / 3.0,
                p50: p99 / 7.0,
                p90: p99 / 1.1,
                p95: p99 / 1.05,
                p99,
                p999: p99 * 1.7,
                max: p99 * 11.3,
            },
            latency_histogram: crate::model::encode_histogram(&h),
            commands: vec![
                CommandRecord {
                    command: format!("\\set x random(1, {committed})"),
                    executions: committed * 2,
                    mean_ms: 0.001,
                    failures: 0,
                },
                CommandRecord {
                    command: "UPDATE t SET v = v + 1 WHERE k = :x;".into(),
                    executions: committed * 2,
                    mean_ms: p99 / 4.0,
                    failures: committed / 3,
                },
            ],
            failure_reasons: vec![
                FailureReasonRecord {
                    sqlstate: "40001".into(),
                    reason: Some("pivot, during commit attempt".into()),
                    statement: Some("UPDATE t SET v = v + 1 WHERE k = :x;".into()),
                    attempts: committed / 3,
                    failed: committed / 9,
                },
                FailureReasonRecord {
                    sqlstate: "40P01".into(),
                    reason: None,
                    statement: None,
                    attempts: 1,
                    failed: 0,
                },
            ],
        }
    }

    /// The fixture with every optional factor and field set: pool size,
    /// rate, settings, pg_bin, pool wait, schedule lag, skipped, late,
    /// server settings, 600 per-second points, several transaction types,
    /// a seed above `i64::MAX`, awkward floats. Run 1 has rows in every
    /// table.
    fn variant() -> Results {
        let mut r = fixture::results();
        r.finished_at = None;
        r.complete = true;
        let c = &mut r.config;
        c.scale = vec![1, 10];
        c.params = vec![("rows".into(), vec!["100".into(), "1000".into()])];
        c.param_defaults.insert("rows".into(), "100".into());
        c.pool_size = vec![8, 16];
        // 17 significant digits (0.30000000000000004) and a tiny value:
        // floats whose exactness must not hinge on JSON parsing.
        c.rate = vec![500.0, 1000.0 / 3.0, 0.1 + 0.2, 1e-300];
        c.latency_limit_ms = Some(0.1 + 0.7);
        c.max_tries = vec![1, 10];
        c.setting_factors = vec![("shared_buffers".into(), vec!["128MB".into(), "1GB".into()])];
        c.pg_bin = vec!["stock".into(), "finer-lock".into()];
        c.pg_bin_dirs = BTreeMap::from([
            ("stock".into(), "/usr/lib/postgresql/15/bin".into()),
            ("finer-lock".into(), "/opt/pg-patched/bin".into()),
        ]);
        c.target_options.pg_bin_label = Some("one".into());
        c.repeat = 2;
        c.order = Order::Random;
        c.baseline = Some("isolation=rc,clients=16".into());
        c.duration_s = 180.0 / 7.0;
        c.warmup_s = 0.1 * 3.0;
        c.sample_interval_s = 2.0 / 3.0;
        c.threads = Some(3);
        c.retry = RetryPolicy {
            max_tries: 5,
            retry_on: vec!["40001".into()],
            backoff: Backoff::Exponential {
                base: Duration::from_millis(2),
                max: Duration::from_millis(50),
            },
        };
        c.seed = u64::MAX;
        c.shard = Some(crate::model::ShardSpec { index: 1, count: 3 });
        r.runs[0].window_start = Some("2026-01-01T10:00:00.000001Z".into());
        r.runs[0].shard_clients = Some(0);
        r.runs[0].hosts = vec![
            crate::model::HostRecord {
                host: "/var/run/postgresql:5432".into(),
                clients: 2,
                refused: 0,
                committed: 7,
                tps: 7.0 / 3.0,
                p50_ms: 0.1 + 0.2,
                p99_ms: 12.5,
                failed: 1,
                latency_histogram: r.runs[0].latency_histogram.clone(),
            },
            crate::model::HostRecord {
                host: "127.0.0.1:5433".into(),
                clients: 1,
                refused: 1,
                committed: 0,
                tps: 0.0,
                p50_ms: 0.0,
                p99_ms: 0.0,
                failed: 0,
                latency_histogram: String::new(),
            },
        ];
        r.runs[0].faults = Some(crate::model::RunFaults {
            cause: Some("server process (PID 12) was terminated by signal 9: Killed".into()),
            connections_lost: 2,
            losses: vec![
                crate::model::ConnectionLoss {
                    t_s: -0.25,
                    client: 0,
                    sqlstate: "57P02".into(),
                },
                crate::model::ConnectionLoss {
                    t_s: 1.0 / 3.0,
                    client: 7,
                    sqlstate: "08006".into(),
                },
            ],
            reconnects: 2,
            outage_s: Some(0.1 + 0.2),
            recovery_s: None,
            server_wait_s: Some(1.5),
            injected: vec![
                crate::model::InjectedFault {
                    kind: crate::model::FaultKind::KillBackend,
                    t_s: 1.0 / 3.0,
                    detail: "SIGKILL to client backend PID 12".into(),
                    failover: None,
                },
                crate::model::InjectedFault {
                    kind: crate::model::FaultKind::Failover,
                    t_s: 2.5,
                    detail: "SIGKILL to node n1".into(),
                    failover: Some(crate::model::FailoverOutcome {
                        killed: "n1".into(),
                        promoted: Some("n2".into()),
                        promoted_s: Some(4.75),
                        unavailable_s: None,
                        split_brain_writes: Some(3),
                    }),
                },
            ],
        });
        // A standby as pg_stat_replication showed it.
        r.runs[0].server.standbys = vec![crate::model::StandbyObservation {
            name: "s1".into(),
            samples: 3,
            sync_state: "sync".into(),
            replay_lag_ms: crate::model::LagStat {
                mean: 1.25,
                max: 2.5,
                samples: 2,
            },
            ..Default::default()
        }];
        c.faults = vec!["kill-backend@333ms".into()];
        c.fault_plans = vec!["none".into(), "pause:1s@1s+crash@2500ms".into()];
        c.workloads = vec!["tpcb".into(), "ssibench".into()];
        r.runs[0].invariants[1].lost_commits = Some(7);
        // A history checker's class: its exposure and a cycle with its
        // evidence directory.
        let mut g2 = crate::model::InvariantResult::count("G2-item", 1, "1 found".into());
        g2.checked = Some(138_578);
        g2.cycles = vec![fixture::g2_item_cycle()];
        r.runs[0].invariants.push(g2);
        // Reads on a standby: the read-your-writes check with its staleness.
        let mut ryw = crate::model::InvariantResult::count(
            "read-your-writes (standby reads)",
            3,
            "3 of 10 standby reads ...".into(),
        );
        ryw.checked = Some(10);
        let spread = |max: f64| crate::model::Spread {
            p50: 0.0,
            p90: max / 2.0,
            p99: max,
            max,
        };
        ryw.staleness = Some(crate::model::Staleness {
            reads: 10,
            bytes: spread(1288.0),
            ms: spread(0.75),
        });
        r.runs[0].invariants.push(ryw);
        // Declared checks: one with rows after the run and a `during`
        // sample's rows (NULLs and text kept), one count without rows.
        let kept = |rows: &[[Option<&str>; 2]]| crate::model::CheckRows {
            columns: vec!["aid".into(), "naïve \"col\"".into()],
            rows: rows
                .iter()
                .map(|r| r.iter().map(|v| v.map(String::from)).collect())
                .collect(),
        };
        r.runs[0].invariants.push(crate::model::InvariantResult {
            declared: true,
            rows: Some(kept(&[[Some("7"), Some("-6")], [Some("9"), None]])),
            during: Some(crate::model::DuringCheck {
                samples: 12,
                violated_samples: 3,
                max_violations: 4,
                first_violation_s: Some(1.0 / 3.0),
                rows: Some(kept(&[[Some("1"), Some("-1")]])),
            }),
            ..crate::model::InvariantResult::count("no-negative-balance", 4, "2 row(s)".into())
        });
        r.runs[0].invariants.push(crate::model::InvariantResult {
            declared: true,
            during: Some(crate::model::DuringCheck {
                samples: 2,
                ..Default::default()
            }),
            ..crate::model::InvariantResult::count("money", 0, "sum 100, expected 100".into())
        });
        c.checks = vec![crate::model::CheckSpec {
            name: "no-negative-balance".into(),
            sql: "SELECT aid, abalance FROM pgbench_accounts WHERE abalance < 0".into(),
            expect: None,
            during: true,
            origin: "study.toml:12".into(),
        }];
        c.target = "external PostgreSQL at host=/tmp port=5432 — 'naïve' \"quoted\"".into();
        c.file = Some("studies/ssi.toml".into());
        r.environment
            .server_settings
            .insert("max_pred_locks_per_transaction".into(), "64".into());
        r.load.push(LoadReport {
            data: "rows=1000".into(),
            elapsed: Duration::new(3, 123_456_789),
            rows: 1000,
        });

        let run = &mut r.runs[0];
        run.cell.params = BTreeMap::from([("rows".into(), "1000".into())]);
        run.cell.pool_size = Some(8);
        run.cell.rate = Some(Rate(1000.0 / 3.0));
        run.cell.max_tries = Some(1);
        run.cell.settings = BTreeMap::from([("shared_buffers".into(), "1GB".into())]);
        run.cell.pg_bin = Some("finer-lock".into());
        run.cell.fault_plan = Some("pause:1s@1s+crash@2500ms".into());
        run.cell.workload = "ssibench".into();
        run.cell.work_factor = Some("workload".into());
        run.cell.pooler = Some(crate::model::Pooler::PgBouncer(
            crate::model::PoolMode::Transaction,
        ));
        run.cell.pooler_size = Some(50);
        run.server.pooler = Some(crate::model::PoolerObservations {
            version: "1.18.0".into(),
            pool_mode: "transaction".into(),
            pool_size: 50,
            samples: 9,
            cl_waiting: crate::model::CountStatF {
                mean: 1950.0 / 3.0,
                max: 1990,
            },
            cl_active: crate::model::CountStatF {
                mean: 50.0,
                max: 50,
            },
            sv_active: crate::model::CountStatF {
                mean: 0.1 + 0.2,
                max: 50,
            },
            sv_idle: crate::model::CountStatF { mean: 0.0, max: 3 },
            maxwait_ms: 123.456,
            xacts: 45_678,
            queries: 319_746,
            wait_ms: 9876.5,
            wait_per_xact_ms: 9876.5 / 45_678.0,
            wait_per_query_ms: 9876.5 / 319_746.0,
            xact_time_ms: 1.0 / 3.0,
            query_time_ms: 0.05,
        });
        c.pooler = vec![
            crate::model::Pooler::None,
            crate::model::Pooler::PgBouncer(crate::model::PoolMode::Transaction),
        ];
        c.pooler_size = vec![10, 50];
        c.pgbouncer_bin = Some("/usr/sbin/pgbouncer".into());
        run.seed = u64::MAX - 1;
        run.pool_wait_ms = Some(WaitSummary {
            count: 12345,
            mean: 0.1 + 0.2,
            p50: 0.25,
            p99: 1.0 / 3.0,
            max: 7.5,
        });
        run.schedule_lag_ms = Some(WaitSummary {
            count: 0,
            mean: 0.0,
            p50: 0.0,
            p99: 0.0,
            max: 0.0,
        });
        run.skipped = 7;
        run.late = 3;
        run.server.plan_changes = vec![PlanChange {
            label: "UPDATE t".into(),
            sql: "UPDATE t SET v = v + 1 WHERE k = $1".into(),
            start: "Update on t\n  ->  Seq Scan on t".into(),
            end: "Update on t\n  ->  Index Scan using t_pkey on t".into(),
        }];
        r.runs[1].host_cpu = None;
        let run = &mut r.runs[0];
        run.server_settings
            .insert("shared_buffers".into(), "1GB".into());
        run.per_second = (0..600)
            .map(|i| SecondPoint {
                t_s: (i + 1) as f64 * 1.000_000_7,
                committed: 90 + i % 17,
                tps: (90 + i % 17) as f64 / 1.000_000_7,
                p99_ms: 8.0 + (i as f64).sqrt() / 3.0,
                failed: i % 5,
                lag_ms: (i % 2 == 1).then(|| i as f64 / 7.0),
            })
            .collect();
        run.transactions = vec![
            tx_type("NewOrder", 3000, &[("40001", 12), ("40P01", 2)], 9.5),
            tx_type("Payment", 2500, &[], 4.25),
            tx_type("OrderStatus", 0, &[("23505", 1)], 0.0),
        ];
        run.failed = BTreeMap::from([
            ("40001".into(), 12),
            ("40P01".into(), 2),
            ("23505".into(), 1),
        ]);
        run.failed_by_type = BTreeMap::from([
            (
                "NewOrder".into(),
                BTreeMap::from([("40001".into(), 12), ("40P01".into(), 2)]),
            ),
            ("OrderStatus".into(), BTreeMap::from([("23505".into(), 1)])),
        ]);
        // 30 intervals x 12 counters, then one with a counter only in
        // `delta` and one with no counters at all.
        let zero = [0i64; 12];
        run.server.stat_database = (0..30)
            .map(|i| {
                let now: Vec<i64> = (0..12).map(|k| (i + 1) * (k + 1) * 1001).collect();
                crate::model::stat_interval((i + 1) as f64 * 2.0 / 3.0, 2.0 / 3.0, &zero, &now)
            })
            .collect();
        run.server.stat_database.push(StatInterval {
            t_s: 20.5,
            duration_s: 0.5,
            delta: BTreeMap::from([("xact_commit".into(), -3)]),
            rate: BTreeMap::new(),
        });
        run.server.stat_database.push(StatInterval {
            t_s: 21.0,
            duration_s: 0.5,
            delta: BTreeMap::new(),
            rate: BTreeMap::new(),
        });
        run.server.siread_locks = SireadLocks {
            samples: 59,
            by_granularity: BTreeMap::from([(
                "tuple".into(),
                CountStat {
                    mean: 1.0 / 3.0,
                    max: 4,
                },
            )]),
            by_relation: BTreeMap::from([
                (
                    "pgbench_accounts (tuple)".into(),
                    CountStat { mean: 0.25, max: 3 },
                ),
                (
                    "pgbench_branches (relation)".into(),
                    CountStat { mean: 1.0, max: 1 },
                ),
            ]),
        };
        run.server.errors = vec![
            "pg_stat_database: timeout".into(),
            "wait events: 'x'".into(),
        ];
        run.errors = vec!["client 3 lost: connection reset".into(), String::new()];
        run.client_cpu_us_per_tx = f64::INFINITY;
        run.reset_ms = f64::NEG_INFINITY;
        run.load = Some(LoadRecord {
            command: "autocannon -j -c 25 http://localhost:3000/ '{dsn}'".into(),
            format: crate::model::LoadFormat::Autocannon,
            exit_code: Some(0),
            wall_s: 10.0 / 3.0,
            ready_s: Some(0.25),
            output_dir: "load/run-1".into(),
            figures: Some(LoadFigures {
                unit: "req/s".into(),
                throughput: 2088.5,
                count: u64::try_from(i64::MAX).unwrap(),
                duration_s: Some(2.01),
                latency_mean_ms: Some(0.1 + 0.2),
                latency_p99_ms: Some(964.0),
                responses_2xx: Some(4176),
                non_2xx: Some(0),
                errors: Some(3),
                timeouts: Some(1),
                ..LoadFigures::default()
            }),
        });
        // Run 2: a failed external command, no figures.
        r.runs[1].load = Some(LoadRecord {
            command: "./load.sh".into(),
            format: crate::model::LoadFormat::Command,
            exit_code: None,
            wall_s: 0.5,
            ready_s: None,
            output_dir: "load/run-2".into(),
            figures: None,
        });
        // Run 2 keeps no wait events but its sample count.
        r.runs[1].server.wait_events.counts.clear();
        r.runs[1].server.plans.clear();
        with_effective_tps(r)
    }

    /// `r` with every run's effective tps as the store derives it from the
    /// history check (it is not stored).
    fn with_effective_tps(mut r: Results) -> Results {
        for run in &mut r.runs {
            run.effective_tps =
                crate::model::effective_tps(run.tps, &run.lifetime, &run.invariants);
        }
        r
    }

    #[test]
    fn failure_reasons_round_trip_and_sum_per_run() {
        let dir = tempfile::tempdir().unwrap();
        let v = variant();
        let (store, _) = saved(dir.path(), &v);
        assert_eq!(store.read().unwrap(), v);
        let run = &v.runs[0];
        let want: u64 = run
            .transactions
            .iter()
            .flat_map(|t| &t.failure_reasons)
            .filter(|f| f.reason.as_deref() == Some("pivot, during commit attempt"))
            .map(|f| f.attempts)
            .sum();
        assert!(want > 0);
        let got: u64 = store
            .conn
            .query_row(
                "SELECT attempts FROM run_failure_reasons
                  WHERE run = ?1 AND sqlstate = '40001' AND reason = 'pivot, during commit attempt'",
                [run.index],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(got, want);
    }

    #[test]
    fn round_trip_fixture() {
        let dir = tempfile::tempdir().unwrap();
        let fixture = fixture::results();
        let (store, path) = saved(dir.path(), &fixture);
        drop(store);
        assert_eq!(Store::load(&path).unwrap(), fixture);
    }

    #[test]
    fn round_trip_variant() {
        let dir = tempfile::tempdir().unwrap();
        let v = variant();
        // A first header that the second must replace entirely.
        let mut first = fixture::results();
        first.load.push(first.load[0].clone());
        first
            .environment
            .server_settings
            .insert("x".into(), "y".into());
        let path = dir.path().join(DB_FILE);
        let mut store = Store::create(&path).unwrap();
        store.save_header(&first).unwrap();
        store.save_header(&v).unwrap();
        for run in &v.runs {
            store.save_run(run).unwrap();
        }
        // Every run-level table holds rows of run 1.
        let rows = rows_of_run(&store.conn, 1);
        assert!(rows.values().all(|&n| n > 0), "{rows:?}");
        assert_eq!(rows["per_second"], 600);
        assert_eq!(rows["stat_intervals"], 32);
        assert_eq!(rows["stat_counters"], 30 * 12 + 1);
        assert_eq!(rows["histograms"], 4);
        let back = Store::load(&path).unwrap();
        assert_eq!(back.config, v.config);
        assert_eq!(back.runs[0], v.runs[0]);
        assert_eq!(back, v);
        // Bit for bit.
        assert_eq!(back.config.rate[2].to_bits(), (0.1f64 + 0.2).to_bits());
        assert_eq!(back.runs[0].client_cpu_us_per_tx, f64::INFINITY);
        // Three cells: run 1's, rc, ser.
        assert_eq!(count(&store.conn, "cells"), 3);
    }

    #[test]
    fn nan_reads_back_as_nan() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = fixture::results();
        r.config.duration_s = f64::NAN;
        r.runs[0].tps = f64::NAN;
        r.runs[0].latency_ms.p99 = f64::NAN;
        r.runs[0].pool_wait_ms = Some(WaitSummary {
            count: 3,
            mean: f64::NAN,
            ..WaitSummary::default()
        });
        r.runs[0].per_second = vec![SecondPoint {
            t_s: 1.0,
            committed: 0,
            tps: 0.0,
            p99_ms: f64::NAN,
            failed: 0,
            lag_ms: None,
        }];
        let (_store, path) = saved(dir.path(), &r);
        let back = Store::load(&path).unwrap();
        assert!(back.config.duration_s.is_nan());
        let run = &back.runs[0];
        assert!(run.tps.is_nan());
        assert!(run.latency_ms.p99.is_nan());
        assert_eq!(run.latency_ms.p50, r.runs[0].latency_ms.p50);
        let pw = run.pool_wait_ms.expect("pool wait kept");
        assert_eq!(pw.count, 3);
        assert!(pw.mean.is_nan());
        assert!(run.per_second[0].p99_ms.is_nan());
        assert_eq!(back.runs[1..], r.runs[1..]);
    }

    #[test]
    fn save_run_twice_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let v = variant();
        let path = dir.path().join(DB_FILE);
        let mut store = Store::create(&path).unwrap();
        store.save_header(&v).unwrap();
        store.save_run(&v.runs[0]).unwrap();
        store.save_run(&v.runs[0]).unwrap();
        let once = rows_of_run(&store.conn, 1);
        assert_eq!(once["per_second"], 600);
        assert_eq!(once["runs"], 1);

        // The redone run: another cell, fewer rows everywhere.
        let mut redo = v.runs[0].clone();
        redo.cell.clients = 8;
        redo.per_second.truncate(10);
        redo.transactions.truncate(1);
        redo.failed_by_type.remove("OrderStatus");
        redo.failed.remove("23505");
        redo.server.stat_database.truncate(2);
        redo.server.plans.truncate(1);
        redo.errors.clear();
        redo.tps = 1.5;
        redo.effective_tps =
            crate::model::effective_tps(redo.tps, &redo.lifetime, &redo.invariants);
        store.save_run(&redo).unwrap();
        let rows = rows_of_run(&store.conn, 1);
        assert_eq!(rows["runs"], 1);
        assert_eq!(rows["per_second"], 10);
        assert_eq!(rows["tx_types"], 1);
        assert_eq!(rows["tx_type_failures"], 2);
        assert_eq!(rows["histograms"], 2);
        assert_eq!(rows["run_failures"], 4);
        assert_eq!(rows["stat_intervals"], 2);
        assert_eq!(rows["stat_counters"], 24);
        assert_eq!(rows["plans"], 1);
        assert_eq!(rows["run_errors"], 0);
        // The first cell has no run left and is gone.
        assert_eq!(count(&store.conn, "cells"), 1);
        assert_eq!(Store::load(&path).unwrap().runs, vec![redo]);
    }

    #[test]
    fn delete_run_removes_run_and_children() {
        let dir = tempfile::tempdir().unwrap();
        let v = variant();
        let (mut store, path) = saved(dir.path(), &v);
        let before = rows_of_run(&store.conn, 1);
        assert!(before.values().all(|&n| n > 0), "{before:?}");
        let run3 = rows_of_run(&store.conn, 3);
        assert_eq!(count(&store.conn, "cells"), 3);

        store.delete_run(1).unwrap();
        let after = rows_of_run(&store.conn, 1);
        assert!(after.values().all(|&n| n == 0), "{after:?}");
        // Other runs keep their rows; run 1's cell (its only run) is gone.
        assert_eq!(rows_of_run(&store.conn, 3), run3);
        assert_eq!(count(&store.conn, "cells"), 2);
        // A missing run is not an error.
        store.delete_run(1).unwrap();
        store.delete_run(99).unwrap();

        let mut expected = v.clone();
        expected.runs.remove(0);
        assert_eq!(Store::load(&path).unwrap(), expected);
    }

    #[test]
    fn open_refuses_another_store_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(DB_FILE);
        drop(Store::create(&path).unwrap());
        assert!(Store::open(&path).is_ok());
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", STORE_VERSION + 1)
            .unwrap();
        for e in [
            Store::open(&path).unwrap_err(),
            Store::load(&path).unwrap_err(),
        ] {
            assert!(e.is_bad_input(), "{e:?}");
            let e = e.to_string();
            assert!(e.starts_with(&path.display().to_string()), "{e}");
            let future = format!("store version {}", STORE_VERSION + 1);
            assert!(e.contains(&future), "{e}");
            assert!(
                e.contains(&format!("store versions 1 to {STORE_VERSION}")),
                "{e}"
            );
            assert!(e.contains("newer isobench"), "{e}");
        }
    }

    /// `PRAGMA user_version` and `meta.store_version` of `conn`.
    fn versions(conn: &Connection) -> (i64, String) {
        let user_version = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        let meta = conn
            .query_row(
                "SELECT value FROM meta WHERE key = 'store_version'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        (user_version, meta)
    }

    /// What a store of version `version` holds of `r`: host CPU, plan
    /// changes and per-second lag came with version 4, failure reasons
    /// with version 5, faults with version 6 (commands with version 3: `r`
    /// has none).
    fn as_of(version: usize, r: &Results) -> Results {
        let mut r = r.clone();
        for run in &mut r.runs {
            if version < 4 {
                run.host_cpu = None;
                run.server.plan_changes.clear();
                for p in &mut run.per_second {
                    p.lag_ms = None;
                }
            }
            if version < 5 {
                for t in &mut run.transactions {
                    t.failure_reasons.clear();
                }
            }
            if version < 6 {
                run.faults = None;
            }
            if version < 7
                && let Some(f) = &mut run.faults
            {
                f.injected.clear();
            }
            if version < 8 {
                for i in &mut run.invariants {
                    i.lost_commits = None;
                }
            }
            if version < 9 {
                run.cell.fault_plan = None;
            }
            if version < 10 {
                run.window_start = None;
                run.shard_clients = None;
            }
            if version < 11 {
                run.cell.work_factor = None;
            }
            if version < 12 {
                run.hosts.clear();
            }
            if version < 13 {
                for i in &mut run.invariants {
                    i.declared = false;
                    i.rows = None;
                    i.during = None;
                }
            }
            if version < 14 {
                run.cell.pooler = None;
                run.cell.pooler_size = None;
                run.server.pooler = None;
            }
            if version < 15 {
                for i in &mut run.invariants {
                    i.checked = None;
                    i.cycles.clear();
                }
            }
            if version < 16 {
                run.server.standbys.clear();
                if let Some(f) = &mut run.faults {
                    for i in &mut f.injected {
                        i.failover = None;
                    }
                }
            }
            if version < 17 {
                for i in &mut run.invariants {
                    i.staleness = None;
                }
            }
        }
        with_effective_tps(r)
    }

    /// A store at `dir/results.sqlite` as an isobench of store version
    /// `version` wrote it: the schema of the first `version` migrations,
    /// holding the rows of `full` (a current store whose data fits that
    /// schema).
    fn old_store(dir: &Path, version: usize, full: &Path) -> PathBuf {
        let path = dir.join(DB_FILE);
        let mut conn = Connection::open(&path).unwrap();
        MIGRATIONS.to_version(&mut conn, version).unwrap();
        conn.execute("ATTACH DATABASE ?1 AS full", [full.to_str().unwrap()])
            .unwrap();
        let tables: Vec<String> = conn
            .prepare("SELECT name FROM main.sqlite_schema WHERE type = 'table'")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        for table in tables {
            // The migrations set store_version.
            let only = if table == "meta" {
                "WHERE key != 'store_version'"
            } else {
                ""
            };
            // The old table's columns: later versions may have added some.
            let columns: Vec<String> = conn
                .prepare(&format!(
                    "SELECT name FROM pragma_table_info('{table}', 'main')"
                ))
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap();
            let columns = columns.join(", ");
            conn.execute_batch(&format!(
                "INSERT INTO main.{table} ({columns}) SELECT {columns} FROM full.{table} {only}"
            ))
            .unwrap();
        }
        conn.execute_batch("DETACH DATABASE full").unwrap();
        path
    }

    #[test]
    fn migrations_validate_and_each_sets_store_version() {
        MIGRATIONS.validate().unwrap();
        assert_eq!(STORE_VERSION, 18);
        let mut conn = Connection::open_in_memory().unwrap();
        for v in 1..=STORE_VERSION {
            MIGRATIONS.to_version(&mut conn, v as usize).unwrap();
            assert_eq!(versions(&conn), (v, v.to_string()));
        }
    }

    #[test]
    fn stores_of_older_versions_are_read_unchanged_and_upgraded_by_writers() {
        let fixture = fixture::results();
        let v = variant();
        let full_dir = tempfile::tempdir().unwrap();
        let full = saved(full_dir.path(), &fixture).1;
        for version in 1..STORE_VERSION as usize {
            let dir = tempfile::tempdir().unwrap();
            let path = old_store(dir.path(), version, &full);
            let has = |p: &Path, table: &str| -> bool {
                Connection::open(p)
                    .unwrap()
                    .query_row(
                        "SELECT count(*) FROM sqlite_schema WHERE name = ?1",
                        [table],
                        |r| r.get::<_, i64>(0),
                    )
                    .unwrap()
                    == 1
            };
            assert_eq!(has(&path, "external_loads"), version >= 2);
            assert_eq!(has(&path, "tx_type_commands"), version >= 3);
            assert_eq!(has(&path, "tx_type_failure_reasons"), version >= 5);
            assert_eq!(has(&path, "run_faults"), version >= 6);
            let bytes = std::fs::read(&path).unwrap();

            let fixture = as_of(version, &fixture);
            // A reader reads an upgraded in-memory copy; the file is as it was.
            assert_eq!(Store::load(&path).unwrap(), fixture, "version {version}");
            assert_eq!(std::fs::read(&path).unwrap(), bytes, "version {version}");

            // A writer upgrades the file, data intact.
            let mut store = Store::open(&path).unwrap();
            assert_eq!(
                versions(&store.conn),
                (STORE_VERSION, STORE_VERSION.to_string())
            );
            assert_eq!(store.read().unwrap(), fixture);
            assert_eq!(Store::load(&path).unwrap(), fixture);
            let meta: i64 = store
                .conn
                .query_row("SELECT count(*) FROM meta", [], |r| r.get(0))
                .unwrap();
            assert_eq!(meta, 3, "store_version, results_schema_version, created_by");
            // ... and takes what the later tables hold (external loads,
            // per-command latencies, failure reasons).
            store.save_header(&v).unwrap();
            for run in &v.runs {
                store.save_run(run).unwrap();
            }
            assert_eq!(Store::load(&path).unwrap(), v, "version {version}");
        }
    }

    #[test]
    fn a_version_2_store_with_tx_type_commands_is_upgraded() {
        // tx_type_commands was first added to version 2 stores without a
        // version bump: such a store has the table and its rows.
        let dir = tempfile::tempdir().unwrap();
        let v = variant();
        assert!(v.runs[0].transactions[0].commands.len() > 1);
        // A version 3 store (it has tx_type_commands) labelled version 2.
        let v = as_of(3, &v);
        let full_dir = tempfile::tempdir().unwrap();
        let full = saved(full_dir.path(), &v).1;
        let path = old_store(dir.path(), 3, &full);
        Connection::open(&path)
            .unwrap()
            .execute_batch(
                "PRAGMA user_version = 2;
                 UPDATE meta SET value = '2' WHERE key = 'store_version';",
            )
            .unwrap();
        assert_eq!(Store::load(&path).unwrap(), v);
        assert_eq!(versions(&Connection::open(&path).unwrap()).0, 2);
        let store = Store::open(&path).unwrap();
        assert_eq!(
            versions(&store.conn),
            (STORE_VERSION, STORE_VERSION.to_string())
        );
        assert_eq!(store.read().unwrap(), v);
    }

    #[test]
    fn load_changes_nothing_even_on_a_write_protected_file() {
        use std::os::unix::fs::PermissionsExt;
        let fixture = fixture::results();
        let full_dir = tempfile::tempdir().unwrap();
        let full = saved(full_dir.path(), &fixture).1;
        let old_dir = tempfile::tempdir().unwrap();
        for (path, version) in [
            (full, STORE_VERSION as usize),
            (
                old_store(old_dir.path(), 1, &full_dir.path().join(DB_FILE)),
                1,
            ),
        ] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
            let bytes = std::fs::read(&path).unwrap();
            let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
            assert_eq!(Store::load(&path).unwrap(), as_of(version, &fixture));
            assert_eq!(std::fs::read(&path).unwrap(), bytes);
            assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), mtime);
            let journal = PathBuf::from(format!("{}-journal", path.display()));
            assert!(!journal.exists());
            // A writer refuses the file (unless run as root, which may
            // write it anyway).
            if !nix::unistd::geteuid().is_root() {
                let e = Store::open(&path).unwrap_err();
                assert!(e.is_bad_input(), "{e:?}");
                assert!(e.to_string().contains("read-only"), "{e}");
            }
        }
    }

    #[test]
    fn a_crash_journal_stops_readers_and_is_rolled_back_by_writers() {
        let fixture = fixture::results();
        let dir = tempfile::tempdir().unwrap();
        let path = saved(dir.path(), &fixture).1;
        let journal = |p: &Path| PathBuf::from(format!("{}-journal", p.display()));
        // A write in progress, large enough to spill into the file; copied
        // as it is, the copy is what a crash in the middle leaves.
        let mut conn = Connection::open(&path).unwrap();
        conn.execute_batch("PRAGMA cache_size = 1").unwrap();
        let tx = conn.transaction().unwrap();
        tx.execute_batch(
            "CREATE TABLE junk (x BLOB) STRICT;
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
             INSERT INTO junk SELECT randomblob(1000) FROM n;",
        )
        .unwrap();
        let crashed = tempfile::tempdir().unwrap();
        let copy = crashed.path().join(DB_FILE);
        std::fs::copy(&path, &copy).unwrap();
        std::fs::copy(journal(&path), journal(&copy)).unwrap();
        tx.rollback().unwrap();

        let e = Store::load(&copy).unwrap_err();
        assert!(e.is_bad_input(), "{e:?}");
        let e = e.to_string();
        assert!(e.starts_with(&copy.display().to_string()), "{e}");
        assert!(e.contains("isobench run --resume"), "{e}");
        assert!(journal(&copy).exists());
        // A writer (as --resume opens it) rolls the write back.
        assert_eq!(Store::open(&copy).unwrap().read().unwrap(), fixture);
        assert_eq!(Store::load(&copy).unwrap(), fixture);
    }

    #[test]
    fn open_refuses_missing_and_foreign_files() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.sqlite");
        let e = Store::open(&missing).unwrap_err();
        assert!(e.is_bad_input(), "{e:?}");
        let e = e.to_string();
        assert!(e.contains(&missing.display().to_string()), "{e}");
        assert!(!missing.exists(), "open must not create the file");
        assert!(Store::load(&missing).is_err());

        let text = dir.path().join("notes.txt");
        std::fs::write(
            &text,
            "not a database, but long enough to be read as one...",
        )
        .unwrap();
        let e = Store::open(&text).unwrap_err().to_string();
        assert!(e.contains(&text.display().to_string()), "{e}");

        // A SQLite database that is not a store.
        let other = dir.path().join("other.sqlite");
        Connection::open(&other)
            .unwrap()
            .execute_batch("CREATE TABLE t (x)")
            .unwrap();
        let bytes = std::fs::read(&other).unwrap();
        for e in [
            Store::open(&other).unwrap_err(),
            Store::load(&other).unwrap_err(),
        ] {
            assert!(e.to_string().contains("store version 0"), "{e}");
        }
        // Neither created tables in it.
        assert_eq!(std::fs::read(&other).unwrap(), bytes);
    }

    #[test]
    fn create_refuses_existing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(DB_FILE);
        let mut store = Store::create(&path).unwrap();
        let fixture = fixture::results();
        store.save_header(&fixture).unwrap();
        store.save_run(&fixture.runs[0]).unwrap();
        drop(store);
        let e = Store::create(&path).unwrap_err();
        assert!(!e.is_bad_input(), "{e:?}");
        let e = e.to_string();
        assert!(e.contains(&path.display().to_string()), "{e}");
        assert!(e.contains("already exists"), "{e}");
        // The existing store is untouched.
        assert_eq!(Store::load(&path).unwrap().runs, fixture.runs[..1]);

        let other = dir.path().join("x.sqlite");
        std::fs::write(&other, "keep me").unwrap();
        assert!(Store::create(&other).is_err());
        assert_eq!(std::fs::read_to_string(&other).unwrap(), "keep me");
    }

    #[test]
    fn version_is_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(DB_FILE);
        let store = Store::create(&path).unwrap();
        let uv: i64 = store
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(uv, STORE_VERSION);
        let meta = |k: &str| -> String {
            store
                .conn
                .query_row("SELECT value FROM meta WHERE key = ?1", [k], |r| r.get(0))
                .unwrap()
        };
        assert_eq!(meta("store_version"), STORE_VERSION.to_string());
        assert_eq!(meta("results_schema_version"), SCHEMA_VERSION.to_string());
        // Loading before any header is a clear error.
        let e = Store::load(&path).unwrap_err();
        assert!(e.to_string().contains("no experiment row"), "{e}");
    }

    #[test]
    fn sql_queries_on_the_fixture() {
        let dir = tempfile::tempdir().unwrap();
        let fixture = fixture::results();
        let (store, _path) = saved(dir.path(), &fixture);
        // Mean tps per isolation level, by SQL and from the fixture.
        let by_sql: Vec<(String, f64, i64)> = store
            .conn
            .prepare(
                "SELECT c.isolation, avg(r.tps), count(*)
                   FROM runs r JOIN cells c ON c.id = r.cell_id
                  GROUP BY c.isolation ORDER BY c.isolation",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        let mut expected: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        for run in &fixture.runs {
            expected
                .entry(run.cell.isolation.name())
                .or_default()
                .push(run.tps);
        }
        assert_eq!(by_sql.len(), expected.len());
        for ((iso, avg, n), (want_iso, tps)) in by_sql.iter().zip(&expected) {
            assert_eq!(iso, want_iso);
            assert_eq!(*n as usize, tps.len());
            let want = tps.iter().sum::<f64>() / tps.len() as f64;
            assert!((avg - want).abs() < 1e-9, "{iso}: {avg} vs {want}");
        }
        assert_eq!(by_sql[0].0, "read-committed");
        assert!((by_sql[0].1 - 100.0).abs() < 1e-9);
        // The module docs' example.
        let example: Vec<(String, i64, f64, f64)> = store
            .conn
            .prepare(
                "SELECT c.isolation, count(*) AS runs, avg(r.tps) AS tps,
                        avg(r.latency_p99_ms) AS p99_ms
                   FROM runs r JOIN cells c ON c.id = r.cell_id
                  WHERE r.complete GROUP BY c.isolation",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        // Run 5 (serializable) is incomplete.
        assert_eq!(example[1].0, "serializable");
        assert_eq!(example[1].1, 2);
        assert!((example[1].2 - 150.0).abs() < 1e-9, "{example:?}");
        assert!(
            (example[1].3 - (12.5 + 13.1) / 2.0).abs() < 1e-9,
            "{example:?}"
        );

        // Serialization failures of SERIALIZABLE runs, and the long form of
        // pg_stat_database through the view.
        let ser_40001: i64 = store
            .conn
            .query_row(
                "SELECT sum(f.count) FROM run_failures f
                   JOIN runs r USING (run) JOIN cells c ON c.id = r.cell_id
                  WHERE c.isolation = 'serializable' AND f.tx_type IS NULL
                    AND f.sqlstate = '40001'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(ser_40001, 30 + 34 + 5);
        let commits: i64 = store
            .conn
            .query_row(
                "SELECT sum(delta) FROM stat_samples WHERE run = 2 AND counter = 'xact_commit'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let want: i64 = fixture.runs[1]
            .server
            .stat_database
            .iter()
            .map(|s| s.delta["xact_commit"])
            .sum();
        assert_eq!(commits, want);
    }

    #[test]
    fn save_run_is_fast() {
        let dir = tempfile::tempdir().unwrap();
        let v = variant();
        let path = dir.path().join(DB_FILE);
        let mut store = Store::create(&path).unwrap();
        store.save_header(&v).unwrap();
        let mut run = v.runs[0].clone();
        assert_eq!(run.per_second.len(), 600);
        let n = 20;
        let start = std::time::Instant::now();
        for i in 1..=n {
            run.index = i;
            store.save_run(&run).unwrap();
        }
        let each = start.elapsed() / n;
        eprintln!("save_run: {each:?} per run of 600 points and 361 stat counters");
        // About 5 ms in a debug build on the 2-core development machine,
        // where committing each per-second row on its own takes ~300 ms.
        assert!(each < Duration::from_millis(100), "{each:?}");
    }

    #[test]
    fn failed_save_run_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let v = variant();
        let (mut store, path) = saved(dir.path(), &v);
        let before = rows_of_run(&store.conn, 1);
        // A counter SQLite cannot hold, late in the run's rows.
        let mut bad = v.runs[0].clone();
        bad.per_second[599].committed = u64::MAX;
        bad.cell.clients = 99;
        let e = store.save_run(&bad).unwrap_err();
        assert!(!e.is_bad_input(), "{e:?}");
        let e = e.to_string();
        assert!(
            e.starts_with(&format!("{}: saving run 1: per_second", path.display())),
            "{e}"
        );
        assert_eq!(rows_of_run(&store.conn, 1), before);
        assert_eq!(count(&store.conn, "cells"), 3);
        assert_eq!(Store::load(&path).unwrap(), v);
        // The store is still usable.
        store.save_run(&v.runs[0]).unwrap();
    }
}
