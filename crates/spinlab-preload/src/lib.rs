//! `libspinlab_preload.so`: run an unmodified program with spinlab's locks in place of its
//! pthread mutexes, condition variables, spin locks, barriers and reader-writer locks, and
//! of its C11 `mtx_t`, `cnd_t` and `call_once`, and count its locking.
//!
//! ```text
//! LD_PRELOAD=target/release/libspinlab_preload.so SPINLAB_LOCK=mcs:spin-park SPINLAB_STATS=1 ./program
//! ```
//!
//! - `SPINLAB_LOCK`: the registry name of the lock (default `adaptive:pause-yield-park`, spinlab's
//!   default); `pthread` keeps glibc's mutexes and condition variables (to count them alone).
//!   A lock must fit before `__kind` in a `pthread_mutex_t` and be unlocked when all-zero.
//! - `SPINLAB_COND`: the condition variables' wait policy (default: the lock's);
//!   `SPINLAB_BARRIER`: the barrier in each `pthread_barrier_t` (default `barrier:spin-park`;
//!   `pthread` keeps glibc's, as does every process-shared barrier; see `barrier`).
//! - `SPINLAB_SPIN`: the lock in each `pthread_spinlock_t` (default `ttas:pause`); it must fit
//!   in 4 bytes and never sleep; `pthread` keeps glibc's (see `spin`).
//! - `SPINLAB_RWLOCK`: the lock in each `pthread_rwlock_t` (default `rw-reader:futex`);
//!   it must prefer readers, as glibc's default kind does, and fit before `__cur_writer`;
//!   writer-preferring rwlocks get `rw-writer` over its policy, and `pthread` keeps glibc's, as
//!   does every process-shared rwlock (see `rwlock`).
//! - `SPINLAB_STATS=1`: at exit, a table on stderr of the lock sites with the most waiting
//!   (`SPINLAB_STATS_TOP` rows); `SPINLAB_STATS_FILE=PREFIX`: the profile as JSON per process
//!   (docs/profile.md).
//!
//! An unusable value prints one line naming it and the valid values and exits with status 2,
//! before `main` runs. docs/preload.md is the user's guide; `mutex` and `cond` say how each
//! lives in the program's own `pthread_mutex_t` and `pthread_cond_t`, with no side table.
//!
//! glibc's C11 functions call its pthread functions internally, out of the replacements'
//! reach, so they are replaced too: `c11` makes each `mtx_*`/`cnd_*` the `pthread_*`
//! replacement it wraps (an `mtx_t` is a `pthread_mutex_t`, a `cnd_t` a `pthread_cond_t`;
//! recursive ones stay glibc's), with its result as a `thrd_*` value, and `once` keeps
//! `call_once`'s state in the program's `once_flag`, its waiters asleep on it.
//!
//! Initialisation is lazy as well as early: libraries the program loads run their
//! constructors first, and may lock a mutex already. Nothing on the path of the
//! replaced functions calls them back (Rust's own locks use futexes, the registry's locks
//! are plain atomics, glibc's allocator and dynamic linker use glibc-internal locks), except
//! the unwinder that the statistics run to capture a call stack, whose own locking `stats`
//! leaves uncounted.
#![deny(unsafe_op_in_unsafe_fn)]

mod barrier;
mod c11;
mod cond;
mod config;
mod exec;
mod fork;
mod glibc;
mod mutex;
mod once;
mod rwlock;
mod spin;
mod stats;

use config::{Config, Mutexes};
use glibc::Real;
use libc::c_char;
use std::ffi::CString;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// What every replaced function needs: the configuration and glibc's own functions.
struct State {
    config: Config,
    real: Real,
    /// The lock's name, for `spinlab_preload_lock`.
    lock_name: CString,
    /// The spin locks' lock's name, for `spinlab_preload_spin`.
    spin_name: CString,
    /// The barriers' name, for `spinlab_preload_barrier`.
    barrier_name: CString,
    /// The rwlocks' lock's name, for `spinlab_preload_rwlock`.
    rwlock_name: CString,
}

static STATE: OnceLock<State> = OnceLock::new();

/// When the library set itself up (`CLOCK_MONOTONIC`), for the profile's `started_ns`.
static STARTED_NS: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// The state, set up on first use.
#[inline(always)]
fn state() -> &'static State {
    match STATE.get() {
        Some(state) => state,
        None => first_use(),
    }
}

#[cold]
fn first_use() -> &'static State {
    STATE.get_or_init(|| match set_up() {
        Ok(state) => state,
        Err(line) => exit_with(&line),
    })
}

fn set_up() -> Result<State, String> {
    let real = Real::find().map_err(|missing| format!("glibc has no {missing}, which this library must call"))?;
    real.check_layout().map_err(|difference| format!("unknown glibc layout: {difference}"))?;
    let config = config::from_env()?;
    if config.stats_top.is_some() {
        STARTED_NS.store(stats::now_ns(), core::sync::atomic::Ordering::Relaxed);
        stats::find_own_code();
        spinlab::sys::phases::enable();
    }
    warm_up(&config);
    warm_up_rwlocks(&config);
    let lock_name = CString::new(config.lock_name()).expect("lock names contain no NUL");
    let spin_name = CString::new(config.spins.name()).expect("lock names contain no NUL");
    let barrier_name = CString::new(config.barriers.name()).expect("barrier names contain no NUL");
    let rwlock_name = CString::new(config.rwlocks.name()).expect("rwlock names contain no NUL");
    Ok(State { config, real, lock_name, spin_name, barrier_name, rwlock_name })
}

/// Runs the chosen lock and condition variable once, through a short wait that times out,
/// so that what they set up on first use (the spin-then-park calibration, the cache-miss
/// policy's buffer, the per-thread node cache) is set up now, before `main`, and not inside
/// the program's first contended acquisition.
fn warm_up(config: &Config) {
    let Mutexes::Replaced { ops, .. } = config.mutexes else { return };
    let mut room = [0u64; glibc::MUTEX_ROOM.size() / 8];
    let at = room.as_mut_ptr().cast::<u8>();
    let soon = || Instant::now() + Duration::from_micros(20);
    // SAFETY: `room` is zeroed, 8-aligned storage of the size `config` checked the lock fits
    // in; it is used as the lock's contract says and dropped unlocked.
    unsafe {
        (ops.init)(at);
        (ops.lock)(at);
        let acquired_twice = (ops.try_lock_until)(at, soon());
        debug_assert!(!acquired_twice);
        (ops.unlock)(at);
        (ops.drop)(at);
    }
    let mut core = [0u64; 2];
    // SAFETY: all-zero bytes are a new `CondCore` (16 bytes), used with one policy only.
    let _ = unsafe {
        spinlab_c_shared::condvar::CondCore::wait(core.as_mut_ptr().cast(), config.cond, Some(soon()), || Ok(()), || 0)
    };
}

/// Runs the rwlocks' wait policy once through a short timed wait, as [`warm_up`] does the
/// condition variables': the policy may be another (`SPINLAB_RWLOCK=rw-reader:futex`), or the
/// mutexes glibc's, and its first contended rwlock would otherwise calibrate it.
fn warm_up_rwlocks(config: &Config) {
    let config::Rwlocks::Replaced { name, .. } = config.rwlocks else { return };
    let policy = spinlab_registry::RWLOCKS.info(name).ok().and_then(|entry| entry.policy);
    let Some(ops) = policy.and_then(spinlab_c_shared::condvar::cond_ops_named) else { return };
    let mut core = [0u64; 2];
    let soon = Instant::now() + Duration::from_micros(20);
    // SAFETY: all-zero bytes are a new `CondCore` (16 bytes), used with one policy only.
    let _ = unsafe {
        spinlab_c_shared::condvar::CondCore::wait(core.as_mut_ptr().cast(), ops, Some(soon), || Ok(()), || 0)
    };
}

/// Prints `spinlab-preload: <line>` on stderr and exits with status 2, without running the
/// program's exit handlers (it has not started).
fn exit_with(line: &str) -> ! {
    let text = format!("spinlab-preload: {line}\n");
    write_stderr(&text);
    // SAFETY: _exit ends the process at once; it is always safe to call.
    unsafe { libc::_exit(2) }
}

/// Writes all of `text` to file descriptor 2, without Rust's stderr lock (exit paths).
fn write_stderr(text: &str) {
    let mut rest = text.as_bytes();
    while !rest.is_empty() {
        // SAFETY: writes from a live buffer of that length.
        let written = unsafe { libc::write(2, rest.as_ptr().cast(), rest.len()) };
        if written <= 0 {
            return;
        }
        rest = &rest[written as usize..];
    }
}

/// The registry name of the lock in use (`"pthread"` when glibc's are kept), for programs
/// and tools that want to know that the library is loaded and what it does. A static string.
#[no_mangle]
pub extern "C" fn spinlab_preload_lock() -> *const c_char {
    state().lock_name.as_ptr()
}

/// The registry name of the barrier in the program's barriers (`"pthread"` when glibc's are
/// kept). A static string.
#[no_mangle]
pub extern "C" fn spinlab_preload_barrier() -> *const c_char {
    state().barrier_name.as_ptr()
}

/// The registry name of the lock in the program's spin locks (`"pthread"` when glibc's are
/// kept). A static string.
#[no_mangle]
pub extern "C" fn spinlab_preload_spin() -> *const c_char {
    state().spin_name.as_ptr()
}

/// The registry name of the lock in the program's default-kind rwlocks (`"pthread"` when
/// glibc's are kept). A static string.
#[no_mangle]
pub extern "C" fn spinlab_preload_rwlock() -> *const c_char {
    state().rwlock_name.as_ptr()
}

/// Runs before `main` (and before the constructors of libraries loaded after this one):
/// checks the environment, exiting with status 2 on a bad value, and arranges for the
/// statistics.
extern "C" fn constructor() {
    fork::register_first();
    if state().config.stats_top.is_some() {
        // SAFETY: registering a plain `extern "C"` function without arguments.
        unsafe { libc::atexit(report_at_exit) };
    }
}

#[used]
#[link_section = ".init_array"]
static CONSTRUCTOR: extern "C" fn() = constructor;

/// Prints the statistics table (`SPINLAB_STATS=1`) and writes the profile
/// (`SPINLAB_STATS_FILE`), unless the process locked nothing (a shell script that runs the
/// program, say, also inherits the variables).
extern "C" fn report_at_exit() {
    let state = state();
    if state.config.stats_top.is_none() || stats::snapshot_is_empty() {
        return;
    }
    let process = process(state);
    if let (true, Some(top)) = (state.config.print_table, state.config.stats_top) {
        write_stderr(&stats::render_at_exit(&process, top));
    }
    write_profile(state);
}

/// Writes the profile now if `SPINLAB_STATS_FILE` asks for one and something was locked;
/// returns the path written.
fn write_profile(state: &State) -> Option<String> {
    let prefix = state.config.stats_file.as_deref()?;
    stats::write_file(prefix, &process(state), STARTED_NS.load(core::sync::atomic::Ordering::Relaxed))
}

/// What the report says of this process.
fn process(state: &State) -> stats::Process<'static> {
    static PROGRAM: OnceLock<String> = OnceLock::new();
    let program = PROGRAM.get_or_init(|| {
        std::fs::read_to_string("/proc/self/comm").map(|name| name.trim().to_string()).unwrap_or_default()
    });
    stats::Process {
        program,
        lock: state.config.lock_name(),
        mutexes_replaced: matches!(state.config.mutexes, Mutexes::Replaced { .. }),
        spins_replaced: matches!(state.config.spins, config::Spins::Replaced { .. }),
        barriers_replaced: matches!(state.config.barriers, config::Barriers::Replaced(..)),
    }
}
