//! One client of a pgbench-script workload: its variables, random state
//! and prepared statements, and how it runs a script's commands.

mod commands;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::report::{Rules, Say};
use super::{Compiled, Var, Vars};
use crate::model::{QueryMode, StepTime};
use crate::pgbench::data::ScriptLedger;
use crate::pgbench::expr::{self, EvalError, Value};
use crate::pgbench::prng::Prng;
use crate::pgbench::script::{self, CommandKind, Part};
use crate::wire::{Conn, Statement};
use crate::workload::{AttemptError, Ended, TxControl, WorkloadClient};

/// A client's variables and random state between transactions.
#[derive(Debug)]
struct ClientState {
    vars: Vars,
    prng: Prng,
}

/// One client's scripts, variables and random state.
pub struct ScriptClient {
    /// What runs the scripts' commands.
    interp: Interpreter,
    weights: Vec<u64>,
    /// Its variables and random state: its own, or (with a connection
    /// pool, `--pool-size`) shared with its inputs, as another session's
    /// client runs the attempt and writes the outcome back.
    state: State,
    /// Picks the script (pgbench: the thread's `ts_choose_rs`).
    chooser: Prng,
    /// The attempts' working memory; the last attempt's command latencies
    /// stay in it until the engine reads and clears them.
    work: Work,
    /// The transactions this client committed, per script.
    ledger: ScriptLedger,
    /// The variables of an attempt of a shared state's input: a copy of
    /// the owner's, in memory kept from one attempt to the next.
    scratch: Vars,
}

/// What runs a client's scripts: the scripts, how their SQL is sent and
/// the statements prepared so far. Apart from the client's variables and
/// working memory, so that an attempt lends it those in place: moved into
/// the attempt's future and back, they were six more cache lines written
/// per transaction in every client's state.
struct Interpreter {
    scripts: Arc<Vec<Compiled>>,
    mode: QueryMode,
    /// `-M prepared`: per script, per command; with pgbench's rules each
    /// is prepared when first used, as pgbench prepares them.
    prepared: Vec<Vec<Option<Statement>>>,
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
            interp: Interpreter {
                scripts,
                mode,
                prepared: Vec::new(),
                say: Say { rules, id },
                pending_abort: None,
            },
            weights,
            state: State::Own(ClientState {
                vars,
                prng: Prng::seed(client_seed),
            }),
            chooser: Prng::seed(client_seed ^ 0x7363_7269_7074),
            work: Work::default(),
            ledger: ScriptLedger::default(),
            scratch: Vars::default(),
        }
    }
}

/// Where a client's [`ClientState`] is.
enum State {
    /// Every input is attempted by the client that drew it (the client
    /// runs on a session of its own): no lock per transaction.
    Own(ClientState),
    /// The inputs are attempted on pooled sessions, by their clients
    /// ([`WorkloadClient::inputs_run_elsewhere`]).
    Shared(Arc<Mutex<ClientState>>),
}

impl ScriptClient {
    /// A copy of this client's variables.
    fn vars(&self) -> Vars {
        match &self.state {
            State::Own(s) => s.vars.clone(),
            State::Shared(s) => s.lock().unwrap_or_else(|e| e.into_inner()).vars.clone(),
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
    /// (`None`: NULL), as [`TextParams`](crate::wire::TextParams) takes them.
    texts: Vec<u8>,
    spans: Vec<Option<std::ops::Range<usize>>>,
}

/// A script run's start: which script, and the random state a retry
/// starts from again; `owner` holds the state of the client it belongs to
/// when that is shared (`None`: the attempting client's own), whose
/// variables (changed only when a transaction commits) are the ones every
/// attempt starts from.
pub struct ScriptInput {
    script: usize,
    prng: Prng,
    owner: Option<Arc<Mutex<ClientState>>>,
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
        if self.interp.say.rules.is_some() {
            // pgbench's clients print what the server warns of.
            conn.print_notices();
        }
        conn.batch_execute(&format!(
            "SET default_transaction_isolation = '{}'",
            tx.isolation().sql().to_ascii_lowercase()
        ))
        .await?;
        let p = &mut self.interp;
        p.prepared = p
            .scripts
            .iter()
            .map(|c| vec![None; c.script.commands.len()])
            .collect();
        if p.mode == QueryMode::Prepared && p.say.rules.is_none() {
            // isobench run: every statement before the run starts.
            for s in 0..p.scripts.len() {
                for i in 0..p.scripts[s].script.commands.len() {
                    if p.preparable(s, i) {
                        let sql = p.scripts[s].param_sql[i].clone().expect("SQL");
                        p.prepared[s][i] = Some(conn.prepare(&sql).await?);
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
        let (prng, owner) = match &self.state {
            State::Own(s) => (s.prng.clone(), None),
            State::Shared(s) => (
                s.lock().unwrap_or_else(|e| e.into_inner()).prng.clone(),
                Some(Arc::clone(s)),
            ),
        };
        ScriptInput {
            script,
            prng,
            owner,
            tries: AtomicU32::new(0),
        }
    }

    fn inputs_run_elsewhere(&mut self) {
        if let State::Own(s) = &mut self.state {
            let s = std::mem::replace(
                s,
                ClientState {
                    vars: Vars::default(),
                    prng: Prng::seed(0),
                },
            );
            self.state = State::Shared(Arc::new(Mutex::new(s)));
        }
    }

    fn tx_type(&self, input: &ScriptInput) -> usize {
        input.script
    }

    /// pgbench's built-in `select-only` only reads; a script file is
    /// never taken for read-only (its SQL may call functions that write).
    fn read_only(&self, input: &ScriptInput) -> bool {
        self.interp.scripts[input.script].script.name == "builtin: select-only"
    }

    async fn attempt(
        &mut self,
        conn: &mut Conn,
        _tx: &TxControl,
        input: &ScriptInput,
    ) -> Result<Ended, AttemptError> {
        if let Some(why) = &self.interp.pending_abort {
            return Err(AttemptError::script(why.clone()));
        }
        // An input's attempts run one after another (a pooled one's are
        // handed from session to session through the pool, which orders
        // them): a plain load and store, not a locked read-modify-write.
        let tries = input.tries.load(Ordering::Relaxed) + 1;
        input.tries.store(tries, Ordering::Relaxed);
        if tries == 1 {
            let p = &self.interp;
            p.say.debug(|| {
                format!(
                    "client {} executing script \"{}\"",
                    p.say.id,
                    script::description(&p.scripts[input.script].script.name)
                )
            });
        }
        let work = &mut self.work;
        work.current = None;
        work.ended = None;
        // Every attempt starts from the transaction's variables and random
        // state: its own (a failed attempt's assignments are undone) or a
        // copy of its owner's. The client keeps the variables of a
        // committed attempt only, but the random state of every attempt:
        // the transaction after a failed one draws new values, as in
        // pgbench.
        let vars = match (&input.owner, &mut self.state) {
            (Some(o), _) => {
                let owner = o.lock().unwrap_or_else(|e| e.into_inner());
                self.scratch.clone_from(&owner.vars);
                &mut self.scratch
            }
            (None, State::Own(own)) => &mut own.vars,
            (None, State::Shared(_)) => {
                unreachable!("an input of a shared state names its owner")
            }
        };
        let mut prng = input.prng.clone();
        let run = Run {
            script: input.script,
            tries,
        };
        let result = self
            .interp
            .run_commands(conn, run, vars, &mut prng, work)
            .await;
        if result.is_ok() {
            self.ledger.commit(input.script);
            vars.keep();
        } else {
            vars.undo();
        }
        match &input.owner {
            Some(o) => {
                let mut owner = o.lock().unwrap_or_else(|e| e.into_inner());
                if result.is_ok() {
                    std::mem::swap(&mut owner.vars, vars);
                }
                owner.prng = prng;
            }
            None => {
                if let State::Own(own) = &mut self.state {
                    own.prng = prng;
                }
            }
        }
        if let (Err(_), Some((step, t0))) = (&result, work.current) {
            work.steps.push(StepTime {
                step,
                us: t0.elapsed().as_micros() as u64,
                failed: true,
            });
        }
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
        let scripts = Arc::clone(&self.interp.scripts);
        for (script, c) in scripts.iter().enumerate() {
            input.script = script;
            let mut vars = self.vars();
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
                            // An invalid name stays undefined here; the
                            // run reports it.
                            let _ = vars.assign(name, Var::Value(v));
                        }
                    }
                    CommandKind::Sql { sql, .. } => out.push((script, i, substitute(sql, &vars))),
                    _ => {}
                }
            }
        }
        out
    }
}

impl Interpreter {
    /// Whether command `i` of script `s` runs as a prepared statement
    /// under `-M prepared`.
    fn preparable(&self, s: usize, i: usize) -> bool {
        let c = &self.scripts[s];
        matches!(
            c.script.commands[i].kind,
            CommandKind::Sql { store: None, .. }
        ) && !c.simple_only[i]
    }

    /// Whether command `i` of script `s` runs prepared and is not prepared
    /// yet.
    pub(super) fn must_prepare(&self, s: usize, i: usize) -> bool {
        self.mode == QueryMode::Prepared && self.prepared[s][i].is_none() && self.preparable(s, i)
    }

    /// Prepares command `i` of script `s` now if it runs prepared and is
    /// not yet (pgbench's rules prepare on first use). A statement the
    /// server refused is reported, as pgbench reports it, and kept
    /// unprepared: using it gets the server's `prepared statement ... does
    /// not exist`.
    async fn prepare_now(&mut self, conn: &mut Conn, s: usize, i: usize) {
        if !self.must_prepare(s, i) {
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
