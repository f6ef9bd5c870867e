//! Statistics over repetitions (placeholder, being written).

/// Summary of one metric over the repetitions of a cell.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub sd: f64,
    /// Half-width of the 95 % confidence interval of the mean (Student t).
    pub ci95: f64,
    pub min: f64,
    pub max: f64,
    /// Coefficient of variation, sd / mean.
    pub cv: f64,
}

impl Summary {
    pub fn of(values: &[f64]) -> Option<Summary> {
        let _ = values;
        todo!()
    }
}
