//! Why a transaction failed, one level below its SQLSTATE.
//!
//! Errors are classified by SQLSTATE (`engine/retry.rs`); a reason only
//! explains a failure the SQLSTATE already classified, for reports. A
//! serialization failure (40001) says why in text: PostgreSQL's SSI code
//! (`src/backend/storage/lmgr/predicate.c`) raises every one with the same
//! message and a `Reason code: Canceled on ...` DETAIL that names the
//! check that fired, and the executor's write-write conflicts (`heapam.c`,
//! `nodeModifyTable.c`, `nodeLockRows.c`) say `could not serialize access
//! due to concurrent update` (or `delete`) with no DETAIL. A reason is
//! that text with transaction ids and the fixed wording stripped, e.g.
//! `pivot, during commit attempt` or `conflict out to pivot, during read`,
//! so that failures group by cause.
//!
//! Reasons are `&'static str`: classifying and counting one allocates
//! nothing, so the engine does it at the point of failure. The reason-code
//! DETAILs are not translated (`errdetail_internal`), so they classify
//! under any `lc_messages`; a 40001 whose text is not in the tables below
//! (a translated message, a newer server) gets its own text as the reason,
//! numbers stripped, interned once.

use std::sync::Mutex;

use super::SqlState;

/// A failure's reason (see the module docs), e.g.
/// `pivot, during commit attempt`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FailureReason(&'static str);

impl FailureReason {
    /// The reason as reports show it.
    pub fn as_str(self) -> &'static str {
        self.0
    }

    /// The reason of an error with SQLSTATE `code`, server message
    /// `message` and DETAIL `detail`: a reason code of predicate.c or a
    /// write-write conflict message whatever the SQLSTATE (the texts are
    /// specific); for any other 40001 its own text (DETAIL, else message)
    /// with numbers stripped; `None` for any other error (a deadlock,
    /// 40P01, says nothing more than its SQLSTATE).
    pub fn of(code: SqlState, message: &str, detail: Option<&str>) -> Option<FailureReason> {
        let reason_code = detail.and_then(|d| d.strip_prefix("Reason code: "));
        if let Some(rc) = reason_code
            && let Some((_, label)) = REASON_CODES.iter().find(|(f, _)| matches_format(rc, f))
        {
            return Some(FailureReason(label));
        }
        if let Some((_, label)) = MESSAGES.iter().find(|(m, _)| message.starts_with(m)) {
            return Some(FailureReason(label));
        }
        if code != *b"40001" {
            return None;
        }
        let text = match (reason_code, detail) {
            (Some(rc), _) => rc.strip_prefix("Canceled on ").unwrap_or(rc),
            (None, Some(d)) if !d.is_empty() => d,
            _ => message,
        };
        Some(FailureReason(intern(&strip_numbers(text))))
    }
}

/// Whether `reason` (a [`FailureReason`] as reports show it, e.g. read
/// back from a store) is a write-write conflict found by the executor
/// (the rows changed under the transaction: [`MESSAGES`]), as opposed to
/// a read-write conflict found by SSI's predicate locks
/// ([`REASON_CODES`]) or a reason not in either table.
pub fn is_write_write(reason: &str) -> bool {
    MESSAGES.iter().any(|(_, label)| *label == reason)
}

impl std::fmt::Display for FailureReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// The DETAILs of PostgreSQL's SSI serialization failures after
/// `Reason code: ` (`%u` is a transaction id), with their reasons.
/// Source: PostgreSQL `src/backend/storage/lmgr/predicate.c`, unchanged
/// from 9.1 to 18: `CheckForSerializableConflictOut` (conflict out
/// checking, old pivots, old committed transaction),
/// `CheckForSerializableConflictIn` (conflict in checking),
/// `OnConflict_CheckForSerializationFailure` (during write, during read)
/// and `PreCommit_CheckForSerializationFailure` (commit attempt).
///
/// A *pivot* is the middle transaction of a dangerous structure
/// T1 -rw-> T2 -rw-> T3 (Cahill et al., "Serializable Isolation for
/// Snapshot Databases", SIGMOD 2008); "identification as a pivot" cancels
/// the pivot itself, "conflict out to pivot" the reader whose read made
/// the structure.
pub const REASON_CODES: &[(&str, &str)] = &[
    (
        "Canceled on identification as a pivot, during conflict out checking.",
        "pivot, during conflict out checking",
    ),
    (
        "Canceled on conflict out to old pivot %u.",
        "conflict out to old pivot",
    ),
    (
        "Canceled on identification as a pivot, with conflict out to old committed transaction %u.",
        "pivot, with conflict out to old committed transaction",
    ),
    (
        "Canceled on conflict out to old pivot.",
        "conflict out to old pivot",
    ),
    (
        "Canceled on identification as a pivot, during conflict in checking.",
        "pivot, during conflict in checking",
    ),
    (
        "Canceled on identification as a pivot, during write.",
        "pivot, during write",
    ),
    (
        "Canceled on conflict out to pivot %u, during read.",
        "conflict out to pivot, during read",
    ),
    (
        "Canceled on identification as a pivot, during commit attempt.",
        "pivot, during commit attempt",
    ),
    (
        "Canceled on commit attempt with conflict in from prepared pivot.",
        "commit attempt with conflict in from prepared pivot",
    ),
];

/// Server messages that are their own reason (no DETAIL), by prefix.
/// Sources: PostgreSQL `heapam.c` / `nodeModifyTable.c` /
/// `nodeLockRows.c` (write-write conflicts under REPEATABLE READ and
/// SERIALIZABLE, and rows moved by a concurrent partition-key update) and
/// `tcop/postgres.c` (queries canceled by recovery on a standby), all
/// SQLSTATE 40001.
pub const MESSAGES: &[(&str, &str)] = &[
    (
        "could not serialize access due to concurrent update",
        "concurrent update",
    ),
    (
        "could not serialize access due to concurrent delete",
        "concurrent delete",
    ),
    (
        "tuple to be locked was already moved to another partition due to concurrent update",
        "row moved to another partition by a concurrent update",
    ),
    (
        "tuple to be updated was already moved to another partition due to concurrent update",
        "row moved to another partition by a concurrent update",
    ),
    (
        "tuple to be deleted was already moved to another partition due to concurrent update",
        "row moved to another partition by a concurrent update",
    ),
    (
        "canceling statement due to conflict with recovery",
        "conflict with recovery",
    ),
];

/// Whether `text` is `format` with each `%u` standing for one or more
/// digits.
fn matches_format(text: &str, format: &str) -> bool {
    let mut rest = text;
    for (k, part) in format.split("%u").enumerate() {
        if k > 0 {
            let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            if digits == 0 {
                return false;
            }
            rest = &rest[digits..];
        }
        match rest.strip_prefix(part) {
            Some(r) => rest = r,
            None => return false,
        }
    }
    rest.is_empty()
}

/// `text` without runs of digits (and the space before one), a final
/// period, or surrounding space: `conflict out to pivot 1234, during
/// read.` -> `conflict out to pivot, during read`.
fn strip_numbers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            while chars.peek().is_some_and(char::is_ascii_digit) {
                chars.next();
            }
            if out.ends_with(' ') {
                out.pop();
            }
            continue;
        }
        out.push(c);
    }
    out.trim().trim_end_matches('.').trim_end().to_string()
}

/// Distinct reasons [`intern`] keeps; later ones share [`OTHER`].
const MAX_INTERNED: usize = 64;

/// The reason of a 40001 beyond [`MAX_INTERNED`] distinct texts.
const OTHER: &str = "other serialization failure";

/// `text` as a `&'static str`, leaked once per distinct text (at most
/// [`MAX_INTERNED`], so the leak is bounded).
fn intern(text: &str) -> &'static str {
    static INTERNED: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut all = INTERNED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = all.iter().find(|s| **s == text) {
        return s;
    }
    if all.len() >= MAX_INTERNED {
        return OTHER;
    }
    let s: &'static str = Box::leak(text.to_owned().into_boxed_str());
    all.push(s);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_write_reasons_are_the_executors_not_ssis() {
        let ww = FailureReason::of(
            *b"40001",
            "could not serialize access due to concurrent delete",
            None,
        )
        .unwrap();
        assert!(is_write_write(ww.as_str()));
        let rw = FailureReason::of(
            *b"40001",
            "could not serialize access due to read/write dependencies among transactions",
            Some("Reason code: Canceled on identification as a pivot, during commit attempt."),
        )
        .unwrap();
        assert!(!is_write_write(rw.as_str()), "{rw}");
        assert!(!is_write_write("something concurrent"));
    }

    const MSG: &str =
        "could not serialize access due to read/write dependencies among transactions";

    fn reason(code: &[u8; 5], message: &str, detail: Option<&str>) -> Option<&'static str> {
        FailureReason::of(*code, message, detail).map(FailureReason::as_str)
    }

    /// Every DETAIL predicate.c raises (PostgreSQL 15's strings, xids as
    /// the server fills them in) gets its reason.
    #[test]
    fn predicate_c_reason_codes() {
        let cases = [
            (
                "Reason code: Canceled on identification as a pivot, during conflict out checking.",
                "pivot, during conflict out checking",
            ),
            (
                "Reason code: Canceled on conflict out to old pivot 4711.",
                "conflict out to old pivot",
            ),
            (
                "Reason code: Canceled on identification as a pivot, with conflict out to old committed transaction 1234567.",
                "pivot, with conflict out to old committed transaction",
            ),
            (
                "Reason code: Canceled on conflict out to old pivot.",
                "conflict out to old pivot",
            ),
            (
                "Reason code: Canceled on identification as a pivot, during conflict in checking.",
                "pivot, during conflict in checking",
            ),
            (
                "Reason code: Canceled on identification as a pivot, during write.",
                "pivot, during write",
            ),
            (
                "Reason code: Canceled on conflict out to pivot 1234, during read.",
                "conflict out to pivot, during read",
            ),
            (
                "Reason code: Canceled on identification as a pivot, during commit attempt.",
                "pivot, during commit attempt",
            ),
            (
                "Reason code: Canceled on commit attempt with conflict in from prepared pivot.",
                "commit attempt with conflict in from prepared pivot",
            ),
        ];
        for (detail, want) in cases {
            assert_eq!(reason(b"40001", MSG, Some(detail)), Some(want), "{detail}");
        }
        // A format's %u needs digits.
        assert!(!matches_format(
            "Canceled on conflict out to pivot x, during read.",
            "Canceled on conflict out to pivot %u, during read."
        ));
    }

    #[test]
    fn write_write_conflicts_have_no_detail() {
        assert_eq!(
            reason(
                b"40001",
                "could not serialize access due to concurrent update",
                None
            ),
            Some("concurrent update")
        );
        assert_eq!(
            reason(
                b"40001",
                "could not serialize access due to concurrent delete",
                None
            ),
            Some("concurrent delete")
        );
        assert_eq!(
            reason(
                b"40001",
                "tuple to be locked was already moved to another partition due to concurrent update",
                None
            ),
            Some("row moved to another partition by a concurrent update")
        );
    }

    #[test]
    fn other_errors_have_no_reason() {
        assert_eq!(
            reason(
                b"40P01",
                "deadlock detected",
                Some("Process 12 waits for ShareLock on transaction 34; blocked by process 56.")
            ),
            None
        );
        assert_eq!(
            reason(
                b"23505",
                "duplicate key value violates unique constraint \"k\"",
                Some("Key (id)=(1) already exists.")
            ),
            None
        );
    }

    /// A 40001 not in the tables (a translated message, a newer server's
    /// reason code) keeps its own text, numbers stripped, as one reason.
    #[test]
    fn unknown_serialization_failures_keep_their_text() {
        let a = FailureReason::of(
            *b"40001",
            MSG,
            Some("Reason code: Canceled on a new check 77, during tea."),
        )
        .unwrap();
        let b = FailureReason::of(
            *b"40001",
            MSG,
            Some("Reason code: Canceled on a new check 78, during tea."),
        )
        .unwrap();
        assert_eq!(a.as_str(), "a new check, during tea");
        assert!(std::ptr::eq(a.as_str(), b.as_str()), "interned once");
        assert_eq!(
            reason(b"40001", "由于同步更新而无法串行访问", None),
            Some("由于同步更新而无法串行访问")
        );
        assert_eq!(strip_numbers(" xid 12 and 3. "), "xid and");
    }
}
