//! gds-gate engine.
pub mod scenario;
