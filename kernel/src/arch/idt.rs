//! The interrupt descriptor table, shared by all CPUs: every vector points at
//! its `trap` stub; #DF, NMI and #MC run on their own IST stacks.
//!
//! Built by hand (256 raw interrupt gates) rather than through the `x86_64`
//! crate's typed IDT, because our handlers are uniform assembly stubs and the
//! typed table refuses raw addresses for error-code exceptions.

use spin::Once;
use x86_64::VirtAddr;
use x86_64::instructions::segmentation::{CS, Segment};
use x86_64::instructions::tables::lidt;
use x86_64::structures::DescriptorTablePointer;

use super::gdt::{IST_DOUBLE_FAULT, IST_MACHINE_CHECK, IST_NMI};
use super::trap::stub_address;

/// One 64-bit interrupt gate descriptor (Intel SDM Vol. 3, 6.14.1).
#[repr(C)]
#[derive(Clone, Copy)]
struct Gate {
    offset_low: u16,
    selector: u16,
    ist: u8,
    type_attr: u8,
    offset_mid: u16,
    offset_high: u32,
    reserved: u32,
}

/// Present, DPL 0, 64-bit interrupt gate (interrupts disabled on entry).
const INTERRUPT_GATE: u8 = 0x8E;

impl Gate {
    fn new(handler: u64, selector: u16, ist_slot: Option<u16>) -> Self {
        Gate {
            offset_low: handler as u16,
            selector,
            // The IST field is 1-based; 0 means "no stack switch".
            ist: ist_slot.map_or(0, |s| s as u8 + 1),
            type_attr: INTERRUPT_GATE,
            offset_mid: (handler >> 16) as u16,
            offset_high: (handler >> 32) as u32,
            reserved: 0,
        }
    }
}

#[repr(C, align(16))]
struct Idt([Gate; 256]);

static IDT: Once<Idt> = Once::new();

fn build() -> Idt {
    let selector = CS::get_reg().0;
    Idt(core::array::from_fn(|vector| {
        let ist = match vector {
            2 => Some(IST_NMI),
            8 => Some(IST_DOUBLE_FAULT),
            18 => Some(IST_MACHINE_CHECK),
            _ => None,
        };
        Gate::new(stub_address(vector as u8), selector, ist)
    }))
}

/// Loads the IDT on the executing CPU (built on first use, after the GDT).
pub fn load() {
    let idt = IDT.call_once(build);
    let ptr = DescriptorTablePointer {
        limit: (core::mem::size_of::<Idt>() - 1) as u16,
        base: VirtAddr::from_ptr(idt as *const Idt),
    };
    // SAFETY: `idt` is a 'static table of valid gates whose stubs and IST slots
    // exist (every CPU's TSS has the three IST stacks before this is called).
    unsafe { lidt(&ptr) };
}
