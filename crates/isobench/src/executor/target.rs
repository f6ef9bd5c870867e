//! The target a study's runs use: the managed server (started per server
//! build and settings, one at a time, so that runs never compete with
//! another server for the machine) or an external one, what it reports
//! about itself, and the settings a run's database sees.

use std::collections::BTreeMap;

use anyhow::{Context, Result, anyhow};
use tokio_postgres::Client;

use crate::model::{
    BadInput, PgBuild, READ_FROM, REPLICATION, Replication, StudyConfig, is_run_setting,
};
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
    /// The replication mode in effect (`replication`), once isobench set
    /// it; `None`: as the server started (async on a managed one).
    pub(super) replication: Option<Replication>,
    /// Settings of the next run's database (`ALTER DATABASE ... SET`,
    /// right after its fresh copy): the run settings the server does not
    /// get at its start (`synchronous_commit` as a factor).
    pub(super) run_db_settings: Vec<(String, String)>,
    /// The failover manager's formation (`--ha`), whose data nodes
    /// `target` names; `None` without one. Dropping it stops it.
    pub(super) ha: Option<postgres::autofailover::Formation>,
}

impl Server {
    pub(super) fn vnum(&self) -> i32 {
        self.env.server_version_num
    }

    /// The target in words: the formation when a failover manager runs
    /// it, else [`Target::describe`].
    pub(super) fn describe(&self) -> String {
        match &self.ha {
            Some(f) => f.describe(),
            None => self.target.describe(),
        }
    }

    /// Gets the server ready for a run of `cell`: the run settings
    /// ([`crate::model::is_run_setting`]) of the cell, else the study's
    /// fixed ones: `replication` set on the primary when it changes
    /// (`synchronous_standby_names`, a reload, and a wait until the
    /// standbys show it), `synchronous_commit` kept for the run's
    /// database.
    ///
    /// Errors: the replication mode could not be set (see
    /// [`postgres::cluster::set_replication`]).
    pub(super) async fn prepare_run(
        &mut self,
        cfg: &StudyConfig,
        cell: &Cell,
        progress: &crate::progress::Progress,
    ) -> Result<()> {
        if let Some(control) = self.ha.as_ref().map(|f| f.control()) {
            // A node a failover killed rejoins as the standby first.
            let started = std::time::Instant::now();
            let back = control
                .heal(postgres::autofailover::FORMATION_WAIT)
                .await
                .context(
                    "pg_auto_failover: bringing the formation back to a primary and a secondary",
                )?;
            if !back.is_empty() {
                progress.note(&format!(
                    "pg_auto_failover: node {} rejoined as the standby after {:.1} s",
                    back.join(", "),
                    started.elapsed().as_secs_f64()
                ));
                // Checked again below: the new primary's standby.
                self.replication = None;
                self.ensure_admin(cfg.server_wait).await?;
            }
        }
        let run = run_settings(cfg, cell);
        self.run_db_settings = run
            .iter()
            .filter(|(k, _)| k.as_str() != REPLICATION && k.as_str() != READ_FROM)
            .cloned()
            .collect();
        let Some((_, mode)) = run.iter().find(|(k, _)| k.as_str() == REPLICATION) else {
            return Ok(());
        };
        let mode: Replication = mode.parse().map_err(|e: String| anyhow!(BadInput(e)))?;
        if self.replication == Some(mode) {
            return Ok(());
        }
        if let Some(control) = self.ha.as_ref().map(|f| f.control()) {
            control
                .set_replication(mode, &self.admin, postgres::cluster::CLUSTER_WAIT)
                .await
                .with_context(|| format!("setting replication={mode}"))?;
            self.replication = Some(mode);
            return Ok(());
        }
        let names = match self.target.standby_names() {
            n if !n.is_empty() => n,
            // An external primary: the standbys connected to it now.
            _ => postgres::cluster::replication_state(&self.admin)
                .await?
                .into_iter()
                .map(|(name, _, _)| name)
                .collect(),
        };
        postgres::cluster::set_replication(
            &self.admin,
            mode,
            &names,
            postgres::cluster::CLUSTER_WAIT,
        )
        .await
        .with_context(|| format!("setting replication={mode}"))?;
        self.replication = Some(mode);
        Ok(())
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
    cfg: &StudyConfig,
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
    let (target, ha) = if tc.cluster.ha == crate::model::Ha::None {
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
        (target, None)
    } else {
        let f = start_formation(&tc, log, connections).await?;
        (Target::External(f.client_config("postgres")), Some(f))
    };
    let admin = postgres::connect(&target.config(&target.admin_db())).await?;
    let env = environment(&admin).await?;
    Ok(Server {
        key,
        target,
        admin,
        env,
        loaded: vec![false; variants],
        replication: None,
        run_db_settings: Vec::new(),
        ha,
    })
}

/// Starts the failover manager's formation (`--ha pg_auto_failover`)
/// with the binaries and settings of `tc` (the study's `--set` ones, the
/// default `max_connections` and log level of a managed server),
/// logging into the directory of `log`.
///
/// Errors: see [`postgres::autofailover::Formation::start`].
async fn start_formation(
    tc: &crate::model::TargetConfig,
    log: &std::path::Path,
    connections: u32,
) -> Result<postgres::autofailover::Formation> {
    let bin_dir = postgres::find_bin_dir(tc.pg_bin.as_ref().map(|b| b.dir.as_path()))?;
    let mut settings: Vec<(String, String)> = tc
        .settings
        .iter()
        .filter(|(k, _)| !is_run_setting(k) || k.as_str() == crate::model::SYNCHRONOUS_COMMIT)
        .filter(|(k, _)| k.as_str() != REPLICATION)
        .cloned()
        .collect();
    for (name, value) in [
        ("max_connections", connections.max(100).to_string()),
        ("log_min_messages", "log".to_string()),
    ] {
        if !settings.iter().any(|(k, _)| k == name) {
            settings.push((name.to_string(), value));
        }
    }
    let opts = postgres::autofailover::FormationOptions {
        bin_dir,
        log_dir: log.parent().map_or_else(
            || std::path::PathBuf::from("."),
            std::path::Path::to_path_buf,
        ),
        os_user: tc.server_user.clone(),
        settings,
        fast: tc.cluster.ha_fast,
    };
    postgres::autofailover::Formation::start(&opts)
        .await
        .context("starting the pg_auto_failover formation (monitor and two nodes)")
}

/// What identifies the server a run of `cell` needs: its build and the
/// settings it starts with (the cell's settings but the run settings,
/// which change between runs without a restart).
pub(super) fn server_key(cell: &Cell) -> (Option<String>, BTreeMap<String, String>) {
    (
        cell.pg_bin.clone(),
        cell.settings
            .iter()
            .filter(|(k, _)| !is_run_setting(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}

/// The run settings ([`is_run_setting`]) of a run of `cell`: the study's
/// fixed ones (`--set`, or one value of the key) with the cell's on top.
pub(super) fn run_settings(cfg: &StudyConfig, cell: &Cell) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = cfg
        .target
        .settings
        .iter()
        .filter(|(k, _)| is_run_setting(k))
        .cloned()
        .collect();
    for (k, v) in cell.settings.iter().filter(|(k, _)| is_run_setting(k)) {
        out.retain(|(name, _)| name != k);
        out.push((k.clone(), v.clone()));
    }
    out
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
    cfg: &StudyConfig,
    cell: &Cell,
) -> Result<(String, BTreeMap<String, String>)> {
    let show = |e: tokio_postgres::Error| anyhow!("SHOW: {}", postgres::error_text(&e));
    let version: String = db
        .query_one("SHOW server_version", &[])
        .await
        .map_err(show)?
        .get(0);
    // `replication` is isobench's: shown as the setting it becomes;
    // `read_from` is the clients', no server setting.
    let names: Vec<String> = cell
        .settings
        .keys()
        .chain(cfg.target.settings.iter().map(|(k, _)| k))
        .filter(|k| k.as_str() != READ_FROM)
        .map(|k| match k.as_str() {
            REPLICATION => "synchronous_standby_names".to_string(),
            _ => k.clone(),
        })
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
