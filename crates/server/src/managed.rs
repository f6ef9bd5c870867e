//! The managed server: a throwaway PostgreSQL that isobench initialises,
//! starts, and removes again.
//!
//! Layout: a private directory `/tmp/isobench-XXXXXX` (mode 0700, short
//! enough for the ~107-byte Unix socket path limit) holding `data/` (the
//! cluster), the Unix socket, and nothing else. The server listens on that
//! socket (trust authentication: only the directory's owner can reach it)
//! and on 127.0.0.1 at a free port with SCRAM password authentication.
//! When isobench runs as root, `initdb` and `postgres` run as an
//! unprivileged user (`postgres` by default), since both refuse to run as
//! root.

use std::fs::{self};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::{Pid, chown};
use rand::RngExt;

use super::{TargetError, reaper};
use crate::process::{Launch, Process, free_port, read_log_from, tail};

/// The superuser the managed cluster is initialised with.
pub const SUPERUSER: &str = "isobench";

/// What a managed server needs to start.
#[derive(Debug, Clone)]
pub struct ManagedOptions {
    /// Directory holding `initdb`, `postgres`; found by [`find_bin_dir`].
    pub bin_dir: PathBuf,
    /// `name=value` server settings passed as `-c name=value`.
    pub settings: Vec<(String, String)>,
    /// Where the server's stderr log goes (created/appended).
    pub log_path: PathBuf,
    /// OS user to run as when isobench runs as root.
    pub os_user: String,
}

/// A running managed PostgreSQL. Dropping it stops the server (fast, then
/// immediate shutdown) and removes its directory. Its `Debug` output never
/// shows the password.
pub struct ManagedServer {
    pub(crate) process: Arc<Process>,
    dir: Option<tempfile::TempDir>,
    bin_dir: PathBuf,
    socket_dir: PathBuf,
    port: u16,
    password: String,
    /// Streaming standbys started from this server
    /// ([`crate::standby`]); stopped before it.
    pub(crate) standbys: Vec<crate::standby::Standby>,
}

/// Finds the PostgreSQL binaries: `explicit` (from `--pg-bin`), else
/// `pg_config --bindir`, else the directory of `initdb` on PATH, else the
/// newest `/usr/lib/postgresql/*/bin`.
///
/// Errors: [`TargetError::NoBinaries`] naming what was tried and how to fix it.
pub fn find_bin_dir(explicit: Option<&Path>) -> Result<PathBuf, TargetError> {
    let has_server = |d: &Path| d.join("initdb").is_file() && d.join("postgres").is_file();
    if let Some(dir) = explicit {
        return if has_server(dir) {
            Ok(dir.to_path_buf())
        } else {
            Err(TargetError::NoBinaries(format!(
                "--pg-bin {}: no initdb and postgres there; pass the directory that holds them (e.g. /usr/lib/postgresql/15/bin)",
                dir.display()
            )))
        };
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if out.status.success() && has_server(&dir) {
            return Ok(dir);
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            if has_server(&dir) {
                return Ok(dir);
            }
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            has_server(&bin).then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, d)| d).ok_or_else(|| {
        TargetError::NoBinaries(
            "no PostgreSQL server binaries found (tried pg_config --bindir, PATH, /usr/lib/postgresql/*/bin); \
             install them (Debian/Ubuntu: apt-get install postgresql) or pass --pg-bin DIR, or use --dsn for an external server"
                .into(),
        )
    })
}

impl ManagedServer {
    /// Initialises a cluster in a new private directory and starts it;
    /// returns once it accepts connections. Blocking (initdb takes ~1 s):
    /// call from `spawn_blocking` in async code.
    ///
    /// Errors: [`TargetError::Start`] with the tail of initdb's output or
    /// of the server log; [`TargetError::NoOsUser`] when running as root and
    /// `opts.os_user` does not exist.
    pub fn start(opts: &ManagedOptions) -> Result<Self, TargetError> {
        let start_err = |what: String| TargetError::Start(what);
        let ids = crate::process::run_as(&opts.os_user)?;
        let dir = tempfile::Builder::new()
            .prefix("isobench-")
            .tempdir_in("/tmp")
            .map_err(|e| start_err(format!("cannot create a directory in /tmp: {e}")))?;
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700))
            .map_err(|e| start_err(e.to_string()))?;
        let password: String = {
            let mut rng = rand::rng();
            (0..24)
                .map(|_| {
                    char::from(
                        b"abcdefghijkmnpqrstuvwxyzACDEFGHJKLMNPQRSTUVWXYZ23456789"
                            [rng.random_range(0..55)],
                    )
                })
                .collect()
        };
        let pwfile = dir.path().join("pwfile");
        fs::write(&pwfile, format!("{password}\n")).map_err(|e| start_err(e.to_string()))?;
        if let Some((uid, gid)) = ids {
            for p in [dir.path(), pwfile.as_path()] {
                chown(p, Some(uid), Some(gid))
                    .map_err(|e| start_err(format!("chown {}: {e}", p.display())))?;
            }
        }
        let as_user = |cmd: &mut Command| {
            cmd.current_dir(dir.path());
            if let Some((uid, gid)) = ids {
                cmd.uid(uid.as_raw()).gid(gid.as_raw());
            }
        };

        let data = dir.path().join("data");
        let mut initdb = Command::new(opts.bin_dir.join("initdb"));
        initdb
            .arg("-D")
            .arg(&data)
            .args(["-U", SUPERUSER, "-E", "UTF8", "--locale=C", "-N"])
            .args(["--auth-local=trust", "--auth-host=scram-sha-256"])
            .arg(format!("--pwfile={}", pwfile.display()));
        as_user(&mut initdb);
        // Its own process group: a terminal's Ctrl-C goes to isobench only.
        initdb.process_group(0);
        let out = initdb.output().map_err(|e| {
            start_err(format!(
                "cannot run {}: {e}",
                opts.bin_dir.join("initdb").display()
            ))
        })?;
        let _ = fs::remove_file(&pwfile);
        if !out.status.success() {
            let text = String::from_utf8_lossy(&out.stderr);
            return Err(start_err(format!("initdb failed: {}", tail(&text, 5))));
        }

        let mut last_err = String::new();
        for _attempt in 0..3 {
            let port = free_port().map_err(|e| start_err(format!("no free TCP port: {e}")))?;
            let launch = Launch {
                postgres: opts.bin_dir.join("postgres"),
                data: data.clone(),
                socket_dir: dir.path().to_path_buf(),
                port,
                settings: opts.settings.clone(),
                log_path: opts.log_path.clone(),
                ids,
                cpus: crate::cpus::server_cpus(),
            };
            let log_start = fs::metadata(&opts.log_path).map_or(0, |m| m.len());
            let child = launch.spawn()?;
            let mut server = ManagedServer {
                process: Arc::new(Process {
                    launch,
                    child: Mutex::new(Some(child)),
                }),
                dir: None,
                bin_dir: opts.bin_dir.clone(),
                socket_dir: dir.path().to_path_buf(),
                port,
                password: password.clone(),
                standbys: Vec::new(),
            };
            match server.process.wait_ready(Duration::from_secs(60)) {
                Ok(()) => {
                    server.dir = Some(dir);
                    return Ok(server);
                }
                Err(()) => {
                    last_err = read_log_from(&opts.log_path, log_start);
                    server.stop();
                    if !last_err.contains("could not bind")
                        && !last_err.contains("Address already in use")
                    {
                        break;
                    }
                }
            }
        }
        Err(start_err(format!(
            "the server did not start; see {} ({})",
            opts.log_path.display(),
            tail(&last_err, 3)
        )))
    }

    /// Connection settings for `dbname` over the private Unix socket.
    pub fn config(&self, dbname: &str) -> tokio_postgres::Config {
        let mut c = tokio_postgres::Config::new();
        c.host_path(&self.socket_dir)
            .port(self.port)
            .user(SUPERUSER)
            .password(self.password.as_str())
            .dbname(dbname)
            .application_name(super::APPLICATION_NAME);
        c
    }

    /// The superuser's password (for TCP connections; the socket trusts).
    pub fn password(&self) -> &str {
        &self.password
    }

    /// The TCP port on 127.0.0.1 (password authentication).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The directory holding the Unix socket (for `psql -h`, `pgbench -h`).
    pub fn socket_dir(&self) -> &Path {
        &self.socket_dir
    }

    /// The binaries directory the server runs from.
    pub fn bin_dir(&self) -> &Path {
        &self.bin_dir
    }

    /// The postmaster's pid, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.process.child().as_ref().map(Child::id)
    }

    /// A handle that restarts, crashes or pauses this server while it is
    /// in use (for `--fault`); see [`ServerControl`].
    pub fn control(&self) -> ServerControl {
        ServerControl(self.process.clone())
    }

    /// Stops the server: fast shutdown (SIGINT), immediate (SIGQUIT) after
    /// 15 s, SIGKILL after 5 s more; then removes the directory. Idempotent.
    pub fn stop(&mut self) {
        // Standbys first: a fast shutdown of the primary waits for its
        // WAL senders to hand the shutdown checkpoint to the standbys.
        self.standbys.clear();
        let child = self.process.child().take();
        if let Some(child) = child {
            // A paused server (`--fault pause`) acts on no signal but
            // SIGKILL until it is continued.
            reaper::signal_family(child.id(), Signal::SIGCONT);
            reaper::stop(
                child,
                &[
                    (Signal::SIGINT, Duration::from_secs(15)),
                    (Signal::SIGQUIT, Duration::from_secs(5)),
                    (Signal::SIGKILL, Duration::from_secs(5)),
                ],
            );
        }
        if let Some(dir) = self.dir.take() {
            let _ = dir.close();
        }
    }
}

impl std::fmt::Debug for ManagedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagedServer")
            .field("pid", &self.pid())
            .field("bin_dir", &self.bin_dir)
            .field("socket_dir", &self.socket_dir)
            .field("port", &self.port)
            .field("password", &"***")
            .finish()
    }
}

impl Drop for ManagedServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// How [`ServerControl::restart`] stops the server before starting it
/// again (PostgreSQL documentation, "Shutting Down the Server").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shutdown {
    /// SIGINT, fast shutdown (`pg_ctl stop -m fast`): sessions are ended,
    /// then a shutdown checkpoint.
    Fast,
    /// SIGQUIT, immediate shutdown (`pg_ctl stop -m immediate`): no
    /// checkpoint; the next start runs crash recovery.
    Immediate,
}

/// Restarts, crashes or pauses a managed server while its runs use it
/// (`--fault restart|crash|pause`). Blocking calls: run them off the async
/// runtime (e.g. `tokio::task::spawn_blocking`).
#[derive(Clone)]
pub struct ServerControl(Arc<Process>);

impl std::fmt::Debug for ServerControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ServerControl")
            .field(&self.0.launch.port)
            .finish()
    }
}

/// How long [`ServerControl::restart`] waits for the server to exit, and
/// then to accept connections again.
pub const RESTART_WAIT: Duration = Duration::from_secs(60);

impl ServerControl {
    /// Stops the postmaster as `how` says, waits for it to exit, and starts
    /// it again on the same cluster, port and settings; returns once it
    /// accepts connections, with the time it was down (s).
    ///
    /// Errors: [`TargetError::Start`]: the server was already stopped for
    /// good, did not exit within `RESTART_WAIT` (it is then killed), or
    /// did not start again within `RESTART_WAIT` (see the server log).
    pub fn restart(&self, how: Shutdown) -> Result<f64, TargetError> {
        let began = Instant::now();
        let mut slot = self.0.child();
        let Some(mut child) = slot.take() else {
            return Err(TargetError::Start("the server was stopped".into()));
        };
        let pid = Pid::from_raw(child.id() as i32);
        let signal = match how {
            Shutdown::Fast => Signal::SIGINT,
            Shutdown::Immediate => Signal::SIGQUIT,
        };
        reaper::signal_family(child.id(), Signal::SIGCONT);
        let _ = kill(pid, signal);
        let deadline = Instant::now() + RESTART_WAIT;
        while Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(10));
        }
        if matches!(child.try_wait(), Ok(None)) {
            let _ = kill(pid, Signal::SIGKILL);
        }
        let _ = child.wait();
        reaper::forget(child.id());
        *slot = Some(self.0.launch.spawn()?);
        drop(slot);
        self.0.wait_ready(RESTART_WAIT).map_err(|()| {
            TargetError::Start(format!(
                "the server did not start again within {} s; see {}",
                RESTART_WAIT.as_secs(),
                self.0.launch.log_path.display()
            ))
        })?;
        Ok(began.elapsed().as_secs_f64())
    }

    /// Stops every process of the server (SIGSTOP to the postmaster,
    /// then to each of its children): connections stay open, nothing
    /// answers. Returns how many child processes it stopped.
    ///
    /// Errors: [`TargetError::Start`]: the server is not running.
    pub fn pause(&self) -> Result<usize, TargetError> {
        self.family_signal(Signal::SIGSTOP)
    }

    /// Continues a paused server (SIGCONT to its children and postmaster).
    ///
    /// Errors: [`TargetError::Start`]: the server is not running.
    pub fn resume(&self) -> Result<usize, TargetError> {
        self.family_signal(Signal::SIGCONT)
    }

    fn family_signal(&self, signal: Signal) -> Result<usize, TargetError> {
        let slot = self.0.child();
        let child = slot
            .as_ref()
            .ok_or_else(|| TargetError::Start("the server was stopped".into()))?;
        Ok(reaper::signal_family(child.id(), signal))
    }
}
