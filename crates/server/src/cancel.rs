//! Cancelling a running query the way libpq does.
//!
//! A cancel is a new connection that sends a CancelRequest (the backend's
//! pid and secret key). libpq's `PQcancel` then waits for the server to
//! close that connection; tokio-postgres's `cancel_query` closes its own
//! end at once. pgbouncer 1.18 (Debian 12's) does not survive the latter:
//! it exits with `FATAL ... disconnect_client(): bad client state: 0` on
//! the first such cancel (pgbouncer issue #801, fixed after 1.18; seen
//! here with a single pgbouncer). A DSN may name the user's own pgbouncer
//! (`isobench anomalies --dsn`), so every cancel isobench sends goes
//! through [`cancel`], which waits as libpq does.

use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::config::Host;
use tokio_postgres::{CancelToken, Client, Config, NoTls};

/// How long a cancel may take: connecting, and the server's close.
const CANCEL_WAIT: Duration = Duration::from_secs(5);

/// A stream whose shutdown waits for the peer to close (end of file, or
/// an error), instead of closing this end: what `PQcancel` does after it
/// sent the request.
struct WaitForClose<S>(S);

impl<S: AsyncRead + Unpin> AsyncRead for WaitForClose<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for WaitForClose<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let mut byte = [0u8; 64];
        loop {
            let mut buf = ReadBuf::new(&mut byte);
            match ready!(Pin::new(&mut self.0).poll_read(cx, &mut buf)) {
                Ok(()) if buf.filled().is_empty() => return Poll::Ready(Ok(())),
                Ok(()) => {} // the server sends nothing; read on
                Err(_) => return Poll::Ready(Ok(())),
            }
        }
    }
}

/// Sends `token`'s cancel to the first host of `config` that accepts a
/// connection (the one a connection made with `config` reaches), and
/// waits up to `CANCEL_WAIT` for the server to close it. Best effort,
/// like `PQcancel`: the server says nothing about whether the query was
/// cancelled.
pub async fn cancel_token(token: &CancelToken, config: &Config) {
    let ports = config.get_ports();
    let attempt = async {
        for (i, host) in config.get_hosts().iter().enumerate() {
            let port = ports
                .get(i)
                .or_else(|| ports.first())
                .copied()
                .unwrap_or(5432);
            let sent = match host {
                Host::Unix(dir) => {
                    let path = dir.join(format!(".s.PGSQL.{port}"));
                    match tokio::net::UnixStream::connect(&path).await {
                        Ok(s) => token.cancel_query_raw(WaitForClose(s), NoTls).await.is_ok(),
                        Err(_) => false,
                    }
                }
                Host::Tcp(name) => {
                    match tokio::net::TcpStream::connect((name.as_str(), port)).await {
                        Ok(s) => token.cancel_query_raw(WaitForClose(s), NoTls).await.is_ok(),
                        Err(_) => false,
                    }
                }
            };
            if sent {
                return;
            }
        }
    };
    let _ = tokio::time::timeout(CANCEL_WAIT, attempt).await;
}

/// [`cancel_token`] of `client`, which was connected with `config`.
pub async fn cancel(client: &Client, config: &Config) {
    cancel_token(&client.cancel_token(), config).await;
}
