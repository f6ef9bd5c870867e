//! The connection pooler's finding: clients spent a meaningful share of
//! their latency queued in pgbouncer for a server connection.

use super::Finding;
use crate::report::analysis::model::ReportModel;
use crate::report::analysis::server::pooler_summary;

/// pgbouncer's pool is the bottleneck: the mean wait per transaction in
/// its queue (`SHOW STATS` `total_wait_time` / `total_xact_count`) is at
/// least this share of the clients' mean latency, %.
pub const POOLER_WAIT_PCT: f64 = 25.0;

/// One finding per cell whose clients waited in pgbouncer for
/// [`POOLER_WAIT_PCT`] % or more of their latency.
pub(super) fn pooler_wait(m: &ReportModel) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, c) in m.cells.iter().enumerate() {
        let Some(p) = pooler_summary(c) else {
            continue;
        };
        if p.wait_share_pct < POOLER_WAIT_PCT || p.latency_ms <= 0.0 {
            continue;
        }
        out.push(Finding {
            rule: "pooler",
            text: format!(
                "{}: clients waited {:.2} ms per transaction in pgbouncer's queue for a server connection, \
                 {:.0} % of their {:.2} ms mean latency (up to {} clients waiting, {:.1} of its server \
                 connections busy on average): pgbouncer's pool ({}) is the bottleneck.",
                m.factors.short_labels[i],
                p.wait_per_xact_ms,
                p.wait_share_pct,
                p.latency_ms,
                p.cl_waiting_max,
                p.sv_active_mean,
                p.setup,
            ),
            advice: Some(
                "a larger --pooler-size (within the server's max_connections and CPUs), or fewer clients".into(),
            ),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixture;
    use crate::model::{CountStatF, Isolation, PoolMode, Pooler, PoolerObservations};

    /// The fixture with every serializable run behind pgbouncer, its
    /// clients queued `wait_ms` per transaction.
    fn behind_pgbouncer(wait_ms: f64) -> crate::store::Results {
        let mut r = fixture::results();
        r.config.pooler = vec![Pooler::PgBouncer(PoolMode::Transaction)];
        for run in &mut r.runs {
            if run.cell.isolation != Isolation::Serializable {
                continue;
            }
            run.cell.pooler = Some(Pooler::PgBouncer(PoolMode::Transaction));
            run.latency_ms.mean = 10.0;
            run.server.pooler = Some(PoolerObservations {
                version: "1.18.0".into(),
                pool_mode: "transaction".into(),
                pool_size: 4,
                samples: 10,
                cl_waiting: CountStatF {
                    mean: 12.0,
                    max: 15,
                },
                sv_active: CountStatF { mean: 4.0, max: 4 },
                wait_per_xact_ms: wait_ms,
                ..Default::default()
            });
        }
        r
    }

    #[test]
    fn clients_queued_in_pgbouncer_for_a_large_share_of_their_latency_are_a_finding() {
        let r = behind_pgbouncer(6.0);
        let m = ReportModel::new(&r);
        let f = pooler_wait(&m);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].text
                .contains("waited 6.00 ms per transaction in pgbouncer's queue")
                && f[0].text.contains("60 % of their 10.00 ms mean latency")
                && f[0].text.contains("up to 15 clients waiting")
                && f[0].text.contains("(1.18.0 · transaction · 4)"),
            "{}",
            f[0].text
        );
        assert!(f[0].advice.as_deref().unwrap().contains("--pooler-size"));
        // The table shows the same figures.
        let t = crate::report::tables::pooler(&m);
        assert!(!t.is_empty());
        // A short wait is no finding, and a study without a pooler has
        // neither the finding nor the table.
        assert!(pooler_wait(&ReportModel::new(&behind_pgbouncer(1.0))).is_empty());
        let plain = fixture::results();
        let m = ReportModel::new(&plain);
        assert!(pooler_wait(&m).is_empty());
        assert!(crate::report::tables::pooler(&m).is_empty());
    }

    /// Issue #42: the pgbouncer table and the pooler factor reach every
    /// format: report.md and report.html have the section (with the same
    /// figures), and cells.csv and cells.json name the pooler of each cell.
    #[test]
    fn the_pgbouncer_table_and_the_pooler_factor_reach_every_format() {
        use crate::report::render;
        let mut r = behind_pgbouncer(6.0);
        r.config.pooler.push(Pooler::None);
        for run in &mut r.runs {
            if run.cell.pooler.is_none() {
                run.cell.pooler = Some(Pooler::None);
            }
        }
        let m = ReportModel::new(&r);
        let md = render::markdown::render_model(&m);
        let section = &md[md.find("## pgbouncer").expect("a pgbouncer section")..];
        assert!(section.contains("`SHOW POOLS`"), "{section}");
        assert!(section.contains("1.18.0 · transaction · 4"), "{section}");
        // One row: the cell behind pgbouncer, not the one without.
        let table = &section[..section.find("\n## ").unwrap_or(section.len())];
        assert_eq!(
            table.matches("1.18.0 · transaction · 4").count(),
            1,
            "{table}"
        );
        let html = render::html::render_model(&m);
        assert!(html.contains("<code>SHOW POOLS</code>"));
        assert!(html.contains("1.18.0 · transaction · 4"));
        let csv = render::csv::cells_of(&m);
        let header = csv.lines().next().unwrap();
        assert!(header.split(',').any(|h| h == "pooler"), "{header}");
        assert!(
            csv.contains("pgbouncer:transaction") && csv.contains(",none,"),
            "{csv}"
        );
        let json = render::json::cells_of(&m);
        assert!(
            json.contains("\"pooler\": \"pgbouncer:transaction\""),
            "{json}"
        );
    }
}
