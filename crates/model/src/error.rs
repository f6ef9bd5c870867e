//! The one error kind every layer can raise that the binary maps apart.

/// Input the user has to fix (a flag's value, a study, script or
/// probe file, a results directory named on the command line) as opposed
/// to a failure at run time. The message names the option or `file:line`
/// and what to do; the binary exits 2 for it (user guide, docs/src/reference/exit-status.md).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

impl BadInput {
    /// Wraps another error's whole chain (`{e:#}`) as bad input.
    pub fn from_error(e: impl std::fmt::Display) -> Self {
        BadInput(format!("{e:#}"))
    }
}
