//! One client of a pgbench-script workload: its variables, random state
//! and prepared statements, and how it runs a script's commands.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Compiled, Var, Vars};
use crate::model::{QueryMode, StepTime};
use crate::pgbench::data::ScriptLedger;
use crate::pgbench::expr::{self, EvalError, Value};
use crate::pgbench::prng::Prng;
use crate::pgbench::script::{self, CommandKind, Part, SleepAmount, Store};
use crate::wire::{Conn, SimpleMessage, SimpleRow, Statement, TextParams};
use crate::workload::{AttemptError, Outcome, TxControl, WorkloadClient};

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
    /// `-M prepared`: per script, per command.
    prepared: Vec<Vec<Option<Statement>>>,
    /// The last attempt's command latencies, until the engine reads and
    /// clears them (the memory is reused).
    steps: Vec<StepTime>,
    /// The transactions this client committed, per script.
    ledger: ScriptLedger,
    /// The running attempt's variables: a copy of the owner's, in memory
    /// kept from one attempt to the next.
    scratch: Vars,
}

impl ScriptClient {
    /// A client running `scripts` chosen by `weights`, starting with
    /// `vars`; its generators are seeded from `client_seed` (see
    /// [`super::client_seeds`]).
    pub(super) fn new(
        scripts: Arc<Vec<Compiled>>,
        weights: Vec<u64>,
        mode: QueryMode,
        vars: Vars,
        client_seed: u64,
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
            steps: Vec::new(),
            ledger: ScriptLedger::default(),
            scratch: Vars::default(),
        }
    }
}

/// A script run's start: which script, and the random state a retry
/// starts from again; `owner` is the client it belongs to, whose variables
/// (changed only when a transaction commits) are the ones every attempt
/// starts from.
pub struct ScriptInput {
    script: usize,
    prng: Prng,
    owner: Arc<Mutex<ClientState>>,
}

/// What `\set` expressions see.
struct Env<'a> {
    vars: &'a Vars,
    prng: &'a mut Prng,
    script: usize,
    command: usize,
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
        eprintln!(
            "debug(script={},command={}): {}",
            self.script,
            self.command + 1,
            v.debug_text()
        );
    }
}

/// A run-time error at `cmd` of `script`, as pgbench words it.
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
        conn.batch_execute(&format!(
            "SET default_transaction_isolation = '{}'",
            tx.isolation().sql().to_ascii_lowercase()
        ))
        .await?;
        self.prepared = Vec::with_capacity(self.scripts.len());
        for c in self.scripts.iter() {
            let mut stmts = Vec::with_capacity(c.script.commands.len());
            for (i, cmd) in c.script.commands.iter().enumerate() {
                let stmt = match (&cmd.kind, self.mode) {
                    (
                        CommandKind::Sql {
                            sql, store: None, ..
                        },
                        QueryMode::Prepared,
                    ) if !c.simple_only[i] => Some(
                        conn.prepare(c.param_sql[i].as_deref().expect("SQL"))
                            .await?,
                    ),
                    _ => None,
                };
                stmts.push(stmt);
            }
            self.prepared.push(stmts);
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
        }
    }

    fn tx_type(&self, input: &ScriptInput) -> usize {
        input.script
    }

    async fn attempt(
        &mut self,
        conn: &mut Conn,
        _tx: &TxControl,
        input: &ScriptInput,
    ) -> Result<Outcome, AttemptError> {
        let mut steps = std::mem::take(&mut self.steps);
        let mut current = None;
        // Every attempt starts from the transaction's variables and random
        // state. The client keeps the variables of a committed attempt
        // only, but the random state of every attempt: the transaction
        // after a failed one draws new values, as in pgbench.
        let mut vars = std::mem::take(&mut self.scratch);
        vars.clone_from(&input.owner.lock().unwrap_or_else(|e| e.into_inner()).vars);
        let mut prng = input.prng.clone();
        let result = self
            .run_commands(conn, input, &mut vars, &mut prng, &mut steps, &mut current)
            .await;
        let mut owner = input.owner.lock().unwrap_or_else(|e| e.into_inner());
        if result.is_ok() {
            std::mem::swap(&mut owner.vars, &mut vars);
            self.ledger.commit(input.script);
        }
        owner.prng = prng;
        drop(owner);
        if let (Err(_), Some((step, t0))) = (&result, current) {
            steps.push(StepTime {
                step,
                us: t0.elapsed().as_micros() as u64,
                failed: true,
            });
        }
        self.steps = steps;
        self.scratch = vars;
        result
    }

    fn step_times(&mut self) -> Option<&mut Vec<StepTime>> {
        Some(&mut self.steps)
    }

    fn into_ledger(self) -> ScriptLedger {
        self.ledger
    }
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

    /// Runs `input`'s script from its first command on `vars` and `prng`
    /// (the attempt's copies). `current` is the
    /// command running and since when; every command that completes is
    /// appended to `steps`.
    async fn run_commands(
        &mut self,
        conn: &mut Conn,
        input: &ScriptInput,
        vars: &mut Vars,
        prng: &mut Prng,
        steps: &mut Vec<StepTime>,
        current: &mut Option<(usize, Instant)>,
    ) -> Result<Outcome, AttemptError> {
        // One clock read per command boundary: it ends one step and starts
        // the next.
        let done = |steps: &mut Vec<StepTime>, (step, t0): (usize, Instant), now: Instant| {
            steps.push(StepTime {
                step,
                us: now.saturating_duration_since(t0).as_micros() as u64,
                failed: false,
            })
        };
        let c = &self.scripts[input.script];
        let commands = &c.script.commands;
        let mut i = 0;
        // Whether the previous step jumped here from a false condition.
        let mut jump_pending = false;
        // Parameters as text: their bytes, and each one's span (None: NULL).
        let mut texts: Vec<u8> = Vec::new();
        let mut spans: Vec<Option<std::ops::Range<usize>>> = Vec::new();
        // Between \startpipeline and \endpipeline.
        let mut pipeline: Option<Pipeline> = None;
        while i < commands.len() {
            let now = Instant::now();
            if let Some(prev) = current.replace((i, now)) {
                done(steps, prev, now);
            }
            let jumped = std::mem::take(&mut jump_pending);
            let env = |vars: &Vars, prng: &mut Prng| -> Result<Value, AttemptError> {
                let e = c.exprs[i].as_ref().expect("compiled");
                e.eval(&mut Env {
                    vars,
                    prng,
                    script: input.script,
                    command: i,
                })
                .map_err(|e| script_error(c, i, e))
            };
            match &commands[i].kind {
                CommandKind::Set { name, .. } => {
                    let v = Var::Value(env(vars, prng)?);
                    match vars.get_mut(name.as_str()) {
                        Some(slot) => *slot = v,
                        None => {
                            vars.insert(name.as_str().into(), v);
                        }
                    }
                }
                CommandKind::If { .. } | CommandKind::Elif { .. } | CommandKind::Else
                    if !jumped && !matches!(commands[i].kind, CommandKind::If { .. }) =>
                {
                    // \elif or \else reached from the end of a taken
                    // branch: the block is done.
                    i = c.end[i];
                }
                CommandKind::If { .. } | CommandKind::Elif { .. } => {
                    let v = env(vars, prng)?;
                    if !v.truth() {
                        // To the next branch marker: an \elif is evaluated,
                        // an \else entered, an \endif passed.
                        i = c.next[i];
                        jump_pending = true;
                        continue;
                    }
                }
                CommandKind::Else => {}
                CommandKind::Endif => {}
                CommandKind::StartPipeline => pipeline = Some(Pipeline::default()),
                CommandKind::SyncPipeline => {
                    if let Some(p) = pipeline.as_mut() {
                        conn.sync();
                        p.syncs += 1;
                    }
                }
                CommandKind::EndPipeline => {
                    if let Some(p) = pipeline.take() {
                        conn.sync();
                        if let Err(e) = conn.read_pipeline(p.syncs + 1).await {
                            // An error at the pipeline's COMMIT ended the
                            // transaction; an earlier one left it open (and
                            // failed): the engine rolls that back.
                            let ended = p.commits && !conn.in_transaction();
                            return Err(if ended {
                                AttemptError::commit(e)
                            } else {
                                AttemptError::body(e)
                            }
                            .located(&c.locations[i]));
                        }
                    }
                }
                CommandKind::Sleep { amount, unit_us } => {
                    let n = match amount {
                        SleepAmount::Literal(n) => *n,
                        SleepAmount::Variable(v) => {
                            match vars.get(v.as_str()).map(|x| x.value(v)) {
                                Some(Ok(Value::Int(n))) => n,
                                Some(Ok(other)) => {
                                    return Err(script_error(
                                        c,
                                        i,
                                        format!("\\sleep: :{v} is not an integer ({other})"),
                                    ));
                                }
                                Some(Err(e)) => return Err(script_error(c, i, e)),
                                None => {
                                    return Err(script_error(
                                        c,
                                        i,
                                        format!("undefined variable :{v}"),
                                    ));
                                }
                            }
                        }
                    };
                    let us = n.max(0) as u64 * unit_us;
                    tokio::time::sleep(Duration::from_micros(us)).await;
                }
                CommandKind::Sql {
                    sql,
                    variables,
                    store,
                } => {
                    let fail = |e: crate::wire::Error| {
                        if c.at_commit[i] {
                            AttemptError::commit(e)
                        } else {
                            AttemptError::body(e)
                        }
                        .located(&c.locations[i])
                    };
                    if self.mode == QueryMode::Simple || c.simple_only[i] {
                        let text = substitute(sql, vars);
                        let messages = conn.simple_query(&text).await.map_err(fail)?;
                        if let Some(store) = store {
                            store_rows(store, &messages, vars)
                                .map_err(|e| script_error(c, i, e))?;
                        }
                    } else {
                        // Every variable as text, as libpq sends pgbench's
                        // parameters; the server reads each by its type.
                        texts.clear();
                        spans.clear();
                        for v in variables {
                            let start = texts.len();
                            match vars.get(v.as_str()) {
                                Some(Var::Value(Value::Null)) => {
                                    spans.push(None);
                                    continue;
                                }
                                Some(Var::Value(Value::Int(n))) => texts
                                    .extend_from_slice(itoa::Buffer::new().format(*n).as_bytes()),
                                Some(Var::Text(t)) => texts.extend_from_slice(t.as_bytes()),
                                Some(Var::Value(v)) => {
                                    let _ =
                                        std::io::Write::write_fmt(&mut texts, format_args!("{v}"));
                                }
                                None => {
                                    return Err(script_error(
                                        c,
                                        i,
                                        format!("undefined variable :{v}"),
                                    ));
                                }
                            }
                            spans.push(Some(start..texts.len()));
                        }
                        let params = TextParams {
                            bytes: &texts,
                            spans: &spans,
                        };
                        let stmt = self.prepared.get(input.script).and_then(|s| s[i].as_ref());
                        let sql = c.param_sql[i].as_deref().expect("SQL");
                        match pipeline.as_mut() {
                            Some(p) => {
                                conn.queue(stmt, sql, params).map_err(fail)?;
                                p.commits |= c.at_commit[i];
                            }
                            None => {
                                match stmt {
                                    Some(stmt) => conn.execute_text(stmt, params).await,
                                    None => conn.execute_unnamed(sql, params).await,
                                }
                                .map_err(fail)?;
                            }
                        }
                    }
                }
            }
            i += 1;
        }
        if let Some(last) = current.take() {
            done(steps, last, Instant::now());
        }
        Ok(Outcome::Committed)
    }
}

/// A pipeline being queued (`\startpipeline` .. `\endpipeline`): the
/// batches ended by `\syncpipeline` so far, and whether a queued
/// statement ends the transaction (its error is then an error at COMMIT).
#[derive(Default)]
struct Pipeline {
    syncs: usize,
    commits: bool,
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

/// `\gset` (exactly one row of the last statement) or `\aset` (every
/// row of every statement, the last value winning) into variables named
/// prefix + column. A NULL column becomes a NULL value.
fn store_rows(store: &Store, messages: &[SimpleMessage], vars: &mut Vars) -> Result<(), String> {
    // Rows per statement: a CommandComplete ends each statement.
    let mut statements: Vec<Vec<&SimpleRow>> = vec![Vec::new()];
    for m in messages {
        match m {
            SimpleMessage::Row(r) => statements.last_mut().expect("non-empty").push(r),
            SimpleMessage::CommandComplete(_) => statements.push(Vec::new()),
        }
    }
    statements.pop(); // the empty one after the last CommandComplete
    let mut put = |prefix: &str, row: &SimpleRow| {
        for (k, col) in row.columns().iter().enumerate() {
            let v = match row.get(k) {
                Some(t) => Var::Text(t.into()),
                None => Var::Value(Value::Null),
            };
            vars.insert(format!("{prefix}{col}").into(), v);
        }
    };
    match store {
        Store::Gset(prefix) => {
            let rows = statements.last().map_or(0, Vec::len);
            if rows != 1 {
                return Err(format!("\\gset: expected one row, got {rows}"));
            }
            put(prefix, statements.last().expect("one")[0]);
        }
        Store::Aset(prefix) => {
            for row in statements.iter().flatten() {
                put(prefix, row);
            }
        }
    }
    Ok(())
}
