//! A fake PostgreSQL server: just enough of the wire protocol for the
//! engine's tests, on a Unix socket.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio_postgres::Config;

pub(super) const PORT: u16 = 5432;

/// What the fake server saw.
#[derive(Default)]
pub(super) struct ServerStats {
    pub(super) connections: AtomicU64,
    pub(super) begins: AtomicU64,
    pub(super) commits: AtomicU64,
    pub(super) rollbacks: AtomicU64,
}

/// A fake PostgreSQL server on a Unix socket in a directory of its own.
pub(super) struct Server {
    pub(super) dir: tempfile::TempDir,
    pub(super) stats: Arc<ServerStats>,
}

impl Server {
    /// Starts serving on the current runtime; every successful COMMIT is
    /// answered `commit_delay` after it arrives (the transaction's service
    /// time).
    pub(super) fn start(commit_delay: Duration) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let listener = UnixListener::bind(dir.path().join(format!(".s.PGSQL.{PORT}"))).unwrap();
        let stats = Arc::new(ServerStats::default());
        let st = stats.clone();
        tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                st.connections.fetch_add(1, Relaxed);
                let st = st.clone();
                tokio::spawn(async move {
                    let _ = serve(sock, commit_delay, &st).await;
                });
            }
        });
        Server { dir, stats }
    }

    pub(super) fn config(&self) -> Config {
        let mut c = Config::new();
        c.host_path(self.dir.path())
            .port(PORT)
            .user("fake")
            .dbname("fake");
        c
    }
}

/// Appends one backend message.
pub(super) fn msg(out: &mut Vec<u8>, ty: u8, body: &[u8]) {
    out.push(ty);
    out.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
    out.extend_from_slice(body);
}

pub(super) fn complete(out: &mut Vec<u8>, tag: &str) {
    msg(out, b'C', format!("{tag}\0").as_bytes());
}

pub(super) fn error(out: &mut Vec<u8>, code: &str) {
    let body = format!("SERROR\0VERROR\0C{code}\0Mfake failure {code}\0\0");
    msg(out, b'E', body.as_bytes());
}

/// What the next COMMIT of a session does instead of committing.
pub(super) enum Armed {
    Fail(String),
    Break,
    Terminate,
}

/// One session. Statements' SQL says what they do: `BEGIN ...`, `COMMIT`
/// and `ROLLBACK` as usual; `FAIL <code>` fails with that SQLSTATE;
/// `FAIL AT COMMIT <code>` makes the next COMMIT fail with it; `BREAK AT
/// COMMIT` makes the server close the connection when the next COMMIT
/// arrives; `TERMINATE AFTER COMMIT` makes it commit, answer, then end the
/// session with a FATAL 57P01 (as `pg_terminate_backend` does to an idle
/// session). Anything else succeeds.
pub(super) async fn serve(
    sock: UnixStream,
    commit_delay: Duration,
    st: &ServerStats,
) -> std::io::Result<()> {
    let (r, mut w) = sock.into_split();
    let mut r = tokio::io::BufReader::new(r);
    let len = r.read_i32().await?;
    let mut startup = vec![0; len as usize - 4];
    r.read_exact(&mut startup).await?;
    let mut out = Vec::new();
    msg(&mut out, b'R', &0i32.to_be_bytes()); // AuthenticationOk
    msg(&mut out, b'Z', b"I");
    w.write_all(&out).await?;
    out.clear();
    let mut stmts: HashMap<String, String> = HashMap::new();
    let mut current = String::new();
    // After an error the server skips messages until Sync.
    let mut failed = false;
    let mut armed = None;
    let mut terminate = false;
    // The transaction status each ReadyForQuery reports: idle, in a
    // transaction block, or in a failed one (the engine rolls back only
    // inside a block, as pgbench does).
    let mut status = b'I';
    loop {
        let ty = r.read_u8().await?;
        let len = r.read_i32().await?;
        let mut body = vec![0; len as usize - 4];
        r.read_exact(&mut body).await?;
        let mut fields = body
            .split(|&b| b == 0)
            .map(|f| String::from_utf8_lossy(f).into_owned());
        match ty {
            b'Q' => {
                complete(&mut out, "SET");
                msg(&mut out, b'Z', b"I");
                w.write_all(&out).await?;
                out.clear();
            }
            b'S' => {
                failed = false;
                msg(&mut out, b'Z', &[status]);
                if terminate {
                    let body = "SFATAL\0VFATAL\0C57P01\0Mterminating connection due to administrator command\0\0";
                    msg(&mut out, b'E', body.as_bytes());
                    w.write_all(&out).await?;
                    return Ok(());
                }
                w.write_all(&out).await?;
                out.clear();
            }
            b'X' => return Ok(()),
            _ if failed => {}
            b'P' => {
                let name = fields.next().unwrap_or_default();
                let query = fields.next().unwrap_or_default();
                stmts.insert(name, query);
                msg(&mut out, b'1', b"");
            }
            b'D' => {
                if body.first() == Some(&b'S') {
                    msg(&mut out, b't', &0i16.to_be_bytes());
                }
                msg(&mut out, b'n', b"");
            }
            b'B' => {
                let _portal = fields.next();
                let name = fields.next().unwrap_or_default();
                current = stmts.get(&name).cloned().unwrap_or_default();
                msg(&mut out, b'2', b"");
            }
            b'C' => msg(&mut out, b'3', b""),
            b'E' => {
                let q = current.as_str();
                if q.starts_with("BEGIN") {
                    st.begins.fetch_add(1, Relaxed);
                    status = b'T';
                    complete(&mut out, "BEGIN");
                } else if q == "COMMIT" {
                    // A COMMIT ends the block, whether it succeeds or not.
                    status = b'I';
                    match armed.take() {
                        // Mid-COMMIT: the client cannot know whether it
                        // committed.
                        Some(Armed::Break) => return Ok(()),
                        Some(Armed::Terminate) => {
                            st.commits.fetch_add(1, Relaxed);
                            complete(&mut out, "COMMIT");
                            terminate = true;
                        }
                        Some(Armed::Fail(code)) => {
                            error(&mut out, &code);
                            failed = true;
                        }
                        None => {
                            tokio::time::sleep(commit_delay).await;
                            st.commits.fetch_add(1, Relaxed);
                            complete(&mut out, "COMMIT");
                        }
                    }
                } else if q == "ROLLBACK" {
                    armed = None;
                    status = b'I';
                    st.rollbacks.fetch_add(1, Relaxed);
                    complete(&mut out, "ROLLBACK");
                } else if q == "TERMINATE AFTER COMMIT" {
                    armed = Some(Armed::Terminate);
                    complete(&mut out, "SELECT 0");
                } else if q == "BREAK AT COMMIT" {
                    armed = Some(Armed::Break);
                    complete(&mut out, "SELECT 0");
                } else if let Some(code) = q.strip_prefix("FAIL AT COMMIT ") {
                    armed = Some(Armed::Fail(code.to_string()));
                    complete(&mut out, "SELECT 0");
                } else if let Some(code) = q.strip_prefix("FAIL ") {
                    error(&mut out, code);
                    failed = true;
                    if status == b'T' {
                        status = b'E';
                    }
                } else {
                    complete(&mut out, "SELECT 0");
                }
            }
            _ => {}
        }
    }
}
