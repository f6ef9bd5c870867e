//! Every study file in examples/, examples/seeds/, examples/papers/
//! (the reproductions of published papers) and examples/replication/
//! runs as shipped (laptop-sized) with 1 s runs, no warm-up and one
//! repetition (flags override the file), so that the seed reproductions
//! keep working; the replication studies (a cluster each) in a test of
//! their own, so that each test stays within nextest's limit on a busy
//! machine. A study whose measured window must hold an event (a
//! failover) is listed in `TINY` with the flags that make it small. A
//! study that needs an outside program (autocannon, an application) is
//! listed in `NEEDS_TOOLS` and run only where that program is installed.

use std::path::{Path, PathBuf};

use crate::common::{Study, out_dir, read_json};

/// Study files that drive an outside program, and the program.
const NEEDS_TOOLS: &[(&str, &str)] = &[("app-pool-study.toml", "autocannon")];

/// Study files whose tiny size is not 1 s runs: their run duration and
/// flags. A failover in the window, with the manager's fast timeouts
/// (about 5 s to promote, where its defaults take about 50 s).
const TINY: &[(&str, &str, &[&str])] = &[(
    "failover.toml",
    "12s",
    &["--fault", "failover@2s", "--ha-timeouts", "fast"],
)];

/// The study files of `dirs` (under examples/; "" is examples/ itself),
/// sorted.
fn study_files(dirs: &[&str]) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut files = Vec::new();
    for dir in dirs.iter().map(|d| root.join(d)) {
        for entry in std::fs::read_dir(&dir).expect("examples directory") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "toml") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

#[test]
fn every_example_study_runs_as_shipped_at_a_tiny_size() {
    let files = study_files(&["", "seeds", "papers"]);
    let seeds = files
        .iter()
        .filter(|f| f.parent().is_some_and(|p| p.ends_with("seeds")))
        .count();
    assert!(seeds >= 5, "one study per seed (000-004), found {seeds}");
    for file in &files {
        run_tiny(file);
    }
}

/// The replication studies: a managed primary with a standby, and a
/// pg_auto_failover formation with a failover in every run.
#[test]
fn every_replication_example_runs_as_shipped_at_a_tiny_size() {
    let files = study_files(&["replication"]);
    assert!(files.len() >= 2, "durability and failover, found {files:?}");
    for file in &files {
        run_tiny(file);
    }
}

/// Runs the study `file` at its tiny size; asserts that every run
/// committed and the reports were written.
fn run_tiny(file: &Path) {
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    if let Some((_, tool)) = NEEDS_TOOLS.iter().find(|(f, _)| *f == name)
        && !on_path(tool)
    {
        eprintln!("skipping {name}: needs {tool}");
        return;
    }
    let (_keep, dir) = out_dir("example");
    let mut study = Study::short().out(&dir).args(&[file.to_str().unwrap()]);
    if let Some((_, duration, flags)) = TINY.iter().find(|(f, ..)| *f == name) {
        study = study.duration(duration).args(flags);
    }
    let ran = study.run();
    let (out, _stdout, stderr) = (ran.out, ran.stdout, ran.stderr);
    assert!(out.status.success(), "{name} failed:\n{stderr}");
    let results = read_json(&dir);
    let runs = results["runs"].as_array().expect("runs");
    assert!(!runs.is_empty(), "{name}: no runs");
    for r in runs {
        assert!(
            r["committed"].as_u64().unwrap_or(0) > 0,
            "{name}: a run committed nothing: {}",
            r["cell"]
        );
    }
    for f in ["report.md", "report.html", "cells.csv"] {
        assert!(dir.join(f).is_file(), "{name}: no {f}");
    }
}
