//! The script parser: characters to commands, with locations for errors.

use super::{
    Command, CommandKind, Loc, Script, ScriptError, SleepAmount, Store, is_variable_name, variables,
};

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

    pub(super) fn run(mut self, weight: u32) -> Result<Script, ScriptError> {
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
            if let Err(e) = crate::pgbench::expr::Expr::parse(&text) {
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
