//! Reading and checking the directories to merge: one study, one shard
//! each (or repeated runs), the same runs in the same order.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Result;
use chrono::{DateTime, FixedOffset};
use serde_json::Value;

use crate::model::BadInput;
use crate::store::{self, Results, RunRecord};

/// The shard a results directory was written by (`config.shard` of
/// results.json): `index` of `count`, from 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardOf {
    /// From 0.
    pub index: u32,
    /// Shards of the study.
    pub count: u32,
}

/// One results directory read for merging.
#[derive(Debug, Clone)]
pub struct Input {
    /// The directory as named on the command line.
    pub dir: PathBuf,
    /// Its results.json, as this isobench reads it.
    pub results: Results,
    /// `config` of results.json as written (the comparison of studies
    /// reads every key, also those this isobench does not know).
    pub config: Value,
    /// `config.shard`; `None` when the study was not sharded.
    pub shard: Option<ShardOf>,
    /// Run index -> `runs[].window_start`, where present: the instant,
    /// and the RFC 3339 text as written.
    pub window_start: BTreeMap<u32, DateTime<FixedOffset>>,
    /// The same, as written (copied to the merged results unchanged).
    pub window_start_text: BTreeMap<u32, String>,
}

/// Reads `dir/results.json` (schema version [`store::SCHEMA_VERSION`]),
/// with the optional sharding fields `config.shard` and
/// `runs[].window_start`.
///
/// Errors ([`BadInput`], naming the directory): no results.json, malformed,
/// another schema version, or a malformed `shard` or `window_start`.
pub fn read_input(dir: &Path) -> Result<Input, BadInput> {
    let bad = |what: String| BadInput(format!("merge: {}: {what}", dir.display()));
    if !dir.is_dir() {
        return Err(bad(
            "no such directory; name results directories written by `isobench run`".into(),
        ));
    }
    let results = crate::store::read_json(dir).map_err(|e| bad(e.to_string()))?;
    let text = std::fs::read_to_string(dir.join(store::RESULTS_JSON))
        .map_err(|e| bad(format!("{}: {e}", store::RESULTS_JSON)))?;
    let raw: Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let config = raw.get("config").cloned().unwrap_or(Value::Null);
    let shard = match config.get("shard") {
        None | Some(Value::Null) => None,
        Some(s) => {
            let n = |k: &str| {
                s.get(k)
                    .and_then(Value::as_u64)
                    .and_then(|v| u32::try_from(v).ok())
            };
            match (n("index"), n("count")) {
                (Some(index), Some(count)) if index < count => Some(ShardOf { index, count }),
                _ => {
                    return Err(bad(format!(
                        "config.shard is {s}; expected {{\"index\": I, \"count\": N}} with I < N"
                    )));
                }
            }
        }
    };
    let mut window_start = BTreeMap::new();
    let mut window_start_text = BTreeMap::new();
    for run in raw
        .get("runs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (Some(index), Some(ws)) = (
            run.get("index").and_then(Value::as_u64),
            run.get("window_start").and_then(Value::as_str),
        ) else {
            continue;
        };
        let t = DateTime::parse_from_rfc3339(ws)
            .map_err(|e| bad(format!("run {index}: window_start '{ws}': {e}")))?;
        window_start.insert(index as u32, t);
        window_start_text.insert(index as u32, ws.to_string());
    }
    Ok(Input {
        dir: dir.to_path_buf(),
        results,
        config,
        shard,
        window_start,
        window_start_text,
    })
}

/// The configuration keys that may differ between the directories of one
/// study: the shard, and a managed server's socket and port in `target`
/// (`managed PostgreSQL from DIR (socket S, 127.0.0.1:PORT)`, compared up
/// to its parenthesis; an external server's is compared whole).
pub(super) fn comparable_config(config: &Value) -> Value {
    let mut c = config.clone();
    if let Some(o) = c.as_object_mut() {
        o.remove("shard");
        if let Some(Value::String(t)) = o.get_mut("target")
            && t.starts_with("managed ")
            && let Some(i) = t.find(" (")
        {
            t.truncate(i);
        }
    }
    c
}

/// The first key (dotted path) where `a` and `b` differ, if any.
pub(super) fn first_difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match (x.get(k), y.get(k)) {
                    (Some(u), Some(v)) => first_difference(u, v, &p),
                    _ => Some(p),
                }
            })
        }
        _ if a == b => None,
        _ => Some(path.to_string()),
    }
}

/// Checks that `inputs` are the directories of one study and puts them in
/// merge order (shard 0 first; else as given). Returns the warnings (a
/// shard index of 0..N-1 that no directory has).
///
/// Errors ([`BadInput`], naming the directory and the key): a
/// configuration that differs from the first directory's (in anything but
/// the shard and the managed server's address), sharded and unsharded
/// directories mixed, different shard counts, two directories with the
/// same shard index, or different run lists (index, cell, repetition).
pub fn check(inputs: &mut [Input]) -> Result<Vec<String>, BadInput> {
    let Some(first) = inputs.first() else {
        return Err(BadInput(
            "merge: name at least one results directory".into(),
        ));
    };
    let base = comparable_config(&first.config);
    let key = |r: &RunRecord| (r.index, r.cell.clone(), r.repetition);
    let base_runs: Vec<_> = first.results.runs.iter().map(key).collect();
    for i in &inputs[1..] {
        let name = || format!("merge: {} and {}", first.dir.display(), i.dir.display());
        if let Some(k) = first_difference(&base, &comparable_config(&i.config), "") {
            return Err(BadInput(format!(
                "{}: not the same study: config.{k} differs ({} vs {}); merge only the directories of one study",
                name(),
                show(lookup(&first.config, &k)),
                show(lookup(&i.config, &k)),
            )));
        }
        if first.shard.is_some() != i.shard.is_some() {
            return Err(BadInput(format!(
                "{}: config.shard differs (one is a shard of a sharded study, the other is not)",
                name()
            )));
        }
        if let (Some(a), Some(b)) = (first.shard, i.shard)
            && a.count != b.count
        {
            return Err(BadInput(format!(
                "{}: config.shard.count differs ({} vs {})",
                name(),
                a.count,
                b.count
            )));
        }
        let runs: Vec<_> = i.results.runs.iter().map(key).collect();
        if runs != base_runs {
            let what = match base_runs.iter().zip(&runs).position(|(a, b)| a != b) {
                Some(p) => format!(
                    "run {} is {} repetition {} in the first, {} repetition {} in the second",
                    base_runs[p].0,
                    base_runs[p].1.label(),
                    base_runs[p].2,
                    runs[p].1.label(),
                    runs[p].2
                ),
                None => format!("{} runs vs {}", base_runs.len(), runs.len()),
            };
            return Err(BadInput(format!(
                "{}: not the same runs (runs differ: {what}); merge directories that ran the same plan to the end",
                name()
            )));
        }
    }
    let mut warnings = Vec::new();
    if let Some(count) = first.shard.map(|s| s.count) {
        let mut seen: BTreeMap<u32, &Path> = BTreeMap::new();
        for i in inputs.iter() {
            let s = i.shard.expect("checked above").index;
            if let Some(other) = seen.insert(s, &i.dir) {
                return Err(BadInput(format!(
                    "merge: {} and {}: both are shard {s} (config.shard.index); name each shard's directory once",
                    other.display(),
                    i.dir.display()
                )));
            }
        }
        let missing: Vec<String> = (0..count)
            .filter(|s| !seen.contains_key(s))
            .map(|s| s.to_string())
            .collect();
        if !missing.is_empty() {
            warnings.push(format!(
                "shard(s) {} of 0..{} missing: the merged results hold only the other shards' clients",
                missing.join(", "),
                count - 1
            ));
        }
        inputs.sort_by_key(|i| i.shard.map(|s| s.index));
    }
    Ok(warnings)
}

pub(super) fn lookup<'a>(v: &'a Value, dotted: &str) -> Option<&'a Value> {
    dotted.split('.').try_fold(v, |v, k| v.get(k))
}

pub(super) fn show(v: Option<&Value>) -> String {
    match v {
        None => "absent".into(),
        Some(v) => {
            let s = v.to_string();
            if s.chars().count() > 80 {
                format!("{}...", s.chars().take(77).collect::<String>())
            } else {
                s
            }
        }
    }
}

/// Each input's shift of run `index`'s per-second series, whole seconds
/// after the earliest `window_start`: the rounded difference of the
/// windows' starts when the inputs are shards of one study and all carry
/// `window_start`; else 0 (independent runs are summed second by second
/// from each window's start).
pub fn shifts(inputs: &[Input], index: u32) -> Vec<i64> {
    let starts: Option<Vec<_>> = inputs
        .iter()
        .map(|i| i.shard.and(i.window_start.get(&index)))
        .collect();
    let Some(starts) = starts else {
        return vec![0; inputs.len()];
    };
    let Some(min) = starts.iter().min().copied() else {
        return vec![0; inputs.len()];
    };
    starts
        .iter()
        .map(|s| {
            let ms = (**s - *min).num_milliseconds();
            (ms as f64 / 1000.0).round() as i64
        })
        .collect()
}
