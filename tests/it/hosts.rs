//! Clients over a cluster (`--host-policy`): a DSN with two hosts that
//! are the same server, by its Unix socket and by TCP on 127.0.0.1, so
//! where each connection went shows in results.json's `runs[].hosts`.

use crate::common;

use common::*;
use isobench::postgres;

/// One 2 s TPC-B run of 4 clients under `policy` against `dsn`; its
/// results.json.
fn run_policy(dsn: &str, policy: &str, out: &std::path::Path) -> serde_json::Value {
    Study::short()
        .duration("2s")
        .out(out)
        .args(&[
            "--dsn",
            dsn,
            "--host-policy",
            policy,
            "--scale",
            "1",
            "--clients",
            "4",
            "-j",
            "2",
            "--isolation",
            "rc",
            "--observe",
            "none",
        ])
        .ok()
}

#[test]
fn a_two_host_dsn_puts_half_of_the_clients_on_each_host() {
    let (_keep, dir) = out_dir("hosts");
    let server = library_server(&dir);
    let socket = format!("{}:{}", server.socket_dir().display(), server.port());
    let tcp = format!("127.0.0.1:{}", server.port());
    // The socket needs no password (trust), TCP does (scram).
    let dsn = format!(
        "host={},127.0.0.1 port={} user={} password={} dbname=postgres",
        server.socket_dir().display(),
        server.port(),
        postgres::SUPERUSER,
        server.password()
    );

    let rr = dir.join("rr");
    let r = run_policy(&dsn, "round-robin", &rr);
    let r0 = &r["runs"][0];
    let hosts = r0["hosts"].as_array().expect("runs[0].hosts");
    assert_eq!(hosts.len(), 2, "{hosts:?}");
    eprintln!(
        "round-robin: committed {} of the run's {}",
        hosts
            .iter()
            .map(|h| format!(
                "{}: clients {} committed {} tps {} p99 {} ms",
                h["host"], h["clients"], h["committed"], h["tps"], h["p99_ms"]
            ))
            .collect::<Vec<_>>()
            .join("; "),
        r0["committed"]
    );
    assert_eq!(hosts[0]["host"], socket.as_str());
    assert_eq!(hosts[1]["host"], tcp.as_str());
    for h in hosts {
        assert_eq!(h["clients"], 2, "{h}");
        assert_eq!(h["refused"], 0, "{h}");
        assert!(h["committed"].as_u64().unwrap() > 0, "{h}");
        assert!(h["p99_ms"].as_f64().unwrap() > 0.0, "{h}");
    }
    let per_host: u64 = hosts.iter().map(|h| h["committed"].as_u64().unwrap()).sum();
    assert_eq!(per_host, r0["committed"].as_u64().unwrap());
    let failed: u64 = hosts.iter().map(|h| h["failed"].as_u64().unwrap()).sum();
    let run_failed: u64 = r0["failed"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(failed, run_failed);
    let md = std::fs::read_to_string(rr.join("report.md")).unwrap();
    let section = md.split("## Per host").nth(1).expect("a Per host section");
    assert!(section.contains(&format!("`{tcp}`")), "{section}");
    assert!(section.contains("--host-policy round-robin"), "{section}");
    assert_eq!(r["config"]["target_options"]["host_policy"], "round-robin");
    // `isobench report` (from the SQLite store) writes them again.
    std::fs::remove_file(rr.join("report.md")).unwrap();
    std::fs::remove_file(rr.join("results.json")).unwrap();
    let (o, _, stderr) = run(&["report", rr.to_str().unwrap(), "--format", "md"]);
    assert!(o.status.success(), "{stderr}");
    let again = std::fs::read_to_string(rr.join("report.md")).unwrap();
    assert_eq!(
        again
            .split("## Per host")
            .nth(1)
            .map(|s| s.split("\n## ").next()),
        Some(section.split("\n## ").next()),
        "the Per host section from the store"
    );

    // first: libpq's order, every connection on the socket.
    let first = run_policy(&dsn, "first", &dir.join("first"));
    let hosts = first["runs"][0]["hosts"].as_array().expect("runs[0].hosts");
    assert_eq!(hosts[0]["clients"], 4, "{hosts:?}");
    assert_eq!(hosts[1]["clients"], 0, "{hosts:?}");
    assert_eq!(hosts[1]["committed"], 0, "{hosts:?}");
    assert_eq!(
        hosts[0]["committed"], first["runs"][0]["committed"],
        "{hosts:?}"
    );

    // A host that refuses: its connections go to the next, and say so.
    let refusing = format!(
        "host=127.0.0.1,{} port=1,{} user={} password={} dbname=postgres connect_timeout=2",
        server.socket_dir().display(),
        server.port(),
        postgres::SUPERUSER,
        server.password()
    );
    let fell = run_policy(&refusing, "round-robin", &dir.join("refused"));
    let hosts = fell["runs"][0]["hosts"].as_array().expect("runs[0].hosts");
    assert_eq!(hosts[0]["clients"], 0, "{hosts:?}");
    assert_eq!(hosts[0]["refused"], 2, "{hosts:?}");
    assert_eq!(hosts[1]["clients"], 4, "{hosts:?}");
}

/// `--host-policy` with the managed server (one host of its own) is
/// refused, naming the flag and what to do.
#[test]
fn host_policy_without_an_external_server_is_refused() {
    let (o, _, stderr) = run(&["run", "--host-policy", "random", "--quiet"]);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--host-policy"), "{stderr}");
    assert!(stderr.contains("--dsn"), "{stderr}");
    let (o, _, stderr) = run(&["run", "--dsn", "host=x", "--host-policy", "spread"]);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("round-robin, random or first"), "{stderr}");
}
