//! End to end: `isobench run` against the managed server it starts.

use crate::common;

use common::*;

/// Issue #2: contention at scale 1 with 8 clients yields retries under
/// repeatable read and serializable and none under read committed; the
/// invariants hold in every run; results.json validates against its
/// schema; report.md has a row per cell; the managed server is gone.
#[test]
fn contention_retries_invariants_schema_report_cleanup() {
    let (_keep, dir) = out_dir("contention");
    // 3 s: SIRead locks are sampled once a second, and one CI run's
    // 2 s window under load caught none in its samples.
    let ran = Study::short()
        .duration("3s")
        .warmup("500ms")
        .sample_interval("1s")
        .out(&dir)
        .args(&["--scale", "1", "--clients", "8", "--isolation", "rc,rr,ser"])
        .run();
    let (out, _stdout, stderr) = (ran.out, ran.stdout, ran.stderr);
    assert!(out.status.success(), "isobench failed: {stderr}");
    let r = read_json(&dir);
    assert_schema_valid(&r);
    assert_eq!(r["complete"], true);
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    for run in runs {
        let iso = run["cell"]["isolation"].as_str().unwrap();
        let retries = run["retries"].as_u64().unwrap();
        assert!(
            run["committed"].as_u64().unwrap() > 50,
            "{iso}: too few commits: {}",
            run["committed"]
        );
        assert!(run["tps"].as_f64().unwrap() > 0.0);
        match iso {
            "read-committed" => assert_eq!(retries, 0, "rc must not retry"),
            _ => assert!(
                retries > 0,
                "{iso}: expected serialization-failure retries at scale 1 with 8 clients"
            ),
        }
        for inv in run["invariants"].as_array().unwrap() {
            assert_eq!(
                inv["ok"], true,
                "{iso}: invariant {} violated: {}",
                inv["name"], inv["detail"]
            );
        }
        assert_eq!(run["invariants"].as_array().unwrap().len(), 2);
        let lat = &run["latency_ms"];
        assert!(
            lat["p50"].as_f64().unwrap() > 0.0
                && lat["p99"].as_f64().unwrap() >= lat["p50"].as_f64().unwrap()
        );
        assert!(!run["per_second"].as_array().unwrap().is_empty());
        let server = &run["server"];
        let stat = server["stat_database"].as_array().unwrap();
        assert!(!stat.is_empty(), "no pg_stat_database interval");
        assert!(
            stat.iter()
                .any(|s| s["rate"]["xact_commit"].as_f64().unwrap() > 0.0)
        );
        assert!(server["wait_events"]["samples"].as_u64().unwrap() >= 1);
        assert_eq!(server["plans"].as_array().unwrap().len(), 5);
        if iso == "serializable" {
            assert!(server["siread_locks"]["samples"].as_u64().unwrap() >= 2);
            assert!(
                !server["siread_locks"]["by_granularity"]
                    .as_object()
                    .unwrap()
                    .is_empty(),
                "no SIRead locks seen under serializable"
            );
        }
    }
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    for iso in ["rc", "rr", "ser"] {
        let rows = report
            .lines()
            .filter(|l| l.starts_with('|') && l.contains(&format!("| {iso} ")))
            .count();
        assert!(rows >= 1, "report.md has no row for {iso}:\n{report}");
    }
    let log = std::fs::read_to_string(dir.join("server.log")).unwrap();
    assert!(
        log.contains("database system is ready to accept connections"),
        "{log}"
    );
    assert_managed_server_gone(&r);
}

/// Issue #17: serialization failures by reason. TPC-B at scale 1 with 16
/// clients under serializable fails with 40001; results.json and the store
/// count the failed attempts by the reason PostgreSQL's DETAIL gave (a
/// pivot among them) and by statement (TPC-B's statement labels); the
/// given-up transactions per SQLSTATE add up to the failures; report.md
/// shows the table and the dominant reason as a finding.
#[test]
fn serialization_failures_by_reason() {
    let (_keep, dir) = out_dir("reasons");
    let ran = Study::short()
        .duration("3s")
        .warmup("500ms")
        .out(&dir)
        .args(&["--scale", "1", "--clients", "16", "--isolation", "ser"])
        .run();
    let (out, _stdout, stderr) = (ran.out, ran.stdout, ran.stderr);
    assert!(out.status.success(), "isobench failed: {stderr}");
    let r = read_json(&dir);
    assert_schema_valid(&r);
    let run = &r["runs"][0];
    let reasons: Vec<&serde_json::Value> = run["transactions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["failure_reasons"].as_array().into_iter().flatten())
        .collect();
    assert!(
        reasons.iter().any(|f| f["sqlstate"] == "40001"
            && f["reason"].as_str().is_some_and(|s| s.contains("pivot"))),
        "no pivot reason among {reasons:#?}"
    );
    let labels = [
        "update account",
        "select account",
        "update teller",
        "update branch",
        "insert history",
        "COMMIT",
    ];
    for f in &reasons {
        let s = f["statement"].as_str();
        assert!(s.is_some_and(|s| labels.contains(&s)), "{f}");
        assert!(
            !f["reason"]
                .as_str()
                .unwrap_or("")
                .contains(char::is_numeric),
            "{f}"
        );
    }
    for (code, n) in run["failed"].as_object().unwrap() {
        let gave_up: u64 = reasons
            .iter()
            .filter(|f| f["sqlstate"] == code.as_str())
            .map(|f| f["failed"].as_u64().unwrap())
            .sum();
        assert_eq!(gave_up, n.as_u64().unwrap(), "{code}");
    }
    let pivots: i64 = rusqlite::Connection::open(dir.join("results.sqlite"))
        .unwrap()
        .query_row(
            "SELECT count(*) FROM run_failure_reasons WHERE sqlstate = '40001' AND reason LIKE '%pivot%'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert!(pivots > 0, "no pivot reason in the store");
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("## Failures by reason"), "{report}");
    assert!(
        report.lines().any(|l| l.starts_with("| isolation=ser")
            && l.contains("| 40001 |")
            && l.contains("pivot")),
        "{report}"
    );
    let findings = &report[report.find("## Findings").expect("a Findings section")..];
    let findings = &findings[..findings.find("\n## ").unwrap_or(findings.len())];
    assert!(
        findings.contains("of serialization failures ("),
        "{findings}"
    );
    assert_managed_server_gone(&r);
}

/// Bad flag values exit non-zero (2) naming the option; nothing starts.
#[test]
fn bad_flags_name_the_option() {
    for (args, option) in [
        (&["run", "--clients", "0"][..], "--clients"),
        (&["run", "--isolation", "bogus"][..], "--isolation"),
        (&["run", "--duration", "-1s"][..], "--duration"),
        (&["run", "--scale", "0"][..], "--scale"),
        (&["run", "--max-tries", "0"][..], "--max-tries"),
    ] {
        let (out, _, stderr) = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(option), "{args:?}: {stderr}");
    }
}

/// Errors that need the environment: missing binaries, an unreachable
/// external server (whose password must never be printed), a used --out.
#[test]
fn environment_errors_are_one_line_and_redacted() {
    let (_keep, dir) = out_dir("err");
    let (out, _, stderr) = run(&[
        "run",
        "--pg-bin",
        "/nonexistent/bin",
        "--quiet",
        "--out",
        dir.to_str().unwrap(),
    ]);
    // A directory without a server is bad input, refused as the flag is
    // parsed.
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--pg-bin") && stderr.contains("/nonexistent/bin"),
        "{stderr}"
    );

    let (_keep2, dir2) = out_dir("refused");
    let (out, _, stderr) = run(&[
        "run",
        "--dsn",
        "postgres://bob:hunter2secret@127.0.0.1:1/db",
        "--quiet",
        "--out",
        dir2.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot connect"), "{stderr}");
    assert!(stderr.to_lowercase().contains("refused"), "{stderr}");
    assert!(
        !stderr.contains("hunter2secret"),
        "password printed: {stderr}"
    );
}

/// Issue #17, end to end: a default-like study (TPC-B at scale 10, 16
/// clients, read committed and serializable) whose cells also differ in
/// `enable_indexscan`, so that each statement's plan differs between
/// cells for certain. report.md opens with Findings that say why
/// SERIALIZABLE cost what it cost (its dominant serialization-failure
/// reason and statement) and that the cells' plans differ; the terminal
/// summary prints their headlines; the run records the host's CPU and the
/// plans at the end of the window.
#[test]
fn a_default_like_study_explains_itself_in_findings() {
    let (_keep, dir) = out_dir("findings");
    let study = dir.with_extension("toml");
    std::fs::write(
        &study,
        "scale = 10\nisolation = [\"rc\", \"ser\"]\nclients = 16\nrepeat = 1\n\
         duration = \"3s\"\nwarmup = \"500ms\"\n\
         [factors.settings]\nenable_indexscan = [\"on\", \"off\"]\n",
    )
    .unwrap();
    let (out, stdout, stderr) = run(&[
        "run",
        study.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "isobench failed: {stderr}");
    let r = read_json(&dir);
    assert_schema_valid(&r);

    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    // Issue #31: the headlines first (one per ser cell, against rc at
    // the same enable_indexscan), then Cells, then Findings.
    let section = |title: &str| {
        let from = report
            .find(&format!("\n## {title}\n"))
            .unwrap_or_else(|| panic!("no {title}:\n{report}"))
            + 1;
        let rest = &report[from..];
        &rest[..rest[3..].find("\n## ").map_or(rest.len(), |l| l + 3)]
    };
    let first = report.find("\n## ").map(|i| &report[i + 4..]).unwrap();
    assert!(
        first.starts_with("Headlines\n"),
        "Headlines must come first:\n{report}"
    );
    // The terminal wraps at its width (100 into a pipe): continuation
    // lines, indented by two, joined back.
    let unwrapped = stdout.replace("\n  ", " ");
    let headlines: Vec<&str> = section("Headlines")
        .lines()
        .filter_map(|l| l.strip_prefix("- "))
        .collect();
    assert_eq!(headlines.len(), 2, "{headlines:#?}");
    for h in &headlines {
        assert!(
            h.starts_with("ser · enable_indexscan=") && h.contains(" TPS vs rc ("),
            "{h}"
        );
        // The terminal prints them first too.
        assert!(unwrapped.lines().any(|l| l == *h), "{h}\n{stdout}");
    }
    assert!(
        report.find("\n## Cells\n").unwrap() < report.find("\n## Findings\n").unwrap(),
        "{report}"
    );
    let findings = section("Findings");
    let ser = findings
        .lines()
        .find(|l| l.contains("of serialization failures ("))
        .unwrap_or_else(|| panic!("no failure-reason finding:\n{findings}"));
    assert!(
        ser.contains("ser") && ser.contains(", at `") || ser.contains(" of them at `"),
        "{ser}"
    );
    assert!(
        findings.contains("ran with 2 different plans"),
        "no plan finding although enable_indexscan differs:\n{findings}"
    );
    assert!(report.contains("## Failures by reason"), "{report}");
    // The findings under the terminal table, in the report's order
    // (the throughput cost is in the headlines there).
    let first = findings
        .lines()
        .filter_map(|l| l.strip_prefix("- "))
        .find(|l| !l.contains(" TPS vs "))
        .expect("a finding");
    let first = &first[..first.find(" Try: ").unwrap_or(first.len())];
    assert!(
        unwrapped.lines().any(|l| l == format!("finding: {first}")),
        "{stdout}"
    );
    for run in r["runs"].as_array().unwrap() {
        let cpu = &run["host_cpu"];
        let busy = cpu["busy_pct"].as_f64().unwrap_or(-1.0);
        assert!((0.0..=100.0).contains(&busy), "{cpu}");
        assert!(run["server"]["plan_changes"].is_array(), "{run}");
    }
    assert_managed_server_gone(&r);
}

/// Every run writes `histograms/run-N.hlog`, an HdrHistogram interval log
/// (one interval a second, tagged by transaction type): read back with the
/// `hdrhistogram` crate's own interval-log reader, its intervals add up to
/// exactly the run's stored latency histogram.
#[test]
fn interval_logs_add_up_to_the_stored_histograms() {
    use base64::Engine;
    use hdrhistogram::serialization::Deserializer;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let (_keep, dir) = out_dir("hlog");
    let ran = Study::short()
        .duration("2s")
        .out(&dir)
        .args(&[
            "-w",
            "tpcb",
            "-s",
            "1",
            "-c",
            "2",
            "--isolation",
            "rc",
            "--observe",
            "none",
        ])
        .run();
    let (out, _, stderr) = (ran.out, ran.stdout, ran.stderr);
    assert!(out.status.success(), "{stderr}");
    let r = read_json(&dir);
    let decode = |s: &str| -> hdrhistogram::Histogram<u64> {
        let raw = base64::engine::general_purpose::STANDARD.decode(s).unwrap();
        Deserializer::new()
            .deserialize(&mut raw.as_slice())
            .unwrap()
    };
    let stored = decode(
        r["runs"][0]["transactions"][0]["latency_histogram"]
            .as_str()
            .unwrap(),
    );
    let bytes = std::fs::read(dir.join("histograms/run-1.hlog")).expect("histograms/run-1.hlog");
    let mut merged = hdrhistogram::Histogram::<u64>::new(3).unwrap();
    let mut intervals = 0;
    for e in IntervalLogIterator::new(&bytes) {
        let LogEntry::Interval(i) = e.expect("a valid interval log") else {
            continue;
        };
        assert_eq!(i.tag().map(|t| t.as_str()), Some("tpcb-like"));
        merged.add(decode(i.encoded_histogram())).unwrap();
        intervals += 1;
    }
    assert!(intervals >= 2, "{intervals} intervals in a 2 s window");
    assert_eq!(merged.len(), stored.len());
    assert_eq!(merged.len(), r["runs"][0]["committed"].as_u64().unwrap());
    for q in [0.5, 0.9, 0.99, 1.0] {
        assert_eq!(
            merged.value_at_quantile(q),
            stored.value_at_quantile(q),
            "q {q}"
        );
    }
}
