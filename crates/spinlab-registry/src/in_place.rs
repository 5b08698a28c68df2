//! A lock behind a name: boxed for Rust callers ([`DynMutex`]), or in memory the caller owns
//! ([`RawLockOps`]) for the C ABI and the preload library, which keep a lock inside a
//! `pthread_mutex_t`.
//!
//! `lock_api`'s raw locks return a guard from `lock` and take it back in `unlock`; callers by
//! name have no place for it, so [`Stored`] keeps the guard next to the lock, written by the
//! holder after it acquires and taken by the holder when it releases.

use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use lock_api::{RawMutex, RawMutexTimed};
use spinlab::condvar::WaitTimeoutResult;
use spinlab::wait::Wait;
use spinlab::Condvar;
use std::time::{Duration, Instant};

/// A mutual-exclusion lock reached by name, without a guard type.
pub trait DynMutex: Send + Sync {
    /// Acquires the lock, waiting as long as it takes.
    fn lock(&self);
    /// Acquires the lock if it is free now.
    fn try_lock(&self) -> bool;
    /// Acquires the lock, giving up at `deadline`; returns whether it was acquired.
    fn try_lock_until(&self, deadline: Instant) -> bool;
    /// Releases the lock.
    ///
    /// # Safety
    /// The calling context must hold the lock (acquired through this object).
    unsafe fn unlock(&self);
    /// Whether the lock is held right now (a snapshot).
    fn is_locked(&self) -> bool;
}

impl dyn DynMutex {
    /// Waits on `condvar` with this lock released, and takes it again before returning
    /// ([`Condvar::wait_with`] with this lock's `unlock` and `lock`).
    ///
    /// # Safety
    ///
    /// The calling thread must hold this lock; it holds it again when this returns.
    ///
    /// ```
    /// use spinlab::{wait::SpinPark, Condvar};
    /// let lock = spinlab_registry::LOCKS.build("mcs:futex", ()).unwrap();
    /// let cv = Condvar::<SpinPark>::new();
    /// lock.lock();
    /// let soon = std::time::Instant::now() + std::time::Duration::from_micros(100);
    /// // SAFETY: this thread holds `lock`.
    /// assert!(unsafe { lock.wait_on(&cv, Some(soon)) }.timed_out());
    /// assert!(lock.is_locked());
    /// // SAFETY: held again.
    /// unsafe { lock.unlock() };
    /// ```
    pub unsafe fn wait_on<W: Wait>(&self, condvar: &Condvar<W>, deadline: Option<Instant>) -> WaitTimeoutResult {
        // SAFETY: the caller holds the lock, so `unlock` releases a held lock; `lock` takes it
        // back before this returns.
        condvar.wait_with(deadline, || unsafe { self.unlock() }, || self.lock())
    }
}

/// The verbs of a lock stored in caller-provided memory of `size` bytes aligned to `align`.
#[derive(Clone, Copy, Debug)]
pub struct RawLockOps {
    /// Bytes of storage the lock needs.
    pub size: usize,
    /// Alignment the storage needs.
    pub align: usize,
    /// Whether all-zero bytes are already a valid unlocked lock (so a zero-initialised
    /// `pthread_mutex_t` needs no `init` call).
    pub zero_is_unlocked: bool,
    /// Writes a new unlocked lock. # Safety: `at` is valid for `size` bytes and aligned.
    pub init: unsafe fn(at: *mut u8),
    /// Acquires. # Safety: `at` holds a lock written by `init` (or zeroed, if allowed).
    pub lock: unsafe fn(at: *const u8),
    /// Acquires if free now. # Safety: as `lock`.
    pub try_lock: unsafe fn(at: *const u8) -> bool,
    /// Acquires or gives up at the deadline. # Safety: as `lock`.
    pub try_lock_until: unsafe fn(at: *const u8, deadline: Instant) -> bool,
    /// Releases. # Safety: as `lock`, and the caller holds the lock.
    pub unlock: unsafe fn(at: *const u8),
    /// Takes and releases the lock `n` times in a loop compiled for this lock, with no call
    /// per operation: what an uncontended lock/unlock pair costs the caller that inlines the
    /// lock (seed 003 timed such a loop), measured without the two indirect calls that
    /// `lock` and `unlock` add. # Safety: as `lock`, and nobody else uses the lock meanwhile.
    pub pairs: unsafe fn(at: *const u8, n: u64),
    /// Destroys an unlocked lock. # Safety: as `lock`, the lock is not held, and `at` is not
    /// used again before another `init`.
    pub drop: unsafe fn(at: *mut u8),
}

/// A lock that can live in a registry entry: constructed without arguments, used without a
/// guard.
pub(crate) trait Named: Send + Sync + Sized + 'static {
    /// All-zero bytes are a valid unlocked instance.
    const ZERO_IS_UNLOCKED: bool;
    /// Whether `try_lock_until` waits natively (otherwise it polls `try_lock`).
    const TIMED_NATIVE: bool;
    fn create() -> Self;
    fn acquire(&self);
    fn try_acquire(&self) -> bool;
    fn acquire_until(&self, deadline: Instant) -> bool {
        poll_until(|| self.try_acquire(), deadline)
    }
    /// # Safety
    /// The caller holds the lock.
    unsafe fn release(&self);
    fn held(&self) -> bool;
}

/// Timed acquisition for locks without one: try, then sleep, doubling the nap from 1 µs to
/// 1 ms, never past the deadline.
pub(crate) fn poll_until(mut try_acquire: impl FnMut() -> bool, deadline: Instant) -> bool {
    let mut nap = Duration::from_micros(1);
    loop {
        if try_acquire() {
            return true;
        }
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        std::thread::sleep(nap.min(deadline - now));
        nap = (nap * 2).min(Duration::from_millis(1));
    }
}

/// A `lock_api` raw lock with room for its guard.
pub(crate) struct Stored<R: RawMutex> {
    raw: R,
    guard: UnsafeCell<MaybeUninit<R::Guard>>,
}

// SAFETY: `guard` is written only by the thread that just acquired `raw` and read only by the
// holder releasing it, so accesses to it are serialised by the lock itself.
unsafe impl<R: RawMutex + Sync> Sync for Stored<R> {}
// SAFETY: moving the storage moves an unlocked lock (a held one is borrowed, so cannot move).
unsafe impl<R: RawMutex + Send> Send for Stored<R> {}

impl<R: RawMutex> Stored<R> {
    #[inline]
    fn keep(&self, guard: R::Guard) {
        // SAFETY: we hold the lock; see the Sync impl.
        unsafe { (*self.guard.get()).write(guard) };
    }
}

impl<R> Named for Stored<R>
where
    R: RawMutex + RawMutexTimed<Instant = Instant> + Send + Sync + 'static,
{
    // Every spinlab lock's INIT is all zero bits (0 words, null tails); tests check it.
    const ZERO_IS_UNLOCKED: bool = true;
    const TIMED_NATIVE: bool = true;

    fn create() -> Self {
        Stored { raw: R::INIT, guard: UnsafeCell::new(MaybeUninit::uninit()) }
    }
    #[inline]
    fn acquire(&self) {
        let guard = self.raw.lock();
        self.keep(guard);
    }
    #[inline]
    fn try_acquire(&self) -> bool {
        self.raw.try_lock().map(|guard| self.keep(guard)).is_some()
    }
    fn acquire_until(&self, deadline: Instant) -> bool {
        self.raw.try_lock_until(deadline).map(|guard| self.keep(guard)).is_some()
    }
    #[inline]
    unsafe fn release(&self) {
        // SAFETY: the caller holds the lock, so `keep` wrote the guard and nobody else reads it.
        let guard = unsafe { (*self.guard.get()).assume_init_read() };
        // SAFETY: the guard is the one returned by this lock's acquisition.
        unsafe { self.raw.unlock(guard) };
    }
    #[inline]
    fn held(&self) -> bool {
        self.raw.is_locked()
    }
}

impl<T: Named> DynMutex for T {
    #[inline]
    fn lock(&self) {
        self.acquire()
    }
    #[inline]
    fn try_lock(&self) -> bool {
        self.try_acquire()
    }
    fn try_lock_until(&self, deadline: Instant) -> bool {
        self.acquire_until(deadline)
    }
    #[inline]
    unsafe fn unlock(&self) {
        // SAFETY: forwarded from the caller.
        unsafe { self.release() }
    }
    fn is_locked(&self) -> bool {
        self.held()
    }
}

pub(crate) fn boxed<T: Named>() -> Box<dyn DynMutex> {
    Box::new(T::create())
}

pub(crate) fn ops<T: Named>() -> RawLockOps {
    /// # Safety
    /// `at` is valid for writes of a `T` and aligned for it (`RawLockOps::size`, `align`).
    unsafe fn init<T: Named>(at: *mut u8) {
        // SAFETY: the caller's contract: room for a `T` at `at`.
        unsafe { (at as *mut T).write(T::create()) }
    }
    /// # Safety
    /// `at` points to a `T` written by `init` (or zeroed where `zero_is_unlocked`).
    unsafe fn lock<T: Named>(at: *const u8) {
        // SAFETY: the caller's contract: a live `T`, only ever shared.
        unsafe { &*(at as *const T) }.acquire()
    }
    /// # Safety
    /// As `lock`.
    unsafe fn try_lock<T: Named>(at: *const u8) -> bool {
        // SAFETY: the caller's contract: a live `T`, only ever shared.
        unsafe { &*(at as *const T) }.try_acquire()
    }
    /// # Safety
    /// As `lock`.
    unsafe fn try_lock_until<T: Named>(at: *const u8, deadline: Instant) -> bool {
        // SAFETY: the caller's contract: a live `T`, only ever shared.
        unsafe { &*(at as *const T) }.acquire_until(deadline)
    }
    /// # Safety
    /// As `lock`, and the calling thread holds the lock.
    unsafe fn unlock<T: Named>(at: *const u8) {
        // SAFETY: the caller's contract: a live `T` this thread holds.
        unsafe { (*(at as *const T)).release() }
    }
    /// # Safety
    /// As `lock`, and the lock is free and stays unused by other threads.
    unsafe fn pairs<T: Named>(at: *const u8, n: u64) {
        for _ in 0..n {
            // The address passes through `black_box` each time, so the compiler can neither
            // merge pairs nor hoist the lock's loads out of the loop.
            // SAFETY: the caller's contract: a live `T`, only ever shared.
            let lock = unsafe { &*core::hint::black_box(at as *const T) };
            lock.acquire();
            // SAFETY: acquired just above.
            unsafe { lock.release() };
        }
    }
    /// # Safety
    /// As `lock`, nobody holds or waits for the lock, and it is not used again before `init`.
    unsafe fn drop<T: Named>(at: *mut u8) {
        // SAFETY: the caller's contract: a live `T` that nothing else references.
        unsafe { core::ptr::drop_in_place(at as *mut T) }
    }
    RawLockOps {
        size: core::mem::size_of::<T>(),
        align: core::mem::align_of::<T>(),
        zero_is_unlocked: T::ZERO_IS_UNLOCKED,
        init: init::<T>,
        lock: lock::<T>,
        try_lock: try_lock::<T>,
        try_lock_until: try_lock_until::<T>,
        unlock: unlock::<T>,
        pairs: pairs::<T>,
        drop: drop::<T>,
    }
}
