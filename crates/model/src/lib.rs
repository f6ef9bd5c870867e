//! The data types every layer shares: settings (isolation level, retry
//! policy, query mode, ...), SQLSTATEs and failure reasons, what a run
//! produces, what the observer saw, and the stored results. This module imports nothing else
//! from the crate, so the layers above it (engine, workloads, observers,
//! store, reports, the command line) depend on it and not on each other;
//! `tests/it/module_graph.rs` checks that the module graph has no cycle.

mod build;
mod checks;
mod cluster;
mod config;
mod derived;
mod error;
mod faults;
#[cfg(any(test, feature = "fixture"))]
pub mod fixture;
mod guarantee;
mod histogram;
mod history;
mod observations;
mod placement;
mod pooler;
pub mod probes;
mod reason;
mod results;
mod run;
mod sqlstate;

pub use build::*;
pub use checks::*;
pub use cluster::*;
pub use config::*;
pub use error::*;
pub use faults::*;
pub use guarantee::*;
pub use histogram::{decode_histogram, encode_histogram, new_histogram};
pub use history::*;
pub use observations::*;
pub use placement::*;
pub use pooler::*;
pub use reason::*;
pub use results::*;
pub use run::*;
pub use sqlstate::*;
