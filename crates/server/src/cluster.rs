//! A primary and its streaming standbys seen from a connection to the
//! primary: waiting until the standbys stream, and switching how the
//! primary waits for them (`replication`: `synchronous_standby_names`)
//! between runs, without a restart.
//!
//! `synchronous_standby_names` is changed with `ALTER SYSTEM` and a
//! reload, so it must not be given on the server's command line (a
//! command-line setting wins over `postgresql.auto.conf`, and the change
//! would be ignored without an error: checked on 15.18); isobench refuses
//! `--set synchronous_standby_names` together with `replication`.

use std::time::{Duration, Instant};

use tokio_postgres::Client;

use crate::TargetError;
use crate::model::Replication;

/// How long [`wait_streaming`] and [`set_replication`] wait by default.
pub const CLUSTER_WAIT: Duration = Duration::from_secs(60);

fn failed(what: &str, e: tokio_postgres::Error) -> TargetError {
    TargetError::Start(format!("{what}: {}", crate::error_text(&e)))
}

/// The `(application_name, state, sync_state)` of every standby connected
/// to the primary `admin` is connected to, by name.
///
/// Errors: the query failed.
pub async fn replication_state(
    admin: &Client,
) -> Result<Vec<(String, String, String)>, TargetError> {
    let rows = admin
        .query(
            "SELECT application_name, coalesce(state, ''), coalesce(sync_state, '')
               FROM pg_stat_replication ORDER BY application_name",
            &[],
        )
        .await
        .map_err(|e| failed("pg_stat_replication", e))?;
    Ok(rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect())
}

/// Waits until every standby of `names` streams from the primary `admin`
/// is connected to (`pg_stat_replication.state = 'streaming'`), at most
/// `limit`.
///
/// Errors: a standby did not stream within `limit` (naming it and what
/// the primary saw), or the query failed.
pub async fn wait_streaming(
    admin: &Client,
    names: &[String],
    limit: Duration,
) -> Result<(), TargetError> {
    let started = Instant::now();
    loop {
        let seen = replication_state(admin).await?;
        let missing: Vec<&String> = names
            .iter()
            .filter(|n| {
                !seen
                    .iter()
                    .any(|(a, state, _)| a == *n && state == "streaming")
            })
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        if started.elapsed() >= limit {
            return Err(TargetError::Start(format!(
                "standby {} did not stream within {} s (pg_stat_replication: {})",
                missing
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                limit.as_secs(),
                describe(&seen)
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `name state/sync_state, ...` or `no standby`.
fn describe(seen: &[(String, String, String)]) -> String {
    if seen.is_empty() {
        return "no standby".into();
    }
    seen.iter()
        .map(|(a, s, y)| format!("{a} {s}/{y}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Makes the primary `admin` is connected to wait for its standbys
/// `names` (in priority order) as `mode` says: `ALTER SYSTEM SET
/// synchronous_standby_names`, a reload, then a wait (at most `limit`)
/// until `pg_stat_replication` shows every standby streaming with the
/// mode's `sync_state`, so that the next commit already waits as the
/// mode says.
///
/// Errors: `mode` needs more standbys than `names`; the statements
/// failed (an external server's role must be a superuser); the standbys
/// did not get there within `limit`.
pub async fn set_replication(
    admin: &Client,
    mode: Replication,
    names: &[String],
    limit: Duration,
) -> Result<(), TargetError> {
    if mode.waits_for() as usize > names.len() {
        return Err(TargetError::Start(format!(
            "replication={mode} waits for {} standby(s), and the primary has {}",
            mode.waits_for(),
            names.len()
        )));
    }
    let value = mode.standby_names(names);
    admin
        .batch_execute(&format!(
            "ALTER SYSTEM SET synchronous_standby_names = '{}'",
            value.replace('\'', "''")
        ))
        .await
        .map_err(|e| failed("ALTER SYSTEM SET synchronous_standby_names", e))?;
    admin
        .batch_execute("SELECT pg_reload_conf()")
        .await
        .map_err(|e| failed("pg_reload_conf()", e))?;
    let started = Instant::now();
    loop {
        let shown: String = admin
            .query_one("SELECT current_setting('synchronous_standby_names')", &[])
            .await
            .map_err(|e| failed("synchronous_standby_names", e))?
            .get(0);
        let seen = replication_state(admin).await?;
        let in_effect = shown == value
            && names.iter().enumerate().all(|(rank, n)| {
                seen.iter().any(|(a, state, sync)| {
                    a == n && state == "streaming" && sync == mode.sync_state(rank)
                })
            });
        if in_effect {
            return Ok(());
        }
        if started.elapsed() >= limit {
            return Err(TargetError::Start(format!(
                "replication={mode} not in effect within {} s: synchronous_standby_names = '{shown}' \
                 (asked for '{value}'; a --set of it on the command line wins over ALTER SYSTEM), \
                 pg_stat_replication: {}",
                limit.as_secs(),
                describe(&seen)
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
