//! One client of a pgbench-script workload: its variables, random state
//! and prepared statements, and how it runs a script's commands.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::report::{Rules, Say};
use super::{Compiled, Var, Vars, shell};
use crate::model::{QueryMode, StepTime};
use crate::pgbench::data::ScriptLedger;
use crate::pgbench::expr::{self, EvalError, Value};
use crate::pgbench::prng::Prng;
use crate::pgbench::script::{self, CommandKind, Part, SleepAmount, Store};
use crate::wire::{Conn, SimpleMessage, SimpleRow, Statement, TextParams};
use crate::workload::{AttemptError, Ended, TxControl, WorkloadClient};

/// A client's variables and random state between transactions.
#[derive(Debug)]
struct ClientState {
    vars: Vars,
    prng: Prng,
}

/// One client's scripts, variables and random state.
pub struct ScriptClient {
    scripts: Arc<Vec<Compiled>>,
    weights: Vec<u64>,
    mode: QueryMode,
    /// Shared with this client's inputs: with a connection pool
    /// (`--pool-size`) another session's client runs the attempt and
    /// writes the outcome back here.
    state: Arc<Mutex<ClientState>>,
    /// Picks the script (pgbench: the thread's `ts_choose_rs`).
    chooser: Prng,
    /// `-M prepared`: per script, per command; with pgbench's rules each
    /// is prepared when first used, as pgbench prepares them.
    prepared: Vec<Vec<Option<Statement>>>,
    /// The attempts' working memory; the last attempt's command latencies
    /// stay in it until the engine reads and clears them.
    work: Work,
    /// The transactions this client committed, per script.
    ledger: ScriptLedger,
    /// The running attempt's variables: a copy of the owner's, in memory
    /// kept from one attempt to the next.
    scratch: Vars,
    /// Its id and `isobench pgbench`'s rules, if any.
    say: Say,
    /// Under pgbench's rules, a transaction that committed and then
    /// aborted the client (left a transaction block open): the next
    /// attempt stops the client.
    pending_abort: Option<String>,
}

impl ScriptClient {
    /// Client `id` running `scripts` chosen by `weights`, starting with
    /// `vars`; its generators are seeded from `client_seed` (see
    /// [`super::client_seeds`]).
    pub(super) fn new(
        scripts: Arc<Vec<Compiled>>,
        weights: Vec<u64>,
        mode: QueryMode,
        vars: Vars,
        client_seed: u64,
        (id, rules): (u32, Option<Rules>),
    ) -> Self {
        Self {
            scripts,
            weights,
            mode,
            state: Arc::new(Mutex::new(ClientState {
                vars,
                prng: Prng::seed(client_seed),
            })),
            chooser: Prng::seed(client_seed ^ 0x7363_7269_7074),
            prepared: Vec::new(),
            work: Work::default(),
            ledger: ScriptLedger::default(),
            scratch: Vars::default(),
            say: Say { rules, id },
            pending_abort: None,
        }
    }
}

/// An attempt's working memory, kept from one attempt to the next so
/// that, once its vectors have grown, an attempt allocates nothing.
#[derive(Debug, Default)]
struct Work {
    /// The commands completed, with their latencies.
    steps: Vec<StepTime>,
    /// The command running, and since when.
    current: Option<(usize, Instant)>,
    /// When the attempt started, as the engine read it
    /// ([`WorkloadClient::attempt_starts`]): the first command's start.
    started: Option<Instant>,
    /// When the last command of a completed attempt ended.
    ended: Option<Instant>,
    /// A statement's parameters as text: their bytes, and each one's span
    /// (`None`: NULL), as [`TextParams`] takes them.
    texts: Vec<u8>,
    spans: Vec<Option<std::ops::Range<usize>>>,
}

/// A script run's start: which script, and the random state a retry
/// starts from again; `owner` is the client it belongs to, whose variables
/// (changed only when a transaction commits) are the ones every attempt
/// starts from.
pub struct ScriptInput {
    script: usize,
    prng: Prng,
    owner: Arc<Mutex<ClientState>>,
    /// The tries started so far.
    tries: AtomicU32,
}

/// What `\set` expressions see.
struct Env<'a> {
    vars: &'a Vars,
    prng: &'a mut Prng,
    script: usize,
    command: usize,
    /// Whether `debug()` prints (not while sampling statements to explain).
    print: bool,
}

impl expr::Env for Env<'_> {
    fn var(&self, name: &str) -> Result<Value, EvalError> {
        match self.vars.get(name) {
            Some(v) => v.value(name),
            None => Err(EvalError::Undefined(name.into())),
        }
    }

    fn rng(&mut self) -> &mut Prng {
        self.prng
    }

    fn debug(&mut self, v: &Value) {
        if self.print {
            eprintln!(
                "debug(script={},command={}): {}",
                self.script,
                self.command + 1,
                v.debug_text()
            );
        }
    }
}

/// A run-time error at `cmd` of `script`, as isobench words it (`isobench
/// run`; under pgbench's rules [`Say`] words it).
fn script_error(c: &Compiled, cmd: usize, what: impl std::fmt::Display) -> AttemptError {
    let loc = c.script.commands[cmd].loc;
    AttemptError::script(format!(
        "{}:{}: {what} (in `{}`)",
        c.script.name, loc.line, c.script.commands[cmd].first_line
    ))
}

impl WorkloadClient for ScriptClient {
    type Input = ScriptInput;
    type Ledger = ScriptLedger;

    async fn prepare(&mut self, conn: &mut Conn, tx: &TxControl) -> Result<(), crate::wire::Error> {
        if self.say.rules.is_some() {
            // pgbench's clients print what the server warns of.
            conn.print_notices();
        }
        conn.batch_execute(&format!(
            "SET default_transaction_isolation = '{}'",
            tx.isolation().sql().to_ascii_lowercase()
        ))
        .await?;
        self.prepared = self
            .scripts
            .iter()
            .map(|c| vec![None; c.script.commands.len()])
            .collect();
        if self.mode == QueryMode::Prepared && self.say.rules.is_none() {
            // isobench run: every statement before the run starts.
            for s in 0..self.scripts.len() {
                for i in 0..self.scripts[s].script.commands.len() {
                    if self.preparable(s, i) {
                        let sql = self.scripts[s].param_sql[i].clone().expect("SQL");
                        self.prepared[s][i] = Some(conn.prepare(&sql).await?);
                    }
                }
            }
        }
        Ok(())
    }

    fn next_input(&mut self) -> ScriptInput {
        let total: u64 = self.weights.iter().sum();
        let mut pick = self.chooser.random(0, total as i64 - 1) as u64;
        let script = self
            .weights
            .iter()
            .position(|&w| {
                if pick < w {
                    true
                } else {
                    pick -= w;
                    false
                }
            })
            .expect("total > 0");
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        ScriptInput {
            script,
            prng: state.prng.clone(),
            owner: Arc::clone(&self.state),
            tries: AtomicU32::new(0),
        }
    }

    fn tx_type(&self, input: &ScriptInput) -> usize {
        input.script
    }

    /// pgbench's built-in `select-only` only reads; a script file is
    /// never taken for read-only (its SQL may call functions that write).
    fn read_only(&self, input: &ScriptInput) -> bool {
        self.scripts[input.script].script.name == "builtin: select-only"
    }

    async fn attempt(
        &mut self,
        conn: &mut Conn,
        _tx: &TxControl,
        input: &ScriptInput,
    ) -> Result<Ended, AttemptError> {
        if let Some(why) = &self.pending_abort {
            return Err(AttemptError::script(why.clone()));
        }
        let tries = input.tries.fetch_add(1, Ordering::Relaxed) + 1;
        if tries == 1 {
            self.say.debug(|| {
                format!(
                    "client {} executing script \"{}\"",
                    self.say.id,
                    script::description(&self.scripts[input.script].script.name)
                )
            });
        }
        let mut work = std::mem::take(&mut self.work);
        work.current = None;
        work.ended = None;
        // Every attempt starts from the transaction's variables and random
        // state. The client keeps the variables of a committed attempt
        // only, but the random state of every attempt: the transaction
        // after a failed one draws new values, as in pgbench.
        let mut vars = std::mem::take(&mut self.scratch);
        vars.clone_from(&input.owner.lock().unwrap_or_else(|e| e.into_inner()).vars);
        let mut prng = input.prng.clone();
        let run = Run {
            script: input.script,
            tries,
        };
        let result = self
            .run_commands(conn, run, &mut vars, &mut prng, &mut work)
            .await;
        let mut owner = input.owner.lock().unwrap_or_else(|e| e.into_inner());
        if result.is_ok() {
            std::mem::swap(&mut owner.vars, &mut vars);
            self.ledger.commit(input.script);
        }
        owner.prng = prng;
        drop(owner);
        if let (Err(_), Some((step, t0))) = (&result, work.current) {
            work.steps.push(StepTime {
                step,
                us: t0.elapsed().as_micros() as u64,
                failed: true,
            });
        }
        self.work = work;
        self.scratch = vars;
        result
    }

    fn attempt_starts(&mut self, at: Instant) {
        self.work.started = Some(at);
    }

    fn attempt_ended(&self) -> Option<Instant> {
        self.work.ended
    }

    fn step_times(&mut self) -> Option<&mut Vec<StepTime>> {
        Some(&mut self.work.steps)
    }

    fn into_ledger(self) -> ScriptLedger {
        self.ledger
    }
}

/// The attempt being run: its script and try number.
#[derive(Clone, Copy)]
struct Run {
    script: usize,
    tries: u32,
}

impl ScriptClient {
    /// Every SQL command of every script as text, its variables replaced
    /// by this client's values: the `\set` commands of each script are
    /// evaluated in order (every branch, ignoring `\if`), as the first
    /// transaction would draw them; a variable no `\set` defines stays
    /// `:name`. Returns (script, command, SQL).
    pub(super) fn sample_statements(&mut self) -> Vec<(usize, usize, String)> {
        let mut out = Vec::new();
        let mut input = self.next_input();
        for (script, c) in self.scripts.iter().enumerate() {
            input.script = script;
            let mut vars = self
                .state
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .vars
                .clone();
            let mut prng = input.prng.clone();
            for (i, cmd) in c.script.commands.iter().enumerate() {
                match &cmd.kind {
                    CommandKind::Set { name, .. } => {
                        let e = c.exprs[i].as_ref().expect("compiled");
                        let v = e.eval(&mut Env {
                            vars: &vars,
                            prng: &mut prng,
                            script,
                            command: i,
                            print: false,
                        });
                        if let Ok(v) = v {
                            vars.insert(name.as_str().into(), Var::Value(v));
                        }
                    }
                    CommandKind::Sql { sql, .. } => out.push((script, i, substitute(sql, &vars))),
                    _ => {}
                }
            }
        }
        out
    }

    /// Whether command `i` of script `s` runs as a prepared statement
    /// under `-M prepared`.
    fn preparable(&self, s: usize, i: usize) -> bool {
        let c = &self.scripts[s];
        matches!(
            c.script.commands[i].kind,
            CommandKind::Sql { store: None, .. }
        ) && !c.simple_only[i]
    }

    /// Prepares command `i` of script `s` now if it runs prepared and is
    /// not yet (pgbench's rules prepare on first use). A statement the
    /// server refused is reported, as pgbench reports it, and kept
    /// unprepared: using it gets the server's `prepared statement ... does
    /// not exist`.
    async fn prepare_now(&mut self, conn: &mut Conn, s: usize, i: usize) {
        if self.mode != QueryMode::Prepared
            || self.prepared[s][i].is_some()
            || !self.preparable(s, i)
        {
            return;
        }
        let sql = self.scripts[s].param_sql[i].clone().expect("SQL");
        self.say.debug(|| {
            format!(
                "client {} preparing P_{}",
                self.say.id, self.scripts[s].prep[i]
            )
        });
        // pgbench's name, so that the server's messages name it alike.
        let name = format!("P_{}", self.scripts[s].prep[i]);
        let st = match conn.prepare_as(&name, &sql).await {
            Ok(st) => st,
            Err(e) => {
                let text = match &e {
                    crate::wire::Error::Db(db) => db.libpq_text(Some(&sql)),
                    other => other.to_string(),
                };
                eprintln!("pgbench: error: {text}");
                crate::wire::Conn::unprepared_as(&name)
            }
        };
        self.prepared[s][i] = Some(st);
    }

    /// Runs `run`'s script from its first command on `vars` and `prng`
    /// (the attempt's copies). `work.current` is the command running and
    /// since when; every command that completes is appended to
    /// `work.steps`.
    async fn run_commands(
        &mut self,
        conn: &mut Conn,
        run: Run,
        vars: &mut Vars,
        prng: &mut Prng,
        work: &mut Work,
    ) -> Result<Ended, AttemptError> {
        // One clock read per command boundary: it ends one step and starts
        // the next.
        let done = |steps: &mut Vec<StepTime>, (step, t0): (usize, Instant), now: Instant| {
            steps.push(StepTime {
                step,
                us: now.saturating_duration_since(t0).as_micros() as u64,
                failed: false,
            })
        };
        let scripts = Arc::clone(&self.scripts);
        let c = &scripts[run.script];
        let commands = &c.script.commands;
        let say = self.say;
        let s = run.script;
        let mut i = 0;
        // Whether the previous step jumped here from a false condition.
        let mut jump_pending = false;
        // Between \startpipeline and \endpipeline.
        let mut pipeline: Option<Pipeline> = None;
        // The clock as pgbench reads it for `-r` (lazily, once per turn of
        // its state machine): a command queued in a pipeline ends when it
        // started, without a new reading, and the next starts then too.
        let mut queued_at: Option<Instant> = None;
        while i < commands.len() {
            let now = work
                .started
                .take()
                .or(queued_at.take())
                .unwrap_or_else(Instant::now);
            if let Some(prev) = work.current.replace((i, now)) {
                done(&mut work.steps, prev, now);
            }
            let jumped = std::mem::take(&mut jump_pending);
            let at = i;
            let kind = &commands[at].kind;
            if !matches!(kind, CommandKind::Sql { .. }) {
                say.debug(|| format!("client {} executing {}", say.id, meta_words(kind)));
            }
            // A meta-command that failed: pgbench's lines, or isobench's.
            let meta_failed = |word: &str, what: &str, why: &str| {
                say.meta_failed(s, at, word, what, why, || {
                    script_error(c, at, if what.is_empty() { why } else { what })
                })
            };
            let env = |vars: &Vars, prng: &mut Prng, word: &str| -> Result<Value, AttemptError> {
                let e = c.exprs[at].as_ref().expect("compiled");
                e.eval(&mut Env {
                    vars,
                    prng,
                    script: s,
                    command: at,
                    print: true,
                })
                .map_err(|e| meta_failed(word, &e.to_string(), "evaluation of meta-command failed"))
            };
            match kind {
                CommandKind::Set { name, .. } => {
                    let v = Var::Value(env(vars, prng, "set")?);
                    if !script::is_variable_name(name) {
                        return Err(meta_failed(
                            "set",
                            &format!("set: invalid variable name: \"{name}\""),
                            "assignment of meta-command failed",
                        ));
                    }
                    match vars.get_mut(name.as_str()) {
                        Some(slot) => *slot = v,
                        None => {
                            vars.insert(name.as_str().into(), v);
                        }
                    }
                }
                CommandKind::If { .. } | CommandKind::Elif { .. } | CommandKind::Else
                    if !jumped && !matches!(kind, CommandKind::If { .. }) =>
                {
                    // \elif or \else reached from the end of a taken
                    // branch: the block is done.
                    i = c.end[i];
                }
                CommandKind::If { .. } | CommandKind::Elif { .. } => {
                    let word = if matches!(kind, CommandKind::If { .. }) {
                        "if"
                    } else {
                        "elif"
                    };
                    let v = env(vars, prng, word)?;
                    if !v.truth() {
                        // To the next branch marker: an \elif is evaluated,
                        // an \else entered, an \endif passed.
                        i = c.next[i];
                        jump_pending = true;
                        continue;
                    }
                }
                CommandKind::Else | CommandKind::Endif => {}
                CommandKind::StartPipeline => {
                    let why = if self.mode == QueryMode::Simple && say.rules.is_some() {
                        Some("cannot use pipeline mode with the simple query protocol")
                    } else if pipeline.is_some() {
                        Some("already in pipeline mode")
                    } else {
                        None
                    };
                    if let Some(why) = why {
                        return Err(meta_failed("startpipeline", "", why));
                    }
                    // Prepared before the pipeline starts, as pgbench does.
                    let mut k = i + 1;
                    while k < commands.len()
                        && !matches!(commands[k].kind, CommandKind::EndPipeline)
                    {
                        self.prepare_now(conn, s, k).await;
                        k += 1;
                    }
                    pipeline = Some(Pipeline::default());
                }
                CommandKind::SyncPipeline => match pipeline.as_mut() {
                    Some(p) => {
                        conn.sync();
                        p.syncs += 1;
                    }
                    None => return Err(meta_failed("syncpipeline", "", "not in pipeline mode")),
                },
                CommandKind::EndPipeline => {
                    let Some(p) = pipeline.take() else {
                        return Err(meta_failed("endpipeline", "", "not in pipeline mode"));
                    };
                    conn.sync();
                    if let Err((done, e)) = conn.read_pipeline(p.syncs + 1).await {
                        // The statement that failed, as libpq keeps its
                        // text: an unnamed one's, not a prepared one's.
                        let query = p.queued.get(done).and_then(|&k| {
                            self.prepared[s][k]
                                .is_none()
                                .then(|| c.param_sql[k].as_deref())
                                .flatten()
                        });
                        // An error at the pipeline's COMMIT ended the
                        // transaction; an earlier one left it open (and
                        // failed): the engine rolls that back.
                        let ended = p.commits && !conn.in_transaction();
                        return Err(say.sql_failed(s, i, run.tries, query, e, |e| {
                            if ended {
                                AttemptError::commit(e)
                            } else {
                                AttemptError::body(e)
                            }
                            .located(&c.locations[i])
                        }));
                    }
                }
                CommandKind::Sleep { amount, unit_us } => {
                    let n = match amount {
                        SleepAmount::Literal(n) => *n,
                        SleepAmount::Variable(v) => sleep_amount(v, vars).map_err(|m| {
                            meta_failed("sleep", &m, "execution of meta-command failed")
                        })?,
                    };
                    let us = n.max(0) as u64 * unit_us;
                    tokio::time::sleep(Duration::from_micros(us)).await;
                }
                CommandKind::Shell { set, words } => {
                    let word = if set.is_some() { "setshell" } else { "shell" };
                    let got = shell::run(word, words, vars, set.is_some())
                        .await
                        .map_err(|m| meta_failed(word, &m, "execution of meta-command failed"))?;
                    if let (Some(name), Some(n)) = (set, got) {
                        vars.insert(name.as_str().into(), Var::Value(Value::Int(n)));
                    }
                }
                CommandKind::Sql {
                    text: sql,
                    variables,
                    store,
                    ..
                } => {
                    let fail = |e: crate::wire::Error| {
                        if c.at_commit[i] {
                            AttemptError::commit(e)
                        } else {
                            AttemptError::body(e)
                        }
                        .located(&c.locations[i])
                    };
                    if let (Some(store), Some(_)) = (store, &pipeline) {
                        let word = match store {
                            Store::Gset(_) => "gset",
                            Store::Aset(_) => "aset",
                        };
                        return Err(meta_failed(
                            word,
                            "",
                            &format!("\\{word} is not allowed in pipeline mode"),
                        ));
                    }
                    if self.mode == QueryMode::Simple || c.simple_only[i] {
                        let text = substitute(sql, vars);
                        say.debug(|| format!("client {} sending {text}", say.id));
                        let messages = conn.simple_query(&text).await;
                        say.debug(|| format!("client {} receiving", say.id));
                        let messages = messages
                            .map_err(|e| say.sql_failed(s, i, run.tries, Some(&text), e, fail))?;
                        if let Some(store) = store {
                            store_rows(store, &messages, vars).map_err(|e| match say.rules {
                                Some(_) => say.aborted(format!(
                                    "client {} script {s} command {i} query {}: {}",
                                    say.id, e.query, e.what
                                )),
                                None => script_error(c, i, e.what),
                            })?;
                        }
                    } else {
                        // Every variable as text, as libpq sends pgbench's
                        // parameters (an undefined one as NULL); the
                        // server reads each by its type.
                        params(
                            variables,
                            vars,
                            say.rules.is_some(),
                            &mut work.texts,
                            &mut work.spans,
                        );
                        self.prepare_now(conn, s, i).await;
                        let stmt = self.prepared[s][i].as_ref();
                        let sql = c.param_sql[i].as_deref().expect("SQL");
                        let params = TextParams {
                            bytes: &work.texts,
                            spans: &work.spans,
                        };
                        say.debug(|| match &stmt {
                            Some(_) => format!("client {} sending P_{}", say.id, c.prep[i]),
                            None => format!("client {} sending {sql}", say.id),
                        });
                        match pipeline.as_mut() {
                            Some(p) => {
                                conn.queue(stmt, sql, params).map_err(fail)?;
                                p.commits |= c.at_commit[i];
                                p.queued.push(i);
                                queued_at = Some(now);
                            }
                            None => {
                                let r = match stmt {
                                    Some(stmt) => conn.execute_text(stmt, params).await,
                                    None => conn.execute_unnamed(sql, params).await,
                                };
                                say.debug(|| format!("client {} receiving", say.id));
                                let query = stmt.is_none().then_some(sql);
                                r.map_err(|e| say.sql_failed(s, i, run.tries, query, e, fail))?;
                            }
                        }
                    }
                }
            }
            i += 1;
        }
        if let Some(last) = work.current.take() {
            let now = Instant::now();
            done(&mut work.steps, last, now);
            work.ended = Some(now);
        }
        if say.rules.is_some() {
            if pipeline.is_some() {
                return Err(say.aborted(format!(
                    "client {} aborted: end of script reached with pipeline open",
                    say.id
                )));
            }
            if conn.in_transaction() {
                // pgbench counts the transaction, then aborts the client.
                let e = say.aborted(format!(
                    "client {} aborted: end of script reached without completing the last transaction",
                    say.id
                ));
                self.pending_abort = Some(e.describe());
            }
        }
        Ok(Ended::Committed)
    }
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

/// `sql` with every defined variable replaced by its text (undefined ones
/// stay `:name`, as pgbench leaves them in simple mode).
pub(super) fn substitute(sql: &str, vars: &Vars) -> String {
    let mut out = String::with_capacity(sql.len() + 16);
    for part in script::split_variables(sql) {
        match part {
            Part::Text(t) => out.push_str(t),
            Part::Var(v) => match vars.get(v) {
                Some(x) => out.push_str(&x.text()),
                None => {
                    out.push(':');
                    out.push_str(v);
                }
            },
        }
    }
    out
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
            if !script::is_variable_name(&name) {
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
            let v = match row.get(k) {
                Some(t) => Var::Text(t.into()),
                None => Var::Value(Value::Null),
            };
            // Interned only the first time (the interner is shared).
            match vars.get_mut(name.as_str()) {
                Some(slot) => *slot = v,
                None => {
                    vars.insert(name.as_str().into(), v);
                }
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
