//! A worker's clients driven as one task, in passes, as pgbench's thread
//! serves its clients: each time the task runs it polls the clients woken
//! since its last pass, in client-id order (pgbench's `threadRun`: one wait
//! on every client's socket, then each ready client in turn, lowest id
//! first).
//!
//! Why not a tokio task per client: tokio's scheduler runs woken tasks in
//! the order they were woken, which spreads one starved thread's service
//! evenly over its clients: every client's statements wait about as long
//! as the thread's whole round, and every transaction stays open that long.
//! Under SERIALIZABLE the time a transaction is open is what it collects
//! rw-conflicts over, so the client's scheduling changes the answer. In
//! passes, the clients served first in a round get their answers back
//! sooner, as pgbench's do; with 16 clients on one thread this committed
//! about 9 % more SERIALIZABLE transactions than a task per client, closer
//! to pgbench at the same `-j` (BENCHMARKS.md, "Under SERIALIZABLE"); at
//! READ COMMITTED it made no measurable difference.
//!
//! A client that panics ends as `Err` with the panic's message; the
//! others go on.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::task::{Context, Poll, Wake, Waker};

use futures_util::task::AtomicWaker;

/// Which of a worker's clients were woken since the pass that last
/// polled them, one bit per client in id order, and the worker's task.
/// A pass reads the bits a word (64 clients) at a time and clears a word
/// with one locked instruction: with a flag per client, each in its own
/// allocation, a pass over 16 clients read 16 cache lines that the
/// clients' own work had mostly evicted since the last pass.
struct Woken {
    bits: Box<[AtomicU64]>,
    /// The task was woken since its current pass started: a wake after
    /// that need only set its client's bit.
    notified: AtomicBool,
    task: AtomicWaker,
}

impl Woken {
    /// Sets client `i`'s bit and wakes the task unless it is already
    /// woken. The bit is set before `notified` is read and the pass clears
    /// `notified` before it reads the bits (all sequentially consistent):
    /// either this wake sees the pass's clear and wakes the task, or the
    /// pass sees this bit.
    fn wake(&self, i: usize) {
        self.bits[i / 64].fetch_or(1 << (i % 64), SeqCst);
        if !self.notified.load(SeqCst) && !self.notified.swap(true, SeqCst) {
            self.task.wake();
        }
    }
}

/// One client's waker.
struct Flag {
    woken: Arc<Woken>,
    client: usize,
}

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.wake(self.client);
    }
}

/// Runs `clients` to completion in passes (see the module docs); their
/// outputs in the order given, or the message of the panic that ended one.
///
/// Memory per client (a run of 10,000 clients holds 10,000 of these):
/// the client's boxed future, freed as soon as it completes, its waker
/// (about 40 bytes) and one bit; an output is kept only once its client
/// has completed. The clients come boxed: a vector of the futures
/// themselves, boxed here, held every client's state twice at the start
/// (BENCHMARKS.md, "Memory per client").
pub(super) async fn run<F: Future>(clients: Vec<Pin<Box<F>>>) -> Vec<Result<F::Output, String>> {
    let n = clients.len();
    let mut clients: Vec<Option<Pin<Box<F>>>> = clients.into_iter().map(Some).collect();
    let woken = Arc::new(Woken {
        // Every client is polled in the first pass: a word's bits are set
        // for the clients it holds (64, or the rest in the last word).
        bits: (0..n.div_ceil(64))
            .map(|w| AtomicU64::new(u64::MAX >> (64 - (n - 64 * w).min(64))))
            .collect(),
        notified: AtomicBool::new(false),
        task: AtomicWaker::new(),
    });
    let wakers: Vec<Waker> = (0..n)
        .map(|client| {
            Waker::from(Arc::new(Flag {
                woken: woken.clone(),
                client,
            }))
        })
        .collect();
    let mut out: Vec<(usize, Result<F::Output, String>)> = Vec::new();
    std::future::poll_fn(|cx| {
        woken.task.register(cx.waker());
        woken.notified.store(false, SeqCst);
        for (w, word) in woken.bits.iter().enumerate() {
            // A plain load first: most words of a pass have no bit set,
            // and a swap is a locked instruction.
            if word.load(SeqCst) == 0 {
                continue;
            }
            let mut bits = word.swap(0, SeqCst);
            while bits != 0 {
                let i = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let Some(client) = clients[i].as_mut() else {
                    continue;
                };
                let mut c = Context::from_waker(&wakers[i]);
                let polled = catch_unwind(AssertUnwindSafe(|| client.as_mut().poll(&mut c)));
                let done = match polled {
                    Ok(Poll::Pending) => continue,
                    Ok(Poll::Ready(v)) => Ok(v),
                    Err(panic) => Err(panic_message(panic.as_ref())),
                };
                out.push((i, done));
                clients[i] = None;
            }
        }
        if out.len() == n {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    out.sort_by_key(|(i, _)| *i);
    out.into_iter().map(|(_, o)| o).collect()
}

/// Lets the worker serve its other clients before this one goes on:
/// pending once, with this client's wake-up already set, so that [`run`]
/// polls it again in its next pass, after the clients after it in this
/// one (pgbench's client returning to its thread's loop). Unlike
/// `tokio::task::yield_now`, whose wake waits for the runtime's next
/// look at its sockets, the next pass comes at once.
pub(super) async fn serve_others() {
    let mut served = false;
    std::future::poll_fn(|cx| {
        if served {
            Poll::Ready(())
        } else {
            served = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await
}

/// A panic payload's text (`panic!` gives a `&str` or a `String`).
fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a client panicked".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::sync::atomic::Ordering;

    /// A client that records each of its polls in `log`, yielding
    /// `rounds` times before it finishes.
    async fn client(id: usize, rounds: usize, log: Arc<Mutex<Vec<usize>>>) -> usize {
        for _ in 0..rounds {
            log.lock().unwrap().push(id);
            tokio::task::yield_now().await;
        }
        log.lock().unwrap().push(id);
        id * 10
    }

    #[tokio::test]
    async fn woken_clients_are_polled_in_id_order_each_pass() {
        let log = Arc::new(Mutex::new(Vec::new()));
        // Each pass polls the clients still running in id order.
        let futs = vec![
            Box::pin(client(0, 2, log.clone())),
            Box::pin(client(1, 1, log.clone())),
            Box::pin(client(2, 3, log.clone())),
        ];
        let out: Vec<usize> = run(futs).await.into_iter().map(Result::unwrap).collect();
        assert_eq!(out, vec![0, 10, 20]);
        assert_eq!(*log.lock().unwrap(), vec![0, 1, 2, 0, 1, 2, 0, 2, 2]);
    }

    /// More clients than a word of wake-up bits holds (64): each pass
    /// still polls every woken client once, in id order across the words.
    #[tokio::test]
    async fn passes_span_several_words_of_clients() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let n = 130;
        let futs = (0..n)
            .map(|i| Box::pin(client(i, 2, log.clone())))
            .collect();
        let out: Vec<usize> = run(futs).await.into_iter().map(Result::unwrap).collect();
        assert_eq!(out, (0..n).map(|i| i * 10).collect::<Vec<_>>());
        let pass: Vec<usize> = (0..n).collect();
        assert_eq!(
            *log.lock().unwrap(),
            [&pass[..], &pass[..], &pass[..]].concat()
        );
    }

    #[tokio::test]
    async fn clients_woken_in_any_order_are_served_lowest_id_first() {
        // Client 2 wakes client 1 before client 0; a scheduler in wake
        // order (tokio's) would serve 1 first, pgbench serves 0.
        let (tx0, rx0) = tokio::sync::oneshot::channel::<()>();
        let (tx1, rx1) = tokio::sync::oneshot::channel::<()>();
        let served = Arc::new(Mutex::new(Vec::new()));
        let waits = |id: usize, rx: tokio::sync::oneshot::Receiver<()>| {
            let served = served.clone();
            Box::pin(async move {
                rx.await.unwrap();
                served.lock().unwrap().push(id);
            }) as Pin<Box<dyn Future<Output = ()> + Send>>
        };
        let futs = vec![
            waits(0, rx0),
            waits(1, rx1),
            Box::pin(async move {
                tx1.send(()).unwrap();
                tx0.send(()).unwrap();
            }),
        ];
        for r in run(futs.into_iter().map(Box::pin).collect()).await {
            r.unwrap();
        }
        assert_eq!(*served.lock().unwrap(), vec![0, 1]);
    }

    #[tokio::test]
    async fn a_client_is_polled_only_when_woken() {
        let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
        let polls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let p = polls.clone();
        let mut rx = rx;
        let waiter = async move {
            std::future::poll_fn(|cx| {
                p.fetch_add(1, Ordering::Relaxed);
                Pin::new(&mut rx).poll(cx)
            })
            .await
            .unwrap()
        };
        let busy = async move {
            for _ in 0..50 {
                tokio::task::yield_now().await;
            }
            tx.send(7).unwrap();
            0
        };
        let out: Vec<u32> = run(vec![
            Box::pin(Box::pin(waiter) as Pin<Box<dyn Future<Output = u32> + Send>>),
            Box::pin(Box::pin(busy)),
        ])
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
        assert_eq!(out, vec![7, 0]);
        // The waiter's first poll, then the one its channel's wake asked for;
        // not one per pass of the busy client (51 passes).
        assert_eq!(polls.load(Ordering::Relaxed), 2);
    }

    /// A client that lets the others be served (pgbench's return to its
    /// thread's loop after a transaction) goes on in the next pass, after
    /// the clients after it in this one.
    #[tokio::test]
    async fn serving_the_others_waits_for_the_next_pass() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let turn = |id: usize, log: Arc<Mutex<Vec<String>>>| {
            Box::pin(async move {
                for t in 0..2 {
                    log.lock().unwrap().push(format!("{id}.{t}"));
                    serve_others().await;
                }
            })
        };
        run(vec![turn(0, log.clone()), turn(1, log.clone())]).await;
        assert_eq!(*log.lock().unwrap(), ["0.0", "1.0", "0.1", "1.1"]);
    }

    #[tokio::test]
    async fn a_panicking_client_ends_alone() {
        let futs: Vec<Pin<Box<dyn Future<Output = u32> + Send>>> = vec![
            Box::pin(async {
                tokio::task::yield_now().await;
                panic!("boom")
            }),
            Box::pin(async {
                for _ in 0..3 {
                    tokio::task::yield_now().await;
                }
                5
            }),
        ];
        let out = run(futs.into_iter().map(Box::pin).collect()).await;
        assert_eq!(out[0].as_ref().unwrap_err(), "boom");
        assert_eq!(out[1].as_ref().unwrap(), &5);
    }
}
