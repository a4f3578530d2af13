//! Readers: each executes a [`ReadPlan`](crate::plan::ReadPlan) into a destination buffer and times
//! only the read section.

pub mod posix;
