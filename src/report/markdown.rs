use crate::store::Results;
/// Renders report.md.
pub fn render(results: &Results) -> String {
    let _ = results;
    todo!()
}
