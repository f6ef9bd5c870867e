//! docs/src/code-map.md is the one code map: it names every crate of the
//! workspace and every top-level module of each, and every
//! `crates/...` path it names exists.

use std::path::Path;

fn code_map() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(root.join("docs/src/code-map.md")).expect("docs/src/code-map.md")
}

/// The `crates/...` paths in backticks in `text`.
fn crate_paths(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| s.starts_with("crates/"))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_code_map_names_every_crate_and_top_level_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let named = crate_paths(&code_map());
    let is_named = |shown: &str| named.iter().any(|p| p.starts_with(shown));
    let mut missing = Vec::new();
    for krate in std::fs::read_dir(root.join("crates")).unwrap() {
        let dir = krate.unwrap().path();
        let rel = dir.strip_prefix(root).unwrap().display().to_string();
        if !is_named(&format!("{rel}/")) {
            missing.push(format!("{rel}/"));
        }
        // Each directory module (a room of a crate with several, or a
        // part of a one-room crate) has its line.
        for entry in std::fs::read_dir(dir.join("src")).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                let shown = format!("{rel}/src/{name}/");
                if !is_named(&shown) {
                    missing.push(shown);
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/src/code-map.md does not name {missing:?}"
    );
}

#[test]
fn every_path_in_the_code_map_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let named = crate_paths(&code_map());
    assert!(named.len() > 20, "read too few paths: {named:?}");
    let gone: Vec<&String> = named.iter().filter(|p| !root.join(p).exists()).collect();
    assert!(
        gone.is_empty(),
        "docs/src/code-map.md names paths that do not exist: {gone:?}"
    );
}
