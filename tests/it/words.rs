//! One word per meaning (docs/src/glossary.md, issue #48): the words the
//! glossary retired stay out of the code's public names and `--help`.

use std::path::Path;

use crate::common::isobench;
use crate::file_size::rust_files;

/// Retired words, with what says it now (the glossary's entry).
const RETIRED: &[(&str, &str)] = &[("experiment", "study")];

/// The names `line` declares public: items (`pub fn name`, `pub(crate)
/// struct Name`, ...) and fields (`pub name: T`).
fn public_names(line: &str) -> Vec<String> {
    let t = line.trim_start();
    let Some(rest) = t.strip_prefix("pub") else {
        return Vec::new();
    };
    let rest = match rest.strip_prefix('(') {
        Some(r) => &r[r.find(')').map_or(0, |i| i + 1)..],
        None => rest,
    };
    let mut words = rest
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty());
    let name = match words.next() {
        Some("async" | "const" | "unsafe") => match words.next() {
            Some("fn") => words.next(),
            other => other,
        },
        Some("fn" | "struct" | "enum" | "mod" | "type" | "trait" | "static" | "use") => {
            words.next()
        }
        field => field,
    };
    name.map(str::to_string).into_iter().collect()
}

#[test]
fn a_declaration_names_what_it_declares() {
    assert_eq!(
        public_names("    pub(crate) async fn run_study("),
        ["run_study"]
    );
    assert_eq!(public_names("pub struct StudyConfig {"), ["StudyConfig"]);
    assert_eq!(public_names("    pub cells: Vec<Cell>,"), ["cells"]);
    assert!(public_names("    let pub_x = 1;").is_empty());
}

#[test]
fn retired_words_are_not_in_public_names() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("crates"), &mut files);
    let mut found = Vec::new();
    for p in &files {
        let text = std::fs::read_to_string(p).unwrap();
        for (n, line) in text.lines().enumerate() {
            for name in public_names(line) {
                for (old, new) in RETIRED {
                    if name.to_ascii_lowercase().contains(old) {
                        let shown = p.strip_prefix(root).unwrap().display();
                        found.push(format!("{shown}:{}: {name} (say {new})", n + 1));
                    }
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "retired words in public names: {found:#?}"
    );
}

#[test]
fn retired_words_are_not_in_help() {
    for args in [&["--help"][..], &["run", "--help"], &["report", "--help"]] {
        let out = isobench().args(args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_ascii_lowercase();
        for (old, new) in RETIRED {
            assert!(
                !text.contains(old),
                "isobench {args:?} says {old} (say {new}):\n{text}"
            );
        }
    }
}
