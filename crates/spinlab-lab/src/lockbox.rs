//! A registry lock placed on cache lines of its own.
//!
//! `LOCKS.build` boxes a lock with the allocator's usual alignment, so a 4-byte lock
//! word can share its line with whatever the allocator put next to it. Experiments compare
//! locks against each other, so each one gets the same, clean placement: storage aligned to
//! and padded to 128 bytes (a pair of 64-byte lines, since x86's adjacent-line prefetcher
//! moves lines in pairs), built in place through the registry's `RawLockOps`.

use spinlab_registry::{LockEntry, RawLockOps, RegistryError};
use std::alloc::{alloc_zeroed, dealloc, Layout};

/// Bytes a lock's storage is aligned and padded to.
pub const LINE_PAIR: usize = 128;

/// One lock in its own padded storage.
pub struct LockBox {
    ops: RawLockOps,
    at: *mut u8,
    layout: Layout,
}

// SAFETY: every registry lock is Send + Sync (DynMutex requires it), and `LockBox` only
// reaches it through the registry's verbs; the pointer is owned and freed once, in Drop.
unsafe impl Send for LockBox {}
// SAFETY: as above.
unsafe impl Sync for LockBox {}

impl LockBox {
    /// A new, unlocked instance of `entry`, or why this CPU cannot run it.
    pub fn new(entry: &LockEntry) -> Result<LockBox, RegistryError> {
        // Refuse unavailable policies exactly as the registry does.
        drop(entry.build(())?);
        let ops = entry.facts.ops;
        let align = ops.align.max(LINE_PAIR);
        let size = ops.size.div_ceil(LINE_PAIR).max(1) * LINE_PAIR;
        let layout = Layout::from_size_align(size, align).expect("lock layout");
        // SAFETY: `layout` has a non-zero size.
        let at = unsafe { alloc_zeroed(layout) };
        if at.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        // SAFETY: `at` is valid for `size >= ops.size` bytes and aligned to `align >= ops.align`.
        unsafe { (ops.init)(at) };
        Ok(LockBox { ops, at, layout })
    }

    /// Acquires the lock.
    #[inline]
    pub fn lock(&self) {
        // SAFETY: `at` holds a lock written by `init` and not yet dropped.
        unsafe { (self.ops.lock)(self.at) }
    }

    /// Releases the lock.
    ///
    /// # Safety
    /// The calling thread holds the lock.
    #[inline]
    pub unsafe fn unlock(&self) {
        // SAFETY: `at` holds a live lock, which the caller holds.
        unsafe { (self.ops.unlock)(self.at) }
    }

    /// Takes and releases the lock `n` times, in a loop compiled for the lock (one indirect
    /// call for all `n`).
    ///
    /// # Safety
    /// The lock is free, and no other thread uses it meanwhile.
    pub unsafe fn pairs(&self, n: u64) {
        // SAFETY: a live lock, free and ours alone (the caller's contract).
        unsafe { (self.ops.pairs)(self.at, n) }
    }

    /// The lock's address (for checking placement).
    pub fn address(&self) -> usize {
        self.at as usize
    }
}

impl Drop for LockBox {
    fn drop(&mut self) {
        // SAFETY: the lock is live and, with `&mut self`, nobody holds or uses it; it is freed
        // with the layout it was allocated with.
        unsafe {
            (self.ops.drop)(self.at);
            dealloc(self.at, self.layout);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_available_lock_gets_its_own_line_pair_and_works() {
        for entry in spinlab_registry::LOCKS.entries().iter().filter(|e| e.availability.is_ok()) {
            let b = LockBox::new(entry).unwrap();
            assert_eq!(b.address() % LINE_PAIR, 0, "{}", entry.name);
            b.lock();
            // SAFETY: locked just above.
            unsafe { b.unlock() };
            b.lock();
            // SAFETY: locked just above.
            unsafe { b.unlock() };
        }
    }

    #[test]
    fn unavailable_locks_are_refused() {
        if let Some(entry) = spinlab_registry::LOCKS.entries().iter().find(|e| e.availability.is_err()) {
            assert!(matches!(LockBox::new(entry), Err(RegistryError::Unavailable { .. })));
        }
    }
}
