//! A server process isobench starts (the managed primary, a standby):
//! how it is launched and run as the unprivileged user, watched and
//! stopped, and its log read back.

use super::{TargetError, reaper};
use nix::unistd::{Gid, Uid, User};
use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How the postmaster is started: again, after a restart or crash, on
/// the same cluster, port and settings.
#[derive(Debug, Clone)]
pub(crate) struct Launch {
    pub(crate) postgres: PathBuf,
    pub(crate) data: PathBuf,
    pub(crate) socket_dir: PathBuf,
    pub(crate) port: u16,
    pub(crate) settings: Vec<(String, String)>,
    pub(crate) log_path: PathBuf,
    /// The unprivileged user and group to run as (isobench runs as root).
    pub(crate) ids: Option<(Uid, Gid)>,
    /// CPUs the postmaster, and so every process it forks, is pinned to
    /// (`--cpus server=LIST`).
    pub(crate) cpus: Option<Vec<usize>>,
}

impl Launch {
    /// Starts the postmaster (guarded by the reaper, in a process group of
    /// its own), its output appended to the log.
    ///
    /// Errors: [`TargetError::Start`]: the log cannot be opened, or
    /// `postgres` cannot be run.
    pub(crate) fn spawn(&self) -> Result<Child, TargetError> {
        let start_err = |what: String| TargetError::Start(what);
        let log = File::options()
            .create(true)
            .append(true)
            .open(&self.log_path)
            .map_err(|e| {
                start_err(format!(
                    "cannot open server log {}: {e}",
                    self.log_path.display()
                ))
            })?;
        let mut cmd = Command::new(&self.postgres);
        cmd.arg("-D")
            .arg(&self.data)
            .arg("-k")
            .arg(&self.socket_dir)
            .args([
                "-p",
                &self.port.to_string(),
                "-c",
                "listen_addresses=127.0.0.1",
            ]);
        for (k, v) in &self.settings {
            cmd.arg("-c").arg(format!("{k}={v}"));
        }
        cmd.stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| start_err(e.to_string()))?)
            .stderr(log)
            .current_dir(&self.socket_dir);
        if let Some((uid, gid)) = self.ids {
            cmd.uid(uid.as_raw()).gid(gid.as_raw());
        }
        if let Some(cpus) = &self.cpus {
            crate::cpus::pin_command(&mut cmd, cpus);
        }
        reaper::spawn_guarded(cmd, self.socket_dir.clone())
            .map_err(|e| start_err(format!("cannot start postgres: {e}")))
    }
}

/// The postmaster of a managed server, shared by the server and its
/// [`crate::ServerControl`] handles.
pub(crate) struct Process {
    pub(crate) launch: Launch,
    /// `None` once stopped for good.
    pub(crate) child: Mutex<Option<Child>>,
}

impl Process {
    pub(crate) fn child(&self) -> std::sync::MutexGuard<'_, Option<Child>> {
        self.child.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until the postmaster reports "ready" in `postmaster.pid`
    /// ("standby" for a hot standby that accepts connections) and its
    /// socket exists, or it exits.
    pub(crate) fn wait_ready(&self, limit: Duration) -> Result<(), ()> {
        let deadline = Instant::now() + limit;
        let pidfile = self.launch.data.join("postmaster.pid");
        let socket = self
            .launch
            .socket_dir
            .join(format!(".s.PGSQL.{}", self.launch.port));
        while Instant::now() < deadline {
            if let Some(child) = self.child().as_mut()
                && !matches!(child.try_wait(), Ok(None))
            {
                return Err(());
            }
            // Line 8 of postmaster.pid is the status: "ready" once accepting.
            if let Ok(text) = fs::read_to_string(&pidfile)
                && matches!(
                    text.lines().nth(7).map(str::trim),
                    Some("ready" | "standby")
                )
                && socket.exists()
            {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(())
    }
}

pub(crate) fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

pub(crate) fn read_log_from(path: &Path, offset: u64) -> String {
    let mut text = String::new();
    if let Ok(mut f) = File::open(path) {
        let _ = f.seek(SeekFrom::Start(offset));
        let _ = f.read_to_string(&mut text);
    }
    text
}

/// The last `n` non-empty lines of `text`, joined with " | ".
pub(crate) fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

/// Who runs a server's processes: as root, the unprivileged `os_user`'s
/// uid and gid (`initdb` and `postgres` refuse root); else `None`, this
/// process's own.
///
/// Errors: running as root and `os_user` does not exist
/// ([`TargetError::NoOsUser`]).
pub(crate) fn run_as(os_user: &str) -> Result<Option<(Uid, Gid)>, TargetError> {
    if !nix::unistd::geteuid().is_root() {
        return Ok(None);
    }
    let user = User::from_name(os_user)
        .ok()
        .flatten()
        .ok_or_else(|| TargetError::NoOsUser(os_user.to_string()))?;
    Ok(Some((user.uid, user.gid)))
}
