//! The target a study's runs use: the managed server (started per server
//! build and settings, one at a time, so that runs never compete with
//! another server for the machine) or an external one, what it reports
//! about itself, and the settings a run's database sees.

use std::collections::BTreeMap;

use anyhow::{Context, Result, anyhow};
use tokio_postgres::Client;

use crate::model::{ExperimentConfig, PgBuild};
use crate::store::{Cell, Environment};
use crate::target::{self, Target};

/// The managed or external server that runs use now. At most one
/// managed server runs at a time: when a cell needs other binaries or
/// settings, the current one is stopped (its directory removed) and a new
/// one initialised, and the template databases are loaded again on it.
pub(super) struct Server {
    /// The binaries and settings it was started with (see
    /// [`Cell::server_key`]).
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
    let target = target::start(&tc, log, connections)
        .await
        .with_context(|| match (&key.0, key.1.is_empty()) {
            (None, true) => "starting the server".to_string(),
            _ => format!(
                "starting the server for pg_bin={} settings {:?}",
                key.0.as_deref().unwrap_or("(default)"),
                key.1
            ),
        })?;
    let admin = target::connect(&target.config(&target.admin_db())).await?;
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
    let show = |e: tokio_postgres::Error| anyhow!("SHOW: {}", target::error_text(&e));
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
