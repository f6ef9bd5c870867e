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
pub mod postgres;
pub mod probe;
pub(crate) mod progress;
pub mod report;
pub mod stats;
pub mod store;
pub mod study;
pub mod wire;
pub mod workload;
