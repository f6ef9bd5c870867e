//! The server under test: a managed throwaway PostgreSQL (default) or an
//! external one (`--dsn`, or the libpq `PG*` environment variables).

// The floor below.
use isobench_model as model;

pub mod autofailover;
pub mod cancel;
pub mod cluster;
pub mod cpus;

mod managed;
pub mod pgbouncer;
mod process;
pub mod reaper;
pub mod standby;

use std::path::Path;
use std::time::Duration;

use crate::model::{PgBuild, PgBuildError};
use tokio_postgres::config::Host;
use tokio_postgres::{Client, Config, NoTls};

pub use managed::{
    ManagedOptions, ManagedServer, SUPERUSER, ServerControl, Shutdown, find_bin_dir,
};

/// Errors of finding, starting, or reaching the target.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("{0}")]
    NoBinaries(String),
    #[error(
        "isobench runs as root, and initdb/postgres refuse to; the OS user '{0}' to run them as does not exist \
         (create one, e.g. `useradd --system postgres`, or pass --server-user NAME)"
    )]
    NoOsUser(String),
    #[error("managed server: {0}")]
    Start(String),
    #[error("--dsn: {0}")]
    Dsn(String),
    #[error("cannot connect to {target}: {reason}")]
    Connect { target: String, reason: String },
}

/// Where the load goes. Owns the managed server, so dropping the target
/// stops it.
#[derive(Debug)]
pub enum Target {
    Managed(ManagedServer),
    External(Config),
}

impl Target {
    /// An external target from `--dsn` (URL or `key=value` form), or, with
    /// no DSN, from `PGHOST`, `PGPORT`, `PGUSER`, `PGPASSWORD`,
    /// `PGDATABASE` with libpq's defaults (socket in /var/run/postgresql,
    /// port 5432, user = OS user, database = user).
    ///
    /// Errors: [`TargetError::Dsn`] when the DSN does not parse.
    pub fn external(dsn: Option<&str>) -> Result<Target, TargetError> {
        let mut config = match dsn {
            Some(dsn) => dsn.parse::<Config>().map_err(|e| {
                TargetError::Dsn(format!(
                    "cannot parse it (not shown: it may hold a password): {e}"
                ))
            })?,
            None => Config::new(),
        };
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        if config.get_hosts().is_empty() {
            let host = env("PGHOST").unwrap_or_else(|| "/var/run/postgresql".into());
            if host.starts_with('/') {
                config.host_path(host);
            } else {
                config.host(&host);
            }
        }
        if config.get_ports().is_empty() {
            let port = match env("PGPORT") {
                Some(p) => p
                    .parse()
                    .map_err(|_| TargetError::Dsn(format!("PGPORT '{p}' is not a port number")))?,
                None => 5432,
            };
            config.port(port);
        }
        if config.get_user().is_none() {
            let user = env("PGUSER")
                .or_else(|| env("USER"))
                .unwrap_or_else(|| "postgres".into());
            config.user(&user);
        }
        if config.get_password().is_none()
            && let Some(pw) = env("PGPASSWORD")
        {
            config.password(pw);
        }
        if config.get_dbname().is_none() {
            let db = env("PGDATABASE")
                .unwrap_or_else(|| config.get_user().unwrap_or("postgres").to_string());
            config.dbname(&db);
        }
        if config.get_application_name().is_none()
            && let Some(name) = env("PGAPPNAME")
        {
            config.application_name(&name);
        }
        Ok(Target::External(config))
    }

    /// Connection settings for database `dbname` on this target. Their
    /// `application_name` is the user's ([`Target::user_application_name`])
    /// or else [`APPLICATION_NAME`].
    pub fn config(&self, dbname: &str) -> Config {
        match self {
            Target::Managed(s) => s.config(dbname),
            Target::External(c) => {
                let mut c = c.clone();
                c.dbname(dbname);
                if c.get_application_name().is_none() {
                    c.application_name(APPLICATION_NAME);
                }
                c
            }
        }
    }

    /// The `application_name` the user gave an external target (the
    /// DSN's `application_name`, or else `PGAPPNAME`, as libpq takes
    /// them); `None` for a managed server or when none was given.
    pub fn user_application_name(&self) -> Option<&str> {
        match self {
            Target::Managed(_) => None,
            Target::External(c) => c.get_application_name(),
        }
    }

    /// A handle on the managed server's processes (`--fault restart`,
    /// `crash`, `pause`); `None` for an external server.
    pub fn control(&self) -> Option<ServerControl> {
        match self {
            Target::Managed(s) => Some(s.control()),
            Target::External(_) => None,
        }
    }

    /// The names of the managed primary's standbys (their
    /// `application_name`s, in priority order); empty for an external
    /// server or a primary without standbys.
    pub fn standby_names(&self) -> Vec<String> {
        match self {
            Target::Managed(s) => s.standbys().iter().map(|s| s.name().to_string()).collect(),
            Target::External(_) => Vec::new(),
        }
    }

    /// Where reads routed to a standby go (`--read-from`), for database
    /// `dbname`: per standby, connection settings and the index of the
    /// host in them to connect to. The managed primary's standbys; an
    /// external DSN's hosts after its first (the primary first, its
    /// standbys after it); empty when there is none.
    pub fn standby_configs(&self, dbname: &str) -> Vec<(Config, usize)> {
        match self {
            Target::Managed(s) => (0..s.standbys().len())
                .filter_map(|i| s.standby_config(i, dbname).map(|c| (c, 0)))
                .collect(),
            Target::External(c) => {
                let config = self.config(dbname);
                (1..c.get_hosts().len())
                    .map(|i| (config.clone(), i))
                    .collect()
            }
        }
    }

    /// The database to connect to for administration (CREATE DATABASE).
    pub fn admin_db(&self) -> String {
        match self {
            Target::Managed(_) => "postgres".into(),
            Target::External(c) => c.get_dbname().unwrap_or("postgres").into(),
        }
    }

    /// A one-line description without any password, for logs and reports.
    pub fn describe(&self) -> String {
        match self {
            Target::Managed(s) => format!(
                "managed PostgreSQL from {} (socket {}, 127.0.0.1:{})",
                s.bin_dir().display(),
                s.socket_dir().display(),
                s.port()
            ),
            Target::External(c) => format!("external {}", describe_config(c)),
        }
    }
}

/// The `application_name` of isobench's clients when the user gives
/// none (a DSN's `application_name` or `PGAPPNAME` is kept as given).
pub const APPLICATION_NAME: &str = "isobench";

/// The longest `application_name` the server keeps, in bytes
/// (`NAMEDATALEN - 1`); it truncates longer ones.
const MAX_NAME_BYTES: usize = 63;

/// The `application_name` the workload's connections made with `config`
/// show in `pg_stat_activity`: the one `config` sets (the user's, or
/// [`APPLICATION_NAME`]), cut to 63 bytes as the server cuts it. What
/// the observer and the fault injector look for to find isobench's
/// clients.
pub fn clients_application_name(config: &Config) -> String {
    let name = config.get_application_name().unwrap_or(APPLICATION_NAME);
    let mut end = name.len().min(MAX_NAME_BYTES);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_string()
}

/// Names one of isobench's own connections (`role`: `observer`, `check`,
/// `fault`) so that it is not taken for a client: `isobench-ROLE` when
/// the clients are `isobench`, or the user's name with `/isobench-ROLE`
/// appended (as isolationtester appends its session names), so the
/// user's `application_name` is kept on every connection.
pub fn own_session(config: &mut Config, role: &str) {
    let name = match config.get_application_name() {
        None | Some(APPLICATION_NAME) => format!("{APPLICATION_NAME}-{role}"),
        Some(user) => format!("{user}/{APPLICATION_NAME}-{role}"),
    };
    config.application_name(&name);
}

/// Starts the target `cfg` names: an external server (`--dsn`,
/// `--external`), or else a managed server from `--pg-bin` (or the
/// binaries [`find_bin_dir`] finds) with the `--set` settings, logging to
/// `log_path`. The managed server gets `max_connections` of at least
/// `connections` (and at least the default 100) unless `--set` names it,
/// and logs LOG and worse only: expected errors (40001 and friends, counted
/// by SQLSTATE in the results) would otherwise fill the log at thousands of
/// lines a second and cost the server I/O.
///
/// Errors: [`TargetError`] for a bad DSN, missing binaries or OS user, or a
/// server that does not start (with the end of its log).
pub async fn start(
    cfg: &crate::model::TargetConfig,
    log_path: &Path,
    connections: u32,
) -> Result<Target, TargetError> {
    if cfg.dsn.is_some() || cfg.external_from_env {
        return Target::external(cfg.dsn.as_deref());
    }
    let bin_dir = find_bin_dir(cfg.pg_bin.as_ref().map(|b| b.dir.as_path()))?;
    // `replication` is isobench's own (set as synchronous_standby_names
    // once the standbys run), not the server's.
    let mut settings: Vec<(String, String)> = cfg
        .settings
        .iter()
        .filter(|(k, _)| k != crate::model::REPLICATION)
        .cloned()
        .collect();
    let mut default = |name: &str, value: String| {
        if !settings.iter().any(|(k, _)| k == name) {
            settings.push((name.into(), value));
        }
    };
    default("max_connections", connections.max(100).to_string());
    default("log_min_messages", "log".into());
    let opts = ManagedOptions {
        bin_dir,
        settings,
        log_path: log_path.to_path_buf(),
        os_user: cfg.server_user.clone(),
    };
    let standbys = cfg.cluster.standbys;
    let server = tokio::task::spawn_blocking(move || {
        let mut server = ManagedServer::start(&opts)?;
        server.start_standbys(standbys)?;
        Ok::<_, TargetError>(server)
    })
    .await
    .map_err(|e| TargetError::Start(format!("the start task failed: {e}")))??;
    if standbys > 0 {
        let admin = connect(&server.config("postgres")).await?;
        let names: Vec<String> = server
            .standbys()
            .iter()
            .map(|s| s.name().to_string())
            .collect();
        cluster::wait_streaming(&admin, &names, cluster::CLUSTER_WAIT).await?;
    }
    Ok(Target::Managed(server))
}

/// Checks that `dir` holds a PostgreSQL server's binaries (`initdb` and
/// `postgres`).
///
/// Errors: [`PgBuildError::NotABinDir`] naming the directory and the
/// missing binary.
pub fn check_bin_dir(dir: &std::path::Path) -> Result<(), PgBuildError> {
    for missing in ["postgres", "initdb"] {
        if !dir.join(missing).is_file() {
            return Err(PgBuildError::NotABinDir {
                dir: dir.display().to_string(),
                missing,
            });
        }
    }
    Ok(())
}

/// A server build named `name` (if any) in `dir`: the one check behind
/// `--pg-bin [NAME=]DIR` and every entry of a study file's `pg_bin`
/// (a directory, a list of them, or a table of name = directory).
///
/// Errors: a name that cannot be a label, an empty directory, or one
/// without `initdb` and `postgres` ([`PgBuildError`]).
pub fn pg_build(name: Option<&str>, dir: &str) -> Result<PgBuild, PgBuildError> {
    let build = PgBuild::new(name, dir)?;
    check_bin_dir(&build.dir)?;
    Ok(build)
}

/// `user@host:port/db`, never the password.
pub fn describe_config(c: &Config) -> String {
    let host = match c.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        Some(Host::Unix(p)) => p.display().to_string(),
        None => "?".into(),
    };
    format!(
        "{}@{}:{}/{}",
        c.get_user().unwrap_or("?"),
        host,
        c.get_ports().first().copied().unwrap_or(5432),
        c.get_dbname().unwrap_or("?")
    )
}

/// Opens a connection and spawns its I/O task. The whole attempt (socket,
/// startup, authentication) is bounded at 15 s.
///
/// Errors: [`TargetError::Connect`] naming the target (never the password)
/// and the server's reason (refused, authentication failed, no database).
pub async fn connect(config: &Config) -> Result<Client, TargetError> {
    let (client, connection) = connect_io(config).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

/// A connection's I/O half: the future that reads and writes its socket.
/// Whoever holds it must poll it for its [`Client`] to make progress.
pub type Io = tokio_postgres::Connection<tokio_postgres::Socket, tokio_postgres::tls::NoTlsStream>;

/// Opens a connection like [`connect`] but hands back its I/O half instead
/// of spawning it, so the caller can poll it in its own task (the engine
/// does: see `engine::inline`).
///
/// Errors: as [`connect`].
pub async fn connect_io(config: &Config) -> Result<(Client, Io), TargetError> {
    let mut config = config.clone();
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(10));
    }
    let fail = |reason: String| TargetError::Connect {
        target: describe_config(&config),
        reason,
    };
    let (client, connection) = tokio::time::timeout(Duration::from_secs(15), config.connect(NoTls))
        .await
        .map_err(|_| fail("no answer within 15 s".into()))?
        .map_err(|e| {
            let hint = connect_hint(&e).map_or(String::new(), |h| format!("; {h}"));
            fail(format!("{}{hint}", error_text(&e)))
        })?;
    Ok((client, connection))
}

/// What to do about a connection that failed for a reason of this
/// machine's: nothing listens on the TCP port (`connection refused`),
/// there is no Unix socket file (`no such socket`), or no local TCP port
/// is left for another connection to the same address and port
/// (`EADDRNOTAVAIL`: each takes one from `net.ipv4.ip_local_port_range`,
/// about 28,000 by default, which 50,000 clients through one pgbouncer
/// exceed).
fn connect_hint(e: &tokio_postgres::Error) -> Option<String> {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return match io.kind() {
                std::io::ErrorKind::ConnectionRefused => {
                    Some("is the server running? (connection refused)".into())
                }
                std::io::ErrorKind::NotFound => {
                    Some("is the server running? (no such socket)".into())
                }
                _ if io.raw_os_error() == Some(libc::EADDRNOTAVAIL) => Some(out_of_ports()),
                _ => None,
            };
        }
        source = s.source();
    }
    None
}

/// The local TCP ports a connection to one address and port can take
/// (`net.ipv4.ip_local_port_range`, inclusive); `None` where the kernel
/// does not say (not Linux).
pub fn local_port_range() -> Option<(u32, u32)> {
    let t = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut it = t.split_whitespace().map(str::parse::<u32>);
    Some((it.next()?.ok()?, it.next()?.ok()?))
}

/// The hint for a connection that found no local TCP port left.
fn out_of_ports() -> String {
    let have = local_port_range().map_or(String::new(), |(lo, hi)| {
        format!(" ({lo}-{hi}: {} ports)", hi.saturating_sub(lo) + 1)
    });
    format!(
        "out of local TCP ports: every connection to one address and port takes one from \
         net.ipv4.ip_local_port_range{have}; widen it (as root: sysctl -w \
         net.ipv4.ip_local_port_range=\"1024 65535\"), or spread the clients over more addresses or machines"
    )
}

/// The most useful text of a tokio-postgres error: the server's message for
/// database errors, else the error chain.
pub fn error_text(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{} ({})", db.message(), db.code().code());
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue #51: 50,000 connections to one pgbouncer ran out of local
    /// ports (28,232 by default); the error must say which setting and how
    /// to widen it.
    #[test]
    fn out_of_ports_names_the_port_range_and_the_way_out() {
        let h = out_of_ports();
        assert!(h.contains("net.ipv4.ip_local_port_range ("), "{h}");
        assert!(h.contains("sysctl -w"), "{h}");
        let (lo, hi) = local_port_range().unwrap();
        assert!(lo <= hi, "{lo}-{hi}");
        assert!(
            h.contains(&format!("{lo}-{hi}: {} ports", hi - lo + 1)),
            "{h}"
        );
    }

    #[test]
    fn describe_never_shows_password() {
        let t = Target::external(Some("postgres://bob:s3cret@db:6543/x")).unwrap();
        let d = t.describe();
        assert!(!d.contains("s3cret"), "{d}");
        assert!(d.contains("bob@db:6543/x"), "{d}");
    }

    #[test]
    fn a_users_application_name_is_kept_and_isobenchs_sessions_append() {
        let t = Target::external(Some("host=/tmp dbname=x application_name=myapp")).unwrap();
        assert_eq!(t.user_application_name(), Some("myapp"));
        let mut c = t.config("run");
        assert_eq!(c.get_application_name(), Some("myapp"));
        assert_eq!(clients_application_name(&c), "myapp");
        own_session(&mut c, "observer");
        assert_eq!(c.get_application_name(), Some("myapp/isobench-observer"));
        let t = Target::external(Some("postgres://bob@db/x?application_name=app%201")).unwrap();
        assert_eq!(t.config("x").get_application_name(), Some("app 1"));
    }

    #[test]
    fn without_one_the_clients_are_isobench() {
        // (PGAPPNAME is not set in the test environment.)
        if std::env::var_os("PGAPPNAME").is_some() {
            return;
        }
        let t = Target::external(Some("host=/tmp dbname=x")).unwrap();
        assert_eq!(t.user_application_name(), None);
        let mut c = t.config("run");
        assert_eq!(c.get_application_name(), Some("isobench"));
        assert_eq!(clients_application_name(&c), "isobench");
        own_session(&mut c, "check");
        assert_eq!(c.get_application_name(), Some("isobench-check"));
    }

    #[test]
    fn the_clients_name_is_cut_as_the_server_cuts_it() {
        let mut c = Config::new();
        c.application_name(format!("{}é-tail", "a".repeat(62)));
        // 62 bytes of 'a', then 'é' (2 bytes) would end at byte 64.
        assert_eq!(clients_application_name(&c), "a".repeat(62));
    }
}
