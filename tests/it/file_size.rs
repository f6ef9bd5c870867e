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

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
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
