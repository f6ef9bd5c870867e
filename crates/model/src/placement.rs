//! Settings about how sure a study is and where it runs: a target
//! precision for repetitions (`--precision 2%`, `--max-repeat N`), the CPUs
//! of the managed server and of the client threads (`--cpus
//! server=0,clients=1`), and an A/A calibration (`isobench calibrate`).
//! Plain data, stored in `results.json`'s `config`.

use serde::{Deserialize, Serialize};

/// Repetitions until every cell's TPS is known to ±`target_pct` % at
/// 95 % confidence (the sequential rule of `stats::sequential`), or
/// `max_repeat`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Precision {
    /// The relative half-width to reach, % (e.g. 2.0 for ±2 %).
    pub target_pct: f64,
    /// The most repetitions of a cell.
    pub max_repeat: u32,
}

/// The default `--max-repeat` with `--precision`.
pub const DEFAULT_MAX_REPEAT: u32 = 20;

/// Which CPUs the managed server's processes and isobench's client threads
/// may run on (Linux CPU numbers); `None` for a side: not pinned.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuPlacement {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<Vec<usize>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients: Option<Vec<usize>>,
}

impl CpuPlacement {
    /// Parses `server=LIST,clients=LIST` (either part may be left out):
    /// LIST is CPU numbers and ranges, `0`, `0-3`, `0,2` (an element
    /// without `=` belongs to the key before it), checked against
    /// `online`, the CPUs this process may use.
    ///
    /// Errors: an unknown key, an empty or malformed list, a CPU not in
    /// `online`, a CPU in both lists (the server and the clients would
    /// compete for it: leave a side out to share).
    pub fn parse(text: &str, online: &[usize]) -> Result<CpuPlacement, String> {
        let mut out = CpuPlacement::default();
        let mut current: Option<&str> = None;
        for item in text.split(',').map(str::trim) {
            let value = match item.split_once('=') {
                Some((key, value)) => {
                    let key = key.trim();
                    let slot = match key {
                        "server" => &mut out.server,
                        "clients" => &mut out.clients,
                        other => {
                            return Err(format!(
                                "unknown part '{other}' (use server=LIST,clients=LIST, e.g. server=0,clients=1)"
                            ));
                        }
                    };
                    if slot.is_some() {
                        return Err(format!("'{key}' given twice"));
                    }
                    *slot = Some(Vec::new());
                    current = Some(if key == "server" { "server" } else { "clients" });
                    value.trim()
                }
                None => item,
            };
            let Some(key) = current else {
                return Err(format!(
                    "'{item}' names no side: write server=LIST,clients=LIST, e.g. server=0,clients=1"
                ));
            };
            let list = if key == "server" {
                out.server.as_mut()
            } else {
                out.clients.as_mut()
            }
            .expect("set above");
            list.extend(cpu_range(value)?);
        }
        for (name, list) in [("server", &mut out.server), ("clients", &mut out.clients)] {
            if let Some(l) = list {
                l.sort_unstable();
                l.dedup();
                if l.is_empty() {
                    return Err(format!("{name}= has no CPU"));
                }
                if let Some(c) = l.iter().find(|c| !online.contains(c)) {
                    return Err(format!(
                        "CPU {c} ({name}) is not available here (this process may use CPUs {})",
                        fmt_list(online)
                    ));
                }
            }
        }
        if out.server.is_none() && out.clients.is_none() {
            return Err("give server=LIST and/or clients=LIST, e.g. server=0,clients=1".into());
        }
        if let (Some(s), Some(c)) = (&out.server, &out.clients)
            && let Some(x) = s.iter().find(|x| c.contains(x))
        {
            return Err(format!(
                "CPU {x} is in both server= and clients=: give each side its own CPUs, \
                 or leave a side out to let it run anywhere"
            ));
        }
        Ok(out)
    }

    /// `server=0 clients=1`, `clients=2-3`.
    pub fn label(&self) -> String {
        let mut parts = Vec::new();
        if let Some(s) = &self.server {
            parts.push(format!("server={}", fmt_list(s)));
        }
        if let Some(c) = &self.clients {
            parts.push(format!("clients={}", fmt_list(c)));
        }
        parts.join(" ")
    }

    /// Whether the server and the clients may run on a common CPU (a side
    /// left unpinned may run anywhere).
    pub fn shared(placement: Option<&CpuPlacement>) -> bool {
        match placement {
            Some(CpuPlacement {
                server: Some(s),
                clients: Some(c),
            }) => s.iter().any(|x| c.contains(x)),
            _ => true,
        }
    }
}

/// `3` or `0-3` as CPU numbers.
fn cpu_range(s: &str) -> Result<Vec<usize>, String> {
    let num = |t: &str| {
        t.trim()
            .parse::<usize>()
            .map_err(|_| format!("'{s}' is not a CPU number or range (e.g. 0, 2-3)"))
    };
    match s.split_once('-') {
        Some((a, b)) => {
            let (a, b) = (num(a)?, num(b)?);
            if a > b {
                return Err(format!("'{s}': the range goes down"));
            }
            Ok((a..=b).collect())
        }
        None => Ok(vec![num(s)?]),
    }
}

/// CPU numbers with runs as ranges: `0-3,6`.
pub fn fmt_list(cpus: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if j > i {
            format!("{}-{}", cpus[i], cpus[j])
        } else {
            cpus[i].to_string()
        });
        i = j + 1;
    }
    out.join(",")
}

/// An A/A calibration (`isobench calibrate`): `pairs` comparisons of the
/// same cell with itself, each of `per_side` runs a side, interleaved A B
/// A B within a pair; repetition r (from 1) is in pair `(r - 1) / (2 ·
/// per_side)`, side A when `(r - 1)` is even.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub pairs: u32,
    pub per_side: u32,
    /// The MDE to plan repetitions for, %.
    pub target_mde_pct: f64,
}

impl Calibration {
    /// Pair (from 0) and side (`true` for A) of repetition `r` (from 1).
    pub fn slot(&self, r: u32) -> (u32, bool) {
        let i = r.saturating_sub(1);
        (i / (2 * self.per_side.max(1)), i.is_multiple_of(2))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placements_parse_and_refuse_overlap_and_absent_cpus() {
        let online = [0, 1, 2, 3];
        let p = CpuPlacement::parse("server=0,clients=1", &online).unwrap();
        assert_eq!((p.server, p.clients), (Some(vec![0]), Some(vec![1])));
        let p = CpuPlacement::parse("server=0-1,3,clients=2", &online).unwrap();
        assert_eq!(p.server, Some(vec![0, 1, 3]));
        assert_eq!(p.label(), "server=0-1,3 clients=2");
        let p = CpuPlacement::parse("clients=2-3", &online).unwrap();
        assert!(p.server.is_none() && CpuPlacement::shared(Some(&p)));
        for (text, needle) in [
            ("server=0,clients=0", "CPU 0 is in both"),
            ("server=0-2,clients=2-3", "CPU 2 is in both"),
            (
                "server=7",
                "CPU 7 (server) is not available here (this process may use CPUs 0-3)",
            ),
            ("cpu=1", "unknown part 'cpu'"),
            ("1,2", "names no side"),
            ("server=a", "'a' is not a CPU number"),
            ("server=3-1", "range goes down"),
            ("server=0,server=1", "'server' given twice"),
        ] {
            let e = CpuPlacement::parse(text, &online).unwrap_err();
            assert!(e.contains(needle), "{text}: {e}");
        }
        assert!(!CpuPlacement::shared(Some(
            &CpuPlacement::parse("server=0,clients=1", &online).unwrap()
        )));
        assert!(CpuPlacement::shared(None));
    }

    #[test]
    fn calibration_slots_interleave_a_and_b() {
        let c = Calibration {
            pairs: 2,
            per_side: 3,
            target_mde_pct: 5.0,
        };
        let slots: Vec<(u32, bool)> = (1..=12).map(|r| c.slot(r)).collect();
        assert_eq!(slots[0], (0, true));
        assert_eq!(slots[1], (0, false));
        assert_eq!(slots[5], (0, false));
        assert_eq!(slots[6], (1, true));
        assert_eq!(slots[11], (1, false));
        assert_eq!(fmt_list(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
    }
}
