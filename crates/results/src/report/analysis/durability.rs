//! What a durability level costs (issue #50): each cell whose
//! `synchronous_commit` waits for more than the local flush, against the
//! cell that differs from it only by `synchronous_commit = local`, in
//! throughput (the ratio of the means, with the 95 % interval and the
//! test of its log, [`stats::compare`]) and in p99 latency (the runs'
//! p99s, lower is better), with the standbys' lags that explain it: a
//! commit under `remote_write` waits for a synchronous standby's write,
//! under `on` for its flush, under `remote_apply` for its replay
//! (PostgreSQL documentation, "synchronous_commit").

use crate::model::{SYNCHRONOUS_COMMIT, StandbyObservation};
use crate::report::analysis::cells::CellSummary;
use crate::report::analysis::model::ReportModel;
use crate::stats::{self, Better, Comparison};

/// The level every other is compared with.
pub const LOCAL: &str = "local";

/// One durability level's cost against local, other factors equal.
#[derive(Debug, Clone)]
pub struct DurabilityCost {
    /// The cell (index into the model's cells) and its level.
    pub cell: usize,
    pub level: String,
    /// The cell with `synchronous_commit = local`.
    pub local: usize,
    /// Mean TPS against local's: `pct`, its interval, the verdict, MDE.
    pub tps: Comparison,
    /// The ratio of the mean TPS to local's.
    pub ratio: f64,
    /// The runs' p99 latency against local's (lower is better), ms means.
    pub p99: Option<Comparison>,
    pub p99_ms: Option<(f64, f64)>,
    /// The lag of the standbys the primary waits for (those whose
    /// `sync_state` is `sync` or `quorum`, else every standby): the lag
    /// this level waits for, mean over the cell's complete runs, ms;
    /// `None` without standbys or samples.
    pub waited_lag_ms: Option<f64>,
    /// Which lag that is (`write`, `flush`, `replay`), after the level.
    pub lag_kind: &'static str,
    /// The standbys it is read from.
    pub standbys: Vec<String>,
    /// Whether those standbys were synchronous (the commits waited for
    /// them); false: asynchronous standbys only, whose lag the commits
    /// did not wait for.
    pub synchronous: bool,
}

/// The lag `level` waits for: `write` (remote_write), `flush` (on),
/// `replay` (remote_apply); `None` for local and off.
pub fn waited_lag(level: &str) -> Option<&'static str> {
    match level {
        "remote_write" => Some("write"),
        "on" => Some("flush"),
        "remote_apply" => Some("replay"),
        _ => None,
    }
}

/// Every cell's cost against its local cell, in the cells' order; empty
/// without a `synchronous_commit` factor that has `local`.
pub fn costs(m: &ReportModel) -> Vec<DurabilityCost> {
    let mut out = Vec::new();
    for (i, c) in m.cells.iter().enumerate() {
        let Some(level) = c.cell.settings.get(SYNCHRONOUS_COMMIT) else {
            continue;
        };
        if level == LOCAL {
            continue;
        }
        let Some(local) = local_of(m, c) else {
            continue;
        };
        let (Some(v), Some(b)) = (c.tps.as_ref(), m.cells[local].tps.as_ref()) else {
            continue;
        };
        let lag_kind = waited_lag(level).unwrap_or("replay");
        let (waited_lag_ms, standbys, synchronous) = lag_of(c, lag_kind);
        let p99 = match (&c.latency.p99, &m.cells[local].latency.p99) {
            (Some(v), Some(b)) => Some((stats::compare(v, b, Better::Lower), (v.mean, b.mean))),
            _ => None,
        };
        out.push(DurabilityCost {
            cell: i,
            level: level.clone(),
            local,
            tps: stats::compare(v, b, Better::Higher),
            ratio: if b.mean > 0.0 {
                v.mean / b.mean
            } else {
                f64::NAN
            },
            p99: p99.map(|(c, _)| c),
            p99_ms: p99.map(|(_, ms)| ms),
            waited_lag_ms,
            lag_kind,
            standbys,
            synchronous,
        });
    }
    out
}

/// The cell that differs from `c` only by `synchronous_commit = local`.
fn local_of(m: &ReportModel, c: &CellSummary) -> Option<usize> {
    let mut want = c.cell.clone();
    want.settings
        .insert(SYNCHRONOUS_COMMIT.to_string(), LOCAL.to_string());
    m.cells.iter().position(|o| *o.cell == want)
}

/// The mean `kind` lag (ms) over `c`'s complete runs of the standbys the
/// primary waited for (else of every standby), their names, and whether
/// it waited for them.
fn lag_of(c: &CellSummary, kind: &str) -> (Option<f64>, Vec<String>, bool) {
    let waited = |s: &StandbyObservation| matches!(s.sync_state.as_str(), "sync" | "quorum");
    let any_waited = c
        .complete_runs()
        .any(|r| r.server.standbys.iter().any(waited));
    let pick = |s: &StandbyObservation| !any_waited || waited(s);
    let mut names: Vec<String> = Vec::new();
    let mut values = Vec::new();
    for r in c.complete_runs() {
        for s in r.server.standbys.iter().filter(|s| pick(s)) {
            if !names.contains(&s.name) {
                names.push(s.name.clone());
            }
            let lag = match kind {
                "write" => s.write_lag_ms,
                "flush" => s.flush_lag_ms,
                _ => s.replay_lag_ms,
            };
            if lag.samples > 0 {
                values.push(lag.mean);
            }
        }
    }
    let mean = (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64);
    (mean, names, any_waited)
}

/// `0.62× local's TPS (-38 %, 95 % CI [-41 %, -35 %], significantly
/// slower)` and, when known, the p99 against local's and the lag waited.
pub fn cost_text(m: &ReportModel, d: &DurabilityCost) -> String {
    let ci = d
        .tps
        .pct_ci
        .map(|c| format!(", 95 % CI [{:+.1} %, {:+.1} %]", c.low, c.high))
        .unwrap_or_default();
    let pct = d.tps.pct.map_or("n/a".into(), |p| format!("{p:+.1} %"));
    let verdict = match d.tps.caveat() {
        Some(c) if !d.tps.verdict.significant() => format!("{}: {c}", d.tps.verdict.label()),
        _ => d.tps.verdict.label().to_string(),
    };
    let mut text = format!(
        "{}: {:.2}× the TPS of synchronous_commit=local ({pct}{ci}, {verdict})",
        m.factors.short_labels[d.cell], d.ratio
    );
    if let (Some(p), Some((v, b))) = (&d.p99, d.p99_ms) {
        let pci = p
            .pct_ci
            .map(|c| format!(" [{:+.0} %, {:+.0} %]", c.low, c.high))
            .unwrap_or_default();
        text.push_str(&format!(
            "; p99 {} ms against {} ms ({}{pci})",
            crate::report::format::fmt_ms(v),
            crate::report::format::fmt_ms(b),
            p.pct.map_or("n/a".into(), |p| format!("{p:+.0} %"))
        ));
    }
    match d.waited_lag_ms {
        Some(l) if !d.synchronous => text.push_str(&format!(
            "; no standby was synchronous, so commits waited for the local flush only \
             ({} {} lag {} ms, mean, not waited for)",
            d.standbys.join(", "),
            d.lag_kind,
            crate::report::format::fmt_ms(l)
        )),
        Some(l) => text.push_str(&format!(
            "; each commit waits for {} {} ({} lag {} ms, mean)",
            d.standbys.join(", "),
            match d.lag_kind {
                "write" => "to write its WAL",
                "flush" => "to flush its WAL",
                _ => "to apply its WAL",
            },
            d.lag_kind,
            crate::report::format::fmt_ms(l)
        )),
        None if d.standbys.is_empty() => {
            text.push_str("; no standby was observed: the level waits for nothing more than local")
        }
        None => {}
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Isolation, LagStat, fixture};

    /// The fixture as a durability study: its rc runs at
    /// synchronous_commit=local, its ser runs (made rc) at remote_apply
    /// with a synchronous standby s1 whose replay lag is 2 ms.
    fn durability_study() -> crate::store::Results {
        let mut r = fixture::results();
        r.config.setting_factors = vec![(
            SYNCHRONOUS_COMMIT.into(),
            vec![LOCAL.into(), "remote_apply".into()],
        )];
        for run in &mut r.runs {
            let level = if run.cell.isolation == Isolation::Serializable {
                run.server.standbys = vec![StandbyObservation {
                    name: "s1".into(),
                    samples: 10,
                    sync_state: "sync".into(),
                    replay_lag_ms: LagStat {
                        mean: 2.0,
                        max: 5.0,
                        samples: 10,
                    },
                    ..Default::default()
                }];
                "remote_apply"
            } else {
                LOCAL
            };
            run.cell.isolation = Isolation::ReadCommitted;
            run.cell
                .settings
                .insert(SYNCHRONOUS_COMMIT.into(), level.into());
        }
        r
    }

    #[test]
    fn each_level_is_compared_with_local_and_explained_by_the_lag_it_waits_for() {
        let r = durability_study();
        let m = ReportModel::new(&r);
        let d = costs(&m);
        assert_eq!(d.len(), 1, "{d:?}");
        let d = &d[0];
        assert_eq!(d.level, "remote_apply");
        assert_eq!(m.cells[d.local].cell.settings[SYNCHRONOUS_COMMIT], LOCAL);
        assert!((d.ratio - 1.5).abs() < 1e-9, "{}", d.ratio);
        assert_eq!(d.waited_lag_ms, Some(2.0));
        assert!(d.synchronous);
        let text = cost_text(&m, d);
        assert!(
            text.contains("× the TPS of synchronous_commit=local")
                && text.contains(
                    "each commit waits for s1 to apply its WAL (replay lag 2.000 ms, mean)"
                ),
            "{text}"
        );
        let f = crate::report::analysis::findings::findings(&m);
        assert!(f.iter().any(|f| f.rule == "durability"), "{f:?}");
        // The standby section shows s1.
        let t = crate::report::tables::standbys(&m);
        assert!(!t.is_empty());
        // Without the factor: nothing.
        assert!(costs(&ReportModel::new(&fixture::results())).is_empty());
    }
}
