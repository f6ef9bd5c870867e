//! Server builds: a PostgreSQL binaries directory and the label reports
//! call it by. An A/B study of two builds names them
//! (`--pg-bin stock=/usr/lib/postgresql/15/bin`, `pg_bin = { stock = ... }`)
//! so that cells, factor columns and `isobench compare` show `stock`
//! instead of a long path; an unnamed build gets a label derived from its
//! directory ([`build_labels`]).
//!
//! Labels are restricted to letters, digits, `.`, `_` and `-` because they
//! are written inside cell labels (`pg_bin=stock clients=8`), baseline
//! specs (`pg_bin=stock,clients=8`), CSV and Markdown table cells.

use std::path::{Component, Path, PathBuf};

/// Longest label accepted, in characters.
pub const MAX_BUILD_LABEL: usize = 64;

/// One server build as given: an optional name and its binaries directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgBuild {
    /// The user's name for it (`NAME=DIR`, a `pg_bin` table key); `None`:
    /// unnamed, labelled by [`build_labels`].
    pub name: Option<String>,
    /// The directory with `postgres` and `initdb`.
    pub dir: PathBuf,
}

/// Why a server build was refused. The messages say what is wrong; the
/// caller adds the option (`--pg-bin`) or `file:line:column`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PgBuildError {
    #[error("empty build name before '='; write NAME=DIR, e.g. stock=/usr/lib/postgresql/15/bin")]
    EmptyName,
    #[error(
        "build name '{0}' is not a label: use letters, digits, '.', '_' and '-' \
         (starting with a letter or digit, at most {MAX_BUILD_LABEL}), e.g. stock or finer-lock"
    )]
    BadName(String),
    #[error("build name '{0}' is given twice; give each build its own name")]
    DuplicateName(String),
    #[error(
        "no directory given; give a PostgreSQL bin directory (e.g. /usr/lib/postgresql/15/bin)"
    )]
    EmptyDir,
    #[error(
        "{dir} has no `{missing}`; give a PostgreSQL bin directory \
         (the one with initdb and postgres, e.g. /usr/lib/postgresql/15/bin)"
    )]
    NotABinDir { dir: String, missing: &'static str },
}

impl PgBuild {
    /// A build named `name` (checked by [`check_build_label`]) in `dir`
    /// (not checked here: see `postgres::pg_build`).
    ///
    /// Errors: [`PgBuildError::EmptyName`], [`PgBuildError::BadName`],
    /// [`PgBuildError::EmptyDir`].
    pub fn new(name: Option<&str>, dir: &str) -> Result<PgBuild, PgBuildError> {
        if let Some(n) = name {
            check_build_label(n)?;
        }
        if dir.trim().is_empty() {
            return Err(PgBuildError::EmptyDir);
        }
        Ok(PgBuild {
            name: name.map(str::to_string),
            dir: PathBuf::from(dir),
        })
    }

    /// Splits `--pg-bin`'s value into (name, directory): `NAME=DIR` when
    /// the text before the first `=` holds no `/` (a path may hold `=`),
    /// else all of it is the directory.
    pub fn split_arg(s: &str) -> (Option<&str>, &str) {
        match s.split_once('=') {
            Some((name, dir)) if !name.contains('/') => (Some(name), dir),
            _ => (None, s),
        }
    }
}

/// Checks that `label` can name a build (see the module docs).
///
/// Errors: [`PgBuildError::EmptyName`] or [`PgBuildError::BadName`].
pub fn check_build_label(label: &str) -> Result<(), PgBuildError> {
    if label.is_empty() {
        return Err(PgBuildError::EmptyName);
    }
    let first_ok = label.starts_with(|c: char| c.is_ascii_alphanumeric());
    let chars_ok = label.chars().all(label_char);
    if !first_ok || !chars_ok || label.chars().count() > MAX_BUILD_LABEL {
        return Err(PgBuildError::BadName(label.to_string()));
    }
    Ok(())
}

fn label_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

/// `builds` without repeats (the same name and directory given twice),
/// in the order given.
///
/// Errors: [`PgBuildError::DuplicateName`] when one name is given to two
/// directories.
pub fn dedup_builds(builds: Vec<PgBuild>) -> Result<Vec<PgBuild>, PgBuildError> {
    let mut out: Vec<PgBuild> = Vec::with_capacity(builds.len());
    for b in builds {
        if out.contains(&b) {
            continue;
        }
        if let Some(n) = &b.name
            && out.iter().any(|o| o.name.as_ref() == Some(n))
        {
            return Err(PgBuildError::DuplicateName(n.clone()));
        }
        out.push(b);
    }
    Ok(out)
}

/// The labels of `builds`, in order, all distinct (for builds that
/// [`dedup_builds`] accepted): a build's name, or one derived from its
/// directory. Derived: the directory's components without a trailing
/// `bin`, the last one with its parent when it is a bare version
/// (`/usr/lib/postgresql/15/bin` -> `postgresql-15`, `/opt/pg-patched/bin`
/// -> `pg-patched`), joined by `-`, other characters than letters, digits,
/// `.`, `_` and `-` replaced by `-`. When two builds would get the same
/// label, more parent components are taken for all unnamed builds
/// (`/a/x/bin`, `/b/x/bin` -> `a-x`, `b-x`); a label still taken becomes
/// `build-N` (N: its position, from 1).
pub fn build_labels(builds: &[PgBuild]) -> Vec<String> {
    let parts: Vec<Vec<String>> = builds.iter().map(|b| dir_parts(&b.dir)).collect();
    let deepest = parts.iter().map(Vec::len).max().unwrap_or(0).max(1);
    let label_at = |depth: usize| -> Vec<String> {
        builds
            .iter()
            .zip(&parts)
            .map(|(b, p)| match &b.name {
                Some(n) => n.clone(),
                None => derived(p, depth),
            })
            .collect()
    };
    let mut labels = label_at(1);
    for depth in 2..=deepest {
        if distinct(&labels) {
            break;
        }
        labels = label_at(depth);
    }
    // Still a clash (names equal to derived labels, or directories that
    // differ only in characters a label cannot hold): number the unnamed.
    for i in 0..labels.len() {
        // The first of equal labels keeps it; a name always does.
        let clash = labels
            .iter()
            .enumerate()
            .any(|(j, l)| j != i && *l == labels[i] && (j < i || builds[j].name.is_some()));
        if clash && builds[i].name.is_none() {
            let mut n = i + 1;
            loop {
                let candidate = format!("build-{n}");
                if !labels.contains(&candidate) {
                    labels[i] = candidate;
                    break;
                }
                n += builds.len();
            }
        }
    }
    labels
}

fn distinct(labels: &[String]) -> bool {
    labels
        .iter()
        .enumerate()
        .all(|(i, l)| !labels[..i].contains(l))
}

/// `dir`'s normal components, a trailing `bin` dropped (kept when it is
/// the only one), each made label-safe.
fn dir_parts(dir: &Path) -> Vec<String> {
    let mut parts: Vec<String> = dir
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .map(|s| {
            s.chars()
                .map(|c| if label_char(c) { c } else { '-' })
                .collect()
        })
        .collect();
    if parts.len() > 1 && parts.last().is_some_and(|p| p == "bin") {
        parts.pop();
    }
    parts
}

/// The last `depth` of `parts` (at least two when the last is a bare
/// version such as `15` or `17.2`) joined by `-`; `build` for none.
fn derived(parts: &[String], depth: usize) -> String {
    let version = parts
        .last()
        .is_some_and(|p| p.chars().all(|c| c.is_ascii_digit() || c == '.'));
    let depth = if version { depth.max(2) } else { depth };
    let from = parts.len().saturating_sub(depth);
    let label = parts[from..].join("-");
    let label = label.trim_start_matches(|c: char| !c.is_ascii_alphanumeric());
    if label.is_empty() {
        "build".into()
    } else {
        label.chars().take(MAX_BUILD_LABEL).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unnamed(dir: &str) -> PgBuild {
        PgBuild {
            name: None,
            dir: dir.into(),
        }
    }

    fn named(name: &str, dir: &str) -> PgBuild {
        PgBuild {
            name: Some(name.into()),
            dir: dir.into(),
        }
    }

    #[test]
    fn names_are_labels() {
        for ok in ["stock", "finer-lock", "pg15.4", "a_b", "15"] {
            assert_eq!(check_build_label(ok), Ok(()), "{ok}");
        }
        assert_eq!(check_build_label(""), Err(PgBuildError::EmptyName));
        for bad in [
            "fin er",
            "a,b",
            "a=b",
            "a|b",
            "-x",
            ".x",
            "ü",
            &"x".repeat(65),
        ] {
            assert_eq!(
                check_build_label(bad),
                Err(PgBuildError::BadName(bad.into())),
                "{bad}"
            );
        }
        let e = PgBuildError::BadName("fin er".into()).to_string();
        assert!(
            e.contains("'fin er'") && e.contains("letters, digits"),
            "{e}"
        );
    }

    #[test]
    fn split_arg_takes_a_name_only_before_a_path() {
        assert_eq!(
            PgBuild::split_arg("stock=/usr/lib/postgresql/15/bin"),
            (Some("stock"), "/usr/lib/postgresql/15/bin")
        );
        assert_eq!(PgBuild::split_arg("/opt/a=b/bin"), (None, "/opt/a=b/bin"));
        assert_eq!(PgBuild::split_arg("/usr/bin"), (None, "/usr/bin"));
        assert_eq!(PgBuild::split_arg("=/x"), (Some(""), "/x"));
        assert_eq!(PgBuild::new(Some(""), "/x"), Err(PgBuildError::EmptyName));
        assert_eq!(PgBuild::new(Some("a"), " "), Err(PgBuildError::EmptyDir));
    }

    #[test]
    fn dedup_drops_repeats_and_refuses_a_name_twice() {
        let b = dedup_builds(vec![
            named("a", "/x"),
            unnamed("/y"),
            named("a", "/x"),
            unnamed("/y"),
            named("b", "/x"),
        ])
        .unwrap();
        assert_eq!(b, vec![named("a", "/x"), unnamed("/y"), named("b", "/x")]);
        assert_eq!(
            dedup_builds(vec![named("a", "/x"), named("a", "/y")]),
            Err(PgBuildError::DuplicateName("a".into()))
        );
    }

    #[test]
    fn unnamed_builds_are_labelled_by_their_directory() {
        let l = build_labels(&[
            unnamed("/usr/lib/postgresql/15/bin"),
            unnamed("/opt/pg-patched/bin"),
            named("stock", "/usr/lib/postgresql/15/bin"),
        ]);
        assert_eq!(l, ["postgresql-15", "pg-patched", "stock"]);
        // Same last component: more of the path, for every unnamed build.
        let l = build_labels(&[unnamed("/a/x/bin"), unnamed("/b/x/bin"), unnamed("/c/y")]);
        assert_eq!(l, ["a-x", "b-x", "c-y"]);
        // Characters a label cannot hold, and names that take a derived label.
        let l = build_labels(&[unnamed("/opt/my pg/bin"), unnamed("/opt/my-pg/bin")]);
        assert_eq!(l, ["opt-my-pg", "build-2"]);
        let l = build_labels(&[
            named("pg-patched", "/x/bin"),
            unnamed("/opt/pg-patched/bin"),
        ]);
        assert_eq!(l, ["pg-patched", "opt-pg-patched"]);
        assert_eq!(build_labels(&[unnamed("/bin")]), ["bin"]);
        assert_eq!(build_labels(&[unnamed("/")]), ["build"]);
        for labels in [
            build_labels(&[unnamed("/usr/lib/postgresql/17.2/bin")]),
            build_labels(&[unnamed("./.hidden/bin")]),
        ] {
            for l in &labels {
                assert_eq!(check_build_label(l), Ok(()), "{l}");
            }
        }
    }
}
