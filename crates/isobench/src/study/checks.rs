//! Declared checks as a study gives them ([`CheckSpec`]): `[[check]]`
//! tables in a study file, `--check NAME=SQL` on the command line, and
//! check files (`--check-file FILE`, study key `check_file`) of named
//! queries:
//!
//! ```sql
//! -- name: no-negative-balance
//! SELECT aid, abalance FROM pgbench_accounts WHERE abalance < 0;
//!
//! -- name: money-is-conserved
//! -- expect: 0
//! -- during: true
//! SELECT sum(abalance) FROM pgbench_accounts;
//! ```
//!
//! A `-- name: NAME` line starts a check; the `-- KEY: VALUE` lines right
//! after it are its options (`expect`, `during`); the lines after them,
//! up to the next `-- name:` line, are its query (a trailing `;` is
//! dropped). Each check remembers where it was declared (`FILE:LINE` of
//! its name line, `study.toml:LINE` of its `[[check]]`, or `--check`),
//! so that a check that fails to run is named with it.

use serde::Deserialize;
use serde::de::{self, Deserializer};

use super::{SettingsError, StudyError};
use crate::model::CheckSpec;

/// The origin of a check given with `--check`.
pub const FLAG_ORIGIN: &str = "--check";

/// Checks a check's name: 1 to 63 characters, letters, digits, `-`, `_`
/// and `.` (it names the check in reports, CSV columns and SQL-free
/// contexts). Errors: what is wrong with it.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a check needs a name".into());
    }
    if name.chars().count() > 63 {
        return Err(format!("check name '{name}' is longer than 63 characters"));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err(format!(
            "check name '{name}': '{c}' is not allowed (letters, digits, -, _ and . are), e.g. no-negative-balance"
        ));
    }
    Ok(())
}

/// `--check NAME=SQL`: a check whose rows are violations (or a `count`
/// that must be 0), origin `--check`.
pub fn check_flag(s: &str) -> Result<CheckSpec, String> {
    let (name, sql) = s.split_once('=').ok_or_else(|| {
        format!(
            "'{s}' is not NAME=SQL (e.g. --check 'no-negative-balance=SELECT aid FROM pgbench_accounts WHERE abalance < 0')"
        )
    })?;
    let name = name.trim();
    check_name(name)?;
    let sql = query_text(sql);
    if sql.is_empty() {
        return Err(format!("check {name}: the query is empty"));
    }
    Ok(CheckSpec {
        name: name.to_string(),
        sql,
        expect: None,
        during: false,
        origin: FLAG_ORIGIN.into(),
    })
}

/// A query as given, without surrounding blanks and a trailing `;`.
fn query_text(sql: &str) -> String {
    let t = sql.trim();
    t.strip_suffix(';').unwrap_or(t).trim_end().to_string()
}

/// The study file's `[[check]]` tables: `name`, `sql`, optional `expect`
/// (an integer) and `during` (a boolean); the origin is filled in by
/// `super::file`, which knows each table's line.
pub fn checks<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<CheckSpec>>, D::Error> {
    let tables = Vec::<Table>::deserialize(d)?;
    if tables.is_empty() {
        return Err(de::Error::custom(
            "the list is empty; write each check as a [[check]] table with name and sql",
        ));
    }
    Ok(Some(tables.into_iter().map(|t| t.0).collect()))
}

/// One `[[check]]` table, checked as it is read, so that an error points
/// at the table.
struct Table(CheckSpec);

impl<'de> Deserialize<'de> for Table {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Raw {
            name: String,
            sql: String,
            #[serde(default)]
            expect: Option<i64>,
            #[serde(default)]
            during: bool,
        }
        let t = Raw::deserialize(d)?;
        let name = t.name.trim();
        check_name(name).map_err(de::Error::custom)?;
        let sql = query_text(&t.sql);
        if sql.is_empty() {
            return Err(de::Error::custom(format!(
                "check {name}: the query (sql) is empty"
            )));
        }
        Ok(Table(CheckSpec {
            name: name.to_string(),
            sql,
            expect: t.expect,
            during: t.during,
            origin: String::new(),
        }))
    }
}

/// The checks of a check file's `text` (named `path` in origins and
/// errors), see the module docs.
///
/// Errors ([`StudyError`] at the line): a query before the first `-- name:`
/// line, a bad name, an unknown option or a bad value, a check without a
/// query, a file without a check.
pub fn parse_check_file(path: &str, text: &str) -> Result<Vec<CheckSpec>, StudyError> {
    let err = |line: usize, message: String| StudyError {
        path: path.to_string(),
        line,
        column: 1,
        message,
    };
    /// A check being read: its spec, its name line, whether its options
    /// (the `-- KEY:` lines right after the name) are still being read.
    struct Open {
        spec: CheckSpec,
        line: usize,
        options: bool,
        sql: Vec<String>,
    }
    let mut out = Vec::new();
    let mut open: Option<Open> = None;
    let close = |o: Open, out: &mut Vec<CheckSpec>| -> Result<(), StudyError> {
        let sql = query_text(&o.sql.join("\n"));
        if sql.is_empty() {
            return Err(err(
                o.line,
                format!("check {}: no query after its name line", o.spec.name),
            ));
        }
        out.push(CheckSpec { sql, ..o.spec });
        Ok(())
    };
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let directive = line
            .trim()
            .strip_prefix("--")
            .and_then(|r| r.split_once(':'))
            .map(|(k, v)| (k.trim(), v.trim()))
            .filter(|(k, _)| !k.is_empty() && k.chars().all(|c| c.is_ascii_alphabetic()));
        match directive {
            Some(("name", name)) => {
                if let Some(o) = open.take() {
                    close(o, &mut out)?;
                }
                check_name(name).map_err(|e| err(n, e))?;
                open = Some(Open {
                    spec: CheckSpec {
                        name: name.to_string(),
                        sql: String::new(),
                        expect: None,
                        during: false,
                        origin: format!("{path}:{n}"),
                    },
                    line: n,
                    options: true,
                    sql: Vec::new(),
                });
            }
            Some((key, value)) if open.as_ref().is_some_and(|o| o.options) => {
                let o = open.as_mut().expect("checked");
                match key {
                    "expect" => {
                        o.spec.expect =
                            Some(value.parse().map_err(|_| {
                                err(n, format!("expect: '{value}' is not an integer"))
                            })?)
                    }
                    "during" => {
                        o.spec.during = <super::values::Bool as super::values::Parse>::parse(value)
                            .map_err(|e| err(n, format!("during: {e}")))?
                    }
                    other => {
                        return Err(err(
                            n,
                            format!(
                                "unknown option `{other}` of check {} (options: expect, during; \
                                 a comment belongs after the options or in the query)",
                                o.spec.name
                            ),
                        ));
                    }
                }
            }
            _ => match open.as_mut() {
                Some(o) => {
                    o.options = false;
                    o.sql.push(line.to_string());
                }
                None if line.trim().is_empty() || line.trim().starts_with("--") => {}
                None => {
                    return Err(err(
                        n,
                        "a query before the first `-- name: NAME` line: start each check with one"
                            .into(),
                    ));
                }
            },
        }
    }
    if let Some(o) = open.take() {
        close(o, &mut out)?;
    }
    if out.is_empty() {
        return Err(err(
            1,
            "no check in the file: start each with a `-- name: NAME` line, its query after it"
                .into(),
        ));
    }
    Ok(out)
}

/// Refuses two checks of one name, naming where each was declared.
pub fn check_unique(checks: &[CheckSpec]) -> Result<(), String> {
    for (i, c) in checks.iter().enumerate() {
        if let Some(d) = checks[..i].iter().find(|d| d.name == c.name) {
            return Err(format!(
                "two checks are named {} ({} and {}): give each its own name",
                c.name, d.origin, c.origin
            ));
        }
    }
    Ok(())
}

impl super::Settings {
    /// The declared checks: `check` (the file's `[[check]]` tables and
    /// `--check` flags), then those of each `check_file`, in order.
    ///
    /// Errors: a check file that cannot be read (naming the key or flag)
    /// or parsed (naming its line), two checks of one name (naming where
    /// each was declared).
    pub(super) fn declared_checks(&self) -> Result<Vec<CheckSpec>, SettingsError> {
        let mut all = self.check.clone().unwrap_or_default();
        for path in self.check_file.iter().flatten() {
            let text = std::fs::read_to_string(path).map_err(|e| {
                self.error("check_file", format!("cannot read {}: {e}", path.display()))
            })?;
            all.extend(parse_check_file(&path.display().to_string(), &text)?);
        }
        check_unique(&all).map_err(|e| {
            let key = if self.check_file.is_some() && self.check.is_none() {
                "check_file"
            } else {
                "check"
            };
            self.error(key, e)
        })?;
        Ok(all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_file_reads_named_queries_with_their_lines() {
        let text = "-- checks of the transfer study\n\n\
                    -- name: no-negative-balance\n\
                    SELECT aid, abalance\n  FROM pgbench_accounts WHERE abalance < 0;\n\n\
                    -- name: money-is-conserved\n-- expect: 100\n-- during: true\n\
                    -- the total never changes\n\
                    SELECT sum(abalance) FROM pgbench_accounts\n";
        let c = parse_check_file("c.sql", text).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].name, "no-negative-balance");
        assert_eq!(
            c[0].sql,
            "SELECT aid, abalance\n  FROM pgbench_accounts WHERE abalance < 0"
        );
        assert_eq!((c[0].expect, c[0].during), (None, false));
        assert_eq!(c[0].origin, "c.sql:3");
        assert_eq!((c[1].expect, c[1].during), (Some(100), true));
        assert_eq!(c[1].origin, "c.sql:7");
        // The comment after the options is part of the query.
        assert!(
            c[1].sql.starts_with("-- the total never changes\nSELECT"),
            "{}",
            c[1].sql
        );
    }

    #[test]
    fn check_file_errors_name_the_line() {
        for (text, line, needle) in [
            (
                "SELECT 1;\n",
                1,
                "a query before the first `-- name: NAME` line",
            ),
            (
                "-- name: a\n-- expect: lots\nSELECT 1",
                2,
                "expect: 'lots' is not an integer",
            ),
            (
                "-- name: a\n-- durign: true\nSELECT 1",
                2,
                "unknown option `durign` of check a",
            ),
            (
                "-- name: a\n-- during: yes\nSELECT 1",
                2,
                "during: expected true or false",
            ),
            (
                "-- name: a\nSELECT 1\n-- name: b\n\n",
                3,
                "check b: no query",
            ),
            ("-- name: no negative\nSELECT 1", 1, "' ' is not allowed"),
            ("-- just a comment\n", 1, "no check in the file"),
        ] {
            let e = parse_check_file("c.sql", text).unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.to_string().starts_with(&format!("c.sql:{line}:")), "{e}");
            assert!(e.message.contains(needle), "{text:?}: {e}");
        }
    }

    #[test]
    fn the_flag_takes_name_equals_query() {
        let c = check_flag("no-negative = SELECT aid FROM t WHERE x = 1; ").unwrap();
        assert_eq!(
            (c.name.as_str(), c.sql.as_str()),
            ("no-negative", "SELECT aid FROM t WHERE x = 1")
        );
        assert_eq!(c.origin, "--check");
        assert!(
            check_flag("SELECT 1")
                .unwrap_err()
                .contains("is not NAME=SQL")
        );
        assert!(
            check_flag("a=  ;")
                .unwrap_err()
                .contains("the query is empty")
        );
        assert!(
            check_flag("=SELECT 1")
                .unwrap_err()
                .contains("needs a name")
        );
    }

    #[test]
    fn names_are_unique() {
        let a = check_flag("a=SELECT 1").unwrap();
        let mut b = parse_check_file("c.sql", "-- name: a\nSELECT 2").unwrap();
        b.insert(0, a);
        let e = check_unique(&b).unwrap_err();
        assert!(
            e.contains("two checks are named a (--check and c.sql:1)"),
            "{e}"
        );
    }
}
