//! The engine for each workload type, compiled in this crate (issue #48),
//! and the built-in workloads' types by name ([`with_workload`]).
//!
//! An async function's body is compiled where its future is first polled.
//! Called generically from the crates above, the engine's client loop for
//! every workload would be generated there, and again on every edit to
//! them (a report, say). [`Driven::run_engine`] is not generic: each
//! implementation boxes [`engine::run_gated`]'s future here, so the client
//! loop is generated once, in this crate, at its optimisation level, and
//! the crates above call it through the box.

use crate::engine::{self, RunArgs, Running};
use crate::pgbench::run::ScriptWorkload;
use crate::workload::{
    Workload, docstore, list_append, sibench, smallbank, ssibench, sysbench, tpcb, tpcc,
    write_skew, ycsb,
};

/// A workload whose engine is compiled in this crate: every built-in
/// workload and pgbench's scripts.
pub trait Driven: Workload {
    /// Runs the engine on this workload ([`engine::run_gated`]'s
    /// arguments in `args`, its result).
    fn run_engine<'a>(&'a self, args: RunArgs<'a>) -> Running<'a, Self>;
}

/// [`Driven`] for each type listed.
macro_rules! driven {
    ($($ty:ty),* $(,)?) => {
        $(impl Driven for $ty {
            fn run_engine<'a>(&'a self, args: RunArgs<'a>) -> Running<'a, Self> {
                Box::pin(engine::run_with(self, args))
            }
        })*
    };
}

driven!(
    tpcb::Tpcb,
    sibench::Sibench,
    ssibench::Ssibench,
    smallbank::Smallbank,
    write_skew::WriteSkew,
    docstore::Docstore,
    list_append::ListAppend,
    ycsb::Ycsb,
    sysbench::Sysbench,
    tpcc::Tpcc,
    ScriptWorkload,
);

/// What a caller does with one built-in workload's type, chosen by name
/// at run time ([`with_workload`]); e.g. the study runs a study of it.
pub trait WithWorkload {
    type Output;
    fn with<W: Driven>(self) -> Self::Output;
}

/// Calls `f` with the type of the built-in workload named `name` (a
/// name of [`crate::workload::REGISTRY`]); `None` for a name that is not
/// registered.
pub fn with_workload<F: WithWorkload>(name: &str, f: F) -> Option<F::Output> {
    Some(match name {
        n if n == tpcb::SPEC.name => f.with::<tpcb::Tpcb>(),
        n if n == sibench::SPEC.name => f.with::<sibench::Sibench>(),
        n if n == ssibench::SSIBENCH.name || n == ssibench::SIMPLE_SSIBENCH.name => {
            f.with::<ssibench::Ssibench>()
        }
        n if n == smallbank::SPEC.name => f.with::<smallbank::Smallbank>(),
        n if n == write_skew::SPEC.name => f.with::<write_skew::WriteSkew>(),
        n if n == docstore::SPEC.name => f.with::<docstore::Docstore>(),
        n if n == list_append::SPEC.name || n == list_append::REGISTER_SPEC.name => {
            f.with::<list_append::ListAppend>()
        }
        n if n == ycsb::SPEC.name => f.with::<ycsb::Ycsb>(),
        n if n == sysbench::SPEC.name => f.with::<sysbench::Sysbench>(),
        n if n == tpcc::SPEC.name => f.with::<tpcc::Tpcc>(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::REGISTRY;

    /// Every registered name reaches the type of its own module (the
    /// two SSIBENCH variants share one, and rw-register list-append's),
    /// and no other name reaches any.
    #[test]
    fn each_registered_name_reaches_its_workload_type() {
        struct TypeName;
        impl WithWorkload for TypeName {
            type Output = &'static str;
            fn with<W: Driven>(self) -> &'static str {
                std::any::type_name::<W>()
            }
        }
        for spec in REGISTRY {
            let module = match spec.name {
                "simple-ssibench" => "ssibench".to_string(),
                "rw-register" => "list_append".to_string(),
                n => n.replace('-', "_"),
            };
            let ty = with_workload(spec.name, TypeName).unwrap();
            assert!(
                ty.contains(&format!("::{module}::")),
                "{} -> {ty}",
                spec.name
            );
        }
        assert_eq!(with_workload("tpc-c", TypeName), None);
    }
}
