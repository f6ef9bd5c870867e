//! Differential tests of isobench's pgbench expression language against
//! the installed `pgbench` binary, on a server started through the library
//! (`ISOBENCH_TEST_PG_BIN=DIR` runs them against another build).
//!
//! - Values: one script of `\set vN debug(expr)` lines runs once under
//!   `pgbench --random-seed 42 -c 1`; isobench evaluates the same lines in
//!   the same order with the client random state pgbench would have. Every
//!   `debug()` line must match exactly, random draws included.
//! - Errors: each bad expression runs alone; pgbench's message (parse or
//!   run time) must be isobench's message or its start.
//! - Distributions: 4000 draws of each random function by pgbench (seed 7)
//!   and by isobench (seed 8) must agree in range, mean and shape.

use crate::common;

use std::collections::HashMap;
use std::process::Output;

use common::*;
use isobench::pgbench::expr::{Env, EvalError, Expr, Value};
use isobench::pgbench::prng::Prng;
use isobench::pgbench::run::client_seeds;
use isobench::pgbench::script::{self, CommandKind};
use isobench::postgres::{self, ManagedServer};

struct Pgbench {
    server: ManagedServer,
    dir: std::path::PathBuf,
    _keep: tempfile::TempDir,
}

impl Pgbench {
    fn start(name: &str) -> Pgbench {
        let (keep, dir) = out_dir(name);
        std::fs::create_dir_all(&dir).unwrap();
        // ISOBENCH_TEST_PG_BIN: another build's binaries (e.g. 18).
        let server = Server::new(&dir).bin_from_env().start();
        Pgbench {
            server,
            dir,
            _keep: keep,
        }
    }

    /// Runs `script` with pgbench, no vacuum, plus `args`.
    fn run(&self, script: &str, args: &[&str]) -> Output {
        let path = self.dir.join("script.sql");
        std::fs::write(&path, script).unwrap();
        std::process::Command::new(self.server.bin_dir().join("pgbench"))
            .args(["-h", self.server.socket_dir().to_str().unwrap()])
            .args([
                "-p",
                &self.server.port().to_string(),
                "-U",
                postgres::SUPERUSER,
            ])
            .args(["-n", "-f", path.to_str().unwrap()])
            .args(args)
            .arg("postgres")
            .output()
            .expect("pgbench runs")
    }
}

/// The `debug()` lines of pgbench's stderr, without their prefix.
fn debug_lines(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("debug(script=0,command="))
        .map(|l| l.split_once("): ").expect("debug line").1.to_string())
        .collect()
}

/// A client's variables as pgbench keeps them: text (from -D) until an
/// expression reads it, or a value.
struct Client {
    text: HashMap<String, String>,
    values: HashMap<String, Value>,
    prng: Prng,
    debug: Vec<String>,
}

impl Client {
    /// Client 0 of 1 under `--random-seed seed`, with `-D` texts.
    fn new(seed: u64, defines: &[(&str, &str)]) -> Client {
        let (client_seed, default_seed) = client_seeds(seed, 1, 0);
        let mut values = HashMap::new();
        values.insert("default_seed".to_string(), Value::Int(default_seed as i64));
        values.insert("random_seed".to_string(), Value::Int(seed as i64));
        values.insert("client_id".to_string(), Value::Int(0));
        values.insert("scale".to_string(), Value::Int(1));
        Client {
            text: defines
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            values,
            prng: Prng::seed(client_seed),
            debug: Vec::new(),
        }
    }

    /// Runs the `\set` commands of `script` as pgbench would; the first
    /// error stops it.
    fn run(&mut self, script: &script::Script) -> Result<(), EvalError> {
        for c in &script.commands {
            let CommandKind::Set { name, expr, .. } = &c.kind else {
                panic!("only \\set in these scripts");
            };
            let v = Expr::parse(expr).expect("parsed").eval(self)?;
            self.values.insert(name.clone(), v);
        }
        Ok(())
    }
}

impl Env for Client {
    fn var(&self, name: &str) -> Result<Value, EvalError> {
        match (self.values.get(name), self.text.get(name)) {
            (Some(v), _) => Ok(*v),
            (None, Some(t)) => Value::from_text(name, t),
            (None, None) => Err(EvalError::Undefined(name.into())),
        }
    }
    fn rng(&mut self) -> &mut Prng {
        &mut self.prng
    }
    fn debug(&mut self, v: &Value) {
        self.debug.push(v.debug_text());
    }
}

const DEFINES: &[(&str, &str)] = &[
    ("txt", "12"),
    ("tb", "yes"),
    ("tf", "OFF"),
    ("tn", "null"),
    ("td", "1.5e3"),
    ("tneg", "-7"),
];

/// Every operator and function, edge values, NULLs, laziness, random
/// draws and variables, in one script.
const VALUES: &[&str] = &[
    // arithmetic and precedence
    "1 + 2 * 3",
    "(1 + 2) * 3",
    "-2 * 3",
    "10 - 2 - 3",
    "+5",
    "- -5",
    "-(3)",
    "7 / 2",
    "-7 / 2",
    "7 % 3",
    "-7 % 2",
    "7 % -3",
    "5 / -1",
    "-9223372036854775808 % -1",
    "9223372036854775807",
    "-9223372036854775808",
    "-9223372036854775807 - 1",
    "9223372036854775807 * -1",
    "4611686018427387903 * 2",
    "5.5 % 2",
    "1.5 + 1",
    "1 / 2.0",
    "1.0 / 0",
    "-1.0 / 0",
    "0.1 + 0.2",
    "1e300 * 1e10",
    "2.5e-3",
    ".5",
    "3.",
    "1e3",
    "123456789.123456789",
    "1.0 * 9007199254740993",
    // bit operators
    "~0",
    "~1 + 2",
    "~1 | 2",
    "7 # 3",
    "12 & 10",
    "12 | 3",
    "1 | 2 + 4",
    "1 << 62",
    "1 << 63",
    "-8 >> 1",
    "-1 >> 63",
    "5.6 & 7",
    // comparisons
    "1 = 1.0",
    "1 <> 2",
    "1 != 1",
    "1 < 2",
    "2 <= 2",
    "3 > 2",
    "2 >= 3",
    "1.5 < 2",
    // NULL and booleans
    "NULL",
    "null + 1",
    "NULL IS NULL",
    "1 IS NULL",
    "1 ISNULL",
    "NULL NOTNULL",
    "1 IS NOT NULL",
    "true IS TRUE",
    "1 IS TRUE",
    "false IS NOT FALSE",
    "NULL IS TRUE",
    "NOT true",
    "NOT NULL",
    "NOT 1 = 2",
    "NOT 1 IS NULL",
    "true AND false",
    "true AND NULL",
    "NULL AND false",
    "false AND NULL",
    "true OR NULL",
    "NULL OR true",
    "false OR false",
    "not true and false",
    "true or false and false",
    "1 + 1 IS NULL",
    "TRUE",
    "False",
    // CASE and laziness
    "CASE WHEN 1 > 2 THEN 1 WHEN 2 > 1 THEN 2 ELSE 3 END",
    "CASE WHEN false THEN 1 END",
    "CASE WHEN 0.0 THEN 1 ELSE 2 END",
    "CASE WHEN NULL THEN 1 ELSE 2 END",
    "CASE WHEN 7 THEN 1 ELSE 2 END",
    "case when true then 1 else 1/0 end",
    "false AND 1/0 = 0",
    "true OR 1/0 = 0",
    "NULL AND 1/0 = 0",
    "CASE WHEN 1 = 1 THEN CASE WHEN false THEN 1 ELSE 2.5 END END",
    // functions
    "abs(-5)",
    "abs(-5.5)",
    "abs(-9223372036854775807)",
    "debug(1) + debug(2.5)",
    "debug(NULL IS NULL)",
    "double(3)",
    "double(5) / 2",
    "int(2.5)",
    "int(3.5)",
    "int(-2.5)",
    "int(1.0e18)",
    "int(-9.2e18)",
    "int(NULL)",
    "exp(1)",
    "exp(-745.2)",
    "ln(10)",
    "ln(0)",
    "ln(-1)",
    "sqrt(2)",
    "sqrt(-1)",
    "pi()",
    "PI()",
    "pow(2, 10)",
    "power(2, 0.5)",
    "pow(-8, 1.0/3)",
    "pow(10, 400)",
    "greatest(1, 5, 3)",
    "least(1, 5, 3)",
    "greatest(1, 2.5, 2)",
    "least(3, -1.5)",
    "greatest(NULL, 1)",
    "least(7)",
    "mod(-7, 3)",
    "mod(7.6, 3)",
    "hash(0)",
    "hash(1)",
    "hash(-1)",
    "hash(9223372036854775807)",
    "hash(-9223372036854775808)",
    "hash(42, 0)",
    "hash(42, -1)",
    "hash(1.5)",
    "hash_murmur2(123, 456)",
    "hash_fnv1a(0)",
    "hash_fnv1a(1, 2)",
    "hash_fnv1a(-9223372036854775808, 9223372036854775807)",
    "hash_fnv1a(NULL)",
    "permute(0, 10)",
    "permute(9, 10)",
    "permute(5, 10, 123)",
    "permute(-1, 10, 1)",
    "permute(12345, 1000000, 42)",
    "permute(7, 1)",
    "permute(3, 2, 5)",
    "permute(3, 3, 5)",
    "permute(9223372036854775806, 9223372036854775807, 1)",
    "permute(1, 4611686018427387905, -7)",
    "permute(100, 1000, :default_seed)",
    // random draws, in order from the client's generator
    "random(1, 10)",
    "random(-5, 5)",
    "random(1, 1)",
    "random(0, 9223372036854775806)",
    "random(-9223372036854775806, 0)",
    "random_exponential(1, 100, 2.5)",
    "random_exponential(-1000, 1000, 0.1)",
    "random_gaussian(1, 100, 2.5)",
    "random_gaussian(0, 1000000, 10)",
    "random_zipfian(1, 100, 1.5)",
    "random_zipfian(1, 1000000, 1.001)",
    "random_zipfian(1, 10, 5)",
    "random(1, 6) + random(1, 6)",
    // variables
    ":default_seed",
    ":client_id",
    ":random_seed",
    ":v1 + :v2",
    ":txt + 1",
    ":tb AND true",
    ":tf OR false",
    ":tn IS NULL",
    ":td * 2",
    ":tneg * 1.5",
];

#[test]
fn values_match_pgbench_exactly() {
    let pg = Pgbench::start("pgbench-values");
    let text: String = VALUES
        .iter()
        .enumerate()
        .map(|(i, e)| format!("\\set v{} debug({e})\n", i + 1))
        .collect();
    let mut args = vec!["-t", "1", "-c", "1", "--random-seed", "42"];
    let defines: Vec<String> = DEFINES.iter().map(|(k, v)| format!("{k}={v}")).collect();
    for d in &defines {
        args.extend(["-D", d]);
    }
    let out = pg.run(&text, &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "pgbench failed: {stderr}");
    let theirs = debug_lines(&stderr);

    let parsed = script::parse("values.sql", &text, 1).expect("isobench parses the corpus");
    let mut ours = Client::new(42, DEFINES);
    ours.run(&parsed).expect("isobench evaluates the corpus");
    assert_eq!(ours.debug.len(), theirs.len(), "number of debug() lines");
    let mut mismatches = Vec::new();
    // debug() lines come in command order; map each back to its expression.
    let mut k = 0;
    for (i, e) in VALUES.iter().enumerate() {
        let n = 1 + e.matches("debug(").count();
        for _ in 0..n {
            if ours.debug[k] != theirs[k] {
                mismatches.push(format!(
                    "v{} = {e}: pgbench {} / isobench {}",
                    i + 1,
                    theirs[k],
                    ours.debug[k]
                ));
            }
            k += 1;
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

/// Expressions pgbench refuses: at parse time (`file:1: message in
/// command "set"`) or at run time (the client aborts after
/// `pgbench: error: message`).
const ERRORS: &[&str] = &[
    // parse
    "foo(1)",
    "abs(1, 2)",
    "pi(1)",
    "hash()",
    "hash(1, 2, 3)",
    "permute(1)",
    "permute(1, 2, 3, 4)",
    "least()",
    "1 +",
    "1 < 2 < 3",
    "9223372036854775808",
    "100000000000000000000",
    "1.0E309",
    ".1E310",
    "1 @ 2",
    "(1",
    "CASE END",
    "CASE WHEN true THEN 1",
    "1 IS 2",
    "1 2",
    // run time
    "1 / 0",
    "1 % 0",
    "mod(5, 0)",
    "9223372036854775807 + 1",
    "-9223372036854775808 - 1",
    "-(-9223372036854775808)",
    "4611686018427387904 * 2",
    "-9223372036854775808 / -1",
    "true + 1",
    "1 < true",
    "(1 < 2) = (2 < 3)",
    "1 AND true",
    "true AND 1",
    "NOT 1",
    "int(1e19)",
    "int(-1.0/0)",
    "int(true)",
    "double(false)",
    "random(5, 1)",
    "random(-9223372036854775808, 9223372036854775807)",
    "random_gaussian(1, 10, 1.5)",
    "random_exponential(1, 10, 0)",
    "random_zipfian(1, 10, 1)",
    "random_zipfian(1, 10, 1001)",
    "permute(1, 0)",
    "hash(true)",
    ":nope + 1",
    ":bad + 1",
];

#[test]
fn errors_match_pgbench_messages() {
    let pg = Pgbench::start("pgbench-errors");
    let mut mismatches = Vec::new();
    for e in ERRORS {
        let text = format!("\\set x {e}\n");
        let out = pg.run(&text, &["-t", "1", "-D", "bad=abc"]);
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        // pgbench's message: a parse error names the file and command, a
        // run-time error comes first among the client's errors.
        let theirs = stderr
            .lines()
            .find_map(|l| {
                let m = l.strip_prefix("pgbench: error: ")?;
                match m.split_once(".sql:1: ") {
                    Some((_, rest)) => rest.strip_suffix(" in command \"set\"").map(str::to_string),
                    None => Some(m.to_string()),
                }
            })
            .unwrap_or_else(|| panic!("{e}: pgbench accepted it: {stderr}"));
        let ours = match script::parse("e.sql", &text, 1) {
            Err(err) => err
                .message
                .strip_prefix("e.sql:1: ")
                .and_then(|m| m.strip_suffix(" in command \"set\""))
                .expect("names the file and command")
                .to_string(),
            Ok(parsed) => Client::new(1, &[("bad", "abc")])
                .run(&parsed)
                .expect_err("isobench must refuse it too")
                .to_string(),
        };
        if !ours.starts_with(&theirs) {
            mismatches.push(format!("{e}: pgbench '{theirs}' / isobench '{ours}'"));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

/// Draws of each random function by pgbench and by isobench with
/// different seeds: same support, means within 4 standard errors of each
/// other, and the same shape by a two-sample Kolmogorov-Smirnov test at
/// the 0.1 % level (critical D = 1.95 sqrt((n + m) / (n m))).
#[test]
fn random_distributions_match_pgbench() {
    const N: usize = 4000;
    let funcs = [
        ("random(1, 50)", 1, 50),
        ("random_exponential(1, 50, 4)", 1, 50),
        ("random_gaussian(1, 50, 3)", 1, 50),
        ("random_zipfian(1, 50, 1.2)", 1, 50),
    ];
    let text: String = funcs
        .iter()
        .enumerate()
        .map(|(i, (f, _, _))| format!("\\set r{i} debug({f})\n"))
        .collect();
    let pg = Pgbench::start("pgbench-random");
    let out = pg.run(
        &text,
        &["-t", &N.to_string(), "-c", "1", "--random-seed", "7"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines = debug_lines(&stderr);
    assert_eq!(lines.len(), N * funcs.len());

    let parsed = script::parse("random.sql", &text, 1).unwrap();
    let mut ours = Client::new(8, &[]);
    for _ in 0..N {
        ours.run(&parsed).unwrap();
    }
    let int = |s: &String| -> f64 { s.strip_prefix("int ").expect("an int").parse().unwrap() };
    for (k, (f, lo, hi)) in funcs.iter().enumerate() {
        let pick = |all: &[String]| -> Vec<f64> {
            all.iter().skip(k).step_by(funcs.len()).map(int).collect()
        };
        let (a, b) = (pick(&lines), pick(&ours.debug));
        for x in a.iter().chain(&b) {
            assert!(
                (*lo as f64..=*hi as f64).contains(x),
                "{f}: {x} out of range"
            );
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let var = |v: &[f64]| {
            let m = mean(v);
            v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64
        };
        let se = ((var(&a) + var(&b)) / N as f64).sqrt();
        assert!(
            (mean(&a) - mean(&b)).abs() < 4.0 * se,
            "{f}: means {} (pgbench) and {} (isobench), se {se}",
            mean(&a),
            mean(&b)
        );
        // KS statistic over the integer support.
        let cdf = |v: &[f64], x: i64| {
            v.iter().filter(|&&y| y <= x as f64).count() as f64 / v.len() as f64
        };
        let d = (*lo..=*hi)
            .map(|x| (cdf(&a, x) - cdf(&b, x)).abs())
            .fold(0.0, f64::max);
        let crit = 1.95 * ((2 * N) as f64 / (N * N) as f64).sqrt();
        assert!(d < crit, "{f}: KS D = {d:.4} >= {crit:.4}");
    }
}
