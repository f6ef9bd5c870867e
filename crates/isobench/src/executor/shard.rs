//! Sharded studies: one study run from N processes (Kubernetes Indexed
//! Job pods, Slurm tasks, plain processes) against one external server,
//! coordinated through a small `isobench_coord` schema in the database the
//! DSN names; no coordinator process and no extra port
//! (docs/src/reference/sharded-runs.md).
//!
//! Per run: shard 0 prepares the run's database and marks the run
//! prepared; every shard connects its clients, registers, and waits; once
//! all N registered, shard 0 sets the start instant, `clock_timestamp() +
//! 1 s` by the server's clock; every shard sleeps until that instant by
//! its own offset to the server's clock (measured by round trips), so
//! client clock skew does not matter. After its window each shard marks
//! the run ended (with its clients' lifetime counts); shard 0 waits for
//! every shard, checks the invariants once, and marks the run done.
//! Nothing is queried during the measured window.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Result, anyhow};
use tokio_postgres::Client;
use tokio_util::sync::CancellationToken;

use crate::model::{Lifetime, ShardSpec};
use crate::postgres::{self, Target};

/// The schema of the coordination tables, in the DSN's database.
pub const SCHEMA: &str = "isobench_coord";

/// How often a waiting shard polls the coordination tables.
const POLL: Duration = Duration::from_millis(50);

/// How often a waiting shard looks for shard 0's session.
const LEAD_CHECK: Duration = Duration::from_secs(1);

/// The advisory lock key shard 0 holds for study `study` (its 16 hex
/// digits as a bigint; another key when they do not parse).
fn lead_lock_key(study: &str) -> i64 {
    u64::from_str_radix(study, 16).unwrap_or(0x150b_e4c4) as i64
}

/// How far ahead of the moment every shard registered the start instant
/// is set, by the server's clock: room for every shard to see it (one
/// poll) and sleep until it.
const LEAD: &str = "1 second";

/// The tables (created by shard 0; `IF NOT EXISTS`, so a rerun reuses
/// them). `runs`: one row per (study, run) that shard 0 prepared, with
/// where its pgbouncer listens when the run's cell has one;
/// `members`: one row per (study, run, shard) that registered, keyed so a
/// restarted shard's registration replaces nothing.
const DDL: &str = "CREATE SCHEMA IF NOT EXISTS isobench_coord;
CREATE TABLE IF NOT EXISTS isobench_coord.runs (
    study text NOT NULL,
    run integer NOT NULL,
    prepared_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    start_at timestamptz,
    failed text,
    done boolean NOT NULL DEFAULT false,
    PRIMARY KEY (study, run));
CREATE TABLE IF NOT EXISTS isobench_coord.members (
    study text NOT NULL,
    run integer NOT NULL,
    shard integer NOT NULL,
    registered_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    ended_at timestamptz,
    committed bigint,
    unknown_outcome bigint,
    ledger bytea,
    PRIMARY KEY (study, run, shard));
ALTER TABLE isobench_coord.members ADD COLUMN IF NOT EXISTS ledger bytea;
ALTER TABLE isobench_coord.runs ADD COLUMN IF NOT EXISTS pooler text;";

/// What the other shards sent when they ended a run ([`Coord::await_ended`]).
pub struct Ended {
    /// Their clients' lifetime counts, added up.
    pub lifetime: Lifetime,
    /// Their client ledgers as sent (the workload's ledger as JSON), by
    /// shard index.
    pub ledgers: Vec<(u32, Vec<u8>)>,
    /// The shards that did not end in time, as text ("1, 3"); empty when
    /// none.
    pub missing: String,
}

/// The id of a study that every shard computes alike from what it plans
/// (`key`: the planned runs, the seed, the durations): 16 hex digits of
/// FNV-1a 64. Names the run and template databases and keys the
/// coordination rows.
pub fn study_id(key: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// What a non-zero shard does with a run ([`Coord::await_prepared`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Join {
    /// Shard 0 prepared it: connect the clients and go to the barrier.
    Join,
    /// It started, ended or failed without this shard (a restarted or late
    /// shard): skip it, with why.
    Skip(String),
}

/// This shard's connection to the coordination tables.
pub struct Coord {
    client: Client,
    study: String,
    pub spec: ShardSpec,
    /// `--shard-wait`.
    wait: Duration,
    /// When this shard last saw shard 0 alive (its advisory lock held, or
    /// a run it started).
    lead_seen: std::sync::Mutex<Option<Instant>>,
}

/// An error of a coordination query, as text.
fn pg(e: &tokio_postgres::Error) -> String {
    postgres::error_text(e)
}

/// Whether `e` says the coordination tables do not exist yet (shard 0
/// has not created them).
fn not_yet(e: &tokio_postgres::Error) -> bool {
    e.code().is_some_and(|c| {
        *c == tokio_postgres::error::SqlState::UNDEFINED_TABLE
            || *c == tokio_postgres::error::SqlState::INVALID_SCHEMA_NAME
    })
}

impl Coord {
    /// Connects to the database `target` names for shard `spec` of study
    /// `study`; shard 0 creates the tables and clears the rows an earlier,
    /// interrupted study of the same id left.
    ///
    /// Errors: the server cannot be reached, or shard 0 cannot create the
    /// schema (the role needs CREATE on the database).
    pub async fn open(
        target: &Target,
        spec: ShardSpec,
        study: String,
        wait: Duration,
    ) -> Result<Self> {
        let mut config = target.config(&target.admin_db());
        postgres::own_session(&mut config, &format!("shard-{}", spec.index));
        let client = postgres::connect(&config).await?;
        if spec.index == 0 {
            // Held for the session's life: the other shards see shard 0
            // alive while it is (`await_prepared`). Another shard 0 of the
            // same study (a second process, or a dead one whose session the
            // server has not noticed yet) holds it: wait --shard-wait, then
            // say so instead of hanging.
            let began = Instant::now();
            loop {
                let got: bool = client
                    .query_one("SELECT pg_try_advisory_lock($1)", &[&lead_lock_key(&study)])
                    .await
                    .map_err(|e| anyhow!("taking shard 0's advisory lock: {}", pg(&e)))?
                    .get(0);
                if got {
                    break;
                }
                if began.elapsed() >= wait {
                    return Err(anyhow!(
                        "another shard 0 of study {study} holds its lock on this server \
                         (waited --shard-wait {}s): stop that process, or wait until the \
                         server ends its session, then start this one again",
                        wait.as_secs()
                    ));
                }
                tokio::time::sleep(POLL).await;
            }
            client.batch_execute(DDL).await.map_err(|e| {
                anyhow!(
                    "creating the coordination schema {SCHEMA} in database {}: {} (shard 0 needs CREATE on it)",
                    target.admin_db(),
                    pg(&e)
                )
            })?;
            for table in ["runs", "members"] {
                client
                    .execute(
                        &format!("DELETE FROM {SCHEMA}.{table} WHERE study = $1"),
                        &[&study],
                    )
                    .await
                    .map_err(|e| anyhow!("clearing {SCHEMA}.{table}: {}", pg(&e)))?;
            }
        }
        Ok(Coord {
            client,
            study,
            spec,
            wait,
            lead_seen: std::sync::Mutex::new(None),
        })
    }

    /// Shard 0: run `run`'s database is ready (and its pgbouncer, which
    /// listens where `pooler` says); the other shards may connect (a row
    /// left by an earlier attempt is reset).
    pub async fn prepared(&self, run: u32, pooler: Option<&str>) -> Result<()> {
        self.client
            .execute(
                "INSERT INTO isobench_coord.runs (study, run, pooler) VALUES ($1, $2, $3)
                 ON CONFLICT (study, run) DO UPDATE
                   SET prepared_at = clock_timestamp(), start_at = NULL, failed = NULL, done = false,
                       pooler = excluded.pooler",
                &[&self.study, &(run as i32), &pooler],
            )
            .await
            .map_err(|e| anyhow!("marking run {run} prepared: {}", pg(&e)))?;
        self.client
            .execute(
                "DELETE FROM isobench_coord.members WHERE study = $1 AND run = $2",
                &[&self.study, &(run as i32)],
            )
            .await
            .map_err(|e| anyhow!("clearing run {run}'s members: {}", pg(&e)))?;
        Ok(())
    }

    /// Where shard 0's pgbouncer for run `run` listens, as it published
    /// it with the run ([`Coord::prepared`]); `None`: it has none.
    pub async fn pooler(&self, run: u32) -> Result<Option<String>> {
        let row = self
            .client
            .query_opt(
                "SELECT pooler FROM isobench_coord.runs WHERE study = $1 AND run = $2",
                &[&self.study, &(run as i32)],
            )
            .await
            .map_err(|e| anyhow!("reading run {run}'s pgbouncer: {}", pg(&e)))?;
        Ok(row.and_then(|r| r.get(0)))
    }

    /// A non-zero shard: waits until shard 0 prepared run `run` (no time
    /// limit while shard 0 is alive: loading the data may take long;
    /// Ctrl-C ends it), or says to skip it when it already started, ended
    /// or failed, or shard 0 is past it. `None`: cancelled.
    ///
    /// Shard 0 holds an advisory lock on the study's id for as long as its
    /// coordination session lives; once this shard has seen it held, the
    /// lock missing for `--shard-wait` means shard 0 died and no
    /// restarted shard 0 came back.
    ///
    /// Errors: shard 0 gone (as above); a coordination query failed (other
    /// than the tables not existing yet).
    pub async fn await_prepared(
        &self,
        run: u32,
        cancel: &CancellationToken,
    ) -> Result<Option<Join>> {
        let key = lead_lock_key(&self.study);
        // Shard 0's session is looked for once a second.
        let mut checked = Instant::now()
            .checked_sub(LEAD_CHECK)
            .unwrap_or_else(Instant::now);
        loop {
            if checked.elapsed() >= LEAD_CHECK {
                checked = Instant::now();
                if self.lead_alive(key).await? {
                    self.saw_lead();
                } else if let Some(seen) = *self.lead_seen.lock().unwrap_or_else(|e| e.into_inner())
                    && seen.elapsed() >= self.wait
                {
                    return Err(anyhow!(
                        "shard 0 is gone: its coordination session ended {:.0} s ago (it ended the study without this \
                         shard, or died) and no shard 0 came back within --shard-wait; this shard stops before \
                         run {run} (restart the study with every shard)",
                        seen.elapsed().as_secs_f64()
                    ));
                }
            }
            let rows = self
                .client
                .query(
                    "SELECT run, start_at IS NOT NULL, failed, done FROM isobench_coord.runs
                      WHERE study = $1 AND run >= $2 ORDER BY run LIMIT 2",
                    &[&self.study, &(run as i32)],
                )
                .await;
            match rows {
                Ok(rows) => {
                    if let Some(r) = rows.first() {
                        let (at, started, failed, done): (i32, bool, Option<String>, bool) =
                            (r.get(0), r.get(1), r.get(2), r.get(3));
                        if at as u32 != run || rows.len() > 1 {
                            return Ok(Some(Join::Skip(format!("shard 0 is past run {run}"))));
                        }
                        if let Some(f) = failed {
                            return Ok(Some(Join::Skip(format!("run {run} ended for all: {f}"))));
                        }
                        if started || done {
                            return Ok(Some(Join::Skip(format!(
                                "run {run} started without this shard; it joins the next run"
                            ))));
                        }
                        return Ok(Some(Join::Join));
                    }
                }
                Err(e) if not_yet(&e) => {}
                Err(e) => return Err(anyhow!("waiting for run {run} to be prepared: {}", pg(&e))),
            }
            tokio::select! {
                _ = tokio::time::sleep(POLL) => {}
                _ = cancel.cancelled() => return Ok(None),
            }
        }
    }

    /// Shard 0 is alive now.
    fn saw_lead(&self) {
        *self.lead_seen.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
    }

    /// Whether shard 0's session holds the study's advisory lock
    /// (`pg_locks` shows a bigint key as classid = high and objid = low
    /// 32 bits, objsubid 1).
    async fn lead_alive(&self, key: i64) -> Result<bool> {
        let (hi, lo) = ((key as u64 >> 32) as u32, key as u64 as u32);
        let row = self
            .client
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
                   AND classid::bigint = $1 AND objid::bigint = $2 AND objsubid = 1
                   AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))",
                &[&i64::from(hi), &i64::from(lo)],
            )
            .await
            .map_err(|e| anyhow!("looking for shard 0's session: {}", pg(&e)))?;
        Ok(row.get(0))
    }

    /// The start barrier of run `run`: registers this shard and waits for
    /// the start instant, then sleeps until it by this machine's offset to
    /// the server's clock. Shard 0 waits (at most `--shard-wait`) for all
    /// N shards, then sets the instant `clock_timestamp() + 1 s`, or ends
    /// the run for all naming the missing shards. Returns the instant as
    /// Unix time (s, the server's clock) and the measured offset and
    /// round trip.
    ///
    /// Errors: a shard missing (the message names it), shard 0 not
    /// starting the run within `--shard-wait` + 10 s, a failed query.
    pub async fn barrier(&self, run: u32) -> std::result::Result<Barrier, String> {
        let (study, r) = (&self.study, run as i32);
        let shard = self.spec.index as i32;
        let began = Instant::now();
        let register = || async {
            self.client
                .execute(
                    "INSERT INTO isobench_coord.members (study, run, shard) VALUES ($1, $2, $3)
                     ON CONFLICT (study, run, shard) DO NOTHING",
                    &[study, &r, &shard],
                )
                .await
                .map_err(|e| format!("registering at run {run}'s barrier: {}", pg(&e)))
        };
        register().await?;
        let start_at: f64 = if self.spec.index == 0 {
            let n = self.spec.count as usize;
            loop {
                let row = self
                    .client
                    .query_one(
                        "SELECT coalesce(array_agg(shard ORDER BY shard), '{}') FROM isobench_coord.members
                          WHERE study = $1 AND run = $2",
                        &[study, &r],
                    )
                    .await
                    .map_err(|e| format!("reading run {run}'s barrier: {}", pg(&e)))?;
                let present: Vec<i32> = row.get(0);
                if present.len() >= n {
                    break;
                }
                if began.elapsed() >= self.wait {
                    let missing = missing_shards(&present, self.spec.count);
                    let msg = format!(
                        "shard(s) {} missing at run {run}'s start barrier after --shard-wait {} s: the run ended for all shards",
                        missing,
                        self.wait.as_secs_f64()
                    );
                    let _ = self
                        .client
                        .execute(
                            "UPDATE isobench_coord.runs SET failed = $3 WHERE study = $1 AND run = $2",
                            &[study, &r, &msg],
                        )
                        .await;
                    return Err(msg);
                }
                tokio::time::sleep(POLL).await;
            }
            let row = self
                .client
                .query_one(
                    &format!(
                        "UPDATE isobench_coord.runs SET start_at = clock_timestamp() + interval '{LEAD}'
                          WHERE study = $1 AND run = $2
                          RETURNING extract(epoch FROM start_at)::float8"
                    ),
                    &[study, &r],
                )
                .await
                .map_err(|e| format!("setting run {run}'s start: {}", pg(&e)))?;
            row.get(0)
        } else {
            let limit = self.wait + Duration::from_secs(10);
            loop {
                let row = self
                    .client
                    .query_opt(
                        "SELECT extract(epoch FROM start_at)::float8, failed FROM isobench_coord.runs
                          WHERE study = $1 AND run = $2",
                        &[study, &r],
                    )
                    .await
                    .map_err(|e| format!("reading run {run}'s barrier: {}", pg(&e)))?;
                match row {
                    Some(row) => {
                        if let Some(f) = row.get::<_, Option<String>>(1) {
                            return Err(f);
                        }
                        if let Some(at) = row.get::<_, Option<f64>>(0) {
                            self.saw_lead();
                            break at;
                        }
                    }
                    None => {
                        return Err(format!(
                            "run {run} is no longer in {SCHEMA}: shard 0 restarted it"
                        ));
                    }
                }
                if began.elapsed() >= limit {
                    return Err(format!(
                        "shard 0 did not start run {run} within {} s (--shard-wait + 10 s)",
                        limit.as_secs_f64()
                    ));
                }
                // Registered again every poll: shard 0 clears the rows of
                // an earlier attempt when it (re)prepares the run.
                register().await?;
                tokio::time::sleep(POLL).await;
            }
        };
        let (offset_s, rtt_s) = self.clock_offset().await?;
        // The instant by this machine's clock.
        let local = start_at - offset_s;
        let now = unix_now();
        let late_s = (now - local).max(0.0);
        if local > now {
            tokio::time::sleep(Duration::from_secs_f64(local - now)).await;
        }
        Ok(Barrier {
            start_at,
            offset_s,
            rtt_s,
            late_s,
            waited_s: began.elapsed().as_secs_f64(),
        })
    }

    /// This machine's clock's offset to the server's (server - local, s)
    /// and the round trip it was measured with: the sample with the
    /// shortest of 5 round trips of `SELECT clock_timestamp()`, the server
    /// time taken as read at the middle of the round trip.
    async fn clock_offset(&self) -> std::result::Result<(f64, f64), String> {
        let mut best: Option<(f64, f64)> = None;
        for _ in 0..5 {
            let sent = unix_now();
            let row = self
                .client
                .query_one("SELECT extract(epoch FROM clock_timestamp())::float8", &[])
                .await
                .map_err(|e| format!("reading the server's clock: {}", pg(&e)))?;
            let got = unix_now();
            let server: f64 = row.get(0);
            let rtt = got - sent;
            let offset = server - (sent + rtt / 2.0);
            if best.is_none_or(|(_, r)| rtt < r) {
                best = Some((offset, rtt));
            }
        }
        Ok(best.expect("five samples"))
    }

    /// This shard ended run `run`, with its clients' `lifetime` counts
    /// (shard 0 adds them up for the invariant checks).
    pub async fn ended(&self, run: u32, lifetime: Lifetime, ledger: Option<&[u8]>) -> Result<()> {
        self.client
            .execute(
                "INSERT INTO isobench_coord.members (study, run, shard, ended_at, committed, unknown_outcome, ledger)
                 VALUES ($1, $2, $3, clock_timestamp(), $4, $5, $6)
                 ON CONFLICT (study, run, shard) DO UPDATE
                   SET ended_at = excluded.ended_at, committed = excluded.committed,
                       unknown_outcome = excluded.unknown_outcome, ledger = excluded.ledger",
                &[
                    &self.study,
                    &(run as i32),
                    &(self.spec.index as i32),
                    &(lifetime.committed as i64),
                    &(lifetime.unknown_outcome as i64),
                    &ledger,
                ],
            )
            .await
            .map_err(|e| anyhow!("marking run {run} ended: {}", postgres::error_text(&e)))?;
        Ok(())
    }

    /// Shard 0, after its own clients ended run `run`: waits (at most
    /// `--shard-wait`) for every other shard to end it. Returns what the
    /// other shards that ended sent: their lifetime counts added up and
    /// their client ledgers (as [`Coord::ended`] got them, by shard), and
    /// the shards that did not end in time (as text, empty when none).
    pub async fn await_ended(&self, run: u32) -> Result<Ended> {
        const ENDED: &str = "FROM isobench_coord.members
                      WHERE study = $1 AND run = $2 AND ended_at IS NOT NULL AND shard <> 0";
        let err =
            |e: tokio_postgres::Error| anyhow!("waiting for run {run}'s shards to end: {}", pg(&e));
        let began = Instant::now();
        // Poll on a count; the ledgers, which can be large, are read once.
        loop {
            let row = self
                .client
                .query_one(
                    &format!("SELECT count(*) {ENDED}"),
                    &[&self.study, &(run as i32)],
                )
                .await
                .map_err(err)?;
            let ended = row.get::<_, i64>(0) as usize;
            if ended + 1 >= self.spec.count as usize || began.elapsed() >= self.wait {
                break;
            }
            tokio::time::sleep(POLL).await;
        }
        // In shard order, so that a merged history is the same each time.
        let rows = self
            .client
            .query(
                &format!(
                    "SELECT shard, coalesce(committed, 0), coalesce(unknown_outcome, 0), ledger {ENDED} ORDER BY shard"
                ),
                &[&self.study, &(run as i32)],
            )
            .await
            .map_err(err)?;
        let mut lifetime = Lifetime::default();
        let mut ledgers = Vec::new();
        let mut all = vec![0];
        for r in &rows {
            let shard = r.get::<_, i32>(0);
            all.push(shard);
            lifetime.committed += r.get::<_, i64>(1) as u64;
            lifetime.unknown_outcome += r.get::<_, i64>(2) as u64;
            if let Some(l) = r.get::<_, Option<Vec<u8>>>(3) {
                ledgers.push((shard as u32, l));
            }
        }
        Ok(Ended {
            lifetime,
            ledgers,
            missing: missing_shards(&all, self.spec.count),
        })
    }

    /// Shard 0: run `run` is over (checked and saved).
    pub async fn done(&self, run: u32) -> Result<()> {
        self.client
            .execute(
                "UPDATE isobench_coord.runs SET done = true WHERE study = $1 AND run = $2",
                &[&self.study, &(run as i32)],
            )
            .await
            .map_err(|e| anyhow!("marking run {run} done: {}", pg(&e)))?;
        Ok(())
    }

    /// Shard 0, at the end of the study: drops the coordination schema.
    pub async fn drop_schema(&self) -> Result<()> {
        self.client
            .batch_execute(&format!("DROP SCHEMA IF EXISTS {SCHEMA} CASCADE"))
            .await
            .map_err(|e| anyhow!("dropping {SCHEMA}: {}", pg(&e)))
    }
}

/// What a shard saw at a run's start barrier.
#[derive(Debug, Clone, Copy)]
pub struct Barrier {
    /// The start instant, Unix time by the server's clock, s.
    pub start_at: f64,
    /// The server's clock minus this machine's, s.
    pub offset_s: f64,
    /// The round trip the offset was measured with, s.
    pub rtt_s: f64,
    /// How late this shard saw the instant (0 when it slept until it), s.
    pub late_s: f64,
    /// From registering to the start instant, s.
    pub waited_s: f64,
}

/// Unix time by this machine's clock, s.
fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The shards of `0..count` not in `present`, as `1, 3`.
fn missing_shards(present: &[i32], count: u32) -> String {
    (0..count as i32)
        .filter(|i| !present.contains(i))
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Unix time `t` (s) as RFC 3339 UTC with microseconds.
pub fn rfc3339(t: f64) -> String {
    let micros = (t * 1e6).round() as i64;
    chrono::DateTime::<chrono::Utc>::from_timestamp_micros(micros)
        .map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::Micros, true))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_of_clients_sum_to_the_study_s_and_differ_by_at_most_one() {
        for clients in [1u32, 2, 5, 16, 17] {
            for n in [1u32, 2, 3, 7] {
                let shares: Vec<u32> = (0..n)
                    .map(|i| ShardSpec::new(i, n).unwrap().clients(clients))
                    .collect();
                assert_eq!(shares.iter().sum::<u32>(), clients, "{clients} over {n}");
                let (lo, hi) = (shares.iter().min().unwrap(), shares.iter().max().unwrap());
                assert!(hi - lo <= 1, "{shares:?}");
            }
        }
        // 5 over 3: the first 5 % 3 = 2 shards get one more.
        let s = |i| ShardSpec::new(i, 3).unwrap().clients(5);
        assert_eq!((s(0), s(1), s(2)), (2, 2, 1));
        // 1 over 2: shard 1 runs no client (and still joins the barrier).
        assert_eq!(ShardSpec::new(1, 2).unwrap().clients(1), 0);
    }

    #[test]
    fn shard_specs_parse_and_refuse_out_of_range() {
        assert_eq!(
            "2/3".parse::<ShardSpec>().unwrap(),
            ShardSpec { index: 2, count: 3 }
        );
        assert!(
            "3/3"
                .parse::<ShardSpec>()
                .unwrap_err()
                .contains("out of range")
        );
        assert!("0/0".parse::<ShardSpec>().unwrap_err().contains("1 to"));
        assert!(
            "x".parse::<ShardSpec>()
                .unwrap_err()
                .contains("expected I/N")
        );
    }

    #[test]
    fn shard_seeds_differ_and_shard_0_keeps_the_run_s() {
        let s = |i| ShardSpec::new(i, 3).unwrap().seed(42);
        assert_eq!(s(0), 42);
        assert_ne!(s(1), s(2));
        assert_ne!(s(1), 42);
    }

    #[test]
    fn missing_shards_are_named_and_times_are_rfc3339() {
        assert_eq!(missing_shards(&[0, 2], 4), "1, 3");
        assert_eq!(rfc3339(1_700_000_000.25), "2023-11-14T22:13:20.250000Z");
        assert_eq!(study_id("a"), study_id("a"));
        assert_ne!(study_id("a"), study_id("b"));
    }
}
