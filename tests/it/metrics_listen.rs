//! `isobench run --metrics-listen ADDR`: OpenMetrics at
//! `http://ADDR/metrics` while the study runs, scraped as Prometheus
//! would; an address that cannot be bound is bad input (exit 2) before
//! anything runs.

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use common::*;

/// A port that was free a moment ago.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `GET path` over a plain TCP connection: the whole response, or `None`
/// while nothing listens.
fn get(port: u16, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

/// The value of the sample line `name value` in `text`.
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn a_running_study_serves_openmetrics() {
    let (_keep, dir) = out_dir("metrics");
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut child = Study::short()
        .duration("4s")
        .out(&dir)
        .args(&["--scale", "1", "--clients", "2", "--isolation", "rc"])
        .args(&["--metrics-listen", &listen])
        .command()
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut seen = None;
    while Instant::now() < deadline {
        if let Some(r) = get(port, "/metrics")
            && sample(&r, "isobench_transactions_committed_total").is_some_and(|c| c > 0.0)
        {
            seen = Some(r);
            break;
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let missing = get(port, "/nothing-here");
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(status.success(), "{stderr}");
    let r = seen.unwrap_or_else(|| panic!("no scrape saw committed > 0; stderr:\n{stderr}"));
    assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
    assert!(
        r.contains("Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\n"),
        "{r}"
    );
    assert!(
        r.contains("isobench_cell_info{workload=\"tpcb\",isolation=\"rc\""),
        "{r}"
    );
    assert!(r.contains("clients=\"2\""), "{r}");
    assert_eq!(sample(&r, "isobench_run_index"), Some(1.0), "{r}");
    assert!(
        sample(&r, "isobench_transactions_failed_total").is_some(),
        "{r}"
    );
    assert!(
        sample(&r, "isobench_transactions_retried_total").is_some(),
        "{r}"
    );
    assert!(sample(&r, "isobench_latency_p99_seconds").is_some(), "{r}");
    assert!(r.ends_with("# EOF\n"), "{r}");
    if let Some(m) = missing {
        assert!(m.starts_with("HTTP/1.1 404 "), "{m}");
    }
    // The study ended: so did the server.
    assert!(get(port, "/metrics").is_none());
}

#[test]
fn an_address_in_use_or_malformed_exits_2_before_anything_runs() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let (_keep, dir) = out_dir("metrics-taken");
    let (out, _, stderr) = run(&[
        "run",
        "--repeat",
        "1",
        "--metrics-listen",
        &addr,
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("--metrics-listen {addr}")),
        "{stderr}"
    );
    assert!(!dir.exists(), "a results directory was created");

    let (out, _, stderr) = run(&["run", "--metrics-listen", "9187"]);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--metrics-listen"), "{stderr}");
}
