//! The one Markdown (pipe) table writer, for report.md, `isobench
//! compare` and anomalies.md: a header row, a separator, a row per table
//! row; `|` in a cell escaped, line breaks flattened. [`Layout::Plain`]
//! keeps rows short (report.md); [`Layout::Padded`] pads every column to
//! a common width and marks its alignment (`:--` text, `--:` numbers), so
//! that the raw text reads as a table in a terminal too (`compare`).

use crate::report::tables::{Align, Mark, Table, Value};

/// How the columns are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Cells as they are, `---` separators; detail columns left out.
    Plain,
    /// Cells padded to their column's width, aligned as the column says;
    /// every column shown.
    Padded,
}

/// A value as Markdown text: literal text in a code span (backticks in it
/// become `'`), a violation's first word in bold, a change against the
/// baseline with its mark (▲, ▼, n.s., (too few runs)) as in report.html.
pub fn value(v: &Value) -> String {
    if v.code {
        return format!("`{}`", v.text.replace('`', "'"));
    }
    match (v.mark, v.text.split_once(' ')) {
        (Mark::Violation, Some((word, rest))) => format!("**{word}** {rest}"),
        (Mark::Violation, None) => format!("**{}**", v.text),
        _ => marked(v),
    }
}

/// A value's text with the sign of its mark against the baseline (▲, ▼,
/// n.s., (too few runs)); other marks add nothing. Markdown and the terminal
/// show a change the same way.
pub fn marked(v: &Value) -> String {
    match v.mark {
        Mark::Up => format!("{} ▲", v.text),
        Mark::Down => format!("{} ▼", v.text),
        Mark::NotSignificant => format!("{} n.s.", v.text),
        Mark::NoTest => format!("{} (too few runs)", v.text),
        _ => v.text.clone(),
    }
}

/// `s` safe in a table cell: `|` escaped, line breaks as spaces.
pub fn escape(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// `t` as a Markdown table in `layout`; ends with a blank line.
pub fn table(t: &Table, layout: Layout) -> String {
    let shown: Vec<usize> = (0..t.columns.len())
        .filter(|&i| layout == Layout::Padded || !t.columns[i].detail)
        .collect();
    let header: Vec<String> = shown
        .iter()
        .map(|&i| escape(&t.columns[i].header))
        .collect();
    let rows: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|r| {
            shown
                .iter()
                .map(|&i| {
                    r.values
                        .get(i)
                        .map_or_else(String::new, |v| escape(&value(v)))
                })
                .collect()
        })
        .collect();
    let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    let mut out = String::new();
    match layout {
        Layout::Plain => {
            out.push_str(&line(header));
            out.push_str(&line(shown.iter().map(|_| "---".to_string()).collect()));
            for r in rows {
                out.push_str(&line(r));
            }
        }
        Layout::Padded => {
            let len = |s: &str| s.chars().count();
            let widths: Vec<usize> = (0..shown.len())
                .map(|k| {
                    rows.iter()
                        .map(|r| len(&r[k]))
                        .chain([len(&header[k]), 3])
                        .max()
                        .unwrap_or(3)
                })
                .collect();
            let right = |k: usize| t.columns[shown[k]].align == Align::Num;
            let pad = |k: usize, s: &str| {
                let fill = " ".repeat(widths[k] - len(s));
                if right(k) {
                    format!("{fill}{s}")
                } else {
                    format!("{s}{fill}")
                }
            };
            let padded =
                |cells: &[String]| cells.iter().enumerate().map(|(k, c)| pad(k, c)).collect();
            out.push_str(&line(padded(&header)));
            out.push_str(&line(
                widths
                    .iter()
                    .enumerate()
                    .map(|(k, w)| {
                        if right(k) {
                            format!("{}:", "-".repeat(w - 1))
                        } else {
                            format!(":{}", "-".repeat(w - 1))
                        }
                    })
                    .collect(),
            ));
            for r in &rows {
                out.push_str(&line(padded(r)));
            }
        }
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tables::Column;

    fn sample() -> Table {
        let mut t = Table::new(vec![
            Column::text("cell"),
            Column::num("TPS (tx/s)"),
            Column::text("started").detail(),
        ]);
        t.row(vec![
            Value::text("a|b"),
            Value::num(1.5, "1.5").mark(Mark::Up),
            Value::text("today"),
        ]);
        t.row(vec![
            Value::code("x `y`"),
            Value::count(12),
            Value::text(""),
        ]);
        t
    }

    #[test]
    fn plain_leaves_detail_columns_out_and_escapes() {
        assert_eq!(
            table(&sample(), Layout::Plain),
            "| cell | TPS (tx/s) |\n| --- | --- |\n| a\\|b | 1.5 ▲ |\n| `x 'y'` | 12 |\n\n"
        );
    }

    #[test]
    fn padded_aligns_numbers_right_and_text_left() {
        let text = table(&sample(), Layout::Padded);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "| cell    | TPS (tx/s) | started |");
        assert_eq!(lines[1], "| :------ | ---------: | :------ |");
        assert_eq!(lines[2], "| a\\|b    |      1.5 ▲ | today   |");
        assert_eq!(lines[3], "| `x 'y'` |         12 |         |");
    }
}
