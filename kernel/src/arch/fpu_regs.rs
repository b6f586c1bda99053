//! Direct access to a thread's x87/SSE registers, for the experiments that
//! check they survive preemption and migration (`experiments/fpu.rs`). The
//! first such instruction in a thread traps (#NM) and is retried once the
//! kernel has given the thread FPU state (`fpu.rs`); use them with
//! interrupts on.

/// Loads xmm0-15 from `xmm` (two little-endian words per register), MXCSR
/// from `mxcsr`, and resets the x87 unit (`fninit`) to hold one double whose
/// bits are `x87`. Panics on an MXCSR with reserved bits (31:16) set.
pub fn load(xmm: &[u64; 32], mxcsr: u32, x87: u64) {
    assert_eq!(mxcsr >> 16, 0, "MXCSR reserved bits set: {mxcsr:#x}");
    let x = xmm.as_ptr();
    // SAFETY: reads 256 bytes at `x` (the 32-word array) and 4 and 8 bytes
    // at `mxcsr` and `x87`; writes only FPU/SSE registers, which no compiled
    // code of this soft-float kernel uses (so they need no clobbers); `mxcsr`
    // has no reserved bits set (checked above).
    unsafe {
        core::arch::asm!(
            "movdqu xmm0, [{x}]",
            "movdqu xmm1, [{x} + 16]",
            "movdqu xmm2, [{x} + 32]",
            "movdqu xmm3, [{x} + 48]",
            "movdqu xmm4, [{x} + 64]",
            "movdqu xmm5, [{x} + 80]",
            "movdqu xmm6, [{x} + 96]",
            "movdqu xmm7, [{x} + 112]",
            "movdqu xmm8, [{x} + 128]",
            "movdqu xmm9, [{x} + 144]",
            "movdqu xmm10, [{x} + 160]",
            "movdqu xmm11, [{x} + 176]",
            "movdqu xmm12, [{x} + 192]",
            "movdqu xmm13, [{x} + 208]",
            "movdqu xmm14, [{x} + 224]",
            "movdqu xmm15, [{x} + 240]",
            "ldmxcsr [{m}]",
            "fninit",
            "fld qword ptr [{f}]",
            x = in(reg) x,
            m = in(reg) &mxcsr,
            f = in(reg) &x87,
            options(nostack, readonly, preserves_flags),
        );
    }
}

/// Reads xmm0-15 into `xmm`; returns MXCSR and the bits of the double on top
/// of the x87 stack (left as it was).
pub fn read(xmm: &mut [u64; 32]) -> (u32, u64) {
    let (mut mxcsr, mut x87) = (0u32, 0u64);
    let x = xmm.as_mut_ptr();
    // SAFETY: writes 256 bytes at `x` (the 32-word array) and 4 and 8 bytes
    // at `mxcsr` and `x87`; `fld st(0)` + `fstp` copies the x87 top and pops
    // the copy, leaving the x87 stack as it was.
    unsafe {
        core::arch::asm!(
            "movdqu [{x}], xmm0",
            "movdqu [{x} + 16], xmm1",
            "movdqu [{x} + 32], xmm2",
            "movdqu [{x} + 48], xmm3",
            "movdqu [{x} + 64], xmm4",
            "movdqu [{x} + 80], xmm5",
            "movdqu [{x} + 96], xmm6",
            "movdqu [{x} + 112], xmm7",
            "movdqu [{x} + 128], xmm8",
            "movdqu [{x} + 144], xmm9",
            "movdqu [{x} + 160], xmm10",
            "movdqu [{x} + 176], xmm11",
            "movdqu [{x} + 192], xmm12",
            "movdqu [{x} + 208], xmm13",
            "movdqu [{x} + 224], xmm14",
            "movdqu [{x} + 240], xmm15",
            "stmxcsr [{m}]",
            "fld st(0)",
            "fstp qword ptr [{f}]",
            x = in(reg) x,
            m = in(reg) &mut mxcsr,
            f = in(reg) &mut x87,
            options(nostack, preserves_flags),
        );
    }
    (mxcsr, x87)
}
