//! The connection pooler in the store (store version 14): a cell's
//! `--pooler` and pgbouncer pool size in `cell_poolers`, and what
//! pgbouncer's admin console showed of a run behind it in `run_pooler`
//! (see the parent module's docs).

use rusqlite::{Connection, Transaction, params};

use super::R;
use super::children;
use crate::model::{CountStatF, PoolerObservations};
use crate::store::Cell;

/// Cell `id`'s `cell_poolers` row, when it has a pooler (once per cell).
pub(super) fn write_cell_pooler(tx: &Transaction, id: i64, cell: &Cell) -> R<()> {
    if let Some(pooler) = &cell.pooler {
        tx.prepare_cached(
            "INSERT OR IGNORE INTO cell_poolers (cell, pooler, pool_size) VALUES (?1, ?2, ?3)",
        )?
        .execute(params![id, pooler.to_string(), cell.pooler_size])?;
    }
    Ok(())
}

/// A run's `run_pooler` row: what pgbouncer's admin console showed.
pub(super) fn write_run_pooler(tx: &Transaction, run: u32, p: &PoolerObservations) -> R<()> {
    tx.prepare_cached(
        "INSERT INTO run_pooler (run, version, pool_mode, pool_size, samples,
            cl_waiting_mean, cl_waiting_max, cl_active_mean, cl_active_max,
            sv_active_mean, sv_active_max, sv_idle_mean, sv_idle_max, maxwait_ms,
            xacts, queries, wait_ms, wait_per_xact_ms, wait_per_query_ms,
            xact_time_ms, query_time_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
            ?17, ?18, ?19, ?20, ?21)",
    )?
    .execute(params![
        run,
        p.version,
        p.pool_mode,
        p.pool_size,
        p.samples,
        p.cl_waiting.mean,
        p.cl_waiting.max,
        p.cl_active.mean,
        p.cl_active.max,
        p.sv_active.mean,
        p.sv_active.max,
        p.sv_idle.mean,
        p.sv_idle.max,
        p.maxwait_ms,
        p.xacts,
        p.queries,
        p.wait_ms,
        p.wait_per_xact_ms,
        p.wait_per_query_ms,
        p.xact_time_ms,
        p.query_time_ms,
    ])?;
    Ok(())
}

/// Run `run`'s `run_pooler` row, if it ran behind pgbouncer (none in
/// stores before version 14).
pub(super) fn read_run_pooler(conn: &Connection, run: u32) -> R<Option<PoolerObservations>> {
    let mut rows = children(
        conn,
        "run_pooler",
        "SELECT version, pool_mode, pool_size, samples, cl_waiting_mean, cl_waiting_max,
                cl_active_mean, cl_active_max, sv_active_mean, sv_active_max, sv_idle_mean,
                sv_idle_max, maxwait_ms, xacts, queries, wait_ms, wait_per_xact_ms,
                wait_per_query_ms, xact_time_ms, query_time_ms
           FROM run_pooler WHERE run = ?1",
        run,
        |r| {
            // A NaN was stored as NULL (see the module docs).
            let f = |i: usize| -> rusqlite::Result<f64> {
                Ok(r.get::<_, Option<f64>>(i)?.unwrap_or(f64::NAN))
            };
            let gauge = |mean: usize| -> rusqlite::Result<CountStatF> {
                Ok(CountStatF {
                    mean: f(mean)?,
                    max: r.get(mean + 1)?,
                })
            };
            Ok(PoolerObservations {
                version: r.get(0)?,
                pool_mode: r.get(1)?,
                pool_size: r.get(2)?,
                samples: r.get(3)?,
                cl_waiting: gauge(4)?,
                cl_active: gauge(6)?,
                sv_active: gauge(8)?,
                sv_idle: gauge(10)?,
                maxwait_ms: f(12)?,
                xacts: r.get(13)?,
                queries: r.get(14)?,
                wait_ms: f(15)?,
                wait_per_xact_ms: f(16)?,
                wait_per_query_ms: f(17)?,
                xact_time_ms: f(18)?,
                query_time_ms: f(19)?,
            })
        },
    )?;
    Ok(rows.pop())
}
