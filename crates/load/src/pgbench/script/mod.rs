//! pgbench script files: SQL commands and backslash meta-commands, split
//! and checked before any load runs.
//!
//! The syntax follows pgbench's documentation ("Custom Scripts"): a SQL
//! command runs to the `;` that ends it, outside quotes, comments and
//! dollar quotes, over as many lines as it needs; `\;` puts several
//! statements into one command. A meta-command starts with `\` at the
//! beginning of a line and runs to the end of the line (a `\` at the end
//! of a line continues it). `\gset [prefix]` and `\aset [prefix]` end the
//! SQL command before them. `:name` in a SQL command is a variable
//! (`::` is a cast), substituted wherever it appears, as pgbench does.
//! `\shell` and `\setshell` run a shell command, as in pgbench (its
//! time is the client's, inside the measured loop).
//!
//! Errors are worded and laid out as pgbench 15 words them
//! (`syntax_error` and `ConditionError` in pgbench.c): `FILE:LINE:
//! MESSAGE (MORE) in command "NAME"`, the line, and a caret under the
//! column found, then isobench's own explanation when it has one.
//! Pipelines are checked when they run, as pgbench checks them.
//!
//! Built-in scripts: `tpcb-like`, `simple-update` and `select-only`, as
//! pgbench's documentation lists them.

use std::fmt;

/// Where something is in a script file: 1-based line and column
/// (characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loc {
    pub line: usize,
    pub column: usize,
}

/// A script that does not parse, as pgbench reports it: its message line
/// (`FILE:LINE: MESSAGE (MORE) in command "NAME"`, or `condition error in
/// script ...`), the line at fault with a caret under `loc`'s column
/// when it is known, and isobench's explanation, when it adds one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ScriptError {
    pub file: String,
    pub loc: Loc,
    /// pgbench's message line.
    pub message: String,
    /// The line the error is on (empty: not shown).
    pub text: String,
    /// Whether the caret points at `loc`'s column.
    pub caret: bool,
    /// isobench's explanation (e.g. what the expression parser expected).
    pub hint: Option<String>,
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if !self.text.is_empty() {
            write!(f, "\n{}", self.text)?;
            if self.caret {
                write!(f, "\n{:>w$} error found here", '^', w = self.loc.column)?;
            }
        }
        if let Some(h) = &self.hint {
            write!(f, "\n({h})")?;
        }
        Ok(())
    }
}

/// What `\gset` / `\aset` store: the result row's columns as variables,
/// named with `prefix` first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Store {
    /// `\gset`: exactly one row of the last statement.
    Gset(String),
    /// `\aset`: every statement's rows, the last one winning.
    Aset(String),
}

/// A `\sleep` duration: a literal or a variable, and the unit in µs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SleepAmount {
    Literal(i64),
    Variable(String),
}

/// One command of a script.
#[derive(Debug, Clone, PartialEq)]
pub enum CommandKind {
    /// A SQL command (several statements when `\;` joined them): `sql`
    /// without its comments and final `;` (what isobench reads it by),
    /// `text` as pgbench sends it (as written from its first word to its
    /// `;`, comments and blanks kept, `\;` as `;`), with the variables
    /// of `text` in order of appearance.
    Sql {
        sql: String,
        text: String,
        variables: Vec<String>,
        store: Option<Store>,
    },
    /// `\set name expression`: the expression's text and where it starts.
    Set {
        name: String,
        expr: String,
        expr_loc: Loc,
    },
    /// `\sleep amount [us|ms|s]`.
    Sleep {
        amount: SleepAmount,
        unit_us: u64,
    },
    /// `\if`, `\elif` with the expression's text and location.
    If {
        expr: String,
        expr_loc: Loc,
    },
    Elif {
        expr: String,
        expr_loc: Loc,
    },
    Else,
    Endif,
    StartPipeline,
    SyncPipeline,
    EndPipeline,
    /// `\shell command [args]` (`set`: None) or `\setshell name command
    /// [args]`: words as given (`:name` a variable, `::x` the text `:x`).
    Shell {
        set: Option<String>,
        words: Vec<String>,
    },
}

/// A command and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Command {
    pub kind: CommandKind,
    pub loc: Loc,
    /// The command's first line, for messages and per-command reports.
    pub first_line: String,
}

/// A parsed script.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    /// The file name, or `builtin: tpcb-like`.
    pub name: String,
    pub weight: u32,
    pub commands: Vec<Command>,
}

/// pgbench's built-in scripts: name and text.
pub const BUILTINS: [(&str, &str); 3] = [
    (
        "tpcb-like",
        "\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
",
    ),
    (
        "simple-update",
        "\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
",
    ),
    (
        "select-only",
        "\\set aid random(1, 100000 * :scale)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
",
    ),
];

/// Splits `NAME[@WEIGHT]` (pgbench's `-f`/`-b` argument).
///
/// Errors: a weight that is not an integer in 0..=i32::MAX.
pub fn split_weight(arg: &str) -> Result<(&str, u32), String> {
    match arg.rsplit_once('@') {
        Some((name, w)) if !name.is_empty() => match w.parse::<u32>() {
            Ok(w) if w <= i32::MAX as u32 => Ok((name, w)),
            _ => Err(format!(
                "'{arg}': weight '{w}' is not an integer from 0 to {}",
                i32::MAX
            )),
        },
        _ => Ok((arg, 1)),
    }
}

/// The built-in script `name` (or a unique prefix of it, as pgbench
/// accepts). Errors: unknown or ambiguous name, listing the built-ins.
pub fn builtin(name: &str, weight: u32) -> Result<Script, String> {
    let found: Vec<&(&str, &str)> = BUILTINS
        .iter()
        .filter(|(n, _)| n.starts_with(name))
        .collect();
    match found.as_slice() {
        [(n, text)] => parse(&format!("builtin: {n}"), text, weight).map_err(|e| e.to_string()),
        [] | [_, _, ..] => Err(format!(
            "-b {name}: {} built-in script (built-in: {})",
            if found.is_empty() {
                "no such"
            } else {
                "ambiguous"
            },
            BUILTINS.map(|(n, _)| n).join(", ")
        )),
    }
}

/// pgbench 15's description of a built-in script (`transaction type:`).
pub fn builtin_desc(name: &str) -> &'static str {
    match name {
        "tpcb-like" => "<builtin: TPC-B (sort of)>",
        "simple-update" => "<builtin: simple update>",
        _ => "<builtin: select only>",
    }
}

/// How pgbench names a script in its messages: a file by its name, a
/// built-in by its description.
pub fn description(name: &str) -> &str {
    match name.strip_prefix("builtin: ") {
        Some(b) => builtin_desc(b),
        None => name,
    }
}

/// Parses script `text` of file `file`.
///
/// Errors: the first problem, located (see [`ScriptError`]): an
/// unterminated quote, comment or SQL command, an unknown or malformed
/// meta-command, a missing argument, `\shell`/`\setshell`, an unbalanced
/// `\if`, a script without commands.
pub fn parse(file: &str, text: &str, weight: u32) -> Result<Script, ScriptError> {
    parse::Parser::new(file, text).run(weight)
}

/// [`is_variable_name`] as a check of `-D NAME` or a `[define]` key.
///
/// Errors: "NAME is not a variable name ...".
pub fn check_variable_name(name: &str) -> Result<(), String> {
    if is_variable_name(name) {
        Ok(())
    } else {
        Err(format!(
            "{name} is not a variable name (letters, digits and _)"
        ))
    }
}

/// pgbench variable names: letters (any alphabet), digits and `_`.
pub fn is_variable_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// The `:name` variables of `sql` in order of first appearance (`::` is a
/// cast, and a `:` not followed by a name is kept as it is).
pub fn variables(sql: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for part in split_variables(sql) {
        if let Part::Var(v) = part
            && !out.iter().any(|o| o == v)
        {
            out.push(v.to_string());
        }
    }
    out
}

/// A piece of a SQL command: text or a `:variable`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part<'a> {
    Text(&'a str),
    Var(&'a str),
}

/// `sql` split into text and variables.
pub fn split_variables(sql: &str) -> Vec<Part<'_>> {
    let mut parts = Vec::new();
    let bytes = sql.as_bytes();
    let (mut i, mut text_start) = (0, 0);
    while i < bytes.len() {
        if bytes[i] == b':' {
            if bytes.get(i + 1) == Some(&b':') {
                // A cast: skip every colon of the run.
                while bytes.get(i) == Some(&b':') {
                    i += 1;
                }
                continue;
            }
            let name_len = sql[i + 1..]
                .char_indices()
                .take_while(|(_, c)| c.is_alphanumeric() || *c == '_')
                .last()
                .map_or(0, |(k, c)| k + c.len_utf8());
            if name_len > 0 {
                if text_start < i {
                    parts.push(Part::Text(&sql[text_start..i]));
                }
                parts.push(Part::Var(&sql[i + 1..i + 1 + name_len]));
                i += 1 + name_len;
                text_start = i;
                continue;
            }
        }
        i += 1;
    }
    if text_start < sql.len() {
        parts.push(Part::Text(&sql[text_start..]));
    }
    parts
}

mod parse;
#[cfg(test)]
mod tests;
