//! Issue #31, what a newcomer meets: the README's set-up names what the
//! tests need, a study that measured nothing leaves no empty results
//! directory, and `report` on another command's directory says what it is.

use super::common::{isobench, run};

/// The packages `.ci/run` installs (`apt-get install ... NAME`) are the
/// ones the README's set-up names in its `apt-get install` line: a
/// newcomer following the README gets what CI gets. (The pgbench TAP
/// runner's own packages, installed from a shell list, are named in the
/// README's prose.)
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
        // A shell list (the pgbench TAP runner's packages, named in the
        // README's prose) is not a package of the set-up line.
        .filter(|p| !p.starts_with("\"$"))
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

/// Issue #31: the README is what a newcomer reads first (under 250
/// lines); the reference lives in the user guide. Every relative link of
/// the README points at a file that exists.
#[test]
fn the_readme_is_short_and_its_links_resolve() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines < 250, "README.md has {lines} lines");
    for cmd in [
        "    cargo run --release -- run\n",
        "    cargo nextest run --locked\n",
    ] {
        assert!(readme.contains(cmd), "the README lost `{}`", cmd.trim());
    }
    // CI runs the README's test command, the same line.
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    assert!(
        ci.lines().any(|l| l == "cargo nextest run --locked"),
        ".ci/run does not run the README's test command"
    );
    // Issue #37: with the lock file's versions, the first build's time
    // said, and how to start a server of one's own.
    assert!(readme.contains("cargo install --locked --path ."));
    assert!(readme.contains("The first build compiles every dependency: about"));
    assert!(readme.contains("managed-server.md#starting-an-external-server"));
    let links = relative_links(&readme);
    assert!(
        links.iter().any(|l| l.starts_with("docs/src/")),
        "{links:?}"
    );
    for link in links {
        assert!(
            root.join(&link).exists(),
            "README.md links to missing {link}"
        );
    }
}

/// The guide's SUMMARY.md lists every chapter under docs/src, and every
/// relative link in the guide resolves (mdbook would render a broken one
/// silently).
#[test]
fn the_guide_lists_every_chapter_and_its_links_resolve() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src");
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap();
    let listed = relative_links(&summary);
    let mut chapters = Vec::new();
    let mut dirs = vec![src.clone()];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                chapters.push(p);
            }
        }
    }
    assert!(chapters.len() > 20, "{chapters:?}");
    for chapter in &chapters {
        let rel = chapter.strip_prefix(&src).unwrap().to_str().unwrap();
        if rel != "SUMMARY.md" {
            assert!(listed.iter().any(|l| l == rel), "SUMMARY.md lacks {rel}");
        }
        let text = std::fs::read_to_string(chapter).unwrap();
        for link in relative_links(&text) {
            let target = chapter.parent().unwrap().join(&link);
            assert!(target.exists(), "{rel} links to missing {link}");
        }
    }
}

/// The relative Markdown link targets of `text` (`[..](target)`), without
/// `#anchors`; web links and pure anchors are left out.
fn relative_links(text: &str) -> Vec<String> {
    text.match_indices("](")
        .filter_map(|(i, _)| {
            let rest = &text[i + 2..];
            let target = &rest[..rest.find(')')?];
            let target = target.split('#').next().unwrap_or_default();
            (!target.is_empty() && !target.contains("://")).then(|| target.to_string())
        })
        .collect()
}

/// `isobench completions SHELL` and `isobench man` through the binary:
/// a bash script that completes `run --isolation`, a roff page, and one
/// page per subcommand with `--dir`.
#[test]
fn completions_and_man_pages_from_the_binary() {
    let (out, stdout, stderr) = run(&["completions", "bash"]);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("isobench__subcmd__run") && stdout.contains("--isolation"),
        "{stdout}"
    );
    let (out, _, stderr) = run(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let (out, stdout, stderr) = run(&["man"]);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains(".TH isobench 1"), "{stdout}");
    assert!(stdout.contains("isobench\\-run(1)"), "{stdout}");
    let dir = tempfile::tempdir().unwrap();
    let man1 = dir.path().join("man1");
    let (out, stdout, stderr) = run(&["man", "--dir", man1.to_str().unwrap()]);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("page(s)"), "{stdout}");
    for page in ["isobench.1", "isobench-run.1", "isobench-compare.1"] {
        assert!(man1.join(page).is_file(), "{page}: {stdout}");
    }
}
