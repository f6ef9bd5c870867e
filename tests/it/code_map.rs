//! docs/src/code-map.md is the one code map: it names every top-level
//! module of src/, and every `src/...` path it names exists.

use std::path::Path;

fn code_map() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(root.join("docs/src/code-map.md")).expect("docs/src/code-map.md")
}

/// The `src/...` paths in backticks in `text`.
fn src_paths(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| s.starts_with("src/"))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_code_map_names_every_top_level_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let named = src_paths(&code_map());
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(root.join("src")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let (stem, shown) = if path.is_dir() {
            (name.clone(), format!("src/{name}/"))
        } else if let Some(stem) = name.strip_suffix(".rs") {
            (stem.to_string(), format!("src/{name}"))
        } else {
            continue;
        };
        if stem == "lib" {
            continue;
        }
        if !named.iter().any(|p| p.starts_with(&shown)) {
            missing.push(shown);
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
    let named = src_paths(&code_map());
    assert!(named.len() > 20, "read too few paths: {named:?}");
    let gone: Vec<&String> = named.iter().filter(|p| !root.join(p).exists()).collect();
    assert!(
        gone.is_empty(),
        "docs/src/code-map.md names paths that do not exist: {gone:?}"
    );
}
