//! The study keys of a managed cluster: standbys, failover manager, read
//! route, and the replication keys that are server settings between runs
//! (`read_from` too when it is a factor).

use super::values::*;
use super::{Settings, SettingsError};
use crate::model::*;

impl Settings {
    /// The server settings with the replication keys among them:
    /// `replication` (isobench's, [`crate::model::REPLICATION`]) and
    /// `synchronous_commit` as the settings of those names, and
    /// `read_from` ([`crate::model::READ_FROM`]) when it takes more than
    /// one value.
    ///
    /// Errors: `synchronous_commit` given both as a key and in
    /// `settings`; `synchronous_standby_names` in `settings` with
    /// `replication`, which sets it; `replication` or `read_from` in
    /// `settings`.
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
        if given(crate::model::READ_FROM) {
            return Err(self.error(
                "settings.read_from",
                "read_from is a key of its own (`read_from = [\"primary\", \"standby\"]`, --read-from), not a server setting",
            ));
        }
        if let Some(r) = &self.replication {
            all.push((
                crate::model::REPLICATION.to_string(),
                r.iter().map(ToString::to_string).collect(),
            ));
        }
        // One route is the cluster's (`ClusterConfig::read_from`), not a
        // setting: only a factor is among the cells' settings.
        let routes = super::settings::dedup(self.read_from.clone().unwrap_or_default());
        if routes.len() > 1 {
            all.push((
                crate::model::READ_FROM.to_string(),
                routes.iter().map(ToString::to_string).collect(),
            ));
        }
        if let Some(levels) = &self.synchronous_commit {
            all.push(("synchronous_commit".to_string(), levels.clone()));
        }
        Ok(all)
    }

    /// The managed cluster: standbys, failover manager and read route
    /// (the first of a `read_from` factor).
    ///
    /// Errors: standbys, a failover manager or a replication factor with
    /// an external server (which has its own: name its hosts in the DSN);
    /// a quorum larger than the standbys; pg_auto_failover with other
    /// than one standby; any `read_from` value but `primary` without
    /// standbys or with a failover manager.
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
        let routes = self.read_from.clone().unwrap_or_default();
        for &route in &routes {
            if route != ReadFrom::Primary && !external && (standbys == 0 || ha != Ha::None) {
                return Err(self.error(
                    "read_from",
                    if ha != Ha::None {
                        format!(
                            "{route}: reads are routed to isobench's own standbys, not to a failover manager's: drop --ha, give --standbys N"
                        )
                    } else {
                        format!(
                            "{route}: the managed server has no standby to read from: give --standbys N \
                             (or --dsn naming a primary and its standbys, host=h1,h2)"
                        )
                    },
                ));
            }
        }
        let read_from = routes.first().copied().unwrap_or_default();
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

#[cfg(test)]
mod tests {
    use crate::model::{READ_FROM, ReadFrom, StudyConfig};

    fn study(text: &str) -> Result<StudyConfig, String> {
        super::super::parse("study.toml", text)
            .map_err(|e| e.to_string())?
            .into_config()
            .map_err(|e| e.to_string())
    }

    /// One route is the cluster's and no setting (as before `read_from`
    /// was a factor); several are a run-setting factor, a cell each.
    #[test]
    fn read_from_is_a_factor_of_its_own_cells() {
        let one = study("read_from = \"standby\"\nstandbys = 1\nisolation = \"rc\"\n").unwrap();
        assert_eq!(one.target.cluster.read_from, ReadFrom::Standby);
        assert!(one.setting_factors.is_empty(), "{:?}", one.setting_factors);
        assert!(!one.target.settings.iter().any(|(k, _)| k == READ_FROM));
        assert_eq!(crate::executor::cells(&one).unwrap().len(), 1);

        for text in [
            "read_from = [\"primary\", \"standby\", \"any\", \"standby\"]\nstandbys = 1\nisolation = \"rc\"\n",
            "standbys = 1\nisolation = \"rc\"\n[factors]\nread_from = [\"primary\", \"standby\", \"any\"]\n",
        ] {
            let c = study(text).unwrap();
            assert_eq!(
                c.setting_factors,
                vec![(
                    READ_FROM.to_string(),
                    vec!["primary".into(), "standby".into(), "any".into()]
                )],
                "{text}"
            );
            assert_eq!(c.target.cluster.read_from, ReadFrom::Primary);
            let cells = crate::executor::cells(&c).unwrap();
            let routes: Vec<&str> = cells
                .iter()
                .map(|c| c.settings[READ_FROM].as_str())
                .collect();
            assert_eq!(routes, ["primary", "standby", "any"]);
            // A run setting: one server for every route.
            assert!(crate::model::is_run_setting(READ_FROM));
        }
    }

    /// Every route of the factor is checked as one route was, naming the
    /// key; `read_from` is no server setting.
    #[test]
    fn each_route_of_the_factor_is_checked() {
        let e = study("read_from = [\"primary\", \"standby\"]\n").unwrap_err();
        assert!(
            e.contains("read_from: standby: the managed server has no standby"),
            "{e}"
        );
        assert!(e.contains("--standbys N"), "{e}");
        let e =
            study("read_from = [\"primary\", \"any\"]\nha = \"pg_auto_failover\"\n").unwrap_err();
        assert!(
            e.contains("read_from: any: reads are routed to isobench's own standbys"),
            "{e}"
        );
        // Only primary: nothing to refuse.
        study("read_from = [\"primary\"]\n").unwrap();
        let e = study("standbys = 1\n[settings]\nread_from = \"standby\"\n").unwrap_err();
        assert!(e.contains("read_from is a key of its own"), "{e}");
    }
}
