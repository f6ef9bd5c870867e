//! The open-files limit a run's connections need. Every connection is a
//! file descriptor: isobench's clients' (one per client without an
//! application pool), and pgbouncer's, which inherits isobench's limits
//! and holds one per client plus its server connections. Debian's default
//! soft limit is 1,024 (a hard limit of 524,288 under systemd), so 10,000
//! clients need the soft limit raised; this raises it up to the hard
//! limit, as a process may without privileges (`setrlimit(2)`).

use nix::sys::resource::{Resource, getrlimit, setrlimit};

use crate::model::Cell;

/// Descriptors besides the connections: the runtime, the observers'
/// and checks' connections, the results store, logs.
const SPARE: u64 = 256;

/// The descriptors the busiest of `cells` needs in one process: its
/// clients' connections (or the application pool's), and behind
/// pgbouncer, in pgbouncer, those again plus its server connections.
pub fn open_files_needed(cells: &[Cell]) -> u64 {
    cells
        .iter()
        .map(|c| {
            let clients = u64::from(c.pool_size.unwrap_or(c.clients));
            let pooler = match c.pooler.and_then(|p| p.pgbouncer()) {
                Some(_) => clients + u64::from(c.server_connections()),
                None => 0,
            };
            clients.max(pooler)
        })
        .max()
        .unwrap_or(0)
        + SPARE
}

/// Raises this process's soft limit of open files (`RLIMIT_NOFILE`) to
/// what `cells` need, up to the hard limit; children (pgbouncer, the
/// server) inherit it.
///
/// Errors: the hard limit is lower than needed (the message names both
/// and how to raise it), or the limit cannot be read or set.
pub fn raise_open_files(cells: &[Cell]) -> Result<(), String> {
    let need = open_files_needed(cells);
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)
        .map_err(|e| format!("reading the open-files limit: {e}"))?;
    if soft >= need {
        return Ok(());
    }
    if hard < need {
        let clients = cells.iter().map(|c| c.clients).max().unwrap_or(0);
        return Err(format!(
            "--clients {clients}: the runs need about {need} open files (a connection each, in isobench and in \
             pgbouncer) and the hard limit is {hard}; raise it (as root `ulimit -Hn {need}` in the shell that \
             starts isobench, or LimitNOFILE= / nofile in /etc/security/limits.conf), or use fewer clients or an \
             application pool (--pool-size)"
        ));
    }
    setrlimit(Resource::RLIMIT_NOFILE, need, hard)
        .map_err(|e| format!("raising the open-files limit to {need}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Isolation, PoolMode, Pooler};

    fn cell(clients: u32, pool: Option<u32>, pooler: Option<Pooler>, size: Option<u32>) -> Cell {
        Cell {
            workload: "tpcb".into(),
            isolation: Isolation::ReadCommitted,
            strategy: String::new(),
            params: Default::default(),
            clients,
            scale: None,
            pool_size: pool,
            rate: None,
            max_tries: None,
            settings: Default::default(),
            pg_bin: None,
            fault_plan: None,
            work_factor: None,
            pooler,
            pooler_size: size,
        }
    }

    #[test]
    fn the_busiest_cell_sets_the_open_files_needed() {
        let tx = Some(Pooler::PgBouncer(PoolMode::Transaction));
        assert_eq!(open_files_needed(&[cell(16, None, None, None)]), 16 + SPARE);
        // An application pool: only its connections.
        assert_eq!(
            open_files_needed(&[cell(10_000, Some(50), None, None)]),
            50 + SPARE
        );
        // Behind pgbouncer: its clients and its server connections.
        let cells = [
            cell(50_000, None, tx, Some(50)),
            cell(100, None, None, None),
        ];
        assert_eq!(open_files_needed(&cells), 50_050 + SPARE);
        assert_eq!(open_files_needed(&[cell(10, None, tx, None)]), 30 + SPARE);
    }

    #[test]
    fn a_limit_already_high_enough_is_left_alone() {
        let (soft, _) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        raise_open_files(&[cell(1, None, None, None)]).unwrap();
        assert_eq!(getrlimit(Resource::RLIMIT_NOFILE).unwrap().0, soft);
    }
}
