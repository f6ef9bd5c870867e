//! A study file read into [`Settings`]: serde reads the keys (each value
//! through the same parser as its flag), and the file's own syntax tree
//! locates what serde cannot: which key an error belongs to, where each
//! key was set (for errors found later, when the settings are checked
//! against each other), and a factor written both at the top level and
//! in `[factors]`.

use std::path::Path;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::StudyError;
use super::settings::{FACTOR_KEYS, Origin, Settings};

/// Locates byte offsets of one file.
struct Src<'a> {
    path: &'a str,
    text: &'a str,
}

impl Src<'_> {
    fn at(&self, at: usize) -> (usize, usize) {
        let before = &self.text[..at.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        (line, column)
    }

    fn err(&self, at: usize, message: impl std::fmt::Display) -> StudyError {
        let (line, column) = self.at(at);
        StudyError {
            path: self.path.to_string(),
            line,
            column,
            message: message.to_string(),
        }
    }

    fn origin(&self, at: usize) -> Origin {
        let (line, column) = self.at(at);
        Origin::File {
            path: self.path.to_string(),
            line,
            column,
        }
    }
}

/// One key of the file: its path (`factors.settings.x`), the spans of
/// the key and of its value.
struct Entry {
    path: Vec<String>,
    key: std::ops::Range<usize>,
    value: std::ops::Range<usize>,
}

/// Every key of `table`, depth first, tables before their entries.
fn entries(table: &DeTable, prefix: &[String], out: &mut Vec<Entry>) {
    for (k, v) in table.iter() {
        let mut path = prefix.to_vec();
        path.push(k.get_ref().to_string());
        out.push(Entry {
            path: path.clone(),
            key: k.span(),
            value: v.span(),
        });
        match v.get_ref() {
            DeValue::Table(t) => entries(t, &path, out),
            // An array of tables (`[[check]]`): its tables' keys under
            // the array's.
            DeValue::Array(a) => {
                for e in a.iter() {
                    if let DeValue::Table(t) = e.get_ref() {
                        entries(t, &path, out);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The key a path names in messages and origins: without `factors.`,
/// with the entry's name for `params` and `settings` (`params.rows`), the
/// top-level key otherwise.
fn key_of(path: &[String]) -> String {
    let path = match path.first().map(String::as_str) {
        Some("factors") if path.len() > 1 => &path[1..],
        _ => path,
    };
    match path {
        [table, name, ..] if table == "params" || table == "settings" => format!("{table}.{name}"),
        [first, ..] => first.clone(),
        [] => String::new(),
    }
}

/// serde's "unknown field `repeats`, expected one of `workload`, ..." as
/// "unknown field `repeats`; did you mean `repeat`?" when one key is close
/// (a Levenshtein distance of at most a third of the name, at least 1);
/// `None` (keep the list) when none is.
fn did_you_mean(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    let (name, rest) = rest.split_once('`')?;
    let (_, list) = rest.split_once("expected one of ")?;
    let limit = (name.chars().count() / 3).max(1);
    let (d, best) = list
        .split(", ")
        .filter_map(|k| k.strip_prefix('`')?.strip_suffix('`'))
        .map(|k| (levenshtein(name, k), k))
        .min()?;
    (d <= limit).then(|| format!("unknown field `{name}`; did you mean `{best}`?"))
}

/// The edit distance of `a` and `b` (insertions, deletions, substitutions
/// of characters; Levenshtein 1966), by the two-row dynamic programme.
fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Reads a study file's `text` (named `path` in errors) into settings:
/// the `[factors]` table merged into the top level, relative script paths
/// resolved against the file's directory, each key's origin recorded.
///
/// Errors ([`StudyError`], `path:line:column`): not TOML, an unknown key,
/// a value its key's parser refuses (`key: message`), a key in
/// `[factors]` that is not a factor, a factor given both at the top level
/// and in `[factors]`.
pub fn parse(path: &str, text: &str) -> Result<Settings, StudyError> {
    let src = Src { path, text };
    let tree: Spanned<DeTable> = DeTable::parse(text).map_err(|e| {
        let at = e.span().map_or(0, |s| s.start);
        src.err(at, e.message().trim())
    })?;
    let mut keys = Vec::new();
    entries(tree.get_ref(), &[], &mut keys);
    let mut settings: Settings = toml::from_str(text).map_err(|e| {
        let at = e.span().map_or(0, |s| s.start);
        let message = e.message().trim();
        // The innermost key whose name or value holds the error.
        let key = keys
            .iter()
            .rev()
            .find(|k| k.key.contains(&at) || k.value.contains(&at))
            .map(|k| key_of(&k.path));
        match key {
            Some(key) if !message.starts_with("unknown field") && !key.is_empty() => {
                src.err(at, format!("{key}: {message}"))
            }
            _ => src.err(
                at,
                did_you_mean(message).unwrap_or_else(|| message.to_string()),
            ),
        }
    })?;
    for k in &keys {
        let top = &k.path[0];
        if top != "factors" || k.path.len() != 2 {
            continue;
        }
        let name = &k.path[1];
        if !FACTOR_KEYS.contains(&name.as_str()) {
            return Err(src.err(
                k.key.start,
                format!(
                    "{name}: not a factor; write it at the top level (factors: {})",
                    FACTOR_KEYS.join(", ")
                ),
            ));
        }
        let at_top = keys.iter().any(|t| t.path.len() == 1 && &t.path[0] == name);
        if at_top && name != "params" && name != "settings" {
            return Err(src.err(
                k.value.start,
                format!("{name}: given both at the top level and in [factors]; keep one"),
            ));
        }
    }
    // Origins, and a table entry given both at the top level and in
    // [factors].
    let mut seen = std::collections::BTreeSet::new();
    for k in &keys {
        let key = key_of(&k.path);
        let entry_depth = if k.path[0] == "factors" { 3 } else { 2 };
        if key.contains('.') && k.path.len() == entry_depth && !seen.insert(key.clone()) {
            return Err(src.err(k.key.start, format!("{key}: given twice")));
        }
        // Deeper entries come later and win.
        settings.origins.insert(key, src.origin(k.value.start));
    }
    settings.origins.remove("factors");
    if let Some(factors) = settings.factors.take() {
        let origins = std::mem::take(&mut settings.origins);
        settings.overlay(*factors);
        settings.origins = origins;
    }
    // Script paths relative to the file's directory.
    let here = Path::new(path).parent().unwrap_or(Path::new(""));
    for (f, _) in settings.file.iter_mut().flatten() {
        *f = here.join(&*f).display().to_string();
    }
    for (_, members) in settings.script.iter_mut().flatten() {
        for m in members.iter_mut().filter(|m| !m.starts_with("builtin:")) {
            *m = here.join(&*m).display().to_string();
        }
    }
    if let Some(sql) = &mut settings.init_sql {
        *sql = here.join(&*sql);
    }
    for f in settings.check_file.iter_mut().flatten() {
        *f = here.join(&*f);
    }
    // Each `[[check]]` is named by its table's line.
    if let (Some(checks), Some(tables)) = (&mut settings.check, tree.get_ref().get("check"))
        && let DeValue::Array(tables) = tables.get_ref()
    {
        for (c, t) in checks.iter_mut().zip(tables.iter()) {
            c.origin = format!("{path}:{}", src.at(t.span().start).0);
        }
    }
    Ok(settings)
}

/// Reads the study file `path` ([`parse`]).
///
/// Errors: the file cannot be read, or [`parse`]'s.
pub fn read(path: &Path) -> Result<Settings, StudyError> {
    let text = std::fs::read_to_string(path).map_err(|e| StudyError {
        path: path.display().to_string(),
        line: 0,
        column: 0,
        message: format!("cannot read the study file: {e}"),
    })?;
    parse(&path.display().to_string(), &text)
}
