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
//! `extended` sends them as parameters of an unnamed statement each time
//! (Parse, Bind, Execute and Sync in one round trip); `prepared` prepares
//! every SQL command once per connection. As libpq does for pgbench,
//! parameters go as text with their types left to the server, so a value
//! its type cannot read fails with the server's own error. Commands with
//! `\gset`/`\aset` and commands holding several statements (`\;`) always
//! use the simple protocol, whose text results the variables need.
//! Pipelines (`\startpipeline` ... `\endpipeline`) are sent as pgbench
//! sends them: the commands queued without waiting, a `Sync` at
//! `\syncpipeline` and `\endpipeline`, then every answer read; the first
//! error of the pipeline fails the attempt.

use crate::model::QueryMode;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use tokio_postgres::Client;

use super::data::ScriptData;
use super::expr::{EvalError, Expr, Value};
use super::history;
use super::prng::Prng;
use super::script::{self, CommandKind, Part, Script};
use crate::model::InvariantResult;
use crate::model::Lifetime;
use crate::workload::{ExplainStatement, Loader, Location, Setup, Workload, WorkloadError};

pub use super::data::{Data, HistoryBase, InitSql, ScriptLedger};

/// A variable's value: text (from `-D` or `\gset`) or an expression's.
#[derive(Debug, Clone, PartialEq)]
enum Var {
    /// Shared, so that copying a transaction's variables allocates nothing.
    Text(Arc<str>),
    Value(Value),
}

impl Var {
    fn text(&self) -> String {
        match self {
            Var::Text(t) => t.to_string(),
            Var::Value(v) => v.to_string(),
        }
    }

    /// The value an expression sees; errors for text that is not one.
    fn value(&self, name: &str) -> Result<Value, EvalError> {
        match self {
            Var::Text(t) => Value::from_text(name, t),
            Var::Value(v) => Ok(*v),
        }
    }
}

/// A client's variables by name, with the log of the running attempt's
/// assignments. An attempt runs on the client's own map and a failed one
/// is taken back ([`Vars::undo`]), so the client keeps the variables of
/// committed attempts only without copying the map for every attempt: the
/// copy (about 60 instructions, and the second map's cache lines) was
/// about 1 % of a select-only transaction's client CPU. Inputs attempted
/// on pooled sessions still work on a copy ([`Vars::clone_from`]), as
/// their client's variables are shared. The names are interned ([`Name`])
/// and the texts shared (`Arc<str>`), so a copy allocates nothing. Hashed
/// with foldhash, with a fixed seed: the names are the script's, not an
/// adversary's; SipHash cost more than the copy itself. Each entry keeps
/// its interned name beside the value, so that assigning to a defined
/// variable (`\set` at every transaction) finds the value and the name
/// its undo log needs with one lookup, not a lookup and an insert.
#[derive(Debug, Default)]
struct Vars {
    map: HashMap<Name, (Name, Var), foldhash::fast::FixedState>,
    /// Each assignment since the last [`Vars::keep`] or [`Vars::undo`]:
    /// the name and the value it had (`None`: it was not defined).
    undo: Vec<(Name, Option<Var>)>,
}

impl Vars {
    fn get(&self, name: &str) -> Option<&Var> {
        self.map.get(name).map(|(_, v)| v)
    }

    /// Defines `name` without checking it and without logging it (the
    /// client's first variables: pgbench's own and `-D`'s).
    fn define(&mut self, name: &str, v: Var) {
        let name = Name::from(name);
        self.map.insert(name, (name, v));
    }

    /// Sets `name` to `v`, logged for [`Vars::undo`]. A name not yet
    /// defined must be a valid variable name, as pgbench checks it when
    /// it is first defined (`lookupCreateVariable`); `false`: it is not,
    /// and nothing changed.
    #[must_use]
    fn assign(&mut self, name: &str, v: Var) -> bool {
        if let Some((key, value)) = self.map.get_mut(name) {
            let old = std::mem::replace(value, v);
            self.undo.push((*key, Some(old)));
            return true;
        }
        if !crate::pgbench::script::is_variable_name(name) {
            return false;
        }
        // Interned only the first time (the interner is shared).
        let key = Name::from(name);
        self.map.insert(key, (key, v));
        self.undo.push((key, None));
        true
    }

    /// Keeps the logged assignments (the attempt committed).
    fn keep(&mut self) {
        self.undo.clear();
    }

    /// Takes back the logged assignments, last first: the variables are
    /// again those of the last [`Vars::keep`].
    fn undo(&mut self) {
        while let Some((name, old)) = self.undo.pop() {
            match old {
                Some(v) => self.map.insert(name, (name, v)),
                None => self.map.remove(name.0),
            };
        }
    }
}

impl Clone for Vars {
    /// The variables, without the log.
    fn clone(&self) -> Self {
        Vars {
            map: self.map.clone(),
            undo: Vec::new(),
        }
    }

    /// Into this map's memory: allocates nothing once it has grown.
    fn clone_from(&mut self, source: &Self) {
        self.map.clone_from(&source.map);
        self.undo.clear();
    }
}

/// A variable's name, interned for the life of the process: copying one
/// is copying a pointer. With `Arc<str>` names every copy of a client's
/// variables cost two atomic operations per variable, about 1 % of a
/// select-only transaction's client CPU. The names are few (the scripts'
/// `\set`, `\setshell` and `\gset` targets and the `-D` names), so what
/// the interner keeps is bounded by the scripts, not by the run's length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Name(&'static str);

impl std::borrow::Borrow<str> for Name {
    fn borrow(&self) -> &str {
        self.0
    }
}

impl std::ops::Deref for Name {
    type Target = str;

    fn deref(&self) -> &str {
        self.0
    }
}

impl From<&str> for Name {
    /// The interned name equal to `s`, interning it the first time.
    fn from(s: &str) -> Name {
        static NAMES: std::sync::LazyLock<
            std::sync::Mutex<std::collections::HashSet<&'static str>>,
        > = std::sync::LazyLock::new(Default::default);
        let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
        match names.get(s) {
            Some(&n) => Name(n),
            None => {
                let n: &'static str = Box::leak(s.into());
                names.insert(n);
                Name(n)
            }
        }
    }
}

/// The seed of the values that a script's plans are explained with.
const EXPLAIN_SEED: u64 = 0x005e_ed0f_9a1a;

/// A statement EXPLAIN can show: it reads or writes a table.
fn explainable(sql: &str) -> bool {
    let head: String = sql
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect::<String>()
        .to_ascii_uppercase();
    matches!(
        head.as_str(),
        "SELECT" | "UPDATE" | "INSERT" | "DELETE" | "WITH" | "MERGE"
    ) && table_clause(sql).is_some()
}

/// The first clause of `sql` that names a table, as `KEYWORD table`
/// (`UPDATE pgbench_accounts`, `FROM pgbench_branches`, `INTO
/// pgbench_history`); string literals and comments are skipped.
fn table_clause(sql: &str) -> Option<(String, String)> {
    let mut words: Vec<&str> = Vec::new();
    let mut rest = sql;
    while !rest.is_empty() {
        let c = rest.chars().next().expect("non-empty");
        if rest.starts_with("--") {
            rest = rest.find('\n').map_or("", |n| &rest[n..]);
        } else if c == '\'' {
            rest = rest[1..].find('\'').map_or("", |n| &rest[n + 2..]);
        } else if c.is_ascii_alphanumeric() || c == '_' || c == '"' {
            let end = rest
                .find(|x: char| !(x.is_ascii_alphanumeric() || matches!(x, '_' | '.' | '"')))
                .unwrap_or(rest.len());
            words.push(&rest[..end]);
            rest = &rest[end..];
        } else {
            if c == '(' {
                words.push("(");
            }
            rest = &rest[c.len_utf8()..];
        }
    }
    for w in words.windows(3) {
        let k = w[0].to_ascii_uppercase();
        if !matches!(k.as_str(), "FROM" | "UPDATE" | "INTO" | "JOIN") {
            continue;
        }
        let t = if w[1].eq_ignore_ascii_case("ONLY") {
            w[2]
        } else {
            w[1]
        };
        let reserved = ["(", "SELECT", "LATERAL", "UNNEST", "GENERATE_SERIES"];
        if t.starts_with(|c: char| c.is_ascii_digit())
            || reserved.iter().any(|r| t.eq_ignore_ascii_case(r))
        {
            continue;
        }
        return Some((k, t.to_string()));
    }
    None
}

/// How a SQL command is named in reports: its first line, or, when that
/// line names no table, its first word and first clause that names one
/// (`WITH ... UPDATE pgbench_accounts`).
fn command_label(first_line: &str, sql: &str) -> String {
    let first = first_line.trim();
    match table_clause(sql) {
        Some((_, table)) if first.contains(table.as_str()) => first.to_string(),
        Some((keyword, table)) => {
            let head = first.split_whitespace().next().unwrap_or("");
            format!("{} ... {keyword} {table}", head.to_ascii_uppercase())
        }
        None => first.to_string(),
    }
}

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
    /// Per SQL command: the text pgbench sends, with `$n` for the
    /// variables.
    param_sql: Vec<Option<String>>,
    /// Per command: a SQL command that runs through the simple protocol
    /// whatever the query mode (`\gset`/`\aset`, several statements).
    simple_only: Vec<bool>,
    /// Per command: a SQL command that ends the transaction (`COMMIT`,
    /// `END`): an error there is an error at commit.
    at_commit: Vec<bool>,
    /// Per command: `file:line` and its first line, which a server error
    /// of the command carries (shared: a failure allocates nothing).
    locations: Vec<Arc<Location>>,
    /// Per command: pgbench's number of its prepared statement (`P_n`,
    /// counted over the scripts' SQL commands in order), for `-d`.
    prep: Vec<usize>,
}

/// Parses every expression of `script` and resolves its `\if` blocks.
///
/// Errors: an expression that does not parse, as `file:line:column`.
fn compile(script: Script, first_prep: usize) -> Result<Compiled, String> {
    let n = script.commands.len();
    let mut exprs = Vec::with_capacity(n);
    let mut param_sql = Vec::with_capacity(n);
    let (mut simple_only, mut at_commit) = (vec![false; n], vec![false; n]);
    for (i, c) in script.commands.iter().enumerate() {
        if let CommandKind::Sql { sql, store, .. } = &c.kind {
            simple_only[i] = store.is_some() || sql.contains(';');
            let head = sql.trim_start().as_bytes();
            let starts = |w: &str| {
                head.len() >= w.len() && head[..w.len()].eq_ignore_ascii_case(w.as_bytes())
            };
            at_commit[i] = starts("COMMIT") || starts("END");
        }
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
            CommandKind::Sql {
                text, variables, ..
            } => {
                let mut out = String::new();
                for part in script::split_variables(text) {
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
    let mut k = first_prep;
    let prep = script
        .commands
        .iter()
        .map(|c| {
            let n = k;
            k += usize::from(matches!(c.kind, CommandKind::Sql { .. }));
            n
        })
        .collect();
    Ok(Compiled {
        script,
        prep,
        exprs,
        next,
        end,
        param_sql,
        simple_only,
        at_commit,
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
    rules: Option<Rules>,
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
        let mut prep = 0;
        let compiled = scripts
            .into_iter()
            .map(|s| {
                let first = prep;
                prep += s
                    .commands
                    .iter()
                    .filter(|c| matches!(c.kind, CommandKind::Sql { .. }))
                    .count();
                compile(s, first)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ScriptWorkload {
            scripts: Arc::new(compiled),
            weights,
            names,
            mode,
            defines,
            data,
            clients,
            rules: None,
        })
    }

    /// Under `isobench pgbench`: the clients follow pgbench's `rules`
    /// (errors abort them, with pgbench's lines; `-d` lines).
    pub fn with_rules(mut self, rules: Option<Rules>) -> Self {
        self.rules = rules;
        self
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

    fn data_name(&self) -> Option<String> {
        self.data.name()
    }

    fn load_summary(&self, rows: u64) -> Option<String> {
        self.data.summary(rows)
    }

    /// Every script's single SQL statements that read or write a table,
    /// with their variables replaced by values drawn as the script draws
    /// them (client 0's `\set` commands evaluated in order, with a fixed
    /// seed), labelled as [`Workload::step_names`] names them so that
    /// plans and failures name a statement alike. A statement whose
    /// variables come from `\gset` keeps them unreplaced, and its EXPLAIN
    /// fails into the run's observer errors.
    fn explain_statements(&self) -> Vec<ExplainStatement> {
        let mut out: Vec<ExplainStatement> = Vec::new();
        for (ty, i, sql) in self.client(0, EXPLAIN_SEED).sample_statements() {
            let c = &self.scripts[ty];
            let CommandKind::Sql { sql: text, .. } = &c.script.commands[i].kind else {
                continue;
            };
            if c.simple_only[i] || !explainable(text) {
                continue;
            }
            let label = command_label(&c.script.commands[i].first_line, text);
            if out.iter().all(|e| e.label != label) {
                out.push(ExplainStatement {
                    label: label.into(),
                    sql,
                });
            }
        }
        out
    }

    /// Script `ty`'s commands by their first line, as `pgbench -r` lists
    /// them; a command whose first line names no table (`WITH x AS (`) by
    /// its first clause that does (`command_label`).
    fn step_names(&self, ty: usize) -> Vec<String> {
        self.scripts[ty]
            .script
            .commands
            .iter()
            .map(|c| match &c.kind {
                CommandKind::Sql { sql, .. } => command_label(&c.first_line, sql),
                _ => c.first_line.trim().to_string(),
            })
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
        let mut vars = Vars::default();
        let mut put = |k: &str, v: Value| vars.define(k, Var::Value(v));
        put("scale", Value::Int(self.data.scale()));
        put("client_id", Value::Int(i64::from(client_id)));
        put("random_seed", Value::Int(run_seed as i64));
        put("default_seed", Value::Int(default_seed as i64));
        for (k, v) in &self.defines {
            vars.define(k, Var::Text(v.as_str().into()));
        }
        ScriptClient::new(
            self.scripts.clone(),
            self.weights.clone(),
            self.mode,
            vars,
            client_seed,
            (client_id, self.rules),
        )
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

mod client;
mod report;
mod shell;
#[cfg(test)]
mod tests;

pub use client::{ScriptClient, ScriptInput};
pub use report::{Rules, any_aborted, run_aborted};
