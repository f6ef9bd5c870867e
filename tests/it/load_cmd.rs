//! External loads as a study's driver, end to end against the managed
//! server: pgbench as the load command in a 2 x 2 study, the life cycle of
//! before_run / ready / after_run, failing commands with on_error, and
//! template errors before anything runs (issue #7).

use crate::common;

use common::*;

fn pgbench() -> String {
    isobench::postgres::find_bin_dir(None)
        .expect("PostgreSQL binaries")
        .join("pgbench")
        .display()
        .to_string()
}

fn write(dir: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn pid_alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.contains(") Z "))
        .unwrap_or(false)
}

/// clients x synchronous_commit, pgbench as the load: its summary parsed
/// into every run, the server observed while it ran, and the application
/// stand-in started by before_run stopped after the run.
#[test]
fn pgbench_as_the_external_load_of_a_2x2_study() {
    let (base, dir) = out_dir("pgbench-2x2");
    let marks = base.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let study = write(
        base.path(),
        "study.toml",
        &format!(
            r#"setup_cmd = "{pgbench} -i -q -s 1 {{dsn}}"
load_cmd = "{pgbench} -n -c {{clients}} -T {{duration_s}} --max-tries 3 --failures-detailed {{dsn}}"
before_run = "sleep 60 & echo $! > {marks}/app-{{run}}.pid"
ready = "test -s {marks}/app-{{run}}.pid"
after_run = "echo clients={{clients}} sc={{synchronous_commit}} db=$PGDATABASE > {marks}/after-{{run}}.txt"
repeat = 1
duration = "2s"
sample_interval = "500ms"
clients = [1, 2]
[settings]
synchronous_commit = ["on", "off"]
"#,
            pgbench = pgbench(),
            marks = marks.display()
        ),
    );
    let ran = run_file(&study, &dir, &[]);
    let (out, stdout, stderr) = (ran.out, ran.stdout, ran.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("synchronous_commit"), "{stdout}");
    let r = read_json(&dir);
    assert_schema_valid(&r);
    assert_eq!(r["complete"], true);
    assert_eq!(r["config"]["workload"], "external");
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    let mut cells = std::collections::BTreeSet::new();
    for run in runs {
        let i = run["index"].as_u64().unwrap();
        let load = &run["load"];
        assert_eq!(run["complete"], true, "{run}");
        assert_eq!(run["cell"]["isolation"], "read-committed");
        assert_eq!(load["format"], "pgbench");
        assert_eq!(load["exit_code"], 0);
        let f = &load["figures"];
        assert_eq!(f["unit"], "tx/s");
        let tps = f["throughput"].as_f64().unwrap();
        assert!(tps > 10.0, "run {i}: {f}");
        assert_eq!(run["tps"].as_f64().unwrap(), tps);
        assert!(f["count"].as_u64().unwrap() > 10);
        assert_eq!(run["committed"], f["count"]);
        assert!(f["latency_mean_ms"].as_f64().unwrap() > 0.0);
        assert_eq!(f["failed"], 0);
        let clients = run["cell"]["clients"].as_u64().unwrap();
        let sc = run["cell"]["settings"]["synchronous_commit"]
            .as_str()
            .unwrap();
        assert_eq!(run["server_settings"]["synchronous_commit"], sc);
        let cmd = load["command"].as_str().unwrap();
        assert!(cmd.contains(&format!("-c {clients} -T 2 ")), "{cmd}");
        cells.insert((clients, sc.to_string()));
        // The server was observed while pgbench ran: its commits counted.
        let commits: u64 = run["server"]["stat_database"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["delta"]["xact_commit"].as_u64().unwrap_or(0))
            .sum();
        assert!(commits > 10, "run {i}: {commits} commits observed");
        // before_run's background process lived until the run ended.
        let pid: i32 = std::fs::read_to_string(marks.join(format!("app-{i}.pid")))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            !pid_alive(pid),
            "before_run's process {pid} outlived run {i}"
        );
        let after = std::fs::read_to_string(marks.join(format!("after-{i}.txt"))).unwrap();
        assert!(
            after.starts_with(&format!("clients={clients} sc={sc} db=isobench_run_")),
            "{after}"
        );
        assert!(run["load"]["ready_s"].as_f64().is_some());
        let out_dir = dir.join(run["load"]["output_dir"].as_str().unwrap());
        let summary = std::fs::read_to_string(out_dir.join("load.out")).unwrap();
        assert!(summary.contains("tps = "), "{summary}");
    }
    assert_eq!(cells.len(), 4);
    // The setup ran once per server start (two settings, one start each).
    assert!(base.path().join("pgbench-2x2/load/setup-0.out").exists());
    // The store reads back into the same report.
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("## External load"), "{md}");
    assert!(md.contains("serialization failures"), "{md}");
    std::fs::remove_file(dir.join("report.md")).unwrap();
    let (out, _, stderr) = run(&["report", dir.to_str().unwrap(), "--format", "md"]);
    assert!(out.status.success(), "{stderr}");
    let again = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert_eq!(
        again
            .split("## External load")
            .nth(1)
            .map(|s| s.split("\n## ").next()),
        md.split("## External load")
            .nth(1)
            .map(|s| s.split("\n## ").next())
    );
    assert_managed_server_gone(&r);
}

/// A failing command with on_error = continue: every run is kept,
/// incomplete, with the reason; with stop: the first failure ends the
/// study, its run saved. Output that is not the format's is a failure too.
#[test]
fn failed_commands_continue_or_stop_as_chosen() {
    let (_base, dir) = out_dir("continue");
    let (out, _, stderr) = run(&[
        "run",
        "--load-cmd",
        "echo about to fail; echo broken >&2; exit 3",
        "--on-error",
        "continue",
        "--clients",
        "1,2",
        "--repeat",
        "1",
        "--duration",
        "1s",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("2 run(s) failed"), "{stderr}");
    let r = read_json(&dir);
    assert_schema_valid(&r);
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for run in runs {
        assert_eq!(run["complete"], false);
        assert_eq!(run["load"]["exit_code"], 3);
        assert_eq!(run["load"]["format"], "command");
        let e = run["errors"][0].as_str().unwrap();
        assert!(
            e.contains("exited with status 3") && e.contains("broken"),
            "{e}"
        );
    }

    let (_base, dir) = out_dir("stop");
    let (out, _, stderr) = run(&[
        "run",
        "--load-cmd",
        "echo not a summary",
        "--load-format",
        "pgbench",
        "--clients",
        "1,2",
        "--repeat",
        "1",
        "--duration",
        "1s",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(stderr.contains("run 1 (isolation=rc clients=1"), "{stderr}");
    assert!(
        stderr.contains("is not pgbench's: no 'tps = ' line"),
        "{stderr}"
    );
    assert!(stderr.contains("--on-error continue"), "{stderr}");
    let r = read_json(&dir);
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "the study stopped after the failed run");
    assert_eq!(runs[0]["complete"], false);
    assert_eq!(runs[0]["load"]["exit_code"], 0);
    assert_managed_server_gone(&r);
}

/// Template mistakes are reported before any server starts.
#[test]
fn template_errors_come_before_anything_runs() {
    let (base, dir) = out_dir("bad");
    for (args, wanted) in [
        (
            vec!["--load-cmd", "pgbench -c {clinets} {dsn}"],
            "load_cmd: unknown placeholder {clinets} (offset 11); known: ",
        ),
        (
            vec![
                "--load-cmd",
                "x",
                "--before-run",
                "./app --pool {pool_size}",
            ],
            "before_run: placeholder {pool_size} (offset 13) has no value: pool_size is not a factor",
        ),
        (
            vec!["--load-cmd", "awk '{print $1}'"],
            "is not a placeholder",
        ),
    ] {
        let mut full = vec!["run", "--out", dir.to_str().unwrap()];
        full.extend(args);
        let (out, _, stderr) = run(&full);
        assert!(!out.status.success(), "{stderr}");
        assert!(stderr.contains(wanted), "{stderr}");
        assert!(!stderr.contains("target:"), "a server started: {stderr}");
        assert!(!dir.join("results.sqlite").exists());
    }
    let study = write(
        base.path(),
        "bad.toml",
        "clients = [1, 2]\nload_cmd = \"pgbench -c {clients\"\n",
    );
    let (out, _, stderr) = run(&["run", study.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(
        stderr.contains(&format!(
            "{}:2:12: load_cmd: '{{' at offset 11 is not closed",
            study.display()
        )),
        "{stderr}"
    );
    let study = write(
        base.path(),
        "both.toml",
        "workload = \"tpcb\"\nload_cmd = \"pgbench\"\n",
    );
    let (out, _, stderr) = run(&["run", study.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(
        stderr.contains("both.toml:2:12: load_cmd: an external load replaces the workload"),
        "{stderr}"
    );
}
