//! The standbys of a replicated primary as its `pg_stat_replication`
//! shows them, sampled once a second while a run measures (issue #50):
//! each standby's write, flush and replay lag, the WAL it has not yet
//! applied, and its `sync_state`. The same view answers for a managed
//! primary with standbys and for an external one (`--dsn` naming the
//! primary first): a primary without standbys shows no rows, and then
//! nothing more is sampled.
//!
//! The lags are PostgreSQL's own (`write_lag`, `flush_lag`,
//! `replay_lag`: the time from a commit's WAL being flushed locally to the
//! standby's report that it wrote, flushed, applied it; NULL once the
//! standby has caught up on an idle primary, so a sample without a value
//! is not counted); the bytes are `pg_current_wal_lsn() - replay_lsn`.

use std::collections::BTreeMap;

use tokio_postgres::Client;

use crate::model::{ServerObservations, StandbyObservation};

/// Accumulates the samples, per standby by name.
#[derive(Default)]
pub(super) struct ReplicationSampler {
    standbys: BTreeMap<String, (StandbyObservation, BTreeMap<String, u64>)>,
    /// False once a sample found no standby: nothing more to sample.
    pub(super) off: bool,
}

impl ReplicationSampler {
    /// One sample of `pg_stat_replication`; the first that finds no
    /// standby turns the sampler off.
    pub(super) async fn sample(&mut self, db: &Client) -> Result<(), tokio_postgres::Error> {
        let rows = db
            .query(
                "SELECT application_name, coalesce(sync_state, ''),
                        extract(epoch FROM write_lag)::float8 * 1000,
                        extract(epoch FROM flush_lag)::float8 * 1000,
                        extract(epoch FROM replay_lag)::float8 * 1000,
                        pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::float8
                   FROM pg_stat_replication
                  ORDER BY application_name",
                &[],
            )
            .await?;
        if rows.is_empty() && self.standbys.is_empty() {
            self.off = true;
        }
        for r in rows {
            let name: String = r.get(0);
            let (o, states) = self.standbys.entry(name.clone()).or_insert_with(|| {
                (
                    StandbyObservation {
                        name,
                        ..Default::default()
                    },
                    BTreeMap::new(),
                )
            });
            o.samples += 1;
            *states.entry(r.get(1)).or_default() += 1;
            for (i, lag) in [
                &mut o.write_lag_ms,
                &mut o.flush_lag_ms,
                &mut o.replay_lag_ms,
                &mut o.replay_lag_bytes,
            ]
            .into_iter()
            .enumerate()
            {
                if let Some(v) = r.get::<_, Option<f64>>(i + 2) {
                    lag.add(v);
                }
            }
        }
        Ok(())
    }

    /// The standbys into `obs`, each with the `sync_state` seen most
    /// often (ties: the first by name).
    pub(super) fn finish(self, obs: &mut ServerObservations) {
        obs.standbys = self
            .standbys
            .into_values()
            .map(|(mut o, states)| {
                let mut best: Option<(&String, u64)> = None;
                for (s, n) in &states {
                    if best.is_none_or(|(_, m)| *n > m) {
                        best = Some((s, *n));
                    }
                }
                o.sync_state = best.map(|(s, _)| s.clone()).unwrap_or_default();
                o
            })
            .collect();
    }
}
