//! The study keys of a managed cluster: standbys, failover manager, read
//! route, and the replication keys that are server settings between runs.

use super::values::*;
use super::{Settings, SettingsError};
use crate::model::*;

impl Settings {
    /// The server settings with the replication keys among them:
    /// `replication` (isobench's, [`crate::model::REPLICATION`]) and
    /// `synchronous_commit` as the settings of those names.
    ///
    /// Errors: `synchronous_commit` given both as a key and in
    /// `settings`; `synchronous_standby_names` in `settings` with
    /// `replication`, which sets it.
    pub(super) fn settings_with_cluster(&self) -> Result<Vec<Named>, SettingsError> {
        let mut all = self.settings.clone().unwrap_or_default();
        let given = |n: &str| all.iter().any(|(k, _)| k == n);
        if self.synchronous_commit.is_some() && given("synchronous_commit") {
            return Err(self.error(
                "synchronous_commit",
                "given both as a key and as settings.synchronous_commit (--set): give it once",
            ));
        }
        if self.replication.is_some() && given("synchronous_standby_names") {
            return Err(self.error(
                "replication",
                "sets synchronous_standby_names itself: drop settings.synchronous_standby_names (--set)",
            ));
        }
        if given(crate::model::REPLICATION) {
            return Err(self.error(
                "settings.replication",
                "replication is a key of its own (`replication = [\"async\", \"sync\"]`, --replication), not a server setting",
            ));
        }
        if let Some(r) = &self.replication {
            all.push((
                crate::model::REPLICATION.to_string(),
                r.iter().map(ToString::to_string).collect(),
            ));
        }
        if let Some(levels) = &self.synchronous_commit {
            all.push(("synchronous_commit".to_string(), levels.clone()));
        }
        Ok(all)
    }

    /// The managed cluster: standbys and failover manager.
    ///
    /// Errors: standbys, a failover manager or a replication factor with
    /// an external server (which has its own: name its hosts in the DSN);
    /// a quorum larger than
    /// the standbys; pg_auto_failover with other than one standby.
    pub(super) fn cluster(&self) -> Result<ClusterConfig, SettingsError> {
        let external = self.dsn.is_some() || self.external == Some(true);
        let ha = self.ha.unwrap_or_default();
        let standbys = self.standbys.unwrap_or(if ha == Ha::None { 0 } else { 1 });
        if external && (self.standbys.is_some() || ha != Ha::None) {
            let key = if self.standbys.is_some() {
                "standbys"
            } else {
                "ha"
            };
            return Err(self.error(
                key,
                "starts a managed cluster; an external server has its standbys already: \
                 name the primary first and its standbys after it in --dsn (host=h1,h2 ...)",
            ));
        }
        if ha == Ha::PgAutoFailover && standbys != 1 {
            return Err(self.error(
                "standbys",
                format!(
                    "pg_auto_failover runs here as a monitor and two nodes (a primary and one standby); \
                     give standbys = 1 (or leave it out), found {standbys}"
                ),
            ));
        }
        let read_from = self.read_from.unwrap_or_default();
        if read_from != ReadFrom::Primary && !external && (standbys == 0 || ha != Ha::None) {
            return Err(self.error(
                "read_from",
                if ha != Ha::None {
                    format!(
                        "{}: reads are routed to isobench's own standbys, not to a failover manager's: drop --ha, give --standbys N",
                        read_from.name()
                    )
                } else {
                    format!(
                        "{}: the managed server has no standby to read from: give --standbys N \
                         (or --dsn naming a primary and its standbys, host=h1,h2)",
                        read_from.name()
                    )
                },
            ));
        }
        for r in self.replication.iter().flatten() {
            if r.waits_for() > standbys && !external {
                return Err(self.error(
                    "replication",
                    format!(
                        "{r} waits for {} standby(s), and the study has {standbys}: give --standbys {}",
                        r.waits_for(),
                        r.waits_for()
                    ),
                ));
            }
            if ha == Ha::PgAutoFailover && matches!(r, Replication::Quorum(_)) {
                return Err(self.error(
                    "replication",
                    "pg_auto_failover with one standby replicates async or sync (its replication-quorum): drop quorum:N",
                ));
            }
        }
        if self.ha_timeouts.is_some() && ha == Ha::None {
            return Err(self.error(
                "ha_timeouts",
                "sets the failover manager's timeouts: give --ha pg_auto_failover too",
            ));
        }
        Ok(ClusterConfig {
            standbys,
            ha,
            ha_fast: self.ha_timeouts.unwrap_or(false),
            read_from,
        })
    }
}
