//! The lexer of isolation-tester spec files (PostgreSQL's
//! `src/test/isolation/specscanner.l`), plus isobench's `# @` directive
//! comments; [`super::spec`] parses the tokens.

/// A parse error with its place: `file:line:column: message`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{col}: {message}")]
pub struct SpecError {
    pub file: String,
    pub line: u32,
    pub col: u32,
    pub message: String,
}

/// The spec language's reserved words.
pub(super) const KEYWORDS: [&str; 5] = ["permutation", "session", "setup", "step", "teardown"];

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    Word(String),
    Quoted(String),
    /// A SQL block: trimmed, and as the isolation tester keeps it.
    Sql(String, String),
    Punct(char),
}

#[derive(Debug, Clone)]
pub(super) struct Token {
    pub(super) tok: Tok,
    pub(super) line: u32,
    pub(super) col: u32,
}

pub(super) struct Directive {
    pub(super) key: String,
    pub(super) value: String,
    pub(super) line: u32,
    /// Column of the value's first character.
    pub(super) col: u32,
    /// Column of the `@`.
    pub(super) key_col: u32,
}

pub(super) struct Lexed {
    pub(super) tokens: Vec<Token>,
    pub(super) directives: Vec<Directive>,
}

/// Splits a spec file into tokens (`specscanner.l`: keywords and names,
/// `"quoted"` names with `""` for a quote, `{ SQL }` blocks ending at the
/// first `}`, punctuation) and collects `# @key value` comment lines.
///
/// Errors: an unterminated block or quoted name, an unexpected character.
pub(super) fn lex(text: &str, file: &str) -> Result<Lexed, SpecError> {
    let err = |line, col, message: String| SpecError {
        file: file.to_string(),
        line,
        col,
        message,
    };
    let chars: Vec<char> = text.chars().collect();
    let (mut i, mut line, mut col) = (0usize, 1u32, 1u32);
    let mut tokens = Vec::new();
    let mut directives = Vec::new();
    macro_rules! bump {
        () => {{
            if chars[i] == '\n' {
                line += 1;
                col = 1;
            } else {
                col += 1;
            }
            i += 1;
        }};
    }
    while i < chars.len() {
        let c = chars[i];
        let (tl, tc) = (line, col);
        if c.is_whitespace() {
            bump!();
        } else if c == '#' {
            let start = i;
            while i < chars.len() && chars[i] != '\n' {
                bump!();
            }
            let comment: String = chars[start + 1..i].iter().collect();
            let body = comment.trim_start();
            if let Some(rest) = body.strip_prefix('@') {
                let lead = (comment.len() - body.len()) as u32 + 1;
                let key: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                    .collect();
                let after = &rest[key.len()..];
                let value = after.trim();
                let value_col = tc
                    + 1
                    + lead
                    + key.chars().count() as u32
                    + (after.chars().count() - after.trim_start().chars().count()) as u32;
                directives.push(Directive {
                    key,
                    value: value.to_string(),
                    line: tl,
                    col: value_col,
                    key_col: tc + lead,
                });
            }
        } else if c == '{' {
            bump!();
            let start = i;
            while i < chars.len() && chars[i] != '}' {
                bump!();
            }
            if i == chars.len() {
                return Err(err(tl, tc, "unterminated SQL block: no `}`".into()));
            }
            let sql: String = chars[start..i].iter().collect();
            bump!();
            // specscanner.l: `"{"{space}*` and `{space}*"}"`, where space
            // is [ \t\r\f] (not a newline).
            let blank = |c: char| matches!(c, ' ' | '\t' | '\r' | '\x0c');
            let raw = sql.trim_start_matches(blank).trim_end_matches(blank);
            tokens.push(Token {
                tok: Tok::Sql(sql.trim().to_string(), raw.to_string()),
                line: tl,
                col: tc,
            });
        } else if c == '"' {
            bump!();
            let mut name = String::new();
            loop {
                if i == chars.len() {
                    return Err(err(tl, tc, "unterminated quoted name".into()));
                }
                if chars[i] == '\n' {
                    return Err(err(tl, tc, "unexpected newline in quoted name".into()));
                }
                if chars[i] == '"' {
                    // `""` is a quote inside the name (specscanner.l).
                    if chars.get(i + 1) == Some(&'"') {
                        name.push('"');
                        bump!();
                        bump!();
                        continue;
                    }
                    break;
                }
                name.push(chars[i]);
                bump!();
            }
            bump!();
            tokens.push(Token {
                tok: Tok::Quoted(name),
                line: tl,
                col: tc,
            });
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$')
            {
                bump!();
            }
            tokens.push(Token {
                tok: Tok::Word(chars[start..i].iter().collect()),
                line: tl,
                col: tc,
            });
        } else if matches!(c, '(' | ')' | ',' | '*') {
            bump!();
            tokens.push(Token {
                tok: Tok::Punct(c),
                line: tl,
                col: tc,
            });
        } else {
            return Err(err(tl, tc, format!("unexpected character '{c}'")));
        }
    }
    Ok(Lexed { tokens, directives })
}
