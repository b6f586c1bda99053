//! Address spaces: a top-level page table (PML4) per process, so that a
//! switch between threads of two processes loads CR3, as Linux's
//! `switch_mm_irqs_off` does, and costs what a CR3 load and the TLB flush it
//! implies cost on this machine.
//!
//! What an [`AddressSpace`] is: one 4 KiB PML4 frame from the frame
//! allocator whose 512 entries are a copy of the kernel's PML4 (the
//! bootloader's page tables, read from CR3 at boot) taken when the space is
//! created. Every entry points at the kernel's own lower-level tables, so
//! the kernel image, the physical-memory window (heap, thread stacks,
//! frames), the boot stacks and the MMIO window map the same in every space,
//! and the kernel runs unchanged whichever CR3 is loaded. **Nothing is
//! private** to a process: there is no user memory, no copy-on-write, and a
//! PML4 slot the kernel fills after a space was created would be missing
//! from it (the kernel maps nothing new after bring-up; `mmio::map` checks
//! that no space exists yet). What differs per process is the CR3 value,
//! which is the point: the cost of a real CR3 load and its TLB flush.
//!
//! What a CR3 load flushes: PCID is not used (CR4.PCIDE = 0), so every load
//! flushes all TLB entries except global ones, and the bootloader sets no
//! G bit in its mappings (and the kernel does not set CR4.PGE, which would
//! be needed for G to count): a switch flushes the whole TLB, the kernel's
//! own translations included. [`global_mappings`] reads both at run time;
//! the `calibrate` record reports them, and times a page walk with
//! [`flush_tlb`] and [`page_size`].
//!
//! Lifetime: threads hold an `Arc<AddressSpace>`; each CPU's [`LoadedMm`]
//! holds one for the space it has loaded (Linux's `cpu_tlbstate.loaded_mm`),
//! so a CPU that lazily keeps an exited process's page table loaded (a
//! kernel thread or idle runs on it: lazy TLB) keeps the frame alive. The
//! frame goes back to the allocator when the last reference drops, which
//! is always after every CPU left it: a [`LoadedMm`] drops its reference only
//! after loading another CR3. [`LoadedMm::leave_lazy`] switches a CPU back to
//! the kernel's PML4 so an exited process's frame can be freed.

use alloc::sync::Arc;
use core::fmt;
use core::sync::atomic::{AtomicU64, Ordering};

use spin::Mutex;
use x86_64::registers::control::{Cr3, Cr4, Cr4Flags};
use x86_64::structures::paging::{PageTable, PageTableFlags};

use super::frames;

/// Physical address of the kernel's PML4 (the bootloader's, from CR3).
static KERNEL_PML4: AtomicU64 = AtomicU64::new(0);
/// Virtual address of physical 0 (the bootloader's physical-memory window).
static PHYS_OFFSET: AtomicU64 = AtomicU64::new(0);
/// Address spaces created and freed so far.
static CREATED: AtomicU64 = AtomicU64::new(0);
static FREED: AtomicU64 = AtomicU64::new(0);

/// Records the kernel's PML4 (call once at boot, on the boot CPU).
pub fn init(phys_offset: u64) {
    let (frame, _) = Cr3::read();
    KERNEL_PML4.store(frame.start_address().as_u64(), Ordering::Relaxed);
    PHYS_OFFSET.store(phys_offset, Ordering::Relaxed);
}

/// Address spaces (created, freed) so far.
pub fn counts() -> (u64, u64) {
    (
        CREATED.load(Ordering::Relaxed),
        FREED.load(Ordering::Relaxed),
    )
}

fn table_at(phys: u64) -> *mut PageTable {
    (PHYS_OFFSET.load(Ordering::Relaxed) + phys) as *mut PageTable
}

/// One process's page tables: its own PML4 frame (see the module docs).
pub struct AddressSpace {
    /// Physical address of the PML4 frame (the CR3 value).
    pml4: u64,
}

impl AddressSpace {
    /// A new address space: a fresh PML4 frame holding a copy of the
    /// kernel's PML4. Panics when no frame is left.
    pub fn new() -> Arc<AddressSpace> {
        let kernel = KERNEL_PML4.load(Ordering::Relaxed);
        assert!(kernel != 0, "mm::space::init was not called");
        let pml4 = frames::alloc_frame().expect("no frame left for an address space's PML4");
        // SAFETY: `pml4` is a frame just allocated for us (no one else uses
        // it) and the kernel's PML4 is a live page table; both lie in the
        // physical-memory window, are page-aligned and page-sized. The
        // kernel's PML4 is only read (its entries change only at bring-up,
        // before any space exists: `mmio::map` checks).
        unsafe {
            let src = &*table_at(kernel);
            let dst = &mut *table_at(pml4);
            for (d, s) in dst.iter_mut().zip(src.iter()) {
                *d = s.clone();
            }
        }
        CREATED.fetch_add(1, Ordering::Relaxed);
        Arc::new(AddressSpace { pml4 })
    }
}

impl Drop for AddressSpace {
    fn drop(&mut self) {
        // No CPU has it loaded: every CPU that loaded it holds a reference
        // in its `LoadedMm` until it loaded another CR3.
        frames::free_frame(self.pml4);
        FREED.fetch_add(1, Ordering::Relaxed);
    }
}

impl fmt::Debug for AddressSpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AddressSpace(cr3 {:#x})", self.pml4)
    }
}

/// The address space one CPU has loaded in CR3 (None = the kernel's PML4),
/// holding a reference so it stays alive while loaded. Use a CPU's own
/// `LoadedMm` only on that CPU with interrupts off.
pub struct LoadedMm {
    loaded: Mutex<Option<Arc<AddressSpace>>>,
}

impl Default for LoadedMm {
    fn default() -> Self {
        Self::new()
    }
}

impl LoadedMm {
    /// A CPU running on the kernel's PML4 (as every CPU starts).
    pub const fn new() -> LoadedMm {
        LoadedMm {
            loaded: Mutex::new(None),
        }
    }

    /// `switch_mm`: loads `next`'s PML4 unless this CPU has it loaded
    /// already; true when it loaded CR3. Allocation-free: a reference count
    /// goes up, and the previous space's goes down (freeing its frame if
    /// that was the last reference, after CR3 no longer points at it).
    pub fn switch_to(&self, next: &Arc<AddressSpace>) -> bool {
        let mut loaded = self.loaded.lock();
        if loaded.as_ref().is_some_and(|l| Arc::ptr_eq(l, next)) {
            return false;
        }
        self.check_cr3(&loaded);
        load_cr3(next.pml4);
        let prev = loaded.replace(next.clone());
        drop(loaded);
        drop(prev);
        true
    }

    /// Switches back to the kernel's PML4 and drops the reference to the
    /// space this CPU lazily kept loaded, if any; true when it had one.
    /// Call only when the running thread has no address space of its own
    /// (a kernel thread, idle, or interrupt context over one of them).
    pub fn leave_lazy(&self) -> bool {
        let mut loaded = self.loaded.lock();
        if loaded.is_none() {
            return false;
        }
        self.check_cr3(&loaded);
        load_cr3(KERNEL_PML4.load(Ordering::Relaxed));
        let prev = loaded.take();
        drop(loaded);
        drop(prev);
        true
    }

    /// Panics unless CR3 is what this `LoadedMm` says (it is used on its own
    /// CPU): dropping a reference another CPU relies on would free a page
    /// table still in use.
    fn check_cr3(&self, loaded: &Option<Arc<AddressSpace>>) {
        let want = loaded
            .as_ref()
            .map_or(KERNEL_PML4.load(Ordering::Relaxed), |s| s.pml4);
        let (frame, _) = Cr3::read();
        assert_eq!(
            frame.start_address().as_u64(),
            want,
            "LoadedMm used on a CPU whose CR3 it does not describe"
        );
    }
}

fn load_cr3(pml4: u64) {
    // SAFETY: `pml4` is the kernel's PML4 or an `AddressSpace`'s, whose
    // entries are a copy of the kernel's: every address the kernel uses maps
    // the same under it, so execution continues unchanged. The frame stays
    // allocated while loaded (the caller's `LoadedMm` holds its reference).
    // No PCID: CR3 bit 63 clear, low bits 0.
    unsafe { core::arch::asm!("mov cr3, {}", in(reg) pml4, options(nostack, preserves_flags)) };
}

/// Reloads CR3 with its current value, flushing this CPU's TLB (all of it:
/// no global pages, no PCID). No mapping changes.
pub fn flush_tlb() {
    let (frame, flags) = Cr3::read();
    // SAFETY: the same root table and flags as loaded now: every address
    // maps as before; only cached translations are dropped.
    unsafe { Cr3::write(frame, flags) };
}

/// The size of the page that maps `virt` in the kernel's page tables
/// (4 KiB, 2 MiB or 1 GiB), None if it is unmapped.
pub fn page_size(virt: u64) -> Option<u64> {
    let mut table = KERNEL_PML4.load(Ordering::Relaxed);
    for level in (1..=4u32).rev() {
        let index = ((virt >> (12 + 9 * (level - 1))) & 511) as usize;
        // SAFETY: `table` is the kernel's PML4 or a table a present entry of
        // the kernel's hierarchy points at, in the physical-memory window;
        // it is only read.
        let e = unsafe { &(&*table_at(table))[index] };
        let f = e.flags();
        if !f.contains(PageTableFlags::PRESENT) {
            return None;
        }
        if level == 1 || (level < 4 && f.contains(PageTableFlags::HUGE_PAGE)) {
            return Some(1 << (12 + 9 * (level - 1)));
        }
        table = e.addr().as_u64();
    }
    None
}

/// Whether global pages survive a CR3 load here, read at run time: CR4.PGE,
/// CR4.PCIDE, and how many of the kernel's leaf mappings (4 KiB, 2 MiB or
/// 1 GiB pages) have the G bit.
#[derive(Clone, Copy, Debug)]
pub struct GlobalMappings {
    pub cr4_pge: bool,
    pub cr4_pcide: bool,
    pub leaves: u64,
    pub global_leaves: u64,
}

/// Walks the kernel's page tables (see [`GlobalMappings`]).
pub fn global_mappings() -> GlobalMappings {
    let cr4 = Cr4::read();
    let mut g = GlobalMappings {
        cr4_pge: cr4.contains(Cr4Flags::PAGE_GLOBAL),
        cr4_pcide: cr4.contains(Cr4Flags::PCID),
        leaves: 0,
        global_leaves: 0,
    };
    walk(KERNEL_PML4.load(Ordering::Relaxed), 4, &mut g);
    g
}

fn walk(table: u64, level: u32, g: &mut GlobalMappings) {
    // SAFETY: `table` is a live page table of the kernel's hierarchy (the
    // PML4 from CR3, or a table one of its present entries points at), in
    // the physical-memory window; it is only read.
    let t = unsafe { &*table_at(table) };
    for e in t.iter() {
        let f = e.flags();
        if !f.contains(PageTableFlags::PRESENT) {
            continue;
        }
        if level == 1 || (level < 4 && f.contains(PageTableFlags::HUGE_PAGE)) {
            g.leaves += 1;
            if f.contains(PageTableFlags::GLOBAL) {
                g.global_leaves += 1;
            }
        } else {
            walk(e.addr().as_u64(), level - 1, g);
        }
    }
}
