//! The shard this process runs of a sharded study: given (`shard`), or
//! its index from the environment of a Kubernetes Indexed Job or a Slurm
//! job array or step (`shards`).

use super::{Settings, SettingsError};
use crate::model::ShardSpec;

impl Settings {
    /// The shard this process runs: `shard`, or `shards` with the index
    /// from the orchestrator's variables ([`super::shard_env`]); a
    /// sharded study needs an external server.
    ///
    /// Errors: both keys, `shards` without either variable or with an
    /// index out of range, a shard without `dsn`/`external`.
    pub(super) fn shard_spec(&self) -> Result<Option<ShardSpec>, SettingsError> {
        let shard = match (self.shard, self.shards) {
            (Some(_), Some(_)) => {
                return Err(self.error(
                    "shards",
                    "give the shard as I/N (`shard`) or the count with the index from the environment (`shards`), not both",
                ));
            }
            (Some(s), None) => Some(s),
            (None, Some(n)) => Some(self.shard_from_env(n)?),
            (None, None) => None,
        };
        let external = self.dsn.is_some() || self.external == Some(true);
        if shard.is_some() && !external {
            let key = if self.shard.is_some() {
                "shard"
            } else {
                "shards"
            };
            return Err(self.error(
                key,
                "a sharded study needs an external server that every shard reaches: give --dsn (or --external); \
                 the managed server runs on one machine and cannot be shared",
            ));
        }
        Ok(shard)
    }

    /// Shard of `n` whose index comes from the orchestrator's variables
    /// ([`super::shard_env`]: Kubernetes', a Slurm array's, a Slurm
    /// step's).
    fn shard_from_env(&self, n: u32) -> Result<ShardSpec, SettingsError> {
        let found = super::shard_env::shard_index(n, |v| std::env::var(v).ok())
            .map_err(|e| self.error("shards", e))?;
        ShardSpec::new(found.index, n)
            .map_err(|e| self.error("shards", format!("{}: {e}", found.var)))
    }
}
