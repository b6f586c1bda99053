//! Address spaces: what a switch between processes costs on top of a
//! thread switch.
//!
//! Every task runs in an address space (`mm`): the main task's is 0, a
//! [`Space::Thread`] child shares its parent's, a [`Space::Process`] child
//! gets a new one, and a [`Space::Kernel`] thread has none and borrows
//! whatever the CPU has loaded (Linux's lazy TLB: switching to a kworker or
//! to idle loads nothing). A CPU that switches to a task of another address
//! space than the one it has loaded pays `mm.switch_ns` (`switch_mm_irqs_off`:
//! the CR3 load and its bookkeeping). With PCID, Linux gives each CPU
//! `mm.asids` ASID slots (`TLB_NR_DYN_ASIDS` = 6 in arch/x86/mm/tlb.c): an
//! address space that still holds a slot keeps its TLB entries; one that
//! does not takes the next slot in turn (`choose_new_asid`'s `next_asid`,
//! round robin, not least recently used) and starts with a cold TLB, paying
//! a page walk for every page it touches: its working set's pages plus
//! `mm.base_pages`, at most `mm.tlb_entries`, each `mm.page_walk_ns`.
//! Simplification: a kept slot is modelled as a fully warm TLB, although
//! all ASIDs share the second-level TLB's capacity.

use workloads::Space;

use crate::engine::Engine;

/// The address-space state of one CPU.
#[derive(Clone, Debug, Default)]
pub(crate) struct CpuMm {
    /// The address space loaded (CR3); None before the first task runs.
    pub loaded: Option<u64>,
    /// The address space holding each ASID slot.
    pub asids: Vec<u64>,
    /// The slot the next miss takes (round robin).
    pub next_asid: usize,
}

/// Address-space switches and TLB refills, for `sim_stats`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MmStats {
    pub switches: u64,
    pub tlb_refills: u64,
}

/// The address space of a task spawned with `space` by a parent in `parent`.
pub(crate) fn child_mm(space: Space, parent: Option<u64>, next_mm: &mut u64) -> Option<u64> {
    match space {
        Space::Thread => Some(parent.unwrap_or(0)),
        Space::Process => {
            *next_mm += 1;
            Some(*next_mm)
        }
        Space::Kernel => None,
    }
}

impl Engine {
    /// The cost (ns, before jitter) of switching `cpu` to a task in `mm`
    /// with a working set of `ws` bytes, and the CPU's new state.
    pub(crate) fn switch_mm(&mut self, cpu: usize, mm: Option<u64>, ws: u64) -> f64 {
        let Some(mm) = mm else {
            return 0.0; // a kernel thread borrows the loaded mm
        };
        let p = &self.prof.mm;
        let c = &mut self.cpus[cpu].mm;
        if c.loaded == Some(mm) {
            return 0.0;
        }
        c.loaded = Some(mm);
        self.mm_stats.switches += 1;
        self.world.lock().counters[cpu].mm_switches += 1;
        let mut ns = p.switch_ns;
        if !c.asids.contains(&mm) {
            self.mm_stats.tlb_refills += 1;
            let pages = ws.div_ceil(4096) + p.base_pages;
            ns += pages.min(p.tlb_entries) as f64 * p.page_walk_ns;
            let slots = p.asids as usize;
            if c.asids.len() < slots {
                c.asids.push(mm);
            } else {
                c.asids[c.next_asid % slots] = mm;
            }
            c.next_asid = (c.next_asid + 1) % slots;
        }
        ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_share_processes_get_their_own_kernel_threads_none() {
        let mut next = 0;
        assert_eq!(child_mm(Space::Thread, Some(3), &mut next), Some(3));
        assert_eq!(child_mm(Space::Process, Some(3), &mut next), Some(1));
        assert_eq!(child_mm(Space::Process, Some(3), &mut next), Some(2));
        assert_eq!(child_mm(Space::Kernel, Some(3), &mut next), None);
        assert_eq!(child_mm(Space::Thread, None, &mut next), Some(0));
    }
}
