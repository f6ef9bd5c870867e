//! Ctrl-C: the current run stops, what was measured is written with
//! `complete: false`, the server stops, and isobench exits non-zero.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

#[test]
fn sigint_saves_partial_results_and_stops_the_server() {
    let (_keep, dir) = out_dir("interrupted");
    let mut child = Study::short()
        .duration("1500ms")
        .repeat(3)
        .out(&dir)
        .args(&["--scale", "1", "--clients", "4", "--isolation", "rc,ser"])
        .command()
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until one run is stored and the next run's clients are inside
    // transactions (backends of the run database that the first run did
    // not have), then interrupt that run.
    wait_for_first_run(&dir);
    let db = run_db(child.id());
    let first: Vec<u32> = backends_of(&db).iter().map(|b| b.pid).collect();
    wait_for_clients_in_transactions(&db, 4, &first);
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    let r = read_json(&dir);
    assert_schema_valid(&r);
    assert_eq!(r["complete"], false);
    let runs = r["runs"].as_array().unwrap();
    assert!(!runs.is_empty() && runs.len() < 6, "{} runs", runs.len());
    assert!(runs.iter().any(|run| run["complete"] == true));
    assert_managed_server_gone(&r);
}

/// Even SIGKILL, which runs no isobench code, must not leave the managed
/// server running: the kernel's parent-death signal stops it.
#[test]
fn sigkill_of_isobench_stops_the_managed_server() {
    use std::io::BufRead;
    let (_keep, dir) = out_dir("killed");
    let mut child = isobench()
        .args([
            "run",
            "--scale",
            "1",
            "--clients",
            "2",
            "--repeat",
            "1",
            "--duration",
            "60s",
            "--out",
            dir.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let socket_dir = loop {
        let line = lines
            .next()
            .expect("isobench ended before naming its target")
            .unwrap();
        if let Some(start) = line.find("(socket ") {
            let rest = &line[start + "(socket ".len()..];
            break rest[..rest.find(',').unwrap()].to_string();
        }
    };
    assert!(
        !processes_mentioning(&socket_dir).is_empty(),
        "server not running"
    );
    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !processes_mentioning(&socket_dir).is_empty() {
        assert!(
            Instant::now() < deadline,
            "postgres still running 20 s after isobench was killed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = std::fs::remove_dir_all(&socket_dir);
}
