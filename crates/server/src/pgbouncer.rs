//! pgbouncer as a managed component: started in front of the server for
//! one run (`--pooler pgbouncer:MODE`), the clients' connections go
//! through it, and it is stopped when the run ends, whatever the way out.
//!
//! Layout: a private directory `/tmp/isobench-pgbouncer-XXXXXX` (mode
//! 0700) holding `pgbouncer.ini`, the users file, the HBA file and the Unix
//! socket the clients connect to; the log goes to `pgbouncer.log` in the
//! results directory (pgbouncer's stderr, appended). Authentication
//! matches the server's: the private socket trusts (only the directory's
//! owner reaches it), as the managed server's socket does, and when the
//! server has a password pgbouncer also listens on 127.0.0.1 with
//! SCRAM-SHA-256 for that user and password; pgbouncer logs in to the
//! server with the same user and password (pgbouncer documentation,
//! "auth_type = hba", "Authentication file format").
//!
//! Like the managed server it runs as an unprivileged OS user when
//! isobench runs as root (pgbouncer refuses to run as root), and the
//! reaper guards it ([`reaper::spawn_guarded_pooler`]): stopped on a
//! normal exit and on an error by `Drop`, by the panic hook and the second
//! Ctrl-C through the registry, and by the kernel (parent-death signal)
//! when isobench is killed.

use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use nix::unistd::{Gid, Uid, User, chown};
use tokio_postgres::Config;
use tokio_postgres::config::Host;

use super::{TargetError, reaper};
use crate::model::PoolMode;

/// Where pgbouncer comes from when `--pgbouncer-bin` is not given and
/// `pgbouncer` is not on the PATH: Debian's package installs it here
/// (`/usr/sbin` is not on an unprivileged user's PATH).
const DEBIAN_BIN: &str = "/usr/sbin/pgbouncer";

/// How long pgbouncer may take to open its socket.
const START_WAIT: Duration = Duration::from_secs(15);

/// A pgbouncer version (`pgbouncer --version`: `PgBouncer 1.18.0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl Version {
    /// Protocol-level prepared statements in transaction mode
    /// (`max_prepared_statements`) arrived in pgbouncer 1.21.
    pub fn prepared_in_transaction_mode(self) -> bool {
        (self.major, self.minor) >= (1, 21)
    }

    /// The version in the first line of `pgbouncer --version`'s output.
    pub fn parse(output: &str) -> Option<Version> {
        let first = output.lines().next()?;
        let v = first
            .split_whitespace()
            .find(|w| w.starts_with(char::is_numeric))?;
        let mut parts = v.split('.').map(|p| {
            p.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse::<u32>()
        });
        Some(Version {
            major: parts.next()?.ok()?,
            minor: parts.next()?.ok()?,
            patch: parts.next().and_then(Result::ok).unwrap_or(0),
        })
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// The pgbouncer executable: `explicit` (`--pgbouncer-bin`), else
/// `pgbouncer` on the PATH, else `DEBIAN_BIN`.
///
/// Errors: [`TargetError::NoBinaries`] naming what was tried and the fix.
pub fn find_bin(explicit: Option<&Path>) -> Result<PathBuf, TargetError> {
    if let Some(bin) = explicit {
        return if bin.is_file() {
            Ok(bin.to_path_buf())
        } else {
            Err(TargetError::NoBinaries(format!(
                "--pgbouncer-bin {}: no such file; give the pgbouncer executable (Debian: /usr/sbin/pgbouncer)",
                bin.display()
            )))
        };
    }
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("pgbouncer"))
            .find(|b| b.is_file())
    });
    on_path
        .or_else(|| Some(PathBuf::from(DEBIAN_BIN)).filter(|b| b.is_file()))
        .ok_or_else(|| {
            TargetError::NoBinaries(format!(
                "--pooler pgbouncer: no pgbouncer found (tried the PATH and {DEBIAN_BIN}); \
                 install it (Debian/Ubuntu: apt-get install pgbouncer) or pass --pgbouncer-bin FILE"
            ))
        })
}

/// The version of the pgbouncer at `bin`, from `bin --version`.
///
/// Errors: [`TargetError::NoBinaries`]: it does not run, or does not say
/// a version.
pub fn version(bin: &Path) -> Result<Version, TargetError> {
    let out = Command::new(bin).arg("--version").output().map_err(|e| {
        TargetError::NoBinaries(format!("cannot run {} --version: {e}", bin.display()))
    })?;
    let text = String::from_utf8_lossy(&out.stdout);
    Version::parse(&text).ok_or_else(|| {
        TargetError::NoBinaries(format!(
            "{} --version said no version ('{}'); is it pgbouncer?",
            bin.display(),
            text.trim()
        ))
    })
}

/// The server pgbouncer sends the clients to, and how it logs in there.
#[derive(Debug, Clone)]
pub struct Upstream {
    /// The server's host: a Unix socket directory or a TCP host name.
    pub host: Host,
    pub port: u16,
    pub user: String,
    pub password: Option<String>,
}

impl Upstream {
    /// The server `config` connects to (its first host: a pooler in front
    /// of several hosts is refused before a study starts).
    ///
    /// Errors: [`TargetError::Dsn`]: no host.
    pub fn of(config: &Config) -> Result<Upstream, TargetError> {
        let host = config
            .get_hosts()
            .first()
            .cloned()
            .ok_or_else(|| TargetError::Dsn("--pooler: the server has no host".into()))?;
        Ok(Upstream {
            host,
            port: config.get_ports().first().copied().unwrap_or(5432),
            user: config.get_user().unwrap_or("postgres").to_string(),
            password: config
                .get_password()
                .map(|p| String::from_utf8_lossy(p).into_owned()),
        })
    }
}

/// What a managed pgbouncer needs to start.
#[derive(Debug, Clone)]
pub struct PgBouncerOptions {
    pub bin: PathBuf,
    pub version: Version,
    pub mode: PoolMode,
    /// Server connections for the run's database, over all processes:
    /// each process's `default_pool_size` is its share ([`share`]).
    pub pool_size: u32,
    /// Client connections to accept, over all processes: each process's
    /// `max_client_conn` is its share with room for the kernel's uneven
    /// spread ([`max_client_conn`]).
    pub max_clients: u32,
    /// pgbouncer processes on one TCP port (`so_reuseport`): 1 or more.
    pub processes: u32,
    /// The clients connect over TCP to 127.0.0.1 (the port every process
    /// listens on), with a password; else through the first process's
    /// private Unix socket (one process, clients of this isobench only).
    pub tcp_clients: bool,
    pub upstream: Upstream,
    /// Where pgbouncer's stderr goes (created or appended; every
    /// process's, each line with its pid).
    pub log_path: PathBuf,
    /// OS user to run as when isobench runs as root.
    pub os_user: String,
}

/// Descriptors a pgbouncer process holds besides its connections: its
/// log, /dev/null, the epoll and signal descriptors, pipes, its listening
/// sockets (11 measured with pgbouncer 1.18), with room to spare.
pub const OWN_FILES: u64 = 32;

/// Process `i`'s share of `total` over `n` processes: `total / n`, plus
/// one for the first `total % n` (the shares sum to `total`).
pub fn share(total: u32, n: u32, i: u32) -> u32 {
    total / n + u32::from(i < total % n)
}

/// Each of `processes` processes' `max_client_conn` for `clients` client
/// connections in all, under an open-files limit of `files`: the largest
/// share, plus a quarter and 100 more, because the kernel spreads the
/// connections to one port by a hash of their addresses, not evenly
/// (measured: 12,000 connections over 3 processes, 3,939 to 4,050 each),
/// and a process that reaches its `max_client_conn` refuses the next one
/// although the others have room; but never more than the descriptors
/// left for clients under `files` once the process's server connections
/// (`pool`) and [`OWN_FILES`] are counted. One process: `clients`.
pub fn max_client_conn(clients: u32, processes: u32, pool: u32, files: u64) -> u32 {
    if processes <= 1 {
        return clients;
    }
    let each = share(clients, processes, 0);
    let room = files.saturating_sub(u64::from(pool) + OWN_FILES);
    let wanted = u64::from(each) + u64::from(each / 4) + 100;
    wanted.min(room).max(u64::from(each)) as u32
}

/// Where the clients of a pgbouncer listening on TCP connect: any
/// process on the same machine (another shard of the study).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    /// The machine pgbouncer runs on (`gethostname`): it listens on its
    /// loopback address only.
    pub machine: String,
    pub port: u16,
    /// The clients' password when it is not the server's (a server
    /// reached without one); `None`: the server's (the DSN's).
    pub password: Option<String>,
}

impl Listener {
    /// Connection settings for a client of database `dbname` as `user`,
    /// whose own settings for the server are `server` (its password,
    /// when the listener's is the server's).
    pub fn config(&self, server: &Config, dbname: &str) -> Config {
        let mut c = Config::new();
        c.host("127.0.0.1")
            .port(self.port)
            .user(server.get_user().unwrap_or("postgres"))
            .dbname(dbname)
            .application_name(super::APPLICATION_NAME);
        match (&self.password, server.get_password()) {
            (Some(p), _) => {
                c.password(p.as_str());
            }
            (None, Some(p)) => {
                c.password(p);
            }
            (None, None) => {}
        }
        c
    }
}

/// This machine's name, as [`Listener::machine`] gives it.
pub fn machine() -> String {
    nix::unistd::gethostname()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// One running pgbouncer process.
struct Process {
    child: Option<Child>,
    /// Its private Unix socket's directory (its admin console).
    socket_dir: PathBuf,
}

/// Running pgbouncer processes on one port; dropping them stops them
/// (SIGTERM, then SIGKILL) and removes their directory. Its `Debug`
/// output never shows a password.
pub struct PgBouncer {
    processes: Vec<Process>,
    dir: Option<tempfile::TempDir>,
    port: u16,
    user: String,
    /// The password the clients give over TCP (the server's, or one made
    /// up for the run when the server has none).
    password: Option<String>,
    /// Whether `password` is the server's.
    servers_password: bool,
    tcp_clients: bool,
    version: Version,
    mode: PoolMode,
    pool_size: u32,
}

impl std::fmt::Debug for PgBouncer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgBouncer")
            .field("pids", &self.pids())
            .field("dir", &self.dir.as_ref().map(|d| d.path().to_path_buf()))
            .field("port", &self.port)
            .field("tcp_clients", &self.tcp_clients)
            .field("version", &self.version)
            .field("mode", &self.mode)
            .field("pool_size", &self.pool_size)
            .finish()
    }
}

/// A made-up password: 24 letters and digits.
fn made_up_password() -> String {
    use rand::RngExt;
    let mut rng = rand::rng();
    const CHARS: &[u8] = b"abcdefghijkmnpqrstuvwxyzACDEFGHJKLMNPQRSTUVWXYZ23456789";
    (0..24)
        .map(|_| char::from(CHARS[rng.random_range(0..CHARS.len())]))
        .collect()
}

impl PgBouncer {
    /// Writes the processes' configurations into a new private directory
    /// and starts them; returns once every one's socket accepts
    /// connections. Blocking: call from `spawn_blocking` in async code.
    ///
    /// Errors: [`TargetError::NoOsUser`] when running as root without
    /// `opts.os_user`; [`TargetError::Start`] with the end of pgbouncer's
    /// log when one does not start (the others are stopped).
    pub fn start(opts: &PgBouncerOptions) -> Result<PgBouncer, TargetError> {
        let fail = |what: String| TargetError::Start(format!("pgbouncer: {what}"));
        let ids = run_as(&opts.os_user)?;
        let dir = tempfile::Builder::new()
            .prefix("isobench-pgbouncer-")
            .tempdir_in("/tmp")
            .map_err(|e| fail(format!("cannot create a directory in /tmp: {e}")))?;
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700))
            .map_err(|e| fail(format!("{}: {e}", dir.path().display())))?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| fail(format!("no free TCP port: {e}")))?
            .port();
        let processes = opts.processes.max(1);
        let (password, servers_password) = match &opts.upstream.password {
            Some(p) => (Some(p.clone()), true),
            None if opts.tcp_clients => (Some(made_up_password()), false),
            None => (None, false),
        };
        let files_limit =
            nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
                .map_or(u64::MAX, |(soft, _)| soft);
        let layout = Layout {
            dir: dir.path(),
            port,
            processes,
            password: password.as_deref(),
            files_limit,
        };
        let files = config_files(opts, &layout);
        for (name, text) in &files {
            let path = dir.path().join(name);
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent)
                    .map_err(|e| fail(format!("{}: {e}", parent.display())))?;
            }
            fs::write(&path, text).map_err(|e| fail(format!("{}: {e}", path.display())))?;
            fs::set_permissions(&path, fs::Permissions::from_mode(0o600))
                .map_err(|e| fail(e.to_string()))?;
        }
        if let Some((uid, gid)) = ids {
            let paths = std::iter::once(dir.path().to_path_buf())
                .chain((1..processes).map(|i| layout.socket_dir(i)))
                .chain(files.iter().map(|(n, _)| dir.path().join(n)));
            for p in paths {
                chown(&p, Some(uid), Some(gid))
                    .map_err(|e| fail(format!("chown {}: {e}", p.display())))?;
            }
        }
        let log = File::options()
            .create(true)
            .append(true)
            .open(&opts.log_path)
            .map_err(|e| fail(format!("cannot open {}: {e}", opts.log_path.display())))?;
        let log_start = log.metadata().map_or(0, |m| m.len());
        let mut b = PgBouncer {
            processes: Vec::new(),
            dir: None,
            port,
            user: opts.upstream.user.clone(),
            password: password.clone(),
            servers_password,
            tcp_clients: opts.tcp_clients,
            version: opts.version,
            mode: opts.mode,
            pool_size: opts.pool_size,
        };
        for i in 0..processes {
            let socket_dir = layout.socket_dir(i);
            let mut cmd = Command::new(&opts.bin);
            cmd.arg(socket_dir.join("pgbouncer.ini"))
                .stdin(Stdio::null())
                .stdout(log.try_clone().map_err(|e| fail(e.to_string()))?)
                .stderr(log.try_clone().map_err(|e| fail(e.to_string()))?)
                .current_dir(dir.path());
            if let Some((uid, gid)) = ids {
                cmd.uid(uid.as_raw()).gid(gid.as_raw());
            }
            match reaper::spawn_guarded_pooler(cmd, dir.path().to_path_buf()) {
                Ok(child) => b.processes.push(Process {
                    child: Some(child),
                    socket_dir,
                }),
                Err(e) => {
                    b.stop();
                    return Err(fail(format!("cannot run {}: {e}", opts.bin.display())));
                }
            }
        }
        b.dir = Some(dir);
        if let Err(()) = b.wait_ready() {
            b.stop();
            return Err(fail(format!(
                "did not start; see {} ({})",
                opts.log_path.display(),
                log_tail(&opts.log_path, log_start, 3)
            )));
        }
        Ok(b)
    }

    /// Waits until every process accepts a connection on its Unix
    /// socket, or one exits. The socket's file appears when pgbouncer
    /// binds it, before it listens: a client that came in between was
    /// refused (seen once under a full parallel test run), so a connection
    /// made and closed at once is the test, as `pg_isready`'s is.
    fn wait_ready(&mut self) -> Result<(), ()> {
        let deadline = Instant::now() + START_WAIT;
        for p in &mut self.processes {
            let socket = p.socket_dir.join(format!(".s.PGSQL.{}", self.port));
            loop {
                let alive = p
                    .child
                    .as_mut()
                    .is_some_and(|c| matches!(c.try_wait(), Ok(None)));
                if !alive || Instant::now() >= deadline {
                    return Err(());
                }
                if socket.exists() && std::os::unix::net::UnixStream::connect(&socket).is_ok() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        Ok(())
    }

    /// Connection settings for the clients: database `dbname` as the
    /// server's user, over TCP to the port every process listens on
    /// (`tcp_clients`), else through the first process's private socket.
    pub fn config(&self, dbname: &str) -> Config {
        let mut c = Config::new();
        if self.tcp_clients {
            c.host("127.0.0.1");
        } else {
            c.host_path(&self.processes[0].socket_dir);
        }
        c.port(self.port)
            .user(&self.user)
            .dbname(dbname)
            .application_name(super::APPLICATION_NAME);
        if let Some(p) = &self.password {
            c.password(p.as_str());
        }
        c
    }

    /// Where clients of other processes on this machine connect (TCP
    /// clients only).
    pub fn listener(&self) -> Option<Listener> {
        self.tcp_clients.then(|| Listener {
            machine: machine(),
            port: self.port,
            password: self.password.clone().filter(|_| !self.servers_password),
        })
    }

    /// Connection settings for each process's admin console (database
    /// `pgbouncer`; `SHOW POOLS`, `SHOW STATS`), through its own private
    /// socket: over the shared TCP port a connection reaches whichever
    /// process the kernel picks.
    pub fn admin_configs(&self) -> Vec<Config> {
        self.processes
            .iter()
            .map(|p| {
                let mut c = Config::new();
                c.host_path(&p.socket_dir)
                    .port(self.port)
                    .user(&self.user)
                    .dbname("pgbouncer")
                    .application_name(super::APPLICATION_NAME);
                if let Some(pw) = &self.password {
                    c.password(pw.as_str());
                }
                super::own_session(&mut c, "observer");
                c
            })
            .collect()
    }

    pub fn version(&self) -> Version {
        self.version
    }

    pub fn mode(&self) -> PoolMode {
        self.mode
    }

    /// Server connections over all processes (their `default_pool_size`s).
    pub fn pool_size(&self) -> u32 {
        self.pool_size
    }

    /// The processes' pids, of those running.
    pub fn pids(&self) -> Vec<u32> {
        self.processes
            .iter()
            .filter_map(|p| p.child.as_ref().map(Child::id))
            .collect()
    }

    /// One line for logs and reports: version, mode, pool size, processes,
    /// where the clients connect.
    pub fn describe(&self) -> String {
        let n = self.processes.len();
        let at = if self.tcp_clients {
            format!("127.0.0.1:{}", self.port)
        } else {
            format!(
                "socket {} port {}",
                self.processes[0].socket_dir.display(),
                self.port
            )
        };
        format!(
            "pgbouncer {} ({} pooling, {} server connections, {n} process{}, clients at {at})",
            self.version,
            self.mode.name(),
            self.pool_size,
            if n == 1 { "" } else { "es on one port" },
        )
    }

    /// Stops every process: SIGTERM, SIGKILL after 2 s (their clients
    /// are gone by then; see [`reaper`] on its signals), then removes the
    /// directory. Idempotent.
    pub fn stop(&mut self) {
        // SIGTERM to all first, so that they stop together.
        for p in &self.processes {
            if let Some(c) = &p.child {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(c.id() as i32),
                    Signal::SIGTERM,
                );
            }
        }
        for p in &mut self.processes {
            if let Some(child) = p.child.take() {
                reaper::stop(
                    child,
                    &[
                        (Signal::SIGTERM, Duration::from_secs(2)),
                        (Signal::SIGKILL, Duration::from_secs(5)),
                    ],
                );
            }
        }
        if let Some(dir) = self.dir.take() {
            let _ = dir.close();
        }
    }
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The uid and gid to run as: `os_user`'s when isobench runs as root,
/// else none (as isobench's own).
///
/// Errors: [`TargetError::NoOsUser`].
fn run_as(os_user: &str) -> Result<Option<(Uid, Gid)>, TargetError> {
    if !nix::unistd::geteuid().is_root() {
        return Ok(None);
    }
    let user = User::from_name(os_user)
        .ok()
        .flatten()
        .ok_or_else(|| TargetError::NoOsUser(os_user.to_string()))?;
    Ok(Some((user.uid, user.gid)))
}

/// A quoted value of pgbouncer's users file (`"` doubled).
fn quoted(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// Where the processes' files go and what they share.
struct Layout<'a> {
    dir: &'a Path,
    port: u16,
    processes: u32,
    /// The clients' password over TCP; `None`: no TCP listener.
    password: Option<&'a str>,
    /// The open-files limit the processes inherit.
    files_limit: u64,
}

impl Layout<'_> {
    /// Process `i`'s directory: its configuration and Unix socket (each
    /// process needs its own: pgbouncer refuses a socket in use). The
    /// first process's is the private directory itself.
    fn socket_dir(&self, i: u32) -> PathBuf {
        match i {
            0 => self.dir.to_path_buf(),
            i => self.dir.join(format!("p{i}")),
        }
    }
}

/// pgbouncer's configuration files for `opts` laid out as `layout` says:
/// (path relative to the private directory, text). One `pgbouncer.ini`
/// per process, the users and HBA files shared.
fn config_files(opts: &PgBouncerOptions, layout: &Layout<'_>) -> Vec<(String, String)> {
    let up = &opts.upstream;
    let host = match &up.host {
        Host::Unix(d) => d.display().to_string(),
        Host::Tcp(h) => h.clone(),
    };
    let dir = layout.dir;
    let n = layout.processes;
    let mut files = Vec::new();
    for i in 0..n {
        // Every database name goes to the same name on the server (`*`,
        // the fallback database): the run's database changes with every
        // study.
        let mut ini = format!(
            "[databases]\n* = host={host} port={}\n\n[pgbouncer]\n",
            up.port
        );
        let mut set = |k: &str, v: &str| ini.push_str(&format!("{k} = {v}\n"));
        // TCP where a password protects it; the private socket trusts.
        set(
            "listen_addr",
            if layout.password.is_some() {
                "127.0.0.1"
            } else {
                ""
            },
        );
        set("listen_port", &layout.port.to_string());
        if n > 1 {
            // Every process binds the same port; the kernel spreads the
            // connections over them (pgbouncer 1.12+).
            set("so_reuseport", "1");
        }
        set(
            "unix_socket_dir",
            &layout.socket_dir(i).display().to_string(),
        );
        set("auth_type", "hba");
        set("auth_hba_file", &dir.join("hba.conf").display().to_string());
        set("auth_file", &dir.join("users.txt").display().to_string());
        set("admin_users", &up.user);
        set("stats_users", &up.user);
        set("pool_mode", opts.mode.name());
        let pool = share(opts.pool_size, n, i);
        set("default_pool_size", &pool.to_string());
        set("min_pool_size", "0");
        set("reserve_pool_size", "0");
        set(
            "max_client_conn",
            &max_client_conn(opts.max_clients, n, pool, layout.files_limit).to_string(),
        );
        // Many clients connect at once: a longer queue of connections not
        // yet accepted than the default 128 (the kernel caps it at
        // somaxconn).
        set("listen_backlog", "4096");
        // tokio-postgres (the admin console's connection) sends it.
        set("ignore_startup_parameters", "extra_float_digits");
        // One line per connection would be 50,000 lines for 50,000 clients.
        set("log_connections", "0");
        set("log_disconnections", "0");
        set("syslog", "0");
        if opts.mode == PoolMode::Transaction && opts.version.prepared_in_transaction_mode() {
            // Protocol-level prepared statements across server
            // connections (pgbouncer 1.21+), for `-M prepared`.
            set("max_prepared_statements", "1000");
        }
        let name = match i {
            0 => "pgbouncer.ini".to_string(),
            i => format!("p{i}/pgbouncer.ini"),
        };
        files.push((name, ini));
    }
    // The users file: the password pgbouncer asks TCP clients for, and
    // the one it logs in to the server with (a server reached without a
    // password asks for none, so a made-up one does no harm there).
    let users = format!(
        "{} {}\n",
        quoted(&up.user),
        quoted(layout.password.unwrap_or(""))
    );
    let mut hba = String::from("local all all trust\n");
    if layout.password.is_some() {
        // MD5 over the loopback: a challenge, the password never sent.
        // SCRAM-SHA-256 costs a PBKDF2 of 4,096 rounds per connection in
        // the client and again in pgbouncer (which salts a plain-text
        // password afresh for every connection): 7.5 ms each measured on
        // the 2-core machine under load, minutes of CPU for 50,000
        // clients.
        hba.push_str("host all all 127.0.0.1/32 md5\n");
    }
    files.push(("users.txt".to_string(), users));
    files.push(("hba.conf".to_string(), hba));
    files
}

/// The last `n` non-empty lines of the log at `path` from byte `from`,
/// joined with " | ".
fn log_tail(path: &Path, from: u64, n: usize) -> String {
    let mut text = String::new();
    if let Ok(mut f) = File::open(path) {
        let _ = f.seek(SeekFrom::Start(from));
        let _ = f.read_to_string(&mut text);
    }
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_from_pgbouncers_banner() {
        let v = Version::parse("PgBouncer 1.18.0\nlibevent 2.1.12-stable\n").unwrap();
        assert_eq!(
            v,
            Version {
                major: 1,
                minor: 18,
                patch: 0
            }
        );
        assert!(!v.prepared_in_transaction_mode());
        assert!(
            Version::parse("PgBouncer 1.21.0")
                .unwrap()
                .prepared_in_transaction_mode()
        );
        assert_eq!(
            Version::parse("PgBouncer 1.24").unwrap().to_string(),
            "1.24.0"
        );
        assert!(Version::parse("nothing here").is_none());
    }

    fn options(password: Option<&str>, processes: u32, tcp_clients: bool) -> PgBouncerOptions {
        PgBouncerOptions {
            bin: "pgbouncer".into(),
            version: Version::parse("PgBouncer 1.18.0").unwrap(),
            mode: PoolMode::Transaction,
            pool_size: 50,
            max_clients: 2100,
            processes,
            tcp_clients,
            upstream: Upstream {
                host: Host::Unix("/tmp/isobench-x".into()),
                port: 5555,
                user: "isobench".into(),
                password: password.map(str::to_string),
            },
            log_path: "pgbouncer.log".into(),
            os_user: "postgres".into(),
        }
    }

    fn layout<'a>(password: Option<&'a str>, processes: u32) -> Layout<'a> {
        Layout {
            dir: Path::new("/tmp/b"),
            port: 6432,
            processes,
            password,
            files_limit: 20_000,
        }
    }

    #[test]
    fn the_configuration_matches_the_servers_authentication() {
        let files = config_files(&options(Some("pw\"x"), 1, false), &layout(Some("pw\"x"), 1));
        let ini = &files[0].1;
        assert_eq!(files[0].0, "pgbouncer.ini");
        assert!(
            ini.contains("* = host=/tmp/isobench-x port=5555\n"),
            "{ini}"
        );
        assert!(ini.contains("listen_addr = 127.0.0.1\n"), "{ini}");
        assert!(ini.contains("unix_socket_dir = /tmp/b\n"), "{ini}");
        assert!(ini.contains("pool_mode = transaction\n"), "{ini}");
        assert!(ini.contains("default_pool_size = 50\n"), "{ini}");
        assert!(ini.contains("max_client_conn = 2100\n"), "{ini}");
        assert!(!ini.contains("so_reuseport"), "{ini}");
        assert!(!ini.contains("max_prepared_statements"), "1.18 has none");
        assert_eq!(files[1].1, "\"isobench\" \"pw\"\"x\"\n");
        assert!(files[2].1.contains("host all all 127.0.0.1/32 md5"));
        // Without a password: the private socket only.
        let files = config_files(&options(None, 1, false), &layout(None, 1));
        assert!(files[0].1.contains("listen_addr = \n"), "{}", files[0].1);
        assert_eq!(files[2].1, "local all all trust\n");
    }

    /// Three processes on one port: each its own socket directory, a
    /// share of the server connections (50 = 17 + 17 + 16) and of the
    /// clients with room for the kernel's uneven spread, all with
    /// so_reuseport.
    #[test]
    fn several_processes_share_a_port_and_split_the_pool() {
        let files = config_files(&options(None, 3, true), &layout(Some("made-up"), 3));
        let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "pgbouncer.ini",
                "p1/pgbouncer.ini",
                "p2/pgbouncer.ini",
                "users.txt",
                "hba.conf"
            ]
        );
        let pools: Vec<u32> = files[..3]
            .iter()
            .map(|(_, ini)| {
                assert!(ini.contains("so_reuseport = 1\n"), "{ini}");
                assert!(ini.contains("listen_port = 6432\n"), "{ini}");
                assert!(ini.contains("listen_addr = 127.0.0.1\n"), "{ini}");
                // 2,100 clients: 700 each, + 175 + 100.
                assert!(ini.contains("max_client_conn = 975\n"), "{ini}");
                let line = ini
                    .lines()
                    .find(|l| l.starts_with("default_pool_size"))
                    .unwrap();
                line.rsplit(' ').next().unwrap().parse().unwrap()
            })
            .collect();
        assert_eq!(pools, [17, 17, 16]);
        assert!(files[1].1.contains("unix_socket_dir = /tmp/b/p1\n"));
        assert!(files[2].1.contains("unix_socket_dir = /tmp/b/p2\n"));
        assert_eq!(files[3].1, "\"isobench\" \"made-up\"\n");
    }

    #[test]
    fn each_process_accepts_its_share_within_the_open_files_limit() {
        assert_eq!(max_client_conn(50_100, 1, 50, 20_000), 50_100);
        // 50,000 over 4: 12,500 + 3,125 + 100.
        assert_eq!(max_client_conn(50_000, 4, 13, 20_000), 15_725);
        // 50,000 over 3: 16,667 + 4,166 + 100 would pass 20,000 files.
        assert_eq!(max_client_conn(50_000, 3, 17, 20_000), 20_000 - 17 - 32);
        // Never below the share itself (the study was refused before).
        assert_eq!(max_client_conn(50_000, 2, 25, 20_000), 25_000);
        assert_eq!(
            (0..3).map(|i| share(50, 3, i)).collect::<Vec<_>>(),
            [17, 17, 16]
        );
    }
}
