//! No source file over 800 lines of code: the house rule (STYLE.md,
//! issue #39). Lines of code are the lines left after blank lines, `//`
//! comment lines and a file's `#[cfg(test)] mod ... { ... }` blocks are
//! taken out; a file that grows past the limit is split by concept.

use std::path::{Path, PathBuf};

/// The most lines of code a file may have.
const MAX_LOC: usize = 800;

/// Lines of code of Rust source `text`, counted as the module doc says.
fn lines_of_code(text: &str) -> usize {
    let mut n = 0;
    let mut test_attr = false;
    let mut skipping: Option<i64> = None;
    for line in text.lines() {
        let t = line.trim();
        let opens = line.matches('{').count() as i64 - line.matches('}').count() as i64;
        if let Some(depth) = skipping.as_mut() {
            *depth += opens;
            if *depth <= 0 {
                skipping = None;
            }
            continue;
        }
        if t.starts_with("#[cfg(test)]") {
            test_attr = true;
            continue;
        }
        let is_mod = t.starts_with("mod ") || t.contains(" mod ");
        if std::mem::take(&mut test_attr) && is_mod {
            if !t.ends_with(';') && opens > 0 {
                skipping = Some(opens);
            }
            continue;
        }
        if !t.is_empty() && !t.starts_with("//") {
            n += 1;
        }
    }
    n
}

/// Every `.rs` file under `dir`, into `out` (also the words test's).
pub(crate) fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn the_count_leaves_out_blanks_comments_and_test_modules() {
    let text = "//! doc\n\nfn a() {\n    // note\n    1;\n}\n#[cfg(test)]\nmod tests {\n    fn b() {\n        2;\n    }\n}\nfn c() {}\n";
    assert_eq!(lines_of_code(text), 4);
}

#[test]
fn no_source_file_is_over_800_lines_of_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["crates", "tests", "bench"] {
        rust_files(&root.join(dir), &mut files);
    }
    let over: Vec<String> = files
        .iter()
        .filter_map(|p| {
            let n = lines_of_code(&std::fs::read_to_string(p).unwrap());
            (n > MAX_LOC).then(|| format!("{} ({n})", p.strip_prefix(root).unwrap().display()))
        })
        .collect();
    assert!(
        over.is_empty(),
        "over {MAX_LOC} lines of code, split by concept: {over:?}"
    );
}

/// The most lines of code a function may have, outside tests (issue #48).
const MAX_FN_LOC: usize = 150;

/// `text` with comments taken out and the insides of string and char
/// literals emptied, lines kept: braces and `fn` in them are not code.
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let rest = &text[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            let mut depth = 0;
            while i < b.len() {
                if text[i..].starts_with("/*") {
                    depth += 1;
                    i += 2;
                } else if text[i..].starts_with("*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if b[i] == b'\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
            }
        } else if let Some(hashes) = raw_string_start(rest) {
            let close = format!("\"{}", "#".repeat(hashes));
            let body = i + 2 + hashes + usize::from(rest.starts_with("br"));
            let end = text[body..]
                .find(&close)
                .map_or(b.len(), |e| body + e + close.len());
            out.push_str("\"\"");
            out.extend(text[i..end].chars().filter(|&c| c == '\n'));
            i = end;
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\n' {
                    out.push('\n');
                }
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            out.push_str("\"\"");
            i += 1;
        } else if b[i] == b'\'' {
            // A char literal ('x', '\n', '\u{..}', 'é'); else a lifetime.
            let len = rest[1..].chars().next().map_or(0, char::len_utf8);
            if rest[1..].starts_with('\\') {
                i += 2 + rest[2..].find('\'').map_or(0, |e| e + 1) + 1;
                out.push_str("' '");
            } else if rest[1 + len..].starts_with('\'') {
                i += 2 + len;
                out.push_str("' '");
            } else {
                out.push('\'');
                i += 1;
            }
        } else {
            let c = rest.chars().next().expect("not at the end");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// At `r"`, `r#"`, `br"`...: the number of `#`s.
fn raw_string_start(s: &str) -> Option<usize> {
    let s = s.strip_prefix('b').unwrap_or(s).strip_prefix('r')?;
    let hashes = s.len() - s.trim_start_matches('#').len();
    s[hashes..].starts_with('"').then_some(hashes)
}

/// Each function of `text` (not in a `#[cfg(test)]` module) with more
/// than `max` lines of code: its name, first line (from 1) and count.
fn long_functions(text: &str, max: usize) -> Vec<(String, usize, usize)> {
    let code = code_only(text);
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].trim();
        if t.starts_with("#[cfg(test)]")
            && lines
                .get(i + 1)
                .is_some_and(|l| l.contains("mod ") && l.contains('{'))
        {
            i = block_end(&lines, i + 1) + 1;
            continue;
        }
        if let Some(name) = fn_name(t) {
            let end = block_end(&lines, i);
            let n = lines[i..=end]
                .iter()
                .filter(|l| !l.trim().is_empty())
                .count();
            if n > max {
                out.push((name, i + 1, n));
            }
        }
        i += 1;
    }
    out
}

/// The function a line declares, if it does.
fn fn_name(line: &str) -> Option<String> {
    let mut words = line.split_whitespace().peekable();
    while let Some(w) = words.peek() {
        if w.starts_with("pub") || ["async", "const", "unsafe", "extern", "\"\""].contains(w) {
            words.next();
        } else {
            break;
        }
    }
    (words.next()? == "fn").then_some(())?;
    let name = words.next()?;
    Some(name.split(['(', '<']).next()?.to_string())
}

/// The line on which the block opened at or after line `start` closes
/// (`start` itself for a declaration without a body).
fn block_end(lines: &[&str], start: usize) -> usize {
    let mut depth = 0i64;
    let mut opened = false;
    for (k, l) in lines.iter().enumerate().skip(start) {
        for c in l.chars() {
            match c {
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => depth -= 1,
                ';' if !opened && depth == 0 => return k,
                _ => {}
            }
        }
        if opened && depth <= 0 {
            return k;
        }
    }
    lines.len() - 1
}

/// The source files compiled only for tests: `tests.rs`, files under a
/// `tests/` folder, and modules declared `#[cfg(test)] mod name;`.
fn test_only(files: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in files {
        let text = std::fs::read_to_string(p).unwrap();
        let mut lines = text.lines();
        while let Some(l) = lines.next() {
            if l.trim() == "#[cfg(test)]" {
                let next = lines.next().unwrap_or("").trim();
                if let Some(name) = next.strip_prefix("mod ").and_then(|n| n.strip_suffix(';')) {
                    let dir = p.parent().unwrap();
                    let dir = match p.file_stem().unwrap().to_str().unwrap() {
                        "lib" | "main" | "mod" => dir.to_path_buf(),
                        stem => dir.join(stem),
                    };
                    out.push(dir.join(format!("{name}.rs")));
                    out.push(dir.join(name));
                }
            }
        }
    }
    out
}

#[test]
fn the_function_count_skips_strings_comments_and_test_modules() {
    let text = "pub(crate) async fn a() {\n    let s = \"}\";\n    // }\n    let c = '{';\n\n    1\n}\nfn b<'a>(x: &'a str) -> &'a str { x }\n#[cfg(test)]\nmod tests {\n    fn c() {\n        1;\n        2;\n    }\n}\n";
    assert_eq!(
        long_functions(text, 0),
        vec![("a".to_string(), 1, 5), ("b".to_string(), 8, 1)]
    );
    assert_eq!(long_functions(text, 4), vec![("a".to_string(), 1, 5)]);
    assert!(long_functions("trait T {\n    fn f(&self);\n}\n", 0).len() == 1);
}

#[test]
fn no_function_is_over_150_lines_of_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("crates"), &mut files);
    let skip = test_only(&files);
    let over: Vec<String> = files
        .iter()
        .filter(|p| p.file_name().unwrap() != "tests.rs")
        .filter(|p| !skip.iter().any(|s| p.starts_with(s)))
        .flat_map(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            let shown = p.strip_prefix(root).unwrap().display().to_string();
            long_functions(&text, MAX_FN_LOC)
                .into_iter()
                .map(move |(name, line, n)| format!("{shown}:{line} {name} ({n})"))
        })
        .collect();
    assert!(
        over.is_empty(),
        "functions over {MAX_FN_LOC} lines of code; split each into named steps: {over:#?}"
    );
}
