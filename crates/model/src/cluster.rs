//! A primary with streaming standbys (issue #50): how many standbys, how
//! the primary waits for them (`replication`, which becomes
//! `synchronous_standby_names`), which failover manager runs the cluster,
//! and what the observer saw of each standby while a run measured
//! (`pg_stat_replication`).
//!
//! `replication` and `synchronous_commit` are *run settings*: a study
//! changes them between runs without restarting the server
//! (`synchronous_standby_names` is reloadable, `synchronous_commit` is a
//! user setting, applied to each run's database), so that an interleaved
//! study of the four durability levels keeps one cluster.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The name of the `replication` factor among a cell's settings
/// (`Cell::settings`): isobench's own, never passed to the server.
pub const REPLICATION: &str = "replication";

/// The name of the `read_from` factor among a cell's settings
/// (`Cell::settings`, when `read_from` takes more than one value):
/// isobench's own, never passed to the server.
pub const READ_FROM: &str = "read_from";

/// The `synchronous_commit` setting's name (a factor of its own in study
/// files, applied to each run's database).
pub const SYNCHRONOUS_COMMIT: &str = "synchronous_commit";

/// The values `synchronous_commit` takes, in the order of what they wait
/// for (PostgreSQL documentation, "synchronous_commit").
pub const SYNCHRONOUS_COMMIT_LEVELS: [&str; 5] =
    ["off", "local", "remote_write", "on", "remote_apply"];

/// Whether setting `name` is applied per run without restarting the
/// server ([`REPLICATION`], [`SYNCHRONOUS_COMMIT`], [`READ_FROM`]);
/// other settings factors restart the managed server.
pub fn is_run_setting(name: &str) -> bool {
    name == REPLICATION || name == SYNCHRONOUS_COMMIT || name == READ_FROM
}

/// How the primary waits for its standbys: `async` (it does not),
/// `sync` (the first standby is synchronous: `FIRST 1 (s1, s2, ...)`,
/// the others take over in order) or `quorum:N` (any N of them: `ANY N
/// (s1, s2, ...)`); PostgreSQL documentation, "synchronous_standby_names".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Replication {
    #[default]
    Async,
    Sync,
    Quorum(u32),
}

impl Replication {
    /// `synchronous_standby_names` for standbys named `names`
    /// (`application_name`s), in priority order.
    pub fn standby_names(self, names: &[String]) -> String {
        let list = names
            .iter()
            .map(|n| format!("\"{}\"", n.replace('"', "")))
            .collect::<Vec<_>>()
            .join(", ");
        match self {
            Replication::Async => String::new(),
            Replication::Sync => format!("FIRST 1 ({list})"),
            Replication::Quorum(n) => format!("ANY {n} ({list})"),
        }
    }

    /// How many standbys must confirm a commit (0 for async).
    pub fn waits_for(self) -> u32 {
        match self {
            Replication::Async => 0,
            Replication::Sync => 1,
            Replication::Quorum(n) => n,
        }
    }

    /// The `sync_state` `pg_stat_replication` shows for the standby at
    /// `rank` (0-based, in priority order) once the mode is in effect.
    pub fn sync_state(self, rank: usize) -> &'static str {
        match self {
            Replication::Async => "async",
            Replication::Sync if rank == 0 => "sync",
            Replication::Sync => "potential",
            Replication::Quorum(_) => "quorum",
        }
    }
}

impl fmt::Display for Replication {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Replication::Async => f.write_str("async"),
            Replication::Sync => f.write_str("sync"),
            Replication::Quorum(n) => write!(f, "quorum:{n}"),
        }
    }
}

impl FromStr for Replication {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim().to_ascii_lowercase();
        match t.as_str() {
            "async" | "asynchronous" => return Ok(Replication::Async),
            "sync" | "synchronous" => return Ok(Replication::Sync),
            _ => {}
        }
        if let Some(n) = t.strip_prefix("quorum:") {
            return match n.trim().parse::<u32>() {
                Ok(n) if (1..=MAX_STANDBYS).contains(&n) => Ok(Replication::Quorum(n)),
                _ => Err(format!(
                    "'{s}': the quorum is a number of standbys from 1 to {MAX_STANDBYS}, e.g. quorum:2"
                )),
            };
        }
        Err(format!(
            "unknown replication mode '{s}' (use async, sync or quorum:N)"
        ))
    }
}

impl From<Replication> for String {
    fn from(r: Replication) -> String {
        r.to_string()
    }
}

impl TryFrom<String> for Replication {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

/// The most standbys a managed cluster may have (`max_wal_senders` is 10
/// by default, and a base backup streams its WAL through one more).
pub const MAX_STANDBYS: u32 = 8;

/// Who runs the cluster and fails it over (`--ha`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ha {
    /// isobench starts the primary and its standbys itself; nothing fails
    /// over.
    #[default]
    None,
    /// pg_auto_failover (`pg_autoctl`): a monitor and two data nodes, its
    /// keepers start PostgreSQL and promote the standby when the primary
    /// fails.
    PgAutoFailover,
}

impl Ha {
    pub fn name(self) -> &'static str {
        match self {
            Ha::None => "none",
            Ha::PgAutoFailover => "pg_auto_failover",
        }
    }
}

impl FromStr for Ha {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().replace('-', "_").as_str() {
            "none" => Ok(Ha::None),
            "pg_auto_failover" | "pgautofailover" | "paf" => Ok(Ha::PgAutoFailover),
            other => Err(format!(
                "unknown failover manager '{other}' (use none or pg_auto_failover)"
            )),
        }
    }
}

/// Where the read-only transactions of a workload that marks them
/// (`WorkloadClient::read_only`) go (`--read-from`, study key
/// `read_from`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReadFrom {
    /// Every transaction on the primary (no extra statement anywhere).
    #[default]
    Primary,
    /// Read-only transactions on a standby (client `i`'s connection on
    /// standby `i mod N`).
    Standby,
    /// Read-only transactions on the client's standby or on the primary,
    /// drawn per transaction with equal chances.
    Any,
}

impl ReadFrom {
    pub fn name(self) -> &'static str {
        match self {
            ReadFrom::Primary => "primary",
            ReadFrom::Standby => "standby",
            ReadFrom::Any => "any",
        }
    }
}

impl fmt::Display for ReadFrom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ReadFrom {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "primary" => Ok(ReadFrom::Primary),
            "standby" | "standbys" | "replica" => Ok(ReadFrom::Standby),
            "any" => Ok(ReadFrom::Any),
            other => Err(format!(
                "unknown read route '{other}' (use primary, standby or any)"
            )),
        }
    }
}

/// The managed cluster a study runs on: the primary's standbys, and who
/// runs it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterConfig {
    /// Streaming standbys of the managed primary (`--standbys N`).
    pub standbys: u32,
    /// The failover manager (`--ha`).
    pub ha: Ha,
    /// The failover manager's timeouts lowered for a benchmark
    /// (`--ha-timeouts fast`: about 5 s per failover instead of about
    /// 51 s with pg_auto_failover's defaults).
    #[serde(default)]
    pub ha_fast: bool,
    /// Where read-only transactions go (`--read-from`); with several
    /// values, a factor, the first, and each cell's route is its
    /// [`READ_FROM`] setting.
    #[serde(default)]
    pub read_from: ReadFrom,
}

impl ClusterConfig {
    /// Whether the managed server has standbys (isobench's own, or a
    /// failover manager's).
    pub fn replicated(&self) -> bool {
        self.standbys > 0 || self.ha != Ha::None
    }
}

/// A lag over the samples of a run's measured window: mean and maximum
/// (ms, or bytes of WAL); NaN mean when no sample had a value (the lag
/// columns of `pg_stat_replication` are NULL on an idle primary).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LagStat {
    pub mean: f64,
    pub max: f64,
    /// Samples that had a value.
    pub samples: u64,
}

impl LagStat {
    /// Adds one sample.
    pub fn add(&mut self, v: f64) {
        let n = self.samples as f64;
        self.mean = if self.samples == 0 {
            v
        } else {
            (self.mean * n + v) / (n + 1.0)
        };
        self.max = if self.samples == 0 {
            v
        } else {
            self.max.max(v)
        };
        self.samples += 1;
    }
}

/// What `pg_stat_replication` on the primary showed of one standby while
/// a run measured (sampled once a second): its lags as the primary saw
/// them (`write_lag`, `flush_lag`, `replay_lag`: the time between a
/// commit's WAL being written locally and the standby reporting it
/// written, flushed, applied), the WAL it had not yet applied
/// (`pg_current_wal_lsn() - replay_lsn`, bytes), and its `sync_state`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StandbyObservation {
    /// The standby's `application_name` (`s1`, ...).
    pub name: String,
    /// Samples in which the standby was connected.
    pub samples: u64,
    /// The `sync_state` seen most often (`async`, `sync`, `potential`,
    /// `quorum`); empty when never connected.
    pub sync_state: String,
    pub write_lag_ms: LagStat,
    pub flush_lag_ms: LagStat,
    pub replay_lag_ms: LagStat,
    pub replay_lag_bytes: LagStat,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replication_modes_parse_print_and_name_the_standbys() {
        for (text, mode) in [
            ("async", Replication::Async),
            ("sync", Replication::Sync),
            ("quorum:2", Replication::Quorum(2)),
        ] {
            assert_eq!(text.parse::<Replication>(), Ok(mode));
            assert_eq!(mode.to_string(), text);
        }
        assert!("quorum:0".parse::<Replication>().is_err());
        assert!("quorum:x".parse::<Replication>().is_err());
        assert!("semi".parse::<Replication>().unwrap_err().contains("async"));
        let names = vec!["s1".to_string(), "s2".to_string()];
        assert_eq!(Replication::Async.standby_names(&names), "");
        assert_eq!(
            Replication::Sync.standby_names(&names),
            "FIRST 1 (\"s1\", \"s2\")"
        );
        assert_eq!(
            Replication::Quorum(2).standby_names(&names),
            "ANY 2 (\"s1\", \"s2\")"
        );
        assert_eq!(Replication::Sync.sync_state(0), "sync");
        assert_eq!(Replication::Sync.sync_state(1), "potential");
        assert_eq!(Replication::Quorum(1).sync_state(1), "quorum");
    }

    #[test]
    fn lag_stats_keep_mean_and_max() {
        let mut l = LagStat::default();
        for v in [1.0, 3.0, 2.0] {
            l.add(v);
        }
        assert_eq!((l.mean, l.max, l.samples), (2.0, 3.0, 3));
    }
}
