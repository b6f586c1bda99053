//! The x86_64 hardware layer: everything that touches registers, ports and
//! descriptor tables lives below this module, behind a small safe facade.
//! Policy code (the `sched` and `topology` crates) never reaches in here.

pub mod apic;
pub mod cpu;
pub mod fpu;
pub mod fpu_regs;
pub mod gdt;
pub mod identity;
pub mod idt;
pub mod ipi;
pub mod irq;
pub mod percpu;
pub mod pic;
pub mod qemu;
pub mod serial;
pub mod smp;
pub mod switch;
pub mod time;
pub mod timer;
pub mod trampoline;
pub mod trap;
