//! A connection's I/O half, watched for why the connection ended.
//!
//! When the server ends a session on its own (`pg_terminate_backend`:
//! 57P01 admin_shutdown; a crash of another backend: 57P02
//! crash_shutdown; a shutdown: 57P01/57P03), it sends a FATAL error and
//! closes the socket. If the client has a request in flight, that request
//! gets the error and the engine classifies it by its SQLSTATE. If not (the
//! client is between statements or between transactions, which is most of
//! the time), tokio-postgres ends the connection's I/O future with the
//! error instead, and the client's next request only sees "connection
//! closed", without a SQLSTATE. [`Watched`] keeps the SQLSTATE the I/O
//! future ended with, so that the loss is recorded under what the server
//! said (57P01) rather than the generic 08006 connection_failure.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use crate::model::SqlState;
use crate::target;

/// The SQLSTATE a connection ended with, shared between its I/O half and
/// the session that owns the connection (the I/O may run in a task of its
/// own). Unset until the I/O future ends with a server error.
#[derive(Debug, Default)]
pub(super) struct EndCode(AtomicU64);

impl EndCode {
    /// The SQLSTATE, if the connection ended with one.
    pub(super) fn get(&self) -> Option<SqlState> {
        decode(self.0.load(Ordering::Acquire))
    }

    fn set(&self, code: SqlState) {
        self.0.store(encode(code), Ordering::Release);
    }
}

/// A SQLSTATE packed into a `u64` (0: none). SQLSTATEs are five ASCII
/// characters, so no code packs to 0.
fn encode(code: SqlState) -> u64 {
    code.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
}

fn decode(v: u64) -> Option<SqlState> {
    if v == 0 {
        return None;
    }
    let mut code = [0u8; 5];
    for (i, b) in code.iter_mut().enumerate() {
        *b = (v >> (8 * (4 - i))) as u8;
    }
    Some(code)
}

/// A connection's I/O half that stores the SQLSTATE of the error it ends
/// with (if any) into its [`EndCode`] before it completes, so the code is
/// there by the time the client's requests fail as closed.
pub(super) struct Watched {
    io: target::Io,
    end: Arc<EndCode>,
}

impl Watched {
    /// Watches `io`, a new connection's I/O half, into a fresh [`EndCode`].
    pub(super) fn new(io: target::Io) -> (Watched, Arc<EndCode>) {
        let end = Arc::new(EndCode::default());
        (
            Watched {
                io,
                end: end.clone(),
            },
            end,
        )
    }
}

impl Future for Watched {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match Pin::new(&mut self.io).poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(())) => Poll::Ready(()),
            Poll::Ready(Err(e)) => {
                if let Some(code) = e.code().and_then(|c| crate::model::sqlstate(c.code())) {
                    self.end.set(code);
                }
                Poll::Ready(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlstates_pack_and_unpack() {
        for code in [*b"57P01", *b"08006", *b"00000", *b"XX000"] {
            assert_eq!(decode(encode(code)), Some(code));
        }
        assert_eq!(decode(0), None);
        let end = EndCode::default();
        assert_eq!(end.get(), None);
        end.set(*b"57P02");
        assert_eq!(end.get(), Some(*b"57P02"));
    }
}
