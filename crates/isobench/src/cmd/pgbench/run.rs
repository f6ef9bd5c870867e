//! A benchmark run of `isobench pgbench`: where it runs, what pgbench
//! does before it (the setup connection, the table checks of
//! `GetTableInfo`, `starting vacuum...end.`), the command line as the
//! settings of one isobench cell, the run through the same driver as
//! `isobench run`, and pgbench's summary after it.
//!
//! Where it runs: on a named server (any connection option, DBNAME or
//! libpq variable), in DBNAME itself, on its own tables and functions, as
//! pgbench does; with `--fresh-copy`, and always on the managed server,
//! in a fresh copy that isobench loads with pgbench's tables, as
//! `isobench run` does.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, anyhow};
use tokio_postgres::{Client, Config, NoTls};
use tokio_util::sync::CancellationToken;

use super::Status;
use super::flags::{End, Invocation, PartitionMethod, ScriptSource};
use super::output::{self, Progress, server_error};
use super::version::Pgbench;
use crate::engine::Tick;
use crate::model::{Isolation, PgbenchRules, TargetConfig};
use crate::postgres::Target;
use crate::study::Settings;

impl Invocation {
    /// The named server as a libpq `key=value` string (libpq's variables
    /// fill what it leaves out); `None` for the managed server.
    pub fn dsn(&self) -> Option<String> {
        if !self.named_server {
            return None;
        }
        let quote = |v: &str| format!("'{}'", v.replace('\\', "\\\\").replace('\'', "\\'"));
        let c = &self.connection;
        let parts: Vec<String> = [
            ("host", &c.host),
            ("port", &c.port),
            ("user", &c.user),
            ("dbname", &c.dbname),
            ("options", &c.options),
        ]
        .iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}={}", quote(v))))
        .collect();
        Some(parts.join(" "))
    }

    /// The target of `-i` and of the run: the named server or a managed one
    /// (given PGOPTIONS' other settings).
    pub(super) fn target(&self) -> TargetConfig {
        TargetConfig {
            dsn: self.dsn(),
            external_from_env: self.named_server,
            settings: if self.named_server {
                Vec::new()
            } else {
                self.pgoptions_settings.clone()
            },
            server_user: "postgres".into(),
            // As pgbench's libpq: every client to the first host that
            // accepts (-h h1,h2 is failover, not spreading).
            host_policy: crate::model::HostPolicy::First,
            ..TargetConfig::default()
        }
    }

    /// Whether the run uses DBNAME itself (pgbench's way) rather than a
    /// fresh copy.
    pub(super) fn in_place(&self) -> bool {
        self.named_server && !self.fresh_copy
    }

    /// The settings of the one cell `isobench run` would run for this
    /// command line: one repetition, no warm-up, quiet, `scale` the
    /// pgbench tables' scale (for a fresh copy's load and built-in
    /// scripts' `:scale`), at `isolation`.
    pub fn settings(&self, scale: u32, isolation: Isolation) -> Settings {
        let mut defines = self.defines.clone();
        if self.custom_only() && !defines.iter().any(|(k, _)| k == "scale") {
            // pgbench: `:scale` is -s for custom scripts, else 1.
            defines.push(("scale".into(), self.scale.unwrap_or(1).to_string()));
        }
        let target = self.target();
        let mut s = Settings::default();
        let files: Vec<(String, u32)> = self
            .scripts
            .iter()
            .filter_map(|c| match &c.source {
                ScriptSource::File(f) if f == "-" => Some((
                    super::flags::stdin_script_path().display().to_string(),
                    c.weight,
                )),
                ScriptSource::File(f) => Some((f.clone(), c.weight)),
                ScriptSource::Builtin(_) => None,
            })
            .collect();
        let builtins: Vec<(String, u32)> = self
            .scripts
            .iter()
            .filter_map(|c| match &c.source {
                ScriptSource::Builtin(b) => Some((b.to_string(), c.weight)),
                ScriptSource::File(_) => None,
            })
            .collect();
        s.file = (!files.is_empty()).then_some(files);
        s.builtin = (!builtins.is_empty()).then_some(builtins);
        s.define = (!defines.is_empty()).then_some(defines);
        s.protocol = Some(self.mode);
        s.scale = Some(vec![scale]);
        s.isolation = Some(vec![isolation]);
        s.clients = Some(vec![self.clients]);
        s.threads = Some(self.threads);
        match self.end {
            End::Time(secs) => s.duration = Some(Duration::from_secs(u64::from(secs))),
            End::Transactions(n) => s.transactions = Some(n),
        }
        s.warmup = Some(Duration::ZERO);
        s.repeat = Some(1);
        // pgbench's unlimited tries (0, with -T or -L only): the duration
        // or the latency limit ends them.
        s.max_tries = Some(vec![if self.max_tries == 0 {
            u32::MAX
        } else {
            self.max_tries
        }]);
        s.rate = self.rate.map(|r| vec![r]);
        s.latency_limit = self
            .latency_limit_ms
            .map(|ms| Duration::from_secs_f64(ms / 1000.0));
        s.seed = self.seed;
        match target.dsn {
            // Only PG* variables name the server: libpq's environment.
            Some(d) if d.is_empty() => s.external = Some(true),
            d => s.dsn = d,
        }
        s.settings = (!target.settings.is_empty()).then(|| {
            target
                .settings
                .iter()
                .map(|(k, v)| (k.clone(), vec![v.clone()]))
                .collect()
        });
        // pgbench runs come fast: a directory per process, not per second.
        s.out = Some(self.out.clone().unwrap_or_else(|| {
            std::path::PathBuf::from("results").join(format!(
                "pgbench-{}-{}",
                chrono::Local::now().format("%Y%m%d-%H%M%S"),
                std::process::id()
            ))
        }));
        s.quiet = Some(true);
        s
    }

    /// What `isobench pgbench` changes in the run (pgbench's rules).
    fn rules(&self) -> PgbenchRules {
        PgbenchRules {
            in_place: self.in_place(),
            connect_per_transaction: self.connect,
            debug: self.debug,
            verbose_errors: self.verbose_errors,
            exit_on_abort: self.exit_on_abort,
        }
    }
}

/// A connection for setup (pgbench's first connection, before the
/// clients'), to the named server, or to a managed server started for
/// it (returned too: dropping it stops the server); `purpose` is what
/// pgbench names it after a failure (`setup`, `initialization`).
///
/// Errors: the connection failed, in libpq's words (`connection to server
/// on socket "..." failed: FATAL:  ...`, with its hint when no server
/// answered), then pgbench's `could not create connection for setup`.
pub(super) async fn connect_setup(
    inv: &Invocation,
    purpose: &str,
) -> Result<(Client, Option<Target>)> {
    let log = std::env::temp_dir().join(format!("isobench-pgbench-{}.log", std::process::id()));
    let target = crate::postgres::start(&inv.target(), &log, 20).await?;
    let (mut config, keep) = match target {
        Target::External(c) => (c, None),
        t @ Target::Managed(_) => (t.config("postgres"), Some(t)),
    };
    crate::postgres::own_session(&mut config, "pgbench-setup");
    match tokio::time::timeout(Duration::from_secs(15), config.connect(NoTls)).await {
        Ok(Ok((client, mut connection))) => {
            // The server's notices on stderr, as libpq's default notice
            // processor prints them for pgbench (`NOTICE:  table
            // "pgbench_accounts" does not exist, skipping`).
            tokio::spawn(async move {
                use tokio_postgres::AsyncMessage;
                while let Some(m) = std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                    match m {
                        Ok(AsyncMessage::Notice(n)) => {
                            eprint!("{}", output::libpq_text(&n, None, false))
                        }
                        Ok(_) => {}
                        Err(_) => break,
                    }
                }
            });
            Ok((client, keep))
        }
        Ok(Err(e)) => Err(anyhow!(
            "{}\npgbench: error: could not create connection for {purpose}",
            connection_failed(&config, &e)
        )),
        Err(_) => Err(anyhow!(
            "{}\npgbench: error: could not create connection for {purpose}",
            connection_failed_because(&config, "timeout expired")
        )),
    }
}

/// The server's `server_version_num` (0 when it cannot be read).
pub(super) async fn server_version_num(db: &Client) -> i32 {
    db.query_one("SHOW server_version_num", &[])
        .await
        .ok()
        .and_then(|r| r.get::<_, String>(0).parse().ok())
        .unwrap_or(0)
}

/// libpq's `connection to server ... failed: ...` for `e`: the server's
/// error, or the system's (`Connection refused`, as `strerror` words it)
/// with libpq's hint on the next line when nothing answered.
fn connection_failed(config: &Config, e: &tokio_postgres::Error) -> String {
    let unix = matches!(
        config.get_hosts().first(),
        Some(tokio_postgres::config::Host::Unix(_))
    );
    let why = match e.as_db_error() {
        Some(db) => format!("{}:  {}", db.severity(), db.message()),
        None => {
            let mut text = e.to_string();
            let mut io = None;
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                text = s.to_string();
                if let Some(i) = s.downcast_ref::<std::io::Error>() {
                    io = Some(i.kind());
                }
                source = s.source();
            }
            // Rust's text adds the number: ` (os error 111)`.
            if let Some(at) = text.rfind(" (os error ") {
                text.truncate(at);
            }
            use std::io::ErrorKind::{ConnectionRefused, NotFound};
            match (io, unix) {
                (Some(ConnectionRefused | NotFound), true) => text.push_str(
                    "\n\tIs the server running locally and accepting connections on that socket?",
                ),
                (Some(ConnectionRefused), false) => text.push_str(
                    "\n\tIs the server running on that host and accepting TCP/IP connections?",
                ),
                _ => {}
            }
            text
        }
    };
    connection_failed_because(config, &why)
}

fn connection_failed_because(config: &Config, why: &str) -> String {
    let port = config.get_ports().first().copied().unwrap_or(5432);
    match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Unix(dir)) => format!(
            "connection to server on socket \"{}/.s.PGSQL.{port}\" failed: {why}",
            dir.display()
        ),
        Some(tokio_postgres::config::Host::Tcp(h)) => {
            format!("connection to server at \"{h}\", port {port} failed: {why}")
        }
        None => format!("connection to server failed: {why}"),
    }
}

/// What pgbench learns of the tables before a run with built-in scripts
/// (`GetTableInfo`): the scale (the rows of pgbench_branches) and how
/// pgbench_accounts is partitioned.
pub(super) struct Tables {
    pub scale: u32,
    pub partitions: Option<(PartitionMethod, u32)>,
}

/// pgbench's `GetTableInfo` on `db` (database `dbname`), as pgbench `v`
/// words its errors.
///
/// Errors: pgbench's, with its hint to run `-i` first.
async fn table_info(db: &Client, dbname: &str, v: Pgbench) -> Result<Tables> {
    let hint = format!(
        "\npgbench: hint: Perhaps you need to do initialization (\"pgbench -i\") in database \"{dbname}\"."
    );
    let count = db
        .query_one("select count(*) from pgbench_branches", &[])
        .await
        .map_err(|e| {
            anyhow!(
                "could not count number of branches: {}{hint}",
                server_error(&e)
            )
        })?;
    let n: i64 = count.get(0);
    if n <= 0 {
        return Err(anyhow!("invalid count(*) from pgbench_branches: \"{n}\""));
    }
    // pgbench_accounts first in the search path, and its partitioning.
    let row = db
        .query_opt(
            "select o.n, p.partstrat, pg_catalog.count(i.inhparent)::int4 \
             from pg_catalog.pg_class as c \
             join pg_catalog.pg_namespace as n on (n.oid = c.relnamespace) \
             cross join lateral (select pg_catalog.array_position(pg_catalog.current_schemas(true), n.nspname)) as o(n) \
             left join pg_catalog.pg_partitioned_table as p on (p.partrelid = c.oid) \
             left join pg_catalog.pg_inherits as i on (c.oid = i.inhparent) \
             where c.relname = 'pgbench_accounts' and o.n is not null \
             group by 1, 2 order by 1 asc limit 1",
            &[],
        )
        .await
        .map_err(|e| anyhow!("{}", server_error(&e)))?
        .ok_or_else(|| {
            // pgbench 18 quotes the name.
            let path = match v {
                Pgbench::V15 => "search_path",
                Pgbench::V18 => "\"search_path\"",
            };
            anyhow!("no pgbench_accounts table found in {path}{hint}")
        })?;
    let strategy: Option<i8> = row.get(1);
    let parts: i32 = row.get(2);
    let partitions = match strategy.map(|s| s as u8 as char) {
        Some('r') => Some((PartitionMethod::Range, parts as u32)),
        Some('h') => Some((PartitionMethod::Hash, parts as u32)),
        _ => None,
    };
    Ok(Tables {
        scale: u32::try_from(n).unwrap_or(u32::MAX),
        partitions,
    })
}

/// pgbench's vacuum before a run (without `-n`): errors are printed and
/// ignored, as `tryExecuteStatement` does.
async fn vacuum(db: &Client, all: bool) {
    let try_execute = |sql: &'static str| async move {
        if let Err(e) = db.batch_execute(sql).await {
            eprintln!(
                "pgbench: error: {}\npgbench: detail: (ignoring this error and continuing anyway)",
                server_error(&e)
            );
        }
    };
    eprint!("starting vacuum...");
    try_execute("vacuum pgbench_branches").await;
    try_execute("vacuum pgbench_tellers").await;
    try_execute("truncate pgbench_history").await;
    eprintln!("end.");
    if all {
        eprint!("starting vacuum pgbench_accounts...");
        try_execute("vacuum analyze pgbench_accounts").await;
        eprintln!("end.");
    }
}

/// The level the run's sessions get on the named server (PGOPTIONS, the
/// role's and database's settings, the server's default), as pgbench's
/// sessions would.
async fn session_isolation(db: &Client) -> Result<Isolation> {
    let level: String = db
        .query_one("SHOW default_transaction_isolation", &[])
        .await
        .map_err(|e| anyhow!("{}", server_error(&e)))?
        .get(0);
    level.parse().map_err(|e| anyhow!("{e}"))
}

/// The thread (from 0) that pgbench gives client `client` of `clients`
/// over `threads` threads: consecutive blocks, the first threads taking
/// the larger ones (as the engine deals them).
fn thread_of(client: u32, clients: u32, threads: u32) -> u32 {
    let threads = threads.clamp(1, clients.max(1));
    let mut dealt = 0;
    for t in 0..threads {
        dealt += (clients - dealt + threads - t - 1) / (threads - t);
        if client < dealt {
            return t;
        }
    }
    threads - 1
}

/// `isobench pgbench` without `-i`: the checks before the run, the run,
/// its summary; every message printed. See the module docs.
pub(super) async fn bench(inv: Invocation, cancel: CancellationToken) -> Status {
    let stdin = inv
        .scripts
        .iter()
        .any(|s| s.source == ScriptSource::File("-".into()));
    let status = bench_inner(inv, cancel).await;
    if stdin {
        let _ = std::fs::remove_file(super::flags::stdin_script_path());
    }
    match status {
        Ok(status) => status,
        Err(e) => {
            eprintln!("pgbench: error: {e:#}");
            Status::Failed
        }
    }
}

async fn bench_inner(inv: Invocation, cancel: CancellationToken) -> Result<Status> {
    let builtin = !inv.custom_only();
    // The scale and isolation level of the run, and its tables' layout.
    let mut scale = inv.scale.unwrap_or(1);
    let mut isolation = inv.isolation;
    let mut partitions = None;
    let banner = if inv.named_server {
        let (db, _) = connect_setup(&inv, "setup").await?;
        let server: String = db
            .query_one("SHOW server_version", &[])
            .await
            .map(|r| r.get(0))
            .unwrap_or_default();
        output::out(&format!(
            "pgbench (isobench {}, server {server})\n",
            env!("CARGO_PKG_VERSION")
        ));
        if inv.debug {
            output::debug_setup(&inv);
        }
        if builtin {
            let dbname = crate::postgres::Target::external(inv.dsn().as_deref())
                .map(|t| t.admin_db())
                .unwrap_or_default();
            let v = Pgbench::for_server(server_version_num(&db).await);
            let t = table_info(&db, &dbname, v).await?;
            if inv.scale.is_some() {
                eprintln!(
                    "pgbench: warning: scale option ignored, using count from pgbench_branches table ({})",
                    t.scale
                );
            }
            scale = t.scale;
            partitions = t.partitions;
        }
        if inv.in_place() {
            isolation = session_isolation(&db).await?;
            if !inv.no_vacuum {
                vacuum(&db, inv.vacuum_all).await;
            }
            None
        } else {
            // --fresh-copy: DBNAME is left alone; the copy is vacuumed.
            Some(String::new())
        }
    } else {
        Some(format!(
            "pgbench (isobench {}, managed server)\n",
            env!("CARGO_PKG_VERSION")
        ))
    };
    let mut cfg = crate::study::from_args(None, None, inv.settings(scale, isolation))
        .map_err(|e| anyhow!("{e}"))?;
    cfg.pgbench = Some(inv.rules());
    cfg.scripts.order = inv
        .scripts
        .iter()
        .map(|s| matches!(s.source, ScriptSource::Builtin(_)))
        .collect();
    if let Some(b) = banner {
        output::out(&b);
        if !inv.no_vacuum {
            // The fresh copy is vacuumed and analyzed before the run anyway.
            eprintln!("starting vacuum...end.");
        }
    }
    let progress = Arc::new(Progress::new(&inv));
    // Several scripts: their `SQL script N:` blocks' retry and skip counts.
    let tally = Arc::new(super::tally::Tally::default());
    let hook = {
        let p = progress.clone();
        Arc::new(move |t: &Tick| p.tick(t)) as crate::progress::TickHook
    };
    // --exit-on-abort: the first client that aborts ends the run as
    // Ctrl-C would; Ctrl-C still ends it too.
    let run_cancel = cancel.child_token();
    if inv.exit_on_abort {
        let (abort, _) = crate::pgbench::run::run_aborted();
        let end = run_cancel.clone();
        tokio::spawn(async move {
            abort.cancelled().await;
            end.cancel();
        });
    }
    let outcome = crate::executor::run_observed(
        cfg,
        run_cancel.clone(),
        crate::executor::Hooks {
            on_tick: Some(hook),
            tx_log: if inv.per_script() {
                Some(super::tally::hook(tally.clone(), super::logs::hook(&inv)?))
            } else {
                super::logs::hook(&inv)?
            },
            reports: crate::cmd::reports::ReportFiles::hook(),
        },
    )
    .await;
    if let (true, (_, Some(client))) = (inv.exit_on_abort, crate::pgbench::run::run_aborted()) {
        // pgbench's thread exits the process: no summary.
        eprintln!(
            "pgbench: error: Run was aborted due to an error in thread {}",
            thread_of(client, inv.clients, inv.threads)
        );
        return Ok(Status::Aborted);
    }
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) if cancel.is_cancelled() => {
            eprintln!("pgbench: error: interrupted: {e:#}");
            return Ok(Status::Interrupted);
        }
        Err(e) => return Err(e),
    };
    let reported_scale = if inv.custom_only() {
        inv.scale.unwrap_or(1)
    } else {
        scale
    };
    let Some(r) = outcome.results.runs.last() else {
        return Err(anyhow!("no run completed"));
    };
    let totals = progress.totals();
    output::out(&output::summary(
        &inv,
        r,
        &output::Extra {
            scale: reported_scale,
            partitions,
            retried: totals.retried_tx,
            initial_connect_ms: totals.initial_connect_ms,
            connect_ms: totals.connect_ms,
            scripts: tally.counts(inv.scripts.len()),
            pgbench: Pgbench::for_server(outcome.results.environment.server_version_num),
        },
    ));
    output::out(&format!("isobench results: {}\n", outcome.dir.display()));
    if outcome.interrupted {
        return Ok(Status::Interrupted);
    }
    if !r.complete || crate::pgbench::run::any_aborted() {
        eprintln!("pgbench: error: Run was aborted; the above results are incomplete.");
        return Ok(Status::Aborted);
    }
    Ok(Status::Done)
}
