//! The connection pooler of a study's runs (`--pooler`): the checks
//! before anything starts, and for each run behind pgbouncer a pgbouncer
//! of its own in front of the server ([`crate::postgres::pgbouncer`]),
//! the clients' connection settings through it, its observer, and its
//! stop once the clients are done. isobench's own sessions (loading, the
//! fresh copy, the server's observer, the checks, the fault injector)
//! still go to the server directly.
//!
//! A pgbouncer per run, not per study: each cell may have its own mode
//! and pool size, no pooled server connection outlives the run that
//! opened it (the next run's fresh copy drops the database), and every run
//! starts with an empty pool, as every run starts with a fresh copy.

use std::path::PathBuf;

use anyhow::{Context, Result};
use tokio::sync::watch;
use tokio_postgres::Config;

use crate::model::{
    BadInput, ExperimentConfig, ObserveLevel, PGBOUNCER_DEFAULT_POOL_SIZE, Phase, PoolMode,
    PoolerObservations, QueryMode, ServerObservations,
};
use crate::observe::{PoolerInfo, observe_pooler};
use crate::postgres::pgbouncer::{self, PgBouncer, PgBouncerOptions, Upstream, Version};
use crate::store::Cell;

/// The pgbouncer a study uses: its executable and version.
#[derive(Debug, Clone)]
pub(super) struct Bouncer {
    pub bin: PathBuf,
    pub version: Version,
}

/// Checks the pooler factors of `cfg` before anything starts, and finds
/// pgbouncer when a cell needs it (`None` when none does).
///
/// Errors ([`BadInput`], exit 2): `--pooler-size` without pgbouncer; a
/// pooler with an external load, a sharded study or a DSN of several
/// hosts; no pgbouncer; `-M prepared` behind pgbouncer in transaction
/// mode before 1.21 (named with the version found and the fix); session
/// mode with more connections than pgbouncer's pool (the rest would wait
/// for ever).
pub(super) fn check(cfg: &ExperimentConfig) -> Result<Option<Bouncer>> {
    let p = &cfg.pooler;
    let bad = |m: String| Err(BadInput(m).into());
    if !p.pgbouncer() {
        if !p.sizes.is_empty() {
            return bad(
                "--pooler-size sizes pgbouncer's pool (its default_pool_size): give --pooler pgbouncer:transaction \
                 or pgbouncer:session too, or drop --pooler-size"
                    .into(),
            );
        }
        return Ok(None);
    }
    if cfg.load.active() {
        return bad(
            "--pooler with --load-cmd: an external load connects by itself (point its {dsn} at your own pooler); \
             --pooler puts pgbouncer in front of isobench's own clients"
                .into(),
        );
    }
    if let Some(s) = cfg.shard {
        return bad(format!(
            "--shard {s} with --pooler: a sharded study's processes would each start their own pgbouncer; \
             run one pgbouncer yourself and give its address as --dsn"
        ));
    }
    if let Some(dsn) = &cfg.target.dsn
        && let Ok(c) = dsn.parse::<Config>()
        && c.get_hosts().len() > 1
    {
        return bad(
            "--pooler with a DSN of several hosts: pgbouncer is put in front of one server; give one host".into(),
        );
    }
    let bin =
        pgbouncer::find_bin(cfg.pooler.bin.as_deref()).map_err(|e| BadInput(e.to_string()))?;
    let version = pgbouncer::version(&bin).map_err(|e| BadInput(e.to_string()))?;
    if p.transaction_mode()
        && cfg.scripts.mode == QueryMode::Prepared
        && !version.prepared_in_transaction_mode()
    {
        return bad(format!(
            "-M prepared with --pooler pgbouncer:transaction: pgbouncer {version} ({}) keeps no prepared statements \
             in transaction mode (protocol-level prepared statements arrived in pgbouncer 1.21), so a statement \
             prepared on one server connection is missing on the next; use -M extended (statements parsed with \
             every execution: the default behind pgbouncer in transaction mode), or a pgbouncer of 1.21 or later \
             (--pgbouncer-bin)",
            bin.display()
        ));
    }
    if p.poolers
        .contains(&crate::model::Pooler::PgBouncer(PoolMode::Session))
    {
        let smallest = p
            .sizes
            .iter()
            .copied()
            .min()
            .unwrap_or(PGBOUNCER_DEFAULT_POOL_SIZE);
        let conns = if cfg.pool_size.is_empty() {
            &cfg.clients
        } else {
            &cfg.pool_size
        };
        if let Some(&n) = conns.iter().find(|&&n| n > smallest) {
            let what = if cfg.pool_size.is_empty() {
                "clients (a connection each)"
            } else {
                "application pool connections"
            };
            return bad(format!(
                "--pooler pgbouncer:session with {n} {what} and a pgbouncer pool of {smallest}: in session mode a \
                 client keeps its server connection until it disconnects, so {} would wait for ever; use \
                 pgbouncer:transaction, a --pooler-size of at least {n}, or an application pool (--pool-size) \
                 of at most {smallest}",
                n - smallest
            ));
        }
    }
    Ok(Some(Bouncer { bin, version }))
}

/// A run's pgbouncer and what it saw.
pub(super) struct RunPooler {
    bouncer: PgBouncer,
    observer: Option<tokio::task::JoinHandle<(Option<PoolerObservations>, Vec<String>)>>,
}

impl RunPooler {
    /// Starts the pgbouncer of `cell`, if it runs behind one, in front of
    /// the server `server` (its connection settings for the run's
    /// database), logging to `log`, with room for the cell's connections;
    /// observed while `phase` says Measuring unless `observe` is none.
    ///
    /// Errors: pgbouncer did not start (see its log).
    pub(super) async fn start(
        cfg: &ExperimentConfig,
        cell: &Cell,
        server: &Config,
        log: PathBuf,
        phase: watch::Receiver<Phase>,
    ) -> Result<Option<RunPooler>> {
        let Some(mode) = cell.pooler.and_then(|p| p.pgbouncer()) else {
            return Ok(None);
        };
        // Found and checked before the study started; found again here,
        // which costs one `pgbouncer --version`.
        let Bouncer { bin, version } = check(cfg)?.context("a pgbouncer cell without pgbouncer")?;
        let pool_size = cell.pooler_size.unwrap_or(PGBOUNCER_DEFAULT_POOL_SIZE);
        let opts = PgBouncerOptions {
            bin,
            version,
            mode,
            pool_size,
            max_clients: cell.pool_size.unwrap_or(cell.clients) + 100,
            upstream: Upstream::of(server)?,
            log_path: log,
            os_user: cfg.target.server_user.clone(),
        };
        let bouncer = tokio::task::spawn_blocking(move || PgBouncer::start(&opts))
            .await
            .context("the pgbouncer start task failed")??;
        let observer = (cfg.observe != ObserveLevel::None).then(|| {
            tokio::spawn(observe_pooler(
                bouncer.admin_config(),
                server.get_dbname().unwrap_or_default().to_string(),
                PoolerInfo {
                    version: version.to_string(),
                    pool_mode: mode.name().to_string(),
                    pool_size,
                },
                phase,
            ))
        });
        Ok(Some(RunPooler { bouncer, observer }))
    }

    /// The clients' connection settings for database `dbname`, through
    /// pgbouncer.
    pub(super) fn clients_config(&self, dbname: &str) -> Config {
        self.bouncer.config(dbname)
    }

    /// Once the clients are done: what the observer saw, added to the
    /// server's observations `server` (its problems to their errors),
    /// then pgbouncer stopped.
    pub(super) async fn finish(self, server: &mut ServerObservations) {
        if let Some(observer) = self.observer {
            match observer.await {
                Ok((obs, errors)) => {
                    server.pooler = obs;
                    server.errors.extend(errors);
                }
                Err(e) => server.errors.push(format!("pgbouncer observer: {e}")),
            }
        }
        let mut bouncer = self.bouncer;
        let _ = tokio::task::spawn_blocking(move || bouncer.stop()).await;
    }
}
