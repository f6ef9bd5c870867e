//! The run of `isobench pgbench`: the command line as the settings of
//! one isobench cell, run through the same driver as `isobench run`, with
//! pgbench's output.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, anyhow};
use tokio_util::sync::CancellationToken;

use super::flags::{End, Invocation};
use super::init::initialize;
use super::output::{Progress, summary};
use crate::engine::Tick;
use crate::model::TargetConfig;
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

    /// Only custom scripts: pgbench gives them `:scale` = `-s`, else 1.
    pub(super) fn custom_only(&self) -> bool {
        !self.files.is_empty() && self.builtins.is_empty()
    }

    /// The settings of the one cell `isobench run` would run for this
    /// command line: one repetition, no warm-up, quiet, `scale` the
    /// pgbench tables' scale.
    pub fn settings(&self, scale: u32) -> Settings {
        let mut defines = self.defines.clone();
        if self.custom_only() && !defines.iter().any(|(k, _)| k == "scale") {
            // pgbench: `:scale` is -s for custom scripts, else 1.
            defines.push(("scale".into(), self.scale.unwrap_or(1).to_string()));
        }
        let target = self.target();
        let mut s = Settings::default();
        s.file = (!self.files.is_empty()).then(|| self.files.clone());
        s.builtin = (!self.builtins.is_empty()).then(|| self.builtins.clone());
        s.define = (!defines.is_empty()).then_some(defines);
        s.protocol = Some(self.mode);
        s.scale = Some(vec![scale]);
        s.isolation = Some(vec![self.isolation]);
        s.clients = Some(vec![self.clients]);
        s.threads = Some(self.threads);
        match self.end {
            End::Time(secs) => s.duration = Some(Duration::from_secs(u64::from(secs))),
            End::Transactions(n) => s.transactions = Some(n),
        }
        s.warmup = Some(Duration::ZERO);
        s.repeat = Some(1);
        s.max_tries = Some(vec![self.max_tries]);
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
        s.out = self.out.clone();
        s.quiet = Some(true);
        s
    }
}

/// Scale of pgbench's tables in the named database (`count(*)` of
/// pgbench_branches, as pgbench reads it for built-in scripts); `None`
/// when there is no such table.
async fn named_scale(inv: &Invocation) -> Option<u32> {
    let target = crate::postgres::Target::external(inv.dsn().as_deref()).ok()?;
    let crate::postgres::Target::External(config) = &target else {
        return None;
    };
    let db = crate::postgres::connect(config).await.ok()?;
    let row = db
        .query_one("SELECT count(*) FROM pgbench_branches", &[])
        .await
        .ok()?;
    let n: i64 = row.get(0);
    u32::try_from(n).ok().filter(|n| *n > 0)
}

/// `isobench pgbench`: `-i`, or one run with pgbench's output. Returns
/// whether every run completed (false: interrupted).
///
/// Errors: as [`crate::experiment::run`], and a failed `-i`.
pub async fn run(inv: Invocation, cancel: CancellationToken) -> Result<bool> {
    if let Some(text) = &inv.print_only {
        print!("{text}");
        return Ok(true);
    }
    if inv.initialize {
        initialize(&inv).await?;
        return Ok(true);
    }
    // The data: on a named server, a copy of its pgbench tables' scale
    // (count of pgbench_branches, as pgbench reads it), else -s or 1.
    // pgbench's :scale is that count for built-in scripts (a -s given is
    // then ignored, with pgbench's warning), and -s or 1 for custom ones
    // (`Invocation::settings`).
    let mut scale = inv.scale.unwrap_or(1);
    if inv.named_server
        && let Some(n) = named_scale(&inv).await
    {
        if inv.scale.is_some() && !inv.builtins.is_empty() {
            eprintln!(
                "pgbench: warning: scale option ignored, using count from pgbench_branches table ({n})"
            );
        }
        scale = n;
    }
    let settings = inv.settings(scale);
    let cfg = crate::study::from_args(None, None, settings).map_err(|e| anyhow!("{e}"))?;
    println!(
        "pgbench (isobench {}, {})",
        env!("CARGO_PKG_VERSION"),
        if inv.named_server {
            "named server"
        } else {
            "managed server"
        }
    );
    let progress = Arc::new(Progress::new(&inv));
    let hook = {
        let p = progress.clone();
        Arc::new(move |t: &Tick| p.tick(t)) as crate::progress::TickHook
    };
    let outcome = crate::experiment::run_observed(cfg, cancel, Some(hook)).await?;
    let retried = progress.retried();
    let reported_scale = if inv.custom_only() {
        inv.scale.unwrap_or(1)
    } else {
        scale
    };
    match outcome.results.runs.last() {
        Some(r) => print!("{}", summary(&inv, r, reported_scale, retried)),
        None => eprintln!("pgbench: no run completed"),
    }
    eprintln!("isobench: results: {}", outcome.dir.display());
    Ok(!outcome.interrupted)
}
