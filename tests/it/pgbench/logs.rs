//! `-l`: pgbench 15's transaction log files (`PREFIX.PID`, `PREFIX.PID.N`
//! for thread N), their lines read back field by field, per transaction
//! and aggregated; several scripts' `SQL script N:` blocks, whose counts
//! the log lines confirm; `-r`'s latencies, which leave failed executions
//! out as pgbench's do.

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
            "3",
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
    // client_id transaction_no time script_no time_epoch time_us retries;
    // clients dealt to the threads in blocks as pgbench deals them: 3 over
    // 2 threads are clients 0 and 1, then client 2.
    for (thread, (_, text)) in files.iter().enumerate() {
        let lines: Vec<&str> = text.lines().collect();
        let clients: &[u64] = if thread == 0 { &[0, 1] } else { &[2] };
        assert_eq!(lines.len(), 6 * clients.len(), "{text}");
        for c in clients {
            let numbers: Vec<u64> = lines
                .iter()
                .filter(|l| l.starts_with(&format!("{c} ")))
                .map(|l| l.split(' ').nth(1).unwrap().parse().unwrap())
                .collect();
            assert_eq!(numbers, (1..=6).collect::<Vec<u64>>(), "client {c}: {text}");
        }
        for line in &lines {
            let f: Vec<u64> = line.split(' ').map(|x| x.parse().unwrap()).collect();
            assert_eq!(f.len(), 7, "{line}");
            assert!(clients.contains(&f[0]), "{line}: thread {thread}");
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

/// The `SQL script N:` blocks of `stdout`, each as its text.
fn script_blocks(stdout: &str) -> Vec<String> {
    let mut blocks: Vec<String> = Vec::new();
    for line in stdout.lines() {
        if line.starts_with("SQL script ") {
            blocks.push(String::new());
        } else if !line.starts_with(" - ") {
            continue;
        }
        if let Some(b) = blocks.last_mut() {
            b.push_str(line);
            b.push('\n');
        }
    }
    blocks
}

/// A count in `block` after `label` (`" - number of ...: "`).
fn count(block: &str, label: &str) -> u64 {
    let re = Regex::new(&format!(r"(?m)^ - {}: ([0-9]+)", regex::escape(label))).unwrap();
    re.captures(block)
        .unwrap_or_else(|| panic!("no {label} in:\n{block}"))[1]
        .parse()
        .unwrap()
}

/// `-r`'s latency of a command is over the executions that completed, as
/// pgbench's (it records a command's time only when the command ends
/// without error): a command that fails after 60 ms half of the time and
/// otherwise returns at once shows a mean far below 60 ms, where counting
/// its failed executions would put it above 30 ms.
#[test]
fn per_command_latency_leaves_failed_executions_out() {
    let (_keep, dir) = out_dir("pgbench-r-failed");
    let db = Named::start(&dir);
    let slow_failure = script(
        &dir,
        "slow-failure.sql",
        "\\set r random(0, 1)\n\
         DO $$ BEGIN IF :r = 0 THEN PERFORM pg_sleep(0.06); \
         RAISE EXCEPTION 'slow failure' USING ERRCODE = '40001'; END IF; END $$;\n",
    );
    let (out, stdout, stderr) = db.run_env(
        &dir,
        &[
            "-n",
            "-r",
            "-t",
            "20",
            "--max-tries",
            "2",
            "-f",
            &slow_failure,
        ],
        &[],
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let failed: u64 = Regex::new(r"(?m)^number of failed transactions: ([0-9]+)")
        .unwrap()
        .captures(&stdout)
        .unwrap_or_else(|| panic!("no failed transactions line: {stdout}"))[1]
        .parse()
        .unwrap();
    assert!(failed > 0, "no transaction drew r = 0: {stdout}");
    let line = stdout
        .lines()
        .find(|l| l.trim_end().ends_with("END IF; END $$;"))
        .unwrap_or_else(|| panic!("no -r line for the DO command: {stdout}"));
    let mean_ms: f64 = line.split_whitespace().next().unwrap().parse().unwrap();
    assert!(
        mean_ms < 15.0,
        "the failed executions' 60 ms counted in the mean: {line}\n{stdout}"
    );
}

/// Several scripts: each `SQL script N:` block has pgbench 15's retried,
/// retries and skipped lines, with that script's counts (a script that
/// always raises 40001 retried every transaction twice, one that never
/// fails none); a skipped transaction's log line names the script it was
/// chosen for, and the blocks' skips add up to the total.
#[test]
fn script_blocks_count_retries_and_skips_by_script() {
    let (_keep, dir) = out_dir("pgbench-blocks");
    let db = Named::start(&dir);
    // pgbench 15's blocks, whatever the server (pg18.rs has 18's).
    let v15 = [("ISOBENCH_PGBENCH", "15")];
    let fail = script(
        &dir,
        "fail.sql",
        "DO $$ BEGIN RAISE EXCEPTION 'boom' USING ERRCODE = '40001'; END $$;\n",
    );
    let ok = script(&dir, "ok.sql", "SELECT 1;\n");
    let (out, stdout, stderr) = db.run_env(
        &dir,
        &["-n", "-t", "40", "--max-tries", "3", "-f", &fail, "-f", &ok],
        &v15,
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let blocks = script_blocks(&stdout);
    assert_eq!(blocks.len(), 2, "{stdout}");
    let failed = count(&blocks[0], "number of failed transactions");
    assert!(failed > 0, "{stdout}");
    assert!(blocks[0].contains(" - 0 transactions"), "{stdout}");
    assert_eq!(count(&blocks[0], "number of transactions retried"), failed);
    assert_eq!(count(&blocks[0], "total number of retries"), 2 * failed);
    assert!(
        blocks[0].contains(&format!(
            " - number of transactions retried: {failed} (100.000%)\n"
        )),
        "{stdout}"
    );
    assert_eq!(count(&blocks[1], "number of failed transactions"), 0);
    assert_eq!(count(&blocks[1], "number of transactions retried"), 0);
    assert_eq!(count(&blocks[1], "total number of retries"), 0);
    assert!(
        stdout.contains(&format!("processed: {}/40\n", 40 - failed)),
        "{stdout}"
    );
    assert!(
        !stdout.contains(" - number of transactions skipped"),
        "{stdout}"
    );

    // -R far above what one client can do, with a 1 µs limit: most
    // transactions are skipped.
    let (out, stdout, stderr) = db.run_env(
        &dir,
        &[
            "-n",
            "-t",
            "60",
            "-R",
            "100000",
            "-L",
            "0.001",
            "-l",
            "--log-prefix=skips",
            "-f",
            &ok,
            "-f",
            &ok,
        ],
        &v15,
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let blocks = script_blocks(&stdout);
    assert_eq!(blocks.len(), 2, "{stdout}");
    let total = Regex::new(r"(?m)^number of transactions skipped: ([0-9]+) ")
        .unwrap()
        .captures(&stdout)
        .unwrap_or_else(|| panic!("{stdout}"))[1]
        .parse::<u64>()
        .unwrap();
    let by_script: Vec<u64> = blocks
        .iter()
        .map(|b| count(b, "number of transactions skipped"))
        .collect();
    assert!(total > 10, "{stdout}");
    assert_eq!(by_script.iter().sum::<u64>(), total, "{stdout}");
    // client_id transaction_no skipped script_no time_epoch time_us lag
    let files = log_files(&dir, "skips");
    let mut logged = [0u64; 2];
    for line in files[0]
        .1
        .lines()
        .filter(|l| l.split(' ').nth(2) == Some("skipped"))
    {
        let script: usize = line.split(' ').nth(3).unwrap().parse().unwrap();
        logged[script] += 1;
    }
    assert_eq!(logged.to_vec(), by_script, "{}", files[0].1);
}
