//! A condition variable in memory the caller owns, over a wait policy chosen by name at run
//! time: `spinlab_cond_t` for the C ABI, and the `pthread_cond_t` replacement of the preload
//! library.
//!
//! [`spinlab::Condvar`] is generic over its policy and waits with any mutex given as
//! unlock/relock callbacks. Here one [`CondOps`] per policy holds that type's functions, so
//! a policy picked from a string reaches a monomorphic wait; and [`CondCore`] adds what a C
//! condition variable needs beyond it: `destroy` must not return while a woken waiter is still
//! touching the memory (POSIX lets a program destroy a condition variable as soon as every
//! waiter has been woken, and free it), so the core counts the threads inside a wait, and
//! destroy waits for the count to drop to zero, as glibc's `pthread_cond_destroy` does.
//!
//! Layout of a [`CondCore`], 16 bytes, all-zero a new condition variable of any policy:
//!
//! | bytes | field     | written by                                                      |
//! |-------|-----------|-----------------------------------------------------------------|
//! | 0..12 | `condvar` | a `spinlab::Condvar<W>`: notifiers, waiters (`W` from `CondOps`)  |
//! | 12..16 | `users`  | waiters entering and leaving; `destroy` sets `DESTROYING`; notifiers read it |

use crate::cancel::Cancellable;
use core::sync::atomic::{AtomicU32, Ordering::*};
use libc::c_int;
use spinlab::wait::{visit_policies, PolicyVisitor, Unavailable, Wait};
use spinlab::Condvar;
use std::cell::Cell;
use std::ffi::CString;
use std::sync::OnceLock;
use std::time::Instant;

/// Bytes of a `spinlab::Condvar<W>`, for every policy (checked when each is instantiated).
const CONDVAR_SIZE: usize = 12;

/// `users` bit: a thread is in `destroy`, waiting for the count to drop to zero.
const DESTROYING: u32 = 1 << 31;

/// Waits on the condition variable at `condvar` until a notification (or a spurious wake-up,
/// or `deadline`), calling `unlock` once it may; returns whether the deadline passed.
type WaitFn = unsafe fn(condvar: *const u8, deadline: Option<Instant>, unlock: &mut dyn FnMut()) -> bool;

/// A condition variable of one policy, as function pointers over its storage.
pub struct CondOps {
    /// The policy's registry name, NUL-terminated for C.
    pub name: CString,
    /// `Ok`, or the CPU feature the policy needs and this CPU lacks.
    pub availability: Result<(), Unavailable>,
    wait: WaitFn,
    /// `wait`, as a cancellation point (see `cancel`).
    wait_cancellable: WaitFn,
    notify_one: unsafe fn(condvar: *const u8),
    notify_all: unsafe fn(condvar: *const u8),
}

impl CondOps {
    fn of<W: Wait>() -> CondOps {
        CondOps {
            name: CString::new(W::NAME).expect("policy names contain no NUL"),
            availability: W::availability(),
            wait: wait::<W>,
            wait_cancellable: wait::<Cancellable<W>>,
            notify_one: notify_one::<W>,
            notify_all: notify_all::<W>,
        }
    }

    /// The policy's name.
    pub fn policy(&self) -> &str {
        self.name.to_str().unwrap_or_default()
    }
}

/// # Safety
/// `condvar` points to [`CONDVAR_SIZE`] bytes, 4-aligned, holding a `Condvar<W>` (all zero,
/// or used only through this policy's functions) that stay valid for the call.
unsafe fn wait<W: Wait>(condvar: *const u8, deadline: Option<Instant>, unlock: &mut dyn FnMut()) -> bool {
    const { assert!(size_of::<Condvar<W>>() == CONDVAR_SIZE && align_of::<Condvar<W>>() <= 4) };
    // SAFETY: the caller's contract; all-zero bytes are a new `Condvar` (its docs).
    let condvar = unsafe { &*(condvar as *const Condvar<W>) };
    // The relock is left to the caller, after it has left `users`: see `CondCore::wait`.
    condvar.wait_with(deadline, unlock, || {}).timed_out()
}

/// # Safety
/// As [`wait`].
unsafe fn notify_one<W: Wait>(condvar: *const u8) {
    // SAFETY: the caller's contract.
    unsafe { &*(condvar as *const Condvar<W>) }.notify_one()
}

/// # Safety
/// As [`wait`].
unsafe fn notify_all<W: Wait>(condvar: *const u8) {
    // SAFETY: the caller's contract.
    unsafe { &*(condvar as *const Condvar<W>) }.notify_all()
}

/// One [`CondOps`] per wait policy, in the registry's order.
pub fn cond_ops() -> &'static [CondOps] {
    static TABLE: OnceLock<Vec<CondOps>> = OnceLock::new();
    TABLE.get_or_init(|| {
        struct Collect(Vec<CondOps>);
        impl PolicyVisitor for Collect {
            fn visit<W: Wait>(&mut self) {
                self.0.push(CondOps::of::<W>());
            }
        }
        let mut collect = Collect(Vec::new());
        visit_policies(&mut collect);
        collect.0
    })
}

/// The condition variable of policy `name`, if there is such a policy.
pub fn cond_ops_named(name: &str) -> Option<&'static CondOps> {
    cond_ops().iter().find(|ops| ops.policy() == name)
}

/// A condition variable with a count of the threads inside a wait. Used only through raw
/// pointers: `destroy` lets the memory be freed while a woken waiter still returns from
/// [`CondCore::wait`], so no reference to it may outlive the waiter's last access.
#[repr(C)]
pub struct CondCore {
    condvar: [AtomicU32; CONDVAR_SIZE / 4],
    users: AtomicU32,
}

/// How a wait ended, when the mutex could be released.
pub struct Waited {
    /// The deadline passed (spurious wake-ups and notifications report `false`).
    pub timed_out: bool,
    /// What the relock callback returned.
    pub relocked: c_int,
}

impl CondCore {
    /// Releases the caller's mutex with `unlock`, waits for a notification (or a spurious
    /// wake-up, or the deadline), then takes the mutex again with `relock`. If `unlock`
    /// fails (a mutex the caller does not hold), returns its error without waiting, and
    /// without calling `relock`.
    ///
    /// # Safety
    /// `core` points to a live `CondCore` used only with `ops`; the calling thread holds the
    /// mutex that `unlock` releases.
    pub unsafe fn wait(
        core: *const CondCore,
        ops: &CondOps,
        deadline: Option<Instant>,
        unlock: impl FnOnce() -> Result<(), c_int>,
        relock: impl FnOnce() -> c_int,
    ) -> Result<Waited, c_int> {
        // SAFETY: the caller's contract.
        unsafe { Self::wait_by(ops.wait, core, ops, deadline, unlock, relock) }
    }

    /// [`CondCore::wait`] as a cancellation point (see `cancel`): a `pthread_cancel` request
    /// that arrives while the thread waits, after `unlock` and before `relock`, ends the wait
    /// by unwinding the thread. The caller registers a cleanup handler around this call that
    /// calls [`CondCore::cancelled`] and takes the mutex again.
    ///
    /// # Safety
    /// As [`CondCore::wait`]; `unlock` and `relock` hold nothing that needs dropping.
    pub unsafe fn wait_cancellable(
        core: *const CondCore,
        ops: &CondOps,
        deadline: Option<Instant>,
        unlock: impl FnOnce() -> Result<(), c_int>,
        relock: impl FnOnce() -> c_int,
    ) -> Result<Waited, c_int> {
        // SAFETY: the caller's contract.
        unsafe { Self::wait_by(ops.wait_cancellable, core, ops, deadline, unlock, relock) }
    }

    /// What a waiter that [`CondCore::wait_cancellable`] left by cancellation still owes: a
    /// notification it may have taken is passed on (to one other waiter, which may see a
    /// spurious wake-up), and the thread leaves the count of waiters, after which it must not
    /// touch `core` again.
    ///
    /// # Safety
    /// `core` is the condition variable whose cancellable wait the calling thread was just
    /// cancelled in, used with `ops`.
    pub unsafe fn cancelled(core: *const CondCore, ops: &CondOps) {
        // SAFETY: the caller's contract: this thread is still counted in `users`.
        unsafe {
            (ops.notify_one)((*core).condvar.as_ptr() as *const u8);
            leave(core::ptr::addr_of!((*core).users));
        }
    }

    /// The wait of [`CondCore::wait`], by `wait`, one of `ops`'s two.
    ///
    /// # Safety
    /// As [`CondCore::wait`].
    unsafe fn wait_by(
        wait: WaitFn,
        core: *const CondCore,
        ops: &CondOps,
        deadline: Option<Instant>,
        unlock: impl FnOnce() -> Result<(), c_int>,
        relock: impl FnOnce() -> c_int,
    ) -> Result<Waited, c_int> {
        // SAFETY: `core` is live until this thread leaves `users` below.
        let (condvar, users) = unsafe { ((*core).condvar.as_ptr() as *const u8, core::ptr::addr_of!((*core).users)) };
        // Relaxed: destroying a condition variable that a thread is entering is undefined; the
        // count only has to be right for waiters that entered before a destroy.
        // SAFETY: as above.
        unsafe { (*users).fetch_add(1, Relaxed) };
        let mut unlock = Some(unlock);
        let unlock_failed = Cell::new(None);
        let mut release = || {
            if let Some(Err(code)) = unlock.take().map(|unlock| unlock()) {
                unlock_failed.set(Some(code));
                // The condvar read its word before this callback, and will wait for it to
                // change: change it. Every other waiter may see a spurious wake-up, which
                // all of them must tolerate; this is the path of a program error (EPERM).
                // SAFETY: the caller's contract.
                unsafe { (ops.notify_all)(condvar) };
            }
        };
        // SAFETY: the caller's contract.
        let timed_out = unsafe { wait(condvar, deadline, &mut release) };
        // SAFETY: this thread is still counted in `users`, so `core` is live; after `leave`
        // this function touches no part of it.
        unsafe { leave(users) };
        match unlock_failed.get() {
            Some(code) => Err(code),
            None => Ok(Waited { timed_out, relocked: relock() }),
        }
    }

    /// Wakes one waiting thread (and spinning ones: see `spinlab::Condvar`); with nobody
    /// inside a wait, does nothing (see `CondCore::may_have_waiters`).
    ///
    /// # Safety
    /// As [`CondCore::wait`], without the mutex.
    #[inline]
    pub unsafe fn notify_one(core: *const CondCore, ops: &CondOps) {
        // SAFETY: the caller's contract.
        unsafe {
            if Self::may_have_waiters(core) {
                (ops.notify_one)((*core).condvar.as_ptr() as *const u8)
            }
        }
    }

    /// Wakes every waiting thread; with nobody inside a wait, does nothing.
    ///
    /// # Safety
    /// As [`CondCore::wait`], without the mutex.
    #[inline]
    pub unsafe fn notify_all(core: *const CondCore, ops: &CondOps) {
        // SAFETY: the caller's contract.
        unsafe {
            if Self::may_have_waiters(core) {
                (ops.notify_all)((*core).condvar.as_ptr() as *const u8)
            }
        }
    }

    /// Whether a notification may have a waiter to reach, from `users`: the condvar inside
    /// keeps a count of its own and returns just as early (`spinlab::Condvar::notify_one`
    /// says why one load is enough: a waiter counts itself in before `unlock` runs), but
    /// only after the call through `ops`; this one saves the call, the larger part of an
    /// uncontended `pthread_cond_signal` (docs/preload.md, "What an uncontended call
    /// costs").
    ///
    /// # Safety
    /// `core` points to a live `CondCore`.
    #[inline]
    unsafe fn may_have_waiters(core: *const CondCore) -> bool {
        // SAFETY: the caller's contract.
        unsafe { (*core).users.load(Relaxed) & !DESTROYING != 0 }
    }

    /// Returns once no thread is inside [`CondCore::wait`]: woken waiters finish leaving,
    /// and then the memory may be reused. A waiter that nobody woke keeps it waiting, as
    /// glibc's `pthread_cond_destroy` does.
    ///
    /// # Safety
    /// `core` points to a live `CondCore`; no thread enters a wait on it from now on.
    pub unsafe fn destroy(core: *const CondCore) {
        // SAFETY: the caller's contract.
        let users = unsafe { &(*core).users };
        // Acquire (here and below): every leaving waiter's accesses to the condvar happen
        // before its Release decrement, so before this returns.
        let mut seen = users.fetch_or(DESTROYING, Acquire) | DESTROYING;
        while seen != DESTROYING {
            spinlab::sys::futex::wait(users, seen, None);
            seen = users.load(Acquire);
        }
    }
}

/// Counts the calling thread out of `users`, waking a `destroy` that waits for it.
///
/// # Safety
/// `users` is the count of a live `CondCore` that counts the calling thread.
unsafe fn leave(users: *const AtomicU32) {
    // Release: this waiter's accesses to the condvar happen before `destroy` returns.
    // SAFETY: the caller's contract; the memory may be freed as soon as this returns.
    let before = unsafe { (*users).fetch_sub(1, Release) };
    if before & DESTROYING != 0 {
        // The memory may already be freed: FUTEX_WAKE uses the address as a key only and
        // never reads it, so no reference to the word is made here (glibc relies on the
        // same property of futexes in pthread_cond_destroy).
        // SAFETY: a FUTEX_WAKE with a valid operation and count; the address is not read.
        unsafe { libc::syscall(libc::SYS_futex, users, libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, i32::MAX) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Mutex;
    use std::time::Duration;

    #[test]
    fn every_policy_has_its_condvar_and_names_match_the_registry() {
        let policies = spinlab::wait::policies();
        let ops = cond_ops();
        assert_eq!(ops.len(), policies.len());
        for (ops, policy) in ops.iter().zip(&policies) {
            assert_eq!(ops.policy(), policy.name);
            assert_eq!(ops.availability, policy.availability);
        }
        assert!(cond_ops_named("spin-park").is_some());
        assert!(cond_ops_named("nope").is_none());
    }

    fn zeroed_core() -> Box<CondCore> {
        // SAFETY: atomics, for which all-zero bytes are valid; all-zero is a new condvar.
        Box::new(unsafe { core::mem::zeroed() })
    }

    /// A wait on `core` whose mutex release runs `on_release` and whose relock returns
    /// `relocked`.
    fn wait_releasing(
        core: &CondCore,
        ops: &CondOps,
        deadline: Option<Instant>,
        on_release: impl FnOnce(),
        relocked: c_int,
    ) -> Waited {
        let release = || {
            on_release();
            Ok(())
        };
        // SAFETY: `core` is live and used only with `ops`.
        let waited = unsafe { CondCore::wait(core, ops, deadline, release, || relocked) };
        waited.expect("the release does not fail")
    }

    #[test]
    fn a_timed_wait_releases_and_retakes_the_mutex() {
        let ops = cond_ops_named("futex").unwrap();
        let core = zeroed_core();
        let released = AtomicBool::new(false);
        let deadline = Some(Instant::now() + Duration::from_millis(2));
        let waited = wait_releasing(&core, ops, deadline, || released.store(true, Relaxed), 7);
        assert!(waited.timed_out && released.into_inner());
        assert_eq!(waited.relocked, 7);
        assert_eq!(core.users.load(Relaxed), 0);
    }

    #[test]
    fn a_failed_unlock_returns_its_error_without_waiting_or_relocking() {
        for ops in cond_ops().iter().filter(|ops| ops.availability.is_ok()) {
            let core = zeroed_core();
            // No deadline: if the failed unlock did not end the wait, this would hang.
            // SAFETY: `core` is live and used only with `ops`.
            let result = unsafe { CondCore::wait(&*core, ops, None, || Err(1), || panic!("relocked")) };
            assert_eq!(result.err(), Some(1), "{}", ops.policy());
            assert_eq!(core.users.load(Relaxed), 0);
        }
    }

    /// A waiter is counted before it releases the mutex, so a notification made right after
    /// the release (here, inside the release itself), before the waiter looks at its word,
    /// reaches it: counting in after `unlock` would skip that notification, and the wait
    /// would run to its 20 s deadline.
    #[test]
    fn a_notification_right_after_the_release_reaches_the_waiter() {
        for ops in cond_ops().iter().filter(|ops| ops.availability.is_ok()) {
            let core = zeroed_core();
            let deadline = Some(Instant::now() + Duration::from_secs(20));
            // SAFETY: `core` is live and used only with `ops`.
            let waited = wait_releasing(&core, ops, deadline, || unsafe { CondCore::notify_one(&*core, ops) }, 0);
            assert!(!waited.timed_out, "{}: the notification was skipped", ops.policy());
            assert_eq!(core.users.load(Relaxed), 0);
        }
    }

    /// With nobody inside a wait, a notification leaves the condition variable's words as
    /// they were, under every policy: no sequence advanced, no sleeper count read by a
    /// read-modify-write.
    #[test]
    fn a_notification_with_nobody_waiting_writes_nothing() {
        for ops in cond_ops().iter().filter(|ops| ops.availability.is_ok()) {
            let core = zeroed_core();
            // SAFETY: `core` is live and used only with `ops`.
            unsafe {
                CondCore::notify_one(&*core, ops);
                CondCore::notify_all(&*core, ops);
            }
            let words = |core: &CondCore| core.condvar.iter().map(|word| word.load(Relaxed)).collect::<Vec<u32>>();
            assert_eq!(words(&core), [0, 0, 0], "{}", ops.policy());
        }
    }

    #[test]
    fn destroy_waits_for_woken_waiters_to_leave() {
        let ops = cond_ops_named("futex").unwrap();
        let core = zeroed_core();
        let mutex = Mutex::new(false);
        let left = AtomicBool::new(false);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                let mut guard = Some(mutex.lock().unwrap());
                while !**guard.as_ref().unwrap() {
                    // SAFETY: `core` outlives the scope; this thread holds the mutex.
                    let waited = unsafe {
                        CondCore::wait(
                            &*core,
                            ops,
                            None,
                            || {
                                guard = None;
                                Ok(())
                            },
                            || 0,
                        )
                    };
                    assert!(waited.is_ok());
                    guard = Some(mutex.lock().unwrap());
                }
                left.store(true, Relaxed);
            });
            // The waiter counts itself in before it releases the mutex, so once this thread
            // has seen `users` at 1 and taken the mutex, the waiter is inside its wait.
            while core.users.load(Relaxed) == 0 {
                std::thread::yield_now();
            }
            *mutex.lock().unwrap() = true;
            // SAFETY: `core` is live.
            unsafe { CondCore::notify_all(&*core, ops) };
            // SAFETY: `core` is live; no thread enters a new wait (the flag is set).
            unsafe { CondCore::destroy(&*core) };
            assert_eq!(core.users.load(Relaxed), DESTROYING, "destroy returned with a waiter inside");
            waiter.join().unwrap();
        });
        assert!(left.into_inner());
    }
}
