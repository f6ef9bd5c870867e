//! What a study found, kept and told: the results [`store`] (SQLite and
//! `results.json`, written after every run) and the [`report`]s computed
//! from it (analysis, tables, formats). It reads stored results only; it
//! never talks to a server.

// The floors below, under the names the code uses for them.
use isobench_model as model;
use isobench_stats as stats;

pub mod report;
pub mod store;
