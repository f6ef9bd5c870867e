//! A small hand-built [`Results`] for renderer tests: TPC-B, isolation
//! rc and ser, 4 clients, 2 complete repetitions per cell, one violated
//! invariant (run 3), and an interrupted fifth run (the study was
//! stopped during repetition 3). Each run has one transaction type; the
//! serializable runs' failures have reasons.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::SecondPoint;
use crate::stat_interval;
use crate::{
    Cell, Environment, FailureReasonRecord, Results, RunRecord, SCHEMA_VERSION, StoredConfig,
    TxTypeRecord, WaitSummary,
};
use crate::{CountStat, HostCpu, Plan, ServerObservations, SireadLocks, WaitEvents};
use crate::{InvariantResult, LoadReport};
use crate::{Isolation, RetryPolicy};
use crate::{LatencySummary, Lifetime};

fn cell(isolation: Isolation) -> Cell {
    Cell {
        workload: "tpcb".into(),
        isolation,
        strategy: "optimistic".into(),
        params: BTreeMap::new(),
        clients: 4,
        scale: Some(1),
        pool_size: None,
        rate: None,
        max_tries: None,
        settings: BTreeMap::new(),
        pg_bin: None,
        fault_plan: None,
        work_factor: None,
        pooler: None,
        pooler_size: None,
    }
}

/// A histogram whose p99 is about `p99_ms` (100 values, 1 ms apart near
/// the top).
pub fn histogram(p99_ms: f64) -> String {
    let mut h = crate::new_histogram();
    for i in 1..=100u64 {
        h.record((p99_ms * 1000.0 * i as f64 / 99.0) as u64)
            .unwrap();
    }
    crate::encode_histogram(&h)
}

/// pg_stat_database intervals: 5 s at `commits`/s, then 1 s at `tail`/s.
fn stat(commits: i64, tail: i64) -> Vec<crate::StatInterval> {
    let zero = [0i64; 12];
    let mut a = zero;
    a[0] = commits * 5; // xact_commit
    a[1] = commits / 10 * 5; // xact_rollback
    a[3] = commits * 200; // blks_hit
    let mut b = a;
    b[0] += tail;
    b[1] += tail / 10;
    b[3] += tail * 40;
    vec![
        stat_interval(5.0, 5.0, &zero, &a),
        stat_interval(6.0, 1.0, &a, &b),
    ]
}

fn plans() -> Vec<Plan> {
    vec![
        Plan {
            label: "update account".into(),
            sql: "UPDATE pgbench_accounts SET abalance = abalance + 100 WHERE aid = 1".into(),
            plan: "Update on pgbench_accounts  (cost=0.29..8.31 rows=0 width=0)\n  ->  Index Scan using pgbench_accounts_pkey on pgbench_accounts  (cost=0.29..8.31 rows=1 width=10)\n        Index Cond: (aid = 1)".into(),
        },
        Plan {
            label: "select balance".into(),
            sql: "SELECT abalance FROM pgbench_accounts WHERE aid = 1".into(),
            plan: "Index Scan using pgbench_accounts_pkey on pgbench_accounts  (cost=0.29..8.31 rows=1 width=4)\n  Index Cond: (aid = 1)".into(),
        },
    ]
}

/// Failed attempts by reason of a run that retried `retries` times and
/// gave up `failed` times: of the 40001s, about 3/4 of the attempts and
/// 4/5 of the given-up transactions `pivot, during commit attempt` at
/// COMMIT, the rest `concurrent update` at an unknown statement; other
/// SQLSTATEs without a reason.
fn failure_reasons(failed: &BTreeMap<String, u64>, retries: u64) -> Vec<FailureReasonRecord> {
    let mut out = Vec::new();
    for (code, n) in failed {
        let attempts = *n + if code == "40001" { retries } else { 0 };
        if code != "40001" {
            out.push(FailureReasonRecord {
                sqlstate: code.clone(),
                reason: None,
                statement: None,
                attempts,
                failed: *n,
            });
            continue;
        }
        let (pivot_attempts, pivot_failed) = (attempts * 3 / 4, n * 4 / 5);
        out.push(FailureReasonRecord {
            sqlstate: code.clone(),
            reason: Some("pivot, during commit attempt".into()),
            statement: Some("COMMIT".into()),
            attempts: pivot_attempts,
            failed: pivot_failed,
        });
        out.push(FailureReasonRecord {
            sqlstate: code.clone(),
            reason: Some("concurrent update".into()),
            statement: None,
            attempts: attempts - pivot_attempts,
            failed: n - pivot_failed,
        });
    }
    out.sort_by_key(|r| std::cmp::Reverse(r.attempts));
    out
}

fn run(
    index: u32,
    iso: Isolation,
    repetition: u32,
    tps: f64,
    p99: f64,
    failed: &[(&str, u64)],
    retries: u64,
) -> RunRecord {
    let duration_s = 60.0;
    let committed = (tps * duration_s).round() as u64;
    let failed: BTreeMap<String, u64> = failed.iter().map(|(c, n)| (c.to_string(), *n)).collect();
    let nfailed: u64 = failed.values().sum();
    let transactions = committed + nfailed;
    let ser = iso == Isolation::Serializable;
    let latency = LatencySummary {
        mean: p99 / 4.0,
        p50: p99 / 5.0,
        p90: p99 / 2.0,
        p95: p99 / 1.5,
        p99,
        p999: p99 * 2.0,
        max: p99 * 3.0,
    };
    let mut waits = BTreeMap::from([
        ("CPU".to_string(), 150),
        ("Client:ClientRead".to_string(), 60),
        ("IO:WalSync".to_string(), 30),
    ]);
    if ser {
        waits.insert("LWLock:SerializableXactHash".into(), 20);
        waits.insert("Lock:transactionid".into(), 5);
        waits.insert("LWLock:SerializableFinishedList".into(), 3);
    } else {
        waits.insert("Lock:transactionid".into(), 40);
    }
    let siread = if ser {
        SireadLocks {
            samples: 60,
            by_granularity: BTreeMap::from([
                ("page".into(), CountStat { mean: 3.5, max: 8 }),
                (
                    "tuple".into(),
                    CountStat {
                        mean: 12.0 + f64::from(repetition),
                        max: 30,
                    },
                ),
            ]),
            by_relation: BTreeMap::new(),
        }
    } else {
        SireadLocks {
            samples: 60,
            ..SireadLocks::default()
        }
    };
    RunRecord {
        index,
        cell: cell(iso),
        repetition,
        seed: 42 + (u64::from(index) << 32),
        started_at: format!("2025-01-02T10:{:02}:00+00:00", index * 2),
        complete: true,
        duration_s,
        committed,
        tps,
        effective_tps: None,
        tpmc: None,
        attempts: transactions + retries,
        retries,
        failure_pct: 100.0 * nfailed as f64 / transactions as f64,
        failed_by_type: if failed.is_empty() {
            BTreeMap::new()
        } else {
            BTreeMap::from([("tpcb-like".to_string(), failed.clone())])
        },
        transactions: vec![TxTypeRecord {
            name: "tpcb-like".into(),
            committed,
            user_aborts: 0,
            attempts: transactions + retries,
            failed: failed.clone(),
            unknown_outcome: 0,
            wasted_ms: retries as f64 * 1.5,
            latency_ms: latency,
            latency_histogram: histogram(p99),
            commands: Vec::new(),
            failure_reasons: failure_reasons(&failed, retries),
        }],
        failed,
        unknown_outcome: 0,
        user_aborts: 0,
        wasted_attempts: retries + nfailed,
        abort_ratio: (retries + nfailed) as f64 / (transactions + retries) as f64,
        wasted_time_pct: 100.0 * retries as f64 * 1.5 / (4.0 * duration_s * 1000.0),
        retries_per_commit: retries as f64 / committed as f64,
        wasted_ms: retries as f64 * 1.5,
        latency_ms: latency,
        latency_histogram: histogram(p99),
        per_second: Vec::new(),
        client_cpu_s: committed as f64 * 40e-6,
        client_cpu_us_per_tx: 40.0 + f64::from(index),
        host_cpu: Some(HostCpu {
            busy_pct: 60.0 + f64::from(index),
            steal_pct: 0.5,
            cpus: 2,
        }),
        lifetime: Lifetime {
            committed: committed + 400,
            unknown_outcome: 0,
        },
        reset_ms: 850.0,
        server: ServerObservations {
            stat_database: stat(tps.round() as i64, tps.round() as i64 - 60),
            wait_events: WaitEvents { samples: 60, counts: waits },
            siread_locks: siread,
            plans: plans(),
            plan_changes: Vec::new(),
            errors: Vec::new(),
            pooler: None,
            standbys: Vec::new(),
        },
        invariants: vec![
            InvariantResult::check(
                "balances-consistent",
                true,
                "sum(abalance)=-1234 sum(tbalance)=-1234 sum(bbalance)=-1234 sum(history.delta)=-1234".into(),
            ),
            InvariantResult::check(
                "history-matches-commits",
                true,
                format!("count(pgbench_history)={0} client-counted commits={0} unknown outcomes=0", committed + 400),
            ),
        ],
        anomalies: 0,
        errors: Vec::new(),
        pool_wait_ms: None,
        schedule_lag_ms: None,
        skipped: 0,
        late: 0,
        server_version: "16.4".into(),
        server_settings: BTreeMap::from([("fsync".into(), "off".into())]),
        load: None,
        faults: None,
        window_start: None,
        shard_clients: None,
        hosts: Vec::new(),
    }
}

/// The fixture (see the module docs).
pub fn results() -> Results {
    let (rc, ser) = (Isolation::ReadCommitted, Isolation::Serializable);
    let mut runs = vec![
        run(1, rc, 1, 98.0, 8.0, &[], 0),
        run(2, ser, 1, 148.0, 12.5, &[("40001", 30)], 900),
        run(3, rc, 2, 102.0, 9.0, &[], 0),
        run(4, ser, 2, 152.0, 13.1, &[("40001", 34), ("40P01", 1)], 1000),
        run(5, ser, 3, 40.0, 20.0, &[("40001", 5)], 200),
    ];
    runs[2].invariants[0].ok = false;
    runs[2].invariants[0].violations = 1;
    runs[2].anomalies = 1;
    runs[2].invariants[0].detail =
        "sum(abalance)=-1234 sum(tbalance)=-1200 sum(bbalance)=-1234 sum(history.delta)=-1234"
            .into();
    runs[3].unknown_outcome = 1;
    runs[4].complete = false;
    runs[4].duration_s = 21.3;
    runs[4]
        .errors
        .push("interrupted after 21.3 s of the measured window".into());
    Results {
        schema_version: SCHEMA_VERSION,
        isobench_version: "0.1.0".into(),
        started_at: "2025-01-02T10:00:00+00:00".into(),
        finished_at: Some("2025-01-02T10:11:05+00:00".into()),
        complete: false,
        config: StoredConfig {
            workload: "tpcb".into(),
            workloads: Vec::new(),
            load: Default::default(),
            scripts: Default::default(),
            scale: vec![1],
            isolation: vec![rc, ser],
            strategies: vec!["optimistic".into()],
            params: Vec::new(),
            param_defaults: BTreeMap::from([
                ("foreign-keys".into(), "false".into()),
                ("variant".into(), "tpcb-like".into()),
            ]),
            clients: vec![4],
            pool_size: Vec::new(),
            rate: Vec::new(),
            latency_limit_ms: None,
            faults: Vec::new(),
            fault_plans: Vec::new(),
            exclude_faulted: false,
            pooler: Vec::new(),
            pooler_size: Vec::new(),
            pooler_processes: None,
            pgbouncer_bin: None,
            max_tries: Vec::new(),
            setting_factors: Vec::new(),
            pg_bin: Vec::new(),
            pg_bin_dirs: BTreeMap::new(),
            repeat: 3,
            order: crate::Order::Interleaved,
            baseline: None,
            duration_s: 60.0,
            warmup_s: 10.0,
            transactions: None,
            server_wait_s: 60.0,
            sample_interval_s: 5.0,
            threads: None,
            retry: RetryPolicy::default(),
            seed: 42,
            target: "managed PostgreSQL from /usr/lib/postgresql/16/bin".into(),
            settings: BTreeMap::from([("fsync".into(), "off".into())]),
            file: None,
            target_options: Default::default(),
            shard: None,
            precision: None,
            hunt: None,
            cpus: None,
            calibrate: None,
            checks: Vec::new(),
        },
        environment: Environment {
            host: "bench-1".into(),
            os: "Linux 6.8.0".into(),
            cpus: 8,
            server_version: "16.4".into(),
            server_version_num: 160004,
            server_settings: BTreeMap::from([
                ("max_connections".into(), "100".into()),
                ("shared_buffers".into(), "128MB".into()),
            ]),
        },
        load: vec![LoadReport {
            data: String::new(),
            elapsed: Duration::from_millis(1234),
            rows: 100_011,
        }],
        runs,
    }
}

/// `r` with a third complete run of each of its first two runs' cells, at
/// the same TPS as the mean of the fixture's two (rc 100 tx/s, ser 150
/// tx/s, so the means do not move): three runs a side, the fewest a
/// verdict takes (`stats::MIN_RUNS`). Run indexes 6 and 7.
pub fn third_runs(mut r: Results) -> Results {
    for (i, from) in [0usize, 1].into_iter().enumerate() {
        let mut run = r.runs[from].clone();
        run.index = 6 + i as u32;
        run.repetition = 3 + i as u32;
        run.tps = (r.runs[from].tps + r.runs[from + 2].tps) / 2.0;
        run.effective_tps = run.effective_tps.map(|e| e * run.tps / r.runs[from].tps);
        r.runs.push(run);
    }
    r
}

/// The fixture with its two cells at 1, 4 and 8 clients (throughput
/// growing with clients), renumbered in execution order.
pub fn with_clients(mut r: Results) -> Results {
    let base = r.runs.clone();
    r.runs.clear();
    for clients in [1u32, 4, 8] {
        for run in &base {
            let mut run = run.clone();
            let gain = match (clients, run.cell.isolation) {
                (1, _) => 0.3,
                (4, _) => 1.0,
                (_, Isolation::Serializable) => 1.3,
                _ => 1.7,
            };
            run.cell.clients = clients;
            run.tps *= gain;
            run.latency_ms.p99 *= f64::from(clients).sqrt() / 2.0;
            r.runs.push(run);
        }
    }
    for (i, run) in r.runs.iter_mut().enumerate() {
        run.index = i as u32 + 1;
    }
    r.config.clients = vec![1, 4, 8];
    r
}

/// [`with_clients`] plus what the fixture lacks: per-second series,
/// a pool (and its waits), relation-level SIRead locks.
pub fn rich() -> Results {
    let mut r = with_clients(results());
    r.config.pool_size = vec![4];
    for run in &mut r.runs {
        run.cell.pool_size = Some(4);
        let n = run.duration_s as usize;
        let (tps, p99, seed) = (run.tps, run.latency_ms.p99, run.index as f64);
        run.per_second = (1..=n)
            .map(|s| {
                let t = s as f64;
                let wave = (t / 7.0 + seed).sin() * 0.08 + (t * 1.3 + seed).cos() * 0.04;
                SecondPoint {
                    t_s: t,
                    committed: (tps * (1.0 + wave)) as u64,
                    tps: tps * (1.0 + wave),
                    p99_ms: p99 * (1.0 - wave * 2.0),
                    failed: 0,
                    lag_ms: None,
                }
            })
            .collect();
        let c = f64::from(run.cell.clients);
        run.pool_wait_ms = Some(WaitSummary {
            count: run.attempts,
            mean: 0.05 * c,
            p50: 0.02 * c,
            p99: 0.9 * c,
            max: 3.0 * c,
        });
        if run.cell.isolation == Isolation::Serializable {
            run.server.siread_locks.by_relation = BTreeMap::from([
                (
                    "pgbench_accounts (tuple)".into(),
                    crate::CountStat {
                        mean: 12.0,
                        max: 28,
                    },
                ),
                (
                    "pgbench_accounts_pkey (page)".into(),
                    crate::CountStat { mean: 3.5, max: 8 },
                ),
            ]);
        }
    }
    r
}

/// 3 isolation levels × 2 strategies × 7 client counts, 3 runs each:
/// many cells and a log-scaled clients axis.
pub fn big() -> Results {
    let base = results();
    let mut r = base.clone();
    r.runs.clear();
    r.complete = true;
    r.config.isolation = Isolation::ALL.to_vec();
    r.config.strategies = vec!["optimistic".into(), "locking".into()];
    r.config.clients = vec![1, 2, 4, 8, 16, 32, 64];
    for rep in 1..=3u32 {
        for &clients in &r.config.clients.clone() {
            for (k, iso) in Isolation::ALL.into_iter().enumerate() {
                for (s, strategy) in ["optimistic", "locking"].into_iter().enumerate() {
                    let mut run = base.runs[if k == 2 { 1 } else { 0 }].clone();
                    let c = f64::from(clients);
                    let peak = 900.0 - 150.0 * k as f64 - 100.0 * s as f64;
                    let noise = 1.0 + 0.03 * ((rep * 7 + clients) as f64).sin();
                    run.cell.isolation = iso;
                    run.cell.strategy = strategy.into();
                    run.cell.clients = clients;
                    run.repetition = rep;
                    run.tps = peak * c / (c + 6.0) * noise;
                    run.latency_ms.p50 = 1000.0 * c / run.tps * 0.8;
                    run.latency_ms.p95 = run.latency_ms.p50 * 2.5;
                    run.latency_ms.p99 = run.latency_ms.p50 * (4.0 + k as f64);
                    r.runs.push(run);
                }
            }
        }
    }
    for (i, run) in r.runs.iter_mut().enumerate() {
        run.index = i as u32 + 1;
    }
    r
}

/// The default study's shape (`isobench run` without flags): TPC-B,
/// rc, rr and ser at 16 clients, 3 complete repetitions per cell, with
/// throughputs in the thousands and a violated invariant under rc.
pub fn default_study() -> Results {
    let mut r = results();
    r.complete = true;
    r.config.isolation = Isolation::ALL.to_vec();
    r.config.clients = vec![16];
    r.config.scale = vec![10];
    r.runs.clear();
    let levels = [
        (Isolation::ReadCommitted, 2410.0, &[][..], 0),
        (
            Isolation::RepeatableRead,
            2235.0,
            &[("40001", 1210)][..],
            3400,
        ),
        (
            Isolation::Serializable,
            1988.0,
            &[("40001", 2890), ("40P01", 2)][..],
            7712,
        ),
    ];
    for rep in 1..=3u32 {
        for (k, (iso, tps, failed, retries)) in levels.iter().enumerate() {
            let index = (rep - 1) * 3 + k as u32 + 1;
            let tps = tps * (1.0 + 0.013 * f64::from(rep * 3 + k as u32).sin());
            let mut run = run(
                index,
                *iso,
                rep,
                tps,
                21.5 + 4.0 * k as f64,
                failed,
                *retries,
            );
            run.cell.clients = 16;
            run.cell.scale = Some(10);
            r.runs.push(run);
        }
    }
    let rc = &mut r.runs[3];
    rc.invariants[0].ok = false;
    rc.invariants[0].violations = 2;
    rc.anomalies = 2;
    rc.invariants[0].detail =
        "sum(abalance)=-91234 sum(tbalance)=-91200 sum(bbalance)=-91234 sum(history.delta)=-91234"
            .into();
    r
}

/// Seed 002's study (examples/seeds/002-pgbench-serializable-retries.toml):
/// ser and rc × `variant` tpcb-like and single-statement × `foreign-keys`
/// false and true, 8 clients, `max_tries = 3`, baseline `isolation=ser`,
/// 3 repetitions; rc's throughput spread as wide as the seed's (its
/// `+239.6 %` with an interval of `[-48.4 %, +2132.8 %]`).
pub fn seed_002() -> Results {
    let mut r = results();
    r.complete = true;
    r.config.isolation = vec![Isolation::Serializable, Isolation::ReadCommitted];
    r.config.clients = vec![8];
    r.config.scale = vec![10];
    r.config.baseline = Some("isolation=ser".into());
    r.config.retry.max_tries = 3;
    r.config.params = vec![
        (
            "variant".into(),
            vec!["tpcb-like".into(), "single-statement".into()],
        ),
        ("foreign-keys".into(), vec!["false".into(), "true".into()]),
    ];
    r.runs.clear();
    let mut index = 0;
    for rep in 1..=3u32 {
        for variant in ["tpcb-like", "single-statement"] {
            for fk in ["false", "true"] {
                for iso in [Isolation::Serializable, Isolation::ReadCommitted] {
                    index += 1;
                    let ser = iso == Isolation::Serializable;
                    let tps = if ser {
                        612.0 + 9.0 * f64::from(rep)
                    } else {
                        [310.0, 4790.0, 1145.0][rep as usize - 1]
                    };
                    let failed: &[(&str, u64)] = if ser { &[("40001", 1843)] } else { &[] };
                    let mut run = run(index, iso, rep, tps, 35.25, failed, 5120);
                    run.cell.clients = 8;
                    run.cell.scale = Some(10);
                    run.cell.params = BTreeMap::from([
                        ("variant".into(), variant.into()),
                        ("foreign-keys".into(), fk.into()),
                    ]);
                    r.runs.push(run);
                }
            }
        }
    }
    r
}

/// [`results`] plus three runs of the rc cell (100, 99 and 150 tx/s, the
/// last an outlier) on another server version.
pub fn with_outliers() -> Results {
    let mut r = results();
    for (i, tps) in [100.0, 99.0, 150.0].into_iter().enumerate() {
        let mut run = r.runs[0].clone();
        run.index = 6 + i as u32;
        run.repetition = 3 + i as u32;
        run.tps = tps;
        run.server_version = "17.2".into();
        r.runs.push(run);
    }
    r
}

/// [`results`] on two named server builds (`pg_bin = { stock = ...,
/// finer-lock = ... }`): every run once on `stock` (PostgreSQL 16.4) and
/// once on `finer-lock` (PostgreSQL 18.1, 10 % more TPS).
pub fn with_builds() -> Results {
    let mut r = results();
    r.config.pg_bin = vec!["stock".into(), "finer-lock".into()];
    r.config.pg_bin_dirs = [
        ("stock", "/usr/lib/postgresql/16/bin"),
        ("finer-lock", "/opt/pg-patched/bin"),
    ]
    .map(|(l, d)| (l.to_string(), d.to_string()))
    .into();
    let mut patched = r.runs.clone();
    for run in &mut r.runs {
        run.cell.pg_bin = Some("stock".into());
    }
    for run in &mut patched {
        run.cell.pg_bin = Some("finer-lock".into());
        run.server_version = "18.1".into();
        run.tps *= 1.1;
    }
    r.runs.extend(patched);
    for (i, run) in r.runs.iter_mut().enumerate() {
        run.index = i as u32 + 1;
    }
    r
}

/// A string that breaks HTML and Markdown unless escaped.
pub const EVIL: &str = "<script>alert(\"x\")</script> | `a`";

/// [`results`] with [`EVIL`] in every string a report copies from them.
pub fn evil() -> Results {
    let mut r = results();
    for run in &mut r.runs {
        run.cell.strategy = EVIL.into();
        run.server.plans[0].sql = format!("SELECT '{EVIL}'");
        run.errors.push(EVIL.into());
    }
    r.config.strategies = vec![EVIL.into()];
    r.config.target = EVIL.into();
    r
}

/// [`results`] as a study of a pgbench script over pgbench's tables that
/// calls a PL/pgSQL function swallowing serialization failures: in the ser
/// runs the history check failed (27,150 calls counted as committed over
/// the clients' life, 5,550 history rows gained: 21,600 lost commits, so
/// the effective tps is 20.4 % of the reported), in the rc runs it held
/// (effective tps = tps).
pub fn swallowed_history() -> Results {
    use crate::{HISTORY_CHECK, HistoryCount};
    let mut r = results();
    r.config.workload = "pgbench-script".into();
    for run in &mut r.runs {
        let (committed, rows) = if run.cell.isolation == Isolation::Serializable {
            (27_150, 5_550)
        } else {
            (run.lifetime.committed, run.lifetime.committed)
        };
        run.lifetime.committed = committed;
        let h = HistoryCount {
            rows,
            expected_min: committed,
            expected_max: committed,
        };
        let detail = h.detail(&format!(
            "swallow.sql 1 per transaction through tpcb_swallow() ({committed} committed)"
        ));
        run.invariants = vec![InvariantResult {
            lost_commits: Some(committed - rows),
            ..InvariantResult::count(HISTORY_CHECK, h.violations(), detail)
        }];
        run.anomalies = h.violations();
        run.effective_tps = crate::effective_tps(run.tps, &run.lifetime, &run.invariants);
    }
    r
}

/// [`results`] with run 2 faulted: a backend killed 2.5 s into its
/// window, the server back after 0.4 s, 4 connections lost and reopened.
pub fn faulted() -> Results {
    let mut r = results();
    r.runs[1].window_start = Some("2026-01-01T10:00:02.000100Z".into());
    r.runs[1].shard_clients = Some(3);
    r.runs[1].faults = Some(crate::RunFaults {
        cause: Some("server process (PID 4242) was terminated by signal 9: Killed".into()),
        connections_lost: 4,
        losses: (0..4)
            .map(|c| crate::ConnectionLoss {
                t_s: 2.5 + f64::from(c) / 1000.0,
                client: c,
                sqlstate: "57P02".into(),
            })
            .collect(),
        reconnects: 4,
        outage_s: Some(0.75),
        recovery_s: Some(1.5),
        server_wait_s: Some(0.4),
        injected: Vec::new(),
    });
    // synchronous_commit=off: the crash took 3 acknowledged commits.
    let history = &mut r.runs[1].invariants[1];
    history.lost_commits = Some(3);
    history
        .detail
        .push_str("; 3 acknowledged commits lost (synchronous_commit=off: not durable by design)");
    r
}

/// [`results`] with the story of issue #31: every run EXPLAINs `update
/// teller` as a sequential scan of the one-page pgbench_tellers, except
/// that run 1 (rc) ended its window with an index scan; the ser runs
/// hold relation-level SIRead locks on pgbench_tellers.
pub fn plan_changed() -> Results {
    let mut r = results();
    let sql = "UPDATE pgbench_tellers SET tbalance = tbalance + 1 WHERE tid = 1";
    let seq = "Update on pgbench_tellers  (cost=0.00..1.13 rows=0 width=0)\n  ->  Seq Scan on pgbench_tellers  (cost=0.00..1.13 rows=1 width=10)\n        Filter: (tid = 1)";
    let index = "Update on pgbench_tellers  (cost=0.14..8.16 rows=0 width=0)\n  ->  Index Scan using pgbench_tellers_pkey on pgbench_tellers  (cost=0.14..8.16 rows=1 width=10)\n        Index Cond: (tid = 1)";
    for run in &mut r.runs {
        run.server.plans.push(Plan {
            label: "update teller".into(),
            sql: sql.into(),
            plan: seq.into(),
        });
        if run.cell.isolation == Isolation::Serializable {
            let l = &mut run.server.siread_locks;
            l.by_granularity
                .insert("relation".into(), CountStat { mean: 2.0, max: 3 });
            l.by_relation.insert(
                "pgbench_tellers (relation)".into(),
                CountStat { mean: 2.0, max: 3 },
            );
        }
    }
    r.runs[0].server.plan_changes = vec![crate::PlanChange {
        label: "update teller".into(),
        sql: sql.into(),
        start: seq.into(),
        end: index.into(),
    }];
    r
}

/// The issue #47 cycle: T13400 -wr-> T54663 -rw-> T110483 -rw-> T13400,
/// with the operations behind each edge.
pub fn g2_item_cycle() -> crate::Cycle {
    use crate::{CycleStep, Dependency};
    let step = |from, to, kind, why: &str| CycleStep {
        from,
        to,
        kind,
        why: why.into(),
    };
    crate::Cycle {
        steps: vec![
            step(
                13400,
                54663,
                Dependency::Wr,
                "T54663 read k2848 = [39171 40011], whose last value 40011 T13400 appended (wr)",
            ),
            step(
                54663,
                110483,
                Dependency::Rw,
                "T54663 read k2852 = [] without 100223, which T110483 appended next (rw)",
            ),
            step(
                110483,
                13400,
                Dependency::Rw,
                "T110483 read k2846 = [38805] without 40021, which T13400 appended next (rw)",
            ),
        ],
        evidence: Some("violations/1".into()),
    }
}

/// [`results`] as a list-append study whose history checks found, per run
/// of 138,578 committed transactions: at rc, 2,000 G2-items, 30 G-singles
/// and 12 internal reads (all admitted); at ser, one G2-item in run 2
/// (the [`g2_item_cycle`]: a guarantee violation) and none in run 4; the
/// interrupted run 5 was not checked.
pub fn guarantee_violated() -> Results {
    let mut r = results();
    r.config.workload = "list-append".into();
    r.config.param_defaults = BTreeMap::from([("keys".into(), "10".into())]);
    let checked = 138_578;
    for run in &mut r.runs {
        let ser = run.cell.isolation == Isolation::Serializable;
        if !run.complete {
            run.invariants.clear();
            run.anomalies = 0;
            continue;
        }
        run.invariants = crate::ANOMALY_CLASSES
            .iter()
            .map(|&class| {
                let n = match (ser, class, run.index) {
                    (true, "G2-item", 2) => 1,
                    (false, "G2-item", _) => 2_000,
                    (false, "G-single", _) => 30,
                    (false, "internal", _) => 12,
                    _ => 0,
                };
                let detail = if n == 0 {
                    format!("none in {checked} transactions")
                } else if ser {
                    format!(
                        "1 found; e.g. cycle T13400 -> T54663 -> T110483 -> T13400: {}",
                        g2_item_cycle()
                            .steps
                            .iter()
                            .map(|s| s.why.as_str())
                            .collect::<Vec<_>>()
                            .join("; ")
                    )
                } else {
                    format!("{n} found; e.g. cycle T1 -> T2 -> T1")
                };
                let mut inv = InvariantResult::count(class, n, detail);
                inv.checked = Some(checked);
                if n > 0 && ser {
                    inv.cycles = vec![g2_item_cycle()];
                }
                inv
            })
            .collect();
        run.anomalies = run.invariants.iter().map(|i| i.violations).sum();
    }
    r
}
