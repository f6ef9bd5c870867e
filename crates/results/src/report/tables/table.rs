//! A report table as data: typed columns and values that keep the number
//! behind their display text. [`crate::report::tables`] builds the tables once
//! from the [`crate::report::analysis::model::ReportModel`]; `report.md` writes them as pipe
//! tables and `report.html` as `<table>`s, with the same text in every
//! cell.

use crate::report::analysis::cells::NUMERIC_FACTORS;

/// How a column is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Short text, kept on one line.
    Text,
    /// A number: right-aligned, one line.
    Num,
    /// Long text (details, lists) that may wrap.
    Long,
}

/// A column: its header (with the unit) and layout.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub header: String,
    pub align: Align,
    /// A detail column: `report.html` shows it, `report.md` keeps its
    /// table narrower without it.
    pub detail: bool,
    /// A shorter header where space is tight (the terminal).
    pub short: Option<String>,
}

impl Column {
    pub fn new(header: impl Into<String>, align: Align) -> Column {
        Column {
            header: header.into(),
            align,
            detail: false,
            short: None,
        }
    }

    pub fn text(header: impl Into<String>) -> Column {
        Column::new(header, Align::Text)
    }

    pub fn num(header: impl Into<String>) -> Column {
        Column::new(header, Align::Num)
    }

    pub fn long(header: impl Into<String>) -> Column {
        Column::new(header, Align::Long)
    }

    /// This column with a shorter header for the terminal
    /// ([`Column::short`]).
    pub fn short(mut self, short: impl Into<String>) -> Column {
        self.short = Some(short.into());
        self
    }

    /// This column as a [`Column::detail`] column.
    pub fn detail(mut self) -> Column {
        self.detail = true;
        self
    }
}

/// What a value means beyond its text; each renderer decides how to show
/// it (HTML with a class, Markdown mostly not at all).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mark {
    #[default]
    None,
    /// Something fine (an invariant that held).
    Good,
    /// Something wrong (anomalies, an interrupted run).
    Bad,
    /// A violated invariant: shouted in Markdown too.
    Violation,
    /// The baseline itself.
    Baseline,
    /// A significant increase against the baseline.
    Up,
    /// A significant decrease against the baseline.
    Down,
    /// A change that is not significant.
    NotSignificant,
    /// A change without a verdict: fewer than 3 complete runs on a side.
    NoTest,
}

/// One table cell: its display text (the same in every renderer), the
/// number behind it when there is one, and hints for the richer renderers.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Value {
    pub text: String,
    pub num: Option<f64>,
    pub mark: Mark,
    /// Literal text (SQL, a command, a check's detail): set in code.
    pub code: bool,
    /// A shorter form where space is tight (a cell's varying factors).
    pub short: Option<String>,
    /// An explanation shown on hover (HTML).
    pub title: Option<String>,
    /// A bar under the text: the value as a fraction of the column's
    /// largest (HTML).
    pub bar: Option<f64>,
}

impl Value {
    pub fn text(text: impl Into<String>) -> Value {
        Value {
            text: text.into(),
            ..Value::default()
        }
    }

    /// A number with its display form.
    pub fn num(num: f64, text: impl Into<String>) -> Value {
        Value {
            text: text.into(),
            num: Some(num),
            ..Value::default()
        }
    }

    /// An optional number and its display form (for none, usually
    /// [`crate::report::format::NA`]).
    pub fn opt(num: Option<f64>, text: impl Into<String>) -> Value {
        Value {
            text: text.into(),
            num,
            ..Value::default()
        }
    }

    /// A count.
    pub fn count(n: u64) -> Value {
        Value::num(n as f64, n.to_string())
    }

    /// Literal text.
    pub fn code(text: impl Into<String>) -> Value {
        Value {
            code: true,
            ..Value::text(text)
        }
    }

    pub fn mark(mut self, mark: Mark) -> Value {
        self.mark = mark;
        self
    }

    pub fn title(mut self, title: impl Into<String>) -> Value {
        self.title = Some(title.into());
        self
    }
}

impl From<String> for Value {
    fn from(text: String) -> Value {
        Value::text(text)
    }
}

impl From<&str> for Value {
    fn from(text: &str) -> Value {
        Value::text(text)
    }
}

/// A row and what it is (`baseline`, `interrupted`, or nothing).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Row {
    pub values: Vec<Value>,
    pub class: &'static str,
}

/// A table: columns and rows (one value per column).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    /// An id for the HTML table (tests and links find it).
    pub id: Option<&'static str>,
    pub columns: Vec<Column>,
    pub rows: Vec<Row>,
}

impl Table {
    pub fn new(columns: Vec<Column>) -> Table {
        Table {
            id: None,
            columns,
            rows: Vec::new(),
        }
    }

    /// Appends a row of plain class.
    pub fn row(&mut self, values: Vec<Value>) {
        self.rows.push(Row { values, class: "" });
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The index of the column headed `header`.
    pub fn column_index(&self, header: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.header == header)
    }

    /// Removes column `i` and its values.
    pub fn remove_column(&mut self, i: usize) -> Column {
        for row in &mut self.rows {
            if i < row.values.len() {
                row.values.remove(i);
            }
        }
        self.columns.remove(i)
    }

    /// Inserts column `col` of `other`, a table of the same rows, at
    /// position `at`.
    pub fn insert_column_from(&mut self, at: usize, other: &Table, col: usize) {
        self.columns.insert(at, other.columns[col].clone());
        for (row, from) in self.rows.iter_mut().zip(&other.rows) {
            row.values
                .insert(at, from.values.get(col).cloned().unwrap_or_default());
        }
    }
}

/// The columns for the factor headers of a per-cell table: numbers for
/// the numeric factors (clients, scale, pool_size, pooler_size, rate,
/// max_tries), else text.
pub fn factor_columns(headers: &[String]) -> Vec<Column> {
    headers.iter().map(|h| factor_column(h)).collect()
}

/// The column of factor `header`: [`factor_columns`].
pub fn factor_column(header: &str) -> Column {
    if NUMERIC_FACTORS.contains(&header) {
        Column::num(header)
    } else {
        Column::text(header)
    }
}

/// Values for a cell's factor values.
pub fn factor_values(values: &[String]) -> Vec<Value> {
    values.iter().map(|v| Value::text(v.clone())).collect()
}
