//! The kernel heap: a `linked_list_allocator` over one physical RAM range.
//!
//! The allocator's lock is taken with interrupts disabled, so an interrupt
//! handler that allocates can never deadlock against the code it interrupted.
//! It is a test-and-set lock, like `IrqSpinLock` (see there why not a ticket
//! lock).

use core::alloc::{GlobalAlloc, Layout};
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU64, Ordering};

use linked_list_allocator::Heap;
use spin::Mutex;
use x86_64::instructions::interrupts;

struct KernelHeap(Mutex<Heap>);

#[global_allocator]
static HEAP: KernelHeap = KernelHeap(Mutex::new(Heap::empty()));

/// Allocations since boot (every CPU), so an experiment can show that a
/// steady-state path allocates nothing (`allocations`).
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: all access to the inner `Heap` is serialised by the mutex, with
// interrupts off; `Heap` hands out disjoint, correctly aligned blocks.
unsafe impl GlobalAlloc for KernelHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        interrupts::without_interrupts(|| {
            self.0
                .lock()
                .allocate_first_fit(layout)
                .map_or(core::ptr::null_mut(), |p| p.as_ptr())
        })
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if let Some(p) = NonNull::new(ptr) {
            // SAFETY: the caller guarantees `ptr` came from `alloc` with `layout`.
            interrupts::without_interrupts(|| unsafe { self.0.lock().deallocate(p, layout) });
        }
    }
}

/// Hands `[start, start + size)` (a virtual range backed by RAM) to the heap.
pub fn init(start: u64, size: usize) {
    // SAFETY: `mm::init` passes a usable RAM region, seen through the physical
    // memory window, that nothing else uses; this runs once.
    unsafe { HEAP.0.lock().init(start as *mut u8, size) };
}

/// (used, free) heap bytes.
pub fn usage() -> (usize, usize) {
    interrupts::without_interrupts(|| {
        let h = HEAP.0.lock();
        (h.used(), h.free())
    })
}

/// Heap allocations made since boot, on every CPU (reallocations included:
/// `GlobalAlloc::realloc` allocates through `alloc`).
pub fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::Relaxed)
}
