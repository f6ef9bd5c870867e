//! The script interpreter: how one attempt runs a script's commands, one
//! method per kind of command (`\set`, the `\if` family, the pipeline
//! commands, `\sleep`, `\shell`/`\setshell`, SQL), as pgbench's
//! `advanceConnectionState` and `executeMetaCommand` run them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::super::report::Say;
use super::super::{Compiled, Var, Vars, shell};
use super::{Env, Interpreter, Run, Work, script_error, substitute};
use crate::model::{QueryMode, StepTime};
use crate::pgbench::expr::Value;
use crate::pgbench::prng::Prng;
use crate::pgbench::script::{CommandKind, SleepAmount, Store};
use crate::wire::{Conn, SimpleMessage, SimpleRow, TextParams};
use crate::workload::{AttemptError, Ended};

/// Where the script goes after a command.
enum Flow {
    /// To the next command.
    Next,
    /// Past command `k` (the `\endif` of a branch that was taken).
    After(usize),
    /// To command `k`, jumped to from a false condition (an `\elif` there
    /// is evaluated, an `\else` entered).
    Branch(usize),
}

/// One attempt's run of one script: which, and the pipeline state.
struct Turn<'a> {
    c: &'a Compiled,
    s: usize,
    tries: u32,
    say: Say,
    /// Between `\startpipeline` and `\endpipeline`.
    pipeline: Option<Pipeline>,
    /// The clock as pgbench reads it for `-r` (lazily, once per turn of
    /// its state machine): a command queued in a pipeline ends when it
    /// started, without a new reading, and the next starts then too.
    queued_at: Option<Instant>,
}

impl Turn<'_> {
    /// Meta-command `at` (`word`) failed: pgbench's lines, or isobench's.
    fn meta_failed(&self, at: usize, word: &str, what: &str, why: &str) -> AttemptError {
        self.say.meta_failed(self.s, at, word, what, why, || {
            script_error(self.c, at, if what.is_empty() { why } else { what })
        })
    }

    /// Command `at`'s expression, evaluated on `vars` and `prng`.
    fn eval(
        &self,
        at: usize,
        vars: &Vars,
        prng: &mut Prng,
        word: &str,
    ) -> Result<Value, AttemptError> {
        let e = self.c.exprs[at].as_ref().expect("compiled");
        e.eval(&mut Env {
            vars,
            prng,
            script: self.s,
            command: at,
            print: true,
        })
        .map_err(|e| {
            self.meta_failed(
                at,
                word,
                &e.to_string(),
                "evaluation of meta-command failed",
            )
        })
    }

    /// `\set name expr`.
    fn set(
        &self,
        at: usize,
        name: &str,
        vars: &mut Vars,
        prng: &mut Prng,
    ) -> Result<(), AttemptError> {
        let v = Var::Value(self.eval(at, vars, prng, "set")?);
        if !vars.assign(name, v) {
            return Err(self.meta_failed(
                at,
                "set",
                &format!("set: invalid variable name: \"{name}\""),
                "assignment of meta-command failed",
            ));
        }
        Ok(())
    }

    /// `\if`, `\elif`, `\else` reached in order: where the script goes.
    /// `jumped`: reached from a false condition.
    fn branch(
        &self,
        at: usize,
        jumped: bool,
        vars: &Vars,
        prng: &mut Prng,
    ) -> Result<Flow, AttemptError> {
        let kind = &self.c.script.commands[at].kind;
        if !jumped && !matches!(kind, CommandKind::If { .. }) {
            // \elif or \else reached from the end of a taken branch: the
            // block is done.
            return Ok(Flow::After(self.c.end[at]));
        }
        let word = match kind {
            CommandKind::If { .. } => "if",
            CommandKind::Elif { .. } => "elif",
            _ => return Ok(Flow::Next),
        };
        Ok(if self.eval(at, vars, prng, word)?.truth() {
            Flow::Next
        } else {
            // To the next branch marker: an \elif is evaluated, an \else
            // entered, an \endif passed.
            Flow::Branch(self.c.next[at])
        })
    }

    /// `\syncpipeline`.
    fn sync_pipeline(&mut self, conn: &mut Conn, at: usize) -> Result<(), AttemptError> {
        match self.pipeline.as_mut() {
            Some(p) => {
                conn.sync();
                p.syncs += 1;
                Ok(())
            }
            None => Err(self.meta_failed(at, "syncpipeline", "", "not in pipeline mode")),
        }
    }

    /// `\sleep n unit` or `\sleep :var unit`.
    async fn sleep(
        &self,
        at: usize,
        amount: &SleepAmount,
        unit_us: u64,
        vars: &Vars,
    ) -> Result<(), AttemptError> {
        let n = match amount {
            SleepAmount::Literal(n) => *n,
            SleepAmount::Variable(v) => sleep_amount(v, vars).map_err(|m| {
                self.meta_failed(at, "sleep", &m, "execution of meta-command failed")
            })?,
        };
        tokio::time::sleep(Duration::from_micros(n.max(0) as u64 * unit_us)).await;
        Ok(())
    }

    /// `\shell words` or `\setshell name words`.
    async fn shell(
        &self,
        at: usize,
        set: &Option<String>,
        words: &[String],
        vars: &mut Vars,
    ) -> Result<(), AttemptError> {
        let word = if set.is_some() { "setshell" } else { "shell" };
        let got = shell::run(word, words, vars, set.is_some())
            .await
            .map_err(|m| self.meta_failed(at, word, &m, "execution of meta-command failed"))?;
        if let (Some(name), Some(n)) = (set, got)
            && !vars.assign(name, Var::Value(Value::Int(n)))
        {
            let m = format!("setshell: invalid variable name: \"{name}\"");
            return Err(self.meta_failed(at, word, &m, "execution of meta-command failed"));
        }
        Ok(())
    }
}

impl Interpreter {
    /// Runs `run`'s script from its first command on `vars` (the
    /// client's own, which it undoes if the attempt fails, or a copy of
    /// its owner's) and `prng` (the attempt's copy). `work.current` is the
    /// command running and since when; every command that completes is
    /// appended to `work.steps`.
    pub(super) async fn run_commands(
        &mut self,
        conn: &mut Conn,
        run: Run,
        vars: &mut Vars,
        prng: &mut Prng,
        work: &mut Work,
    ) -> Result<Ended, AttemptError> {
        let scripts = Arc::clone(&self.scripts);
        let mut t = Turn {
            c: &scripts[run.script],
            s: run.script,
            tries: run.tries,
            say: self.say,
            pipeline: None,
            queued_at: None,
        };
        let commands = &t.c.script.commands;
        let mut i = 0;
        let mut jumped = false;
        while i < commands.len() {
            // One clock read per command boundary: it ends one step and
            // starts the next.
            let now = work
                .started
                .take()
                .or(t.queued_at.take())
                .unwrap_or_else(Instant::now);
            if let Some(prev) = work.current.replace((i, now)) {
                step_done(&mut work.steps, prev, now);
            }
            let kind = &commands[i].kind;
            if !matches!(kind, CommandKind::Sql { .. }) {
                let say = t.say;
                say.debug(|| format!("client {} executing {}", say.id, meta_words(kind)));
            }
            let flow = match kind {
                CommandKind::Set { name, .. } => t.set(i, name, vars, prng).map(|()| Flow::Next)?,
                CommandKind::If { .. } | CommandKind::Elif { .. } | CommandKind::Else => {
                    t.branch(i, jumped, vars, prng)?
                }
                CommandKind::Endif => Flow::Next,
                CommandKind::StartPipeline => {
                    self.start_pipeline(conn, &mut t, i).await?;
                    Flow::Next
                }
                CommandKind::SyncPipeline => t.sync_pipeline(conn, i).map(|()| Flow::Next)?,
                CommandKind::EndPipeline => {
                    self.end_pipeline(conn, &mut t, i).await?;
                    Flow::Next
                }
                CommandKind::Sleep { amount, unit_us } => {
                    t.sleep(i, amount, *unit_us, vars).await?;
                    Flow::Next
                }
                CommandKind::Shell { set, words } => {
                    // Boxed: a child process's wait (1.4 KB of state)
                    // would otherwise widen every client's future by
                    // 700 bytes for a command few scripts use.
                    Box::pin(t.shell(i, set, words, vars)).await?;
                    Flow::Next
                }
                CommandKind::Sql { .. } => {
                    self.sql(conn, &mut t, i, now, vars, work).await?;
                    Flow::Next
                }
            };
            (i, jumped) = match flow {
                Flow::Next => (i + 1, false),
                Flow::After(k) => (k + 1, false),
                Flow::Branch(k) => (k, true),
            };
        }
        if let Some(last) = work.current.take() {
            let now = Instant::now();
            step_done(&mut work.steps, last, now);
            work.ended = Some(now);
        }
        self.script_ended(conn, &t)?;
        Ok(Ended::Committed)
    }

    /// Under pgbench's rules, a script that ends with a pipeline open
    /// aborts the client; one that ends inside a transaction block counts
    /// the transaction, then aborts the client.
    fn script_ended(&mut self, conn: &Conn, t: &Turn) -> Result<(), AttemptError> {
        let say = t.say;
        if say.rules.is_none() {
            return Ok(());
        }
        if t.pipeline.is_some() {
            return Err(say.aborted(format!(
                "client {} aborted: end of script reached with pipeline open",
                say.id
            )));
        }
        if conn.in_transaction() {
            let e = say.aborted(format!(
                "client {} aborted: end of script reached without completing the last transaction",
                say.id
            ));
            self.pending_abort = Some(e.describe());
        }
        Ok(())
    }

    /// `\startpipeline`: the pipeline's statements are prepared first, as
    /// pgbench prepares them.
    async fn start_pipeline(
        &mut self,
        conn: &mut Conn,
        t: &mut Turn<'_>,
        at: usize,
    ) -> Result<(), AttemptError> {
        let why = if self.mode == QueryMode::Simple && t.say.rules.is_some() {
            Some("cannot use pipeline mode with the simple query protocol")
        } else if t.pipeline.is_some() {
            Some("already in pipeline mode")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(t.meta_failed(at, "startpipeline", "", why));
        }
        let commands = &t.c.script.commands;
        let mut k = at + 1;
        while k < commands.len() && !matches!(commands[k].kind, CommandKind::EndPipeline) {
            self.prepare_now(conn, t.s, k).await;
            k += 1;
        }
        t.pipeline = Some(Pipeline::default());
        Ok(())
    }

    /// `\endpipeline`: a last sync, then every queued result read.
    async fn end_pipeline(
        &mut self,
        conn: &mut Conn,
        t: &mut Turn<'_>,
        at: usize,
    ) -> Result<(), AttemptError> {
        let Some(p) = t.pipeline.take() else {
            return Err(t.meta_failed(at, "endpipeline", "", "not in pipeline mode"));
        };
        conn.sync();
        let Err((done, e)) = conn.read_pipeline(p.syncs + 1).await else {
            return Ok(());
        };
        // The statement that failed, as libpq keeps its text: an unnamed
        // one's, not a prepared one's.
        let (c, s) = (t.c, t.s);
        let query = p.queued.get(done).and_then(|&k| {
            self.prepared[s][k]
                .is_none()
                .then(|| c.param_sql[k].as_deref())
                .flatten()
        });
        // An error at the pipeline's COMMIT ended the transaction; an
        // earlier one left it open (and failed): the engine rolls that back.
        let ended = p.commits && !conn.in_transaction();
        Err(t.say.sql_failed(s, at, t.tries, query, e, |e| {
            if ended {
                AttemptError::commit(e)
            } else {
                AttemptError::body(e)
            }
            .located(&c.locations[at])
        }))
    }

    /// An SQL command: sent by the simple protocol (`-M simple`, or a
    /// command only it can run), else with parameters, prepared or not,
    /// at once or queued in the open pipeline.
    async fn sql(
        &mut self,
        conn: &mut Conn,
        t: &mut Turn<'_>,
        at: usize,
        now: Instant,
        vars: &mut Vars,
        work: &mut Work,
    ) -> Result<(), AttemptError> {
        let c = t.c;
        let CommandKind::Sql {
            text,
            variables,
            store,
            ..
        } = &c.script.commands[at].kind
        else {
            unreachable!("an SQL command")
        };
        if let (Some(store), Some(_)) = (store, &t.pipeline) {
            let word = match store {
                Store::Gset(_) => "gset",
                Store::Aset(_) => "aset",
            };
            let why = format!("\\{word} is not allowed in pipeline mode");
            return Err(t.meta_failed(at, word, "", &why));
        }
        if self.mode == QueryMode::Simple || t.c.simple_only[at] {
            return simple(conn, t, at, text, store.as_ref(), vars).await;
        }
        // Every variable as text, as libpq sends pgbench's parameters (an
        // undefined one as NULL); the server reads each by its type.
        let say = t.say;
        params(
            variables,
            vars,
            say.rules.is_some(),
            &mut work.texts,
            &mut work.spans,
        );
        // Checked before the call: a future made and dropped at every
        // transaction would still write its state (its arguments) into the
        // client's, a cache line this client's next turn finds cold. Boxed:
        // it runs once per statement and connection, and its 488 bytes of
        // state would widen every client's future.
        if self.must_prepare(t.s, at) {
            Box::pin(self.prepare_now(conn, t.s, at)).await;
        }
        let stmt = self.prepared[t.s][at].as_ref();
        let sql = t.c.param_sql[at].as_deref().expect("SQL");
        let params = TextParams {
            bytes: &work.texts,
            spans: &work.spans,
        };
        say.debug(|| match &stmt {
            Some(_) => format!("client {} sending P_{}", say.id, t.c.prep[at]),
            None => format!("client {} sending {sql}", say.id),
        });
        if let Some(p) = t.pipeline.as_mut() {
            conn.queue(stmt, sql, params)
                .map_err(|e| sql_error(c, at, e))?;
            p.commits |= t.c.at_commit[at];
            p.queued.push(at);
            t.queued_at = Some(now);
            return Ok(());
        }
        let r = match stmt {
            Some(stmt) => conn.execute_text(stmt, params).await,
            None => conn.execute_unnamed(sql, params).await,
        };
        say.debug(|| format!("client {} receiving", say.id));
        let query = stmt.is_none().then_some(sql);
        r.map(drop)
            .map_err(|e| say.sql_failed(t.s, at, t.tries, query, e, |e| sql_error(t.c, at, e)))
    }
}

/// An SQL command sent by the simple query protocol, its variables
/// substituted into its text; `\gset`/`\aset` store its rows.
async fn simple(
    conn: &mut Conn,
    t: &Turn<'_>,
    at: usize,
    sql: &str,
    store: Option<&Store>,
    vars: &mut Vars,
) -> Result<(), AttemptError> {
    let say = t.say;
    let text = substitute(sql, vars);
    say.debug(|| format!("client {} sending {text}", say.id));
    let messages = conn.simple_query(&text).await;
    say.debug(|| format!("client {} receiving", say.id));
    let messages = messages
        .map_err(|e| say.sql_failed(t.s, at, t.tries, Some(&text), e, |e| sql_error(t.c, at, e)))?;
    if let Some(store) = store {
        store_rows(store, &messages, vars).map_err(|e| match say.rules {
            Some(_) => say.aborted(format!(
                "client {} script {} command {at} query {}: {}",
                say.id, t.s, e.query, e.what
            )),
            None => script_error(t.c, at, e.what),
        })?;
    }
    Ok(())
}

/// An SQL error of command `at` of `c` as the engine takes it: at COMMIT
/// (the transaction ended) or in the body.
fn sql_error(c: &Compiled, at: usize, e: crate::wire::Error) -> AttemptError {
    if c.at_commit[at] {
        AttemptError::commit(e)
    } else {
        AttemptError::body(e)
    }
    .located(&c.locations[at])
}

/// Command `step`, started at `t0`, ended `now`.
fn step_done(steps: &mut Vec<StepTime>, (step, t0): (usize, Instant), now: Instant) {
    steps.push(StepTime {
        step,
        us: now.saturating_duration_since(t0).as_micros() as u64,
        failed: false,
    });
}

/// A meta-command as pgbench's `-d` names it: `\set name`, `\sleep 10
/// ms`, `\shell echo x`.
fn meta_words(kind: &CommandKind) -> String {
    match kind {
        CommandKind::Set { name, .. } => format!("\\set {name}"),
        CommandKind::If { .. } => "\\if".into(),
        CommandKind::Elif { .. } => "\\elif".into(),
        CommandKind::Else => "\\else".into(),
        CommandKind::Endif => "\\endif".into(),
        CommandKind::StartPipeline => "\\startpipeline".into(),
        CommandKind::SyncPipeline => "\\syncpipeline".into(),
        CommandKind::EndPipeline => "\\endpipeline".into(),
        CommandKind::Sleep { amount, unit_us } => {
            let unit = match unit_us {
                1 => "us",
                1_000 => "ms",
                _ => "s",
            };
            match amount {
                SleepAmount::Literal(n) => format!("\\sleep {n} {unit}"),
                SleepAmount::Variable(v) => format!("\\sleep :{v} {unit}"),
            }
        }
        CommandKind::Shell { set, words } => match set {
            Some(name) => format!("\\setshell {name} {}", words.join(" ")),
            None => format!("\\shell {}", words.join(" ")),
        },
        CommandKind::Sql { .. } => String::new(),
    }
}

/// `\sleep :var`'s amount, as pgbench's `evaluateSleep` reads it (`atoi`
/// of the variable's text).
///
/// Errors: pgbench's `sleep: undefined variable` or `invalid sleep time`.
fn sleep_amount(v: &str, vars: &Vars) -> Result<i64, String> {
    let Some(var) = vars.get(v) else {
        return Err(format!("sleep: undefined variable \"{v}\""));
    };
    let text = match var {
        Var::Text(t) => t.to_string(),
        Var::Value(x) => x.to_string(),
    };
    let t = text.trim_start();
    let sign = usize::from(t.starts_with(['+', '-']));
    let digits = t[sign..].chars().take_while(char::is_ascii_digit).count();
    let n: i64 = t[..sign + digits].parse().unwrap_or(0);
    if n == 0 && !text.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(format!(
            "sleep: invalid sleep time \"{text}\" for variable \"{v}\""
        ));
    }
    Ok(n)
}

/// The parameters of a statement: each of `variables` as text into
/// `texts`, its span into `spans` (`None`: SQL NULL, for a variable no
/// command defined, as libpq sends pgbench's missing ones). A NULL value
/// is SQL NULL too, or under pgbench's rules (`text_null`) the text
/// `NULL`, as pgbench sends it.
fn params(
    variables: &[String],
    vars: &Vars,
    text_null: bool,
    texts: &mut Vec<u8>,
    spans: &mut Vec<Option<std::ops::Range<usize>>>,
) {
    texts.clear();
    spans.clear();
    for v in variables {
        let start = texts.len();
        match vars.get(v.as_str()) {
            Some(Var::Value(Value::Null)) if text_null => texts.extend_from_slice(b"NULL"),
            None | Some(Var::Value(Value::Null)) => {
                spans.push(None);
                continue;
            }
            Some(Var::Value(Value::Int(n))) => {
                texts.extend_from_slice(itoa::Buffer::new().format(*n).as_bytes())
            }
            Some(Var::Text(t)) => texts.extend_from_slice(t.as_bytes()),
            Some(Var::Value(v)) => {
                let _ = std::io::Write::write_fmt(texts, format_args!("{v}"));
            }
        }
        spans.push(Some(start..texts.len()));
    }
}

/// A pipeline being queued (`\startpipeline` .. `\endpipeline`): the
/// batches ended by `\syncpipeline` so far, and whether a queued
/// statement ends the transaction (its error is then an error at COMMIT).
#[derive(Default)]
struct Pipeline {
    syncs: usize,
    commits: bool,
    /// The SQL commands queued, in order (which one an error is of).
    queued: Vec<usize>,
}

/// Why `\gset`/`\aset` could not store: pgbench's words, and which
/// statement of the command (`query N`, from 0).
struct StoreError {
    query: usize,
    what: String,
}

/// `\gset` (exactly one row of the last statement) or `\aset` (every
/// row of every statement, the last value winning) into variables named
/// prefix + column. A NULL column becomes a NULL value.
fn store_rows(
    store: &Store,
    messages: &[SimpleMessage],
    vars: &mut Vars,
) -> Result<(), StoreError> {
    // Rows per statement: a CommandComplete ends each statement.
    let mut statements: Vec<Vec<&SimpleRow>> = vec![Vec::new()];
    for m in messages {
        match m {
            SimpleMessage::Row(r) => statements.last_mut().expect("non-empty").push(r),
            SimpleMessage::CommandComplete(_) => statements.push(Vec::new()),
        }
    }
    statements.pop(); // the empty one after the last CommandComplete
    let last = statements.len().saturating_sub(1);
    let mut put = |prefix: &str, row: &SimpleRow| -> Result<(), StoreError> {
        for (k, col) in row.columns().iter().enumerate() {
            let name = format!("{prefix}{col}");
            let v = match row.get(k) {
                Some(t) => Var::Text(t.into()),
                None => Var::Value(Value::Null),
            };
            if !vars.assign(&name, v) {
                eprintln!(
                    "pgbench: error: {}: invalid variable name: \"{name}\"",
                    match store {
                        Store::Gset(_) => "gset",
                        Store::Aset(_) => "aset",
                    }
                );
                return Err(StoreError {
                    query: last,
                    what: format!("error storing into variable {name}"),
                });
            }
        }
        Ok(())
    };
    match store {
        Store::Gset(prefix) => {
            let rows = statements.last().map_or(0, Vec::len);
            if rows != 1 {
                return Err(StoreError {
                    query: last,
                    what: format!("expected one row, got {rows}"),
                });
            }
            put(prefix, statements.last().expect("one")[0])?;
        }
        Store::Aset(prefix) => {
            for row in statements.iter().flatten() {
                put(prefix, row)?;
            }
        }
    }
    Ok(())
}
