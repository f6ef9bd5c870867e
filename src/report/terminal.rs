use crate::store::Results;
/// The end-of-experiment summary table for the terminal.
pub fn summary(results: &Results) -> String {
    let _ = results;
    todo!()
}
