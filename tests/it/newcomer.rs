//! Issue #31, what a newcomer meets: the README's set-up names what the
//! tests need, a study that measured nothing leaves no empty results
//! directory, and `report` on another command's directory says what it is.

use super::common::run;

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
