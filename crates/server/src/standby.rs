//! Streaming standbys of the managed server (`--standbys N`, issue #50).
//!
//! Each standby is a base backup of the primary (`pg_basebackup -R -X
//! stream -c fast -S NAME --create-slot`, from the same binaries) in a data
//! directory of its own under the primary's private directory, started on
//! its own port with the primary's socket directory. `-R` writes
//! `standby.signal` and `primary_conninfo` (over the Unix socket, where
//! the superuser is trusted for replication as for everything else), with
//! `application_name` = the standby's name, which is what
//! `synchronous_standby_names` and `pg_stat_replication` match on. The
//! physical replication slot (`-S NAME --create-slot`) is created when the
//! backup starts, so no WAL the standby needs is recycled before it
//! connects.
//!
//! Why these options (measured here, docs in /work/notes/replication.md):
//! without `-c fast` pg_basebackup waits for a spread checkpoint, 270 s
//! with the defaults; with it, 0.1-0.4 s for a fresh cluster. `-N` skips
//! the copy's fsync, as `initdb -N` does for the primary: the cluster is
//! thrown away. `wal_retrieve_retry_interval = 200ms` on the standbys: a
//! standby whose walreceiver lost the primary (a restart) tries again
//! every 5 s by default, and a synchronous primary blocks every commit
//! until it is back.
//!
//! Standbys are guarded like the primary (the reaper, a parent-death
//! signal) and stopped before it: immediate shutdown (they hold nothing
//! worth a checkpoint), then SIGKILL.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::process::{Launch, Process, free_port, read_log_from, tail};
use crate::{ManagedServer, SUPERUSER, TargetError, reaper};

/// Settings every standby gets on top of the primary's.
const STANDBY_SETTINGS: [(&str, &str); 3] = [
    ("hot_standby", "on"),
    // Standby reads then hold back the primary's vacuum instead of being
    // cancelled by it ("conflict with recovery").
    ("hot_standby_feedback", "on"),
    ("wal_retrieve_retry_interval", "200ms"),
];

/// One streaming standby of a [`ManagedServer`]. Dropping it stops it.
pub struct Standby {
    name: String,
    process: Arc<Process>,
}

impl Standby {
    /// Its `application_name` (`s1`, `s2`, ...), also its slot's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its port (on the primary's socket directory and on 127.0.0.1).
    pub fn port(&self) -> u16 {
        self.process.launch.port
    }

    /// Its postmaster's pid while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.process.child().as_ref().map(std::process::Child::id)
    }

    /// Its data directory.
    pub fn data_dir(&self) -> &Path {
        &self.process.launch.data
    }

    /// Stops it: immediate shutdown (SIGQUIT), SIGKILL after 5 s.
    /// Idempotent.
    pub fn stop(&mut self) {
        if let Some(child) = self.process.child().take() {
            reaper::signal_family(child.id(), Signal::SIGCONT);
            reaper::stop(
                child,
                &[
                    (Signal::SIGQUIT, Duration::from_secs(5)),
                    (Signal::SIGKILL, Duration::from_secs(5)),
                ],
            );
        }
    }
}

impl Drop for Standby {
    fn drop(&mut self) {
        self.stop();
    }
}

impl std::fmt::Debug for Standby {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Standby")
            .field("name", &self.name)
            .field("port", &self.port())
            .field("pid", &self.pid())
            .finish()
    }
}

/// The name of standby `i` (0-based): `s1`, `s2`, ...
pub fn standby_name(i: usize) -> String {
    format!("s{}", i + 1)
}

/// The log of standby `name` beside the primary's log `primary_log`:
/// `server-NAME.log`.
pub fn standby_log(primary_log: &Path, name: &str) -> PathBuf {
    primary_log.with_file_name(format!("server-{name}.log"))
}

impl ManagedServer {
    /// Starts `n` more streaming standbys of this server (names
    /// [`standby_name`] after the ones it has), each from a base backup,
    /// and returns once each accepts connections (it may not stream yet:
    /// [`crate::cluster::wait_streaming`]). Blocking (a base backup takes
    /// a fraction of a second on a fresh cluster, more with data): call
    /// from `spawn_blocking` in async code.
    ///
    /// Errors: [`TargetError::Start`] with pg_basebackup's output or the
    /// end of the standby's log; the standbys started so far stay (and
    /// are stopped with the server).
    pub fn start_standbys(&mut self, n: u32) -> Result<(), TargetError> {
        for _ in 0..n {
            let name = standby_name(self.standbys.len());
            let standby = self.start_standby(&name)?;
            self.standbys.push(standby);
        }
        Ok(())
    }

    /// The standbys, in the order started.
    pub fn standbys(&self) -> &[Standby] {
        &self.standbys
    }

    /// Connection settings for `dbname` on the standby `i` (0-based),
    /// over the private Unix socket.
    pub fn standby_config(&self, i: usize, dbname: &str) -> Option<tokio_postgres::Config> {
        let s = self.standbys.get(i)?;
        let mut c = tokio_postgres::Config::new();
        c.host_path(self.socket_dir())
            .port(s.port())
            .user(SUPERUSER)
            .password(self.password())
            .dbname(dbname)
            .application_name(crate::APPLICATION_NAME);
        Some(c)
    }

    fn start_standby(&self, name: &str) -> Result<Standby, TargetError> {
        let primary = &self.process.launch;
        let err = |what: String| TargetError::Start(format!("standby {name}: {what}"));
        let data = primary.socket_dir.join(name);
        let basebackup = self.bin_dir().join("pg_basebackup");
        let mut cmd = Command::new(&basebackup);
        cmd.arg("-d")
            .arg(format!(
                "host={} port={} user={SUPERUSER} application_name={name}",
                primary.socket_dir.display(),
                primary.port
            ))
            .arg("-D")
            .arg(&data)
            .args(["-R", "-X", "stream", "-c", "fast", "-N", "-S", name])
            .arg("--create-slot")
            .current_dir(&primary.socket_dir)
            .process_group(0);
        if let Some((uid, gid)) = primary.ids {
            cmd.uid(uid.as_raw()).gid(gid.as_raw());
        }
        let out = cmd
            .output()
            .map_err(|e| err(format!("cannot run {}: {e}", basebackup.display())))?;
        if !out.status.success() {
            return Err(err(format!(
                "pg_basebackup failed: {}",
                tail(&String::from_utf8_lossy(&out.stderr), 5)
            )));
        }
        let mut settings: Vec<(String, String)> = primary
            .settings
            .iter()
            .filter(|(k, _)| !STANDBY_SETTINGS.iter().any(|(s, _)| s == k))
            .cloned()
            .collect();
        settings.extend(
            STANDBY_SETTINGS
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string())),
        );
        let log_path = standby_log(&primary.log_path, name);
        let mut last = String::new();
        for _attempt in 0..3 {
            let port = free_port().map_err(|e| err(format!("no free TCP port: {e}")))?;
            let launch = Launch {
                data: data.clone(),
                port,
                settings: settings.clone(),
                log_path: log_path.clone(),
                ..primary.clone()
            };
            let from = std::fs::metadata(&log_path).map_or(0, |m| m.len());
            let child = launch.spawn()?;
            let mut standby = Standby {
                name: name.to_string(),
                process: Arc::new(Process {
                    launch,
                    child: Mutex::new(Some(child)),
                }),
            };
            if standby.process.wait_ready(Duration::from_secs(60)).is_ok() {
                return Ok(standby);
            }
            last = read_log_from(&log_path, from);
            standby.stop();
            if !last.contains("could not bind") && !last.contains("Address already in use") {
                break;
            }
        }
        Err(err(format!(
            "did not start; see {} ({})",
            log_path.display(),
            tail(&last, 3)
        )))
    }
}
