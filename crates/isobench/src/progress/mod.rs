//! What the user sees while a study runs: a live progress bar on a
//! terminal (run i of N, ETA, current tps/p99/failures), one plain line per
//! finished run on stderr otherwise, nothing with `--quiet`; and, with
//! `--metrics-listen`, the same events as metrics ([`live`]).

pub mod live;

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::engine::Tick;
use crate::model::Phase;
use crate::store::{Cell, RunRecord};
use live::Live;

/// Called with every [`Tick`] of every run (e.g. `isobench pgbench -P`'s
/// progress lines), quiet or not.
pub type TickHook = Arc<dyn Fn(&Tick) + Send + Sync>;

/// Progress reporting for one study.
pub struct Progress {
    quiet: bool,
    hook: Option<TickHook>,
    bar: Option<ProgressBar>,
    state: Mutex<State>,
    /// The metrics served with `--metrics-listen`.
    live: Option<Arc<Live>>,
}

#[derive(Default)]
struct State {
    total: usize,
    /// Runs done before this process started (`--resume`).
    resumed: usize,
    /// Runs finished by this process, and when it started the first.
    finished: usize,
    since: Option<std::time::Instant>,
    run_ms: u64,
    index: u32,
    label: String,
    /// What the study is after, shown after every message (`--hunt`).
    goal: String,
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
            hook: None,
            bar,
            state: Mutex::new(State::default()),
            live: None,
        }
    }

    /// Also keeps `live`'s metrics up to date.
    pub fn with_live(mut self, live: Option<Arc<Live>>) -> Self {
        self.live = live;
        self
    }

    /// Also calls `hook` with every tick.
    pub fn with_tick_hook(mut self, hook: Option<TickHook>) -> Self {
        self.hook = hook;
        self
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

    /// The study has `total` runs of `per_run` (warm-up + duration),
    /// `done` of them already measured (`--resume`).
    pub fn start(&self, total: usize, done: usize, per_run: Duration) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.total = total;
        s.resumed = done;
        s.since = Some(std::time::Instant::now());
        s.run_ms = per_run.as_millis() as u64;
        if let Some(live) = &self.live {
            live.start(total, done);
        }
        if let Some(bar) = &self.bar {
            bar.set_length((total - done.min(total)) as u64 * s.run_ms);
            bar.set_position(0);
            bar.enable_steady_tick(Duration::from_millis(200));
        }
    }

    /// `n` more runs than [`Progress::start`] said (`--precision` adds
    /// repetitions as it goes).
    pub fn more(&self, n: usize) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.total += n;
        if let Some(live) = &self.live {
            live.start(s.total, s.resumed + s.finished);
        }
        if let Some(bar) = &self.bar {
            bar.inc_length(n as u64 * s.run_ms);
        }
    }

    pub fn begin_run(&self, index: u32, cell: &Cell, repetition: u32) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.index = index;
        s.label = format!("run {index}/{} {} rep {repetition}", s.total, cell.label());
        if let Some(live) = &self.live {
            live.begin_run(index, cell, repetition);
        }
        if let Some(bar) = &self.bar {
            bar.set_position(s.finished as u64 * s.run_ms);
            bar.set_message(format!("{}: resetting data{}", s.label, s.goal));
        }
    }

    /// What the study is after now (a hunt's transactions checked and
    /// bound), shown after the bar's message from the next run on.
    pub fn goal(&self, text: &str) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.goal = format!(" | {text}");
    }

    /// What the current run does now, e.g. `before_run` (external loads).
    pub fn status(&self, what: &str) {
        let Some(bar) = &self.bar else { return };
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        bar.set_message(format!("{}: {what}", s.label));
    }

    /// Called by the engine about once a second.
    pub fn tick(&self, t: &Tick) {
        if let Some(hook) = &self.hook {
            hook(t);
        }
        if let Some(live) = &self.live {
            live.tick(t);
        }
        let Some(bar) = &self.bar else { return };
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let phase = match t.phase {
            Phase::Warmup | Phase::Connecting => "warm-up",
            Phase::Measuring | Phase::Draining => "measuring",
        };
        bar.set_position(
            s.finished as u64 * s.run_ms + (t.elapsed.as_millis() as u64).min(s.run_ms),
        );
        bar.set_message(format!(
            "{}: {phase} {:.0} tps, p99 {:.1} ms, {} failed{}",
            s.label, t.tps, t.p99_ms, t.failed, s.goal
        ));
    }

    /// A run ended: one line with its figures, runs done/total and the
    /// estimated time left (mean time per run so far x runs left).
    pub fn end_run(&self, r: &RunRecord) {
        let failed: u64 = r.failed.values().sum();
        let bad = r.invariants.iter().filter(|i| !i.ok).count();
        let (done, total, eta) = {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            s.finished += 1;
            let left = s.total.saturating_sub(s.resumed + s.finished);
            let per_run = s
                .since
                .map(|t| t.elapsed().as_secs_f64() / s.finished as f64)
                .unwrap_or(0.0);
            (s.resumed + s.finished, s.total, per_run * left as f64)
        };
        if let Some(live) = &self.live {
            live.end_run(done, r);
        }
        if let Some(l) = &r.load {
            let figures = match &l.figures {
                Some(f) => format!(
                    "{:.1} {}{}",
                    f.throughput,
                    f.unit,
                    f.latency_p99_ms
                        .or(f.latency_mean_ms)
                        .map(|v| format!(
                            ", {} {v:.2} ms",
                            if f.latency_p99_ms.is_some() {
                                "p99"
                            } else {
                                "latency mean"
                            }
                        ))
                        .unwrap_or_default()
                ),
                None => "no figures".into(),
            };
            self.note(&format!(
                "[{done}/{total}, ETA {}] run {} {} rep {}: {figures}, load {} ({:.1} s){}",
                fmt_eta(eta),
                r.index,
                r.cell.label(),
                r.repetition,
                match l.exit_code {
                    Some(c) => format!("exit {c}"),
                    None if l.wall_s == 0.0 => "not run".into(),
                    None => "killed".into(),
                },
                l.wall_s,
                match (r.complete, r.errors.is_empty()) {
                    (true, _) => "",
                    (false, false) => " (failed)",
                    (false, true) => " (interrupted)",
                },
            ));
            return;
        }
        self.note(&format!(
            "[{done}/{total}, ETA {}] run {} {} rep {}: {:.0} tps, p99 {:.2} ms, {:.3} retries/commit, {failed} failed{}{}{}",
            fmt_eta(eta),
            r.index,
            r.cell.label(),
            r.repetition,
            r.tps,
            r.latency_ms.p99,
            r.retries_per_commit,
            r.pool_wait_ms
                .map(|w| format!(", pool wait mean {:.2} ms p99 {:.2} ms", w.mean, w.p99))
                .unwrap_or_default(),
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

/// `1h02m`, `3m05s`, `42s`.
pub fn fmt_eta(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}
