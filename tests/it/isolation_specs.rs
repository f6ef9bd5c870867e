//! `isobench anomalies --spec` against a real managed PostgreSQL: specs
//! written here for every construct (all permutations, blocking, blocker
//! annotations, a deadlock, notices and notifications, a failing setup)
//! give the output written by hand from isolationtester's documented
//! behaviour (`tests/fixtures/isolation/expected`, which PostgreSQL 15's
//! own isolationtester reproduces byte for byte); a difference exits 3
//! and names it; bad input exits 2 before a server starts. The fixtures
//! `application-name`, `unused-steps` and `terminated` hold the outputs
//! PostgreSQL 15's own isolationtester (run by `pg_isolation_regress`)
//! wrote for them: sessions named in `application_name`, "unused step
//! name" lines in strcmp order, libpq's text after a terminated backend's
//! FATAL.

use crate::common;

use std::path::Path;

const FIXTURES: &str = "tests/fixtures/isolation";

#[test]
fn fixture_specs_match_their_hand_written_outputs() {
    let (_base, dir) = common::out_dir("specs");
    let expected = Path::new(FIXTURES).join("expected");
    let (out, stdout, stderr) = common::run(&[
        "anomalies",
        "--spec",
        FIXTURES,
        "--expected",
        expected.to_str().unwrap(),
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{:?}\n{stdout}\n{stderr}", out.status);
    assert!(stdout.contains("8 of 8 specs as expected"), "{stdout}");
    assert!(
        stderr.contains("setup-fails: stopped where isolationtester exits: setup failed: ERROR:  division by zero"),
        "{stderr}"
    );
    // Byte for byte, not only as the comparison normalizes it.
    for name in [
        "all-permutations",
        "application-name",
        "blockers",
        "deadlock",
        "notices",
        "setup-fails",
        "terminated",
        "unused-steps",
    ] {
        let want = std::fs::read_to_string(expected.join(format!("{name}.out"))).unwrap();
        let got = std::fs::read_to_string(dir.join(format!("{name}.out"))).unwrap();
        assert_eq!(got, want, "{name}.out");
    }
}

#[test]
fn one_spec_prints_its_output_and_a_difference_exits_3() {
    let (base, dir) = common::out_dir("one");
    let expected = base.path().join("expected");
    std::fs::create_dir(&expected).unwrap();
    let right = std::fs::read_to_string(Path::new(FIXTURES).join("expected/blockers.out")).unwrap();
    std::fs::write(
        expected.join("blockers.out"),
        right.replacen(
            "step s2r: <... completed>\nv\n-\n0",
            "step s2r: <... completed>\nv\n-\n1",
            1,
        ),
    )
    .unwrap();
    let (out, stdout, stderr) = common::run(&[
        "anomalies",
        "--spec",
        &format!("{FIXTURES}/blockers.spec"),
        "--expected",
        expected.to_str().unwrap(),
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{stderr}");
    assert_eq!(stdout, right, "one spec: its output on stdout");
    let summary = stderr
        .replace(dir.to_str().unwrap(), "[DIR]")
        .replace(expected.to_str().unwrap(), "[EXPECTED]");
    insta::assert_snapshot!(summary);
}

#[test]
fn bad_specs_and_too_many_permutations_exit_2_before_a_server_starts() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.spec");
    std::fs::write(&bad, "session s1\nstep a { SELECT 1; }\npermutation a(b)\n").unwrap();
    let (out, _, stderr) = common::run(&["anomalies", "--spec", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("bad.spec:3:15: blocker 'b' is not a step of this permutation"),
        "{stderr}"
    );
    let many = Path::new(FIXTURES).join("all-permutations.spec");
    let (out, _, stderr) = common::run(&[
        "anomalies",
        "--spec",
        many.to_str().unwrap(),
        "--max-permutations",
        "3",
    ]);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("makes 4 permutations, more than --max-permutations 3"),
        "{stderr}"
    );
    let (out, _, stderr) = common::run(&["anomalies", "--spec", "no/such.spec"]);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--spec no/such.spec: no such file or directory"),
        "{stderr}"
    );
}

#[test]
fn a_users_application_name_is_kept_and_the_sessions_append_to_it() {
    use isobench::postgres;
    let (_base, dir) = common::out_dir("appname");
    std::fs::create_dir_all(&dir).unwrap();
    // A server started through the library: an external target.
    let server = common::library_server(&dir);
    let dsn = format!(
        "host={} port={} user={} dbname=postgres application_name=myapp",
        server.socket_dir().display(),
        server.port(),
        postgres::SUPERUSER
    );
    let spec = Path::new(FIXTURES).join("application-name.spec");
    let out_dir = dir.join("out");
    let (out, stdout, stderr) = common::run(&[
        "anomalies",
        "--spec",
        spec.to_str().unwrap(),
        "--dsn",
        &dsn,
        "-o",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let got = std::fs::read_to_string(out_dir.join("application-name.out")).unwrap();
    // isolationtester appends the session's name to the user's, and no
    // connection is named isolation/... then.
    assert!(
        got.contains("name    \n--------\nmyapp/s2\n(1 row)"),
        "{got}"
    );
    assert!(
        got.contains("application_name\n----------------\n(0 rows)"),
        "{got}"
    );
}

/// Issue #49: `--pg-bin` was ignored with `--spec` (PostgreSQL 18.6's
/// schedule ran on the installed 15 server). Binaries that note their
/// use, then run the installed ones: the spec's managed server is made
/// by them.
#[test]
fn issue49_specs_run_on_the_pg_bin_server() {
    use std::os::unix::fs::PermissionsExt;
    let (base, dir) = common::out_dir("pg-bin");
    let real = isobench::postgres::find_bin_dir(None).expect("PostgreSQL binaries");
    // Outside the test's own directory, which the server's user may not
    // reach: /tmp, open to it.
    let bin = tempfile::Builder::new()
        .prefix("isobench-pg-bin")
        .tempdir_in("/tmp")
        .unwrap();
    let used = bin.path().join("used");
    for name in ["initdb", "pg_ctl", "postgres"] {
        let wrapper = bin.path().join(name);
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\necho {name} >> {}\nexec {} \"$@\"\n",
                used.display(),
                real.join(name).display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(bin.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let spec = Path::new(FIXTURES).join("notices.spec");
    let expected = Path::new(FIXTURES).join("expected");
    let (out, stdout, stderr) = common::run(&[
        "anomalies",
        "--pg-bin",
        bin.path().to_str().unwrap(),
        "--spec",
        spec.to_str().unwrap(),
        "--expected",
        expected.to_str().unwrap(),
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let used = std::fs::read_to_string(&used).unwrap_or_default();
    assert!(
        used.contains("initdb") && used.contains("postgres"),
        "the server was not made by --pg-bin's binaries: {used:?}"
    );
    drop(base);
}
