//! Helpers shared by every integration test: the `isobench` binary
//! ([`isobench`], [`run`]), short studies ([`Study`]), servers started
//! through the library ([`Server`]), and reading results
//! ([`read_json`], [`assert_schema_valid`], [`assert_managed_server_gone`],
//! a run's [`invariant`] and [`tx_type`]), and waiting on events instead
//! of sleeping ([`wait_until`], [`wait_for_clients_in_transactions`],
//! [`wait_for_query`]).

mod files;
mod records;
mod server;
mod study;
mod wait;

pub use files::*;
pub use records::*;
pub use server::*;
pub use study::*;
pub use wait::*;
