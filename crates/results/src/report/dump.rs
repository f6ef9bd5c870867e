//! Every renderer's output for the fixture's variants, on demand: a
//! before/after view of what a change to the renderers changed.

use crate::model::fixture::*;
use crate::model::{Rate, WaitSummary};

/// Every renderer's output for a few variants of the fixture, written to
/// `$ISOBENCH_DUMP_OUT` (one file per variant and format): compare two
/// directories to see what a change to the renderers changed.
#[test]
#[ignore = "writes renderer outputs for a before/after comparison"]
fn dump_outputs() {
    let dir = std::path::PathBuf::from(
        std::env::var("ISOBENCH_DUMP_OUT").unwrap_or_else(|_| "/tmp/isobench-dump".into()),
    );
    std::fs::create_dir_all(&dir).unwrap();
    let empty = {
        let mut r = results();
        r.runs.clear();
        r.load.clear();
        r
    };
    let waits = {
        let mut r = results();
        r.config.pool_size = vec![2];
        r.config.rate = vec![120.0];
        r.config.latency_limit_ms = Some(50.0);
        for run in &mut r.runs {
            run.cell.pool_size = Some(2);
            run.cell.rate = Some(Rate(120.0));
            let w = |mean: f64, p99: f64| WaitSummary {
                count: 100,
                mean,
                p50: mean / 2.0,
                p99,
                max: p99 * 2.0,
            };
            run.pool_wait_ms = Some(w(1.5, 7.25));
            run.schedule_lag_ms = Some(w(0.25, 3.5));
            run.skipped = 2;
            run.late = 1;
        }
        r
    };
    let outliers = with_outliers();
    let builds = with_builds();
    let evil = evil();
    let variants = [
        ("fixture", results()),
        ("clients", with_clients(results())),
        ("rich", rich()),
        ("big", big()),
        ("empty", empty),
        ("waits", waits),
        ("outliers", outliers),
        ("builds", builds),
        ("evil", evil),
        ("swallowed", swallowed_history()),
        ("default", default_study()),
        ("seed002", seed_002()),
    ];
    for (name, r) in variants {
        let put = |ext: &str, text: String| {
            std::fs::write(dir.join(format!("{name}.{ext}")), text).unwrap()
        };
        put("md", crate::report::render::markdown::render(&r));
        put("html", crate::report::render::html::render(&r));
        put(
            "txt",
            crate::report::render::terminal::summary(
                &r,
                crate::report::render::terminal::DEFAULT_WIDTH,
            ),
        );
        put("runs.csv", crate::report::render::csv::runs(&r));
        put("cells.csv", crate::report::render::csv::cells(&r));
        put("json", crate::report::render::json::cells(&r));
    }
}
