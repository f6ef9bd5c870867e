//! Which pgbench `isobench pgbench` follows where pgbench 15 and pgbench
//! 18 differ: what `-i` creates and loads, and how the summary reads.
//!
//! A user who swaps `isobench pgbench` in for pgbench runs it against
//! the server their pgbench came with, so the server says which one to
//! follow: a server of version 18 or later gets pgbench 18's behaviour,
//! an older one pgbench 15's (server_version_num, read by the first
//! connection, as pgbench's own banner reads it). `ISOBENCH_PGBENCH=15`
//! or `=18` chooses instead, whatever the server. Both versions' own test
//! suites pass (tests/pgbench-tap.sh 15 and 18).
//!
//! The options are read before any connection: they are pgbench 15's
//! unless `ISOBENCH_PGBENCH=18` (then `-d` is `--dbname` and the debug
//! lines need `--debug`, as in pgbench 17 and 18); pgbench 17's
//! `--exit-on-abort` is taken either way.

/// A pgbench whose differing behaviour `isobench pgbench` follows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Pgbench {
    /// PostgreSQL 15's (the version whose tests first passed).
    #[default]
    V15,
    /// PostgreSQL 18's: the base tables of a partitioned `-i
    /// --unlogged-tables` logged (PostgreSQL 18 refuses an unlogged
    /// partitioned table), every table loaded by COPY with its name in
    /// the progress lines, its summary's new per-script and per-command
    /// layout, and no figures after `actually processed` when no
    /// transaction ended.
    V18,
}

/// The environment variable that chooses the version.
pub const ENV: &str = "ISOBENCH_PGBENCH";

impl Pgbench {
    /// The version `ISOBENCH_PGBENCH` names (`15` or `18`; anything else
    /// is not a choice).
    pub fn chosen(env: &dyn Fn(&str) -> Option<String>) -> Option<Pgbench> {
        match env(ENV)?.trim() {
            "15" => Some(Pgbench::V15),
            "18" => Some(Pgbench::V18),
            _ => None,
        }
    }

    /// The version that the options follow: the chosen one, else 15.
    pub fn of_options(env: &dyn Fn(&str) -> Option<String>) -> Pgbench {
        Self::chosen(env).unwrap_or(Pgbench::V15)
    }

    /// The version for a server of `server_version_num` (e.g. 180006):
    /// the chosen one, else 18 from PostgreSQL 18 on and 15 before it.
    pub fn for_server(server_version_num: i32) -> Pgbench {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Self::chosen(&env).unwrap_or(if server_version_num >= 180_000 {
            Pgbench::V18
        } else {
            Pgbench::V15
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_chooses_unless_the_environment_does() {
        let none = |_: &str| None;
        assert_eq!(Pgbench::chosen(&none), None);
        assert_eq!(Pgbench::of_options(&none), Pgbench::V15);
        let eighteen = |k: &str| (k == ENV).then(|| "18".to_string());
        assert_eq!(Pgbench::of_options(&eighteen), Pgbench::V18);
        let bad = |k: &str| (k == ENV).then(|| "16".to_string());
        assert_eq!(Pgbench::chosen(&bad), None);
        if std::env::var_os(ENV).is_none() {
            assert_eq!(Pgbench::for_server(150_018), Pgbench::V15);
            assert_eq!(Pgbench::for_server(180_006), Pgbench::V18);
        }
    }
}
