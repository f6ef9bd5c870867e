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
    /// `default_pool_size`: server connections for the run's database.
    pub pool_size: u32,
    /// Client connections to accept (`max_client_conn`).
    pub max_clients: u32,
    pub upstream: Upstream,
    /// Where pgbouncer's stderr goes (created or appended).
    pub log_path: PathBuf,
    /// OS user to run as when isobench runs as root.
    pub os_user: String,
}

/// A running pgbouncer; dropping it stops it (SIGTERM, then SIGKILL) and
/// removes its directory. Its `Debug` output never shows the password.
pub struct PgBouncer {
    child: Option<Child>,
    dir: Option<tempfile::TempDir>,
    socket_dir: PathBuf,
    port: u16,
    user: String,
    password: Option<String>,
    version: Version,
    mode: PoolMode,
    pool_size: u32,
}

impl std::fmt::Debug for PgBouncer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgBouncer")
            .field("pid", &self.child.as_ref().map(Child::id))
            .field("socket_dir", &self.socket_dir)
            .field("port", &self.port)
            .field("version", &self.version)
            .field("mode", &self.mode)
            .field("pool_size", &self.pool_size)
            .finish()
    }
}

impl PgBouncer {
    /// Writes pgbouncer's configuration into a new private directory and
    /// starts it; returns once its socket accepts connections. Blocking:
    /// call from `spawn_blocking` in async code.
    ///
    /// Errors: [`TargetError::NoOsUser`] when running as root without
    /// `opts.os_user`; [`TargetError::Start`] with the end of pgbouncer's
    /// log when it does not start.
    pub fn start(opts: &PgBouncerOptions) -> Result<PgBouncer, TargetError> {
        let fail = |what: String| TargetError::Start(format!("pgbouncer: {what}"));
        let ids = run_as(&opts.os_user)?;
        let dir = tempfile::Builder::new()
            .prefix("isobench-pgbouncer-")
            .tempdir_in("/tmp")
            .map_err(|e| fail(format!("cannot create a directory in /tmp: {e}")))?;
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700))
            .map_err(|e| fail(e.to_string()))?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| fail(format!("no free TCP port: {e}")))?
            .port();
        let files = config_files(opts, dir.path(), port);
        for (name, text) in &files {
            let path = dir.path().join(name);
            fs::write(&path, text).map_err(|e| fail(format!("{}: {e}", path.display())))?;
            fs::set_permissions(&path, fs::Permissions::from_mode(0o600))
                .map_err(|e| fail(e.to_string()))?;
        }
        if let Some((uid, gid)) = ids {
            let paths = std::iter::once(dir.path().to_path_buf())
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
        let mut cmd = Command::new(&opts.bin);
        cmd.arg(dir.path().join("pgbouncer.ini"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| fail(e.to_string()))?)
            .stderr(log)
            .current_dir(dir.path());
        if let Some((uid, gid)) = ids {
            cmd.uid(uid.as_raw()).gid(gid.as_raw());
        }
        let child = reaper::spawn_guarded_pooler(cmd, dir.path().to_path_buf())
            .map_err(|e| fail(format!("cannot run {}: {e}", opts.bin.display())))?;
        let mut b = PgBouncer {
            child: Some(child),
            socket_dir: dir.path().to_path_buf(),
            dir: Some(dir),
            port,
            user: opts.upstream.user.clone(),
            password: opts.upstream.password.clone(),
            version: opts.version,
            mode: opts.mode,
            pool_size: opts.pool_size,
        };
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

    /// Waits until the Unix socket exists, or pgbouncer exits.
    fn wait_ready(&mut self) -> Result<(), ()> {
        let socket = self.socket_dir.join(format!(".s.PGSQL.{}", self.port));
        let deadline = Instant::now() + START_WAIT;
        while Instant::now() < deadline {
            let alive = self
                .child
                .as_mut()
                .is_some_and(|c| matches!(c.try_wait(), Ok(None)));
            if !alive {
                return Err(());
            }
            if socket.exists() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Err(())
    }

    /// Connection settings for the clients: database `dbname` through
    /// pgbouncer's private socket, as the server's user.
    pub fn config(&self, dbname: &str) -> Config {
        let mut c = Config::new();
        c.host_path(&self.socket_dir)
            .port(self.port)
            .user(&self.user)
            .dbname(dbname)
            .application_name(super::APPLICATION_NAME);
        if let Some(p) = &self.password {
            c.password(p.as_str());
        }
        c
    }

    /// Connection settings for pgbouncer's admin console (database
    /// `pgbouncer`; `SHOW POOLS`, `SHOW STATS`).
    pub fn admin_config(&self) -> Config {
        let mut c = self.config("pgbouncer");
        super::own_session(&mut c, "observer");
        c
    }

    pub fn version(&self) -> Version {
        self.version
    }

    pub fn mode(&self) -> PoolMode {
        self.mode
    }

    /// `default_pool_size`.
    pub fn pool_size(&self) -> u32 {
        self.pool_size
    }

    /// pgbouncer's pid, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// One line for logs and reports: version, mode, pool size, socket.
    pub fn describe(&self) -> String {
        format!(
            "pgbouncer {} ({} pooling, default_pool_size {}, socket {} port {})",
            self.version,
            self.mode.name(),
            self.pool_size,
            self.socket_dir.display(),
            self.port
        )
    }

    /// Stops pgbouncer: SIGTERM, SIGKILL after 2 s (its clients are gone
    /// by then; see [`reaper`] on its signals), then removes the
    /// directory. Idempotent.
    pub fn stop(&mut self) {
        if let Some(child) = self.child.take() {
            reaper::stop(
                child,
                &[
                    (Signal::SIGTERM, Duration::from_secs(2)),
                    (Signal::SIGKILL, Duration::from_secs(5)),
                ],
            );
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

/// pgbouncer's configuration files for `opts` in directory `dir`,
/// listening on `port`: (file name, text).
fn config_files(opts: &PgBouncerOptions, dir: &Path, port: u16) -> Vec<(&'static str, String)> {
    let up = &opts.upstream;
    let host = match &up.host {
        Host::Unix(d) => d.display().to_string(),
        Host::Tcp(h) => h.clone(),
    };
    // Every database name goes to the same name on the server (`*`, the
    // fallback database): the run's database changes with every study.
    let mut ini = format!(
        "[databases]\n* = host={host} port={}\n\n[pgbouncer]\n",
        up.port
    );
    let mut set = |k: &str, v: &str| ini.push_str(&format!("{k} = {v}\n"));
    // TCP only where a password protects it; the private socket trusts.
    set(
        "listen_addr",
        if up.password.is_some() {
            "127.0.0.1"
        } else {
            ""
        },
    );
    set("listen_port", &port.to_string());
    set("unix_socket_dir", &dir.display().to_string());
    set("auth_type", "hba");
    set("auth_hba_file", &dir.join("hba.conf").display().to_string());
    set("auth_file", &dir.join("users.txt").display().to_string());
    set("admin_users", &up.user);
    set("stats_users", &up.user);
    set("pool_mode", opts.mode.name());
    set("default_pool_size", &opts.pool_size.to_string());
    set("min_pool_size", "0");
    set("reserve_pool_size", "0");
    set("max_client_conn", &opts.max_clients.to_string());
    // Many clients connect at once: a longer queue of connections not yet
    // accepted than the default 128 (the kernel caps it at somaxconn).
    set("listen_backlog", "4096");
    // tokio-postgres (the admin console's connection) sends it.
    set("ignore_startup_parameters", "extra_float_digits");
    // One line per connection would be 50,000 lines for 50,000 clients.
    set("log_connections", "0");
    set("log_disconnections", "0");
    set("syslog", "0");
    if opts.mode == PoolMode::Transaction && opts.version.prepared_in_transaction_mode() {
        // Protocol-level prepared statements across server connections
        // (pgbouncer 1.21+), for `-M prepared`.
        set("max_prepared_statements", "1000");
    }
    let password = up.password.as_deref().unwrap_or("");
    let users = format!("{} {}\n", quoted(&up.user), quoted(password));
    let mut hba = String::from("local all all trust\n");
    if up.password.is_some() {
        hba.push_str("host all all 127.0.0.1/32 scram-sha-256\n");
    }
    vec![
        ("pgbouncer.ini", ini),
        ("users.txt", users),
        ("hba.conf", hba),
    ]
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

    #[test]
    fn the_configuration_matches_the_servers_authentication() {
        let opts = |password: Option<&str>| PgBouncerOptions {
            bin: "pgbouncer".into(),
            version: Version::parse("PgBouncer 1.18.0").unwrap(),
            mode: PoolMode::Transaction,
            pool_size: 50,
            max_clients: 2100,
            upstream: Upstream {
                host: Host::Unix("/tmp/isobench-x".into()),
                port: 5555,
                user: "isobench".into(),
                password: password.map(str::to_string),
            },
            log_path: "pgbouncer.log".into(),
            os_user: "postgres".into(),
        };
        let files = config_files(&opts(Some("pw\"x")), Path::new("/tmp/b"), 6432);
        let ini = &files[0].1;
        assert!(
            ini.contains("* = host=/tmp/isobench-x port=5555\n"),
            "{ini}"
        );
        assert!(ini.contains("listen_addr = 127.0.0.1\n"), "{ini}");
        assert!(ini.contains("pool_mode = transaction\n"), "{ini}");
        assert!(ini.contains("default_pool_size = 50\n"), "{ini}");
        assert!(ini.contains("max_client_conn = 2100\n"), "{ini}");
        assert!(!ini.contains("max_prepared_statements"), "1.18 has none");
        assert_eq!(files[1].1, "\"isobench\" \"pw\"\"x\"\n");
        assert!(
            files[2]
                .1
                .contains("host all all 127.0.0.1/32 scram-sha-256")
        );
        // Without a password: the private socket only.
        let files = config_files(&opts(None), Path::new("/tmp/b"), 6432);
        assert!(files[0].1.contains("listen_addr = \n"), "{}", files[0].1);
        assert_eq!(files[2].1, "local all all trust\n");
    }
}
