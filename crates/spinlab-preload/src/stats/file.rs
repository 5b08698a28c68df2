//! `SPINLAB_STATS_FILE=PREFIX`: the profile as JSON in `PREFIX.<pid>.json` (docs/profile.md
//! lists its keys), written with libc's `open` and `write` (the program may have closed its
//! standard streams) at exit, and before an exec replaces the image. A process whose program
//! locked nothing writes nothing.
//!
//! An exec keeps the pid, and the new image writes its own file at its exit: a file of that
//! name already there (its own, from before the exec) makes it take the next free
//! `PREFIX.<pid>.<n>.json`, so that neither is lost.

use super::hist::Hist;
use super::report::{self, Counts, Process, Site};
use super::sites::{self, Frame};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::ffi::CString;

/// The format's name and version, the file's first key.
pub const FORMAT: &str = "spinlab.profile/1";

/// Checks at start-up that files named from `prefix` can be created: creates and removes
/// `PREFIX.<pid>.check`. `Err` says why not.
pub fn check_writable(prefix: &str) -> Result<(), String> {
    let path = format!("{prefix}.{}.check", std::process::id());
    let c_path = CString::new(path).map_err(|_| "contains a NUL byte".to_string())?;
    // SAFETY: a NUL-terminated path; the descriptor is closed below.
    let fd = unsafe { libc::open(c_path.as_ptr(), libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC, 0o600) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error().to_string());
    }
    // SAFETY: closes and removes the file just made.
    unsafe {
        libc::close(fd);
        libc::unlink(c_path.as_ptr());
    }
    Ok(())
}

/// Writes the profile now to `PREFIX.<pid>.json` (or the next free name, see the module
/// documentation), unless nothing was locked. `started_ns`: when the library started.
/// Returns the path written.
pub fn write_file(prefix: &str, process: &Process, started_ns: u64) -> Option<String> {
    if report::snapshot_is_empty() {
        return None;
    }
    let (sites, untracked) = report::snapshot();
    let text = to_json(process, &sites, untracked, started_ns).to_string();
    let pid = std::process::id();
    for n in 0..1000 {
        let path = if n == 0 { format!("{prefix}.{pid}.json") } else { format!("{prefix}.{pid}.{n}.json") };
        let c_path = CString::new(path.clone()).ok()?;
        // SAFETY: a NUL-terminated path; the descriptor is closed below.
        let fd = unsafe {
            libc::open(c_path.as_ptr(), libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC, 0o644)
        };
        if fd < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EEXIST) {
                continue;
            }
            return None;
        }
        let mut rest = text.as_bytes();
        while !rest.is_empty() {
            // SAFETY: writes from a live buffer of that length to the descriptor just opened.
            let written = unsafe { libc::write(fd, rest.as_ptr().cast(), rest.len()) };
            if written <= 0 {
                break;
            }
            rest = &rest[written as usize..];
        }
        // SAFETY: the descriptor opened above.
        unsafe { libc::close(fd) };
        return Some(path);
    }
    None
}

fn hist(h: &Hist) -> Value {
    json!({
        "count": h.count, "total_ns": h.total_ns, "max_ns": h.max_ns,
        "p50_ns": h.quantile(0.5), "p90_ns": h.quantile(0.9), "p99_ns": h.quantile(0.99),
        "buckets": h.non_empty().into_iter().map(|(upper, n)| json!([upper, n])).collect::<Vec<_>>(),
    })
}

fn frame(f: &Frame) -> Value {
    json!({
        "address": f.address, "module": f.module, "offset": f.offset,
        "function": f.function, "file": f.file, "line": f.line,
    })
}

fn site(s: &Site, known: bool, frames: &mut HashMap<usize, Frame>) -> Value {
    let c: &Counts = &s.counts;
    let stack: Vec<Value> =
        s.stack.iter().map(|&ip| frame(frames.entry(ip).or_insert_with(|| sites::symbolise(ip)))).collect();
    let known_or_null = |n: u64| if known { json!(n) } else { Value::Null };
    let spin_ns = c.wait.total_ns.saturating_sub(c.sleep_ns + c.yield_ns);
    json!({
        "kind": s.kind,
        "site": s.origin.name(),
        "stack": stack,
        "objects": s.objects,
        "acquisitions": c.acquisitions,
        "contended": c.contended,
        "owner_changes": c.owner_changes,
        "wait": hist(&c.wait),
        "hold": hist(&c.hold),
        "spin_ns": known_or_null(spin_ns), "yield_ns": known_or_null(c.yield_ns), "sleep_ns": known_or_null(c.sleep_ns),
        "wakes": known_or_null(c.wakes), "wakes_empty": known_or_null(c.wakes_empty),
        "max_waiters": c.max_waiters,
        "waiter_ns": c.wait.total_ns,
        "contended_ns": c.contended_ns,
        "cond": (s.kind == "cond").then(|| json!({
            "waits": c.acquisitions, "timed_waits": c.cond.timed_waits, "timed_out": c.cond.timed_out,
            "spurious": c.cond.spurious,
            "signals": c.cond.signals, "broadcasts": c.cond.broadcasts,
        })),
        "rwlock": (s.kind.ends_with("rwlock")).then(|| json!({
            "reads": c.rw.reads, "writes": c.rw.writes,
            "read_contended": c.rw.read_contended, "write_contended": c.rw.write_contended,
            "read_wait_ns": c.rw.read_wait_ns, "write_wait_ns": c.rw.write_wait_ns,
        })),
        "top_objects": s.top.iter().map(|o| json!({
            "address": o.address, "acquisitions": o.counts.acquisitions, "contended": o.counts.contended,
            "wait_ns": o.counts.wait.total_ns, "max_wait_ns": o.counts.wait.max_ns, "hold_ns": o.counts.hold.total_ns,
        })).collect::<Vec<_>>(),
    })
}

/// The whole profile.
fn to_json(process: &Process, sites: &[Site], untracked: u64, started_ns: u64) -> Value {
    let argv: Vec<String> = std::fs::read("/proc/self/cmdline")
        .map(|bytes| {
            bytes
                .split(|&b| b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default();
    let program = std::fs::read_link("/proc/self/exe").map(|p| p.display().to_string()).unwrap_or_default();
    let mut frames = HashMap::new();
    let sites: Vec<Value> = sites
        .iter()
        .map(|s| {
            let known = report::phases_known(
                s.kind,
                process.spins_replaced,
                process.barriers_replaced,
                process.mutexes_replaced,
            );
            site(s, known, &mut frames)
        })
        .collect();
    json!({
        "format": FORMAT,
        "pid": std::process::id(),
        // SAFETY: getppid has no preconditions.
        "parent_pid": unsafe { libc::getppid() },
        "program": program,
        "argv": argv,
        "lock": process.lock,
        "started_ns": started_ns,
        "ended_ns": super::now_ns(),
        "hold_sample_every": super::HOLD_SAMPLE_EVERY,
        "untracked_acquisitions": untracked,
        "sites": sites,
    })
}
