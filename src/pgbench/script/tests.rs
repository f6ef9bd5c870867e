//! Tests of the script parser and the variable helpers.

use super::*;

fn kinds(text: &str) -> Vec<CommandKind> {
    parse("t.sql", text, 1)
        .unwrap()
        .commands
        .into_iter()
        .map(|c| c.kind)
        .collect()
}

fn err(text: &str) -> String {
    parse("t.sql", text, 1).unwrap_err().to_string()
}

#[test]
fn builtin_scripts_parse() {
    let s = builtin("tpcb-like", 1).unwrap();
    assert_eq!(s.name, "builtin: tpcb-like");
    assert_eq!(s.commands.len(), 11);
    let CommandKind::Set {
        name,
        expr,
        expr_loc,
    } = &s.commands[0].kind
    else {
        panic!()
    };
    assert_eq!(
        (name.as_str(), expr.as_str()),
        ("aid", "random(1, 100000 * :scale)")
    );
    assert_eq!(
        *expr_loc,
        Loc {
            line: 1,
            column: 10
        }
    );
    let CommandKind::Sql { variables, .. } = &s.commands[9].kind else {
        panic!()
    };
    assert_eq!(variables, &["tid", "bid", "aid", "delta"]);
    assert_eq!(builtin("select", 2).unwrap().weight, 2);
    assert!(builtin("s", 1).unwrap_err().contains("ambiguous"));
    assert!(
        builtin("tpcc", 1)
            .unwrap_err()
            .contains("tpcb-like, simple-update, select-only")
    );
    assert_eq!(split_weight("x.sql@3"), Ok(("x.sql", 3)));
    assert_eq!(split_weight("x.sql"), Ok(("x.sql", 1)));
    assert!(split_weight("x.sql@-1").is_err());
}

#[test]
fn sql_commands_span_lines_and_respect_quotes_comments_and_dollar_quotes() {
    let k = kinds(
        "-- a comment; with a semicolon\n\
         SELECT 'a;b', \"x;y\", E'it\\'s;' -- trailing; comment\n  FROM t /* c; /* nested; */ */ WHERE v = :v::int;\n\
         DO $fn$ BEGIN PERFORM 1; END $fn$;\n\
         SELECT $1, 2 \\; SELECT 3;\n",
    );
    assert_eq!(k.len(), 3);
    let CommandKind::Sql {
        sql,
        variables,
        store,
    } = &k[0]
    else {
        panic!()
    };
    assert!(
        sql.starts_with("SELECT 'a;b', \"x;y\", E'it\\'s;'"),
        "{sql}"
    );
    assert!(sql.contains("WHERE v = :v::int"), "{sql}");
    assert_eq!(variables, &["v"]);
    assert_eq!(store, &None);
    let CommandKind::Sql { sql, .. } = &k[1] else {
        panic!()
    };
    assert_eq!(sql, "DO $fn$ BEGIN PERFORM 1; END $fn$");
    let CommandKind::Sql { sql, .. } = &k[2] else {
        panic!()
    };
    assert_eq!(sql, "SELECT $1, 2 ; SELECT 3");
}

#[test]
fn meta_commands() {
    let k = kinds(
        "\\set x 1 + \\\n  2\n\
         \\sleep 10 ms\n\\sleep :d\n\
         \\if :x > 2\nSELECT 1 AS one \\gset p_\n\\elif false\nSELECT 2 \\aset\n\\else\n\\endif\n\
         \\startpipeline\nSELECT 1;\n\\syncpipeline\n\\endpipeline\n",
    );
    assert_eq!(
        k[0],
        CommandKind::Set {
            name: "x".into(),
            expr: "1 +    2".into(),
            expr_loc: Loc { line: 1, column: 8 }
        }
    );
    assert_eq!(
        k[1],
        CommandKind::Sleep {
            amount: SleepAmount::Literal(10),
            unit_us: 1000
        }
    );
    assert_eq!(
        k[2],
        CommandKind::Sleep {
            amount: SleepAmount::Variable("d".into()),
            unit_us: 1_000_000
        }
    );
    assert!(matches!(&k[3], CommandKind::If { expr, .. } if expr == ":x > 2"));
    assert!(
        matches!(&k[4], CommandKind::Sql { store: Some(Store::Gset(p)), sql, .. } if p == "p_" && sql == "SELECT 1 AS one")
    );
    assert!(matches!(&k[6], CommandKind::Sql { store: Some(Store::Aset(p)), .. } if p.is_empty()));
    assert_eq!(k.len(), 13);
}

#[test]
fn errors_name_file_line_column_and_show_the_line() {
    let e = err("SELECT 1;\n  \\bogus 1\n");
    assert!(
        e.starts_with("t.sql:2:3: unknown meta-command \\bogus"),
        "{e}"
    );
    assert!(e.ends_with("\n    \\bogus 1\n    ^"), "{e}");
    assert!(err("SELECT 1").contains("t.sql:1:1: SQL command not terminated"));
    assert!(err("SELECT 'x;\n").contains("t.sql:1:8: unterminated quoted string"));
    assert!(err("/* x").contains("unterminated /* comment"));
    assert!(err("SELECT $a$ x;").contains("unterminated dollar-quoted string $a$"));
    assert!(err("\\shell echo hi").contains("t.sql:1:1: \\shell is not supported"));
    assert!(err("\\setshell x echo 1").contains("\\setshell is not supported"));
    assert!(err("\\set").contains("missing variable name"));
    assert!(err("\\set x").contains("\\set: missing expression"));
    assert!(err("\\set 1-x 2").contains("is not a variable name"));
    assert!(err("\\sleep 1 h").contains("t.sql:1:10: \\sleep: unknown time unit 'h'"));
    assert!(err("\\sleep x").contains("not an integer or a :variable"));
    assert!(err("\\if true\nSELECT 1;\n").contains("t.sql:1:1: \\if without a matching \\endif"));
    assert!(err("\\endif").contains("\\endif without a matching \\if"));
    assert!(err("\\if 1\n\\else\n\\elif 2\n\\endif").contains("t.sql:3:1: \\elif after \\else"));
    assert!(err("\\else 1").contains("takes no argument"));
    assert!(err("\\gset").contains("must follow a SQL command"));
    assert!(err("SELECT 1 \\sleep 1").contains("inside a SQL command"));
    assert!(err("\\startpipeline\nSELECT 1;").contains("without \\endpipeline"));
    assert!(err("-- only a comment\n").contains("no commands"));
}

#[test]
fn variables_split_like_pgbench() {
    assert_eq!(
        split_variables("SELECT :a, ':b', x::text, :c_1+:a, :"),
        vec![
            Part::Text("SELECT "),
            Part::Var("a"),
            Part::Text(", '"),
            Part::Var("b"),
            Part::Text("', x::text, "),
            Part::Var("c_1"),
            Part::Text("+"),
            Part::Var("a"),
            Part::Text(", :"),
        ]
    );
    assert_eq!(variables("SELECT :a, :b, :a"), vec!["a", "b"]);
}

proptest::proptest! {
    #[test]
    fn never_panics(text in "(\\PC|\\\\|;|'|\\$|:|\n|/\\*|\\*/|--){0,80}") {
        let _ = parse("p.sql", &text, 1);
    }
}
