//! Helpers for integration tests: run the real `isobench` binary, which
//! starts its own managed PostgreSQL.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn isobench() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_isobench"));
    c.env_remove("ISOBENCH_DSN")
        .env_remove("ISOBENCH_PGBENCH")
        .env("NO_COLOR", "1");
    c
}

/// Runs isobench with `args`; returns (output, stdout, stderr).
pub fn run(args: &[&str]) -> (Output, String, String) {
    let out = isobench().args(args).output().expect("run isobench");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stdout, stderr)
}

/// A fresh results directory path under the system temp dir (not created).
pub fn out_dir(name: &str) -> (tempfile::TempDir, PathBuf) {
    let base = tempfile::tempdir().expect("tempdir");
    let dir = base.path().join(name);
    (base, dir)
}

pub fn read_json(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("results.json")).expect("results.json exists");
    serde_json::from_str(&text).expect("results.json parses")
}

/// Validates `value` against schema/results.schema.json; panics with every error.
pub fn assert_schema_valid(value: &serde_json::Value) {
    assert_valid(value, "results.schema.json");
}

/// Validates `value` against `schema/<schema_file>`; panics with every error.
pub fn assert_valid(value: &serde_json::Value, schema_file: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("schema")
        .join(schema_file);
    let schema_text = std::fs::read_to_string(&path).expect("schema file");
    let schema: serde_json::Value = serde_json::from_str(&schema_text).expect("schema parses");
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "output violates {schema_file}:\n{}",
        errors.join("\n")
    );
}

/// The managed server's private directory, from the stored target text
/// ("... (socket /tmp/isobench-XXXX, 127.0.0.1:PORT)").
pub fn managed_dir(results: &serde_json::Value) -> PathBuf {
    let target = results["config"]["target"].as_str().expect("config.target");
    let start = target.find("socket ").expect("socket in target") + "socket ".len();
    let rest = &target[start..];
    PathBuf::from(&rest[..rest.find(',').expect("comma after socket")])
}

/// The managed server of `results` is stopped and its directory removed.
pub fn assert_managed_server_gone(results: &serde_json::Value) {
    let managed = managed_dir(results);
    assert!(
        !managed.exists(),
        "managed directory {} still exists",
        managed.display()
    );
    assert!(
        processes_mentioning(managed.to_str().unwrap()).is_empty(),
        "a postgres process outlived isobench"
    );
}

/// Pids of processes whose command line (its arguments joined by spaces)
/// mentions `needle`.
pub fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(entry.path().join("cmdline"))
            && String::from_utf8_lossy(&cmd)
                .replace('\0', " ")
                .contains(needle)
        {
            pids.push(pid);
        }
    }
    pids
}

/// Waits (up to 60 s) until `dir/results.json` records at least one run.
pub fn wait_for_first_run(dir: &Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "no run completed within 60 s"
        );
        if let Ok(text) = std::fs::read_to_string(dir.join("results.json"))
            && let Ok(v) = serde_json::from_str::<serde_json::Value>(&text)
            && v["runs"].as_array().is_some_and(|r| !r.is_empty())
        {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
