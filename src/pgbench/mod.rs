//! pgbench scripts: the script language and its expressions, run by isobench
//! unchanged.

pub mod script;
