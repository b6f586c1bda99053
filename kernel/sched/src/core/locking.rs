//! Taking and releasing runqueue locks inside an operation, in ascending
//! CPU order (`double_lock_balance()`), applying deferred blocked-load
//! removals on the way in and publishing snapshots on the way out.

use super::{Guard, SchedCore, lock_or_report};
use crate::CpuId;
use crate::rq::Rq;
use crate::small::Small;
use crate::task::TaskArena;

impl<'a> SchedCore<'a> {
    /// Number of CPUs.
    pub fn nr_cpus(&self) -> usize {
        self.topo.nr_cpus
    }

    /// Take `cpu`'s runqueue lock too. Locks are taken in ascending CPU
    /// order: if `cpu` is below a held one and not free right away, every
    /// held lock is released and all are re-taken in order
    /// (`double_lock_balance()`); returns true if that happened, so the
    /// caller knows the held runqueues may have changed meanwhile.
    pub fn lock_also(&mut self, cpu: CpuId) -> bool {
        let Err(at) = self.rqs.pos(cpu) else {
            return false;
        };
        let sh = self.shared;
        if at == self.rqs.held.len() {
            let rq = lock_or_report(&sh.rqs[cpu], "runqueue");
            let arena = lock_or_report(&sh.arenas[cpu], "task arena");
            self.take_locks(cpu, rq, arena, at);
            return false;
        }
        if let Some(rq) = sh.rqs[cpu].try_lock()
            && let Some(ar) = sh.arenas[cpu].try_lock()
        {
            self.take_locks(cpu, rq, ar, at);
            return false;
        }
        let mut cpus: Small<CpuId> = Small::default();
        for (c, _) in self.rqs.held.iter() {
            cpus.insert(cpus.len(), *c);
        }
        cpus.insert(at, cpu);
        self.unlock_all();
        for &c in cpus.iter() {
            let n = self.rqs.held.len();
            let rq = lock_or_report(&sh.rqs[c], "runqueue");
            self.take_locks(c, rq, lock_or_report(&sh.arenas[c], "task arena"), n);
        }
        true
    }

    #[inline]
    pub(super) fn take_locks(
        &mut self,
        cpu: CpuId,
        mut rq: Guard<'a, Rq>,
        arena: Guard<'a, TaskArena>,
        at: usize,
    ) {
        self.shared.apply_removed(cpu, &mut rq);
        self.rqs.held.insert(at, (cpu, rq));
        self.tasks.held.insert(at, (cpu, arena));
    }

    /// Release `cpu`'s runqueue, publishing its snapshot.
    #[inline]
    pub fn unlock(&mut self, cpu: CpuId) {
        if let Ok(i) = self.rqs.pos(cpu) {
            let (_, rq) = self.rqs.held.remove(i);
            self.shared.publish(cpu, &rq);
            self.tasks.held.remove(i);
        }
    }

    /// Publish `cpu`'s snapshot now (held), without releasing it.
    #[inline]
    pub fn publish(&self, cpu: CpuId) {
        self.shared.publish(cpu, &self.rqs[cpu]);
    }

    #[inline]
    pub(super) fn unlock_all(&mut self) {
        while let Some((cpu, rq)) = self.rqs.held.pop() {
            self.shared.publish(cpu, &rq);
            self.tasks.held.pop();
        }
    }
}
