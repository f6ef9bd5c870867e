//! The retry policy: which errors re-run a transaction, and when.
//!
//! Classification uses the SQLSTATE only (`Error::code()`), never message
//! text. A retried transaction re-runs from BEGIN with the same inputs, as
//! pgbench 15+ does with `--max-tries`.

use std::time::Duration;

use rand::RngExt;

use crate::model::sqlstate;
use crate::model::{Backoff, RetryPolicy};
use crate::model::{CONNECTION_FAILURE, SqlState};
use crate::workload::{AttemptError, Cause};

/// What the engine does with a failed attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The policy retries this SQLSTATE: roll back and re-run (if tries remain).
    Retry(SqlState),
    /// Give up: count a failure under this SQLSTATE.
    Fail(SqlState),
    /// The connection broke while COMMIT was in flight: outcome unknown.
    /// The SQLSTATE the server sent (57P01, 57P02, 08xxx, ...), else
    /// [`CONNECTION_FAILURE`].
    Unknown(SqlState),
    /// The connection broke outside COMMIT: the transaction did not
    /// commit; counted under this SQLSTATE (as for `Unknown`).
    ConnectionLost(SqlState),
    /// The client's own program failed (a pgbench script's run-time error,
    /// e.g. an undefined variable): the client stops, as pgbench's does.
    Abort(String),
}

/// The retry policy compiled for the hot path.
#[derive(Debug, Clone)]
pub struct Retrier {
    max_tries: u32,
    retry_on: Vec<SqlState>,
    backoff: Backoff,
}

impl Retrier {
    /// Errors: a `retry_on` entry that is not a SQLSTATE, or `max_tries == 0`.
    pub fn new(policy: &RetryPolicy) -> Result<Self, String> {
        if policy.max_tries == 0 {
            return Err("--max-tries must be at least 1".into());
        }
        let retry_on = policy
            .retry_on
            .iter()
            .map(|c| {
                sqlstate(c)
                    .ok_or_else(|| format!("--retry-on: '{c}' is not a five-character SQLSTATE"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Retrier {
            max_tries: policy.max_tries,
            retry_on,
            backoff: policy.backoff,
        })
    }

    pub fn max_tries(&self) -> u32 {
        self.max_tries
    }

    /// Classifies one failed attempt.
    pub fn classify(&self, e: &AttemptError) -> Verdict {
        let error = match &e.error {
            Cause::Db(error) => error,
            Cause::Script(m) => return Verdict::Abort(m.clone()),
        };
        let code = error.code();
        // The server ends the session after FATAL errors (57P01
        // admin_shutdown, 57P02 crash_shutdown, ...): such an error comes
        // with a SQLSTATE, yet the connection is gone all the same.
        let broken = error.is_broken() || code.is_some_and(|c| c.starts_with(b"57P"));
        self.classify_parts(code, broken, e.at_commit)
    }

    /// The decision itself: `code` is the server's SQLSTATE if it sent one,
    /// `broken` whether the connection is gone, `at_commit` whether COMMIT
    /// was in flight (then a broken connection leaves the outcome unknown).
    pub(crate) fn classify_parts(
        &self,
        code: Option<SqlState>,
        broken: bool,
        at_commit: bool,
    ) -> Verdict {
        let lost = || {
            let code = code.unwrap_or(CONNECTION_FAILURE);
            if at_commit {
                Verdict::Unknown(code)
            } else {
                Verdict::ConnectionLost(code)
            }
        };
        match code {
            _ if broken => lost(),
            Some(c) if c.starts_with(b"08") => lost(),
            Some(c) if self.retry_on.contains(&c) => Verdict::Retry(c),
            Some(c) => Verdict::Fail(c),
            None => Verdict::Fail(CONNECTION_FAILURE),
        }
    }

    /// How long to wait before try number `next_try` (2 = first retry).
    pub fn delay(&self, next_try: u32, rng: &mut impl rand::Rng) -> Duration {
        match self.backoff {
            Backoff::None => Duration::ZERO,
            Backoff::Exponential { base, max } => {
                let exp = next_try.saturating_sub(2).min(30);
                let cap = base.saturating_mul(1u32 << exp).min(max);
                Duration::from_nanos(rng.random_range(0..=cap.as_nanos() as u64))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn retrier(codes: &[&str], backoff: Backoff) -> Retrier {
        Retrier::new(&RetryPolicy {
            max_tries: 5,
            retry_on: codes.iter().map(|c| c.to_string()).collect(),
            backoff,
        })
        .unwrap()
    }

    #[test]
    fn classifies_by_sqlstate_and_policy() {
        let r = retrier(&["40001", "40P01"], Backoff::None);
        assert_eq!(
            r.classify_parts(Some(*b"40001"), false, true),
            Verdict::Retry(*b"40001")
        );
        assert_eq!(
            r.classify_parts(Some(*b"40P01"), false, false),
            Verdict::Retry(*b"40P01")
        );
        // NOWAIT failures are not retried unless the policy says so.
        assert_eq!(
            r.classify_parts(Some(*b"55P03"), false, false),
            Verdict::Fail(*b"55P03")
        );
        let nowait = retrier(&["40001", "55P03"], Backoff::None);
        assert_eq!(
            nowait.classify_parts(Some(*b"55P03"), false, false),
            Verdict::Retry(*b"55P03")
        );
        assert_eq!(
            nowait.classify_parts(Some(*b"40P01"), false, false),
            Verdict::Fail(*b"40P01")
        );
    }

    #[test]
    fn broken_connection_at_commit_is_unknown_outcome() {
        let r = retrier(&["40001"], Backoff::None);
        assert_eq!(
            r.classify_parts(None, true, true),
            Verdict::Unknown(CONNECTION_FAILURE)
        );
        assert_eq!(
            r.classify_parts(None, true, false),
            Verdict::ConnectionLost(CONNECTION_FAILURE)
        );
        assert_eq!(
            r.classify_parts(Some(*b"08006"), false, true),
            Verdict::Unknown(*b"08006")
        );
        assert_eq!(
            r.classify_parts(None, false, false),
            Verdict::Fail(CONNECTION_FAILURE)
        );
        // A FATAL error (e.g. 57P01 admin_shutdown) during COMMIT: the
        // commit may have happened; never a plain failure.
        assert_eq!(
            r.classify_parts(Some(*b"57P01"), true, true),
            Verdict::Unknown(*b"57P01")
        );
        assert_eq!(
            r.classify_parts(Some(*b"57P02"), true, false),
            Verdict::ConnectionLost(*b"57P02")
        );
    }

    #[test]
    fn rejects_bad_policy() {
        assert!(
            Retrier::new(&RetryPolicy {
                max_tries: 0,
                ..RetryPolicy::default()
            })
            .is_err()
        );
        let bad = RetryPolicy {
            retry_on: vec!["4001".into()],
            ..RetryPolicy::default()
        };
        assert!(Retrier::new(&bad).unwrap_err().contains("4001"));
    }

    #[test]
    fn exponential_backoff_is_capped_full_jitter() {
        let r = retrier(
            &["40001"],
            Backoff::Exponential {
                base: Duration::from_millis(2),
                max: Duration::from_millis(10),
            },
        );
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let mut max_seen = [Duration::ZERO; 6];
        for _ in 0..2000 {
            for t in 2..=6u32 {
                let d = r.delay(t, &mut rng);
                max_seen[t as usize - 1] = max_seen[t as usize - 1].max(d);
            }
        }
        // Caps 2, 4, 8, 10, 10 ms; full jitter gets close to each cap.
        for (t, cap) in [(2, 2), (3, 4), (4, 8), (5, 10), (6, 10)] {
            let m = max_seen[t - 1];
            assert!(m <= Duration::from_millis(cap), "try {t}: {m:?}");
            assert!(m > Duration::from_millis(cap) * 9 / 10, "try {t}: {m:?}");
        }
        assert_eq!(
            retrier(&["40001"], Backoff::None).delay(3, &mut rng),
            Duration::ZERO
        );
    }
}
