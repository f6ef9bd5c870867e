//! The checker against brute force (issue #47): random small histories of
//! executions under weak isolation, and for each a search of every serial
//! order of its committed transactions. Whatever the checker reports must
//! have no serial order that explains every read: the checker reports
//! only what it can prove. The converse does not hold, and is counted:
//! a history can be non-serializable in ways list-append's reads do not
//! reveal to the checker (a version order no read saw past).

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

use crate::history::{History, Key, Op, Status, Txn, Value};

/// How the simulated database isolates a transaction's reads.
#[derive(Clone, Copy)]
enum Model {
    /// One snapshot per transaction (snapshot isolation).
    Snapshot,
    /// A snapshot per read (read committed).
    PerRead,
}

/// A random execution of `n` transactions over `keys` keys: each
/// transaction has 1..=4 operations, commits at a random place in the
/// commit order (10 % abort), reads committed state as of a snapshot
/// taken no later than its commit (with its own appends on top), and its
/// appends land in commit order. `dirty` of 100 times a read also sees
/// an aborted transaction's append (a G1a to find).
pub fn execution(n: usize, keys: u64, seed: u64, dirty: u32) -> History {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let model = if rng.random_bool(0.5) {
        Model::Snapshot
    } else {
        Model::PerRead
    };
    // Plans: operations (append?, key) and the outcome.
    let plans: Vec<(Vec<(bool, Key)>, bool)> = (0..n)
        .map(|_| {
            let ops = (0..rng.random_range(1..=4u32))
                .map(|_| (rng.random_bool(0.5), rng.random_range(0..keys)))
                .collect();
            (ops, rng.random_bool(0.9))
        })
        .collect();
    // Commit order: a permutation; a transaction's commit slot.
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, rng.random_range(0..=i));
    }
    let mut slot = vec![0usize; n];
    for (s, &t) in order.iter().enumerate() {
        slot[t] = s;
    }
    // Values: transaction t's j-th operation appends t * 10 + j + 1.
    let value = |t: usize, j: usize| (t * 10 + j + 1) as Value;
    // The committed state after the first `upto` commit slots.
    let state_at = |upto: usize, key: Key| -> Vec<Value> {
        let mut list = Vec::new();
        for &t in &order[..upto] {
            if !plans[t].1 {
                continue;
            }
            for (j, &(append, k)) in plans[t].0.iter().enumerate() {
                if append && k == key {
                    list.push(value(t, j));
                }
            }
        }
        list
    };
    let txns = (0..n)
        .map(|t| {
            let (ops, committed) = &plans[t];
            let snapshot = rng.random_range(0..=slot[t]);
            let mut mine: Vec<(Key, Value)> = Vec::new();
            let mut rec = Vec::new();
            for (j, &(append, key)) in ops.iter().enumerate() {
                if append {
                    mine.push((key, value(t, j)));
                    rec.push(Op::Append {
                        key,
                        value: value(t, j),
                    });
                    continue;
                }
                let at = match model {
                    Model::Snapshot => snapshot,
                    Model::PerRead => rng.random_range(snapshot..=slot[t]),
                };
                let mut list = state_at(at, key);
                if rng.random_ratio(dirty, 100)
                    && let Some(a) = (0..n)
                        .find(|&u| !plans[u].1 && plans[u].0.iter().any(|&(ap, k)| ap && k == key))
                {
                    let j = plans[a]
                        .0
                        .iter()
                        .position(|&(ap, k)| ap && k == key)
                        .unwrap();
                    list.push(value(a, j));
                }
                list.extend(mine.iter().filter(|(k, _)| *k == key).map(|(_, v)| *v));
                rec.push(Op::Read {
                    key,
                    values: Some(list),
                });
            }
            Txn {
                process: t as u32,
                status: if *committed {
                    Status::Committed
                } else {
                    Status::Aborted { sqlstate: None }
                },
                ops: rec,
                ..Txn::default()
            }
        })
        .collect();
    History { txns }
}

/// [`execution`] with registers: the same schedule, each append a write
/// of the same value, each read the key's last value (`None`: nil).
pub fn register_execution(n: usize, keys: u64, seed: u64, dirty: u32) -> History {
    let mut h = execution(n, keys, seed, dirty);
    for t in &mut h.txns {
        for op in &mut t.ops {
            let new = match &*op {
                Op::Append { key, value } => Op::Write {
                    key: *key,
                    value: *value,
                },
                Op::Read { key, values } => Op::Get {
                    key: *key,
                    value: values.as_ref().and_then(|v| v.last().copied()),
                },
                other => other.clone(),
            };
            *op = new;
        }
    }
    h
}

/// Whether some serial order of `h`'s committed transactions, run from
/// empty lists, returns every read they made (aborted ones leave nothing):
/// a depth-first search over orders, cut as soon as a read disagrees.
pub fn serializable(h: &History) -> bool {
    let committed: Vec<&Txn> = h.txns.iter().filter(|t| t.committed()).collect();
    let mut used = vec![false; committed.len()];
    let mut state: std::collections::HashMap<Key, Vec<Value>> = Default::default();
    search(&committed, &mut used, &mut state, 0)
}

fn search(
    txns: &[&Txn],
    used: &mut [bool],
    state: &mut std::collections::HashMap<Key, Vec<Value>>,
    placed: usize,
) -> bool {
    if placed == txns.len() {
        return true;
    }
    for i in 0..txns.len() {
        if used[i] {
            continue;
        }
        let mut local = state.clone();
        let fits = txns[i].ops.iter().all(|op| match op {
            Op::Append { key, value } => {
                local.entry(*key).or_default().push(*value);
                true
            }
            // A register is a list whose last value is read.
            Op::Write { key, value } => {
                local.entry(*key).or_default().push(*value);
                true
            }
            Op::Get { key, value } => local.get(key).and_then(|l| l.last()).copied() == *value,
            Op::Read {
                key,
                values: Some(v),
            } => local.get(key).map_or(v.is_empty(), |l| l == v),
            _ => true,
        });
        if !fits {
            continue;
        }
        used[i] = true;
        if search(txns, used, &mut local, placed + 1) {
            return true;
        }
        used[i] = false;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check;

    /// Issue #47's cross-check: 100,000 random histories of 2 to 8
    /// transactions. No history the checker finds anything in is
    /// serializable; the anomalies it misses are counted, and the run
    /// must have found plenty of both kinds, so that it tests something.
    #[test]
    fn nothing_the_checker_reports_is_serializable() {
        let (mut reported, mut missed, mut serial) = (0u32, 0u32, 0u32);
        for seed in 0..100_000u64 {
            let n = 2 + (seed % 7) as usize;
            let h = execution(n, 3, seed, 2);
            let found = check(&h).total() > 0;
            let ok = serializable(&h);
            assert!(
                !(found && ok),
                "seed {seed}: the checker found {:?} in a serializable history {h:#?}",
                check(&h).render()
            );
            reported += u32::from(found);
            missed += u32::from(!found && !ok);
            serial += u32::from(ok);
        }
        // Measured: about a third of the histories are anomalous and the
        // checker reports most of those.
        assert!(reported > 10_000, "{reported} reported");
        assert!(serial > 10_000, "{serial} serializable");
        eprintln!(
            "{reported} reported (none serializable), {missed} not serializable but unreported, {serial} serializable"
        );
    }

    /// The same cross-check for register histories, whose checker infers
    /// less (module docs of `register`): 100,000 histories, no false
    /// positive.
    #[test]
    fn nothing_the_register_checker_reports_is_serializable() {
        let (mut reported, mut serial) = (0u32, 0u32);
        for seed in 0..100_000u64 {
            let n = 2 + (seed % 7) as usize;
            let h = register_execution(n, 3, seed, 2);
            let found = check(&h).total() > 0;
            let ok = serializable(&h);
            assert!(
                !(found && ok),
                "seed {seed}: the register checker found {} in a serializable history {h:#?}",
                check(&h).render()
            );
            reported += u32::from(found);
            serial += u32::from(ok);
        }
        assert!(reported > 5_000, "{reported} reported");
        assert!(serial > 10_000, "{serial} serializable");
        eprintln!("registers: {reported} reported (none serializable), {serial} serializable");
    }

    /// The search itself: a write skew has no serial order; the same
    /// transactions run one after the other have one.
    #[test]
    fn the_search_finds_an_order_exactly_when_there_is_one() {
        let ok = |ops: Vec<Op>| Txn {
            ops,
            ..Txn::default()
        };
        let r = |key, v: &[Value]| Op::Read {
            key,
            values: Some(v.to_vec()),
        };
        let a = |key, value| Op::Append { key, value };
        let skew = History {
            txns: vec![ok(vec![r(1, &[]), a(2, 1)]), ok(vec![r(2, &[]), a(1, 2)])],
        };
        assert!(!serializable(&skew));
        let serial = History {
            txns: vec![ok(vec![r(2, &[1]), a(1, 2)]), ok(vec![r(1, &[]), a(2, 1)])],
        };
        assert!(serializable(&serial));
    }
}
