//! A 4 KiB physical frame allocator over the usable regions that the heap did
//! not take. Frames are never freed (the kernel's lifetime is one experiment);
//! callers can ask for frames below a limit (e.g. the AP trampoline < 1 MiB).

use alloc::vec::Vec;

use bootloader_api::info::{MemoryRegion, MemoryRegionKind};
use spin::Mutex;
use x86_64::instructions::interrupts;

/// Size of one frame.
pub const FRAME_SIZE: u64 = 4096;

struct Frames {
    /// Free ranges `[start, end)`, frame-aligned, ascending.
    ranges: Vec<(u64, u64)>,
    phys_offset: u64,
}

static FRAMES: Mutex<Option<Frames>> = Mutex::new(None);

/// Records the usable regions minus `heap` (physical range) as free frames.
pub fn init(regions: &[MemoryRegion], phys_offset: u64, heap: (u64, u64)) {
    let mut ranges = Vec::new();
    for r in regions
        .iter()
        .filter(|r| r.kind == MemoryRegionKind::Usable)
    {
        // Never hand out frame 0: a null physical address is a classic bug trap.
        let start = r.start.max(FRAME_SIZE).next_multiple_of(FRAME_SIZE);
        let end = r.end & !(FRAME_SIZE - 1);
        for (s, e) in [(start, end.min(heap.0)), (start.max(heap.1), end)] {
            if s < e {
                ranges.push((s, e));
            }
        }
    }
    ranges.sort_unstable();
    *FRAMES.lock() = Some(Frames {
        ranges,
        phys_offset,
    });
}

/// Allocates `count` contiguous zeroed frames wholly below `limit`; returns the
/// physical address, or `None` when no such run is left.
pub fn alloc_below(count: u64, limit: u64) -> Option<u64> {
    interrupts::without_interrupts(|| {
        let mut guard = FRAMES.lock();
        let frames = guard.as_mut()?;
        let bytes = count * FRAME_SIZE;
        let slot = frames
            .ranges
            .iter_mut()
            .find(|(s, e)| e - s >= bytes && s + bytes <= limit)?;
        let phys = slot.0;
        slot.0 += bytes;
        let virt = (frames.phys_offset + phys) as *mut u8;
        // SAFETY: the range was free usable RAM, now exclusively ours, and is
        // mapped writable through the physical memory window.
        unsafe { core::ptr::write_bytes(virt, 0, bytes as usize) };
        Some(phys)
    })
}

/// Bytes still available as frames.
pub fn free_bytes() -> u64 {
    interrupts::without_interrupts(|| {
        FRAMES
            .lock()
            .as_ref()
            .map_or(0, |f| f.ranges.iter().map(|(s, e)| e - s).sum())
    })
}
