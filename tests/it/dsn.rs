//! Issue #37, item 6: a malformed `--dsn` is bad input (exit status 2),
//! refused before anything starts, with a message that names the option
//! and never the DSN (it may hold a password).

use super::common::{out_dir, run};

/// `run`, `monitor` and `anomalies` refuse a DSN that does not parse,
/// from the flag, the environment variable or a study file.
#[test]
fn a_malformed_dsn_exits_2_naming_the_option_not_the_password() {
    let (_base, out) = out_dir("results");
    let out = out.to_str().unwrap();
    for args in [
        vec![
            "run",
            "--dsn",
            "host=/tmp port=abc password=s3cret",
            "-o",
            out,
        ],
        vec!["monitor", "--dsn", "postgresql://u:s3cret@h:99999/x"],
        vec!["anomalies", "--dsn", "host='s3cret", "-o", out],
    ] {
        let (o, stdout, stderr) = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stdout}{stderr}");
        assert!(stderr.contains("--dsn"), "{args:?}: {stderr}");
        assert!(stderr.contains("cannot parse it"), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("s3cret"),
            "{args:?} printed the DSN: {stderr}"
        );
        // Refused before anything started: no results directory.
        assert!(
            !std::path::Path::new(out).exists(),
            "{args:?}: {out} written"
        );
    }
    // What is wrong, when tokio-postgres says: the option, not its value.
    let (_, _, stderr) = run(&["run", "--dsn", "host=/tmp port=abc", "-o", out]);
    assert!(
        stderr.contains("invalid value for option `port`"),
        "{stderr}"
    );
    // ISOBENCH_DSN is read by the same parser.
    let o = super::common::isobench()
        .args(["run", "-o", out])
        .env("ISOBENCH_DSN", "port=x password=s3cret")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("ISOBENCH_DSN") && !stderr.contains("s3cret"),
        "{stderr}"
    );
    // A study file's `dsn` names the file, line and key.
    let (base, _) = out_dir("x");
    let study = base.path().join("study.toml");
    std::fs::write(&study, "repeat = 1\ndsn = \"port=x password=s3cret\"\n").unwrap();
    let (o, _, stderr) = run(&["run", study.to_str().unwrap(), "-o", out]);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("study.toml:2:7: dsn: cannot parse it"),
        "{stderr}"
    );
    assert!(!stderr.contains("s3cret"), "{stderr}");
}
