//! isobench: what transaction isolation costs and what it buys on
//! PostgreSQL, measured reproducibly.
//!
//! Data flow of `isobench run`: [`cmd`] turns flags, over an experiment
//! file read by [`study`], into an [`model::ExperimentConfig`];
//! [`experiment`] starts the [`postgres`]
//! (a managed server by default), loads the [`workload`] into a template
//! database, and executes the runs in interleaved order. Each run resets
//! the data from the template, drives clients with the [`engine`] (which
//! records into per-client `metrics` recorders), samples the server with
//! `observe`, checks the workload's invariants, and appends a record to
//! the results [`store`], which [`report`] renders (using `stats`).
//! The types they share live in [`model`], which depends on none of them.

pub mod cmd;
pub mod elle;
pub mod engine;
pub mod experiment;
pub(crate) mod load_cmd;
pub(crate) mod metrics;
pub mod model;
pub(crate) mod observe;
pub mod pgbench;
pub mod pgbench_cli;
pub mod postgres;
pub mod probe;
pub(crate) mod progress;
pub mod report;
pub mod stats;
pub mod store;
pub mod study;
pub mod wire;
pub mod workload;

/// mimalloc: the clients' hot path allocates a few small buffers per
/// statement inside tokio-postgres; a faster allocator leaves more CPU to
/// the server under test (BENCHMARKS.md). The `system-alloc` feature
/// leaves the system allocator in place, for heap profilers that
/// intercept `malloc` (heaptrack: BENCHMARKS.md, "Memory per client").
#[cfg(not(feature = "system-alloc"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
