//! GDT and TSS per CPU, with IST stacks so that a double fault, an NMI or a
//! machine check always runs on a known-good stack (e.g. after a stack overflow).

use alloc::boxed::Box;
use x86_64::VirtAddr;
use x86_64::instructions::segmentation::{CS, DS, ES, SS, Segment};
use x86_64::instructions::tables::load_tss;
use x86_64::structures::gdt::{Descriptor, GlobalDescriptorTable, SegmentSelector};
use x86_64::structures::tss::TaskStateSegment;

/// IST slot (0-based, as in the TSS array) of the double-fault stack.
pub const IST_DOUBLE_FAULT: u16 = 0;
/// IST slot of the NMI stack.
pub const IST_NMI: u16 = 1;
/// IST slot of the machine-check stack.
pub const IST_MACHINE_CHECK: u16 = 2;

const IST_STACK_BYTES: usize = 16 * 1024;

#[repr(C, align(16))]
struct IstStack([u8; IST_STACK_BYTES]);

/// Builds and loads a GDT + TSS for the executing CPU. Needs the heap.
pub fn init_this_cpu() {
    let tss = Box::leak(Box::new(TaskStateSegment::new()));
    for slot in [IST_DOUBLE_FAULT, IST_NMI, IST_MACHINE_CHECK] {
        let stack = Box::leak(Box::new(IstStack([0; IST_STACK_BYTES])));
        let top = VirtAddr::from_ptr(stack.0.as_ptr()) + IST_STACK_BYTES as u64;
        tss.interrupt_stack_table[slot as usize] = top;
    }
    let tss: &'static TaskStateSegment = tss;

    let gdt = Box::leak(Box::new(GlobalDescriptorTable::new()));
    let code = gdt.append(Descriptor::kernel_code_segment());
    let data = gdt.append(Descriptor::kernel_data_segment());
    let tss_sel = gdt.append(Descriptor::tss_segment(tss));
    let gdt: &'static GlobalDescriptorTable = gdt;
    gdt.load();
    // SAFETY: the selectors index the GDT just loaded, whose code/data/TSS
    // descriptors are valid long-mode kernel descriptors that live forever.
    unsafe {
        CS::set_reg(code);
        for set in [DS::set_reg, ES::set_reg, SS::set_reg] {
            set(data);
        }
        load_tss(tss_sel);
    }
    let _: SegmentSelector = tss_sel;
}
