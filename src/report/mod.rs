//! Renderers: pure functions from [`crate::store::Results`] to text.
pub mod markdown;
pub mod terminal;
