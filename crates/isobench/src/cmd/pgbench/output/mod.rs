//! What `isobench pgbench` prints, as pgbench 15 prints it: the summary
//! (`summary`), the `-P` lines (`progress`), and the messages in between
//! (server errors in libpq's words, `-d` lines).

mod progress;
mod summary;

pub use progress::Progress;
pub use summary::{Extra, summary};

use super::flags::{End, Invocation};

/// Writes to stdout; a closed pipe (`isobench pgbench ... | head`) is not
/// an error.
pub fn out(text: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
}

/// A server's error as libpq's `PQerrorMessage` words it at the default
/// verbosity: `ERROR:  message`, then `DETAIL:`, `HINT:` and `CONTEXT:`
/// lines; other errors (the connection's) as their text.
pub fn server_error(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut text = format!("{}:  {}", db.severity(), db.message());
            for (label, field) in [
                ("DETAIL", db.detail()),
                ("HINT", db.hint()),
                ("CONTEXT", db.where_()),
            ] {
                if let Some(f) = field {
                    text.push_str(&format!("\n{label}:  {f}"));
                }
            }
            text
        }
        None => crate::postgres::error_text(e),
    }
}

/// `-d`'s first line (pgbench's `pg_log_debug` after its setup
/// connection).
pub fn debug_setup(inv: &Invocation) {
    let c = &inv.connection;
    let (what, n) = match inv.end {
        End::Transactions(n) => ("nxacts", n),
        End::Time(s) => ("duration", s),
    };
    eprintln!(
        "pgbench: pghost: {} pgport: {} nclients: {} {what}: {n} dbName: {}",
        c.host
            .clone()
            .or_else(|| std::env::var("PGHOST").ok())
            .unwrap_or_default(),
        c.port
            .clone()
            .or_else(|| std::env::var("PGPORT").ok())
            .unwrap_or_default(),
        inv.clients,
        c.dbname
            .clone()
            .or_else(|| std::env::var("PGDATABASE").ok())
            .unwrap_or_default()
    );
}
