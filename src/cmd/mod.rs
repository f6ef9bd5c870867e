//! The commands: each one's flags, its dispatch and its output, over the
//! layers below (experiment, engine, report, ...).

pub mod pgbench;
