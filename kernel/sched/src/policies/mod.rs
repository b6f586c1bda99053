//! Alternative policies built on the [`crate::SchedPolicy`] seam.

pub mod prev_idle;
