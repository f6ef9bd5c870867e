//! The target a study's runs use: the managed server (started per server
//! build and settings, one at a time, so that runs never compete with
//! another server for the machine) or an external one, what it reports
//! about itself, and the settings a run's database sees.

use std::collections::BTreeMap;

use anyhow::{Context, Result, anyhow};
use tokio_postgres::Client;

use crate::model::{ExperimentConfig, PgBuild};
use crate::postgres::{self, Target};
use crate::store::{Cell, Environment};

/// The managed or external server that runs use now. At most one
/// managed server runs at a time: when a cell needs other binaries or
/// settings, the current one is stopped (its directory removed) and a new
/// one initialised, and the template databases are loaded again on it.
pub(super) struct Server {
    /// The binaries (the `--pg-bin` label) and server settings it was
    /// started with: the cells that share them share the server.
    pub(super) key: (Option<String>, BTreeMap<String, String>),
    pub(super) target: Target,
    pub(super) admin: Client,
    pub(super) env: Environment,
    /// Template databases loaded on this server, by data variant.
    pub(super) loaded: Vec<bool>,
}

impl Server {
    pub(super) fn vnum(&self) -> i32 {
        self.env.server_version_num
    }

    /// Makes sure the admin connection works: after a crash or restart
    /// of the server (a fault during the last run) it is gone, so wait
    /// for the server (at most `limit`, `--server-wait`) and connect
    /// again.
    ///
    /// Errors: the server did not come back.
    pub(super) async fn ensure_admin(&mut self, limit: std::time::Duration) -> Result<()> {
        if self.admin.simple_query("SELECT 1").await.is_ok() {
            return Ok(());
        }
        let config = self.target.config(&self.target.admin_db());
        let (admin, _) = wait_for_server(&config, limit)
            .await
            .context("reconnecting to the server after it went away")?;
        self.admin = admin;
        Ok(())
    }
}

/// Starts the server for `key` (binaries, settings) as configured by
/// `cfg.target`; the key's settings override `--set` ones.
pub(super) async fn start_server(
    cfg: &ExperimentConfig,
    key: (Option<String>, BTreeMap<String, String>),
    log: &std::path::Path,
    connections: u32,
    variants: usize,
) -> Result<Server> {
    let mut tc = cfg.target.clone();
    if let Some(label) = &key.0 {
        let dir = cfg.pg_bin_dir(label).ok_or_else(|| {
            anyhow!("pg_bin={label}: no such build in the study (a bug: please report it)")
        })?;
        tc.pg_bin = Some(PgBuild {
            name: Some(label.clone()),
            dir: dir.to_path_buf(),
        });
    }
    for (k, v) in &key.1 {
        tc.settings.retain(|(name, _)| name != k);
        tc.settings.push((k.clone(), v.clone()));
    }
    let target = postgres::start(&tc, log, connections)
        .await
        .with_context(|| match (&key.0, key.1.is_empty()) {
            (None, true) => "starting the server".to_string(),
            _ => format!(
                "starting the server for pg_bin={} settings {:?}",
                key.0.as_deref().unwrap_or("(default)"),
                key.1
            ),
        })?;
    let admin = postgres::connect(&target.config(&target.admin_db())).await?;
    let env = environment(&admin).await?;
    Ok(Server {
        key,
        target,
        admin,
        env,
        loaded: vec![false; variants],
    })
}

/// What `admin`'s server reports about itself (version, the settings
/// that matter to isolation benchmarks), and the machine isobench runs on.
async fn environment(admin: &Client) -> Result<Environment> {
    let version: String = admin.query_one("SHOW server_version", &[]).await?.get(0);
    let num: String = admin
        .query_one("SHOW server_version_num", &[])
        .await?
        .get(0);
    let rows = admin
        .query(
            "SELECT name, setting || coalesce(unit, '') FROM pg_settings
              WHERE name = ANY($1) ORDER BY name",
            &[&vec![
                "max_connections",
                "shared_buffers",
                "synchronous_commit",
                "fsync",
                "max_pred_locks_per_transaction",
                "max_pred_locks_per_relation",
                "max_pred_locks_per_page",
                "default_transaction_isolation",
                "deadlock_timeout",
                "lock_timeout",
                "statement_timeout",
                "wal_level",
                "max_wal_size",
                "checkpoint_timeout",
            ]],
        )
        .await?;
    Ok(Environment {
        host: nix::unistd::gethostname()
            .map(|h| h.to_string_lossy().into_owned())
            .unwrap_or_default(),
        os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
        cpus: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        server_version: version,
        server_version_num: num.parse().unwrap_or(0),
        server_settings: rows.iter().map(|r| (r.get(0), r.get(1))).collect(),
    })
}

/// `name=value, ...` or `(none)`.
pub(super) fn fmt_settings(s: &BTreeMap<String, String>) -> String {
    if s.is_empty() {
        return "(none)".into();
    }
    s.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `SHOW server_version`, and the values in effect of the cell's
/// settings and the `--set` ones, as the run's database sees them.
pub(super) async fn shown_settings(
    db: &Client,
    cfg: &ExperimentConfig,
    cell: &Cell,
) -> Result<(String, BTreeMap<String, String>)> {
    let show = |e: tokio_postgres::Error| anyhow!("SHOW: {}", postgres::error_text(&e));
    let version: String = db
        .query_one("SHOW server_version", &[])
        .await
        .map_err(show)?
        .get(0);
    let names: Vec<String> = cell
        .settings
        .keys()
        .chain(cfg.target.settings.iter().map(|(k, _)| k))
        .cloned()
        .collect();
    let rows = db
        .query(
            "SELECT n, current_setting(n, true) FROM unnest($1::text[]) AS n",
            &[&names],
        )
        .await
        .map_err(show)?;
    let settings = rows
        .iter()
        .map(|r| {
            let v: Option<String> = r.get(1);
            (r.get(0), v.unwrap_or_else(|| "(unknown setting)".into()))
        })
        .collect();
    Ok((version, settings))
}

/// Connects to `config`, trying every 100 ms until it works or `limit`
/// has passed (a server in crash recovery refuses connections with 57P03
/// cannot_connect_now). Returns the connection and the time waited, s.
///
/// Errors: the last connection error, when `limit` passed.
pub(super) async fn wait_for_server(
    config: &tokio_postgres::Config,
    limit: std::time::Duration,
) -> Result<(Client, f64)> {
    let started = std::time::Instant::now();
    loop {
        let tried =
            tokio::time::timeout(std::time::Duration::from_secs(5), postgres::connect(config))
                .await;
        let e = match tried {
            Ok(Ok(c)) => return Ok((c, started.elapsed().as_secs_f64())),
            Ok(Err(e)) => e.to_string(),
            Err(_) => "no answer within 5 s".to_string(),
        };
        if started.elapsed() >= limit {
            return Err(anyhow!(
                "the server did not accept connections again within {} s: {e}",
                limit.as_secs()
            ));
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// Log lines of a PostgreSQL server that say it crashed or restarted
/// (src/backend/postmaster/postmaster.c, xlog.c): a backend ended by a
/// signal, the crash restart that follows, a server that did not shut
/// down cleanly, a fast or immediate shutdown.
const CRASH_MARKERS: [&str; 6] = [
    "terminated by signal",
    "was terminated by exception",
    "exited with exit code",
    "was not properly shut down",
    "received fast shutdown request",
    "received immediate shutdown request",
];

/// Why the server crashed or restarted, from what its log `log` got
/// since byte `from`: the first line with one of [`CRASH_MARKERS`]
/// (without its timestamp and pid prefix); `None` when none (or the log
/// is not readable: an external server's is elsewhere).
pub(super) fn crash_cause(log: &std::path::Path, from: u64) -> Option<String> {
    use std::io::{Read, Seek};
    let mut f = std::fs::File::open(log).ok()?;
    f.seek(std::io::SeekFrom::Start(from)).ok()?;
    let mut text = String::new();
    f.take(1 << 20).read_to_string(&mut text).ok()?;
    crash_line(&text)
}

/// The first line of `text` with a [`CRASH_MARKERS`] entry, from its
/// severity (`LOG:`, `FATAL:`, ...) on.
fn crash_line(text: &str) -> Option<String> {
    let line = text
        .lines()
        .find(|l| CRASH_MARKERS.iter().any(|m| l.contains(m)))?;
    let from = ["LOG:", "FATAL:", "PANIC:", "WARNING:"]
        .iter()
        .filter_map(|s| line.find(s).map(|i| i + s.len()))
        .min()
        .unwrap_or(0);
    Some(line[from..].trim().to_string())
}

/// Bytes in the server log `log` so far (0 when it does not exist).
pub(super) fn log_len(log: &std::path::Path) -> u64 {
    std::fs::metadata(log).map_or(0, |m| m.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crash_cause_is_the_first_line_that_says_so() {
        let log = "2026-01-01 10:00:00.000 UTC [12] LOG:  checkpoint starting: immediate\n\
                   2026-01-01 10:00:01.000 UTC [12] LOG:  server process (PID 345) was terminated by signal 9: Killed\n\
                   2026-01-01 10:00:01.000 UTC [12] DETAIL:  Failed process was running: COMMIT\n\
                   2026-01-01 10:00:01.100 UTC [350] LOG:  database system was not properly shut down; automatic recovery in progress\n";
        assert_eq!(
            crash_line(log).as_deref(),
            Some("server process (PID 345) was terminated by signal 9: Killed")
        );
        assert_eq!(crash_line("LOG:  checkpoint complete\n"), None);
    }
}
