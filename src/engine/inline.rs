//! A client and its connection's I/O driven by one task.
//!
//! tokio-postgres splits a connection into a `Client` (which queues
//! requests on a channel) and a `Connection` future (which writes them to
//! the socket and hands answers back on another channel). Spawned as two
//! tasks, every statement crosses the thread's run queue three times:
//! the answer wakes the connection task, which wakes the client task,
//! whose next request wakes the connection task again, each waiting its
//! turn behind every other client of the thread. [`Inline`] polls both in
//! the client's own task instead, and absorbs the wake-ups they send each
//! other while it is polling them: an answer that the reactor reports is
//! read, consumed by the client and followed by the next statement on the
//! socket within one poll of one task. Measured in BENCHMARKS.md ("In-task
//! connections").

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use futures_util::task::AtomicWaker;

/// Rounds of polling within one poll of the task before it yields to the
/// scheduler: bounds the loop should a future keep waking itself (tokio's
/// cooperative budget makes exhausted resources do that).
const MAX_ROUNDS: usize = 16;

/// The waker handed to the two futures: a wake that arrives while the task
/// is polling them only marks another round; any other wake (the reactor's)
/// wakes the task.
#[derive(Default)]
struct LocalWake {
    polling: AtomicBool,
    woken: AtomicBool,
    task: AtomicWaker,
}

impl Wake for LocalWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        if !self.polling.load(Ordering::Acquire) {
            self.task.wake();
        }
    }
}

/// Runs `work` while polling `io` (a connection's I/O future) in the same
/// task; see the module docs. `io` is dropped once it completes (the
/// connection closed), after which the client's requests fail as closed.
pub(super) async fn run<F: Future, I: Future + Unpin>(io: &mut Option<I>, work: F) -> F::Output {
    let mut work = std::pin::pin!(work);
    let local = Arc::new(LocalWake::default());
    let waker = Waker::from(local.clone());
    std::future::poll_fn(move |cx: &mut Context<'_>| {
        local.task.register(cx.waker());
        let mut inner = Context::from_waker(&waker);
        local.polling.store(true, Ordering::Release);
        let mut out = Poll::Pending;
        for _ in 0..MAX_ROUNDS {
            local.woken.store(false, Ordering::Release);
            poll_io(io, &mut inner);
            out = work.as_mut().poll(&mut inner);
            if out.is_ready() {
                break;
            }
            // Writes what the work queued.
            poll_io(io, &mut inner);
            if !local.woken.load(Ordering::Acquire) {
                break;
            }
        }
        local.polling.store(false, Ordering::Release);
        if out.is_pending() && local.woken.load(Ordering::Acquire) {
            // Rounds exhausted with work left: come back after the others.
            cx.waker().wake_by_ref();
        }
        out
    })
    .await
}

fn poll_io<I: Future + Unpin>(io: &mut Option<I>, cx: &mut Context<'_>) {
    if let Some(f) = io
        && Pin::new(f).poll(cx).is_ready()
    {
        *io = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// A task that counts how often the runtime polls it.
    struct Counted<F> {
        polls: Arc<AtomicUsize>,
        inner: Pin<Box<F>>,
    }

    impl<F: Future> Future for Counted<F> {
        type Output = F::Output;
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
            self.polls.fetch_add(1, Ordering::Relaxed);
            self.inner.as_mut().poll(cx)
        }
    }

    #[test]
    fn a_request_and_its_answer_round_trip_within_one_poll() {
        // A fake connection: forwards each request it receives as an
        // answer, like a server that answers instantly.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let (req_tx, mut req_rx) = tokio::sync::mpsc::unbounded_channel::<u32>();
            let (ans_tx, mut ans_rx) = tokio::sync::mpsc::unbounded_channel::<u32>();
            let mut io = Some(Box::pin(async move {
                while let Some(r) = req_rx.recv().await {
                    let _ = ans_tx.send(r + 1);
                }
            }));
            let work = async move {
                let mut sum = 0;
                for i in 0..100 {
                    req_tx.send(i).unwrap();
                    sum += ans_rx.recv().await.unwrap();
                }
                sum
            };
            let polls = Arc::new(AtomicUsize::new(0));
            let task = Counted {
                polls: polls.clone(),
                inner: Box::pin(async move { run(&mut io, work).await }),
            };
            let sum = tokio::spawn(task).await.unwrap();
            assert_eq!(sum, (1..=100).sum::<u32>());
            // 100 round trips: MAX_ROUNDS per poll at most, so a handful of
            // polls, not the 200+ that spawned tasks hand-offs would need.
            let n = polls.load(Ordering::Relaxed);
            assert!(n <= 100 / MAX_ROUNDS + 2, "{n} polls");
        });
    }

    #[test]
    fn a_closed_connection_is_dropped_and_the_work_still_ends() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let (tx, rx) = tokio::sync::oneshot::channel::<()>();
            let mut io = Some(Box::pin(async move {
                drop(rx); // the "connection" ends at once
            }));
            let out = run(&mut io, async move {
                tokio::task::yield_now().await;
                tx.send(()).is_err()
            })
            .await;
            assert!(out, "the receiver is gone: the I/O future ran and ended");
            assert!(io.is_none());
        });
    }
}
