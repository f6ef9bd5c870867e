//! `isobench pgbench -i`: pgbench's tables, loaded by isobench's TPC-B
//! loader, with pgbench 15's messages.

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::{Result, anyhow};

use super::flags::Invocation;

/// `pgbench -i`: pgbench's tables at `-s` (default 1) in the named
/// database (the managed server's `postgres` database otherwise), with
/// pgbench 15's progress lines on stderr.
///
/// Errors: a server that cannot be reached or started, a failed statement.
pub(super) async fn initialize(inv: &Invocation) -> Result<()> {
    let scale = inv.scale.unwrap_or(1);
    let log = std::env::temp_dir().join(format!("isobench-pgbench-{}.log", std::process::id()));
    let target = crate::postgres::start(&inv.target(), &log, 20).await?;
    let mut config = match &target {
        crate::postgres::Target::External(c) => c.clone(),
        crate::postgres::Target::Managed(_) => target.config("postgres"),
    };
    crate::postgres::own_session(&mut config, "pgbench-init");
    let db = crate::postgres::connect(&config).await?;
    let started = Instant::now();
    let steps = &inv.init_steps;
    let mut parts = Vec::new();
    if steps.contains('d') {
        eprintln!("dropping old tables...");
        let t = Instant::now();
        db.batch_execute(
            "DROP TABLE IF EXISTS pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers",
        )
        .await
        .map_err(|e| anyhow!("dropping old tables: {}", crate::postgres::error_text(&e)))?;
        parts.push(format!("drop tables {:.2} s", t.elapsed().as_secs_f64()));
    }
    eprintln!("creating tables...");
    eprintln!(
        "generating data ({})...",
        if steps.contains('G') {
            "server-side"
        } else {
            "client-side"
        }
    );
    let t = Instant::now();
    let spec = crate::workload::spec("tpcb").ok_or_else(|| anyhow!("tpcb is not registered"))?;
    let mut params = BTreeMap::new();
    params.insert("foreign-keys".to_string(), inv.foreign_keys.to_string());
    let setup = crate::workload::Setup::new(spec, Some(scale), None, &params)?;
    let tpcb = <crate::workload::tpcb::Tpcb as crate::workload::Workload>::new(&setup)?;
    let loader = crate::workload::Loader::new(db, config.clone());
    let rows = crate::workload::Workload::load(&tpcb, &loader).await?;
    let accounts = u64::from(scale) * 100_000;
    let took = t.elapsed().as_secs_f64();
    eprintln!(
        "{accounts} of {accounts} tuples (100%) done (elapsed {took:.2} s, remaining 0.00 s)"
    );
    let db = crate::postgres::connect(&config).await?;
    if !inv.no_vacuum {
        eprintln!("vacuuming...");
    }
    eprintln!("creating primary keys...");
    if inv.foreign_keys {
        eprintln!("creating foreign keys...");
    }
    parts.push(format!(
        "create tables, generate, primary keys{} {took:.2} s",
        if inv.foreign_keys {
            ", foreign keys"
        } else {
            ""
        }
    ));
    if !inv.no_vacuum {
        let t = Instant::now();
        db.batch_execute(
            "VACUUM ANALYZE pgbench_branches, pgbench_tellers, pgbench_accounts, pgbench_history",
        )
        .await
        .map_err(|e| anyhow!("vacuuming: {}", crate::postgres::error_text(&e)))?;
        parts.push(format!("vacuum {:.2} s", t.elapsed().as_secs_f64()));
    }
    eprintln!(
        "done in {:.2} s ({}).",
        started.elapsed().as_secs_f64(),
        parts.join(", ")
    );
    tracing::debug!("pgbench -i: {rows} rows");
    drop(target);
    let _ = std::fs::remove_file(&log);
    Ok(())
}
