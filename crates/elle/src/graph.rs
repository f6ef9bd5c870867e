//! The dependency graph: transactions as nodes, edges labelled with the
//! kinds of dependency between two transactions (Adya, "Weak Consistency:
//! A Generalized Theory and Optimistic Implementations for Distributed
//! Transactions", MIT PhD thesis, 1999, section 3.4: write-write,
//! write-read and read-write dependencies). Stored as compressed sparse
//! rows so that a history of a million transactions fits in a few tens of
//! megabytes; strongly connected components by Tarjan's algorithm
//! (Tarjan, "Depth-First Search and Linear Graph Algorithms", SIAM J.
//! Comput. 1972) without recursion, shortest cycles by breadth-first search.

/// Edge kinds, as bits: an edge may carry several.
pub type Kinds = u8;
/// `Ti` installed a version of a key and `Tj` installed the next one.
pub const WW: Kinds = 1;
/// `Tj` read a version `Ti` installed.
pub const WR: Kinds = 2;
/// `Ti` read a version of a key and `Tj` installed the next one (an
/// anti-dependency).
pub const RW: Kinds = 4;
/// Every kind.
pub const ALL: Kinds = WW | WR | RW;

/// A directed graph over nodes `0..n` in compressed sparse rows.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    /// Edges of node `i` are `targets[offsets[i]..offsets[i + 1]]`.
    offsets: Vec<u32>,
    targets: Vec<u32>,
    kinds: Vec<Kinds>,
}

impl Graph {
    /// The graph of `n` nodes with `edges` `(from, to, kinds)`; parallel
    /// edges are merged (their kinds or-ed). Sorts `edges` in place.
    pub fn new(n: usize, edges: &mut [(u32, u32, Kinds)]) -> Self {
        edges.sort_unstable_by_key(|&(a, b, _)| (a, b));
        let mut offsets = vec![0u32; n + 1];
        let mut targets = Vec::with_capacity(edges.len());
        let mut kinds: Vec<Kinds> = Vec::with_capacity(edges.len());
        let mut last = None;
        for &(a, b, k) in edges.iter() {
            if last == Some((a, b)) {
                *kinds.last_mut().expect("an edge was pushed") |= k;
                continue;
            }
            last = Some((a, b));
            offsets[a as usize + 1] += 1;
            targets.push(b);
            kinds.push(k);
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        Graph {
            offsets,
            targets,
            kinds,
        }
    }

    pub fn nodes(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    pub fn edge_count(&self) -> usize {
        self.targets.len()
    }

    /// The edges out of `node`: `(to, kinds)`.
    pub fn out(&self, node: u32) -> impl Iterator<Item = (u32, Kinds)> + '_ {
        let (s, e) = (
            self.offsets[node as usize] as usize,
            self.offsets[node as usize + 1] as usize,
        );
        self.targets[s..e]
            .iter()
            .copied()
            .zip(self.kinds[s..e].iter().copied())
    }

    /// Every edge `(from, to, kinds)`.
    pub fn edges(&self) -> impl Iterator<Item = (u32, u32, Kinds)> + '_ {
        (0..self.nodes() as u32).flat_map(move |a| self.out(a).map(move |(b, k)| (a, b, k)))
    }

    /// The strongly connected component of every node, counting only
    /// edges with a kind in `mask`: two nodes have the same number exactly
    /// when each reaches the other. Tarjan's algorithm with an explicit
    /// stack: O(nodes + edges) time, no recursion.
    pub fn components(&self, mask: Kinds) -> Vec<u32> {
        const UNSEEN: u32 = u32::MAX;
        let n = self.nodes();
        let mut index = vec![UNSEEN; n];
        let mut low = vec![0u32; n];
        let mut comp = vec![UNSEEN; n];
        let mut on_stack = vec![false; n];
        let mut stack: Vec<u32> = Vec::new();
        // (node, position of its next edge to visit)
        let mut call: Vec<(u32, u32)> = Vec::new();
        let (mut next_index, mut next_comp) = (0u32, 0u32);
        for root in 0..n as u32 {
            if index[root as usize] != UNSEEN {
                continue;
            }
            call.push((root, self.offsets[root as usize]));
            index[root as usize] = next_index;
            low[root as usize] = next_index;
            next_index += 1;
            stack.push(root);
            on_stack[root as usize] = true;
            while let Some(&mut (v, ref mut pos)) = call.last_mut() {
                let end = self.offsets[v as usize + 1];
                let mut descended = false;
                while *pos < end {
                    let e = *pos as usize;
                    *pos += 1;
                    if self.kinds[e] & mask == 0 {
                        continue;
                    }
                    let w = self.targets[e];
                    if index[w as usize] == UNSEEN {
                        index[w as usize] = next_index;
                        low[w as usize] = next_index;
                        next_index += 1;
                        stack.push(w);
                        on_stack[w as usize] = true;
                        call.push((w, self.offsets[w as usize]));
                        descended = true;
                        break;
                    } else if on_stack[w as usize] {
                        low[v as usize] = low[v as usize].min(index[w as usize]);
                    }
                }
                if descended {
                    continue;
                }
                call.pop();
                if let Some(&(parent, _)) = call.last() {
                    low[parent as usize] = low[parent as usize].min(low[v as usize]);
                }
                if low[v as usize] == index[v as usize] {
                    while let Some(w) = stack.pop() {
                        on_stack[w as usize] = false;
                        comp[w as usize] = next_comp;
                        if w == v {
                            break;
                        }
                    }
                    next_comp += 1;
                }
            }
        }
        comp
    }

    /// The shortest path from `from` to `to` over edges with a kind in
    /// `mask` whose ends are both in component `comp[from]` of `comp`
    /// (breadth-first search), as the nodes from `from` to `to`; `None`
    /// when there is none or when more than `budget` nodes were visited.
    /// `parent` is scratch space of [`Graph::nodes`] entries, all
    /// `u32::MAX` on entry and on return.
    pub fn shortest_path(
        &self,
        from: u32,
        to: u32,
        mask: Kinds,
        comp: &[u32],
        parent: &mut [u32],
        budget: usize,
    ) -> Option<Vec<u32>> {
        let c = comp[from as usize];
        let mut queue = std::collections::VecDeque::from([from]);
        let mut seen = vec![from];
        parent[from as usize] = from;
        let mut found = from == to;
        while let Some(v) = queue.pop_front() {
            if found || seen.len() > budget {
                break;
            }
            for (w, k) in self.out(v) {
                if k & mask == 0 || comp[w as usize] != c || parent[w as usize] != u32::MAX {
                    continue;
                }
                parent[w as usize] = v;
                seen.push(w);
                if w == to {
                    found = true;
                    break;
                }
                queue.push_back(w);
            }
        }
        let path = found.then(|| {
            let mut path = vec![to];
            let mut v = to;
            while v != from {
                v = parent[v as usize];
                path.push(v);
            }
            path.reverse();
            path
        });
        for v in seen {
            parent[v as usize] = u32::MAX;
        }
        path
    }

    /// The level of every node over edges with a kind in `mask`: the
    /// length of the longest path of such edges between components that
    /// ends at its component (`comp`, from [`Graph::components`] with the
    /// same `mask`). Along every edge between components the level grows,
    /// so a node can only reach nodes of higher level, or of its own
    /// component. In a history the levels grow with time (every
    /// transaction depends on recent ones), which makes them a sharp
    /// bound for [`Reach::reaches`]. O(nodes + edges).
    pub fn levels(&self, mask: Kinds, comp: &[u32]) -> Vec<u32> {
        let n = self.nodes();
        let comps = comp.iter().map(|&c| c as usize + 1).max().unwrap_or(0);
        // Nodes grouped by component (counting sort).
        let mut start = vec![0u32; comps + 1];
        for &c in comp {
            start[c as usize + 1] += 1;
        }
        for c in 0..comps {
            start[c + 1] += start[c];
        }
        let mut fill = start.clone();
        let mut by_comp = vec![0u32; n];
        for (v, &c) in comp.iter().enumerate() {
            by_comp[fill[c as usize] as usize] = v as u32;
            fill[c as usize] += 1;
        }
        let mut level = vec![0u32; comps];
        // Tarjan numbers sinks first: sources are the highest numbers.
        for c in (0..comps).rev() {
            let here = level[c];
            for &v in &by_comp[start[c] as usize..start[c + 1] as usize] {
                for (w, k) in self.out(v) {
                    let d = comp[w as usize] as usize;
                    if k & mask != 0 && d != c && level[d] <= here {
                        level[d] = here + 1;
                    }
                }
            }
        }
        comp.iter().map(|&c| level[c as usize]).collect()
    }

    /// The kinds of the edge `from -> to` (0 if none).
    pub fn kinds(&self, from: u32, to: u32) -> Kinds {
        self.out(from).find(|&(w, _)| w == to).map_or(0, |(_, k)| k)
    }
}

/// Reachability queries over the edges of `graph` with a kind in `mask`,
/// given its components `comp` for that mask ([`Graph::components`]):
/// the [`Graph::levels`] of the same mask are computed once, and the
/// search's scratch space is kept between queries.
pub struct Reach<'g> {
    graph: &'g Graph,
    mask: Kinds,
    comp: &'g [u32],
    level: Vec<u32>,
    /// One flag per node, all false between queries.
    seen: Vec<bool>,
}

impl<'g> Reach<'g> {
    pub fn new(graph: &'g Graph, mask: Kinds, comp: &'g [u32]) -> Self {
        Reach {
            graph,
            mask,
            comp,
            level: graph.levels(mask, comp),
            seen: vec![false; graph.nodes()],
        }
    }

    /// Whether `to` is reachable from `from`: a depth-first search that
    /// never enters a node whose level is not below `to`'s (it cannot lead
    /// there). `None` when more than `budget` nodes were visited first.
    /// Also returns the nodes visited.
    pub fn reaches(&mut self, from: u32, to: u32, budget: usize) -> (Option<bool>, usize) {
        let (comp, level, seen) = (self.comp, &self.level, &mut self.seen);
        let (target, ceiling) = (comp[to as usize], level[to as usize]);
        if comp[from as usize] == target {
            return (Some(true), 0);
        }
        if level[from as usize] >= ceiling {
            return (Some(false), 0);
        }
        let mut stack = vec![from];
        let mut visited = vec![from];
        seen[from as usize] = true;
        let mut result = Some(false);
        'search: while let Some(v) = stack.pop() {
            for (w, k) in self.graph.out(v) {
                if k & self.mask == 0 || seen[w as usize] {
                    continue;
                }
                if comp[w as usize] == target {
                    result = Some(true);
                    break 'search;
                }
                if level[w as usize] >= ceiling {
                    continue;
                }
                if visited.len() >= budget {
                    result = None;
                    break 'search;
                }
                seen[w as usize] = true;
                visited.push(w);
                stack.push(w);
            }
        }
        let count = visited.len();
        for v in visited {
            seen[v as usize] = false;
        }
        (result, count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_and_paths() {
        // 0 -> 1 -> 2 -> 0 (ww), 2 -> 3 (rw), 3 -> 4, 4 -> 3 (wr)
        let mut e = vec![
            (0, 1, WW),
            (1, 2, WW),
            (2, 0, WW),
            (2, 3, RW),
            (3, 4, WR),
            (4, 3, WR),
            (0, 1, WR),
        ];
        let g = Graph::new(5, &mut e);
        assert_eq!(g.edge_count(), 6);
        assert_eq!(g.kinds(0, 1), WW | WR);
        let c = g.components(ALL);
        assert_eq!(c[0], c[1]);
        assert_eq!(c[1], c[2]);
        assert_ne!(c[2], c[3]);
        assert_eq!(c[3], c[4]);
        let ww = g.components(WW);
        assert_ne!(ww[3], ww[4]);
        let mut parent = vec![u32::MAX; 5];
        assert_eq!(
            g.shortest_path(1, 0, ALL, &c, &mut parent, 100),
            Some(vec![1, 2, 0])
        );
        assert!(parent.iter().all(|&p| p == u32::MAX));
        assert_eq!(g.shortest_path(2, 3, ALL, &c, &mut parent, 100), None);
    }

    #[test]
    fn reach_follows_the_mask_and_keeps_its_scratch_clean() {
        // 0 -> 1 -> 2 (ww), 2 -> 0 (rw), 3 -> 0 (ww)
        let mut e = vec![(0, 1, WW), (1, 2, WW), (2, 0, RW), (3, 0, WW)];
        let g = Graph::new(4, &mut e);
        let comp = g.components(WW);
        let mut r = Reach::new(&g, WW, &comp);
        assert_eq!(r.reaches(0, 2, 100).0, Some(true));
        assert_eq!(r.reaches(3, 2, 100).0, Some(true));
        assert_eq!(r.reaches(2, 0, 100).0, Some(false), "only over rw");
        assert_eq!(r.reaches(3, 2, 1).0, None, "over budget");
        assert!(r.seen.iter().all(|s| !s));
        let all = g.components(ALL);
        let mut r = Reach::new(&g, ALL, &all);
        assert_eq!(r.reaches(2, 1, 100).0, Some(true));
    }

    #[test]
    fn a_long_chain_does_not_recurse() {
        let n = 1_000_000u32;
        let mut e: Vec<_> = (0..n).map(|i| (i, (i + 1) % n, WW)).collect();
        let g = Graph::new(n as usize, &mut e);
        let c = g.components(WW);
        assert!(c.iter().all(|&x| x == c[0]));
    }
}
