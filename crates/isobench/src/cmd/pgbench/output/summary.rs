//! pgbench's summary (`printResults` in pgbench.c) of the run's record,
//! as pgbench 15 or pgbench 18 prints it ([`Pgbench`]).
//!
//! Failures are pgbench's: serialization failures and deadlocks (under
//! `isobench pgbench` any other error aborts the client, as in pgbench,
//! and is not counted).

use std::collections::BTreeMap;

use super::super::flags::{End, Invocation, PartitionMethod};
use super::super::tally::ScriptCounts;
use super::super::version::Pgbench;
use crate::model::{QueryMode, RunRecord};

/// What the summary needs besides the record.
#[derive(Debug, Clone)]
pub struct Extra {
    /// The scale reported (`scaling factor:`).
    pub scale: u32,
    /// pgbench_accounts' partitioning, when partitioned.
    pub partitions: Option<(PartitionMethod, u32)>,
    /// Transactions retried (from the ticks).
    pub retried: u64,
    /// The clients' first connections, ms.
    pub initial_connect_ms: f64,
    /// `-C`: the connections' time over the run, ms.
    pub connect_ms: f64,
    /// Per script (several scripts): transactions retried, retries and
    /// transactions skipped.
    pub scripts: Vec<ScriptCounts>,
    /// Whose summary it is.
    pub pgbench: Pgbench,
}

/// Failed transactions as pgbench 15 counts them: serialization (40001),
/// deadlock (40P01), and their sum.
fn failures(failed: &BTreeMap<String, u64>) -> (u64, u64, u64) {
    let get = |c: &str| failed.get(c).copied().unwrap_or(0);
    let (ser, dead) = (get("40001"), get("40P01"));
    (ser + dead, ser, dead)
}

fn pct(n: u64, of: u64) -> f64 {
    if of > 0 {
        100.0 * n as f64 / of as f64
    } else {
        // pgbench divides anyway: 0/0 is NaN, n/0 infinite.
        if n == 0 { f64::NAN } else { f64::INFINITY }
    }
}

/// A number as pgbench prints it with `%.3f`: PostgreSQL's own
/// `snprintf` (src/port/snprintf.c) writes `NaN` and `Infinity`.
fn p3(x: f64) -> String {
    fixed(x, 3)
}

/// `x` with `digits` decimals, as PostgreSQL's `snprintf` prints `%.Nf`.
fn fixed(x: f64, digits: usize) -> String {
    if x.is_nan() {
        "NaN".into()
    } else if x.is_infinite() {
        if x > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else {
        format!("{x:.digits$}")
    }
}

/// pgbench's failure lines (`number of failed transactions: N (x%)`, and
/// by kind with `--failures-detailed`), each after `prefix` (`" - "` in a
/// script's block); the percentages are of `total`.
fn push_failures(
    o: &mut String,
    prefix: &str,
    counts: (u64, u64, u64),
    total: u64,
    detailed: bool,
) {
    let (failed, ser, dead) = counts;
    o.push_str(&format!(
        "{prefix}number of failed transactions: {failed} ({}%)\n",
        p3(pct(failed, total))
    ));
    if detailed {
        o.push_str(&format!(
            "{prefix}number of serialization failures: {ser} ({}%)\n",
            p3(pct(ser, total))
        ));
        o.push_str(&format!(
            "{prefix}number of deadlock failures: {dead} ({}%)\n",
            p3(pct(dead, total))
        ));
    }
}

/// pgbench's summary of run `r`: pgbench 15's, or pgbench 18's
/// (`x.pgbench`), which prints nothing after `actually processed` when
/// no transaction ended, and lays out the per-script and per-command
/// figures anew.
pub fn summary(inv: &Invocation, r: &RunRecord, x: &Extra) -> String {
    let mut o = String::new();
    let (failed, ser, dead) = failures(&r.failed);
    let total_cnt = r.committed + r.skipped + failed;
    let transaction_type = match inv.scripts.as_slice() {
        [one] => one.desc(),
        _ => "multiple scripts".into(),
    };
    o.push_str(&format!("transaction type: {transaction_type}\n"));
    o.push_str(&format!("scaling factor: {}\n", x.scale));
    if let Some((method, n)) = x.partitions {
        o.push_str(&format!(
            "partition method: {}\npartitions: {n}\n",
            method.name()
        ));
    }
    o.push_str(&format!("query mode: {}\n", mode_name(inv.mode)));
    o.push_str(&format!("number of clients: {}\n", inv.clients));
    o.push_str(&format!("number of threads: {}\n", inv.threads));
    if inv.max_tries != 0 {
        o.push_str(&format!("maximum number of tries: {}\n", inv.max_tries));
    }
    match inv.end {
        End::Transactions(n) => {
            o.push_str(&format!("number of transactions per client: {n}\n"));
            o.push_str(&format!(
                "number of transactions actually processed: {}/{}\n",
                r.committed,
                u64::from(n) * u64::from(inv.clients)
            ));
        }
        End::Time(secs) => {
            o.push_str(&format!("duration: {secs} s\n"));
            o.push_str(&format!(
                "number of transactions actually processed: {}\n",
                r.committed
            ));
        }
    }
    if x.pgbench >= Pgbench::V18 && total_cnt == 0 {
        // pgbench 18: "Remaining stats are nonsensical".
        return o;
    }
    push_failures(
        &mut o,
        "",
        (failed, ser, dead),
        total_cnt,
        inv.failures_detailed,
    );
    if inv.max_tries != 1 {
        o.push_str(&format!(
            "number of transactions retried: {} ({}%)\n",
            x.retried,
            p3(pct(x.retried, total_cnt))
        ));
        o.push_str(&format!("total number of retries: {}\n", r.retries));
    }
    if x.pgbench == Pgbench::V15 && r.committed + r.skipped == 0 {
        // pgbench 15 stops here; 18 goes on when transactions failed.
        return o;
    }
    if inv.rate.is_some() && inv.latency_limit_ms.is_some() {
        o.push_str(&format!(
            "number of transactions skipped: {} ({}%)\n",
            r.skipped,
            p3(pct(r.skipped, total_cnt))
        ));
    }
    if let Some(limit) = inv.latency_limit_ms {
        let late = if r.committed > 0 {
            100.0 * r.late as f64 / r.committed as f64
        } else {
            0.0
        };
        o.push_str(&format!(
            "number of transactions above the {limit:.1} ms latency limit: {}/{} ({late:.3}%)\n",
            r.late, r.committed
        ));
    }
    if inv.rate.is_some() || inv.progress_s.is_some() || inv.latency_limit_ms.is_some() {
        // pgbench's `printSimpleStats`: nothing without a sample.
        if r.committed > 0 {
            let (mean, stddev) = mean_stddev(r);
            o.push_str(&format!("latency average = {mean:.3} ms\n"));
            o.push_str(&format!("latency stddev = {stddev:.3} ms\n"));
        }
    } else {
        // pgbench: run time x clients / transactions, failures included.
        o.push_str(&format!(
            "latency average = {:.3} ms{}\n",
            1000.0 * r.duration_s * f64::from(inv.clients) / total_cnt as f64,
            if failed > 0 {
                " (including failures)"
            } else {
                ""
            }
        ));
    }
    if inv.rate.is_some() {
        let lag = r.schedule_lag_ms.unwrap_or_default();
        o.push_str(&format!(
            "rate limit schedule lag: avg {:.3} (max {:.3}) ms\n",
            lag.mean, lag.max
        ));
    }
    if inv.connect {
        o.push_str(&format!(
            "average connection time = {:.3} ms\n",
            x.connect_ms / (r.committed + failed).max(1) as f64
        ));
        o.push_str(&format!(
            "tps = {:.6} (including reconnection times)\n",
            r.tps
        ));
    } else {
        o.push_str(&format!(
            "initial connection time = {:.3} ms\n",
            x.initial_connect_ms
        ));
        o.push_str(&format!(
            "tps = {:.6} (without initial connection time)\n",
            r.tps
        ));
    }
    if inv.per_script() || inv.per_command {
        scripts(&mut o, inv, r, x);
    }
    o
}

/// The `SQL script N:` blocks (several scripts; `counts` by script) and
/// the per-command tables (`-r`).
fn scripts(o: &mut String, inv: &Invocation, r: &RunRecord, x: &Extra) {
    let counts = &x.scripts;
    let (failed, _, _) = failures(&r.failed);
    let total_cnt = r.committed + r.skipped + failed;
    let per_script = inv.per_script();
    let total_weight: u64 = inv
        .scripts
        .iter()
        .map(|s| u64::from(s.weight))
        .sum::<u64>()
        .max(1);
    for (i, (t, s)) in r.transactions.iter().zip(&inv.scripts).enumerate() {
        if per_script {
            let c = counts.get(i).copied().unwrap_or_default();
            let (sf, sser, sdead) = failures(&t.failed);
            let stotal = t.committed + c.skipped + sf;
            let tps = t.committed as f64 / r.duration_s.max(1e-9);
            o.push_str(&format!(
                "SQL script {}: {}\n - weight: {} (targets {:.1}% of total)\n",
                i + 1,
                s.desc(),
                s.weight,
                100.0 * f64::from(s.weight) / total_weight as f64,
            ));
            if x.pgbench >= Pgbench::V18 {
                o.push_str(&format!(
                    " - {stotal} transactions ({}% of total)\n",
                    fixed(pct(stotal, total_cnt), 1)
                ));
                if stotal > 0 {
                    o.push_str(&format!(
                        " - number of transactions actually processed: {} (tps = {tps:.6})\n",
                        t.committed
                    ));
                }
            } else {
                o.push_str(&format!(
                    " - {} transactions ({}% of total, tps = {tps:.6})\n",
                    t.committed,
                    fixed(pct(t.committed, r.committed), 1),
                ));
            }
            if x.pgbench >= Pgbench::V18 && stotal == 0 {
                // pgbench 18 prints a script's counts only when it ran.
            } else {
                push_failures(o, " - ", (sf, sser, sdead), stotal, inv.failures_detailed);
                if inv.max_tries != 1 {
                    o.push_str(&format!(
                    " - number of transactions retried: {} ({}%)\n - total number of retries: {}\n",
                    c.retried,
                    p3(pct(c.retried, stotal)),
                    c.retries
                ));
                }
                if inv.rate.is_some() && inv.latency_limit_ms.is_some() && stotal > 0 {
                    o.push_str(&format!(
                        " - number of transactions skipped: {} ({}%)\n",
                        c.skipped,
                        p3(pct(c.skipped, stotal))
                    ));
                }
            }
            if t.committed > 0 {
                let (mean, stddev) =
                    hist_mean_stddev(&t.latency_histogram).unwrap_or((t.latency_ms.mean, 0.0));
                o.push_str(&format!(" - latency average = {mean:.3} ms\n"));
                o.push_str(&format!(" - latency stddev = {stddev:.3} ms\n"));
            }
        }
        if inv.per_command {
            per_command(o, inv, t, per_script, x.pgbench);
        }
    }
}

/// `-r`'s table of one script: each command's mean latency, final
/// failures and (with `--max-tries`) retries.
fn per_command(
    o: &mut String,
    inv: &Invocation,
    t: &crate::model::TxTypeRecord,
    per_script: bool,
    v: Pgbench,
) {
    // pgbench 18 puts one blank before the command (and between the
    // counts), pgbench 15 two.
    let gap = if v >= Pgbench::V18 { " " } else { "  " };
    o.push_str(&format!(
        "{}statement latencies in milliseconds{}:\n",
        if per_script { " - " } else { "" },
        if inv.max_tries == 1 {
            " and failures"
        } else {
            ", failures and retries"
        }
    ));
    for c in &t.commands {
        // Final failures and retries raised by this command.
        let (mut failed_here, mut retries_here) = (0u64, 0u64);
        let mut seen = false;
        for f in t
            .failure_reasons
            .iter()
            .filter(|f| f.statement.as_deref() == Some(c.command.as_str()))
            .filter(|f| matches!(f.sqlstate.as_str(), "40001" | "40P01"))
        {
            seen = true;
            failed_here += f.failed;
            retries_here += f.attempts - f.failed;
        }
        if !seen {
            failed_here = 0;
        }
        if inv.max_tries == 1 {
            o.push_str(&format!(
                "   {:>11.3}  {failed_here:>10}{gap}{}\n",
                c.mean_ms, c.command
            ));
        } else {
            o.push_str(&format!(
                "   {:>11.3}  {failed_here:>10}{gap}{retries_here:>10}{gap}{}\n",
                c.mean_ms, c.command
            ));
        }
    }
}

fn mode_name(m: QueryMode) -> &'static str {
    match m {
        QueryMode::Simple => "simple",
        QueryMode::Extended => "extended",
        QueryMode::Prepared => "prepared",
    }
}

/// Mean and standard deviation (ms) of an encoded HdrHistogram of µs.
fn hist_mean_stddev(encoded: &str) -> Option<(f64, f64)> {
    let h = crate::model::decode_histogram(encoded).ok()?;
    (!h.is_empty()).then(|| (h.mean() / 1000.0, h.stdev() / 1000.0))
}

/// The run's committed latencies' mean and standard deviation, ms.
fn mean_stddev(r: &RunRecord) -> (f64, f64) {
    hist_mean_stddev(&r.latency_histogram).unwrap_or((r.latency_ms.mean, 0.0))
}
