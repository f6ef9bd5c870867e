//! `isobench anomalies`: which anomalies each isolation level prevents (the
//! built-in probes, [`probes`]), and `--spec`: PostgreSQL's own isolation
//! specs run unchanged ([`crate::probe::suite`]).

pub mod probes;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use tokio_util::sync::CancellationToken;

use super::{Exit, WidthArg, out, watch_signals};
use crate::model::{AnomaliesConfig, Isolation, PgBuild, TargetConfig};
use crate::study::values::{self, Parse};
use crate::{probe, report};

/// Flags of `isobench anomalies`.
#[derive(Debug, Args)]
pub struct AnomaliesArgs {
    /// Isolation levels (the matrix's columns): read-committed|rc, repeatable-read|rr, serializable|ser.
    #[arg(long, value_delimiter = ',', default_value = "rc,rr,ser")]
    pub isolation: Vec<Isolation>,
    /// A built-in probe (e.g. G2-item) or a probe file in isolation-tester spec syntax; repeatable (default: every built-in probe).
    #[arg(long = "probe", value_name = "NAME|FILE")]
    pub probes: Vec<String>,
    /// A PostgreSQL isolation-tester spec to run unchanged, writing isolationtester's output to DIR/NAME.out; repeatable; a directory of specs or an isolation_schedule file also.
    #[arg(long = "spec", value_name = "FILE|DIR", conflicts_with_all = ["probes", "list"])]
    pub specs: Vec<PathBuf>,
    /// With --spec: compare each NAME.out with DIR/NAME.out and exit 3 on any difference.
    #[arg(long, value_name = "DIR", requires = "specs")]
    pub expected: Option<PathBuf>,
    /// With --spec: the most permutations a spec without `permutation` lines may expand to.
    #[arg(long, value_name = "N", default_value_t = crate::probe::suite::DEFAULT_MAX_PERMUTATIONS, requires = "specs")]
    pub max_permutations: u64,
    /// How long a step may run, or wait on a lock, before the probe is reported stuck (with --spec: cancelled, and the spec given up after twice this).
    #[arg(long, default_value = "5s", value_parser = values::PositiveDur::parse, allow_hyphen_values = true)]
    pub step_timeout: Duration,
    /// List the built-in probes and exit.
    #[arg(long)]
    pub list: bool,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Directory with the managed server's binaries (initdb, postgres).
    #[arg(long, value_name = "[NAME=]DIR", value_parser = pg_build)]
    pub pg_bin: Option<PgBuild>,
    /// Results directory for anomalies.md and anomalies.json (default `results/anomalies-<timestamp>`).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// No progress and no matrix on stdout (mismatches still go to stderr).
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub width: WidthArg,
}

impl AnomaliesArgs {
    /// The plain configuration.
    pub fn into_config(self) -> AnomaliesConfig {
        AnomaliesConfig {
            levels: crate::study::dedup(self.isolation),
            probes: self.probes,
            step_timeout: self.step_timeout,
            target: TargetConfig {
                pg_bin: self.pg_bin,
                ..self.target.into_config()
            },
            out: self.out,
            quiet: self.quiet,
        }
    }
}

/// Which server `anomalies` tests: a managed one (default) or an external
/// one. `run` has the same flags as study settings ([`crate::study::Settings`]), read by
/// the same parsers.
#[derive(Debug, Args)]
pub struct TargetArgs {
    /// External server as a libpq URL or key=value string (password never printed).
    #[arg(long, env = "ISOBENCH_DSN", hide_env_values = true, value_parser = crate::study::values::DsnArg)]
    pub dsn: Option<String>,
    /// External server from the libpq variables PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE.
    #[arg(long, conflicts_with = "dsn")]
    pub external: bool,
    /// Managed server setting, repeatable: --set shared_buffers=256MB.
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = setting)]
    pub settings: Vec<(String, String)>,
    /// OS user that runs the managed server when isobench runs as root.
    #[arg(long, default_value = "postgres")]
    pub server_user: String,
}

impl TargetArgs {
    /// The plain target configuration.
    pub fn into_config(self) -> TargetConfig {
        TargetConfig {
            dsn: self.dsn,
            external_from_env: self.external,
            pg_bin: None,
            settings: self.settings,
            server_user: self.server_user,
            // The probes' sessions go to the first host that accepts, as
            // libpq's and isobench's own connections do.
            host_policy: crate::model::HostPolicy::First,
            cluster: Default::default(),
        }
    }
}

/// A `--set NAME=VALUE` of `anomalies` (one value).
fn setting(s: &str) -> Result<(String, String), String> {
    values::setting(s).map(|(k, mut v)| (k, v.remove(0)))
}

/// `--pg-bin [NAME=]DIR` of `anomalies`.
fn pg_build(s: &str) -> Result<PgBuild, String> {
    values::Build::parse(s)
}

/// Runs the probes (or, with `--spec`, the specs) and prints the matrix;
/// [`Exit::Violations`] when a result differs from a probe's `@expect`.
///
/// Errors: bad probe files or flags, a server that does not start.
pub async fn run(args: AnomaliesArgs) -> Result<Exit> {
    if args.list {
        let probes = probe::builtin()?;
        let mut text = String::new();
        for p in &probes {
            text.push_str(&format!("{:<26} {}\n", p.name, p.title));
        }
        out(&text);
        return Ok(Exit::Done);
    }
    if !args.specs.is_empty() {
        return isolation_specs(args).await;
    }
    let width = args.width.columns();
    let cfg = args.into_config();
    let cancel = CancellationToken::new();
    tokio::spawn(watch_signals(cancel.clone()));
    let outcome = match probes::run(&cfg, cancel.clone()).await {
        Ok(o) => o,
        Err(e) if cancel.is_cancelled() => {
            eprintln!("isobench: interrupted: {e:#}");
            return Ok(Exit::Interrupted);
        }
        Err(e) => return Err(e),
    };
    if !cfg.quiet {
        out(&format!(
            "{}results: {}\n",
            report::render::anomalies::terminal(&outcome.matrix, width),
            outcome.dir.display()
        ));
    }
    if !outcome.matrix.complete {
        eprintln!(
            "isobench: interrupted; the {} probe(s) done are saved in {}",
            outcome.matrix.probes.len(),
            outcome.dir.display()
        );
        return Ok(Exit::Interrupted);
    }
    let mismatches = outcome.matrix.mismatches();
    if !mismatches.is_empty() {
        for m in &mismatches {
            eprint!("{}", m.explain());
        }
        eprintln!(
            "isobench: {} result(s) differ from the probes' @expect lines",
            mismatches.len()
        );
        return Ok(Exit::Violations);
    }
    Ok(Exit::Done)
}

/// `isobench anomalies --spec`: PostgreSQL's isolation specs, unchanged.
/// One spec's output goes to stdout (the summary then to stderr).
async fn isolation_specs(args: AnomaliesArgs) -> Result<Exit> {
    let quiet = args.quiet;
    let cfg = probe::suite::SuiteConfig {
        specs: args.specs,
        expected: args.expected,
        max_permutations: args.max_permutations,
        step_timeout: args.step_timeout,
        // The managed server from --pg-bin's binaries, as for the probes
        // (it was dropped here: the specs ran on the default build).
        target: TargetConfig {
            pg_bin: args.pg_bin,
            ..args.target.into_config()
        },
        out: args.out,
        quiet,
    };
    let cancel = CancellationToken::new();
    tokio::spawn(watch_signals(cancel.clone()));
    let summary = probe::suite::run(&cfg, cancel).await?;
    let text = probe::suite::report(&summary, cfg.expected.is_some());
    if summary.echoed {
        eprint!("{text}");
    } else if !quiet {
        out(&text);
    }
    for s in &summary.specs {
        if let Some(stop) = &s.stopped {
            eprintln!(
                "isobench: {}: stopped where isolationtester exits: {stop}",
                s.name
            );
        }
    }
    if !summary.complete {
        eprintln!(
            "isobench: interrupted; the outputs done are in {}",
            summary.dir.display()
        );
        return Ok(Exit::Interrupted);
    }
    if summary.differing().next().is_some() {
        if quiet {
            eprint!("{text}");
        }
        return Ok(Exit::Violations);
    }
    Ok(Exit::Done)
}
