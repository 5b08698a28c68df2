//! Which wait instructions this CPU offers, read once from `cpuid` (x86) or fixed by the
//! architecture (aarch64).
//!
//! A policy built on a missing instruction must never execute it: every such policy asks
//! here first, and the answer is cached in a static so the check costs one relaxed load.

use crate::sys::measured::MeasuredNumber;

/// The wait-related features of the CPU this process runs on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuFeatures {
    /// A spin-wait hint exists (`pause` on x86, `yield`/`isb` on aarch64).
    pub spin_hint: bool,
    /// Intel WAITPKG: user-mode `umonitor`/`umwait`/`tpause` (CPUID.7.0:ECX\[5\]).
    pub waitpkg: bool,
    /// AMD MONITORX/MWAITX, usable from user mode (CPUID.80000001h:ECX\[29\]).
    pub monitorx: bool,
    /// aarch64 `wfe` woken by the exclusive monitor (every aarch64 CPU).
    pub wfe: bool,
    /// The TSC runs at a constant rate and does not stop in idle states
    /// (CPUID.80000007h:EDX\[8\]); on aarch64 the generic timer always does.
    pub invariant_tsc: bool,
}

/// The features of this CPU, detected on first call.
pub fn features() -> CpuFeatures {
    static FEATURES: MeasuredNumber = MeasuredNumber::new();
    CpuFeatures::unpack(FEATURES.get(|| detect().pack()))
}

impl CpuFeatures {
    /// The flags as bits, with bit 5 set so that no set of features packs to 0.
    fn pack(self) -> u64 {
        let flags = [self.spin_hint, self.waitpkg, self.monitorx, self.wfe, self.invariant_tsc];
        flags.iter().enumerate().fold(1 << 5, |bits, (i, &on)| bits | (on as u64) << i)
    }

    fn unpack(bits: u64) -> CpuFeatures {
        let on = |i: u32| bits & (1 << i) != 0;
        CpuFeatures { spin_hint: on(0), waitpkg: on(1), monitorx: on(2), wfe: on(3), invariant_tsc: on(4) }
    }
}

#[cfg(target_arch = "x86_64")]
fn detect() -> CpuFeatures {
    use core::arch::x86_64::__cpuid_count;
    // Leaves above the maximum the CPU reports are never queried.
    let (max_leaf, max_ext_leaf) = (__cpuid_count(0, 0).eax, __cpuid_count(0x8000_0000, 0).eax);
    let leaf7_ecx = if max_leaf >= 7 { __cpuid_count(7, 0).ecx } else { 0 };
    let ext1_ecx = if max_ext_leaf >= 0x8000_0001 { __cpuid_count(0x8000_0001, 0).ecx } else { 0 };
    let ext7_edx = if max_ext_leaf >= 0x8000_0007 { __cpuid_count(0x8000_0007, 0).edx } else { 0 };
    CpuFeatures {
        spin_hint: true, // `pause` is part of SSE2, which x86_64 requires
        waitpkg: leaf7_ecx & (1 << 5) != 0,
        monitorx: ext1_ecx & (1 << 29) != 0,
        wfe: false,
        invariant_tsc: ext7_edx & (1 << 8) != 0,
    }
}

#[cfg(target_arch = "aarch64")]
fn detect() -> CpuFeatures {
    CpuFeatures { spin_hint: true, waitpkg: false, monitorx: false, wfe: true, invariant_tsc: true }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn detect() -> CpuFeatures {
    CpuFeatures::default()
}

/// How many CPUs this process may run on: those its main thread's affinity allows (`taskset`
/// sets it for the whole process), or those online if that cannot be read or names a single
/// CPU. Read once; at least 1.
///
/// The main thread's, not the caller's: a thread pinned to one CPU (as the lab pins its
/// workers) does not make the machine small, and a main thread pinned to one CPU (as some
/// programs pin theirs) says nothing about where the others run. Unlike
/// `std::thread::available_parallelism`, a cgroup's CPU quota does not lower it either: a
/// quota limits CPU time, not how many CPUs the threads run on at once.
///
/// The default lock asks at every contended acquisition
/// ([`Adaptive`](crate::lock::Adaptive)), so the answer is kept in one word read with a plain
/// load ([`MeasuredNumber`]). Threads that race to the first call each read the affinity, and
/// the first to store what it read stands; a lock stays correct whichever answer it gets
/// (`Adaptive`'s docs say why).
#[inline]
pub fn process_cpus() -> usize {
    static CPUS: MeasuredNumber = MeasuredNumber::new();
    CPUS.get(|| main_thread_cpus().filter(|&n| n > 1).or_else(online_cpus).unwrap_or(1) as u64) as usize
}

fn main_thread_cpus() -> Option<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set, and the call writes at most its size.
    let mut set: libc::cpu_set_t = unsafe { core::mem::zeroed() };
    // SAFETY: as above; the process id names the main thread.
    let read = unsafe { libc::sched_getaffinity(libc::getpid(), size_of::<libc::cpu_set_t>(), &mut set) };
    // SAFETY: `set` was filled in by the kernel.
    (read == 0).then(|| unsafe { libc::CPU_COUNT(&set) } as usize)
}

fn online_cpus() -> Option<usize> {
    // SAFETY: sysconf reads a value and has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    (n > 0).then_some(n as usize)
}

/// Whether this x86-64 CPU has `rdtscp` (CPUID.80000001h:EDX\[27\]); never on another
/// architecture. Read from cpuid by the first call and kept: one word read with a plain load.
// Unused under loom, whose models replace the hardware waits and the timed look.
#[cfg_attr(loom, allow(dead_code))]
#[inline]
pub(crate) fn has_rdtscp() -> bool {
    // 2 for yes, 1 for no: a measured number is never 0.
    static RDTSCP: MeasuredNumber = MeasuredNumber::new();
    RDTSCP.get(|| 1 + u64::from(cpuid_has_rdtscp())) == 2
}

#[cfg_attr(loom, allow(dead_code))]
#[cold]
fn cpuid_has_rdtscp() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::__cpuid_count;
        __cpuid_count(0x8000_0000, 0).eax >= 0x8000_0001 && __cpuid_count(0x8000_0001, 0).edx & (1 << 27) != 0
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_is_stable_and_matches_the_architecture() {
        let f = features();
        assert_eq!(f, features());
        assert_eq!(f, detect());
        for bits in 0..32u64 {
            let unpacked = CpuFeatures::unpack(bits | 1 << 5);
            assert_eq!(unpacked.pack(), bits | 1 << 5, "every flag keeps its own bit");
        }
        assert!(f.spin_hint || !cfg!(any(target_arch = "x86_64", target_arch = "aarch64")));
        if cfg!(target_arch = "x86_64") {
            assert!(!f.wfe, "wfe is an aarch64 instruction");
        }
        if cfg!(target_arch = "aarch64") {
            assert!(f.wfe && !f.waitpkg && !f.monitorx);
        }
    }

    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    #[test]
    fn cpuid_agrees_with_the_kernel() {
        // /proc/cpuinfo is the kernel's reading of the same bits; a wrong bit number here
        // would make a policy execute an instruction the CPU lacks.
        let Ok(cpuinfo) = std::fs::read_to_string("/proc/cpuinfo") else { return };
        let Some(flags) = cpuinfo.lines().find(|l| l.starts_with("flags")) else { return };
        let has = |name: &str| flags.split_whitespace().any(|f| f == name);
        let f = features();
        assert_eq!(f.waitpkg, has("waitpkg"));
        assert_eq!(f.monitorx, has("mwaitx"));
        assert!(!f.invariant_tsc || has("nonstop_tsc"));
        assert_eq!(has_rdtscp(), has("rdtscp"));
    }
}
