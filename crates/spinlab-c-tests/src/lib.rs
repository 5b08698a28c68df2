//! Building the C libraries and running C programs against them: the test support that
//! spinlab-ffi's and spinlab-preload's integration tests share (a dev-dependency of both).
//!
//! Why the tests build the libraries themselves: cargo builds a package's library before its
//! integration tests only when the library has a crate type Rust can link (rlib); these have
//! only `cdylib`/`staticlib` (an rlib of spinlab-ffi would collide with the spinlab crate's
//! own libspinlab.rlib), so a plain `cargo test` would leave the .so files missing or stale.
//! So the first test that needs them runs `cargo build` for both packages, with this test
//! executable's profile and target directory (cargo holds no lock on it while tests run);
//! an up-to-date build costs a fraction of a second.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// `<target>/<profile>`, where cargo puts the libraries: this executable is
/// `<target>/<profile>/deps/<test>-<hash>`.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its executable");
    exe.parent().and_then(Path::parent).expect("the test runs from <target>/<profile>/deps").to_path_buf()
}

/// Builds libspinlab.{so,a} and libspinlab_preload.so (once per test process) and returns the
/// directory that holds them.
pub fn libraries() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = profile_dir();
        let target_dir = dir.parent().expect("<target>/<profile> has a parent");
        let profile = match dir.file_name().and_then(|n| n.to_str()) {
            // `cargo test` builds with the `test` profile, whose directory is `debug`.
            Some("debug") => "test",
            Some("release") => "release",
            Some(other) => other,
            None => panic!("no profile directory in {}", dir.display()),
        };
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let output = Command::new(cargo)
            .args(["build", "--quiet", "--profile", profile, "-p", "spinlab-ffi", "-p", "spinlab-preload"])
            .arg("--target-dir")
            .arg(target_dir)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("cargo runs");
        assert!(
            output.status.success(),
            "building the C libraries failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        for library in ["libspinlab.so", "libspinlab.a", "libspinlab_preload.so", "spinlab.pc"] {
            assert!(dir.join(library).exists(), "{} was not built", dir.join(library).display());
        }
        dir
    })
}

/// The workspace's include/ directory (spinlab.h).
pub fn include_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../include")
}

/// The C sources of the spinlab-ffi tests (check.h is shared).
pub fn ffi_c_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../spinlab-ffi/tests/c")
}

/// Where compiled test programs go: a folder per test binary, so parallel test binaries of
/// the two crates never overwrite each other's programs.
pub fn scratch_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its executable");
    let name = exe.file_name().and_then(|n| n.to_str()).unwrap_or("c-tests").to_string();
    let dir = profile_dir().join("spinlab-c-tests").join(name);
    std::fs::create_dir_all(&dir).expect("the scratch folder can be created");
    dir
}

/// Compiles C `sources` into the program `name` with warnings as errors; `flags` come after
/// the defaults (include paths, libraries). Panics with gcc's output on failure.
pub fn compile(name: &str, sources: &[PathBuf], flags: &[&str]) -> PathBuf {
    // Two tests of one binary may compile the same program at once, and a program that one
    // is still writing cannot be started by the other (ETXTBSY, "Text file busy"). So each
    // build writes a file of its own and renames it into place: a rename replaces the name,
    // and a copy already running keeps its own file.
    static BUILDS: AtomicUsize = AtomicUsize::new(0);
    let out = scratch_dir().join(name);
    let building = scratch_dir().join(format!("{name}.{}-{}", std::process::id(), BUILDS.fetch_add(1, Relaxed)));
    let mut gcc = Command::new("gcc");
    gcc.args(["-std=gnu11", "-O1", "-g", "-Wall", "-Wextra", "-Werror"])
        .arg("-I")
        .arg(include_dir())
        .arg("-I")
        .arg(ffi_c_dir())
        .args(sources)
        .arg("-o")
        .arg(&building)
        .args(flags)
        .arg("-pthread");
    let output = gcc.output().unwrap_or_else(|e| panic!("gcc could not be run ({e}): install gcc"));
    assert!(output.status.success(), "gcc {name} failed:\n{}", String::from_utf8_lossy(&output.stderr));
    std::fs::rename(&building, &out).unwrap_or_else(|e| panic!("{} cannot be renamed: {e}", building.display()));
    out
}

/// Flags that link the shared libspinlab and find it at run time.
pub fn link_shared() -> Vec<String> {
    let dir = libraries().display().to_string();
    vec![format!("-L{dir}"), format!("-Wl,-rpath,{dir}"), "-lspinlab".into()]
}

/// A finished program's status and output.
pub struct Ran {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// Panics, showing everything the program said, unless it exited with status 0.
    pub fn assert_success(&self, what: &str) -> &Self {
        assert!(
            self.status.success(),
            "{what}: {}\n--- stdout\n{}\n--- stderr\n{}",
            self.status,
            self.stdout,
            self.stderr
        );
        self
    }
}

/// Runs `program` with `args` and extra `env`, killing it if it has not finished after
/// `limit`: a deadlocked test fails with that message instead of hanging the suite. (The
/// limit is a watchdog against hangs, many times what a run takes; nothing measures time.)
///
/// One program at a time per test binary: each sizes its thread count to the CPUs, and
/// two at once would oversubscribe them (see check.h's `cpus_at_most`).
pub fn run(program: &Path, args: &[&str], env: &[(&str, &str)], limit: Duration) -> Ran {
    match try_run(program, args, env, limit) {
        Ok(ran) => ran,
        Err(hung) => panic!(
            "{} {args:?} {env:?} did not finish within {limit:?} (a deadlock?)\n--- stdout\n{}\n--- stderr\n{}",
            program.display(),
            hung.stdout,
            hung.stderr
        ),
    }
}

/// What a program that was killed at its watchdog had said.
pub struct Hung {
    pub stdout: String,
    pub stderr: String,
}

/// [`run`], returning what a program killed at `limit` had said instead of panicking. The
/// program runs in a process group of its own, and the watchdog kills the whole group: a
/// program's own children (a test driver's subprocesses) hold its output pipes too, and left
/// running they would keep the run from ever ending.
pub fn try_run(program: &Path, args: &[&str], env: &[(&str, &str)], limit: Duration) -> Result<Ran, Hung> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut child = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("{} could not be started: {e}", program.display()));
    // Drained by threads, so that a chatty child never blocks on a full pipe.
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut text);
            }
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for the child works") {
            break Some(status);
        }
        if started.elapsed() > limit {
            kill_group(child.id());
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // A program that exited may have left children in its group holding the pipes.
    kill_group(child.id());
    let (stdout, stderr) = (stdout.join().expect("stdout drained"), stderr.join().expect("stderr drained"));
    match status {
        Some(status) => Ok(Ran { status, stdout, stderr }),
        None => Err(Hung { stdout, stderr }),
    }
}

/// Sends SIGKILL to every process of the group `leader` leads (nothing if none is left).
fn kill_group(leader: u32) {
    let Ok(group) = libc::pid_t::try_from(leader) else { return };
    // SAFETY: kill has no memory effects; a negative pid names the process group, which is
    // the test's own child's (it was started with `process_group(0)`).
    unsafe { libc::kill(-group, libc::SIGKILL) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watchdog_kills_a_hung_program_with_the_children_that_hold_its_pipes() {
        // Without the group kill, the background `sleep` keeps stdout open and `try_run`
        // never returns.
        let script = "sleep 100000 & echo $!; wait";
        let hung = try_run(Path::new("/bin/sh"), &["-c", script], &[], Duration::from_millis(300))
            .err()
            .expect("killed at the watchdog");
        let grandchild = hung.stdout.trim();
        assert!(grandchild.parse::<u32>().is_ok(), "{:?}", hung.stdout);
        // Gone, or a zombie waiting for whoever adopted it to reap it. SIGKILL is delivered
        // asynchronously, so a killed process may still show as running for a moment: give it
        // up to 5 s (a survivor keeps sleeping, and fails).
        let state_of = || std::fs::read_to_string(format!("/proc/{grandchild}/stat")).unwrap_or_default();
        let dead = |state: &str| {
            let running = state.rsplit(')').next().and_then(|rest| rest.split_whitespace().next());
            matches!(running, None | Some("Z") | Some("X"))
        };
        let started = std::time::Instant::now();
        while !dead(&state_of()) && started.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let state = state_of();
        assert!(dead(&state), "the background child survived: {state}");
        let ran = try_run(Path::new("/bin/sh"), &["-c", "echo fine"], &[], Duration::from_secs(60)).ok().unwrap();
        assert_eq!((ran.code(), ran.stdout.as_str()), (Some(0), "fine\n"));
    }
}
