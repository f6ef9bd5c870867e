//! The isolation tester's output format (PostgreSQL 14 and later): result
//! tables as libpq's `PQprint` aligns them, error lines, and notices as
//! libpq's default notice processor words them.
//!
//! Sources: `src/test/isolation/isolationtester.c` (`printResultSet` calls
//! `PQprint` with `header`, `align` and `fieldSep = "|"`; errors print
//! `"%s:  %s"` from the severity and primary message fields) and
//! `src/interfaces/libpq/fe-print.c` (`PQprint`, `do_field`, `do_header`,
//! `output_row`), `fe-protocol3.c` (`pqBuildErrorMessage3`: `DETAIL:`,
//! `HINT:` and, for errors only by default, `CONTEXT:` lines).

/// What libpq adds when the server closes the connection under a query
/// (`pqReadData` in `src/interfaces/libpq/fe-misc.c`, PostgreSQL 15):
/// after a `FATAL` (a terminated backend: `pg_terminate_backend`, a
/// crash of another backend) the isolation tester prints it as a second
/// error result, which has no fields, so it prints the whole text and a
/// newline (`printf("%s\n", PQresultErrorMessage(res))`).
pub const SERVER_CLOSED: &str = "server closed the connection unexpectedly\n\
\tThis probably means the server terminated abnormally\n\
\tbefore or while processing the request.\n";

/// Whether a value keeps its column right-aligned: only the characters
/// `0-9 . e E space -`, not starting with `e`/`E`, ending with a digit
/// (`do_field` in `fe-print.c`, "insist on a digit in the last column").
fn looks_numeric(v: &str) -> bool {
    let allowed = v
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | ' ' | '-'));
    allowed && !v.starts_with(['e', 'E']) && v.chars().last().is_some_and(|c| c.is_ascii_digit())
}

/// Pads `s` to `width` bytes (C's `printf` `%-*s`/`%*s` count bytes).
fn pad(s: &str, width: usize, right: bool) -> String {
    let fill = " ".repeat(width.saturating_sub(s.len()));
    if right {
        format!("{fill}{s}")
    } else {
        format!("{s}{fill}")
    }
}

/// A result set as `PQprint` prints it for the isolation tester:
/// header, a dashed border with `+` between columns, the rows, then
/// `(N rows)` and an empty line. A column is right-aligned (header
/// included) unless one of its non-empty values is not numeric; null and
/// empty values neither widen it nor make it non-numeric. Nothing for a
/// result without columns.
pub fn table(columns: &[String], rows: &[Vec<Option<String>>]) -> String {
    if columns.is_empty() {
        return String::new();
    }
    let mut width: Vec<usize> = columns.iter().map(String::len).collect();
    let mut numeric = vec![true; columns.len()];
    for row in rows {
        for (j, v) in row.iter().enumerate().take(columns.len()) {
            if let Some(v) = v.as_deref().filter(|v| !v.is_empty()) {
                width[j] = width[j].max(v.len());
                numeric[j] = numeric[j] && looks_numeric(v);
            }
        }
    }
    let line = |cells: Vec<String>| cells.join("|") + "\n";
    let mut out = line(
        columns
            .iter()
            .enumerate()
            .map(|(j, c)| pad(c, width[j], numeric[j]))
            .collect(),
    );
    out.push_str(
        &width
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .join("+"),
    );
    out.push('\n');
    for row in rows {
        out.push_str(&line(
            (0..columns.len())
                .map(|j| {
                    let v = row.get(j).and_then(|v| v.as_deref()).unwrap_or("");
                    pad(v, width[j], numeric[j])
                })
                .collect(),
        ));
    }
    let n = rows.len();
    out.push_str(&format!("({n} row{})\n\n", if n == 1 { "" } else { "s" }));
    out
}

/// The fields of a server message (error or notice) that the output shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Message {
    /// `ERROR`, `NOTICE`, `WARNING`... (the localized severity field).
    pub severity: String,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
    pub context: Option<String>,
}

impl Message {
    pub fn from_db(db: &tokio_postgres::error::DbError) -> Message {
        Message {
            severity: db.severity().to_string(),
            message: db.message().to_string(),
            detail: db.detail().map(str::to_string),
            hint: db.hint().map(str::to_string),
            context: db.where_().map(str::to_string),
        }
    }

    /// A step's error line: severity and primary message only, since the
    /// detail may hold transaction ids (`try_complete_step`). After a
    /// message that ends the session (see [`Message::ends_connection`]),
    /// the [`SERVER_CLOSED`] result libpq makes of the closed socket
    /// follows, with the newline the isolation tester adds.
    pub fn step_error(&self) -> String {
        let mut s = format!("{}:  {}\n", self.severity, self.message);
        if self.ends_connection() {
            s.push_str(SERVER_CLOSED);
            s.push('\n');
        }
        s
    }

    /// Whether the server closes the connection after this message
    /// (severity `FATAL` or `PANIC`).
    pub fn ends_connection(&self) -> bool {
        matches!(self.severity.as_str(), "FATAL" | "PANIC")
    }

    /// libpq's default wording (`PQERRORS_DEFAULT`, `PQSHOW_CONTEXT_ERRORS`):
    /// `SEVERITY:  message`, then `DETAIL:`, `HINT:`, and `CONTEXT:` for
    /// errors. The statement position (`LINE 1: ...` with a caret) is not
    /// reproduced.
    pub fn full(&self) -> String {
        let mut s = format!("{}:  {}\n", self.severity, self.message);
        if let Some(d) = &self.detail {
            s.push_str(&format!("DETAIL:  {d}\n"));
        }
        if let Some(h) = &self.hint {
            s.push_str(&format!("HINT:  {h}\n"));
        }
        let error = matches!(self.severity.as_str(), "ERROR" | "FATAL" | "PANIC");
        if let Some(c) = self.context.as_ref().filter(|_| error) {
            s.push_str(&format!("CONTEXT:  {c}\n"));
        }
        if self.ends_connection() {
            s.push_str(SERVER_CLOSED);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Option<String> {
        Some(s.to_string())
    }

    #[test]
    fn table_aligns_like_pqprint() {
        // Checked against isolationtester 15 on PostgreSQL 15.
        let t = table(
            &["id".into(), "name".into(), "x".into()],
            &[
                vec![v("1"), v("a"), v("1.5")],
                vec![v("2"), None, v("-300000")],
                vec![v("10"), v("longer text"), None],
            ],
        );
        assert_eq!(
            t,
            "id|name       |      x\n\
             --+-----------+-------\n \
             1|a          |    1.5\n \
             2|           |-300000\n\
             10|longer text|       \n\
             (3 rows)\n\n"
        );
        assert_eq!(
            table(&["b".into(), "c".into()], &[]),
            "b|c\n-+-\n(0 rows)\n\n"
        );
        assert_eq!(
            table(&["count".into()], &[vec![v("0")]]),
            "count\n-----\n    0\n(1 row)\n\n"
        );
        assert_eq!(table(&[], &[vec![]]), "");
    }

    #[test]
    fn numeric_needs_a_final_digit_and_no_leading_e() {
        for (s, n) in [
            ("12", true),
            ("-1.5e3", true),
            ("1 2", true),
            ("e5", false),
            ("1.", false),
            ("12-22-2008", true),
            ("t", false),
            ("(1,2)", false),
        ] {
            assert_eq!(looks_numeric(s), n, "{s}");
        }
    }

    #[test]
    fn messages_word_like_libpq() {
        let m = Message {
            severity: "WARNING".into(),
            message: "warn".into(),
            detail: Some("some detail".into()),
            hint: Some("a hint".into()),
            context: Some("PL/pgSQL function inline_code_block line 1 at RAISE".into()),
        };
        assert_eq!(
            m.full(),
            "WARNING:  warn\nDETAIL:  some detail\nHINT:  a hint\n"
        );
        assert_eq!(m.step_error(), "WARNING:  warn\n");
        let e = Message {
            severity: "ERROR".into(),
            ..m
        };
        assert!(
            e.full()
                .ends_with("CONTEXT:  PL/pgSQL function inline_code_block line 1 at RAISE\n")
        );
    }

    #[test]
    fn a_fatal_error_is_followed_by_libpqs_closed_connection_text() {
        // As PostgreSQL 15's expected/temp-schema-cleanup.out has it.
        let m = Message {
            severity: "FATAL".into(),
            message: "terminating connection due to administrator command".into(),
            ..Message::default()
        };
        assert_eq!(
            m.step_error(),
            "FATAL:  terminating connection due to administrator command\n\
             server closed the connection unexpectedly\n\
             \tThis probably means the server terminated abnormally\n\
             \tbefore or while processing the request.\n\n"
        );
        assert!(
            m.full()
                .ends_with("before or while processing the request.\n")
        );
        let e = Message {
            severity: "ERROR".into(),
            ..m
        };
        assert!(!e.step_error().contains("server closed"));
    }
}
