#![cfg(all(not(loom), target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
//! Uncontended, no lock waits or wakes through the kernel: every lock of the registry is
//! locked, tried, timed and released, every reader-writer lock locked and tried shared and
//! exclusive, `spinlab::Mutex` locked and tried, and condition variables nobody waits on
//! notified, without a single `futex`, `sched_yield`, `nanosleep` or `clock_nanosleep` system
//! call: the hot path's rule, no system call on an uncontended acquire or release. Entries
//! whose policy this CPU lacks (`umwait`, `mwaitx`, ...) cannot be built here; the child
//! names them.
//!
//! The kernel does the counting. The test runs this binary again, asking for this one test
//! with [`CHILD`] set. In that child one thread installs a seccomp filter that kills the
//! process at any of those four calls from that thread, then runs every check and prints the
//! name of each lock before it starts on it, so that a lock that makes a call is named by
//! the last line the child printed. The filter applies to that thread alone (no
//! `SECCOMP_FILTER_FLAG_TSYNC`); the thread never returns once its checks pass (its exit could
//! make one of the calls), and the child's main thread ends the process once it reports, or
//! fails it if the checks stopped early (a failed check, or a kernel that refused the filter).

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Set in the child's environment: run the checks under the filter instead of the parent's
/// side.
const CHILD: &str = "SPINLAB_NO_SYSCALL_CHILD";
const TEST_NAME: &str = "uncontended_locks_make_no_wait_or_wake_system_call";
/// Far beyond the checks' few milliseconds, on any machine.
const CHILD_LIMIT: Duration = Duration::from_secs(120);
/// Lock/unlock rounds per lock: enough that a call made now and then, not only the first
/// time, is caught.
const ROUNDS: usize = 1000;

/// The calls a waiter makes: sleeping and waking on a futex, offering the CPU, napping.
fn forbidden() -> [libc::c_long; 4] {
    [libc::SYS_futex, libc::SYS_sched_yield, libc::SYS_nanosleep, libc::SYS_clock_nanosleep]
}

#[test]
fn uncontended_locks_make_no_wait_or_wake_system_call() {
    if std::env::var_os(CHILD).is_some() {
        child();
    }
    let expected = spinlab_registry::LOCKS.entries().iter().filter(|e| e.build(()).is_ok()).count()
        + spinlab_registry::RWLOCKS.entries().iter().filter(|e| e.build(()).is_ok()).count()
        + 2; // `spinlab::Mutex`, and the condition variables
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut child = Command::new(exe)
        .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the test binary runs again as the child");
    // Before Linux 4.14 the filter's kill ends only the thread that made the call, and the
    // child would wait for it for ever.
    let started = Instant::now();
    while child.try_wait().expect("the child's status").is_none() {
        if started.elapsed() > CHILD_LIMIT {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().expect("the child's output");
    assert!(
        started.elapsed() <= CHILD_LIMIT,
        "the child did not finish in {CHILD_LIMIT:?}; its output:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The harness prints "test NAME ... " without a newline, so the first check shares its line.
    let last = stdout.rfind("checking ").map_or("(none)", |at| stdout[at..].lines().next().unwrap_or_default());
    let failed: Vec<&str> = stdout.lines().filter_map(|l| l.find("failed: ").map(|at| &l[at..])).collect();
    assert!(
        out.status.success(),
        "the child did not finish ({}); the last thing it started on: {last}; {}\nstderr: {stderr}",
        describe(&out.status),
        if failed.is_empty() { "no check failed".to_string() } else { failed.join("; ") }
    );
    let checked = format!("checked {expected} without a wait or wake system call");
    assert!(stdout.contains(&checked), "expected the line {checked:?}; the child printed:\n{stdout}");
}

/// An exit status in words; a kill by `SIGSYS` is the filter catching a call.
fn describe(status: &std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status.signal() {
        Some(libc::SIGSYS) => "killed by SIGSYS: a futex, sched_yield or sleep call was made uncontended".into(),
        Some(signal) => format!("killed by signal {signal}"),
        None => format!("exit status {:?}", status.code()),
    }
}

static DONE: AtomicBool = AtomicBool::new(false);
static FAILED: AtomicBool = AtomicBool::new(false);
static CHECKED: AtomicUsize = AtomicUsize::new(0);

/// The child's side: the checks on a filtered thread; this thread waits and ends the process.
fn child() -> ! {
    // Built before the filter, so that a first use's set-up (the registry's tables, the
    // CPU-count probe) is not what the filter judges: only locking is.
    let (mut locks, mut rwlocks, mut unavailable) = (Vec::new(), Vec::new(), Vec::new());
    for entry in spinlab_registry::LOCKS.entries() {
        match entry.build(()) {
            Ok(lock) => locks.push((entry.name.as_str(), lock)),
            Err(_) => unavailable.push(entry.name.as_str()),
        }
    }
    for entry in spinlab_registry::RWLOCKS.entries() {
        match entry.build(()) {
            Ok(rw) => rwlocks.push((entry.name.as_str(), rw)),
            Err(_) => unavailable.push(entry.name.as_str()),
        }
    }
    println!("not checked, their policy unavailable on this CPU: {}", unavailable.join(", "));
    let checks = std::thread::spawn(move || {
        filter_this_thread();
        let deadline = || Instant::now() + Duration::from_secs(60);
        for (name, lock) in &locks {
            println!("checking {name}");
            for _ in 0..ROUNDS {
                lock.lock();
                // SAFETY: this thread holds the lock, taken just above.
                unsafe { lock.unlock() };
                expect(lock.try_lock(), format_args!("{name}: try_lock failed on a free lock"));
                // SAFETY: held, by the try_lock just above.
                unsafe { lock.unlock() };
                expect(lock.try_lock_until(deadline()), format_args!("{name}: a timed lock failed on a free lock"));
                // SAFETY: held, by the timed lock just above.
                unsafe { lock.unlock() };
            }
            CHECKED.fetch_add(1, Ordering::Relaxed);
        }
        for (name, rw) in &rwlocks {
            println!("checking {name}");
            for _ in 0..ROUNDS {
                rw.lock_shared();
                rw.lock_shared();
                // SAFETY: this thread holds both shared locks, taken just above.
                unsafe {
                    rw.unlock_shared();
                    rw.unlock_shared();
                }
                rw.lock_exclusive();
                // SAFETY: this thread holds the exclusive lock, taken just above.
                unsafe { rw.unlock_exclusive() };
                expect(rw.try_lock_shared(), format_args!("{name}: try_lock_shared failed on a free lock"));
                // SAFETY: held shared, by the try just above.
                unsafe { rw.unlock_shared() };
                expect(rw.try_lock_exclusive(), format_args!("{name}: try_lock_exclusive failed on a free lock"));
                // SAFETY: held, by the try just above.
                unsafe { rw.unlock_exclusive() };
            }
            CHECKED.fetch_add(1, Ordering::Relaxed);
        }
        println!("checking spinlab::Mutex");
        let mutex = spinlab::Mutex::new(0u64);
        for _ in 0..ROUNDS {
            *mutex.lock() += 1;
            let guard = mutex.try_lock();
            expect(guard.is_some(), format_args!("spinlab::Mutex: try_lock failed on a free lock"));
            if let Some(mut guard) = guard {
                *guard += 1;
            }
        }
        let count = *mutex.lock();
        expect(
            count == 2 * ROUNDS as u64,
            format_args!("spinlab::Mutex: {count} increments counted of {}", 2 * ROUNDS),
        );
        CHECKED.fetch_add(1, Ordering::Relaxed);
        println!("checking spinlab::Condvar over futex and spin-park, nobody waiting");
        let futex = spinlab::Condvar::<spinlab::wait::Futex>::new();
        let spin_park = spinlab::Condvar::<spinlab::wait::SpinPark>::new();
        for _ in 0..ROUNDS {
            futex.notify_one();
            futex.notify_all();
            spin_park.notify_one();
            spin_park.notify_all();
        }
        CHECKED.fetch_add(1, Ordering::Relaxed);
        DONE.store(true, Ordering::Release);
        wait_for_exit();
    });
    while !DONE.load(Ordering::Acquire) {
        if FAILED.load(Ordering::Acquire) {
            std::process::exit(1);
        }
        if checks.is_finished() {
            // It panicked before the filter was in place (the kernel refused it): the message
            // is on stderr.
            eprintln!("the checks stopped before the end");
            std::process::exit(1);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    println!("checked {} without a wait or wake system call", CHECKED.load(Ordering::Relaxed));
    std::process::exit(0);
}

/// A check on the filtered thread. A panic there would itself make the calls the filter
/// kills at (its first use sets up the panic machinery), which would then read as the lock's:
/// a failed check prints what failed, flags it for the main thread and stops instead.
fn expect(ok: bool, what: std::fmt::Arguments) {
    if !ok {
        println!("failed: {what}");
        FAILED.store(true, Ordering::Release);
        wait_for_exit();
    }
}

/// Parks the filtered thread until the main thread ends the process. Its own exit could make
/// a call the filter kills at.
fn wait_for_exit() -> ! {
    loop {
        // SAFETY: `pause` takes no arguments; it returns only when a signal is handled.
        unsafe { libc::pause() };
    }
}

/// Installs, for the calling thread only, a seccomp filter that kills the process at any of
/// [`forbidden`]'s calls and allows every other. Panics (failing the child, and so the test)
/// if the kernel refuses it: the check cannot be made without it.
fn filter_this_thread() {
    const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    #[cfg(target_arch = "x86_64")]
    const ARCH: u32 = 0xC000_003E; // AUDIT_ARCH_X86_64
    #[cfg(target_arch = "aarch64")]
    const ARCH: u32 = 0xC000_00B7; // AUDIT_ARCH_AARCH64
    let stmt = |code, k| libc::sock_filter { code, jt: 0, jf: 0, k };
    let calls = forbidden();
    // seccomp_data: the call's number at offset 0, the architecture at 4.
    let mut program = vec![
        stmt(LD_W_ABS, 4),
        // Another architecture's calls (none here) have other numbers: kill rather than guess.
        libc::sock_filter { code: JEQ_K, jt: 1, jf: 0, k: ARCH },
        stmt(RET_K, libc::SECCOMP_RET_KILL_PROCESS),
        stmt(LD_W_ABS, 0),
    ];
    for (i, &call) in calls.iter().enumerate() {
        // Jump to the kill at the end when equal; the allow sits between.
        let to_kill = (calls.len() - i) as u8;
        program.push(libc::sock_filter { code: JEQ_K, jt: to_kill, jf: 0, k: call as u32 });
    }
    program.push(stmt(RET_K, libc::SECCOMP_RET_ALLOW));
    program.push(stmt(RET_K, libc::SECCOMP_RET_KILL_PROCESS));
    let fprog = libc::sock_fprog { len: program.len() as u16, filter: program.as_mut_ptr() };
    // SAFETY: plain prctl calls; `fprog` points at `program`, alive across the call, and the
    // kernel copies the program.
    unsafe {
        assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0, "PR_SET_NO_NEW_PRIVS refused");
        let installed = libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &fprog as *const libc::sock_fprog);
        assert_eq!(installed, 0, "the kernel refused the seccomp filter: {}", std::io::Error::last_os_error());
    }
}
