//! The active thread's instructions per cycle, where the machine exposes hardware counters
//! (`perf_event_open` on the calling thread, user mode only). Most virtual machines expose
//! none; then [`Ipc::open`] says why and the experiment reports no IPC.

/// `struct perf_event_attr` up to `PERF_ATTR_SIZE_VER0` (64 bytes), which every kernel since
/// 2.6.31 accepts; libc does not define it.
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
const PERF_COUNT_HW_CPU_CYCLES: u64 = 0;
const PERF_COUNT_HW_INSTRUCTIONS: u64 = 1;
const FLAG_DISABLED: u64 = 1 << 0;
const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
const FLAG_EXCLUDE_HV: u64 = 1 << 6;
// _IO('$', 0), _IO('$', 1), _IO('$', 3).
const IOC_ENABLE: libc::c_ulong = 0x2400;
const IOC_DISABLE: libc::c_ulong = 0x2401;
const IOC_RESET: libc::c_ulong = 0x2403;

/// Open instruction and cycle counters of the calling thread.
pub struct Ipc {
    instructions: libc::c_int,
    cycles: libc::c_int,
}

fn open(config: u64) -> Result<libc::c_int, String> {
    let attr = PerfEventAttr {
        kind: PERF_TYPE_HARDWARE,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config,
        flags: FLAG_DISABLED | FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV,
        ..Default::default()
    };
    // SAFETY: `attr` is a valid perf_event_attr of the size it declares; pid 0 / cpu -1 is
    // the calling thread on any CPU; no group, no flags.
    let fd = unsafe { libc::syscall(libc::SYS_perf_event_open, &attr as *const PerfEventAttr, 0, -1, -1, 0) };
    if fd < 0 {
        Err(format!("perf_event_open: {}", std::io::Error::last_os_error()))
    } else {
        Ok(fd as libc::c_int)
    }
}

fn read(fd: libc::c_int) -> Option<u64> {
    let mut count: u64 = 0;
    // SAFETY: `fd` is an open perf event; `count` is a valid 8-byte buffer.
    let n = unsafe { libc::read(fd, &mut count as *mut u64 as *mut libc::c_void, 8) };
    (n == 8).then_some(count)
}

impl Ipc {
    /// Opens both counters for the calling thread, or says why not.
    pub fn open() -> Result<Ipc, String> {
        let instructions = open(PERF_COUNT_HW_INSTRUCTIONS)?;
        match open(PERF_COUNT_HW_CPU_CYCLES) {
            Ok(cycles) => Ok(Ipc { instructions, cycles }),
            Err(e) => {
                // SAFETY: closing the descriptor opened just above, once.
                unsafe { libc::close(instructions) };
                Err(e)
            }
        }
    }

    /// Runs `f` with the counters on; returns its result and the IPC (`None` if a counter
    /// could not be read or counted no cycles).
    pub fn measure<R>(&self, f: impl FnOnce() -> R) -> (R, Option<f64>) {
        for fd in [self.instructions, self.cycles] {
            // SAFETY: `fd` is an open perf event of this thread.
            unsafe {
                libc::ioctl(fd, IOC_RESET, 0);
                libc::ioctl(fd, IOC_ENABLE, 0);
            }
        }
        let r = f();
        for fd in [self.instructions, self.cycles] {
            // SAFETY: as above.
            unsafe { libc::ioctl(fd, IOC_DISABLE, 0) };
        }
        let ipc = match (read(self.instructions), read(self.cycles)) {
            (Some(i), Some(c)) if c > 0 => Some(i as f64 / c as f64),
            _ => None,
        };
        (r, ipc)
    }
}

impl Drop for Ipc {
    fn drop(&mut self) {
        // SAFETY: both descriptors are open and owned by this value; closed once.
        unsafe {
            libc::close(self.instructions);
            libc::close(self.cycles);
        }
    }
}
