//! What drives a study's runs: a built-in workload or pgbench scripts
//! ([`builtin::Builtin`], run by isobench's own clients), several
//! built-in workloads when the workload is a factor
//! ([`factored::Factored`], one `Builtin` per workload) or an external
//! load ([`load_cmd::LoadCmd`], a command isobench starts and reads the
//! figures of). The orchestration in [`super::run`] is the same for all
//! of them: a driver only loads a template database and measures one run.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use tokio_util::sync::CancellationToken;

use super::schedule::ScheduledRun;
use super::target::Server;
use crate::model::{LoadReport, StudyConfig};
use crate::progress::Progress;
use crate::store::RunRecord;

pub(super) mod builtin;
pub(super) mod factored;
pub(super) mod load_cmd;
mod records;
pub(super) mod scripts;
pub(super) mod services;

/// Where a template database is loaded: on `srv`, database `tmpl`, with
/// `run_db` the run database to drop first and `dir` the results
/// directory.
pub(super) struct TemplateCtx<'a> {
    pub srv: &'a Server,
    pub tmpl: &'a str,
    pub run_db: &'a str,
    pub dir: &'a Path,
    pub progress: &'a Progress,
    pub cancel: &'a CancellationToken,
}

/// One run and where it happens: planned run `run`, number `index`
/// (1-based, in plan order), in a fresh copy `run_db` of template `tmpl`
/// on `srv`, with results directory `dir`.
pub(super) struct RunCtx<'a> {
    pub cfg: &'a StudyConfig,
    pub srv: &'a Server,
    pub tmpl: &'a str,
    pub run_db: &'a str,
    pub dir: &'a Path,
    pub run: &'a ScheduledRun,
    pub index: u32,
    pub cancel: &'a CancellationToken,
    pub progress: &'a Progress,
    /// A sharded study's coordination (`--shard`); `None`: not sharded.
    pub coord: Option<&'a super::shard::Coord>,
    /// The run's transaction log, if any.
    pub tx_log: Option<crate::engine::txlog::TxLogHook>,
}

/// What drives a study's runs: a built-in workload ([`builtin::Builtin`])
/// or an external load ([`load_cmd::LoadCmd`]).
pub(super) trait Driver {
    /// The key of cell `cell`'s data variant: cells with equal keys share a
    /// template database.
    fn data_key(&self, cell: usize) -> String;

    /// Whether every data variant lives in the one database of the target
    /// (an external load on an external server), so that loading one
    /// replaces the others.
    fn one_database(&self, _srv: &Server) -> bool {
        false
    }

    /// Loads cell `cell`'s data into template database `ctx.tmpl` on
    /// `ctx.srv`. Returns `None` when cancelled.
    async fn load_template(&self, cell: usize, ctx: &TemplateCtx<'_>)
    -> Result<Option<LoadReport>>;

    /// Runs `ctx.run` in a fresh copy `ctx.run_db` of `ctx.tmpl`, with
    /// results directory `ctx.dir`. Returns the record, and an error when
    /// the study must stop after saving it.
    async fn one_run(&self, ctx: &RunCtx<'_>) -> Result<(RunRecord, Option<anyhow::Error>)>;
}

/// What the stored configuration says about the driver.
pub(super) struct StudyHeader {
    pub workload: String,
    pub strategies: Vec<String>,
    pub param_defaults: BTreeMap<String, String>,
}
