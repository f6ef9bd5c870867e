//! The `isobench` binary: parse flags, call the library, map the outcome to
//! an exit status ([`Exit`]).

use std::process::ExitCode;

use anyhow::Result;
use clap::{CommandFactory, FromArgMatches};
use tokio_util::sync::CancellationToken;

use isobench::cli::{AnomaliesArgs, Cli, Command, MonitorArgs, RunArgs};
use isobench::model::BadInput;
use isobench::postgres::reaper;
use isobench::{experiment, probe, report, store, workload};

/// The exit statuses (user guide, docs/src/reference/exit-status.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Exit {
    Done = 0,
    /// A failure at run time: the server, the network, a load.
    Error = 1,
    /// Input to fix: a flag, an experiment/script/probe file, a results
    /// directory (clap's own flag errors exit 2 too).
    BadInput = 2,
    /// Invariants violated with `--fail-on-violation`, or anomaly probes
    /// that differ from their `@expect` lines.
    Violations = 3,
    /// Ctrl-C or SIGTERM: what was measured is saved.
    Interrupted = 130,
}

impl Exit {
    /// The status of an error: [`Exit::BadInput`] when its chain holds a
    /// [`BadInput`], a results store that cannot be read, or an invalid
    /// workload setting, else [`Exit::Error`].
    fn of(e: &anyhow::Error) -> Exit {
        let bad = e.chain().any(|c| {
            c.is::<BadInput>()
                || c.downcast_ref::<store::StoreError>()
                    .is_some_and(store::StoreError::is_bad_input)
                || matches!(
                    c.downcast_ref::<workload::WorkloadError>(),
                    Some(workload::WorkloadError::Invalid(_))
                )
        });
        if bad { Exit::BadInput } else { Exit::Error }
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e as u8)
    }
}

fn main() -> ExitCode {
    reaper::install_panic_hook();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("ISOBENCH_LOG"))
        .with_writer(std::io::stderr)
        .init();
    let matches = Cli::command()
        .try_get_matches()
        .unwrap_or_else(|e| isobench::cmd::pgbench::exit_on_parse_error(e));
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("isobench: cannot start the async runtime: {e}");
            return Exit::Error.into();
        }
    };
    let code = runtime.block_on(dispatch(cli));
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match code {
        Ok(exit) => exit.into(),
        Err(e) => {
            eprintln!("isobench: {e:#}");
            Exit::of(&e).into()
        }
    }
}

async fn dispatch(cli: Cli) -> Result<Exit> {
    match cli.command.unwrap_or_else(|| Command::Run(Box::default())) {
        Command::Run(args) => run(*args).await,
        Command::Report(args) => {
            let mut results = store::load_dir(&args.dir)?;
            if args.baseline.is_some() {
                results.config.baseline = args.baseline;
                report::cells::check_baseline(&results)
                    .map_err(|e| BadInput(format!("--baseline: {e}")))?;
            }
            let model = report::model::ReportModel::new(&results);
            let written = report::files::write_model(&args.dir, &model, &args.format)
                .map_err(anyhow::Error::msg)?;
            let files: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
            out(&format!(
                "{}written: {}\n",
                report::terminal::summary_of(&model),
                files.join(", ")
            ));
            Ok(Exit::Done)
        }
        Command::Compare { a, b } => {
            let ra = store::load_dir(&a)?;
            let rb = store::load_dir(&b)?;
            report::compare::check(&ra, &rb).map_err(BadInput)?;
            out(&report::compare::render(
                &ra,
                &rb,
                &a.display().to_string(),
                &b.display().to_string(),
            ));
            Ok(Exit::Done)
        }
        Command::Merge(args) => {
            let merged = isobench::merge::merge_dirs(&args.dirs, &args.out)?;
            for w in &merged.warnings {
                eprintln!("isobench merge: warning: {w}");
            }
            let model = report::model::ReportModel::new(&merged.results);
            out(&format!(
                "{}merged {} director{} ({} run(s), {} interval log(s)) into {}\n",
                report::terminal::summary_of(&model),
                args.dirs.len(),
                if args.dirs.len() == 1 { "y" } else { "ies" },
                merged.results.runs.len(),
                merged.hlogs,
                args.out.display()
            ));
            Ok(Exit::Done)
        }
        Command::Monitor(args) => monitor(args).await,
        Command::Pgbench(args) => pgbench(*args).await,
        Command::Anomalies(args) => anomalies(*args).await,
        Command::CheckHistory { files } => check_history(&files),
        Command::Workloads { name } => {
            out(&workload::describe(name.as_deref())?);
            Ok(Exit::Done)
        }
        Command::Completions { shell } => {
            let mut script = Vec::new();
            isobench::cli::completions(shell, &mut script);
            out(&String::from_utf8_lossy(&script));
            Ok(Exit::Done)
        }
        Command::Man { dir: None } => {
            let mut page = Vec::new();
            isobench::cli::man_page(&mut page)?;
            out(&String::from_utf8_lossy(&page));
            Ok(Exit::Done)
        }
        Command::Man { dir: Some(dir) } => {
            let written = isobench::cli::man_pages(&dir)
                .map_err(|e| anyhow::anyhow!("man --dir {}: {e}", dir.display()))?;
            out(&format!(
                "written: {} page(s) in {}\n",
                written.len(),
                dir.display()
            ));
            Ok(Exit::Done)
        }
    }
}

/// `isobench check-history`: reads and checks each file, prints what the
/// checker found; [`Exit::Violations`] when any file has an anomaly.
///
/// Errors (bad input): a file that cannot be read, decompressed or parsed.
fn check_history(files: &[std::path::PathBuf]) -> Result<Exit> {
    let mut found = 0;
    for path in files {
        let bad = |what: String| BadInput(format!("{}: {what}", path.display()));
        let bytes = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
        let text = if bytes.starts_with(&[0x1f, 0x8b]) {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut text)
                .map_err(|e| bad(format!("not gzip text: {e}")))?;
            text
        } else {
            String::from_utf8(bytes).map_err(|e| bad(format!("not UTF-8 text: {e}")))?
        };
        let history = isobench::elle::parse(&text).map_err(|e| bad(e.to_string()))?;
        let started = std::time::Instant::now();
        let report = isobench::elle::check(&history);
        let took = started.elapsed().as_secs_f64();
        found += report.total();
        out(&format!(
            "{}: {} transactions, {} dependency edges, checked in {took:.2} s ({:.1} µs per transaction)\n{}",
            path.display(),
            report.txns,
            report.edges,
            1e6 * took / report.txns.max(1) as f64,
            report.render()
        ));
    }
    Ok(if found > 0 {
        Exit::Violations
    } else {
        Exit::Done
    })
}

async fn run(args: RunArgs) -> Result<Exit> {
    let cfg = args.into_study().map_err(|e| BadInput(e.to_string()))?;
    let quiet = cfg.quiet;
    let fail_on_violation = cfg.fail_on_violation;
    let cancel = CancellationToken::new();
    tokio::spawn(watch_signals(cancel.clone()));
    let outcome = match experiment::run(cfg, cancel.clone()).await {
        Ok(outcome) => outcome,
        // An error after Ctrl-C is most likely its consequence: still 130.
        Err(e) if cancel.is_cancelled() => {
            eprintln!("isobench: interrupted: {e:#}");
            return Ok(Exit::Interrupted);
        }
        Err(e) => return Err(e),
    };
    if !quiet {
        out(&format!(
            "{}results: {}\n",
            report::terminal::summary(&outcome.results),
            outcome.dir.display()
        ));
    }
    if outcome.interrupted {
        eprintln!(
            "isobench: interrupted; {} completed run(s) saved in {} (complete: false)",
            outcome.results.runs.iter().filter(|r| r.complete).count(),
            outcome.dir.display()
        );
        return Ok(Exit::Interrupted);
    }
    let failed = outcome
        .results
        .runs
        .iter()
        .filter(|r| r.load.is_some() && !r.complete)
        .count();
    if failed > 0 {
        eprintln!(
            "isobench: {failed} run(s) failed and were kept out of the statistics (on_error = continue); see Problems in {}",
            outcome.dir.join("report.md").display()
        );
    }
    let violated: Vec<u32> = outcome
        .results
        .runs
        .iter()
        .filter(|r| r.anomalies > 0)
        .map(|r| r.index)
        .collect();
    if fail_on_violation && !violated.is_empty() {
        eprintln!(
            "isobench: invariants violated in {} run(s) ({}) and --fail-on-violation is set",
            violated.len(),
            violated
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Ok(Exit::Violations);
    }
    Ok(Exit::Done)
}

/// `isobench pgbench`: pgbench's exit statuses (0, 1, 2: clients aborted,
/// with isobench's 130 for an interruption), its messages already printed.
async fn pgbench(args: isobench::cmd::pgbench::PgbenchArgs) -> Result<Exit> {
    use isobench::cmd::pgbench::Status;
    let cancel = CancellationToken::new();
    tokio::spawn(watch_signals(cancel.clone()));
    Ok(match isobench::cmd::pgbench::main(args, cancel).await {
        Status::Done => Exit::Done,
        Status::Failed => Exit::Error,
        // pgbench's 2 (some clients aborted) has BadInput's number.
        Status::Aborted => Exit::BadInput,
        Status::Interrupted => Exit::Interrupted,
    })
}

async fn monitor(args: MonitorArgs) -> Result<Exit> {
    let cfg = args.into_config();
    let cancel = CancellationToken::new();
    tokio::spawn(watch_signals(cancel.clone()));
    let (dir, results) = isobench::monitor::run(&cfg, cancel.clone()).await?;
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

async fn anomalies(args: AnomaliesArgs) -> Result<Exit> {
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
    let cfg = args.into_config();
    let cancel = CancellationToken::new();
    tokio::spawn(watch_signals(cancel.clone()));
    let outcome = match probe::command::run(&cfg, cancel.clone()).await {
        Ok(o) => o,
        Err(e) if cancel.is_cancelled() => {
            eprintln!("isobench: interrupted: {e:#}");
            return Ok(Exit::Interrupted);
        }
        Err(e) => return Err(e),
    };
    if !cfg.quiet {
        let width = terminal_width();
        out(&format!(
            "{}results: {}\n",
            report::anomalies::terminal(&outcome.matrix, width),
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
        target: args.target.into_config(),
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

/// The width to wrap tables to: `COLUMNS`, else the terminal's width when
/// stdout is one, else none (a pipe gets unwrapped lines).
fn terminal_width() -> Option<u16> {
    if let Some(w) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse::<u16>().ok())
    {
        return Some(w.max(40));
    }
    comfy_table::Table::new().width()
}

/// Writes to stdout; a closed pipe (`isobench workloads | head`) is not an
/// error.
fn out(text: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
}

/// First SIGINT/SIGTERM: stop the current run and save. Second: stop the
/// managed server at once and exit.
async fn watch_signals(cancel: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return;
    };
    tokio::select! { _ = int.recv() => {}, _ = term.recv() => {} }
    eprintln!(
        "\nisobench: stopping: saving what was measured and stopping the server (Ctrl-C again to abort now)"
    );
    cancel.cancel();
    tokio::select! { _ = int.recv() => {}, _ = term.recv() => {} }
    reaper::kill_all();
    eprintln!("isobench: aborted");
    std::process::exit(130);
}
