//! What drives the server under test: the built-in [`workload`]s, the
//! [`pgbench`] script language, the [`engine`] (client threads, retries,
//! pools, pacing) that runs them and records into [`metrics`], the
//! external load commands ([`load_cmd`]), and the samplers of the server
//! ([`observe`]); and, above them all, [`drive`]: the engine compiled
//! for each workload type, and the built-in workloads' types by name.
//! It knows nothing of studies, stores or reports.

// The floors below, under the names the code uses for them.
use isobench_elle as elle;
use isobench_model as model;
use isobench_server as postgres;
use isobench_wire as wire;

pub mod drive;
pub mod engine;
pub mod load_cmd;
pub mod metrics;
pub mod observe;
pub mod pgbench;
pub mod workload;
