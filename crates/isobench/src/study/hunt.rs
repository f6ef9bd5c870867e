//! `--hunt`'s settings: when a hunt for guarantee violations stops, what
//! it runs when given alone (the hunt shape), and what `--log-violations`
//! sets on the managed server.

use std::time::Duration;

use super::Settings;
use super::SettingsError;
use crate::model::{Hunt, Isolation};

/// What `--log-violations` sets on the managed server: every statement
/// logged with its time (UTC, ms), backend pid and xid, which
/// `crate::evidence::log_lines` reads back.
pub const LOG_VIOLATIONS_SETTINGS: [(&str, &str); 3] = [
    ("log_statement", "all"),
    ("log_line_prefix", "%m [%p] %x "),
    ("log_timezone", "UTC"),
];

/// The workloads whose histories a hunt checks.
pub const HUNT_WORKLOADS: [&str; 2] = ["list-append", "rw-register"];

/// What `--hunt` alone runs ([`Settings::hunt_defaults`]).
pub struct HuntShape {
    pub workload: &'static str,
    pub clients: u32,
    pub params: &'static [(&'static str, &'static str)],
    /// Each run's measured time (a long run checks more transactions per
    /// reset of the data).
    pub duration: Duration,
    pub warmup: Duration,
}

/// The hunt's default shape: the contended list-append of issue #47's
/// third study (20 clients, 5 hot keys over 3 tables, the window moving
/// every 8 transactions) at SERIALIZABLE, 60 s runs, with fresh keys
/// anywhere in the index (`key-order=random`), which the narrowing study
/// measured to raise the violation rate (BENCHMARKS.md, "Hunting").
pub const HUNT_SHAPE: HuntShape = HuntShape {
    workload: "list-append",
    clients: 20,
    params: &[
        ("keys", "5"),
        ("tables", "3"),
        ("rotate-every", "8"),
        ("key-order", "random"),
    ],
    duration: Duration::from_secs(60),
    warmup: Duration::from_secs(1),
};

impl Settings {
    /// `--log-violations`'s server settings added to `fixed`, except those
    /// given there already (a `--set` wins).
    pub(super) fn add_violation_logging(&self, fixed: &mut Vec<(String, String)>) {
        for (name, value) in LOG_VIOLATIONS_SETTINGS {
            if !fixed.iter().any(|(n, _)| n == name) {
                fixed.push((name.to_string(), value.to_string()));
            }
        }
    }
    /// `--hunt` with `--rate-bound` and `--hunt-for`, or none.
    ///
    /// Errors: `--rate-bound` or `--hunt-for` without `--hunt`; `--hunt`
    /// with `--precision` (each decides when to stop), sharded, or with a
    /// workload that records no history to check.
    pub(super) fn hunt_plan(&self) -> Result<Option<Hunt>, SettingsError> {
        if self.hunt != Some(true) {
            for (key, given) in [
                ("rate_bound", self.rate_bound.is_some()),
                ("hunt_for", self.hunt_for.is_some()),
            ] {
                if given {
                    return Err(self.error(
                        key,
                        "applies to --hunt only (when a hunt for guarantee violations stops): give --hunt too",
                    ));
                }
            }
            return Ok(None);
        }
        if self.precision.is_some() {
            return Err(self.error(
                "hunt",
                "--hunt and --precision each decide when to stop repeating: give one of them",
            ));
        }
        if self.shard.is_some() || self.shards.is_some() {
            return Err(self.error(
                "hunt",
                "a sharded study runs a fixed plan: give --repeat N instead, and merge the shards",
            ));
        }
        let scripts = self.script.is_some() || self.file.is_some() || self.builtin.is_some();
        let checked = |w: &str| HUNT_WORKLOADS.contains(&w);
        if scripts || self.load_cmd.is_some() || !self.workload.iter().flatten().all(|w| checked(w))
        {
            return Err(self.error(
                "hunt",
                format!(
                    "hunts in the histories of {}: give -w {} (the default with --hunt), not a script or an external load",
                    HUNT_WORKLOADS.join(", "),
                    HUNT_WORKLOADS[0]
                ),
            ));
        }
        Ok(Some(Hunt {
            rate_bound: self.rate_bound.unwrap_or(crate::model::DEFAULT_RATE_BOUND),
            budget_s: self
                .hunt_for
                .map_or(crate::model::DEFAULT_HUNT_BUDGET_S, |d| d.as_secs_f64()),
        }))
    }

    /// The hunt's shape for every key `--hunt` alone leaves unset
    /// ([`HUNT_SHAPE`]): the workload, level, clients and parameters with
    /// the highest violation rate measured here, one long run per cell per
    /// round.
    pub(super) fn hunt_defaults(&mut self) {
        let h = &HUNT_SHAPE;
        self.workload.get_or_insert_with(|| vec![h.workload.into()]);
        self.isolation
            .get_or_insert_with(|| vec![Isolation::Serializable]);
        self.clients.get_or_insert_with(|| vec![h.clients]);
        let params = self.params.get_or_insert_with(Vec::new);
        for (name, value) in h.params {
            if !params.iter().any(|(n, _)| n == name) {
                params.push((name.to_string(), vec![value.to_string()]));
            }
        }
        self.duration.get_or_insert(h.duration);
        self.warmup.get_or_insert(h.warmup);
        self.repeat.get_or_insert(1);
    }
}
