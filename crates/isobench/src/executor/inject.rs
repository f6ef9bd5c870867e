//! Faults isobench injects into a run on purpose (`--fault KIND@TIME`,
//! issue #18): a task of its own, with its own connection
//! (`application_name` `isobench-fault`, or the user's with
//! `/isobench-fault` appended, so that it does not terminate itself), waits for the measured window, then at each planned time
//! terminates the run's client connections, SIGKILLs one client backend,
//! restarts or crashes the managed server, or pauses it. Nothing of it
//! runs in the clients' loop; what the clients lose and how they recover
//! is measured as for any other fault. A pause always ends: the server is
//! continued after its hold time even when the window has ended.

use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio_postgres::{Client, Config};

use crate::model::{FailoverOutcome, FaultKind, FaultSpec, InjectedFault, Phase};
use crate::postgres::autofailover::FormationControl;
use crate::postgres::{self, ServerControl, Shutdown};

/// What the injector needs about the run.
pub(super) struct InjectTarget {
    /// The run database's connection settings.
    pub(super) config: Config,
    /// The run database's name.
    pub(super) run_db: String,
    /// Backends that are not clients and are left alone (the check
    /// connection).
    pub(super) spare_pids: Vec<i32>,
    /// The managed server's processes (restart, crash, pause); `None` on
    /// an external server, where the plan has no such kinds
    /// (`schedule::check_faults`).
    pub(super) server: Option<ServerControl>,
    /// The failover manager's formation (failover); `None` without one.
    pub(super) formation: Option<FormationControl>,
}

/// Starts the injector of `plan` for the run `t`, following the run's
/// `phase`. Returns the faults it injected, in time order, when the plan
/// is done or the measured window ended (faults planned after it are
/// dropped). An empty plan injects nothing and returns at once.
pub(super) fn spawn(
    plan: &[FaultSpec],
    t: InjectTarget,
    phase: watch::Receiver<Phase>,
) -> tokio::task::JoinHandle<Vec<InjectedFault>> {
    let mut plan = plan.to_vec();
    plan.sort_by_key(|f| f.at);
    tokio::spawn(async move {
        if plan.is_empty() {
            return Vec::new();
        }
        inject(plan, t, phase).await
    })
}

/// The injector's body; see [`spawn`].
async fn inject(
    plan: Vec<FaultSpec>,
    t: InjectTarget,
    mut phase: watch::Receiver<Phase>,
) -> Vec<InjectedFault> {
    let mut done = Vec::new();
    if !wait_for_window(&mut phase).await {
        return done;
    }
    let start = Instant::now();
    let mut config = t.config.clone();
    let clients = postgres::clients_application_name(&config);
    postgres::own_session(&mut config, "fault");
    let mut db: Option<Client> = None;
    for f in plan {
        let due = start + f.at;
        tokio::select! {
            _ = tokio::time::sleep_until(due.into()) => {}
            _ = window_ends(&mut phase) => return done,
        }
        let t_s = start.elapsed().as_secs_f64();
        let (detail, failover) = if f.kind == FaultKind::Failover {
            match failover(&t).await {
                Ok((d, o)) => (d, Some(o)),
                Err(e) => (format!("failed: {e}"), None),
            }
        } else {
            match one_fault(f, &config, &clients, &mut db, &t).await {
                Ok(d) => (d, None),
                Err(e) => (format!("failed: {e}"), None),
            }
        };
        done.push(InjectedFault {
            kind: f.kind,
            t_s,
            detail,
            failover,
        });
    }
    done
}

/// Waits until `phase` says Measuring: true; false when the run never
/// got there (it ended, or the sender is gone).
async fn wait_for_window(phase: &mut watch::Receiver<Phase>) -> bool {
    loop {
        match *phase.borrow_and_update() {
            Phase::Measuring => return true,
            Phase::Draining => return false,
            _ => {}
        }
        if phase.changed().await.is_err() {
            return false;
        }
    }
}

/// Returns once `phase` leaves Measuring (or the sender is gone).
async fn window_ends(phase: &mut watch::Receiver<Phase>) {
    loop {
        if *phase.borrow_and_update() != Phase::Measuring {
            return;
        }
        if phase.changed().await.is_err() {
            return;
        }
    }
}

/// Injects the fault `f`: through `db` (connected again when it is
/// gone: after a crash) for the kinds that pick client backends (those
/// whose `application_name` is `clients`), through
/// the server's processes for the others. Returns what it did.
///
/// Errors: the connection or the query failed, there was no client
/// backend to kill, or the server could not be signalled or did not come
/// back; as text, for the record.
async fn one_fault(
    f: FaultSpec,
    config: &Config,
    clients: &str,
    db: &mut Option<Client>,
    t: &InjectTarget,
) -> Result<String, String> {
    let server = || {
        t.server
            .clone()
            .ok_or_else(|| format!("{} needs the managed server", f.kind.name()))
    };
    match f.kind {
        FaultKind::Terminate | FaultKind::KillBackend => {
            backend_fault(f.kind, config, clients, db, t).await
        }
        FaultKind::Restart | FaultKind::Crash => {
            let (how, what) = match f.kind {
                FaultKind::Restart => (Shutdown::Fast, "fast shutdown"),
                _ => (Shutdown::Immediate, "immediate shutdown"),
            };
            let server = server()?;
            let down = tokio::task::spawn_blocking(move || server.restart(how))
                .await
                .map_err(|e| format!("restarting the server: {e}"))?
                .map_err(|e| e.to_string())?;
            Ok(format!(
                "{what} and start: accepting connections again after {down:.2} s"
            ))
        }
        FaultKind::Failover => Err("a failover is injected by `failover`".into()),
        FaultKind::Pause => {
            let server = server()?;
            let hold = f.hold.unwrap_or_default();
            let stopped = server.pause().map_err(|e| e.to_string())?;
            tokio::time::sleep(hold).await;
            server.resume().map_err(|e| e.to_string())?;
            Ok(format!(
                "SIGSTOP to the postmaster and {stopped} server processes, SIGCONT after {:.2} s",
                hold.as_secs_f64()
            ))
        }
    }
}

/// How long a failover may take to promote the standby after the kill
/// (pg_auto_failover's defaults take about 51 s).
const PROMOTION_WAIT: Duration = Duration::from_secs(180);

/// A failover: the primary node killed (its keeper and postmaster,
/// SIGKILL), then a wait until the manager reports another node as the
/// primary. Returns what it did and its outcome (the unavailability is
/// filled in from the clients' commits after the run).
///
/// Errors: no formation, no primary to kill, or the kill failed; the
/// promotion not happening is an outcome, not an error.
async fn failover(t: &InjectTarget) -> Result<(String, FailoverOutcome), String> {
    let f = t
        .formation
        .clone()
        .ok_or_else(|| "failover needs a failover manager (--ha pg_auto_failover)".to_string())?;
    let killed = f.kill_primary().await.map_err(|e| e.to_string())?;
    let mut outcome = FailoverOutcome {
        killed: killed.node.clone(),
        ..FailoverOutcome::default()
    };
    let pids = killed
        .pids
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let detail = match f.wait_promoted(&killed.node, PROMOTION_WAIT).await {
        Ok(p) => {
            let after = killed.at.elapsed().as_secs_f64();
            outcome.promoted = Some(p.name.clone());
            outcome.promoted_s = Some(after);
            format!(
                "SIGKILL to node {} (its pg_autoctl keeper and postmaster: PIDs {pids}); \
                 the monitor reported {} as {} {after:.2} s later",
                killed.node, p.name, p.reported
            )
        }
        Err(e) => format!(
            "SIGKILL to node {} (its pg_autoctl keeper and postmaster: PIDs {pids}); {e}",
            killed.node
        ),
    };
    Ok((detail, outcome))
}

/// Injects a fault of `kind` that picks client backends (terminate,
/// kill-backend) through `db`: those whose `application_name` is
/// `clients`; see [`one_fault`].
async fn backend_fault(
    kind: FaultKind,
    config: &Config,
    clients: &str,
    db: &mut Option<Client>,
    t: &InjectTarget,
) -> Result<String, String> {
    if db.as_ref().is_none_or(Client::is_closed) {
        let c = tokio::time::timeout(Duration::from_secs(5), postgres::connect(config))
            .await
            .map_err(|_| "no connection within 5 s".to_string())?
            .map_err(|e| e.to_string())?;
        *db = Some(c);
    }
    let client = db.as_ref().expect("connected above");
    let err = |e: tokio_postgres::Error| postgres::error_text(&e);
    match kind {
        FaultKind::Terminate => {
            let n: i64 = client
                .query_one(
                    "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
                       FROM pg_stat_activity
                      WHERE datname = $1 AND application_name = $3
                        AND pid <> ALL($2) AND pid <> pg_backend_pid()",
                    &[&t.run_db, &t.spare_pids, &clients],
                )
                .await
                .map_err(err)?
                .get(0);
            Ok(format!("terminated {n} client connections"))
        }
        FaultKind::KillBackend => {
            let row = client
                .query_opt(
                    "SELECT pid FROM pg_stat_activity
                      WHERE datname = $1 AND application_name = $3
                        AND pid <> ALL($2) AND pid <> pg_backend_pid()
                      ORDER BY pid DESC LIMIT 1",
                    &[&t.run_db, &t.spare_pids, &clients],
                )
                .await
                .map_err(err)?
                .ok_or_else(|| "no client backend to kill".to_string())?;
            let pid: i32 = row.get(0);
            nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            )
            .map_err(|e| format!("SIGKILL to backend PID {pid}: {e}"))?;
            Ok(format!("SIGKILL to client backend PID {pid}"))
        }
        other => Err(format!("{} does not pick client backends", other.name())),
    }
}
