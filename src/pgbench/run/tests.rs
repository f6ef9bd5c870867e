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
    let c = compile(s).unwrap();
    assert_eq!((c.next[0], c.next[2], c.next[4]), (2, 4, 6));
    assert_eq!((c.end[0], c.end[2], c.end[4]), (6, 6, 6));
}

#[test]
fn substitution_keeps_undefined_variables() {
    let mut v = Vars::new();
    v.insert("a".into(), Var::Value(Value::Int(-5)));
    v.insert("t".into(), Var::Text("x y".into()));
    assert_eq!(
        substitute("SELECT :a, ':t', :zz::int", &v),
        "SELECT -5, 'x y', :zz::int"
    );
}

#[test]
fn bad_expressions_are_located_in_the_file() {
    let e = script::parse("t.sql", "SELECT 1;\n\\set x 1 +\n", 1).unwrap_err();
    assert_eq!((e.loc.line, e.loc.column), (2, 11), "{e}");
    assert!(e.message.contains("expected an expression"), "{e}");
    let e = script::parse("t.sql", "\\set x 1 + \\\n  2 + foo(3)\n", 1).unwrap_err();
    assert_eq!((e.loc.line, e.loc.column), (2, 7), "{e}");
    assert_eq!(e.message, "\\set: unexpected function name (foo)");
}
