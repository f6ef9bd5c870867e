//! `isobench pgbench`: pgbench 15's command line, behaviour, messages,
//! exit statuses and output streams (PostgreSQL's own pgbench tests run
//! by tests/pgbench-tap.sh; these pin what they do not, or pin it here
//! where a change shows at once): `managed` (the managed server),
//! `named` (a named server: runs in DBNAME itself), `messages` (options
//! and scripts refused, `--help`, `-V`), `logs` (`-l`), `init` (`-i`),
//! `pg18` (pgbench 17 and 18, and what issue #49 found).

mod init;
mod logs;
mod managed;
mod messages;
mod named;
mod pg18;

use crate::common::*;
use isobench::postgres::{self, ManagedServer};
use regex::Regex;

/// What a pgbench wrapper reads from the summary (the regexes of the
/// usual wrappers: tps, latency average, processed, failed).
#[derive(Debug)]
pub(super) struct Summary {
    pub tps: f64,
    pub latency_ms: f64,
    pub processed: u64,
    pub failed: u64,
    pub failed_pct: f64,
}

pub(super) fn summary(stdout: &str) -> Summary {
    let cap = |re: &str| {
        Regex::new(re)
            .unwrap()
            .captures(stdout)
            .unwrap_or_else(|| panic!("no match for {re} in:\n{stdout}"))
    };
    let tps = cap(r"(?m)^tps = ([0-9]+\.[0-9]{6}) \(without initial connection time\)$");
    let lat = cap(r"(?m)^latency average = ([0-9]+\.[0-9]{3}) ms");
    let processed = cap(r"(?m)^number of transactions actually processed: ([0-9]+)(?:/[0-9]+)?$");
    let failed = cap(r"(?m)^number of failed transactions: ([0-9]+) \(([0-9]+\.[0-9]{3})%\)$");
    Summary {
        tps: tps[1].parse().unwrap(),
        latency_ms: lat[1].parse().unwrap(),
        processed: processed[1].parse().unwrap(),
        failed: failed[1].parse().unwrap(),
        failed_pct: failed[2].parse().unwrap(),
    }
}

/// The `-P` lines of pgbench 15 (stderr).
pub(super) fn progress_lines(stderr: &str, retries: bool) -> Vec<(f64, f64)> {
    let re = if retries {
        r"(?m)^progress: ([0-9]+\.[0-9]) s, ([0-9]+\.[0-9]) tps, lat [0-9]+\.[0-9]{3} ms stddev [0-9]+\.[0-9]{3}, [0-9]+ failed, [0-9]+ retried, [0-9]+ retries$"
    } else {
        r"(?m)^progress: ([0-9]+\.[0-9]) s, ([0-9]+\.[0-9]) tps, lat [0-9]+\.[0-9]{3} ms stddev [0-9]+\.[0-9]{3}, [0-9]+ failed$"
    };
    Regex::new(re)
        .unwrap()
        .captures_iter(stderr)
        .map(|c| (c[1].parse().unwrap(), c[2].parse().unwrap()))
        .collect()
}

/// Writes script `name` with `text` into `dir`; its path.
pub(super) fn script(dir: &std::path::Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// The `-r` lines (latency, failures[, retries], command).
pub(super) fn per_command(stdout: &str, retries: bool) -> Vec<(f64, u64, String)> {
    let re = if retries {
        r"(?m)^ {3} *([0-9]+\.[0-9]{3})  +([0-9]+)  +[0-9]+  (.+)$"
    } else {
        r"(?m)^ {3} *([0-9]+\.[0-9]{3})  +([0-9]+)  (.+)$"
    };
    Regex::new(re)
        .unwrap()
        .captures_iter(stdout)
        .map(|c| {
            (
                c[1].parse().unwrap(),
                c[2].parse().unwrap(),
                c[3].to_string(),
            )
        })
        .collect()
}

/// isobench's results directory, named on the summary's last line.
pub(super) fn results_dir(stdout: &str) -> std::path::PathBuf {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("isobench results: "))
        .unwrap_or_else(|| panic!("no results line in:\n{stdout}"));
    std::path::PathBuf::from(line)
}

/// A server started through the library: a named server to isobench
/// pgbench (`-h SOCKET -p PORT -U isobench`), with SQL run on it directly.
pub(super) struct Named {
    pub server: ManagedServer,
    pub host: String,
    pub port: String,
}

impl Named {
    pub fn start(dir: &std::path::Path) -> Named {
        // Another build's binaries when ISOBENCH_TEST_PG_BIN names them
        // (PostgreSQL 18: pgbench 18's behaviour, as a user of it gets).
        let server = Server::new(dir).bin_from_env().start();
        let host = server.socket_dir().display().to_string();
        let port = server.port().to_string();
        Named { server, host, port }
    }

    /// `-h HOST -p PORT -U isobench`, then `args`, then DBNAME `postgres`.
    pub fn args<'a>(&'a self, args: &[&'a str]) -> Vec<&'a str> {
        let mut full = vec!["pgbench"];
        full.extend_from_slice(args);
        full.extend([
            "-h",
            self.host.as_str(),
            "-p",
            self.port.as_str(),
            "-U",
            postgres::SUPERUSER,
            "postgres",
        ]);
        full
    }

    /// Runs `isobench pgbench ARGS` on this server from directory `cwd`
    /// (where its results directory and logs go).
    pub fn run(
        &self,
        cwd: &std::path::Path,
        args: &[&str],
    ) -> (std::process::Output, String, String) {
        self.run_env(cwd, args, &[])
    }

    /// [`Named::run`] with environment variables `env` set.
    pub fn run_env(
        &self,
        cwd: &std::path::Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> (std::process::Output, String, String) {
        std::fs::create_dir_all(cwd).unwrap();
        let out = isobench()
            .current_dir(cwd)
            .args(self.args(args))
            .envs(env.iter().copied())
            .output()
            .expect("run isobench");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        (out, stdout, stderr)
    }

    /// The rows of `query` on database postgres, each as its columns'
    /// text (NULL as "").
    pub fn sql(&self, query: &str) -> Vec<Vec<String>> {
        let config = self.server.config("postgres");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let db = postgres::connect(&config).await.expect("connects");
            let mut out = Vec::new();
            for m in db.simple_query(query).await.expect("query runs") {
                if let tokio_postgres::SimpleQueryMessage::Row(r) = m {
                    out.push(
                        (0..r.len())
                            .map(|i| r.get(i).unwrap_or("").to_string())
                            .collect(),
                    );
                }
            }
            out
        })
    }
}
