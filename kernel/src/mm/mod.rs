//! Physical memory: the boot memory map, the kernel heap and a frame allocator.
//!
//! The bootloader maps all physical memory at `physical_memory_offset`, so the
//! heap is simply the largest usable RAM region seen through that window (no
//! page-table edits needed); the remaining usable RAM, including low memory
//! for the AP start-up trampoline, is handed out as 4 KiB frames. Processes'
//! top-level page tables come from those frames (`space`).

pub mod acpi_window;
pub mod frames;
pub mod heap;
pub mod mmio;
pub mod phys;
pub mod space;

use bootloader_api::BootInfo;
use bootloader_api::info::MemoryRegionKind;

/// Which firmware booted us, as told by the memory map's region kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Firmware {
    Bios,
    Uefi,
    Unknown,
}

impl Firmware {
    /// Lower-case name used in records.
    pub fn name(self) -> &'static str {
        match self {
            Firmware::Bios => "bios",
            Firmware::Uefi => "uefi",
            Firmware::Unknown => "unknown",
        }
    }
}

/// What the memory subsystem found and set up.
#[derive(Clone, Copy, Debug)]
pub struct MemoryInfo {
    /// RAM usable by the kernel (usable + bootloader-owned regions), bytes.
    pub memory_bytes: u64,
    /// Bytes given to the heap.
    pub heap_bytes: u64,
    /// Virtual address at which physical memory is mapped.
    pub phys_offset: u64,
    /// Number of regions in the boot memory map.
    pub regions: usize,
    /// Firmware kind.
    pub firmware: Firmware,
    /// End of the highest region in the memory map (the physical-memory
    /// window covers everything below it).
    pub phys_limit: u64,
}

/// Keep this much of the largest region for frames (stacks with guard pages, etc.).
const FRAME_RESERVE: u64 = bootcfg::FRAME_RESERVE_BYTES;
/// Never make the heap smaller than this.
const MIN_HEAP: u64 = 4 << 20;

/// Sets up the heap and the frame allocator from the boot memory map.
pub fn init(boot_info: &BootInfo) -> MemoryInfo {
    let phys_offset = boot_info
        .physical_memory_offset
        .into_option()
        .expect("bootloader did not map physical memory (mappings.physical_memory)");
    let regions = &boot_info.memory_regions;
    let mut memory_bytes = 0;
    let mut firmware = Firmware::Unknown;
    let mut largest: Option<(u64, u64)> = None;
    let phys_limit = regions.iter().map(|r| r.end).max().unwrap_or(0);
    for r in regions.iter() {
        match r.kind {
            MemoryRegionKind::Usable => {
                memory_bytes += r.end - r.start;
                if largest.is_none_or(|(s, e)| r.end - r.start > e - s) {
                    largest = Some((r.start, r.end));
                }
            }
            MemoryRegionKind::Bootloader => memory_bytes += r.end - r.start,
            MemoryRegionKind::UnknownUefi(_) => firmware = Firmware::Uefi,
            MemoryRegionKind::UnknownBios(_) => firmware = Firmware::Bios,
            _ => {}
        }
    }
    let (start, end) = largest.expect("boot memory map has no usable region");
    let start = start.next_multiple_of(4096);
    let size = end.saturating_sub(start);
    assert!(
        size >= MIN_HEAP,
        "largest usable region is only {size} bytes"
    );
    let heap_bytes = (size.saturating_sub(FRAME_RESERVE)).max(MIN_HEAP) & !0xFFF;
    heap::init(phys_offset + start, heap_bytes as usize);
    space::init(phys_offset);
    frames::init(regions, phys_offset, (start, start + heap_bytes));
    MemoryInfo {
        memory_bytes,
        heap_bytes,
        phys_offset,
        regions: regions.len(),
        firmware,
        phys_limit,
    }
}
