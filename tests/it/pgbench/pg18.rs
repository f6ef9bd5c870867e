//! pgbench 17 and 18 in `isobench pgbench` (PostgreSQL 18.6's own pgbench
//! tests run by `tests/pgbench-tap.sh 18`; these pin on the installed
//! server what they check, and what issue #49 found): a run whose
//! clients all aborted, `--exit-on-abort`, the server's notices and
//! warnings, a server error's `LINE n:`, pipelines (`\syncpipeline`, a
//! script that ends with one open, SERIALIZABLE in a prepared one), the
//! COPY refusal, and pgbench 18's own `-i` and summary
//! (`ISOBENCH_PGBENCH=18`).

use super::*;

/// Issue #49, finding 1: every client aborts (each after four
/// transactions) under `-T 60`. pgbench's threads end when their last
/// client does, and its figures are over that time; isobench ran the
/// whole minute and divided by it (tps 3.33 where pgbench said 38.9).
#[test]
fn issue49_a_run_whose_clients_all_abort_ends_then() {
    let (_keep, dir) = out_dir("pgbench-all-abort");
    let db = Named::start(&dir);
    let s = script(&dir, "abort.sql", "\\set n :n + 1\nSELECT 1/(5 - :n);\n");
    let started = std::time::Instant::now();
    let (out, stdout, stderr) = db.run(
        &dir,
        &[
            "-n", "-c", "2", "-j", "1", "-T", "60", "-D", "n=0", "-f", &s,
        ],
    );
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(took.as_secs() < 30, "ran {took:?} for 8 transactions");
    assert!(stdout.contains("duration: 60 s\n"), "{stdout}");
    let s = summary(&stdout);
    assert_eq!(s.processed, 8, "{stdout}");
    // Over the time the clients ran, not the minute asked for: a minute
    // would give 0.133 tps and 15,000 ms.
    assert!(s.tps > 1.0, "{stdout}");
    assert!(s.latency_ms < 5000.0, "{stdout}");
    assert!(
        stderr.ends_with("pgbench: error: Run was aborted; the above results are incomplete.\n"),
        "{stderr}"
    );
    // pgbench rolls back only a transaction block: no WARNING from a
    // ROLLBACK outside one.
    assert!(!stderr.contains("WARNING"), "{stderr}");
}

/// Issue #49, finding 10: `-r`'s SELECT took 0.198 ms where pgbench's
/// took 0.148 (select-only, 16 clients, `-j 1`), the transactions'
/// latencies alike. pgbench's client returns to its thread's loop after
/// each transaction and starts the next when the thread next serves it
/// (pgbench.c, `advanceConnectionState`, CSTATE_END_TX): the time the
/// thread spends on the other clients in between is in no latency.
/// isobench's client started its next transaction at once. Seen
/// without timing: two clients of one thread whose script waits for
/// nothing take turns, as pgbench's do (before, client 0 ran all its
/// transactions first), in the order `-l` logs them.
#[test]
fn issue49_each_transaction_starts_when_the_thread_serves_its_client() {
    let (_keep, dir) = out_dir("pgbench-turns");
    let db = Named::start(&dir);
    let s = script(&dir, "meta.sql", "\\set x random(1, 10)\n");
    let (out, stdout, stderr) = db.run(
        &dir,
        &[
            "-n",
            "-c",
            "2",
            "-j",
            "1",
            "-t",
            "5",
            "-l",
            "--log-prefix=turns",
            "-f",
            &s,
        ],
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let log = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("turns.")
        })
        .expect("the log file");
    let clients: Vec<String> = std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect();
    assert_eq!(clients, ["0", "1"].repeat(5), "{clients:?}");
}

/// Issue #49, finding 2: `--exit-on-abort` (pgbench 17) was refused.
/// The first client to abort ends the run: its messages, pgbench 18's
/// line naming its thread, no summary, exit status 2 (the script is 18's
/// own test's).
#[test]
fn issue49_exit_on_abort_ends_the_run_at_the_first_abort() {
    let (_keep, dir) = out_dir("pgbench-exit-on-abort");
    let db = Named::start(&dir);
    db.sql("CREATE TABLE counter(i int); INSERT INTO counter VALUES (0);");
    let s = script(
        &dir,
        "eoa.sql",
        "update counter set i = i+1 returning i \\gset\n\\if :i = 5\n\\set y 1/0\n\\endif\n",
    );
    let (out, stdout, stderr) = db.run(
        &dir,
        &[
            "-n",
            "-t",
            "10",
            "-c",
            "2",
            "-j",
            "2",
            "--exit-on-abort",
            "-f",
            &s,
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("pgbench: error: division by zero\n"),
        "{stderr}"
    );
    assert!(
        Regex::new(r"(?m)^pgbench: error: Run was aborted due to an error in thread [01]$")
            .unwrap()
            .is_match(&stderr),
        "{stderr}"
    );
    assert!(!stdout.contains("tps ="), "{stdout}");
    // Without it the other client goes on and the summary is printed.
    db.sql("UPDATE counter SET i = 0");
    let (out, stdout, stderr) = db.run(&dir, &["-n", "-t", "10", "-c", "2", "-j", "2", "-f", &s]);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stdout.contains("tps ="), "{stdout}");
    assert!(!stderr.contains("due to an error in thread"), "{stderr}");
    // A benchmarking option: refused with -i, as pgbench refuses it.
    let (out, _, stderr) = db.run(&dir, &["-i", "--exit-on-abort"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.contains("cannot be used in initialization (-i) mode"),
        "{stderr}"
    );
}

/// The server's notices and warnings on stderr as libpq prints them for
/// pgbench (two blanks after the severity, DETAIL for a notice but no
/// CONTEXT); they show a pipeline's implicit transaction as pgbench
/// 18's tests read it: `SET LOCAL` first in a pipeline, or after a
/// `\syncpipeline` (a Sync: the transaction before it commits), is
/// outside a transaction block; second, inside one from PostgreSQL 17
/// on (a server before it warns there too, to pgbench as well).
#[test]
fn notices_and_warnings_reach_stderr_as_libpq_prints_them() {
    let (_keep, dir) = out_dir("pgbench-notices");
    let db = Named::start(&dir);
    let version: i32 = db.sql("SHOW server_version_num")[0][0].parse().unwrap();
    let warning = "WARNING:  SET LOCAL can only be used in transaction blocks\n";
    for (name, text, warns) in [
        (
            "first",
            "\\startpipeline\nSET LOCAL statement_timeout='1h';\n\\endpipeline\n",
            true,
        ),
        (
            "second",
            "\\startpipeline\nSELECT 1;\nSET LOCAL statement_timeout='1h';\n\\endpipeline\n",
            version < 170_000,
        ),
        (
            "synced",
            "\\startpipeline\nSELECT 1;\n\\syncpipeline\nSET LOCAL statement_timeout='1h';\n\\endpipeline\n",
            true,
        ),
    ] {
        let s = script(&dir, &format!("{name}.sql"), text);
        let (out, stdout, stderr) = db.run(&dir, &["-n", "-t", "1", "-M", "extended", "-f", &s]);
        assert!(out.status.success(), "{name}: {stdout}\n{stderr}");
        if warns {
            assert_eq!(stderr, warning, "{name}");
        } else {
            assert_eq!(stderr, "", "{name}");
        }
    }
    let s = script(
        &dir,
        "raise.sql",
        "DO $$ BEGIN RAISE NOTICE 'hello' USING DETAIL = 'there'; END $$;\n",
    );
    let (out, _, stderr) = db.run(&dir, &["-n", "-t", "1", "-f", &s]);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stderr, "NOTICE:  hello\nDETAIL:  there\n");
    // pgbench -i on a database without its tables: the server's notices
    // of `drop table if exists`, between pgbench's own lines.
    let (out, _, stderr) = db.run(&dir, &["-i", "-q"]);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.starts_with(
            "dropping old tables...\n\
             NOTICE:  table \"pgbench_accounts\" does not exist, skipping\n\
             NOTICE:  table \"pgbench_branches\" does not exist, skipping\n\
             NOTICE:  table \"pgbench_history\" does not exist, skipping\n\
             NOTICE:  table \"pgbench_tellers\" does not exist, skipping\n\
             creating tables...\n"
        ),
        "{stderr}"
    );
}

/// A server error carries its `LINE n:` and caret, as libpq words it:
/// the statement is sent as pgbench sends it (its final `;` too), so
/// the lines are pgbench's; a prepared statement's error names it
/// `P_n`, as pgbench's.
#[test]
fn server_errors_carry_their_line() {
    let (_keep, dir) = out_dir("pgbench-error-line");
    let db = Named::start(&dir);
    let s = script(&dir, "syntax.sql", "-- a comment\n    SELECT 1 + ;\n");
    for mode in ["simple", "extended"] {
        let (out, _, stderr) = db.run(&dir, &["-n", "-t", "1", "-M", mode, "-f", &s]);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.starts_with(
                "pgbench: error: client 0 script 0 aborted in command 0 query 0: ERROR:  syntax error at or near \";\"\n\
                 LINE 1: SELECT 1 + ;\n                   ^\n"
            ),
            "{mode}: {stderr}"
        );
    }
    let (out, _, stderr) = db.run(&dir, &["-n", "-t", "1", "-M", "prepared", "-f", &s]);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with(
            "pgbench: error: ERROR:  syntax error at or near \";\"\nLINE 1: SELECT 1 + ;\n                   ^\n\
             pgbench: error: client 0 script 0 aborted in command 0 query 0: ERROR:  prepared statement \"P_0\" does not exist\n"
        ),
        "{stderr}"
    );
}

/// Pipelines as pgbench 17 and 18's tests run them: `\syncpipeline`
/// twice in a row and between statements; a script that ends with its
/// pipeline open aborts the client (`\syncpipeline` does not close it);
/// a prepared pipeline that opens a SERIALIZABLE transaction, at 4
/// clients; and `COPY ... FROM STDIN` aborts the client with pgbench's
/// words.
#[test]
fn pipelines_and_copy_as_pgbench_18s_tests_run_them() {
    let (_keep, dir) = out_dir("pgbench-pipelines");
    let db = Named::start(&dir);
    let s = script(
        &dir,
        "sync.sql",
        "\\startpipeline\nselect 1;\n\\syncpipeline\n\\syncpipeline\nselect 2;\n\\syncpipeline\nselect 3;\n\\endpipeline\n",
    );
    let (out, stdout, stderr) = db.run(&dir, &["-n", "-t", "1", "-M", "extended", "-f", &s]);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("actually processed: 1/1\n"), "{stdout}");
    // A \syncpipeline is a Sync: what came before it commits, whatever
    // fails after it.
    db.sql("CREATE TABLE synced (x int)");
    let s = script(
        &dir,
        "commit.sql",
        "\\startpipeline\nINSERT INTO synced VALUES (1);\n\\syncpipeline\nSELECT 1/0;\n\\endpipeline\n",
    );
    let (out, _, stderr) = db.run(&dir, &["-n", "-t", "1", "-M", "extended", "-f", &s]);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("ERROR:  division by zero"), "{stderr}");
    assert_eq!(db.sql("SELECT x FROM synced"), vec![vec!["1".to_string()]]);
    let s = script(&dir, "open.sql", "\\startpipeline\n\\syncpipeline\n");
    let (out, _, stderr) = db.run(&dir, &["-n", "-t", "2", "-M", "extended", "-f", &s]);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "pgbench: error: client 0 aborted: end of script reached with pipeline open\n"
        ),
        "{stderr}"
    );
    let s = script(
        &dir,
        "ser.sql",
        &format!(
            "\\startpipeline\nBEGIN ISOLATION LEVEL SERIALIZABLE;\n{}END;\n\\endpipeline\n",
            "select 1;\n".repeat(10)
        ),
    );
    let (out, stdout, stderr) = db.run(
        &dir,
        &["-n", "-c", "4", "-t", "10", "-M", "prepared", "-f", &s],
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("actually processed: 40/40\n"), "{stdout}");
    db.sql("CREATE TABLE copied (x int)");
    let s = script(&dir, "copy.sql", "COPY copied FROM STDIN;\n");
    let (out, _, stderr) = db.run(&dir, &["-n", "-t", "1", "-f", &s]);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("pgbench: error: COPY is not supported in pgbench, aborting\n"),
        "{stderr}"
    );
}

/// `ISOBENCH_PGBENCH=18` (else a server of 18 or later) follows pgbench
/// 18 where it differs from 15: `-i --unlogged-tables --partitions`
/// leaves the base tables logged and makes the partitions unlogged
/// (PostgreSQL 18 refuses an unlogged partitioned table), branches and
/// tellers are loaded by COPY with a NULL filler and the progress lines
/// name the table; a script's block counts its transactions, then those
/// processed; `-r` puts one blank before the command; a run where
/// no transaction ended prints nothing after `actually processed`
/// (pgbench 15: `0 (NaN%)` failed).
#[test]
fn isobench_pgbench_18_follows_pgbench_18() {
    let (_keep, dir) = out_dir("pgbench-18");
    let db = Named::start(&dir);
    let v18 = [("ISOBENCH_PGBENCH", "18")];
    let (out, _, stderr) = db.run_env(&dir, &["-i", "--unlogged-tables", "--partitions=2"], &v18);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("100000 of 100000 tuples (100%) of pgbench_accounts done"),
        "{stderr}"
    );
    let persistence = db.sql(
        "SELECT relname, relpersistence FROM pg_class WHERE relname IN \
         ('pgbench_accounts', 'pgbench_accounts_1', 'pgbench_branches') ORDER BY 1",
    );
    let row = |n: &str, p: &str| vec![n.to_string(), p.to_string()];
    assert_eq!(
        persistence,
        vec![
            row("pgbench_accounts", "p"),
            row("pgbench_accounts_1", "u"),
            row("pgbench_branches", "p"),
        ]
    );
    assert_eq!(
        db.sql("SELECT count(*) FROM pgbench_tellers WHERE filler IS NULL"),
        vec![vec!["10".to_string()]]
    );
    let (out, stdout, stderr) = db.run_env(&dir, &["-n", "-t", "2", "-r", "-S"], &v18);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        Regex::new(r"(?m)^ {3} +[0-9]+\.[0-9]{3}  +0 SELECT abalance")
            .unwrap()
            .is_match(&stdout),
        "{stdout}"
    );
    // Several scripts: each block counts its transactions, then says
    // how many were processed.
    let ok = script(&dir, "ok.sql", "SELECT 1;\n");
    let (out, stdout, stderr) = db.run_env(&dir, &["-n", "-t", "10", "-f", &ok, "-f", &ok], &v18);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let block = Regex::new(
        r"(?m)^ - [0-9]+ transactions \([0-9]+\.[0-9]% of total\)\n - number of transactions actually processed: [0-9]+ \(tps = [0-9]+\.[0-9]{6}\)$",
    )
    .unwrap();
    assert_eq!(block.find_iter(&stdout).count(), 2, "{stdout}");
    let s = script(&dir, "div.sql", "\\set i 1/0\n");
    let (out, stdout, _) = db.run_env(&dir, &["-n", "-t", "1", "-f", &s], &v18);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stdout.contains("actually processed: 0/1\nisobench results: "),
        "{stdout}"
    );
    let v15 = [("ISOBENCH_PGBENCH", "15")];
    let (_, stdout, _) = db.run_env(&dir, &["-n", "-t", "1", "-f", &s], &v15);
    assert!(
        stdout.contains("actually processed: 0/1\nnumber of failed transactions: 0 (NaN%)\n"),
        "{stdout}"
    );
    // pgbench 17's options: -d is the database, debugging is --debug.
    let (out, _, stderr) = run_18(&["pgbench", "-d"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr,
        "pgbench: option requires an argument -- 'd'\npgbench: hint: Try \"pgbench --help\" for more information.\n"
    );
    let (_, stdout, _) = run_18(&["pgbench", "--help"]);
    assert!(
        stdout.contains("  -d, --dbname=DBNAME      database name to connect to\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  --exit-on-abort          exit when any client is aborted\n"),
        "{stdout}"
    );
}

/// `isobench ARGS` with `ISOBENCH_PGBENCH=18`.
fn run_18(args: &[&str]) -> (std::process::Output, String, String) {
    let out = isobench()
        .args(args)
        .env("ISOBENCH_PGBENCH", "18")
        .output()
        .expect("run isobench");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stdout, stderr)
}
