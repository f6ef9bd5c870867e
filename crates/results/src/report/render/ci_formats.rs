//! NEW's figures for continuous-benchmarking services, from `isobench
//! compare BASE NEW --format bmf|gab|gab-latency`: each cell of NEW as a
//! benchmark named by its compare key (`isolation=rc strategy=optimistic
//! clients=16`), so that a service tracks the same cell from one build to
//! the next.
//!
//! - `bmf`: Bencher Metric Format JSON (bencher.dev, "Bencher Metric
//!   Format" reference and its JSON schema `bmf.json`): an object whose
//!   keys are benchmark names, each an object of measures, each
//!   `{"value", "lower_value", "upper_value"}` (only `value` required).
//!   Measures: `throughput` (mean TPS over complete runs, tx/s, with the
//!   95 % interval of the mean as lower and upper values),
//!   `effective-throughput` (the same for the effective TPS, when a
//!   history check gives one), `latency-p99-ms` (p99 of the merged
//!   histograms, ms, with the smallest and largest run p99 as lower and
//!   upper values).
//! - `gab`: github-action-benchmark's custom JSON for the
//!   `customBiggerIsBetter` tool: an array of `{"name", "unit", "value",
//!   "range", "extra"}` (name, unit and value required; range a string
//!   such as `± 12.3`); one entry per cell with its mean TPS.
//! - `gab-latency`: the same for `customSmallerIsBetter`, one entry per
//!   cell with its p99 in ms (the action takes one direction per file).

use serde_json::{Map, Value, json};

use crate::report::analysis::cells::{self, CellSummary};
use crate::report::analysis::compare::pair;
use crate::store::Results;

/// BMF JSON of `new`'s cells, named by their keys against `base`
/// (pretty-printed, ends with a newline).
pub fn bmf(base: &Results, new: &Results) -> String {
    let (keys, cells) = keyed(base, new);
    let mut doc = Map::new();
    for (key, c) in keys.iter().zip(&cells) {
        let mut measures = Map::new();
        if let Some(s) = c.tps {
            measures.insert("throughput".into(), interval(s.mean, s.ci95));
        }
        if let (Some(s), true) = (c.effective_tps, c.effective_differs()) {
            measures.insert("effective-throughput".into(), interval(s.mean, s.ci95));
        }
        if let Some(l) = c.merged_latency {
            let mut m = Map::new();
            m.insert("value".into(), json!(l.p99));
            if let Some(runs) = c.latency.p99 {
                m.insert("lower_value".into(), json!(runs.min));
                m.insert("upper_value".into(), json!(runs.max));
            }
            measures.insert("latency-p99-ms".into(), Value::Object(m));
        }
        if !measures.is_empty() {
            doc.insert(key.clone(), Value::Object(measures));
        }
    }
    pretty(&Value::Object(doc))
}

/// `{"value": mean, "lower_value": mean - ci, "upper_value": mean + ci}`,
/// without the bounds when the interval is not finite (one run).
fn interval(mean: f64, ci95: f64) -> Value {
    if ci95.is_finite() {
        json!({"value": mean, "lower_value": mean - ci95, "upper_value": mean + ci95})
    } else {
        json!({ "value": mean })
    }
}

/// github-action-benchmark's custom JSON of `new`'s cells: their mean TPS
/// (`latency` false, tool `customBiggerIsBetter`) or their p99 in ms
/// (`latency` true, tool `customSmallerIsBetter`).
pub fn gab(base: &Results, new: &Results, latency: bool) -> String {
    let (keys, cells) = keyed(base, new);
    let mut out = Vec::new();
    for (key, c) in keys.iter().zip(&cells) {
        let runs = format!("{} complete run(s)", c.n);
        if latency {
            if let Some(l) = c.merged_latency {
                out.push(json!({
                    "name": format!("{key} p99"),
                    "unit": "ms",
                    "value": l.p99,
                    "extra": format!("{runs}; p99 of the merged histograms"),
                }));
            }
        } else if let Some(s) = c.headline_tps() {
            let mut e = json!({
                "name": key,
                "unit": "tx/s",
                "value": s.mean,
                "extra": format!("{runs}; range: 95 % confidence interval of the mean"),
            });
            if s.ci95.is_finite() {
                e["range"] = json!(format!("± {:.1}", s.ci95));
            }
            out.push(e);
        }
    }
    pretty(&Value::Array(out))
}

/// `new`'s aggregated cells with their compare keys against `base`.
fn keyed<'a>(base: &'a Results, new: &'a Results) -> (Vec<String>, Vec<CellSummary<'a>>) {
    let ca = cells::aggregate(base);
    let cb = cells::aggregate(new);
    let keys = pair(base, new, &ca, &cb).keys_b;
    (keys, cb)
}

fn pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).expect("JSON of plain data");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixture;

    /// BMF against its documented shape (bencher.dev's `bmf.json` schema:
    /// an object of objects of `{value (required), lower_value,
    /// upper_value}` numbers).
    #[test]
    fn bmf_has_the_documented_shape() {
        let r = fixture::third_runs(fixture::results());
        let doc: Value = serde_json::from_str(&bmf(&r, &r)).unwrap();
        let benches = doc.as_object().unwrap();
        assert_eq!(benches.len(), 2);
        for (name, measures) in benches {
            assert!(name.starts_with("isolation="), "{name}");
            for (measure, metric) in measures.as_object().unwrap() {
                let m = metric.as_object().unwrap();
                assert!(m["value"].is_number(), "{measure}");
                for k in m.keys() {
                    assert!(
                        ["value", "lower_value", "upper_value"].contains(&k.as_str()),
                        "{k}"
                    );
                    assert!(m[k].is_number());
                }
            }
        }
        let rc = &doc["isolation=rc strategy=optimistic clients=4"];
        // rc: 98, 102, 100 tx/s: mean 100, CI half-width 4.968275.
        assert!((rc["throughput"]["value"].as_f64().unwrap() - 100.0).abs() < 1e-9);
        let low = rc["throughput"]["lower_value"].as_f64().unwrap();
        assert!((low - (100.0 - 4.968275)).abs() < 1e-5, "{low}");
        assert!(rc["latency-p99-ms"]["value"].as_f64().unwrap() > 0.0);
    }

    /// github-action-benchmark's custom format: an array of objects with
    /// `name`, `unit`, `value` (a number) and optional `range` and
    /// `extra` strings.
    #[test]
    fn gab_has_the_documented_shape() {
        let r = fixture::third_runs(fixture::results());
        for latency in [false, true] {
            let doc: Value = serde_json::from_str(&gab(&r, &r, latency)).unwrap();
            let entries = doc.as_array().unwrap();
            assert_eq!(entries.len(), 2);
            for e in entries {
                let o = e.as_object().unwrap();
                assert!(o["name"].is_string() && o["unit"].is_string() && o["value"].is_number());
                for k in o.keys() {
                    assert!(["name", "unit", "value", "range", "extra"].contains(&k.as_str()));
                }
                if let Some(range) = o.get("range") {
                    assert!(range.as_str().unwrap().starts_with("± "));
                }
            }
            assert_eq!(entries[0]["unit"], if latency { "ms" } else { "tx/s" });
        }
    }
}
