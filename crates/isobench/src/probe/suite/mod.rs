//! `isobench anomalies --spec FILE`: runs PostgreSQL isolation-tester spec
//! files unchanged and writes what `isolationtester` would print, so a
//! PostgreSQL-compatible database can be checked against PostgreSQL's
//! isolation suite (`src/test/isolation`) without building PostgreSQL.
//!
//! Data flow: the `--spec` arguments (files, directories, an
//! `isolation_schedule`) are resolved and parsed ([`resolve`]) before
//! anything starts; each spec then runs on its own connections
//! ([`tester::Tester`]), its output goes to `DIR/NAME.out`, and with
//! `--expected DIR` it is compared with `DIR/NAME.out` ([`compare`]).
//!
//! Sources: `src/test/isolation/README` (the spec language, "every
//! permutation" when a spec lists none), `isolationtester.c`
//! (`run_all_permutations_recurse` for their order) and `pg_regress.c` /
//! `isolation_main.c` (the schedule format `test: NAME...`, alternative
//! expected files `NAME_1.out`...).

pub mod compare;
pub mod format;
pub mod tester;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use tokio_util::sync::CancellationToken;

use super::exec::WaitCheck;
use super::spec::{self, PermStep, SpecError, StepRef, Syntax};
use crate::model::{BadInput, TargetConfig};
use crate::{postgres, store};
use tester::{Sink, Stop, Tester};

/// The most permutations a spec without `permutation` lines may expand
/// to unless `--max-permutations` says more. PostgreSQL's serializable
/// specs stay well below (receipt-report: 210, two-ids: 90).
pub const DEFAULT_MAX_PERMUTATIONS: u64 = 1000;

/// `isobench anomalies --spec ...`.
#[derive(Debug, Clone)]
pub struct SuiteConfig {
    /// Spec files, directories of them, or schedule files.
    pub specs: Vec<PathBuf>,
    /// A directory of expected outputs (`NAME.out`).
    pub expected: Option<PathBuf>,
    pub max_permutations: u64,
    /// isolationtester's per-step limit: a step is cancelled after it and
    /// the spec given up after twice it.
    pub step_timeout: Duration,
    pub target: TargetConfig,
    /// Where the `NAME.out` files go (default `results/isolation-<time>`).
    pub out: Option<PathBuf>,
    pub quiet: bool,
}

/// Input that stops the command before it starts.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    #[error("--spec {arg}: {reason}")]
    Arg { arg: String, reason: String },
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error("{file}:{line}: {reason}")]
    Schedule {
        file: String,
        line: usize,
        reason: String,
    },
    #[error(
        "{file}: no `permutation` line, and every interleaving of its steps makes {count} permutations, \
         more than --max-permutations {max}; raise it to run them all"
    )]
    TooManyPermutations {
        file: String,
        count: String,
        max: u64,
    },
    #[error("--expected {0}: not a directory")]
    Expected(String),
}

/// A parsed spec and the permutations it runs.
#[derive(Debug, Clone)]
pub struct SpecFile {
    /// The file name without `.spec`: the output is `NAME.out`.
    pub name: String,
    pub path: PathBuf,
    pub syntax: Syntax,
    pub permutations: Vec<Vec<PermStep>>,
}

/// How many interleavings the steps of sessions with `steps` steps each
/// have: the multinomial coefficient (n1+...+nk)! / (n1!...nk!). `None`
/// when it does not fit in a u64.
pub fn interleavings(steps: &[usize]) -> Option<u64> {
    let mut total: u128 = 1;
    let mut n: u128 = 0;
    for &k in steps {
        // Multiply by C(n + k, k), one factor at a time (exact at each step).
        for i in 1..=k as u128 {
            n += 1;
            total = total.checked_mul(n)? / i;
        }
    }
    u64::try_from(total).ok()
}

/// Every interleaving of the sessions' steps, in isolationtester's order:
/// at each position the sessions are tried in the order of the file.
pub fn all_permutations(syntax: &Syntax) -> Vec<Vec<PermStep>> {
    fn recurse(
        syntax: &Syntax,
        piles: &mut [usize],
        acc: &mut Vec<StepRef>,
        out: &mut Vec<Vec<PermStep>>,
    ) {
        let mut found = false;
        for s in 0..syntax.sessions.len() {
            if piles[s] < syntax.sessions[s].steps.len() {
                acc.push(StepRef {
                    session: s,
                    step: piles[s],
                });
                piles[s] += 1;
                recurse(syntax, piles, acc, out);
                piles[s] -= 1;
                acc.pop();
                found = true;
            }
        }
        if !found {
            out.push(
                acc.iter()
                    .map(|&step| PermStep {
                        step,
                        blockers: Vec::new(),
                    })
                    .collect(),
            );
        }
    }
    let mut out = Vec::new();
    let mut piles = vec![0; syntax.sessions.len()];
    recurse(syntax, &mut piles, &mut Vec::new(), &mut out);
    out
}

/// Parses one spec file and lists its permutations.
///
/// Errors: unreadable file, syntax (`file:line:col`), or more
/// interleavings than `max`.
pub fn load(path: &Path, max: u64) -> Result<SpecFile, SuiteError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| SuiteError::Arg {
        arg: file.clone(),
        reason: format!("cannot read the file: {e}"),
    })?;
    let syntax = spec::parse_syntax(&text, &file)?;
    let permutations = if syntax.permutations.is_empty() {
        let counts: Vec<usize> = syntax.sessions.iter().map(|s| s.steps.len()).collect();
        match interleavings(&counts) {
            Some(n) if n <= max => all_permutations(&syntax),
            n => {
                return Err(SuiteError::TooManyPermutations {
                    file,
                    count: n.map_or_else(|| "more than 2^64".into(), |n| n.to_string()),
                    max,
                });
            }
        }
    } else {
        syntax.permutations.clone()
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().trim_end_matches(".spec").to_string())
        .unwrap_or_else(|| file.clone());
    Ok(SpecFile {
        name,
        path: path.to_path_buf(),
        syntax,
        permutations,
    })
}

/// Whether `text` is a pg_regress schedule: its first line that is
/// neither blank nor a comment starts with `test:`.
fn is_schedule(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .is_some_and(|l| l.starts_with("test:"))
}

/// The spec files a schedule names, in order: `test: a b` lines, each
/// name found as `specs/NAME.spec` next to the schedule (PostgreSQL's
/// layout) or `NAME.spec` beside it.
fn schedule_specs(path: &Path, text: &str) -> Result<Vec<PathBuf>, SuiteError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let Some(names) = l.strip_prefix("test:") else {
            return Err(SuiteError::Schedule {
                file: path.display().to_string(),
                line: i + 1,
                reason: format!("expected `test: NAME...`, found `{l}`"),
            });
        };
        for name in names.split_whitespace() {
            let candidates = [
                dir.join("specs").join(format!("{name}.spec")),
                dir.join(format!("{name}.spec")),
            ];
            let Some(found) = candidates.iter().find(|c| c.is_file()) else {
                return Err(SuiteError::Schedule {
                    file: path.display().to_string(),
                    line: i + 1,
                    reason: format!(
                        "no spec file for test {name} (looked for {} and {})",
                        candidates[0].display(),
                        candidates[1].display()
                    ),
                });
            };
            out.push(found.clone());
        }
    }
    Ok(out)
}

/// Resolves `--spec` arguments: a spec file, a directory (its `*.spec`
/// files by name), or a schedule file. Everything is parsed here, before
/// a server starts.
///
/// Errors: see [`SuiteError`]; also two specs with the same name (their
/// outputs would collide).
pub fn resolve(args: &[PathBuf], max: u64) -> Result<Vec<SpecFile>, SuiteError> {
    let mut paths = Vec::new();
    for a in args {
        let arg_err = |reason: String| SuiteError::Arg {
            arg: a.display().to_string(),
            reason,
        };
        if a.is_dir() {
            let mut specs: Vec<PathBuf> = std::fs::read_dir(a)
                .map_err(|e| arg_err(format!("cannot list the directory: {e}")))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "spec"))
                .collect();
            if specs.is_empty() {
                return Err(arg_err("no *.spec file in this directory".into()));
            }
            specs.sort();
            paths.extend(specs);
        } else if a.is_file() {
            let text = std::fs::read_to_string(a)
                .map_err(|e| arg_err(format!("cannot read the file: {e}")))?;
            if a.extension().is_none_or(|x| x != "spec") && is_schedule(&text) {
                paths.extend(schedule_specs(a, &text)?);
            } else {
                paths.push(a.clone());
            }
        } else {
            return Err(arg_err("no such file or directory".into()));
        }
    }
    let mut out: Vec<SpecFile> = Vec::new();
    for p in paths {
        let spec = load(&p, max)?;
        if let Some(other) = out.iter().find(|s| s.name == spec.name) {
            return Err(SuiteError::Arg {
                arg: p.display().to_string(),
                reason: format!(
                    "another spec named {} ({}) is selected; their outputs would collide",
                    spec.name,
                    other.path.display()
                ),
            });
        }
        out.push(spec);
    }
    Ok(out)
}

/// How a spec's output compares with the expected one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Comparison {
    /// Equal to this expected file (`NAME.out` or an alternative).
    AsExpected(PathBuf),
    Differs(compare::Difference),
    /// No `NAME.out` in the expected directory.
    Missing(PathBuf),
}

/// One spec's run.
#[derive(Debug, Clone)]
pub struct SpecResult {
    pub name: String,
    pub permutations: usize,
    /// Where the spec stopped early, as isolationtester would have exited
    /// (the line is in the output).
    pub stopped: Option<String>,
    pub comparison: Option<Comparison>,
}

/// What the command did.
#[derive(Debug, Clone)]
pub struct Summary {
    pub dir: PathBuf,
    pub specs: Vec<SpecResult>,
    /// Interrupted before every spec ran.
    pub complete: bool,
    /// The output went to stdout as it came (one spec, not quiet).
    pub echoed: bool,
}

impl Summary {
    /// Specs that differ from (or lack) their expected output.
    pub fn differing(&self) -> impl Iterator<Item = &SpecResult> {
        self.specs.iter().filter(|s| {
            matches!(
                s.comparison,
                Some(Comparison::Differs(_) | Comparison::Missing(_))
            )
        })
    }
}

/// Compares an output with `DIR/NAME.out` and its alternatives
/// `NAME_1.out` ... `NAME_9.out` (as pg_regress accepts them); the
/// difference reported is the one that agrees longest.
pub fn compare_with(dir: &Path, name: &str, actual: &str) -> Comparison {
    let main = dir.join(format!("{name}.out"));
    let mut best: Option<compare::Difference> = None;
    let candidates =
        std::iter::once(main.clone()).chain((1..10).map(|i| dir.join(format!("{name}_{i}.out"))));
    let mut any = false;
    for path in candidates {
        let Ok(expected) = std::fs::read_to_string(&path) else {
            continue;
        };
        any = true;
        match compare::first_difference(&expected, actual) {
            None => return Comparison::AsExpected(path),
            Some(d) => {
                if best.as_ref().is_none_or(|b| d.index > b.index) {
                    best = Some(d);
                }
            }
        }
    }
    match best {
        Some(d) if any => Comparison::Differs(d),
        _ => Comparison::Missing(main),
    }
}

/// Where the specs run: a managed server gets a database like
/// pg_regress's (`isolation_regression`, from `template0`, messages and
/// formats in the C locale); an external target is used as given.
async fn database(t: &postgres::Target) -> Result<tokio_postgres::Config> {
    let admin = t.config(&t.admin_db());
    if !matches!(t, postgres::Target::Managed(_)) {
        return Ok(admin);
    }
    let c = postgres::connect(&admin).await?;
    // CREATE DATABASE cannot share a multi-statement query (an implicit
    // transaction) with the rest.
    c.batch_execute("CREATE DATABASE isolation_regression TEMPLATE template0")
        .await
        .context("creating database isolation_regression")?;
    c.batch_execute(
        "ALTER DATABASE isolation_regression SET lc_messages TO 'C';
         ALTER DATABASE isolation_regression SET lc_monetary TO 'C';
         ALTER DATABASE isolation_regression SET lc_numeric TO 'C';
         ALTER DATABASE isolation_regression SET lc_time TO 'C';
         ALTER DATABASE isolation_regression SET bytea_output TO 'hex';
         ALTER DATABASE isolation_regression SET timezone_abbreviations TO 'Default'",
    )
    .await
    .context("setting up database isolation_regression")?;
    Ok(t.config("isolation_regression"))
}

/// The connection settings of spec `name`'s connections: the
/// `application_name` `isolation/NAME`, as `pg_isolation_regress` gives
/// each test (`PGAPPNAME`, isolation_main.c), to which the tester appends
/// each session's name (so `isolation/NAME/s1`: specs such as
/// insert-conflict-specconflict find their sessions in `pg_stat_activity`
/// by it); a user's own `application_name` (the DSN's, or `PGAPPNAME`)
/// is kept instead.
pub fn spec_config(
    config: &tokio_postgres::Config,
    user_application_name: Option<&str>,
    name: &str,
) -> tokio_postgres::Config {
    let mut c = config.clone();
    if user_application_name.is_none() {
        c.application_name(format!("isolation/{name}"));
    }
    c
}

/// Runs one spec; its output text and where it stopped early, if it did.
async fn run_one(
    spec: &SpecFile,
    config: &tokio_postgres::Config,
    wait_check: WaitCheck,
    cfg: &SuiteConfig,
    cancel: &CancellationToken,
    echo: bool,
) -> Result<(String, Option<Stop>)> {
    let mut head = String::new();
    for name in spec.syntax.unused_steps() {
        head.push_str(&format!("unused step name: {name}\n"));
    }
    if echo {
        print!("{head}");
    }
    let sink = Sink { text: head, echo };
    let mut t = Tester::connect(
        &spec.syntax,
        config,
        wait_check,
        cfg.step_timeout,
        cancel.clone(),
        sink,
    )
    .await
    .with_context(|| format!("{}: connecting its sessions", spec.path.display()))?;
    match t.run(&spec.permutations).await {
        Ok(()) => Ok((std::mem::take(&mut t.sink.text), None)),
        Err(Stop::Server(e)) => anyhow::bail!("{}: {e}", spec.path.display()),
        Err(stop) => {
            let text = std::mem::take(&mut t.sink.text);
            t.cleanup().await;
            Ok((text, Some(stop)))
        }
    }
}

/// Runs the command: specs parsed first, then the target started, each
/// spec run and its output written (and compared). The managed server is
/// stopped before this returns.
///
/// Errors: bad input ([`SuiteError`], exit 2), an unusable results
/// directory, a target that does not start, a broken connection.
pub async fn run(cfg: &SuiteConfig, cancel: CancellationToken) -> Result<Summary> {
    let specs = resolve(&cfg.specs, cfg.max_permutations).map_err(BadInput::from_error)?;
    if let Some(e) = &cfg.expected
        && !e.is_dir()
    {
        return Err(BadInput::from_error(SuiteError::Expected(e.display().to_string())).into());
    }
    let marker = format!("{}.out", specs[0].name);
    let dir = store::results_dir(cfg.out.as_deref(), "isolation-", &marker)?;
    let sessions = specs
        .iter()
        .map(|s| s.syntax.sessions.len())
        .max()
        .unwrap_or(1);
    let target = postgres::start(
        &cfg.target,
        &dir.join(store::SERVER_LOG),
        sessions as u32 + 8,
    )
    .await?;
    let result = run_specs(cfg, &specs, &target, &dir, cancel).await;
    drop(target); // stops a managed server
    result
}

async fn run_specs(
    cfg: &SuiteConfig,
    specs: &[SpecFile],
    target: &postgres::Target,
    dir: &Path,
    cancel: CancellationToken,
) -> Result<Summary> {
    let config = database(target).await?;
    let wait_check = WaitCheck::detect(&postgres::connect(&config).await?).await?;
    let echo = specs.len() == 1 && !cfg.quiet;
    let mut summary = Summary {
        dir: dir.to_path_buf(),
        specs: Vec::new(),
        complete: true,
        echoed: echo,
    };
    for spec in specs {
        let config = spec_config(&config, target.user_application_name(), &spec.name);
        let (text, stop) = run_one(spec, &config, wait_check, cfg, &cancel, echo).await?;
        let output = dir.join(format!("{}.out", spec.name));
        store::write_atomic(&output, text.as_bytes())
            .with_context(|| format!("writing {}", output.display()))?;
        if matches!(stop, Some(Stop::Interrupted)) {
            summary.complete = false;
            break;
        }
        let comparison = cfg
            .expected
            .as_ref()
            .map(|d| compare_with(d, &spec.name, &text));
        summary.specs.push(SpecResult {
            name: spec.name.clone(),
            permutations: spec.permutations.len(),
            stopped: stop.map(|s| s.to_string()),
            comparison,
        });
    }
    Ok(summary)
}

fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// The summary: one line per spec, then with `--expected` "N of M specs
/// as expected", then where the outputs are.
pub fn report(summary: &Summary, with_expected: bool) -> String {
    let width = summary
        .specs
        .iter()
        .map(|s| s.name.len())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for s in &summary.specs {
        let what = match &s.comparison {
            None => plural(s.permutations, "permutation"),
            Some(Comparison::AsExpected(_)) => {
                format!("as expected ({})", plural(s.permutations, "permutation"))
            }
            Some(Comparison::Differs(d)) => format!("DIFFERS: {d}"),
            Some(Comparison::Missing(p)) => format!("DIFFERS: no expected output {}", p.display()),
        };
        out.push_str(&format!("{:<width$}  {what}\n", s.name));
    }
    if with_expected {
        let ok = summary
            .specs
            .iter()
            .filter(|s| matches!(s.comparison, Some(Comparison::AsExpected(_))))
            .count();
        out.push_str(&format!(
            "{ok} of {} specs as expected\n",
            summary.specs.len()
        ));
    }
    out.push_str(&format!("outputs: {}\n", summary.dir.display()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleavings_is_the_multinomial() {
        assert_eq!(interleavings(&[3, 3]), Some(20));
        assert_eq!(interleavings(&[2, 2, 3]), Some(210));
        assert_eq!(interleavings(&[2, 2, 2]), Some(90));
        assert_eq!(interleavings(&[1]), Some(1));
        assert_eq!(interleavings(&[40, 40, 40, 40]), None);
    }

    #[test]
    fn all_permutations_follow_isolationtester_order() {
        let s = spec::parse_syntax(
            "session a\nstep a1 { SELECT 1; }\nstep a2 { SELECT 2; }\nsession b\nstep b1 { SELECT 3; }\n",
            "x.spec",
        )
        .unwrap();
        let names: Vec<String> = all_permutations(&s)
            .iter()
            .map(|p| {
                p.iter()
                    .map(|x| s.step(x.step).name.clone())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        assert_eq!(names, ["a1 a2 b1", "a1 b1 a2", "b1 a1 a2"]);
    }

    #[test]
    fn resolve_reads_files_directories_and_schedules() {
        let dir = tempfile::tempdir().unwrap();
        let specs = dir.path().join("specs");
        std::fs::create_dir(&specs).unwrap();
        let one = "session s\nstep a { SELECT 1; }\nstep b { SELECT 2; }\n";
        std::fs::write(specs.join("one.spec"), one).unwrap();
        std::fs::write(
            specs.join("two.spec"),
            one.replace("session s", "session t"),
        )
        .unwrap();
        let sched = dir.path().join("isolation_schedule");
        std::fs::write(&sched, "# comment\ntest: two\ntest: one\n").unwrap();
        let names = |v: Vec<SpecFile>| v.into_iter().map(|s| s.name).collect::<Vec<_>>();
        assert_eq!(
            names(resolve(std::slice::from_ref(&sched), 10).unwrap()),
            ["two", "one"]
        );
        assert_eq!(
            names(resolve(std::slice::from_ref(&specs), 10).unwrap()),
            ["one", "two"]
        );
        let e = resolve(&[specs.join("one.spec"), specs.clone()], 10)
            .unwrap_err()
            .to_string();
        assert!(e.contains("outputs would collide"), "{e}");
        std::fs::write(&sched, "test: one\ntest: three\n").unwrap();
        let e = resolve(std::slice::from_ref(&sched), 10)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("isolation_schedule:2: no spec file for test three"),
            "{e}"
        );
        let many = "session a\nstep a1 {}\nstep a2 {}\nstep a3 {}\nsession b\nstep b1 {}\nstep b2 {}\nstep b3 {}\n";
        std::fs::write(specs.join("many.spec"), many).unwrap();
        let e = load(&specs.join("many.spec"), 19).unwrap_err().to_string();
        assert!(
            e.contains("makes 20 permutations, more than --max-permutations 19"),
            "{e}"
        );
        assert_eq!(
            load(&specs.join("many.spec"), 20)
                .unwrap()
                .permutations
                .len(),
            20
        );
    }
}
