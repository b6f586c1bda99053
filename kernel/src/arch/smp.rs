//! Starting the application processors (APs) with INIT-SIPI-SIPI.
//!
//! APs are started one after another through one trampoline page below 1 MiB
//! (see `trampoline.rs`); each gets its logical number in MADT order, its own
//! boot stack, GDT/TSS with IST stacks, the shared IDT, per-CPU data, x87/SSE
//! set up (`fpu.rs`) and its APIC, then reports online. An AP that does not
//! report within the timeout is listed as failed by APIC id and the run goes
//! on without it.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::arch::naked_asm;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use x86_64::registers::control::{Cr0, Cr3, Cr4};
use x86_64::registers::model_specific::Efer;

use super::{apic, fpu, gdt, idt, percpu, time, trampoline};
use crate::mm::frames;

/// Size of each AP's boot stack (which later runs its idle loop).
const AP_STACK_BYTES: usize = bootcfg::AP_STACK_BYTES;
/// How long to wait for an AP to report, in ns: hardware needs ~ms, but under
/// multi-threaded TCG this is host time, and 384 vCPU threads on a loaded
/// 2-core host left an AP unstarted after 2 s (2s384-smt preset, host load
/// 21). Linux's x86 bring-up also allows an AP 10 s.
const AP_TIMEOUT_NS: u64 = 10_000_000_000;

/// Handed to the AP through the trampoline; lives until the AP reports.
#[repr(C)]
struct ApBoot {
    cpu: u32,
    apic_id: u32,
    cr0: u64,
    cr4: u64,
    efer: u64,
    /// Set by the AP once it no longer uses the trampoline page.
    started: AtomicBool,
    /// What the AP runs after bring-up.
    main: fn() -> !,
}

/// Result of starting one AP.
#[derive(Clone, Copy, Debug)]
pub struct ApStatus {
    pub apic_id: u32,
    /// Logical number it was given (kept even if it failed, so numbering is stable).
    pub cpu: u32,
    pub online: bool,
    /// Time from INIT to "online", ns.
    pub start_ns: u64,
}

static NEXT_AP_ONLINE: AtomicU32 = AtomicU32::new(0);

/// First Rust code an AP runs, on its own stack, with the kernel's CR3.
extern "sysv64" fn ap_rust_entry(boot: &'static ApBoot) -> ! {
    // SAFETY: the BSP's control-register values are valid for every CPU of
    // this machine (same kernel page tables, same feature set).
    unsafe {
        Cr0::write_raw(boot.cr0);
        Cr4::write_raw(boot.cr4);
        Efer::write_raw(boot.efer);
    }
    let me = percpu::install(boot.cpu, boot.apic_id);
    if let Err(msg) = fpu::init_this_cpu() {
        panic!("{msg}");
    }
    gdt::init_this_cpu();
    idt::load();
    apic::init_this_cpu();
    me.online.store(true, Ordering::Release);
    NEXT_AP_ONLINE.fetch_add(1, Ordering::Release);
    boot.started.store(true, Ordering::Release);
    (boot.main)()
}

/// Trampoline target: switch to the kernel's page table, then call Rust.
/// In: rdi = &ApBoot, rsi = kernel CR3, rsp = the AP's stack top.
#[unsafe(naked)]
extern "sysv64" fn ap_entry_asm() -> ! {
    naked_asm!(
        "mov cr3, rsi",
        "xor ebp, ebp",
        "call {entry}",
        "ud2",
        entry = sym ap_rust_entry,
    )
}

/// Builds the temporary top-level table for the trampoline: the kernel's
/// entries, plus an identity mapping of the trampoline page in slot 0.
fn temporary_pml4(phys_offset: u64, tramp_phys: u64) -> u64 {
    let alloc =
        || frames::alloc_below(1, 1 << 32).expect("no frame below 4 GiB for the AP page tables");
    let (pml4, pdpt, pd, pt) = (alloc(), alloc(), alloc(), alloc());
    let table = |phys: u64| (phys_offset + phys) as *mut u64;
    let (kernel_l4, _) = Cr3::read();
    let entry_slot = (ap_entry_asm as *const () as u64 >> 39) & 0x1FF;
    assert_ne!(
        entry_slot, 0,
        "kernel text shares PML4 slot 0 with the AP identity map"
    );
    const P_W: u64 = 0b11; // present | writable
    // SAFETY: all four frames were just allocated (zeroed, exclusively ours) and
    // are mapped through the physical window; the kernel's PML4 is only read.
    unsafe {
        core::ptr::copy_nonoverlapping(table(kernel_l4.start_address().as_u64()), table(pml4), 512);
        *table(pml4) = pdpt | P_W;
        *table(pdpt).add(((tramp_phys >> 30) & 0x1FF) as usize) = pd | P_W;
        *table(pd).add(((tramp_phys >> 21) & 0x1FF) as usize) = pt | P_W;
        *table(pt).add(((tramp_phys >> 12) & 0x1FF) as usize) = tramp_phys | P_W;
    }
    pml4
}

fn poke<T>(page: *mut u8, offset: usize, value: T) {
    // SAFETY: `offset` comes from `trampoline::patch_offsets`, inside the
    // trampoline copy on a page we own; fields may be unaligned in the blob.
    unsafe { core::ptr::write_unaligned(page.add(offset) as *mut T, value) }
}

/// Waits `ns`, or until `done()`: spinning, or with `halt` (under QEMU
/// `-icount`) halted between the boot CPU's ticks. Under icount every
/// `rdtsc` of a spin is an exit to QEMU, and the INIT-SIPI delays of a
/// 160-CPU bring-up spun about 1.6 G instructions; halted, QEMU jumps its
/// virtual clock to the next tick instead. The wait then ends up to a tick
/// late, which the start-up protocol allows (its delays are minimums).
fn wait_until(ns: u64, halt: bool, done: impl Fn() -> bool) -> bool {
    let start = time::now_ns();
    while time::now_ns() - start < ns {
        if done() {
            return true;
        }
        if halt {
            // Interrupts are on (the boot CPU's tick runs): it wakes us.
            x86_64::instructions::hlt();
        } else {
            core::hint::spin_loop();
        }
    }
    done()
}

/// Starts every AP in `apic_ids` (logical numbers 1, 2, ... in this order);
/// each runs `main` once online. Returns one status per AP. `halt`: wait
/// halted between ticks rather than spinning (under `-icount`).
pub fn start_aps(apic_ids: &[u32], phys_offset: u64, main: fn() -> !, halt: bool) -> Vec<ApStatus> {
    let mut status = Vec::with_capacity(apic_ids.len());
    if apic_ids.is_empty() {
        return status;
    }
    let blob = trampoline::image();
    let tramp_phys =
        frames::alloc_below(1, 0x10_0000).expect("no free page below 1 MiB for the AP trampoline");
    assert!(blob.len() <= 4096);
    let page = (phys_offset + tramp_phys) as *mut u8;
    // SAFETY: the page is ours (just allocated) and mapped through the window.
    unsafe { core::ptr::copy_nonoverlapping(blob.as_ptr(), page, blob.len()) };
    let off = trampoline::patch_offsets();
    let pml4 = temporary_pml4(phys_offset, tramp_phys);
    poke(page, off.gdt_base, (tramp_phys + off.gdt as u64) as u32);
    poke(page, off.farptr, (tramp_phys + off.long_mode as u64) as u32);
    poke(page, off.cr3_low, pml4 as u32);
    poke(
        page,
        off.cr3,
        Cr3::read_raw().0.start_address().as_u64() | Cr3::read_raw().1 as u64,
    );
    poke(page, off.entry, ap_entry_asm as *const () as u64);
    let sipi_page = (tramp_phys >> 12) as u8;

    for (i, &apic_id) in apic_ids.iter().enumerate() {
        let cpu = i as u32 + 1;
        let stack = Box::leak(alloc::vec![0u8; AP_STACK_BYTES].into_boxed_slice());
        let stack_top = (stack.as_ptr() as u64 + AP_STACK_BYTES as u64) & !0xF;
        let boot: &'static ApBoot = Box::leak(Box::new(ApBoot {
            cpu,
            apic_id,
            cr0: Cr0::read_raw(),
            cr4: Cr4::read_raw(),
            efer: Efer::read_raw(),
            started: AtomicBool::new(false),
            main,
        }));
        poke(page, off.stack, stack_top);
        poke(page, off.arg, boot as *const ApBoot as u64);
        core::sync::atomic::fence(Ordering::SeqCst);

        let t0 = time::now_ns();
        let started = || boot.started.load(Ordering::Acquire);
        apic::send_init(apic_id);
        wait_until(10_000_000, halt, || false);
        apic::send_startup(apic_id, sipi_page);
        if !wait_until(200_000, halt, started) {
            apic::send_startup(apic_id, sipi_page);
        }
        let online = wait_until(AP_TIMEOUT_NS, halt, started);
        let start_ns = time::now_ns() - t0;
        if !online {
            log::error!(
                "AP with APIC id {apic_id} (cpu {cpu}) did not come up within {} ms",
                AP_TIMEOUT_NS / 1_000_000
            );
        }
        status.push(ApStatus {
            apic_id,
            cpu,
            online,
            start_ns,
        });
    }
    status
}
