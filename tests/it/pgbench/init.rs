//! `isobench pgbench -i`: pgbench's steps in the order given, with its
//! messages, and the tables as pgbench makes them (checked in the
//! catalog): partitions, unlogged tables, fill factor, foreign keys,
//! server-side generation, `-q`.

use super::*;

/// The step lines of `-i`'s stderr (the progress lines of client-side
/// generation dropped), and its last line.
fn steps(stderr: &str) -> (Vec<&str>, &str) {
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.contains(" tuples ("))
        .collect();
    let last = *lines.last().unwrap_or(&"");
    (lines[..lines.len().saturating_sub(1)].to_vec(), last)
}

#[test]
fn init_runs_every_step_in_order_with_pgbenchs_options() {
    let (_keep, dir) = out_dir("pgbench-init");
    let db = Named::start(&dir);
    let (out, stdout, stderr) = db.run(
        &dir,
        &[
            "-i",
            "--init-steps=dtpvGvv",
            "--no-vacuum",
            "--foreign-keys",
            "--unlogged-tables",
            "--partitions=3",
            "--partition-method=hash",
            "-F",
            "90",
        ],
    );
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout, "");
    let (lines, done) = steps(&stderr);
    assert_eq!(
        lines,
        [
            "dropping old tables...",
            // The server's, as libpq prints them for pgbench.
            "NOTICE:  table \"pgbench_accounts\" does not exist, skipping",
            "NOTICE:  table \"pgbench_branches\" does not exist, skipping",
            "NOTICE:  table \"pgbench_history\" does not exist, skipping",
            "NOTICE:  table \"pgbench_tellers\" does not exist, skipping",
            "creating tables...",
            "creating 3 partitions...",
            "creating primary keys...",
            "generating data (server-side)...",
            "creating foreign keys...",
        ]
    );
    assert!(
        Regex::new(r"^done in [0-9]+\.[0-9]{2} s \(drop tables [0-9.]+ s, create tables [0-9.]+ s, primary keys [0-9.]+ s, server-side generate [0-9.]+ s, foreign keys [0-9.]+ s\)\.$")
            .unwrap()
            .is_match(done),
        "{done}"
    );
    let one = |q: &str| db.sql(q).remove(0).remove(0);
    assert_eq!(
        one("SELECT relkind FROM pg_class WHERE relname = 'pgbench_accounts'"),
        "p"
    );
    assert_eq!(
        one(
            "SELECT partstrat FROM pg_partitioned_table WHERE partrelid = 'pgbench_accounts'::regclass"
        ),
        "h"
    );
    assert_eq!(
        one("SELECT count(*) FROM pg_inherits WHERE inhparent = 'pgbench_accounts'::regclass"),
        "3"
    );
    assert_eq!(
        one("SELECT relpersistence FROM pg_class WHERE relname = 'pgbench_accounts_2'"),
        "u"
    );
    assert_eq!(
        one("SELECT reloptions::text FROM pg_class WHERE relname = 'pgbench_tellers'"),
        "{fillfactor=90}"
    );
    assert_eq!(one("SELECT count(*) FROM pgbench_accounts"), "100000");
    assert_eq!(
        one(
            "SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND conparentid = 0 AND conname LIKE 'pgbench_%'"
        ),
        "5"
    );
    // A run reports the partitioning, as pgbench does.
    let (out, stdout, stderr) = db.run(&dir, &["-n", "-S", "-t", "2"]);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(
            "scaling factor: 1\npartition method: hash\npartitions: 3\nquery mode: simple\n"
        ),
        "{stdout}"
    );

    // The default steps, client-side, -q: one progress line at the end
    // (pgbench 15's; pg18.rs has 18's, which names the table).
    let (out, _, stderr) = db.run_env(
        &dir,
        &["-i", "-s", "2", "-q", "--partitions", "2"],
        &[("ISOBENCH_PGBENCH", "15")],
    );
    assert!(out.status.success(), "{stderr}");
    let progress: Vec<&str> = stderr.lines().filter(|l| l.contains(" tuples (")).collect();
    assert_eq!(progress.len(), 1, "{stderr}");
    assert!(
        progress[0].starts_with("200000 of 200000 tuples (100%) done (elapsed "),
        "{stderr}"
    );
    let (lines, _) = steps(&stderr);
    assert_eq!(
        lines,
        [
            "dropping old tables...",
            "creating tables...",
            "creating 2 partitions...",
            "generating data (client-side)...",
            "vacuuming...",
            "creating primary keys...",
        ]
    );
    assert_eq!(
        one(
            "SELECT partstrat FROM pg_partitioned_table WHERE partrelid = 'pgbench_accounts'::regclass"
        ),
        "r"
    );
    assert_eq!(one("SELECT count(*) FROM pgbench_tellers"), "20");
    assert_eq!(one("SELECT max(bid) FROM pgbench_accounts"), "2");
}
