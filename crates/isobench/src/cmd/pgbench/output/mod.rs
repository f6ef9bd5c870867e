//! What `isobench pgbench` prints, as pgbench prints it (15's or 18's
//! summary, the same `-P` lines): the summary
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
/// verbosity: `ERROR:  message`, its position (`at character N`: the
/// statement is not at hand here), then `DETAIL:`, `HINT:`, `QUERY:`
/// and `CONTEXT:` lines; other errors (the connection's) as their text.
/// No final newline.
pub fn server_error(e: &tokio_postgres::Error) -> String {
    server_error_in(e, None)
}

/// [`server_error`] of statement `query`: its position as libpq shows it
/// (`LINE n:` and a caret).
pub fn server_error_in(e: &tokio_postgres::Error, query: Option<&str>) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut text = libpq_text(db, query, true);
            text.pop();
            text
        }
        None => crate::postgres::error_text(e),
    }
}

/// A server's error (`is_error`) or notice in libpq's words
/// ([`crate::wire::libpq_message`]), for statement `query` when known,
/// with its final newline.
pub fn libpq_text(
    db: &tokio_postgres::error::DbError,
    query: Option<&str>,
    is_error: bool,
) -> String {
    use tokio_postgres::error::ErrorPosition;
    let (position, internal) = match db.position() {
        Some(ErrorPosition::Original(p)) => (Some(*p as usize), None),
        Some(ErrorPosition::Internal { position, query }) => {
            (None, Some((*position as usize, query.as_str())))
        }
        None => (None, None),
    };
    crate::wire::libpq_message(&crate::wire::Fields {
        severity: db.severity(),
        message: db.message(),
        position,
        query,
        internal_position: internal.map(|i| i.0),
        internal_query: internal.map(|i| i.1),
        detail: db.detail(),
        hint: db.hint(),
        context: db.where_(),
        is_error,
    })
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
