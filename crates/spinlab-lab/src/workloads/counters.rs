//! The active thread's instructions per cycle, where the machine exposes hardware counters
//! (`perf_event_open` on the calling thread, user mode only). Most virtual machines expose
//! none; then [`Ipc::open`] says why and the experiment reports no IPC.

use crate::machine::perf::{
    open_counter, read_counter, IOC_DISABLE, IOC_ENABLE, IOC_RESET, PERF_COUNT_HW_CPU_CYCLES,
    PERF_COUNT_HW_INSTRUCTIONS,
};

/// Open instruction and cycle counters of the calling thread.
pub struct Ipc {
    instructions: libc::c_int,
    cycles: libc::c_int,
}

fn open(config: u64) -> Result<libc::c_int, String> {
    open_counter(config).map_err(|e| format!("perf_event_open: {e}"))
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

    /// Runs `f` with the counters on.
    pub fn measure<R>(&self, f: impl FnOnce() -> R) -> Counted<R> {
        for fd in [self.instructions, self.cycles] {
            // SAFETY: `fd` is an open perf event of this thread.
            unsafe {
                libc::ioctl(fd, IOC_RESET, 0);
                libc::ioctl(fd, IOC_ENABLE, 0);
            }
        }
        let value = f();
        for fd in [self.instructions, self.cycles] {
            // SAFETY: as above.
            unsafe { libc::ioctl(fd, IOC_DISABLE, 0) };
        }
        let ipc = match (read_counter(self.instructions), read_counter(self.cycles)) {
            (Some(i), Some(c)) if c > 0 => Some(i as f64 / c as f64),
            _ => None,
        };
        Counted { value, ipc }
    }
}

/// What a function counted with [`Ipc::measure`] returned, and its instructions per cycle.
pub struct Counted<R> {
    /// The function's result.
    pub value: R,
    /// `None` if a counter could not be read or counted no cycles.
    pub ipc: Option<f64>,
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
