//! The checker: anomalies of a list-append history by Adya's phenomena
//! (Adya, "Weak Consistency", MIT 1999, sections 4.2-4.4), found as Elle
//! finds them (Kingsbury & Alvaro, VLDB 2020, section 4.4).
//!
//! Steps, each linear (or n log n for sorting edges) in the history:
//! index writers and version orders ([`Index`]); check every committed read
//! for aborted reads (G1a), intermediate reads (G1b) and internal
//! consistency; build the dependency graph; find its strongly connected
//! components three times (ww edges only, ww and wr, all); classify.
//!
//! What a "case" is, per class (the `count` of a [`Finding`]):
//! - G1a, G1b, internal: a read (one operation) showing it;
//! - incompatible-order: a key whose reads are not prefixes of one order;
//! - cycles: a strongly connected component holding a cycle of the class,
//!   one per component and class, as Elle reports them (a user reads a
//!   two-transaction write skew as one anomaly, not as its two rw edges).
//!   A cycle of the class is closed by a dependency edge: G0, a ww edge
//!   inside a component of the ww graph; G1c, a wr edge (not also ww)
//!   inside a component of the ww+wr graph; G-single, an rw edge (not also
//!   ww or wr) inside a component of the whole graph whose head reaches
//!   its tail over ww and wr edges, so exactly one anti-dependency closes
//!   the cycle; G2-item, an rw edge inside a component of the whole graph
//!   whose every way back has another rw edge. Those closing edges are the
//!   second figure ([`Finding::edges`]): it keeps growing with how often
//!   the anomaly happened where components merge (under READ COMMITTED
//!   most of a run is one component).
//!
//! Each class's example is the shortest cycle found through one of its
//! first cases (breadth-first search from a few closing edges).

use super::explain;
use super::graph::{ALL, Graph, Kinds, RW, Reach, WR, WW};
use super::history::{History, Op, Value, show_list};
use super::infer::Index;

/// An anomaly class, as named in results (invariant names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Class {
    /// A cycle of write-write dependencies (dirty write).
    G0,
    /// A committed read of a value an aborted transaction appended.
    G1a,
    /// A committed read of a value that its writer later overwrote within
    /// the same transaction (an intermediate version).
    G1b,
    /// A cycle of ww and wr dependencies with at least one wr.
    G1c,
    /// A cycle with exactly one anti-dependency (read skew, lost update).
    GSingle,
    /// A cycle with two or more anti-dependencies (write skew).
    G2Item,
    /// Reads of a key that no single version order explains.
    IncompatibleOrder,
    /// A transaction not seeing its own appends (or its own earlier read).
    Internal,
}

impl Class {
    /// Every class, in report order.
    pub const ALL: [Class; 8] = [
        Class::G0,
        Class::G1a,
        Class::G1b,
        Class::G1c,
        Class::GSingle,
        Class::G2Item,
        Class::IncompatibleOrder,
        Class::Internal,
    ];

    /// The invariant name.
    pub fn name(self) -> &'static str {
        match self {
            Class::G0 => "G0",
            Class::G1a => "G1a",
            Class::G1b => "G1b",
            Class::G1c => "G1c",
            Class::GSingle => "G-single",
            Class::G2Item => "G2-item",
            Class::IncompatibleOrder => "incompatible-order",
            Class::Internal => "internal",
        }
    }
}

/// The cases of one class found in a history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub class: Class,
    /// Cases found (see the module docs for what one case is): for the
    /// cycle classes (G0, G1c, G-single, G2-item), components with a cycle
    /// of the class.
    pub count: u64,
    /// For the cycle classes, the dependency edges that close a cycle of
    /// the class (at least `count`); 0 for the others.
    pub edges: u64,
    /// One case explained step by step (for a cycle class, the shortest of
    /// [`Finding::cycles`]).
    pub example: Option<String>,
    /// For the cycle classes: a cycle through each of the first
    /// [`MAX_CYCLES`] components counted, each edge with the operations
    /// that prove it; empty for the others.
    pub cycles: Vec<Vec<Step>>,
    /// For the other classes, the transactions of each case, in the order
    /// found: for G1a and G1b the reader and the writer of the value it
    /// shows, for internal the reader twice, for incompatible-order the
    /// two transactions whose reads disagree ([`NONE`] where a case names
    /// no transaction: a register history's incompatible-order); empty
    /// for the cycle classes.
    pub txns: Vec<[u32; 2]>,
}

/// No transaction, in [`Finding::txns`].
pub const NONE: u32 = super::infer::NONE;

/// Cycles kept per class ([`Finding::cycles`]).
pub const MAX_CYCLES: usize = 8;

/// A dependency between two transactions (Adya 1999, section 3.1.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dep {
    /// The second appended right after the first's append to a key.
    Ww,
    /// The second read a list whose last value the first appended.
    Wr,
    /// The second appended the value right after the last one the first
    /// read (an anti-dependency).
    Rw,
}

/// One edge of a cycle: `from` -> `to` (transaction indexes) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub from: u32,
    pub to: u32,
    pub kind: Dep,
    /// The operations that prove the edge, in words.
    pub why: String,
}

/// What the checker found in one history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// One per class, in [`Class::ALL`] order.
    pub findings: Vec<Finding>,
    /// Transactions checked (every attempt, aborted ones included).
    pub txns: usize,
    /// Of those, the committed ones: the exposure of a rate of anomalies
    /// per committed transaction.
    pub committed: usize,
    /// Distinct dependency edges between transactions.
    pub edges: usize,
    /// Anti-dependency edges on a cycle that the search budget left
    /// unclassified (neither G-single nor G2-item counted them).
    pub unclassified: u64,
}

impl Report {
    /// Cases of `class`.
    pub fn count(&self, class: Class) -> u64 {
        self.finding(class).count
    }

    pub fn finding(&self, class: Class) -> &Finding {
        &self.findings[class as usize]
    }

    /// Cases of every class together.
    pub fn total(&self) -> u64 {
        self.findings.iter().map(|f| f.count).sum()
    }

    /// The report as text: one line of counts per class (`G0 0, G1a 0,
    /// ...`), then each class found with its example, then the cycle
    /// candidates left unclassified, if any. Ends with a newline.
    pub fn render(&self) -> String {
        let counts: Vec<String> = self
            .findings
            .iter()
            .map(|f| format!("{} {}", f.class.name(), f.count))
            .collect();
        let mut s = format!("{}\n", counts.join(", "));
        for f in self.findings.iter().filter(|f| f.count > 0) {
            if let Some(e) = &f.example {
                let figures = if f.edges > 0 {
                    format!(
                        " ({} {}, {} closing {})",
                        f.count,
                        if f.count == 1 { "cycle" } else { "cycles" },
                        f.edges,
                        if f.edges == 1 { "edge" } else { "edges" }
                    )
                } else {
                    String::new()
                };
                s.push_str(&format!("{}{figures}: {e}\n", f.class.name()));
            }
        }
        if self.unclassified > 0 {
            s.push_str(&format!(
                "{} rw edge(s) on a cycle left unclassified (search budget)\n",
                self.unclassified
            ));
        }
        s
    }
}

/// Collects findings per class.
pub(crate) struct Found(pub(crate) Vec<Finding>);

impl Found {
    pub(crate) fn new() -> Self {
        Found(
            Class::ALL
                .iter()
                .map(|&class| Finding {
                    class,
                    count: 0,
                    edges: 0,
                    example: None,
                    cycles: Vec::new(),
                    txns: Vec::new(),
                })
                .collect(),
        )
    }

    /// One more case of `class`, of transactions `txns`, explained by
    /// `example` if it is the first.
    pub(crate) fn add(&mut self, class: Class, txns: [u32; 2], example: impl FnOnce() -> String) {
        let f = &mut self.0[class as usize];
        f.count += 1;
        f.txns.push(txns);
        if f.example.is_none() {
            f.example = Some(example());
        }
    }
}

/// Checks a list-append `history` for every class of [`Class::ALL`];
/// range scans are read as reads of the keys in their range
/// ([`History::with_scans_as_reads`]).
pub fn check_lists(history: &History) -> Report {
    if history.has_scans() {
        return check_items(&history.with_scans_as_reads());
    }
    check_items(history)
}

/// [`check_lists`] of a history without scans.
fn check_items(history: &History) -> Report {
    let idx = Index::new(history);
    let mut found = Found::new();
    for &(key, a, b) in &idx.incompatible {
        found.add(Class::IncompatibleOrder, [a, b], || {
            format!(
                "k{key}: {} and {}: no version order has both",
                read_of(&idx, a, key),
                read_of(&idx, b, key)
            )
        });
    }
    check_reads(&idx, &mut found);
    conclude(history, &idx, idx.edges(), found)
}

/// The report of a history whose dependency `edges` are known: the graph
/// they make, its cycles classified (explained by `ex`), and the counts.
pub(crate) fn conclude(
    history: &History,
    ex: &dyn explain::Explains,
    mut edges: Vec<(u32, u32, Kinds)>,
    mut found: Found,
) -> Report {
    let graph = Graph::new(history.len(), &mut edges);
    drop(edges);
    let unclassified = cycles(ex, &graph, &mut found);
    Report {
        findings: found.0,
        txns: history.len(),
        committed: history.txns.iter().filter(|t| t.committed()).count(),
        edges: graph.edge_count(),
        unclassified,
    }
}

/// `T<t> read k<key> = [...]` for the first read of `key` by `t`.
fn read_of(idx: &Index<'_>, t: u32, key: u64) -> String {
    let v = idx.history.txns[t as usize]
        .ops
        .iter()
        .find_map(|op| match op {
            Op::Read {
                key: k,
                values: Some(v),
            } if *k == key => Some(v),
            _ => None,
        });
    format!("T{t} read {}", v.map_or("?".into(), |v| show_list(v)))
}

/// G1a, G1b and internal consistency, read by read.
fn check_reads(idx: &Index<'_>, found: &mut Found) {
    for (i, t) in idx.history.txns.iter().enumerate() {
        if !t.committed() {
            continue;
        }
        let i = i as u32;
        for (j, op) in t.ops.iter().enumerate() {
            let Op::Read {
                key,
                values: Some(v),
            } = op
            else {
                continue;
            };
            let key = *key;
            if let Some(&bad) = v.iter().find(|&&x| {
                idx.history
                    .txns
                    .get(idx.writer(key, x) as usize)
                    .is_some_and(|w| w.aborted())
            }) {
                let w = idx.writer(key, bad);
                found.add(Class::G1a, [i, w], || {
                    format!(
                        "T{i} read k{key} = {}, which holds {bad}, appended by T{w}, which aborted. {}; {}",
                        show_list(v),
                        explain::txn_line(&idx.history.txns[i as usize], i),
                        explain::txn_line(&idx.history.txns[w as usize], w)
                    )
                });
            }
            if let Some(&last) = v.last() {
                let w = idx.writer(key, last);
                if w != i && idx.live(w) && overwritten(idx, w, key, last) {
                    found.add(Class::G1b, [i, w], || {
                        format!(
                            "T{i} read k{key} = {}: its last value {last} is an intermediate version, T{w} appended to k{key} again after it. {}; {}",
                            show_list(v),
                            explain::txn_line(&idx.history.txns[i as usize], i),
                            explain::txn_line(&idx.history.txns[w as usize], w)
                        )
                    });
                }
            }
            if let Some(expected) = own_view(t, j, v)
                && expected != *v
            {
                found.add(Class::Internal, [i, i], || {
                    format!(
                        "T{i} read k{key} = {} where its own earlier operations imply {}. {}",
                        show_list(v),
                        show_list(&expected),
                        explain::txn_line(&idx.history.txns[i as usize], i)
                    )
                });
            }
        }
    }
}

/// Whether `t` appended to `key` again after appending `value`.
fn overwritten(idx: &Index<'_>, t: u32, key: u64, value: Value) -> bool {
    let ops = &idx.history.txns[t as usize].ops;
    let at = ops
        .iter()
        .position(|o| matches!(o, Op::Append { key: k, value: x } if *k == key && *x == value));
    at.is_some_and(|p| {
        ops[p + 1..]
            .iter()
            .any(|o| matches!(o, Op::Append { key: k, .. } if *k == key))
    })
}

/// What read `j` of `t` (returning `got`) must return given the
/// transaction's own earlier operations on its key: its last earlier read
/// followed by its appends since; without an earlier read, `got` must end
/// with the appends (whatever came before them). `None` when the
/// transaction did nothing to the key before.
fn own_view(t: &super::history::Txn, j: usize, got: &[Value]) -> Option<Vec<Value>> {
    let key = t.ops[j].key();
    let mut base: Option<Vec<Value>> = None;
    let mut appended: Vec<Value> = Vec::new();
    for op in &t.ops[..j] {
        match op {
            Op::Append { key: k, value } if *k == key => appended.push(*value),
            Op::Read {
                key: k,
                values: Some(v),
            } if *k == key => {
                base = Some(v.clone());
                appended.clear();
            }
            _ => {}
        }
    }
    let mut expected = match base {
        Some(b) => b,
        None if appended.is_empty() => return None,
        // Unknown prefix: take the one the read shows, if it has room.
        None => got[..got.len().saturating_sub(appended.len())].to_vec(),
    };
    expected.extend(appended);
    Some(expected)
}

/// Nodes one G-single/G2-item classification may visit, and all of them
/// together: bounds the checker's time on a history whose whole run is
/// one component (READ COMMITTED under contention).
const REACH_BUDGET: usize = 20_000;
const TOTAL_REACH_BUDGET: usize = 50_000_000;

/// The four cycle classes: counts by component and by closing edge, one
/// example each.
pub(crate) fn cycles(ex: &dyn explain::Explains, graph: &Graph, found: &mut Found) -> u64 {
    let comp_ww = graph.components(WW);
    let comp_wwr = graph.components(WW | WR);
    let comp_all = graph.components(ALL);
    // (class, path mask, component map, closing kind)
    let classes: [(Class, Kinds, &[u32], Kinds); 4] = [
        (Class::G0, WW, &comp_ww, WW),
        (Class::G1c, WW | WR, &comp_wwr, WR),
        (Class::GSingle, WW | WR, &comp_all, RW),
        (Class::G2Item, ALL, &comp_all, RW),
    ];
    let mut candidates: Vec<Vec<(u32, u32)>> = vec![Vec::new(); 4];
    // The components already counted, per class.
    let mut counted: Vec<std::collections::HashSet<u32>> = vec![Default::default(); 4];
    let mut reach_wwr = Reach::new(graph, WW | WR, &comp_wwr);
    let (mut spent, mut unclassified) = (0usize, 0u64);
    for (a, b, k) in graph.edges() {
        let (ai, bi) = (a as usize, b as usize);
        let class = if k & WW != 0 && comp_ww[ai] == comp_ww[bi] {
            0
        } else if k & (WW | WR) == WR && comp_wwr[ai] == comp_wwr[bi] {
            1
        } else if k & (WW | WR) != 0 || comp_all[ai] != comp_all[bi] {
            continue;
        } else {
            // An rw edge on a cycle: G-single when b reaches a without rw.
            let budget = REACH_BUDGET.min(TOTAL_REACH_BUDGET.saturating_sub(spent));
            let (reached, visited) = reach_wwr.reaches(b, a, budget);
            spent += visited;
            match reached {
                Some(true) => 2,
                Some(false) => 3,
                None => {
                    unclassified += 1;
                    continue;
                }
            }
        };
        let (cls, _, comp, _) = classes[class];
        let f = &mut found.0[cls as usize];
        f.edges += 1;
        // The first closing edge of each new component: one cycle per case.
        if counted[class].insert(comp[ai]) {
            f.count += 1;
            if candidates[class].len() < MAX_CYCLES {
                candidates[class].push((a, b));
            }
        }
    }
    drop(reach_wwr);
    let mut parent = vec![NONE; graph.nodes()];
    for (c, &(class, mask, comp, closing)) in classes.iter().enumerate() {
        let cycles: Vec<Vec<(u32, u32, Kinds)>> = candidates[c]
            .iter()
            .filter_map(|&(a, b)| {
                let path = graph.shortest_path(b, a, mask, comp, &mut parent, 200_000)?;
                let mut steps = vec![(a, path[0], closing)];
                for w in path.windows(2) {
                    steps.push((w[0], w[1], explain::pick(graph.kinds(w[0], w[1]), mask)));
                }
                Some(steps)
            })
            .collect();
        let f = &mut found.0[class as usize];
        if let Some(shortest) = cycles.iter().min_by_key(|s| s.len()) {
            f.example = Some(explain::cycle(ex, shortest));
        }
        f.cycles = cycles
            .iter()
            .map(|steps| {
                steps
                    .iter()
                    .map(|&(from, to, kind)| Step {
                        from,
                        to,
                        kind: match kind {
                            WW => Dep::Ww,
                            WR => Dep::Wr,
                            _ => Dep::Rw,
                        },
                        why: ex.edge(from, to, kind),
                    })
                    .collect()
            })
            .collect();
    }
    unclassified
}
