//! The C library as C programs use it: tests/c/*.c compiled with gcc (`-Wall -Wextra
//! -Werror`) against include/spinlab.h and libspinlab, run, and checked; once more under
//! ThreadSanitizer; and linked the two ways spinlab.pc describes.

use spinlab_c_tests::{compile, ffi_c_dir, include_dir, libraries, link_shared, run, scratch_dir};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A watchdog for hangs, far above what any of these programs takes.
const LIMIT: Duration = Duration::from_secs(300);

fn c(name: &str) -> PathBuf {
    ffi_c_dir().join(name)
}

/// Every lock this machine can run, by registry name.
fn available_locks() -> Vec<String> {
    spinlab_registry::LOCKS.entries().iter().filter(|e| e.availability.is_ok()).map(|e| e.name.clone()).collect()
}

#[test]
fn the_header_compiles_as_c99_c11_and_cxx11_and_twice() {
    let source = scratch_dir().join("header.c");
    std::fs::write(
        &source,
        concat!(
            "#include <spinlab.h>\n#include <spinlab.h>\n",
            "static spinlab_mutex_t lock = SPINLAB_MUTEX_INITIALIZER;\n",
            "static spinlab_cond_t ready = SPINLAB_COND_INITIALIZER;\n",
            "int main(void) {\n",
            "  spinlab_mutex_t m, local = SPINLAB_MUTEX_INITIALIZER;\n",
            "  spinlab_cond_t local_cond = SPINLAB_COND_INITIALIZER;\n",
            "  (void)spinlab_cond_name(&ready); (void)spinlab_cond_name(&local_cond);\n",
            "  return spinlab_mutex_init(&m, 0) + spinlab_mutex_lock(&lock) + spinlab_mutex_lock(&local);\n",
            "}\n"
        ),
    )
    .unwrap();
    let compilers = [("gcc", "-std=c99"), ("gcc", "-std=c11"), ("gcc", "-std=gnu17"), ("g++", "-std=c++11")];
    // With -fsanitize=thread the header adds its annotation wrappers: they must compile too.
    for ((compiler, standard), sanitize) in compilers.iter().flat_map(|c| [(*c, "-O0"), (*c, "-fsanitize=thread")]) {
        let language = if compiler == "g++" { "c++" } else { "c" };
        let output = Command::new(compiler)
            .args([standard, sanitize, "-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only", "-x", language])
            .arg("-I")
            .arg(include_dir())
            .arg(&source)
            .output()
            .unwrap_or_else(|e| panic!("{compiler} could not be run ({e}): install it"));
        assert!(
            output.status.success(),
            "{compiler} {standard} {sanitize}:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

#[test]
fn every_lock_excludes_refuses_and_times_out() {
    let program =
        compile("exclusion", &[c("exclusion.c")], &link_shared().iter().map(String::as_str).collect::<Vec<_>>());
    let ran = run(&program, &[], &[], LIMIT);
    ran.assert_success("exclusion over every lock");
    let tested = available_locks().len();
    assert!(ran.stdout.contains(&format!("tested {tested} locks")), "{}", ran.stdout);
}

#[test]
fn condition_variables_of_every_policy_pass_items_and_time_out() {
    let program = compile("condvar", &[c("condvar.c")], &link_shared().iter().map(String::as_str).collect::<Vec<_>>());
    let ran = run(&program, &[], &[], LIMIT);
    ran.assert_success("condition variables of every policy");
    let policies = spinlab::wait::policies().iter().filter(|p| p.availability.is_ok()).count();
    assert!(ran.stdout.contains(&format!("tested {} condition", policies * 3)), "{}", ran.stdout);
}

/// The status codes `src/status.rs` defines, the barrier's serial-thread code among them.
fn status_names() -> Vec<String> {
    let source = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/status.rs")).unwrap();
    source
        .lines()
        .filter_map(|line| line.strip_prefix("pub const ")?.split_once(": c_int").map(|(name, _)| name.to_string()))
        .collect()
}

#[test]
fn static_initialisers_cond_names_and_errno_values_as_a_c_program_sees_them() {
    let program =
        compile("static_init", &[c("static_init.c")], &link_shared().iter().map(String::as_str).collect::<Vec<_>>());
    let ran = run(&program, &[], &[], LIMIT);
    ran.assert_success("static initialisers, names and status codes");
    let policies = spinlab::wait::policies().iter().filter(|p| p.availability.is_ok()).count();
    assert!(ran.stdout.contains(&format!("named {policies} condition variable policies")), "{}", ran.stdout);
    // A status code added to the library but not to the program's table fails here.
    let names = status_names();
    assert!(names.len() >= 8, "{names:?}");
    for name in names {
        assert!(
            ran.stdout.contains(&format!("mapped {name} to ")),
            "static_init.c does not check {name}:\n{}",
            ran.stdout
        );
    }
}

#[test]
fn every_barrier_releases_whole_phases_with_one_leader() {
    let program = compile("barrier", &[c("barrier.c")], &link_shared().iter().map(String::as_str).collect::<Vec<_>>());
    let ran = run(&program, &[], &[], LIMIT);
    ran.assert_success("barriers");
    let tested = spinlab_registry::BARRIERS.entries().iter().filter(|e| e.availability.is_ok()).count();
    assert!(ran.stdout.contains(&format!("tested {tested} barriers")), "{}", ran.stdout);
}

#[test]
fn every_rwlock_shares_reads_and_excludes_writes() {
    let program = compile("rwlock", &[c("rwlock.c")], &link_shared().iter().map(String::as_str).collect::<Vec<_>>());
    let ran = run(&program, &[], &[], LIMIT);
    ran.assert_success("reader-writer locks");
    let tested = spinlab_registry::RWLOCKS.entries().iter().filter(|e| e.availability.is_ok()).count();
    assert!(ran.stdout.contains(&format!("tested {tested} reader-writer locks")), "{}", ran.stdout);
}

#[test]
fn sixty_four_nested_locks_and_hand_over_hand_with_every_lock() {
    let program = compile("nested", &[c("nested.c")], &link_shared().iter().map(String::as_str).collect::<Vec<_>>());
    let locks = available_locks();
    let args: Vec<&str> = locks.iter().map(String::as_str).collect();
    run(&program, &args, &[], LIMIT).assert_success("64 nested locks");
}

#[test]
fn a_forked_child_inherits_lock_states_and_can_lock() {
    let program = compile("fork", &[c("fork.c")], &link_shared().iter().map(String::as_str).collect::<Vec<_>>());
    let locks = ["ttas:spin-park", "mcs:futex", "clh:pause", "ticket:yield", "fair:spin-park", "std", "pthread"];
    run(&program, &locks, &[], LIMIT).assert_success("fork");
}

fn pkg_config(args: &[&str]) -> Vec<String> {
    let output = Command::new("pkg-config")
        .args(args)
        .arg("spinlab")
        .env("PKG_CONFIG_PATH", libraries())
        .output()
        .unwrap_or_else(|e| panic!("pkg-config could not be run ({e}): install pkg-config"));
    assert!(output.status.success(), "pkg-config {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap().split_whitespace().map(str::to_string).collect()
}

#[test]
fn spinlab_pc_links_the_shared_and_the_static_library() {
    let cflags_libs = pkg_config(&["--cflags", "--libs"]);
    assert!(cflags_libs.contains(&"-lspinlab".to_string()), "{cflags_libs:?}");
    let libdir = pkg_config(&["--variable=libdir"]).join(" ");
    let mut shared: Vec<&str> = cflags_libs.iter().map(String::as_str).collect();
    let rpath = format!("-Wl,-rpath,{libdir}");
    shared.push(&rpath);
    let program = compile("link-shared", &[c("link.c")], &shared);
    assert_eq!(run(&program, &[], &[], LIMIT).assert_success("shared").stdout, "linked ok\n");

    // The archive by name, and what it needs from the system; no rpath, so a program that
    // still needed libspinlab.so would not start.
    let native = pkg_config(&["--variable=native_static_libs"]);
    let mut fully_static = vec![format!("-L{libdir}"), "-l:libspinlab.a".to_string()];
    fully_static.extend(native);
    let flags: Vec<&str> = fully_static.iter().map(String::as_str).collect();
    let program = compile("link-static", &[c("link.c")], &flags);
    assert_eq!(run(&program, &[], &[], LIMIT).assert_success("static").stdout, "linked ok\n");
}

/// Runs a ThreadSanitizer program; if this kernel randomises mmap more than gcc's
/// ThreadSanitizer can map around, runs it again without address randomisation.
fn run_tsan(program: &std::path::Path, args: &[&str]) -> spinlab_c_tests::Ran {
    let options = [("TSAN_OPTIONS", "halt_on_error=1 exitcode=66")];
    let ran = run(program, args, &options, LIMIT);
    if !ran.stderr.contains("unexpected memory mapping") {
        return ran;
    }
    let arch = std::env::consts::ARCH;
    let mut setarch_args = vec![arch, "-R", program.to_str().unwrap()];
    setarch_args.extend_from_slice(args);
    run(std::path::Path::new("setarch"), &setarch_args, &options, LIMIT)
}

fn tsan_compile(name: &str, source: &str, extra: &[&str]) -> PathBuf {
    let mut flags = vec!["-fsanitize=thread"];
    flags.extend_from_slice(extra);
    let link = link_shared();
    flags.extend(link.iter().map(String::as_str));
    compile(name, &[c(source)], &flags)
}

#[test]
fn thread_sanitizer_sees_the_locks_through_the_header_annotations() {
    let probe = scratch_dir().join("tsan-probe.c");
    std::fs::write(&probe, "int main(void) { return 0; }\n").unwrap();
    let output = Command::new("gcc")
        .arg("-fsanitize=thread")
        .arg(&probe)
        .arg("-o")
        .arg(scratch_dir().join("tsan-probe"))
        .output()
        .expect("gcc runs");
    assert!(
        output.status.success(),
        "gcc -fsanitize=thread cannot link: ThreadSanitizer's runtime is missing (Debian/Ubuntu: apt-get install libtsan2)\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let locks = ["ttas:spin-park", "mcs:futex", "clh:pause", "ticket:spin-park", "fair:futex", "pthread"];

    let exclusion = tsan_compile("exclusion-tsan", "exclusion.c", &[]);
    let ran = run_tsan(&exclusion, &locks);
    ran.assert_success("exclusion under ThreadSanitizer");
    assert!(!ran.stderr.contains("ThreadSanitizer"), "{}", ran.stderr);

    let condvar = tsan_compile("condvar-tsan", "condvar.c", &[]);
    let ran = run_tsan(&condvar, &["futex", "spin-park", "pause"]);
    ran.assert_success("condition variables under ThreadSanitizer");
    assert!(!ran.stderr.contains("ThreadSanitizer"), "{}", ran.stderr);

    let barrier = tsan_compile("barrier-tsan", "barrier.c", &[]);
    let ran = run_tsan(&barrier, &["barrier:futex", "barrier:spin-park", "pthread"]);
    ran.assert_success("barriers under ThreadSanitizer");
    assert!(!ran.stderr.contains("ThreadSanitizer"), "{}", ran.stderr);

    // Mutexes and condition variables that no init call announced to the sanitizer.
    let static_init = tsan_compile("static-init-tsan", "static_init.c", &[]);
    let ran = run_tsan(&static_init, &[]);
    ran.assert_success("static initialisers under ThreadSanitizer");
    assert!(!ran.stderr.contains("ThreadSanitizer"), "{}", ran.stderr);

    let rwlock = tsan_compile("rwlock-tsan", "rwlock.c", &[]);
    let ran = run_tsan(&rwlock, &["rw-phase:spin-park", "rw-writer:futex", "parking_lot", "pthread"]);
    ran.assert_success("reader-writer locks under ThreadSanitizer");
    assert!(!ran.stderr.contains("ThreadSanitizer"), "{}", ran.stderr);

    // Without the annotations ThreadSanitizer cannot see what the library orders, and calls
    // the counter the mutex protects a race: this is what shows that the clean runs above
    // are clean because of the annotations, not because nothing was checked.
    let blind = tsan_compile("exclusion-tsan-blind", "exclusion.c", &["-DSPINLAB_NO_TSAN_ANNOTATIONS"]);
    let ran = run_tsan(&blind, &["mcs:futex"]);
    assert_eq!(ran.code(), Some(66), "expected a reported race:\n{}", ran.stderr);
    assert!(ran.stderr.contains("data race") && ran.stderr.contains("hammer"), "{}", ran.stderr);
}
