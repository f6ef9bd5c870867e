//! The script parser: characters to commands, with locations for errors.

use super::{Command, CommandKind, Loc, Script, ScriptError, SleepAmount, Store, variables};

/// An argument of a meta-command.
struct Arg {
    text: String,
    loc: Loc,
    /// Its character offset in the text after the command word.
    offset: usize,
}

pub(super) struct Parser<'a> {
    file: &'a str,
    chars: Vec<char>,
    lines: Vec<&'a str>,
    /// Index into `chars`.
    pos: usize,
    line: usize,
    column: usize,
}

impl<'a> Parser<'a> {
    pub(super) fn new(file: &'a str, text: &'a str) -> Self {
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

    /// The line `loc` is on.
    fn line_at(&self, loc: Loc) -> String {
        self.lines
            .get(loc.line - 1)
            .copied()
            .unwrap_or("")
            .trim_end_matches('\r')
            .to_string()
    }

    /// An error at `loc` as pgbench words it: `FILE:LINE: message`, the
    /// line and a caret under `loc`'s column.
    fn err(&self, loc: Loc, message: impl Into<String>) -> ScriptError {
        ScriptError {
            file: self.file.to_string(),
            loc,
            message: format!("{}:{}: {}", self.file, loc.line, message.into()),
            text: self.line_at(loc),
            caret: true,
            hint: None,
        }
    }

    /// pgbench's `syntax_error` of meta-command `command` (started at
    /// `at`): `FILE:LINE: msg (more) in command "command"`, the command's
    /// line, and a caret at `caret` when given.
    fn syntax(
        &self,
        at: Loc,
        command: &str,
        msg: &str,
        more: Option<&str>,
        caret: Option<Loc>,
    ) -> ScriptError {
        let more = more.map(|m| format!(" ({m})")).unwrap_or_default();
        ScriptError {
            file: self.file.to_string(),
            loc: caret.unwrap_or(at),
            message: format!(
                "{}:{}: {msg}{more} in command \"{command}\"",
                self.file, at.line
            ),
            text: self.line_at(at),
            caret: caret.is_some(),
            hint: None,
        }
    }

    /// pgbench's `ConditionError`: `\if` blocks that do not nest, at
    /// command `n` (from 1).
    fn condition(&self, loc: Loc, n: usize, msg: &str) -> ScriptError {
        ScriptError {
            file: self.file.to_string(),
            loc,
            message: format!(
                "condition error in script \"{}\" command {n}: {msg}",
                self.file
            ),
            text: String::new(),
            caret: false,
            hint: None,
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

    pub(super) fn run(mut self, weight: u32) -> Result<Script, ScriptError> {
        let mut commands: Vec<Command> = Vec::new();
        loop {
            // Skip blank space and comments between commands.
            while let Some(c) = self.peek(0) {
                if c.is_whitespace() || c == ';' {
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
            let first_line = self.line_at(loc).trim().to_string();
            let kind = if c == '\\' && self.peek(1) != Some(';') {
                match self.meta(loc)? {
                    Meta::Command(k) => k,
                    Meta::Store(store, more) => {
                        self.store_into(&mut commands, store, loc, more)?;
                        continue;
                    }
                }
            } else {
                match self.sql(loc)? {
                    Some(k) => k,
                    None => continue,
                }
            };
            commands.push(Command {
                kind,
                loc,
                first_line,
            });
        }
        self.check_if_nesting(&commands)?;
        if commands.is_empty() {
            let mut e = self.condition(Loc { line: 1, column: 1 }, 0, "");
            e.message = format!("empty command list for script \"{}\"", self.file);
            return Err(e);
        }
        Ok(Script {
            name: self.file.to_string(),
            weight,
            commands,
        })
    }

    /// `\gset`/`\aset` (at `at`): the results of the SQL command just
    /// before it go into variables, as pgbench merges them.
    fn store_into(
        &self,
        commands: &mut [Command],
        store: Store,
        at: Loc,
        extra: Option<Loc>,
    ) -> Result<(), ScriptError> {
        let word = match store {
            Store::Gset(_) => "gset",
            Store::Aset(_) => "aset",
        };
        if let Some(l) = extra {
            return Err(self.syntax(at, word, "too many arguments", None, Some(l)));
        }
        let must_follow = |more: Option<&str>| {
            let mut e = self.err(at, "\\gset must follow an SQL command");
            if let Some(m) = more {
                e.message.push_str(&format!(" ({m})"));
            }
            e.text.clear();
            e
        };
        match commands.last_mut() {
            Some(Command {
                kind: CommandKind::Sql {
                    store: s @ None, ..
                },
                ..
            }) => {
                *s = Some(store);
                Ok(())
            }
            Some(c) => Err(must_follow(Some(&c.first_line))),
            None => Err(must_follow(None)),
        }
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
    /// A SQL command from the current position to its `;`, to a
    /// backslash command (pgbench ends the SQL there: `SELECT 1 \gset`),
    /// or to the end of the file; `None` when it holds nothing.
    fn sql(&mut self, _start: Loc) -> Result<Option<CommandKind>, ScriptError> {
        let mut sql = String::new();
        // pgbench's text: from here to the end, less the backslashes of
        // `\;` (psql's lexer keeps the `;` alone).
        let start = self.pos;
        let mut joins: Vec<usize> = Vec::new();
        while let Some(c) = self.peek(0) {
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
                    if self.peek(1) == Some(';') {
                        // \; joins statements into one command.
                        joins.push(self.pos);
                        self.bump();
                        self.bump();
                        sql.push(';');
                        continue;
                    }
                    break;
                }
                _ => {
                    sql.push(c);
                    self.bump();
                }
            }
        }
        let sql = sql.trim().to_string();
        if sql
            .trim_matches(|c: char| c == ';' || c.is_whitespace())
            .is_empty()
        {
            return Ok(None);
        }
        let text: String = (start..self.pos)
            .filter(|k| !joins.contains(k))
            .map(|k| self.chars[k])
            .collect();
        Ok(Some(CommandKind::Sql {
            variables: variables(&text),
            sql,
            text,
            store: None,
        }))
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

    fn meta(&mut self, at: Loc) -> Result<Meta, ScriptError> {
        let (word, args, rest, locs) = self.meta_line();
        let fail = |p: &Self, msg: &str, more: Option<&str>, caret: Option<Loc>| {
            Err(p.syntax(at, &word, msg, more, caret))
        };
        // The expression of \set, \if, \elif: the rest of the line,
        // located where it starts.
        let expression = |p: &Self, skip: usize| -> Result<(String, Loc), ScriptError> {
            let (text, start) = match args.get(skip) {
                Some(a) => {
                    let text: String = rest.chars().skip(a.offset).collect();
                    (text.trim_end().to_string(), a.offset)
                }
                None => (String::new(), rest.chars().count()),
            };
            if let Err(e) = crate::pgbench::expr::Expr::parse(&text) {
                // Located over continuation lines too; at the end of the
                // expression, just after its last character.
                let n = text.chars().count();
                let loc = match locs.get(start + e.offset()) {
                    Some(l) if e.offset() < n => *l,
                    _ => match (start + n).checked_sub(1).and_then(|k| locs.get(k)) {
                        Some(last) => Loc {
                            column: last.column + 1,
                            ..*last
                        },
                        None => Loc {
                            column: at.column + word.chars().count() + 1,
                            ..at
                        },
                    },
                };
                let mut err = p.syntax(at, &word, &e.head, e.more.as_deref(), Some(loc));
                err.hint = (e.message != e.head).then(|| e.message.clone());
                return Err(err);
            }
            Ok((text, args.get(skip).map_or(at, |a| a.loc)))
        };
        // pgbench's MAX_ARGS: the command and 255 arguments.
        if !matches!(word.as_str(), "set" | "if" | "elif") && args.len() >= 256 {
            return fail(self, "too many arguments", None, None);
        }
        let kind = match word.as_str() {
            "set" => {
                let Some(Arg { text: name, .. }) = args.first() else {
                    return fail(self, "missing argument", None, None);
                };
                let (expr, expr_loc) = expression(self, 1)?;
                CommandKind::Set {
                    name: name.clone(),
                    expr,
                    expr_loc,
                }
            }
            "if" | "elif" => {
                let (expr, expr_loc) = expression(self, 0)?;
                if word == "if" {
                    CommandKind::If { expr, expr_loc }
                } else {
                    CommandKind::Elif { expr, expr_loc }
                }
            }
            "else" | "endif" | "startpipeline" | "syncpipeline" | "endpipeline"
                if !args.is_empty() =>
            {
                return fail(self, "unexpected argument", None, None);
            }
            "else" => CommandKind::Else,
            "endif" => CommandKind::Endif,
            "startpipeline" => CommandKind::StartPipeline,
            "syncpipeline" => CommandKind::SyncPipeline,
            "endpipeline" => CommandKind::EndPipeline,
            "sleep" => self.sleep(at, &args)?,
            "shell" => {
                if args.is_empty() {
                    return fail(self, "missing command", None, None);
                }
                CommandKind::Shell {
                    set: None,
                    words: args.iter().map(|a| a.text.clone()).collect(),
                }
            }
            "setshell" => {
                if args.len() < 2 {
                    return fail(self, "missing argument", None, None);
                }
                CommandKind::Shell {
                    set: Some(args[0].text.clone()),
                    words: args[1..].iter().map(|a| a.text.clone()).collect(),
                }
            }
            "gset" | "aset" => {
                let prefix = args.first().map(|a| a.text.clone()).unwrap_or_default();
                let store = if word == "gset" {
                    Store::Gset(prefix)
                } else {
                    Store::Aset(prefix)
                };
                return Ok(Meta::Store(store, args.get(1).map(|a| a.loc)));
            }
            _ => {
                let mut e = self.syntax(at, &word, "invalid command", None, None);
                e.hint = Some(
                    "the meta-commands are \\set, \\sleep, \\if, \\elif, \\else, \\endif, \\gset, \\aset, \\shell, \\setshell, \\startpipeline, \\syncpipeline and \\endpipeline".into(),
                );
                return Err(e);
            }
        };
        Ok(Meta::Command(kind))
    }

    /// `\sleep n [us|ms|s]`, `\sleep 10ms`, `\sleep :var [unit]`, as
    /// pgbench reads them.
    fn sleep(&self, at: Loc, args: &[Arg]) -> Result<CommandKind, ScriptError> {
        let fail = |msg: &str, more: Option<&str>, caret: Option<Loc>| {
            Err(self.syntax(at, "sleep", msg, more, caret))
        };
        let Some(first) = args.first() else {
            return fail("missing argument", None, None);
        };
        if let Some(extra) = args.get(2) {
            return fail("too many arguments", None, Some(extra.loc));
        }
        let (amount, mut unit) = (
            first.text.as_str(),
            args.get(1).map(|a| (a.text.clone(), a.loc)),
        );
        let amount = if let Some(var) = amount.strip_prefix(':') {
            SleepAmount::Variable(var.to_string())
        } else {
            let sign = usize::from(amount.starts_with(['+', '-']));
            let digits = amount[sign..]
                .chars()
                .take_while(char::is_ascii_digit)
                .count();
            let (number, glued) = amount.split_at(sign + digits);
            if !glued.is_empty() {
                if digits > 0 && args.len() == 1 {
                    // `\sleep 10ms`: the unit glued to the number.
                    let loc = Loc {
                        column: first.loc.column + number.chars().count(),
                        ..first.loc
                    };
                    unit = Some((glued.to_string(), loc));
                } else {
                    return fail(
                        "invalid sleep time, must be an integer",
                        Some(amount),
                        Some(first.loc),
                    );
                }
            }
            SleepAmount::Literal(number.parse().unwrap_or(0))
        };
        let unit_us = match &unit {
            None => 1_000_000,
            Some((u, loc)) => match u.to_ascii_lowercase().as_str() {
                "s" => 1_000_000,
                "ms" => 1_000,
                "us" => 1,
                _ => {
                    return fail(
                        "unrecognized time unit, must be us, ms or s",
                        Some(u),
                        Some(*loc),
                    );
                }
            },
        };
        Ok(CommandKind::Sleep { amount, unit_us })
    }

    /// `\if` ... `\endif` balance and `\elif`/`\else` placement, as
    /// pgbench's `CheckConditional` checks them (commands counted from 1).
    fn check_if_nesting(&self, commands: &[Command]) -> Result<(), ScriptError> {
        // (seen \else) per open \if
        let mut stack: Vec<bool> = Vec::new();
        for (i, c) in commands.iter().enumerate() {
            let n = i + 1;
            match &c.kind {
                CommandKind::If { .. } => stack.push(false),
                CommandKind::Elif { .. } => match stack.last() {
                    None => return Err(self.condition(c.loc, n, "\\elif without matching \\if")),
                    Some(true) => return Err(self.condition(c.loc, n, "\\elif after \\else")),
                    _ => {}
                },
                CommandKind::Else => match stack.last_mut() {
                    None => return Err(self.condition(c.loc, n, "\\else without matching \\if")),
                    Some(true) => return Err(self.condition(c.loc, n, "\\else after \\else")),
                    Some(top) => *top = true,
                },
                CommandKind::Endif if stack.pop().is_none() => {
                    return Err(self.condition(c.loc, n, "\\endif without matching \\if"));
                }
                _ => {}
            }
        }
        if !stack.is_empty() {
            let at = commands
                .last()
                .map_or(Loc { line: 1, column: 1 }, |c| c.loc);
            return Err(self.condition(at, commands.len() + 1, "\\if without matching \\endif"));
        }
        Ok(())
    }
}

/// A meta-command: a command of its own, or `\gset`/`\aset` for the
/// SQL command before it (with where a second argument is, an error).
enum Meta {
    Command(CommandKind),
    Store(Store, Option<Loc>),
}
