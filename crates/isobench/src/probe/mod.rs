//! `isobench anomalies`: which isolation anomalies each level of the target
//! really prevents, and how (a wait on a lock, an error with its SQLSTATE,
//! or a snapshot that hides the other writes).
//!
//! A probe is a fixed interleaving of two or three sessions' steps in the
//! syntax of PostgreSQL's isolation tester ([`spec`]), with conditions on
//! what the steps read that show the anomaly. The built-in probes
//! (`probes/*.spec`, compiled in) are the classic cases of Adya's
//! phenomena as the Hermitage project tests them (Kleppmann,
//! github.com/ept/hermitage) plus the read-only anomaly of Fekete, O'Neil
//! and O'Neil (SIGMOD Record 33(3), 2004); each file names its sources.
//!
//! Data flow: probes are parsed before anything starts; each probe is
//! first run serially (one session after the other, in every order) to
//! check that its anomaly conditions cannot hold in a serial execution and
//! to record the serial outcomes; then its permutation runs at every level
//! ([`exec::execute`], a fresh schema and fresh connections each time) and
//! [`judge`] turns each execution into a [`LevelResult`].

pub mod directive;
pub mod exec;
pub mod expect;
pub mod lexer;
pub mod sessions;
pub mod spec;
pub mod suite;
pub mod txn;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Instant;

use anyhow::{Result, bail};

use crate::model::Isolation;
use crate::model::probes::{
    LevelResult, Matrix, ProbeResult, SerialOutcome, ServerInfo, StepError,
};
use exec::{Env, Execution};
use spec::{Condition, Mechanism, Outcome, Probe, StepRef, Subject, show_rows};

/// The built-in probes: (name, file text), in the order of the matrix.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "G0",
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/probes/g0.spec")),
    ),
    (
        "G1a",
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/probes/g1a.spec")),
    ),
    (
        "G1b",
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/probes/g1b.spec")),
    ),
    (
        "G1c",
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/probes/g1c.spec")),
    ),
    (
        "OTV",
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/probes/otv.spec")),
    ),
    (
        "PMP",
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/probes/pmp.spec")),
    ),
    (
        "PMP-write",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/probes/pmp-write.spec"
        )),
    ),
    (
        "P4",
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/probes/p4.spec")),
    ),
    (
        "G-single",
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/probes/g-single.spec")),
    ),
    (
        "G-single-predicate",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/probes/g-single-predicate.spec"
        )),
    ),
    (
        "G-single-write-predicate",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/probes/g-single-write-predicate.spec"
        )),
    ),
    (
        "G2-item",
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/probes/g2-item.spec")),
    ),
    (
        "G2",
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/probes/g2.spec")),
    ),
    (
        "read-only-anomaly",
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/probes/read-only-anomaly.spec"
        )),
    ),
];

/// Parses the built-in probes.
///
/// Errors: a built-in that does not parse (a bug, caught by the tests).
pub fn builtin() -> Result<Vec<Probe>, spec::SpecError> {
    BUILTIN
        .iter()
        .map(|(name, text)| directive::parse(text, &format!("builtin:{name}")))
        .collect()
}

/// Resolves `--probe` arguments: a built-in name (any case) or a spec file.
/// No arguments: every built-in probe.
///
/// Errors: an argument that is neither (listing the built-in names), a file
/// that cannot be read, or one that does not parse (`file:line:col`).
pub fn select(args: &[String]) -> Result<Vec<Probe>> {
    let builtins = builtin()?;
    if args.is_empty() {
        return Ok(builtins);
    }
    let mut out: Vec<Probe> = Vec::new();
    for a in args {
        let probe = if let Some(p) = builtins.iter().find(|p| p.name.eq_ignore_ascii_case(a)) {
            p.clone()
        } else if Path::new(a).exists() {
            let text = std::fs::read_to_string(a)
                .map_err(|e| anyhow::anyhow!("--probe {a}: cannot read the file: {e}"))?;
            directive::parse(&text, a)?
        } else {
            let names: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
            bail!(
                "--probe {a}: no built-in probe of that name and no such file (built-in: {})",
                names.join(", ")
            );
        };
        if out.iter().any(|p| p.name == probe.name) {
            bail!(
                "--probe {a}: a probe named {} is already selected",
                probe.name
            );
        }
        out.push(probe);
    }
    Ok(out)
}

fn holds(c: &Condition, e: &Execution) -> bool {
    c.terms.iter().all(|t| match t.subject {
        Subject::Step(r) => e.committed(r) && e.rows(r).is_some_and(|rows| t.holds(rows)),
        Subject::Final => e.final_rows.as_ref().is_some_and(|rows| t.holds(rows)),
    })
}

/// What the terms of `c` read in `e`, e.g. `s2r1 read 1,101`.
fn observation(probe: &Probe, c: &Condition, e: &Execution) -> String {
    let mut seen = Vec::new();
    let mut parts = Vec::new();
    for t in &c.terms {
        if seen.contains(&t.subject) {
            continue;
        }
        seen.push(t.subject);
        parts.push(match t.subject {
            Subject::Step(r) => format!(
                "{} read {}",
                probe.step(r).name,
                show_rows(e.rows(r).unwrap_or_default())
            ),
            Subject::Final => format!(
                "final state {}",
                show_rows(e.final_rows.as_deref().unwrap_or_default())
            ),
        });
    }
    parts.join(", ")
}

/// Turns one execution into a result: stuck if a step got stuck, anomaly
/// if any `@anomaly` condition holds, else prevented; `how` names the
/// waits and the first error (or `snapshot` when there were neither).
pub fn judge(probe: &Probe, e: &Execution, level: Isolation) -> LevelResult {
    let waited: Vec<StepRef> = e.waited();
    let errors: Vec<&exec::ErrorAt> = e.errors().collect();
    let error = errors.first().map(|x| StepError {
        step: x.at.clone(),
        sqlstate: x.sqlstate.clone(),
        message: x.message.clone(),
    });
    let mut mechanisms = BTreeSet::new();
    if !waited.is_empty() {
        mechanisms.insert(Mechanism::Blocked);
    }
    for x in &errors {
        mechanisms.insert(Mechanism::Error(x.sqlstate.clone()));
    }
    // "step s2:s2c", or "s2:teardown".
    let place = |at: &str| {
        if at.ends_with(":teardown") {
            at.to_string()
        } else {
            format!("step {at}")
        }
    };
    let mut how = match (waited.first(), &error) {
        (Some(w), Some(err)) if probe.label(*w) == err.step => {
            format!("blocked at step {}, then {}", err.step, err.sqlstate)
        }
        (Some(w), Some(err)) => format!(
            "blocked at step {}, then {} at {}",
            probe.label(*w),
            err.sqlstate,
            place(&err.step)
        ),
        (None, Some(err)) => format!("{} at {}", err.sqlstate, place(&err.step)),
        (Some(w), None) => format!("blocked at step {}", probe.label(*w)),
        (None, None) => "snapshot".into(),
    };
    let mut observation_text = None;
    let outcome = if let Some(s) = &e.stuck {
        how = format!(
            "at {}{}, {} for {:.1} s",
            if s.step.is_some() { "step " } else { "" },
            s.at,
            if s.blocked {
                "waiting on a lock"
            } else {
                "running"
            },
            s.waited.as_secs_f64()
        );
        Outcome::Stuck
    } else if let Some(c) = probe.anomalies.iter().find(|c| holds(c, e)) {
        let obs = observation(probe, c, e);
        how = obs.clone();
        observation_text = Some(obs);
        Outcome::Anomaly
    } else {
        Outcome::Prevented
    };
    // "snapshot" explains a prevention that needed neither a wait nor an
    // error; an anomaly has no such explanation.
    if mechanisms.is_empty() && outcome == Outcome::Prevented {
        mechanisms.insert(Mechanism::Snapshot);
    }
    let expectation = probe.expectation(level);
    let as_expected = expectation
        .map(|x| x.outcome == outcome && x.how.as_ref().is_none_or(|h| *h == mechanisms));
    LevelResult {
        outcome,
        how,
        mechanisms: mechanisms.iter().map(ToString::to_string).collect(),
        observation: observation_text,
        waited: waited.iter().map(|w| probe.label(*w)).collect(),
        error,
        expected: expectation.map(ToString::to_string),
        as_expected,
        permutation: None,
        trace: e.trace.clone(),
    }
}

/// All orders of `0..n` (n! of them), lexicographic.
fn orders(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for first in 0..n {
        for rest in orders(n - 1) {
            let mut o = vec![first];
            o.extend(rest.into_iter().map(|x| if x >= first { x + 1 } else { x }));
            out.push(o);
        }
    }
    out
}

/// The most sessions whose serial orders are all tried (4! = 24 runs).
const MAX_SERIAL_SESSIONS: usize = 4;

/// Runs `permutation` serially in every session order. Each order must
/// leave every anomaly condition false; what the conditions read is
/// recorded.
///
/// Errors: a condition holds in a serial order (the probe cannot tell an
/// anomaly from a serial execution), or a serial run gets stuck.
async fn serial_outcomes(
    env: &Env,
    probe: &Probe,
    permutation: &[StepRef],
) -> Result<Vec<SerialOutcome>> {
    let n = probe.sessions.len();
    if n > MAX_SERIAL_SESSIONS {
        return Ok(Vec::new());
    }
    let read: BTreeSet<Subject> = probe
        .anomalies
        .iter()
        .flat_map(|c| c.terms.iter().map(|t| t.subject))
        .collect();
    let mut out = Vec::new();
    for order in orders(n) {
        let plan: Vec<StepRef> = order
            .iter()
            .flat_map(|&s| permutation.iter().copied().filter(move |r| r.session == s))
            .collect();
        let names: Vec<String> = order
            .iter()
            .map(|&s| probe.sessions[s].name.clone())
            .collect();
        let e = exec::execute(env, probe, &plan, Isolation::Serializable, true).await?;
        if e.interrupted {
            bail!("interrupted");
        }
        if let Some(s) = &e.stuck {
            bail!(
                "probe {} ({}): the serial order {} got stuck at step {}; a probe's sessions must run one after the other\n{}",
                probe.name,
                probe.file,
                names.join(", "),
                s.at,
                e.trace.join("\n")
            );
        }
        if let Some(c) = probe.anomalies.iter().find(|c| holds(c, &e)) {
            bail!(
                "probe {} ({}:{}): `@anomaly {}` holds in the serial order {} ({}), so it cannot tell an anomaly from a serial execution",
                probe.name,
                probe.file,
                c.line,
                c.text,
                names.join(", "),
                observation(probe, c, &e)
            );
        }
        let reads = read
            .iter()
            .map(|s| match *s {
                Subject::Step(r) => (
                    probe.step(r).name.clone(),
                    match e.rows(r) {
                        Some(rows) if e.committed(r) => show_rows(rows),
                        Some(rows) => format!("{} (rolled back)", show_rows(rows)),
                        None => "(error)".into(),
                    },
                ),
                Subject::Final => (
                    "final".to_string(),
                    show_rows(e.final_rows.as_deref().unwrap_or_default()),
                ),
            })
            .collect();
        out.push(SerialOutcome {
            order: names,
            reads,
        });
    }
    Ok(out)
}

/// Warnings about a probe: sessions that set their own isolation level
/// (the level columns do not apply to them), a serial check skipped.
fn warnings(probe: &Probe) -> Vec<String> {
    let mut out = Vec::new();
    for s in &probe.sessions {
        let blocks = s
            .setup
            .iter()
            .map(|b| (b.sql.as_str(), b.line))
            .chain(s.steps.iter().map(|st| (st.sql.as_str(), st.line)));
        for (sql, line) in blocks {
            if sql.to_ascii_lowercase().contains("isolation level") {
                out.push(format!(
                    "session {} sets its own isolation level ({}:{line}); the level columns do not apply to it",
                    s.name, probe.file
                ));
                break;
            }
        }
    }
    if probe.sessions.len() > MAX_SERIAL_SESSIONS {
        out.push(format!(
            "{} sessions: the serial check (at most {MAX_SERIAL_SESSIONS}) was skipped",
            probe.sessions.len()
        ));
    }
    out
}

/// Ranks outcomes for probes with several permutations: the worst wins.
fn severity(o: Outcome) -> u8 {
    match o {
        Outcome::Prevented => 0,
        Outcome::Stuck => 1,
        Outcome::Anomaly => 2,
    }
}

/// Runs one probe: its serial check, then every permutation at every level.
///
/// Errors: a condition holds in a serial order, a serial run gets stuck,
/// or see [`exec::execute`].
pub async fn run_probe(env: &Env, probe: &Probe, levels: &[Isolation]) -> Result<ProbeResult> {
    let mut serial = Vec::new();
    for (i, perm) in probe.permutations.iter().enumerate() {
        let s = serial_outcomes(env, probe, perm).await?;
        if i == 0 {
            serial = s;
        }
    }
    let mut results = BTreeMap::new();
    for &level in levels {
        let mut worst: Option<LevelResult> = None;
        for (i, perm) in probe.permutations.iter().enumerate() {
            let e = exec::execute(env, probe, perm, level, false).await?;
            if e.interrupted {
                bail!("interrupted");
            }
            let mut r = judge(probe, &e, level);
            if probe.permutations.len() > 1 {
                r.permutation = Some(i + 1);
            }
            let replace = worst
                .as_ref()
                .is_none_or(|w| severity(r.outcome) > severity(w.outcome));
            if replace {
                worst = Some(r);
            }
        }
        results.insert(
            level.name().to_string(),
            worst.expect("a probe has a permutation"),
        );
    }
    Ok(ProbeResult {
        warnings: warnings(probe),
        name: probe.name.clone(),
        title: probe.title.clone(),
        source: probe.source.clone(),
        file: probe.file.clone(),
        anomaly_if: probe.anomalies.iter().map(|c| c.text.clone()).collect(),
        results,
        serial,
    })
}

/// Runs every probe at every level on the database `env` points at.
/// `progress` hears each probe's name before it runs. When `env.cancel`
/// fires, the probe under way stops (cleaning up after itself) and the
/// matrix of the probes done so far comes back with `complete: false`.
///
/// Errors: the server cannot be reached, or a probe fails (see
/// [`run_probe`]).
pub async fn run_matrix(
    env: &Env,
    probes: &[Probe],
    levels: &[Isolation],
    target: String,
    mut progress: impl FnMut(usize, &Probe),
) -> Result<Matrix> {
    let start = Instant::now();
    let ctl = crate::postgres::connect(&env.config).await?;
    let version: String = ctl.query_one("SHOW server_version", &[]).await?.get(0);
    let num: String = ctl.query_one("SHOW server_version_num", &[]).await?.get(0);
    drop(ctl);
    let cancel = &env.cancel;
    let mut results = Vec::new();
    let mut complete = true;
    for (i, p) in probes.iter().enumerate() {
        progress(i, p);
        match run_probe(env, p, levels).await {
            Ok(r) => results.push(r),
            Err(_) if cancel.is_cancelled() => {}
            Err(e) => return Err(e),
        }
        if cancel.is_cancelled() {
            complete = false;
            break;
        }
    }
    Ok(Matrix {
        schema_version: Matrix::SCHEMA_VERSION,
        isobench_version: env!("CARGO_PKG_VERSION").to_string(),
        server: ServerInfo {
            version,
            version_num: num.parse().unwrap_or(0),
        },
        target,
        wait_check: match env.wait_check {
            exec::WaitCheck::IsolationTestFunction => "pg_isolation_test_session_is_blocked",
            exec::WaitCheck::LockWaitEvent => "pg_stat_activity.wait_event_type",
        }
        .into(),
        step_timeout_s: env.step_timeout.as_secs_f64(),
        levels: levels.to_vec(),
        elapsed_s: start.elapsed().as_secs_f64(),
        complete,
        probes: results,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The classes the list-append findings expect each level to admit are
    /// those whose built-in probe of `isobench anomalies` (same name)
    /// expects an anomaly at that level: the two tell the same story.
    #[test]
    fn admitted_classes_match_the_anomaly_probes_expectations() {
        use crate::model::Isolation;
        let probes = builtin().unwrap();
        let mut compared = 0;
        for class in crate::model::ANOMALY_CLASSES {
            let Some(p) = probes.iter().find(|p| p.name == class) else {
                continue;
            };
            for level in [
                Isolation::ReadCommitted,
                Isolation::RepeatableRead,
                Isolation::Serializable,
            ] {
                let e = p
                    .expectation(level)
                    .expect("every built-in expects per level");
                let anomaly = e.outcome == crate::model::probes::Outcome::Anomaly;
                assert_eq!(
                    crate::model::admitted_classes(level).contains(&class),
                    anomaly,
                    "{class} at {level:?}: probe expects {e}"
                );
                compared += 1;
            }
        }
        // G0, G1a, G1b, G1c, G-single, G2-item at three levels.
        assert_eq!(compared, 18);
    }

    #[test]
    fn every_builtin_parses_names_its_source_and_expects_all_levels() {
        let probes = builtin().unwrap();
        assert_eq!(probes.len(), BUILTIN.len());
        for (p, (name, _)) in probes.iter().zip(BUILTIN) {
            assert_eq!(&p.name, name, "{}: @probe differs from the table", p.file);
            assert!(!p.title.is_empty(), "{name}: no @title");
            assert!(!p.source.is_empty(), "{name}: no @source");
            for level in Isolation::ALL {
                assert!(
                    p.expectation(level).is_some(),
                    "{name}: no @expect for {level}"
                );
            }
        }
    }

    #[test]
    fn orders_are_all_permutations() {
        assert_eq!(orders(2), vec![vec![0, 1], vec![1, 0]]);
        let o = orders(3);
        assert_eq!(o.len(), 6);
        let set: BTreeSet<_> = o.iter().cloned().collect();
        assert_eq!(set.len(), 6);
        assert!(
            o.iter()
                .all(|x| x.iter().copied().collect::<BTreeSet<_>>().len() == 3)
        );
    }

    #[test]
    fn select_resolves_names_and_files_and_explains_failures() {
        let p = select(&["g2-ITEM".into()]).unwrap();
        assert_eq!(p[0].name, "G2-item");
        let e = select(&["nope".into()]).unwrap_err().to_string();
        assert!(e.starts_with("--probe nope: no built-in probe"), "{e}");
        assert!(e.contains("G-single-write-predicate"), "{e}");
        let e = select(&["G0".into(), "g0".into()]).unwrap_err().to_string();
        assert!(e.contains("already selected"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("bad.spec");
        std::fs::write(&f, "session s1\nstep a { SELECT 1; }\npermutation a b\n").unwrap();
        let e = select(&[f.display().to_string()]).unwrap_err().to_string();
        assert!(
            e.ends_with("bad.spec:3:15: permutation names unknown step 'b'"),
            "{e}"
        );
    }
}
