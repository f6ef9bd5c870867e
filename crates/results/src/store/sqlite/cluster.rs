//! A replicated server in the store (store version 16): what the
//! primary's `pg_stat_replication` showed of each standby while a run
//! measured (`ServerObservations::standbys`), one row per standby in
//! `run_standbys`, and what each injected failover did
//! (`InjectedFault::failover`) in `injected_failovers` (see the parent
//! module's docs).

use rusqlite::{Connection, Row, Transaction, params};

use super::R;
use super::children;
use crate::model::{FailoverOutcome, InjectedFault, LagStat, StandbyObservation};

/// A run's `run_standbys` rows, one per standby in the observer's order.
pub(super) fn write_run_standbys(tx: &Transaction, run: u32, s: &[StandbyObservation]) -> R<()> {
    for (ordinal, o) in s.iter().enumerate() {
        tx.prepare_cached(
            "INSERT INTO run_standbys (run, ordinal, name, samples, sync_state,
                write_lag_mean_ms, write_lag_max_ms, write_lag_samples,
                flush_lag_mean_ms, flush_lag_max_ms, flush_lag_samples,
                replay_lag_mean_ms, replay_lag_max_ms, replay_lag_samples,
                replay_lag_mean_bytes, replay_lag_max_bytes, replay_lag_bytes_samples)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
        )?
        .execute(params![
            run,
            ordinal as i64,
            o.name,
            o.samples,
            o.sync_state,
            o.write_lag_ms.mean,
            o.write_lag_ms.max,
            o.write_lag_ms.samples,
            o.flush_lag_ms.mean,
            o.flush_lag_ms.max,
            o.flush_lag_ms.samples,
            o.replay_lag_ms.mean,
            o.replay_lag_ms.max,
            o.replay_lag_ms.samples,
            o.replay_lag_bytes.mean,
            o.replay_lag_bytes.max,
            o.replay_lag_bytes.samples,
        ])?;
    }
    Ok(())
}

/// Run `run`'s standbys (none in stores before version 16).
pub(super) fn read_run_standbys(conn: &Connection, run: u32) -> R<Vec<StandbyObservation>> {
    children(
        conn,
        "run_standbys",
        "SELECT name, samples, sync_state,
                write_lag_mean_ms, write_lag_max_ms, write_lag_samples,
                flush_lag_mean_ms, flush_lag_max_ms, flush_lag_samples,
                replay_lag_mean_ms, replay_lag_max_ms, replay_lag_samples,
                replay_lag_mean_bytes, replay_lag_max_bytes, replay_lag_bytes_samples
           FROM run_standbys WHERE run = ?1 ORDER BY ordinal",
        run,
        |r| {
            Ok(StandbyObservation {
                name: r.get(0)?,
                samples: r.get(1)?,
                sync_state: r.get(2)?,
                write_lag_ms: lag(r, 3)?,
                flush_lag_ms: lag(r, 6)?,
                replay_lag_ms: lag(r, 9)?,
                replay_lag_bytes: lag(r, 12)?,
            })
        },
    )
}

/// A [`LagStat`] from columns `at` (mean), `at + 1` (max), `at + 2`
/// (samples); a NULL (a stored NaN) reads as NaN.
fn lag(r: &Row, at: usize) -> rusqlite::Result<LagStat> {
    let f =
        |i: usize| -> rusqlite::Result<f64> { Ok(r.get::<_, Option<f64>>(i)?.unwrap_or(f64::NAN)) };
    Ok(LagStat {
        mean: f(at)?,
        max: f(at + 1)?,
        samples: r.get(at + 2)?,
    })
}

/// The `injected_failovers` rows of run `run`: one per injected fault
/// (`seq` as in `injected_faults`) that has a failover outcome.
pub(super) fn write_failovers(tx: &Transaction, run: u32, injected: &[InjectedFault]) -> R<()> {
    for (seq, f) in injected.iter().enumerate() {
        let Some(o) = &f.failover else { continue };
        tx.prepare_cached(
            "INSERT INTO injected_failovers (run, seq, killed, promoted, promoted_s, unavailable_s)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![
            run,
            seq as i64,
            o.killed,
            o.promoted,
            o.promoted_s,
            o.unavailable_s
        ])?;
        if let Some(writes) = o.split_brain_writes {
            tx.prepare_cached(
                "INSERT INTO failover_split_brain (run, seq, writes) VALUES (?1, ?2, ?3)",
            )?
            .execute(params![run, seq as i64, writes])?;
        }
    }
    Ok(())
}

/// Puts run `run`'s failover outcomes on its `injected` faults (by
/// `seq`); none in stores before version 16, and no writes to two
/// primaries before version 18.
pub(super) fn read_failovers(conn: &Connection, run: u32, injected: &mut [InjectedFault]) -> R<()> {
    let rows = children(
        conn,
        "injected_failovers",
        "SELECT f.seq, f.killed, f.promoted, f.promoted_s, f.unavailable_s, b.writes
           FROM injected_failovers f
           LEFT JOIN failover_split_brain b ON b.run = f.run AND b.seq = f.seq
          WHERE f.run = ?1 ORDER BY f.seq",
        run,
        |r| {
            Ok((
                r.get::<_, i64>(0)?,
                FailoverOutcome {
                    killed: r.get(1)?,
                    promoted: r.get(2)?,
                    promoted_s: r.get(3)?,
                    unavailable_s: r.get(4)?,
                    split_brain_writes: r.get(5)?,
                },
            ))
        },
    )?;
    for (seq, o) in rows {
        if let Some(f) = injected.get_mut(seq as usize) {
            f.failover = Some(o);
        }
    }
    Ok(())
}
