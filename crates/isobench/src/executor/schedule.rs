//! Planning: the factors of a study -> its cells -> the ordered runs.
//! Pure functions of the configuration, so that a resumed study plans
//! exactly the same runs, and so that a bad factor is refused before any
//! server starts.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};

use super::{EXTERNAL, SCRIPTS};
use crate::engine::retry::Retrier;
use crate::model::{BadInput, Order, Pooler, RetryPolicy, StudyConfig};
use crate::store::{Cell, Rate, Results, RunRecord};
use crate::workload::{self, Setup, WorkloadSpec};

/// One planned run.
#[derive(Debug, Clone)]
pub struct ScheduledRun {
    pub cell: Cell,
    /// Index into [`cells`].
    pub cell_index: usize,
    pub repetition: u32,
}

/// The workload spec of `cfg`. Errors: unknown workload.
pub(super) fn workload_spec(cfg: &StudyConfig) -> Result<&'static WorkloadSpec> {
    workload::spec(&cfg.workload).ok_or_else(|| {
        anyhow!(BadInput(format!(
            "--workload: unknown workload '{}' (built-in: {}; see `isobench workloads`)",
            cfg.workload,
            workload::REGISTRY
                .iter()
                .map(|s| s.name)
                .collect::<Vec<_>>()
                .join(", ")
        )))
    })
}

/// The cells of `cfg` in factor order, slowest first: server build,
/// server settings, fault plan, workload or script (when a factor), scale,
/// clients, pool size, pooler and pgbouncer's pool size, rate, workload parameters
/// (the first given varies slowest), max_tries, strategy, isolation level
/// (fastest, so that every cell's baseline is a near neighbour). Server
/// factors vary slowest so that a repetition restarts the server as
/// seldom as possible.
///
/// Errors: unknown workload, strategy or parameter, a factor given twice,
/// `--scale` for a workload without one.
pub fn cells(cfg: &StudyConfig) -> Result<Vec<Cell>> {
    let works = works(cfg)?;
    combinations(&cfg.params, "--param")?;
    let settings = combinations(&cfg.setting_factors, "settings")?;
    let opt = |v: Vec<Option<String>>| if v.is_empty() { vec![None] } else { v };
    let pg_bins = opt(cfg.pg_build_labels().into_iter().map(Some).collect());
    let fault_plans = opt(cfg
        .fault_plans
        .iter()
        .map(|p| Some(p.to_string()))
        .collect());
    let some = |v: &[u32]| -> Vec<Option<u32>> {
        if v.is_empty() {
            vec![None]
        } else {
            v.iter().map(|&x| Some(x)).collect()
        }
    };
    let rates: Vec<Option<Rate>> = if cfg.rate.is_empty() {
        vec![None]
    } else {
        cfg.rate.iter().map(|&r| Some(Rate(r))).collect()
    };
    let levels = cfg.levels();
    let poolers = poolers(cfg);
    let mut out = Vec::new();
    for pg_bin in &pg_bins {
        for setting in &settings {
            for fault in &fault_plans {
                for (work_factor, workload, scales, strategies, params) in &works {
                    for &scale in scales {
                        for &clients in &cfg.clients {
                            for &pool_size in &some(&cfg.pool_size) {
                                for &(pooler, pooler_size) in &poolers {
                                    for &rate in &rates {
                                        for param in params {
                                            for &max_tries in &some(&cfg.max_tries) {
                                                for strategy in strategies {
                                                    for &isolation in &levels {
                                                        out.push(Cell {
                                                            workload: workload.clone(),
                                                            isolation,
                                                            strategy: strategy.clone(),
                                                            params: param.clone(),
                                                            clients,
                                                            scale,
                                                            pool_size,
                                                            rate,
                                                            max_tries,
                                                            settings: setting.clone(),
                                                            pg_bin: pg_bin.clone(),
                                                            fault_plan: fault.clone(),
                                                            work_factor: work_factor.clone(),
                                                            pooler,
                                                            pooler_size,
                                                        });
                                                    }
                                                }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(out)
}

/// The (pooler, pgbouncer pool size) pairs of `cfg`'s cells, in the order
/// given: every pool size for each pgbouncer mode, none for `none` (its
/// cells have no pgbouncer to size); one pair of nothing without
/// `--pooler`.
fn poolers(cfg: &StudyConfig) -> Vec<(Option<Pooler>, Option<u32>)> {
    let p = &cfg.pooler;
    if p.poolers.is_empty() {
        return vec![(None, None)];
    }
    let sizes: Vec<Option<u32>> = if p.sizes.is_empty() {
        vec![None]
    } else {
        p.sizes.iter().map(|&s| Some(s)).collect()
    };
    p.poolers
        .iter()
        .flat_map(|&pooler| match pooler.pgbouncer() {
            Some(_) => sizes.iter().map(|&s| (Some(pooler), s)).collect(),
            None => vec![(Some(pooler), None)],
        })
        .collect()
}

/// What the cells of one value of the workload or script factor run:
/// the factor's name (`None` when neither is a factor), the cells'
/// `workload` (a workload name or a script set's label), scales,
/// strategies and combinations of parameter values.
type Work = (
    Option<String>,
    String,
    Vec<Option<u32>>,
    Vec<String>,
    Vec<BTreeMap<String, String>>,
);

/// What the cells of `cfg` run, one [`Work`] per value of the workload or
/// script factor (one when neither is a factor). With the workload as a
/// factor, the scale and each parameter apply to the workloads that have
/// them (refused when none has). Errors: as [`driven_factors`].
fn works(cfg: &StudyConfig) -> Result<Vec<Work>> {
    if !cfg.scripts.sets.is_empty() && !cfg.load.active() {
        let (_, scales, strategies) = driven_factors(cfg)?;
        let params = combinations(&cfg.params, "--param")?;
        return Ok(cfg
            .scripts
            .sets
            .iter()
            .map(|s| {
                (
                    Some("script".to_string()),
                    s.label.clone(),
                    scales.clone(),
                    strategies.clone(),
                    params.clone(),
                )
            })
            .collect());
    }
    if cfg.workloads.len() > 1 && !cfg.load.active() && !cfg.scripts.active() {
        let specs = cfg
            .workloads
            .iter()
            .map(|w| {
                let one = StudyConfig {
                    workload: w.clone(),
                    ..cfg.clone()
                };
                workload_spec(&one)
            })
            .collect::<Result<Vec<_>>>()?;
        if !cfg.scale.is_empty() && specs.iter().all(|s| s.scale.is_none()) {
            // The first workload's own message.
            specs[0].resolve_scale(cfg.scale.first().copied())?;
        }
        for (name, _) in &cfg.params {
            if specs.iter().all(|s| s.check_param(name).is_err()) {
                specs[0].check_param(name)?;
            }
        }
        return specs
            .iter()
            .map(|spec| {
                let mut one = cfg.clone();
                one.workload = spec.name.to_string();
                if spec.scale.is_none() {
                    one.scale.clear();
                }
                one.params
                    .retain(|(name, _)| spec.check_param(name).is_ok());
                let (name, scales, strategies) = driven_factors(&one)?;
                let params = combinations(&one.params, "--param")?;
                Ok((
                    Some("workload".to_string()),
                    name,
                    scales,
                    strategies,
                    params,
                ))
            })
            .collect();
    }
    let (name, scales, strategies) = driven_factors(cfg)?;
    let params = combinations(&cfg.params, "--param")?;
    Ok(vec![(None, name, scales, strategies, params)])
}

/// The workload name, scales and strategies of `cfg`'s cells, by what
/// drives them. Errors: unknown workload, strategy or parameter,
/// `--scale` for a workload without one.
fn driven_factors(cfg: &StudyConfig) -> Result<(String, Vec<Option<u32>>, Vec<String>)> {
    // An external load: every factor is a placeholder value, unchecked
    // (the workload is `external`, with no strategy unless given).
    Ok(if cfg.scripts.active() {
        // pgbench scripts: `:scale` is pgbench's tables' scale.
        let spec = workload::spec("tpcb").expect("built in");
        (
            SCRIPTS.to_string(),
            if cfg.scale.is_empty() {
                vec![spec.resolve_scale(None)?]
            } else {
                cfg.scale
                    .iter()
                    .map(|&s| spec.resolve_scale(Some(s)))
                    .collect::<Result<_, _>>()?
            },
            vec![String::new()],
        )
    } else if cfg.load.active() {
        (
            EXTERNAL.to_string(),
            if cfg.scale.is_empty() {
                vec![None]
            } else {
                cfg.scale.iter().map(|&s| Some(s)).collect()
            },
            if cfg.strategies.is_empty() {
                vec![String::new()]
            } else {
                cfg.strategies.clone()
            },
        )
    } else {
        let spec = workload_spec(cfg)?;
        for s in &cfg.strategies {
            spec.check_strategy(s)?;
        }
        for (name, _) in &cfg.params {
            spec.check_param(name)?;
        }
        (
            cfg.workload.clone(),
            if cfg.scale.is_empty() {
                vec![spec.resolve_scale(None)?]
            } else {
                cfg.scale
                    .iter()
                    .map(|&s| spec.resolve_scale(Some(s)))
                    .collect::<Result<_, _>>()?
            },
            if cfg.strategies.is_empty() {
                vec![spec.default_strategy().to_string()]
            } else {
                cfg.strategies.clone()
            },
        )
    })
}

/// Every combination of `factors` (name, values), the first varying
/// slowest. Errors: a name given twice, naming `option`.
fn combinations(
    factors: &[(String, Vec<String>)],
    option: &str,
) -> Result<Vec<BTreeMap<String, String>>> {
    let mut combos: Vec<BTreeMap<String, String>> = vec![BTreeMap::new()];
    for (i, (name, values)) in factors.iter().enumerate() {
        if factors[..i].iter().any(|(n, _)| n == name) {
            bail!("{option} {name}: given twice; list its values once, e.g. {option} {name}=1,2");
        }
        combos = combos
            .into_iter()
            .flat_map(|c| {
                values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.insert(name.clone(), v.clone());
                    c
                })
            })
            .collect();
    }
    Ok(combos)
}

/// Every run of `cells`: repetition 1 of every cell, then repetition 2,
/// ... With [`Order::Random`] each repetition's cells are shuffled
/// (Fisher–Yates, seeded by `seed`, so a resumed study plans the same
/// order).
pub fn schedule(cells: &[Cell], repeat: u32, order: Order, seed: u64) -> Vec<ScheduledRun> {
    use rand::SeedableRng;
    use rand::seq::SliceRandom;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed ^ 0x006f_7264_6572);
    (1..=repeat)
        .flat_map(|repetition| {
            let mut idx: Vec<usize> = (0..cells.len()).collect();
            if order == Order::Random {
                idx.shuffle(&mut rng);
            }
            idx.into_iter()
                .map(|cell_index| ScheduledRun {
                    cell: cells[cell_index].clone(),
                    cell_index,
                    repetition,
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The workload setup of a cell. Errors: as [`Setup::new`].
pub fn setup(cell: &Cell) -> Result<Setup> {
    let spec = workload::spec(&cell.workload)
        .ok_or_else(|| anyhow!("unknown workload '{}'", cell.workload))?;
    Ok(Setup::new(
        spec,
        cell.scale,
        Some(&cell.strategy),
        &cell.params,
    )?)
}

/// The fault plan (`--fault`, or each of `--fault-plan`) fits the study:
/// every fault falls in the measured window, and the kinds that need the
/// server's processes (all but terminate) have the managed server.
///
/// Errors: both options given; the offending value and why.
pub(super) fn check_faults(cfg: &StudyConfig) -> Result<()> {
    if !cfg.faults.is_empty() && !cfg.fault_plans.is_empty() {
        bail!(
            "--fault and --fault-plan (study keys fault and fault_plan): give one; \
             to compare with and without a fault, list the plans: --fault-plan none,{}",
            crate::model::FaultSchedule(cfg.faults.clone())
        );
    }
    let external = cfg.target.dsn.is_some() || cfg.target.external_from_env;
    let planned = cfg.fault_plans.iter().flat_map(|p| &p.0);
    let option = if cfg.faults.is_empty() {
        "--fault-plan"
    } else {
        "--fault"
    };
    for f in cfg.faults.iter().chain(planned) {
        if f.at >= cfg.duration {
            bail!(
                "{option} {f}: after the end of the measured window (--duration {:?})",
                cfg.duration
            );
        }
        let ha = cfg.target.cluster.ha != crate::model::Ha::None;
        if f.kind.needs_ha() && !ha {
            bail!(
                "{option} {f}: a failover needs a failover manager that promotes the standby: \
                 give --ha pg_auto_failover"
            );
        }
        if ha && f.kind.managed_only() && !f.kind.needs_ha() {
            bail!(
                "{option} {f}: with --ha pg_auto_failover its keepers run the servers: \
                 the faults are failover and terminate"
            );
        }
        if external && f.kind.managed_only() {
            bail!(
                "{option} {f}: {} needs the managed server (it signals the server's processes); \
                 on an external server only terminate is possible",
                f.kind.name()
            );
        }
    }
    Ok(())
}

pub(super) fn validate(cfg: &StudyConfig) -> Result<Retrier> {
    if cfg.isolation.is_empty() {
        bail!("--isolation: give at least one level");
    }
    if cfg.clients.is_empty() || cfg.clients.contains(&0) {
        bail!("--clients: every client count must be at least 1");
    }
    if cfg.repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    if cfg.duration.is_zero() {
        bail!("--duration must be longer than 0s");
    }
    if cfg.sample_interval < Duration::from_millis(100) {
        bail!("--sample-interval must be at least 100ms");
    }
    if cfg.pool_size.contains(&0) {
        bail!("--pool-size: every pool size must be at least 1");
    }
    if let Some(r) = cfg.rate.iter().find(|r| !(r.is_finite() && **r > 0.0)) {
        bail!("--rate: {r} is not a rate; give transactions per second > 0, e.g. --rate 500");
    }
    if cfg.transactions.is_some() && cfg.load.active() {
        bail!(
            "--transactions ends isobench's own clients' runs by count; an external load (--load-cmd) runs for --duration"
        );
    }
    if cfg.latency_limit.is_some() && cfg.rate.is_empty() && cfg.pgbench.is_none() {
        bail!("--latency-limit needs --rate (it applies to open-loop runs, as in pgbench)");
    }
    check_faults(cfg)?;
    if cfg.max_tries.contains(&0) {
        bail!("max_tries: every value must be at least 1");
    }
    let l = &cfg.load;
    if !l.active() {
        for (given, option) in [
            (l.setup.is_some(), "setup_cmd"),
            (l.before_run.is_some(), "before_run"),
            (l.after_run.is_some(), "after_run"),
            (l.ready.is_some(), "ready"),
            (l.timeout_ms.is_some(), "load_timeout"),
        ] {
            if given {
                bail!(
                    "{option} (--{}) belongs to an external load: give load_cmd (--load-cmd) too",
                    option.replace('_', "-")
                );
            }
        }
    }
    let external = cfg.target.dsn.is_some() || cfg.target.external_from_env;
    if external
        && cfg
            .setting_factors
            .iter()
            .any(|(k, _)| !crate::model::is_run_setting(k))
    {
        bail!(
            "settings factors need the managed server (isobench restarts it with each cell's settings); \
             drop --dsn/--external or the settings factor"
        );
    }
    if external && !cfg.pg_bin.is_empty() {
        bail!("pg_bin factor: server builds need the managed server; drop --dsn/--external");
    }
    if !cfg.pg_bin.is_empty() && cfg.target.pg_bin.is_some() {
        bail!("--pg-bin and a pg_bin factor both given; list every build in the factor");
    }
    for t in cfg.max_tries.iter().copied().chain([cfg.retry.max_tries]) {
        Retrier::new(&RetryPolicy {
            max_tries: t,
            ..cfg.retry.clone()
        })
        .map_err(|e| anyhow!(e))?;
    }
    Retrier::new(&cfg.retry).map_err(|e| anyhow!(e))
}

/// The retry policy of `cell`: the study's, with the cell's
/// `max_tries` when that is a factor.
pub(super) fn retrier_for(cfg: &StudyConfig, cell: &Cell) -> Result<Retrier> {
    Retrier::new(&RetryPolicy {
        max_tries: cell.max_tries.unwrap_or(cfg.retry.max_tries),
        ..cfg.retry.clone()
    })
    .map_err(|e| anyhow!(e))
}

/// The baseline when none is given and a study compares neither
/// isolation levels nor strategies (where the default rule, "first level
/// and strategy, other factors equal", would make every cell its own
/// baseline): the first value of the first factor that varies (the
/// script or workload first), e.g. `workload=tpcb`, `pool_size=2` or
/// `pg_bin=stock`. With the workload or script as a factor, one
/// baseline for the whole study: its first value at the first isolation
/// level and strategy (`script=builtin:tpcb-like,isolation=rc`), other
/// factors equal.
pub(super) fn default_baseline(cfg: &StudyConfig) -> Option<String> {
    let work = if cfg.scripts.sets.len() > 1 {
        Some(format!("script={}", cfg.scripts.sets[0].label))
    } else if cfg.workloads.len() > 1 && !cfg.scripts.active() {
        Some(format!("workload={}", cfg.workloads[0]))
    } else {
        None
    };
    if let Some(work) = work {
        let mut rule = vec![work];
        if cfg.isolation.len() > 1 {
            rule.push(format!("isolation={}", cfg.isolation[0].short()));
        }
        if cfg.strategies.len() > 1 {
            rule.push(format!("strategy={}", cfg.strategies[0]));
        }
        return Some(rule.join(","));
    }
    if cfg.isolation.len() > 1 || cfg.strategies.len() > 1 {
        return None;
    }
    let first = |name: &str, values: Vec<String>| {
        (values.len() > 1).then(|| format!("{name}={}", values[0]))
    };
    let strs = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>();
    cfg.params
        .iter()
        .find_map(|(k, v)| first(k, v.clone()))
        .or_else(|| first("clients", strs(&cfg.clients)))
        .or_else(|| first("scale", strs(&cfg.scale)))
        .or_else(|| first("pool_size", strs(&cfg.pool_size)))
        .or_else(|| {
            first(
                "pooler",
                cfg.pooler.poolers.iter().map(Pooler::to_string).collect(),
            )
        })
        .or_else(|| first("pooler_size", strs(&cfg.pooler.sizes)))
        .or_else(|| {
            first(
                "rate",
                cfg.rate.iter().map(|r| Rate(*r).to_string()).collect(),
            )
        })
        .or_else(|| first("max_tries", strs(&cfg.max_tries)))
        .or_else(|| {
            cfg.setting_factors
                .iter()
                .find_map(|(k, v)| first(k, v.clone()))
        })
        .or_else(|| first("pg_bin", cfg.pg_build_labels()))
}

/// Refuses to resume into results whose runs do not belong to `planned`
/// (another study, or a changed file).
pub(super) fn check_resumable(prior: &Results, planned: &[ScheduledRun]) -> Result<()> {
    for r in &prior.runs {
        if !planned
            .iter()
            .any(|p| p.cell == r.cell && p.repetition == r.repetition)
        {
            bail!(
                "--resume: run {} ({}, repetition {}) is not in this study's plan; \
                 resume with the same study (its configuration is read from results.json)",
                r.index,
                r.cell.label(),
                r.repetition
            );
        }
    }
    Ok(())
}

/// The runs of `planned` not in `done` (by cell and repetition), with
/// their run numbers (1-based, in plan order).
pub(super) fn remaining<'a>(
    planned: &'a [ScheduledRun],
    done: &[RunRecord],
) -> Vec<(u32, &'a ScheduledRun)> {
    let done: Vec<(Cell, u32)> = done
        .iter()
        .map(|r| (r.cell.clone(), r.repetition))
        .collect();
    planned
        .iter()
        .enumerate()
        .map(|(i, r)| (i as u32 + 1, r))
        .filter(|(_, r)| !done.contains(&(r.cell.clone(), r.repetition)))
        .collect()
}

/// The distinct values of `it`, in first-seen order.
pub(super) fn distinct<T: PartialEq>(it: impl Iterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for x in it {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Isolation, RetryPolicy, TargetConfig};
    use crate::workload::Workload;

    fn cfg() -> StudyConfig {
        StudyConfig {
            workload: "tpcb".into(),
            workloads: Vec::new(),
            load: Default::default(),
            scripts: Default::default(),
            scale: vec![1],
            isolation: vec![Isolation::ReadCommitted, Isolation::Serializable],
            strategies: Vec::new(),
            params: Vec::new(),
            clients: vec![1, 8],
            pool_size: Vec::new(),
            rate: Vec::new(),
            latency_limit: None,
            faults: Vec::new(),
            fault_plans: Vec::new(),
            exclude_faulted: false,
            pooler: Default::default(),
            max_tries: Vec::new(),
            setting_factors: Vec::new(),
            pg_bin: Vec::new(),
            order: Order::Interleaved,
            baseline: None,
            file: None,
            resume: None,
            repeat: 2,
            duration: Duration::from_secs(1),
            transactions: None,
            pgbench: None,
            warmup: Duration::ZERO,
            server_wait: Duration::from_secs(60),
            retry: RetryPolicy::default(),
            threads: None,
            sample_interval: Duration::from_secs(5),
            observe: crate::model::ObserveLevel::Full,
            seed: 1,
            target: TargetConfig::default(),
            out: None,
            quiet: true,
            fail_on_violation: false,
            log_violations: false,
            metrics_listen: None,
            shard: None,
            shard_wait: Duration::from_secs(60),
            precision: None,
            hunt: None,
            cpus: None,
            calibrate: None,
            checks: Vec::new(),
        }
    }

    #[test]
    fn plan_is_interleaved_by_repetition() {
        let c = cfg();
        let p = schedule(&cells(&c).unwrap(), c.repeat, Order::Interleaved, 1);
        assert_eq!(p.len(), 8);
        let reps: Vec<u32> = p.iter().map(|r| r.repetition).collect();
        assert_eq!(reps, vec![1, 1, 1, 1, 2, 2, 2, 2]);
        let first: Vec<(Isolation, u32)> = p[..4]
            .iter()
            .map(|r| (r.cell.isolation, r.cell.clients))
            .collect();
        assert_eq!(
            first,
            vec![
                (Isolation::ReadCommitted, 1),
                (Isolation::Serializable, 1),
                (Isolation::ReadCommitted, 8),
                (Isolation::Serializable, 8)
            ]
        );
        assert_eq!(
            p[..4].iter().map(|r| &r.cell).collect::<Vec<_>>(),
            p[4..].iter().map(|r| &r.cell).collect::<Vec<_>>()
        );
        assert_eq!(p[5].cell_index, 1);
    }

    #[test]
    fn params_and_strategies_are_factors() {
        let mut c = cfg();
        c.workload = "sibench".into();
        c.scale = Vec::new();
        c.clients = vec![4];
        c.strategies = vec!["optimistic".into(), "locking".into()];
        c.params = vec![(
            "rows".into(),
            vec!["10".into(), "100".into(), "1000".into()],
        )];
        let cells = cells(&c).unwrap();
        assert_eq!(cells.len(), 3 * 2 * 2);
        assert_eq!(
            cells[0].label(),
            "isolation=rc strategy=optimistic rows=10 clients=4"
        );
        assert_eq!(
            cells[3].label(),
            "isolation=ser strategy=locking rows=10 clients=4"
        );
        assert_eq!(cells[11].params["rows"], "1000");
        // Every cell builds; a bad value names the option.
        for cell in &cells {
            setup(cell).unwrap();
        }
        c.params = vec![("rows".into(), vec!["0".into()])];
        let cell = &super::cells(&c).unwrap()[0];
        let e = <workload::sibench::Sibench as Workload>::new(&setup(cell).unwrap())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("--param rows=0"), "{e}");
    }

    #[test]
    fn bad_factors_name_the_option() {
        let mut c = cfg();
        c.strategies = vec!["locking".into()];
        let e = cells(&c).unwrap_err().to_string();
        assert!(
            e.contains("--strategy locking") && e.contains("optimistic"),
            "{e}"
        );
        let mut c = cfg();
        c.params = vec![
            ("variant".into(), vec!["a".into()]),
            ("variant".into(), vec!["b".into()]),
        ];
        assert!(cells(&c).unwrap_err().to_string().contains("given twice"));
        let mut c = cfg();
        c.workload = "write-skew".into();
        assert!(cells(&c).unwrap_err().to_string().contains("--scale"));
    }

    #[test]
    fn default_baseline_is_the_first_varying_factor_without_levels_to_compare() {
        let mut c = cfg();
        // Two levels: the usual rule applies.
        assert_eq!(default_baseline(&c), None);
        c.isolation = vec![Isolation::Serializable];
        assert_eq!(default_baseline(&c).as_deref(), Some("clients=1"));
        c.clients = vec![8];
        c.pool_size = vec![8, 2];
        assert_eq!(default_baseline(&c).as_deref(), Some("pool_size=8"));
        c.pool_size = vec![2];
        assert_eq!(default_baseline(&c), None);
    }

    #[test]
    fn validation_names_the_option() {
        let mut c = cfg();
        c.clients = vec![0];
        assert!(validate(&c).unwrap_err().to_string().contains("--clients"));
        let mut c = cfg();
        c.duration = Duration::ZERO;
        assert!(validate(&c).unwrap_err().to_string().contains("--duration"));
        let mut c = cfg();
        c.load.before_run = Some("./app &".into());
        let e = validate(&c).unwrap_err().to_string();
        assert!(
            e.starts_with("before_run (--before-run) belongs to an external load"),
            "{e}"
        );
        let mut c = cfg();
        c.retry.max_tries = 0;
        assert!(
            validate(&c)
                .unwrap_err()
                .to_string()
                .contains("--max-tries")
        );
    }

    /// The workload as a factor: every workload's cells, each at its own
    /// scale (the scale applies to those that have one), varying slower
    /// than clients and isolation, interleaved by repetition, named by
    /// the workload, with one default baseline.
    #[test]
    fn the_workload_is_a_factor() {
        let mut c = cfg();
        c.workloads = vec!["tpcb".into(), "ssibench".into()];
        c.clients = vec![4];
        let cells = cells(&c).unwrap();
        let got: Vec<(String, Option<u32>, Isolation)> = cells
            .iter()
            .map(|c| (c.workload.clone(), c.scale, c.isolation))
            .collect();
        use Isolation::*;
        assert_eq!(
            got,
            vec![
                ("tpcb".into(), Some(1), ReadCommitted),
                ("tpcb".into(), Some(1), Serializable),
                ("ssibench".into(), None, ReadCommitted),
                ("ssibench".into(), None, Serializable),
            ]
        );
        assert!(
            cells
                .iter()
                .all(|c| c.work_factor.as_deref() == Some("workload"))
        );
        assert_eq!(
            cells[2].label(),
            "workload=ssibench isolation=rc strategy=optimistic clients=4"
        );
        for cell in &cells {
            setup(cell).unwrap();
        }
        let p = schedule(&cells, 2, Order::Interleaved, 1);
        let order: Vec<(u32, usize)> = p.iter().map(|r| (r.repetition, r.cell_index)).collect();
        assert_eq!(
            order,
            vec![
                (1, 0),
                (1, 1),
                (1, 2),
                (1, 3),
                (2, 0),
                (2, 1),
                (2, 2),
                (2, 3)
            ]
        );
        // One baseline for the study: the first workload at the first level.
        assert_eq!(
            default_baseline(&c).as_deref(),
            Some("workload=tpcb,isolation=rc")
        );
        c.isolation = vec![Serializable];
        assert_eq!(default_baseline(&c).as_deref(), Some("workload=tpcb"));
        // A parameter applies to the workloads that have it.
        c.params = vec![("table-size".into(), vec!["100".into(), "1000".into()])];
        let with_param = super::cells(&c).unwrap();
        let sizes: Vec<(&str, Option<&String>)> = with_param
            .iter()
            .map(|c| (c.workload.as_str(), c.params.get("table-size")))
            .collect();
        let (hundred, thousand) = ("100".to_string(), "1000".to_string());
        assert_eq!(
            sizes,
            [
                ("tpcb", None),
                ("ssibench", Some(&hundred)),
                ("ssibench", Some(&thousand))
            ]
        );
        c.params = vec![("rows".into(), vec!["1".into()])];
        let e = super::cells(&c).unwrap_err().to_string();
        assert!(e.contains("rows"), "{e}");
        c.params.clear();
        // Server factors still vary slowest: a settings factor outside.
        c.setting_factors = vec![("work_mem".into(), vec!["4MB".into(), "8MB".into()])];
        let cells = super::cells(&c).unwrap();
        let w: Vec<&str> = cells.iter().map(|c| c.workload.as_str()).collect();
        assert_eq!(w, ["tpcb", "ssibench", "tpcb", "ssibench"]);
        // A strategy one of the workloads lacks names the option.
        c.strategies = vec!["locking".into()];
        let e = super::cells(&c).unwrap_err().to_string();
        assert!(e.contains("--strategy locking"), "{e}");
        // Without a factor the cells are as before: no workload in labels.
        let c = cfg();
        assert!(
            super::cells(&c)
                .unwrap()
                .iter()
                .all(|c| c.work_factor.is_none())
        );
        assert!(!super::cells(&c).unwrap()[0].label().contains("workload"));
    }

    /// The script as a factor: one cell per set and level, the set's label
    /// as the cell's value, pgbench's scale.
    #[test]
    fn the_script_is_a_factor() {
        let mut c = cfg();
        c.clients = vec![2];
        c.scripts.sets = vec![
            crate::model::ScriptSet {
                builtins: vec![("tpcb-like".into(), 1)],
                label: "builtin:tpcb-like".into(),
                ..Default::default()
            },
            crate::model::ScriptSet {
                files: vec![("f.sql".into(), 2), ("g.sql".into(), 1)],
                label: "f.sql@2+g.sql".into(),
                ..Default::default()
            },
        ];
        let cells = cells(&c).unwrap();
        assert_eq!(cells.len(), 4);
        assert_eq!(cells[0].workload, "builtin:tpcb-like");
        assert_eq!(
            cells[3].label(),
            "script=f.sql@2+g.sql isolation=ser clients=2"
        );
        assert!(cells.iter().all(|c| c.scale == Some(1)));
        assert_eq!(
            default_baseline(&c).as_deref(),
            Some("script=builtin:tpcb-like,isolation=rc")
        );
    }

    #[test]
    fn random_order_shuffles_each_repetition_by_the_seed() {
        let mut c = cfg();
        c.clients = vec![1, 2, 4, 8, 16];
        let cells = cells(&c).unwrap();
        let p = schedule(&cells, 3, Order::Random, 7);
        assert_eq!(p.len(), 3 * cells.len());
        // Every repetition runs every cell once, repetitions in order.
        for (k, rep) in p.chunks(cells.len()).enumerate() {
            let mut idx: Vec<usize> = rep.iter().map(|r| r.cell_index).collect();
            assert!(rep.iter().all(|r| r.repetition == k as u32 + 1));
            assert!(rep.iter().all(|r| r.cell == cells[r.cell_index]));
            idx.sort();
            assert_eq!(idx, (0..cells.len()).collect::<Vec<_>>());
        }
        // The same seed plans the same order (a resumed study); with 10
        // cells, another seed or the interleaved order differs.
        let order = |p: &[ScheduledRun]| p.iter().map(|r| r.cell_index).collect::<Vec<_>>();
        assert_eq!(order(&p), order(&schedule(&cells, 3, Order::Random, 7)));
        assert_ne!(order(&p), order(&schedule(&cells, 3, Order::Random, 8)));
        assert_ne!(
            order(&p),
            order(&schedule(&cells, 3, Order::Interleaved, 7))
        );
    }

    #[test]
    fn a_resumed_study_runs_what_is_left_under_its_planned_numbers() {
        let c = cfg();
        let planned = schedule(&cells(&c).unwrap(), c.repeat, Order::Interleaved, 1);
        let mut done = crate::model::fixture::results().runs[0].clone();
        done.cell = planned[1].cell.clone();
        done.repetition = planned[1].repetition;
        let prior = Results {
            runs: vec![done.clone()],
            ..crate::model::fixture::results()
        };
        check_resumable(&prior, &planned).unwrap();
        let left = remaining(&planned, &prior.runs);
        assert_eq!(left.len(), planned.len() - 1);
        assert_eq!(
            left.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
            vec![1, 3, 4, 5, 6, 7, 8]
        );
        // A run of another study is refused.
        done.cell.clients = 3;
        let prior = Results {
            runs: vec![done],
            ..prior
        };
        let e = check_resumable(&prior, &planned).unwrap_err().to_string();
        assert!(e.starts_with("--resume: run"), "{e}");
    }
}
