//! Compares an output with an expected one (PostgreSQL's
//! `src/test/isolation/expected/NAME.out`), insensitive to how result
//! tables are laid out.
//!
//! Both texts are reduced to their meaningful lines: every line the
//! isolation tester prints (the `Parsed test spec` line, `starting
//! permutation:`, `step NAME: SQL` with `<waiting ...>` or `<...
//! completed>`, result headers and values, `ERROR:` lines, notices and
//! notifications, setup and teardown failures) with runs of whitespace
//! collapsed to one space and trimmed, and spaces around `|` removed;
//! blank lines and table borders (`---+--`) are dropped. So column widths,
//! alignment and empty lines do not count; steps, waits, errors, values
//! and their order do.

/// A meaningful line and where it was (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Line {
    no: usize,
    text: String,
}

/// The meaningful lines of an output.
fn normalize(text: &str) -> Vec<Line> {
    text.lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let collapsed = l.split_whitespace().collect::<Vec<_>>().join(" ");
            let t = collapsed
                .split('|')
                .map(str::trim)
                .collect::<Vec<_>>()
                .join("|");
            let border = !t.is_empty() && t.chars().all(|c| c == '-' || c == '+');
            (!t.is_empty() && !border).then_some(Line { no: i + 1, text: t })
        })
        .collect()
}

/// The first difference between `expected` and `actual`, described with
/// both line numbers and the permutation it is in; `None` when they
/// agree.
pub fn first_difference(expected: &str, actual: &str) -> Option<Difference> {
    let e = normalize(expected);
    let a = normalize(actual);
    let i = e
        .iter()
        .zip(&a)
        .position(|(x, y)| x.text != y.text)
        .or_else(|| (e.len() != a.len()).then(|| e.len().min(a.len())))?;
    let permutation = a[..i.min(a.len())]
        .iter()
        .rev()
        .find(|l| l.text.starts_with("starting permutation:"))
        .map(|l| {
            l.text
                .trim_start_matches("starting permutation:")
                .trim()
                .to_string()
        });
    Some(Difference {
        index: i,
        expected: e.get(i).map(|l| (l.no, l.text.clone())),
        actual: a.get(i).map(|l| (l.no, l.text.clone())),
        permutation,
    })
}

/// Where two outputs first differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// How many meaningful lines agreed before it.
    pub index: usize,
    /// (line number, normalized text) in the expected output; `None` when
    /// it ended first.
    pub expected: Option<(usize, String)>,
    pub actual: Option<(usize, String)>,
    /// The steps of the permutation it is in, if past the first one.
    pub permutation: Option<String>,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let side = |x: &Option<(usize, String)>| match x {
            Some((no, t)) => format!("line {no}: {t}"),
            None => "(ends here)".to_string(),
        };
        if let Some(p) = &self.permutation {
            write!(f, "in permutation {p}: ")?;
        }
        write!(
            f,
            "expected {}; got {}",
            side(&self.expected),
            side(&self.actual)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT: &str = "Parsed test spec with 2 sessions

starting permutation: s1a s2a
step s1a: SELECT * FROM t;
id|name
--+----
 1|a
(1 row)

step s2a: UPDATE t SET name = 'b'; <waiting ...>
";

    #[test]
    fn layout_does_not_count() {
        let relaid = OUT
            .replace(" 1|a", "1 | a  ")
            .replace("--+----", "-+-")
            .replace("\n\n", "\n");
        assert_eq!(first_difference(OUT, &relaid), None);
    }

    #[test]
    fn values_waits_and_missing_lines_do() {
        let d = first_difference(OUT, &OUT.replace(" 1|a", " 1|b")).unwrap();
        assert_eq!(d.expected, Some((7, "1|a".into())));
        assert_eq!(d.actual, Some((7, "1|b".into())));
        assert_eq!(d.permutation.as_deref(), Some("s1a s2a"));
        assert_eq!(
            d.to_string(),
            "in permutation s1a s2a: expected line 7: 1|a; got line 7: 1|b"
        );
        let d = first_difference(OUT, &OUT.replace(" <waiting ...>", "")).unwrap();
        assert!(d.to_string().contains("<waiting ...>"), "{d}");
        let cut = &OUT[..OUT.find("step s2a").unwrap()];
        let d = first_difference(OUT, cut).unwrap();
        assert_eq!(d.actual, None);
        assert!(d.to_string().ends_with("got (ends here)"), "{d}");
    }
}
