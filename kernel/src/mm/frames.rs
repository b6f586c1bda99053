//! A 4 KiB physical frame allocator over the usable regions that the heap did
//! not take. Callers can ask for runs of frames below a limit (e.g. the AP
//! trampoline < 1 MiB); those are never freed. Single frames
//! ([`alloc_frame`]) can be given back ([`free_frame`]): they go on a free
//! list threaded through the freed frames themselves (each holds the next
//! one's physical address), so freeing never allocates and may run on the
//! scheduler's paths (an address space's last reference can drop there).

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
    /// Head of the list of freed single frames (0 = empty; frame 0 is never
    /// handed out).
    free_list: u64,
    /// Frames on that list.
    free_listed: u64,
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
        free_list: 0,
        free_listed: 0,
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

/// Allocates one zeroed frame, a freed one first; `None` when none is left.
/// Give it back with [`free_frame`].
pub fn alloc_frame() -> Option<u64> {
    let reused = interrupts::without_interrupts(|| {
        let mut guard = FRAMES.lock();
        let frames = guard.as_mut()?;
        let phys = frames.free_list;
        if phys == 0 {
            return None;
        }
        let head = (frames.phys_offset + phys) as *const u64;
        // SAFETY: `phys` heads the free list: a frame given back by
        // `free_frame`, owned by the list (no one else uses it), mapped
        // through the physical memory window; its first word is the next
        // entry's address, written by `free_frame`.
        frames.free_list = unsafe { head.read() };
        frames.free_listed -= 1;
        let virt = (frames.phys_offset + phys) as *mut u8;
        // SAFETY: the frame is now exclusively ours (taken off the list).
        unsafe { core::ptr::write_bytes(virt, 0, FRAME_SIZE as usize) };
        Some(phys)
    });
    reused.or_else(|| alloc_below(1, u64::MAX))
}

/// Gives back a frame from [`alloc_frame`]. The caller must not use it
/// again (nor any mapping or CR3 still pointing at it).
pub fn free_frame(phys: u64) {
    assert!(
        phys != 0 && phys.is_multiple_of(FRAME_SIZE),
        "free_frame({phys:#x}): not a frame"
    );
    interrupts::without_interrupts(|| {
        let mut guard = FRAMES.lock();
        let frames = guard.as_mut().expect("frames not initialised");
        let head = (frames.phys_offset + phys) as *mut u64;
        // SAFETY: the caller gave the frame up; it is RAM mapped writable
        // through the physical memory window, and from here only the free
        // list owns it.
        unsafe { head.write(frames.free_list) };
        frames.free_list = phys;
        frames.free_listed += 1;
    });
}

/// Bytes still available as frames.
pub fn free_bytes() -> u64 {
    interrupts::without_interrupts(|| {
        FRAMES.lock().as_ref().map_or(0, |f| {
            f.ranges.iter().map(|(s, e)| e - s).sum::<u64>() + f.free_listed * FRAME_SIZE
        })
    })
}
