//! Helpers shared by every integration test: the `isobench` binary
//! ([`isobench`], [`run`]), short studies ([`Study`]), servers started
//! through the library ([`Server`]), and reading results
//! ([`read_json`], [`assert_schema_valid`], [`assert_managed_server_gone`]).

mod files;
mod server;
mod study;

pub use files::*;
pub use server::*;
pub use study::*;
