//! The open-files limit a run's connections need. Every connection is a
//! file descriptor: isobench's clients' (one per client without an
//! application pool), and pgbouncer's, which inherits isobench's limits
//! and holds one per client plus its server connections. Debian's default
//! soft limit is 1,024 (a hard limit of 524,288 under systemd), so 10,000
//! clients need the soft limit raised; this raises it up to the hard
//! limit, as a process may without privileges (`setrlimit(2)`).
//!
//! The limit is per process, which is how more clients than it allows
//! still run on one machine: split over shard processes (`--shard`), each
//! holding its share of the clients, behind several pgbouncer processes
//! (`--pooler-processes`), each holding its share of every shard's
//! clients (docs/src/reference/pgbouncer.md, "Several pgbouncer
//! processes").

use nix::sys::resource::{Resource, getrlimit, setrlimit};

use crate::model::{Cell, ShardSpec};
use crate::postgres::pgbouncer;

/// Descriptors besides the connections: the runtime, the observers'
/// and checks' connections, the results store, logs.
const SPARE: u64 = 256;

/// What the processes of one machine's share of a study hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Needs {
    /// This isobench process: its clients' connections (or its
    /// application pool's) and `SPARE`.
    pub isobench: u64,
    /// Each pgbouncer process this one starts (none: 0): its share of
    /// every shard's client connections, with a twentieth more for the
    /// kernel's uneven spread over processes, its server connections and
    /// [`pgbouncer::OWN_FILES`].
    pub pgbouncer: u64,
    /// What pgbouncer would like (its `max_client_conn` with a quarter
    /// more room, see [`pgbouncer::max_client_conn`]): the soft limit is
    /// raised this far when the hard limit allows.
    pub pgbouncer_room: u64,
}

/// The busiest of `cells` for shard `shard` of the study (`None`: not
/// sharded) with `processes` pgbouncer processes per run. pgbouncer is
/// started by an unsharded process or shard 0, and holds the client
/// connections of every shard.
pub fn open_files_needed(cells: &[Cell], shard: Option<ShardSpec>, processes: u32) -> Needs {
    let shards = shard.map_or(1, |s| s.count);
    let starts_pgbouncer = shard.is_none_or(|s| s.index == 0);
    let processes = processes.max(1);
    let mut needs = Needs {
        isobench: 0,
        pgbouncer: 0,
        pgbouncer_room: 0,
    };
    for c in cells {
        let own = match c.pool_size {
            Some(pool) => pool,
            None => shard.map_or(c.clients, |s| s.clients(c.clients)),
        };
        needs.isobench = needs.isobench.max(u64::from(own) + SPARE);
        if c.pooler.and_then(|p| p.pgbouncer()).is_none() || !starts_pgbouncer {
            continue;
        }
        let clients = match c.pool_size {
            Some(pool) => pool * shards,
            None => c.clients,
        };
        let each = u64::from(pgbouncer::share(clients, processes, 0));
        let pool = u64::from(pgbouncer::share(c.server_connections(), processes, 0));
        let spread = if processes > 1 { each / 20 } else { 0 };
        needs.pgbouncer = needs
            .pgbouncer
            .max(each + spread + pool + pgbouncer::OWN_FILES);
        let room = u64::from(pgbouncer::max_client_conn(clients, processes, 0, u64::MAX));
        needs.pgbouncer_room = needs.pgbouncer_room.max(room + pool + pgbouncer::OWN_FILES);
    }
    needs
}

/// Raises this process's soft limit of open files (`RLIMIT_NOFILE`) to
/// what `cells` need in shard `shard` with `processes` pgbouncer
/// processes, up to the hard limit; children (pgbouncer, the server)
/// inherit it.
///
/// Errors: the hard limit is lower than isobench's or a pgbouncer
/// process's need (the message says which, how much, and the ways out:
/// a higher limit, more shard processes, more pgbouncer processes), or
/// the limit cannot be read or set.
pub fn raise_open_files(
    cells: &[Cell],
    shard: Option<ShardSpec>,
    processes: u32,
) -> Result<(), String> {
    let needs = open_files_needed(cells, shard, processes);
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)
        .map_err(|e| format!("reading the open-files limit: {e}"))?;
    check(cells, shard, processes, needs, hard)?;
    let want = needs
        .isobench
        .max(needs.pgbouncer)
        .max(needs.pgbouncer_room.min(hard));
    if soft >= want {
        return Ok(());
    }
    setrlimit(Resource::RLIMIT_NOFILE, want, hard)
        .map_err(|e| format!("raising the open-files limit to {want}: {e}"))
}

/// Refuses `needs` above the hard limit `hard`, naming the process that
/// would run out and what to do.
fn check(
    cells: &[Cell],
    shard: Option<ShardSpec>,
    processes: u32,
    needs: Needs,
    hard: u64,
) -> Result<(), String> {
    let clients = cells.iter().map(|c| c.clients).max().unwrap_or(0);
    let raise = "raise it (as root `ulimit -Hn N` in the shell that starts isobench, or LimitNOFILE= / nofile \
                 in /etc/security/limits.conf)";
    if needs.isobench > hard {
        let per_process = hard.saturating_sub(SPARE).max(1);
        let shards = u64::from(clients).div_ceil(per_process);
        let now = shard.map_or("one process".to_string(), |s| {
            format!("each of {} shard processes", s.count)
        });
        return Err(format!(
            "--clients {clients}: {now} needs about {} open files (a connection per client) and the hard limit \
             is {hard}; {raise}, or split the clients over {shards} or more processes (--shard I/N, each holding \
             its share; see \"Sharded runs\"), or use an application pool (--pool-size)",
            needs.isobench
        ));
    }
    if needs.pgbouncer > hard {
        let more = (1..=64u32)
            .find(|&p| {
                let n = open_files_needed(cells, shard, p);
                n.pgbouncer <= hard
            })
            .map_or("more".to_string(), |p| p.to_string());
        return Err(format!(
            "--clients {clients} through pgbouncer: each of {processes} pgbouncer process(es) needs about {} \
             open files (a connection per client of its share, and its server connections) and the hard limit \
             is {hard}; {raise}, or run {more} pgbouncer processes on one port (--pooler-processes {more})",
            needs.pgbouncer
        ));
    }
    Ok(())
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

    const OWN: u64 = pgbouncer::OWN_FILES;

    #[test]
    fn the_busiest_cell_sets_the_open_files_needed() {
        let tx = Some(Pooler::PgBouncer(PoolMode::Transaction));
        let need = |cells: &[Cell]| open_files_needed(cells, None, 1);
        assert_eq!(need(&[cell(16, None, None, None)]).isobench, 16 + SPARE);
        // An application pool: only its connections.
        assert_eq!(
            need(&[cell(10_000, Some(50), None, None)]).isobench,
            50 + SPARE
        );
        // Behind pgbouncer: its clients and its server connections.
        let cells = [
            cell(50_000, None, tx, Some(50)),
            cell(100, None, None, None),
        ];
        assert_eq!(need(&cells).isobench, 50_000 + SPARE);
        assert_eq!(need(&cells).pgbouncer, 50_050 + OWN);
        assert_eq!(need(&[cell(10, None, tx, None)]).pgbouncer, 30 + OWN);
    }

    /// Issue #51: 50,000 clients under a hard limit of 20,000 open files:
    /// 3 shards hold 16,667 + 16,667 + 16,666 connections, 4 pgbouncer
    /// processes 12,500 each (+ 625 for the uneven spread) and 13 of the
    /// 50 server connections; shard 0 starts them, the others do not.
    #[test]
    fn fifty_thousand_clients_fit_in_shards_and_pgbouncer_processes() {
        let tx = Some(Pooler::PgBouncer(PoolMode::Transaction));
        let cells = [cell(50_000, None, tx, Some(50))];
        let s = |i| Some(ShardSpec::new(i, 3).unwrap());
        let n0 = open_files_needed(&cells, s(0), 4);
        assert_eq!(n0.isobench, 16_667 + SPARE);
        assert_eq!(n0.pgbouncer, 12_500 + 625 + 13 + OWN);
        assert_eq!(n0.pgbouncer_room, 12_500 + 3_125 + 100 + 13 + OWN);
        assert!(check(&cells, s(0), 4, n0, 20_000).is_ok());
        let n2 = open_files_needed(&cells, s(2), 4);
        assert_eq!((n2.isobench, n2.pgbouncer), (16_666 + SPARE, 0));
        // One process for all: refused, naming the way out.
        let one = open_files_needed(&cells, None, 1);
        let e = check(&cells, None, 1, one, 20_000).unwrap_err();
        assert!(
            e.contains("one process needs about 50256 open files"),
            "{e}"
        );
        assert!(e.contains("over 3 or more processes"), "{e}");
        // Three shards behind one pgbouncer: pgbouncer runs out.
        let e = check(&cells, s(0), 1, open_files_needed(&cells, s(0), 1), 20_000).unwrap_err();
        assert!(
            e.contains("each of 1 pgbouncer process(es) needs about 50082"),
            "{e}"
        );
        assert!(e.contains("--pooler-processes 3"), "{e}");
    }

    #[test]
    fn a_limit_already_high_enough_is_left_alone() {
        let (soft, _) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        raise_open_files(&[cell(1, None, None, None)], None, 1).unwrap();
        assert_eq!(getrlimit(Resource::RLIMIT_NOFILE).unwrap().0, soft);
    }
}
