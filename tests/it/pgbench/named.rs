//! `isobench pgbench` on a named server: the run is in DBNAME itself, on
//! its own tables and functions, as pgbench's is; `--fresh-copy` keeps
//! DBNAME as it was; pgbench's outcomes and lines for aborted clients,
//! retried errors (`--verbose-errors`), `-d` and `-C`.

use super::*;

/// A custom script over a table and a function the user made: the run
/// changes them, exactly as many times as its transactions; nothing on
/// stderr with -n; built-in scripts read the scale of DBNAME's tables;
/// with --fresh-copy DBNAME is left as it was.
#[test]
fn runs_in_dbname_itself_on_its_own_tables_and_functions() {
    let (_keep, dir) = out_dir("pgbench-in-place");
    let db = Named::start(&dir);
    db.sql(
        "CREATE TABLE counter (n int); INSERT INTO counter VALUES (0);
         CREATE FUNCTION bump() RETURNS int LANGUAGE sql AS 'UPDATE counter SET n = n + 1 RETURNING n';",
    );
    let s = script(&dir, "bump.sql", "SELECT bump();\n");
    let (out, stdout, stderr) = db.run(&dir, &["-n", "-c", "3", "-t", "7", "-f", &s]);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stderr, "");
    assert!(
        stdout.contains("number of transactions actually processed: 21/21\n"),
        "{stdout}"
    );
    assert_eq!(
        db.sql("SELECT n FROM counter"),
        vec![vec!["21".to_string()]]
    );
    // isobench's results of the run, where the last line says.
    let json = read_json(&dir.join(results_dir(&stdout)));
    assert_eq!(json["runs"][0]["committed"].as_u64(), Some(21));

    let (out, _, stderr) = db.run(&dir, &["-i", "-s", "2", "-q"]);
    assert!(out.status.success(), "{stderr}");
    let (out, stdout, stderr) = db.run(&dir, &["-N", "-t", "5", "-s", "9"]);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("scaling factor: 2\n"), "{stdout}");
    assert!(
        stderr.contains("pgbench: warning: scale option ignored, using count from pgbench_branches table (2)\nstarting vacuum...end.\n"),
        "{stderr}"
    );
    assert_eq!(
        db.sql("SELECT count(*) FROM pgbench_history"),
        vec![vec!["5".to_string()]]
    );
    let (out, stdout, stderr) = db.run(&dir, &["-N", "-t", "5", "--fresh-copy"]);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("processed: 5/5"), "{stdout}");
    assert_eq!(
        db.sql("SELECT count(*) FROM pgbench_history"),
        vec![vec!["5".to_string()]]
    );
}

/// A script's run-time error and an SQL error pgbench does not retry abort
/// the client: pgbench's lines, the summary, exit status 2.
#[test]
fn aborted_clients_exit_2_after_the_summary() {
    let (_keep, dir) = out_dir("pgbench-abort");
    let db = Named::start(&dir);
    let s = script(&dir, "div.sql", "\\set i 1/0\n");
    let (out, stdout, stderr) = db.run(&dir, &["-n", "-t", "1", "-f", &s]);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stdout.contains("number of transactions actually processed: 0/1\n"),
        "{stdout}"
    );
    assert_eq!(
        stderr,
        "pgbench: error: division by zero\n\
         pgbench: error: client 0 aborted in command 0 (set) of script 0; evaluation of meta-command failed\n\
         pgbench: error: Run was aborted; the above results are incomplete.\n"
    );
    // A variable name is checked when the variable is first defined, by
    // `\setshell` as by `\set` (pgbench's `lookupCreateVariable`).
    let s = script(&dir, "shell.sql", "\\setshell a-b echo 1\n");
    let (out, _, stderr) = db.run(&dir, &["-n", "-t", "1", "-f", &s]);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr,
        "pgbench: error: setshell: invalid variable name: \"a-b\"\n\
         pgbench: error: client 0 aborted in command 0 (setshell) of script 0; execution of meta-command failed\n\
         pgbench: error: Run was aborted; the above results are incomplete.\n"
    );
    let s = script(&dir, "nope.sql", "SELECT 1;\nSELECT * FROM nope;\n");
    // As pgbench 15 prints it (pgbench 18 stops after "processed").
    let (out, stdout, stderr) = db.run_env(
        &dir,
        &["-n", "-t", "3", "-M", "extended", "-f", &s],
        &[("ISOBENCH_PGBENCH", "15")],
    );
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stdout.contains("processed: 0/3\nnumber of failed transactions: 0 "),
        "{stdout}"
    );
    assert!(
        stderr.starts_with("pgbench: error: client 0 script 0 aborted in command 1 query 0: ERROR:  relation \"nope\" does not exist\n"),
        "{stderr}"
    );
    // A transaction block left open: counted, then the client aborts.
    let s = script(&dir, "open.sql", "BEGIN;SELECT 1;");
    let (out, stdout, stderr) = db.run(&dir, &["-n", "-t", "5", "-f", &s]);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stdout.contains("processed: 1/5\n"), "{stdout}");
    assert!(
        stderr.contains("pgbench: error: client 0 aborted: end of script reached without completing the last transaction\n"),
        "{stderr}"
    );
}

/// A serialization failure on every try (SQLSTATE 40001 raised by the
/// script itself): `--verbose-errors`' lines for each try, the
/// transaction failed after `--max-tries`, counted as pgbench counts it.
#[test]
fn retried_errors_are_said_and_counted_as_pgbench_does() {
    let (_keep, dir) = out_dir("pgbench-verbose");
    let db = Named::start(&dir);
    let s = script(
        &dir,
        "fail.sql",
        "DO $$ BEGIN RAISE EXCEPTION 'boom' USING ERRCODE = '40001'; END $$;\n",
    );
    let (out, stdout, stderr) = db.run(
        &dir,
        &[
            "-n",
            "-t",
            "2",
            "--max-tries",
            "3",
            "--verbose-errors",
            "--failures-detailed",
            "-f",
            &s,
        ],
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for line in [
        "number of transactions actually processed: 0/2\n",
        "number of failed transactions: 2 (100.000%)\n",
        "number of serialization failures: 2 (100.000%)\n",
        "number of deadlock failures: 0 (0.000%)\n",
        "number of transactions retried: 2 (100.000%)\n",
        "total number of retries: 4\n",
    ] {
        assert!(stdout.contains(line), "{line}: {stdout}");
    }
    let said = "pgbench: client 0 got an error in command 0 (SQL) of script 0; ERROR:  boom\nCONTEXT:  PL/pgSQL function inline_code_block line 1 at RAISE\n";
    assert_eq!(stderr.matches(said).count(), 6, "{stderr}");
    assert_eq!(
        stderr
            .matches("pgbench: client 0 repeats the transaction after the error (try 1/3)\n")
            .count(),
        2,
        "{stderr}"
    );
    assert_eq!(
        stderr
            .matches("pgbench: client 0 ends the failed transaction (try 3/3)\n")
            .count(),
        2,
        "{stderr}"
    );
}

/// `-d`: pgbench's debugging lines, in its words; `-C`: a connection per
/// transaction (each transaction sees a backend of its own), with
/// pgbench's `average connection time` and tps line; without it, two
/// clients use two backends and the initial connection time is measured.
#[test]
fn debug_lines_and_a_connection_per_transaction() {
    let (_keep, dir) = out_dir("pgbench-debug");
    let db = Named::start(&dir);
    let (out, _, stderr) = db.run(&dir, &["-i", "-q"]);
    assert!(out.status.success(), "{stderr}");
    let (out, stdout, stderr) =
        db.run(&dir, &["-n", "-t", "1", "-M", "prepared", "-b", "se", "-d"]);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    let at = lines
        .iter()
        .position(|l| *l == "pgbench: client 0 executing script \"<builtin: select only>\"")
        .unwrap_or_else(|| panic!("{stderr}"));
    assert_eq!(
        &lines[at..at + 5],
        [
            "pgbench: client 0 executing script \"<builtin: select only>\"",
            "pgbench: client 0 executing \\set aid",
            "pgbench: client 0 preparing P_0",
            "pgbench: client 0 sending P_0",
            "pgbench: client 0 receiving",
        ]
    );
    assert!(lines[0].starts_with("pgbench: pghost: "), "{stderr}");
    db.sql("CREATE TABLE pids (pid int)");
    let s = script(
        &dir,
        "pid.sql",
        "INSERT INTO pids SELECT pg_backend_pid();\n",
    );
    let (out, stdout, stderr) = db.run(&dir, &["-n", "-c", "2", "-t", "5", "-C", "-f", &s]);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(
        db.sql("SELECT count(DISTINCT pid) FROM pids"),
        vec![vec!["10".to_string()]]
    );
    let ms: f64 = Regex::new(r"(?m)^average connection time = ([0-9.]+) ms$")
        .unwrap()
        .captures(&stdout)
        .unwrap_or_else(|| panic!("{stdout}"))[1]
        .parse()
        .unwrap();
    assert!(ms > 0.0, "{stdout}");
    assert!(
        Regex::new(r"(?m)^tps = [0-9.]+ \(including reconnection times\)$")
            .unwrap()
            .is_match(&stdout),
        "{stdout}"
    );
    db.sql("TRUNCATE pids");
    let (out, stdout, stderr) = db.run(&dir, &["-n", "-c", "2", "-t", "5", "-f", &s]);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(
        db.sql("SELECT count(DISTINCT pid) FROM pids"),
        vec![vec!["2".to_string()]]
    );
    let ms: f64 = Regex::new(r"(?m)^initial connection time = ([0-9.]+) ms$")
        .unwrap()
        .captures(&stdout)
        .unwrap_or_else(|| panic!("{stdout}"))[1]
        .parse()
        .unwrap();
    assert!(ms > 0.0, "{stdout}");
}

/// pgbench's `:scale` for a custom script: `-s`, else 1, whatever the
/// tables' scale (a built-in script's is the count of pgbench_branches).
#[test]
fn custom_scripts_get_dash_s_or_1_as_scale() {
    let (_keep, dir) = out_dir("pgbench-scale");
    let db = Named::start(&dir);
    let (out, _, stderr) = db.run(&dir, &["-i", "-s", "2", "-q"]);
    assert!(out.status.success(), "{stderr}");
    let s = script(
        &dir,
        "scale.sql",
        "\\if :scale != :want\nSELECT 1/0;\n\\endif\nSELECT abalance FROM pgbench_accounts WHERE aid = 1;\n",
    );
    for (extra, want) in [
        (vec!["-D", "want=1"], "1"),
        (vec!["-s", "3", "-D", "want=3"], "3"),
    ] {
        let mut args = vec!["-n", "-t", "3", "-f", s.as_str()];
        args.extend(extra);
        let (out, stdout, stderr) = db.run(&dir, &args);
        assert!(out.status.success(), "{stdout}\n{stderr}");
        assert!(
            stdout.contains(&format!("scaling factor: {want}\n")),
            "{stdout}"
        );
        assert!(
            stdout.contains(&format!("transaction type: {s}\n")),
            "{stdout}"
        );
        assert!(stdout.contains("processed: 3/3\n"), "{stdout}");
    }
}
