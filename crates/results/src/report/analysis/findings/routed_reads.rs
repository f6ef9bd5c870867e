//! The stale-reads finding (issue #50): per route, the standby reads
//! examined, how many were behind their client's last commit
//! (read-your-writes violations), their staleness in ms and bytes of WAL,
//! and the routed reads that went back in time (monotonic-read
//! violations), from [`crate::report::analysis::routed_reads`]. With
//! `read_from` a factor, one finding per combination of the other
//! factors puts its routes side by side.

use super::Finding;
use crate::model::READ_FROM;
use crate::report::analysis::model::ReportModel;
use crate::report::analysis::routed_reads::RoutedReads;
use crate::report::format::{fmt_ms, grouped};

/// What to try when reads were behind.
const ADVICE: &str = "a commit waits until the standby read from has applied it with \
    --synchronous-commit remote_apply and that standby synchronous (--replication sync with one \
    standby, quorum:N with N standbys); reads then see their client's commits";

/// One finding per routed cell, or, with `read_from` a factor, one per
/// combination of the other factors naming every route (a route to the
/// primary as `no read routed`).
pub(super) fn stale_reads(m: &ReportModel) -> Vec<Finding> {
    if m.routed_reads.is_empty() {
        return Vec::new();
    }
    let advice = m
        .routed_reads
        .iter()
        .any(|r| r.behind > 0)
        .then(|| ADVICE.to_string());
    let Some(col) = m.factors.headers.iter().position(|h| h == READ_FROM) else {
        return m
            .routed_reads
            .iter()
            .map(|r| Finding {
                rule: "stale-reads",
                text: format!(
                    "{}: reads on standbys: {}.",
                    m.factors.short_labels[r.cell],
                    route_text(r)
                ),
                advice: advice.clone(),
            })
            .collect();
    };
    let others_vary = (0..m.factors.headers.len()).any(|j| j != col && m.factors.varying[j]);
    // The cells that differ only by their route, in the cells' order.
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for i in 0..m.cells.len() {
        let key = m.factors.label_without(i, Some(col));
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, cells)) => cells.push(i),
            None => groups.push((key, vec![i])),
        }
    }
    groups
        .into_iter()
        .filter(|(_, cells)| {
            cells
                .iter()
                .any(|i| m.routed_reads.iter().any(|r| r.cell == *i))
        })
        .map(|(key, cells)| {
            let parts: Vec<String> = cells
                .iter()
                .map(|&i| {
                    let route = &m.factors.values[i][col];
                    match m.routed_reads.iter().find(|r| r.cell == i) {
                        Some(r) => format!("{route}: {}", route_text(r)),
                        None => format!("{route}: no read routed"),
                    }
                })
                .collect();
            let text = if others_vary {
                format!("{key}, stale reads by route: {}.", parts.join("; "))
            } else {
                format!("Stale reads by route: {}.", parts.join("; "))
            };
            Finding {
                rule: "stale-reads",
                text,
                advice: advice.clone(),
            }
        })
        .collect()
}

/// `10 of 200 standby reads after a commit of their client were behind
/// it (5.0 %: read-your-writes violations), staleness p50 1.000 ms and
/// 1,000 bytes of WAL, p99 4.000 ms and 4,000 bytes; 1 of 300 routed
/// reads went back in time (monotonic-read violations)`, with `at most`
/// before the reads behind when several clients make the count an upper
/// bound.
pub fn route_text(r: &RoutedReads) -> String {
    let behind = if r.examined == 0 {
        "no standby read followed a commit of its client".to_string()
    } else {
        let at_most = if r.at_most { "at most " } else { "" };
        let mut t = format!(
            "{at_most}{} of {} standby reads after a commit of their client were behind it \
             ({:.1} %: read-your-writes violations{})",
            grouped(r.behind),
            grouped(r.examined),
            100.0 * r.behind as f64 / r.examined as f64,
            if r.at_most {
                "; at most: with several clients, WAL another one wrote between a COMMIT and its \
                 position query counts as not replayed"
            } else {
                ""
            }
        );
        if let (Some(ms), Some(b)) = (r.ms, r.bytes) {
            let runs = if r.runs > 1 {
                format!(" (medians of {} runs' percentiles)", r.runs)
            } else {
                String::new()
            };
            t.push_str(&format!(
                ", staleness p50 {} ms and {} bytes of WAL, p99 {} ms and {} bytes{runs}",
                fmt_ms(ms.p50),
                grouped(b.p50.round() as u64),
                fmt_ms(ms.p99),
                grouped(b.p99.round() as u64),
            ));
        }
        t
    };
    format!(
        "{behind}; {} of {} routed reads went back in time (monotonic-read violations)",
        grouped(r.went_back),
        grouped(r.routed)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Isolation, fixture};
    use crate::report::analysis::routed_reads::tests::checks;

    /// One route, not a factor: a finding per routed cell with its
    /// counts, the "at most" of several clients and the staleness.
    #[test]
    fn one_route_a_finding_per_cell() {
        let mut r = fixture::results();
        for run in &mut r.runs {
            if run.cell.isolation == Isolation::ReadCommitted {
                run.invariants.extend(checks(100, 5, (1.0, 4.0), 150, 0));
            }
        }
        let m = ReportModel::new(&r);
        let f = stale_reads(&m);
        assert_eq!(f.len(), 1, "{f:?}");
        let t = &f[0].text;
        assert!(
            t.starts_with(
                "rc: reads on standbys: at most 10 of 200 standby reads after a commit of their \
                 client were behind it (5.0 %: read-your-writes violations; at most: with several clients"
            ),
            "{t}"
        );
        assert!(
            t.contains(
                "staleness p50 1.000 ms and 1,000 bytes of WAL, p99 4.000 ms and 4,000 bytes \
                 (medians of 2 runs' percentiles); 0 of 300 routed reads went back in time"
            ),
            "{t}"
        );
        assert!(f[0].advice.as_deref().unwrap().contains("remote_apply"));
        // Among the report's findings.
        assert!(super::super::findings(&m).contains(&f[0]));
    }

    /// `read_from` a factor: one finding per combination of the other
    /// factors, each route beside the others, the primary's too; one
    /// client counts exactly.
    #[test]
    fn routes_side_by_side_when_read_from_is_a_factor() {
        let mut r = fixture::results();
        r.config.clients = vec![1];
        r.config.setting_factors = vec![(
            READ_FROM.into(),
            vec!["primary".into(), "standby".into(), "any".into()],
        )];
        let mut runs = Vec::new();
        for (k, route) in ["primary", "standby", "any"].into_iter().enumerate() {
            for base in r.runs.iter().filter(|x| x.complete) {
                let mut run = base.clone();
                run.index = 10 * (k as u32 + 1) + base.index;
                run.cell.clients = 1;
                run.cell.settings.insert(READ_FROM.into(), route.into());
                match route {
                    "standby" => run.invariants.extend(checks(50, 20, (2.0, 9.0), 50, 0)),
                    "any" => run.invariants.extend(checks(25, 4, (1.0, 3.0), 50, 2)),
                    _ => {}
                }
                runs.push(run);
            }
        }
        r.runs = runs;
        let m = ReportModel::new(&r);
        assert_eq!(m.routed_reads.len(), 4, "{:?}", m.routed_reads);
        assert!(
            m.routed_reads
                .iter()
                .all(|x| !x.at_most && x.route.as_deref() != Some("primary"))
        );
        let f = stale_reads(&m);
        assert_eq!(f.len(), 2, "{f:?}");
        let rc = &f[0].text;
        assert!(rc.starts_with("rc, stale reads by route: primary: no read routed; standby: 40 of 100 standby reads"), "{rc}");
        assert!(
            rc.contains("(40.0 %: read-your-writes violations), staleness p50 2.000 ms"),
            "{rc}"
        );
        assert!(rc.contains("; any: 8 of 50 standby reads"), "{rc}");
        assert!(
            rc.contains("4 of 100 routed reads went back in time"),
            "{rc}"
        );
        assert!(!rc.contains("at most"), "{rc}");
        assert!(
            f[1].text.starts_with("ser, stale reads by route: primary"),
            "{}",
            f[1].text
        );
        // Only the route varies: no other factor names the group.
        r.runs
            .retain(|x| x.cell.isolation == Isolation::ReadCommitted);
        r.config.isolation = vec![Isolation::ReadCommitted];
        let f = stale_reads(&ReportModel::new(&r));
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].text
                .starts_with("Stale reads by route: primary: no read routed; standby: 40 of 100"),
            "{}",
            f[0].text
        );
        // No route read from a standby: no finding.
        let mut none = fixture::results();
        none.runs.retain(|x| x.complete);
        assert!(stale_reads(&ReportModel::new(&none)).is_empty());
    }
}
