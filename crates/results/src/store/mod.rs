//! The results directory: `results.json` (schema in
//! `schema/results.schema.json`, version [`SCHEMA_VERSION`]), `report.md`,
//! and the server log. Everything is rewritten after every run (write to a
//! temporary file, then rename), so an interrupted experiment keeps every
//! completed run, and `complete` says whether it finished.

use std::fs;
use std::path::{Path, PathBuf};

pub use crate::model::{
    Cell, CommandRecord, Environment, FailureReasonRecord, LoadRecord, Rate, ReportedLatency,
    Results, RunRecord, SCHEMA_VERSION, StoredConfig, StoredTarget, TxTypeRecord, WaitSummary,
};

pub mod sqlite;

use crate::model::BadInput;
pub use sqlite::StoreError;

/// File names inside a results directory.
pub const RESULTS_JSON: &str = "results.json";
pub const REPORT_MD: &str = "report.md";
pub const SERVER_LOG: &str = "server.log";

/// pgbouncer's log in the results directory (`--pooler pgbouncer:...`),
/// every run's appended.
pub const PGBOUNCER_LOG: &str = "pgbouncer.log";

/// Writes `r` as `results.json` into `dir` atomically (the type lives in
/// [`crate::model`]).
///
/// Errors: the directory is not writable.
pub fn write_json(r: &Results, dir: &Path) -> std::io::Result<PathBuf> {
    let json = results_json(r).map_err(std::io::Error::other)?;
    write_atomic(&dir.join(RESULTS_JSON), json.as_bytes())
}

/// Reads `DIR/results.json`.
///
/// Errors: missing file, malformed JSON, or another schema version.
pub fn read_json(dir: &Path) -> Result<Results, StoreError> {
    let path = dir.join(RESULTS_JSON);
    let unreadable = |message: String| StoreError::Unreadable {
        path: path.clone(),
        message,
    };
    let text = fs::read_to_string(&path).map_err(|e| unreadable(e.to_string()))?;
    let r: Results = serde_json::from_str(&text).map_err(|e| unreadable(e.to_string()))?;
    if r.schema_version != SCHEMA_VERSION {
        return Err(unreadable(format!(
            "schema version {} (this isobench reads {SCHEMA_VERSION})",
            r.schema_version
        )));
    }
    Ok(r)
}

/// `results.json`'s text: `r` pretty-printed, with a calibration's
/// `noise` section (derived from its runs, `stats::noise`) after `runs`.
///
/// Errors: serialization (not expected for plain data).
pub fn results_json(r: &Results) -> serde_json::Result<String> {
    let mut value = serde_json::to_value(r)?;
    if let (Some(noise), Some(map)) = (crate::stats::noise::of(r), value.as_object_mut()) {
        map.insert("noise".into(), serde_json::to_value(noise)?);
    }
    serde_json::to_string_pretty(&value)
}

/// The results in `dir` for a reader (`isobench report`, `compare`): from
/// its SQLite store when it has one, opened read-only and left unchanged
/// ([`sqlite::Store::load`]), else from `results.json` (directories
/// written before the store existed).
///
/// Errors ([`StoreError::Unreadable`]): `dir` is not a directory, neither
/// file is readable, or either holds a version this isobench cannot read.
pub fn load_dir(dir: &Path) -> Result<Results, StoreError> {
    if !dir.is_dir() {
        return Err(StoreError::Unreadable {
            path: dir.to_path_buf(),
            message: "no such directory; name a results directory written by `isobench run`".into(),
        });
    }
    let db = dir.join(sqlite::DB_FILE);
    if db.exists() {
        sqlite::Store::load(&db)
    } else if let Some(e) = other_commands_output(dir) {
        Err(e)
    } else {
        read_json(dir)
    }
}

/// The main output file of each command that writes a directory other
/// than `isobench run`'s, and the command.
const OTHER_OUTPUTS: [(&str, &str); 2] = [
    ("anomalies.json", "isobench anomalies"),
    ("monitor.json", "isobench monitor"),
];

/// A directory without results that another command wrote (issue #31:
/// `isobench report` on an `anomalies` directory said "results.json: No
/// such file or directory"), as an error saying so.
fn other_commands_output(dir: &Path) -> Option<StoreError> {
    if dir.join(RESULTS_JSON).exists() {
        return None;
    }
    let (file, command) = OTHER_OUTPUTS
        .iter()
        .find(|(file, _)| dir.join(file).exists())?;
    Some(StoreError::Unreadable {
        path: dir.to_path_buf(),
        message: format!(
            "this is an `{command}` output directory ({file}, no results.json): \
             its report is already in it; `isobench report` and `isobench compare` \
             read the results directories of `isobench run`"
        ),
    })
}

/// The results in `dir` for `--resume`, which goes on to write the store:
/// as [`load_dir`], but the store is opened as a writer
/// ([`sqlite::Store::open`]), so a write that a crash interrupted is rolled
/// back and an older store is upgraded first.
///
/// Errors: as [`load_dir`]; also a store that cannot be written.
pub fn load_dir_to_resume(dir: &Path) -> Result<Results, StoreError> {
    let db = dir.join(sqlite::DB_FILE);
    if db.exists() {
        sqlite::Store::open(&db)?.read()
    } else {
        read_json(dir)
    }
}

/// The results directory of a command: `out` (from `--out`), else
/// `results/<prefix><timestamp>`; created if missing.
///
/// Errors (naming `--out`): the directory cannot be created, or it already
/// holds `marker` (a previous command's main output), which would be
/// overwritten.
pub fn results_dir(out: Option<&Path>, prefix: &str, marker: &str) -> Result<PathBuf, BadInput> {
    create_results_dir(out, prefix, marker).map(|d| d.path)
}

/// A results directory as [`create_results_dir`] made it: its path, and
/// the topmost directory created for it (`None`: it already existed), so
/// that a command failing before it wrote anything leaves no empty
/// directory behind (issue #31: `run` against an unreachable `--dsn` left
/// an empty `results/<timestamp>/`).
#[derive(Debug, Clone)]
pub struct NewDir {
    pub path: PathBuf,
    created: Option<PathBuf>,
}

impl NewDir {
    /// Removes the directory, and the parents created with it, if
    /// isobench created them and they are still empty; never a directory
    /// that existed before or holds anything (a server log, results).
    pub fn remove_if_empty(&self) {
        let Some(top) = &self.created else {
            return;
        };
        let mut d = self.path.as_path();
        // `remove_dir` refuses a directory that is not empty.
        while fs::remove_dir(d).is_ok() && d != top {
            match d.parent() {
                Some(p) => d = p,
                None => break,
            }
        }
    }
}

/// As [`results_dir`], saying which directories it created.
pub fn create_results_dir(
    out: Option<&Path>,
    prefix: &str,
    marker: &str,
) -> Result<NewDir, BadInput> {
    let dir = match out {
        Some(d) => d.to_path_buf(),
        None => PathBuf::from("results").join(format!(
            "{prefix}{}",
            chrono::Local::now().format("%Y%m%d-%H%M%S")
        )),
    };
    let created = dir
        .ancestors()
        .take_while(|a| !a.as_os_str().is_empty() && !a.exists())
        .last()
        .map(Path::to_path_buf);
    fs::create_dir_all(&dir).map_err(|e| {
        BadInput(format!(
            "--out: cannot create results directory {}: {e}",
            dir.display()
        ))
    })?;
    if dir.join(marker).exists() {
        return Err(BadInput(format!(
            "--out: {} already holds {marker} from an earlier command; choose a new directory",
            dir.display()
        )));
    }
    Ok(NewDir { path: dir, created })
}

/// Writes `bytes` to `path` through a temporary file and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<PathBuf> {
    let tmp = path.with_extension("tmp");
    fs::write(&tmp, bytes)?;
    fs::rename(&tmp, path)?;
    Ok(path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed JSON schemas name the versions the code writes: the
    /// `schema_version` constant, the title and the `$id`.
    #[test]
    fn the_schema_files_carry_the_written_versions() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema");
        for (file, kind, version) in [
            ("results.schema.json", "results", SCHEMA_VERSION),
            (
                "anomalies.schema.json",
                "anomalies",
                crate::model::probes::Matrix::SCHEMA_VERSION,
            ),
        ] {
            let text = fs::read_to_string(dir.join(file)).unwrap();
            let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(
                schema["properties"]["schema_version"]["const"], version,
                "{file}"
            );
            assert!(
                schema["title"]
                    .as_str()
                    .unwrap()
                    .ends_with(&format!("{kind}.json, schema version {version}")),
                "{file}: {}",
                schema["title"]
            );
            assert_eq!(
                schema["$id"],
                format!("https://isobench.dev/schema/{kind}-{version}.json"),
                "{file}"
            );
        }
    }

    /// Issue #31: another command's output directory is named as such
    /// (bad input, exit 2), not as a missing results.json.
    #[test]
    fn another_commands_directory_is_named() {
        let base = tempfile::tempdir().unwrap();
        for (file, command) in OTHER_OUTPUTS {
            let dir = base.path().join(command.replace(' ', "-"));
            fs::create_dir(&dir).unwrap();
            fs::write(dir.join(file), "{}").unwrap();
            let e = load_dir(&dir).unwrap_err();
            assert!(e.is_bad_input(), "{e}");
            let text = e.to_string();
            assert!(
                text.contains(&format!("this is an `{command}` output directory"))
                    && text.contains("results directories of `isobench run`")
                    && !text.contains("No such file"),
                "{text}"
            );
        }
        // An empty directory still says what is missing.
        let e = load_dir(base.path()).unwrap_err().to_string();
        assert!(e.contains("results.json"), "{e}");
    }

    /// Issue #31: a command that fails before writing anything removes
    /// the directories it created, and nothing else.
    #[test]
    fn an_unused_new_results_dir_is_removed() {
        let base = tempfile::tempdir().unwrap();
        // Two levels created, both removed.
        let d = create_results_dir(Some(&base.path().join("a/b")), "", "x.json").unwrap();
        d.remove_if_empty();
        assert!(!base.path().join("a").exists());
        // A directory that existed stays.
        fs::create_dir(base.path().join("old")).unwrap();
        let d = create_results_dir(Some(&base.path().join("old")), "", "x.json").unwrap();
        d.remove_if_empty();
        assert!(base.path().join("old").is_dir());
        // Only the new level goes when the parent existed.
        let d = create_results_dir(Some(&base.path().join("old/new")), "", "x.json").unwrap();
        d.remove_if_empty();
        assert!(!base.path().join("old/new").exists());
        assert!(base.path().join("old").is_dir());
        // One that holds something (a server log) stays.
        let d = create_results_dir(Some(&base.path().join("c/d")), "", "x.json").unwrap();
        fs::write(d.path.join(SERVER_LOG), "initdb failed").unwrap();
        d.remove_if_empty();
        assert!(base.path().join("c/d").join(SERVER_LOG).exists());
    }

    #[test]
    fn results_dir_is_created_and_never_reused() {
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("a/b");
        assert_eq!(results_dir(Some(&dir), "x-", "out.json").unwrap(), dir);
        assert!(dir.is_dir());
        // An empty directory (e.g. from an earlier failed start) is fine.
        assert!(results_dir(Some(&dir), "x-", "out.json").is_ok());
        fs::write(dir.join("out.json"), "{}").unwrap();
        let e = results_dir(Some(&dir), "x-", "out.json").unwrap_err().0;
        assert!(
            e.starts_with("--out: ") && e.contains("already holds out.json"),
            "{e}"
        );
        // Another command's marker does not block this one.
        assert!(results_dir(Some(&dir), "x-", "other.json").is_ok());
    }
}
