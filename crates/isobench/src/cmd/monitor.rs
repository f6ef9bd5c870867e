//! `isobench monitor`: observe a server under someone else's load, with
//! the same observations as a run (`crate::observe`): `pg_stat_database`
//! deltas and rates and its SIRead locks every sample interval, and once
//! a second the wait events of every client backend of the database.
//! Writes `monitor.json` and `monitor.md` (per-interval rates and their
//! time-weighted averages) into the results directory, also when stopped
//! by Ctrl-C.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};
use clap::Args;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::model::Phase;
use crate::model::TargetConfig;
use crate::model::{STAT_COUNTERS, ServerObservations};
use crate::observe::{self, Backends};
use crate::postgres::{self, Target};
use crate::report::render::pipe::{self, Layout};
use crate::report::tables::{Column, Table, Value};
use crate::store;

use super::{Exit, out, watch_signals};
use crate::study::values::{self, Parse};

/// Flags of `isobench monitor`.
#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// The server, as a libpq URL or key=value string (password never printed).
    #[arg(long, env = "ISOBENCH_DSN", hide_env_values = true, value_parser = crate::study::values::DsnArg)]
    pub dsn: Option<String>,
    /// The server from the libpq variables PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE.
    #[arg(long, conflicts_with = "dsn")]
    pub external: bool,
    /// The database to observe (default: the DSN's).
    #[arg(long)]
    pub database: Option<String>,
    /// pg_stat_database sampling interval.
    #[arg(long, default_value = "5s", value_parser = values::SampleInterval::parse, allow_hyphen_values = true)]
    pub sample_interval: Duration,
    /// How long to observe (default: until Ctrl-C).
    #[arg(long, short = 'T', value_parser = values::PositiveDur::parse, allow_hyphen_values = true)]
    pub duration: Option<Duration>,
    /// Results directory (default `results/monitor-<timestamp>`).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// No progress line and no summary.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

impl MonitorArgs {
    /// The plain configuration.
    pub fn into_config(self) -> MonitorConfig {
        MonitorConfig {
            target: TargetConfig {
                dsn: self.dsn,
                external_from_env: self.external,
                ..TargetConfig::default()
            },
            database: self.database,
            sample_interval: self.sample_interval,
            duration: self.duration,
            out: self.out,
            quiet: self.quiet,
        }
    }
}

/// Observes until `--duration` or Ctrl-C, writes monitor.json and
/// monitor.md, prints a summary; [`Exit::Interrupted`] when stopped early.
///
/// Errors: no external server named, a server that cannot be reached.
pub async fn command(args: MonitorArgs) -> Result<Exit> {
    let cfg = args.into_config();
    let cancel = CancellationToken::new();
    tokio::spawn(watch_signals(cancel.clone()));
    let (dir, results) = run(&cfg, cancel.clone()).await?;
    if !cfg.quiet {
        out(&format!(
            "observed {:.1} s: {} pg_stat_database interval(s), {} wait-event samples\nresults: {}\n",
            results.observed_s,
            results.server.stat_database.len(),
            results.server.wait_events.samples,
            dir.display()
        ));
    }
    Ok(if results.complete {
        Exit::Done
    } else {
        Exit::Interrupted
    })
}

/// File names in a monitor's results directory.
pub(crate) const MONITOR_JSON: &str = "monitor.json";
pub(crate) const MONITOR_MD: &str = "monitor.md";

/// What to monitor, how often, for how long.
#[derive(Debug, Clone)]
pub struct MonitorConfig {
    /// An external server (`--dsn` or `--external`).
    pub target: TargetConfig,
    /// The database to observe; `None`: the DSN's.
    pub database: Option<String>,
    pub sample_interval: Duration,
    /// `None`: until Ctrl-C.
    pub duration: Option<Duration>,
    /// Results directory; `results/monitor-<timestamp>` when `None`.
    pub out: Option<PathBuf>,
    pub quiet: bool,
}

/// `monitor.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MonitorResults {
    pub isobench_version: String,
    /// RFC 3339.
    pub started_at: String,
    pub finished_at: String,
    /// False when stopped by Ctrl-C before `--duration` ended (the
    /// samples taken are kept).
    pub complete: bool,
    /// `user@host:port/db`, never a password.
    pub target: String,
    pub database: String,
    /// `SHOW server_version`.
    pub server_version: String,
    pub sample_interval_s: f64,
    /// How long the server was observed, s.
    pub observed_s: f64,
    pub server: ServerObservations,
    /// The statements that took the most execution time while observed
    /// (`pg_stat_statements` deltas, at most `TOP_STATEMENTS`); empty
    /// when the extension is not installed in the database.
    pub statements: Vec<StatementStat>,
    /// Why `statements` is empty, when it is.
    pub statements_note: Option<String>,
}

/// Statements shown in `monitor.md` and kept in `monitor.json`.
pub(crate) const TOP_STATEMENTS: usize = 10;

/// One statement's `pg_stat_statements` counters over the observed time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatementStat {
    /// The normalized query text.
    pub query: String,
    pub calls: i64,
    /// Execution time, ms (total, and per call).
    pub total_ms: f64,
    pub mean_ms: f64,
    pub rows: i64,
}

/// `pg_stat_statements` counters by (queryid, query): calls, total time
/// (ms), rows. Errors: the view is missing or unreadable.
async fn statements_snapshot(
    db: &tokio_postgres::Client,
) -> Result<std::collections::HashMap<(i64, String), (i64, f64, i64)>, String> {
    let rows = db
        .query(
            "SELECT coalesce(queryid, 0), query, calls, total_exec_time, rows
               FROM pg_stat_statements
              WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())",
            &[],
        )
        .await
        .map_err(|e| postgres::error_text(&e))?;
    Ok(rows
        .iter()
        .map(|r| ((r.get(0), r.get(1)), (r.get(2), r.get(3), r.get(4))))
        .collect())
}

/// The top statements by execution time between two snapshots.
fn statement_deltas(
    before: &std::collections::HashMap<(i64, String), (i64, f64, i64)>,
    after: &std::collections::HashMap<(i64, String), (i64, f64, i64)>,
) -> Vec<StatementStat> {
    let mut out: Vec<StatementStat> = after
        .iter()
        .filter_map(|(k, &(calls, total, rows))| {
            let (c0, t0, r0) = before.get(k).copied().unwrap_or((0, 0.0, 0));
            let calls = calls - c0;
            (calls > 0).then(|| StatementStat {
                query: k.1.clone(),
                calls,
                total_ms: total - t0,
                mean_ms: (total - t0) / calls as f64,
                rows: rows - r0,
            })
        })
        .collect();
    out.sort_by(|a, b| b.total_ms.total_cmp(&a.total_ms));
    out.truncate(TOP_STATEMENTS);
    out
}

/// Monitors until `cfg.duration` ends or `cancel` fires; returns the
/// results directory and what was observed.
///
/// Errors: no external server given, the server cannot be reached, or the
/// results directory cannot be written.
pub async fn run(
    cfg: &MonitorConfig,
    cancel: CancellationToken,
) -> Result<(PathBuf, MonitorResults)> {
    if cfg.target.dsn.is_none() && !cfg.target.external_from_env {
        bail!(crate::model::BadInput(
            "monitor observes a server under someone else's load: name it with --dsn URL or --external (PG* variables)"
                .into()
        ));
    }
    let target = Target::external(cfg.target.dsn.as_deref())?;
    let database = match &cfg.database {
        Some(d) => d.clone(),
        None => target.admin_db(),
    };
    let config = target.config(&database);
    let db = postgres::connect(&config).await?;
    let server_version: String = db
        .query_one("SHOW server_version", &[])
        .await
        .map_err(|e| anyhow!("SHOW server_version: {}", postgres::error_text(&e)))?
        .get(0);
    let before = statements_snapshot(&db).await;
    // Not held while observing: its idle backend would be sampled too.
    drop(db);
    let dir = store::results_dir(cfg.out.as_deref(), "monitor-", MONITOR_JSON)?;
    if !cfg.quiet {
        eprintln!(
            "monitoring {} (PostgreSQL {server_version}) every {} {}; results: {}",
            target.describe(),
            humantime::format_duration(cfg.sample_interval),
            match cfg.duration {
                Some(d) => format!("for {}", humantime::format_duration(d)),
                None => "until Ctrl-C".into(),
            },
            dir.display()
        );
    }
    let started_at = chrono::Local::now().to_rfc3339();
    let (phase_tx, phase_rx) = watch::channel(Phase::Measuring);
    let observer = tokio::spawn(observe::observe(
        config,
        database.clone(),
        Vec::new(),
        observe::ObserveOptions {
            level: crate::model::ObserveLevel::Full,
            sample_interval: cfg.sample_interval,
            backends: Backends::All,
            siread_locks: true,
        },
        phase_rx,
    ));
    let start = Instant::now();
    let complete = match cfg.duration {
        Some(d) => tokio::select! {
            _ = tokio::time::sleep(d) => true,
            _ = cancel.cancelled() => false,
        },
        None => {
            cancel.cancelled().await;
            true
        }
    };
    phase_tx.send_replace(Phase::Draining);
    let server = observer
        .await
        .map_err(|e| anyhow!("the observer failed: {e}"))?;
    let db = postgres::connect(&target.config(&database)).await?;
    let (statements, statements_note) = match before {
        Ok(before) => match statements_snapshot(&db).await {
            Ok(after) => (statement_deltas(&before, &after), None),
            Err(e) => (Vec::new(), Some(format!("pg_stat_statements: {e}"))),
        },
        Err(e) => (
            Vec::new(),
            Some(format!(
                "pg_stat_statements is not available in {database} ({e}); \
                 install it (shared_preload_libraries and CREATE EXTENSION) to see the top statements"
            )),
        ),
    };
    drop(db);
    let results = MonitorResults {
        isobench_version: env!("CARGO_PKG_VERSION").into(),
        started_at,
        finished_at: chrono::Local::now().to_rfc3339(),
        complete,
        target: target.describe(),
        database,
        server_version,
        sample_interval_s: cfg.sample_interval.as_secs_f64(),
        observed_s: start.elapsed().as_secs_f64(),
        server,
        statements,
        statements_note,
    };
    let json = serde_json::to_vec_pretty(&results)?;
    store::write_atomic(&dir.join(MONITOR_JSON), &json)?;
    store::write_atomic(&dir.join(MONITOR_MD), render(&results).as_bytes())?;
    Ok((dir, results))
}

/// `monitor.md`: one row per `pg_stat_database` interval with its rates,
/// the time-weighted average (Σ delta / Σ seconds), the wait events by
/// share of backend samples, and the SIRead locks.
pub fn render(r: &MonitorResults) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# isobench monitor: {} ({})\n", r.database, r.target);
    let _ = writeln!(
        out,
        "- **Server:** PostgreSQL {}\n- **Observed:** {:.1} s from {}{}\n- **Sample interval:** {} s (pg_stat_database and SIRead locks); wait events once a second\n",
        r.server_version,
        r.observed_s,
        r.started_at,
        if r.complete {
            ""
        } else {
            " (stopped by Ctrl-C)"
        },
        r.sample_interval_s
    );
    let shown = [
        "xact_commit",
        "xact_rollback",
        "blks_read",
        "blks_hit",
        "tup_fetched",
        "tup_inserted",
        "tup_updated",
        "tup_deleted",
        "deadlocks",
        "conflicts",
    ];
    debug_assert!(shown.iter().all(|c| STAT_COUNTERS.contains(c)));
    out.push_str("## pg_stat_database, per second\n\n");
    let intervals = &r.server.stat_database;
    let mut columns = vec![Column::num("end (s)"), Column::num("length (s)")];
    columns.extend(shown.iter().map(|c| Column::num(format!("{c}/s"))));
    let mut t = Table::new(columns);
    for i in intervals {
        let mut row = vec![num(i.t_s, 1), num(i.duration_s, 1)];
        row.extend(
            shown
                .iter()
                .map(|c| num(i.rate.get(*c).copied().unwrap_or(0.0), 1)),
        );
        t.row(row);
    }
    let seconds: f64 = intervals.iter().map(|i| i.duration_s).sum();
    if seconds > 0.0 {
        let mut row = vec![Value::text("**average**"), num(seconds, 1)];
        row.extend(shown.iter().map(|c| {
            let total: i64 = intervals
                .iter()
                .map(|i| i.delta.get(*c).copied().unwrap_or(0))
                .sum();
            let avg = total as f64 / seconds;
            Value::num(avg, format!("**{avg:.1}**"))
        }));
        t.row(row);
    }
    out.push_str(&pipe::table(&t, Layout::Plain));
    if seconds <= 0.0 {
        out.push_str("No complete sample interval: observe for longer than the sample interval.\n");
    }
    out.push_str("\n## Wait events (client backends, once a second)\n\n");
    let w = &r.server.wait_events;
    let total: u64 = w.counts.values().sum();
    if total == 0 {
        let _ = writeln!(out, "No active backend was seen in {} samples.", w.samples);
    } else {
        let mut t = Table::new(vec![
            Column::text("wait event"),
            Column::num("backend samples"),
            Column::num("share"),
        ]);
        let mut counts: Vec<(&String, &u64)> = w.counts.iter().collect();
        counts.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (event, n) in counts {
            let share = 100.0 * *n as f64 / total as f64;
            t.row(vec![
                Value::text(event.as_str()),
                Value::count(*n),
                Value::num(share, format!("{share:.1}%")),
            ]);
        }
        out.push_str(&pipe::table(&t, Layout::Plain));
    }
    let s = &r.server.siread_locks;
    if !s.by_granularity.is_empty() {
        out.push_str("\n## SIRead locks (every sample interval)\n\n");
        let mut t = Table::new(vec![
            Column::text("granularity"),
            Column::num("mean"),
            Column::num("max"),
        ]);
        for (g, c) in &s.by_granularity {
            t.row(vec![
                Value::text(g.as_str()),
                num(c.mean, 1),
                Value::count(c.max),
            ]);
        }
        out.push_str(&pipe::table(&t, Layout::Plain));
    }
    out.push_str("\n## Top statements (pg_stat_statements, by execution time)\n\n");
    if let Some(note) = &r.statements_note {
        let _ = writeln!(out, "{note}");
    } else if r.statements.is_empty() {
        out.push_str("No statement ran.\n");
    } else {
        let mut t = Table::new(vec![
            Column::long("statement"),
            Column::num("calls"),
            Column::num("total (ms)"),
            Column::num("mean (ms)"),
            Column::num("rows"),
        ]);
        for st in &r.statements {
            let q: String = st.query.split_whitespace().collect::<Vec<_>>().join(" ");
            let q = if q.chars().count() > 120 {
                format!("{}…", q.chars().take(119).collect::<String>())
            } else {
                q
            };
            t.row(vec![
                Value::code(q),
                Value::count(st.calls as u64),
                num(st.total_ms, 1),
                num(st.mean_ms, 3),
                Value::count(st.rows as u64),
            ]);
        }
        out.push_str(&pipe::table(&t, Layout::Plain));
    }
    if !r.server.errors.is_empty() {
        out.push_str("\n## Sampling problems\n\n");
        for e in &r.server.errors {
            let _ = writeln!(out, "- {e}");
        }
    }
    out
}

/// A number shown with `places` decimals.
fn num(x: f64, places: usize) -> Value {
    Value::num(x, format!("{x:.places$}"))
}
