//! What `isobench anomalies` found: each probe's outcome at each
//! isolation level, as written to `anomalies.json` and read by the
//! reports. The probes themselves (their files, parser and executor) are
//! the command's; only their results are shared.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::Isolation;

/// What a probe's run can show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The anomaly did not happen.
    Prevented,
    /// An `@anomaly` condition held.
    Anomaly,
    /// A step neither finished nor waited on a lock within the step timeout,
    /// or stayed blocked until it.
    Stuck,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Prevented => "prevented",
            Outcome::Anomaly => "anomaly",
            Outcome::Stuck => "stuck",
        }
    }
}

/// A step that failed: where, with which SQLSTATE and message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepError {
    pub step: String,
    pub sqlstate: String,
    pub message: String,
}

/// One probe at one level.
#[derive(Debug, Clone, Serialize)]
pub struct LevelResult {
    pub outcome: Outcome,
    /// The cell text after the outcome, e.g. `blocked at step s2:s2u, then
    /// 40001` or the observation that shows the anomaly.
    pub how: String,
    /// The mechanisms seen: `blocked`, SQLSTATEs, or `snapshot`.
    pub mechanisms: Vec<String>,
    /// For anomalies: what the steps read, e.g. `s2r1 read 1,101`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observation: Option<String>,
    /// Steps that waited on another session's lock (`session:step`).
    pub waited: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<StepError>,
    /// The probe's `@expect` for this level, e.g. `prevented (40001)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    /// Whether the result meets `expected`; absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub as_expected: Option<bool>,
    /// Which permutation (1-based) this result comes from, when the probe
    /// has several.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permutation: Option<usize>,
    /// Step by step, in the isolation tester's style.
    pub trace: Vec<String>,
}

impl LevelResult {
    /// The matrix cell: `prevented (blocked at step s2:s2u)`, `ANOMALY: ...`.
    pub fn cell(&self) -> String {
        match self.outcome {
            Outcome::Anomaly => format!("ANOMALY: {}", self.how),
            o => format!("{} ({})", o.name(), self.how),
        }
    }
}

/// What a serial execution in one session order read.
#[derive(Debug, Clone, Serialize)]
pub struct SerialOutcome {
    /// Session names in execution order.
    pub order: Vec<String>,
    /// `step` (or `final`) → rows, for what the anomaly conditions read.
    pub reads: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProbeResult {
    pub name: String,
    pub title: String,
    pub source: String,
    pub file: String,
    /// The anomaly conditions, as written.
    pub anomaly_if: Vec<String>,
    /// Keyed by level name (`read-committed`, ...).
    pub results: BTreeMap<String, LevelResult>,
    /// The serial executions (empty for probes with more than 4 sessions).
    pub serial: Vec<SerialOutcome>,
    /// Things that make the matrix misleading for this probe, e.g. a
    /// session that sets its own isolation level.
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ServerInfo {
    pub version: String,
    pub version_num: u32,
}

/// The whole matrix, as written to `anomalies.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Matrix {
    pub schema_version: u32,
    pub isobench_version: String,
    pub server: ServerInfo,
    /// The target, without any password.
    pub target: String,
    /// How lock waits were detected.
    pub wait_check: String,
    pub step_timeout_s: f64,
    pub levels: Vec<Isolation>,
    pub elapsed_s: f64,
    /// False when interrupted before every probe ran.
    pub complete: bool,
    pub probes: Vec<ProbeResult>,
}

/// A result that differs from its probe's `@expect`.
#[derive(Debug, Clone)]
pub struct Mismatch<'a> {
    pub probe: &'a ProbeResult,
    pub level: String,
    pub result: &'a LevelResult,
}

impl Mismatch<'_> {
    /// A readable explanation: expected vs got, the conditions, the serial
    /// outcomes, and the trace step by step.
    pub fn explain(&self) -> String {
        let mut s = format!(
            "{} at {}: expected {}, got {}\n  file: {}\n",
            self.probe.name,
            self.level,
            self.result.expected.as_deref().unwrap_or("?"),
            self.result.cell(),
            self.probe.file
        );
        for c in &self.probe.anomaly_if {
            s.push_str(&format!("  anomaly if: {c}\n"));
        }
        for o in &self.probe.serial {
            let reads: Vec<String> = o.reads.iter().map(|(k, v)| format!("{k} {v}")).collect();
            s.push_str(&format!(
                "  serially ({}): {}\n",
                o.order.join(", "),
                reads.join(", ")
            ));
        }
        s.push_str("  trace:\n");
        for line in &self.result.trace {
            s.push_str(&format!("    {line}\n"));
        }
        s
    }
}

impl Matrix {
    pub const SCHEMA_VERSION: u32 = 1;

    pub fn mismatches(&self) -> Vec<Mismatch<'_>> {
        self.probes
            .iter()
            .flat_map(|p| {
                p.results
                    .iter()
                    .filter(|(_, r)| r.as_expected == Some(false))
                    .map(move |(level, result)| Mismatch {
                        probe: p,
                        level: level.clone(),
                        result,
                    })
            })
            .collect()
    }
}
