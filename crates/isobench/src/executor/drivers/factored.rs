//! The driver of a study whose workload is a factor (`-w tpcb,ssibench`,
//! `workload = ["tpcb", "ssibench"]`): one [`Builtin`] driver per
//! workload, each over its own cells, behind [`DynDriver`] (the workloads
//! are different Rust types). A cell's data variant is keyed by its
//! workload too, so that every distinct (workload, scale, ...) is loaded
//! once as a template database.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

use anyhow::{Result, anyhow, bail};

use super::builtin::{Builtin, for_cells};
use super::{Driver, RunCtx, StudyHeader, TemplateCtx};
use crate::drive::Driven;
use crate::executor::schedule::{ScheduledRun, cells, validate, workload_spec};
use crate::model::{BadInput, LoadReport, StudyConfig};
use crate::store::{Cell, RunRecord};
use crate::workload::WorkloadSpec;

/// A boxed future that can move between threads.
type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// [`Driver`] with its futures boxed, so that drivers of different
/// workload types can sit in one list.
pub(in crate::executor) trait DynDriver: Send + Sync {
    /// As [`Driver::data_key`].
    fn data_key(&self, cell: usize) -> String;
    /// As [`Driver::load_template`].
    fn load_template<'a>(
        &'a self,
        cell: usize,
        ctx: &'a TemplateCtx<'a>,
    ) -> BoxFut<'a, Result<Option<LoadReport>>>;
    /// As [`Driver::one_run`].
    fn one_run<'a>(
        &'a self,
        ctx: &'a RunCtx<'a>,
    ) -> BoxFut<'a, Result<(RunRecord, Option<anyhow::Error>)>>;
}

impl<W: Driven> DynDriver for Builtin<W> {
    fn data_key(&self, cell: usize) -> String {
        Driver::data_key(self, cell)
    }
    fn load_template<'a>(
        &'a self,
        cell: usize,
        ctx: &'a TemplateCtx<'a>,
    ) -> BoxFut<'a, Result<Option<LoadReport>>> {
        Box::pin(Driver::load_template(self, cell, ctx))
    }
    fn one_run<'a>(
        &'a self,
        ctx: &'a RunCtx<'a>,
    ) -> BoxFut<'a, Result<(RunRecord, Option<anyhow::Error>)>> {
        Box::pin(Driver::one_run(self, ctx))
    }
}

/// One driver per workload of the factor, and where each cell of the
/// study is: (index into `parts`, index among that part's cells).
pub(in crate::executor) struct Factored {
    parts: Vec<Box<dyn DynDriver>>,
    /// The workload name of each part.
    names: Vec<String>,
    of_cell: Vec<(usize, usize)>,
}

impl Driver for Factored {
    fn data_key(&self, cell: usize) -> String {
        let (p, local) = self.of_cell[cell];
        format!("{} {}", self.names[p], self.parts[p].data_key(local))
    }

    async fn load_template(
        &self,
        cell: usize,
        ctx: &TemplateCtx<'_>,
    ) -> Result<Option<LoadReport>> {
        let (p, local) = self.of_cell[cell];
        self.parts[p].load_template(local, ctx).await
    }

    async fn one_run(&self, ctx: &RunCtx<'_>) -> Result<(RunRecord, Option<anyhow::Error>)> {
        let (p, local) = self.of_cell[ctx.run.cell_index];
        let run = ScheduledRun {
            cell_index: local,
            ..ctx.run.clone()
        };
        let sub = RunCtx {
            run: &run,
            tx_log: ctx.tx_log.clone(),
            ..*ctx
        };
        self.parts[p].one_run(&sub).await
    }
}

/// Builds the [`Builtin`] driver of one workload type for its cells.
struct PartWith<'a> {
    spec: &'static WorkloadSpec,
    cells: &'a [Cell],
}

impl crate::drive::WithWorkload for PartWith<'_> {
    type Output = Result<Box<dyn DynDriver>>;
    fn with<W: Driven>(self) -> Self::Output {
        Ok(Box::new(for_cells::<W>(self.spec, self.cells)?))
    }
}

/// The cells, stored header and driver of a study whose workload is a
/// factor (`cfg.workloads`). The stored workload is the first (the
/// baseline's); strategies and parameter defaults are every workload's.
/// Errors: invalid configuration, an unknown workload, a bad factor or
/// parameter value of any workload, before anything starts.
pub(in crate::executor) fn prepare(
    cfg: &StudyConfig,
) -> Result<(Vec<Cell>, StudyHeader, Factored)> {
    validate(cfg).map_err(BadInput::from_error)?;
    let cells = cells(cfg)?;
    let mut parts = Vec::new();
    let mut names = Vec::new();
    let mut of_cell = vec![(0, 0); cells.len()];
    let mut strategies = Vec::new();
    let mut param_defaults = BTreeMap::new();
    for (p, name) in cfg.workloads.iter().enumerate() {
        let one = StudyConfig {
            workload: name.clone(),
            ..cfg.clone()
        };
        let spec = workload_spec(&one)?;
        let mine: Vec<Cell> = cells
            .iter()
            .filter(|c| &c.workload == name)
            .cloned()
            .collect();
        for (local, (i, _)) in cells
            .iter()
            .enumerate()
            .filter(|(_, c)| &c.workload == name)
            .enumerate()
        {
            of_cell[i] = (p, local);
        }
        let part = crate::drive::with_workload(spec.name, PartWith { spec, cells: &mine })
            .ok_or_else(|| anyhow!("workload '{name}' is not registered"))??;
        for c in &mine {
            if !strategies.contains(&c.strategy) {
                strategies.push(c.strategy.clone());
            }
        }
        for (k, v) in spec.defaults() {
            param_defaults.entry(k).or_insert(v);
        }
        parts.push(part);
        names.push(name.clone());
    }
    if cells.iter().any(|c| !names.contains(&c.workload)) {
        bail!("a cell's workload is not in the workload factor");
    }
    let header = StudyHeader {
        workload: cfg.workload.clone(),
        strategies,
        param_defaults,
    };
    Ok((
        cells,
        header,
        Factored {
            parts,
            names,
            of_cell,
        },
    ))
}
