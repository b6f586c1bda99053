//! `Padded`: one CPU's entry of a per-CPU array on cache lines of its own.
//!
//! Every scheduler operation writes its CPU's runqueue lock, arena lock,
//! statistics lock and transit slot. Packed side by side (a spin lock and a
//! pointer are 16-32 bytes), CPU 0's and CPU 1's entries share a cache line
//! and two CPUs that never touch each other's data still bounce it: the
//! scaling benchmark (`cargo bench -p sched --bench core -- scaling`, see
//! docs/kernel.md) showed two threads spending 1.3-2.3 µs of CPU per
//! ping-pong cycle against 0.8-1.3 µs alone. 128 bytes covers a line pair
//! (Intel's adjacent-line prefetcher pulls lines in pairs).

/// `T` aligned (and so padded) to 128 bytes.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct Padded<T>(pub(crate) T);

impl<T> core::ops::Deref for Padded<T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> core::ops::DerefMut for Padded<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}
