//! Issue #31, what a newcomer meets: the README's set-up names what the
//! tests need, a study that measured nothing leaves no empty results
//! directory, and `report` on another command's directory says what it is.

use super::common::{isobench, run};

/// The packages `.ci/run` installs (`apt-get install ... NAME`) are the
/// ones the README's set-up names in its `apt-get install` line: a
/// newcomer following the README gets what CI gets.
#[test]
fn the_readme_setup_names_every_package_ci_installs() {
    let root = env!("CARGO_MANIFEST_DIR");
    let ci = std::fs::read_to_string(format!("{root}/.ci/run")).unwrap();
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let setup = &readme[readme.find("## Set-up").unwrap()..];
    let setup = &setup[..setup[3..].find("\n## ").unwrap()];
    let named: Vec<&str> = setup
        .lines()
        .filter_map(|l| l.trim().strip_prefix("apt-get install "))
        .flat_map(str::split_whitespace)
        .collect();
    let installed: Vec<&str> = ci
        .lines()
        .filter_map(|l| l.split_once("apt-get install ").map(|(_, rest)| rest))
        .filter_map(|rest| rest.split_whitespace().last())
        .collect();
    assert!(
        installed.contains(&"postgresql") && installed.contains(&"chromium"),
        "{installed:?}"
    );
    for p in &installed {
        assert!(
            named.contains(p),
            "the README's set-up does not name `{p}`, which .ci/run installs: {named:?}"
        );
    }
}

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
