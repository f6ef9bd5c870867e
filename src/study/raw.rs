//! The experiment file as written: its keys (serde, with spans for
//! `file:line:column` errors), and the conversions of TOML values into
//! settings, each error naming the key.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::Deserialize;
use toml::{Spanned, Value};

use super::StudyError;
use crate::model::parse_duration;

pub(super) type Entry = Option<Spanned<Value>>;
pub(super) type Table = Option<BTreeMap<Spanned<String>, Spanned<Value>>>;

/// The keys a factor may take, at the top level or in `[factors]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Factors {
    pub(super) isolation: Entry,
    pub(super) strategy: Entry,
    pub(super) clients: Entry,
    pub(super) pool_size: Entry,
    pub(super) rate: Entry,
    pub(super) scale: Entry,
    pub(super) max_tries: Entry,
    pub(super) fault_plan: Entry,
    pub(super) pg_bin: Option<Spanned<PgBinEntry>>,
    pub(super) params: Table,
    pub(super) settings: Table,
}

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Raw {
    pub(super) workload: Entry,
    pub(super) load_cmd: Entry,
    pub(super) setup_cmd: Entry,
    pub(super) before_run: Entry,
    pub(super) after_run: Entry,
    pub(super) ready: Entry,
    pub(super) ready_timeout: Entry,
    pub(super) load_format: Entry,
    pub(super) on_error: Entry,
    pub(super) load_timeout: Entry,
    pub(super) file: Entry,
    pub(super) builtin: Entry,
    pub(super) define: Table,
    pub(super) protocol: Entry,
    pub(super) init_sql: Entry,
    pub(super) repeat: Entry,
    pub(super) duration: Entry,
    pub(super) warmup: Entry,
    pub(super) server_wait: Entry,
    pub(super) latency_limit: Entry,
    pub(super) fault: Entry,
    pub(super) retry_on: Entry,
    pub(super) backoff: Entry,
    pub(super) threads: Entry,
    pub(super) sample_interval: Entry,
    pub(super) observe: Entry,
    pub(super) seed: Entry,
    pub(super) order: Entry,
    pub(super) baseline: Entry,
    pub(super) dsn: Entry,
    pub(super) external: Entry,
    pub(super) server_user: Entry,
    pub(super) out: Entry,
    pub(super) quiet: Entry,
    pub(super) fail_on_violation: Entry,
    pub(super) exclude_faulted: Entry,
    // Factors at the top level.
    pub(super) isolation: Entry,
    pub(super) strategy: Entry,
    pub(super) clients: Entry,
    pub(super) pool_size: Entry,
    pub(super) rate: Entry,
    pub(super) scale: Entry,
    pub(super) max_tries: Entry,
    pub(super) fault_plan: Entry,
    pub(super) pg_bin: Option<Spanned<PgBinEntry>>,
    pub(super) params: Table,
    pub(super) settings: Table,
    pub(super) factors: Option<Factors>,
}

/// `pg_bin` as written: a directory, a list of directories, or a table of
/// name = directory (in the file's order).
#[derive(Debug)]
pub(super) enum PgBinEntry {
    One(String),
    List(Vec<Spanned<Value>>),
    Named(Vec<(Spanned<String>, Spanned<Value>)>),
}

impl<'de> Deserialize<'de> for PgBinEntry {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = PgBinEntry;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "pg_bin: a directory, a list of directories, or a table of name = directory",
                )
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<PgBinEntry, E> {
                Ok(PgBinEntry::One(s.to_string()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<PgBinEntry, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(PgBinEntry::List(items))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<PgBinEntry, A::Error> {
                let mut entries: Vec<(Spanned<String>, Spanned<Value>)> = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                // The toml crate hands tables over sorted by key.
                entries.sort_by_key(|(k, _)| k.span().start);
                Ok(PgBinEntry::Named(entries))
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// Locates byte offsets of one file.
pub(super) struct Src<'a> {
    pub(super) path: &'a str,
    pub(super) text: &'a str,
}

impl Src<'_> {
    pub(super) fn err(&self, at: usize, message: impl fmt::Display) -> StudyError {
        let before = &self.text[..at.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        StudyError {
            path: self.path.to_string(),
            line,
            column,
            message: message.to_string(),
        }
    }

    /// The values of `key`: a list's elements, or the one value.
    pub(super) fn list<T>(
        &self,
        key: &str,
        v: &Spanned<Value>,
        parse: impl Fn(&Value) -> Result<T, String>,
    ) -> Result<Vec<T>, StudyError> {
        let items: Vec<&Value> = match v.get_ref() {
            Value::Array(a) if a.is_empty() => {
                return Err(self.err(v.span().start, format!("{key}: the list is empty")));
            }
            Value::Array(a) => a.iter().collect(),
            one => vec![one],
        };
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            out.push(parse(item).map_err(|e| self.err(v.span().start, format!("{key}: {e}")))?);
        }
        Ok(out)
    }

    /// The single value of `key`.
    pub(super) fn one<T>(
        &self,
        key: &str,
        v: &Spanned<Value>,
        parse: impl Fn(&Value) -> Result<T, String>,
    ) -> Result<T, StudyError> {
        if let Value::Array(_) = v.get_ref() {
            return Err(self.err(
                v.span().start,
                format!("{key}: takes one value, not a list"),
            ));
        }
        parse(v.get_ref()).map_err(|e| self.err(v.span().start, format!("{key}: {e}")))
    }
}

/// A scalar as text: strings as they are, numbers and booleans printed.
pub(super) fn scalar(v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Integer(i) => Ok(i.to_string()),
        Value::Float(f) => Ok(f.to_string()),
        Value::Boolean(b) => Ok(b.to_string()),
        other => Err(format!(
            "expected a string or a number, found {}",
            other.type_str()
        )),
    }
}

pub(super) fn string(v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        other => Err(format!("expected a string, found {}", other.type_str())),
    }
}

pub(super) fn parsed<T: FromStr<Err = String>>(v: &Value) -> Result<T, String> {
    string(v)?.parse()
}

pub(super) fn boolean(v: &Value) -> Result<bool, String> {
    match v {
        Value::Boolean(b) => Ok(*b),
        other => Err(format!(
            "expected true or false, found {}",
            other.type_str()
        )),
    }
}

pub(super) fn int_in(lo: i64, hi: i64) -> impl Fn(&Value) -> Result<i64, String> {
    move |v| match v {
        Value::Integer(i) if (lo..=hi).contains(i) => Ok(*i),
        Value::Integer(i) => Err(format!("{i} is out of range ({lo} to {hi})")),
        other => Err(format!("expected an integer, found {}", other.type_str())),
    }
}

pub(super) fn u32_in(lo: u32, hi: u32) -> impl Fn(&Value) -> Result<u32, String> {
    let f = int_in(i64::from(lo), i64::from(hi));
    move |v| f(v).map(|i| i as u32)
}

/// A duration: a string like `2s`, `500ms`, or a number of seconds.
pub(super) fn duration(v: &Value) -> Result<Duration, String> {
    match v {
        Value::String(s) => parse_duration(s),
        Value::Integer(i) if *i >= 0 => Ok(Duration::from_secs(*i as u64)),
        Value::Float(f) if *f >= 0.0 && f.is_finite() => Ok(Duration::from_secs_f64(*f)),
        other => Err(format!(
            "expected a duration like \"10s\" or \"500ms\", found {}",
            scalar(other).unwrap_or_else(|_| other.type_str().to_string())
        )),
    }
}

pub(super) fn positive_rate(v: &Value) -> Result<f64, String> {
    let r = match v {
        Value::Integer(i) => *i as f64,
        Value::Float(f) => *f,
        other => {
            return Err(format!(
                "expected a number of tx/s, found {}",
                other.type_str()
            ));
        }
    };
    if r.is_finite() && r > 0.0 {
        Ok(r)
    } else {
        Err(format!(
            "{r} is not a rate; give transactions per second > 0"
        ))
    }
}
