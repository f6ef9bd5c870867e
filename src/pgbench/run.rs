//! pgbench scripts as a workload: each client picks a script by weight,
//! runs its commands in order with its own variables, and the engine
//! retries the whole script on a retryable error with the random state it
//! had at its start, as pgbench 15+ does, and with its variables too
//! (pgbench keeps what a failed try set). After a transaction that finally
//! failed, the client keeps its variables from before it and draws new
//! random values.
//!
//! The isolation level applies through `SET default_transaction_isolation`
//! on every connection, so a script's own `BEGIN` (and every statement
//! outside one) runs at the cell's level.
//!
//! Query modes (pgbench `-M`): `simple` substitutes variables as text;
//! `extended` sends them as parameters of an unnamed statement each time;
//! `prepared` prepares every SQL command once per connection. Parameters
//! are typed by the server; isobench encodes them for int2/4/8, float4/8,
//! numeric, bool, oid and text types (another type is an error naming the
//! command: use `-M simple`). Commands with `\gset`/`\aset` and commands
//! holding several statements (`\;`) always use the simple protocol, whose
//! text results the variables need. Pipelines (`\startpipeline` ...) run
//! their commands one after the other: same results, without pgbench's
//! pipelining speed-up.

use crate::model::QueryMode;
use std::collections::HashMap;
use std::error::Error as StdError;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{BufMut, BytesMut};
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{Client, SimpleQueryMessage, Statement};

use super::data::ScriptData;
use super::expr::{self, Expr, Value};
use super::history;
use super::prng::Prng;
use super::script::{self, CommandKind, Part, Script, SleepAmount, Store};
use crate::model::Lifetime;
use crate::model::{InvariantResult, StepTime};
use crate::workload::AttemptError;
use crate::workload::{
    ExplainStatement, Loader, Location, Outcome, Setup, TxControl, Workload, WorkloadClient,
    WorkloadError,
};

pub use super::data::{Data, HistoryBase, InitSql, ScriptLedger};

/// A variable's value: text (from `-D` or `\gset`) or an expression's.
#[derive(Debug, Clone, PartialEq)]
enum Var {
    Text(String),
    Value(Value),
}

impl Var {
    fn text(&self) -> String {
        match self {
            Var::Text(t) => t.clone(),
            Var::Value(v) => v.to_string(),
        }
    }

    /// The value an expression sees; errors for text that is not one.
    fn value(&self, name: &str) -> Result<Value, String> {
        match self {
            Var::Text(t) => Value::from_text(name, t),
            Var::Value(v) => Ok(*v),
        }
    }
}

type Vars = HashMap<String, Var>;

/// A script with its expressions parsed and its branches resolved.
#[derive(Debug)]
struct Compiled {
    script: Script,
    /// Per command: the parsed expression of `\set`, `\if`, `\elif`.
    exprs: Vec<Option<Expr>>,
    /// Per command: for `\if`/`\elif`/`\else`, the index of the next
    /// branch marker (`\elif`, `\else`, `\endif`) of the same `\if`; for
    /// every branch marker, `end[i]` is its `\endif`.
    next: Vec<usize>,
    end: Vec<usize>,
    /// Per SQL command: the text with `$n` for the variables.
    param_sql: Vec<Option<String>>,
    /// Per command: `file:line` and its first line, which a server error
    /// of the command carries (shared: a failure allocates nothing).
    locations: Vec<Arc<Location>>,
}

/// Parses every expression of `script` and resolves its `\if` blocks.
///
/// Errors: an expression that does not parse, as `file:line:column`.
fn compile(script: Script) -> Result<Compiled, String> {
    let n = script.commands.len();
    let mut exprs = Vec::with_capacity(n);
    let mut param_sql = Vec::with_capacity(n);
    for c in &script.commands {
        exprs.push(match &c.kind {
            CommandKind::Set { expr, expr_loc, .. }
            | CommandKind::If { expr, expr_loc }
            | CommandKind::Elif { expr, expr_loc } => Some(Expr::parse(expr).map_err(|e| {
                format!(
                    "{}:{}:{}: {e}",
                    script.name,
                    expr_loc.line,
                    expr_loc.column + e.offset()
                )
            })?),
            _ => None,
        });
        param_sql.push(match &c.kind {
            CommandKind::Sql { sql, variables, .. } => {
                let mut out = String::new();
                for part in script::split_variables(sql) {
                    match part {
                        Part::Text(t) => out.push_str(t),
                        Part::Var(v) => {
                            let i = variables.iter().position(|x| x == v).expect("listed");
                            let _ = write!(out, "${}", i + 1);
                        }
                    }
                }
                Some(out)
            }
            _ => None,
        });
    }
    let (mut next, mut end) = (vec![n; n], vec![n; n]);
    let mut open: Vec<Vec<usize>> = Vec::new();
    for (i, c) in script.commands.iter().enumerate() {
        match c.kind {
            CommandKind::If { .. } => open.push(vec![i]),
            CommandKind::Elif { .. } | CommandKind::Else => {
                let block = open.last_mut().expect("checked by the parser");
                next[*block.last().expect("non-empty")] = i;
                block.push(i);
            }
            CommandKind::Endif => {
                let block = open.pop().expect("checked by the parser");
                next[*block.last().expect("non-empty")] = i;
                for b in block {
                    end[b] = i;
                }
            }
            _ => {}
        }
    }
    let locations = script
        .commands
        .iter()
        .map(|c| {
            Arc::new(Location {
                at: format!("{}:{}", script.name, c.loc.line),
                command: c.first_line.trim().to_string(),
            })
        })
        .collect();
    Ok(Compiled {
        script,
        exprs,
        next,
        end,
        param_sql,
        locations,
    })
}

/// The scripts of a study and how they run.
#[derive(Debug)]
pub struct ScriptWorkload {
    scripts: Arc<Vec<Compiled>>,
    weights: Vec<u64>,
    names: Vec<&'static str>,
    mode: QueryMode,
    defines: Vec<(String, String)>,
    data: ScriptData,
    clients: u32,
}

impl ScriptWorkload {
    /// A workload of `scripts` (parsed, with weights) on `data`.
    ///
    /// Errors: an expression that does not parse (`file:line:column`), all
    /// weights 0, a `-D` name that is not a variable name.
    pub fn new(
        scripts: Vec<Script>,
        mode: QueryMode,
        defines: Vec<(String, String)>,
        data: Data,
        clients: u32,
    ) -> Result<Self, String> {
        if scripts.iter().all(|s| s.weight == 0) {
            return Err("-f/-b: every script has weight 0; give one a weight above 0".into());
        }
        for (name, _) in &defines {
            if !script::is_variable_name(name) {
                return Err(format!(
                    "-D {name}: not a variable name (letters, digits, _)"
                ));
            }
        }
        let weights = scripts.iter().map(|s| u64::from(s.weight)).collect();
        let names = scripts
            .iter()
            .map(|s| &*Box::leak(s.name.clone().into_boxed_str()))
            .collect();
        let inserts = scripts.iter().map(history::Inserts::of).collect();
        let data = ScriptData::new(data, inserts)?;
        let compiled = scripts
            .into_iter()
            .map(compile)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ScriptWorkload {
            scripts: Arc::new(compiled),
            weights,
            names,
            mode,
            defines,
            data,
            clients,
        })
    }
}

impl Workload for ScriptWorkload {
    type Client = ScriptClient;

    fn new(_setup: &Setup) -> Result<Self, WorkloadError> {
        Err(WorkloadError::Invalid(
            "pgbench scripts are given with -f/-b, not as a workload".into(),
        ))
    }

    fn data_key(&self) -> String {
        self.data.key()
    }

    fn tx_types(&self) -> Vec<&'static str> {
        self.names.clone()
    }

    async fn load(&self, db: &Loader) -> Result<u64, WorkloadError> {
        self.data.load(db).await
    }

    fn explain_statements(&self) -> Vec<ExplainStatement> {
        Vec::new()
    }

    /// Script `ty`'s commands by their first line, as `pgbench -r` lists
    /// them.
    fn step_names(&self, ty: usize) -> Vec<String> {
        self.scripts[ty]
            .script
            .commands
            .iter()
            .map(|c| c.first_line.trim().to_string())
            .collect()
    }

    /// Client `client_id`'s variables and random state, seeded as pgbench
    /// seeds them: the engine gives client k the run's seed + k; from the
    /// run's seed S a base generator draws one seed per client in order,
    /// then `:default_seed`. The first run of a study with `--seed S` thus
    /// draws what `pgbench --random-seed S -c N` draws.
    fn client(&self, client_id: u32, seed: u64) -> ScriptClient {
        let run_seed = seed.wrapping_sub(u64::from(client_id));
        let (client_seed, default_seed) = client_seeds(run_seed, self.clients, client_id);
        let mut vars: Vars = HashMap::new();
        let mut put = |k: &str, v: Value| {
            vars.insert(k.into(), Var::Value(v));
        };
        put("scale", Value::Int(self.data.scale()));
        put("client_id", Value::Int(i64::from(client_id)));
        put("random_seed", Value::Int(run_seed as i64));
        put("default_seed", Value::Int(default_seed as i64));
        for (k, v) in &self.defines {
            vars.insert(k.clone(), Var::Text(v.clone()));
        }
        ScriptClient {
            scripts: self.scripts.clone(),
            weights: self.weights.clone(),
            mode: self.mode,
            state: Arc::new(Mutex::new(ClientState {
                vars,
                prng: Prng::seed(client_seed),
            })),
            chooser: Prng::seed(client_seed ^ 0x7363_7269_7074),
            prepared: Vec::new(),
            steps: Vec::new(),
            ledger: ScriptLedger::default(),
        }
    }

    async fn check(
        &self,
        db: &Client,
        lifetime: Lifetime,
        ledger: ScriptLedger,
    ) -> Result<Vec<InvariantResult>, WorkloadError> {
        self.data.check(db, &self.names, lifetime, &ledger).await
    }
}

/// pgbench's seeds for client `client_id` of `clients` under
/// `--random-seed run_seed`: the seed of the client's generator (which
/// `random*()` draw from) and `:default_seed`. A base generator seeded with
/// `run_seed` draws one seed per client in order, then the default seed
/// (pgbench.c, `main`; checked against pgbench 15 and 18).
pub fn client_seeds(run_seed: u64, clients: u32, client_id: u32) -> (u64, u64) {
    let mut base = Prng::seed(run_seed);
    let mut client_seed = 0;
    for k in 0..clients.max(client_id + 1) {
        let s = base.next_u64();
        if k == client_id {
            client_seed = s;
        }
    }
    (client_seed, base.next_u64())
}

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
}

/// A script run's start: which script, and the variables and random
/// state a retry starts from again; `owner` is the client they belong to.
pub struct ScriptInput {
    script: usize,
    vars: Vars,
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
    fn var(&self, name: &str) -> Result<Value, String> {
        match self.vars.get(name) {
            Some(v) => v.value(name),
            None => Err(format!("undefined variable \"{name}\"")),
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

    async fn prepare(
        &mut self,
        conn: &Client,
        tx: &TxControl,
    ) -> Result<(), tokio_postgres::Error> {
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
                    ) if !sql.contains(';') => Some(
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
            vars: state.vars.clone(),
            prng: state.prng.clone(),
            owner: Arc::clone(&self.state),
        }
    }

    fn tx_type(&self, input: &ScriptInput) -> usize {
        input.script
    }

    async fn attempt(
        &mut self,
        conn: &Client,
        _tx: &TxControl,
        input: &ScriptInput,
    ) -> Result<Outcome, AttemptError> {
        let mut steps = std::mem::take(&mut self.steps);
        let mut current = None;
        // Every attempt starts from the transaction's variables and random
        // state. The client keeps the variables of a committed attempt
        // only, but the random state of every attempt: the transaction
        // after a failed one draws new values, as in pgbench.
        let mut vars = input.vars.clone();
        let mut prng = input.prng.clone();
        let result = self
            .run_commands(conn, input, &mut vars, &mut prng, &mut steps, &mut current)
            .await;
        let mut owner = input.owner.lock().unwrap_or_else(|e| e.into_inner());
        if result.is_ok() {
            owner.vars = vars;
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
    /// Runs `input`'s script from its first command on `vars` and `prng`
    /// (the attempt's copies). `current` is the
    /// command running and since when; every command that completes is
    /// appended to `steps`.
    async fn run_commands(
        &mut self,
        conn: &Client,
        input: &ScriptInput,
        vars: &mut Vars,
        prng: &mut Prng,
        steps: &mut Vec<StepTime>,
        current: &mut Option<(usize, Instant)>,
    ) -> Result<Outcome, AttemptError> {
        let done = |steps: &mut Vec<StepTime>, (step, t0): (usize, Instant)| {
            steps.push(StepTime {
                step,
                us: t0.elapsed().as_micros() as u64,
                failed: false,
            })
        };
        let c = &self.scripts[input.script];
        let commands = &c.script.commands;
        let mut i = 0;
        // Whether the previous step jumped here from a false condition.
        let mut jump_pending = false;
        while i < commands.len() {
            if let Some(prev) = current.replace((i, Instant::now())) {
                done(steps, prev);
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
                    let v = env(vars, prng)?;
                    vars.insert(name.clone(), Var::Value(v));
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
                CommandKind::Endif
                | CommandKind::StartPipeline
                | CommandKind::SyncPipeline
                | CommandKind::EndPipeline => {}
                CommandKind::Sleep { amount, unit_us } => {
                    let n = match amount {
                        SleepAmount::Literal(n) => *n,
                        SleepAmount::Variable(v) => match vars.get(v).map(|x| x.value(v)) {
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
                                return Err(script_error(c, i, format!("undefined variable :{v}")));
                            }
                        },
                    };
                    let us = n.max(0) as u64 * unit_us;
                    tokio::time::sleep(Duration::from_micros(us)).await;
                }
                CommandKind::Sql {
                    sql,
                    variables,
                    store,
                } => {
                    let at_commit = {
                        let head = sql.trim_start().to_ascii_uppercase();
                        head.starts_with("COMMIT") || head.starts_with("END")
                    };
                    let fail = |e: tokio_postgres::Error| {
                        if at_commit {
                            AttemptError::commit(e)
                        } else {
                            AttemptError::body(e)
                        }
                        .located(&c.locations[i])
                    };
                    let simple =
                        self.mode == QueryMode::Simple || store.is_some() || sql.contains(';');
                    if simple {
                        let text = substitute(sql, vars);
                        let messages = conn.simple_query(&text).await.map_err(fail)?;
                        if let Some(store) = store {
                            store_rows(store, &messages, vars)
                                .map_err(|e| script_error(c, i, e))?;
                        }
                    } else {
                        let mut params: Vec<Param> = Vec::with_capacity(variables.len());
                        for v in variables {
                            match vars.get(v) {
                                Some(Var::Value(Value::Null)) => params.push(Param(None)),
                                Some(x) => params.push(Param(Some(x.text()))),
                                None => {
                                    return Err(script_error(
                                        c,
                                        i,
                                        format!("undefined variable :{v}"),
                                    ));
                                }
                            }
                        }
                        let refs: Vec<&(dyn ToSql + Sync)> =
                            params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
                        let result =
                            match &self.prepared.get(input.script).and_then(|s| s[i].as_ref()) {
                                Some(stmt) => conn.execute(*stmt, &refs).await,
                                None => {
                                    conn.execute(c.param_sql[i].as_deref().expect("SQL"), &refs)
                                        .await
                                }
                            };
                        result.map_err(fail)?;
                    }
                }
            }
            i += 1;
        }
        if let Some(last) = current.take() {
            done(steps, last);
        }
        Ok(Outcome::Committed)
    }
}

/// `sql` with every defined variable replaced by its text (undefined ones
/// stay `:name`, as pgbench leaves them in simple mode).
fn substitute(sql: &str, vars: &Vars) -> String {
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
fn store_rows(
    store: &Store,
    messages: &[SimpleQueryMessage],
    vars: &mut Vars,
) -> Result<(), String> {
    // Rows per statement: a CommandComplete ends each statement.
    let mut statements: Vec<Vec<&tokio_postgres::SimpleQueryRow>> = vec![Vec::new()];
    for m in messages {
        match m {
            SimpleQueryMessage::Row(r) => statements.last_mut().expect("non-empty").push(r),
            SimpleQueryMessage::CommandComplete(_) => statements.push(Vec::new()),
            _ => {}
        }
    }
    statements.pop(); // the empty one after the last CommandComplete
    let mut put = |prefix: &str, row: &tokio_postgres::SimpleQueryRow| {
        for (k, col) in row.columns().iter().enumerate() {
            let v = match row.get(k) {
                Some(t) => Var::Text(t.to_string()),
                None => Var::Value(Value::Null),
            };
            vars.insert(format!("{prefix}{}", col.name()), v);
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

/// A script variable sent as a parameter, encoded for the type the server
/// inferred; `None` is NULL.
#[derive(Debug)]
struct Param(Option<String>);

type BoxError = Box<dyn StdError + Sync + Send>;

impl ToSql for Param {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        let Some(s) = &self.0 else {
            return Ok(IsNull::Yes);
        };
        let t = s.trim();
        let bad = |what: &str| -> BoxError { format!("'{s}' is not {what}").into() };
        match *ty {
            Type::INT2 => out.put_i16(t.parse().map_err(|_| bad("a smallint"))?),
            Type::INT4 => out.put_i32(t.parse().map_err(|_| bad("an integer"))?),
            Type::INT8 => out.put_i64(t.parse().map_err(|_| bad("a bigint"))?),
            Type::OID => out.put_u32(t.parse().map_err(|_| bad("an oid"))?),
            Type::FLOAT4 => out.put_f32(t.parse().map_err(|_| bad("a real"))?),
            Type::FLOAT8 => out.put_f64(t.parse().map_err(|_| bad("a double precision"))?),
            Type::BOOL => out.put_u8(match t.to_ascii_lowercase().as_str() {
                "t" | "true" | "y" | "yes" | "on" | "1" => 1,
                "f" | "false" | "n" | "no" | "off" | "0" => 0,
                _ => return Err(bad("a boolean")),
            }),
            Type::NUMERIC => encode_numeric(t, out).map_err(|_| bad("a number"))?,
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
                out.put_slice(s.as_bytes())
            }
            _ => {
                return Err(format!(
                    "a parameter of type {ty}: isobench sends script variables as int, float, numeric, \
                     bool, oid and text parameters; run the script with -M simple"
                )
                .into());
            }
        }
        Ok(IsNull::No)
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// PostgreSQL's binary `numeric` for a decimal like `-12.0340` (no
/// exponent): ndigits, weight, sign, dscale, then base-10000 digits
/// (src/backend/utils/adt/numeric.c, numeric_send).
fn encode_numeric(t: &str, out: &mut BytesMut) -> Result<(), ()> {
    let (neg, digits) = match t.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if (int.is_empty() && frac.is_empty())
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return Err(());
    }
    let dscale = frac.len() as u16;
    // Pad the integer part on the left and the fraction on the right to
    // whole groups of 4 decimal digits.
    let int = int.trim_start_matches('0');
    let pad_left = (4 - int.len() % 4) % 4;
    let pad_right = (4 - frac.len() % 4) % 4;
    let all: String = "0".repeat(pad_left) + int + frac + &"0".repeat(pad_right);
    let mut groups: Vec<i16> = all
        .as_bytes()
        .chunks(4)
        .map(|c| {
            std::str::from_utf8(c)
                .expect("ascii")
                .parse()
                .expect("digits")
        })
        .collect();
    let mut weight = ((pad_left + int.len()) / 4) as i16 - 1;
    // Strip leading and trailing zero groups.
    while groups.first() == Some(&0) {
        groups.remove(0);
        weight -= 1;
    }
    while groups.last() == Some(&0) {
        groups.pop();
    }
    if groups.is_empty() {
        weight = 0;
    }
    out.put_i16(groups.len() as i16);
    out.put_i16(weight);
    out.put_u16(if neg && !groups.is_empty() { 0x4000 } else { 0 });
    out.put_u16(dscale);
    for g in groups {
        out.put_i16(g);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numeric(t: &str) -> Vec<i16> {
        let mut b = BytesMut::new();
        encode_numeric(t, &mut b).unwrap();
        b.chunks(2)
            .map(|c| i16::from_be_bytes([c[0], c[1]]))
            .collect()
    }

    #[test]
    fn numeric_binary_encoding() {
        // ndigits, weight, sign, dscale, digits
        assert_eq!(numeric("12345.678"), vec![3, 1, 0, 3, 1, 2345, 6780]);
        assert_eq!(numeric("-0.0001"), vec![1, -1, 0x4000, 4, 1]);
        assert_eq!(numeric("0"), vec![0, 0, 0, 0]);
        assert_eq!(numeric("10000"), vec![1, 1, 0, 0, 1]);
        assert!(encode_numeric("1e5", &mut BytesMut::new()).is_err());
        assert!(encode_numeric(".", &mut BytesMut::new()).is_err());
    }

    #[test]
    fn branches_resolve_to_the_next_marker_and_the_endif() {
        let s = script::parse(
            "t.sql",
            "\\if 0\nSELECT 1;\n\\elif 1\nSELECT 2;\n\\else\nSELECT 3;\n\\endif\nSELECT 4;\n",
            1,
        )
        .unwrap();
        let c = compile(s).unwrap();
        assert_eq!((c.next[0], c.next[2], c.next[4]), (2, 4, 6));
        assert_eq!((c.end[0], c.end[2], c.end[4]), (6, 6, 6));
    }

    #[test]
    fn substitution_keeps_undefined_variables() {
        let mut v = Vars::new();
        v.insert("a".into(), Var::Value(Value::Int(-5)));
        v.insert("t".into(), Var::Text("x y".into()));
        assert_eq!(
            substitute("SELECT :a, ':t', :zz::int", &v),
            "SELECT -5, 'x y', :zz::int"
        );
    }

    #[test]
    fn bad_expressions_are_located_in_the_file() {
        let e = script::parse("t.sql", "SELECT 1;\n\\set x 1 +\n", 1).unwrap_err();
        assert_eq!((e.loc.line, e.loc.column), (2, 11), "{e}");
        assert!(e.message.contains("expected an expression"), "{e}");
        let e = script::parse("t.sql", "\\set x 1 + \\\n  2 + foo(3)\n", 1).unwrap_err();
        assert_eq!((e.loc.line, e.loc.column), (2, 7), "{e}");
        assert_eq!(e.message, "\\set: unexpected function name (foo)");
    }
}
