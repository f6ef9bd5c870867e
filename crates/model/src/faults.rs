//! Faults a run lived through: connections its clients lost (and got
//! back), a server that crashed or restarted under it, and what that cost
//! the load: the outage (no commit at all) and the time until throughput
//! was back.

use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{SecondPoint, parse_duration};

/// A fault isobench injects on purpose (`--fault KIND@TIME`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// `pg_terminate_backend` of every client connection of the run
    /// (managed or external server).
    Terminate,
    /// SIGKILL of one client backend: the server ends every backend and
    /// runs crash recovery (managed server only).
    KillBackend,
    /// A fast shutdown and start of the managed server (`pg_ctl restart
    /// -m fast`): sessions end with 57P01, a shutdown checkpoint, then the
    /// server starts again on the same port.
    Restart,
    /// An immediate shutdown and start of the managed server (`pg_ctl
    /// stop -m immediate`, then start): no checkpoint, so the start runs
    /// crash recovery; commits not yet flushed (`synchronous_commit=off`)
    /// are lost.
    Crash,
    /// SIGSTOP of the managed server's postmaster and every backend for
    /// the fault's hold time, then SIGCONT: connections stay open and
    /// nothing answers (a stalled host or VM).
    Pause,
    /// A crash of the primary node of a cluster run by a failover
    /// manager (`--ha pg_auto_failover`): SIGKILL of its keeper and its
    /// postmaster; the manager promotes the standby and the clients
    /// reconnect to it (issue #50).
    Failover,
}

impl FaultKind {
    /// The name used in `--fault` and in results.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Terminate => "terminate",
            FaultKind::KillBackend => "kill-backend",
            FaultKind::Restart => "restart",
            FaultKind::Crash => "crash",
            FaultKind::Pause => "pause",
            FaultKind::Failover => "failover",
        }
    }

    /// Every kind, in the order the help lists them.
    pub const ALL: [FaultKind; 6] = [
        FaultKind::Terminate,
        FaultKind::KillBackend,
        FaultKind::Restart,
        FaultKind::Crash,
        FaultKind::Pause,
        FaultKind::Failover,
    ];

    /// The kind named `name` ([`FaultKind::name`]); `None` for another.
    pub fn from_name(name: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether the kind needs the managed server (its processes).
    pub fn managed_only(self) -> bool {
        !matches!(self, FaultKind::Terminate)
    }

    /// Whether the kind needs a failover manager (`--ha`).
    pub fn needs_ha(self) -> bool {
        matches!(self, FaultKind::Failover)
    }
}

/// One fault of the plan: `KIND@TIME`, TIME from the start of the
/// measured window; a pause also says how long: `pause:HOLD@TIME`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultSpec {
    pub kind: FaultKind,
    /// When, from the start of the measured window.
    pub at: Duration,
    /// How long the fault lasts: `Some` exactly for [`FaultKind::Pause`].
    pub hold: Option<Duration>,
}

/// A `--fault` value that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FaultSpecError {
    #[error("'{0}' is not KIND@TIME, e.g. terminate@2s")]
    NoAt(String),
    #[error(
        "'{0}' is not a fault kind (use terminate, kill-backend, restart, crash, pause:DURATION or failover)"
    )]
    Kind(String),
    #[error("'{0}': pause needs its duration, e.g. pause:2s@1s")]
    NoHold(String),
    #[error("'{0}': only pause takes a duration (KIND:DURATION@TIME)")]
    Hold(String),
    #[error("'{text}': bad time: {message}")]
    Time { text: String, message: String },
}

impl FromStr for FaultSpec {
    type Err = FaultSpecError;
    fn from_str(s: &str) -> Result<Self, FaultSpecError> {
        let (kind, time) = s
            .trim()
            .split_once('@')
            .ok_or_else(|| FaultSpecError::NoAt(s.to_string()))?;
        let time_err = |message| FaultSpecError::Time {
            text: s.to_string(),
            message,
        };
        let (kind, hold) = match kind.split_once(':') {
            Some((k, h)) => (k.trim(), Some(parse_duration(h).map_err(time_err)?)),
            None => (kind.trim(), None),
        };
        let kind =
            FaultKind::from_name(kind).ok_or_else(|| FaultSpecError::Kind(kind.to_string()))?;
        match (kind, hold) {
            (FaultKind::Pause, None) => return Err(FaultSpecError::NoHold(s.to_string())),
            (FaultKind::Pause, Some(h)) if h.is_zero() => {
                return Err(time_err("the pause must last longer than 0".into()));
            }
            (FaultKind::Pause, _) | (_, None) => {}
            (_, Some(_)) => return Err(FaultSpecError::Hold(s.to_string())),
        }
        let at = parse_duration(time).map_err(time_err)?;
        Ok(FaultSpec { kind, at, hold })
    }
}

impl std::fmt::Display for FaultSpec {
    /// `KIND@TIME` or `pause:HOLD@TIME`, times in s, ms or µs (the
    /// largest whole unit): parses back as is.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.kind.name())?;
        if let Some(h) = self.hold {
            write!(f, ":{}", DurationText(h))?;
        }
        write!(f, "@{}", DurationText(self.at))
    }
}

/// A duration as `parse_duration` reads it back: whole s, else ms, else µs.
struct DurationText(Duration);

impl std::fmt::Display for DurationText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = self.0.as_millis();
        let whole_ms = self.0.subsec_nanos().is_multiple_of(1_000_000);
        if whole_ms && ms.is_multiple_of(1000) {
            write!(f, "{}s", ms / 1000)
        } else if whole_ms {
            write!(f, "{ms}ms")
        } else {
            write!(f, "{}us", self.0.as_micros())
        }
    }
}

/// The faults of one run, in time order as given: the values of the fault
/// factor (`fault_plans`, `[factors] fault = ["none", "crash@2s"]`).
/// Written `none` when empty, else its faults joined by `+`
/// (`pause:1s@1s+crash@3s`); parses back as written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultSchedule(pub Vec<FaultSpec>);

impl FromStr for FaultSchedule {
    type Err = FaultSpecError;
    fn from_str(s: &str) -> Result<Self, FaultSpecError> {
        if s.trim() == "none" {
            return Ok(FaultSchedule::default());
        }
        s.split('+')
            .map(str::parse)
            .collect::<Result<_, _>>()
            .map(FaultSchedule)
    }
}

impl std::fmt::Display for FaultSchedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            return f.write_str("none");
        }
        for (i, spec) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("+")?;
            }
            write!(f, "{spec}")?;
        }
        Ok(())
    }
}

/// A fault isobench injected into a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InjectedFault {
    pub kind: FaultKind,
    /// When it was injected, s since the measured window began.
    pub t_s: f64,
    /// What it did, e.g. `terminated 4 connections`, `SIGKILL to PID
    /// 4242`, or why it could not (`failed: ...`).
    pub detail: String,
    /// A failover's outcome (`failover` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failover: Option<FailoverOutcome>,
}

/// What a failover did (`--fault failover@TIME`, issue #50): which node
/// was killed, which one the manager promoted and when, and how long the
/// clients could not commit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FailoverOutcome {
    /// The node that was the primary, killed.
    pub killed: String,
    /// The node the manager promoted; `None` when none took over within
    /// the limit.
    pub promoted: Option<String>,
    /// From the kill to the monitor reporting the new primary, s.
    pub promoted_s: Option<f64>,
    /// Write unavailability: from the kill to the clients' first commit
    /// after it, s; `None` when nothing committed again before the
    /// measured window ended.
    pub unavailable_s: Option<f64>,
    /// Writes accepted by two primaries (split brain): read-write
    /// commits that another node than the new primary acknowledged after
    /// the new primary's first, before the next failover; `None` when
    /// not measured (one host in the DSN, or no commit after the kill).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split_brain_writes: Option<u64>,
}

/// Share of the throughput before a fault that counts as recovered
/// (issue #18: "back to 90 % of what it was before").
pub const RECOVERED_SHARE: f64 = 0.9;

/// Connection losses kept one by one in a run's [`RunFaults::losses`];
/// further ones are only counted.
pub const MAX_LOSSES_KEPT: usize = 100;

/// One connection a client lost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnectionLoss {
    /// When, s since the measured window began (negative: during the
    /// warm-up).
    pub t_s: f64,
    /// The client (or pool session) that lost it.
    pub client: u32,
    /// The error's SQLSTATE: the server's (57P01 admin_shutdown, 57P02
    /// crash_shutdown, 57P03 cannot_connect_now, 08xxx) or 08006
    /// connection_failure for a socket that closed or failed.
    pub sqlstate: String,
}

/// The faults of one run; a run without any has none (`faults: null`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunFaults {
    /// What the server said about it, when it crashed or restarted: a
    /// line of its log (`server process (PID 123) was terminated by
    /// signal 9: Killed`, `database system was not properly shut down`),
    /// or the error the run's connections got.
    #[serde(default)]
    pub cause: Option<String>,
    /// Connections lost, all of them (also those beyond `losses`).
    pub connections_lost: u64,
    /// The first [`MAX_LOSSES_KEPT`] losses, in time order.
    pub losses: Vec<ConnectionLoss>,
    /// Connections opened again after a loss.
    pub reconnects: u64,
    /// Time without any commit, from the first loss to the first commit
    /// after the burst of losses it began, s; `None` when nothing committed
    /// after it (before the run ended).
    pub outage_s: Option<f64>,
    /// Time from the first loss until a second of the measured window had
    /// [`RECOVERED_SHARE`] of the mean throughput of the seconds before
    /// the loss, s (to the end of that second, so 1 s granularity);
    /// `None` when it never did, or when no whole second came before the
    /// loss to compare with.
    pub recovery_s: Option<f64>,
    /// Time isobench waited after the run for the server to accept
    /// connections again, s; `None` when it did not have to.
    #[serde(default)]
    pub server_wait_s: Option<f64>,
    /// The faults isobench injected (`--fault`), in time order.
    #[serde(default)]
    pub injected: Vec<InjectedFault>,
}

impl RunFaults {
    /// Whether anything happened at all.
    pub fn is_empty(&self) -> bool {
        self.connections_lost == 0 && self.cause.is_none() && self.injected.is_empty()
    }

    /// Whether the server lost what it held in memory during the run, and
    /// with it commits it had acknowledged but not made durable where it
    /// went on (asynchronous commits, `synchronous_commit=off`; on a
    /// failover, what the promoted standby had not received): an
    /// injected failover, crash or backend kill (crash recovery), or a
    /// crash the run saw without one injected.
    pub fn may_lose_commits(&self) -> bool {
        let losing = |k: FaultKind| {
            matches!(
                k,
                FaultKind::Failover | FaultKind::Crash | FaultKind::KillBackend
            )
        };
        self.injected.iter().any(|f| losing(f.kind))
            || (self.injected.is_empty() && self.cause.is_some())
    }
}

/// The outage of a run: from `first_loss_s` to `first_commit_after_s`
/// (both s since the window began), never negative; `None` without a
/// commit after the loss.
pub fn outage_s(first_loss_s: f64, first_commit_after_s: Option<f64>) -> Option<f64> {
    first_commit_after_s.map(|c| (c - first_loss_s).max(0.0))
}

/// The recovery time after a loss at `loss_s` (s since the window began)
/// from the run's per-second points: the baseline is the mean throughput
/// of the points that ended by `loss_s`; the run has recovered at the end
/// of the first point that began at or after `loss_s` with at least
/// [`RECOVERED_SHARE`] of it. Returns that end minus `loss_s`, s; `None`
/// without a baseline (no point ended before the loss, or they committed
/// nothing) or without such a point.
pub fn recovery_s(points: &[SecondPoint], loss_s: f64) -> Option<f64> {
    let before: Vec<f64> = points
        .iter()
        .filter(|p| p.t_s <= loss_s)
        .map(|p| p.tps)
        .collect();
    if before.is_empty() {
        return None;
    }
    let baseline = before.iter().sum::<f64>() / before.len() as f64;
    if baseline <= 0.0 {
        return None;
    }
    let mut start = 0.0;
    for p in points {
        let began = start;
        start = p.t_s;
        if began >= loss_s && p.tps >= RECOVERED_SHARE * baseline {
            return Some(p.t_s - loss_s);
        }
    }
    None
}

/// Whether a run's per-second `points` could show a recovery after a
/// loss at `loss_s` at all: some point ended by `loss_s` with throughput
/// to compare with (the baseline of [`recovery_s`]), and at least one
/// whole second of the measured window began at or after it. When not,
/// a missing [`RunFaults::recovery_s`] means "not measured" (the window
/// ended, or the fault came, before a recovery could be seen), not "not
/// recovered".
pub fn recovery_measurable(points: &[SecondPoint], loss_s: f64) -> bool {
    let before: Vec<f64> = points
        .iter()
        .filter(|p| p.t_s <= loss_s)
        .map(|p| p.tps)
        .collect();
    if before.is_empty() || before.iter().sum::<f64>() <= 0.0 {
        return false;
    }
    let mut start = 0.0;
    points.iter().any(|p| {
        let began = start;
        start = p.t_s;
        began >= loss_s
    })
}

/// When a run's recovery is measured from: its first connection loss,
/// or, for faults that lost no connection (a pause), its first injected
/// fault (s since the measured window began).
pub fn recovery_start_s(f: &RunFaults) -> Option<f64> {
    f.losses
        .first()
        .map(|l| l.t_s)
        .or_else(|| f.injected.first().map(|i| i.t_s))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only a fault that loses the server's memory can lose acknowledged
    /// commits: not a restart (a shutdown checkpoint), a pause or
    /// terminated connections.
    #[test]
    fn which_faults_may_lose_commits() {
        let with = |kind: FaultKind| RunFaults {
            injected: vec![InjectedFault {
                kind,
                t_s: 1.0,
                detail: String::new(),
                failover: None,
            }],
            ..Default::default()
        };
        for kind in [
            FaultKind::Failover,
            FaultKind::Crash,
            FaultKind::KillBackend,
        ] {
            assert!(with(kind).may_lose_commits(), "{kind:?}");
        }
        for kind in [FaultKind::Restart, FaultKind::Pause, FaultKind::Terminate] {
            assert!(!with(kind).may_lose_commits(), "{kind:?}");
        }
        let mut restart = with(FaultKind::Restart);
        restart.cause = Some("received fast shutdown request".into());
        assert!(!restart.may_lose_commits());
        let crashed = RunFaults {
            cause: Some("server process (PID 1) was terminated by signal 9: Killed".into()),
            ..Default::default()
        };
        assert!(crashed.may_lose_commits());
        assert!(!RunFaults::default().may_lose_commits());
    }

    #[test]
    fn fault_specs_parse_and_print_back() {
        let f: FaultSpec = "terminate@2s".parse().unwrap();
        assert_eq!(f.kind, FaultKind::Terminate);
        assert_eq!(f.at, Duration::from_secs(2));
        assert_eq!(f.to_string(), "terminate@2s");
        let f: FaultSpec = "kill-backend@1500ms".parse().unwrap();
        assert_eq!(f.kind, FaultKind::KillBackend);
        assert_eq!(f.to_string(), "kill-backend@1500ms");
        assert_eq!(f.to_string().parse::<FaultSpec>().unwrap(), f);
        assert!(matches!(
            "explode@2s".parse::<FaultSpec>(),
            Err(FaultSpecError::Kind(k)) if k == "explode"
        ));
        assert!(matches!(
            "terminate".parse::<FaultSpec>(),
            Err(FaultSpecError::NoAt(_))
        ));
        assert!(matches!(
            "terminate@soon".parse::<FaultSpec>(),
            Err(FaultSpecError::Time { .. })
        ));
        assert!("terminate@-1s".parse::<FaultSpec>().is_err());
    }

    #[test]
    fn a_pause_says_how_long_and_nothing_else_does() {
        let f: FaultSpec = "pause:2500ms@1s".parse().unwrap();
        assert_eq!(f.kind, FaultKind::Pause);
        assert_eq!(f.hold, Some(Duration::from_millis(2500)));
        assert_eq!(f.at, Duration::from_secs(1));
        assert_eq!(f.to_string(), "pause:2500ms@1s");
        assert_eq!(f.to_string().parse::<FaultSpec>().unwrap(), f);
        for k in ["restart", "crash"] {
            let f: FaultSpec = format!("{k}@2s").parse().unwrap();
            assert_eq!((f.kind.name(), f.hold), (k, None));
            assert!(f.kind.managed_only());
        }
        assert!(matches!(
            "pause@1s".parse::<FaultSpec>(),
            Err(FaultSpecError::NoHold(_))
        ));
        assert!(matches!(
            "pause:0s@1s".parse::<FaultSpec>(),
            Err(FaultSpecError::Time { .. })
        ));
        assert!(matches!(
            "crash:2s@1s".parse::<FaultSpec>(),
            Err(FaultSpecError::Hold(_))
        ));
        for k in FaultKind::ALL {
            assert_eq!(FaultKind::from_name(k.name()), Some(k));
        }
    }

    #[test]
    fn fault_plans_join_faults_with_plus_and_none_is_empty() {
        let p: FaultSchedule = "pause:1s@1s+crash@3s".parse().unwrap();
        assert_eq!(p.0.len(), 2);
        assert_eq!(p.0[1].kind, FaultKind::Crash);
        assert_eq!(p.to_string(), "pause:1s@1s+crash@3s");
        let none: FaultSchedule = "none".parse().unwrap();
        assert!(none.0.is_empty());
        assert_eq!(none.to_string(), "none");
        assert!(matches!(
            "crash@1s+explode@2s".parse::<FaultSchedule>(),
            Err(FaultSpecError::Kind(k)) if k == "explode"
        ));
        assert!("".parse::<FaultSchedule>().is_err());
    }

    fn points(tps: &[f64]) -> Vec<SecondPoint> {
        tps.iter()
            .enumerate()
            .map(|(i, &tps)| SecondPoint {
                t_s: (i + 1) as f64,
                committed: tps as u64,
                tps,
                p99_ms: 1.0,
                failed: 0,
                lag_ms: None,
            })
            .collect()
    }

    #[test]
    fn recovery_counts_to_the_end_of_the_first_second_back_at_90_percent() {
        // 1000 tps for 3 s, the loss at 3.4 s, then 0, 500, 899 (< 90 %
        // of 1000), 950.
        let p = points(&[1000.0, 1000.0, 1000.0, 200.0, 0.0, 500.0, 899.0, 950.0]);
        let r = recovery_s(&p, 3.4).unwrap();
        assert!((r - (8.0 - 3.4)).abs() < 1e-9, "{r}");
        // The second the loss fell in does not count, however fast it was.
        let p = points(&[1000.0, 1000.0, 1000.0, 990.0, 1000.0]);
        let r = recovery_s(&p, 3.4).unwrap();
        assert!((r - (5.0 - 3.4)).abs() < 1e-9, "{r}");
        // A loss exactly at a second's end: the next second may recover.
        let r = recovery_s(&p, 3.0).unwrap();
        assert!((r - 1.0).abs() < 1e-9, "{r}");
    }

    #[test]
    fn no_recovery_without_a_baseline_or_without_getting_back() {
        let p = points(&[1000.0, 1000.0, 100.0, 100.0]);
        assert_eq!(recovery_s(&p, 2.5), None, "never back to 900");
        assert_eq!(recovery_s(&p, 0.5), None, "no whole second before");
        assert_eq!(recovery_s(&p, -1.0), None, "during the warm-up");
        assert_eq!(recovery_s(&points(&[0.0, 0.0, 5.0]), 2.0), None);
    }

    #[test]
    fn recovery_is_not_measured_when_the_window_ends_before_it_could_be_seen() {
        // Never back to 90 % over two whole seconds after the loss: not
        // recovered, and that was measurable.
        let p = points(&[1000.0, 1000.0, 100.0, 100.0]);
        assert!(recovery_measurable(&p, 2.0));
        // The loss in the last second of the window (3.4 s of 4): no whole
        // second after it, so nothing could be seen.
        assert_eq!(recovery_s(&p, 3.4), None);
        assert!(!recovery_measurable(&p, 3.4));
        // No whole second before it, or during the warm-up: no baseline.
        assert!(!recovery_measurable(&p, 0.5));
        assert!(!recovery_measurable(&p, -1.0));
        assert!(!recovery_measurable(&points(&[0.0, 0.0, 5.0]), 2.0));
        assert!(!recovery_measurable(&[], 1.0));
        // A recovery that was seen was measurable.
        let p = points(&[1000.0, 1000.0, 1000.0, 990.0, 1000.0]);
        assert!(recovery_s(&p, 3.0).is_some() && recovery_measurable(&p, 3.0));
    }

    #[test]
    fn the_outage_runs_from_the_first_loss_to_the_next_commit() {
        assert_eq!(outage_s(2.0, Some(2.25)), Some(0.25));
        assert_eq!(outage_s(2.0, Some(1.0)), Some(0.0), "never negative");
        assert_eq!(outage_s(2.0, None), None);
    }
}
