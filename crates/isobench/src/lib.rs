//! isobench: what transaction isolation costs and what it buys on
//! PostgreSQL, measured reproducibly.
//!
//! The top floor. Data flow of `isobench run`: [`cmd`] turns flags, over a
//! study file read by [`study`], into an [`model::StudyConfig`];
//! [`executor`] starts the [`postgres`] server (a managed one by
//! default), loads the [`workload`] into a template database, and executes
//! the runs in interleaved order. Each run resets the data from the
//! template, drives clients with the [`engine`] (which records into
//! per-client [`metrics`] recorders), samples the server with [`observe`],
//! checks the workload's invariants, and appends a record to the results
//! [`store`], which [`report`] renders (using [`stats`]). [`progress`]
//! shows a study as it runs; [`probe`] is `isobench anomalies`.
//!
//! The floors below are crates of their own (`crates/`, one README line
//! each); the names below are theirs, re-exported so that the commands,
//! the tests and the benches reach every layer from here. The types they
//! share live in [`model`], which depends on none of them.

pub use isobench_elle as elle;
pub use isobench_load::{drive, engine, load_cmd, metrics, observe, pgbench, workload};
pub use isobench_model as model;
pub use isobench_results::{report, store};
pub use isobench_server as postgres;
pub use isobench_stats as stats;
pub use isobench_wire as wire;

pub mod cmd;
pub mod evidence;
pub mod executor;
pub mod probe;
pub mod progress;
pub mod study;
