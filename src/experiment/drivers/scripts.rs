//! The driver of pgbench scripts (`-f`, `-b`): the scripts run as a
//! workload of isobench's own clients ([`Builtin`] over
//! [`ScriptWorkload`]s), on pgbench's tables (then `--init-sql` when
//! `-w tpcb` is named) or on the data of `--init-sql` alone. Every script
//! (and every expression) is parsed before anything starts.

use std::collections::BTreeMap;

use anyhow::{Result, bail};

use super::StudyHeader;
use super::builtin::Builtin;
use crate::experiment::SCRIPTS;
use crate::experiment::plan::{cells, validate};
use crate::model::{BadInput, ExperimentConfig};
use crate::pgbench::run::ScriptWorkload;
use crate::store::Cell;
use crate::workload;

/// The cells, stored header and driver of a study of pgbench scripts.
/// Errors: invalid configuration, a script that cannot be read or
/// parsed, `--param` or `--strategy` given.
pub(in crate::experiment) fn prepare(
    cfg: &ExperimentConfig,
) -> Result<(Vec<Cell>, StudyHeader, Builtin<ScriptWorkload>)> {
    use crate::pgbench::{run, script};
    validate(cfg).map_err(BadInput::from_error)?;
    if !cfg.params.is_empty() || !cfg.strategies.is_empty() {
        bail!(BadInput(
            "--param and --strategy belong to built-in workloads; pgbench scripts take variables with -D NAME=VALUE"
                .into()
        ));
    }
    let sc = &cfg.scripts;
    let mut scripts = Vec::new();
    for (path, weight) in &sc.files {
        let text = std::fs::read_to_string(path).map_err(|e| {
            BadInput(format!(
                "-f {}: cannot read the script: {e}",
                path.display()
            ))
        })?;
        scripts.push(
            script::parse(&path.display().to_string(), &text, *weight)
                .map_err(BadInput::from_error)?,
        );
    }
    for (name, weight) in &sc.builtins {
        scripts.push(script::builtin(name, *weight).map_err(BadInput)?);
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
                    then: then.clone(),
                    base: base.clone(),
                },
            };
            run::ScriptWorkload::new(
                scripts.clone(),
                sc.mode,
                sc.defines.clone(),
                data,
                c.clients,
            )
            .map_err(|e| BadInput(e).into())
        })
        .collect::<Result<_>>()?;
    let header = StudyHeader {
        workload: SCRIPTS.into(),
        strategies: Vec::new(),
        param_defaults: BTreeMap::new(),
    };
    let spec = workload::spec("tpcb").expect("built in");
    Ok((cells, header, Builtin { spec, workloads }))
}
