//! Whether hardware performance counters can be read: open a counter of retired
//! instructions for this thread with `perf_event_open`, run a little work, read it.

use serde::Serialize;

/// The answer, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PerfCounters {
    /// A hardware instruction counter was opened and counted.
    pub readable: bool,
    /// What happened (the error, or the count seen).
    pub detail: String,
}

/// `struct perf_event_attr` up to `PERF_ATTR_SIZE_VER0` (64 bytes), the layout every kernel
/// since 2.6.31 accepts. libc does not define it.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

const PERF_TYPE_HARDWARE: u32 = 0;
pub(crate) const PERF_COUNT_HW_CPU_CYCLES: u64 = 0;
pub(crate) const PERF_COUNT_HW_INSTRUCTIONS: u64 = 1;
const FLAG_DISABLED: u64 = 1 << 0;
const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
const FLAG_EXCLUDE_HV: u64 = 1 << 6;
// _IO('$', 0), _IO('$', 1), _IO('$', 3).
pub(crate) const IOC_ENABLE: libc::c_ulong = 0x2400;
pub(crate) const IOC_DISABLE: libc::c_ulong = 0x2401;
pub(crate) const IOC_RESET: libc::c_ulong = 0x2403;

/// Opens a disabled, user-mode-only hardware counter (`config`: one of the
/// `PERF_COUNT_HW_*` above) of the calling thread on any CPU.
pub(crate) fn open_counter(config: u64) -> std::io::Result<libc::c_int> {
    let attr = PerfEventAttr {
        kind: PERF_TYPE_HARDWARE,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config,
        flags: FLAG_DISABLED | FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV,
        ..Default::default()
    };
    // SAFETY: `attr` is a valid perf_event_attr of the size it declares; pid 0 / cpu -1 means
    // this thread on any CPU; no group, no flags.
    let fd = unsafe { libc::syscall(libc::SYS_perf_event_open, &attr as *const PerfEventAttr, 0, -1, -1, 0) };
    if fd < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(fd as libc::c_int)
    }
}

/// Reads a counter opened by [`open_counter`].
pub(crate) fn read_counter(fd: libc::c_int) -> Option<u64> {
    let mut count: u64 = 0;
    // SAFETY: `fd` is an open perf event; `count` is a valid 8-byte buffer.
    let n = unsafe { libc::read(fd, &mut count as *mut u64 as *mut libc::c_void, 8) };
    (n == 8).then_some(count)
}

/// Tries to count this thread's user-mode instructions.
pub fn probe() -> PerfCounters {
    let fd = match open_counter(PERF_COUNT_HW_INSTRUCTIONS) {
        Ok(fd) => fd,
        Err(err) => {
            let why = match err.raw_os_error() {
                Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV) => {
                    "no hardware PMU is exposed (usual in a virtual machine)".to_string()
                }
                Some(libc::EACCES) | Some(libc::EPERM) => {
                    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap_or_default();
                    format!("not permitted (kernel.perf_event_paranoid = {})", paranoid.trim())
                }
                _ => "perf_event_open failed".to_string(),
            };
            return PerfCounters { readable: false, detail: format!("{why}: {err}") };
        }
    };
    // SAFETY: `fd` is the perf event we just opened; the ioctls take no argument; closed once.
    unsafe { libc::ioctl(fd, IOC_ENABLE, 0) };
    std::hint::black_box(crate::measure::work::spin(10_000, 3));
    // SAFETY: as above.
    unsafe { libc::ioctl(fd, IOC_DISABLE, 0) };
    let count = read_counter(fd);
    // SAFETY: as above.
    unsafe { libc::close(fd) };
    let Some(count) = count else {
        return PerfCounters { readable: false, detail: "the counter opened but could not be read".to_string() };
    };
    if count == 0 {
        return PerfCounters { readable: false, detail: "the counter opened but counted nothing".to_string() };
    }
    PerfCounters { readable: true, detail: format!("counted {count} user-mode instructions over a 10 000-step loop") }
}
