//! Command templates: `autocannon -c {clients} -d {duration_s} ...` with
//! `{name}` placeholders filled from a run's cell and server.
//!
//! `{{` and `}}` stand for literal braces (so a shell's `${HOME}` is
//! written `${{HOME}}`, or `$HOME`). A placeholder name is letters,
//! digits, `_`, `.` and `-`. Values are substituted as they are, without
//! shell quoting: quote a placeholder in the template when its value may
//! hold shell characters.

use std::collections::BTreeMap;

/// A parsed template.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    /// The option or key it came from, for errors (e.g. `load_cmd`).
    option: String,
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Text(String),
    /// A placeholder and its byte offset in the template text.
    Var(String, usize),
}

/// A placeholder's value, and whether it is a secret (a password, or a DSN
/// that may hold one): secrets are substituted into the command that runs
/// but shown as `{name}` in what is recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct Value {
    pub text: String,
    pub secret: bool,
}

/// Placeholder values by name.
pub type Vars = BTreeMap<String, Value>;

impl Template {
    /// Parses `text`, the value of `option`.
    ///
    /// Errors (naming `option` and the byte offset): an unclosed `{`, a
    /// lone `}`, an empty or malformed placeholder name.
    pub fn parse(option: &str, text: &str) -> Result<Template, String> {
        let parts = Self::parts(text).map_err(|e| format!("{option}: {e}"))?;
        Ok(Template {
            option: option.to_string(),
            parts,
        })
    }

    /// Checks the syntax of `text` as a template.
    ///
    /// Errors: as [`Template::parse`], without the option.
    pub fn check_syntax(text: &str) -> Result<(), String> {
        Self::parts(text).map(|_| ())
    }

    fn parts(text: &str) -> Result<Vec<Part>, String> {
        let mut parts = Vec::new();
        let mut lit = String::new();
        let mut chars = text.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            match c {
                '{' if chars.peek().map(|&(_, c)| c) == Some('{') => {
                    chars.next();
                    lit.push('{');
                }
                '}' if chars.peek().map(|&(_, c)| c) == Some('}') => {
                    chars.next();
                    lit.push('}');
                }
                '}' => {
                    return Err(format!(
                        "a lone '}}' at offset {i} (write '}}}}' for a literal brace)"
                    ));
                }
                '{' => {
                    let rest = &text[i + 1..];
                    let Some(end) = rest.find('}') else {
                        return Err(format!(
                            "'{{' at offset {i} is not closed (write '{{{{' for a literal brace)"
                        ));
                    };
                    let name = &rest[..end];
                    let ok = !name.is_empty()
                        && name
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
                    if !ok {
                        return Err(format!(
                            "'{{{name}}}' at offset {i} is not a placeholder \
                             (names are letters, digits, '_', '.', '-'; write '{{{{' for a literal brace)"
                        ));
                    }
                    if !lit.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut lit)));
                    }
                    parts.push(Part::Var(name.to_string(), i));
                    for _ in 0..=name.chars().count() {
                        chars.next();
                    }
                }
                c => lit.push(c),
            }
        }
        if !lit.is_empty() {
            parts.push(Part::Text(lit));
        }
        Ok(parts)
    }

    /// The option or key the template came from.
    pub fn option(&self) -> &str {
        &self.option
    }

    /// The placeholder names, in order of appearance (with repeats).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var(n, _) => Some(n.as_str()),
            Part::Text(_) => None,
        })
    }

    /// Whether the template uses placeholder `name`.
    pub fn uses(&self, name: &str) -> bool {
        self.names().any(|n| n == name)
    }

    /// Checks every placeholder against `known` (name, `Ok` or the reason
    /// it has no value in this study).
    ///
    /// Errors: the first placeholder that is unknown (listing the known
    /// ones) or has no value (with the reason).
    pub fn check(&self, known: &BTreeMap<String, Result<(), String>>) -> Result<(), String> {
        for p in &self.parts {
            let Part::Var(name, at) = p else { continue };
            match known.get(name) {
                Some(Ok(())) => {}
                Some(Err(why)) => {
                    return Err(format!(
                        "{}: placeholder {{{name}}} (offset {at}) has no value: {why}",
                        self.option
                    ));
                }
                None => {
                    let names: Vec<String> = known
                        .iter()
                        .filter(|(_, v)| v.is_ok())
                        .map(|(k, _)| format!("{{{k}}}"))
                        .collect();
                    return Err(format!(
                        "{}: unknown placeholder {{{name}}} (offset {at}); known: {}",
                        self.option,
                        names.join(" ")
                    ));
                }
            }
        }
        Ok(())
    }

    /// The command to run: every placeholder replaced by its value.
    ///
    /// Errors: a placeholder without a value in `vars` (cannot happen
    /// after a successful [`Template::check`] with the same names).
    pub fn render(&self, vars: &Vars) -> Result<String, String> {
        self.render_with(vars, false)
    }

    /// The command as recorded: secrets left as `{name}`.
    pub fn render_shown(&self, vars: &Vars) -> Result<String, String> {
        self.render_with(vars, true)
    }

    fn render_with(&self, vars: &Vars, hide: bool) -> Result<String, String> {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Text(t) if hide => out.push_str(&t.replace('{', "{{").replace('}', "}}")),
                Part::Text(t) => out.push_str(t),
                Part::Var(name, _) => match vars.get(name) {
                    Some(v) if hide && v.secret => out.push_str(&format!("{{{name}}}")),
                    Some(v) => out.push_str(&v.text),
                    None => {
                        return Err(format!(
                            "{}: placeholder {{{name}}} has no value",
                            self.option
                        ));
                    }
                },
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str, bool)]) -> Vars {
        pairs
            .iter()
            .map(|(k, v, s)| {
                (
                    k.to_string(),
                    Value {
                        text: v.to_string(),
                        secret: *s,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn substitutes_placeholders_and_escaped_braces() {
        let t = Template::parse(
            "load_cmd",
            "ab -c {clients} -T {duration_s} ${{HOME}} '{dsn}'",
        )
        .unwrap();
        assert_eq!(
            t.names().collect::<Vec<_>>(),
            vec!["clients", "duration_s", "dsn"]
        );
        let v = vars(&[
            ("clients", "25", false),
            ("duration_s", "10", false),
            ("dsn", "postgresql://u:pw@h/db", true),
        ]);
        assert_eq!(
            t.render(&v).unwrap(),
            "ab -c 25 -T 10 ${HOME} 'postgresql://u:pw@h/db'"
        );
        // What is recorded keeps the secret out and stays a template.
        let shown = t.render_shown(&v).unwrap();
        assert_eq!(shown, "ab -c 25 -T 10 ${{HOME}} '{dsn}'");
        assert!(t.uses("dsn") && !t.uses("pool_size"));
    }

    #[test]
    fn malformed_templates_name_the_option_and_offset() {
        let e = Template::parse("before_run", "echo {clients").unwrap_err();
        assert!(
            e.starts_with("before_run: '{' at offset 5 is not closed"),
            "{e}"
        );
        let e = Template::parse("load_cmd", "echo }").unwrap_err();
        assert!(e.contains("lone '}'"), "{e}");
        let e = Template::parse("load_cmd", "awk '{print $1}'").unwrap_err();
        assert!(
            e.contains("'{print $1}' at offset 5 is not a placeholder"),
            "{e}"
        );
        assert!(Template::parse("load_cmd", "x {}").is_err());
    }

    #[test]
    fn check_tells_unknown_from_unset() {
        let known: BTreeMap<String, Result<(), String>> = [
            ("clients".to_string(), Ok(())),
            (
                "pool_size".to_string(),
                Err("pool_size is not a factor of this study".to_string()),
            ),
        ]
        .into_iter()
        .collect();
        let t = Template::parse("load_cmd", "x {clients} {clinets}").unwrap();
        let e = t.check(&known).unwrap_err();
        assert_eq!(
            e,
            "load_cmd: unknown placeholder {clinets} (offset 12); known: {clients}"
        );
        let t = Template::parse("load_cmd", "x {pool_size}").unwrap();
        let e = t.check(&known).unwrap_err();
        assert!(
            e.contains("{pool_size} (offset 2) has no value: pool_size is not a factor"),
            "{e}"
        );
        assert!(
            Template::parse("load_cmd", "x {clients}")
                .unwrap()
                .check(&known)
                .is_ok()
        );
    }
}
