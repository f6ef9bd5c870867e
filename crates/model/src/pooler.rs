//! A connection pooler between the clients and the server (`--pooler`,
//! the study key `pooler`): which one and in what mode, and what isobench
//! saw of it while a run measured.
//!
//! pgbouncer's pool modes (pgbouncer documentation, "pool_mode"): in
//! *session* mode a client keeps the server connection it was given until
//! it disconnects; in *transaction* mode it holds one only for the length
//! of a transaction, so that many more clients than server connections can
//! be served, at the price of session state (SET, prepared statements)
//! not following a client from one transaction to the next.

use serde::{Deserialize, Serialize};

/// pgbouncer's `pool_mode` (statement mode, which forbids transactions of
/// several statements, is left out: no workload here runs in it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PoolMode {
    Transaction,
    Session,
}

impl PoolMode {
    /// The value of pgbouncer's `pool_mode` setting.
    pub fn name(self) -> &'static str {
        match self {
            PoolMode::Transaction => "transaction",
            PoolMode::Session => "session",
        }
    }
}

/// What stands between the clients and the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Pooler {
    /// Nothing: the clients connect to the server.
    None,
    /// A pgbouncer isobench starts for each run, in this pool mode.
    PgBouncer(PoolMode),
}

/// pgbouncer's own default of `default_pool_size`, the server connections
/// per database and user when `pooler_size` is not given.
pub const PGBOUNCER_DEFAULT_POOL_SIZE: u32 = 20;

impl Pooler {
    /// The pgbouncer pool mode, if it is pgbouncer.
    pub fn pgbouncer(self) -> Option<PoolMode> {
        match self {
            Pooler::None => None,
            Pooler::PgBouncer(m) => Some(m),
        }
    }
}

impl std::fmt::Display for Pooler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pooler::None => write!(f, "none"),
            Pooler::PgBouncer(m) => write!(f, "pgbouncer:{}", m.name()),
        }
    }
}

impl std::str::FromStr for Pooler {
    type Err = String;

    /// `none`, `pgbouncer` (transaction mode), `pgbouncer:transaction`,
    /// `pgbouncer:session`.
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "none" => Ok(Pooler::None),
            "pgbouncer" | "pgbouncer:transaction" => Ok(Pooler::PgBouncer(PoolMode::Transaction)),
            "pgbouncer:session" => Ok(Pooler::PgBouncer(PoolMode::Session)),
            "pgbouncer:statement" => Err(
                "pgbouncer:statement: statement mode refuses transactions of several statements, \
                 which every workload runs; use pgbouncer:transaction or pgbouncer:session"
                    .into(),
            ),
            other => Err(format!(
                "unknown pooler '{other}' (use none, pgbouncer:transaction or pgbouncer:session)"
            )),
        }
    }
}

impl From<Pooler> for String {
    fn from(p: Pooler) -> String {
        p.to_string()
    }
}

impl TryFrom<String> for Pooler {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

/// What isobench saw of pgbouncer during a run's measured window: its
/// version and settings, samples of `SHOW POOLS` (every second) and the
/// difference of `SHOW STATS`'s totals between the window's start and end
/// (pgbouncer documentation, "SHOW STATS", "SHOW POOLS"), for the run's
/// database.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolerObservations {
    /// `pgbouncer --version`'s version, e.g. `1.18.0`.
    pub version: String,
    /// `pool_mode`: `transaction` or `session`.
    pub pool_mode: String,
    /// `default_pool_size`: server connections for the run's database.
    pub pool_size: u32,
    /// `SHOW POOLS` samples taken.
    pub samples: u64,
    /// Clients waiting for a server connection (`cl_waiting`), over the
    /// samples.
    pub cl_waiting: CountStatF,
    /// Clients linked to a server connection (`cl_active`).
    pub cl_active: CountStatF,
    /// Server connections linked to a client (`sv_active`).
    pub sv_active: CountStatF,
    /// Server connections idle in the pool (`sv_idle`).
    pub sv_idle: CountStatF,
    /// The longest wait of the oldest waiting client at any sample, ms
    /// (`maxwait` and `maxwait_us`).
    pub maxwait_ms: f64,
    /// Transactions pgbouncer counted in the window (`total_xact_count`):
    /// those that began in it (pgbouncer counts a transaction at its first
    /// message).
    pub xacts: u64,
    /// Queries pgbouncer counted in the window (`total_query_count`).
    pub queries: u64,
    /// Time clients spent waiting for a server connection in the window,
    /// ms (`total_wait_time`).
    pub wait_ms: f64,
    /// `wait_ms` per transaction, ms.
    pub wait_per_xact_ms: f64,
    /// `wait_ms` per query, ms.
    pub wait_per_query_ms: f64,
    /// Mean time a transaction held a server connection, ms
    /// (`total_xact_time` / `total_xact_count`).
    pub xact_time_ms: f64,
    /// Mean time a query took on the server connection, ms
    /// (`total_query_time` / `total_query_count`).
    pub query_time_ms: f64,
}

/// The mean and maximum of a gauge over samples.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CountStatF {
    pub mean: f64,
    pub max: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poolers_parse_and_print_alike() {
        for text in ["none", "pgbouncer:transaction", "pgbouncer:session"] {
            let p: Pooler = text.parse().unwrap();
            assert_eq!(p.to_string(), text);
        }
        assert_eq!(
            "pgbouncer".parse::<Pooler>().unwrap(),
            Pooler::PgBouncer(PoolMode::Transaction)
        );
        let e = "pgbouncer:statement".parse::<Pooler>().unwrap_err();
        assert!(e.contains("transaction or pgbouncer:session"), "{e}");
        let e = "odyssey".parse::<Pooler>().unwrap_err();
        assert!(e.contains("unknown pooler 'odyssey'"), "{e}");
        let json = serde_json::to_string(&Pooler::PgBouncer(PoolMode::Session)).unwrap();
        assert_eq!(json, "\"pgbouncer:session\"");
        let back: Pooler = serde_json::from_str(&json).unwrap();
        assert_eq!(back, Pooler::PgBouncer(PoolMode::Session));
    }
}
