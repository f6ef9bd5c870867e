//! Tests of script compilation and substitution.

use super::client::substitute;
use super::*;

#[test]
fn branches_resolve_to_the_next_marker_and_the_endif() {
    let s = script::parse(
        "t.sql",
        "\\if 0\nSELECT 1;\n\\elif 1\nSELECT 2;\n\\else\nSELECT 3;\n\\endif\nSELECT 4;\n",
        1,
    )
    .unwrap();
    let c = compile(s, 0).unwrap();
    assert_eq!((c.next[0], c.next[2], c.next[4]), (2, 4, 6));
    assert_eq!((c.end[0], c.end[2], c.end[4]), (6, 6, 6));
}

#[test]
fn substitution_keeps_undefined_variables() {
    let mut v = Vars::default();
    v.define("a", Var::Value(Value::Int(-5)));
    v.define("t", Var::Text("x y".into()));
    assert_eq!(
        substitute("SELECT :a, ':t', :zz::int", &v),
        "SELECT -5, 'x y', :zz::int"
    );
}

#[test]
fn bad_expressions_are_located_in_the_file() {
    let e = script::parse("t.sql", "SELECT 1;\n\\set x 1 +\n", 1).unwrap_err();
    assert_eq!((e.loc.line, e.loc.column), (2, 11), "{e}");
    assert!(e.to_string().contains("expected an expression"), "{e}");
    let e = script::parse("t.sql", "\\set x 1 + \\\n  2 + foo(3)\n", 1).unwrap_err();
    assert_eq!((e.loc.line, e.loc.column), (2, 7), "{e}");
    assert_eq!(
        e.message,
        "t.sql:1: unexpected function name (foo) in command \"set\""
    );
}

#[test]
fn commands_are_labelled_by_their_first_clause_naming_a_table() {
    let upd = "UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;";
    assert_eq!(command_label(upd, upd), upd);
    let cte = "WITH upd AS (\n  UPDATE pgbench_accounts SET abalance = abalance + 1\n  WHERE aid = :aid RETURNING abalance)\nSELECT abalance FROM upd;";
    assert_eq!(
        command_label("WITH upd AS (", cte),
        "WITH ... UPDATE pgbench_accounts"
    );
    // Strings, comments and subqueries do not count as tables.
    let tricky =
        "SELECT 'from nowhere' -- FROM comment\n  FROM (SELECT 1) s JOIN ONLY public.t ON true;";
    assert_eq!(
        table_clause(tricky),
        Some(("JOIN".to_string(), "public.t".to_string()))
    );
    assert_eq!(table_clause("SELECT 1;"), None);
    assert!(!explainable("BEGIN;"));
    assert!(!explainable("SELECT pg_sleep(0);"));
    assert!(explainable(cte));
}

#[test]
fn script_statements_are_explained_with_drawn_values() {
    let s = script::parse(
        "t.sql",
        "\\set aid random(1, 100000 * :scale)\n\\set delta 7\nBEGIN;\n\
         UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\n\
         SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\nEND;\n",
        1,
    )
    .unwrap();
    let data = Data::Tpcb {
        scale: 3,
        foreign_keys: false,
        then: None,
        base: HistoryBase::default(),
    };
    let w = ScriptWorkload::new(vec![s], QueryMode::Prepared, Vec::new(), data, 1).unwrap();
    let stmts = w.explain_statements();
    let labels: Vec<&str> = stmts.iter().map(|e| e.label.as_ref()).collect();
    assert_eq!(
        labels,
        [
            "UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;",
            "SELECT abalance FROM pgbench_accounts WHERE aid = :aid;"
        ]
    );
    // The same value of :aid in both, within the scale's range; :delta 7.
    let aid = |sql: &str| -> i64 {
        sql.rsplit("aid = ")
            .next()
            .unwrap()
            .trim_end_matches(';')
            .parse()
            .unwrap()
    };
    assert!(
        stmts[0].sql.contains("abalance + 7 WHERE"),
        "{}",
        stmts[0].sql
    );
    assert_eq!(aid(&stmts[0].sql), aid(&stmts[1].sql));
    assert!(
        (1..=300_000).contains(&aid(&stmts[0].sql)),
        "{}",
        stmts[0].sql
    );
    // Labels of plans are the step names failures are recorded under.
    assert_eq!(w.step_names(0)[3], labels[0]);
}

/// An attempt's assignments are taken back last first (a name set twice
/// returns to its first value, a new one is undefined again); kept ones
/// stay; a new invalid name is refused and changes nothing.
#[test]
fn undone_assignments_restore_the_kept_variables() {
    let int = |n| Var::Value(Value::Int(n));
    let mut v = Vars::default();
    v.define("a", int(1));
    assert!(v.assign("a", int(2)) && v.assign("a", int(3)) && v.assign("b", int(4)));
    assert!(!v.assign("a-b", int(5)));
    assert_eq!(v.get("a-b"), None);
    v.undo();
    assert_eq!((v.get("a"), v.get("b")), (Some(&int(1)), None));
    assert!(v.assign("b", int(6)));
    v.keep();
    assert!(v.assign("a", int(7)));
    v.undo();
    assert_eq!((v.get("a"), v.get("b")), (Some(&int(1)), Some(&int(6))));
    // A copy carries the variables, not the log.
    assert!(v.assign("a", int(8)));
    let mut copy = Vars::default();
    copy.clone_from(&v);
    copy.undo();
    assert_eq!(copy.get("a"), Some(&int(8)));
}
