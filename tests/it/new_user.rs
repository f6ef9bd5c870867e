//! Issue #49, what a new user found (findings 4 to 9; 1, 2 and 10 are
//! in `pgbench::pg18`, 3 and 7 in the results and stats crates' own
//! tests): a regression gate that compared nothing, a custom schema
//! described as TPC-B, a study that stopped before its first run, an
//! unreachable `--dsn`, a usage line that named a flag as required, and
//! a guide and README that counted their packages differently.

use std::path::Path;

use super::common::*;

/// A one-cell TPC-B study of one 1 s run at `clients`.
fn one_run(clients: &str) -> Ran {
    let ran = Study::short()
        .args(&[
            "-w",
            "tpcb",
            "-s",
            "1",
            "--isolation",
            "rc",
            "--clients",
            clients,
        ])
        .run();
    assert!(ran.out.status.success(), "{}", ran.stderr);
    ran
}

/// Finding 4: `compare A B --fail-on-regression 5%` over two studies with
/// no cell in common printed "No cell in common ... 0 regression(s) ...
/// over 0 metric(s)" and exited 0. It compared nothing, and says so:
/// exit 2, each side's cells named. A gate whose every metric had too few
/// runs passes with a warning; `--strict` makes that exit 2.
#[test]
fn issue49_a_gate_that_compared_nothing_never_passes() {
    let (a, b) = (one_run("1"), one_run("2"));
    let (ad, bd) = (a.dir.to_str().unwrap(), b.dir.to_str().unwrap());
    let (o, stdout, stderr) = run(&["compare", ad, bd, "--fail-on-regression", "5%"]);
    assert_eq!(o.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("isobench: compared nothing: no cell in common"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "A ({ad}): isolation=rc strategy=optimistic clients=1"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "B ({bd}): isolation=rc strategy=optimistic clients=2"
        )),
        "{stderr}"
    );
    assert!(
        stdout.contains("Compared nothing: no cell in common."),
        "{stdout}"
    );
    // One run a side: nothing could be judged. A warning, exit 0; with
    // --strict, exit 2.
    let (o, _, stderr) = run(&["compare", ad, ad, "--fail-on-regression", "5%"]);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("isobench: warning: the gate judged no metric: every one had fewer than 3 complete runs on a side"),
        "{stderr}"
    );
    let (o, _, stderr) = run(&["compare", ad, ad, "--fail-on-regression", "5%", "--strict"]);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("isobench: error: the gate judged no metric"),
        "{stderr}"
    );
}

/// Finding 5: scripts over their own schema (`--init-sql`) were announced
/// as `loading tpcb (--init-sql FILE)`, `loaded 0 rows` (it inserted
/// 100), and the report titled `pgbench-script, scale 10`. The load line
/// names what ran and counts it; the title names the script.
#[test]
fn issue49_scripts_over_their_own_schema_are_named_as_such() {
    let (_keep, dir) = out_dir("own-schema");
    std::fs::create_dir_all(&dir).unwrap();
    let init = dir.join("oncall-schema.sql");
    std::fs::write(
        &init,
        "CREATE TABLE oncall (id int PRIMARY KEY, name text);\n\
         INSERT INTO oncall SELECT g, 'n' || g FROM generate_series(1, 100) g;\n\
         SELECT count(*) FROM oncall;\n",
    )
    .unwrap();
    let script = dir.join("oncall.sql");
    std::fs::write(&script, "SELECT name FROM oncall WHERE id = 1;\n").unwrap();
    let ran = Study::short()
        .loud()
        .out(&dir.join("results"))
        .args(&[
            "-f",
            script.to_str().unwrap(),
            "--init-sql",
            init.to_str().unwrap(),
            "--isolation",
            "rc",
            "--clients",
            "1",
        ])
        .run();
    assert!(ran.out.status.success(), "{}", ran.stderr);
    let init = init.display().to_string();
    assert!(
        ran.stderr
            .contains(&format!("loading --init-sql {init} ...")),
        "{}",
        ran.stderr
    );
    // Two statements wrote 0 and 100 rows; the SELECT wrote none.
    assert!(
        ran.stderr
            .contains(&format!("--init-sql {init}: 3 statements, 100 rows in ")),
        "{}",
        ran.stderr
    );
    assert!(!ran.stderr.contains("tpcb"), "{}", ran.stderr);
    let r = ran.json();
    assert_eq!(r["load"][0]["rows"], 100, "{}", r["load"]);
    let md = std::fs::read_to_string(ran.dir.join("report.md")).unwrap();
    assert!(
        md.starts_with(&format!(
            "# isobench report: pgbench-script ({}), --init-sql {init}\n",
            script.display()
        )),
        "{}",
        md.lines().next().unwrap()
    );
}

/// Finding 6: a check with invalid SQL stops the study before any run
/// (good), but then said "completed runs are saved in ..." and left a
/// report marked "INCOMPLETE (interrupted)" over 0 runs. Now: no run
/// started, said so, and no report.
#[test]
fn issue49_a_study_stopped_before_its_first_run_writes_no_report() {
    let (_keep, dir) = out_dir("no-run");
    let ran = Study::short()
        .out(&dir)
        .args(&[
            "-w",
            "tpcb",
            "-s",
            "1",
            "--isolation",
            "rc",
            "--clients",
            "1",
            "--check",
            "broken=SELEC 1",
        ])
        .run();
    assert!(!ran.out.status.success(), "{}", ran.stderr);
    assert!(
        !ran.stderr.contains("completed runs are saved"),
        "{}",
        ran.stderr
    );
    assert!(ran.stderr.contains("no run started"), "{}", ran.stderr);
    assert!(!dir.join("report.md").exists());
    assert!(!dir.join("report.html").exists());
}

/// Finding 8: `--dsn` to a server that is not running exited 1 with the
/// driver's message and no hint; the exit status guide says what it
/// means. A mistyped flag's usage line read `Usage: isobench run
/// --isolation <ISOLATION> [STUDY.toml]`, as if --isolation were
/// required.
#[test]
fn issue49_an_unreachable_server_and_a_mistyped_flag_say_what_to_do() {
    let cwd = tempfile::tempdir().unwrap();
    for (dsn, why) in [
        ("postgres://nobody@127.0.0.1:1/db", "connection refused"),
        (
            "host=/nonexistent-isobench port=5999 user=x dbname=y",
            "no such socket",
        ),
    ] {
        let out = isobench()
            .args(["run", "--dsn", dsn, "-T", "1s", "--repeat", "1", "--quiet"])
            .current_dir(cwd.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains(&format!("; is the server running? ({why})")),
            "{stderr}"
        );
    }
    let guide = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/reference/exit-status.md"),
    )
    .unwrap();
    assert!(guide.contains("is the server running?"), "{guide}");
    let (out, _, stderr) = run(&["run", "--isolation", "rc", "--bogus"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("Usage: isobench run [OPTIONS] [STUDY.toml]\n"),
        "{stderr}"
    );
}

/// Finding 9: the guide's getting-started page said "two system
/// packages" and listed three; the README said three. Both set-ups now
/// read the same, and the number they say is the number they list.
#[test]
fn issue49_the_guide_and_the_readme_set_up_alike() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let setup = |file: &str| {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let from = text.find("Needs Rust (cargo)").expect("a set-up");
        let to = from + text[from..].find("The main job").expect("its end");
        text[from..to].to_string()
    };
    let (readme, guide) = (setup("README.md"), setup("docs/src/getting-started.md"));
    assert_eq!(readme, guide);
    let said = readme.split_whitespace().nth(4).unwrap();
    let listed = readme
        .lines()
        .find_map(|l| l.trim().strip_prefix("apt-get install "))
        .unwrap()
        .split_whitespace()
        .count();
    let numbers = ["zero", "one", "two", "three", "four", "five"];
    assert_eq!(said, numbers[listed], "{readme}");
}
