//! Call stacks of the places where locks are made and first contended, kept as raw return
//! addresses in a fixed table (no allocation when captured) and named only at exit.
//!
//! A capture walks the stack with the unwinder (`backtrace::trace_unsynchronized`), drops the
//! frames inside this library from its top, and finds or adds the stack in [`TABLE`] by a
//! hash of its addresses (open addressing; a slot is claimed by a compare-and-swap of its
//! hash, and its frames are published by `ready`). Equal stacks share one slot: that is what
//! groups a thousand mutexes made at one line into one site.
//!
//! The unwinder may lock a mutex of its own (libgcc's, through `pthread_mutex_lock`, which is
//! this library's). A thread-local flag marks a capture in progress, so that a capture never
//! starts inside another, and [`CAPTURES`], a count of captures in progress in any thread,
//! lets the lock path skip counting such a nested lock after one load of a line nobody writes
//! outside captures.

use core::cell::Cell;
use core::ffi::c_void;
use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::*};

/// Distinct stacks kept; later ones are not captured.
pub const SITES: usize = 4096;
/// Frames kept per stack, innermost first.
pub const FRAMES: usize = 32;

struct Slot {
    /// The stack's hash, never 0; 0 while the slot is free.
    hash: AtomicU64,
    /// Set once `frames` and `depth` are written.
    ready: AtomicU32,
    depth: AtomicU32,
    frames: [AtomicUsize; FRAMES],
}

#[allow(clippy::declare_interior_mutable_const)]
const FREE: Slot = Slot {
    hash: AtomicU64::new(0),
    ready: AtomicU32::new(0),
    depth: AtomicU32::new(0),
    frames: [const { AtomicUsize::new(0) }; FRAMES],
};

static TABLE: [Slot; SITES] = [FREE; SITES];

/// Captures in progress, in all threads.
static CAPTURES: AtomicU32 = AtomicU32::new(0);

/// This library's code, `[start, end)`, whose frames a capture drops.
static OWN_START: AtomicUsize = AtomicUsize::new(0);
static OWN_END: AtomicUsize = AtomicUsize::new(0);

std::thread_local! {
    static CAPTURING: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread is inside a capture: its locking then goes uncounted.
#[inline(always)]
pub fn capturing_here() -> bool {
    CAPTURES.load(Relaxed) != 0 && capturing_flag()
}

/// The calling thread's flag, out of line: in a shared library a thread-local is found by a
/// call (`__tls_get_addr`), which the compiler would otherwise make ahead of the test of
/// [`CAPTURES`], on every lock and unlock.
#[cold]
#[inline(never)]
fn capturing_flag() -> bool {
    CAPTURING.with(Cell::get)
}

/// Finds this library's address range, once, before any capture (from the constructor).
pub fn find_own_code() {
    extern "C" fn visit(info: *mut libc::dl_phdr_info, _size: libc::size_t, _data: *mut c_void) -> libc::c_int {
        let probe = find_own_code as *const () as usize;
        // SAFETY: the loader passes a live `dl_phdr_info`.
        let info = unsafe { &*info };
        // SAFETY: its `dlpi_phdr` has `dlpi_phnum` entries, live for the call.
        let headers = unsafe { core::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
        let loads = headers.iter().filter(|h| h.p_type == libc::PT_LOAD);
        let (mut start, mut end) = (usize::MAX, 0);
        for header in loads {
            let at = info.dlpi_addr as usize + header.p_vaddr as usize;
            start = start.min(at);
            end = end.max(at + header.p_memsz as usize);
        }
        if (start..end).contains(&probe) {
            OWN_START.store(start, Relaxed);
            OWN_END.store(end, Relaxed);
            return 1;
        }
        0
    }
    // SAFETY: `visit` matches the callback's signature and keeps nothing past the call.
    unsafe { libc::dl_iterate_phdr(Some(visit), core::ptr::null_mut()) };
}

/// The calling thread's stack, without this library's frames: its site number (index + 1),
/// or 0 when nothing was captured (a capture already in progress on this thread, an empty
/// stack, or a full table).
#[inline(never)]
pub fn capture() -> u32 {
    if CAPTURING.with(|flag| flag.replace(true)) {
        return 0;
    }
    CAPTURES.fetch_add(1, Relaxed);
    let mut frames = [0usize; FRAMES];
    let mut depth = 0;
    let own = OWN_START.load(Relaxed)..OWN_END.load(Relaxed);
    // SAFETY: the callback neither allocates nor unwinds; the crate's lock is not needed
    // because nothing here runs the unwinder re-entrantly (the flag above).
    unsafe {
        backtrace::trace_unsynchronized(|frame| {
            let ip = frame.ip() as usize;
            if ip == 0 {
                return false;
            }
            if depth == 0 && own.contains(&ip) {
                return true;
            }
            frames[depth] = ip;
            depth += 1;
            depth < FRAMES
        });
    }
    let site = if depth == 0 { 0 } else { insert(&frames[..depth]) };
    CAPTURES.fetch_sub(1, Relaxed);
    CAPTURING.with(|flag| flag.set(false));
    site
}

fn hash(frames: &[usize]) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for &ip in frames {
        hash = (hash ^ ip as u64).wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash.max(1)
}

/// The site number of `frames`, added if new; 0 if the table is full.
fn insert(frames: &[usize]) -> u32 {
    let hash = hash(frames);
    for probe in 0..SITES {
        let index = (hash as usize).wrapping_add(probe) % SITES;
        let slot = &TABLE[index];
        let mut found = slot.hash.load(Acquire);
        if found == 0 {
            match slot.hash.compare_exchange(0, hash, AcqRel, Acquire) {
                Ok(_) => {
                    for (kept, &ip) in slot.frames.iter().zip(frames) {
                        kept.store(ip, Relaxed);
                    }
                    slot.depth.store(frames.len() as u32, Relaxed);
                    slot.ready.store(1, Release);
                    return index as u32 + 1;
                }
                Err(taken) => found = taken,
            }
        }
        if found == hash && ready_soon(slot) && stack(index as u32 + 1) == frames {
            return index as u32 + 1;
        }
    }
    0
}

/// Whether `slot`'s frames are published, waiting a while for the thread that claimed it: a
/// slot a fork left claimed and never published (its thread is the parent's) is passed over.
fn ready_soon(slot: &Slot) -> bool {
    for _ in 0..1 << 20 {
        if slot.ready.load(Acquire) != 0 {
            return true;
        }
        core::hint::spin_loop();
    }
    false
}

/// Forgets captures in progress: a forked child has none (its parent's other threads are
/// gone), though the count they left says otherwise.
pub fn forget_captures() {
    CAPTURES.store(0, Relaxed);
}

/// The return addresses of site `site` (a number from [`capture`]), innermost first.
pub fn stack(site: u32) -> Vec<usize> {
    let Some(slot) = site.checked_sub(1).and_then(|index| TABLE.get(index as usize)) else { return Vec::new() };
    if slot.ready.load(Acquire) == 0 {
        return Vec::new();
    }
    let depth = slot.depth.load(Relaxed) as usize;
    slot.frames[..depth].iter().map(|ip| ip.load(Relaxed)).collect()
}

/// One frame of a stack, named.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    pub address: usize,
    /// The file of the executable or library the address is in, and the address's offset
    /// from where it was loaded.
    pub module: Option<String>,
    pub offset: Option<usize>,
    pub function: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
}

/// Names `address`, a return address: its module from the loader, and its function and
/// source line from the module's symbols and debug information (at exit only: it reads files
/// and allocates).
pub fn symbolise(address: usize) -> Frame {
    let mut frame = Frame { address, module: None, offset: None, function: None, file: None, line: None };
    // SAFETY: all-zero bytes are a valid `Dl_info` (null pointers).
    let mut info: libc::Dl_info = unsafe { core::mem::zeroed() };
    // SAFETY: `dladdr` writes `info` and only reads the loader's tables.
    if unsafe { libc::dladdr(address as *const c_void, &mut info) } != 0 {
        frame.offset = Some(address - info.dli_fbase as usize);
        // SAFETY: `dli_fname` is NULL or a string the loader keeps.
        let name = (!info.dli_fname.is_null())
            .then(|| unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned())
            .filter(|name| !name.is_empty());
        // The main program's entry has an empty name.
        frame.module = name.or_else(|| std::fs::read_link("/proc/self/exe").ok().map(|p| p.display().to_string()));
    }
    let mut first = true;
    backtrace::resolve(address as *mut c_void, |symbol| {
        // The first symbol is the innermost: a function inlined at the address, if any.
        if !first {
            return;
        }
        first = false;
        frame.function = symbol.name().map(|name| name.to_string());
        frame.file = symbol.filename().map(|path| path.display().to_string());
        frame.line = symbol.lineno();
    });
    frame
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_stacks_share_a_site_and_different_ones_do_not() {
        let a = insert(&[0x1000, 0x2000, 0x3000]);
        let b = insert(&[0x1000, 0x2000, 0x3000]);
        let c = insert(&[0x1000, 0x2000, 0x3001]);
        assert!(a != 0 && a == b && a != c, "{a} {b} {c}");
        assert_eq!(stack(a), [0x1000, 0x2000, 0x3000]);
        assert_eq!(stack(0), Vec::<usize>::new());
    }

    #[test]
    fn a_capture_has_frames_and_none_of_them_inside_a_capture() {
        let site = capture();
        assert!(site != 0 && !stack(site).is_empty());
        CAPTURING.with(|flag| flag.set(true));
        assert_eq!(capture(), 0, "no capture inside a capture");
        CAPTURING.with(|flag| flag.set(false));
        assert!(!capturing_here());
    }
}
