//! The application-processor start-up trampoline.
//!
//! A start-up IPI starts an AP in 16-bit real mode at `page << 12`, below
//! 1 MiB. This code is copied to such a page and goes straight from real mode
//! to long mode: load a temporary top-level page table (below 4 GiB, with the
//! trampoline page identity-mapped and the kernel's upper mappings copied),
//! enable PAE, set EFER.LME/NXE, load a tiny GDT, turn on protection and
//! paging together, far-jump to 64-bit code, then jump into the kernel with
//! the real CR3, a stack and an argument taken from the parameter block at
//! the end of the page. Everything is position independent (offsets from the
//! start label); the linear addresses are patched in by `smp.rs`.

use core::arch::global_asm;

global_asm!(
    r#"
    .section .rodata.ap_trampoline, "a"
    .balign 16
    .global ap_trampoline_start
ap_trampoline_start:
    .code16
    cli
    cld
    movw %cs, %ax
    movw %ax, %ds
    movl (ap_tramp_cr3_low - ap_trampoline_start), %eax
    movl %eax, %cr3
    movl %cr4, %eax
    orl $0x20, %eax
    movl %eax, %cr4
    movl $0xC0000080, %ecx
    rdmsr
    orl $0x900, %eax
    wrmsr
    lgdtl (ap_tramp_gdtr - ap_trampoline_start)
    movl %cr0, %eax
    orl $0x80000001, %eax
    movl %eax, %cr0
    ljmpl *(ap_tramp_farptr - ap_trampoline_start)

    .code64
    .global ap_tramp_long
ap_tramp_long:
    movw $0x10, %ax
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %ss
    movq ap_tramp_stack(%rip), %rsp
    movq ap_tramp_arg(%rip), %rdi
    movq ap_tramp_cr3(%rip), %rsi
    movq ap_tramp_entry(%rip), %rax
    jmp *%rax

    .balign 8
    .global ap_tramp_gdt
ap_tramp_gdt:
    .quad 0
    .quad 0x00AF9A000000FFFF
    .quad 0x00CF92000000FFFF
ap_tramp_gdtr:
    .word 23
    .global ap_tramp_gdt_base
ap_tramp_gdt_base:
    .long 0
    .global ap_tramp_farptr
ap_tramp_farptr:
    .long 0
    .word 0x08
    .global ap_tramp_cr3_low
ap_tramp_cr3_low:
    .long 0
    .balign 8
    .global ap_tramp_cr3
ap_tramp_cr3:
    .quad 0
    .global ap_tramp_stack
ap_tramp_stack:
    .quad 0
    .global ap_tramp_arg
ap_tramp_arg:
    .quad 0
    .global ap_tramp_entry
ap_tramp_entry:
    .quad 0
    .global ap_trampoline_end
ap_trampoline_end:
    .code64
    .text
    "#,
    options(att_syntax)
);

unsafe extern "C" {
    static ap_trampoline_start: u8;
    static ap_trampoline_end: u8;
    static ap_tramp_gdt_base: u8;
    static ap_tramp_farptr: u8;
    static ap_tramp_cr3_low: u8;
    static ap_tramp_cr3: u8;
    static ap_tramp_stack: u8;
    static ap_tramp_arg: u8;
    static ap_tramp_entry: u8;
    static ap_tramp_long: u8;
    static ap_tramp_gdt: u8;
}

/// The trampoline code and data, as linked into the kernel image.
pub fn image() -> &'static [u8] {
    let start = &raw const ap_trampoline_start;
    let end = &raw const ap_trampoline_end;
    let len = end as usize - start as usize;
    // SAFETY: both symbols delimit the read-only trampoline blob above.
    unsafe { core::slice::from_raw_parts(start, len) }
}

fn offset_of(sym: *const u8) -> usize {
    sym as usize - &raw const ap_trampoline_start as usize
}

/// Offsets (within the trampoline) of the fields `smp.rs` patches.
pub struct Patch {
    pub gdt_base: usize,
    pub farptr: usize,
    pub cr3_low: usize,
    pub cr3: usize,
    pub stack: usize,
    pub arg: usize,
    pub entry: usize,
    /// Offset of the 64-bit entry label (the far jump's target).
    pub long_mode: usize,
    /// Offset of the trampoline's GDT.
    pub gdt: usize,
}

/// Where to patch.
pub fn patch_offsets() -> Patch {
    Patch {
        gdt_base: offset_of(&raw const ap_tramp_gdt_base),
        farptr: offset_of(&raw const ap_tramp_farptr),
        cr3_low: offset_of(&raw const ap_tramp_cr3_low),
        cr3: offset_of(&raw const ap_tramp_cr3),
        stack: offset_of(&raw const ap_tramp_stack),
        arg: offset_of(&raw const ap_tramp_arg),
        entry: offset_of(&raw const ap_tramp_entry),
        long_mode: offset_of(&raw const ap_tramp_long),
        gdt: offset_of(&raw const ap_tramp_gdt),
    }
}
