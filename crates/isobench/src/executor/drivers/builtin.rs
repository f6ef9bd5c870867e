//! The driver of built-in workloads and pgbench scripts: isobench's own
//! clients (the engine) run the workload, one instance per cell, in a
//! fresh copy of the template database, under observation; the
//! workload's invariants are checked against the data afterwards.

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::{Context, Result, anyhow};

use super::records::tx_type_records;
use super::services::{RunServices, Served};
use super::{Driver, RunCtx, StudyHeader, TemplateCtx};
use crate::drive::Driven;
use crate::engine::retry::Retrier;
use crate::engine::{self, EngineOutcome, EngineParams};
use crate::executor::copies::{create_template, fresh_copy};
use crate::executor::schedule::{cells, retrier_for, setup, validate, workload_spec};
use crate::executor::target::{crash_cause, log_len, shown_settings, wait_for_server};
use crate::model::encode_histogram;
use crate::model::{
    BadInput, InvariantResult, LoadReport, RunFaults, ServerObservations, StudyConfig, outage_s,
    recovery_s,
};
use crate::postgres;
use crate::store::{self, Cell, RunRecord};
use crate::workload::{self, Ledger, Workload, WorkloadSpec};

/// A built-in workload, one instance per cell.
pub(in crate::executor) struct Builtin<W> {
    pub(super) spec: &'static WorkloadSpec,
    pub(super) workloads: Vec<W>,
}

impl<W: Driven> Driver for Builtin<W> {
    fn data_key(&self, cell: usize) -> String {
        self.workloads[cell].data_key()
    }

    async fn load_template(
        &self,
        cell: usize,
        ctx: &TemplateCtx<'_>,
    ) -> Result<Option<LoadReport>> {
        load_template(&self.workloads[cell], self.spec, ctx).await
    }

    async fn one_run(&self, ctx: &RunCtx<'_>) -> Result<(RunRecord, Option<anyhow::Error>)> {
        let retrier = retrier_for(ctx.cfg, &ctx.run.cell)?;
        one_run(&self.workloads[ctx.run.cell_index], &retrier, ctx).await
    }
}

/// The cells, stored header and driver of a study of built-in workload
/// `W`. Errors: invalid configuration, a bad factor or parameter value
/// (every cell's workload is built before anything starts).
pub(in crate::executor) fn prepare<W: Driven>(
    cfg: &StudyConfig,
) -> Result<(Vec<Cell>, StudyHeader, Builtin<W>)> {
    validate(cfg).map_err(BadInput::from_error)?;
    let spec = workload_spec(cfg)?;
    let cells = cells(cfg)?;
    let driver = for_cells::<W>(spec, &cells)?;
    let header = StudyHeader {
        workload: cfg.workload.clone(),
        strategies: if cfg.strategies.is_empty() {
            vec![spec.default_strategy().to_string()]
        } else {
            cfg.strategies.clone()
        },
        param_defaults: spec.defaults(),
    };
    Ok((cells, header, driver))
}

/// The driver of workload `spec` (of type `W`) for `cells`, every cell's
/// workload built before anything starts, so that a bad parameter value
/// is reported at once. Errors: a bad parameter value.
pub(in crate::executor) fn for_cells<W: Driven>(
    spec: &'static WorkloadSpec,
    cells: &[Cell],
) -> Result<Builtin<W>> {
    let workloads: Vec<W> = cells
        .iter()
        .map(|c| Ok(W::new(&setup(c)?)?))
        .collect::<Result<_>>()?;
    Ok(Builtin { spec, workloads })
}

/// Loads `w`'s data into template database `ctx.tmpl` on `ctx.srv`
/// (dropping any stale run database first). Returns `None` when
/// cancelled.
async fn load_template<W: Workload>(
    w: &W,
    spec: &WorkloadSpec,
    ctx: &TemplateCtx<'_>,
) -> Result<Option<LoadReport>> {
    let TemplateCtx {
        srv,
        tmpl,
        run_db,
        progress,
        cancel,
        ..
    } = *ctx;
    create_template(srv, tmpl, run_db).await?;
    let what = match (w.data_name(), w.data_key()) {
        (Some(name), _) => name,
        (None, k) if k.is_empty() => spec.name.to_string(),
        (None, k) => format!("{} ({k})", spec.name),
    };
    progress.note(&format!("loading {what} ..."));
    let config = srv.target.config(tmpl);
    let db = workload::Loader::new(postgres::connect(&config).await?, config);
    let started = Instant::now();
    let rows = tokio::select! {
        r = w.load(&db) => r.with_context(|| format!("loading {what}"))?,
        _ = cancel.cancelled() => return Ok(None),
    };
    let load = LoadReport {
        data: w.data_key(),
        elapsed: started.elapsed(),
        rows,
    };
    let loaded = w
        .load_summary(load.rows)
        .unwrap_or_else(|| format!("loaded {} rows", load.rows));
    progress.note(&format!("{loaded} in {:.2} s", load.elapsed.as_secs_f64()));
    Ok(Some(load))
}

/// What a run saw besides the engine's outcome: when it started, its seed,
/// the fresh copy's time (ms) and problems, the server's version and
/// settings, the observations and the invariant checks.
struct Around {
    started_at: String,
    seed: u64,
    reset_ms: f64,
    errors: Vec<String>,
    server_version: String,
    server_settings: BTreeMap<String, String>,
    server: ServerObservations,
    invariants: Vec<InvariantResult>,
    /// The server crashed or restarted under the run: what its log (or
    /// the connection error) said, and how long isobench waited for it
    /// afterwards, s.
    server_fault: Option<(String, f64)>,
    /// The faults isobench injected into the run (`--fault`).
    injected: Vec<crate::model::InjectedFault>,
    /// When the measured window began, RFC 3339.
    window_start: Option<String>,
    /// The clients this process ran: the cell's, or a shard's share.
    clients: u32,
    /// Sharded: `clients`.
    shard_clients: Option<u32>,
    /// Sharded: why the checks saw only part of the clients (a shard that
    /// did not end the run, a workload whose checks use client ledgers),
    /// so their violations are shown but not counted as anomalies.
    partial_checks: Option<String>,
}

/// Runs `ctx.run` with `workload`, in named stages: [`open`] the run's
/// database, start its [`RunServices`], [`drive`] the engine, stop the
/// services, [`gather`] the shards' ledgers, [`check`] the data, and
/// [`record`] it all. Returns the record and, when the study must stop
/// after saving it, why: a script's own error stopped a client, a declared
/// check could not run, or the server did not come back.
async fn one_run<W: Driven>(
    workload: &W,
    retrier: &Retrier,
    ctx: &RunCtx<'_>,
) -> Result<(RunRecord, Option<anyhow::Error>)> {
    let (cfg, index) = (ctx.cfg, ctx.index);
    let started_at = chrono::Local::now().to_rfc3339();
    let shard = ctx.coord.map(|c| c.spec);
    // A non-zero shard uses the copy shard 0 made (and marked prepared).
    let lead = shard.is_none_or(|s| s.index == 0);
    let in_place = cfg.pgbench.as_ref().is_some_and(|p| p.in_place);
    let Opened {
        check_db,
        reset_ms,
        mut errors,
    } = open(ctx, lead, in_place).await?;
    let services = RunServices::start(ctx, workload.explain_statements(), &check_db, lead).await?;
    let (server_version, server_settings) = shown_settings(&check_db, cfg, &ctx.run.cell).await?;
    let params = engine_params(ctx, retrier)?;
    standbys_ready(params.read_route.as_ref()).await?;
    let log = ctx.dir.join(store::SERVER_LOG);
    let log_from = log_len(&log);
    let driven = drive(workload, ctx, &params, &services).await;
    let Served {
        watched,
        injected,
        mut pooler,
    } = services.stop(ctx.coord.is_some()).await;
    let DriveResult {
        outcome,
        gate_failed,
        window_start,
    } = driven;
    let (outcome, ledger) = outcome?;
    // Before marking the run ended: shard 0 may drop the run's database
    // (and this connection) once every shard has.
    let after = after_server_fault(check_db, ctx, &log, log_from).await;
    let gathered = match &gate_failed {
        Some(m) => {
            ctx.progress.note(m);
            errors.push(m.clone());
            Gathered {
                lifetime: outcome.lifetime,
                ledger,
                partial_checks: None,
            }
        }
        None => gather::<W>(ctx, lead, outcome.lifetime, ledger).await?,
    };
    // Every shard's clients are done with shard 0's pgbouncer.
    if let Some(p) = pooler.take() {
        p.stop().await;
    }
    let history = match gathered.ledger.save(ctx.dir, index) {
        Ok(rel) => rel,
        Err(e) => {
            errors.push(format!("writing the run's history: {e}"));
            None
        }
    };
    if let Err(e) = save_hlog(ctx.dir, index, &outcome.hlog) {
        errors.push(format!("writing the run's latency log: {e}"));
    }
    // Checked once, by shard 0, after every shard ended the run; not in a
    // database of the user's (isobench pgbench on a named server).
    let checkable = lead && gate_failed.is_none() && !in_place;
    let (mut invariants, check_failed) = match after.check_db.as_ref() {
        _ if !checkable => (Vec::new(), None),
        Some(db) => {
            let (lifetime, ledger) = (gathered.lifetime, gathered.ledger);
            // Routed reads: the session guarantees they kept or broke.
            let reads = outcome.reads.iter().flat_map(|r| r.invariants()).collect();
            let during = watched.during;
            check(
                workload,
                ctx,
                db,
                (lifetime, ledger, reads),
                during,
                &mut errors,
            )
            .await?
        }
        None => {
            errors.push("invariants not checked: the server did not come back".into());
            (Vec::new(), None)
        }
    };
    // A level that broke its promise: the cycles' evidence, replayed on
    // this server (issue #47).
    if let Some(history) = &history {
        let e = crate::evidence::RunEvidence {
            results_dir: ctx.dir,
            run: index,
            cell: &ctx.run.cell,
            history,
            replay_on: Some(&ctx.srv.target),
            log: cfg.log_violations.then_some((log.as_path(), log_from)),
            cancel: ctx.cancel,
        };
        errors.extend(crate::evidence::for_run(&e, &mut invariants).await);
    }
    let around = Around {
        started_at,
        seed: params.seed,
        reset_ms,
        errors,
        server_version,
        server_settings,
        server: watched.server,
        invariants,
        server_fault: after.server_fault,
        injected,
        window_start,
        clients: params.clients,
        shard_clients: shard.map(|_| params.clients),
        partial_checks: gathered.partial_checks,
    };
    let (record, script_error) = record(workload, ctx, outcome, around);
    // A script's own error (an expression error, an undefined variable)
    // stops its client, as in pgbench; every run would hit it again, so
    // the study stops, with the error, after saving the run. So does a
    // server that did not come back.
    // Under isobench pgbench an aborted client is pgbench's outcome (exit
    // status 2 after the summary), not the study's end.
    let script_error = script_error.filter(|_| cfg.pgbench.is_none());
    let stop = after
        .gone
        .or(check_failed)
        .or_else(|| script_error.map(|m| anyhow!("a script error stopped the clients: {m}")));
    Ok((record, stop))
}

/// The run's database, open for checks: a fresh copy of the template, or
/// (isobench pgbench on a named server, or a shard other than 0) the
/// database as it is.
struct Opened {
    check_db: tokio_postgres::Client,
    /// The fresh copy's time, ms.
    reset_ms: f64,
    /// Problems met making the copy.
    errors: Vec<String>,
}

/// Opens the run's database (see [`Opened`]). A declared check that
/// cannot run stops the study before the run (shard 0 checks for every
/// shard).
///
/// Errors: the copy failed, the connection failed, a declared check
/// cannot run.
async fn open(ctx: &RunCtx<'_>, lead: bool, in_place: bool) -> Result<Opened> {
    let (check_db, reset_ms, errors) = if lead && !in_place {
        fresh_copy(ctx.srv, ctx.tmpl, ctx.run_db).await?
    } else {
        let mut config = ctx.srv.target.config(ctx.run_db);
        postgres::own_session(&mut config, "check");
        (postgres::connect(&config).await?, 0.0, Vec::new())
    };
    if lead {
        crate::executor::checks::validate(&check_db, &ctx.cfg.checks).await?;
    }
    Ok(Opened {
        check_db,
        reset_ms,
        errors,
    })
}

/// The engine's parameters for `ctx.run`: the cell's, or a shard's share
/// of its clients, connections, rate and seed; the route of its reads.
///
/// Errors: [`read_route`]'s.
fn engine_params(ctx: &RunCtx<'_>, retrier: &Retrier) -> Result<EngineParams> {
    let (cfg, cell) = (ctx.cfg, &ctx.run.cell);
    let shard = ctx.coord.map(|c| c.spec);
    // isobench pgbench's one run draws what `pgbench --random-seed S`
    // draws: the seed itself.
    let seed = match cfg.pgbench {
        Some(_) => cfg.seed,
        None => cfg.seed.wrapping_add(u64::from(ctx.index) << 32),
    };
    let seed = shard.map_or(seed, |s| s.seed(seed));
    let clients = shard.map_or(cell.clients, |s| s.clients(cell.clients));
    Ok(EngineParams {
        clients,
        first_client: shard.map_or(0, |s| s.first_id(cell.clients, cell.pool_size.unwrap_or(0))),
        first_connection: shard.map_or(0, |s| match cell.pool_size {
            Some(pool) => s.index * pool,
            None => s.first_id(cell.clients, 0),
        }),
        isolation: cell.isolation,
        retrier: retrier.clone(),
        warmup: cfg.warmup,
        duration: cfg.duration,
        transactions: cfg.transactions,
        connect_per_transaction: cfg
            .pgbench
            .as_ref()
            .is_some_and(|p| p.connect_per_transaction),
        // isobench pgbench: transactions start as pgbench's do.
        serve_between_transactions: cfg.pgbench.is_some(),
        tx_log: ctx.tx_log.clone(),
        seed,
        threads: cfg
            .threads
            .unwrap_or_else(|| engine::default_threads(clients)),
        pool_size: cell.pool_size,
        rate: cell.rate.map(|r| shard.map_or(r.0, |s| s.rate(r.0))),
        latency_limit: cfg.latency_limit,
        host_policy: cfg.target.host_policy,
        unnamed_statements: cfg.scripts.mode != crate::model::QueryMode::Prepared,
        read_route: read_route(cfg, ctx.srv, ctx.run_db, cell)?,
        commits_by_host: cfg
            .faults_of(cell)
            .iter()
            .any(|f| f.kind == crate::model::FaultKind::Failover),
    })
}

/// The clients' ledger of workload `W`.
type ClientLedger<W> = <<W as Workload>::Client as crate::workload::WorkloadClient>::Ledger;

/// What the engine's stage gives: its outcome and the clients' ledger
/// (a shard missing at the barrier: an empty, incomplete run, with why
/// in `gate_failed`), and when this process opened the measured window,
/// RFC 3339.
struct DriveResult<W: Workload> {
    outcome: Result<(EngineOutcome, ClientLedger<W>), engine::EngineError>,
    gate_failed: Option<String>,
    window_start: Option<String>,
}

/// Drives the engine: sharded, past the shards' barrier first.
async fn drive<W: Driven>(
    workload: &W,
    ctx: &RunCtx<'_>,
    params: &EngineParams,
    services: &RunServices,
) -> DriveResult<W> {
    let (index, progress) = (ctx.index, ctx.progress);
    let mut on_tick = |t: &engine::Tick| progress.tick(t);
    let barrier = std::sync::Mutex::new(None);
    let gate: Option<engine::Gate<'_>> = ctx.coord.map(|c| {
        let barrier = &barrier;
        Box::pin(async move {
            let b = c.barrier(index).await?;
            *barrier.lock().expect("not poisoned") = Some(b);
            Ok(())
        }) as engine::Gate<'_>
    });
    let clients_config = services.clients_config(ctx);
    let outcome = workload
        .run_engine(engine::RunArgs {
            db: &clients_config,
            params,
            cancel: ctx.cancel,
            phase: &services.phase,
            on_tick: &mut on_tick,
            gate,
        })
        .await;
    // A shard missing at the barrier ends the run for all: an empty,
    // incomplete run with why.
    let (gate_failed, outcome) = match outcome {
        Err(engine::EngineError::Gate(m)) => (
            Some(m),
            Ok((
                EngineOutcome::cancelled_before_start(workload.tx_types().len()),
                Default::default(),
            )),
        ),
        o => (None, o),
    };
    if let Ok((outcome, _)) = &outcome {
        for h in outcome.hosts.iter().filter(|h| h.refused > 0) {
            // --host-policy: the connections went to the next host instead.
            progress.note(&format!(
                "run {index}: host {} refused {} connection(s) meant for it; they went to the next host in the DSN",
                h.label, h.refused
            ));
        }
    }
    let barrier = barrier.into_inner().expect("not poisoned");
    if let Some(b) = &barrier {
        progress.note(&format!(
            "run {index}: barrier passed after {:.3} s, clock offset to the server {:+.3} ms (round trip {:.3} ms), started {:.3} ms late",
            b.waited_s,
            b.offset_s * 1e3,
            b.rtt_s * 1e3,
            b.late_s * 1e3
        ));
    }
    // When this process opened the window: sharded, by the server's
    // clock (this machine's plus its measured offset), so that the shards'
    // starts compare (the barrier's instant plus the warm-up, give or take
    // the sleep's precision); else by this machine's clock.
    let offset_s = barrier.as_ref().map_or(0.0, |b| b.offset_s);
    let window_start = outcome
        .as_ref()
        .ok()
        .and_then(|(o, _)| o.window_start)
        .map(|t| {
            let unix = t
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64());
            super::super::shard::rfc3339(unix + offset_s)
        });
    DriveResult {
        outcome,
        gate_failed,
        window_start,
    }
}

/// Every shard's share of what the checks need: the clients' lifetime
/// counts and ledger, and, when a shard did not end the run, why the
/// checks saw only part of it.
struct Gathered<L> {
    lifetime: crate::model::Lifetime,
    ledger: L,
    partial_checks: Option<String>,
}

/// Sharded, every shard's clients' lifetime counts and ledgers meet at
/// shard 0 (a client ledger holds what the checks need of every client:
/// the other shards send theirs; a zero-sized ledger holds nothing, the
/// lifetime counts are all the checks use). Unsharded, this process's.
///
/// Errors: the coordination failed, a ledger did not encode or decode.
async fn gather<W: Workload>(
    ctx: &RunCtx<'_>,
    lead: bool,
    mut lifetime: crate::model::Lifetime,
    mut ledger: ClientLedger<W>,
) -> Result<Gathered<ClientLedger<W>>> {
    let index = ctx.index;
    let mut partial_checks = None;
    if let Some(c) = ctx.coord {
        let sends_ledger = !lead && std::mem::size_of::<ClientLedger<W>>() != 0;
        let sent = if sends_ledger {
            Some(serde_json::to_vec(&ledger).context("encoding the run's client ledger")?)
        } else {
            None
        };
        c.ended(index, lifetime, sent.as_deref()).await?;
        if lead {
            let others = c.await_ended(index).await?;
            lifetime.committed += others.lifetime.committed;
            lifetime.unknown_outcome += others.lifetime.unknown_outcome;
            for (shard, bytes) in others.ledgers {
                let l: ClientLedger<W> = serde_json::from_slice(&bytes).with_context(|| {
                    format!("decoding shard {shard}'s client ledger of run {index}")
                })?;
                ledger.merge(l);
            }
            if !others.missing.is_empty() {
                partial_checks = Some(format!(
                    "shard(s) {} did not end run {index} within --shard-wait: \
                     invariant results are checked without their commits, shown but not counted as anomalies",
                    others.missing
                ));
            }
        }
    }
    Ok(Gathered {
        lifetime,
        ledger,
        partial_checks,
    })
}

/// The workload's invariants, the routed reads' session guarantees
/// (`reads`), then the declared checks (with what their
/// during-run samples saw: `during`). A declared check that failed to run
/// is returned as the error that stops the study once the run is saved;
/// problems go to `errors`.
///
/// Errors: the invariants could not be checked.
async fn check<W: Workload>(
    workload: &W,
    ctx: &RunCtx<'_>,
    check_db: &tokio_postgres::Client,
    (lifetime, ledger, reads): (
        crate::model::Lifetime,
        ClientLedger<W>,
        Vec<InvariantResult>,
    ),
    during: Result<crate::executor::checks::During>,
    errors: &mut Vec<String>,
) -> Result<(Vec<InvariantResult>, Option<anyhow::Error>)> {
    let mut all = workload
        .check(check_db, lifetime, ledger)
        .await
        .context("checking invariants")?;
    all.extend(reads);
    let declared = match during {
        Ok(during) => {
            errors.extend(during.stopped);
            crate::executor::checks::after_run(check_db, &ctx.cfg.checks, &during.seen).await
        }
        Err(e) => Err(e),
    };
    let failed = match declared {
        Ok(d) => {
            all.extend(d);
            None
        }
        Err(e) => {
            errors.push(format!("declared checks not counted: {e:#}"));
            Some(e)
        }
    };
    Ok((all, failed))
}

/// `--read-from standby|any`: the route of `cell` (its `read_from`
/// setting when the route is a factor, else the study's), with the
/// standbys of the run's database `run_db`, for the cell's clients;
/// `None` for `primary`.
///
/// Errors: a route to standbys the target does not have (an external DSN
/// with one host), or a multi-host DSN without `--host-policy first`.
fn read_route(
    cfg: &StudyConfig,
    srv: &super::Server,
    run_db: &str,
    cell: &crate::store::Cell,
) -> Result<Option<engine::reads::ReadRoute>> {
    let mode = match cell.settings.get(crate::model::READ_FROM) {
        Some(route) => route
            .parse::<crate::model::ReadFrom>()
            .map_err(|e| anyhow::Error::new(BadInput::from_error(e)))?,
        None => cfg.target.cluster.read_from,
    };
    let clients = cell.clients;
    if mode == crate::model::ReadFrom::Primary {
        return Ok(None);
    }
    let standbys = srv.target.standby_configs(run_db);
    if standbys.is_empty() {
        return Err(anyhow::Error::new(BadInput::from_error(anyhow!(
            "--read-from {}: the server has no standby to read from: give --standbys N \
             (a managed cluster) or a --dsn naming the primary first and its standbys after it (host=h1,h2)",
            mode.name()
        ))));
    }
    if matches!(srv.target, postgres::Target::External(_))
        && cfg.target.host_policy != crate::model::HostPolicy::First
    {
        return Err(anyhow::Error::new(BadInput::from_error(format!(
            "--read-from {}: the clients' writes go to the primary, the DSN's first host: give --host-policy first",
            mode.name()
        ))));
    }
    Ok(Some(engine::reads::ReadRoute {
        mode,
        standbys,
        clients,
    }))
}

/// The run's database on every standby of `route` (replayed from the
/// primary's copy), before the clients connect there.
async fn standbys_ready(route: Option<&engine::reads::ReadRoute>) -> Result<()> {
    if let Some(route) = route {
        route
            .wait_for_database(std::time::Duration::from_secs(60))
            .await
            .map_err(|e| anyhow!("--read-from: the run's database on the standbys: {e}"))?;
    }
    Ok(())
}

/// What became of the server during a run, as the check connection saw
/// it afterwards.
struct AfterRun {
    /// The check connection: the one from before the run, or a new one
    /// once the server was back; `None` when it did not come back.
    check_db: Option<tokio_postgres::Client>,
    /// When the server crashed or restarted under the run: the cause
    /// (its log's line, else the connection's error) and the time
    /// isobench waited for it, s.
    server_fault: Option<(String, f64)>,
    /// Why the study must stop: the server did not come back.
    gone: Option<anyhow::Error>,
}

/// The check connection `check_db` after the run, and what happened to
/// the server if it crashed or restarted during it: the check connection
/// is then gone, so wait for the server to accept connections again (at
/// most `--server-wait`), and if it does not, restart a managed server
/// (immediate shutdown, start) and wait again; then open the check
/// connection again. The cause is what the server log `log` got since byte
/// `log_from` (a backend terminated by a signal, a server not properly
/// shut down), else the connection's error. A server that did not come
/// back is [`AfterRun::gone`], not an error: the run keeps what it
/// measured.
async fn after_server_fault(
    check_db: tokio_postgres::Client,
    ctx: &RunCtx<'_>,
    log: &std::path::Path,
    log_from: u64,
) -> AfterRun {
    let limit = ctx.cfg.server_wait;
    // A server that hangs (stopped, out of disk) answers nothing at all.
    let error = match tokio::time::timeout(limit, check_db.simple_query("SELECT 1")).await {
        Ok(Ok(_)) => {
            return AfterRun {
                check_db: Some(check_db),
                server_fault: None,
                gone: None,
            };
        }
        Ok(Err(e)) => postgres::error_text(&e),
        Err(_) => format!("no answer within {} s", limit.as_secs_f64()),
    };
    ctx.progress.note(&format!(
        "the server went away ({error}); waiting for it (at most {} s) ...",
        limit.as_secs_f64()
    ));
    let mut config = ctx.srv.target.config(ctx.run_db);
    postgres::own_session(&mut config, "check");
    let began = std::time::Instant::now();
    let mut back = wait_for_server(&config, limit).await;
    // Read before isobench restarts it, so that the log lines of its own
    // restart are not taken for the cause.
    let mut cause =
        crash_cause(log, log_from).unwrap_or_else(|| format!("connection error: {error}"));
    if let (Err(e), Some(server)) = (&back, ctx.srv.target.control()) {
        cause.push_str(&format!(
            "; not back within {} s, restarted by isobench",
            limit.as_secs_f64()
        ));
        ctx.progress
            .note(&format!("{e}; restarting the managed server ..."));
        back = match tokio::task::spawn_blocking(move || {
            server.restart(crate::postgres::Shutdown::Immediate)
        })
        .await
        {
            Ok(Ok(_)) => wait_for_server(&config, limit).await,
            Ok(Err(e)) => Err(anyhow!(e)),
            Err(e) => Err(anyhow!("restarting the managed server: {e}")),
        };
    }
    let waited = began.elapsed().as_secs_f64();
    match back {
        Ok((check_db, _)) => {
            ctx.progress.note(&format!(
                "the server is back after {waited:.1} s; cause: {cause}"
            ));
            AfterRun {
                check_db: Some(check_db),
                server_fault: Some((cause, waited)),
                gone: None,
            }
        }
        Err(e) => AfterRun {
            check_db: None,
            server_fault: Some((cause, waited)),
            gone: Some(e.context(
                "the server went away during the run and did not come back; \
                 the run is saved with what it measured, its invariants unchecked",
            )),
        },
    }
}

/// Writes run `run`'s latency interval log ([`engine::hlog`]) to
/// `histograms/run-N.hlog` under the results directory `dir`; nothing
/// when the window never opened. Errors: the file could not be written.
fn save_hlog(dir: &std::path::Path, run: u32, log: &[u8]) -> std::io::Result<()> {
    if log.is_empty() {
        return Ok(());
    }
    let dir = dir.join("histograms");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join(format!("run-{run}.hlog")), log)
}

/// The record of run `ctx.run` from the engine's `outcome` and what was
/// `around` it, and a script's own error, if one stopped a client.
fn record<W: Workload>(
    workload: &W,
    ctx: &RunCtx<'_>,
    outcome: EngineOutcome,
    mut around: Around,
) -> (RunRecord, Option<String>) {
    let (run, index) = (ctx.run, ctx.index);
    let m = outcome.measured.total();
    let m = &m;
    let transactions = m.transactions();
    let per_type = tx_type_records(workload, &outcome.measured);
    let failed_by_type = per_type
        .iter()
        .filter(|t| !t.failed.is_empty())
        .map(|t| (t.name.clone(), t.failed.clone()))
        .collect();
    let wasted_ms = m.wasted_us as f64 / 1000.0;
    let mut errors_all = std::mem::take(&mut around.errors);
    let (anomalies, script_error) = problems(&outcome, &around, &mut errors_all);
    let lost_clients = !outcome.client_errors.is_empty();
    let faults = run_faults(
        &outcome.faults,
        &outcome.per_second,
        around.server_fault.take(),
        std::mem::take(&mut around.injected),
    );
    // The rates and shares are derived below, by the one definition
    // `isobench merge` uses too.
    let mut record = RunRecord {
        index,
        cell: run.cell.clone(),
        repetition: run.repetition,
        seed: around.seed,
        started_at: around.started_at,
        // A run that lost clients did not measure the cell as planned.
        complete: !outcome.interrupted && !lost_clients,
        duration_s: outcome.measured_s,
        committed: m.committed,
        tps: 0.0,
        effective_tps: None,
        tpmc: None,
        attempts: m.attempts,
        retries: m.attempts.saturating_sub(transactions),
        failed: m.failed.iter().collect(),
        failed_by_type,
        unknown_outcome: m.unknown_outcome,
        user_aborts: m.user_aborts,
        failure_pct: 0.0,
        retries_per_commit: 0.0,
        wasted_ms,
        wasted_attempts: m.wasted_attempts(),
        abort_ratio: 0.0,
        wasted_time_pct: 0.0,
        transactions: per_type,
        latency_ms: m.latency_summary(),
        latency_histogram: encode_histogram(&m.latency_us),
        per_second: outcome.per_second,
        client_cpu_s: outcome.cpu_s,
        host_cpu: outcome.host_cpu,
        client_cpu_us_per_tx: 0.0,
        lifetime: outcome.lifetime,
        reset_ms: around.reset_ms,
        server: around.server,
        invariants: around.invariants,
        anomalies,
        errors: errors_all,
        pool_wait_ms: run
            .cell
            .pool_size
            .map(|_| wait_summary(&outcome.measured.waits.pool_us)),
        schedule_lag_ms: run
            .cell
            .rate
            .map(|_| wait_summary(&outcome.measured.waits.lag_us)),
        skipped: outcome.measured.waits.skipped,
        late: outcome.measured.waits.late,
        server_version: around.server_version,
        server_settings: around.server_settings,
        load: None,
        faults,
        window_start: around.window_start.take(),
        shard_clients: around.shard_clients,
        hosts: host_records(&outcome.hosts, outcome.measured_s),
    };
    record.derive_figures(f64::from(around.clients));
    (record, script_error)
}

/// The per-host records of a run measured for `measured_s` s, from the
/// engine's per-host outcomes (none with one host).
fn host_records(
    hosts: &[engine::hosts::HostOutcome],
    measured_s: f64,
) -> Vec<crate::model::HostRecord> {
    hosts
        .iter()
        .map(|h| {
            let lat = crate::model::LatencySummary::of(&h.measured.latency_us);
            crate::model::HostRecord {
                host: h.label.clone(),
                clients: h.clients,
                refused: h.refused,
                committed: h.measured.committed,
                tps: if measured_s > 0.0 {
                    h.measured.committed as f64 / measured_s
                } else {
                    0.0
                },
                p50_ms: lat.p50,
                p99_ms: lat.p99,
                failed: h.measured.failed,
                latency_histogram: encode_histogram(&h.measured.latency_us),
            }
        })
        .collect()
}

/// The anomalies of a run (none counted without every client's ledger)
/// and a script's own error, if one stopped a client; the clients' and
/// the server's problems are added to `errors`.
fn problems(
    outcome: &EngineOutcome,
    around: &Around,
    errors: &mut Vec<String>,
) -> (u64, Option<String>) {
    // Without every client's ledger, checks that use it can report
    // violations that did not happen: shown, but not counted.
    let anomalies = if let Some(why) = &around.partial_checks {
        errors.push(why.clone());
        0
    } else if outcome.ledger_complete {
        around.invariants.iter().map(|i| i.violations).sum()
    } else {
        errors.push(
            "clients were lost with their ledgers: invariant results are shown but not counted as anomalies"
                .into(),
        );
        0
    };
    let script_error = outcome.client_errors.iter().find_map(|e| match &e.reason {
        engine::StopReason::Script(m) => Some(m.clone()),
        _ => None,
    });
    errors.extend(outcome.client_errors.iter().map(ToString::to_string));
    // The first failure of each SQLSTATE that is not retried, with the
    // server's message and where (a script's file:line).
    errors.extend(
        outcome
            .first_failures
            .iter()
            .map(|(code, message)| crate::model::first_failure_line(code, message)),
    );
    errors.extend(around.server.errors.iter().cloned());
    (anomalies, script_error)
}

/// The faults of a run from the engine's log `events`, the per-second
/// `points` (for the recovery time) and what the server said after a
/// crash or restart (`server_fault`: cause, wait in s), with the faults
/// isobench `injected`; `None` when nothing happened.
fn run_faults(
    events: &engine::FaultEvents,
    points: &[crate::model::SecondPoint],
    server_fault: Option<(String, f64)>,
    mut injected: Vec<crate::model::InjectedFault>,
) -> Option<RunFaults> {
    // A failover's write unavailability: from the kill to the clients'
    // first commit after the losses it caused; and the writes two
    // primaries accepted, up to the next failover.
    let kills: Vec<f64> = injected
        .iter()
        .filter(|f| f.failover.is_some())
        .map(|f| f.t_s)
        .collect();
    for f in &mut injected {
        if let Some(o) = &mut f.failover {
            o.unavailable_s = events
                .first_commit_after_s
                .filter(|c| *c >= f.t_s)
                .map(|c| c - f.t_s);
            let until = kills
                .iter()
                .copied()
                .find(|k| *k > f.t_s)
                .unwrap_or(f64::MAX);
            o.split_brain_writes = engine::writes_to_two_primaries(&events.host_runs, f.t_s, until);
        }
    }
    let (cause, server_wait_s) = server_fault.unzip();
    let faults = RunFaults {
        cause,
        connections_lost: events.lost,
        losses: events.losses.clone(),
        reconnects: events.reconnects,
        outage_s: events
            .first_loss_s
            .and_then(|l| outage_s(l, events.first_commit_after_s)),
        // From the first loss, or, for a fault that lost no connection
        // (a pause), from the first injected fault.
        recovery_s: events
            .first_loss_s
            .or_else(|| injected.first().map(|f| f.t_s))
            .and_then(|l| recovery_s(points, l)),
        server_wait_s,
        injected,
    };
    (!faults.is_empty()).then_some(faults)
}

/// A wait histogram (µs) as a summary in ms.
fn wait_summary(h: &hdrhistogram::Histogram<u64>) -> store::WaitSummary {
    let l = crate::model::LatencySummary::of(h);
    store::WaitSummary {
        count: h.len(),
        mean: l.mean,
        p50: l.p50,
        p99: l.p99,
        max: l.max,
    }
}
