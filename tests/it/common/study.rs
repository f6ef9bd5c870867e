//! Short studies: `isobench run` with runs of a second, so that a test
//! takes seconds. `Study::short().args(&["-w", "tpcb"]).ok()`.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;

use serde_json::Value;

use super::files::{assert_schema_valid, isobench, out_dir, read_json, run};

/// An `isobench run` command line with short-run defaults, a results
/// directory of its own, and the caller's arguments.
pub struct Study {
    duration: String,
    warmup: String,
    repeat: String,
    sample_interval: Option<String>,
    quiet: bool,
    args: Vec<String>,
    /// Keeps the temporary results directory while the study or what it
    /// ran is alive.
    base: Option<Arc<tempfile::TempDir>>,
    dir: PathBuf,
}

/// What a study printed, and where its results are.
pub struct Ran {
    pub out: Output,
    pub stdout: String,
    pub stderr: String,
    pub dir: PathBuf,
    _base: Option<Arc<tempfile::TempDir>>,
}

impl Ran {
    /// results.json of the study.
    pub fn json(&self) -> Value {
        read_json(&self.dir)
    }
}

impl Study {
    /// 1 repetition of a 1 s run without warm-up, `--quiet`, into a new
    /// temporary results directory.
    pub fn short() -> Study {
        let (base, dir) = out_dir("results");
        Study {
            duration: "1s".into(),
            warmup: "0s".into(),
            repeat: "1".into(),
            sample_interval: None,
            quiet: true,
            args: Vec::new(),
            base: Some(Arc::new(base)),
            dir,
        }
    }

    /// The measured duration of each run, e.g. "1500ms".
    pub fn duration(mut self, d: &str) -> Study {
        self.duration = d.into();
        self
    }

    /// The warm-up of each run.
    pub fn warmup(mut self, d: &str) -> Study {
        self.warmup = d.into();
        self
    }

    /// Repetitions of each cell.
    pub fn repeat(mut self, n: u32) -> Study {
        self.repeat = n.to_string();
        self
    }

    /// The server sampling interval (`--sample-interval`).
    pub fn sample_interval(mut self, d: &str) -> Study {
        self.sample_interval = Some(d.into());
        self
    }

    /// Without `--quiet`: the summary on stdout, progress on stderr.
    pub fn loud(mut self) -> Study {
        self.quiet = false;
        self
    }

    /// Results into `dir` (kept by the caller) instead of a temporary one.
    pub fn out(mut self, dir: &Path) -> Study {
        self.dir = dir.to_path_buf();
        self.base = None;
        self
    }

    /// More arguments (flags, a study file), after the defaults. clap
    /// refuses a flag given twice: change the defaults with [`duration`],
    /// [`warmup`], [`repeat`], [`sample_interval`], [`loud`] and [`out`].
    ///
    /// [`duration`]: Study::duration
    /// [`warmup`]: Study::warmup
    /// [`repeat`]: Study::repeat
    /// [`sample_interval`]: Study::sample_interval
    /// [`loud`]: Study::loud
    /// [`out`]: Study::out
    pub fn args(mut self, args: &[&str]) -> Study {
        self.args.extend(args.iter().map(|a| a.to_string()));
        self
    }

    /// The whole command line after `isobench`.
    pub fn command_line(&self) -> Vec<String> {
        let mut all = self.without_out();
        all.extend(["--out".to_string(), self.dir.to_str().unwrap().to_string()]);
        all
    }

    /// The command line without `--out`, for callers that choose a
    /// results directory per process (shards).
    pub fn without_out(&self) -> Vec<String> {
        let mut all: Vec<String> = [
            "run",
            "--duration",
            &self.duration,
            "--warmup",
            &self.warmup,
            "--repeat",
            &self.repeat,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if let Some(interval) = &self.sample_interval {
            all.extend(["--sample-interval".to_string(), interval.clone()]);
        }
        if self.quiet {
            all.push("--quiet".into());
        }
        all.extend(self.args.iter().cloned());
        all
    }

    /// The `isobench` command with this command line, to spawn (a test
    /// that interrupts it) or to give an environment.
    pub fn command(&self) -> std::process::Command {
        let mut c = isobench();
        c.args(self.command_line());
        c
    }

    /// Runs it, whatever the outcome.
    pub fn run(&self) -> Ran {
        let line = self.command_line();
        let args: Vec<&str> = line.iter().map(String::as_str).collect();
        let (out, stdout, stderr) = run(&args);
        Ran {
            out,
            stdout,
            stderr,
            dir: self.dir.clone(),
            _base: self.base.clone(),
        }
    }

    /// Runs it; it must succeed and write a complete results.json that
    /// the schema accepts, which is returned.
    pub fn ok(&self) -> Value {
        let ran = self.run();
        assert!(
            ran.out.status.success(),
            "isobench {:?} failed ({}): {}",
            self.args,
            ran.out.status,
            ran.stderr
        );
        let r = ran.json();
        assert_schema_valid(&r);
        assert_eq!(r["complete"], true, "results.json says complete: false");
        r
    }
}

/// `isobench run FILE --out DIR` and `extra` flags: a study file as
/// written, its own durations and repetitions kept.
pub fn run_file(file: &Path, dir: &Path, extra: &[&str]) -> Ran {
    let mut args = vec![
        "run",
        file.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let (out, stdout, stderr) = run(&args);
    Ran {
        out,
        stdout,
        stderr,
        dir: dir.to_path_buf(),
        _base: None,
    }
}
