//! Study files: a study as TOML (`isobench run study.toml`).
//!
//! Every `isobench run` flag has a key of the same name in snake_case
//! (`--pool-size` is `pool_size`, `--set` is the `[settings]` table,
//! `--param` the `[params]` table). A factor takes one value or a list;
//! a list makes the factor vary, and the cells are the cross product of
//! all factors. Factors may be written at the top level or in a
//! `[factors]` table, not both:
//!
//! ```toml
//! workload = "tpcb"
//! scale = 1
//! repeat = 2
//! duration = "2s"
//! warmup = "1s"
//! [factors]
//! isolation = ["rc", "ser"]
//! clients = [8]
//! pool_size = [2, 8]
//! [factors.settings]          # server settings as a factor (managed server)
//! max_pred_locks_per_transaction = [64, 256]
//! ```
//!
//! An external load replaces the workload: `load_cmd` (a command run once
//! per run, with `{clients}`, `{pool_size}`, `{isolation}`, `{dsn}` and
//! other placeholders), `setup_cmd`, `before_run`, `after_run`, `ready`,
//! `ready_timeout`, `load_format`, `on_error` and `load_timeout`, as the
//! `--load-cmd` ... flags (see `crate::load_cmd`). Its `[params]` are
//! free placeholders, e.g. `app_workers = [2, 4]` for `{app_workers}`.
//!
//! pgbench scripts: `file = ["tpcb-one.sql@1", "other.sql@3"]` (paths
//! relative to the study file), `builtin = "tpcb-like"`, a `[define]`
//! table of variables, `protocol` and `init_sql`, as `-f`, `-b`, `-D`, `-M`
//! and `--init-sql`.
//!
//! Server builds: `pg_bin` takes a directory, a list of directories, or a
//! table of name = directory (`pg_bin = { stock = "/usr/lib/postgresql/15/bin",
//! finer-lock = "/opt/pg-patched/bin" }`), each checked as `--pg-bin
//! [NAME=]DIR` is; one build is the server, several a factor whose cells
//! hold the labels (see [`crate::model::build_labels`]).
//!
//! A `[settings]` entry with one value is a fixed server setting (like
//! `--set`); with a list it is a factor. `[params]` holds workload
//! parameters the same way. Unknown keys and invalid values are errors
//! naming the file, line, column and key. Command-line flags override the
//! file's values (`--set`/`--param` per name).
//!
//! One configuration layer: [`Settings`] is both the flags (clap) and the
//! file's keys (serde); each value is read by one parser in [`values`]
//! whichever way it comes; [`from_args`] merges defaults <- file <- flags
//! and [`Settings::into_config`] checks the merged settings against each
//! other (naming the file's line, or the flag) and fills the defaults.
//! The data flow: `cli::RunArgs` -> [`Settings`] (flags) + [`read`] (file)
//! -> [`Settings::overlay`] -> [`Settings::into_config`] ->
//! `model::StudyConfig`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::model::{PgBuild, StudyConfig};

pub mod checks;
mod cluster;
mod file;
mod hunt;
mod settings;
mod shard;
mod shard_env;
pub mod values;

pub use file::{parse, read};
pub(crate) use settings::dedup;
pub use settings::{FACTOR_KEYS, Origin, Settings, flag_of};

/// An error in a study file, located at `line:column` (1-based).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}:{line}:{column}: {message}")]
pub struct StudyError {
    pub path: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// Why a study's settings were refused: located in the file that set the
/// key, or naming the flag.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    #[error(transparent)]
    File(#[from] StudyError),
    /// A flag's value, the message naming the flag.
    #[error("{0}")]
    Flag(String),
    /// `--resume`: the results directory, or a flag it cannot take.
    #[error("{0}")]
    Resume(String),
}

/// The default study: every setting at its default (TPC-B, rc/rr/ser, 16
/// clients, 3 x 10 s after 2 s of warm-up, a managed server).
pub fn defaults() -> StudyConfig {
    Settings::default()
        .into_config()
        .expect("the defaults are valid")
}

/// Reads the study file `path` alone (no flags) into a configuration.
///
/// Errors: [`read`]'s, and settings that contradict each other
/// ([`Settings::into_config`]).
pub fn load(path: &Path) -> Result<StudyConfig, SettingsError> {
    let mut cfg = read(path)?.into_config()?;
    cfg.file = Some(path.to_path_buf());
    Ok(cfg)
}

/// The flags `--resume` takes: how to reach the server, and how to show
/// what happens.
const RESUME_FLAGS: [&str; 10] = [
    "quiet",
    "fail_on_violation",
    "log_violations",
    "metrics_listen",
    "observe",
    "dsn",
    "external",
    "host_policy",
    "server_user",
    "pg_bin",
];

/// The study of `isobench run`: the defaults, the study file `study`
/// (if any), then `flags` (the settings given on the command line), merged
/// and checked in one place; with `resume`, the study recorded in that
/// results directory instead, with the server flags of `flags`.
///
/// Errors: the file's ([`StudyError`], with line and column), settings
/// that contradict each other (naming the key where the file set it, or
/// the flag), a flag that `--resume` cannot take.
pub fn from_args(
    study: Option<&Path>,
    resume: Option<&Path>,
    flags: Settings,
) -> Result<StudyConfig, SettingsError> {
    let flags = flags.from_flags();
    let given = flags.keys_set();
    if let Some(dir) = resume {
        if let Some(bad) = given.iter().find(|g| !RESUME_FLAGS.contains(g)) {
            return Err(SettingsError::Resume(format!(
                "--resume continues the study recorded in {}; --{} cannot change it \
                 (only --quiet, --fail-on-violation, --metrics-listen and the server flags are allowed)",
                dir.display(),
                flag_of(bad)
            )));
        }
        let cli = flags.into_config()?;
        return resume_study(dir, &cli, &given)
            .map(StudyConfig::resolve)
            .map_err(SettingsError::Resume);
    }
    let mut settings = match study {
        Some(path) => read(path)?,
        None => Settings::default(),
    };
    settings.overlay(flags);
    let mut cfg = settings.into_config()?;
    cfg.file = study.map(Path::to_path_buf);
    Ok(cfg.resolve())
}

/// The study recorded in results directory `dir` (for `--resume`), with
/// the flags in `given` taken from `cli` (quiet, fail_on_violation and the
/// server flags). An external server must be named again (`--dsn` or
/// `--external`), since its DSN is never stored.
///
/// Errors: no readable results.json in `dir`, a study that already
/// completed, or an external target without `--dsn`/`--external`.
fn resume_study(dir: &Path, cli: &StudyConfig, given: &[&str]) -> Result<StudyConfig, String> {
    let r = crate::store::load_dir_to_resume(dir).map_err(|e| format!("--resume: {e}"))?;
    if r.complete {
        return Err(format!(
            "--resume: the study in {} is complete; nothing to resume",
            dir.display()
        ));
    }
    if let Some(shard) = r.config.shard {
        return Err(format!(
            "--resume: the results in {} are shard {shard}'s of a sharded study, which is not resumed: \
             run the shard again with a new -o directory (it joins the study's next run)",
            dir.display()
        ));
    }
    let c = r.config;
    let mut target = cli.target.clone();
    // The builds as recorded (a store from before build labels: its
    // directories are the labels its cells hold), unless `--pg-bin` is
    // given again (e.g. a build moved; its labels must match the runs').
    let mut pg_bin: Vec<PgBuild> = c
        .pg_bin
        .iter()
        .map(|label| PgBuild {
            name: Some(label.clone()),
            dir: PathBuf::from(c.pg_bin_dir(label)),
        })
        .collect();
    if !given.contains(&"pg_bin") {
        target.pg_bin = c.target_options.pg_bin.as_ref().map(|dir| PgBuild {
            name: c.target_options.pg_bin_label.clone(),
            dir: PathBuf::from(dir),
        });
    } else if !cli.pg_bin.is_empty() {
        pg_bin = cli.pg_bin.clone();
    }
    if !given.contains(&"server_user") {
        target.server_user = c.target_options.server_user.clone();
    }
    if !given.contains(&"host_policy")
        && let Some(p) = c.target_options.host_policy
    {
        target.host_policy = p;
    }
    // The cluster as it ran: its standbys, failover manager and read
    // route decide what the remaining runs measure.
    target.cluster = c.target_options.cluster.unwrap_or_default();
    target.settings = c.settings.clone().into_iter().collect();
    let external_now = target.dsn.is_some() || target.external_from_env;
    if c.target_options.external && !external_now {
        return Err(format!(
            "--resume: the study in {} ran on an external server; give --dsn or --external again",
            dir.display()
        ));
    }
    let workload_has_scale = std::iter::once(&c.workload)
        .chain(&c.workloads)
        .any(|w| crate::workload::spec(w).is_some_and(|s| s.scale.is_some()));
    Ok(StudyConfig {
        workload: c.workload,
        workloads: c.workloads,
        scale: if workload_has_scale || c.load.active() {
            c.scale
        } else {
            Vec::new()
        },
        load: c.load,
        scripts: c.scripts,
        isolation: c.isolation,
        strategies: c.strategies,
        params: c.params,
        clients: c.clients,
        pool_size: c.pool_size,
        rate: c.rate,
        latency_limit: c
            .latency_limit_ms
            .map(|ms| Duration::from_secs_f64(ms / 1000.0)),
        faults: c
            .faults
            .iter()
            .map(|f| f.parse())
            .collect::<Result<_, crate::model::FaultSpecError>>()
            .map_err(|e| format!("--resume: the stored fault plan: {e}"))?,
        fault_plans: c
            .fault_plans
            .iter()
            .map(|f| f.parse())
            .collect::<Result<_, crate::model::FaultSpecError>>()
            .map_err(|e| format!("--resume: the stored fault plans: {e}"))?,
        exclude_faulted: c.exclude_faulted,
        pooler: crate::model::PoolerConfig {
            poolers: c.pooler,
            sizes: c.pooler_size,
            processes: c.pooler_processes,
            bin: c.pgbouncer_bin.map(PathBuf::from),
        },
        max_tries: c.max_tries,
        setting_factors: c.setting_factors,
        pg_bin,
        repeat: c.repeat,
        order: c.order,
        baseline: c.baseline,
        duration: Duration::from_secs_f64(c.duration_s),
        transactions: c.transactions,
        pgbench: None,
        warmup: Duration::from_secs_f64(c.warmup_s),
        server_wait: Duration::from_secs_f64(c.server_wait_s),
        retry: c.retry,
        threads: c.threads,
        sample_interval: Duration::from_secs_f64(c.sample_interval_s),
        // Not stored: a resumed study observes as its command line says.
        observe: cli.observe,
        seed: c.seed,
        target,
        file: c.file.map(PathBuf::from),
        resume: Some(dir.to_path_buf()),
        out: Some(dir.to_path_buf()),
        quiet: cli.quiet,
        fail_on_violation: cli.fail_on_violation,
        log_violations: cli.log_violations,
        metrics_listen: cli.metrics_listen.clone(),
        // A sharded study is not resumed: a restarted shard joins the
        // study's next run (docs/src/reference/sharded-runs.md).
        shard: None,
        shard_wait: cli.shard_wait,
        precision: c.precision,
        hunt: c.hunt,
        // The stored placement, unless the command line gives one.
        cpus: cli.cpus.clone().or(c.cpus),
        calibrate: c.calibrate,
        checks: c.checks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Isolation, Order};

    /// A file's text alone, as `isobench run FILE` reads it.
    fn study(path: &str, text: &str) -> Result<StudyConfig, SettingsError> {
        parse(path, text)?.into_config()
    }

    fn parse_ok(text: &str) -> StudyConfig {
        study("study.toml", text).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The error of a file, located in it.
    fn parse_err(text: &str) -> StudyError {
        match study("study.toml", text) {
            Err(SettingsError::File(e)) => e,
            other => panic!("{text:?}: not a file error: {other:?}"),
        }
    }

    #[test]
    fn host_policy_is_read_checked_and_needs_an_external_server() {
        let c = parse_ok("dsn = \"host=a,b\"\nhost_policy = \"random\"\n");
        assert_eq!(c.target.host_policy, crate::model::HostPolicy::Random);
        let c = parse_ok("dsn = \"host=a,b\"\n");
        assert_eq!(c.target.host_policy, crate::model::HostPolicy::RoundRobin);
        let e = parse_err("dsn = \"host=a,b\"\nhost_policy = \"spread\"\n");
        assert_eq!(e.line, 2, "{e}");
        assert!(e.message.contains("round-robin, random or first"), "{e}");
        // The managed server has one host of its own.
        let e = parse_err("host_policy = \"first\"\n");
        assert_eq!(e.line, 1, "{e}");
        assert!(e.message.starts_with("host_policy: "), "{e}");
        assert!(e.message.contains("--dsn"), "{e}");
    }

    /// The example studies in examples/ stay valid study files, and the
    /// SSI plan study crosses enable_seqscan as a factor.
    #[test]
    fn the_example_studies_parse() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                load(&path).unwrap_or_else(|e| panic!("{e}"));
                n += 1;
            }
        }
        assert!(n >= 2, "{n} example studies in {}", dir.display());
        let cfg = load(&dir.join("ssi-plan-study.toml")).unwrap();
        assert_eq!(cfg.isolation, vec![Isolation::Serializable]);
        assert_eq!(
            cfg.setting_factors,
            vec![(
                "enable_seqscan".to_string(),
                vec!["on".to_string(), "off".to_string()]
            )]
        );
    }

    #[test]
    fn pgbench_script_keys() {
        let cfg = study(
            "studies/s.toml",
            "file = [\"one.sql@2\", \"/abs/two.sql\"]\nbuiltin = \"select-only@3\"\nprotocol = \"simple\"\ninit_sql = \"init.sql\"\n[define]\nhot = 10\nname = \"x\"\n",
        )
        .unwrap();
        let s = &cfg.scripts;
        assert_eq!(
            s.files,
            vec![
                (PathBuf::from("studies/one.sql"), 2),
                (PathBuf::from("/abs/two.sql"), 1)
            ]
        );
        assert_eq!(s.builtins, vec![("select-only".to_string(), 3)]);
        assert_eq!(s.mode, crate::model::QueryMode::Simple);
        assert_eq!(s.init_sql, Some(PathBuf::from("studies/init.sql")));
        assert_eq!(
            s.defines,
            vec![("hot".into(), "10".into()), ("name".into(), "x".into())]
        );
        let e = parse("s.toml", "protocol = \"fast\"\n").unwrap_err();
        assert_eq!((e.line, e.column), (1, 12));
        assert!(e.message.contains("unknown query mode 'fast'"), "{e}");
        let e = parse("s.toml", "file = \"a.sql@x\"\n").unwrap_err();
        assert!(e.message.starts_with("file: "), "{e}");
    }

    #[test]
    fn the_issue_example_parses() {
        let c = parse_ok(
            r#"workload = "tpcb"
scale = 1
repeat = 2
duration = "2s"
warmup = "1s"
[factors]
isolation = ["rc", "ser"]
clients = [8]
pool_size = [2, 8]
"#,
        );
        assert_eq!(c.workload, "tpcb");
        assert_eq!(c.scale, vec![1]);
        assert_eq!(c.repeat, 2);
        assert_eq!(c.duration, Duration::from_secs(2));
        assert_eq!(c.warmup, Duration::from_secs(1));
        assert_eq!(
            c.isolation,
            vec![Isolation::ReadCommitted, Isolation::Serializable]
        );
        assert_eq!(c.clients, vec![8]);
        assert_eq!(c.pool_size, vec![2, 8]);
        let cells = crate::executor::cells(&c).unwrap();
        assert_eq!(cells.len(), 4);
        assert_eq!(cells[0].pool_size, Some(2));
        assert_eq!(cells[3].pool_size, Some(8));
    }

    #[test]
    fn settings_params_builds_and_fixed_values() {
        let c = parse_ok(
            r#"workload = "sibench"
clients = 4
max_tries = [1, 10]
order = "random"
seed = 7
baseline = { isolation = "rc", max_tries = 10 }
[params]
rows = [10, 100]
[settings]
shared_buffers = "64MB"
[factors.settings]
max_pred_locks_per_transaction = [64, 256]
"#,
        );
        assert_eq!(c.clients, vec![4]);
        assert_eq!(c.max_tries, vec![1, 10]);
        assert_eq!(c.order, Order::Random);
        assert_eq!(c.seed, 7);
        assert_eq!(c.baseline.as_deref(), Some("isolation=rc,max_tries=10"));
        assert_eq!(
            c.params,
            vec![(
                "rows".to_string(),
                vec!["10".to_string(), "100".to_string()]
            )]
        );
        assert!(
            c.target
                .settings
                .contains(&("shared_buffers".into(), "64MB".into()))
        );
        assert_eq!(
            c.setting_factors,
            vec![(
                "max_pred_locks_per_transaction".to_string(),
                vec!["64".to_string(), "256".to_string()]
            )]
        );
        let cells = crate::executor::cells(&c).unwrap();
        // 3 levels x 2 rows x 2 max_tries x 2 settings.
        assert_eq!(cells.len(), 24);
        // Server settings vary slowest.
        assert!(
            cells[..12]
                .iter()
                .all(|c| c.settings["max_pred_locks_per_transaction"] == "64")
        );
    }

    /// `workload` and `script` take lists and are factors, also in
    /// `[factors]`; a script set is a string or a list (a mix), its files
    /// relative to the study file.
    #[test]
    fn workload_and_script_factors() {
        let c = parse_ok("workload = [\"tpcb\", \"ssibench\"]\nscale = 1\n");
        assert_eq!(c.workload, "tpcb");
        assert_eq!(c.workloads, ["tpcb", "ssibench"]);
        assert_eq!(c.scale, [1]);
        let c = parse_ok("[factors]\nworkload = [\"ssibench\", \"simple-ssibench\"]\n");
        assert_eq!(c.workloads, ["ssibench", "simple-ssibench"]);
        // One workload in a list is not a factor.
        let c = parse_ok("workload = [\"sibench\"]\n");
        assert_eq!((c.workload.as_str(), c.workloads.len()), ("sibench", 0));
        let c = study(
            "studies/s.toml",
            "isolation = [\"rc\", \"ser\"]\n[factors]\nscript = [\"builtin:tpcb-like\", \"fn.sql\", [\"a.sql@2\", \"builtin:select-only@1\"]]\n",
        )
        .unwrap();
        let sets = &c.scripts.sets;
        assert_eq!(sets.len(), 3);
        assert_eq!(sets[0].label, "builtin:tpcb-like");
        assert_eq!(sets[0].builtins, [("tpcb-like".to_string(), 1)]);
        assert_eq!(sets[1].files, [(PathBuf::from("studies/fn.sql"), 1)]);
        assert_eq!(sets[1].label, "fn.sql");
        assert_eq!(sets[2].label, "a.sql@2+builtin:select-only@1");
        assert_eq!(sets[2].files, [(PathBuf::from("studies/a.sql"), 2)]);
        assert_eq!(sets[2].builtins, [("select-only".to_string(), 1)]);
        assert!(c.scripts.active() && c.scripts.files.is_empty());
        let cells = crate::executor::cells(&c).unwrap();
        assert_eq!(cells.len(), 6);
        assert_eq!(cells[2].workload, "fn.sql");
    }

    #[test]
    fn errors_name_key_and_line() {
        for (text, line, needle) in [
            (
                "workload = \"tpcb\"\nbogus = 1\n",
                2,
                "unknown field `bogus`",
            ),
            (
                "[factors]\nclients = [0]\n",
                2,
                "clients: 0 is out of range",
            ),
            (
                "isolation = [\"rc\", \"snapshot\"]\n",
                1,
                "isolation: unknown isolation level 'snapshot'",
            ),
            (
                "\n\nduration = \"soon\"\n",
                3,
                "duration: 'soon' is not a duration",
            ),
            (
                "workload = \"nope\"\n",
                1,
                "workload: unknown workload 'nope'",
            ),
            (
                "\nfault = [\"terminate@2s\", \"explode@1s\"]\n",
                2,
                "fault: 'explode' is not a fault kind",
            ),
            (
                "fault = \"terminate\"\n",
                1,
                "fault: 'terminate' is not KIND@TIME",
            ),
            (
                "fault = \"terminate@soon\"\n",
                1,
                "fault: 'terminate@soon': bad time",
            ),
            (
                "workload = \"sibench\"\n[params]\nrowz = 1\n",
                3,
                "params.rowz",
            ),
            ("clients = 4\n[factors]\nclients = [8]\n", 3, "given both"),
            ("[factors]\nsize = [1]\n", 2, "unknown field `size`"),
            // Issue #31: a near miss names the key meant, not all 47.
            (
                "repeats = 2\n",
                1,
                "unknown field `repeats`; did you mean `repeat`?",
            ),
            (
                "[factors]\nclinets = [1]\n",
                2,
                "unknown field `clinets`; did you mean `clients`?",
            ),
            ("repeat = [1, 2]\n", 1, "repeat: takes one value"),
            ("rate = [0]\n", 1, "rate: '0' is not a rate"),
            (
                "workload = \"write-skew\"\nscale = 2\n",
                2,
                "scale: write-skew has no scale",
            ),
            ("pool_size = []\n", 1, "pool_size: the list is empty"),
            ("clients = [1,\n", 1, ""),
            (
                "workload = [\"tpcb\",\n \"tpce\"]\n",
                2,
                "workload: unknown workload 'tpce'",
            ),
            (
                "script = [\"builtin:tpcb-like\", \"builtin:nope\"]\n",
                1,
                "script: 'builtin:nope': no such built-in script",
            ),
            (
                "script = [\"a.sql@x\"]\n",
                1,
                "script: 'a.sql@x': weight 'x'",
            ),
            ("script = [[]]\n", 1, "script: an empty script set"),
            (
                "file = \"a.sql\"\nscript = [\"b.sql\", \"c.sql\"]\n",
                2,
                "script: the script factor and -f/-b (keys file, builtin) both given",
            ),
            (
                "workload = [\"tpcb\", \"ssibench\"]\nscript = [\"b.sql\", \"c.sql\"]\n",
                1,
                "workload: the workload is a factor here: scripts run over pgbench's tables",
            ),
            (
                "workload = [\"tpcb\", \"sibench\"]\nstrategy = \"locking\"\n",
                2,
                "strategy: ",
            ),
        ] {
            let e = parse_err(text);
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(
                e.to_string().starts_with(&format!("study.toml:{line}:")),
                "{e}"
            );
            assert!(e.message.contains(needle), "{text:?}: {e}");
        }
    }

    /// Issue #31: without a close key the message keeps serde's list of
    /// every key; with one it names only that key.
    #[test]
    fn unknown_keys_suggest_the_nearest() {
        let far = parse_err("bogus = 1\n").message;
        assert!(far.contains("expected one of `workload`"), "{far}");
        assert!(!far.contains("did you mean"), "{far}");
        let near = parse_err("pool-size = [1]\n").message;
        assert_eq!(near, "unknown field `pool-size`; did you mean `pool_size`?");
    }

    /// Issue #37: `[[check]]` tables, each named by its line; check
    /// files relative to the study file; `--check` replaces a file's
    /// check of its name and adds the others.
    #[test]
    fn declared_checks_from_tables_files_and_flags() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("more.sql"),
            "-- name: money\n-- expect: 0\n-- during: true\nSELECT sum(abalance) FROM pgbench_accounts;\n",
        )
        .unwrap();
        let path = dir.path().join("study.toml");
        std::fs::write(
            &path,
            "workload = \"tpcb\"\ncheck_file = \"more.sql\"\n\n[[check]]\nname = \"no-negative-balance\"\n\
             sql = \"\"\"\nSELECT aid, abalance\n  FROM pgbench_accounts WHERE abalance < 0;\n\"\"\"\n\
             during = true\n\n[[check]]\nname = \"rows\"\nsql = \"SELECT count(*) FROM pgbench_accounts\"\nexpect = 100000\n",
        )
        .unwrap();
        let c = load(&path).unwrap();
        let names: Vec<&str> = c.checks.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["no-negative-balance", "rows", "money"]);
        let p = path.display();
        assert_eq!(c.checks[0].origin, format!("{p}:4"));
        assert_eq!(
            c.checks[0].sql,
            "SELECT aid, abalance\n  FROM pgbench_accounts WHERE abalance < 0"
        );
        assert!(c.checks[0].during);
        assert_eq!(
            (c.checks[1].origin.clone(), c.checks[1].expect),
            (format!("{p}:12"), Some(100000))
        );
        assert_eq!(
            c.checks[2].origin,
            format!("{}:1", dir.path().join("more.sql").display())
        );
        assert_eq!((c.checks[2].expect, c.checks[2].during), (Some(0), true));
        // A flag replaces the file's check of its name.
        let flags = Settings {
            check: Some(vec![
                checks::check_flag("rows=SELECT 1 WHERE false").unwrap(),
            ]),
            ..Settings::default()
        };
        let c = from_args(Some(&path), None, flags).unwrap();
        let names: Vec<&str> = c.checks.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["no-negative-balance", "rows", "money"]);
        assert_eq!(c.checks[1].origin, "--check");
        assert_eq!(c.checks[1].sql, "SELECT 1 WHERE false");
        // Errors: the table's line, the key, a missing file, two of a name.
        for (text, line, needle) in [
            ("[[check]]\nname = \"a\"\n", 1, "check: missing field `sql`"),
            (
                "[[check]]\nname = \"a\"\nsql = \"SELECT 1\"\nexpcet = 1\n",
                4,
                "unknown field `expcet`; did you mean `expect`?",
            ),
            (
                "[[check]]\nname = \"a b\"\nsql = \"SELECT 1\"\n",
                1,
                "' ' is not allowed",
            ),
            (
                "[[check]]\nname = \"a\"\nsql = \"SELECT 1\"\nexpect = \"x\"\n",
                4,
                "check: invalid type: string \"x\"",
            ),
            (
                "check_file = \"/nonexistent/c.sql\"\n",
                1,
                "check_file: cannot read /nonexistent/c.sql",
            ),
            (
                "[[check]]\nname = \"a\"\nsql = \"SELECT 1\"\n[[check]]\nname = \"a\"\nsql = \"SELECT 2\"\n",
                6,
                "two checks are named a (study.toml:1 and study.toml:4)",
            ),
        ] {
            let e = parse_err(text);
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.message.contains(needle), "{text:?}: {e}");
        }
    }

    #[test]
    fn missing_file_names_it() {
        let e = load(Path::new("/nonexistent/study.toml")).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/study.toml"), "{e}");
    }

    /// A real PostgreSQL bin directory (the tests need the server installed).
    fn bin() -> String {
        crate::postgres::find_bin_dir(None)
            .unwrap()
            .display()
            .to_string()
    }

    #[test]
    fn pg_bin_takes_a_directory_a_list_or_named_builds() {
        let b = bin();
        let c = parse_ok(&format!("pg_bin = \"{b}\"\n"));
        assert_eq!(c.target.pg_bin, Some(PgBuild::new(None, &b).unwrap()));
        assert!(c.pg_bin.is_empty());
        // One named build: the server, with its name.
        let c = parse_ok(&format!("pg_bin = {{ stock = \"{b}\" }}\n"));
        assert_eq!(c.target.pg_bin.unwrap().name.as_deref(), Some("stock"));
        // Named builds in the file's order (not sorted), as a factor.
        let c = parse_ok(&format!(
            "[factors]\npg_bin = {{ stock = \"{b}\", finer-lock = \"{b}\", a = \"{b}\" }}\n"
        ));
        assert_eq!(c.target.pg_bin, None);
        assert_eq!(c.pg_build_labels(), ["stock", "finer-lock", "a"]);
        assert_eq!(c.pg_bin_dir("finer-lock"), Some(Path::new(&b)));
        let cells = crate::executor::cells(&c).unwrap();
        assert_eq!(cells[0].pg_bin.as_deref(), Some("stock"));
        assert!(
            cells[0].label().ends_with(" pg_bin=stock"),
            "{}",
            cells[0].label()
        );
        // The table form over several lines, and a list (labels derived).
        let c = parse_ok(&format!("[pg_bin]\nstock = \"{b}\"\npatched = \"{b}\"\n"));
        assert_eq!(c.pg_build_labels(), ["stock", "patched"]);
        let c = parse_ok(&format!("pg_bin = [\"{b}\", \"{b}/\"]\n"));
        assert_eq!(c.pg_bin.len(), 0, "the same directory twice is one build");
        let other = tempfile::tempdir().unwrap();
        let other_bin = other.path().join("patched/bin");
        std::fs::create_dir_all(&other_bin).unwrap();
        for exe in ["postgres", "initdb"] {
            std::os::unix::fs::symlink(Path::new(&b).join(exe), other_bin.join(exe)).unwrap();
        }
        let o = other_bin.display();
        let c = parse_ok(&format!("pg_bin = [\"{b}\", \"{o}\"]\n"));
        let labels = c.pg_build_labels();
        assert_eq!(labels[1], "patched");
        assert_ne!(labels[0], labels[1]);
    }

    #[test]
    fn pg_bin_errors_name_the_line_and_the_build() {
        let b = bin();
        for (text, line, column, needle) in [
            (
                "pg_bin = \"/nonexistent/bin\"\n".to_string(),
                1,
                10,
                "pg_bin: /nonexistent/bin has no `postgres`".to_string(),
            ),
            (
                format!("pg_bin = [\"{b}\",\n  \"/tmp\"]\n"),
                2,
                3,
                "pg_bin: /tmp has no `postgres`".into(),
            ),
            (
                format!("[pg_bin]\nstock = \"{b}\"\n\"fin er\" = \"{b}\"\n"),
                3,
                1,
                "pg_bin: build name 'fin er' is not a label".into(),
            ),
            (
                format!("pg_bin = {{ \"\" = \"{b}\" }}\n"),
                1,
                12,
                "pg_bin: empty build name".into(),
            ),
            (
                "pg_bin = { stock = \"/nonexistent/bin\" }\n".into(),
                1,
                20,
                "pg_bin: /nonexistent/bin has no `postgres`".into(),
            ),
            (
                "pg_bin = { stock = 15 }\n".into(),
                1,
                20,
                "pg_bin: stock: expected a string".into(),
            ),
            (
                "pg_bin = {}\n".into(),
                1,
                10,
                "pg_bin: the table is empty".into(),
            ),
            (
                "pg_bin = []\n".into(),
                1,
                10,
                "pg_bin: the list is empty".into(),
            ),
            (
                "pg_bin = [3]\n".into(),
                1,
                11,
                "pg_bin: expected a string".into(),
            ),
            (
                "pg_bin = 3\n".into(),
                1,
                10,
                "pg_bin: invalid type: integer `3`, expected a directory, a list".into(),
            ),
            (
                format!("pg_bin = {{ a = \"{b}\", a = \"{b}\" }}\n"),
                1,
                0,
                "duplicate key".into(),
            ),
            (
                format!("pg_bin = \"{b}\"\n[factors]\npg_bin = [\"{b}\"]\n"),
                3,
                10,
                "pg_bin: given both".into(),
            ),
        ] {
            let e = parse_err(&text);
            assert_eq!(e.line, line, "{text:?}: {e}");
            if column > 0 {
                assert_eq!(e.column, column, "{text:?}: {e}");
            }
            assert!(e.message.contains(&needle), "{text:?}: {e}");
        }
    }

    /// `r` written as a store in a new directory, interrupted.
    fn stored(mut r: crate::store::Results) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        r.complete = false;
        let mut db =
            crate::store::sqlite::Store::create(&dir.path().join(crate::store::sqlite::DB_FILE))
                .unwrap();
        db.save_header(&r).unwrap();
        for run in &r.runs {
            db.save_run(run).unwrap();
        }
        dir
    }

    #[test]
    fn resume_keeps_build_labels_and_reads_older_stores() {
        let r = crate::model::fixture::with_builds();
        let dir = stored(r.clone());
        let c = resume_study(dir.path(), &defaults(), &[]).unwrap();
        assert_eq!(c.pg_build_labels(), ["stock", "finer-lock"]);
        assert_eq!(
            c.pg_bin_dir("finer-lock"),
            Some(Path::new("/opt/pg-patched/bin"))
        );
        // A store from before labels: its directories are the labels, as
        // its cells hold them.
        let mut old = r;
        let dirs = std::mem::take(&mut old.config.pg_bin_dirs);
        old.config.pg_bin = old.config.pg_bin.iter().map(|l| dirs[l].clone()).collect();
        for run in &mut old.runs {
            run.cell.pg_bin = run.cell.pg_bin.as_ref().map(|l| dirs[l].clone());
        }
        let dir = stored(old);
        let c = resume_study(dir.path(), &defaults(), &[]).unwrap();
        assert_eq!(
            c.pg_build_labels(),
            ["/usr/lib/postgresql/16/bin", "/opt/pg-patched/bin"]
        );
        assert_eq!(
            c.pg_bin_dir("/opt/pg-patched/bin"),
            Some(Path::new("/opt/pg-patched/bin"))
        );
        // A named single build keeps its name.
        let mut one = crate::model::fixture::results();
        one.config.target_options.pg_bin = Some("/usr/lib/postgresql/16/bin".into());
        one.config.target_options.pg_bin_label = Some("stock".into());
        let dir = stored(one);
        let c = resume_study(dir.path(), &defaults(), &[]).unwrap();
        let b = c.target.pg_bin.unwrap();
        assert_eq!(b.name.as_deref(), Some("stock"));
        assert_eq!(b.dir, Path::new("/usr/lib/postgresql/16/bin"));
    }

    #[test]
    fn resume_keeps_the_cluster() {
        use crate::model::{ClusterConfig, Ha, ReadFrom};
        let cluster = ClusterConfig {
            standbys: 2,
            ha: Ha::None,
            ha_fast: false,
            read_from: ReadFrom::Standby,
        };
        let mut target = defaults().target;
        target.cluster = cluster;
        let mut r = crate::model::fixture::results();
        r.config.target_options = crate::model::StoredTarget::of(&target);
        let c = resume_study(stored(r).path(), &defaults(), &[]).unwrap();
        assert_eq!(c.target.cluster, cluster);
        // Failover manager and fast timeouts, too.
        let ha = ClusterConfig {
            standbys: 0,
            ha: Ha::PgAutoFailover,
            ha_fast: true,
            read_from: ReadFrom::Primary,
        };
        target.cluster = ha;
        let mut r = crate::model::fixture::results();
        r.config.target_options = crate::model::StoredTarget::of(&target);
        let c = resume_study(stored(r).path(), &defaults(), &[]).unwrap();
        assert_eq!(c.target.cluster, ha);
        // A single server stores none, and resumes as one.
        let r = crate::model::fixture::results();
        assert_eq!(r.config.target_options.cluster, None);
        let c = resume_study(stored(r).path(), &defaults(), &[]).unwrap();
        assert_eq!(c.target.cluster, ClusterConfig::default());
    }
}
