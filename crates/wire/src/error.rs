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
    /// The severity as the server words it (`S`: `ERROR`, `WARNING`,
    /// `NOTICE`, ...), which libpq prints.
    pub label: String,
    /// Where in the statement the error is (`P`, a character count from
    /// 1), for libpq's `LINE n:` display.
    pub position: Option<usize>,
    /// An internally generated statement (`q`, e.g. a PL/pgSQL
    /// function's) and the position in it (`p`); libpq prints it as
    /// `QUERY:` (and its `LINE n:` when there is no `P`).
    pub internal_query: Option<String>,
    pub internal_position: Option<usize>,
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
            label: String::new(),
            position: None,
            internal_query: None,
            internal_position: None,
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
                b'S' => {
                    e.label = text(v);
                    if !seen_v {
                        e.severity = severity(v);
                    }
                }
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
                b'P' => e.position = std::str::from_utf8(v).ok().and_then(|p| p.parse().ok()),
                b'p' => {
                    e.internal_position = std::str::from_utf8(v).ok().and_then(|p| p.parse().ok())
                }
                b'q' => e.internal_query = Some(text(v)),
                _ => {}
            }
        }
        e
    }

    /// The error as libpq's `PQresultErrorMessage` words it at the
    /// default verbosity (what pgbench prints) for a statement sent as
    /// `query` (`None`: a prepared statement's execution, whose text
    /// libpq does not keep): see [`libpq_message`]. No final newline.
    pub fn libpq_text(&self, query: Option<&str>) -> String {
        let severity = match self.severity {
            _ if !self.label.is_empty() => self.label.as_str(),
            Severity::Error => "ERROR",
            Severity::Fatal => "FATAL",
            Severity::Panic => "PANIC",
        };
        let mut t = libpq_message(&Fields {
            severity,
            message: &self.message,
            position: self.position,
            query,
            internal_position: self.internal_position,
            internal_query: self.internal_query.as_deref(),
            detail: self.detail.as_deref(),
            hint: self.hint.as_deref(),
            context: self.context.as_deref(),
            is_error: true,
        });
        t.pop();
        t
    }

    /// A notice or warning the server sent (a `NoticeResponse`), as
    /// libpq's default notice processor prints it on stderr: as
    /// [`DbError::libpq_text`] words an error, without CONTEXT, with the
    /// final newline.
    pub fn notice_text(&self) -> String {
        libpq_message(&Fields {
            severity: &self.label,
            message: &self.message,
            position: self.position,
            query: None,
            internal_position: self.internal_position,
            internal_query: self.internal_query.as_deref(),
            detail: self.detail.as_deref(),
            hint: self.hint.as_deref(),
            context: self.context.as_deref(),
            is_error: false,
        })
    }

    /// FATAL or PANIC: the server ends the session after sending it.
    pub fn is_fatal(&self) -> bool {
        matches!(self.severity, Severity::Fatal | Severity::Panic)
    }
}

/// The fields of a server's error or notice that libpq's message shows
/// at its default verbosity.
#[derive(Debug, Clone, Copy)]
pub struct Fields<'a> {
    pub severity: &'a str,
    pub message: &'a str,
    /// `P`, and the statement it points into, when the client kept it.
    pub position: Option<usize>,
    pub query: Option<&'a str>,
    /// `p` and `q`.
    pub internal_position: Option<usize>,
    pub internal_query: Option<&'a str>,
    pub detail: Option<&'a str>,
    pub hint: Option<&'a str>,
    pub context: Option<&'a str>,
    /// An error (its CONTEXT is shown), not a notice (libpq's
    /// `PQSHOW_CONTEXT_ERRORS`).
    pub is_error: bool,
}

/// A server's error or notice in libpq's words at the default verbosity
/// (`pqBuildErrorMessage3` of libpq's fe-protocol3.c): `SEVERITY:
/// message`, the position as a `LINE n:` line with a caret under it (or
/// ` at character N` when the statement is not known), then `DETAIL:`,
/// `HINT:`, `QUERY:` and, for an error, `CONTEXT:` lines; each line
/// ends with a newline.
pub fn libpq_message(f: &Fields<'_>) -> String {
    let mut t = format!("{}:  {}", f.severity, f.message);
    let mut cursor = None;
    match (f.position, f.internal_position) {
        (Some(p), _) => match f.query {
            Some(q) => cursor = Some((q, p)),
            None => t.push_str(&format!(" at character {p}")),
        },
        (None, Some(p)) => match f.internal_query {
            Some(q) => cursor = Some((q, p)),
            None => t.push_str(&format!(" at character {p}")),
        },
        (None, None) => {}
    }
    t.push('\n');
    if let Some((q, p)) = cursor {
        t.push_str(&error_position(q, p));
    }
    let context = f.context.filter(|_| f.is_error);
    for (label, field) in [
        ("DETAIL", f.detail),
        ("HINT", f.hint),
        ("QUERY", f.internal_query),
        ("CONTEXT", context),
    ] {
        if let Some(v) = field {
            t.push_str(&format!("{label}:  {v}\n"));
        }
    }
    t
}

/// libpq's display of where in `query` an error is (`reportErrorPosition`
/// of fe-protocol3.c): the line holding character `position` (counted
/// from 1) as `LINE n: ...`, cut to about 60 columns around it with
/// `...`, and a line with a caret under the character; empty when the
/// position is outside the statement. Every character is one column
/// wide, a tab one space.
pub fn error_position(query: &str, position: usize) -> String {
    const DISPLAY: usize = 60;
    const MIN_RIGHT_CUT: usize = 10;
    let Some(loc) = position.checked_sub(1) else {
        return String::new();
    };
    let chars: Vec<char> = query
        .chars()
        .map(|c| if c == '\t' { ' ' } else { c })
        .collect();
    // Column of each character is its index: one column each.
    let (mut line, mut ibeg, mut iend) = (1, 0, None);
    for (cno, &ch) in chars.iter().enumerate() {
        if ch == '\r' || ch == '\n' {
            if cno < loc {
                if ch == '\r' || cno == 0 || chars[cno - 1] != '\r' {
                    line += 1;
                }
                ibeg = cno + 1;
            } else {
                iend = Some(cno);
                break;
            }
        }
    }
    let mut iend = iend.unwrap_or(chars.len());
    if loc > chars.len() {
        return String::new();
    }
    let (mut beg_cut, mut end_cut) = (false, false);
    if iend - ibeg > DISPLAY {
        if ibeg + DISPLAY >= loc + MIN_RIGHT_CUT {
            while iend - ibeg > DISPLAY {
                iend -= 1;
                end_cut = true;
            }
        } else {
            while loc + MIN_RIGHT_CUT < iend {
                iend -= 1;
                end_cut = true;
            }
            while iend - ibeg > DISPLAY {
                ibeg += 1;
                beg_cut = true;
            }
        }
    }
    let mut out = format!("LINE {line}: ");
    if beg_cut {
        out.push_str("...");
    }
    let prefix = out.chars().count();
    out.extend(&chars[ibeg..iend]);
    if end_cut {
        out.push_str("...");
    }
    out.push('\n');
    out.push_str(&" ".repeat(prefix + loc - ibeg));
    out.push_str("^\n");
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    /// libpq's own display (psql 15 and 18 print the same).
    #[test]
    fn the_position_is_shown_as_libpq_shows_it() {
        assert_eq!(
            error_position("SELECT 1 + ;", 12),
            "LINE 1: SELECT 1 + ;\n                   ^\n"
        );
        assert_eq!(
            error_position("select 1;\nselect x from;", 24),
            "LINE 2: select x from;\n                     ^\n"
        );
        // Past the end: nothing.
        assert_eq!(error_position("select", 9), "");
        // A long line is cut around the position.
        let long = format!("select {} from t", "a, ".repeat(40));
        let shown = error_position(&long, 100);
        let first = shown.lines().next().unwrap();
        assert!(first.starts_with("LINE 1: ..."), "{shown}");
        assert!(first.ends_with("..."), "{shown}");
    }

    #[test]
    fn a_message_has_libpqs_lines() {
        let f = Fields {
            severity: "ERROR",
            message: "syntax error at end of input",
            position: Some(12),
            query: Some("SELECT 1 + ;"),
            internal_position: None,
            internal_query: None,
            detail: None,
            hint: Some("h"),
            context: Some("c"),
            is_error: true,
        };
        assert_eq!(
            libpq_message(&f),
            "ERROR:  syntax error at end of input\nLINE 1: SELECT 1 + ;\n                   ^\nHINT:  h\nCONTEXT:  c\n"
        );
        let prepared = Fields { query: None, ..f };
        assert!(
            libpq_message(&prepared)
                .starts_with("ERROR:  syntax error at end of input at character 12\n")
        );
        let notice = Fields {
            severity: "WARNING",
            is_error: false,
            position: None,
            ..f
        };
        assert_eq!(
            libpq_message(&notice),
            "WARNING:  syntax error at end of input\nHINT:  h\n"
        );
    }
}
