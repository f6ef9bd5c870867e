//! `-l`: pgbench 15's transaction log files (`PREFIX.PID`, `PREFIX.PID.N`
//! for thread N), their lines read back field by field, per transaction
//! and aggregated.

use super::*;

/// The log files of `prefix` in `dir`, sorted by name.
fn log_files(dir: &std::path::Path, prefix: &str) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("{prefix}."))
        })
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read_to_string(e.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

fn now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[test]
fn per_transaction_logs_have_pgbenchs_names_and_fields() {
    let (_keep, dir) = out_dir("pgbench-logs");
    let db = Named::start(&dir);
    let (out, _, stderr) = db.run(&dir, &["-i", "-q"]);
    assert!(out.status.success(), "{stderr}");
    let before = now_s();
    let (out, stdout, stderr) = db.run(
        &dir,
        &[
            "-n",
            "-S",
            "-c",
            "2",
            "-j",
            "2",
            "-t",
            "6",
            "-l",
            "--max-tries=2",
        ],
    );
    let after = now_s();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let files = log_files(&dir, "pgbench_log");
    assert_eq!(files.len(), 2, "{files:?}");
    let name = Regex::new(r"^pgbench_log\.([0-9]+)(\.1)?$").unwrap();
    let pid = name.captures(&files[0].0).unwrap()[1].to_string();
    assert_eq!(files[0].0, format!("pgbench_log.{pid}"));
    assert_eq!(files[1].0, format!("pgbench_log.{pid}.1"));
    // client_id transaction_no time script_no time_epoch time_us retries
    for (thread, (_, text)) in files.iter().enumerate() {
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 6, "{text}");
        for (k, line) in lines.iter().enumerate() {
            let f: Vec<u64> = line.split(' ').map(|x| x.parse().unwrap()).collect();
            assert_eq!(f.len(), 7, "{line}");
            assert_eq!(f[0], thread as u64, "{line}: thread N runs client N");
            assert_eq!(f[1], k as u64 + 1, "{line}");
            assert!(f[2] > 0, "{line}");
            assert_eq!(f[3], 0, "{line}");
            assert!((before..=after).contains(&f[4]), "{line}");
            assert!(f[5] < 1_000_000, "{line}");
            assert_eq!(f[6], 0, "{line}: no retries");
        }
    }
    // --sampling-rate keeps about that share; --log-prefix names the files.
    let prefix = dir.join("sampled");
    let p = prefix.display().to_string();
    let (out, stdout, stderr) = db.run(
        &dir,
        &[
            "-n",
            "-S",
            "-t",
            "400",
            "-l",
            "--sampling-rate=0.25",
            &format!("--log-prefix={p}"),
        ],
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let files = log_files(&dir, "sampled");
    assert_eq!(files.len(), 1);
    let n = files[0].1.lines().count();
    assert!((40..=160).contains(&n), "{n} of 400 at 0.25");
}

#[test]
fn aggregated_logs_have_one_line_per_interval() {
    let (_keep, dir) = out_dir("pgbench-agg");
    let db = Named::start(&dir);
    let (out, _, stderr) = db.run(&dir, &["-i", "-q"]);
    assert!(out.status.success(), "{stderr}");
    let (out, stdout, stderr) = db.run(
        &dir,
        &[
            "-n",
            "-S",
            "-T",
            "3",
            "-l",
            "--aggregate-interval=1",
            "--log-prefix=agg",
        ],
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let processed: u64 = Regex::new(r"processed: ([0-9]+)")
        .unwrap()
        .captures(&stdout)
        .unwrap()[1]
        .parse()
        .unwrap();
    let files = log_files(&dir, "agg");
    assert_eq!(files.len(), 1);
    let lines: Vec<Vec<f64>> = files[0]
        .1
        .lines()
        .map(|l| l.split(' ').map(|x| x.parse().unwrap()).collect())
        .collect();
    assert!((2..=4).contains(&lines.len()), "{:?}", files[0].1);
    let mut logged = 0.0;
    for (k, f) in lines.iter().enumerate() {
        // interval_start num_transactions sum_latency sum_latency_2
        // min_latency max_latency sum_lag sum_lag_2 min_lag max_lag
        // skipped retried retries serialization_failures deadlock_failures
        assert_eq!(f.len(), 15, "{f:?}");
        assert_eq!(f[0], lines[0][0] + k as f64, "consecutive seconds");
        assert!(f[1] > 0.0 && f[4] <= f[5] && f[2] >= f[1] * f[4], "{f:?}");
        assert!(f[3] >= f[2] * f[2] / f[1] * 0.999, "sum of squares: {f:?}");
        assert!(f[6..].iter().all(|x| *x == 0.0), "{f:?}");
        logged += f[1];
    }
    // The interval still running at the end is not written.
    assert!(
        logged <= processed as f64 && logged > 0.0,
        "{logged} of {processed}"
    );
}
