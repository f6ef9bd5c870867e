//! Clients over a cluster: which host of a DSN with several
//! (`host=h1,h2`, `postgresql://h1:5432,h2:5433/db`) each connection of a
//! run goes to first ([`assign`], by `--host-policy`), and what the run
//! saw per host ([`HostOutcome`]). A connection whose host refuses goes
//! to the next host in the DSN's order (`wire::connect_from`), and the
//! run says so ([`HostOutcome::refused`]).

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use crate::metrics::HostStats;
use crate::model::HostPolicy;

/// The host (an index into the DSN's hosts) that each of `n` connections
/// of a run tries first, under `policy`, with `hosts` hosts:
/// round-robin: connection `i` to host `i mod hosts`; random: drawn one
/// after the other from a generator seeded with the run's `seed` (the
/// same hosts for the same seed); first: host 0 for all (libpq's order,
/// the next hosts only when it refuses). With one host (or none), all 0.
pub fn assign(policy: HostPolicy, n: usize, hosts: usize, seed: u64) -> Vec<usize> {
    if hosts <= 1 {
        return vec![0; n];
    }
    match policy {
        HostPolicy::RoundRobin => (0..n).map(|i| i % hosts).collect(),
        HostPolicy::Random => {
            let mut rng = SmallRng::seed_from_u64(seed ^ 0x5851_f42d_4c95_7f2d);
            (0..n).map(|_| rng.random_range(0..hosts)).collect()
        }
        HostPolicy::First => vec![0; n],
    }
}

/// What one host of a DSN with several saw during a run.
#[derive(Debug, Clone)]
pub struct HostOutcome {
    /// `name:port` (a socket directory for a Unix-domain socket), as
    /// `wire::host_labels` names it.
    pub label: String,
    /// Connections open to the host when the run started: the clients'
    /// own, or with a pool its connections.
    pub clients: u32,
    /// Connections that were meant for this host first and went to
    /// another, since this one refused them.
    pub refused: u32,
    /// The measured window's transactions whose last attempt ran on the
    /// host.
    pub measured: HostStats,
}

/// Per host, from the `labels` of the DSN's hosts, the (first choice,
/// host connected to) of each connection, and the measured window's
/// per-host tally `measured` (empty when nothing was measured).
pub(super) fn outcomes(
    labels: &[String],
    placed: &[(usize, usize)],
    measured: &[HostStats],
) -> Vec<HostOutcome> {
    labels
        .iter()
        .enumerate()
        .map(|(i, label)| HostOutcome {
            label: label.clone(),
            clients: placed.iter().filter(|p| p.1 == i).count() as u32,
            refused: placed.iter().filter(|p| p.0 == i && p.1 != i).count() as u32,
            measured: measured.get(i).cloned().unwrap_or_default(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_cycles_over_the_hosts() {
        assert_eq!(
            assign(HostPolicy::RoundRobin, 7, 3, 1),
            vec![0, 1, 2, 0, 1, 2, 0]
        );
        // Half of an even count on each of two hosts.
        let two = assign(HostPolicy::RoundRobin, 4, 2, 9);
        assert_eq!(two.iter().filter(|h| **h == 0).count(), 2);
        assert_eq!(two.iter().filter(|h| **h == 1).count(), 2);
    }

    #[test]
    fn first_puts_everyone_on_host_0() {
        assert_eq!(assign(HostPolicy::First, 5, 3, 1), vec![0; 5]);
    }

    #[test]
    fn one_host_is_host_0_whatever_the_policy() {
        for p in [
            HostPolicy::RoundRobin,
            HostPolicy::Random,
            HostPolicy::First,
        ] {
            assert_eq!(assign(p, 3, 1, 4), vec![0; 3]);
            assert_eq!(assign(p, 3, 0, 4), vec![0; 3]);
        }
    }

    #[test]
    fn random_is_deterministic_per_seed_and_uses_every_host() {
        let a = assign(HostPolicy::Random, 200, 3, 42);
        assert_eq!(a, assign(HostPolicy::Random, 200, 3, 42));
        assert_ne!(a, assign(HostPolicy::Random, 200, 3, 43));
        assert!(a.iter().all(|h| *h < 3));
        for h in 0..3 {
            let n = a.iter().filter(|x| **x == h).count();
            // 200 draws over 3 hosts: each far from 0 and from all.
            assert!((30..=110).contains(&n), "host {h}: {n} of 200");
        }
        // Not round-robin in disguise.
        assert_ne!(a, assign(HostPolicy::RoundRobin, 200, 3, 42));
    }

    #[test]
    fn outcomes_count_connections_and_refusals_per_host() {
        let labels = vec!["a:1".to_string(), "b:2".to_string()];
        // Connection 1 was meant for b, which refused: it went to a.
        let placed = [(0, 0), (1, 0), (0, 0), (1, 1)];
        let mut m = vec![HostStats::default(), HostStats::default()];
        m[1].committed = 5;
        let o = outcomes(&labels, &placed, &m);
        assert_eq!((o[0].clients, o[0].refused), (3, 0));
        assert_eq!((o[1].clients, o[1].refused), (1, 1));
        assert_eq!(o[1].measured.committed, 5);
        assert_eq!(o[0].label, "a:1");
    }
}
