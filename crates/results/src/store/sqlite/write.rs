//! Writing: the experiment header ([`super::Store::save_header`]) and one
//! run with everything under it ([`super::Store::save_run`]), each inside
//! the transaction the caller opened.

use rusqlite::{Transaction, named_params, params};

use super::schema::HISTOGRAM_ENCODING;
use super::{Context, Error, R, enum_name};
use crate::model::{RunFaults, ServerObservations};
use crate::store::{Cell, LoadRecord, Results, RunRecord};

/// Writes the `experiment` row and replaces the configuration's rates, the
/// environment and the load reports.
pub(super) fn write_header(tx: &Transaction, r: &Results) -> R<()> {
    let c = &r.config;
    tx.execute(
        "INSERT OR REPLACE INTO experiment (id, schema_version, isobench_version, started_at,
             finished_at, complete, workload, repeat, duration_s, warmup_s, sample_interval_s,
             latency_limit_ms, threads, retry_max_tries, seed, target, run_order, baseline, file,
             config_json)
         VALUES (1, :schema_version, :isobench_version, :started_at, :finished_at, :complete,
             :workload, :repeat, :duration_s, :warmup_s, :sample_interval_s, :latency_limit_ms,
             :threads, :retry_max_tries, :seed, :target, :run_order, :baseline, :file,
             :config_json)",
        named_params! {
            ":schema_version": r.schema_version,
            ":isobench_version": r.isobench_version,
            ":started_at": r.started_at,
            ":finished_at": r.finished_at,
            ":complete": r.complete,
            ":workload": c.workload,
            ":repeat": c.repeat,
            ":duration_s": c.duration_s,
            ":warmup_s": c.warmup_s,
            ":sample_interval_s": c.sample_interval_s,
            ":latency_limit_ms": c.latency_limit_ms,
            ":threads": c.threads,
            ":retry_max_tries": c.retry.max_tries,
            ":seed": c.seed.to_string(),
            ":target": c.target,
            ":run_order": enum_name(&c.order)?,
            ":baseline": c.baseline,
            ":file": c.file,
            ":config_json": serde_json::to_string(c)?,
        },
    )
    .context("experiment")?;
    tx.execute(
        "UPDATE meta SET value = ?1 WHERE key = 'results_schema_version'",
        [r.schema_version.to_string()],
    )?;
    tx.execute_batch(
        "DELETE FROM config_rates; DELETE FROM environment; DELETE FROM server_settings;
         DELETE FROM load;",
    )?;
    {
        let mut st = tx.prepare("INSERT INTO config_rates (ordinal, rate) VALUES (?1, ?2)")?;
        for (i, rate) in c.rate.iter().enumerate() {
            st.execute(params![i, rate])?;
        }
    }
    {
        let e = &r.environment;
        let mut st = tx.prepare("INSERT INTO environment (key, value) VALUES (?1, ?2)")?;
        for (k, v) in [
            ("host", e.host.clone()),
            ("os", e.os.clone()),
            ("cpus", e.cpus.to_string()),
            ("server_version", e.server_version.clone()),
            ("server_version_num", e.server_version_num.to_string()),
        ] {
            st.execute(params![k, v])?;
        }
        let mut st = tx.prepare("INSERT INTO server_settings (name, value) VALUES (?1, ?2)")?;
        for (k, v) in &e.server_settings {
            st.execute(params![k, v])?;
        }
    }
    {
        let mut st = tx.prepare(
            "INSERT INTO load (ordinal, data, load_ms, load_ns, rows) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        for (i, l) in r.load.iter().enumerate() {
            let ns = u64::try_from(l.elapsed.as_nanos())
                .map_err(|_| Error(format!("load {i}: duration out of range")))?;
            st.execute(params![
                i,
                l.data,
                l.elapsed.as_secs_f64() * 1000.0,
                ns,
                l.rows
            ])
            .context(format_args!("load {i}"))?;
        }
    }
    Ok(())
}

/// The cell's row id, inserting the cell if it is new.
fn cell_id(tx: &Transaction, cell: &Cell) -> R<i64> {
    let key = serde_json::to_string(cell)?;
    tx.prepare_cached(
        "INSERT INTO cells (key, label, workload, isolation, strategy, clients, scale, pool_size,
             rate, max_tries, pg_bin, params_json, settings_json)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
         ON CONFLICT (key) DO NOTHING",
    )?
    .execute(params![
        key,
        cell.label(),
        cell.workload,
        cell.isolation.name(),
        cell.strategy,
        cell.clients,
        cell.scale,
        cell.pool_size,
        cell.rate.map(|r| r.0),
        cell.max_tries,
        cell.pg_bin,
        serde_json::to_string(&cell.params)?,
        serde_json::to_string(&cell.settings)?,
    ])?;
    let id = tx
        .prepare_cached("SELECT id FROM cells WHERE key = ?1")?
        .query_row([key], |r| r.get(0))?;
    if let Some(plan) = &cell.fault_plan {
        tx.prepare_cached("INSERT OR IGNORE INTO cell_fault_plans (cell, plan) VALUES (?1, ?2)")?
            .execute(params![id, plan])?;
    }
    if let Some(factor) = &cell.work_factor {
        tx.prepare_cached(
            "INSERT OR IGNORE INTO cell_work_factors (cell, factor) VALUES (?1, ?2)",
        )?
        .execute(params![id, factor])?;
    }
    super::pooler::write_cell_pooler(tx, id, cell)?;
    Ok(id)
}

/// Removes cells that no run references any more.
pub(super) fn delete_orphan_cells(tx: &Transaction) -> R<()> {
    tx.execute(
        "DELETE FROM cells WHERE id NOT IN (SELECT cell_id FROM runs)",
        [],
    )?;
    Ok(())
}

/// Inserts run `r.index` and everything under it, replacing a run of that
/// index (the children go with it).
pub(super) fn write_run(tx: &Transaction, r: &RunRecord) -> R<()> {
    let run = r.index;
    // Replaces the run: the children go with it (ON DELETE CASCADE).
    tx.prepare_cached("DELETE FROM runs WHERE run = ?1")?
        .execute([run])?;
    let cell_id = cell_id(tx, &r.cell).context("cell")?;
    write_run_row(tx, r, cell_id).context("runs")?;
    write_failures(tx, r)?;
    write_tx_types(tx, r)?;
    write_series(tx, r)?;
    write_server(tx, run, &r.server)?;
    write_checks(tx, r)?;
    if let Some(l) = &r.load {
        write_external_load(tx, run, l).context("external_loads")?;
    }
    if let Some(f) = &r.faults {
        write_faults(tx, run, f).context("run_faults")?;
    }
    if r.window_start.is_some() || r.shard_clients.is_some() {
        tx.execute(
            "INSERT INTO run_windows (run, window_start, shard_clients) VALUES (?1, ?2, ?3)",
            rusqlite::params![run, r.window_start, r.shard_clients],
        )
        .context("run_windows")?;
    }
    if let Some(p) = &r.server.pooler {
        super::pooler::write_run_pooler(tx, run, p).context("run_pooler")?;
    }
    super::cluster::write_run_standbys(tx, run, &r.server.standbys).context("run_standbys")?;
    for (ordinal, h) in r.hosts.iter().enumerate() {
        tx.prepare_cached(
            "INSERT INTO run_hosts (run, ordinal, host, clients, refused, committed, failed,
                tps, p50_ms, p99_ms, latency_histogram)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        )?
        .execute(params![
            run,
            ordinal as i64,
            h.host,
            h.clients,
            h.refused,
            h.committed,
            h.failed,
            h.tps,
            h.p50_ms,
            h.p99_ms,
            h.latency_histogram,
        ])
        .context("run_hosts")?;
    }
    Ok(())
}

/// A faulted run's `run_faults` row and its `connection_losses`.
fn write_faults(tx: &Transaction, run: u32, f: &RunFaults) -> R<()> {
    tx.prepare_cached(
        "INSERT INTO run_faults (run, cause, connections_lost, reconnects, outage_s,
            recovery_s, server_wait_s) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        run,
        f.cause,
        f.connections_lost,
        f.reconnects,
        f.outage_s,
        f.recovery_s,
        f.server_wait_s
    ])?;
    let mut st = tx.prepare_cached(
        "INSERT INTO connection_losses (run, seq, t_s, client, sqlstate)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for (i, l) in f.losses.iter().enumerate() {
        st.execute(params![run, i, l.t_s, l.client, l.sqlstate])
            .context("connection_losses")?;
    }
    let mut st = tx.prepare_cached(
        "INSERT INTO injected_faults (run, seq, kind, t_s, detail) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for (i, f) in f.injected.iter().enumerate() {
        st.execute(params![run, i, f.kind.name(), f.t_s, f.detail])
            .context("injected_faults")?;
    }
    super::cluster::write_failovers(tx, run, &f.injected).context("injected_failovers")?;
    Ok(())
}

/// The run's own row in `runs`.
fn write_run_row(tx: &Transaction, r: &RunRecord, cell_id: i64) -> R<()> {
    let run = r.index;
    let l = &r.latency_ms;
    let pw = r.pool_wait_ms.as_ref();
    let sl = r.schedule_lag_ms.as_ref();
    tx.prepare_cached(
        "INSERT INTO runs (run, cell_id, repetition, seed, started_at, complete, duration_s,
             committed, tps, attempts, retries, failed, unknown_outcome, user_aborts, failure_pct,
             retries_per_commit, wasted_ms, wasted_attempts, abort_ratio, wasted_time_pct,
             client_cpu_s, client_cpu_us_per_tx, lifetime_committed, lifetime_unknown, reset_ms,
             anomalies, skipped, late, server_version,
             latency_mean_ms, latency_p50_ms, latency_p90_ms, latency_p95_ms, latency_p99_ms,
             latency_p999_ms, latency_max_ms,
             pool_wait_count, pool_wait_mean_ms, pool_wait_p50_ms, pool_wait_p99_ms,
             pool_wait_max_ms,
             schedule_lag_count, schedule_lag_mean_ms, schedule_lag_p50_ms, schedule_lag_p99_ms,
             schedule_lag_max_ms, wait_samples, siread_samples)
         VALUES (:run, :cell_id, :repetition, :seed, :started_at, :complete, :duration_s,
             :committed, :tps, :attempts, :retries, :failed, :unknown_outcome, :user_aborts,
             :failure_pct, :retries_per_commit, :wasted_ms, :wasted_attempts, :abort_ratio,
             :wasted_time_pct, :client_cpu_s, :client_cpu_us_per_tx, :lifetime_committed,
             :lifetime_unknown, :reset_ms, :anomalies, :skipped, :late, :server_version,
             :latency_mean_ms, :latency_p50_ms, :latency_p90_ms, :latency_p95_ms,
             :latency_p99_ms, :latency_p999_ms, :latency_max_ms,
             :pool_wait_count, :pool_wait_mean_ms, :pool_wait_p50_ms, :pool_wait_p99_ms,
             :pool_wait_max_ms,
             :schedule_lag_count, :schedule_lag_mean_ms, :schedule_lag_p50_ms,
             :schedule_lag_p99_ms, :schedule_lag_max_ms, :wait_samples, :siread_samples)",
    )?
    .execute(named_params! {
        ":run": run,
        ":cell_id": cell_id,
        ":repetition": r.repetition,
        ":seed": r.seed.to_string(),
        ":started_at": r.started_at,
        ":complete": r.complete,
        ":duration_s": r.duration_s,
        ":committed": r.committed,
        ":tps": r.tps,
        ":attempts": r.attempts,
        ":retries": r.retries,
        ":failed": r.failed.values().fold(0u64, |a, n| a.saturating_add(*n)),
        ":unknown_outcome": r.unknown_outcome,
        ":user_aborts": r.user_aborts,
        ":failure_pct": r.failure_pct,
        ":retries_per_commit": r.retries_per_commit,
        ":wasted_ms": r.wasted_ms,
        ":wasted_attempts": r.wasted_attempts,
        ":abort_ratio": r.abort_ratio,
        ":wasted_time_pct": r.wasted_time_pct,
        ":client_cpu_s": r.client_cpu_s,
        ":client_cpu_us_per_tx": r.client_cpu_us_per_tx,
        ":lifetime_committed": r.lifetime.committed,
        ":lifetime_unknown": r.lifetime.unknown_outcome,
        ":reset_ms": r.reset_ms,
        ":anomalies": r.anomalies,
        ":skipped": r.skipped,
        ":late": r.late,
        ":server_version": r.server_version,
        ":latency_mean_ms": l.mean,
        ":latency_p50_ms": l.p50,
        ":latency_p90_ms": l.p90,
        ":latency_p95_ms": l.p95,
        ":latency_p99_ms": l.p99,
        ":latency_p999_ms": l.p999,
        ":latency_max_ms": l.max,
        ":pool_wait_count": pw.map(|w| w.count),
        ":pool_wait_mean_ms": pw.map(|w| w.mean),
        ":pool_wait_p50_ms": pw.map(|w| w.p50),
        ":pool_wait_p99_ms": pw.map(|w| w.p99),
        ":pool_wait_max_ms": pw.map(|w| w.max),
        ":schedule_lag_count": sl.map(|w| w.count),
        ":schedule_lag_mean_ms": sl.map(|w| w.mean),
        ":schedule_lag_p50_ms": sl.map(|w| w.p50),
        ":schedule_lag_p99_ms": sl.map(|w| w.p99),
        ":schedule_lag_max_ms": sl.map(|w| w.max),
        ":wait_samples": r.server.wait_events.samples,
        ":siread_samples": r.server.siread_locks.samples,
    })?;
    Ok(())
}

/// `run_failures`: the run's failures, in total and by transaction type.
fn write_failures(tx: &Transaction, r: &RunRecord) -> R<()> {
    let run = r.index;
    let mut st = tx.prepare_cached(
        "INSERT INTO run_failures (run, tx_type, sqlstate, count) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (code, n) in &r.failed {
        st.execute(params![run, None::<&str>, code, n])
            .context("run_failures")?;
    }
    for (ty, failed) in &r.failed_by_type {
        for (code, n) in failed {
            st.execute(params![run, ty, code, n])
                .context("run_failures")?;
        }
    }
    Ok(())
}

/// `tx_types` with their failures, commands and failure reasons.
fn write_tx_types(tx: &Transaction, r: &RunRecord) -> R<()> {
    let run = r.index;
    let mut st = tx.prepare_cached(
        "INSERT INTO tx_types (run, ordinal, name, committed, user_aborts, attempts,
             unknown_outcome, wasted_ms, latency_mean_ms, latency_p50_ms, latency_p90_ms,
             latency_p95_ms, latency_p99_ms, latency_p999_ms, latency_max_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
    )?;
    let mut fail = tx.prepare_cached(
        "INSERT INTO tx_type_failures (run, ordinal, sqlstate, count) VALUES (?1, ?2, ?3, ?4)",
    )?;
    let mut cmd = tx.prepare_cached(
        "INSERT INTO tx_type_commands (run, ordinal, step, command, executions, mean_ms, failures)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    let mut reason = tx.prepare_cached(
        "INSERT INTO tx_type_failure_reasons (run, ordinal, seq, sqlstate, reason, statement,
             attempts, failed)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for (i, t) in r.transactions.iter().enumerate() {
        let l = &t.latency_ms;
        st.execute(params![
            run,
            i,
            t.name,
            t.committed,
            t.user_aborts,
            t.attempts,
            t.unknown_outcome,
            t.wasted_ms,
            l.mean,
            l.p50,
            l.p90,
            l.p95,
            l.p99,
            l.p999,
            l.max,
        ])
        .context("tx_types")?;
        for (code, n) in &t.failed {
            fail.execute(params![run, i, code, n])
                .context("tx_type_failures")?;
        }
        for (k, c) in t.commands.iter().enumerate() {
            cmd.execute(params![
                run,
                i,
                k,
                c.command,
                c.executions,
                c.mean_ms,
                c.failures
            ])
            .context("tx_type_commands")?;
        }
        for (k, f) in t.failure_reasons.iter().enumerate() {
            reason
                .execute(params![
                    run,
                    i,
                    k,
                    f.sqlstate,
                    f.reason,
                    f.statement,
                    f.attempts,
                    f.failed
                ])
                .context("tx_type_failure_reasons")?;
        }
    }
    Ok(())
}

/// The latency `histograms` and the `per_second` series.
fn write_series(tx: &Transaction, r: &RunRecord) -> R<()> {
    let run = r.index;
    let mut st = tx.prepare_cached(
        "INSERT INTO histograms (run, tx_type, kind, unit, encoding, data)
         VALUES (?1, ?2, 'latency', 'us', ?3, ?4)",
    )?;
    st.execute(params![
        run,
        None::<usize>,
        HISTOGRAM_ENCODING,
        r.latency_histogram
    ])?;
    for (i, t) in r.transactions.iter().enumerate() {
        st.execute(params![run, i, HISTOGRAM_ENCODING, t.latency_histogram])?;
    }
    let mut st = tx.prepare_cached(
        "INSERT INTO per_second (run, ordinal, t_s, committed, tps, p99_ms, failed)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for (i, p) in r.per_second.iter().enumerate() {
        st.execute(params![
            run,
            i,
            p.t_s,
            p.committed,
            p.tps,
            p.p99_ms,
            p.failed
        ])
        .context("per_second")?;
    }
    let mut st =
        tx.prepare_cached("INSERT INTO per_second_lag (run, ordinal, lag_ms) VALUES (?1, ?2, ?3)")?;
    for (i, p) in r.per_second.iter().enumerate() {
        if let Some(lag) = p.lag_ms {
            st.execute(params![run, i, lag]).context("per_second_lag")?;
        }
    }
    if let Some(h) = &r.host_cpu {
        tx.prepare_cached(
            "INSERT INTO host_cpu (run, busy_pct, steal_pct, cpus) VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![run, h.busy_pct, h.steal_pct, h.cpus])
        .context("host_cpu")?;
    }
    Ok(())
}

/// The server observations: `stat_intervals`/`stat_counters`,
/// `wait_events`, `siread_locks`, `plans`, `plan_changes` and
/// `server_errors`.
fn write_server(tx: &Transaction, run: u32, s: &ServerObservations) -> R<()> {
    let mut interval = tx.prepare_cached(
        "INSERT INTO stat_intervals (run, ordinal, t_s, duration_s) VALUES (?1, ?2, ?3, ?4)",
    )?;
    let mut counter = tx.prepare_cached(
        "INSERT INTO stat_counters (run, ordinal, counter, delta, rate)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for (i, s) in s.stat_database.iter().enumerate() {
        interval.execute(params![run, i, s.t_s, s.duration_s])?;
        // The union of the two maps' keys (the same in practice).
        let mut names: Vec<&String> = s.delta.keys().chain(s.rate.keys()).collect();
        names.sort();
        names.dedup();
        for name in names {
            counter.execute(params![run, i, name, s.delta.get(name), s.rate.get(name)])?;
        }
    }
    let mut st =
        tx.prepare_cached("INSERT INTO wait_events (run, event, count) VALUES (?1, ?2, ?3)")?;
    for (event, n) in &s.wait_events.counts {
        st.execute(params![run, event, n]).context("wait_events")?;
    }
    let mut st = tx.prepare_cached(
        "INSERT INTO siread_locks (run, kind, name, mean, max) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for (kind, map) in [
        ("granularity", &s.siread_locks.by_granularity),
        ("relation", &s.siread_locks.by_relation),
    ] {
        for (name, c) in map {
            st.execute(params![run, kind, name, c.mean, c.max])
                .context("siread_locks")?;
        }
    }
    let mut st = tx.prepare_cached(
        "INSERT INTO plans (run, ordinal, label, sql, plan) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for (i, p) in s.plans.iter().enumerate() {
        st.execute(params![run, i, p.label, p.sql, p.plan])?;
    }
    let mut st = tx.prepare_cached(
        "INSERT INTO plan_changes (run, ordinal, label, sql, start_plan, end_plan)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for (i, c) in s.plan_changes.iter().enumerate() {
        st.execute(params![run, i, c.label, c.sql, c.start, c.end])
            .context("plan_changes")?;
    }
    let mut st =
        tx.prepare_cached("INSERT INTO server_errors (run, ordinal, message) VALUES (?1, ?2, ?3)")?;
    for (i, m) in s.errors.iter().enumerate() {
        st.execute(params![run, i, m])?;
    }
    Ok(())
}

/// The run's `invariants`, `run_errors` and `run_server_settings`.
fn write_checks(tx: &Transaction, r: &RunRecord) -> R<()> {
    let run = r.index;
    let mut st = tx.prepare_cached(
        "INSERT INTO invariants (run, ordinal, name, ok, violations, detail)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    let mut lost =
        tx.prepare_cached("INSERT INTO lost_commits (run, ordinal, lost) VALUES (?1, ?2, ?3)")?;
    let mut history = tx.prepare_cached(
        "INSERT INTO history_checks (run, ordinal, checked, cycles_json) VALUES (?1, ?2, ?3, ?4)",
    )?;
    let mut stale =
        tx.prepare_cached("INSERT INTO staleness (run, ordinal, json) VALUES (?1, ?2, ?3)")?;
    for (i, v) in r.invariants.iter().enumerate() {
        st.execute(params![run, i, v.name, v.ok, v.violations, v.detail])
            .context("invariants")?;
        if let Some(s) = &v.staleness {
            let json = serde_json::to_string(s).context("staleness")?;
            stale.execute(params![run, i, json]).context("staleness")?;
        }
        if let Some(n) = v.lost_commits {
            lost.execute(params![run, i, n]).context("lost_commits")?;
        }
        if let Some(n) = v.checked {
            let cycles = serde_json::to_string(&v.cycles).context("history_checks")?;
            history
                .execute(params![run, i, n, cycles])
                .context("history_checks")?;
        }
        if v.declared {
            super::checks::write_declared(tx, run, i, v)?;
        }
    }
    let mut st =
        tx.prepare_cached("INSERT INTO run_errors (run, ordinal, message) VALUES (?1, ?2, ?3)")?;
    for (i, m) in r.errors.iter().enumerate() {
        st.execute(params![run, i, m])?;
    }
    let mut st = tx
        .prepare_cached("INSERT INTO run_server_settings (run, name, value) VALUES (?1, ?2, ?3)")?;
    for (k, v) in &r.server_settings {
        st.execute(params![run, k, v])?;
    }
    Ok(())
}

fn write_external_load(tx: &Transaction, run: u32, l: &LoadRecord) -> R<()> {
    let f = l.figures.as_ref();
    let count = |v: Option<u64>| -> R<Option<i64>> {
        v.map(|n| i64::try_from(n).map_err(|_| Error(format!("{n} exceeds i64::MAX"))))
            .transpose()
    };
    tx.prepare_cached(
        "INSERT INTO external_loads (run, command, format, exit_code, wall_s, ready_s,
            output_dir, parsed, unit, throughput, count, duration_s, latency_mean_ms,
            latency_stddev_ms, latency_p50_ms, latency_p90_ms, latency_p99_ms,
            latency_max_ms, bytes_per_s, responses_2xx, non_2xx, errors, timeouts, failed,
            serialization_failures, deadlock_failures, retried, retries, skipped)
         VALUES (:run, :command, :format, :exit_code, :wall_s, :ready_s, :output_dir,
            :parsed, :unit, :throughput, :count, :duration_s, :latency_mean_ms,
            :latency_stddev_ms, :latency_p50_ms, :latency_p90_ms, :latency_p99_ms,
            :latency_max_ms, :bytes_per_s, :responses_2xx, :non_2xx, :errors, :timeouts,
            :failed, :serialization_failures, :deadlock_failures, :retried, :retries,
            :skipped)",
    )?
    .execute(named_params! {
        ":run": run,
        ":command": l.command,
        ":format": l.format.name(),
        ":exit_code": l.exit_code,
        ":wall_s": l.wall_s,
        ":ready_s": l.ready_s,
        ":output_dir": l.output_dir,
        ":parsed": f.is_some(),
        ":unit": f.map(|f| f.unit.as_str()),
        ":throughput": f.map(|f| f.throughput),
        ":count": count(f.map(|f| f.count))?,
        ":duration_s": f.and_then(|f| f.duration_s),
        ":latency_mean_ms": f.and_then(|f| f.latency_mean_ms),
        ":latency_stddev_ms": f.and_then(|f| f.latency_stddev_ms),
        ":latency_p50_ms": f.and_then(|f| f.latency_p50_ms),
        ":latency_p90_ms": f.and_then(|f| f.latency_p90_ms),
        ":latency_p99_ms": f.and_then(|f| f.latency_p99_ms),
        ":latency_max_ms": f.and_then(|f| f.latency_max_ms),
        ":bytes_per_s": f.and_then(|f| f.bytes_per_s),
        ":responses_2xx": count(f.and_then(|f| f.responses_2xx))?,
        ":non_2xx": count(f.and_then(|f| f.non_2xx))?,
        ":errors": count(f.and_then(|f| f.errors))?,
        ":timeouts": count(f.and_then(|f| f.timeouts))?,
        ":failed": count(f.and_then(|f| f.failed))?,
        ":serialization_failures": count(f.and_then(|f| f.serialization_failures))?,
        ":deadlock_failures": count(f.and_then(|f| f.deadlock_failures))?,
        ":retried": count(f.and_then(|f| f.retried))?,
        ":retries": count(f.and_then(|f| f.retries))?,
        ":skipped": count(f.and_then(|f| f.skipped))?,
    })?;
    Ok(())
}
