//! What serves and watches a run while its clients run, started before
//! the load and stopped after it, on every driver:
//! - [`Watchers`]: the server's observer (`pg_stat_*`, wait events,
//!   SIRead locks, plans) and the declared checks sampled during the run
//!   (`during = true`); the built-in driver and the load-command driver
//!   both run them;
//! - [`RunServices`]: for isobench's own clients, the watchers plus the
//!   run's pgbouncer (`--pooler`) and its fault injector (`--fault`), and
//!   the phase they all follow.

use anyhow::{Context, Result, anyhow};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::RunCtx;
use crate::executor::checks::{self, During};
use crate::executor::pooler::{RunPooler, Where};
use crate::model::{
    BadInput, InjectedFault, Isolation, ObserveLevel, Phase, ServerObservations, StudyConfig,
};
use crate::observe;
use crate::store;
use crate::workload::ExplainStatement;

/// The observer and the during-run checks of one run, following one
/// phase channel.
pub(super) struct Watchers {
    observer: JoinHandle<ServerObservations>,
    during: JoinHandle<Result<During, BadInput>>,
}

/// What the watchers saw: the server's observations, and the during-run
/// checks' samples (an error: one could not run, or its task failed).
pub(super) struct Watched {
    pub server: ServerObservations,
    pub during: Result<During>,
}

impl Watchers {
    /// Starts watching `database` on `config` as `phase` says: the
    /// observer with `options` (explaining `explain`), and `cfg`'s declared
    /// checks with `during` (none when `checks` is false).
    pub fn start(
        cfg: &StudyConfig,
        (config, database): (&tokio_postgres::Config, &str),
        explain: Vec<ExplainStatement>,
        options: observe::ObserveOptions,
        checks: bool,
        phase: &watch::Sender<Phase>,
    ) -> Self {
        let observer = tokio::spawn(observe::observe(
            config.clone(),
            database.to_string(),
            explain,
            options,
            phase.subscribe(),
        ));
        let during = tokio::spawn(checks::during_run(
            config.clone(),
            if checks {
                cfg.checks.clone()
            } else {
                Vec::new()
            },
            cfg.sample_interval,
            phase.subscribe(),
        ));
        Self { observer, during }
    }

    /// Waits for both once the phase is `Draining`.
    pub async fn finish(self) -> Watched {
        let server = self.observer.await.unwrap_or_default();
        let during = match self.during.await {
            Ok(r) => r.map_err(anyhow::Error::from),
            Err(e) => Err(anyhow!("the declared checks' sampler: {e}")),
        };
        Watched { server, during }
    }
}

/// The services of a run of isobench's own clients: the phase, pgbouncer
/// (if any), the watchers and the fault injector.
pub(super) struct RunServices {
    pub phase: watch::Sender<Phase>,
    pub pooler: Option<RunPooler>,
    watchers: Watchers,
    injector: JoinHandle<Vec<InjectedFault>>,
}

/// What the services leave when the clients are done: what the watchers
/// saw (pgbouncer's own figures in `server`), the faults injected, and,
/// sharded, the pgbouncer that serves the other shards until they are
/// done too.
pub(super) struct Served {
    pub watched: Watched,
    pub injected: Vec<InjectedFault>,
    pub pooler: Option<RunPooler>,
}

impl RunServices {
    /// Starts the run's services for the run database `ctx.run_db`:
    /// pgbouncer first (shard 0 then marks the run prepared, with where it
    /// listens), the observer and the during-run checks (by shard 0 only:
    /// `lead`), then the fault injector, which spares `check_db`.
    ///
    /// Errors: pgbouncer did not start, the coordination failed, the check
    /// connection's backend pid could not be read.
    pub async fn start(
        ctx: &RunCtx<'_>,
        explain: Vec<ExplainStatement>,
        check_db: &tokio_postgres::Client,
        lead: bool,
    ) -> Result<Self> {
        let (cfg, run, index) = (ctx.cfg, ctx.run, ctx.index);
        let db_config = ctx.srv.target.config(ctx.run_db);
        let (phase, _) = watch::channel(Phase::Connecting);
        // Behind pgbouncer the clients connect through it; everything
        // else goes to the server.
        let pooler = RunPooler::start(
            cfg,
            &run.cell,
            Where {
                server: &db_config,
                log: ctx.dir.join(store::PGBOUNCER_LOG),
                phase: phase.subscribe(),
                coord: ctx.coord.map(|c| (c, index)),
            },
        )
        .await?;
        if let (Some(c), true) = (ctx.coord, lead) {
            let published = pooler.as_ref().and_then(|p| p.published());
            c.prepared(index, published.as_deref()).await?;
        }
        let options = observe::ObserveOptions {
            // The server is observed once, by shard 0.
            level: if lead {
                cfg.observe
            } else {
                ObserveLevel::None
            },
            sample_interval: cfg.sample_interval,
            backends: observe::Backends::Isobench,
            siread_locks: run.cell.isolation == Isolation::Serializable,
        };
        let watchers = Watchers::start(
            cfg,
            (&db_config, ctx.run_db),
            explain,
            options,
            lead,
            &phase,
        );
        let injector = start_injector(ctx, check_db, &db_config, &phase).await?;
        Ok(Self {
            phase,
            pooler,
            watchers,
            injector,
        })
    }

    /// The connection settings the clients use: pgbouncer's, or the run
    /// database's.
    pub fn clients_config(&self, ctx: &RunCtx<'_>) -> tokio_postgres::Config {
        let db_config = ctx.srv.target.config(ctx.run_db);
        match &self.pooler {
            Some(p) => p.clients_config(&db_config, ctx.run_db),
            None => db_config,
        }
    }

    /// Stops watching once the clients are done (phase `Draining`).
    /// Unsharded, pgbouncer stops too; sharded, shard 0 keeps it for the
    /// other shards ([`Served::pooler`]).
    pub async fn stop(self, sharded: bool) -> Served {
        let Self {
            phase,
            mut pooler,
            watchers,
            injector,
        } = self;
        phase.send_replace(Phase::Draining);
        let mut watched = watchers.finish().await;
        if let Some(p) = pooler.as_mut() {
            p.observed(&mut watched.server).await;
        }
        if !sharded && let Some(p) = pooler.take() {
            p.stop().await;
        }
        let injected = injector.await.unwrap_or_default();
        Served {
            watched,
            injected,
            pooler,
        }
    }
}

/// Starts the injector of the run's fault plan (`cfg.faults`, or the
/// cell's plan when the fault is a factor) for the run database
/// (connection settings `db_config`), following `phase`; the check
/// connection `check_db` is left alone; the managed server's control
/// restarts, crashes and pauses it, the formation's fails over the
/// failover manager's cluster.
///
/// Errors: the check connection's backend pid could not be read.
async fn start_injector(
    ctx: &RunCtx<'_>,
    check_db: &tokio_postgres::Client,
    db_config: &tokio_postgres::Config,
    phase: &watch::Sender<Phase>,
) -> Result<JoinHandle<Vec<InjectedFault>>> {
    let check_pid: i32 = check_db
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .context("the check connection's backend pid")?
        .get(0);
    Ok(crate::executor::inject::spawn(
        &ctx.cfg.faults_of(&ctx.run.cell),
        crate::executor::inject::InjectTarget {
            config: db_config.clone(),
            run_db: ctx.run_db.to_string(),
            spare_pids: vec![check_pid],
            server: ctx.srv.target.control(),
            formation: ctx.srv.ha.as_ref().map(|f| f.control()),
        },
        phase.subscribe(),
    ))
}
