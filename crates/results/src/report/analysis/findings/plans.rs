//! Findings about plans and SIRead locks: a statement planned differently
//! across cells or within a run, relation-level predicate locks that make
//! SSI conflict with every writer. What ran when is said in the words of
//! [`crate::report::analysis::plans`], as in the Plans section.

use crate::model::plan_shape;
use crate::report::analysis::findings::Finding;
use crate::report::analysis::model::ReportModel;
use crate::report::analysis::plans::{Moment, When, group_by, moments, story};

/// Cells (indexes into the model's cells) and when each ran a plan.
type CellsWhen = Vec<(usize, When)>;

/// A statement started its measured windows with plans of different
/// shapes (estimates aside), in different cells or in different runs of
/// one cell: the comparison mixes a plan effect with the factor's effect
/// (under SERIALIZABLE a sequential scan takes a relation-level SIRead
/// lock that every writer conflicts with). Each plan is named with the
/// cells that ran it and, when not throughout, when
/// ([`When::phrase`], the words of the Plans section).
pub(super) fn plans_differ(m: &ReportModel) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut labels: Vec<&str> = Vec::new();
    for p in &m.plans {
        if !labels.contains(&p.label) {
            labels.push(p.label);
        }
    }
    for label in labels {
        // Shapes, each with the cells that ran it and when.
        let mut shapes: Vec<(Vec<String>, CellsWhen)> = Vec::new();
        for g in m.plans.iter().filter(|p| p.label == label) {
            let shape = plan_shape(g.plan);
            match shapes.iter_mut().find(|(s, _)| *s == shape) {
                Some((_, c)) => c.extend(g.cells.iter().cloned()),
                None => shapes.push((shape, g.cells.clone())),
            }
        }
        // Plans that differ only within runs are the plan-change rule's.
        let started = shapes
            .iter()
            .filter(|(_, cells)| cells.iter().any(|(_, w)| !w.starts.is_empty()))
            .count();
        if started < 2 {
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
                let who: Vec<String> = cells
                    .iter()
                    .map(|(i, w)| {
                        let label = &m.factors.short_labels[*i];
                        match w.phrase() {
                            p if p.is_empty() => label.clone(),
                            p => format!("{label} {p}"),
                        }
                    })
                    .collect();
                let mut noted: Vec<usize> = Vec::new();
                let locks: Vec<String> = cells
                    .iter()
                    .filter_map(|(i, _)| {
                        if noted.contains(i) {
                            return None;
                        }
                        noted.push(*i);
                        siread_note(m, *i).map(|n| format!("{}: {n}", m.factors.short_labels[*i]))
                    })
                    .collect();
                let locks = if locks.is_empty() {
                    String::new()
                } else {
                    format!(" (SIRead locks in {})", locks.join("; "))
                };
                format!("{line} in {}{locks}", who.join("; "))
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

/// Relation-level SIRead locks of one cell explained by its plans: the
/// share of its SIRead locks that were relation-level (`None` when no
/// granularity was sampled), the relations locked whole, and each
/// statement that scanned one of them sequentially (at some point of a
/// run), with its relation and what it ran when.
pub(crate) struct CoarseSiread<'a> {
    pub share: Option<f64>,
    pub relations: Vec<&'a str>,
    /// (statement label, relation, `` `label` ran as ... ``).
    pub statements: Vec<(&'a str, &'a str, String)>,
}

/// [`CoarseSiread`] of cell `i`; `None` when no statement scanned a
/// relation it locked whole sequentially.
pub(crate) fn coarse<'a>(m: &'a ReportModel, i: usize) -> Option<CoarseSiread<'a>> {
    let c = &m.cells[i];
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
    let moments = moments(c);
    let mut labels: Vec<&str> = Vec::new();
    for mo in &moments {
        if !labels.contains(&mo.label) {
            labels.push(mo.label);
        }
    }
    let mut statements = Vec::new();
    for label in labels {
        for rel in &relations {
            let parts = steps_on(&moments, label, rel);
            if !parts.iter().any(|(s, _)| s.starts_with("Seq Scan on ")) {
                continue;
            }
            let elsewhere = other_cells_steps(m, i, label, rel, &parts);
            statements.push((
                label,
                *rel,
                format!("`{label}` ran as {}{elsewhere}", story(&parts)),
            ));
            break;
        }
    }
    if statements.is_empty() {
        return None;
    }
    let g = &m.siread[i];
    let total: f64 = g.values().map(|c| c.mean).sum();
    let rel = g.get("relation").map_or(0.0, |c| c.mean);
    Some(CoarseSiread {
        share: (total > 0.0).then(|| 100.0 * rel / total),
        relations,
        statements,
    })
}

/// Relation-level SIRead locks explained by plans: a cell holding SIRead
/// locks on whole relations (any sample) whose statements scan those
/// relations sequentially (a sequential scan under SERIALIZABLE locks the
/// relation, so every write to it is a read-write conflict). Names the
/// share of relation-level locks, the statements and plan steps (and
/// when, if not throughout: [`story`]), and how other cells ran the same
/// statements when they differ. Any relation-level lock with such a plan
/// is a finding.
pub(super) fn coarse_siread(m: &ReportModel) -> Vec<Finding> {
    let mut out = Vec::new();
    for i in 0..m.cells.len() {
        let Some(c) = coarse(m, i) else { continue };
        let share = match c.share {
            Some(s) => format!("{s:.0} % of its SIRead locks were"),
            None => "it held SIRead locks".into(),
        };
        let statements: Vec<&str> = c.statements.iter().map(|(_, _, t)| t.as_str()).collect();
        out.push(Finding {
            rule: "siread",
            text: format!(
                "{}: {share} relation-level, on {}: {}; a relation-level SIRead lock makes every write to the relation a read-write conflict.",
                m.factors.short_labels[i],
                c.relations.join(", "),
                statements.join("; ")
            ),
            advice: Some(
                "an index scan locks tuples or pages instead: compare at the table sizes and statistics the application has (scale, ANALYZE after warm-up), or measure what the plan costs with `[factors.settings] enable_seqscan = [\"on\", \"off\"]` in the study file (pgbench's tpcb-like at scale 10, 16 clients: 4.5x, BENCHMARKS.md); see Plans".into(),
            ),
        });
    }
    out
}

/// The scan step on `relation` (a plan line naming a scan of it,
/// estimates stripped) of statement `label` at each of `moments`, with
/// when it held; `no scan of relation` when a plan had none.
fn steps_on(moments: &[Moment], label: &str, relation: &str) -> Vec<(String, When)> {
    let suffix = format!(" {relation}");
    group_by(moments, label, |mo| {
        plan_shape(mo.plan)
            .into_iter()
            .find(|l| l.contains(" Scan ") && l.ends_with(&suffix))
    })
    .into_iter()
    .map(|(step, _, w)| (step.unwrap_or_else(|| format!("no scan of {relation}")), w))
    .collect()
}

/// How cells other than `i` ran `label` on `relation` when one of their
/// steps is none of `parts`': ` (but Index Scan using t_pkey on t in
/// rc)`, ` (but in rc: Seq Scan on t at the start of every run, Index
/// Scan using t_pkey on t at the end of run 1)`, or nothing.
fn other_cells_steps(
    m: &ReportModel,
    i: usize,
    label: &str,
    relation: &str,
    parts: &[(String, When)],
) -> String {
    let mut other: Vec<String> = Vec::new();
    for j in (0..m.cells.len()).filter(|&j| j != i) {
        let theirs = steps_on(&moments(&m.cells[j]), label, relation);
        if theirs
            .iter()
            .all(|(s, _)| parts.iter().any(|(p, _)| p == s))
        {
            continue;
        }
        let cell = &m.factors.short_labels[j];
        other.push(match theirs.as_slice() {
            [(step, w)] if w.always() => format!("{step} in {cell}"),
            _ => format!("in {cell}: {}", story(&theirs)),
        });
    }
    if other.is_empty() {
        String::new()
    } else {
        format!(" (but {})", other.join("; "))
    }
}

/// A statement whose plan changed shape between the start and the end of
/// a run's measured window (autovacuum, new statistics, a table that
/// grew): the run measured two different programs. Any change is a
/// finding, in the words of the Plans section ([`crate::report::analysis::plans::ChangeGroup::text`]).
pub(super) fn plan_changes(m: &ReportModel) -> Vec<Finding> {
    m.plan_change_groups()
        .into_iter()
        .map(|g| {
            Finding {
            rule: "plan-change",
            text: format!("{}.", g.text()),
            advice: Some(
                "those runs mix two plans; see Plans (a longer warm-up, or ANALYZE before each run)"
                    .into(),
            ),
        }
        })
        .collect()
}
