//! The history check of scripts over pgbench's tables: did
//! `pgbench_history` gain one row per committed transaction of the
//! scripts that insert one? pgbench counts a transaction when its script
//! ends without error, so a script whose work is rolled back behind its
//! back (a PL/pgSQL function that catches `serialization_failure` and
//! returns normally) is counted as committed although its rows are gone.
//! Balances cannot show that (the rolled-back work moved no money); the
//! history rows can.
//!
//! The rule, decided from each script's text before the run and checked
//! after it:
//! - a script inserts one row per transaction for every SQL command with
//!   `INSERT INTO pgbench_history` (schema-qualified or not) and for every
//!   call of a function whose body (`pg_proc.prosrc`, looked up in the run
//!   database) contains `INSERT INTO pgbench_history`; pgbench's
//!   `tpcb-like` and `simple-update` insert one, `select-only` none;
//! - such a command under `\if` may or may not run: it widens the expected
//!   range (0 up to one row per transaction) instead of fixing it;
//! - the rows gained in a run (count after it minus count in the loaded
//!   data) must lie between the sum of the fixed rows (committed
//!   transactions, warm-up and drain included) and that sum plus the
//!   conditional rows and one row per script insert for each transaction
//!   whose COMMIT outcome is unknown;
//! - inserts the text does not show are not seen: a trigger, a function
//!   called by another function, dynamic SQL. A script relying on them
//!   counts as inserting none, and the check fails with surplus rows,
//!   saying what it expected.

use std::collections::BTreeSet;

use tokio_postgres::Client;

use super::script::{CommandKind, Script};
use crate::model::HistoryCount;

/// What a script's text says about its inserts into `pgbench_history`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inserts {
    /// `INSERT INTO pgbench_history` commands outside `\if`.
    pub direct: u64,
    /// `INSERT INTO pgbench_history` commands under `\if`.
    pub direct_if: u64,
    /// Functions called (lower-case names, schema dropped) and whether the
    /// call is under `\if`; whether they insert is looked up after a run.
    pub calls: Vec<(String, bool)>,
}

impl Inserts {
    /// The inserts of `script`, from its SQL commands' text.
    pub fn of(script: &Script) -> Self {
        let mut out = Inserts::default();
        let mut depth = 0usize;
        for c in &script.commands {
            match &c.kind {
                CommandKind::If { .. } => depth += 1,
                CommandKind::Endif => depth = depth.saturating_sub(1),
                CommandKind::Sql { sql, .. } => {
                    let words = words(sql);
                    let n = direct_inserts(&words);
                    if depth > 0 {
                        out.direct_if += n;
                    } else {
                        out.direct += n;
                    }
                    for name in calls(&words) {
                        out.calls.push((name, depth > 0));
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// Rows inserted per committed transaction, at least and at most,
    /// given the `inserting` functions; and those functions the script
    /// calls.
    fn per_transaction(&self, inserting: &BTreeSet<String>) -> (u64, u64, Vec<&str>) {
        let (mut min, mut max) = (self.direct, self.direct + self.direct_if);
        let mut via = Vec::new();
        for (name, conditional) in &self.calls {
            if inserting.contains(name) {
                max += 1;
                min += u64::from(!conditional);
                if !via.contains(&name.as_str()) {
                    via.push(name.as_str());
                }
            }
        }
        (min, max, via)
    }
}

/// Every function name the `scripts` call (the candidates to look up).
pub fn candidates(scripts: &[Inserts]) -> Vec<String> {
    let set: BTreeSet<&String> = scripts
        .iter()
        .flat_map(|s| s.calls.iter().map(|(n, _)| n))
        .collect();
    set.into_iter().cloned().collect()
}

/// Those of `names` that are functions or procedures in `db` whose body
/// inserts into `pgbench_history`. Errors: the catalog query failed.
pub async fn inserting_functions(
    db: &Client,
    names: &[String],
) -> Result<BTreeSet<String>, tokio_postgres::Error> {
    if names.is_empty() {
        return Ok(BTreeSet::new());
    }
    let rows = db
        .query(
            r"SELECT DISTINCT lower(proname) FROM pg_proc
              WHERE lower(proname) = ANY($1)
                AND prosrc ~* 'insert\s+into\s+([a-z_][a-z0-9_]*\.)?pgbench_history\M'",
            &[&names],
        )
        .await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// The history check: `rows` gained, against the committed transactions
/// of each script (`scripts[i]` is named `names[i]`, `committed[i]`
/// committed, whole run) and `unknown` transactions whose COMMIT outcome
/// is unknown; `inserting` are the functions that insert a row.
///
/// Returns the count, the scripts' part of its detail, and the committed
/// transactions whose work is not in the database (the invariant's
/// `lost_commits`, from which the run's effective throughput follows):
/// the missing rows divided by the most rows a script inserts
/// unconditionally per transaction, rounded up (at least that many
/// transactions lost their row; with one row per transaction, as
/// pgbench's scripts and the seed-003 function insert, exactly the
/// missing rows), at most the committed transactions; `None` when no
/// script inserts a row unconditionally (select-only: the check cannot
/// tell).
pub fn check(
    names: &[&str],
    scripts: &[Inserts],
    committed: &[u64],
    unknown: u64,
    inserting: &BTreeSet<String>,
    rows: u64,
) -> (HistoryCount, String, Option<u64>) {
    let (mut min, mut max, mut most, mut most_fixed) = (0u64, 0u64, 0u64, 0u64);
    let mut parts = Vec::new();
    for (i, s) in scripts.iter().enumerate() {
        let c = committed.get(i).copied().unwrap_or(0);
        let (lo, hi, via) = s.per_transaction(inserting);
        min += lo * c;
        max += hi * c;
        most = most.max(hi);
        most_fixed = most_fixed.max(lo);
        let via = if via.is_empty() {
            String::new()
        } else {
            let f: Vec<String> = via.iter().map(|f| format!("{f}()")).collect();
            format!(" through {}", f.join(", "))
        };
        parts.push(match (lo, hi) {
            (0, 0) => format!("{} inserts none ({c} committed)", names[i]),
            (lo, hi) if lo == hi => {
                format!("{} {lo} per transaction{via} ({c} committed)", names[i])
            }
            (lo, hi) => format!(
                "{} {lo} to {hi} per transaction{via}, inserts under \\if ({c} committed)",
                names[i]
            ),
        });
    }
    max += unknown * most;
    let mut scripts_text = parts.join("; ");
    if unknown > 0 && most > 0 {
        scripts_text.push_str(&format!("; up to {unknown} unknown outcome(s)"));
    }
    let lost = (most_fixed > 0).then(|| {
        let all: u64 = committed.iter().sum();
        min.saturating_sub(rows).div_ceil(most_fixed).min(all)
    });
    (
        HistoryCount {
            rows,
            expected_min: min,
            expected_max: max,
        },
        scripts_text,
        lost,
    )
}

/// `sql` as lower-case words (identifiers, possibly schema-qualified) and
/// `(`, without comments and string literals.
fn words(sql: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '-' if chars.peek() == Some(&'-') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            '\'' => {
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                }
            }
            '(' => out.push("(".into()),
            ':' => {
                // A variable (`:aid`) or a cast (`::int`): not a name.
                while chars
                    .peek()
                    .is_some_and(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                {
                    chars.next();
                }
                out.push(":".into());
            }
            c if c.is_alphabetic() || c == '_' || c == '"' => {
                let mut w = String::new();
                if c != '"' {
                    w.push(c.to_ascii_lowercase());
                }
                while let Some(&n) = chars.peek() {
                    if n.is_alphanumeric() || n == '_' || n == '.' || n == '"' || n == '$' {
                        if n != '"' {
                            w.push(n.to_ascii_lowercase());
                        }
                        chars.next();
                    } else {
                        break;
                    }
                }
                out.push(w);
            }
            c if c.is_whitespace() => {}
            _ => out.push(c.to_string()),
        }
    }
    out
}

/// The table name of a possibly schema-qualified name.
fn unqualified(w: &str) -> &str {
    w.rsplit('.').next().unwrap_or(w)
}

/// How many `INSERT INTO pgbench_history` `words` hold.
fn direct_inserts(words: &[String]) -> u64 {
    words
        .windows(3)
        .filter(|w| w[0] == "insert" && w[1] == "into" && unqualified(&w[2]) == "pgbench_history")
        .count() as u64
}

/// The names `words` call: a name followed by `(`, except after `INTO`
/// (an INSERT's column list) and SQL's own words that take parentheses.
fn calls(words: &[String]) -> Vec<String> {
    const NOT_CALLS: &[&str] = &[
        "values",
        "in",
        "exists",
        "any",
        "all",
        "as",
        "on",
        "using",
        "over",
        "filter",
        "within",
        "and",
        "or",
        "not",
        "select",
        "where",
        "from",
        "returning",
        "with",
        "set",
        "cast",
    ];
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        let next_is_paren = words.get(i + 1).is_some_and(|n| n == "(");
        let first = w.chars().next().unwrap_or(' ');
        if !next_is_paren || !(first.is_alphabetic() || first == '_') {
            continue;
        }
        if i > 0 && words[i - 1] == "into" {
            continue;
        }
        let name = unqualified(w);
        if NOT_CALLS.contains(&name) {
            continue;
        }
        out.push(name.to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pgbench::script;

    fn inserts(text: &str) -> Inserts {
        Inserts::of(&script::parse("t.sql", text, 1).unwrap())
    }

    #[test]
    fn pgbench_builtins_insert_one_row_or_none() {
        for (name, rows) in [("tpcb-like", 1), ("simple-update", 1), ("select-only", 0)] {
            let s = Inserts::of(&script::builtin(name, 1).unwrap());
            assert_eq!((s.direct, s.direct_if), (rows, 0), "{name}");
        }
    }

    #[test]
    fn inserts_calls_and_conditions_are_found_in_the_text() {
        let s = inserts(
            "\\set aid random(1, 10)\n\
             -- INSERT INTO pgbench_history in a comment is not one\n\
             SELECT public.Tpcb_Swallow(:aid, 1, 1, abs(-5)) AS applied;\n\
             INSERT INTO public.pgbench_history (tid, bid, aid, delta, mtime) VALUES (1, 1, :aid, 0, now());\n\
             \\if :aid > 5\n\
             insert into pgbench_history values (1, 1, 1, 1, now());\n\
             SELECT log_it('INSERT INTO pgbench_history');\n\
             \\endif\n",
        );
        assert_eq!((s.direct, s.direct_if), (1, 1));
        assert_eq!(
            s.calls,
            vec![
                ("tpcb_swallow".to_string(), false),
                ("abs".to_string(), false),
                ("now".to_string(), false),
                ("now".to_string(), true),
                ("log_it".to_string(), true),
            ]
        );
        assert_eq!(
            candidates(&[s]),
            vec!["abs", "log_it", "now", "tpcb_swallow"]
        );
    }

    #[test]
    fn the_swallowing_function_is_flagged_and_a_mix_is_summed() {
        let swallow = inserts("SELECT tpcb_swallow(:aid, :tid, 1, :delta);\n");
        let inserting: BTreeSet<String> = ["tpcb_swallow".to_string()].into();
        let (h, text, lost) = check(&["swallow.sql"], &[swallow], &[27150], 0, &inserting, 5550);
        assert!(!h.ok());
        assert_eq!(lost, Some(21600));
        assert_eq!(h.violations(), 21600);
        assert_eq!(
            h.detail(&text),
            "pgbench_history gained 5550 rows, expected 27150: swallow.sql 1 per transaction through tpcb_swallow() (27150 committed)"
        );
        // tpcb-like and select-only: only tpcb-like's commits count; an
        // unknown outcome may add one row.
        let tpcb = Inserts::of(&script::builtin("tpcb-like", 1).unwrap());
        let select = Inserts::of(&script::builtin("select-only", 1).unwrap());
        let (h, text, lost) = check(
            &["tpcb-like", "select-only"],
            &[tpcb.clone(), select.clone()],
            &[100, 400],
            1,
            &BTreeSet::new(),
            101,
        );
        assert!(h.ok(), "{h:?}");
        assert_eq!(lost, Some(0));
        assert_eq!((h.expected_min, h.expected_max), (100, 101));
        assert!(
            text.contains("select-only inserts none (400 committed)"),
            "{text}"
        );
        assert!(text.ends_with("up to 1 unknown outcome(s)"), "{text}");
        // Select-only alone: no row to count, the check cannot tell.
        let (_, _, lost) = check(&["select-only"], &[select], &[400], 0, &BTreeSet::new(), 0);
        assert_eq!(lost, None);
        // Two rows per transaction: 30 rows missing are 15 transactions.
        let two = inserts(
            "INSERT INTO pgbench_history VALUES (1);\nINSERT INTO pgbench_history VALUES (2);\n",
        );
        let (h, _, lost) = check(&["two.sql"], &[two], &[50], 0, &BTreeSet::new(), 70);
        assert_eq!((h.expected_min, lost), (100, Some(15)));
    }
}
