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
//! `\shell` and `\setshell` are refused with an error naming the line:
//! isobench does not run shell commands from inside a transaction loop.
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

/// A script that does not parse: `file:line:column: message`, then the
/// offending line with a caret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ScriptError {
    pub file: String,
    pub loc: Loc,
    pub message: String,
    /// The line the error is on.
    pub text: String,
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}\n  {}\n  {}^",
            self.file,
            self.loc.line,
            self.loc.column,
            self.message,
            self.text,
            " ".repeat(self.loc.column.saturating_sub(1))
        )
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
    /// A SQL command (several statements when `\;` joined them), with its
    /// variables in order of appearance.
    Sql {
        sql: String,
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
pub(crate) const BUILTINS: [(&str, &str); 3] = [
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

/// Parses script `text` of file `file`.
///
/// Errors: the first problem, located (see [`ScriptError`]): an
/// unterminated quote, comment or SQL command, an unknown or malformed
/// meta-command, a missing argument, `\shell`/`\setshell`, an unbalanced
/// `\if`, a script without commands.
pub fn parse(file: &str, text: &str, weight: u32) -> Result<Script, ScriptError> {
    Parser::new(file, text).run(weight)
}

/// An argument of a meta-command.
struct Arg {
    text: String,
    loc: Loc,
    /// Its character offset in the text after the command word.
    offset: usize,
}

struct Parser<'a> {
    file: &'a str,
    chars: Vec<char>,
    lines: Vec<&'a str>,
    /// Index into `chars`.
    pos: usize,
    line: usize,
    column: usize,
}

impl<'a> Parser<'a> {
    fn new(file: &'a str, text: &'a str) -> Self {
        Parser {
            file,
            chars: text.chars().collect(),
            lines: text.lines().collect(),
            pos: 0,
            line: 1,
            column: 1,
        }
    }

    fn loc(&self) -> Loc {
        Loc {
            line: self.line,
            column: self.column,
        }
    }

    fn err(&self, loc: Loc, message: impl Into<String>) -> ScriptError {
        ScriptError {
            file: self.file.to_string(),
            loc,
            message: message.into(),
            text: self
                .lines
                .get(loc.line - 1)
                .copied()
                .unwrap_or("")
                .to_string(),
        }
    }

    fn peek(&self, k: usize) -> Option<char> {
        self.chars.get(self.pos + k).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.chars.get(self.pos).copied()?;
        self.pos += 1;
        if c == '\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
        Some(c)
    }

    fn run(mut self, weight: u32) -> Result<Script, ScriptError> {
        let mut commands = Vec::new();
        loop {
            // Skip blank space and comments between commands.
            while let Some(c) = self.peek(0) {
                if c.is_whitespace() {
                    self.bump();
                } else if c == '-' && self.peek(1) == Some('-') {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.bump();
                    }
                } else if c == '/' && self.peek(1) == Some('*') {
                    let at = self.loc();
                    let mut sql = String::new();
                    self.block_comment(&mut sql, at)?;
                } else {
                    break;
                }
            }
            let Some(c) = self.peek(0) else { break };
            let loc = self.loc();
            let first_line = self
                .lines
                .get(loc.line - 1)
                .copied()
                .unwrap_or("")
                .trim()
                .to_string();
            let kind = if c == '\\' {
                self.meta(loc)?
            } else {
                self.sql(loc)?
            };
            commands.push(Command {
                kind,
                loc,
                first_line,
            });
        }
        self.check_if_nesting(&commands)?;
        if commands.is_empty() {
            return Err(self.err(Loc { line: 1, column: 1 }, "the script has no commands"));
        }
        Ok(Script {
            name: self.file.to_string(),
            weight,
            commands,
        })
    }

    /// `/* ... */`, nested as in PostgreSQL; appended to `sql`.
    fn block_comment(&mut self, sql: &mut String, at: Loc) -> Result<(), ScriptError> {
        let mut depth = 0;
        loop {
            match (self.peek(0), self.peek(1)) {
                (Some('/'), Some('*')) => {
                    depth += 1;
                    sql.push_str("/*");
                    self.bump();
                    self.bump();
                }
                (Some('*'), Some('/')) => {
                    depth -= 1;
                    sql.push_str("*/");
                    self.bump();
                    self.bump();
                    if depth == 0 {
                        return Ok(());
                    }
                }
                (Some(c), _) => {
                    sql.push(c);
                    self.bump();
                }
                (None, _) => return Err(self.err(at, "unterminated /* comment")),
            }
        }
    }

    /// A SQL command from the current position to its `;` (or `\gset` /
    /// `\aset`).
    fn sql(&mut self, start: Loc) -> Result<CommandKind, ScriptError> {
        let mut sql = String::new();
        let mut store = None;
        loop {
            let Some(c) = self.peek(0) else {
                if sql.trim().is_empty() {
                    break;
                }
                return Err(self.err(
                    start,
                    "SQL command not terminated: end it with ';' (or \\gset / \\aset)",
                ));
            };
            match c {
                ';' => {
                    self.bump();
                    break;
                }
                '\'' | '"' => {
                    let at = self.loc();
                    let escapes = c == '\''
                        && sql.chars().last().is_some_and(|p| p == 'E' || p == 'e')
                        && !sql
                            .chars()
                            .rev()
                            .nth(1)
                            .is_some_and(|p| p.is_alphanumeric() || p == '_');
                    sql.push(c);
                    self.bump();
                    loop {
                        match self.bump() {
                            None => {
                                return Err(self.err(
                                    at,
                                    if c == '\'' {
                                        "unterminated quoted string"
                                    } else {
                                        "unterminated quoted identifier"
                                    },
                                ));
                            }
                            Some('\\') if escapes => {
                                sql.push('\\');
                                if let Some(n) = self.bump() {
                                    sql.push(n);
                                }
                            }
                            Some(q) if q == c => {
                                sql.push(q);
                                if self.peek(0) == Some(c) {
                                    sql.push(c);
                                    self.bump();
                                } else {
                                    break;
                                }
                            }
                            Some(other) => sql.push(other),
                        }
                    }
                }
                '$' if !sql
                    .chars()
                    .last()
                    .is_some_and(|p| p.is_alphanumeric() || p == '_') =>
                {
                    // A dollar quote $tag$ ... $tag$ (not a $1 parameter).
                    let at = self.loc();
                    let mut tag = String::from("$");
                    let mut k = 1;
                    while let Some(t) = self.peek(k) {
                        if t == '$' {
                            tag.push('$');
                            break;
                        }
                        if !(t.is_alphanumeric() || t == '_') || (k == 1 && t.is_ascii_digit()) {
                            tag.clear();
                            break;
                        }
                        tag.push(t);
                        k += 1;
                    }
                    if tag.len() >= 2 && tag.ends_with('$') {
                        for _ in 0..tag.chars().count() {
                            sql.push(self.bump().expect("peeked"));
                        }
                        loop {
                            if self.peek(0).is_none() {
                                return Err(self
                                    .err(at, format!("unterminated dollar-quoted string {tag}")));
                            }
                            let rest: String = self.chars[self.pos..]
                                .iter()
                                .take(tag.chars().count())
                                .collect();
                            if rest == tag {
                                for _ in 0..tag.chars().count() {
                                    sql.push(self.bump().expect("peeked"));
                                }
                                break;
                            }
                            sql.push(self.bump().expect("peeked"));
                        }
                    } else {
                        sql.push('$');
                        self.bump();
                    }
                }
                '-' if self.peek(1) == Some('-') => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.bump();
                    }
                }
                '/' if self.peek(1) == Some('*') => {
                    let at = self.loc();
                    self.block_comment(&mut sql, at)?;
                }
                '\\' => {
                    let at = self.loc();
                    if self.peek(1) == Some(';') {
                        // \; joins statements into one command.
                        self.bump();
                        self.bump();
                        sql.push(';');
                        continue;
                    }
                    let word = self.word_after_backslash();
                    match word.as_str() {
                        "gset" | "aset" => {
                            let args = self.meta_line().1;
                            if let Some(extra) = args.get(1) {
                                return Err(self.err(
                                    extra.loc,
                                    format!("\\{word} takes at most one argument (a prefix)"),
                                ));
                            }
                            let prefix =
                                args.into_iter().next().map(|a| a.text).unwrap_or_default();
                            store = Some(if word == "gset" {
                                Store::Gset(prefix)
                            } else {
                                Store::Aset(prefix)
                            });
                            break;
                        }
                        _ => {
                            return Err(self.err(
                                at,
                                format!(
                                    "\\{word} inside a SQL command: end the command with ';' first \
                                     (only \\gset, \\aset and \\; may follow SQL)"
                                ),
                            ));
                        }
                    }
                }
                _ => {
                    sql.push(c);
                    self.bump();
                }
            }
        }
        let sql = sql.trim().to_string();
        if sql.is_empty() {
            return Err(self.err(start, "empty SQL command"));
        }
        Ok(CommandKind::Sql {
            variables: variables(&sql),
            sql,
            store,
        })
    }

    /// The letters after a `\` at the current position (not consumed).
    fn word_after_backslash(&self) -> String {
        self.chars[self.pos + 1..]
            .iter()
            .take_while(|c| c.is_alphanumeric() || **c == '_')
            .collect()
    }

    /// Consumes a meta-command's word and the rest of its line (with `\`
    /// continuations); returns the word, the whitespace-separated
    /// arguments (text, location, character offset in the rest), and the
    /// rest of the line after the word.
    /// A meta-command's word, its arguments, the rest of its line (a
    /// continuation read as a space) and where each character of that rest
    /// is in the file.
    fn meta_line(&mut self) -> (String, Vec<Arg>, String, Vec<Loc>) {
        self.bump(); // the backslash
        let mut word = String::new();
        while self
            .peek(0)
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
        {
            word.push(self.bump().expect("peeked"));
        }
        let mut rest = String::new();
        let mut locs = Vec::new();
        let mut args: Vec<Arg> = Vec::new();
        let mut current: Option<Arg> = None;
        while let Some(c) = self.peek(0) {
            if c == '\\' && self.peek(1) == Some('\n') {
                locs.push(self.loc());
                self.bump();
                self.bump();
                rest.push(' ');
                if let Some(a) = current.take() {
                    args.push(a);
                }
                continue;
            }
            if c == '\n' {
                break;
            }
            let loc = self.loc();
            let offset = rest.chars().count();
            self.bump();
            rest.push(c);
            locs.push(loc);
            if c.is_whitespace() {
                if let Some(a) = current.take() {
                    args.push(a);
                }
            } else {
                current
                    .get_or_insert_with(|| Arg {
                        text: String::new(),
                        loc,
                        offset,
                    })
                    .text
                    .push(c);
            }
        }
        if let Some(a) = current.take() {
            args.push(a);
        }
        (word, args, rest, locs)
    }

    fn meta(&mut self, at: Loc) -> Result<CommandKind, ScriptError> {
        let (word, args, rest, locs) = self.meta_line();
        let none = |p: &Self, kind: CommandKind| -> Result<CommandKind, ScriptError> {
            match args.first() {
                Some(a) => Err(p.err(
                    a.loc,
                    format!("\\{word} takes no argument, found '{}'", a.text),
                )),
                None => Ok(kind),
            }
        };
        // The expression of \set, \if, \elif: the rest of the line,
        // located where it starts.
        let expression = |p: &Self, skip: usize| -> Result<(String, Loc), ScriptError> {
            let Some(a) = args.get(skip) else {
                return Err(p.err(at, format!("\\{word}: missing expression")));
            };
            let text: String = rest.chars().skip(a.offset).collect();
            let text = text.trim_end().to_string();
            if let Err(e) = super::expr::Expr::parse(&text) {
                // Located over continuation lines too; at the end of the
                // expression, just after its last character.
                let loc = match locs.get(a.offset + e.offset()) {
                    Some(l) if e.offset() < text.chars().count() => *l,
                    _ => {
                        let last = locs[a.offset + text.chars().count() - 1];
                        Loc {
                            column: last.column + 1,
                            ..last
                        }
                    }
                };
                return Err(p.err(loc, format!("\\{word}: {e}")));
            }
            Ok((text, a.loc))
        };
        match word.as_str() {
            "set" => {
                let Some(Arg { text: name, loc: l, .. }) = args.first() else {
                    return Err(self.err(at, "\\set: missing variable name (\\set name expression)"));
                };
                if !is_variable_name(name) {
                    return Err(self.err(*l, format!("\\set: '{name}' is not a variable name (letters, digits, _)")));
                }
                let (expr, expr_loc) = expression(self, 1)?;
                Ok(CommandKind::Set {
                    name: name.clone(),
                    expr,
                    expr_loc,
                })
            }
            "if" | "elif" => {
                let (expr, expr_loc) = expression(self, 0)?;
                Ok(if word == "if" {
                    CommandKind::If { expr, expr_loc }
                } else {
                    CommandKind::Elif { expr, expr_loc }
                })
            }
            "else" => none(self, CommandKind::Else),
            "endif" => none(self, CommandKind::Endif),
            "startpipeline" => none(self, CommandKind::StartPipeline),
            "syncpipeline" => none(self, CommandKind::SyncPipeline),
            "endpipeline" => none(self, CommandKind::EndPipeline),
            "sleep" => {
                let Some(Arg { text: amount, loc: l, .. }) = args.first() else {
                    return Err(self.err(at, "\\sleep: missing duration (\\sleep n [us|ms|s] or \\sleep :var [unit])"));
                };
                let amount = if let Some(var) = amount.strip_prefix(':') {
                    if !is_variable_name(var) {
                        return Err(self.err(*l, format!("\\sleep: '{amount}' is not a variable")));
                    }
                    SleepAmount::Variable(var.to_string())
                } else {
                    SleepAmount::Literal(amount.parse().map_err(|_| {
                        self.err(*l, format!("\\sleep: '{amount}' is not an integer or a :variable"))
                    })?)
                };
                let unit_us = match args.get(1).map(|a| (a.text.as_str(), &a.loc)) {
                    None | Some(("s", _)) => 1_000_000,
                    Some(("ms", _)) => 1_000,
                    Some(("us", _)) => 1,
                    Some((u, l)) => {
                        return Err(self.err(*l, format!("\\sleep: unknown time unit '{u}' (use us, ms or s)")));
                    }
                };
                if let Some(extra) = args.get(2) {
                    return Err(self.err(extra.loc, format!("\\sleep: unexpected '{}'", extra.text)));
                }
                Ok(CommandKind::Sleep { amount, unit_us })
            }
            "shell" | "setshell" => Err(self.err(
                at,
                format!(
                    "\\{word} is not supported by isobench: it would run a shell command inside the \
                     measured transaction loop; compute the value with \\set or SQL instead"
                ),
            )),
            "gset" | "aset" => Err(self.err(at, format!("\\{word} must follow a SQL command"))),
            "" => Err(self.err(at, "a lone backslash: expected a meta-command like \\set")),
            other => Err(self.err(
                at,
                format!(
                    "unknown meta-command \\{other} (known: \\set, \\sleep, \\if, \\elif, \\else, \\endif, \
                     \\gset, \\aset, \\startpipeline, \\syncpipeline, \\endpipeline)"
                ),
            )),
        }
    }

    /// `\if` ... `\endif` balance, `\elif`/`\else` placement, pipelines
    /// not nested.
    fn check_if_nesting(&self, commands: &[Command]) -> Result<(), ScriptError> {
        // (location of \if, seen \else)
        let mut stack: Vec<(Loc, bool)> = Vec::new();
        let mut pipeline: Option<Loc> = None;
        for c in commands {
            match &c.kind {
                CommandKind::If { .. } => stack.push((c.loc, false)),
                CommandKind::Elif { .. } => match stack.last() {
                    None => return Err(self.err(c.loc, "\\elif without a matching \\if")),
                    Some((_, true)) => return Err(self.err(c.loc, "\\elif after \\else")),
                    _ => {}
                },
                CommandKind::Else => match stack.last_mut() {
                    None => return Err(self.err(c.loc, "\\else without a matching \\if")),
                    Some((_, true)) => return Err(self.err(c.loc, "\\else after \\else")),
                    Some(top) => top.1 = true,
                },
                CommandKind::Endif if stack.pop().is_none() => {
                    return Err(self.err(c.loc, "\\endif without a matching \\if"));
                }
                CommandKind::StartPipeline => {
                    if pipeline.is_some() {
                        return Err(self.err(c.loc, "\\startpipeline inside a pipeline"));
                    }
                    pipeline = Some(c.loc);
                }
                CommandKind::SyncPipeline if pipeline.is_none() => {
                    return Err(self.err(c.loc, "\\syncpipeline outside a pipeline"));
                }
                CommandKind::EndPipeline if pipeline.take().is_none() => {
                    return Err(self.err(c.loc, "\\endpipeline without \\startpipeline"));
                }
                _ => {}
            }
        }
        if let Some((loc, _)) = stack.last() {
            return Err(self.err(*loc, "\\if without a matching \\endif"));
        }
        if let Some(loc) = pipeline {
            return Err(self.err(loc, "\\startpipeline without \\endpipeline"));
        }
        Ok(())
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<CommandKind> {
        parse("t.sql", text, 1)
            .unwrap()
            .commands
            .into_iter()
            .map(|c| c.kind)
            .collect()
    }

    fn err(text: &str) -> String {
        parse("t.sql", text, 1).unwrap_err().to_string()
    }

    #[test]
    fn builtin_scripts_parse() {
        let s = builtin("tpcb-like", 1).unwrap();
        assert_eq!(s.name, "builtin: tpcb-like");
        assert_eq!(s.commands.len(), 11);
        let CommandKind::Set {
            name,
            expr,
            expr_loc,
        } = &s.commands[0].kind
        else {
            panic!()
        };
        assert_eq!(
            (name.as_str(), expr.as_str()),
            ("aid", "random(1, 100000 * :scale)")
        );
        assert_eq!(
            *expr_loc,
            Loc {
                line: 1,
                column: 10
            }
        );
        let CommandKind::Sql { variables, .. } = &s.commands[9].kind else {
            panic!()
        };
        assert_eq!(variables, &["tid", "bid", "aid", "delta"]);
        assert_eq!(builtin("select", 2).unwrap().weight, 2);
        assert!(builtin("s", 1).unwrap_err().contains("ambiguous"));
        assert!(
            builtin("tpcc", 1)
                .unwrap_err()
                .contains("tpcb-like, simple-update, select-only")
        );
        assert_eq!(split_weight("x.sql@3"), Ok(("x.sql", 3)));
        assert_eq!(split_weight("x.sql"), Ok(("x.sql", 1)));
        assert!(split_weight("x.sql@-1").is_err());
    }

    #[test]
    fn sql_commands_span_lines_and_respect_quotes_comments_and_dollar_quotes() {
        let k = kinds(
            "-- a comment; with a semicolon\n\
             SELECT 'a;b', \"x;y\", E'it\\'s;' -- trailing; comment\n  FROM t /* c; /* nested; */ */ WHERE v = :v::int;\n\
             DO $fn$ BEGIN PERFORM 1; END $fn$;\n\
             SELECT $1, 2 \\; SELECT 3;\n",
        );
        assert_eq!(k.len(), 3);
        let CommandKind::Sql {
            sql,
            variables,
            store,
        } = &k[0]
        else {
            panic!()
        };
        assert!(
            sql.starts_with("SELECT 'a;b', \"x;y\", E'it\\'s;'"),
            "{sql}"
        );
        assert!(sql.contains("WHERE v = :v::int"), "{sql}");
        assert_eq!(variables, &["v"]);
        assert_eq!(store, &None);
        let CommandKind::Sql { sql, .. } = &k[1] else {
            panic!()
        };
        assert_eq!(sql, "DO $fn$ BEGIN PERFORM 1; END $fn$");
        let CommandKind::Sql { sql, .. } = &k[2] else {
            panic!()
        };
        assert_eq!(sql, "SELECT $1, 2 ; SELECT 3");
    }

    #[test]
    fn meta_commands() {
        let k = kinds(
            "\\set x 1 + \\\n  2\n\
             \\sleep 10 ms\n\\sleep :d\n\
             \\if :x > 2\nSELECT 1 AS one \\gset p_\n\\elif false\nSELECT 2 \\aset\n\\else\n\\endif\n\
             \\startpipeline\nSELECT 1;\n\\syncpipeline\n\\endpipeline\n",
        );
        assert_eq!(
            k[0],
            CommandKind::Set {
                name: "x".into(),
                expr: "1 +    2".into(),
                expr_loc: Loc { line: 1, column: 8 }
            }
        );
        assert_eq!(
            k[1],
            CommandKind::Sleep {
                amount: SleepAmount::Literal(10),
                unit_us: 1000
            }
        );
        assert_eq!(
            k[2],
            CommandKind::Sleep {
                amount: SleepAmount::Variable("d".into()),
                unit_us: 1_000_000
            }
        );
        assert!(matches!(&k[3], CommandKind::If { expr, .. } if expr == ":x > 2"));
        assert!(
            matches!(&k[4], CommandKind::Sql { store: Some(Store::Gset(p)), sql, .. } if p == "p_" && sql == "SELECT 1 AS one")
        );
        assert!(
            matches!(&k[6], CommandKind::Sql { store: Some(Store::Aset(p)), .. } if p.is_empty())
        );
        assert_eq!(k.len(), 13);
    }

    #[test]
    fn errors_name_file_line_column_and_show_the_line() {
        let e = err("SELECT 1;\n  \\bogus 1\n");
        assert!(
            e.starts_with("t.sql:2:3: unknown meta-command \\bogus"),
            "{e}"
        );
        assert!(e.ends_with("\n    \\bogus 1\n    ^"), "{e}");
        assert!(err("SELECT 1").contains("t.sql:1:1: SQL command not terminated"));
        assert!(err("SELECT 'x;\n").contains("t.sql:1:8: unterminated quoted string"));
        assert!(err("/* x").contains("unterminated /* comment"));
        assert!(err("SELECT $a$ x;").contains("unterminated dollar-quoted string $a$"));
        assert!(err("\\shell echo hi").contains("t.sql:1:1: \\shell is not supported"));
        assert!(err("\\setshell x echo 1").contains("\\setshell is not supported"));
        assert!(err("\\set").contains("missing variable name"));
        assert!(err("\\set x").contains("\\set: missing expression"));
        assert!(err("\\set 1-x 2").contains("is not a variable name"));
        assert!(err("\\sleep 1 h").contains("t.sql:1:10: \\sleep: unknown time unit 'h'"));
        assert!(err("\\sleep x").contains("not an integer or a :variable"));
        assert!(
            err("\\if true\nSELECT 1;\n").contains("t.sql:1:1: \\if without a matching \\endif")
        );
        assert!(err("\\endif").contains("\\endif without a matching \\if"));
        assert!(
            err("\\if 1\n\\else\n\\elif 2\n\\endif").contains("t.sql:3:1: \\elif after \\else")
        );
        assert!(err("\\else 1").contains("takes no argument"));
        assert!(err("\\gset").contains("must follow a SQL command"));
        assert!(err("SELECT 1 \\sleep 1").contains("inside a SQL command"));
        assert!(err("\\startpipeline\nSELECT 1;").contains("without \\endpipeline"));
        assert!(err("-- only a comment\n").contains("no commands"));
    }

    #[test]
    fn variables_split_like_pgbench() {
        assert_eq!(
            split_variables("SELECT :a, ':b', x::text, :c_1+:a, :"),
            vec![
                Part::Text("SELECT "),
                Part::Var("a"),
                Part::Text(", '"),
                Part::Var("b"),
                Part::Text("', x::text, "),
                Part::Var("c_1"),
                Part::Text("+"),
                Part::Var("a"),
                Part::Text(", :"),
            ]
        );
        assert_eq!(variables("SELECT :a, :b, :a"), vec!["a", "b"]);
    }

    proptest::proptest! {
        #[test]
        fn never_panics(text in "(\\PC|\\\\|;|'|\\$|:|\n|/\\*|\\*/|--){0,80}") {
            let _ = parse("p.sql", &text, 1);
        }
    }
}
