//! Reads on standbys (`--read-from standby|any`, issue #50) and the two
//! session guarantees such reads can break, after Terry et al., "Session
//! Guarantees for Weakly Consistent Replicated Data" (PDIS 1994):
//!
//! - **read your writes**: a read sees every write its session (here: its
//!   client) committed before it;
//! - **monotonic reads**: a read sees at least what the session's
//!   earlier reads saw.
//!
//! A workload marks its read-only transactions
//! ([`WorkloadClient::read_only`]); a routed one runs on a second
//! connection of its client's session, to standby `id mod N`. Positions
//! are WAL positions (LSNs, bytes): after each transaction that commits
//! on the primary, the client reads `pg_current_wal_lsn()` on the same
//! connection (the WAL write pointer, at or past the end of its commit
//! record; `pg_current_wal_insert_lsn()` can point past a page header
//! the standby never reports replaying, notes/replication.md 2.1); before
//! each routed read it reads the standby's `pg_last_wal_replay_lsn()` in
//! a statement of its own, so the read's snapshot is at least as new. A
//! read whose replay LSN is below the client's last commit LSN breaks
//! read-your-writes; one whose position is below an earlier read's breaks
//! monotonic reads. Other sessions' WAL written between the commit and
//! `pg_current_wal_lsn()` makes the check conservative under concurrent
//! writers: it can count a read as behind that saw the client's commit
//! (measured with `remote_apply` under load: 48 % "behind", 0 % stale),
//! never the other way round. With one writing client it is exact.
//!
//! None of this runs with `--read-from primary` (the default): no extra
//! statement, no second connection.

use std::sync::Mutex;
use std::time::Instant;

use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use tokio::sync::watch;
use tokio_postgres::Config;

use super::attempt::{AfterError, Attempted, run_attempt, run_attempt_on};
use super::session::{Session, open_replica};
use crate::model::{InvariantResult, Phase, ReadFrom, Spread, Staleness};
use crate::wire::{self, Conn, SimpleMessage};
use crate::workload::{AttemptError, Ended, WorkloadClient};

/// Where read-only transactions go, with the standbys to read from.
#[derive(Debug, Clone)]
pub struct ReadRoute {
    /// [`ReadFrom::Standby`] or [`ReadFrom::Any`] (a route to the
    /// primary is no route: `None` in [`super::EngineParams::read_route`]).
    pub mode: ReadFrom,
    /// Per standby: connection settings and the index of its host in
    /// them (`Target::standby_configs`).
    pub standbys: Vec<(Config, usize)>,
    /// Clients of the run (all shards): with more than one, another
    /// session's WAL can land between a COMMIT and its position query,
    /// and the read-your-writes count is an upper bound (see the module
    /// docs); the check says so.
    pub clients: u32,
}

impl ReadRoute {
    /// Waits until every standby has the run's database (a fresh copy
    /// made on the primary just before the run, which a standby has only
    /// once it replayed its creation), at most `timeout`.
    ///
    /// Errors: a standby that refuses for another reason, or still has no
    /// such database after `timeout`.
    pub async fn wait_for_database(&self, timeout: std::time::Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        for (i, (config, host)) in self.standbys.iter().enumerate() {
            loop {
                match wire::connect_from(config, *host).await {
                    Ok((conn, _)) => {
                        conn.close().await;
                        break;
                    }
                    Err(e) if e.code() == Some(*b"3D000") && Instant::now() < deadline => {
                        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                    }
                    Err(e) => return Err(format!("standby s{}: {e}", i + 1)),
                }
            }
        }
        Ok(())
    }
}

/// The first value of the first row of `sql`, run with the simple
/// protocol; `None` for NULL or no row.
async fn scalar(conn: &mut Conn, sql: &str) -> Result<Option<String>, wire::Error> {
    let messages = conn.simple_query(sql).await?;
    Ok(messages.into_iter().find_map(|m| match m {
        SimpleMessage::Row(r) => r.get(0).map(str::to_string),
        SimpleMessage::CommandComplete(_) => None,
    }))
}

/// An LSN's text (`16/B374D848`) as a WAL position in bytes.
pub fn parse_lsn(text: &str) -> Option<u64> {
    let (hi, lo) = text.trim().split_once('/')?;
    let hi = u64::from_str_radix(hi, 16).ok()?;
    let lo = u64::from_str_radix(lo, 16).ok()?;
    Some((hi << 32) | lo)
}

/// A WAL position as PostgreSQL writes it.
pub fn format_lsn(lsn: u64) -> String {
    format!("{:X}/{:X}", lsn >> 32, lsn & 0xffff_ffff)
}

async fn lsn(conn: &mut Conn, sql: &str) -> Result<Option<u64>, wire::Error> {
    Ok(scalar(conn, sql).await?.as_deref().and_then(parse_lsn))
}

/// What one client knows of its session: its last commit's position
/// (and when COMMIT returned), the newest position a read of it saw, and
/// the draws of `--read-from any`.
pub(super) struct Position {
    /// The client's id (a pooled client's, not its session's).
    client: u32,
    last_commit: Option<(u64, Instant)>,
    last_read: Option<(u64, Seen)>,
    coin: SmallRng,
}

/// Where a read's position came from.
#[derive(Debug, Clone, Copy)]
enum Seen {
    Primary,
    Standby(usize),
}

impl Seen {
    fn name(self) -> String {
        match self {
            Seen::Primary => "the primary".into(),
            Seen::Standby(i) => format!("standby s{}", i + 1),
        }
    }
}

impl Position {
    pub(super) fn new(client: u32, seed: u64) -> Self {
        Position {
            client,
            last_commit: None,
            last_read: None,
            coin: SmallRng::seed_from_u64(seed ^ 0x2545_f491_4f6c_dd1d),
        }
    }
}

/// What the engine shares for routed reads: the route, the run's tally,
/// and the run's phase (only the measured window is counted).
pub(super) struct Reads {
    pub(super) route: ReadRoute,
    /// The run's unnamed statements, when it prepares none by name
    /// (`EngineParams::unnamed_statements`): the standby's connections
    /// use them too.
    pub(super) unnamed: Option<std::sync::Arc<crate::wire::StatementCache>>,
    tally: Mutex<ReadTally>,
    phase: watch::Receiver<Phase>,
}

impl Reads {
    pub(super) fn new(
        route: ReadRoute,
        phase: watch::Receiver<Phase>,
        unnamed: Option<std::sync::Arc<crate::wire::StatementCache>>,
    ) -> Self {
        let tally = ReadTally {
            upper_bound: route.clients > 1,
            ..ReadTally::default()
        };
        Reads {
            route,
            unnamed,
            tally: Mutex::new(tally),
            phase,
        }
    }

    /// The tally of the run so far.
    pub(super) fn tally(&self) -> ReadTally {
        self.tally.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn measuring(&self) -> bool {
        *self.phase.borrow() == Phase::Measuring
    }
}

/// Runs one attempt of `input` where `--read-from` sends it: a read-only
/// transaction on the session's standby (or, with `any`, on the primary
/// or the standby), anything else on the primary; records the positions
/// and counts the read in `reads`.
pub(super) async fn attempt<C: WorkloadClient>(
    s: &mut Session<C>,
    input: &C::Input,
    after: &impl Fn(&AttemptError) -> AfterError,
    start: Instant,
    reads: &Reads,
    pos: &mut Position,
) -> Attempted {
    let read_only = s.client.read_only(input);
    let to_standby = read_only
        && match reads.route.mode {
            ReadFrom::Primary => false,
            ReadFrom::Standby => true,
            ReadFrom::Any => pos.coin.random_bool(0.5),
        };
    if to_standby && let Some(a) = on_standby(s, input, after, start, reads, pos).await {
        return a;
    }
    // On the primary: a read of `any` records the primary's position
    // before its snapshot (for monotonic reads); a commit, its own.
    let before = if read_only {
        lsn(&mut s.conn, "SELECT pg_current_wal_lsn()")
            .await
            .ok()
            .flatten()
    } else {
        None
    };
    let mut a = run_attempt(s, input, after, start).await;
    if matches!(a.result, Ok(Ended::Committed)) {
        if read_only {
            if let Some(at) = before {
                count(reads, pos, at, Seen::Primary);
            }
        } else {
            // The latency ends at COMMIT, not after the position's query.
            a.ended_at.get_or_insert_with(Instant::now);
            if let Ok(Some(at)) = lsn(&mut s.conn, "SELECT pg_current_wal_lsn()").await {
                pos.last_commit = Some((at, Instant::now()));
            }
        }
    }
    a
}

/// The attempt on the session's standby, its connection opened again
/// first if it was lost. `None`: the session has no standby connection
/// and none could be opened (the read goes to the primary).
async fn on_standby<C: WorkloadClient>(
    s: &mut Session<C>,
    input: &C::Input,
    after: &impl Fn(&AttemptError) -> AfterError,
    start: Instant,
    reads: &Reads,
    pos: &mut Position,
) -> Option<Attempted> {
    if s.replica.as_ref().is_none_or(|r| r.conn.is_closed()) {
        let isolation = s.tx.isolation();
        let unnamed = reads.unnamed.as_ref();
        s.replica = open_replica(
            &mut s.client,
            s.id,
            &reads.route.standbys,
            isolation,
            unnamed,
        )
        .await
        .ok();
    }
    let replica = s.replica.as_mut()?;
    let replay = lsn(&mut replica.conn, "SELECT pg_last_wal_replay_lsn()").await;
    let host = reads.route.standbys[replica.standby].1;
    let replay = match replay {
        Ok(r) => r,
        Err(e) => {
            let closed = replica.conn.is_closed();
            return Some(Attempted::failed(AttemptError::body(e), host, closed));
        }
    };
    let a = run_attempt_on(
        &mut s.client,
        &mut replica.conn,
        &replica.tx,
        host,
        input,
        after,
        start,
    )
    .await;
    s.client.ran_on_standby(input);
    if let (Ok(Ended::Committed), Some(at)) = (&a.result, replay) {
        count(reads, pos, at, Seen::Standby(replica.standby));
    }
    Some(a)
}

/// Counts a read at position `at` (from `seen`) of `pos`'s client: its
/// read-your-writes check against the client's last commit (standby
/// reads only: the primary holds every commit), its monotonic-read check
/// against the client's newest read, in the measured window.
fn count(reads: &Reads, pos: &mut Position, at: u64, seen: Seen) {
    let now = Instant::now();
    let client = pos.client;
    let previous = pos.last_read;
    if previous.is_none_or(|(p, _)| at > p) {
        pos.last_read = Some((at, seen));
    }
    if !reads.measuring() {
        return;
    }
    let mut t = reads.tally.lock().unwrap_or_else(|e| e.into_inner());
    t.reads += 1;
    if let Seen::Standby(_) = seen {
        t.standby_reads += 1;
        if let Some((commit, when)) = pos.last_commit {
            t.after_write += 1;
            let behind = commit.saturating_sub(wal_aligned(at));
            let ms = if behind > 0 {
                now.duration_since(when).as_secs_f64() * 1e3
            } else {
                0.0
            };
            t.record_staleness(behind, ms);
            if behind > 0 {
                t.ryw += 1;
            }
            // One example per commit: the first read that missed it.
            if behind > 0 && t.example_commit.replace(commit) != Some(commit) {
                t.example(
                    true,
                    format!(
                        "client {client} committed up to {}; {} had replayed {} when its read began ({behind} B, {ms:.2} ms after COMMIT returned)",
                        format_lsn(commit),
                        seen.name(),
                        format_lsn(at)
                    ),
                );
            }
        }
    }
    if let Some((p, from)) = previous
        && at < p
    {
        t.mr += 1;
        t.example(
            false,
            format!(
                "client {client} read at {} on {} after reading at {} on {} ({} B back)",
                format_lsn(at),
                seen.name(),
                format_lsn(p),
                from.name(),
                p - at
            ),
        );
    }
}

/// A replay position rounded up to where the next WAL record could
/// start: records begin on 8-byte boundaries (MAXALIGN), and the replay
/// LSN is the end of the last record replayed, before its padding, while
/// the write pointer can be past the padding. Without this, a standby
/// that replayed everything looks 1 to 7 bytes behind.
fn wal_aligned(lsn: u64) -> u64 {
    lsn.div_ceil(8) * 8
}

/// The examples kept per guarantee.
const EXAMPLES: usize = 3;

/// What the routed reads of a run's measured window showed.
#[derive(Debug, Clone)]
pub struct ReadTally {
    /// Read-only transactions that committed and whose position was
    /// known: on a standby, or with `any` on the primary.
    pub reads: u64,
    /// Of them, on a standby.
    pub standby_reads: u64,
    /// Standby reads after the client's first commit: the reads the
    /// read-your-writes check examined.
    pub after_write: u64,
    /// Reads that broke read-your-writes (Terry et al. 1994): the
    /// standby had not replayed the client's last commit.
    pub ryw: u64,
    /// Reads that broke monotonic reads: a position before an earlier
    /// read's.
    pub mr: u64,
    /// Staleness of the examined standby reads: bytes of WAL the standby
    /// was behind the client's last commit (0 when it was not).
    pub stale_bytes: Histogram<u64>,
    /// Staleness in µs: time from the client's COMMIT returning to the
    /// read's start, for a read that was behind (a lower bound of how old
    /// its snapshot was), else 0.
    pub stale_us: Histogram<u64>,
    pub ryw_examples: Vec<String>,
    pub mr_examples: Vec<String>,
    /// The commit LSN the last read-your-writes example was about.
    example_commit: Option<u64>,
    /// Several clients wrote: `ryw` counts reads that may have seen
    /// their client's commit (an upper bound).
    pub upper_bound: bool,
}

impl Default for ReadTally {
    fn default() -> Self {
        // Auto-resizing (Histogram::new), lowest discernible value 1.
        let h = || Histogram::new(3).expect("3 significant figures is valid");
        ReadTally {
            reads: 0,
            standby_reads: 0,
            after_write: 0,
            ryw: 0,
            mr: 0,
            stale_bytes: h(),
            stale_us: h(),
            ryw_examples: Vec::new(),
            mr_examples: Vec::new(),
            example_commit: None,
            upper_bound: false,
        }
    }
}

impl ReadTally {
    /// Records one examined read. `record`, not `saturating_record`:
    /// the histograms resize themselves, where `saturating_record` clamps
    /// to the range they have so far (2 at first).
    fn record_staleness(&mut self, bytes: u64, ms: f64) {
        let _ = self.stale_bytes.record(bytes);
        let _ = self.stale_us.record((ms * 1e3) as u64);
    }

    fn example(&mut self, ryw: bool, text: String) {
        let v = if ryw {
            &mut self.ryw_examples
        } else {
            &mut self.mr_examples
        };
        if v.len() < EXAMPLES {
            v.push(text);
        }
    }

    /// The staleness distribution as results.json keeps it.
    pub fn spread(&self) -> Staleness {
        let of = |h: &Histogram<u64>, scale: f64| Spread {
            p50: h.value_at_quantile(0.5) as f64 / scale,
            p90: h.value_at_quantile(0.9) as f64 / scale,
            p99: h.value_at_quantile(0.99) as f64 / scale,
            max: h.max() as f64 / scale,
        };
        Staleness {
            reads: self.after_write,
            bytes: of(&self.stale_bytes, 1.0),
            ms: of(&self.stale_us, 1e3),
        }
    }

    /// The staleness distribution in one line: percentiles in ms and
    /// bytes of WAL over the examined reads.
    pub fn staleness(&self) -> String {
        if self.after_write == 0 {
            return "no standby read after a commit of its client".into();
        }
        let q = |h: &Histogram<u64>, p: f64| h.value_at_quantile(p);
        let ms = |p: f64| q(&self.stale_us, p) as f64 / 1e3;
        format!(
            "staleness ms p50 {:.2} p90 {:.2} p99 {:.2} max {:.2}; WAL bytes p50 {} p90 {} p99 {} max {}",
            ms(0.5),
            ms(0.9),
            ms(0.99),
            self.stale_us.max() as f64 / 1e3,
            q(&self.stale_bytes, 0.5),
            q(&self.stale_bytes, 0.9),
            q(&self.stale_bytes, 0.99),
            self.stale_bytes.max()
        )
    }

    /// The two guarantees as the run's anomalies: one check each, its
    /// violations, the reads it examined (`checked`, the exposure of its
    /// rate) and examples; read-your-writes carries the staleness.
    pub fn invariants(&self) -> Vec<InvariantResult> {
        let one = |name: &str, violations: u64, checked: u64, what: String, examples: &[String]| {
            let mut detail = what;
            for e in examples {
                detail.push_str("; e.g. ");
                detail.push_str(e);
            }
            InvariantResult {
                checked: Some(checked),
                ..InvariantResult::count(name, violations, detail)
            }
        };
        let mut ryw = one(
            READ_YOUR_WRITES,
            self.ryw,
            self.after_write,
            format!(
                "{} of {} standby reads after a commit of their client began before the standby replayed it{}; {}",
                self.ryw,
                self.after_write,
                if self.upper_bound {
                    " (at most: with several clients, WAL another one wrote between a COMMIT and its position query counts as not replayed)"
                } else {
                    ""
                },
                self.staleness()
            ),
            &self.ryw_examples,
        );
        ryw.staleness = (self.after_write > 0).then(|| self.spread());
        vec![
            ryw,
            one(
                MONOTONIC_READS,
                self.mr,
                self.reads,
                format!(
                    "{} of {} reads began at an older WAL position than an earlier read of their client",
                    self.mr, self.reads
                ),
                &self.mr_examples,
            ),
        ]
    }
}

pub use crate::model::{MONOTONIC_READS, READ_YOUR_WRITES};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lsns_parse_and_print_as_postgresql_writes_them() {
        assert_eq!(parse_lsn("0/3000128"), Some(0x300_0128));
        assert_eq!(parse_lsn("16/B374D848"), Some((0x16 << 32) | 0xB374_D848));
        assert_eq!(parse_lsn("nope"), None);
        assert_eq!(format_lsn((0x16 << 32) | 0xB374_D848), "16/B374D848");
    }

    #[test]
    fn a_read_behind_the_last_commit_breaks_read_your_writes() {
        let (_tx, rx) = watch::channel(Phase::Measuring);
        let reads = Reads::new(
            ReadRoute {
                mode: ReadFrom::Standby,
                standbys: Vec::new(),
                clients: 1,
            },
            rx,
            None,
        );
        let mut pos = Position::new(7, 1);
        count(&reads, &mut pos, 100, Seen::Standby(0)); // before any write
        pos.last_commit = Some((200, Instant::now()));
        count(&reads, &mut pos, 141, Seen::Standby(0)); // behind: 200 - 144 B
        pos.last_commit = Some((100_200, Instant::now()));
        count(&reads, &mut pos, 200, Seen::Standby(0)); // behind: 100000 B
        pos.last_commit = Some((200, Instant::now()));
        count(&reads, &mut pos, 200, Seen::Standby(0)); // caught up
        count(&reads, &mut pos, 120, Seen::Primary); // back in time
        let t = reads.tally();
        assert_eq!((t.reads, t.standby_reads, t.after_write), (5, 4, 3));
        assert_eq!((t.ryw, t.mr), (2, 1));
        // Kept to 3 significant figures, not clamped.
        assert!(
            t.stale_bytes.max().abs_diff(100_000) < 100,
            "{}",
            t.stale_bytes.max()
        );
        let inv = t.invariants();
        assert!(!inv[0].ok && inv[0].checked == Some(3), "{inv:?}");
        let st = inv[0]
            .staleness
            .expect("read-your-writes carries the staleness");
        assert_eq!((st.reads, st.bytes.p50), (3, 56.0));
        assert!(inv[0].detail.contains("0/C8"), "{}", inv[0].detail);
        assert!(!inv[0].detail.contains("at most"), "one client: exact");
        assert!(
            inv[1]
                .detail
                .contains("on the primary after reading at 0/C8")
        );
    }

    /// With several clients the count is an upper bound, and says so.
    #[test]
    fn several_clients_make_the_count_an_upper_bound() {
        let (_tx, rx) = watch::channel(Phase::Measuring);
        let route = ReadRoute {
            mode: ReadFrom::Any,
            standbys: Vec::new(),
            clients: 2,
        };
        let reads = Reads::new(route, rx, None);
        let mut pos = Position::new(0, 1);
        pos.last_commit = Some((400, Instant::now()));
        count(&reads, &mut pos, 200, Seen::Standby(0));
        let inv = reads.tally().invariants();
        assert!(inv[0].detail.contains("(at most:"), "{}", inv[0].detail);
    }
}
