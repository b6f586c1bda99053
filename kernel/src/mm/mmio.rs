//! Uncached mappings of device registers (local APIC, HPET, ...).
//!
//! The bootloader's physical-memory window is write-back cached and may not
//! even cover MMIO holes, so device pages get their own mappings, marked
//! uncacheable, in a window carved from an unused top-level page-table slot.

use core::sync::atomic::{AtomicU64, Ordering};

use spin::Mutex;
use x86_64::registers::control::Cr3;
use x86_64::structures::paging::{
    FrameAllocator, Mapper, OffsetPageTable, Page, PageTable, PageTableFlags, PhysFrame, Size4KiB,
};
use x86_64::{PhysAddr, VirtAddr};

use super::frames;

/// Next free virtual address in the MMIO window (0 = window not chosen yet).
static NEXT: AtomicU64 = AtomicU64::new(0);
static LOCK: Mutex<()> = Mutex::new(());

struct Frames;

// SAFETY: `frames::alloc_below` returns unused, zeroed, frame-aligned RAM.
unsafe impl FrameAllocator<Size4KiB> for Frames {
    fn allocate_frame(&mut self) -> Option<PhysFrame> {
        frames::alloc_below(1, u64::MAX).map(|p| PhysFrame::containing_address(PhysAddr::new(p)))
    }
}

fn active_table(phys_offset: u64) -> OffsetPageTable<'static> {
    let (frame, _) = Cr3::read();
    let virt = phys_offset + frame.start_address().as_u64();
    // SAFETY: CR3 points at the active top-level table, which the bootloader's
    // physical-memory window maps at `phys_offset + phys`. Callers serialise
    // through LOCK, so no other mutable reference exists meanwhile.
    unsafe { OffsetPageTable::new(&mut *(virt as *mut PageTable), VirtAddr::new(phys_offset)) }
}

/// Picks a free top-level (PML4) slot in the higher half as the window.
fn choose_window(table: &OffsetPageTable<'_>) -> u64 {
    let l4 = table.level_4_table();
    let slot = (256..511)
        .rev()
        .find(|&i| l4[i].is_unused())
        .expect("no free PML4 slot for MMIO mappings");
    // Sign-extend: slots >= 256 are in the canonical higher half.
    0xFFFF_0000_0000_0000 | ((slot as u64) << 39)
}

/// Maps `len` bytes of device memory at physical `phys` uncached; returns the
/// virtual address corresponding to `phys`.
pub fn map(phys: u64, len: u64, phys_offset: u64) -> u64 {
    let _guard = LOCK.lock();
    // A PML4 slot filled now would be missing from the address spaces
    // already made (each copies the kernel's PML4 when created).
    assert_eq!(
        super::space::counts().0,
        0,
        "mmio::map after the first address space was created"
    );
    let mut table = active_table(phys_offset);
    if NEXT.load(Ordering::Relaxed) == 0 {
        NEXT.store(choose_window(&table), Ordering::Relaxed);
    }
    let first = phys & !0xFFF;
    let pages = (phys + len - first).div_ceil(4096);
    let base = NEXT.fetch_add(pages * 4096, Ordering::Relaxed);
    let flags = PageTableFlags::PRESENT
        | PageTableFlags::WRITABLE
        | PageTableFlags::NO_CACHE
        | PageTableFlags::WRITE_THROUGH
        | PageTableFlags::NO_EXECUTE;
    for i in 0..pages {
        let page = Page::<Size4KiB>::containing_address(VirtAddr::new(base + i * 4096));
        let frame = PhysFrame::containing_address(PhysAddr::new(first + i * 4096));
        // SAFETY: the page lies in our private window (never mapped before) and
        // the frame is device memory that only the caller's driver touches.
        unsafe { table.map_to(page, frame, flags, &mut Frames) }
            .expect("mapping MMIO page")
            .flush();
    }
    base + (phys - first)
}
