//! Databases on the target: one template database per data variant,
//! loaded once per server, and a fresh copy of it for every run, so that
//! every run starts from the same state (`CREATE DATABASE ... TEMPLATE`,
//! `STRATEGY FILE_COPY` on PostgreSQL 15+, then `VACUUM ANALYZE` and
//! `CHECKPOINT`).

use std::time::Instant;

use anyhow::{Result, anyhow};
use tokio_postgres::Client;

use super::target::Server;
use crate::postgres;

pub(super) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

pub(super) async fn drop_database(admin: &Client, name: &str, version_num: i32) -> Result<()> {
    let force = if version_num >= 130000 {
        " WITH (FORCE)"
    } else {
        ""
    };
    admin
        .batch_execute(&format!(
            "DROP DATABASE IF EXISTS {}{force}",
            quote_ident(name)
        ))
        .await
        .map_err(|e| anyhow!("DROP DATABASE {name}: {}", postgres::error_text(&e)))
}

/// Creates template database `tmpl` on `srv`, empty, dropping any stale
/// `tmpl` and run database `run_db` first.
pub(super) async fn create_template(srv: &Server, tmpl: &str, run_db: &str) -> Result<()> {
    drop_database(&srv.admin, run_db, srv.vnum()).await?;
    drop_database(&srv.admin, tmpl, srv.vnum()).await?;
    srv.admin
        .batch_execute(&format!("CREATE DATABASE {}", quote_ident(tmpl)))
        .await
        .map_err(|e| {
            anyhow!(
                "CREATE DATABASE {tmpl}: {} (on an external server isobench needs a role with CREATEDB)",
                postgres::error_text(&e)
            )
        })?;
    Ok(())
}

/// Makes `run_db` a fresh copy of `tmpl` on `srv` (`CREATE DATABASE ...
/// TEMPLATE`, then `VACUUM ANALYZE` and `CHECKPOINT`). Returns a
/// connection to it (`application_name` `isobench-check`), the time
/// taken in ms, and a failed CHECKPOINT's message.
pub(super) async fn fresh_copy(
    srv: &Server,
    tmpl: &str,
    run_db: &str,
) -> Result<(Client, f64, Vec<String>)> {
    let (target, admin, vnum) = (&srv.target, &srv.admin, srv.vnum());
    let reset_start = Instant::now();
    drop_database(admin, run_db, vnum).await?;
    let strategy = if vnum >= 150000 {
        " STRATEGY FILE_COPY"
    } else {
        ""
    };
    admin
        .batch_execute(&format!(
            "CREATE DATABASE {} TEMPLATE {}{strategy}",
            quote_ident(run_db),
            quote_ident(tmpl)
        ))
        .await
        .map_err(|e| {
            anyhow!(
                "CREATE DATABASE {run_db} TEMPLATE {tmpl}: {}",
                postgres::error_text(&e)
            )
        })?;
    // The run settings of its database (`synchronous_commit` as a
    // factor): every session the run opens starts with them.
    for (k, v) in &srv.run_db_settings {
        admin
            .batch_execute(&format!(
                "ALTER DATABASE {} SET {k} = '{}'",
                quote_ident(run_db),
                v.replace('\'', "''")
            ))
            .await
            .map_err(|e| {
                anyhow!(
                    "ALTER DATABASE {run_db} SET {k}: {}",
                    postgres::error_text(&e)
                )
            })?;
    }
    let db_config = target.config(run_db);
    let mut check_config = db_config.clone();
    postgres::own_session(&mut check_config, "check");
    let check_db = postgres::connect(&check_config).await?;
    check_db
        .batch_execute("VACUUM ANALYZE")
        .await
        .map_err(|e| anyhow!("VACUUM ANALYZE: {}", postgres::error_text(&e)))?;
    let mut errors = Vec::new();
    if let Err(e) = check_db.batch_execute("CHECKPOINT").await {
        errors.push(format!(
            "CHECKPOINT before the run failed: {}",
            postgres::error_text(&e)
        ));
    }
    let reset_ms = reset_start.elapsed().as_secs_f64() * 1000.0;
    Ok((check_db, reset_ms, errors))
}
