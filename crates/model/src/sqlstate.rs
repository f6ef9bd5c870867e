//! SQLSTATEs: the codes every layer classifies errors by, and their
//! condition names (PostgreSQL docs, Appendix A "PostgreSQL Error Codes").

/// A SQLSTATE as its five ASCII characters, e.g. `*b"40001"`.
pub type SqlState = [u8; 5];

/// SQLSTATE used for failures without a server error: the connection broke
/// (class 08, connection_failure).
pub const CONNECTION_FAILURE: SqlState = *b"08006";

/// SQLSTATE of a client stopped by its own program's error (a pgbench
/// script's run-time error); class `IB` is implementation-defined (SQL
/// standard: classes beginning with I-Z are), used by no server.
pub const SCRIPT_ERROR: SqlState = *b"IB001";

/// Parses a SQLSTATE string; `None` unless it is five ASCII alphanumerics.
pub fn sqlstate(code: &str) -> Option<SqlState> {
    let b = code.as_bytes();
    (b.len() == 5 && b.iter().all(u8::is_ascii_alphanumeric))
        .then(|| [b[0], b[1], b[2], b[3], b[4]])
}

/// The condition name of a SQLSTATE (PostgreSQL docs, Appendix A), for
/// reports; the code itself when it is not one isobench names.
pub fn sqlstate_name(code: &str) -> &'static str {
    match code {
        "40001" => "serialization_failure",
        "40P01" => "deadlock_detected",
        "40002" => "transaction_integrity_constraint_violation",
        "40003" => "statement_completion_unknown",
        "55P03" => "lock_not_available",
        "57014" => "query_canceled",
        "57P01" => "admin_shutdown",
        "23505" => "unique_violation",
        "23503" => "foreign_key_violation",
        "25P02" => "in_failed_sql_transaction",
        "25006" => "read_only_sql_transaction",
        "53300" => "too_many_connections",
        "08000" => "connection_exception",
        "08003" => "connection_does_not_exist",
        "08006" => "connection_failure",
        "P0001" => "raise_exception",
        "42P01" => "undefined_table",
        "42703" => "undefined_column",
        "42883" => "undefined_function",
        "42601" => "syntax_error",
        "42501" => "insufficient_privilege",
        "22012" => "division_by_zero",
        "IB001" => "script_error (isobench: the client stopped)",
        _ => "other",
    }
}

/// The Problems line of a run (its `errors`) that keeps the first failure
/// with `code`, a SQLSTATE the retry policy does not retry: `message` is
/// the server's message and, for a pgbench script, the file and line of
/// the command (`missing.sql:4: relation "nope" does not exist (42P01)
/// (in `SELECT ...`)`). Read back by [`first_failure_of`].
pub fn first_failure_line(code: &str, message: &str) -> String {
    format!(
        "first failure with SQLSTATE {code} ({}), not retried: {message}",
        sqlstate_name(code)
    )
}

/// The message of `code`'s first failure among a run's Problems lines
/// `errors`, as [`first_failure_line`] wrote it.
pub fn first_failure_of<'a>(errors: &'a [String], code: &str) -> Option<&'a str> {
    let prefix = format!("first failure with SQLSTATE {code} (");
    errors
        .iter()
        .filter_map(|e| e.strip_prefix(&prefix))
        .find_map(|rest| rest.split_once("), not retried: ").map(|(_, m)| m))
}

#[cfg(test)]
mod first_failure_tests {
    use super::*;

    #[test]
    fn the_first_failure_line_reads_back() {
        let errors = vec![
            "client 1: connection lost".to_string(),
            first_failure_line("42P01", "t.sql:4: relation \"nope\" does not exist (42P01)"),
        ];
        assert_eq!(
            errors[1],
            "first failure with SQLSTATE 42P01 (undefined_table), not retried: t.sql:4: relation \"nope\" does not exist (42P01)"
        );
        assert_eq!(
            first_failure_of(&errors, "42P01"),
            Some("t.sql:4: relation \"nope\" does not exist (42P01)")
        );
        assert_eq!(first_failure_of(&errors, "23505"), None);
    }
}
