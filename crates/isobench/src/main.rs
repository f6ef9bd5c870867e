//! The `isobench` binary: parse flags, run the command ([`isobench::cmd`]),
//! map the outcome to an exit status ([`Exit`]).

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

use isobench::cmd::{self, Cli, Exit};
use isobench::postgres::reaper;

// mimalloc, the binary's choice of allocator: isobench's own sessions
// (loading, observers, checks) still go through tokio-postgres, which
// allocates per statement, and the reports allocate freely; a faster
// allocator leaves more of the machine to the server under test. It is
// built without transparent huge pages (`no_thp`, Cargo.toml). The
// `system-alloc` feature keeps the system allocator, for heap profilers
// that intercept `malloc` (heaptrack: BENCHMARKS.md, "Memory per client").
#[cfg(not(feature = "system-alloc"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    reaper::install_panic_hook();
    log_to_stderr();
    let matches = Cli::command()
        .try_get_matches()
        .unwrap_or_else(|e| cmd::pgbench::exit_on_parse_error(e));
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("isobench: cannot start the async runtime: {e}");
            return status(Exit::Error);
        }
    };
    let code = runtime.block_on(cmd::dispatch(cli));
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match code {
        Ok(exit) => status(exit),
        Err(e) => {
            eprintln!("isobench: {e:#}");
            status(Exit::of(&e))
        }
    }
}

fn status(e: Exit) -> ExitCode {
    ExitCode::from(e as u8)
}

/// Logging for debugging: `ISOBENCH_LOG=debug` (a level), or per target
/// (`ISOBENCH_LOG=warn,isobench_load=debug`), to stderr; errors only when
/// unset or unreadable.
fn log_to_stderr() {
    use tracing_subscriber::filter::{LevelFilter, Targets};
    use tracing_subscriber::prelude::*;
    let targets = std::env::var("ISOBENCH_LOG")
        .ok()
        .and_then(|v| v.parse::<Targets>().ok())
        .unwrap_or_else(|| Targets::new().with_default(LevelFilter::ERROR));
    tracing_subscriber::registry()
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
        .with(targets)
        .init();
}
