//! pgbench's messages, exit statuses and output streams for what stops
//! before a run: bad options (exit 1, pgbench's words, its hint), scripts
//! that do not parse (the caret line), `--help`, `-V`, `-b list`,
//! `--show-script`. Nothing reaches stdout but `--help` and `-V`.

use crate::common::*;

/// Runs `isobench pgbench ARGS` without any server named (PG* unset).
fn pgbench(args: &[&str]) -> (i32, String, String) {
    let mut full = vec!["pgbench"];
    full.extend_from_slice(args);
    let out = isobench()
        .env_remove("PGHOST")
        .env_remove("PGPORT")
        .env_remove("PGDATABASE")
        .env_remove("PGUSER")
        .args(full)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_options_exit_1_with_pgbenchs_words_on_stderr_only() {
    for (args, err) in [
        (
            &["-c", "three"][..],
            "pgbench: error: invalid value \"three\" for option -c/--clients\n",
        ),
        (
            &["--progress=0"],
            "pgbench: error: -P/--progress must be in range 1..2147483647\n",
        ),
        (
            &["-t", "1", "-T", "1"],
            "pgbench: error: specify either a number of transactions (-t) or a duration (-T), not both\n",
        ),
        (
            &["--progress-timestamp"],
            "pgbench: error: --progress-timestamp is allowed only under --progress\n",
        ),
        (
            &["-b", "se@0", "-b", "si@0", "-b", "tpcb@0"],
            "pgbench: error: total script weight must not be zero\n",
        ),
        (
            &["-f", "/no/such-file"],
            "pgbench: error: could not open file \"/no/such-file\": No such file or directory\n",
        ),
        (
            &["--sampling-rate=0.01"],
            "pgbench: error: log sampling (--sampling-rate) is allowed only when logging transactions (-l)\n",
        ),
        (
            &["-i", "-I", "dta"],
            "pgbench: error: unrecognized initialization step \"a\"\npgbench: detail: Allowed step characters are: \"dtgGvpf\".\n",
        ),
    ] {
        let (code, stdout, stderr) = pgbench(args);
        assert_eq!(code, 1, "{args:?}: {stderr}");
        assert_eq!(stdout, "", "{args:?}");
        assert_eq!(stderr, err, "{args:?}");
    }
    // Issue #49: getopt's refusals in getopt's words (they were clap's:
    // `unexpected argument '--bogus' found`), with pgbench's hint, exit 1.
    let hint = "pgbench: hint: Try \"pgbench --help\" for more information.\n";
    for (args, said) in [
        (
            &["-h", "home", "-d", "--bad-option"][..],
            "unrecognized option '--bad-option'",
        ),
        (&["-c", "2", "-X"], "invalid option -- 'X'"),
        (&["db", "-c"], "option requires an argument -- 'c'"),
        (&["--client"], "option '--client' requires an argument"),
        (&["--debug=3"], "option '--debug' doesn't allow an argument"),
        (
            &["--fi", "x"],
            "option '--fi' is ambiguous; possibilities: '--file' '--fillfactor'",
        ),
    ] {
        let (code, stdout, stderr) = pgbench(args);
        assert_eq!((code, stdout.as_str()), (1, ""), "{args:?}: {stderr}");
        assert_eq!(stderr, format!("pgbench: {said}\n{hint}"), "{args:?}");
    }
    let (code, _, stderr) = pgbench(&["db1", "db2"]);
    assert_eq!(code, 1);
    assert!(
        stderr.starts_with("pgbench: error: too many command-line arguments (first is \"db2\")\n"),
        "{stderr}"
    );
}

#[test]
fn help_version_and_listings_in_pgbenchs_form_and_streams() {
    let (code, stdout, stderr) = pgbench(&["--help"]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    assert!(
        stdout.starts_with("pgbench is a benchmarking tool for PostgreSQL"),
        "{stdout}"
    );
    for line in [
        "\nUsage:\n  pgbench [OPTION]... [DBNAME]\n",
        "\nInitialization options:\n",
        "  -t, --transactions=NUM   number of transactions each client runs (default: 10)\n",
        "\nCommon options:\n",
        "  --fresh-copy",
        "\nReport bugs to ",
    ] {
        assert!(stdout.contains(line), "{line:?}: {stdout}");
    }
    let (code, stdout, stderr) = pgbench(&["-V"]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    assert_eq!(
        stdout,
        format!(
            "pgbench (PostgreSQL) 15.18 (isobench {})\n",
            env!("CARGO_PKG_VERSION")
        )
    );
    let (code, stdout, stderr) = pgbench(&["-b", "list"]);
    assert_eq!((code, stdout.as_str()), (0, ""));
    assert_eq!(
        stderr,
        "Available builtin scripts:\n      tpcb-like: <builtin: TPC-B (sort of)>\n  simple-update: <builtin: simple update>\n    select-only: <builtin: select only>\n\n"
    );
    let (code, stdout, stderr) = pgbench(&["--show-script", "se"]);
    assert_eq!((code, stdout.as_str()), (0, ""));
    assert!(
        stderr.starts_with("-- select-only: <builtin: select only>\n\\set aid random(1, 100000 * :scale)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n"),
        "{stderr}"
    );
}

/// A script that does not parse: pgbench's three lines (the message, the
/// line, the caret under the column found), exit 1, nothing on stdout.
#[test]
fn script_errors_show_the_line_and_a_caret() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let f = file("set_i_op", "\\set i 1 +\n");
    let (code, stdout, stderr) = pgbench(&["-f", &f]);
    assert_eq!((code, stdout.as_str()), (1, ""));
    assert_eq!(
        stderr,
        format!(
            "pgbench: error: {f}:1: syntax error in command \"set\"\n\\set i 1 +\n          ^ error found here\n(syntax error at end of expression: expected an expression)\n"
        )
    );
    let f = file("endif", "\\if 1\nSELECT 1;\n");
    let (code, _, stderr) = pgbench(&["-f", &f]);
    assert_eq!(code, 1);
    assert_eq!(
        stderr,
        format!(
            "pgbench: error: condition error in script \"{f}\" command 3: \\if without matching \\endif\n"
        )
    );
    let f = file("sleep", "\\sleep 1 week\n");
    let (code, _, stderr) = pgbench(&["-f", &f]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains(":1: unrecognized time unit, must be us, ms or s (week) in command \"sleep\"\n\\sleep 1 week\n         ^ error found here\n"),
        "{stderr}"
    );
    // -M prepared: at most 255 parameters, counted per occurrence.
    let f = file(
        "args",
        &format!("SELECT LEAST({})", vec![":i"; 256].join(", ")),
    );
    let (code, _, stderr) = pgbench(&["-M", "prepared", "-f", &f]);
    assert_eq!(code, 1);
    assert!(
        stderr.starts_with(
            "pgbench: error: statement has too many arguments (maximum is 255): SELECT LEAST(:i, "
        ),
        "{stderr}"
    );
}
