//! `isobench compare A B`: two results directories side by side, cell by
//! cell.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::{Exit, WidthArg, out};
use crate::model::BadInput;
use crate::{report, store};

/// Flags of `isobench compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The A side (e.g. the original server build).
    pub a: PathBuf,
    /// The B side (e.g. the patched build).
    pub b: PathBuf,
    #[command(flatten)]
    pub width: WidthArg,
}

/// Prints the comparison of the two directories.
///
/// Errors: an unreadable store, or two studies that cannot be compared
/// (bad input).
pub fn run(args: CompareArgs) -> Result<Exit> {
    let ra = store::load_dir(&args.a)?;
    let rb = store::load_dir(&args.b)?;
    report::analysis::compare::check(&ra, &rb).map_err(BadInput)?;
    out(&report::render::compare::render(
        &ra,
        &rb,
        &args.a.display().to_string(),
        &args.b.display().to_string(),
        Some(args.width.columns()),
    ));
    Ok(Exit::Done)
}
