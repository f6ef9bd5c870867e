//! Fitting what a command prints to the terminal's width.
//!
//! The width: `--width N` when given; else `COLUMNS`; else the terminal's
//! own width when stdout is a terminal; else [`DEFAULT_WIDTH`] (a pipe or
//! a file gets 100 columns, so that the output does not depend on where
//! it goes). Never below [`MIN_WIDTH`].
//!
//! A table ([`table`]) is laid out by comfy-table's dynamic arrangement:
//! text wraps at spaces inside its column, numbers are right-aligned. A
//! column never gets narrower than its longest word; when the columns do
//! not fit even so, they are dropped one by one in the order the caller
//! states (for the Cells table: [`super::DROP_ORDER`]), and the caller
//! names the dropped ones under the table. Prose wraps with
//! [`wrap`] (the `textwrap` crate).

use comfy_table::{CellAlignment, ColumnConstraint, ContentArrangement, presets};

use crate::report::render::pipe;
use crate::report::tables::{Align, Table, Value};

/// The width when stdout is not a terminal and neither `--width` nor
/// `COLUMNS` says otherwise, in columns.
pub const DEFAULT_WIDTH: usize = 100;

/// The narrowest width output is fitted to, in columns.
pub const MIN_WIDTH: usize = 40;

/// `text` wrapped at `width` columns, each of its lines on its own:
/// broken at spaces (a word longer than the width is broken too),
/// continuation lines indented by `indent`; every line ends with a
/// newline.
pub fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let options = textwrap::Options::new(width.max(indent.len() + 1)).subsequent_indent(indent);
        for part in textwrap::wrap(line, options) {
            out.push_str(part.trim_end());
            out.push('\n');
        }
    }
    out
}

/// A value as the terminal shows it: its short form when it has one, with
/// the sign of its mark against the baseline ([`pipe::marked`]).
fn terminal_text(v: &Value) -> String {
    match &v.short {
        Some(short) => short.clone(),
        None => pipe::marked(v),
    }
}

/// A table fitted to a width, and the headers of the columns left out.
pub struct Fitted {
    pub text: String,
    pub dropped: Vec<String>,
}

impl Fitted {
    /// The table and a newline, then, when columns were left out, a line
    /// naming them (`Not shown at 100 columns: p50 (ms) (ELSEWHERE).`,
    /// `elsewhere` saying where they are), wrapped at `width`.
    pub fn with_note(self, width: usize, elsewhere: &str) -> String {
        let mut out = self.text;
        out.push('\n');
        if !self.dropped.is_empty() {
            out.push_str(&wrap(
                &format!(
                    "Not shown at {width} columns: {} ({elsewhere}).",
                    self.dropped.join(", ")
                ),
                width,
                "  ",
            ));
        }
        out
    }
}

/// Which columns may leave a table that does not fit, in order: `whole`
/// leave while the figures would otherwise wrap; `squeeze` only when the
/// table does not fit even with every figure wrapped at its spaces.
#[derive(Debug, Clone, Default)]
pub struct DropOrder {
    pub whole: Vec<usize>,
    pub squeeze: Vec<usize>,
}

/// The width of `s`'s longest line, in characters.
fn char_len(s: &str) -> usize {
    s.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

/// Widens the `shown` columns from `widths` toward `whole` by `room`
/// columns in all: first, whole, the columns that need least to hold
/// their values on one line, as long as one fits in what is left; then
/// what is left evenly over the others.
fn share(widths: &mut [usize], whole: &[usize], shown: &[usize], mut room: usize) {
    let mut by_need: Vec<usize> = shown.to_vec();
    by_need.sort_by_key(|&i| whole[i] - widths[i]);
    let mut rest = Vec::new();
    for i in by_need {
        let need = whole[i] - widths[i];
        if need <= room {
            widths[i] += need;
            room -= need;
        } else {
            rest.push(i);
        }
    }
    while room > 0 && !rest.is_empty() {
        rest.retain(|&i| widths[i] < whole[i]);
        let each = (room / rest.len().max(1)).max(1);
        for &i in &rest {
            let more = each.min(whole[i] - widths[i]).min(room);
            widths[i] += more;
            room -= more;
        }
    }
}

/// `t` as a terminal table at most `width` columns wide. Each column is
/// as wide as its widest value (its header wraps at spaces), if the
/// table fits so; else columns leave in `drop.whole`'s order until it
/// does, and when it still does not, every column gets the width of its
/// longest word, columns leave in `drop.squeeze`'s order until that
/// fits, and the room left widens the columns (`share`). Values read as in report.md (a change against the
/// baseline with ▲, ▼, n.s., (too few runs)), in their short form where they
/// have one, under the columns' short headers where they have one. Ends
/// without a newline.
pub fn table(t: &Table, width: usize, drop: &DropOrder) -> Fitted {
    let width = width.max(MIN_WIDTH);
    let cells: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|r| r.values.iter().map(terminal_text).collect())
        .collect();
    let headers: Vec<&str> = t
        .columns
        .iter()
        .map(|c| c.short.as_deref().unwrap_or(&c.header))
        .collect();
    let values = |i: usize| cells.iter().filter_map(move |r| r.get(i));
    let longest_word = |s: &str| s.split_whitespace().map(char_len).max().unwrap_or(0);
    let header_word = |i: usize| longest_word(headers[i]).max(1);
    // A column whose values stay on one line; one as narrow as its words.
    let whole: Vec<usize> = (0..t.columns.len())
        .map(|i| {
            values(i)
                .map(|v| char_len(v))
                .fold(header_word(i), usize::max)
        })
        .collect();
    let narrow: Vec<usize> = (0..t.columns.len())
        .map(|i| {
            values(i)
                .map(|v| longest_word(v))
                .fold(header_word(i), usize::max)
        })
        .collect();
    // Each column takes its content, a space either side and a border.
    let need = |w: &[usize], shown: &[usize]| 1 + shown.iter().map(|&i| w[i] + 3).sum::<usize>();
    let mut shown: Vec<usize> = (0..t.columns.len()).collect();
    let mut dropped = Vec::new();
    let mut leave = |shown: &mut Vec<usize>, i: usize| {
        if let Some(k) = shown.iter().position(|&s| s == i) {
            shown.remove(k);
            dropped.push(headers[i].to_string());
        }
    };
    let mut order = drop.whole.iter();
    while need(&whole, &shown) > width {
        match order.next() {
            Some(&i) => leave(&mut shown, i),
            None => break,
        }
    }
    let mut widths = whole.clone();
    if need(&whole, &shown) > width {
        let mut order = drop.squeeze.iter();
        while need(&narrow, &shown) > width {
            match order.next() {
                Some(&i) => leave(&mut shown, i),
                None => break,
            }
        }
        widths = narrow.clone();
        let room = width.saturating_sub(need(&narrow, &shown));
        share(&mut widths, &whole, &shown, room);
    }
    let mut ct = comfy_table::Table::new();
    ct.load_style(presets::UTF8_FULL_CONDENSED)
        .force_no_tty()
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(u16::try_from(width).unwrap_or(u16::MAX))
        .set_header(shown.iter().map(|&i| headers[i]));
    for r in &cells {
        ct.add_row(shown.iter().map(|&i| r.get(i).cloned().unwrap_or_default()));
    }
    for (k, &i) in shown.iter().enumerate() {
        if let Some(col) = ct.column_mut(k) {
            // comfy-table's widths count the padding.
            let w = u16::try_from(widths[i] + 2).unwrap_or(u16::MAX);
            col.set_constraint(ColumnConstraint::Absolute(comfy_table::Width::Fixed(w)));
            if t.columns[i].align == Align::Num {
                col.set_cell_alignment(CellAlignment::Right);
            }
        }
    }
    Fitted {
        text: ct.to_string(),
        dropped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tables::Column;

    #[test]
    fn wrap_keeps_lines_and_indents_continuations() {
        let text = "one two three four\n\nfive";
        assert_eq!(wrap(text, 9, "  "), "one two\n  three\n  four\n\nfive\n");
    }

    /// Columns leave in the stated order until the rest fit; the table
    /// never gets wider than the width.
    #[test]
    fn columns_are_dropped_in_order_until_the_table_fits() {
        let mut t = Table::new(vec![
            Column::text("cell"),
            Column::num("first figure"),
            Column::num("second figure"),
            Column::num("third figure"),
        ]);
        t.row(vec![
            Value::text("isolation=serializable"),
            Value::text("1234567890123"),
            Value::text("2234567890123"),
            Value::text("3234567890123"),
        ]);
        let order = DropOrder {
            whole: vec![2],
            squeeze: vec![1],
        };
        let wide = table(&t, 200, &order);
        assert!(wide.dropped.is_empty());
        // 1 + (22 + 3) + 3 · (13 + 3) = 74 > 60: drop "second", then
        // 58 fits.
        let narrow = table(&t, 60, &order);
        assert_eq!(narrow.dropped, ["second figure"]);
        assert!(!narrow.text.contains("2234567890123"), "{}", narrow.text);
        for line in narrow.text.lines() {
            assert!(line.chars().count() <= 60, "{line}");
        }
        // Numbers right-aligned.
        assert!(narrow.text.contains("┆ 1234567890123 ┆"), "{}", narrow.text);
        // At 50 "first" leaves too (squeezing cannot break a word):
        // 1 + (22 + 3) + 16 = 42.
        let squeezed = table(&t, 50, &order);
        assert_eq!(squeezed.dropped, ["second figure", "first figure"]);
        assert!(squeezed.text.contains("isolation=serializable"));
        for line in squeezed.text.lines() {
            assert!(line.chars().count() <= 50, "{line}");
        }
    }
}
