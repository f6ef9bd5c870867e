//! `isobench check-history FILE...`: Elle-style checks of list-append
//! histories.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::{Exit, out};
use crate::model::BadInput;

/// Flags of `isobench check-history`.
#[derive(Debug, Args)]
pub struct CheckHistoryArgs {
    /// History files, gzip-compressed or not.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

/// Reads and checks each file, prints what the checker found;
/// [`Exit::Violations`] when any file has an anomaly.
///
/// Errors (bad input): a file that cannot be read, decompressed or parsed.
pub fn run(args: CheckHistoryArgs) -> Result<Exit> {
    let mut found = 0;
    for path in &args.files {
        let bad = |what: String| BadInput(format!("{}: {what}", path.display()));
        let bytes = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
        let text = if bytes.starts_with(&[0x1f, 0x8b]) {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut text)
                .map_err(|e| bad(format!("not gzip text: {e}")))?;
            text
        } else {
            String::from_utf8(bytes).map_err(|e| bad(format!("not UTF-8 text: {e}")))?
        };
        let history = crate::elle::parse(&text).map_err(|e| bad(e.to_string()))?;
        let started = std::time::Instant::now();
        let report = crate::elle::check(&history);
        let took = started.elapsed().as_secs_f64();
        found += report.total();
        out(&format!(
            "{}: {} transactions, {} dependency edges, checked in {took:.2} s ({:.1} µs per transaction)\n{}",
            path.display(),
            report.txns,
            report.edges,
            1e6 * took / report.txns.max(1) as f64,
            report.render()
        ));
    }
    Ok(if found > 0 {
        Exit::Violations
    } else {
        Exit::Done
    })
}
