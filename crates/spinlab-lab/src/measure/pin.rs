//! Pinning threads to CPUs.

use std::io;

/// The CPUs this process may run on (its affinity mask), ascending.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is this thread; `set` is a valid cpu_set_t of the size passed.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        let n = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        return (0..n).collect();
    }
    // SAFETY: CPU_ISSET only reads the set.
    (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect()
}

/// Pins the calling thread to `cpu`.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("CPU {cpu} is beyond CPU_SETSIZE")));
    }
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` < CPU_SETSIZE (checked above), so CPU_SET writes inside the set.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: pid 0 is the calling thread; `set` is valid for the size passed.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Pins the calling thread to `cpu`, panicking with the CPU named if the OS refuses: the lab
/// only pins to CPUs it read from the affinity mask, so a refusal is a bug or a hot-unplug.
pub fn pin_or_die(cpu: usize) {
    if let Err(e) = pin_current_thread(cpu) {
        panic!("cannot pin a thread to CPU {cpu}: {e}");
    }
}

/// Runs `f` with the calling thread pinned to `cpu`, then restores the previous affinity.
pub fn with_pinned<R>(cpu: usize, f: impl FnOnce() -> R) -> R {
    let before = allowed_cpus();
    pin_or_die(cpu);
    let r = f();
    restore(&before);
    r
}

fn restore(cpus: &[usize]) {
    // SAFETY: as in `pin_current_thread`.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
        // SAFETY: `c` < CPU_SETSIZE, so CPU_SET writes inside the set.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: as in `pin_current_thread`.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinning_to_an_allowed_cpu_works_and_is_undone() {
        let allowed = allowed_cpus();
        assert!(!allowed.is_empty());
        let last = *allowed.last().unwrap();
        let inside = with_pinned(last, allowed_cpus);
        assert_eq!(inside, vec![last]);
        assert_eq!(allowed_cpus(), allowed);
        assert!(pin_current_thread(libc::CPU_SETSIZE as usize).is_err());
    }
}
