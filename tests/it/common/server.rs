//! A PostgreSQL server started through the library, so that isobench sees
//! it as an external server (`--dsn`), or a test drives it directly.

use std::path::{Path, PathBuf};

use isobench::postgres::{self, ManagedOptions, ManagedServer};

/// Builds a server: `Server::new(dir).start()`, or with settings and
/// another build's binaries first.
pub struct Server {
    dir: PathBuf,
    settings: Vec<(String, String)>,
    bin_dir: Option<PathBuf>,
}

impl Server {
    /// A server whose log is `dir/external-server.log` (`dir` is created).
    pub fn new(dir: &Path) -> Server {
        Server {
            dir: dir.to_path_buf(),
            settings: Vec::new(),
            bin_dir: None,
        }
    }

    /// A server setting (`postgresql.conf`), e.g. `("max_connections", "200")`.
    pub fn set(mut self, name: &str, value: &str) -> Server {
        self.settings.push((name.into(), value.into()));
        self
    }

    /// The binaries in `ISOBENCH_TEST_PG_BIN` when set (another build,
    /// e.g. PostgreSQL 18), else the installed ones.
    pub fn bin_from_env(mut self) -> Server {
        self.bin_dir = std::env::var_os("ISOBENCH_TEST_PG_BIN").map(PathBuf::from);
        self
    }

    /// Starts it; panics when it does not start. Stopped when dropped.
    pub fn start(self) -> ManagedServer {
        std::fs::create_dir_all(&self.dir).unwrap();
        ManagedServer::start(&ManagedOptions {
            bin_dir: postgres::find_bin_dir(self.bin_dir.as_deref()).expect("PostgreSQL binaries"),
            settings: self.settings,
            log_path: self.dir.join("external-server.log"),
            os_user: "postgres".into(),
        })
        .expect("server starts")
    }
}

/// A server with default settings, logging into `dir`.
pub fn library_server(dir: &Path) -> ManagedServer {
    Server::new(dir).start()
}

/// A key=value DSN for database `db` over the server's Unix socket.
pub fn socket_dsn(server: &ManagedServer, db: &str) -> String {
    format!(
        "host={} port={} user={} dbname={db}",
        server.socket_dir().display(),
        server.port(),
        postgres::SUPERUSER
    )
}
