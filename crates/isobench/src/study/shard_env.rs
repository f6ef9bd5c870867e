//! Where `--shards N` finds this process's shard index: the variables an
//! orchestrator sets in each process it starts
//! (docs/src/reference/sharded-runs.md, "Where the index comes from").
//!
//! In order, the first that is set wins:
//!
//! 1. `JOB_COMPLETION_INDEX`: a pod of a Kubernetes Indexed Job (0 to
//!    `completions` - 1).
//! 2. `SLURM_ARRAY_TASK_ID`: a task of a Slurm job array (`sbatch
//!    --array=0-2`). Slurm sets `SLURM_PROCID` to 0 in *every* array task
//!    (each task is a job of its own with one task), so the array's id
//!    must come before it. The index is the task id minus
//!    `SLURM_ARRAY_TASK_MIN` (an array `1-3` is shards 0 to 2); the
//!    array's size (`SLURM_ARRAY_TASK_COUNT`, else `MAX - MIN + 1`) must
//!    be N.
//! 3. `SLURM_PROCID`: a task of a job step (`srun -n 3`), whose size
//!    (`SLURM_NTASKS`, when set) must be N.
//!
//! An array task that runs `srun isobench ...` (one task) has both an
//! array id and `SLURM_PROCID=0`: the array's id is the shard, as it
//! should be.

/// Where the index came from and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardIndex {
    /// The variable read, for messages (`SLURM_ARRAY_TASK_ID`).
    pub var: &'static str,
    pub index: u32,
}

/// The shard index of one of `n` shards from the variables `get` returns
/// (the process's environment in use; a map in tests).
///
/// Errors: none of the variables is set; a value that is not an index;
/// an array or step whose size is not `n` (the message names the
/// variables and values); an index not below `n`.
pub fn shard_index(n: u32, get: impl Fn(&str) -> Option<String>) -> Result<ShardIndex, String> {
    let int = |var: &'static str| -> Result<Option<u32>, String> {
        match get(var) {
            None => Ok(None),
            Some(v) => v
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| format!("{var}='{v}' is not a shard index (an integer from 0)")),
        }
    };
    let found = if let Some(i) = int("JOB_COMPLETION_INDEX")? {
        ShardIndex {
            var: "JOB_COMPLETION_INDEX",
            index: i,
        }
    } else if let Some(id) = int("SLURM_ARRAY_TASK_ID")? {
        let min = int("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
        let size = match (int("SLURM_ARRAY_TASK_COUNT")?, int("SLURM_ARRAY_TASK_MAX")?) {
            (Some(c), _) => Some(c),
            (None, Some(max)) => Some(max.saturating_sub(min) + 1),
            (None, None) => None,
        };
        if let Some(size) = size.filter(|&s| s != n) {
            return Err(format!(
                "--shards {n} in a Slurm job array of {size} tasks (SLURM_ARRAY_TASK_COUNT): \
                 submit the array with as many tasks as shards (sbatch --array=0-{})",
                n.saturating_sub(1)
            ));
        }
        let index = id.checked_sub(min).ok_or_else(|| {
            format!("SLURM_ARRAY_TASK_ID={id} is below SLURM_ARRAY_TASK_MIN={min}")
        })?;
        ShardIndex {
            var: "SLURM_ARRAY_TASK_ID",
            index,
        }
    } else if let Some(i) = int("SLURM_PROCID")? {
        if let Some(size) = int("SLURM_NTASKS")?.filter(|&s| s != n) {
            return Err(format!(
                "--shards {n} in a Slurm step of {size} tasks (SLURM_NTASKS): \
                 start as many tasks as shards (srun -n {n})"
            ));
        }
        ShardIndex {
            var: "SLURM_PROCID",
            index: i,
        }
    } else {
        return Err(
            "--shards N takes the shard's index from JOB_COMPLETION_INDEX (Kubernetes Indexed Job), \
             SLURM_ARRAY_TASK_ID (Slurm job array) or SLURM_PROCID (Slurm step), and none is set: \
             set one, or give --shard I/N"
                .into(),
        );
    };
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(n: u32, vars: &[(&str, &str)]) -> Result<ShardIndex, String> {
        let vars: std::collections::HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        shard_index(n, |k| vars.get(k).cloned())
    }

    fn ok(n: u32, vars: &[(&str, &str)]) -> (&'static str, u32) {
        let s = from(n, vars).unwrap();
        (s.var, s.index)
    }

    /// What `sbatch --array=0-2` sets in task 2 (measured on Slurm 22.05:
    /// SLURM_PROCID is 0 in every array task, SLURM_NTASKS unset).
    const ARRAY_TASK_2: &[(&str, &str)] = &[
        ("SLURM_ARRAY_TASK_ID", "2"),
        ("SLURM_ARRAY_TASK_COUNT", "3"),
        ("SLURM_ARRAY_TASK_MIN", "0"),
        ("SLURM_ARRAY_TASK_MAX", "2"),
        ("SLURM_ARRAY_JOB_ID", "41"),
        ("SLURM_PROCID", "0"),
    ];

    #[test]
    fn an_array_task_is_its_array_index_not_its_procid() {
        assert_eq!(ok(3, ARRAY_TASK_2), ("SLURM_ARRAY_TASK_ID", 2));
        // `srun isobench ...` inside the array task: one task, PROCID 0.
        let mut in_srun = ARRAY_TASK_2.to_vec();
        in_srun.push(("SLURM_NTASKS", "1"));
        assert_eq!(ok(3, &in_srun), ("SLURM_ARRAY_TASK_ID", 2));
        // An array 1-3: shards 0 to 2; its size from MIN and MAX alone.
        let one_based = [
            ("SLURM_ARRAY_TASK_ID", "3"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_MAX", "3"),
        ];
        assert_eq!(ok(3, &one_based), ("SLURM_ARRAY_TASK_ID", 2));
        let e = from(4, ARRAY_TASK_2).unwrap_err();
        assert!(
            e.contains("array of 3 tasks") && e.contains("--array=0-3"),
            "{e}"
        );
    }

    #[test]
    fn a_step_task_is_its_procid() {
        let step = [("SLURM_PROCID", "1"), ("SLURM_NTASKS", "3")];
        assert_eq!(ok(3, &step), ("SLURM_PROCID", 1));
        let e = from(2, &step).unwrap_err();
        assert!(
            e.contains("step of 3 tasks") && e.contains("srun -n 2"),
            "{e}"
        );
        // Without SLURM_NTASKS the index alone.
        assert_eq!(ok(3, &[("SLURM_PROCID", "2")]), ("SLURM_PROCID", 2));
    }

    #[test]
    fn kubernetes_comes_first_then_the_array_then_the_step() {
        let mut all = ARRAY_TASK_2.to_vec();
        all.push(("JOB_COMPLETION_INDEX", "1"));
        assert_eq!(ok(3, &all), ("JOB_COMPLETION_INDEX", 1));
        let e = from(3, &[]).unwrap_err();
        for var in [
            "JOB_COMPLETION_INDEX",
            "SLURM_ARRAY_TASK_ID",
            "SLURM_PROCID",
        ] {
            assert!(e.contains(var), "{e}");
        }
        let e = from(3, &[("SLURM_ARRAY_TASK_ID", "x")]).unwrap_err();
        assert!(
            e.contains("SLURM_ARRAY_TASK_ID='x' is not a shard index"),
            "{e}"
        );
    }
}
