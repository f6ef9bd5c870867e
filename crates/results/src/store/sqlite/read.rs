//! Reading: the experiment and its runs loaded back from the tables into
//! [`Results`] (the inverse of `write`, column for column; NULLs of
//! non-optional `f64`s become NaN, see the parent module's docs).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Display;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Row};

use super::{Context, Error, R, children, from_name};
use crate::model::{
    ConnectionLoss, CountStat, FaultKind, HostCpu, InjectedFault, InvariantResult, Isolation,
    LatencySummary, Lifetime, LoadFigures, LoadReport, Order, Plan, PlanChange, RunFaults,
    SecondPoint, ServerObservations, SireadLocks, StatInterval, WaitEvents,
};
use crate::store::{
    Cell, CommandRecord, Environment, FailureReasonRecord, LoadRecord, Rate, Results, RunRecord,
    StoredConfig, TxTypeRecord, WaitSummary,
};

/// A non-optional `f64` column: NULL (a stored NaN) reads as NaN.
fn real(row: &Row, col: &str) -> rusqlite::Result<f64> {
    Ok(row.get::<_, Option<f64>>(col)?.unwrap_or(f64::NAN))
}

fn parse<T: std::str::FromStr>(s: &str, what: &str) -> R<T>
where
    T::Err: Display,
{
    s.parse()
        .map_err(|e| Error(format!("{what}: malformed value '{s}': {e}")))
}

pub(super) fn read_results(conn: &Connection) -> R<Results> {
    let exp = conn
        .query_row("SELECT * FROM experiment WHERE id = 1", [], |row| {
            Ok((
                row.get::<_, u32>("schema_version")?,
                row.get::<_, String>("isobench_version")?,
                row.get::<_, String>("started_at")?,
                row.get::<_, Option<String>>("finished_at")?,
                row.get::<_, bool>("complete")?,
                row.get::<_, String>("config_json")?,
                ConfigColumns::read(row)?,
            ))
        })
        .optional()
        .context("experiment")?;
    let Some((schema_version, isobench_version, started_at, finished_at, complete, json, cols)) =
        exp
    else {
        return Err(Error(
            "no experiment row: the experiment's header was never saved".into(),
        ));
    };
    let mut config = config_from_json(&json).context("experiment.config_json")?;
    cols.apply(&mut config)?;
    config.rate = conn
        .prepare("SELECT rate FROM config_rates ORDER BY ordinal")?
        .query_map([], |r| real(r, "rate"))?
        .collect::<rusqlite::Result<_>>()
        .context("config_rates")?;

    let env: BTreeMap<String, String> = conn
        .prepare("SELECT key, value FROM environment")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()
        .context("environment")?;
    let get = |k: &str| {
        env.get(k)
            .ok_or_else(|| Error(format!("environment: no '{k}' row")))
    };
    let environment = Environment {
        host: get("host")?.clone(),
        os: get("os")?.clone(),
        cpus: parse(get("cpus")?, "environment.cpus")?,
        server_version: get("server_version")?.clone(),
        server_version_num: parse(get("server_version_num")?, "environment.server_version_num")?,
        server_settings: conn
            .prepare("SELECT name, value FROM server_settings")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()
            .context("server_settings")?,
    };
    let load = conn
        .prepare("SELECT data, load_ns, rows FROM load ORDER BY ordinal")?
        .query_map([], |r| {
            Ok(LoadReport {
                data: r.get(0)?,
                elapsed: Duration::from_nanos(r.get(1)?),
                rows: r.get(2)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()
        .context("load")?;

    let mut cells: HashMap<i64, Cell> = HashMap::new();
    {
        let mut st = conn.prepare(
            "SELECT c.*, f.plan AS fault_plan, w.factor AS work_factor,
                    p.pooler AS pooler, p.pool_size AS pooler_size
               FROM cells c LEFT JOIN cell_fault_plans f ON f.cell = c.id
                 LEFT JOIN cell_work_factors w ON w.cell = c.id
                 LEFT JOIN cell_poolers p ON p.cell = c.id",
        )?;
        let mut rows = st.query([])?;
        while let Some(row) = rows.next()? {
            let id: i64 = row.get("id")?;
            cells.insert(id, read_cell(row).context(format_args!("cells id {id}"))?);
        }
    }
    let mut runs = Vec::new();
    {
        let mut st = conn.prepare("SELECT * FROM runs ORDER BY run")?;
        let mut rows = st.query([])?;
        while let Some(row) = rows.next()? {
            let index: u32 = row.get("run")?;
            let run = read_run(conn, row, &cells).context(format_args!("run {index}"))?;
            runs.push(run);
        }
    }
    Ok(Results {
        schema_version,
        isobench_version,
        started_at,
        finished_at,
        complete,
        config,
        environment,
        load,
        runs,
    })
}

/// Parses `config_json`. serde_json writes a non-finite `f64` as null,
/// which it cannot read back into an `f64`: the fields read from columns
/// are set to 0 first (and then replaced by [`ConfigColumns::apply`] and
/// `config_rates`).
fn config_from_json(json: &str) -> R<StoredConfig> {
    let mut value: serde_json::Value = serde_json::from_str(json)?;
    if let Some(obj) = value.as_object_mut() {
        for k in ["duration_s", "warmup_s", "sample_interval_s"] {
            if obj.get(k).is_some_and(serde_json::Value::is_null) {
                obj.insert(k.into(), 0.into());
            }
        }
        obj.insert("rate".into(), serde_json::Value::Array(Vec::new()));
    }
    Ok(serde_json::from_value(value)?)
}

/// The configuration's fields that have `experiment` columns.
struct ConfigColumns {
    workload: String,
    repeat: u32,
    duration_s: f64,
    warmup_s: f64,
    sample_interval_s: f64,
    latency_limit_ms: Option<f64>,
    threads: Option<usize>,
    retry_max_tries: u32,
    seed: String,
    target: String,
    run_order: String,
    baseline: Option<String>,
    file: Option<String>,
}

impl ConfigColumns {
    fn read(row: &Row) -> rusqlite::Result<ConfigColumns> {
        Ok(ConfigColumns {
            workload: row.get("workload")?,
            repeat: row.get("repeat")?,
            duration_s: real(row, "duration_s")?,
            warmup_s: real(row, "warmup_s")?,
            sample_interval_s: real(row, "sample_interval_s")?,
            latency_limit_ms: row.get("latency_limit_ms")?,
            threads: row.get("threads")?,
            retry_max_tries: row.get("retry_max_tries")?,
            seed: row.get("seed")?,
            target: row.get("target")?,
            run_order: row.get("run_order")?,
            baseline: row.get("baseline")?,
            file: row.get("file")?,
        })
    }

    /// The columns override `config_json` (exact `f64`s).
    fn apply(self, c: &mut StoredConfig) -> R<()> {
        c.workload = self.workload;
        c.repeat = self.repeat;
        c.duration_s = self.duration_s;
        c.warmup_s = self.warmup_s;
        c.sample_interval_s = self.sample_interval_s;
        c.latency_limit_ms = self.latency_limit_ms;
        c.threads = self.threads;
        c.retry.max_tries = self.retry_max_tries;
        c.seed = parse(&self.seed, "experiment.seed")?;
        c.target = self.target;
        c.order = from_name::<Order>(&self.run_order).context("experiment.run_order")?;
        c.baseline = self.baseline;
        c.file = self.file;
        Ok(())
    }
}

fn read_cell(row: &Row) -> R<Cell> {
    let isolation: String = row.get("isolation")?;
    Ok(Cell {
        workload: row.get("workload")?,
        isolation: from_name::<Isolation>(&isolation).context("isolation")?,
        strategy: row.get("strategy")?,
        params: serde_json::from_str(&row.get::<_, String>("params_json")?)
            .context("params_json")?,
        clients: row.get("clients")?,
        scale: row.get("scale")?,
        pool_size: row.get("pool_size")?,
        rate: row.get::<_, Option<f64>>("rate")?.map(Rate),
        max_tries: row.get("max_tries")?,
        settings: serde_json::from_str(&row.get::<_, String>("settings_json")?)
            .context("settings_json")?,
        pg_bin: row.get("pg_bin")?,
        fault_plan: row.get("fault_plan")?,
        work_factor: row.get("work_factor")?,
        pooler: row
            .get::<_, Option<String>>("pooler")?
            .map(|p| p.parse().map_err(|e: String| Error(format!("pooler: {e}"))))
            .transpose()?,
        pooler_size: row.get("pooler_size")?,
    })
}

fn latency(row: &Row) -> rusqlite::Result<LatencySummary> {
    Ok(LatencySummary {
        mean: real(row, "latency_mean_ms")?,
        p50: real(row, "latency_p50_ms")?,
        p90: real(row, "latency_p90_ms")?,
        p95: real(row, "latency_p95_ms")?,
        p99: real(row, "latency_p99_ms")?,
        p999: real(row, "latency_p999_ms")?,
        max: real(row, "latency_max_ms")?,
    })
}

fn wait_summary(row: &Row, prefix: &str) -> rusqlite::Result<Option<WaitSummary>> {
    let Some(count) = row.get::<_, Option<u64>>(format!("{prefix}_count").as_str())? else {
        return Ok(None);
    };
    Ok(Some(WaitSummary {
        count,
        mean: real(row, &format!("{prefix}_mean_ms"))?,
        p50: real(row, &format!("{prefix}_p50_ms"))?,
        p99: real(row, &format!("{prefix}_p99_ms"))?,
        max: real(row, &format!("{prefix}_max_ms"))?,
    }))
}

fn read_run(conn: &Connection, row: &Row, cells: &HashMap<i64, Cell>) -> R<RunRecord> {
    let run: u32 = row.get("run")?;
    let cell_id: i64 = row.get("cell_id")?;
    let cell = cells
        .get(&cell_id)
        .ok_or_else(|| Error(format!("no cell with id {cell_id}")))?
        .clone();

    let (failed, failed_by_type) = read_failures(conn, run)?;
    let (transactions, latency_histogram) = read_tx_types(conn, run)?;
    let per_second = read_per_second(conn, run)?;

    let server = read_server(conn, run, row)?;
    let invariants = read_invariants(conn, run)?;
    let server_settings = children(
        conn,
        "run_server_settings",
        "SELECT name, value FROM run_server_settings WHERE run = ?1",
        run,
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?
    .into_iter()
    .collect();

    let seed: String = row.get("seed")?;
    let (window_start, shard_clients) = conn
        .prepare_cached("SELECT window_start, shard_clients FROM run_windows WHERE run = ?1")?
        .query_row([run], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?
        .unwrap_or((None, None));
    let mut record = RunRecord {
        index: run,
        cell,
        repetition: row.get("repetition")?,
        seed: parse(&seed, "runs.seed")?,
        started_at: row.get("started_at")?,
        complete: row.get("complete")?,
        duration_s: real(row, "duration_s")?,
        committed: row.get("committed")?,
        tps: real(row, "tps")?,
        effective_tps: None,
        tpmc: None,
        attempts: row.get("attempts")?,
        retries: row.get("retries")?,
        failed,
        failed_by_type,
        unknown_outcome: row.get("unknown_outcome")?,
        user_aborts: row.get("user_aborts")?,
        failure_pct: real(row, "failure_pct")?,
        retries_per_commit: real(row, "retries_per_commit")?,
        wasted_ms: real(row, "wasted_ms")?,
        wasted_attempts: row.get("wasted_attempts")?,
        abort_ratio: real(row, "abort_ratio")?,
        wasted_time_pct: real(row, "wasted_time_pct")?,
        transactions,
        latency_ms: latency(row)?,
        latency_histogram,
        per_second,
        client_cpu_s: real(row, "client_cpu_s")?,
        client_cpu_us_per_tx: real(row, "client_cpu_us_per_tx")?,
        host_cpu: read_host_cpu(conn, run)?,
        lifetime: Lifetime {
            committed: row.get("lifetime_committed")?,
            unknown_outcome: row.get("lifetime_unknown")?,
        },
        reset_ms: real(row, "reset_ms")?,
        server,
        invariants,
        anomalies: row.get("anomalies")?,
        errors: messages(conn, "run_errors", run)?,
        pool_wait_ms: wait_summary(row, "pool_wait")?,
        schedule_lag_ms: wait_summary(row, "schedule_lag")?,
        skipped: row.get("skipped")?,
        late: row.get("late")?,
        server_version: row.get("server_version")?,
        server_settings,
        load: read_external_load(conn, run)?,
        faults: read_faults(conn, run)?,
        window_start,
        shard_clients,
        hosts: read_hosts(conn, run)?,
    };
    // Not stored: it follows from the history check's lost commits.
    record.effective_tps =
        crate::model::effective_tps(record.tps, &record.lifetime, &record.invariants);
    record.tpmc = crate::model::tpmc(&record.transactions, record.duration_s);
    Ok(record)
}

/// `per_second`: the run's time series, one point a second.
fn read_per_second(conn: &Connection, run: u32) -> R<Vec<SecondPoint>> {
    children(
        conn,
        "per_second",
        "SELECT p.*, l.lag_ms FROM per_second p LEFT JOIN per_second_lag l USING (run, ordinal)
      WHERE p.run = ?1 ORDER BY p.ordinal",
        run,
        |r| {
            Ok(SecondPoint {
                t_s: real(r, "t_s")?,
                committed: r.get("committed")?,
                tps: real(r, "tps")?,
                p99_ms: real(r, "p99_ms")?,
                failed: r.get("failed")?,
                lag_ms: r.get("lag_ms")?,
            })
        },
    )
}

/// `invariants`, with their lost commits and history checks, then the
/// declared checks.
fn read_invariants(conn: &Connection, run: u32) -> R<Vec<InvariantResult>> {
    let invariants = children(
        conn,
        "invariants",
        "SELECT i.name, i.ok, i.violations, i.detail, l.lost, h.checked, h.cycles_json, s.json
           FROM invariants i
           LEFT JOIN lost_commits l ON l.run = i.run AND l.ordinal = i.ordinal
           LEFT JOIN history_checks h ON h.run = i.run AND h.ordinal = i.ordinal
           LEFT JOIN staleness s ON s.run = i.run AND s.ordinal = i.ordinal
          WHERE i.run = ?1 ORDER BY i.ordinal",
        run,
        |r| {
            let cycles: Option<String> = r.get(6)?;
            let cycles = match cycles {
                Some(json) => serde_json::from_str(&json).map_err(|e| {
                    rusqlite::Error::FromSqlConversionFailure(
                        6,
                        rusqlite::types::Type::Text,
                        e.into(),
                    )
                })?,
                None => Vec::new(),
            };
            let staleness: Option<String> = r.get(7)?;
            let staleness = match staleness {
                Some(json) => Some(serde_json::from_str(&json).map_err(|e| {
                    rusqlite::Error::FromSqlConversionFailure(
                        7,
                        rusqlite::types::Type::Text,
                        e.into(),
                    )
                })?),
                None => None,
            };
            Ok(InvariantResult {
                name: r.get(0)?,
                ok: r.get(1)?,
                violations: r.get(2)?,
                detail: r.get(3)?,
                lost_commits: r.get(4)?,
                declared: false,
                rows: None,
                during: None,
                checked: r.get(5)?,
                cycles,
                staleness,
            })
        },
    )?;
    super::checks::read_declared(conn, run, invariants)
}

/// `host_cpu`: the load host's CPU over the run, if sampled.
fn read_host_cpu(conn: &Connection, run: u32) -> R<Option<HostCpu>> {
    Ok(children(
        conn,
        "host_cpu",
        "SELECT busy_pct, steal_pct, cpus FROM host_cpu WHERE run = ?1",
        run,
        |r| {
            Ok(HostCpu {
                busy_pct: r.get(0)?,
                steal_pct: r.get(1)?,
                cpus: r.get(2)?,
            })
        },
    )?
    .pop())
}

/// `run_hosts`: each load host's share of a sharded run.
fn read_hosts(conn: &Connection, run: u32) -> R<Vec<crate::model::HostRecord>> {
    children(
        conn,
        "run_hosts",
        "SELECT host, clients, refused, committed, failed, tps, p50_ms, p99_ms,
                latency_histogram
           FROM run_hosts WHERE run = ?1 ORDER BY ordinal",
        run,
        |r| {
            let real = |i| r.get::<_, Option<f64>>(i).map(|v| v.unwrap_or(f64::NAN));
            Ok(crate::model::HostRecord {
                host: r.get(0)?,
                clients: r.get(1)?,
                refused: r.get(2)?,
                committed: r.get(3)?,
                failed: r.get(4)?,
                tps: real(5)?,
                p50_ms: real(6)?,
                p99_ms: real(7)?,
                latency_histogram: r.get(8)?,
            })
        },
    )
}

/// Failure counts by SQLSTATE.
type Failures = BTreeMap<String, u64>;

/// `run_failures`: the run's failures in total and by transaction type.
fn read_failures(conn: &Connection, run: u32) -> R<(Failures, BTreeMap<String, Failures>)> {
    let mut failed = BTreeMap::new();
    let mut failed_by_type: BTreeMap<String, Failures> = BTreeMap::new();
    for (ty, code, n) in children(
        conn,
        "run_failures",
        "SELECT tx_type, sqlstate, count FROM run_failures WHERE run = ?1",
        run,
        |r| {
            Ok((
                r.get::<_, Option<String>>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, u64>(2)?,
            ))
        },
    )? {
        match ty {
            None => failed.insert(code, n),
            Some(ty) => failed_by_type.entry(ty).or_default().insert(code, n),
        };
    }
    Ok((failed, failed_by_type))
}

/// `tx_types` with their failures, commands, failure reasons and
/// histograms, and the run's own latency histogram.
fn read_tx_types(conn: &Connection, run: u32) -> R<(Vec<TxTypeRecord>, String)> {
    let mut histograms: BTreeMap<Option<usize>, String> = children(
        conn,
        "histograms",
        "SELECT tx_type, data FROM histograms WHERE run = ?1 AND kind = 'latency'",
        run,
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?
    .into_iter()
    .collect();
    let mut tx_failures: BTreeMap<usize, BTreeMap<String, u64>> = BTreeMap::new();
    for (i, code, n) in children(
        conn,
        "tx_type_failures",
        "SELECT ordinal, sqlstate, count FROM tx_type_failures WHERE run = ?1",
        run,
        |r| Ok((r.get::<_, usize>(0)?, r.get::<_, String>(1)?, r.get(2)?)),
    )? {
        tx_failures.entry(i).or_default().insert(code, n);
    }
    let mut tx_commands: BTreeMap<usize, Vec<CommandRecord>> = BTreeMap::new();
    for (i, c) in children(
        conn,
        "tx_type_commands",
        "SELECT ordinal, command, executions, mean_ms, failures FROM tx_type_commands
         WHERE run = ?1 ORDER BY ordinal, step",
        run,
        |r| {
            Ok((
                r.get::<_, usize>(0)?,
                CommandRecord {
                    command: r.get(1)?,
                    executions: r.get(2)?,
                    mean_ms: r.get(3)?,
                    failures: r.get(4)?,
                },
            ))
        },
    )? {
        tx_commands.entry(i).or_default().push(c);
    }
    let mut tx_reasons: BTreeMap<usize, Vec<FailureReasonRecord>> = BTreeMap::new();
    for (i, f) in children(
        conn,
        "tx_type_failure_reasons",
        "SELECT ordinal, sqlstate, reason, statement, attempts, failed
           FROM tx_type_failure_reasons WHERE run = ?1 ORDER BY ordinal, seq",
        run,
        |r| {
            Ok((
                r.get::<_, usize>(0)?,
                FailureReasonRecord {
                    sqlstate: r.get(1)?,
                    reason: r.get(2)?,
                    statement: r.get(3)?,
                    attempts: r.get(4)?,
                    failed: r.get(5)?,
                },
            ))
        },
    )? {
        tx_reasons.entry(i).or_default().push(f);
    }
    let transactions = children(
        conn,
        "tx_types",
        "SELECT * FROM tx_types WHERE run = ?1 ORDER BY ordinal",
        run,
        |r| {
            Ok((
                r.get::<_, usize>("ordinal")?,
                TxTypeRecord {
                    name: r.get("name")?,
                    committed: r.get("committed")?,
                    user_aborts: r.get("user_aborts")?,
                    attempts: r.get("attempts")?,
                    failed: BTreeMap::new(),
                    unknown_outcome: r.get("unknown_outcome")?,
                    wasted_ms: real(r, "wasted_ms")?,
                    latency_ms: latency(r)?,
                    latency_histogram: String::new(),
                    commands: Vec::new(),
                    failure_reasons: Vec::new(),
                },
            ))
        },
    )?
    .into_iter()
    .map(|(i, mut t)| {
        t.failed = tx_failures.remove(&i).unwrap_or_default();
        t.commands = tx_commands.remove(&i).unwrap_or_default();
        t.failure_reasons = tx_reasons.remove(&i).unwrap_or_default();
        t.latency_histogram = histograms
            .remove(&Some(i))
            .ok_or_else(|| Error(format!("histograms: none for transaction type {i}")))?;
        Ok(t)
    })
    .collect::<R<Vec<_>>>()?;
    let latency_histogram = histograms
        .remove(&None)
        .ok_or_else(|| Error("histograms: none for the run".into()))?;
    Ok((transactions, latency_histogram))
}

/// The server observations of run `run` (`row`: its `runs` row).
fn read_server(conn: &Connection, run: u32, row: &Row) -> R<ServerObservations> {
    let stat_database = read_stat_database(conn, run)?;
    let wait_events = WaitEvents {
        samples: row.get("wait_samples")?,
        counts: children(
            conn,
            "wait_events",
            "SELECT event, count FROM wait_events WHERE run = ?1",
            run,
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?
        .into_iter()
        .collect(),
    };
    let mut siread_locks = SireadLocks {
        samples: row.get("siread_samples")?,
        ..SireadLocks::default()
    };
    for (kind, name, stat) in children(
        conn,
        "siread_locks",
        "SELECT kind, name, mean, max FROM siread_locks WHERE run = ?1",
        run,
        |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                CountStat {
                    mean: real(r, "mean")?,
                    max: r.get(3)?,
                },
            ))
        },
    )? {
        match kind.as_str() {
            "granularity" => siread_locks.by_granularity.insert(name, stat),
            "relation" => siread_locks.by_relation.insert(name, stat),
            other => return Err(Error(format!("siread_locks: unknown kind '{other}'"))),
        };
    }
    let plans = children(
        conn,
        "plans",
        "SELECT label, sql, plan FROM plans WHERE run = ?1 ORDER BY ordinal",
        run,
        |r| {
            Ok(Plan {
                label: r.get(0)?,
                sql: r.get(1)?,
                plan: r.get(2)?,
            })
        },
    )?;
    let plan_changes = children(
        conn,
        "plan_changes",
        "SELECT label, sql, start_plan, end_plan FROM plan_changes WHERE run = ?1 ORDER BY ordinal",
        run,
        |r| {
            Ok(PlanChange {
                label: r.get(0)?,
                sql: r.get(1)?,
                start: r.get(2)?,
                end: r.get(3)?,
            })
        },
    )?;
    Ok(ServerObservations {
        stat_database,
        wait_events,
        siread_locks,
        plans,
        plan_changes,
        errors: messages(conn, "server_errors", run)?,
        pooler: super::pooler::read_run_pooler(conn, run)?,
        standbys: super::cluster::read_run_standbys(conn, run)?,
    })
}

/// `stat_intervals` with their `stat_counters`.
fn read_stat_database(conn: &Connection, run: u32) -> R<Vec<StatInterval>> {
    let mut stat_database = children(
        conn,
        "stat_intervals",
        "SELECT t_s, duration_s FROM stat_intervals WHERE run = ?1 ORDER BY ordinal",
        run,
        |r| {
            Ok(StatInterval {
                t_s: real(r, "t_s")?,
                duration_s: real(r, "duration_s")?,
                delta: BTreeMap::new(),
                rate: BTreeMap::new(),
            })
        },
    )?;
    for (i, counter, delta, rate) in children(
        conn,
        "stat_counters",
        "SELECT ordinal, counter, delta, rate FROM stat_counters WHERE run = ?1",
        run,
        |r| {
            Ok((
                r.get::<_, usize>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<i64>>(2)?,
                r.get::<_, Option<f64>>(3)?,
            ))
        },
    )? {
        let s = stat_database
            .get_mut(i)
            .ok_or_else(|| Error(format!("stat_counters: no stat interval {i}")))?;
        if let Some(d) = delta {
            s.delta.insert(counter.clone(), d);
        }
        if let Some(r) = rate {
            s.rate.insert(counter, r);
        }
    }
    Ok(stat_database)
}

/// The messages of `table` (`run_errors`, `server_errors`) in order.
fn messages(conn: &Connection, table: &str, run: u32) -> R<Vec<String>> {
    children(
        conn,
        table,
        &format!("SELECT message FROM {table} WHERE run = ?1 ORDER BY ordinal"),
        run,
        |r| r.get(0),
    )
}

/// Run `run`'s external load, if it had one.
/// A run's faults (`run_faults`, `connection_losses`); `None` without a
/// `run_faults` row.
fn read_faults(conn: &Connection, run: u32) -> R<Option<RunFaults>> {
    let mut st = conn.prepare_cached(
        "SELECT cause, connections_lost, reconnects, outage_s, recovery_s, server_wait_s
           FROM run_faults WHERE run = ?1",
    )?;
    let Some(mut f) = st
        .query_row([run], |r| {
            Ok(RunFaults {
                cause: r.get(0)?,
                connections_lost: r.get(1)?,
                losses: Vec::new(),
                reconnects: r.get(2)?,
                outage_s: r.get(3)?,
                recovery_s: r.get(4)?,
                server_wait_s: r.get(5)?,
                injected: Vec::new(),
            })
        })
        .optional()?
    else {
        return Ok(None);
    };
    f.losses = children(
        conn,
        "connection_losses",
        "SELECT t_s, client, sqlstate FROM connection_losses WHERE run = ?1 ORDER BY seq",
        run,
        |r| {
            Ok(ConnectionLoss {
                t_s: r.get(0)?,
                client: r.get(1)?,
                sqlstate: r.get(2)?,
            })
        },
    )?;
    f.injected = children(
        conn,
        "injected_faults",
        "SELECT kind, t_s, detail FROM injected_faults WHERE run = ?1 ORDER BY seq",
        run,
        |r| {
            let kind: String = r.get(0)?;
            Ok(InjectedFault {
                kind: FaultKind::from_name(&kind).ok_or_else(|| {
                    rusqlite::Error::FromSqlConversionFailure(
                        0,
                        rusqlite::types::Type::Text,
                        format!("unknown fault kind '{kind}'").into(),
                    )
                })?,
                t_s: r.get(1)?,
                detail: r.get(2)?,
                failover: None,
            })
        },
    )?;
    super::cluster::read_failovers(conn, run, &mut f.injected)?;
    Ok(Some(f))
}

fn read_external_load(conn: &Connection, run: u32) -> R<Option<LoadRecord>> {
    let mut st = conn.prepare_cached("SELECT * FROM external_loads WHERE run = ?1")?;
    let row = st
        .query_row([run], |r| {
            let opt_real = |c: &str| r.get::<_, Option<f64>>(c);
            let opt_count = |c: &str| r.get::<_, Option<u64>>(c);
            let figures = if r.get::<_, bool>("parsed")? {
                Some(LoadFigures {
                    unit: r.get("unit")?,
                    throughput: r.get::<_, Option<f64>>("throughput")?.unwrap_or(f64::NAN),
                    count: r.get("count")?,
                    duration_s: opt_real("duration_s")?,
                    latency_mean_ms: opt_real("latency_mean_ms")?,
                    latency_stddev_ms: opt_real("latency_stddev_ms")?,
                    latency_p50_ms: opt_real("latency_p50_ms")?,
                    latency_p90_ms: opt_real("latency_p90_ms")?,
                    latency_p99_ms: opt_real("latency_p99_ms")?,
                    latency_max_ms: opt_real("latency_max_ms")?,
                    bytes_per_s: opt_real("bytes_per_s")?,
                    responses_2xx: opt_count("responses_2xx")?,
                    non_2xx: opt_count("non_2xx")?,
                    errors: opt_count("errors")?,
                    timeouts: opt_count("timeouts")?,
                    failed: opt_count("failed")?,
                    serialization_failures: opt_count("serialization_failures")?,
                    deadlock_failures: opt_count("deadlock_failures")?,
                    retried: opt_count("retried")?,
                    retries: opt_count("retries")?,
                    skipped: opt_count("skipped")?,
                })
            } else {
                None
            };
            Ok((
                r.get::<_, String>("command")?,
                r.get::<_, String>("format")?,
                r.get::<_, Option<i32>>("exit_code")?,
                real(r, "wall_s")?,
                opt_real("ready_s")?,
                r.get::<_, String>("output_dir")?,
                figures,
            ))
        })
        .optional()?;
    let Some((command, format, exit_code, wall_s, ready_s, output_dir, figures)) = row else {
        return Ok(None);
    };
    Ok(Some(LoadRecord {
        command,
        format: format.parse().map_err(Error)?,
        exit_code,
        wall_s,
        ready_s,
        output_dir,
        figures,
    }))
}
