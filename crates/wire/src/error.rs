//! Errors of a [`Conn`](super::Conn): what the server said (SQLSTATE,
//! severity, message, DETAIL), or why the connection is gone.

use std::fmt;

use crate::model::{SqlState, sqlstate};

/// How grave a server error is (the `ErrorResponse`'s severity): after
/// [`Severity::Fatal`] or [`Severity::Panic`] the server ends the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Error,
    Fatal,
    Panic,
}

/// An error the server sent (an `ErrorResponse`): the fields isobench
/// reads (see the protocol's "Error and Notice Message Fields"); the
/// others are skipped without being copied.
#[derive(Debug, Clone)]
pub struct DbError {
    /// From the non-localized `V` field when the server sends it
    /// (PostgreSQL 9.6+), else from `S`; anything else is an error.
    pub severity: Severity,
    /// The SQLSTATE (`C`).
    pub code: SqlState,
    /// The primary message (`M`).
    pub message: String,
    /// The DETAIL (`D`), e.g. SSI's `Reason code: ...`.
    pub detail: Option<String>,
    /// The HINT (`H`) and CONTEXT (`W`, e.g. `unnamed portal with
    /// parameters: ...`), which `isobench pgbench` prints as pgbench does
    /// (copied only when the server sends them).
    pub hint: Option<String>,
    pub context: Option<String>,
}

impl DbError {
    /// The error an `ErrorResponse` body gives.
    pub(super) fn parse(body: &[u8]) -> DbError {
        let mut e = DbError {
            severity: Severity::Error,
            code: *b"XX000",
            message: String::new(),
            detail: None,
            hint: None,
            context: None,
        };
        let severity = |v: &[u8]| match v {
            b"FATAL" => Severity::Fatal,
            b"PANIC" => Severity::Panic,
            _ => Severity::Error,
        };
        let text = |v: &[u8]| String::from_utf8_lossy(v).into_owned();
        let mut seen_v = false;
        for (ty, v) in super::backend::error_fields(body) {
            match ty {
                b'V' => {
                    e.severity = severity(v);
                    seen_v = true;
                }
                // The localized severity: a fallback for servers without V.
                b'S' if !seen_v => e.severity = severity(v),
                b'C' => {
                    e.code = std::str::from_utf8(v)
                        .ok()
                        .and_then(sqlstate)
                        .unwrap_or(*b"XX000")
                }
                b'M' => e.message = text(v),
                b'D' => e.detail = Some(text(v)),
                b'H' => e.hint = Some(text(v)),
                b'W' => e.context = Some(text(v)),
                _ => {}
            }
        }
        e
    }

    /// The error as libpq's `PQresultErrorMessage` words it at the
    /// default verbosity (what pgbench prints): `ERROR:  message`, then
    /// `DETAIL:`, `HINT:` and `CONTEXT:` lines.
    pub fn libpq_text(&self) -> String {
        let severity = match self.severity {
            Severity::Error => "ERROR",
            Severity::Fatal => "FATAL",
            Severity::Panic => "PANIC",
        };
        let mut t = format!("{severity}:  {}", self.message);
        for (label, field) in [
            ("DETAIL", &self.detail),
            ("HINT", &self.hint),
            ("CONTEXT", &self.context),
        ] {
            if let Some(f) = field {
                t.push_str(&format!("\n{label}:  {f}"));
            }
        }
        t
    }

    /// FATAL or PANIC: the server ends the session after sending it.
    pub fn is_fatal(&self) -> bool {
        matches!(self.severity, Severity::Fatal | Severity::Panic)
    }
}

/// An error of a [`Conn`](super::Conn) operation.
#[derive(Debug)]
pub enum Error {
    /// The server answered with an error; the connection is still usable
    /// unless the error [is fatal](DbError::is_fatal).
    Db(Box<DbError>),
    /// Reading or writing the socket failed: the connection is gone.
    Io(std::io::Error),
    /// The server closed the connection.
    Closed,
    /// The server sent something this client does not understand, or a
    /// parameter could not be encoded; the text says what.
    Protocol(String),
    /// The statement started a `COPY ... FROM STDIN`, which a benchmark
    /// client does not feed (the copy was ended with `CopyFail`).
    CopyNotSupported,
}

impl Error {
    /// The server's SQLSTATE, for an error the server sent.
    pub fn code(&self) -> Option<SqlState> {
        match self {
            Error::Db(e) => Some(e.code),
            _ => None,
        }
    }

    /// The server's error, if this is one.
    pub fn as_db_error(&self) -> Option<&DbError> {
        match self {
            Error::Db(e) => Some(e),
            _ => None,
        }
    }

    /// The connection is gone: closed, broken, or ended by a FATAL error.
    pub fn is_broken(&self) -> bool {
        match self {
            Error::Db(e) => e.is_fatal(),
            Error::Io(_) | Error::Closed => true,
            Error::Protocol(_) | Error::CopyNotSupported => false,
        }
    }
}

impl fmt::Display for Error {
    /// The server's message and SQLSTATE (`... (40001)`), as
    /// `postgres::error_text` words a tokio-postgres error.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Db(e) => write!(
                f,
                "{} ({})",
                e.message,
                std::str::from_utf8(&e.code).unwrap_or("?????")
            ),
            Error::Io(e) => write!(f, "connection error: {e}"),
            Error::Closed => f.write_str("connection closed"),
            Error::Protocol(m) => f.write_str(m),
            Error::CopyNotSupported => f.write_str("COPY FROM STDIN is not supported"),
        }
    }
}

impl std::error::Error for Error {}
