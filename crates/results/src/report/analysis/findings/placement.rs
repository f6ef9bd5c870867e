//! CPU placement: the managed server and isobench's client threads may
//! run on the same CPUs (no `--cpus`, or a side left unpinned) while the
//! client threads were saturated or the hypervisor stole CPU time. Then
//! the client and the server take CPU from each other, and run-to-run
//! noise grows; pinning them apart (`--cpus server=0,clients=1`) is the
//! remedy to try (BENCHMARKS.md measures what it does here).

use super::{Finding, STEAL_PCT};
use crate::model::CpuPlacement;
use crate::report::analysis::model::ReportModel;

/// The client threads' CPU time over the measured window, as a share of
/// the cores they had, at or above which they count as saturated.
pub const SATURATED: f64 = 0.90;

/// One finding per cell whose clients and server shared CPUs and whose
/// client threads were saturated or whose runs saw steal time above
/// [`STEAL_PCT`] %.
pub fn shared_cpus(m: &ReportModel) -> Vec<Finding> {
    let cfg = &m.results.config;
    if !CpuPlacement::shared(cfg.cpus.as_ref()) {
        return Vec::new();
    }
    let pinned = cfg
        .cpus
        .as_ref()
        .and_then(|c| c.clients.as_ref())
        .map(Vec::len);
    let mut out = Vec::new();
    for (i, c) in m.cells.iter().enumerate() {
        let runs: Vec<&crate::store::RunRecord> =
            c.complete_runs().filter(|r| r.load.is_none()).collect();
        let (cpu, secs) = runs.iter().fold((0.0, 0.0), |(a, b), r| {
            (a + r.client_cpu_s, b + r.duration_s)
        });
        // The cores the client threads had: their number (one per CPU at
        // most, as the engine starts them), or the pinned CPUs.
        let cpus = m.results.environment.cpus.max(1);
        let threads = cfg
            .threads
            .unwrap_or_else(|| (c.cell.clients as usize).clamp(1, pinned.unwrap_or(cpus)));
        let cores = pinned.map_or(threads.min(cpus), |p| p.min(threads)).max(1);
        let busy = if secs > 0.0 {
            cpu / secs / cores as f64
        } else {
            0.0
        };
        let steal = runs
            .iter()
            .filter_map(|r| r.host_cpu.map(|h| h.steal_pct))
            .fold(0.0f64, f64::max);
        let mut why = Vec::new();
        if busy >= SATURATED {
            why.push(format!(
                "the client threads used {:.0} % of their {cores} core(s)",
                100.0 * busy
            ));
        }
        if steal > STEAL_PCT {
            why.push(format!("the host showed up to {steal:.0} % steal time"));
        }
        if why.is_empty() {
            continue;
        }
        let placement = cfg
            .cpus
            .as_ref()
            .map_or("no --cpus placement".to_string(), |p| {
                format!("--cpus {}", p.label())
            });
        out.push(Finding {
            rule: "cpu-placement",
            text: format!(
                "{}: clients and server share CPUs ({placement}) and {}: each takes CPU from the other, which adds run-to-run noise.",
                m.factors.short_labels[i],
                why.join(" and ")
            ),
            advice: Some(
                "pin them apart, e.g. --cpus server=0,clients=1, or run the clients on another machine (--dsn); \
                 isobench calibrate measures the noise either way"
                    .into(),
            ),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixture;

    #[test]
    fn saturated_clients_on_shared_cpus_are_a_finding_and_pinning_silences_it() {
        let mut r = fixture::results();
        // 4 clients on an 8-CPU host: 4 threads; 4 cores' worth of CPU
        // over each 60 s window is saturation.
        for run in &mut r.runs {
            run.client_cpu_s = 4.0 * 0.95 * run.duration_s;
        }
        let f = shared_cpus(&ReportModel::new(&r));
        assert_eq!(f.len(), 2, "{f:?}");
        assert!(
            f[0].text.contains(
                "(no --cpus placement) and the client threads used 95 % of their 4 core(s)"
            ),
            "{}",
            f[0].text
        );
        // Pinned apart: no finding.
        r.config.cpus = Some(CpuPlacement {
            server: Some(vec![0]),
            clients: Some(vec![1]),
        });
        assert!(shared_cpus(&ReportModel::new(&r)).is_empty());
        // Only the clients pinned (to one CPU), the server anywhere:
        // shared, and one core at 3.8 cores' worth is saturated.
        r.config.cpus = Some(CpuPlacement {
            server: None,
            clients: Some(vec![1]),
        });
        assert_eq!(shared_cpus(&ReportModel::new(&r)).len(), 2);
        // Idle clients and no steal: nothing to say.
        for run in &mut r.runs {
            run.client_cpu_s = 1.0;
        }
        assert!(shared_cpus(&ReportModel::new(&r)).is_empty());
    }
}
