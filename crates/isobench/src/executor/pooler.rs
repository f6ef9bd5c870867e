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
//!
//! Several processes (`--pooler-processes N`) listen on one TCP port
//! (`so_reuseport`) and share the pool and the clients. In a sharded
//! study shard 0 starts them with the run's fresh copy, before it marks
//! the run prepared, and publishes where they listen with the run in
//! `isobench_coord.runs`; the other shards, on the same machine, connect
//! their clients there; shard 0 stops them once every shard ended the
//! run.

use std::path::PathBuf;

use anyhow::{Context, Result};
use tokio::sync::watch;
use tokio_postgres::Config;

use crate::model::{
    BadInput, ObserveLevel, PGBOUNCER_DEFAULT_POOL_SIZE, Phase, PoolMode, PoolerObservations,
    QueryMode, ServerObservations, StudyConfig,
};
use crate::observe::{PoolerInfo, observe_pooler};
use crate::postgres::pgbouncer::{self, Listener, PgBouncer, PgBouncerOptions, Upstream, Version};
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
/// Errors ([`BadInput`], exit 2): `--pooler-size` or
/// `--pooler-processes` without pgbouncer; a pooler with an external load
/// or a DSN of several hosts; no pgbouncer; several processes with a
/// pgbouncer older than 1.12 (no `so_reuseport`), more processes than
/// server connections, or in session mode; `-M prepared` behind
/// pgbouncer in transaction mode before 1.21 (named with the version
/// found and the fix); session mode with more connections than
/// pgbouncer's pool (the rest would wait for ever).
pub(super) fn check(cfg: &StudyConfig) -> Result<Option<Bouncer>> {
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
        if p.processes.is_some() {
            return bad(
                "--pooler-processes runs pgbouncer as several processes: give --pooler pgbouncer:transaction too, \
                 or drop --pooler-processes"
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
    let processes = p.process_count();
    if processes > 1 {
        if (version.major, version.minor) < (1, 12) {
            return bad(format!(
                "--pooler-processes {processes}: pgbouncer {version} ({}) cannot share a port (so_reuseport \
                 arrived in pgbouncer 1.12); use one process, or a newer pgbouncer (--pgbouncer-bin)",
                bin.display()
            ));
        }
        if p.poolers
            .contains(&crate::model::Pooler::PgBouncer(PoolMode::Session))
        {
            return bad(format!(
                "--pooler-processes {processes} with pgbouncer:session: each process has its own pool and the \
                 kernel spreads the clients over the processes unevenly, so some clients would wait for ever \
                 for a server connection; use pgbouncer:transaction, or one process"
            ));
        }
        let smallest = p
            .sizes
            .iter()
            .copied()
            .min()
            .unwrap_or(PGBOUNCER_DEFAULT_POOL_SIZE);
        if smallest < processes {
            return bad(format!(
                "--pooler-processes {processes} with a pool of {smallest} server connections: the processes \
                 share the pool, and each needs one at least; give --pooler-size {processes} or more, or fewer \
                 processes"
            ));
        }
    }
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
        // A sharded study's shards each open their application pool.
        let shards = cfg.shard.map_or(1, |s| s.count);
        let conns: Vec<u32> = if cfg.pool_size.is_empty() {
            cfg.clients.clone()
        } else {
            cfg.pool_size.iter().map(|p| p * shards).collect()
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

/// A run's pgbouncer: the one this process started (and what it saw), or
/// shard 0's.
pub(super) enum RunPooler {
    /// Started here: an unsharded study, or shard 0.
    Own {
        bouncer: PgBouncer,
        observer: Option<tokio::task::JoinHandle<(Option<PoolerObservations>, Vec<String>)>>,
    },
    /// Shard 0's, on this machine.
    Shard0(Listener),
}

/// What a run's pgbouncer needs to know of the study.
pub(super) struct Where<'a> {
    /// The server's connection settings for the run's database.
    pub server: &'a Config,
    /// pgbouncer's log.
    pub log: PathBuf,
    /// The phase of the run, for the observer.
    pub phase: watch::Receiver<Phase>,
    /// A sharded study's coordination, and the run.
    pub coord: Option<(&'a crate::executor::shard::Coord, u32)>,
}

impl RunPooler {
    /// The pgbouncer of `cell`, if it runs behind one: unsharded or shard
    /// 0, started in front of the server, with room for every shard's
    /// connections to it, observed while `phase` says Measuring unless
    /// `observe` is none; another shard, shard 0's, as published with the
    /// run.
    ///
    /// Errors: pgbouncer did not start (see its log); shard 0 published
    /// none, or runs on another machine (its pgbouncer listens on the
    /// loopback address only).
    pub(super) async fn start(
        cfg: &StudyConfig,
        cell: &Cell,
        at: Where<'_>,
    ) -> Result<Option<RunPooler>> {
        let Some(mode) = cell.pooler.and_then(|p| p.pgbouncer()) else {
            return Ok(None);
        };
        if let Some((c, run)) = at.coord.filter(|(c, _)| c.spec.index != 0) {
            let text = c.pooler(run).await?.with_context(|| {
                format!("shard 0 published no pgbouncer for run {run} (is it an older isobench?)")
            })?;
            let listener = listener_from_text(&text)?;
            let here = pgbouncer::machine();
            if listener.machine != here {
                anyhow::bail!(
                    "--pooler in a sharded study: shard 0's pgbouncer runs on {} and listens on its loopback \
                     address only, and this shard runs on {here}; run every shard on shard 0's machine (local \
                     shards, or a Slurm cluster of one node), or leave --pooler out",
                    listener.machine
                );
            }
            return Ok(Some(RunPooler::Shard0(listener)));
        }
        // Found and checked before the study started; found again here,
        // which costs one `pgbouncer --version`.
        let Bouncer { bin, version } = check(cfg)?.context("a pgbouncer cell without pgbouncer")?;
        let pool_size = cell.pooler_size.unwrap_or(PGBOUNCER_DEFAULT_POOL_SIZE);
        let processes = cfg.pooler.process_count();
        let shards = cfg.shard.map_or(1, |s| s.count);
        let opts = PgBouncerOptions {
            bin,
            version,
            mode,
            pool_size,
            // Every shard's connections: its clients, or its application
            // pool.
            max_clients: cell.pool_size.map_or(cell.clients, |p| p * shards) + 100,
            processes,
            tcp_clients: processes > 1 || cfg.shard.is_some(),
            upstream: Upstream::of(at.server)?,
            log_path: at.log,
            os_user: cfg.target.server_user.clone(),
        };
        let bouncer = tokio::task::spawn_blocking(move || PgBouncer::start(&opts))
            .await
            .context("the pgbouncer start task failed")??;
        tracing::info!("{}", bouncer.describe());
        let observer = (cfg.observe != ObserveLevel::None).then(|| {
            tokio::spawn(observe_pooler(
                bouncer.admin_configs(),
                at.server.get_dbname().unwrap_or_default().to_string(),
                PoolerInfo {
                    version: version.to_string(),
                    pool_mode: mode.name().to_string(),
                    pool_size,
                },
                at.phase,
            ))
        });
        Ok(Some(RunPooler::Own { bouncer, observer }))
    }

    /// Where the other shards' clients connect, as text for
    /// `isobench_coord.runs` (shard 0's pgbouncer only).
    pub(super) fn published(&self) -> Option<String> {
        match self {
            RunPooler::Own { bouncer, .. } => bouncer.listener().map(|l| listener_text(&l)),
            RunPooler::Shard0(_) => None,
        }
    }

    /// The clients' connection settings for database `dbname`, through
    /// pgbouncer; `server`: this process's settings for the server.
    pub(super) fn clients_config(&self, server: &Config, dbname: &str) -> Config {
        match self {
            RunPooler::Own { bouncer, .. } => bouncer.config(dbname),
            RunPooler::Shard0(l) => l.config(server, dbname),
        }
    }

    /// Once the clients are done: what the observer saw, added to the
    /// server's observations `server` (its problems to their errors).
    pub(super) async fn observed(&mut self, server: &mut ServerObservations) {
        if let RunPooler::Own { observer, .. } = self
            && let Some(observer) = observer.take()
        {
            match observer.await {
                Ok((obs, errors)) => {
                    server.pooler = obs;
                    server.errors.extend(errors);
                }
                Err(e) => server.errors.push(format!("pgbouncer observer: {e}")),
            }
        }
    }

    /// Stops the pgbouncer started here (after every shard's clients are
    /// done with it).
    pub(super) async fn stop(self) {
        if let RunPooler::Own { mut bouncer, .. } = self {
            let _ = tokio::task::spawn_blocking(move || bouncer.stop()).await;
        }
    }
}

/// `l` as JSON, for `isobench_coord.runs.pooler`.
fn listener_text(l: &Listener) -> String {
    serde_json::json!({"machine": l.machine, "port": l.port, "password": l.password}).to_string()
}

/// The listener [`listener_text`] wrote.
///
/// Errors: not its JSON.
fn listener_from_text(text: &str) -> Result<Listener> {
    let v: serde_json::Value =
        serde_json::from_str(text).with_context(|| format!("shard 0's pgbouncer: '{text}'"))?;
    Ok(Listener {
        machine: v["machine"].as_str().unwrap_or_default().to_string(),
        port: v["port"]
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())
            .with_context(|| format!("shard 0's pgbouncer has no port: '{text}'"))?,
        password: v["password"].as_str().map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listener_goes_through_the_coordination_table_and_back() {
        for password in [None, Some("x\"y".to_string())] {
            let l = Listener {
                machine: "vm".into(),
                port: 6432,
                password,
            };
            assert_eq!(listener_from_text(&listener_text(&l)).unwrap(), l);
        }
        assert!(listener_from_text("{}").is_err());
    }
}
