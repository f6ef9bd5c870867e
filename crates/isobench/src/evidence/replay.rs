//! Replaying a violation's spec on the server that showed it, many times:
//! a violation that every replay prevents depends on timing (a race),
//! not on the statements alone, and a bug report should say so.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio_util::sync::CancellationToken;

use crate::postgres;
use crate::probe::exec::WaitCheck;
use crate::probe::spec::parse_syntax;
use crate::probe::suite::tester::{Sink, Stop, Tester};

/// Replays per violation.
pub const REPLAYS: usize = 100;

/// What the replays did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Replayed {
    pub times: usize,
    /// Replays in which every step ran without an error: the anomaly's
    /// statements all committed in the observed order.
    pub committed: usize,
    /// Replays stopped by an error, by its first error line (e.g.
    /// `ERROR:  could not serialize access due to read/write dependencies
    /// among transactions`).
    pub prevented: BTreeMap<String, usize>,
    /// Replays the isolation tester gave up on (a step blocked past the
    /// step timeout), with its reason.
    pub stopped: BTreeMap<String, usize>,
    /// The first replay's output, as isolationtester prints it.
    pub first_output: Option<String>,
}

impl Replayed {
    /// `replay.txt`'s text: the tally, and what it means.
    pub fn summary(&self) -> String {
        let prevented: usize = self.prevented.values().sum();
        let mut s = format!(
            "replayed {} time(s) on the same server: {} all committed, {} prevented, {} stopped\n",
            self.times,
            self.committed,
            prevented,
            self.stopped.values().sum::<usize>()
        );
        for (line, n) in &self.prevented {
            let _ = writeln!(s, "  prevented {n} of {}: {line}", self.times);
        }
        for (why, n) in &self.stopped {
            let _ = writeln!(s, "  stopped {n} of {}: {why}", self.times);
        }
        s.push('\n');
        if self.committed == 0 && prevented == self.times {
            s.push_str(
                "Every replay was prevented: the server catches the dangerous structure when the \
                 statements come one at a time in this order, so the violation depends on timing \
                 (a race between these transactions' steps), not on the statements alone.\n",
            );
        } else if self.committed > 0 {
            s.push_str(
                "Some replays committed every step: compare their reads (replay.out) with \
                 cycle.txt; if they match, the statements alone reproduce the anomaly.\n",
            );
        }
        s
    }
}

/// Runs `spec_text` `times` times against `config` (a database the spec
/// may create and drop its tables in), each run as isolationtester would,
/// with `step_timeout` per step.
///
/// Errors: a spec that does not parse (a bug), a server that cannot be
/// reached.
pub async fn replay(
    spec_text: &str,
    config: &tokio_postgres::Config,
    times: usize,
    step_timeout: Duration,
    cancel: &CancellationToken,
) -> Result<Replayed> {
    let syntax = parse_syntax(spec_text, "replay.spec").context("the replay spec")?;
    let permutations = syntax.permutations.clone();
    let ctl = postgres::connect(config).await?;
    let wait_check = WaitCheck::detect(&ctl).await?;
    drop(ctl);
    let mut r = Replayed {
        times: 0,
        ..Replayed::default()
    };
    for _ in 0..times {
        if cancel.is_cancelled() {
            break;
        }
        let sink = Sink {
            text: String::new(),
            echo: false,
        };
        let mut t = Tester::connect(
            &syntax,
            config,
            wait_check,
            step_timeout,
            cancel.clone(),
            sink,
        )
        .await
        .map_err(|e| anyhow::anyhow!("connecting the replay's sessions: {e}"))?;
        let outcome = t.run(&permutations).await;
        let text = std::mem::take(&mut t.sink.text);
        match outcome {
            Ok(()) => {}
            Err(Stop::Server(e)) => anyhow::bail!("replaying: {e}"),
            Err(Stop::Interrupted) => break,
            Err(Stop::Aborted(why)) => {
                t.cleanup().await;
                *r.stopped.entry(why).or_default() += 1;
                r.times += 1;
                r.first_output.get_or_insert(text);
                continue;
            }
        }
        r.times += 1;
        match text.lines().find(|l| l.starts_with("ERROR:")) {
            Some(line) => *r.prevented.entry(line.to_string()).or_default() += 1,
            None => r.committed += 1,
        }
        r.first_output.get_or_insert(text);
    }
    Ok(r)
}

/// The database replays run in, on the study's server.
const SCRATCH: &str = "isobench_replay";

/// Creates the replay's database (empty, from template0) on `target` and
/// returns its connection settings.
///
/// Errors: the server refuses (an external server without the right to
/// create a database, for one).
pub async fn scratch_database(target: &postgres::Target) -> Result<tokio_postgres::Config> {
    let admin = postgres::connect(&target.config(&target.admin_db())).await?;
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {SCRATCH}"))
        .await?;
    admin
        .batch_execute(&format!("CREATE DATABASE {SCRATCH} TEMPLATE template0"))
        .await
        .with_context(|| format!("creating database {SCRATCH}"))?;
    let mut config = target.config(SCRATCH);
    postgres::own_session(&mut config, "replay");
    Ok(config)
}

/// Drops the replay's database.
///
/// Errors: the server's.
pub async fn drop_scratch(target: &postgres::Target) -> Result<()> {
    let admin = postgres::connect(&target.config(&target.admin_db())).await?;
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {SCRATCH}"))
        .await?;
    Ok(())
}
