//! The server's tables: `pg_stat_database` counters, wait events,
//! SIRead locks and the connection pooler per cell.

use super::*;

/// `pg_stat_database` rates: a row per counter, a column per cell headed
/// by `labels` (one per cell).
pub fn counters(m: &ReportModel, labels: &[String]) -> Table {
    let mut cols = vec![Column::text("counter (per s)")];
    cols.extend(labels.iter().map(Column::num));
    let mut t = Table::new(cols);
    for n in &m.counter_names {
        let mut row = vec![Value::text(n.clone())];
        row.extend(
            m.counter_rates
                .iter()
                .map(|r| opt_value(r.get(n).copied(), 1)),
        );
        t.row(row);
    }
    t
}

/// The `top` most frequent wait events of each cell.
pub fn wait_events(m: &ReportModel, top: usize) -> Table {
    let mut t = Table::new(vec![
        Column::text("cell"),
        Column::text("wait event"),
        Column::num("observations (backend samples)"),
        Column::num("share (%)"),
    ]);
    for (i, (total, shares)) in m.wait_events.iter().enumerate() {
        for w in shares.iter().take(top) {
            t.row(vec![
                cell_value(m, i),
                Value::text(w.event.clone()),
                Value::num(w.count as f64, format!("{} of {total}", w.count)),
                Value::num(w.pct, fmt_fixed(w.pct, 1)),
            ]);
        }
    }
    t
}

/// SIRead locks by granularity of the cells `which` (indexes into the
/// model's cells); a cell without any has a `none` row.
pub fn siread_locks(m: &ReportModel, which: &[usize]) -> Table {
    let mut t = Table::new(vec![
        Column::text("cell"),
        Column::text("granularity"),
        Column::num("mean (locks)"),
        Column::num("max (locks)"),
    ]);
    for &i in which {
        let by = &m.siread[i];
        if by.is_empty() {
            t.row(vec![
                cell_value(m, i),
                "none".into(),
                Value::num(0.0, "0.0"),
                Value::count(0),
            ]);
        }
        for (gran, s) in by {
            t.row(vec![
                cell_value(m, i),
                Value::text(gran.clone()),
                Value::num(s.mean, fmt_fixed(s.mean, 1)),
                Value::count(s.max),
            ]);
        }
    }
    t
}

/// pgbouncer's pool per cell that ran behind it (empty without): clients
/// waiting and server connections in use (`SHOW POOLS`, mean and maximum),
/// the longest wait, and the wait per transaction against the latency
/// (`SHOW STATS`).
pub fn pooler(m: &ReportModel) -> Table {
    let mut t = Table::new(vec![
        Column::text("cell"),
        Column::text("pgbouncer (version · mode · pool)"),
        Column::num("clients waiting (mean)"),
        Column::num("clients waiting (max)"),
        Column::num("server connections active (mean)"),
        Column::num("longest wait (ms)"),
        Column::num("wait per transaction (ms)"),
        Column::num("share of latency (%)"),
    ]);
    for (i, c) in m.cells.iter().enumerate() {
        let Some(p) = crate::report::server::pooler_summary(c) else {
            continue;
        };
        t.row(vec![
            cell_value(m, i),
            Value::text(p.setup.clone()),
            Value::num(p.cl_waiting_mean, fmt_fixed(p.cl_waiting_mean, 1)),
            Value::count(p.cl_waiting_max),
            Value::num(p.sv_active_mean, fmt_fixed(p.sv_active_mean, 1)),
            Value::num(p.maxwait_ms, fmt_ms(p.maxwait_ms)),
            Value::num(p.wait_per_xact_ms, fmt_ms(p.wait_per_xact_ms)),
            Value::num(p.wait_share_pct, fmt_fixed(p.wait_share_pct, 1)),
        ]);
    }
    t
}
