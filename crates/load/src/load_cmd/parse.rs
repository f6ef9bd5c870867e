//! What load tools report, parsed: autocannon's JSON (`-j`) and
//! pgbench's end-of-run summary.
//!
//! Sources: autocannon's README, "Usage" and the result object of
//! `autocannon(opts, cb)` (fields `requests`, `latency`, `throughput`,
//! `errors`, `timeouts`, `non2xx`, `2xx`, `duration`); pgbench's
//! documentation, "Failures and Serialization/Deadlock Retries" and the
//! example outputs (PostgreSQL 15+ prints the failure and retry lines).
//! Fixtures recorded from autocannon 8.0.0 and pgbench 15.18/18.6 are in
//! `tests/fixtures/`.

use crate::model::{LoadFigures, LoadFormat};

use serde::Deserialize;

/// Parses `format`'s output `stdout`; `Ok(None)` for
/// [`LoadFormat::Command`].
///
/// Errors: the output is not what the format prints (the message says
/// what was missing).
pub fn parse(format: LoadFormat, stdout: &str) -> Result<Option<LoadFigures>, String> {
    match format {
        LoadFormat::Autocannon => autocannon(stdout).map(Some),
        LoadFormat::Pgbench => pgbench(stdout).map(Some),
        LoadFormat::Command | LoadFormat::Auto => Ok(None),
    }
}

#[derive(Deserialize)]
struct AcStats {
    average: Option<f64>,
    stddev: Option<f64>,
    max: Option<f64>,
    total: Option<f64>,
    p50: Option<f64>,
    p90: Option<f64>,
    p99: Option<f64>,
    #[serde(rename = "totalCount")]
    total_count: Option<f64>,
}

#[derive(Deserialize)]
struct AcResult {
    requests: AcStats,
    latency: AcStats,
    throughput: Option<AcStats>,
    duration: Option<f64>,
    errors: Option<u64>,
    timeouts: Option<u64>,
    non2xx: Option<u64>,
    #[serde(rename = "2xx")]
    ok: Option<u64>,
}

/// autocannon's `-j` result: the last line of `stdout` that is a JSON
/// object. Latency fields are `None` when no response arrived (autocannon
/// then reports zeros).
///
/// Errors: no JSON object line (autocannon without `-j` prints a table),
/// or one without `requests` and `latency`.
pub fn autocannon(stdout: &str) -> Result<LoadFigures, String> {
    let line = stdout
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('{'))
        .ok_or("no JSON result in the output (run autocannon with -j / --json)")?;
    let r: AcResult = serde_json::from_str(line)
        .map_err(|e| format!("autocannon JSON result does not parse: {e}"))?;
    let responded = r.latency.total_count.unwrap_or(1.0) > 0.0;
    let lat = |v: Option<f64>| v.filter(|_| responded);
    Ok(LoadFigures {
        unit: "req/s".into(),
        throughput: r.requests.average.unwrap_or(0.0),
        count: r.requests.total.unwrap_or(0.0) as u64,
        duration_s: r.duration,
        latency_mean_ms: lat(r.latency.average),
        latency_stddev_ms: lat(r.latency.stddev),
        latency_p50_ms: lat(r.latency.p50),
        latency_p90_ms: lat(r.latency.p90),
        latency_p99_ms: lat(r.latency.p99),
        latency_max_ms: lat(r.latency.max),
        bytes_per_s: r.throughput.and_then(|t| t.average),
        responses_2xx: r.ok,
        non_2xx: r.non2xx,
        errors: r.errors,
        timeouts: r.timeouts,
        ..LoadFigures::default()
    })
}

/// pgbench's summary (the last one in `stdout`).
///
/// Errors: no `tps = ` line (pgbench failed before its summary, or the
/// command is not pgbench).
pub fn pgbench(stdout: &str) -> Result<LoadFigures, String> {
    let mut f = LoadFigures {
        unit: "tx/s".into(),
        ..LoadFigures::default()
    };
    let mut tps = None;
    // The first number in `s` (e.g. "2871 (52.295%)", "1.273 ms").
    let num = |s: &str| -> Option<f64> {
        s.split(|c: char| c.is_whitespace() || c == '/')
            .find(|w| !w.is_empty())?
            .parse()
            .ok()
    };
    let count = |s: &str| num(s).map(|x| x as u64);
    for line in stdout.lines() {
        let line = line.trim();
        let (key, value) = match (line.split_once(" = "), line.split_once(": ")) {
            (Some((k, v)), _) if !k.contains(':') => (k, v),
            (_, Some((k, v))) => (k, v),
            _ => continue,
        };
        match key {
            "tps" => tps = num(value),
            "number of transactions actually processed" => f.count = count(value).unwrap_or(0),
            "duration" => f.duration_s = num(value),
            "latency average" => f.latency_mean_ms = num(value),
            "latency stddev" => f.latency_stddev_ms = num(value),
            "number of failed transactions" => f.failed = count(value),
            "number of serialization failures" => f.serialization_failures = count(value),
            "number of deadlock failures" => f.deadlock_failures = count(value),
            "number of transactions retried" => f.retried = count(value),
            "total number of retries" => f.retries = count(value),
            "number of transactions skipped" => f.skipped = count(value),
            _ => {}
        }
    }
    f.throughput =
        tps.ok_or("no 'tps = ' line: not a pgbench summary (pgbench stopped before it, or the command is not pgbench)")?;
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(path: &str) -> String {
        // The workspace's shared test fixtures, two floors up.
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures")
            .join(path);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    #[test]
    fn autocannon_result_of_a_good_run() {
        let f = autocannon(&fixture("autocannon/ok.json")).unwrap();
        assert_eq!(f.unit, "req/s");
        assert_eq!(f.throughput, 2088.5);
        assert_eq!(f.count, 4176);
        assert_eq!(f.duration_s, Some(2.01));
        assert_eq!(f.latency_mean_ms, Some(513.28));
        assert_eq!(f.latency_p50_ms, Some(553.0));
        assert_eq!(f.latency_p90_ms, Some(872.0));
        assert_eq!(f.latency_p99_ms, Some(964.0));
        assert_eq!(f.latency_max_ms, Some(979.0));
        assert_eq!(f.bytes_per_s, Some(1_204_736.0));
        assert_eq!(
            (f.responses_2xx, f.non_2xx, f.errors, f.timeouts),
            (Some(4176), Some(0), Some(0), Some(0))
        );
        assert_eq!(f.failed, None);
    }

    #[test]
    fn autocannon_errors_timeouts_and_non_2xx() {
        let f = autocannon(&fixture("autocannon/non2xx.json")).unwrap();
        assert_eq!((f.responses_2xx, f.non_2xx), (Some(0), Some(2351)));
        assert!(f.latency_p99_ms.is_some());
        let f = autocannon(&fixture("autocannon/refused.json")).unwrap();
        assert_eq!(f.errors, Some(24248));
        assert_eq!(f.count, 0);
        // No response: autocannon's zero latencies are not latencies.
        assert_eq!(f.latency_p99_ms, None);
        assert_eq!(f.latency_mean_ms, None);
        let f = autocannon(&fixture("autocannon/timeouts.json")).unwrap();
        assert_eq!((f.errors, f.timeouts), (Some(5), Some(5)));
    }

    #[test]
    fn autocannon_without_json_is_an_error() {
        let e = autocannon(&fixture("autocannon/table-not-json.txt")).unwrap_err();
        assert!(e.contains("-j"), "{e}");
        let e = autocannon("{\"hello\": 1}").unwrap_err();
        assert!(e.contains("does not parse"), "{e}");
    }

    #[test]
    fn pgbench_summaries() {
        let f = pgbench(&fixture("pgbench/pg15-tpcb.txt")).unwrap();
        assert_eq!(f.unit, "tx/s");
        assert_eq!(f.throughput, 3142.095834);
        assert_eq!(f.count, 6284);
        assert_eq!(f.duration_s, Some(2.0));
        assert_eq!(f.latency_mean_ms, Some(1.273));
        assert_eq!(f.latency_stddev_ms, None);
        assert_eq!(f.failed, Some(0));
        assert_eq!(f.retries, None);

        let f = pgbench(&fixture("pgbench/pg15-serializable-retries.txt")).unwrap();
        assert_eq!(f.count, 2619);
        assert_eq!(f.failed, Some(2871));
        assert_eq!(f.serialization_failures, Some(2871));
        assert_eq!(f.deadlock_failures, Some(0));
        assert_eq!(f.retried, Some(4052));
        assert_eq!(f.retries, Some(13996));
        assert_eq!(f.latency_mean_ms, Some(2.899));

        let f = pgbench(&fixture("pgbench/pg15-rate-limit.txt")).unwrap();
        assert_eq!(f.latency_stddev_ms, Some(0.137));
        assert_eq!(f.skipped, Some(0));
        assert_eq!(f.count, 995);

        let f = pgbench(&fixture("pgbench/pg18-client.txt")).unwrap();
        assert_eq!((f.count, f.throughput), (3001, 3003.736404));
    }

    #[test]
    fn pgbench_without_summary_is_an_error() {
        let e = pgbench("pgbench: error: connection to server failed\n").unwrap_err();
        assert!(e.contains("tps = "), "{e}");
    }

    #[test]
    fn formats_resolve_by_program_name() {
        let r = |c: &str| LoadFormat::Auto.resolve(c);
        assert_eq!(r("autocannon -j -c 5 http://x"), LoadFormat::Autocannon);
        assert_eq!(r("npx autocannon -j http://x"), LoadFormat::Autocannon);
        assert_eq!(
            r("PGOPTIONS='-c x=y' /usr/lib/postgresql/15/bin/pgbench -c 4"),
            LoadFormat::Pgbench
        );
        assert_eq!(r("./load.sh 4"), LoadFormat::Command);
        assert_eq!(
            LoadFormat::Pgbench.resolve("./wrapper.sh"),
            LoadFormat::Pgbench
        );
        assert_eq!("none".parse::<LoadFormat>(), Ok(LoadFormat::Command));
        assert!("wrk".parse::<LoadFormat>().unwrap_err().contains("wrk"));
    }
}
