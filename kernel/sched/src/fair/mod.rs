//! The fair scheduling class: runqueue, timeline and the CFS / EEVDF pick
//! algorithms (Linux kernel/sched/fair.c, entity level).

pub mod cfs;
pub mod cfs_rq;
pub mod eevdf;
pub mod entity;
pub mod timeline;

#[cfg(test)]
mod fidelity_tests;
#[cfg(test)]
mod tests;
