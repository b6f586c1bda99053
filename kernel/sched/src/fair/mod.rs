//! The fair scheduling class: runqueue, timeline, the entity steps CFS and
//! EEVDF share, and the pick disciplines in which they differ (Linux
//! kernel/sched/fair.c, entity level).

pub mod cfs_rq;
pub mod entity;
pub mod pick;
pub mod timeline;

#[cfg(test)]
mod fidelity_tests;
#[cfg(test)]
mod tests;
