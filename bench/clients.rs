//! Many clients on one machine (issues #42, #51): isobench's own resident
//! memory (peak RSS) at 1,000, 10,000 and 50,000 clients, beside
//! pgbench's at the client counts it reaches, and the throughput of a
//! study through pgbouncer at 50,000 clients against the same study at
//! 1,000, split over processes so that each stays within the open-files
//! limit.
//!
//! RSS is the process's own high-water mark (`VmHWM` of
//! `/proc/PID/status`, sampled every 50 ms until it exits), never
//! `/usr/bin/time`'s maximum RSS: that one is the largest of the process
//! and its waited-for descendants, and isobench's descendants include the
//! managed server, whose shared memory grows with `max_connections`
//! (issue #42's first table, 360 MB at 10,000 clients, was mostly the
//! server's). RSS does not depend on the machine's load; throughput does.
//!
//! One PostgreSQL server (`max_connections=200`), reached by `isobench run
//! --dsn`; pgbouncer (Debian's, or `PGBOUNCER`) in front of it where a
//! part says so. Parts (`BENCH_PARTS`, default
//! `pool,pgbouncer,pgbench,shards,tps`):
//! - `pool`: `isobench run -w tpcb -s 1 --isolation rc --pool-size 50` at
//!   each of `BENCH_CLIENTS` (1000,10000,50000) clients: the closed loop
//!   with an application pool. Target: 10,000 clients <= 100 MB.
//! - `pgbouncer`: the same through `--pooler pgbouncer:transaction
//!   --pooler-size 50`, no application pool (a connection per client to
//!   pgbouncer). Target: 50,000 clients <= 400 MB.
//! - `pgbench`: `pgbench -c N -j 2 -M extended` (TPC-B) through a
//!   pgbouncer in transaction mode with a pool of 50, at each N of
//!   `BENCH_CLIENTS`: pgbench holds a connection per client, and its RSS
//!   is measured the same way.
//! - `shards` (issue #51): the `pgbouncer` study split over `BENCH_SHARDS`
//!   (3) isobench processes (`--shard I/N`, on this machine) behind
//!   `BENCH_POOLER_PROCESSES` (4) pgbouncer processes on one port
//!   (`--pooler-processes`, started by shard 0), at each of
//!   `BENCH_SHARD_CLIENTS` (1000,50000) clients; then `isobench merge`.
//!   TPC-B at scale `BENCH_SHARD_SCALE` (50): the server sees the pool's
//!   50 sessions, and pgbench's documentation asks for a scale at least
//!   the number of concurrent clients, else the study measures the wait
//!   for the branch rows' locks (at scale 1 every transaction updates the
//!   one branch row, so the lock is held across its remaining round trips
//!   through pgbouncer and throughput follows their latency).
//!   Per process: its role, peak RSS (`VmHWM`), the most descriptors it
//!   held (`/proc/PID/fd`, sampled every 0.5 s) against its open-files
//!   limit; the sum of the isobench processes' RSS; the merged TPS.
//!   Target: 50,000 clients with the isobench processes' RSS summed
//!   <= 400 MB, every process within the limit.
//! - `tps`: the `shards` study's TPS at `BENCH_TPS_CLIENTS`
//!   (1000,50000), `BENCH_ROUNDS` (4) rounds in ABBA order, the median
//!   (and range) of the ratio of the largest count's TPS to the
//!   smallest's. Target: >= 0.9.
//!   Needs a quiet machine: on a busy one the figures say nothing.
//!
//! Open files: 50,000 clients are 50,000 sockets in isobench and as many
//! in pgbouncer (and in pgbench), above a shell's usual limit and above
//! some machines' hard limit (20,000 in the container this was built in,
//! where root cannot raise it). The limit is per process: the `shards`
//! part splits the clients over processes that each stay under it (3
//! shards of 16,667 clients, 4 pgbouncer processes of about 12,500). This
//! bench tries to raise its own soft and hard `RLIMIT_NOFILE` to
//! `BENCH_NOFILE` (200000; raising the hard limit needs root or
//! CAP_SYS_RESOURCE) and its children inherit it; isobench raises its own
//! soft limit to what a run needs, up to the hard limit. A count that
//! does not fit a single process (the `pool`, `pgbouncer`, `pgbench`
//! parts at 50,000 under a hard limit of 20,000) fails, and its row says
//! why; the other counts still run.
//!
//! Run: `cargo bench --profile measure --bench clients` (brings the
//! `measure` profile's binary up to date first: `common::isobench_bin`). Environment besides the above: `BENCH_SECONDS` (10, the
//! measured window; 2 s of warm-up), `ISOBENCH_BIN`, `PGBENCH`,
//! `PGBOUNCER`. Not a test: record the figures in BENCHMARKS.md with how
//! busy the machine was.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Harness, env_list, env_or, isobench_bin, summary};
use isobench::model::PoolMode;
use isobench::postgres::SUPERUSER;
use isobench::postgres::pgbouncer::{self, PgBouncer, PgBouncerOptions, Upstream};

/// A finished child: its exit status, output and peak RSS (kB).
struct Measured {
    ok: bool,
    stdout: String,
    stderr: String,
    hwm_kb: u64,
    wall_s: f64,
}

/// Runs `cmd` to its end, sampling its `VmHWM` every 50 ms.
fn measure(mut cmd: Command) -> Measured {
    let t = Instant::now();
    let dir = tempfile::tempdir().expect("temp dir");
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    let mut child = cmd
        .stdout(std::fs::File::create(&out).expect("out"))
        .stderr(std::fs::File::create(&err).expect("err"))
        .stdin(Stdio::null())
        .spawn()
        .expect("spawn");
    let status = format!("/proc/{}/status", child.id());
    let mut hwm_kb = 0;
    let ok = loop {
        if let Ok(text) = std::fs::read_to_string(&status)
            && let Some(kb) = text
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        {
            hwm_kb = hwm_kb.max(kb);
        }
        match child.try_wait().expect("wait") {
            Some(s) => break s.success(),
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    Measured {
        ok,
        stdout: std::fs::read_to_string(out).unwrap_or_default(),
        stderr: std::fs::read_to_string(err).unwrap_or_default(),
        hwm_kb,
        wall_s: t.elapsed().as_secs_f64(),
    }
}

/// Raises this process's open-files limit (soft and hard) to `n`; returns
/// the limit in force afterwards.
fn raise_nofile(n: u64) -> (u64, u64) {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Err(e) = setrlimit(Resource::RLIMIT_NOFILE, n, n) {
        eprintln!("cannot raise RLIMIT_NOFILE to {n} ({e}): large client counts may fail");
    }
    getrlimit(Resource::RLIMIT_NOFILE).expect("getrlimit")
}

/// The local TCP ports one address and port can be reached from
/// (`net.ipv4.ip_local_port_range`): every client connection to
/// pgbouncer's one port takes one, about 28,000 by default, fewer than
/// 50,000. Widened to `1024 65535` (64,512 ports) when it is narrower and
/// this runs as root; the range in force is printed either way.
fn widen_ports() -> (u32, u32) {
    const RANGE: &str = "/proc/sys/net/ipv4/ip_local_port_range";
    let (lo, hi) = isobench::postgres::local_port_range().unwrap_or((0, 0));
    if (lo, hi) != (0, 0)
        && (lo > 1024 || hi < 65535)
        && let Err(e) = std::fs::write(RANGE, "1024 65535")
    {
        eprintln!(
            "cannot widen {RANGE} ({e}): more than {} clients may fail",
            hi - lo + 1
        );
    }
    isobench::postgres::local_port_range().unwrap_or((0, 0))
}

struct Bench {
    h: Harness,
    bin: PathBuf,
    dsn: String,
    out: tempfile::TempDir,
    runs: u32,
    seconds: u32,
    /// The TPC-B scale of the `shards` and `tps` parts' study.
    shard_scale: u32,
}

/// TPS and peak RSS of one `isobench run`.
struct Run {
    tps: f64,
    rss_mb: f64,
    wall_s: f64,
}

impl Bench {
    /// `isobench run` of TPC-B at scale 1 under READ COMMITTED with
    /// `clients` clients and `extra` arguments, or why it failed (the last line isobench
    /// printed: e.g. more open files needed than the hard limit allows).
    fn try_isobench(&mut self, clients: u32, extra: &[&str]) -> Result<Run, String> {
        self.runs += 1;
        let out = self.out.path().join(format!("run{}", self.runs));
        let mut cmd = Command::new(&self.bin);
        cmd.args(["run", "-q", "--repeat", "1", "--dsn", &self.dsn])
            .args([
                "-w",
                "tpcb",
                "-s",
                "1",
                "--isolation",
                "rc",
                "--warmup",
                "2s",
            ])
            .args(["-T", &format!("{}s", self.seconds)])
            .args(["-c", &clients.to_string()])
            .args(extra)
            .arg("-o")
            .arg(&out);
        let m = measure(cmd);
        if !m.ok {
            return Err(m.stderr.lines().last().unwrap_or("").to_string());
        }
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap())
                .unwrap();
        Ok(Run {
            tps: r["runs"][0]["tps"].as_f64().unwrap_or(0.0),
            rss_mb: m.hwm_kb as f64 / 1024.0,
            wall_s: m.wall_s,
        })
    }
}

/// One row of an RSS table: the run's figures, or why it failed.
fn rss_row(n: u32, r: Result<Run, String>) {
    match r {
        Ok(r) => println!("| {n} | {:.1} | {:.0} | {:.1} |", r.rss_mb, r.tps, r.wall_s),
        Err(why) => println!("| {n} | failed: {why} | | |"),
    }
}

/// A pgbouncer in front of the harness's server for pgbench.
fn pgbouncer_for_pgbench(h: &Harness, clients: u32, log: &Path) -> PgBouncer {
    let bin = pgbouncer::find_bin(std::env::var_os("PGBOUNCER").map(PathBuf::from).as_deref())
        .expect("pgbouncer");
    let version = pgbouncer::version(&bin).expect("pgbouncer --version");
    PgBouncer::start(&PgBouncerOptions {
        bin,
        version,
        mode: PoolMode::Transaction,
        pool_size: 50,
        max_clients: clients + 100,
        processes: 1,
        tcp_clients: false,
        upstream: Upstream::of(&h.server.config("postgres")).expect("upstream"),
        log_path: log.to_path_buf(),
        os_user: "postgres".into(),
    })
    .expect("pgbouncer starts")
}

/// One process of a sharded run: its peak RSS and descriptors.
#[derive(Debug, Clone)]
struct Proc {
    /// "isobench shard 0", "pgbouncer 2".
    role: String,
    pid: u32,
    hwm_kb: u64,
    /// The most anonymous memory (`RssAnon`: heap, stacks) and
    /// file-backed memory (`RssFile`: the mapped binary and libraries,
    /// pages the isobench processes share) seen, kB.
    anon_kb: u64,
    file_kb: u64,
    fds: u64,
    /// Its soft open-files limit.
    limit: u64,
}

/// A sharded run: the merged TPS, each process's figures, why it failed.
struct ShardedRun {
    tps: f64,
    procs: Vec<Proc>,
    failed: Option<String>,
    wall_s: f64,
}

/// `field` (`VmHWM`, `RssAnon`, `RssFile`) of `/proc/PID/status`, kB
/// (0 once it is gone).
fn status_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.split(':').next() == Some(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Descriptors `pid` holds.
fn fds(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count() as u64)
}

/// `pid`'s soft open-files limit.
fn nofile(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/limits"))
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("Max open files"))
                .and_then(|l| l.split_whitespace().nth(3)?.parse().ok())
        })
        .unwrap_or(0)
}

/// The pgbouncer processes whose parent is `parent`.
fn pgbouncers_of(parent: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|stat| {
                let (head, tail) = stat.rsplit_once(") ").unwrap_or(("", ""));
                head.ends_with("(pgbouncer")
                    && tail.split_whitespace().nth(1) == Some(&parent.to_string())
            })
        })
        .collect()
}

impl Bench {
    /// The `pgbouncer` study at `clients` clients over `shards` isobench
    /// processes (`--shard I/N`) behind `processes` pgbouncer processes,
    /// sampled until every shard exits, then merged.
    fn sharded(&mut self, clients: u32, shards: u32, processes: u32) -> ShardedRun {
        self.runs += 1;
        let t = Instant::now();
        let base = self.out.path().join(format!("sharded{}", self.runs));
        let log = |i: u32| base.join(format!("shard-{i}.log"));
        std::fs::create_dir_all(&base).expect("results directory");
        let mut children = Vec::new();
        for i in 0..shards {
            let mut cmd = Command::new(&self.bin);
            cmd.args(["run", "-q", "--repeat", "1", "--dsn", &self.dsn])
                .args(["-w", "tpcb", "-s", &self.shard_scale.to_string()])
                .args(["--isolation", "rc", "--seed", "1"])
                .args(["--warmup", "2s", "-T", &format!("{}s", self.seconds)])
                .args(["-c", &clients.to_string()])
                .args(["--pooler", "pgbouncer:transaction", "--pooler-size", "50"])
                .args(["--pooler-processes", &processes.to_string()])
                .args(["--shard", &format!("{i}/{shards}"), "--shard-wait", "300s"])
                .arg("-o")
                .arg(base.join(format!("shard-{i}")))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(log(i)).expect("log"));
            children.push(cmd.spawn().expect("spawn a shard"));
        }
        let mut procs: Vec<Proc> = children
            .iter()
            .enumerate()
            .map(|(i, c)| Proc {
                role: format!("isobench shard {i}"),
                pid: c.id(),
                hwm_kb: 0,
                anon_kb: 0,
                file_kb: 0,
                fds: 0,
                limit: 0,
            })
            .collect();
        let mut failed = None;
        let mut done = vec![false; children.len()];
        let mut tick = 0u64;
        while done.iter().any(|d| !d) {
            // pgbouncer processes come and go with each run of shard 0.
            for pid in pgbouncers_of(procs[0].pid) {
                if !procs.iter().any(|p| p.pid == pid) {
                    let n = procs.len() - shards as usize;
                    procs.push(Proc {
                        role: format!("pgbouncer {n}"),
                        pid,
                        hwm_kb: 0,
                        anon_kb: 0,
                        file_kb: 0,
                        fds: 0,
                        limit: 0,
                    });
                }
            }
            for p in &mut procs {
                p.hwm_kb = p.hwm_kb.max(status_kb(p.pid, "VmHWM"));
                p.anon_kb = p.anon_kb.max(status_kb(p.pid, "RssAnon"));
                p.file_kb = p.file_kb.max(status_kb(p.pid, "RssFile"));
                if tick.is_multiple_of(5) {
                    p.fds = p.fds.max(fds(p.pid));
                    p.limit = p.limit.max(nofile(p.pid));
                }
            }
            for (i, c) in children.iter_mut().enumerate() {
                if !done[i]
                    && let Some(status) = c.try_wait().expect("wait")
                {
                    done[i] = true;
                    if !status.success() && failed.is_none() {
                        let text = std::fs::read_to_string(log(i as u32)).unwrap_or_default();
                        failed = Some(format!(
                            "shard {i}: {}",
                            text.lines().last().unwrap_or("exited non-zero")
                        ));
                    }
                }
            }
            tick += 1;
            std::thread::sleep(Duration::from_millis(100));
        }
        let mut tps = 0.0;
        if failed.is_none() {
            let merged = base.join("merged");
            let out = Command::new(&self.bin)
                .arg("merge")
                .args((0..shards).map(|i| base.join(format!("shard-{i}"))))
                .arg("--out")
                .arg(&merged)
                .output()
                .expect("isobench merge");
            if out.status.success() {
                let r: serde_json::Value = serde_json::from_str(
                    &std::fs::read_to_string(merged.join("results.json")).expect("merged"),
                )
                .expect("merged results.json");
                tps = r["runs"][0]["tps"].as_f64().unwrap_or(0.0);
                let run = &r["runs"][0];
                if run["complete"] != true {
                    failed = Some(format!("incomplete run: {}", run["errors"]));
                }
            } else {
                failed = Some(format!(
                    "merge: {}",
                    String::from_utf8_lossy(&out.stderr)
                        .lines()
                        .last()
                        .unwrap_or("")
                ));
            }
        }
        ShardedRun {
            tps,
            procs,
            failed,
            wall_s: t.elapsed().as_secs_f64(),
        }
    }
}

fn main() {
    let parts: Vec<String> = env_list("BENCH_PARTS", "pool,pgbouncer,pgbench,shards,tps");
    let shards: u32 = env_or("BENCH_SHARDS", 3);
    let processes: u32 = env_or("BENCH_POOLER_PROCESSES", 4);
    let counts: Vec<u32> = env_list("BENCH_CLIENTS", "1000,10000,50000");
    let (soft, hard) = raise_nofile(env_or("BENCH_NOFILE", 200_000));
    println!("open files: soft {soft}, hard {hard} (raised by this bench; children inherit it)");
    let (lo, hi) = widen_ports();
    println!(
        "local TCP ports: {lo}-{hi} ({} per address and port; net.ipv4.ip_local_port_range)",
        hi.saturating_sub(lo) + 1
    );
    let bin = isobench_bin();
    let h = Harness::start_with(vec![
        ("shared_buffers".to_string(), "512MB".to_string()),
        ("max_connections".to_string(), "200".to_string()),
    ]);
    let dsn = h.dsn();
    let mut b = Bench {
        h,
        bin,
        dsn,
        out: tempfile::tempdir().expect("temp dir"),
        runs: 0,
        seconds: env_or("BENCH_SECONDS", 10),
        shard_scale: env_or("BENCH_SHARD_SCALE", 50),
    };
    if parts.iter().any(|p| p == "pool") {
        println!("\n## isobench, application pool of 50 (--pool-size 50)");
        println!("| clients | peak RSS (MB) | TPS | wall (s) |");
        for &n in &counts {
            rss_row(n, b.try_isobench(n, &["--pool-size", "50"]));
        }
    }
    if parts.iter().any(|p| p == "pgbouncer") {
        println!("\n## isobench through pgbouncer (transaction mode, default_pool_size 50)");
        println!("| clients | peak RSS (MB) | TPS | wall (s) |");
        for &n in &counts {
            let args = ["--pooler", "pgbouncer:transaction", "--pooler-size", "50"];
            rss_row(n, b.try_isobench(n, &args));
        }
    }
    if parts.iter().any(|p| p == "pgbench") {
        println!("\n## pgbench through pgbouncer (transaction mode, pool 50), -j 2 -M extended");
        println!("| clients | peak RSS (MB) | TPS | wall (s) |");
        b.h.pgbench_init("bench", 1);
        for &n in &counts {
            let log = b.out.path().join(format!("pgbouncer-{n}.log"));
            let bouncer = pgbouncer_for_pgbench(&b.h, n, &log);
            let cfg = bouncer.config("bench");
            let host = match &cfg.get_hosts()[0] {
                tokio_postgres::config::Host::Unix(d) => d.display().to_string(),
                tokio_postgres::config::Host::Tcp(t) => t.clone(),
            };
            let mut cmd = Command::new(&b.h.pgbench);
            cmd.args([
                "-h",
                &host,
                "-p",
                &cfg.get_ports()[0].to_string(),
                "-U",
                SUPERUSER,
            ])
            .args(["-c", &n.to_string(), "-j", "2", "-M", "extended"])
            .args(["-T", &b.seconds.to_string(), "bench"]);
            let m = measure(cmd);
            drop(bouncer);
            if !m.ok {
                let why = m.stderr.lines().last().unwrap_or("").to_string();
                println!(
                    "| {n} | {:.1} | failed: {why} | {:.1} |",
                    m.hwm_kb as f64 / 1024.0,
                    m.wall_s
                );
                continue;
            }
            let tps = common::PgbenchRun::parse(&m.stdout).tps;
            println!(
                "| {n} | {:.1} | {tps:.0} | {:.1} |",
                m.hwm_kb as f64 / 1024.0,
                m.wall_s
            );
        }
    }
    if parts.iter().any(|p| p == "shards") {
        println!(
            "\n## {shards} isobench shards behind {processes} pgbouncer processes on one port \
             (transaction mode, server pool 50 in all)"
        );
        for n in env_list::<u32>("BENCH_SHARD_CLIENTS", "1000,50000") {
            let r = b.sharded(n, shards, processes);
            println!(
                "\n### {n} clients: TPS {:.0}, wall {:.1} s",
                r.tps, r.wall_s
            );
            if let Some(why) = &r.failed {
                println!("failed: {why}");
            }
            println!(
                "| process | peak RSS (MB) | of it anonymous, most (MB) | file-backed, most (MB) | descriptors (most held) | open-files limit |"
            );
            println!("|---|---|---|---|---|---|");
            let mb = |kb: u64| kb as f64 / 1024.0;
            for p in &r.procs {
                println!(
                    "| {} | {:.1} | {:.1} | {:.1} | {} | {} |",
                    p.role,
                    mb(p.hwm_kb),
                    mb(p.anon_kb),
                    mb(p.file_kb),
                    p.fds,
                    p.limit
                );
            }
            let isobench_kb: u64 = r
                .procs
                .iter()
                .filter(|p| p.role.starts_with("isobench"))
                .map(|p| p.hwm_kb)
                .sum();
            let bouncer_kb: u64 = r
                .procs
                .iter()
                .filter(|p| p.role.starts_with("pgbouncer"))
                .map(|p| p.hwm_kb)
                .sum();
            let isobench: Vec<&Proc> = r
                .procs
                .iter()
                .filter(|p| p.role.starts_with("isobench"))
                .collect();
            let anon: u64 = isobench.iter().map(|p| p.anon_kb).sum();
            let file = isobench.iter().map(|p| p.file_kb).max().unwrap_or(0);
            println!(
                "isobench processes' peak RSS summed: {:.1} MB (target <= 400 MB); counting the binary's \
                 pages they share once: {:.1} MB; pgbouncer processes' peak RSS summed: {:.1} MB",
                mb(isobench_kb),
                mb(anon + file),
                mb(bouncer_kb)
            );
        }
    }
    if parts.iter().any(|p| p == "tps") {
        let tps_counts: Vec<u32> = env_list("BENCH_TPS_CLIENTS", "1000,50000");
        let (lo, hi) = (tps_counts[0], *tps_counts.last().unwrap());
        let rounds: u32 = env_or("BENCH_ROUNDS", 4);
        println!(
            "\n## TPS through {processes} pgbouncer processes, {shards} shards: {hi} clients against {lo} (ABBA, {rounds} rounds)"
        );
        println!("| round | TPS at {lo} | TPS at {hi} | ratio |");
        println!("|---|---|---|---|");
        let mut ratios = Vec::new();
        let mut one = |n: u32| {
            let r = b.sharded(n, shards, processes);
            if let Some(why) = r.failed {
                panic!("{n} clients: {why}");
            }
            r.tps
        };
        for round in 1..=rounds {
            let (a, z) = if round % 2 == 1 {
                let a = one(lo);
                (a, one(hi))
            } else {
                let z = one(hi);
                (one(lo), z)
            };
            let ratio = z / a.max(1e-9);
            ratios.push(ratio);
            println!("| {round} | {a:.0} | {z:.0} | {ratio:.3} |");
        }
        let (_, median, min, max) = summary(&ratios);
        println!("median ratio {median:.3} (min {min:.3}, max {max:.3}); target >= 0.9");
    }
}
