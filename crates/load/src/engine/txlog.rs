//! A log of every transaction (pgbench's `-l`): the engine hands each
//! ended transaction to its client thread's [`TxSink`], which a caller's
//! [`TxLog`] made for that thread (`isobench pgbench` writes pgbench's
//! log files). Without a log the engine does nothing per transaction: no
//! record is built, no lock taken. With one, each thread has its own sink
//! (its clients share it on the one thread: the lock is never contended),
//! which buffers as it likes.

use std::time::SystemTime;

use crate::model::SqlState;

/// How a logged transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxEnd {
    Committed,
    /// Gave up after its tries with this SQLSTATE.
    Failed(SqlState),
    /// Open loop: not started, already later than the latency limit.
    Skipped,
}

/// One ended transaction.
#[derive(Debug, Clone, Copy)]
pub struct TxRecord {
    /// The client's id.
    pub client: u32,
    /// The client's transactions so far, this one included (from 1).
    pub number: u64,
    /// The transaction type (a pgbench script's index).
    pub ty: usize,
    /// When it ended.
    pub at: SystemTime,
    pub end: TxEnd,
    /// Committed: its latency, µs (open loop: from its scheduled start).
    pub latency_us: u64,
    /// Open loop: how late it started, µs.
    pub lag_us: u64,
    /// The tries it took (0 for a skipped one).
    pub tries: u32,
}

/// Where one client thread's transactions go.
pub trait TxSink: Send {
    /// One transaction ended.
    fn record(&mut self, t: &TxRecord);
    /// The run ended: write what is buffered.
    fn finish(&mut self);
}

/// Makes a sink per client thread.
pub trait TxLog: Send + Sync {
    /// The sink of client thread `thread` (from 0) of `threads`.
    fn sink(&self, thread: usize, threads: usize) -> Box<dyn TxSink>;
}

/// A caller's [`TxLog`], as [`super::EngineParams`] carries it.
#[derive(Clone)]
pub struct TxLogHook(pub std::sync::Arc<dyn TxLog>);

impl std::fmt::Debug for TxLogHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TxLogHook")
    }
}

/// A client thread's sink, shared by its clients (on the one thread).
#[derive(Clone)]
pub(super) struct ThreadLog(std::sync::Arc<std::sync::Mutex<Box<dyn TxSink>>>);

impl ThreadLog {
    /// Thread `thread`'s sink of `hook`, if there is a log.
    pub(super) fn of(hook: Option<&TxLogHook>, thread: usize, threads: usize) -> Option<Self> {
        hook.map(|h| {
            ThreadLog(std::sync::Arc::new(std::sync::Mutex::new(
                h.0.sink(thread, threads),
            )))
        })
    }

    pub(super) fn record(&self, t: &TxRecord) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).record(t);
    }

    pub(super) fn finish(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).finish();
    }
}
