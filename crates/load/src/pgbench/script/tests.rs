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
        text,
        variables,
        store,
    } = &k[0]
    else {
        panic!()
    };
    // As pgbench sends it: from the first word, comments kept, to the `;`.
    assert_eq!(
        text,
        "SELECT 'a;b', \"x;y\", E'it\\'s;' -- trailing; comment\n  FROM t /* c; /* nested; */ */ WHERE v = :v::int;"
    );
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
    let CommandKind::Sql { text, .. } = &k[2] else {
        panic!()
    };
    assert_eq!(text, "SELECT $1, 2 ; SELECT 3;");
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

/// pgbench 15's words and layout (pgbench.c `syntax_error`,
/// `ConditionError`): `FILE:LINE: msg (more) in command "name"`, the line,
/// a caret under the column when known.
#[test]
fn errors_are_worded_and_laid_out_as_pgbench_does() {
    let e = err("SELECT 1;\n  \\bogus 1\n");
    assert!(
        e.starts_with("t.sql:2: invalid command in command \"bogus\"\n  \\bogus 1\n("),
        "{e}"
    );
    assert_eq!(
        err("\\set i 1 +\n"),
        "t.sql:1: syntax error in command \"set\"\n\\set i 1 +\n          ^ error found here\n(syntax error at end of expression: expected an expression)"
    );
    assert!(
        err("\\set i foo(1)")
            .starts_with("t.sql:1: unexpected function name (foo) in command \"set\"\n")
    );
    assert!(
        err("\\set i least()")
            .contains("at least one argument expected (least) in command \"set\"")
    );
    assert!(err("\\set i ;").contains("unexpected character (;) in command \"set\""));
    assert_eq!(
        err("\\set"),
        "t.sql:1: missing argument in command \"set\"\n\\set"
    );
    assert!(err("\\set x").starts_with("t.sql:1: syntax error in command \"set\""));
    assert!(err("\\if\n\\endif\n").starts_with("t.sql:1: syntax error in command \"if\""));
    assert_eq!(
        err("\\sleep 1 week"),
        "t.sql:1: unrecognized time unit, must be us, ms or s (week) in command \"sleep\"\n\\sleep 1 week\n         ^ error found here"
    );
    assert!(
        err("\\sleep x")
            .contains("invalid sleep time, must be an integer (x) in command \"sleep\"")
    );
    assert!(err("\\sleep too many args").contains("too many arguments in command \"sleep\""));
    assert_eq!(
        err("\\sleep"),
        "t.sql:1: missing argument in command \"sleep\"\n\\sleep"
    );
    assert_eq!(
        err("\\shell"),
        "t.sql:1: missing command in command \"shell\"\n\\shell"
    );
    assert!(err("\\setshell var").contains("missing argument in command \"setshell\""));
    assert!(err("\\else 1").contains("unexpected argument in command \"else\""));
    assert_eq!(
        err("\\if true\nSELECT 1;\n"),
        "condition error in script \"t.sql\" command 3: \\if without matching \\endif"
    );
    assert!(err("\\endif").contains("command 1: \\endif without matching \\if"));
    assert!(err("\\if 1\n\\else\n\\elif 2\n\\endif").contains("command 3: \\elif after \\else"));
    assert_eq!(err("\\gset"), "t.sql:1: \\gset must follow an SQL command");
    assert!(
        err("SELECT 1 AS i \\gset\n\\gset")
            .contains("\\gset must follow an SQL command (SELECT 1 AS i")
    );
    assert!(err("SELECT 1 \\gset a b").contains("too many arguments in command \"gset\""));
    assert_eq!(
        err("-- only a comment\n"),
        "empty command list for script \"t.sql\""
    );
    // Quotes and comments are still checked.
    assert!(err("SELECT 'x;\n").contains("t.sql:1: unterminated quoted string"));
    assert!(err("/* x").contains("unterminated /* comment"));
    assert!(err("SELECT $a$ x;").contains("unterminated dollar-quoted string $a$"));
}

/// pgbench takes what it takes: a last command without `;`, SQL ended by
/// a backslash command, `\\shell`, pipelines checked only when they run.
#[test]
fn pgbench_scripts_parse_as_pgbench_parses_them() {
    let kinds = |t: &str| {
        parse("t.sql", t, 1)
            .unwrap()
            .commands
            .into_iter()
            .map(|c| c.kind)
            .collect::<Vec<_>>()
    };
    let k = kinds("SELECT 1 \\sleep 1\nSELECT 2");
    assert!(matches!(&k[0], CommandKind::Sql { sql, .. } if sql == "SELECT 1"));
    assert!(matches!(&k[1], CommandKind::Sleep { .. }));
    assert!(matches!(&k[2], CommandKind::Sql { sql, .. } if sql == "SELECT 2"));
    let k = kinds("SELECT 1;\n\\gset p_\n\\setshell v echo 1\n\\sleep 10ms\n\\startpipeline\n");
    assert!(matches!(&k[0], CommandKind::Sql { store: Some(Store::Gset(p)), .. } if p == "p_"));
    assert!(
        matches!(&k[1], CommandKind::Shell { set: Some(v), words } if v == "v" && words == &["echo", "1"])
    );
    assert_eq!(
        k[2],
        CommandKind::Sleep {
            amount: SleepAmount::Literal(10),
            unit_us: 1000
        }
    );
    assert_eq!(k[3], CommandKind::StartPipeline);
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
