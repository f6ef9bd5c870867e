//! The store's layout: the DDL of each store version and the migration
//! list that applies them (see the parent module's docs for the tables).
//! Kept apart from the code that reads and writes rows because it only
//! ever grows by appending a migration.

use rusqlite_migration::{M, Migrations};

/// Version of the store's table layout that this isobench writes: the
/// number of [`MIGRATIONS`] (`PRAGMA user_version` counts those applied).
pub const STORE_VERSION: i64 = MIGRATION_LIST.len() as i64;

/// The store's schema, one migration per store version, in order:
/// migration `n` takes a store from version `n - 1` to `n`
/// (rusqlite_migration keeps the version in `PRAGMA user_version`, as the
/// store always has). A schema change is a new migration appended here,
/// never an edit of an old one: stores written by older isobench versions
/// are upgraded by running the ones they lack.
const MIGRATION_LIST: &[M<'static>] = &[
    M::up(V1_TABLES),
    M::up(V2_EXTERNAL_LOADS),
    M::up(V3_TX_TYPE_COMMANDS),
    M::up(V4_WINDOW_OBSERVATIONS),
    M::up(V5_FAILURE_REASONS),
    M::up(V6_FAULTS),
    M::up(V7_INJECTED_FAULTS),
    M::up(V8_LOST_COMMITS),
    M::up(V9_FAULT_PLANS),
    M::up(V10_RUN_WINDOWS),
    M::up(V11_WORK_FACTORS),
    M::up(V12_RUN_HOSTS),
    M::up(V13_DECLARED_CHECKS),
    M::up(V14_POOLER),
    M::up(V15_HISTORY_CHECKS),
    M::up(V16_STANDBYS),
    M::up(V17_STALENESS),
    M::up(V18_SPLIT_BRAIN),
];

/// `MIGRATION_LIST` as rusqlite_migration runs it (each call applies the
/// pending ones in one transaction).
pub const MIGRATIONS: Migrations<'static> = Migrations::from_slice(MIGRATION_LIST);

/// Encoding of `histograms.data`: HdrHistogram V2 + DEFLATE, base64.
pub(super) const HISTOGRAM_ENCODING: &str = "hdr-v2-deflate-base64";

/// Store version 1, the first store: the tables of the module docs but
/// `external_loads` and `tx_type_commands`. Every table is STRICT, so a
/// value of the wrong type is an error rather than silently stored. (Each
/// migration also sets `store_version` in `meta` to its version.)
const V1_TABLES: &str = r#"
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;

CREATE TABLE experiment (
    id                INTEGER PRIMARY KEY CHECK (id = 1),
    schema_version    INTEGER NOT NULL,
    isobench_version  TEXT NOT NULL,
    started_at        TEXT NOT NULL,
    finished_at       TEXT,
    complete          INTEGER NOT NULL CHECK (complete IN (0, 1)),
    workload          TEXT NOT NULL,
    repeat            INTEGER NOT NULL,
    duration_s        REAL,
    warmup_s          REAL,
    sample_interval_s REAL,
    latency_limit_ms  REAL,
    threads           INTEGER,
    retry_max_tries   INTEGER NOT NULL,
    seed              TEXT NOT NULL,
    target            TEXT NOT NULL,
    run_order         TEXT NOT NULL,
    baseline          TEXT,
    file              TEXT,
    config_json       TEXT NOT NULL
) STRICT;

CREATE TABLE config_rates (
    ordinal INTEGER PRIMARY KEY,
    rate    REAL
) STRICT;

CREATE TABLE environment (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;

CREATE TABLE server_settings (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;

CREATE TABLE load (
    ordinal INTEGER PRIMARY KEY,
    data    TEXT NOT NULL,
    load_ms REAL NOT NULL,
    load_ns INTEGER NOT NULL,
    rows    INTEGER NOT NULL
) STRICT;

CREATE TABLE cells (
    id            INTEGER PRIMARY KEY,
    key           TEXT NOT NULL UNIQUE,
    label         TEXT NOT NULL,
    workload      TEXT NOT NULL,
    isolation     TEXT NOT NULL,
    strategy      TEXT NOT NULL,
    clients       INTEGER NOT NULL,
    scale         INTEGER,
    pool_size     INTEGER,
    rate          REAL,
    max_tries     INTEGER,
    pg_bin        TEXT,
    params_json   TEXT NOT NULL,
    settings_json TEXT NOT NULL
) STRICT;

CREATE TABLE runs (
    run                   INTEGER PRIMARY KEY,
    cell_id               INTEGER NOT NULL REFERENCES cells (id),
    repetition            INTEGER NOT NULL,
    seed                  TEXT NOT NULL,
    started_at            TEXT NOT NULL,
    complete              INTEGER NOT NULL CHECK (complete IN (0, 1)),
    duration_s            REAL,
    committed             INTEGER NOT NULL,
    tps                   REAL,
    attempts              INTEGER NOT NULL,
    retries               INTEGER NOT NULL,
    failed                INTEGER NOT NULL,
    unknown_outcome       INTEGER NOT NULL,
    user_aborts           INTEGER NOT NULL,
    failure_pct           REAL,
    retries_per_commit    REAL,
    wasted_ms             REAL,
    wasted_attempts       INTEGER NOT NULL,
    abort_ratio           REAL,
    wasted_time_pct       REAL,
    client_cpu_s          REAL,
    client_cpu_us_per_tx  REAL,
    lifetime_committed    INTEGER NOT NULL,
    lifetime_unknown      INTEGER NOT NULL,
    reset_ms              REAL,
    anomalies             INTEGER NOT NULL,
    skipped               INTEGER NOT NULL,
    late                  INTEGER NOT NULL,
    server_version        TEXT NOT NULL,
    latency_mean_ms       REAL,
    latency_p50_ms        REAL,
    latency_p90_ms        REAL,
    latency_p95_ms        REAL,
    latency_p99_ms        REAL,
    latency_p999_ms       REAL,
    latency_max_ms        REAL,
    pool_wait_count       INTEGER,
    pool_wait_mean_ms     REAL,
    pool_wait_p50_ms      REAL,
    pool_wait_p99_ms      REAL,
    pool_wait_max_ms      REAL,
    schedule_lag_count    INTEGER,
    schedule_lag_mean_ms  REAL,
    schedule_lag_p50_ms   REAL,
    schedule_lag_p99_ms   REAL,
    schedule_lag_max_ms   REAL,
    wait_samples          INTEGER NOT NULL,
    siread_samples        INTEGER NOT NULL
) STRICT;
CREATE INDEX runs_cell ON runs (cell_id);

CREATE TABLE run_failures (
    run      INTEGER NOT NULL REFERENCES runs (run) ON DELETE CASCADE,
    tx_type  TEXT,
    sqlstate TEXT NOT NULL,
    count    INTEGER NOT NULL
) STRICT;
CREATE UNIQUE INDEX run_failures_key ON run_failures (run, ifnull(tx_type, ''), tx_type IS NULL, sqlstate);

CREATE TABLE tx_types (
    run             INTEGER NOT NULL REFERENCES runs (run) ON DELETE CASCADE,
    ordinal         INTEGER NOT NULL,
    name            TEXT NOT NULL,
    committed       INTEGER NOT NULL,
    user_aborts     INTEGER NOT NULL,
    attempts        INTEGER NOT NULL,
    unknown_outcome INTEGER NOT NULL,
    wasted_ms       REAL,
    latency_mean_ms REAL,
    latency_p50_ms  REAL,
    latency_p90_ms  REAL,
    latency_p95_ms  REAL,
    latency_p99_ms  REAL,
    latency_p999_ms REAL,
    latency_max_ms  REAL,
    PRIMARY KEY (run, ordinal)
) STRICT;

CREATE TABLE tx_type_failures (
    run      INTEGER NOT NULL REFERENCES runs (run) ON DELETE CASCADE,
    ordinal  INTEGER NOT NULL,
    sqlstate TEXT NOT NULL,
    count    INTEGER NOT NULL,
    PRIMARY KEY (run, ordinal, sqlstate)
) STRICT;

CREATE TABLE histograms (
    run      INTEGER NOT NULL REFERENCES runs (run) ON DELETE CASCADE,
    tx_type  INTEGER,
    kind     TEXT NOT NULL,
    unit     TEXT NOT NULL,
    encoding TEXT NOT NULL,
    data     TEXT NOT NULL
) STRICT;
CREATE UNIQUE INDEX histograms_key ON histograms (run, ifnull(tx_type, -1), kind);

CREATE TABLE per_second (
    run       INTEGER NOT NULL REFERENCES runs (run) ON DELETE CASCADE,
    ordinal   INTEGER NOT NULL,
    t_s       REAL,
    committed INTEGER NOT NULL,
    tps       REAL,
    p99_ms    REAL,
    failed    INTEGER NOT NULL,
    PRIMARY KEY (run, ordinal)
) STRICT;

CREATE TABLE stat_intervals (
    run        INTEGER NOT NULL REFERENCES runs (run) ON DELETE CASCADE,
    ordinal    INTEGER NOT NULL,
    t_s        REAL,
    duration_s REAL,
    PRIMARY KEY (run, ordinal)
) STRICT;

CREATE TABLE stat_counters (
    run     INTEGER NOT NULL REFERENCES runs (run) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    counter TEXT NOT NULL,
    delta   INTEGER,
    rate    REAL,
    PRIMARY KEY (run, ordinal, counter)
) STRICT;

CREATE VIEW stat_samples AS
    SELECT i.run, i.ordinal, i.t_s, i.duration_s, c.counter, c.delta, c.rate
      FROM stat_intervals i JOIN stat_counters c USING (run, ordinal);

CREATE TABLE wait_events (
    run   INTEGER NOT NULL REFERENCES runs (run) ON DELETE CASCADE,
    event TEXT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (run, event)
) STRICT;

CREATE TABLE siread_locks (
    run  INTEGER NOT NULL REFERENCES runs (run) ON DELETE CASCADE,
    kind TEXT NOT NULL CHECK (kind IN ('granularity', 'relation')),
    name TEXT NOT NULL,
    mean REAL,
    max  INTEGER NOT NULL,
    PRIMARY KEY (run, kind, name)
) STRICT;

CREATE TABLE plans (
    run     INTEGER NOT NULL REFERENCES runs (run) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    label   TEXT NOT NULL,
    sql     TEXT NOT NULL,
    plan    TEXT NOT NULL,
    PRIMARY KEY (run, ordinal)
) STRICT;

CREATE TABLE invariants (
    run        INTEGER NOT NULL REFERENCES runs (run) ON DELETE CASCADE,
    ordinal    INTEGER NOT NULL,
    name       TEXT NOT NULL,
    ok         INTEGER NOT NULL CHECK (ok IN (0, 1)),
    violations INTEGER NOT NULL,
    detail     TEXT NOT NULL,
    PRIMARY KEY (run, ordinal)
) STRICT;

CREATE TABLE run_errors (
    run     INTEGER NOT NULL REFERENCES runs (run) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (run, ordinal)
) STRICT;

CREATE TABLE server_errors (
    run     INTEGER NOT NULL REFERENCES runs (run) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (run, ordinal)
) STRICT;

CREATE TABLE run_server_settings (
    run   INTEGER NOT NULL REFERENCES runs (run) ON DELETE CASCADE,
    name  TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (run, name)
) STRICT;

INSERT INTO meta (key, value) VALUES ('store_version', '1');
"#;

/// Store version 2: the figures of runs driven by an external load.
const V2_EXTERNAL_LOADS: &str = r#"
CREATE TABLE external_loads (
    run                    INTEGER PRIMARY KEY REFERENCES runs (run) ON DELETE CASCADE,
    command                TEXT NOT NULL,
    format                 TEXT NOT NULL,
    exit_code              INTEGER,
    wall_s                 REAL NOT NULL,
    ready_s                REAL,
    output_dir             TEXT NOT NULL,
    parsed                 INTEGER NOT NULL,
    unit                   TEXT,
    throughput             REAL,
    count                  INTEGER,
    duration_s             REAL,
    latency_mean_ms        REAL,
    latency_stddev_ms      REAL,
    latency_p50_ms         REAL,
    latency_p90_ms         REAL,
    latency_p99_ms         REAL,
    latency_max_ms         REAL,
    bytes_per_s            REAL,
    responses_2xx          INTEGER,
    non_2xx                INTEGER,
    errors                 INTEGER,
    timeouts               INTEGER,
    failed                 INTEGER,
    serialization_failures INTEGER,
    deadlock_failures      INTEGER,
    retried                INTEGER,
    retries                INTEGER,
    skipped                INTEGER
) STRICT;

INSERT OR REPLACE INTO meta (key, value) VALUES ('store_version', '2');
"#;

/// Store version 3: per-command latencies of transaction types (pgbench
/// scripts). The table was first added to version 2 stores without a
/// version bump (created whenever a store was opened for writing), so a
/// version 2 store may have it already: IF NOT EXISTS.
const V3_TX_TYPE_COMMANDS: &str = r#"
CREATE TABLE IF NOT EXISTS tx_type_commands (
    run        INTEGER NOT NULL REFERENCES runs (run) ON DELETE CASCADE,
    ordinal    INTEGER NOT NULL,
    step       INTEGER NOT NULL,
    command    TEXT NOT NULL,
    executions INTEGER NOT NULL,
    mean_ms    REAL NOT NULL,
    failures   INTEGER NOT NULL,
    PRIMARY KEY (run, ordinal, step)
) STRICT;

INSERT OR REPLACE INTO meta (key, value) VALUES ('store_version', '3');
"#;

/// Store version 4: what the measured window showed beyond the workload's
/// counts: the host's CPU use (`host_cpu`, one row per run that measured
/// it), plans that changed between the window's start and end
/// (`plan_changes`), and the open-loop schedule lag of each second
/// (`per_second_lag`, rows only for seconds with a lag). New tables only,
/// IF NOT EXISTS, as in versions 3 and 5, so that a store whose version
/// was set back by hand upgrades.
const V4_WINDOW_OBSERVATIONS: &str = r#"
CREATE TABLE IF NOT EXISTS host_cpu (
    run       INTEGER PRIMARY KEY REFERENCES runs (run) ON DELETE CASCADE,
    busy_pct  REAL NOT NULL,
    steal_pct REAL NOT NULL,
    cpus      INTEGER NOT NULL
) STRICT;

CREATE TABLE IF NOT EXISTS plan_changes (
    run        INTEGER NOT NULL REFERENCES runs (run) ON DELETE CASCADE,
    ordinal    INTEGER NOT NULL,
    label      TEXT NOT NULL,
    sql        TEXT NOT NULL,
    start_plan TEXT NOT NULL,
    end_plan   TEXT NOT NULL,
    PRIMARY KEY (run, ordinal)
) STRICT;

CREATE TABLE IF NOT EXISTS per_second_lag (
    run     INTEGER NOT NULL REFERENCES runs (run) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    lag_ms  REAL NOT NULL,
    PRIMARY KEY (run, ordinal)
) STRICT;

INSERT OR REPLACE INTO meta (key, value) VALUES ('store_version', '4');
"#;

/// Store version 5: failed attempts of transaction types by SQLSTATE,
/// reason and statement (`TxTypeRecord::failure_reasons`, in its order:
/// `seq`), and the view `run_failure_reasons` summing them per run. IF NOT
/// EXISTS, as in version 3, so that a store whose version was set back
/// by hand (tests that make an older store from a new one) upgrades.
const V5_FAILURE_REASONS: &str = r#"
CREATE TABLE IF NOT EXISTS tx_type_failure_reasons (
    run       INTEGER NOT NULL REFERENCES runs (run) ON DELETE CASCADE,
    ordinal   INTEGER NOT NULL,
    seq       INTEGER NOT NULL,
    sqlstate  TEXT NOT NULL,
    reason    TEXT,
    statement TEXT,
    attempts  INTEGER NOT NULL,
    failed    INTEGER NOT NULL,
    PRIMARY KEY (run, ordinal, seq)
) STRICT;

CREATE VIEW IF NOT EXISTS run_failure_reasons AS
    SELECT run, sqlstate, reason, sum(attempts) AS attempts, sum(failed) AS failed
      FROM tx_type_failure_reasons
     GROUP BY run, sqlstate, reason;

INSERT OR REPLACE INTO meta (key, value) VALUES ('store_version', '5');
"#;

/// Store version 6: the faults of a run (`RunRecord::faults`): one
/// `run_faults` row per faulted run (none for a run without faults) and
/// its connection losses in time order (`seq`).
const V6_FAULTS: &str = r#"
CREATE TABLE IF NOT EXISTS run_faults (
    run              INTEGER PRIMARY KEY REFERENCES runs (run) ON DELETE CASCADE,
    cause            TEXT,
    connections_lost INTEGER NOT NULL,
    reconnects       INTEGER NOT NULL,
    outage_s         REAL,
    recovery_s       REAL,
    server_wait_s    REAL
) STRICT;

CREATE TABLE IF NOT EXISTS connection_losses (
    run      INTEGER NOT NULL REFERENCES runs (run) ON DELETE CASCADE,
    seq      INTEGER NOT NULL,
    t_s      REAL NOT NULL,
    client   INTEGER NOT NULL,
    sqlstate TEXT NOT NULL,
    PRIMARY KEY (run, seq)
) STRICT;

INSERT OR REPLACE INTO meta (key, value) VALUES ('store_version', '6');
"#;

/// Store version 7: the faults isobench injected into a run (`--fault`,
/// `RunFaults::injected`), in time order (`seq`). A run with injected
/// faults always has its `run_faults` row.
const V7_INJECTED_FAULTS: &str = r#"
CREATE TABLE IF NOT EXISTS injected_faults (
    run    INTEGER NOT NULL REFERENCES runs (run) ON DELETE CASCADE,
    seq    INTEGER NOT NULL,
    kind   TEXT NOT NULL,
    t_s    REAL NOT NULL,
    detail TEXT NOT NULL,
    PRIMARY KEY (run, seq)
) STRICT;

INSERT OR REPLACE INTO meta (key, value) VALUES ('store_version', '7');
"#;

/// Store version 8: the acknowledged commits an invariant check found
/// missing from the database (`InvariantResult::lost_commits`): one row
/// per check that could tell (none for checks that cannot, or in runs
/// stored before). A table of its own rather than a column of
/// `invariants`, IF NOT EXISTS as in versions 3 to 7, so that a store
/// whose version was set back by hand upgrades.
const V8_LOST_COMMITS: &str = r#"
CREATE TABLE IF NOT EXISTS lost_commits (
    run     INTEGER NOT NULL REFERENCES runs (run) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    lost    INTEGER NOT NULL CHECK (lost >= 0),
    PRIMARY KEY (run, ordinal)
) STRICT;

INSERT OR REPLACE INTO meta (key, value) VALUES ('store_version', '8');
"#;

/// Store version 9: the fault as a factor: the fault plan of a cell
/// (`Cell::fault_plan`, e.g. `crash@2s` or `none`), one row per cell of a
/// study whose fault plan is a factor. IF NOT EXISTS, as in versions 3 to
/// 8.
const V9_FAULT_PLANS: &str = r#"
CREATE TABLE IF NOT EXISTS cell_fault_plans (
    cell INTEGER PRIMARY KEY REFERENCES cells (id) ON DELETE CASCADE,
    plan TEXT NOT NULL
) STRICT;

INSERT OR REPLACE INTO meta (key, value) VALUES ('store_version', '9');
"#;

/// Store version 10: when a run's measured window opened
/// (`RunRecord::window_start`, RFC 3339) and, in a sharded study, the
/// shard's clients (`RunRecord::shard_clients`): one row per run that has
/// either (none in runs stored before). IF NOT EXISTS, as in versions 3
/// to 9.
const V10_RUN_WINDOWS: &str = r#"
CREATE TABLE IF NOT EXISTS run_windows (
    run           INTEGER PRIMARY KEY REFERENCES runs (run) ON DELETE CASCADE,
    window_start  TEXT,
    shard_clients INTEGER CHECK (shard_clients >= 0)
) STRICT;

INSERT OR REPLACE INTO meta (key, value) VALUES ('store_version', '10');
"#;

/// Store version 11: the workload or the script as a factor: a cell's
/// factor name (`Cell::work_factor`: `workload` or `script`; the cell's
/// `workload` column holds its value), one row per cell of a study whose
/// workload or script is a factor. IF NOT EXISTS, as in versions 3 to 10.
const V11_WORK_FACTORS: &str = r#"
CREATE TABLE IF NOT EXISTS cell_work_factors (
    cell   INTEGER PRIMARY KEY REFERENCES cells (id) ON DELETE CASCADE,
    factor TEXT NOT NULL CHECK (factor IN ('workload', 'script'))
) STRICT;

INSERT OR REPLACE INTO meta (key, value) VALUES ('store_version', '11');
"#;

/// Store version 12: clients over a cluster (`--host-policy`): per host
/// of a DSN with several hosts (`RunRecord::hosts`), in the DSN's order
/// (`ordinal`), its connections, refusals, commits, failures, tps and
/// latency percentiles in the measured window, with the latencies'
/// histogram (encoded as `histograms.data`). No rows with one host, nor
/// in runs stored before. IF NOT EXISTS, as in versions 3 to 11.
const V12_RUN_HOSTS: &str = r#"
CREATE TABLE IF NOT EXISTS run_hosts (
    run               INTEGER NOT NULL REFERENCES runs (run) ON DELETE CASCADE,
    ordinal           INTEGER NOT NULL,
    host              TEXT NOT NULL,
    clients           INTEGER NOT NULL CHECK (clients >= 0),
    refused           INTEGER NOT NULL CHECK (refused >= 0),
    committed         INTEGER NOT NULL CHECK (committed >= 0),
    failed            INTEGER NOT NULL CHECK (failed >= 0),
    tps               REAL,
    p50_ms            REAL,
    p99_ms            REAL,
    latency_histogram TEXT NOT NULL,
    PRIMARY KEY (run, ordinal)
) STRICT;

INSERT OR REPLACE INTO meta (key, value) VALUES ('store_version', '12');
"#;

/// Store version 13: declared checks (`[[check]]`, `--check`,
/// `--check-file`): which invariants a study declared, with what their
/// samples during the run saw (`during`), and their violating rows (the
/// first 10 after the run, and those of the first sample that found
/// violations). A row's values are a JSON array of text (null for NULL),
/// as the check's query returned them; the column names a JSON array.
/// IF NOT EXISTS, as in versions 3 to 12.
const V13_DECLARED_CHECKS: &str = r#"
CREATE TABLE IF NOT EXISTS declared_checks (
    run                 INTEGER NOT NULL REFERENCES runs (run) ON DELETE CASCADE,
    ordinal             INTEGER NOT NULL,
    columns_json        TEXT,
    during_samples      INTEGER CHECK (during_samples >= 0),
    during_violated     INTEGER CHECK (during_violated >= 0),
    during_max          INTEGER CHECK (during_max >= 0),
    during_first_s      REAL,
    during_columns_json TEXT,
    PRIMARY KEY (run, ordinal)
) STRICT;

CREATE TABLE IF NOT EXISTS check_rows (
    run         INTEGER NOT NULL REFERENCES runs (run) ON DELETE CASCADE,
    ordinal     INTEGER NOT NULL,
    phase       TEXT NOT NULL CHECK (phase IN ('after', 'during')),
    seq         INTEGER NOT NULL,
    values_json TEXT NOT NULL,
    PRIMARY KEY (run, ordinal, phase, seq)
) STRICT;

INSERT OR REPLACE INTO meta (key, value) VALUES ('store_version', '13');
"#;

/// Store version 14: the connection pooler (`--pooler`): a cell's pooler
/// and pgbouncer pool size (`Cell::pooler`, `Cell::pooler_size`; one row
/// per cell that has a pooler, `pool_size` NULL for pgbouncer's default
/// and for `none`), and per run behind pgbouncer what its admin console
/// showed in the measured window (`ServerObservations::pooler`: `SHOW
/// POOLS` gauges as mean and max over the samples, `SHOW STATS` totals as
/// differences, times in ms). IF NOT EXISTS, as in versions 3 to 13.
const V14_POOLER: &str = r#"
CREATE TABLE IF NOT EXISTS cell_poolers (
    cell      INTEGER PRIMARY KEY REFERENCES cells (id) ON DELETE CASCADE,
    pooler    TEXT NOT NULL,
    pool_size INTEGER CHECK (pool_size > 0)
) STRICT;

CREATE TABLE IF NOT EXISTS run_pooler (
    run               INTEGER PRIMARY KEY REFERENCES runs (run) ON DELETE CASCADE,
    version           TEXT NOT NULL,
    pool_mode         TEXT NOT NULL,
    pool_size         INTEGER NOT NULL CHECK (pool_size >= 0),
    samples           INTEGER NOT NULL CHECK (samples >= 0),
    cl_waiting_mean   REAL,
    cl_waiting_max    INTEGER NOT NULL,
    cl_active_mean    REAL,
    cl_active_max     INTEGER NOT NULL,
    sv_active_mean    REAL,
    sv_active_max     INTEGER NOT NULL,
    sv_idle_mean      REAL,
    sv_idle_max       INTEGER NOT NULL,
    maxwait_ms        REAL,
    xacts             INTEGER NOT NULL CHECK (xacts >= 0),
    queries           INTEGER NOT NULL CHECK (queries >= 0),
    wait_ms           REAL,
    wait_per_xact_ms  REAL,
    wait_per_query_ms REAL,
    xact_time_ms      REAL,
    query_time_ms     REAL
) STRICT;

INSERT OR REPLACE INTO meta (key, value) VALUES ('store_version', '14');
"#;

/// Store version 15: what a history checker's class examined and showed
/// (`InvariantResult::checked`, `InvariantResult::cycles`): the committed
/// transactions it checked (the exposure of a violation rate) and its
/// example cycles as JSON (each edge with its kind and the operations that
/// prove it, and the cycle's evidence directory once written). One row per
/// invariant of a history check. IF NOT EXISTS, as in versions 3 to 14.
const V15_HISTORY_CHECKS: &str = r#"
CREATE TABLE IF NOT EXISTS history_checks (
    run         INTEGER NOT NULL REFERENCES runs (run) ON DELETE CASCADE,
    ordinal     INTEGER NOT NULL,
    checked     INTEGER NOT NULL CHECK (checked >= 0),
    cycles_json TEXT NOT NULL,
    PRIMARY KEY (run, ordinal)
) STRICT;

INSERT OR REPLACE INTO meta (key, value) VALUES ('store_version', '15');
"#;

/// Store version 16: a replicated server's standbys as the primary's
/// `pg_stat_replication` showed them while a run measured
/// (`ServerObservations::standbys`, issue #50): per standby its name
/// (`application_name`), the samples it was connected in, the
/// `sync_state` seen most often, and its write, flush and replay lag
/// (ms) and the WAL it had not applied (bytes), each as mean, max and the
/// samples that had a value (the lags are NULL on an idle primary); and
/// per injected failover (`InjectedFault::failover`, `--fault failover`)
/// the node killed, the node the manager promoted, when (s after the
/// kill), and the clients' write unavailability (s from the kill to their
/// first commit after it). IF NOT EXISTS, as in versions 3 to 15.
const V16_STANDBYS: &str = r#"
CREATE TABLE IF NOT EXISTS run_standbys (
    run                      INTEGER NOT NULL REFERENCES runs (run) ON DELETE CASCADE,
    ordinal                  INTEGER NOT NULL,
    name                     TEXT NOT NULL,
    samples                  INTEGER NOT NULL CHECK (samples >= 0),
    sync_state               TEXT NOT NULL,
    write_lag_mean_ms        REAL,
    write_lag_max_ms         REAL,
    write_lag_samples        INTEGER NOT NULL CHECK (write_lag_samples >= 0),
    flush_lag_mean_ms        REAL,
    flush_lag_max_ms         REAL,
    flush_lag_samples        INTEGER NOT NULL CHECK (flush_lag_samples >= 0),
    replay_lag_mean_ms       REAL,
    replay_lag_max_ms        REAL,
    replay_lag_samples       INTEGER NOT NULL CHECK (replay_lag_samples >= 0),
    replay_lag_mean_bytes    REAL,
    replay_lag_max_bytes     REAL,
    replay_lag_bytes_samples INTEGER NOT NULL CHECK (replay_lag_bytes_samples >= 0),
    PRIMARY KEY (run, ordinal)
) STRICT;

CREATE TABLE IF NOT EXISTS injected_failovers (
    run           INTEGER NOT NULL,
    seq           INTEGER NOT NULL,
    killed        TEXT NOT NULL,
    promoted      TEXT,
    promoted_s    REAL,
    unavailable_s REAL,
    PRIMARY KEY (run, seq),
    FOREIGN KEY (run, seq) REFERENCES injected_faults (run, seq) ON DELETE CASCADE
) STRICT;

INSERT OR REPLACE INTO meta (key, value) VALUES ('store_version', '16');
"#;

/// Store version 17: the staleness of a run's reads on standbys
/// (`InvariantResult::staleness`, `--read-from`, issue #50), as JSON
/// (`{"reads", "bytes": {p50, p90, p99, max}, "ms": {...}}`), for the
/// read-your-writes check that carries it. IF NOT EXISTS, as in versions
/// 3 to 16.
const V17_STALENESS: &str = r#"
CREATE TABLE IF NOT EXISTS staleness (
    run     INTEGER NOT NULL REFERENCES runs (run) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    json    TEXT NOT NULL,
    PRIMARY KEY (run, ordinal)
) STRICT;

INSERT OR REPLACE INTO meta (key, value) VALUES ('store_version', '17');
"#;

/// Store version 18: per injected failover, the writes two primaries
/// accepted (`FailoverOutcome::split_brain_writes`, issue #50), a row
/// when it was measured. IF NOT EXISTS, as in versions 3 to 17 (a table,
/// not a column, for that reason).
const V18_SPLIT_BRAIN: &str = r#"
CREATE TABLE IF NOT EXISTS failover_split_brain (
    run    INTEGER NOT NULL,
    seq    INTEGER NOT NULL,
    writes INTEGER NOT NULL CHECK (writes >= 0),
    PRIMARY KEY (run, seq),
    FOREIGN KEY (run, seq) REFERENCES injected_failovers (run, seq) ON DELETE CASCADE
) STRICT;

INSERT OR REPLACE INTO meta (key, value) VALUES ('store_version', '18');
"#;
