//! Findings about plans and SIRead locks: a statement planned differently
//! across cells or within a run, relation-level predicate locks that make
//! SSI conflict with every writer.

use super::Finding;
use crate::model::plan_shape;
use crate::report::model::ReportModel;

/// A statement ran with plans of different shapes in different cells
/// (estimates aside): the comparison mixes a plan effect with the factor's
/// effect (under SERIALIZABLE a sequential scan takes a relation-level
/// SIRead lock that every writer conflicts with).
pub(super) fn plans_differ(m: &ReportModel) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut labels: Vec<&str> = Vec::new();
    for p in &m.plans {
        if !labels.contains(&p.label) {
            labels.push(p.label);
        }
    }
    for label in labels {
        // Shapes, each with the cells whose plan has it.
        let mut shapes: Vec<(Vec<String>, Vec<String>)> = Vec::new();
        for g in m.plans.iter().filter(|p| p.label == label) {
            let shape = plan_shape(g.plan);
            let cells = g
                .cells
                .iter()
                .filter_map(|c| m.cell_index(c).map(|i| m.factors.short_labels[i].clone()));
            match shapes.iter_mut().find(|(s, _)| *s == shape) {
                Some((_, c)) => c.extend(cells),
                None => shapes.push((shape, cells.collect())),
            }
        }
        if shapes.len() < 2 {
            continue;
        }
        // The first plan line where the shapes part.
        let at = (0..)
            .find(|&k| shapes.iter().any(|(s, _)| s.get(k) != shapes[0].0.get(k)))
            .unwrap_or(0);
        let described: Vec<String> = shapes
            .iter()
            .map(|(s, cells)| {
                let line = s.get(at).map_or("(no such step)", String::as_str);
                let locks: Vec<String> = cells
                    .iter()
                    .filter_map(|label| {
                        let i = m.factors.short_labels.iter().position(|l| l == label)?;
                        siread_note(m, i).map(|n| format!("{label}: {n}"))
                    })
                    .collect();
                let locks = if locks.is_empty() {
                    String::new()
                } else {
                    format!(" (SIRead locks in {})", locks.join("; "))
                };
                format!("{line} in {}{locks}", cells.join("; "))
            })
            .collect();
        out.push(Finding {
            rule: "plans",
            text: format!(
                "`{label}` ran with {} different plans: {}.",
                shapes.len(),
                described.join(" but ")
            ),
            advice: Some(
                "the cells differ in plan as well as in the factor; see Plans (ANALYZE, or equal data before each run)".into(),
            ),
        });
    }
    out
}

/// The SIRead locks of cell `i` by granularity as shares of their mean
/// count, and the relations locked whole or by page (coarser than a
/// tuple: every writer of those relations or pages conflicts), e.g.
/// `62 % relation, 0 % page, 38 % tuple; relation-level on
/// pgbench_branches`. `None` when the cell sampled no SIRead lock.
pub(super) fn siread_note(m: &ReportModel, i: usize) -> Option<String> {
    let g = &m.siread[i];
    let total: f64 = g.values().map(|c| c.mean).sum();
    if total <= 0.0 {
        return None;
    }
    let shares: Vec<String> = ["relation", "page", "tuple"]
        .iter()
        .map(|k| {
            let pct = 100.0 * g.get(*k).map_or(0.0, |c| c.mean) / total;
            format!("{pct:.0} % {k}")
        })
        .collect();
    let mut coarse: Vec<&str> = Vec::new();
    for run in m.cells[i].complete_runs() {
        for (name, c) in &run.server.siread_locks.by_relation {
            let relation_level = name.ends_with(" (relation)") || name.ends_with(" (page)");
            if relation_level && c.max > 0 && !coarse.contains(&name.as_str()) {
                coarse.push(name);
            }
        }
    }
    let coarse = if coarse.is_empty() {
        String::new()
    } else {
        format!("; coarser than a tuple on {}", coarse.join(", "))
    };
    Some(format!("{}{coarse}", shares.join(", ")))
}

/// Relation-level SIRead locks explained by plans: a cell holding SIRead
/// locks on whole relations (any sample) whose statements scan those
/// relations sequentially (a sequential scan under SERIALIZABLE locks the
/// relation, so every write to it is a read-write conflict). Names the
/// share of relation-level locks, the statements and plan steps, and how
/// other cells ran the same statements when they differ (start or end of
/// the window). Any relation-level lock with such a plan is a finding.
pub(super) fn coarse_siread(m: &ReportModel) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, c) in m.cells.iter().enumerate() {
        let mut relations: Vec<&str> = Vec::new();
        for run in c.complete_runs() {
            for (name, s) in &run.server.siread_locks.by_relation {
                if let Some(rel) = name.strip_suffix(" (relation)")
                    && s.max > 0
                    && !relations.contains(&rel)
                {
                    relations.push(rel);
                }
            }
        }
        // (statement, plan step) scanning one of them sequentially.
        let mut scans: Vec<(&str, String)> = Vec::new();
        for (label, step) in cell_plan_steps(m, i) {
            let seq = relations
                .iter()
                .any(|r| step.starts_with("Seq Scan on ") && step.ends_with(&format!(" {r}")));
            if seq && !scans.iter().any(|(l, _)| *l == label) {
                scans.push((label, step));
            }
        }
        if scans.is_empty() {
            continue;
        }
        let g = &m.siread[i];
        let total: f64 = g.values().map(|c| c.mean).sum();
        let rel = g.get("relation").map_or(0.0, |c| c.mean);
        let share = if total > 0.0 {
            format!("{:.0} % of its SIRead locks were", 100.0 * rel / total)
        } else {
            "it held SIRead locks".into()
        };
        let statements: Vec<String> = scans
            .iter()
            .map(|(label, step)| {
                let elsewhere = other_cells_steps(m, i, label, step);
                format!("`{label}` ran as {step}{elsewhere}")
            })
            .collect();
        out.push(Finding {
            rule: "siread",
            text: format!(
                "{}: {share} relation-level, on {}: {}; a relation-level SIRead lock makes every write to the relation a read-write conflict.",
                m.factors.short_labels[i],
                relations.join(", "),
                statements.join("; ")
            ),
            advice: Some(
                "an index scan locks tuples or pages instead: compare at the table sizes and statistics the application has (scale, ANALYZE after warm-up), or measure what the plan costs with `[factors.settings] enable_seqscan = [\"on\", \"off\"]` in the study file (pgbench's tpcb-like at scale 10, 16 clients: 4.5x, BENCHMARKS.md); see Plans".into(),
            ),
        });
    }
    out
}

/// The scan steps (plan lines naming a scan, estimates stripped) of each
/// statement of cell `i`, at the start of its first complete run's window
/// and, where they changed, at the end of any of its runs' windows:
/// `(statement label, step)`.
pub(super) fn cell_plan_steps<'a>(m: &'a ReportModel, i: usize) -> Vec<(&'a str, String)> {
    let c = &m.cells[i];
    let mut plans: Vec<(&str, &str)> = Vec::new();
    if let Some(run) = c.runs.iter().find(|r| r.complete).or(c.runs.first()) {
        plans.extend(
            run.server
                .plans
                .iter()
                .map(|p| (p.label.as_str(), p.plan.as_str())),
        );
    }
    for run in c.complete_runs() {
        plans.extend(
            run.server
                .plan_changes
                .iter()
                .map(|p| (p.label.as_str(), p.end.as_str())),
        );
    }
    let mut steps = Vec::new();
    for (label, plan) in plans {
        for step in plan_shape(plan)
            .into_iter()
            .filter(|l| l.contains(" Scan "))
        {
            if !steps.contains(&(label, step.clone())) {
                steps.push((label, step));
            }
        }
    }
    steps
}

/// How cells other than `i` ran `label` when some scan step differs from
/// `step` (same relation): ` (Index Scan using t_pkey on t in rc)`, or
/// nothing.
pub(super) fn other_cells_steps(m: &ReportModel, i: usize, label: &str, step: &str) -> String {
    let relation = step.rsplit(' ').next().unwrap_or("");
    let mut other: Vec<String> = Vec::new();
    for j in (0..m.cells.len()).filter(|&j| j != i) {
        for (l, s) in cell_plan_steps(m, j) {
            if l == label && s != step && s.ends_with(&format!(" {relation}")) {
                other.push(format!("{s} in {}", m.factors.short_labels[j]));
            }
        }
    }
    if other.is_empty() {
        String::new()
    } else {
        format!(" (but {})", other.join(", "))
    }
}

/// A statement whose plan changed shape between the start and the end of
/// a run's measured window (autovacuum, new statistics, a table that
/// grew): the run measured two different programs. Any change is a
/// finding.
pub(super) fn plan_changes(m: &ReportModel) -> Vec<Finding> {
    // (label, first differing start line, end line) -> runs
    let mut seen: Vec<((String, String, String), Vec<u32>)> = Vec::new();
    for run in &m.results.runs {
        for c in &run.server.plan_changes {
            let (a, b) = (plan_shape(&c.start), plan_shape(&c.end));
            let at = (0..).find(|&k| a.get(k) != b.get(k)).unwrap_or(0);
            let step = |v: &[String]| {
                v.get(at)
                    .cloned()
                    .unwrap_or_else(|| "(no such step)".into())
            };
            let key = (c.label.clone(), step(&a), step(&b));
            match seen.iter_mut().find(|(k, _)| *k == key) {
                Some((_, runs)) => runs.push(run.index),
                None => seen.push((key, vec![run.index])),
            }
        }
    }
    seen.into_iter()
        .map(|((label, start, end), runs)| {
            let runs: Vec<String> = runs.iter().map(u32::to_string).collect();
            Finding {
                rule: "plan-change",
                text: format!(
                    "`{label}` changed plan within run(s) {}: {start} when the window started, {end} when it ended.",
                    runs.join(", ")
                ),
                advice: Some(
                    "those runs mix two plans; see Plans (a longer warm-up, or ANALYZE before each run)".into(),
                ),
            }
        })
        .collect()
}
