//! The crate's top-level modules form a graph without cycles, with
//! `model` (the shared data types) at the bottom importing nothing else
//! from the crate. Read from the source: every `crate::name` outside
//! comments and test modules is an edge from the file's top-level module
//! to `name`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top-level module -> the top-level modules its non-test code names.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(&src).unwrap();
            let first = rel.components().next().unwrap().as_os_str();
            let module = Path::new(first)
                .file_stem()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if module == "lib" || module == "main" {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let edges = g.entry(module.clone()).or_default();
            let mut code = String::new();
            for line in text.lines() {
                let t = line.trim_start();
                if t.starts_with("#[cfg(test)]") {
                    // Test modules come last in every file.
                    break;
                }
                if !t.starts_with("//") {
                    code.push_str(line);
                    code.push('\n');
                }
            }
            edges.extend(crate_names(&code).into_iter().filter(|n| *n != module));
        }
    }
    g
}

/// The top-level modules that `code` names after `crate::`, also in
/// grouped imports (`use crate::{a, b::c};`, over several lines).
fn crate_names(code: &str) -> BTreeSet<String> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut names = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + 7..];
        if !rest.starts_with('{') {
            names.insert(ident(rest));
            continue;
        }
        // The group's top-level items: split on commas at brace depth 1.
        let (mut depth, mut item_start) = (0, 1);
        for (j, c) in rest.char_indices() {
            match c {
                '{' => depth += 1,
                '}' | ',' if depth == 1 => {
                    names.insert(ident(&rest[item_start..j]));
                    item_start = j + 1;
                    if c == '}' {
                        break;
                    }
                }
                '}' => depth -= 1,
                _ => {}
            }
        }
    }
    names.remove("");
    names.remove("self");
    names
}

/// A cycle through `start`, if any (depth-first search).
fn cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        g: &BTreeMap<String, BTreeSet<String>>,
        node: &str,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|n| n == node) {
            let mut c = path[i..].to_vec();
            c.push(node.to_string());
            return Some(c);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in g.get(node).into_iter().flatten() {
            if let Some(c) = visit(g, next, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    g.keys()
        .find_map(|n| visit(g, n, &mut Vec::new(), &mut done))
}

#[test]
fn the_model_imports_nothing_from_the_crate() {
    let g = graph();
    let model = g.get("model").expect("src/model/ exists");
    assert!(model.is_empty(), "model imports {model:?}");
}

#[test]
fn the_module_graph_has_no_cycle() {
    let g = graph();
    assert!(g.len() > 10, "read too few modules: {g:?}");
    if let Some(c) = cycle(&g) {
        panic!("module cycle: {}", c.join(" -> "));
    }
}

#[test]
fn grouped_imports_are_edges() {
    let code = "use crate::{engine, report::{cells, model}, store};\nlet x = crate::stats::mean(&v);\nuse crate::{\n    postgres::{self, Target},\n    wire,\n};\n";
    let names: Vec<String> = crate_names(code).into_iter().collect();
    assert_eq!(
        names,
        ["engine", "postgres", "report", "stats", "store", "wire"]
    );
}

#[test]
fn the_cycle_finder_finds_a_cycle() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    g.entry("c".into()).or_default().insert("a".into());
    assert_eq!(cycle(&g).unwrap(), ["a", "b", "c", "a"]);
    g.get_mut("c").unwrap().clear();
    assert_eq!(cycle(&g), None);
}
