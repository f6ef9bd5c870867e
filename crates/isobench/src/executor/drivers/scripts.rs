//! The driver of pgbench scripts (`-f`, `-b`): the scripts run as a
//! workload of isobench's own clients ([`Builtin`] over
//! [`ScriptWorkload`]s), on pgbench's tables (then `--init-sql` when
//! `-w tpcb` is named) or on the data of `--init-sql` alone. Every script
//! (and every expression) is parsed before anything starts. With the
//! script as a factor (`ScriptsConfig::sets`) each cell runs its set's
//! scripts; pgbench's tables take `--param foreign-keys=true` (pgbench's
//! foreign keys, `pgbench -i -I f`), also as a factor.

use std::collections::BTreeMap;

use anyhow::{Result, bail};

use super::StudyHeader;
use super::builtin::Builtin;
use crate::executor::SCRIPTS;
use crate::executor::schedule::{cells, validate};
use crate::model::{BadInput, ScriptSet, StudyConfig};
use crate::pgbench::run::ScriptWorkload;
use crate::store::Cell;
use crate::workload;

/// The cells, stored header and driver of a study of pgbench scripts.
/// Errors: invalid configuration, a script that cannot be read or
/// parsed, `--param` or `--strategy` given.
pub(in crate::executor) fn prepare(
    cfg: &StudyConfig,
) -> Result<(Vec<Cell>, StudyHeader, Builtin<ScriptWorkload>)> {
    use crate::pgbench::{run, script};
    validate(cfg).map_err(BadInput::from_error)?;
    let sc = &cfg.scripts;
    // pgbench's tables take tpcb's `foreign-keys` (pgbench -I f); nothing
    // else of a built-in workload applies to scripts.
    let over_tables = sc.init_sql.is_none() || sc.workload_named;
    if !cfg.strategies.is_empty()
        || cfg
            .params
            .iter()
            .any(|(name, _)| name != "foreign-keys" || !over_tables)
    {
        bail!(BadInput(
            "--param and --strategy belong to built-in workloads; pgbench scripts take variables with -D NAME=VALUE \
             (and, over pgbench's tables, --param foreign-keys=true for pgbench's foreign keys)"
                .into()
        ));
    }
    for (_, values) in &cfg.params {
        if let Some(v) = values
            .iter()
            .find(|v| !matches!(v.as_str(), "true" | "false"))
        {
            bail!(BadInput(format!(
                "--param foreign-keys={v}: expected true or false"
            )));
        }
    }
    // The script sets: the factor's (named `script`), or the one mix of
    // -f/-b (named `-f`, label empty).
    let sets: Vec<(ScriptSet, &str)> = if sc.sets.is_empty() {
        let mix = ScriptSet {
            files: sc.files.clone(),
            builtins: sc.builtins.clone(),
            label: String::new(),
        };
        vec![(mix, "-f")]
    } else {
        sc.sets.iter().map(|s| (s.clone(), "script")).collect()
    };
    let mut scripts_of: BTreeMap<String, Vec<script::Script>> = BTreeMap::new();
    for (set, option) in sets {
        let label = &set.label;
        let mut scripts = Vec::new();
        for (path, weight) in &set.files {
            let text = std::fs::read_to_string(path).map_err(|e| {
                BadInput(if option == "-f" {
                    format!("-f {}: cannot read the script: {e}", path.display())
                } else {
                    format!(
                        "script (--script-factor) {label}: cannot read the script {}: {e}; \
                         check the path (in a study file it is relative to the file)",
                        path.display()
                    )
                })
            })?;
            scripts.push(
                script::parse(&path.display().to_string(), &text, *weight)
                    .map_err(BadInput::from_error)?,
            );
        }
        let mut builtins = Vec::new();
        for (name, weight) in &set.builtins {
            builtins.push(script::builtin(name, *weight).map_err(BadInput)?);
        }
        if sc.order.is_empty() || option != "-f" {
            scripts.extend(builtins);
        } else {
            // As given: the next built-in or the next file, in turn.
            let (mut files, mut builtins) = (scripts.into_iter(), builtins.into_iter());
            scripts = sc
                .order
                .iter()
                .filter_map(|&b| if b { builtins.next() } else { files.next() })
                .collect();
        }
        scripts_of.insert(set.label.clone(), scripts);
    }
    if sc.workload_named && cfg.workload != "tpcb" {
        bail!(BadInput(format!(
            "--workload {}: pgbench scripts run over pgbench's tables (-w tpcb, the default) or, \
             with --init-sql and no -w, over that file's own schema",
            cfg.workload
        )));
    }
    let init = match &sc.init_sql {
        Some(p) => Some(run::InitSql {
            path: p.clone(),
            text: std::fs::read_to_string(p).map_err(|e| {
                BadInput(format!("--init-sql {}: cannot read it: {e}", p.display()))
            })?,
        }),
        None => None,
    };
    let cells = cells(cfg)?;
    // isobench pgbench: pgbench's rules for the clients.
    let rules = cfg.pgbench.as_ref().map(|p| run::Rules {
        debug: p.debug,
        verbose_errors: p.verbose_errors,
        exit_on_abort: p.exit_on_abort,
        max_tries: match cfg.retry.max_tries {
            u32::MAX => 0,
            n => n,
        },
    });
    // Rows of pgbench_history in each loaded template, shared by the cells.
    let base = run::HistoryBase::default();
    let workloads: Vec<run::ScriptWorkload> = cells
        .iter()
        .map(|c| {
            // `--init-sql` alone replaces pgbench's tables; with the
            // workload named it runs after them.
            let data = match &init {
                Some(i) if !sc.workload_named => run::Data::InitSql(i.clone()),
                then => run::Data::Tpcb {
                    scale: c.scale.unwrap_or(1),
                    foreign_keys: c.params.get("foreign-keys").is_some_and(|v| v == "true"),
                    then: then.clone(),
                    base: base.clone(),
                },
            };
            let set = if c.work_factor.is_some() {
                c.workload.as_str()
            } else {
                ""
            };
            run::ScriptWorkload::new(
                scripts_of[set].clone(),
                sc.mode,
                sc.defines.clone(),
                data,
                c.clients,
            )
            .map(|w| w.with_rules(rules))
            .map_err(|e| BadInput(e).into())
        })
        .collect::<Result<_>>()?;
    let header = StudyHeader {
        workload: SCRIPTS.into(),
        strategies: Vec::new(),
        param_defaults: if over_tables {
            BTreeMap::from([("foreign-keys".to_string(), "false".to_string())])
        } else {
            BTreeMap::new()
        },
    };
    let spec = workload::spec("tpcb").expect("built in");
    Ok((cells, header, Builtin { spec, workloads }))
}
