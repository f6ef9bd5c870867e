//! External loads: a study's runs driven by commands (autocannon against
//! an application, pgbench, a script) instead of a built-in workload.
//!
//! Per run, in order: `before_run`, the readiness check (`ready`: a URL
//! polled until it answers 2xx or 3xx, or a command polled until it exits
//! 0), `load_cmd` (the server is observed from its start to its end), then
//! `after_run` (also after a failed or interrupted load). `setup_cmd` runs
//! once per server and setup into the template database that every run
//! copies. Commands run with `sh -c` in their own process group, with
//! the placeholders of [`template`] substituted and the libpq variables
//! (`PGHOST`, `PGPORT`, `PGUSER`, `PGPASSWORD`, `PGDATABASE`) and
//! `ISOBENCH_<NAME>` for every placeholder in the environment. Interrupted
//! or timed-out commands get SIGINT, then SIGKILL after 5 s, as a group.

pub mod parse;
pub mod template;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio_util::sync::CancellationToken;

use crate::postgres::reaper;

/// How a command ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    /// The exit status; `None` when a signal ended it.
    pub exit_code: Option<i32>,
    /// Start to exit.
    pub wall: Duration,
    /// Stopped by isobench: interrupted (Ctrl-C) or over its time limit.
    pub stopped: Option<Stopped>,
}

/// Why isobench stopped a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    Interrupted,
    TimedOut,
}

impl Finished {
    /// Exit status 0, not stopped.
    pub fn ok(&self) -> bool {
        self.exit_code == Some(0) && self.stopped.is_none()
    }

    /// `exited with status 2`, `was killed by a signal`, `was interrupted`,
    /// `ran longer than its time limit`.
    pub fn describe(&self) -> String {
        match (self.stopped, self.exit_code) {
            (Some(Stopped::Interrupted), _) => "was interrupted".into(),
            (Some(Stopped::TimedOut), _) => "ran longer than its time limit and was stopped".into(),
            (None, Some(c)) => format!("exited with status {c}"),
            (None, None) => "was killed by a signal".into(),
        }
    }
}

/// A command's process group. Dropping it kills what is left of the
/// group (SIGKILL); [`Group::stop`] asks first.
#[derive(Debug)]
pub struct Group(Option<i32>);

impl Group {
    /// Whether a process of the group still runs.
    pub fn alive(&self) -> bool {
        self.0.is_some_and(group_alive)
    }

    /// Stops what is left of the group: SIGTERM, then SIGKILL when a
    /// member is still running after 5 s.
    pub async fn stop(mut self) {
        let Some(pgid) = self.0.take() else { return };
        if group_alive(pgid) {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGTERM);
            let deadline = Instant::now() + Duration::from_secs(5);
            while group_alive(pgid) && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            if group_alive(pgid) {
                let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
            }
        }
        reaper::forget_group(pgid);
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(pgid) = self.0.take() {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
            reaper::forget_group(pgid);
        }
    }
}

/// Whether a process of group `pgid` is running (zombies do not count),
/// from `/proc/<pid>/stat` (fields 3, state, and 5, process group).
fn group_alive(pgid: i32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.flatten().any(|e| {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            return false;
        };
        // After the command name, which is in parentheses and may hold spaces.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            return false;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        f.len() > 2 && f[0] != "Z" && f[0] != "X" && f[2] == pgid.to_string()
    })
}

/// Runs `cmd` with `sh -c` in its own process group, stdout to `stdout`
/// and stderr to `stderr` (files, created), with `env` added to the
/// environment; waits until the shell exits, `limit` passes, or `cancel`
/// fires. On the last two the group gets SIGINT, then SIGKILL after 5 s.
/// Returns how it ended and the group, which may still hold processes
/// the command started in the background (an application started by
/// `before_run`): stop it when they may go.
///
/// Errors: the output files cannot be created, or `sh` cannot start.
pub async fn run(
    cmd: &str,
    env: &[(String, String)],
    stdout: &Path,
    stderr: &Path,
    limit: Option<Duration>,
    cancel: &CancellationToken,
) -> Result<(Finished, Group), String> {
    let file = |p: &Path| {
        std::fs::File::create(p).map_err(|e| format!("cannot create {}: {e}", p.display()))
    };
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg(cmd)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(file(stdout)?)
        .stderr(file(stderr)?)
        .process_group(0)
        .kill_on_drop(true);
    let started = Instant::now();
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot start `sh -c {cmd}`: {e}"))?;
    let pgid = child.id().map(|p| p as i32);
    if let Some(g) = pgid {
        reaper::register_group(g);
    }
    let group = Group(pgid);
    let sleep_limit = async {
        match limit {
            Some(l) => tokio::time::sleep(l).await,
            None => std::future::pending().await,
        }
    };
    let (status, stopped) = tokio::select! {
        s = child.wait() => (s, None),
        _ = cancel.cancelled() => (stop(&mut child, pgid).await, Some(Stopped::Interrupted)),
        _ = sleep_limit => (stop(&mut child, pgid).await, Some(Stopped::TimedOut)),
    };
    let wall = started.elapsed();
    let status = status.map_err(|e| format!("waiting for `{cmd}`: {e}"))?;
    Ok((
        Finished {
            exit_code: status.code(),
            wall,
            stopped,
        },
        group,
    ))
}

/// Runs `cmd` as [`run`] does, then stops whatever it left running.
pub async fn run_to_end(
    cmd: &str,
    env: &[(String, String)],
    stdout: &Path,
    stderr: &Path,
    limit: Option<Duration>,
    cancel: &CancellationToken,
) -> Result<Finished, String> {
    let (f, group) = run(cmd, env, stdout, stderr, limit, cancel).await?;
    group.stop().await;
    Ok(f)
}

/// SIGINT to the group, SIGKILL after 5 s; returns the shell's status.
async fn stop(
    child: &mut tokio::process::Child,
    pgid: Option<i32>,
) -> std::io::Result<std::process::ExitStatus> {
    if let Some(g) = pgid {
        let _ = killpg(Pid::from_raw(g), Signal::SIGINT);
    }
    match tokio::time::timeout(Duration::from_secs(5), child.wait()).await {
        Ok(s) => s,
        Err(_) => {
            if let Some(g) = pgid {
                let _ = killpg(Pid::from_raw(g), Signal::SIGKILL);
            }
            child.wait().await
        }
    }
}

/// The last `n` non-empty lines of file `path` (for error messages).
pub fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

/// Polls `ready` every 250 ms until it succeeds: a `http://` URL must
/// answer with a 2xx or 3xx status, a command must exit 0 (its output
/// goes to `out`/`err`). Returns how long it took. `app`: the group of
/// the processes that should become ready; when none of them runs any
/// more, waiting is pointless.
///
/// Errors: not ready within `limit` (with the last failure), `app`'s
/// processes all exited, or interrupted.
pub async fn wait_ready(
    ready: &str,
    env: &[(String, String)],
    out: &Path,
    err: &Path,
    limit: Duration,
    app: Option<&Group>,
    cancel: &CancellationToken,
) -> Result<Duration, String> {
    let started = Instant::now();
    let mut last;
    loop {
        if app.is_some_and(|g| !g.alive()) {
            return Err("what before_run started in the background has exited".into());
        }
        last = if ready.starts_with("http://") || ready.starts_with("https://") {
            let url = ready.to_string();
            match tokio::task::spawn_blocking(move || http_status(&url)).await {
                Ok(Ok(code)) if (200..400).contains(&code) => return Ok(started.elapsed()),
                Ok(Ok(code)) => format!("{ready} answered {code}"),
                Ok(Err(e)) => format!("{ready}: {e}"),
                Err(e) => format!("{ready}: {e}"),
            }
        } else {
            let f = run_to_end(ready, env, out, err, Some(limit), cancel).await?;
            if f.ok() {
                return Ok(started.elapsed());
            }
            format!("`{ready}` {} ({})", f.describe(), tail(err, 2))
        };
        if cancel.is_cancelled() {
            return Err("interrupted while waiting for readiness".into());
        }
        if started.elapsed() >= limit {
            return Err(format!(
                "not ready after {:.0} s; last check: {last}",
                limit.as_secs_f64()
            ));
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(250)) => {}
            _ = cancel.cancelled() => return Err("interrupted while waiting for readiness".into()),
        }
    }
}

/// The status code of a GET of `url` (redirects not followed), within
/// 2 s.
fn http_status(url: &str) -> Result<u16, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(2)))
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into();
    agent
        .get(url)
        .call()
        .map(|r| r.status().as_u16())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_command_runs_with_its_environment_and_exit_status() {
        let dir = tempfile::tempdir().unwrap();
        let (o, e) = (dir.path().join("o"), dir.path().join("e"));
        let env = vec![("ISOBENCH_CLIENTS".to_string(), "7".to_string())];
        let f = run_to_end(
            "echo clients=$ISOBENCH_CLIENTS; echo oops >&2; exit 3",
            &env,
            &o,
            &e,
            None,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
        assert_eq!(f.exit_code, Some(3));
        assert!(!f.ok());
        assert_eq!(std::fs::read_to_string(&o).unwrap(), "clients=7\n");
        assert_eq!(tail(&e, 1), "oops");
    }

    #[tokio::test]
    async fn a_stopped_command_leaves_no_process_behind() {
        let dir = tempfile::tempdir().unwrap();
        let (o, e) = (dir.path().join("o"), dir.path().join("e"));
        let marker = dir.path().join("pid");
        // A grandchild that ignores SIGINT: only SIGKILL of the group ends it.
        let cmd = format!(
            "sh -c 'trap \"\" INT; echo $$ > {}; sleep 60' & wait",
            marker.display()
        );
        let started = Instant::now();
        let f = run_to_end(
            &cmd,
            &[],
            &o,
            &e,
            Some(Duration::from_millis(300)),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
        assert_eq!(f.stopped, Some(Stopped::TimedOut));
        // The 300 ms limit, SIGINT, then SIGKILL 5 s later, about 5.3 s by design;
        // the grandchild left alone would sleep 60 s.
        assert!(started.elapsed() < Duration::from_secs(30));
        let pid: i32 = std::fs::read_to_string(&marker)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // Gone, or a zombie waiting for init at most, once the kernel has
        // delivered the group's SIGKILL (polled: milliseconds here).
        let alive = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| !s.contains(") Z "))
                .unwrap_or(false)
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while alive() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!alive(), "grandchild {pid} survived");
    }

    #[tokio::test]
    async fn readiness_gives_up_when_the_application_has_exited() {
        let dir = tempfile::tempdir().unwrap();
        let (o, e) = (dir.path().join("o"), dir.path().join("e"));
        let (_, app) = run("sleep 0.3 &", &[], &o, &e, None, &CancellationToken::new())
            .await
            .unwrap();
        assert!(app.alive());
        let started = Instant::now();
        let err = wait_ready(
            "false",
            &[],
            &o,
            &e,
            Duration::from_secs(30),
            Some(&app),
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
        assert!(err.contains("has exited"), "{err}");
        // Gave up when the application (a 0.3 s sleep) exited, not at the
        // 30 s readiness timeout.
        assert!(started.elapsed() < Duration::from_secs(15));
    }

    #[tokio::test]
    async fn a_background_process_lives_until_its_group_is_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let (o, e) = (dir.path().join("o"), dir.path().join("e"));
        let (f, group) = run("sleep 60 &", &[], &o, &e, None, &CancellationToken::new())
            .await
            .unwrap();
        assert!(f.ok());
        let pgid = group.0.unwrap();
        assert!(group_alive(pgid), "the background sleep should still run");
        let t = Instant::now();
        group.stop().await;
        assert!(!group_alive(pgid));
        // SIGTERM ends it (a poll of 50 ms); SIGKILL would come only
        // after 5 s, so this limit cannot be widened past that.
        assert!(t.elapsed() < Duration::from_secs(4), "SIGTERM should do");
    }

    #[tokio::test]
    async fn readiness_polls_a_command_until_it_succeeds_or_times_out() {
        let dir = tempfile::tempdir().unwrap();
        let (o, e) = (dir.path().join("o"), dir.path().join("e"));
        let flag = dir.path().join("up");
        let flag2 = flag.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(600)).await;
            std::fs::write(flag2, "").unwrap();
        });
        let cmd = format!("test -e {}", flag.display());
        let took = wait_ready(
            &cmd,
            &[],
            &o,
            &e,
            Duration::from_secs(10),
            None,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
        assert!(took >= Duration::from_millis(500), "{took:?}");
        let err = wait_ready(
            "http://127.0.0.1:9/",
            &[],
            &o,
            &e,
            Duration::from_millis(600),
            None,
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
        assert!(err.starts_with("not ready after"), "{err}");
        assert!(err.contains("http://127.0.0.1:9/"), "{err}");
    }
}
