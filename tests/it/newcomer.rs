//! Issue #31, what a newcomer meets: the README's set-up names what the
//! tests need, a study that measured nothing leaves no empty results
//! directory, and `report` on another command's directory says what it is.

use super::common::{isobench, run};

/// A run against a server that refuses connections fails (exit 1) and
/// leaves neither the default `results/<timestamp>/` nor an `--out`
/// directory it created; `anomalies` likewise.
#[test]
fn a_study_that_measured_nothing_leaves_no_empty_results_dir() {
    let cwd = tempfile::tempdir().unwrap();
    let dsn = "postgres://nobody@127.0.0.1:1/db";
    for args in [
        vec!["run", "--dsn", dsn, "-T", "1s", "--repeat", "1", "--quiet"],
        vec!["anomalies", "--dsn", dsn, "--quiet"],
    ] {
        let out = isobench()
            .args(&args)
            .current_dir(cwd.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains("cannot connect"), "{args:?}: {stderr}");
        assert!(
            !cwd.path().join("results").exists(),
            "{args:?} left {:?}",
            std::fs::read_dir(cwd.path().join("results"))
                .map(|d| d.map(|e| e.unwrap().path()).collect::<Vec<_>>())
        );
    }
    // --out: the directories it created go, one that existed stays.
    let out_dir = cwd.path().join("a/b");
    let (out, _, stderr) = run(&[
        "run",
        "--dsn",
        dsn,
        "--quiet",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!cwd.path().join("a").exists());
    let (out, _, stderr) = run(&[
        "run",
        "--dsn",
        dsn,
        "--quiet",
        "--out",
        cwd.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(cwd.path().is_dir());
}

/// `report` on an `isobench anomalies` directory (anomalies.json, no
/// results.json or store) says what the directory is, exit 2.
#[test]
fn report_on_an_anomalies_dir_says_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("anomalies.json"), "{}").unwrap();
    std::fs::write(dir.path().join("anomalies.md"), "# x\n").unwrap();
    for cmd in [
        vec!["report", dir.path().to_str().unwrap()],
        vec![
            "compare",
            dir.path().to_str().unwrap(),
            dir.path().to_str().unwrap(),
        ],
    ] {
        let (out, _, stderr) = run(&cmd);
        assert_eq!(out.status.code(), Some(2), "{cmd:?}: {stderr}");
        assert!(
            stderr.contains("this is an `isobench anomalies` output directory")
                && stderr.contains("`isobench run`"),
            "{cmd:?}: {stderr}"
        );
        assert!(!stderr.contains("No such file"), "{cmd:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
}
