//! A connection's socket, registered with the runtime for readability
//! only.
//!
//! tokio's `TcpStream` and `UnixStream` register every socket for reading
//! and writing, edge-triggered. On a Unix-domain socket the kernel reports
//! the socket writable each time the peer consumes what was sent
//! (`unix_write_space`), so the runtime handled a write-readiness event per
//! statement that nothing waited for; pgbench's `ppoll` asks for `POLLIN`
//! only. Here writes go straight to the kernel (they are small and fit the
//! socket's buffer), and only a write that would block waits for
//! writability, through a second registration of a duplicate of the
//! descriptor that lasts as long as that wait. Measured (BENCHMARKS.md,
//! "Registering for reading only"): about 0.3 µs less user time per
//! select-only transaction; the context switches per transaction did not
//! change.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use bytes::BytesMut;
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

/// The socket itself.
enum Sock {
    Tcp(std::net::TcpStream),
    Unix(std::os::unix::net::UnixStream),
}

impl AsRawFd for Sock {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Sock::Tcp(s) => s.as_raw_fd(),
            Sock::Unix(s) => s.as_raw_fd(),
        }
    }
}

/// A connected, non-blocking socket registered for readability.
pub(super) struct Socket(AsyncFd<Sock>);

impl Socket {
    /// Takes over a connected TCP socket (with `TCP_NODELAY` set).
    ///
    /// Errors: the socket cannot be registered with the runtime.
    pub(super) fn tcp(s: tokio::net::TcpStream) -> io::Result<Self> {
        s.set_nodelay(true)?;
        Self::register(Sock::Tcp(s.into_std()?))
    }

    /// Takes over a connected Unix-domain socket.
    ///
    /// Errors: the socket cannot be registered with the runtime.
    pub(super) fn unix(s: tokio::net::UnixStream) -> io::Result<Self> {
        Self::register(Sock::Unix(s.into_std()?))
    }

    fn register(s: Sock) -> io::Result<Self> {
        // `into_std` keeps the socket non-blocking.
        // SAFETY: `s` owns its open descriptor and always returns it; it
        // is closed only when the `AsyncFd` drops `s`.
        let fd = unsafe { AsyncFd::register_with_interest(s, Interest::READABLE)? };
        Ok(Socket(fd))
    }

    fn fd(&self) -> RawFd {
        self.0.get_ref().as_raw_fd()
    }

    /// Writes all of `buf`, waiting for room only when the kernel has none.
    pub(super) async fn write_all(&self, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() {
            // SAFETY: `buf` is readable memory of `buf.len()` bytes.
            let n = unsafe {
                libc::send(
                    self.fd(),
                    buf.as_ptr().cast(),
                    buf.len(),
                    libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                )
            };
            if n >= 0 {
                buf = &buf[n as usize..];
                continue;
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                // Boxed: the wait is rare (a full socket buffer), and its
                // state (a registration of its own) would otherwise sit
                // between this future's arguments and its locals in every
                // client's state, one more cache line per statement.
                io::ErrorKind::WouldBlock => Box::pin(self.writable()).await?,
                io::ErrorKind::Interrupted => {}
                _ => return Err(e),
            }
        }
        Ok(())
    }

    /// Waits until the socket can take more, through a registration of a
    /// duplicate descriptor for writability that ends with the wait.
    async fn writable(&self) -> io::Result<()> {
        // SAFETY: `dup` returns a new descriptor this function owns, or -1.
        let dup = unsafe { libc::dup(self.fd()) };
        if dup < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `dup` is a valid descriptor owned by no one else.
        let owned = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(dup) };
        // SAFETY: `owned` owns the open duplicate and always returns it; it
        // is closed only when `w` drops it.
        let w = unsafe { AsyncFd::register_with_interest(owned, Interest::WRITABLE)? };
        w.writable().await?.retain_ready();
        Ok(())
    }

    /// Reads what has arrived into `buf`'s spare capacity, waiting for the
    /// socket to become readable first if nothing has: the bytes read (0
    /// at EOF).
    ///
    /// A read that returns less than it had room for found the socket
    /// empty: the runtime is told so at once, so that the next read waits
    /// for the server instead of first trying a `recv` that can only fail
    /// with `EAGAIN` (one system call less per statement). It is told
    /// through the readiness guard the read started from, which clears the
    /// readiness only if no readiness event came in since the guard was
    /// taken: on a multi-threaded runtime, whose I/O driver runs beside
    /// this task, data that arrived after the `recv` (and its event) keeps
    /// the socket readable. Clearing whatever readiness was current
    /// instead lost such a wake-up, and a connection then waited forever
    /// for an answer already in its socket.
    pub(super) async fn read_buf(&self, buf: &mut BytesMut) -> io::Result<usize> {
        loop {
            // `poll_read_ready` keeps this task's waker in the socket's one
            // reader slot; `readable()`'s future would add it to the
            // socket's list of waiters and remove it again, under the
            // list's lock both times, on every wait.
            let mut ready = std::future::poll_fn(|cx| self.0.poll_read_ready(cx)).await?;
            let room = buf.capacity() - buf.len();
            match ready.try_io(|s| recv(s.get_ref().as_raw_fd(), buf)) {
                Ok(Ok(n)) => {
                    if n > 0 && n < room {
                        ready.clear_ready();
                    }
                    return Ok(n);
                }
                Ok(Err(e)) => return Err(e),
                // EAGAIN: the guard cleared the readiness it saw; wait.
                Err(_would_block) => {}
            }
        }
    }

    /// One read of what has arrived, whatever the runtime last knew of the
    /// socket's readiness (its I/O driver may not have seen the arrival
    /// yet): the bytes read (0 at EOF); `WouldBlock` when nothing has
    /// arrived. When the runtime held the socket readable, the `recv` runs
    /// under that readiness, and an `EAGAIN` clears it (only if no event
    /// came in meanwhile, as in [`Socket::read_buf`]), so that the
    /// awaited read that follows waits for the next arrival instead of
    /// first failing on a readiness left from earlier.
    pub(super) fn read_now(&self, buf: &mut BytesMut) -> io::Result<usize> {
        let mut tried = false;
        let r = self.0.try_io(Interest::READABLE, |s| {
            tried = true;
            recv(s.as_raw_fd(), buf)
        });
        if tried { r } else { recv(self.fd(), buf) }
    }
}

/// One non-blocking `recv` into `buf`'s spare capacity.
fn recv(fd: RawFd, buf: &mut BytesMut) -> io::Result<usize> {
    let spare = buf.spare_capacity_mut();
    // SAFETY: `spare` is writable memory of `spare.len()` bytes owned by
    // `buf`; `recv` writes at most that many and returns how many.
    let n = unsafe {
        libc::recv(
            fd,
            spare.as_mut_ptr().cast(),
            spare.len(),
            libc::MSG_DONTWAIT,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let n = n as usize;
    // SAFETY: the kernel initialised the first `n` spare bytes.
    unsafe { buf.set_len(buf.len() + n) };
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a multi-threaded runtime, whose I/O driver runs beside the
    /// reading task, an answer that arrives in two parts, the second just
    /// after the read that took the first, must still wake the reader:
    /// the readiness cleared after the short read is only the one that
    /// read started from. (Clearing the current readiness instead lost the
    /// second part's wake-up now and then, and the read waited forever.)
    #[test]
    fn an_answer_split_around_a_short_read_is_never_lost() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let peer = std::thread::spawn(move || {
            use std::io::{Read, Write};
            let mut a = a;
            let mut ping = [0u8; 1];
            let mut k = 0u32;
            while a.read_exact(&mut ping).is_ok() {
                a.write_all(b"x").unwrap();
                // A short, varying gap: the second part lands around the
                // moment the reader's first read returns.
                k = k.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                for _ in 0..(k >> 20) % 2_000 {
                    std::hint::spin_loop();
                }
                a.write_all(b"y").unwrap();
            }
        });
        rt.block_on(async move {
            b.set_nonblocking(true).unwrap();
            let b = Socket::unix(tokio::net::UnixStream::from_std(b).unwrap()).unwrap();
            let mut buf = BytesMut::with_capacity(64);
            for i in 0..20_000 {
                b.write_all(b"p").await.unwrap();
                buf.clear();
                while buf.len() < 2 {
                    buf.reserve(64);
                    let read = tokio::time::timeout(
                        std::time::Duration::from_secs(5),
                        b.read_buf(&mut buf),
                    );
                    let n = read.await.unwrap_or_else(|_| {
                        panic!("round {i}: the answer's second part never woke the reader")
                    });
                    assert!(n.unwrap() > 0);
                }
                assert_eq!(&buf[..], b"xy");
            }
        });
        peer.join().unwrap();
    }

    /// A write larger than the socket's buffer waits for room (the
    /// duplicate's writability) and completes once the peer reads; a read
    /// waits for data and returns it; EOF reads 0.
    #[tokio::test]
    async fn writes_wait_for_room_and_reads_for_data() {
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        b.set_nonblocking(true).unwrap();
        let a = Socket::unix(tokio::net::UnixStream::from_std(a).unwrap()).unwrap();
        let b = Socket::unix(tokio::net::UnixStream::from_std(b).unwrap()).unwrap();
        let sent: Vec<u8> = (0..4 << 20).map(|i| (i % 251) as u8).collect();
        let mut got = BytesMut::new();
        let reader = async {
            while got.len() < sent.len() {
                got.reserve(64 * 1024);
                let n = b.read_buf(&mut got).await.unwrap();
                assert!(n > 0);
            }
        };
        let (w, ()) = tokio::join!(a.write_all(&sent), reader);
        w.unwrap();
        assert!(got[..] == sent[..]);
        let mut buf = BytesMut::with_capacity(16);
        assert_eq!(
            b.read_now(&mut buf).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
        drop(a);
        assert_eq!(b.read_buf(&mut buf).await.unwrap(), 0);
    }
}
