//! The integration tests, one binary (as ripgrep's `tests/tests.rs`):
//! each module drives the `isobench` binary or the library against a real
//! PostgreSQL that isobench starts itself; `common` holds the shared
//! run/read/assert helpers. One binary links the library once instead of
//! once per file.

mod common;

mod anomalies;
mod checks;
mod code_map;
mod determinism;
mod dsn;
mod examples;
mod external;
mod factors;
mod failover;
mod faults;
mod file_size;
mod guarantees;
mod hosts;
mod hunt;
mod interrupt;
mod isolation_specs;
mod list_append;
mod load_cmd;
mod merge;
mod metrics_listen;
mod module_graph;
mod new_user;
mod newcomer;
mod pgbench;
mod pgbench_expr;
mod pgbench_scripts;
mod pooler;
mod precision;
mod replication;
mod run_e2e;
mod shards;
mod slurm;
mod study;
mod tpcc;
mod words;
mod workloads;
mod ycsb_sysbench;
