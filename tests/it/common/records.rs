//! Reading one run record of results.json: its invariants and its
//! transaction types, by name.

use serde_json::Value;

/// The element of `run[list]` whose `name` is `name`; panics naming
/// what is missing.
fn named<'a>(run: &'a Value, list: &str, name: &str) -> &'a Value {
    run[list]
        .as_array()
        .unwrap_or_else(|| panic!("no {list} in {run}"))
        .iter()
        .find(|i| i["name"] == name)
        .unwrap_or_else(|| panic!("no {list} entry {name}: {}", run[list]))
}

/// The invariant `name` of `run` (`{name, ok, violations, detail, ...}`).
pub fn invariant<'a>(run: &'a Value, name: &str) -> &'a Value {
    named(run, "invariants", name)
}

/// Violations of invariant `name` in `run`.
pub fn violations_of(run: &Value, name: &str) -> u64 {
    invariant(run, name)["violations"].as_u64().unwrap()
}

/// The transaction type `name` of `run` (`{name, committed, failed, ...}`).
pub fn tx_type<'a>(run: &'a Value, name: &str) -> &'a Value {
    named(run, "transactions", name)
}
