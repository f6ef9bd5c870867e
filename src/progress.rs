//! What the user sees while an experiment runs: a live progress bar on a
//! terminal (run i of N, ETA, current tps/p99/failures), one plain line per
//! finished run on stderr otherwise, nothing with `--quiet`.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::engine::{Phase, Tick};
use crate::store::{Cell, RunRecord};

/// Progress reporting for one experiment.
pub struct Progress {
    quiet: bool,
    bar: Option<ProgressBar>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    total: usize,
    run_ms: u64,
    index: u32,
    label: String,
}

impl Progress {
    /// A bar only when stdout and stderr are terminals and not `quiet`.
    pub fn new(quiet: bool) -> Self {
        let live = !quiet && std::io::stdout().is_terminal() && std::io::stderr().is_terminal();
        let bar = live.then(|| {
            let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {bar:30} ETA {eta}  {msg}",
                )
                .expect("valid template"),
            );
            bar
        });
        Progress {
            quiet,
            bar,
            state: Mutex::new(State::default()),
        }
    }

    /// A one-off line (results directory, target, load time).
    pub fn note(&self, line: &str) {
        if self.quiet {
            return;
        }
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }

    /// The experiment has `total` runs of `per_run` (warm-up + duration).
    pub fn start(&self, total: usize, per_run: Duration) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.total = total;
        s.run_ms = per_run.as_millis() as u64;
        if let Some(bar) = &self.bar {
            bar.set_length(total as u64 * s.run_ms);
            bar.set_position(0);
            bar.enable_steady_tick(Duration::from_millis(200));
        }
    }

    pub fn begin_run(&self, index: u32, cell: &Cell, repetition: u32) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.index = index;
        s.label = format!("run {index}/{} {} rep {repetition}", s.total, cell.label());
        if let Some(bar) = &self.bar {
            bar.set_position(u64::from(index - 1) * s.run_ms);
            bar.set_message(format!("{}: resetting data", s.label));
        }
    }

    /// Called by the engine about once a second.
    pub fn tick(&self, t: &Tick) {
        let Some(bar) = &self.bar else { return };
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let phase = match t.phase {
            Phase::Warmup | Phase::Connecting => "warm-up",
            Phase::Measuring | Phase::Draining => "measuring",
        };
        bar.set_position(
            u64::from(s.index - 1) * s.run_ms + (t.elapsed.as_millis() as u64).min(s.run_ms),
        );
        bar.set_message(format!(
            "{}: {phase} {:.0} tps, p99 {:.1} ms, {} failed",
            s.label, t.tps, t.p99_ms, t.failed
        ));
    }

    pub fn end_run(&self, r: &RunRecord) {
        let failed: u64 = r.failed.values().sum();
        let bad = r.invariants.iter().filter(|i| !i.ok).count();
        self.note(&format!(
            "run {}/{} {} rep {}: {:.0} tps, p99 {:.2} ms, {:.3} retries/commit, {failed} failed{}{}",
            r.index,
            self.state.lock().unwrap_or_else(|e| e.into_inner()).total,
            r.cell.label(),
            r.repetition,
            r.tps,
            r.latency_ms.p99,
            r.retries_per_commit,
            if bad > 0 { format!(", {bad} invariant(s) VIOLATED") } else { String::new() },
            if r.complete { "" } else { " (interrupted)" },
        ));
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
