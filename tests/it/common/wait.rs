//! Waiting on events instead of sleeping for them: a test that sleeps
//! "long enough" for something to have happened fails on a loaded machine
//! (or wastes time on an idle one). These poll what the test needs to be
//! true (a backend in a transaction, a row, a counter) with a deadline,
//! and name what never happened.

use std::time::{Duration, Instant};

use isobench::postgres::{self, ManagedServer};

/// How long any of these waits before it fails the test: far above the
/// seconds the events take on a loaded 2-core machine.
pub const WAIT_LIMIT: Duration = Duration::from_secs(60);

/// Polls `done` every 20 ms until it returns true; panics naming `what`
/// when it has not within [`WAIT_LIMIT`].
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT_LIMIT;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "waited {WAIT_LIMIT:?} for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A backend of a PostgreSQL server on this machine, read from the process
/// title PostgreSQL gives it (`postgres: USER DATABASE HOST STATE`).
#[derive(Debug, Clone)]
pub struct Backend {
    pub pid: u32,
    /// What the title says it does: "idle", "idle in transaction",
    /// "UPDATE", "UPDATE waiting", "PARSE", ...
    pub state: String,
}

impl Backend {
    /// Inside a transaction's work: a data-changing statement running (or
    /// waiting on a lock), or idle between the statements of an open
    /// transaction. A client still connecting or preparing (SET, PARSE,
    /// BIND, SHOW) is not, nor is an idle one.
    pub fn in_transaction(&self) -> bool {
        self.state.contains("in transaction")
            || ["INSERT", "UPDATE", "DELETE"]
                .iter()
                .any(|verb| self.state.starts_with(verb))
    }
}

/// The backends connected to database `db` (its exact name), on any
/// server of this machine, sorted by pid.
pub fn backends_of(db: &str) -> Vec<Backend> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmd) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let title = String::from_utf8_lossy(&cmd).replace('\0', " ");
        let words: Vec<&str> = title.split_whitespace().collect();
        if words.len() >= 4 && words[0] == "postgres:" && words[2] == db {
            found.push(Backend {
                pid,
                state: words[4..].join(" "),
            });
        }
    }
    found.sort_by_key(|b| b.pid);
    found
}

/// The run database of the `isobench run` whose process id is `isobench`
/// (not sharded): `isobench_run_PID`.
pub fn run_db(isobench: u32) -> String {
    format!("isobench_run_{isobench}")
}

/// Waits until `n` backends of database `db` that are not in `leave_out`
/// have each been seen inside a transaction ([`Backend::in_transaction`]);
/// returns their pids. With `leave_out` the backends of an earlier run,
/// this is "the next run's clients are running".
pub fn wait_for_clients_in_transactions(db: &str, n: usize, leave_out: &[u32]) -> Vec<u32> {
    let mut seen = std::collections::BTreeSet::new();
    wait_until(&format!("{n} backends of {db} inside transactions"), || {
        for b in backends_of(db) {
            if b.in_transaction() && !leave_out.contains(&b.pid) {
                seen.insert(b.pid);
            }
        }
        seen.len() >= n
    });
    seen.into_iter().collect()
}

/// Runs `sql` in database `db` of `server` on a connection of its own:
/// whether it answered `true` (as text: cast it); false when the
/// connection or the query fails (the database is not there yet, or is
/// being replaced).
pub fn query_true(server: &ManagedServer, db: &str, sql: &str) -> bool {
    try_query_text(server, db, &format!("SELECT ({sql})::text")).is_ok_and(|t| t == "true")
}

/// Waits until `sql` in database `db` of `server` answers true (see
/// [`query_true`]); panics naming `what` after [`WAIT_LIMIT`].
pub fn wait_for_query(server: &ManagedServer, db: &str, sql: &str, what: &str) {
    wait_until(what, || query_true(server, db, sql));
}

/// Runs `sql` in database `db` of `server` and returns its one value,
/// which the query casts to text; panics when it fails.
pub fn query_text(server: &ManagedServer, db: &str, sql: &str) -> String {
    try_query_text(server, db, sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// As [`query_text`], with the failure (no connection, a missing table)
/// as an error to wait past.
pub fn try_query_text(server: &ManagedServer, db: &str, sql: &str) -> Result<String, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = postgres::connect(&server.config(db))
            .await
            .map_err(|e| e.to_string())?;
        let row = client
            .query_one(sql, &[])
            .await
            .map_err(|e| e.to_string())?;
        row.try_get(0).map_err(|e| e.to_string())
    })
}
