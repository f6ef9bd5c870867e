//! pgbench scripts: the script language and its expressions, run by isobench
//! unchanged.

pub mod data;
pub mod expr;
pub mod history;
pub mod prng;
pub mod run;
pub mod script;
