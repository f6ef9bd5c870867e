//! `isobench compare A B` as Markdown, in the manner of benchstat: which
//! runs each side holds and their setup differences, then the tables of
//! [`crate::report::tables::compare`] as padded pipe tables (they read as
//! tables in a terminal too), then the cells only one side has. Cells are
//! matched as [`crate::report::analysis::compare`] says.

use std::fmt::Write as _;

use super::pipe::{self, Layout};
use super::terminal::{fit, wrap};
use crate::report::analysis::cells::{self, CellSummary};
use crate::report::analysis::compare::{pair, setup_differences, side};
use crate::report::analysis::gate::Row;
use crate::report::tables::{self, Table};
use crate::stats::{self, Summary, noise::Noise};
use crate::store::Results;

/// What the tables' figures are.
const NOTE: &str = "A and B: mean over complete runs ± half-width of its 95 % confidence interval \
     (Student t), n complete runs. delta: change from A to B in %, the ratio of the means; its 95 % CI \
     is that of the log ratio (delta method, Welch–Satterthwaite df). p: the two-sided t-test of that \
     log ratio, so p < 0.05 exactly when the CI excludes 0; verdict: faster or slower when p < 0.05, \
     else no significant difference (too few runs: fewer than 3 complete runs on a side). MDE: the \
     smallest change this comparison detects with 80 % power at α = 0.05 (noncentral t); \"cannot \
     tell\" lines name the runs per side a 5 % one needs. p99: each complete run's own p99 (from its \
     histogram), their mean per side, compared as TPS is. The regression gate tests these same \
     figures. geomean: geometric mean over the \
     cells both sides have; its delta is the geometric mean of the per-cell ratios. Cells are matched \
     on isolation, strategy, clients, pool size, rate and the factors either side varied, never on \
     the server build (pg_bin) or version.";

/// How the comparison's tables are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tables {
    /// Markdown pipe tables, whole however wide (a file, a pipe, a pull
    /// request's comment).
    Whole,
    /// A Markdown table wider than the width is fitted to it instead
    /// ([`fit::table`], for a terminal): its least needed columns leave
    /// first and are named under it.
    Fitted,
}

/// The columns that leave a fitted TPS table first, in order.
const TPS_DROP: [&str; 3] = ["p", "MDE", "95% CI of delta"];

/// The columns that leave a fitted p99 table first, in order.
const P99_DROP: [&str; 2] = ["p", "MDE"];

/// `t` as a padded pipe table; with [`Tables::Fitted`] and a `width` that
/// table is wider than, `t` fitted to `width` instead, the columns of
/// `drop` leaving first and a line under it naming those that left.
fn table(t: &Table, width: Option<usize>, tables: Tables, drop: &[&str]) -> String {
    let whole = pipe::table(t, Layout::Padded);
    let Some(w) = width.filter(|_| tables == Tables::Fitted) else {
        return whole;
    };
    if whole.lines().all(|l| l.chars().count() <= w) {
        return whole;
    }
    let order = fit::DropOrder {
        whole: drop.iter().filter_map(|h| t.column_index(h)).collect(),
        squeeze: Vec::new(),
    };
    let mut out = fit::table(t, w, &order).with_note(
        w,
        "redirect to a file for the whole Markdown tables, or give a wider --width",
    );
    out.push('\n');
    out
}

/// A cell's reported TPS.
fn reported<'a>(c: &'a CellSummary<'a>) -> Option<&'a Summary> {
    c.tps.as_ref()
}

/// Markdown report of B against A (`a_name`, `b_name`: how to call them,
/// e.g. the directories); prose wrapped at `width` columns when given
/// (Markdown reads wrapped paragraphs the same), tables as `tables` says
/// (a Markdown table row cannot be wrapped). Sections: which runs each side holds and the
/// setup differences; "TPS (tx/s, higher is better)"
/// ([`tables::compare::tps`]); "p99 latency (ms, lower is better)"
/// ([`tables::compare::p99`]); the cells that only one side has. When a
/// history check found lost commits on either side (the effective TPS is
/// below the reported, issue #30), "Effective TPS" leads, compared the
/// same way on [`CellSummary::headline_tps`], and "Reported TPS" follows
/// it. With a calibration (`noise`, `compare --noise`), each side's
/// spread is at least the calibrated CV in every comparison, as in the
/// regression gate.
pub fn render(
    a: &Results,
    b: &Results,
    a_name: &str,
    b_name: &str,
    width: Option<usize>,
    tables: Tables,
    noise: Option<&Noise>,
) -> String {
    let ca = cells::aggregate(a);
    let cb = cells::aggregate(b);
    let p = pair(a, b, &ca, &cb);
    let para = |text: &str, indent: &str| match width {
        Some(w) => wrap(text, w, indent),
        None => format!("{text}\n"),
    };
    let mut out = String::new();
    let _ = writeln!(out, "# isobench compare: {}\n", a.config.workload);
    let _ = writeln!(out, "B against A, cell by cell.\n");
    out.push_str(&para(&format!("- **A:** {}", side(a, a_name)), "  "));
    out.push_str(&para(&format!("- **B:** {}", side(b, b_name)), "  "));
    let diffs = setup_differences(a, b);
    let diffs = if diffs.is_empty() {
        "none".to_string()
    } else {
        diffs.join("; ")
    };
    out.push_str(&para(&format!("- **Setup differences:** {diffs}"), "  "));
    out.push('\n');
    if p.pairs.is_empty() {
        out.push_str("No cell in common.\n\n");
    } else {
        if p.effective_differs() {
            out.push_str(
                "## Effective TPS (tx/s whose work is in the database, higher is better)\n\n",
            );
            out.push_str(&para(
                "Some runs counted commits that left no work in the database (their history \
                 check found lost commits); the cells are compared on the work that remained. \
                 The reported TPS follows.",
                "",
            ));
            out.push('\n');
            out.push_str(&table(
                &tables::compare::tps(&p.pairs, CellSummary::headline_tps, noise),
                width,
                tables,
                &TPS_DROP,
            ));
            caveats(
                &mut out,
                &tables::compare::caveats(&p.pairs, CellSummary::headline_tps, noise),
                &para,
            );
            out.push_str("## Reported TPS (tx/s as the clients counted commits)\n\n");
        } else {
            out.push_str("## TPS (tx/s, higher is better)\n\n");
        }
        out.push_str(&table(
            &tables::compare::tps(&p.pairs, reported, noise),
            width,
            tables,
            &TPS_DROP,
        ));
        if !p.effective_differs() {
            caveats(
                &mut out,
                &tables::compare::caveats(&p.pairs, reported, noise),
                &para,
            );
        }
        out.push_str("## p99 latency (ms, mean of the runs' p99, lower is better)\n\n");
        out.push_str(&table(
            &tables::compare::p99(&p.pairs, noise),
            width,
            tables,
            &P99_DROP,
        ));
        out.push_str(&para(NOTE, ""));
        out.push('\n');
        if noise.is_some() {
            out.push_str(&para(
                "With --noise: in every comparison above and in the gate, each side's standard \
                 deviation is at least the calibrated CV (between runs) times its mean, for the \
                 cells the calibration has.",
                "",
            ));
            out.push('\n');
        }
    }
    for (label, name, only) in [("A", a_name, &p.only_a), ("B", b_name, &p.only_b)] {
        if !only.is_empty() {
            let _ = writeln!(out, "Only in {label} ({name}):\n");
            for k in only.iter() {
                out.push_str(&para(&format!("- {k}"), "  "));
            }
            out.push('\n');
        }
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

/// The "cannot tell" lines under a TPS table, as a list.
fn caveats(out: &mut String, lines: &[String], para: &dyn Fn(&str, &str) -> String) {
    for l in lines {
        out.push_str(&para(&format!("- {l}"), "  "));
    }
    if !lines.is_empty() {
        out.push('\n');
    }
}

/// `## Regression gate (threshold 5.0 %)`: the gate's table
/// ([`tables::gate::gate`], every row when `all`, else those that did not
/// pass) and the count of each status; laid out as [`render`]'s.
pub fn gate_section(
    rows: &[Row],
    threshold_pct: f64,
    all: bool,
    width: Option<usize>,
    tables: Tables,
) -> String {
    let mut out = format!(
        "## Regression gate (threshold {})\n\n",
        stats::fmt_mde(threshold_pct)
    );
    if rows.is_empty() {
        out.push_str("Compared nothing: no cell in common.\n");
        return out;
    }
    let t = tables::gate::gate(rows, all);
    if !t.is_empty() {
        out.push_str(&table(&t, width, tables, &["MDE"]));
    }
    let counts = tables::gate::gate_counts(rows);
    out.push_str(&match width {
        Some(w) => wrap(&counts, w, ""),
        None => format!("{counts}\n"),
    });
    out
}

/// `## Calibrated noise (DIR: 20 A/A pairs of 3 runs a side)`: for the
/// cells both sides have, what the calibration in `dir` measured
/// ([`tables::noise::compare_noise`]).
pub fn noise_section(n: &Noise, a: &Results, b: &Results, dir: &str) -> String {
    let ca = cells::aggregate(a);
    let cb = cells::aggregate(b);
    let p = pair(a, b, &ca, &cb);
    let mut out = format!(
        "## Calibrated noise ({dir}: {} A/A pairs of {} runs a side)\n\n",
        n.pairs, n.per_side
    );
    out.push_str(&pipe::table(
        &tables::noise::compare_noise(n, &p.pairs),
        Layout::Padded,
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Isolation;
    use crate::model::fixture;
    use crate::report::analysis::compare::check;
    use crate::report::format::fmt_pct_change;
    use crate::report::tables::compare::tps_text;
    use crate::stats::Summary;
    use crate::store::RunRecord;

    fn render(a: &Results, b: &Results, a_name: &str, b_name: &str) -> String {
        super::render(a, b, a_name, b_name, None, Tables::Whole, None)
    }

    /// A with 5 complete rc runs (98, 102, 100, 99, 101 tx/s) and the
    /// fixture's ser runs.
    fn a() -> Results {
        let mut r = fixture::results();
        for (i, tps) in [100.0, 99.0, 101.0].into_iter().enumerate() {
            let mut run = r.runs[0].clone();
            run.index = 6 + i as u32;
            run.repetition = 3 + i as u32;
            run.tps = tps;
            r.runs.push(run);
        }
        r
    }

    /// B: another server build, named `pg17` (`--pg-bin pg17=...`); rc
    /// 10 % faster with little spread
    /// (109.8 .. 110.2 tx/s) and a 20 % lower p99; ser the same as A;
    /// plus a cell A does not have (rr).
    fn b() -> Results {
        let mut r = a();
        r.config.target = "managed PostgreSQL from /usr/lib/postgresql/17/bin".into();
        r.environment.server_version = "17.2".into();
        let rc_tps = [110.2, 109.8, 110.0, 110.1, 109.9];
        let mut i = 0;
        for run in &mut r.runs {
            run.server_version = "17.2".into();
            if run.cell.isolation == Isolation::ReadCommitted {
                run.tps = rc_tps[i];
                i += 1;
                let p99 = run.latency_ms.p99 * 0.8;
                run.latency_ms.p99 = p99;
                run.latency_histogram = fixture::histogram(p99);
            }
        }
        r.config.target_options.pg_bin = Some("/usr/lib/postgresql/17/bin".into());
        r.config.target_options.pg_bin_label = Some("pg17".into());
        let mut rr: RunRecord = r.runs[0].clone();
        rr.cell.isolation = Isolation::RepeatableRead;
        r.runs.push(rr);
        r
    }

    /// For a terminal (or `--width`), a table wider than the width is
    /// fitted to it, the columns that left named under it; for a file the
    /// Markdown tables stay whole.
    #[test]
    fn fitted_tables_keep_to_the_width_and_name_what_left() {
        let at = |w: usize, tables| super::render(&a(), &b(), "A", "B", Some(w), tables, None);
        let whole = at(60, Tables::Whole);
        assert!(
            whole
                .lines()
                .any(|l| l.starts_with('|') && l.chars().count() > 60),
            "{whole}"
        );
        let fitted = at(60, Tables::Fitted);
        for l in fitted.lines() {
            assert!(l.chars().count() <= 60, "{l:?} in\n{fitted}");
        }
        assert!(fitted.contains("Not shown at 60 columns: p"), "{fitted}");
        // Wide enough, the Markdown tables are kept even for a terminal.
        assert_eq!(at(400, Tables::Fitted), at(400, Tables::Whole));
    }

    #[test]
    fn snapshot() {
        insta::assert_snapshot!(render(&a(), &b(), "results/pg16", "results/pg17"));
    }

    /// The trimmed cells of the row of `section` whose first cell is
    /// `first`.
    fn row(text: &str, section: &str, first: &str) -> Vec<String> {
        text.split(section)
            .nth(1)
            .unwrap()
            .lines()
            .map(|l| {
                l.trim_matches('|')
                    .split(" | ")
                    .map(|c| c.trim().to_string())
                    .collect::<Vec<_>>()
            })
            .find(|cells| cells[0] == first)
            .unwrap_or_else(|| panic!("{first} in {section}: {text}"))
    }

    /// Issue #30: A's ser function swallowed serialization failures (its
    /// effective TPS is 20.4 % of the 150 tx/s it reported), B's is fixed
    /// and commits the same 150 tx/s with its work in the database. On the
    /// reported TPS the two look equal; the first table compares the work
    /// that remained, and says B is ~4.9x A.
    #[test]
    fn compares_effective_tps_first_when_commits_were_lost() {
        let a = fixture::swallowed_history();
        let mut b = fixture::swallowed_history();
        for run in &mut b.runs {
            for inv in &mut run.invariants {
                inv.lost_commits = Some(0);
            }
            run.effective_tps = Some(run.tps);
        }
        let text = render(&a, &b, "A-dir", "B-dir");
        let (eff, rep) = ("## Effective TPS", "## Reported TPS");
        assert!(text.find(eff).unwrap() < text.find(rep).unwrap(), "{text}");
        assert!(!text.contains("## TPS"), "{text}");
        let ser = "isolation=ser strategy=optimistic clients=4";
        let kept = 5_550.0 / 27_150.0;
        let e = row(&text, eff, ser);
        assert_eq!(
            e[1],
            tps_text(Some(&Summary::of(&[148.0 * kept, 152.0 * kept]).unwrap()))
        );
        assert_eq!(e[3], fmt_pct_change(100.0 * (1.0 / kept - 1.0)));
        // Two complete runs a side: too few for a verdict (issue #37).
        assert_eq!(e[6], "too few runs");
        let r = row(&text, rep, ser);
        assert_eq!(
            r[3..7].join(" | "),
            "+0.0% | [-7.8%, +8.5%] | 1.000 | too few runs"
        );
        assert!(
            text.contains(&format!(
                "- {ser}: cannot tell: too few runs (2 on the smaller side"
            )),
            "{text}"
        );
        // With a third run a side, B is faster.
        let (a3, b3) = (
            fixture::third_runs(a.clone()),
            fixture::third_runs(b.clone()),
        );
        let text = render(&a3, &b3, "A-dir", "B-dir");
        assert_eq!(row(&text, eff, ser)[6], "faster");
        // Without lost commits on either side there is one TPS table.
        assert!(!render(&b, &b, "B", "B").contains(eff));
    }

    #[test]
    fn verdicts_and_matching() {
        let text = render(&a(), &b(), "A-dir", "B-dir");
        let (tps, p99) = ("## TPS", "## p99");
        let rc = row(&text, tps, "isolation=rc strategy=optimistic clients=4");
        // A: 98..102, mean 100, s = 1.581139; B: 109.8..110.2, mean 110,
        // s = 0.158114; se = sqrt(2.5/5 + 0.025/5) = 0.710634, t = 14.07.
        // The interval on the log scale (stats::pct_ci95): u_B = 0.025 /
        // (5 · 110²) = 4.132231e-7, u_A = 2.5 / (5 · 100²) = 5e-5,
        // ν = 4.066111, t(0.975, ν) = 2.758732, half-width 0.01958762
        // around ln 1.1: [+7.866 %, +12.176 %].
        // MDE: ν = 4.066111, se_L = sqrt(u_A + u_B) = 0.00710023, the
        // noncentrality for 80 % power at that ν 3.739683 (SciPy's nct):
        // 100 · (exp(3.739683 · 0.00710023) - 1) = 2.69 %.
        assert_eq!(
            rc[3..].join(" | "),
            "+10.0% | [+7.9%, +12.2%] | <0.001 | faster | ±2.7 %"
        );
        // ser: 148 and 152 on both sides: u = 8 / (2 · 150²) each, ν = 2,
        // t(0.975, 2) = 4.302653, half-width 0.08113160 around ln 1 = 0:
        // [-7.793 %, +8.451 %] (asymmetric: a ratio, not a difference).
        let ser = row(&text, tps, "isolation=ser strategy=optimistic clients=4");
        // Two complete runs a side: too few for a verdict.
        assert_eq!(
            ser[3..7].join(" | "),
            "+0.0% | [-7.8%, +8.5%] | 1.000 | too few runs"
        );
        // Geomean: A sqrt(100 · 150) = 122.47, B sqrt(110 · 150) = 128.45:
        // +4.88 % (= sqrt(1.1) - 1).
        let g = row(&text, tps, "geomean (2 cells)");
        assert_eq!(g[1..4].join(" | "), "122.5 | 128.5 | +4.9%");
        let l = row(&text, p99, "isolation=rc strategy=optimistic clients=4");
        assert_eq!(l[3..6].join(" | "), "-20.0% | <0.001 | faster");
        assert!(
            text.contains("Only in B (B-dir):\n\n- isolation=rr strategy=optimistic clients=4\n")
        );
        assert!(!text.contains("Only in A"));
        assert_eq!(check(&a(), &b()), Ok(()));
    }

    #[test]
    fn check_one_build_per_side() {
        let mut two = a();
        two.config.pg_bin = vec!["stock".into(), "patched".into()];
        two.config.pg_bin_dirs = [("stock", "/a/bin"), ("patched", "/b/bin")]
            .map(|(l, d)| (l.to_string(), d.to_string()))
            .into();
        let mut more: Vec<RunRecord> = two.runs.clone();
        for run in &mut two.runs {
            run.cell.pg_bin = Some("stock".into());
        }
        for run in &mut more {
            run.cell.pg_bin = Some("patched".into());
            run.server_version = "18.1".into();
        }
        two.runs.extend(more);
        let e = check(&two, &b()).unwrap_err();
        assert!(e.starts_with("A has several cells for isolation=rc"), "{e}");
        assert!(e.contains("(it varied pg_bin: stock, patched)"), "{e}");
        // Rendering anyway compares the first build.
        let text = render(&two, &b(), "a", "b");
        let rc = row(
            &text,
            "## TPS",
            "isolation=rc strategy=optimistic clients=4",
        );
        assert_eq!(rc[6], "faster");
        assert!(
            text.contains(
                "- **A:** a: PostgreSQL 16.4, 18.1; managed PostgreSQL from /usr/lib/postgresql/16/bin; \
                 builds stock: PostgreSQL 16.4, patched: PostgreSQL 18.1; "
            ),
            "{text}"
        );
    }

    #[test]
    fn fault_plans_are_matched_like_any_factor() {
        // A crossed its cells with the fault plans none and crash@2s; B
        // ran without faults: A's none cells match B's, its crash cells
        // have no partner.
        let mut x = fixture::results();
        x.config.fault_plans = vec!["none".into(), "crash@2s".into()];
        let mut crashed = x.runs.clone();
        for run in &mut x.runs {
            run.cell.fault_plan = Some("none".into());
        }
        for run in &mut crashed {
            run.cell.fault_plan = Some("crash@2s".into());
        }
        x.runs.extend(crashed);
        check(&x, &x).unwrap();
        let text = render(&x, &fixture::results(), "a", "b");
        let rc = row(
            &text,
            "## TPS",
            "isolation=rc strategy=optimistic clients=4 fault_plan=none",
        );
        assert_eq!(rc[6], "too few runs", "{text}");
        assert!(
            text.contains("isolation=rc strategy=optimistic clients=4 fault_plan=crash@2s"),
            "{text}"
        );
    }

    #[test]
    fn params_at_defaults_match_param_factors() {
        // A varied `variant`; B ran at its default: the cells still match.
        let mut x = fixture::results();
        x.config.params = vec![("variant".into(), vec!["tpcb-like".into()])];
        for run in &mut x.runs {
            run.cell.params.insert("variant".into(), "tpcb-like".into());
        }
        let text = render(&x, &fixture::results(), "a", "b");
        assert!(
            text.contains("| isolation=rc strategy=optimistic variant=tpcb-like clients=4 "),
            "{text}"
        );
        assert!(!text.contains("Only in"), "{text}");
    }

    #[test]
    fn setup_differences_listed() {
        let mut y = fixture::results();
        y.config.duration_s = 30.0;
        y.config
            .settings
            .insert("synchronous_commit".into(), "off".into());
        let text = render(&fixture::results(), &y, "a", "b");
        assert!(
            text.contains(
                "- **Setup differences:** measured: 60 s vs 30 s; --set synchronous_commit: unset vs off\n"
            ),
            "{text}"
        );
        // Issue #31: of two settings lists only the settings that differ.
        let mut z = fixture::results();
        z.environment
            .server_settings
            .insert("shared_buffers".into(), "1GB".into());
        let mut w = z.clone();
        w.environment
            .server_settings
            .insert("shared_buffers".into(), "2GB".into());
        w.environment
            .server_settings
            .insert("work_mem".into(), "64MB".into());
        let text = render(&z, &w, "a", "b");
        assert!(
            text.contains(
                "- **Setup differences:** server setting shared_buffers: 1GB vs 2GB; server setting work_mem: unset vs 64MB\n"
            ),
            "{text}"
        );
        let same = render(&fixture::results(), &fixture::results(), "a", "b");
        assert!(same.contains("- **Setup differences:** none\n"));
    }

    /// Issue #31: a script study's cells have no strategy; their labels
    /// leave it out instead of printing `strategy=`.
    #[test]
    fn an_empty_strategy_is_left_out_of_the_cell_labels() {
        let mut x = fixture::results();
        for run in &mut x.runs {
            run.cell.strategy.clear();
        }
        let text = render(&x, &x.clone(), "a", "b");
        assert!(!text.contains("strategy="), "{text}");
        assert!(text.contains("| isolation=rc clients=4 "), "{text}");
    }

    /// Issue #49, finding 3: `compare` printed two p99s for one cell, the
    /// table's from the merged histograms and the gate's the mean of the
    /// runs' own (38.30 -> 37.50 against 37.96 -> 38.44, opposite signs),
    /// and with `--noise` two MDEs (the noise table's at the calibrated CV,
    /// the gate's at each side's larger one). Every figure the gate prints
    /// is now the one the tables above it print.
    #[test]
    fn issue49_the_gate_prints_the_figures_of_the_tables() {
        use crate::report::analysis::gate::evaluate_with_noise;
        use crate::stats::noise::{MetricNoise, NoiseCell};
        let (a, b) = (a(), b());
        let m = |cv: f64| MetricNoise {
            mean: 100.0,
            cv_between_pct: cv,
            cv_within_pct: None,
            mde_pct: None,
            runs_for_target: None,
            false_positives: None,
        };
        let noise = Noise {
            pairs: 20,
            per_side: 3,
            target_mde_pct: 5.0,
            cells: vec![NoiseCell {
                cell: a.runs[0].cell.label(),
                runs: 120,
                tps: m(3.0),
                latency_p50_ms: m(4.0),
                latency_p99_ms: m(9.0),
                failure_pct: m(f64::NAN),
            }],
        };
        for n in [None, Some(&noise)] {
            let mut text = super::render(&a, &b, "a", "b", None, Tables::Whole, n);
            if let Some(n) = n {
                text.push_str(&noise_section(n, &a, &b, "cal"));
            }
            let rows = evaluate_with_noise(&a, &b, 5.0, n);
            text.push_str(&gate_section(&rows, 5.0, true, None, Tables::Whole));
            let gate = text.split("## Regression gate").nth(1).unwrap().to_string();
            for key in [
                "isolation=rc strategy=optimistic clients=4",
                "isolation=ser strategy=optimistic clients=4",
            ] {
                let g = |metric: &str| {
                    gate.lines()
                        .map(|l| {
                            l.trim_matches('|')
                                .split(" | ")
                                .map(|c| c.trim().to_string())
                                .collect::<Vec<_>>()
                        })
                        .find(|c| c[0] == key && c[1] == metric)
                        .unwrap_or_else(|| panic!("{key} {metric} in {gate}"))
                };
                let p99 = row(&text, "## p99 latency", key);
                let gp = g("p99_ms");
                // A, B, delta and MDE: the same text in both places.
                assert_eq!(
                    (&p99[1], &p99[2], &p99[3], &p99[6]),
                    (&gp[2], &gp[3], &gp[4], &gp[5]),
                    "{text}"
                );
                let tps = row(&text, "## TPS", key);
                let gt = g("tps");
                assert!(
                    tps[1].starts_with(&format!("{} ±", gt[2])),
                    "{tps:?} {gt:?}"
                );
                assert_eq!((&tps[3], &tps[7]), (&gt[4], &gt[5]), "{text}");
                if n.is_some() && key.contains("rc") {
                    let cal = row(&text, "## Calibrated noise", key);
                    assert_eq!(cal[4], gt[5], "{text}");
                }
            }
        }
    }
}
