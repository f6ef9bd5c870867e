//! The figures every report shows, computed from a [`Results`] without
//! any text layout: cells and their statistics against the baseline
//! ([`cells`]), the aggregated [`model::ReportModel`] every format reads,
//! the findings and headlines ([`findings`]), failed attempts by reason
//! ([`reasons`]), query plans and their changes ([`plans`]), the server's
//! observations per cell ([`server`]), reads on standbys by route
//! ([`routed_reads`]), and how `isobench compare` pairs
//! the cells of two studies ([`compare`]); the regression gate of
//! `compare --fail-on-regression` ([`gate`]) and how a `--precision`
//! study's cells ended against its target ([`cells::precision`]).
//!
//! [`Results`]: crate::store::Results

pub mod cells;
pub mod compare;
pub mod coverage;
pub mod durability;
pub mod factors;
pub mod failover;
pub mod findings;
pub mod gate;
pub mod guarantee;
pub mod model;
pub mod plans;
pub mod reasons;
pub mod routed_reads;
pub mod server;
