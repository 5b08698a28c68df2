//! One cache line (or prefetch pair) per value, so that two threads writing neighbouring
//! values do not bounce one line between them.

use core::ops::Deref;

/// Pads and aligns `T` to the unit the CPU moves between cores.
///
/// - x86_64: 128 bytes. Lines are 64 bytes, but Intel's L2 spatial prefetcher fetches lines in
///   aligned pairs (Intel 64 and IA-32 Optimization Reference Manual, §3.7.3), so two values
///   in one 128-byte pair still interfere.
/// - aarch64: 128 bytes. Apple M-series and some Neoverse parts use 128-byte lines.
/// - otherwise: 64 bytes.
///
/// ```
/// use spinlab::CachePadded;
/// let padded = CachePadded::new(7u32);
/// assert_eq!(*padded, 7);
/// assert!(core::mem::align_of::<CachePadded<u32>>() >= 64);
/// ```
#[cfg_attr(any(target_arch = "x86_64", target_arch = "aarch64"), repr(align(128)))]
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), repr(align(64)))]
#[derive(Debug, Default)]
pub struct CachePadded<T> {
    value: T,
}

impl<T> CachePadded<T> {
    /// Wraps `value` in its own line.
    pub const fn new(value: T) -> Self {
        CachePadded { value }
    }
}

impl<T> Deref for CachePadded<T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        &self.value
    }
}
