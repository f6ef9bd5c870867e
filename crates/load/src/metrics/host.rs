//! The host's CPU use over an interval, from the aggregate `cpu` line of
//! `/proc/stat` (Linux; fields in USER_HZ ticks, see proc(5)): how busy
//! the machine was, and how much time the hypervisor stole.

use crate::model::HostCpu;

/// One reading of `/proc/stat`'s `cpu` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTicks {
    /// All ticks (the sum of the first eight fields: user, nice, system,
    /// idle, iowait, irq, softirq, steal; guest time is already in user).
    total: u64,
    /// idle + iowait.
    idle: u64,
    steal: u64,
    cpus: u32,
}

impl CpuTicks {
    /// Reads `/proc/stat`; `None` where it does not exist or cannot be
    /// parsed (not Linux).
    pub fn now() -> Option<CpuTicks> {
        Self::parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    /// Parses the text of `/proc/stat`.
    pub fn parse(text: &str) -> Option<CpuTicks> {
        let mut lines = text.lines();
        let fields: Vec<u64> = lines
            .next()?
            .strip_prefix("cpu ")?
            .split_whitespace()
            .take(8)
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()?;
        if fields.len() < 8 {
            return None;
        }
        let cpus = lines
            .take_while(|l| l.starts_with("cpu"))
            .filter(|l| l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
            .count() as u32;
        Some(CpuTicks {
            total: fields.iter().sum(),
            idle: fields[3] + fields[4],
            steal: fields[7],
            cpus,
        })
    }

    /// Shares of CPU time between `self` (earlier) and `later`; `None`
    /// when no tick passed.
    pub fn until(&self, later: &CpuTicks) -> Option<HostCpu> {
        let total = later.total.checked_sub(self.total).filter(|t| *t > 0)? as f64;
        let idle = later.idle.saturating_sub(self.idle) as f64;
        let steal = later.steal.saturating_sub(self.steal) as f64;
        Some(HostCpu {
            busy_pct: 100.0 * (total - idle).max(0.0) / total,
            steal_pct: 100.0 * steal / total,
            cpus: later.cpus,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 50 0 25 400 25 0 0 0 0 0\ncpu1 50 0 25 400 25 0 0 0 0 0\nintr 1\n";
    // 1000 ticks later: 300 user, 100 system, 450 idle, 50 iowait, 100 steal.
    const AFTER: &str = "cpu  400 0 150 1250 100 0 0 100 0 0\ncpu0 200 0 75 625 50 0 0 50 0 0\ncpu1 200 0 75 625 50 0 0 50 0 0\nintr 2\n";

    #[test]
    fn busy_and_steal_are_shares_of_all_ticks_in_between() {
        let a = CpuTicks::parse(BEFORE).unwrap();
        let b = CpuTicks::parse(AFTER).unwrap();
        let h = a.until(&b).unwrap();
        assert_eq!(h.cpus, 2);
        assert!((h.busy_pct - 50.0).abs() < 1e-9, "{h:?}");
        assert!((h.steal_pct - 10.0).abs() < 1e-9, "{h:?}");
        assert_eq!(a.until(&a), None);
    }

    #[test]
    fn garbage_is_none() {
        assert_eq!(CpuTicks::parse("intr 1\n"), None);
        assert_eq!(CpuTicks::parse("cpu  1 2 x\n"), None);
        assert!(CpuTicks::now().is_some(), "this test runs on Linux");
    }
}
