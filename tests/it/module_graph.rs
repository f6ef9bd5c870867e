//! The layering, checked. The workspace's crates are floors (`FLOORS`,
//! bottom first): each depends only on floors below it, which Cargo then
//! enforces for every import. Inside the floors, the rooms (each crate's
//! top-level modules, or the crate itself when it is one room) form a
//! graph without cycles, read from the source: every `crate::name`
//! outside comments and test modules is an edge from the file's room to
//! `name`. `model`, the shared data types, is at the bottom and imports
//! nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The crates under `crates/`, bottom floor first, with the room name
/// the code uses for a crate that is one room (its alias in the crates
/// above), or `None` for a crate of several rooms.
const FLOORS: [(&str, Option<&str>); 8] = [
    ("model", Some("model")),
    ("stats", Some("stats")),
    ("wire", Some("wire")),
    ("elle", Some("elle")),
    ("server", Some("postgres")),
    ("load", None),
    ("results", None),
    ("isobench", None),
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The `isobench-*` crates a manifest's `[dependencies]` and
/// `[dev-dependencies]` name.
fn internal_deps(manifest: &str) -> BTreeSet<String> {
    let mut deps = BTreeSet::new();
    let mut in_deps = false;
    for line in manifest.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            in_deps = l == "[dependencies]" || l == "[dev-dependencies]";
            continue;
        }
        if in_deps && let Some(name) = l.strip_prefix("isobench-") {
            let name: String = name
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            deps.insert(name);
        }
    }
    deps
}

#[test]
fn every_crate_depends_only_on_floors_below_it() {
    let on_disk: BTreeSet<String> = std::fs::read_dir(root().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let listed: BTreeSet<String> = FLOORS.iter().map(|(c, _)| c.to_string()).collect();
    assert_eq!(on_disk, listed, "FLOORS lists every crate under crates/");
    for (height, (krate, _)) in FLOORS.iter().enumerate() {
        // The top floor's manifest is the workspace root's.
        let manifest = if *krate == "isobench" {
            root().join("Cargo.toml")
        } else {
            root().join("crates").join(krate).join("Cargo.toml")
        };
        let text = std::fs::read_to_string(&manifest).unwrap();
        let text = match text.find("[package]") {
            Some(i) => &text[i..],
            None => &text[..],
        };
        for dep in internal_deps(text) {
            let below = FLOORS[..height].iter().any(|(c, _)| *c == dep);
            assert!(
                below,
                "crates/{krate} depends on isobench-{dep}, which is not below it"
            );
        }
    }
}

#[test]
fn the_floor_reader_reads_dependencies() {
    let manifest = "[package]\nname = \"isobench-x\"\n[dependencies]\nisobench-model.workspace = true\nserde.workspace = true\n[dev-dependencies]\nisobench-stats = { workspace = true }\n[features]\nisobench-not = []\n";
    let deps: Vec<String> = internal_deps(manifest).into_iter().collect();
    assert_eq!(deps, ["model", "stats"]);
}

/// Room -> the rooms its non-test code names.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let rooms: BTreeSet<String> = FLOORS
        .iter()
        .filter_map(|(_, room)| room.map(str::to_string))
        .chain(
            FLOORS
                .iter()
                .filter(|(_, room)| room.is_none())
                .flat_map(|(c, _)| {
                    std::fs::read_dir(root().join("crates").join(c).join("src"))
                        .unwrap()
                        .filter_map(|e| {
                            let p = e.unwrap().path();
                            p.is_dir()
                                .then(|| p.file_name().unwrap().to_string_lossy().into_owned())
                        })
                }),
        )
        .collect();
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (krate, one_room) in FLOORS {
        let src = root().join("crates").join(krate).join("src");
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
                let module = match one_room {
                    Some(room) => room.to_string(),
                    None => {
                        let first = rel.components().next().unwrap().as_os_str();
                        let m = Path::new(first).file_stem().unwrap().to_string_lossy();
                        if m == "lib" || m == "main" {
                            continue;
                        }
                        m.into_owned()
                    }
                };
                let code = non_test_code(&std::fs::read_to_string(&path).unwrap());
                let edges = g.entry(module.clone()).or_default();
                edges.extend(
                    crate_names(&code)
                        .into_iter()
                        .filter(|n| *n != module && rooms.contains(n)),
                );
            }
        }
    }
    g
}

/// A source file's code before its test module (test modules come last
/// in every file), comment lines left out.
fn non_test_code(text: &str) -> String {
    let mut code = String::new();
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(test)]") {
            break;
        }
        if !t.starts_with("//") {
            code.push_str(line);
            code.push('\n');
        }
    }
    code
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
    let model = g.get("model").expect("crates/model exists");
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

/// Every path that `code` names from `prefix` (`crate::` or `super::`),
/// as its segments, with groups expanded (`crate::a::{b, c::{d, e}}` is
/// `a::b`, `a::c::d`, `a::c::e`); `super::super::x` is `super`, `x`
/// after the first `super::`.
fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
    fn ident(s: &str) -> &str {
        let end = s
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(s.len());
        &s[..end]
    }
    /// The paths of the item at the start of `s`, each after `base`;
    /// returns them and how far the item reached.
    fn item(s: &str, base: &[String], out: &mut Vec<Vec<String>>) -> usize {
        let mut at = 0;
        let mut path = base.to_vec();
        loop {
            let rest = &s[at..];
            let trimmed = rest.trim_start();
            at += rest.len() - trimmed.len();
            if let Some(group) = trimmed.strip_prefix('{') {
                at += 1;
                let mut inner = 0;
                loop {
                    let used = item(&group[inner..], &path, out);
                    inner += used;
                    let after = group[inner..].trim_start();
                    inner += group[inner..].len() - after.len();
                    if after.starts_with(',') {
                        inner += 1;
                    } else {
                        if after.starts_with('}') {
                            inner += 1;
                        }
                        break;
                    }
                    if group[inner..].trim_start().starts_with('}') {
                        let t = group[inner..].trim_start();
                        inner += group[inner..].len() - t.len() + 1;
                        break;
                    }
                }
                return at + inner;
            }
            let name = ident(trimmed);
            if name.is_empty() {
                break;
            }
            path.push(name.to_string());
            at += name.len();
            if s[at..].starts_with("::") {
                at += 2;
            } else {
                break;
            }
        }
        if path.len() > base.len() {
            out.push(path);
        }
        at
    }
    let mut out = Vec::new();
    for (i, _) in code.match_indices(prefix) {
        // `super::super::` is read once, from its first `super::`.
        if prefix == "super::" && code[..i].ends_with("super::") {
            continue;
        }
        item(&code[i + prefix.len()..], &[], &mut out);
    }
    out
}

/// Inside each directory of every crate, the files (modules) that are
/// siblings: file -> the siblings its non-test code names, through
/// `crate::...` or `super::...` paths. A parent (`mod.rs`) and its
/// children may name each other; siblings may not, in a circle.
fn sibling_graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (krate, _) in FLOORS {
        let src = root().join("crates").join(krate).join("src");
        let mut stack = vec![src.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    if path.file_name().unwrap() != "tests" {
                        stack.push(path);
                    }
                    continue;
                }
                if path.extension().is_none_or(|e| e != "rs") {
                    continue;
                }
                let rel = path.strip_prefix(&src).unwrap();
                // The file's module path: a/b.rs and a/b/mod.rs are a::b.
                let mut module: Vec<String> = rel
                    .with_extension("")
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                let stem = module.last().unwrap().clone();
                if stem == "mod" || stem == "lib" || stem == "main" {
                    module.pop();
                }
                if stem == "tests" || module.is_empty() {
                    continue;
                }
                let parent = &module[..module.len() - 1];
                let sibling = |target: &[String]| -> Option<String> {
                    let next = target.get(parent.len())?;
                    (target.starts_with(parent) && *next != module[parent.len()]).then(|| {
                        let p = parent.iter().chain([next]).cloned().collect::<Vec<_>>();
                        p.join("::")
                    })
                };
                let code = non_test_code(&std::fs::read_to_string(&path).unwrap());
                let here = format!("{krate}/{}", module.join("::"));
                let edges = g.entry(here).or_default();
                for p in paths_after(&code, "crate::") {
                    if let Some(s) = sibling(&p) {
                        edges.insert(format!("{krate}/{s}"));
                    }
                }
                for p in paths_after(&code, "super::") {
                    // `super` of a/b.rs is a; of a/b/mod.rs, also a.
                    let supers = 1 + p.iter().take_while(|s| *s == "super").count();
                    if supers > module.len() {
                        continue;
                    }
                    let mut target = module[..module.len() - supers].to_vec();
                    target.extend(p.into_iter().filter(|s| s != "super"));
                    if let Some(s) = sibling(&target) {
                        edges.insert(format!("{krate}/{s}"));
                    }
                }
            }
        }
    }
    // Edges to what is not a file (an item of the parent) are dropped.
    let files: BTreeSet<String> = g.keys().cloned().collect();
    for edges in g.values_mut() {
        edges.retain(|e| files.contains(e));
    }
    g
}

#[test]
fn no_circle_among_sibling_files() {
    let mut g = sibling_graph();
    assert!(g.len() > 100, "read too few files: {}", g.len());
    // Every circle, each found with the edge that closed the one before
    // it removed.
    let mut circles = Vec::new();
    while let Some(c) = cycle(&g) {
        let (a, b) = (&c[c.len() - 2], &c[c.len() - 1]);
        g.get_mut(a).unwrap().remove(b);
        circles.push(c.join(" -> "));
    }
    assert!(
        circles.is_empty(),
        "circles among sibling files:\n{}",
        circles.join("\n")
    );
}

#[test]
fn paths_are_read_through_groups_and_supers() {
    let code = "use crate::report::{analysis::{cells, plans::X}, tables};\nuse super::super::model::Y;\nlet z = super::lexer::lex(s);\n";
    let crate_paths: Vec<String> = paths_after(code, "crate::")
        .into_iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(
        crate_paths,
        [
            "report::analysis::cells",
            "report::analysis::plans::X",
            "report::tables"
        ]
    );
    let supers: Vec<String> = paths_after(code, "super::")
        .into_iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(supers, ["super::model::Y", "lexer::lex"]);
}
