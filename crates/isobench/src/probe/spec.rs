//! Probe files: the syntax of PostgreSQL's isolation tester spec files
//! (`src/test/isolation/README` and `specparse.y` in the PostgreSQL source)
//! plus what isobench needs to judge the result, written as `# @key value`
//! comment lines so the file stays a valid spec for `isolationtester`.
//!
//! ```text
//! # @probe G1a
//! # @title aborted read
//! # @source Adya 1999, section 4.1.2; Hermitage postgres.md "Aborted Reads (G1a)"
//! # @anomaly s2r1 has "1,101"
//! # @anomaly s2r2 has "1,101"
//! # @expect rc prevented snapshot
//!
//! setup    { CREATE TABLE test (id int PRIMARY KEY, value int); INSERT INTO test VALUES (1, 10), (2, 20); }
//! teardown { DROP TABLE test; }
//! session s1
//! setup    { BEGIN; }
//! step s1u { UPDATE test SET value = 101 WHERE id = 1; }
//! step s1a { ABORT; }
//! session s2
//! setup    { BEGIN; }
//! step s2r1 { SELECT * FROM test ORDER BY id; }
//! step s2r2 { SELECT * FROM test ORDER BY id; }
//! step s2c  { COMMIT; }
//! permutation s1u s2r1 s1a s2r2 s2c
//! ```
//!
//! Spec syntax: `setup { SQL }` (any number), `teardown { SQL }`, then
//! sessions (`session NAME`, optional `setup`, `step NAME { SQL }`...,
//! optional `teardown`), then `permutation STEP...` lines. A SQL block ends
//! at the first `}`, as in the isolation tester. Names are identifiers or
//! `"quoted"`. Blocker annotations of PostgreSQL 14+ (`s1a(s2b)`, `(*)`)
//! are accepted and ignored: isobench detects waits itself.
//!
//! Directives (`@probe`, `@anomaly`, `@expect`, ...): see [`super::directive`].

pub use super::expect::{
    Condition, Expectation, Mechanism, Op, Outcome, StepRef, Subject, Term, parse_rows, show_rows,
};
pub use super::lexer::SpecError;
use crate::model::Isolation;

/// A SQL block and the line it starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub sql: String,
    pub line: u32,
}

/// One session: a connection that runs its steps in permutation order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub name: String,
    pub setup: Option<Block>,
    pub steps: Vec<Step>,
    pub teardown: Option<Block>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub name: String,
    /// The SQL, trimmed.
    pub sql: String,
    /// The SQL as the isolation tester keeps and prints it: spaces and
    /// tabs after `{` and before `}` removed, newlines kept
    /// (`specscanner.l`).
    pub text: String,
    pub line: u32,
}

/// A parsed probe file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    pub name: String,
    pub title: String,
    pub source: String,
    /// Where it was read from: a path, or `builtin:NAME`.
    pub file: String,
    pub setup: Vec<Block>,
    pub teardown: Option<Block>,
    pub sessions: Vec<Session>,
    pub permutations: Vec<Vec<StepRef>>,
    pub final_query: Option<Block>,
    pub anomalies: Vec<Condition>,
    pub expect: Vec<Expectation>,
}

impl Probe {
    pub fn step(&self, r: StepRef) -> &Step {
        &self.sessions[r.session].steps[r.step]
    }

    /// `session:step`, e.g. `s2:s2c`.
    pub fn label(&self, r: StepRef) -> String {
        format!("{}:{}", self.sessions[r.session].name, self.step(r).name)
    }

    pub fn expectation(&self, level: Isolation) -> Option<&Expectation> {
        self.expect.iter().find(|e| e.level == level)
    }
}

pub(super) use super::lexer::Directive;
use super::lexer::{KEYWORDS, Lexed, Tok, Token, lex};

pub(super) struct Parser<'a> {
    file: &'a str,
    toks: Vec<Token>,
    pos: usize,
    /// Where the text ends, for "expected ... at the end" errors.
    pub(super) end: (u32, u32),
}

impl Parser<'_> {
    pub(super) fn err<T>(
        &self,
        line: u32,
        col: u32,
        message: impl Into<String>,
    ) -> Result<T, SpecError> {
        Err(SpecError {
            file: self.file.to_string(),
            line,
            col,
            message: message.into(),
        })
    }

    fn peek(&self) -> Option<&Token> {
        self.toks.get(self.pos)
    }

    fn at_keyword(&self, kw: &str) -> bool {
        matches!(self.peek(), Some(Token { tok: Tok::Word(w), .. }) if w == kw)
    }

    /// Reports the next token (or the end) as unexpected.
    fn unexpected<T>(&self, expected: &str) -> Result<T, SpecError> {
        match self.peek() {
            Some(t) => {
                let found = match &t.tok {
                    Tok::Word(w) => format!("'{w}'"),
                    Tok::Quoted(q) => format!("\"{q}\""),
                    Tok::Sql(..) => "a SQL block".into(),
                    Tok::Punct(c) => format!("'{c}'"),
                };
                self.err(t.line, t.col, format!("expected {expected}, found {found}"))
            }
            None => self.err(
                self.end.0,
                self.end.1,
                format!("expected {expected}, found the end of the file"),
            ),
        }
    }

    /// A `{ SQL }` block and its text as the isolation tester keeps it.
    fn sql_text(&mut self, what: &str) -> Result<(Block, String), SpecError> {
        match self.peek() {
            Some(Token {
                tok: Tok::Sql(sql, raw),
                line,
                ..
            }) => {
                let b = Block {
                    sql: sql.clone(),
                    line: *line,
                };
                let raw = raw.clone();
                self.pos += 1;
                Ok((b, raw))
            }
            _ => self.unexpected(&format!("a {{ SQL }} block after {what}")),
        }
    }

    fn sql(&mut self, what: &str) -> Result<Block, SpecError> {
        Ok(self.sql_text(what)?.0)
    }

    fn name(&mut self, what: &str) -> Result<(String, u32, u32), SpecError> {
        match self.peek() {
            Some(Token {
                tok: Tok::Word(w) | Tok::Quoted(w),
                line,
                col,
            }) => {
                let r = (w.clone(), *line, *col);
                self.pos += 1;
                Ok(r)
            }
            _ => self.unexpected(what),
        }
    }

    fn keyword_block(&mut self, kw: &str) -> Result<Option<Block>, SpecError> {
        if self.at_keyword(kw) {
            self.pos += 1;
            Ok(Some(self.sql(&format!("`{kw}`"))?))
        } else {
            Ok(None)
        }
    }
}

/// A blocker annotation on a permutation step (PostgreSQL 14+,
/// `src/test/isolation/README`, "Permutation steps"): the step is not
/// reported complete while the blocker holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blocker {
    /// `(*)`: report the step as waiting once, whatever happens.
    Once,
    /// `(other)`: wait while step `other` of another session is running.
    Step(StepRef),
    /// `(other notices N)`: wait until `other`'s session has sent N more
    /// notices since this step started.
    Notices(StepRef, u32),
}

/// One step of a `permutation` line with its blocker annotations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermStep {
    pub step: StepRef,
    pub blockers: Vec<Blocker>,
}

/// A spec file's isolation-tester content, before any `# @` directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Syntax {
    pub setup: Vec<Block>,
    pub teardown: Option<Block>,
    pub sessions: Vec<Session>,
    /// The `permutation` lines; empty means every interleaving.
    pub permutations: Vec<Vec<PermStep>>,
}

impl Syntax {
    pub fn step(&self, r: StepRef) -> &Step {
        &self.sessions[r.session].steps[r.step]
    }

    /// Steps no `permutation` line names (none without such lines),
    /// sorted by name byte by byte as the isolation tester sorts them
    /// (`qsort` with `strcmp` over all steps in `check_testspec`,
    /// isolationtester.c), and warns about them in that order.
    pub fn unused_steps(&self) -> Vec<&str> {
        if self.permutations.is_empty() {
            return Vec::new();
        }
        let used: std::collections::BTreeSet<StepRef> =
            self.permutations.iter().flatten().map(|p| p.step).collect();
        let mut out = Vec::new();
        for (si, s) in self.sessions.iter().enumerate() {
            for (i, st) in s.steps.iter().enumerate() {
                if !used.contains(&StepRef {
                    session: si,
                    step: i,
                }) {
                    out.push(st.name.as_str());
                }
            }
        }
        // str's order is the bytes' order, as strcmp's.
        out.sort_unstable();
        out
    }
}

/// Parses the isolation-tester part of a spec file (the grammar of
/// `specparse.y`); `# @` directives are returned for [`super::directive::parse`].
///
/// Errors: [`SpecError`] for bad syntax, duplicate session or step names,
/// unknown steps in a permutation, and blockers that name a step outside
/// the permutation or of the step's own session (as `check_testspec` in
/// `isolationtester.c` refuses them).
pub fn parse_syntax(text: &str, file: &str) -> Result<Syntax, SpecError> {
    Ok(syntax(text, file)?.0)
}

pub(super) fn syntax<'a>(
    text: &str,
    file: &'a str,
) -> Result<(Syntax, Vec<Directive>, Parser<'a>), SpecError> {
    let Lexed { tokens, directives } = lex(text, file)?;
    let lines = text.lines().count() as u32;
    let last_len = text.lines().last().map_or(0, |l| l.chars().count()) as u32;
    let mut p = Parser {
        file,
        toks: tokens,
        pos: 0,
        end: (lines.max(1), last_len + 1),
    };
    let mut setup = Vec::new();
    while let Some(b) = p.keyword_block("setup")? {
        setup.push(b);
    }
    let teardown = p.keyword_block("teardown")?;
    let mut sessions: Vec<Session> = Vec::new();
    while p.at_keyword("session") {
        p.pos += 1;
        let session = parse_session(&mut p, &sessions)?;
        sessions.push(session);
    }
    if sessions.is_empty() {
        return p.unexpected("`setup`, `teardown` or `session`");
    }
    let mut permutations = Vec::new();
    while p.at_keyword("permutation") {
        permutations.push(parse_permutation(&mut p, &sessions)?);
    }
    if p.peek().is_some() {
        return p.unexpected("`permutation` or the end of the file");
    }
    let syntax = Syntax {
        setup,
        teardown,
        sessions,
        permutations,
    };
    Ok((syntax, directives, p))
}

/// `session NAME [setup] step... [teardown]`, after the keyword.
fn parse_session(p: &mut Parser<'_>, sessions: &[Session]) -> Result<Session, SpecError> {
    let (name, line, col) = p.name("a session name")?;
    if sessions.iter().any(|s| s.name == name) {
        return p.err(line, col, format!("session '{name}' is defined twice"));
    }
    let setup = p.keyword_block("setup")?;
    let mut steps: Vec<Step> = Vec::new();
    while p.at_keyword("step") {
        p.pos += 1;
        let (step, line, col) = p.name("a step name")?;
        let taken = sessions
            .iter()
            .flat_map(|s| &s.steps)
            .chain(&steps)
            .any(|s| s.name == step);
        if taken {
            return p.err(line, col, format!("step '{step}' is defined twice"));
        }
        let (block, text) = p.sql_text(&format!("step {step}"))?;
        steps.push(Step {
            name: step,
            sql: block.sql,
            text,
            line: block.line,
        });
    }
    if steps.is_empty() {
        return p.unexpected(&format!("`step` in session {name}"));
    }
    let teardown = p.keyword_block("teardown")?;
    Ok(Session {
        name,
        setup,
        steps,
        teardown,
    })
}

fn find_step(sessions: &[Session], name: &str) -> Option<StepRef> {
    sessions.iter().enumerate().find_map(|(si, s)| {
        s.steps
            .iter()
            .position(|st| st.name == name)
            .map(|step| StepRef { session: si, step })
    })
}

/// Where a blocker names a step: resolved after the whole line is read,
/// since a blocker may name a later step of the permutation.
struct PendingBlocker {
    at: usize,
    name: String,
    notices: Option<u32>,
    line: u32,
    col: u32,
}

/// `permutation STEP[(BLOCKER, ...)]...`, at the keyword.
fn parse_permutation(p: &mut Parser<'_>, sessions: &[Session]) -> Result<Vec<PermStep>, SpecError> {
    let kw = p.peek().cloned().expect("at a keyword");
    p.pos += 1;
    let mut perm: Vec<PermStep> = Vec::new();
    let mut pending = Vec::new();
    loop {
        match p.peek().map(|t| &t.tok) {
            Some(Tok::Word(w)) if !KEYWORDS.contains(&w.as_str()) => {}
            Some(Tok::Quoted(_)) => {}
            _ => break,
        }
        let (name, line, col) = p.name("a step name")?;
        let Some(r) = find_step(sessions, &name) else {
            return p.err(
                line,
                col,
                format!("permutation names unknown step '{name}'"),
            );
        };
        perm.push(PermStep {
            step: r,
            blockers: Vec::new(),
        });
        if matches!(p.peek().map(|t| &t.tok), Some(Tok::Punct('('))) {
            parse_blockers(p, perm.len() - 1, &mut perm, &mut pending)?;
        }
    }
    if perm.is_empty() {
        return p.err(kw.line, kw.col, "a permutation needs at least one step");
    }
    for b in pending {
        let Some(r) = find_step(sessions, &b.name).filter(|r| perm.iter().any(|s| s.step == *r))
        else {
            return p.err(
                b.line,
                b.col,
                format!("blocker '{}' is not a step of this permutation", b.name),
            );
        };
        if r.session == perm[b.at].step.session {
            return p.err(
                b.line,
                b.col,
                format!("a step cannot block on its own session's step '{}'", b.name),
            );
        }
        perm[b.at].blockers.push(match b.notices {
            Some(n) => Blocker::Notices(r, n),
            None => Blocker::Step(r),
        });
    }
    Ok(perm)
}

/// `( blocker, ... )` after permutation step `at` (PostgreSQL 14+):
/// `*`, `STEP` or `STEP notices N`.
fn parse_blockers(
    p: &mut Parser<'_>,
    at: usize,
    perm: &mut [PermStep],
    pending: &mut Vec<PendingBlocker>,
) -> Result<(), SpecError> {
    let open = p.peek().cloned().expect("at '('");
    p.pos += 1;
    loop {
        let Some(t) = p.peek().cloned() else {
            return p.err(open.line, open.col, "unclosed '(' in a permutation");
        };
        match &t.tok {
            Tok::Punct('*') => {
                p.pos += 1;
                perm[at].blockers.push(Blocker::Once);
            }
            Tok::Word(_) | Tok::Quoted(_) => {
                let (name, line, col) = p.name("a blocker")?;
                let mut notices = None;
                if p.at_keyword("notices") {
                    p.pos += 1;
                    let (n, nl, nc) = p.name("a number of notices")?;
                    match n.parse::<u32>() {
                        Ok(n) => notices = Some(n),
                        Err(_) => {
                            return p.err(
                                nl,
                                nc,
                                format!("expected a number of notices, found '{n}'"),
                            );
                        }
                    }
                }
                pending.push(PendingBlocker {
                    at,
                    name,
                    notices,
                    line,
                    col,
                });
            }
            _ => return p.unexpected("a blocker: a step name or '*'"),
        }
        match p.peek().map(|t| t.tok.clone()) {
            Some(Tok::Punct(',')) => p.pos += 1,
            Some(Tok::Punct(')')) => {
                p.pos += 1;
                return Ok(());
            }
            Some(_) => return p.unexpected("',' or ')'"),
            None => return p.err(open.line, open.col, "unclosed '(' in a permutation"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::directive::parse;

    const G1A: &str = r#"# a comment
# @probe G1a
# @title aborted read
# @source Hermitage
# @anomaly s2r1 has "1,101"
# @anomaly s2r2 has "1, 101" and s2r1 = ""
# @expect rc prevented snapshot
# @expect serializable prevented blocked 40001
setup { CREATE TABLE test (id int PRIMARY KEY, value int); }
setup { INSERT INTO test VALUES (1, 10), (2, 20); }
teardown { DROP TABLE test; }
session "s1"
setup { BEGIN; }
step s1u { UPDATE test SET value = 101 WHERE id = 1; }
step s1a { ABORT; }
session s2
setup { BEGIN; }
step s2r1 { SELECT * FROM test ORDER BY id; }
step s2r2 {
  SELECT * FROM test
  ORDER BY id;
}
step s2c { COMMIT; }
teardown { SELECT 1; }
permutation s1u s2r1(*) s1a s2r2(s1u, s1a) s2c
permutation s2r1 s2r2 s2c s1u s1a
"#;

    #[test]
    fn unused_steps_are_in_strcmp_order_not_the_files() {
        // isolationtester sorts every step name with strcmp: bytes, so
        // upper case before lower case and "s10" before "s2".
        let spec = r#"
session a
step s2b { SELECT 1; }
step zz { SELECT 1; }
step s10 { SELECT 1; }
session b
step Sx { SELECT 1; }
step s1a { SELECT 1; }
step used { SELECT 1; }
permutation used
"#;
        let s = parse_syntax(spec, "u.spec").unwrap();
        assert_eq!(s.unused_steps(), ["Sx", "s10", "s1a", "s2b", "zz"]);
        // Without permutation lines no step is unused.
        let all = parse_syntax(&spec.replace("permutation used", ""), "u.spec").unwrap();
        assert!(all.unused_steps().is_empty());
    }

    #[test]
    fn parses_blocks_sessions_permutations_and_directives() {
        let p = parse(G1A, "probes/g1a.spec").unwrap();
        assert_eq!(p.name, "G1a");
        assert_eq!(p.title, "aborted read");
        assert_eq!(p.setup.len(), 2);
        assert_eq!(p.setup[1].line, 10);
        assert_eq!(p.teardown.as_ref().unwrap().sql, "DROP TABLE test;");
        assert_eq!(p.sessions.len(), 2);
        assert_eq!(p.sessions[0].name, "s1");
        assert_eq!(
            p.sessions[1].steps[1].sql,
            "SELECT * FROM test\n  ORDER BY id;"
        );
        assert_eq!(p.sessions[1].steps[1].line, 19);
        assert!(p.sessions[1].teardown.is_some());
        assert_eq!(p.permutations.len(), 2);
        assert_eq!(
            p.permutations[0],
            vec![
                StepRef {
                    session: 0,
                    step: 0
                },
                StepRef {
                    session: 1,
                    step: 0
                },
                StepRef {
                    session: 0,
                    step: 1
                },
                StepRef {
                    session: 1,
                    step: 1
                },
                StepRef {
                    session: 1,
                    step: 2
                },
            ]
        );
        assert_eq!(p.anomalies.len(), 2);
        assert_eq!(p.anomalies[1].terms[0].rows, vec!["1,101"]);
        assert_eq!(p.anomalies[1].terms[1].rows, Vec::<String>::new());
        assert_eq!(p.anomalies[1].terms[1].op, Op::Is);
        let ser = p.expectation(Isolation::Serializable).unwrap();
        assert_eq!(ser.to_string(), "prevented (blocked, 40001)");
        assert_eq!(
            p.label(StepRef {
                session: 1,
                step: 2
            }),
            "s2:s2c"
        );
    }

    #[test]
    fn name_defaults_to_the_file_stem() {
        let text = G1A.replace("# @probe G1a\n", "");
        assert_eq!(parse(&text, "dir/my-probe.spec").unwrap().name, "my-probe");
    }

    fn err(text: &str) -> String {
        parse(text, "p.spec").unwrap_err().to_string()
    }

    #[test]
    fn errors_name_line_column_and_what_was_expected() {
        let e = err("session s1\nstep a { SELECT 1; }\npermutation a b\n# @anomaly a = \"\"\n");
        assert_eq!(e, "p.spec:3:15: permutation names unknown step 'b'");
        let e = err("session s1\nstep a { SELECT 1; \n");
        assert_eq!(e, "p.spec:2:8: unterminated SQL block: no `}`");
        let e = err("session s1\nstep a SELECT 1\n");
        assert_eq!(
            e,
            "p.spec:2:8: expected a { SQL } block after step a, found 'SELECT'"
        );
        let e = err("setup { x }\n");
        assert_eq!(
            e,
            "p.spec:1:12: expected `setup`, `teardown` or `session`, found the end of the file"
        );
        let e = err("session s1\nstep a { SELECT 1; }\nstep a { SELECT 2; }\n");
        assert_eq!(e, "p.spec:3:6: step 'a' is defined twice");
        let e = err("session s1\nstep a { SELECT 1; }\n% x\n");
        assert_eq!(e, "p.spec:3:1: unexpected character '%'");
        let e = err("session s1\nstep a { SELECT 1; }\n# @anomaly a = \"\"\n");
        assert!(e.contains("no `permutation` line"), "{e}");
        let e = err("session s1\nstep a { SELECT 1; }\npermutation a\n");
        assert!(e.contains("no `# @anomaly CONDITION` line"), "{e}");
        let e = err("session s1\nstep a { SELECT 1; }\npermutation a\nsession s2\n");
        assert_eq!(
            e,
            "p.spec:4:1: expected `permutation` or the end of the file, found 'session'"
        );
    }

    proptest::proptest! {
        /// The lexer and parser return an error, never panic, on any text.
        #[test]
        fn parse_never_panics_on_arbitrary_text(text in "\\PC{0,400}") {
            let _ = parse(&text, "fuzz.spec");
        }

        /// Nor on a real probe with a random fragment spliced in or cut out:
        /// text that is almost valid reaches every error path.
        #[test]
        fn parse_never_panics_on_mutated_probes(
            which in 0usize..crate::probe::BUILTIN.len(),
            at in 0usize..4000,
            cut in 0usize..40,
            insert in "[#@{}()\"*, \n\ta-z0-9=!;é]{0,16}",
        ) {
            let text = crate::probe::BUILTIN[which].1;
            let chars: Vec<char> = text.chars().collect();
            let at = at % (chars.len() + 1);
            let end = (at + cut).min(chars.len());
            let mutated: String = chars[..at]
                .iter()
                .chain(insert.chars().collect::<Vec<_>>().iter())
                .chain(chars[end..].iter())
                .collect();
            let _ = parse(&mutated, "fuzz.spec");
        }
    }
}
