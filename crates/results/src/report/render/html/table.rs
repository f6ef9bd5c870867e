//! Tables as HTML: a [`Table`] as a sortable `<table>` and a [`Value`]
//! with its mark, hover title and minibar.

use maud::{Markup, html};

use crate::report::tables::{Align, Mark, Table, Value};

/// A value as HTML: its short form when it has one (the full text on
/// hover), literal text in `<code>`, its mark as a class or sign, a
/// minibar under a figure.
pub(super) fn value_html(v: &Value) -> Markup {
    let text = html! {
        @if v.code { code { (v.short.as_deref().unwrap_or(&v.text)) } }
        @else { (v.short.as_deref().unwrap_or(&v.text)) }
    };
    let title = v
        .title
        .as_deref()
        .or(v.short.as_ref().map(|_| v.text.as_str()));
    let marked = match v.mark {
        Mark::Good => html! { span.good title=[title] { (text) } },
        Mark::Bad | Mark::Violation => html! { span.bad title=[title] { (text) } },
        Mark::Baseline => html! { strong { (text) } },
        Mark::Up => html! { span.up title=[title] { (text) " ▲" } },
        Mark::Down => html! { span.down title=[title] { (text) " ▼" } },
        Mark::NotSignificant => html! { span title=[title] { (text) " " span.ns { "n.s." } } },
        Mark::NoTest => html! { span title=[title] { (text) " " span.ns { "(too few runs)" } } },
        Mark::None if title.is_some() => html! { span title=[title] { (text) } },
        Mark::None => text,
    };
    html! {
        (marked)
        @if let Some(f) = v.bar {
            span.minibar aria-hidden="true" {
                span style={ "width:" (format!("{:.1}", 100.0 * f)) "%" } {}
            }
        }
    }
}

/// The class of a column's cells.
fn align_class(a: Align) -> Option<&'static str> {
    match a {
        Align::Text => None,
        Align::Num => Some("num"),
        Align::Long => Some("long"),
    }
}

/// A [`Table`] as a sortable HTML table, every column shown.
pub(super) fn table_html(t: &Table) -> Markup {
    html! {
        div.scroll {
            table.sortable id=[t.id] {
                thead {
                    tr {
                        @for c in &t.columns {
                            th scope="col" class=[align_class(c.align)] { (c.header) }
                        }
                    }
                }
                tbody {
                    @for row in &t.rows {
                        tr class=[(!row.class.is_empty()).then_some(&row.class)] {
                            @for (i, v) in row.values.iter().enumerate() {
                                td class=[align_class(t.columns.get(i).map_or(Align::Text, |c| c.align))] {
                                    (value_html(v))
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
