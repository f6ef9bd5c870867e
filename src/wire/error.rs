//! Errors of a [`Conn`](super::Conn): what the server said (SQLSTATE,
//! severity, message, DETAIL), or why the connection is gone.

use std::fmt;

use fallible_iterator::FallibleIterator;
use postgres_protocol::message::backend::ErrorResponseBody;

use crate::model::{SqlState, sqlstate};

/// An error the server sent (an `ErrorResponse`): the fields isobench
/// classifies on (see the protocol's "Error and Notice Message Fields").
#[derive(Debug, Clone)]
pub struct DbError {
    /// `ERROR`, `FATAL` or `PANIC` (the non-localized `V` field when the
    /// server sends it, PostgreSQL 9.6+; else `S`).
    pub severity: String,
    /// The SQLSTATE (`C`).
    pub code: SqlState,
    /// The primary message (`M`).
    pub message: String,
    /// The DETAIL (`D`), e.g. SSI's `Reason code: ...`.
    pub detail: Option<String>,
    /// The HINT (`H`).
    pub hint: Option<String>,
    /// The CONTEXT (`W`), e.g. `unnamed portal with parameters: ...`.
    pub context: Option<String>,
}

impl DbError {
    pub(super) fn parse(body: &ErrorResponseBody) -> DbError {
        let mut e = DbError {
            severity: String::new(),
            code: *b"XX000",
            message: String::new(),
            detail: None,
            hint: None,
            context: None,
        };
        let mut localized = String::new();
        let mut fields = body.fields();
        while let Ok(Some(f)) = fields.next() {
            let v = String::from_utf8_lossy(f.value_bytes()).into_owned();
            match f.type_() {
                b'V' => e.severity = v,
                b'S' => localized = v,
                b'C' => e.code = sqlstate(&v).unwrap_or(*b"XX000"),
                b'M' => e.message = v,
                b'D' => e.detail = Some(v),
                b'H' => e.hint = Some(v),
                b'W' => e.context = Some(v),
                _ => {}
            }
        }
        if e.severity.is_empty() {
            e.severity = localized;
        }
        e
    }

    /// The error as libpq's `PQresultErrorMessage` words it at the
    /// default verbosity (what pgbench prints): `ERROR:  message`, then
    /// `DETAIL:`, `HINT:` and `CONTEXT:` lines.
    pub fn libpq_text(&self) -> String {
        let mut t = format!("{}:  {}", self.severity, self.message);
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
        matches!(self.severity.as_str(), "FATAL" | "PANIC")
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
    /// [`crate::postgres::error_text`] words a tokio-postgres error.
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
