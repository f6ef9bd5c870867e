//! A guarantee violation's evidence, written to `violations/<n>/` of the
//! results directory (issue #47): what a PostgreSQL developer needs to
//! check a cycle without isobench.
//!
//! - `cycle.txt`: the cycle in words (each edge with the operations that
//!   prove it) and each transaction's operations, client, backend and
//!   outcome;
//! - `statements.txt`: each transaction's statements as they were sent,
//!   with the client's times (BEGIN sent, each statement sent and
//!   answered, COMMIT) and the backend's pid;
//! - `history.edn` (Jepsen's EDN, for Elle) and `history.json` (isobench's
//!   transactions with their indexes): the cycle's transactions;
//! - `replay.spec`: an isolation-tester spec that replays the transactions
//!   in the order the clients sent their statements, from the lists the
//!   first of them found (`spec`); `replay.txt`: how often a replay on
//!   the same server reproduced the anomaly or was prevented
//!   (`replay()`), and `replay.out`, the first replay's output;
//! - `server.log`: the server log's lines of those backends while the
//!   transactions ran, when `--log-violations` turned on a prefix with pid
//!   and xid.
//!
//! Only what is recorded is written: a history from elsewhere (Jepsen's)
//! has no statements, times or backends, and its evidence says so.

mod edn;
mod replay;
mod spec;
mod words;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::elle::{History, Key, Op, Value};
use crate::model::{Cycle, Isolation};
use crate::workload::list_append::Shape;

pub use replay::{REPLAYS, Replayed, replay};
pub use spec::replay_spec;

/// The workloads that record a history (their shape renders its
/// statements).
pub const HISTORY_WORKLOADS: [&str; 2] = ["list-append", "rw-register"];

/// The directory of every violation's evidence in a results directory.
pub const DIR: &str = "violations";

/// One cycle that broke its level's promise, and what is known of where
/// it came from.
pub struct Violation<'a> {
    /// The run that recorded it (`None` for a history file given alone).
    pub run: Option<u32>,
    /// The cell's label, e.g. `isolation=ser clients=20 keys=5`.
    pub cell: String,
    pub class: &'a str,
    pub level: Isolation,
    pub cycle: &'a Cycle,
    /// The tables' and statements' shape (`None` when the history came
    /// from elsewhere: no SQL to show or replay).
    pub shape: Option<&'a Shape>,
}

/// Reads a history file: isobench's JSON lines (gzip-compressed or not)
/// or Jepsen's JSON.
///
/// Errors: a file that cannot be read, decompressed or parsed, in words.
pub fn read_history(path: &Path) -> Result<History, String> {
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let text = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut text)
            .map_err(|e| format!("not gzip text: {e}"))?;
        text
    } else {
        String::from_utf8(bytes).map_err(|e| format!("not UTF-8 text: {e}"))?
    };
    crate::elle::parse(&text).map_err(|e| e.to_string())
}

/// The next free `violations/<n>` of `results_dir` (1 for the first).
pub fn next_number(results_dir: &Path) -> u32 {
    std::fs::read_dir(results_dir.join(DIR))
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
                .max()
                .unwrap_or(0)
        })
        .unwrap_or(0)
        + 1
}

/// The version order of each key as the history shows it: its longest
/// committed read, or the only committed append of a key no read saw
/// (the checker's inference, `crate::elle`).
pub fn version_orders(h: &History) -> BTreeMap<Key, Vec<Value>> {
    let mut longest: BTreeMap<Key, Vec<Value>> = BTreeMap::new();
    let mut appends: BTreeMap<Key, Vec<Value>> = BTreeMap::new();
    let scans_as_reads;
    let h = if h.has_scans() {
        scans_as_reads = h.with_scans_as_reads();
        &scans_as_reads
    } else {
        h
    };
    for t in &h.txns {
        for op in &t.ops {
            match op {
                Op::Read {
                    key,
                    values: Some(v),
                } if t.committed() => {
                    let e = longest.entry(*key).or_default();
                    if v.len() > e.len() {
                        e.clone_from(v);
                    }
                }
                Op::Append { key, value } if t.committed() => {
                    appends.entry(*key).or_default().push(*value)
                }
                _ => {}
            }
        }
    }
    for (key, values) in appends {
        let e = longest.entry(key).or_default();
        if e.is_empty() && values.len() == 1 {
            *e = values;
        }
    }
    longest
}

/// Writes `v`'s evidence into `results_dir/violations/<n>/` with the next
/// free `n`, replaying it first when `replayed` is given; returns the
/// directory relative to `results_dir` (`violations/<n>`).
///
/// Errors: a file that cannot be written.
pub fn write(
    results_dir: &Path,
    history: &History,
    v: &Violation,
    replayed: Option<&Replayed>,
    server_log: Option<&str>,
) -> std::io::Result<String> {
    let n = next_number(results_dir);
    let rel = format!("{DIR}/{n}");
    let dir: PathBuf = results_dir.join(&rel);
    std::fs::create_dir_all(&dir)?;
    let orders = version_orders(history);
    std::fs::write(dir.join("cycle.txt"), words::cycle(history, v))?;
    std::fs::write(
        dir.join("statements.txt"),
        words::statements(history, v, &orders),
    )?;
    std::fs::write(
        dir.join("history.edn"),
        edn::excerpt(history, &v.cycle.txns()),
    )?;
    std::fs::write(
        dir.join("history.json"),
        edn::json_excerpt(history, &v.cycle.txns()),
    )?;
    if let Some(shape) = v.shape {
        std::fs::write(
            dir.join("replay.spec"),
            replay_spec(history, v, shape, &orders),
        )?;
    }
    if let Some(r) = replayed {
        std::fs::write(dir.join("replay.txt"), r.summary())?;
        if let Some(first) = &r.first_output {
            std::fs::write(dir.join("replay.out"), first)?;
        }
    }
    if let Some(log) = server_log {
        std::fs::write(dir.join("server.log"), log)?;
    }
    Ok(rel)
}

/// The lines of a server log (a `log_line_prefix` of `%m [%p] %x `, UTC,
/// as `--log-violations` sets) of backend `pids` between `from_us` and
/// `to_us` (µs since the Unix epoch), with 5 ms of margin either side.
pub fn log_lines(log: &str, pids: &[u32], from_us: u64, to_us: u64) -> String {
    let margin = 5_000;
    let mut out = String::new();
    let mut keep = false;
    for line in log.lines() {
        if let Some((t, pid)) = prefix(line) {
            keep =
                pids.contains(&pid) && t + margin >= from_us && t <= to_us.saturating_add(margin);
        }
        // Continuation lines (DETAIL, STATEMENT ...) follow their line.
        if keep {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// `2026-11-28 17:05:01.123 UTC [4242] ...`: the time in µs since the
/// Unix epoch and the pid.
fn prefix(line: &str) -> Option<(u64, u32)> {
    let (date, rest) = line.split_once(' ')?;
    let (time, rest) = rest.split_once(' ')?;
    let rest = rest.strip_prefix("UTC [")?;
    let (pid, _) = rest.split_once(']')?;
    let t =
        chrono::NaiveDateTime::parse_from_str(&format!("{date} {time}"), "%Y-%m-%d %H:%M:%S%.3f")
            .ok()?
            .and_utc();
    Some((t.timestamp_micros() as u64, pid.parse().ok()?))
}

/// Where a run's evidence comes from and goes.
pub struct RunEvidence<'a> {
    pub results_dir: &'a Path,
    pub run: u32,
    pub cell: &'a crate::model::Cell,
    /// The run's saved history, relative to `results_dir`.
    pub history: &'a str,
    /// A server to replay on (the study's), in a scratch database.
    pub replay_on: Option<&'a crate::postgres::Target>,
    /// The server log and where the run's part of it starts, when
    /// `--log-violations` gave it a prefix with pid and xid.
    pub log: Option<(&'a Path, u64)>,
    pub cancel: &'a tokio_util::sync::CancellationToken,
}

/// Writes the evidence of every cycle in `invariants` whose class the
/// run's level forbids (their first [`crate::model::MAX_CYCLES`] each),
/// replaying each on the study's server, and sets each cycle's
/// `evidence`. Returns what went wrong, for the run's errors: evidence is
/// never a reason to lose the run.
pub async fn for_run(
    e: &RunEvidence<'_>,
    invariants: &mut [crate::model::InvariantResult],
) -> Vec<String> {
    let level = e.cell.isolation;
    let broken = |i: &crate::model::InvariantResult| {
        i.violations > 0 && !i.cycles.is_empty() && crate::model::forbids(level, &i.name)
    };
    if !invariants.iter().any(broken) {
        return Vec::new();
    }
    let mut errors = Vec::new();
    let history = match read_history(&e.results_dir.join(e.history)) {
        Ok(h) => h,
        Err(m) => return vec![format!("violation evidence: reading {}: {m}", e.history)],
    };
    let shape = if HISTORY_WORKLOADS.contains(&e.cell.workload.as_str()) {
        match Shape::for_workload(&e.cell.workload, &e.cell.params, &e.cell.strategy) {
            Ok(s) => Some(s),
            Err(m) => {
                errors.push(format!("violation evidence: {m}"));
                None
            }
        }
    } else {
        None
    };
    let log = e.log.and_then(|(path, from)| {
        let bytes = std::fs::read(path).ok()?;
        Some(String::from_utf8_lossy(bytes.get(from as usize..)?).into_owned())
    });
    let scratch = match e.replay_on {
        Some(t) if shape.is_some() => match replay::scratch_database(t).await {
            Ok(c) => Some(c),
            Err(m) => {
                errors.push(format!("violation evidence: no replay: {m:#}"));
                None
            }
        },
        _ => None,
    };
    for inv in invariants.iter_mut().filter(|i| broken(i)) {
        let class = inv.name.clone();
        for cycle in &mut inv.cycles {
            let v = Violation {
                run: Some(e.run),
                cell: e.cell.label(),
                class: &class,
                level,
                cycle,
                shape: shape.as_ref(),
            };
            let replayed = match (&scratch, &shape) {
                (Some(config), Some(shape)) => {
                    let text = replay_spec(&history, &v, shape, &version_orders(&history));
                    match replay(&text, config, REPLAYS, Duration::from_secs(10), e.cancel).await {
                        Ok(r) => Some(r),
                        Err(m) => {
                            errors.push(format!("violation evidence: replay: {m:#}"));
                            None
                        }
                    }
                }
                _ => None,
            };
            let server_log = log.as_deref().map(|log| {
                let txns: Vec<&crate::elle::Txn> = v
                    .cycle
                    .txns()
                    .iter()
                    .filter_map(|&t| history.txns.get(t as usize))
                    .collect();
                let pids: Vec<u32> = txns.iter().filter_map(|t| t.pid).collect();
                let from = txns
                    .iter()
                    .filter_map(|t| t.timing.as_ref().map(|x| x.begin_us))
                    .min();
                let to = txns
                    .iter()
                    .filter_map(|t| {
                        let x = t.timing.as_ref()?;
                        Some(x.begin_us + u64::from(x.commit.map_or(0, |c| c[1])))
                    })
                    .max();
                log_lines(log, &pids, from.unwrap_or(0), to.unwrap_or(u64::MAX))
            });
            match write(
                e.results_dir,
                &history,
                &v,
                replayed.as_ref(),
                server_log.as_deref(),
            ) {
                Ok(rel) => cycle.evidence = Some(rel),
                Err(m) => errors.push(format!("violation evidence: writing: {m}")),
            }
        }
    }
    if let (Some(t), Some(_)) = (e.replay_on, &scratch)
        && let Err(m) = replay::drop_scratch(t).await
    {
        errors.push(format!(
            "violation evidence: dropping the replay database: {m:#}"
        ));
    }
    errors
}

#[cfg(test)]
mod tests;
