//! Unmodified C programs under libspinlab_preload.so: tests/c/p_*.c use plain pthreads, or
//! C11 `<threads.h>` (compiled as standard C11, `-std=c11 -Wall -Wextra -Werror`, no spinlab
//! header), and run once without the
//! library, where glibc must pass them, then under it with several locks. Each program
//! first prints which lock the library reports, and the mutex tests print whether a normal
//! mutex was locked by glibc or holds a spinlab lock, so a run that silently was not
//! preloaded fails.

use serde_json::Value;
use spinlab_c_tests::{compile, libraries, run, scratch_dir, Ran};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A watchdog for hangs, far above what any of these programs takes.
const LIMIT: Duration = Duration::from_secs(300);

/// The locks every program runs under: the default (`None`: SPINLAB_LOCK unset), queue
/// locks, a sleeping and a spinning policy, the fair bitmask lock, a reference lock, and
/// `pthread` (glibc's own, passed through).
const LOCKS: [Option<&str>; 7] = [
    None,
    Some("mcs:futex"),
    Some("ticket:pause"),
    Some("fair:spin-park"),
    Some("tas:yield"),
    Some("parking_lot"),
    Some("pthread"),
];

/// Compiles `tests/c/{name}.c`. `-std=c11` (after spinlab-c-tests' `-std=gnu11`, so it wins):
/// the programs are standard C, with POSIX and GNU declarations asked for by `_GNU_SOURCE`
/// where they need them, and p_c11.c is what a C11 program is.
fn program(name: &str) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c").join(format!("{name}.c"));
    compile(name, &[source], &["-std=c11", "-ldl"])
}

fn preload_library() -> PathBuf {
    libraries().join("libspinlab_preload.so")
}

/// Runs `program` under the preload library with `lock` and `env`.
fn preloaded(program: &Path, lock: Option<&str>, env: &[(&str, &str)]) -> Ran {
    let library = preload_library().display().to_string();
    let mut vars = vec![("LD_PRELOAD", library.as_str())];
    if let Some(lock) = lock {
        vars.push(("SPINLAB_LOCK", lock));
    }
    vars.extend_from_slice(env);
    run(program, &[], &vars, LIMIT)
}

/// A spinning CLH lock: its tail and a one-pointer guard, 16 bytes in place, the seeds' CLH
/// with its own hand-over (over a policy that may sleep, CLH is the gate of a bounded word).
/// Only where the programs' threads do not outnumber the CPUs: a spinning FIFO lock hands
/// over to preempted waiters.
const SPINNING_CLH: &str = "clh:pause";

/// Runs `name` without the library, then under each of [`LOCKS`]; checks each run passed and
/// was (or was not) preloaded with the lock asked for, and returns the preloaded runs.
fn everywhere(name: &str) -> Vec<(Option<&'static str>, Ran)> {
    everywhere_and(name, &[])
}

/// As [`everywhere`], and under each of `more` after [`LOCKS`].
fn everywhere_and(name: &str, more: &[&'static str]) -> Vec<(Option<&'static str>, Ran)> {
    let program = program(name);
    let plain = run(&program, &[], &[], LIMIT);
    plain.assert_success(&format!("{name} without the preload library"));
    assert!(plain.stdout.starts_with("preload: none\n"), "{}", plain.stdout);
    LOCKS
        .iter()
        .copied()
        .chain(more.iter().copied().map(Some))
        .map(|lock| {
            let ran = preloaded(&program, lock, &[]);
            ran.assert_success(&format!("{name} with SPINLAB_LOCK={lock:?}"));
            let expected = format!("preload: {}\n", lock.unwrap_or("adaptive:pause-yield-park"));
            assert!(ran.stdout.starts_with(&expected), "{lock:?}: {}", ran.stdout);
            assert!(ran.stdout.ends_with("ok\n"), "{lock:?}: {}", ran.stdout);
            (lock, ran)
        })
        .collect()
}

/// Compiles `docs/examples/{name}.c`, with warnings as errors as the tests' own programs.
fn example(name: &str, flags: &[&str]) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples").join(format!("{name}.c"));
    compile(&format!("example-{name}"), &[source], flags)
}

/// The docs' example programs, which their tables were measured with, build and run: without
/// the library and under it. `uncontended.c` times every kind it offers (a short run; the
/// figure is not checked) and refuses an unknown kind with one line and status 2;
/// `hammer.c`, built small, counts every increment of its threads under the default lock
/// and under `mcs:spin-park`.
#[test]
fn the_docs_example_programs_build_and_run_with_and_without_the_library() {
    let library = preload_library().display().to_string();
    let uncontended = example("uncontended", &[]);
    for kind in ["mutex", "rdlock", "wrlock", "spin", "signal", "broadcast"] {
        for env in [&[][..], &[("LD_PRELOAD", library.as_str())][..]] {
            let ran = run(&uncontended, &[kind, "1000"], env, LIMIT);
            ran.assert_success(&format!("uncontended {kind} with {env:?}"));
            let line =
                ran.stdout.strip_prefix(&format!("{kind}: ")).and_then(|rest| rest.strip_suffix(" ns per pair\n"));
            assert!(line.is_some_and(|ns| ns.parse::<f64>().is_ok_and(|ns| ns > 0.0)), "{kind}: {}", ran.stdout);
        }
    }
    let refused = run(&uncontended, &["nope"], &[], LIMIT);
    assert_eq!(refused.status.code(), Some(2), "{}", refused.stderr);
    assert_eq!(refused.stderr.lines().count(), 1, "one line: {}", refused.stderr);
    assert!(
        refused.stderr.contains("unknown kind 'nope'") && refused.stderr.contains("broadcast"),
        "{}",
        refused.stderr
    );

    let hammer = example("hammer", &["-DHAMMER_THREADS=8", "-DHAMMER_ITERS=20000"]);
    run(&hammer, &[], &[], LIMIT).assert_success("hammer without the library");
    for lock in [None, Some("mcs:spin-park")] {
        preloaded(&hammer, lock, &[]).assert_success(&format!("hammer with SPINLAB_LOCK={lock:?}"));
    }
}

#[test]
fn mutual_exclusion_trylock_and_timed_locks_with_static_and_initialised_mutexes() {
    let program_name = "p_exclusion";
    // HMCS too: its queues are allocated behind a pointer in the mutex at the first contention.
    // Only its ungated form, over a policy whose waiters keep their CPU, fits in a mutex.
    for (lock, ran) in everywhere_and(program_name, &[SPINNING_CLH, "hmcs:pause"]) {
        let expected = if lock == Some("pthread") { "glibc's" } else { "replaced" };
        assert!(ran.stdout.contains(&format!("normal mutexes are {expected}\n")), "{lock:?}: {}", ran.stdout);
    }
    let plain = run(&program(program_name), &[], &[], LIMIT);
    assert!(plain.stdout.contains("normal mutexes are glibc's\n"), "{}", plain.stdout);
}

#[test]
fn c11_mutexes_condition_variables_and_call_once_from_threads_h() {
    let program_name = "p_c11";
    for (lock, ran) in everywhere(program_name) {
        let expected = if lock == Some("pthread") { "glibc's" } else { "replaced" };
        assert!(ran.stdout.contains(&format!("C11 mutexes are {expected}\n")), "{lock:?}: {}", ran.stdout);
        assert!(ran.stdout.contains(&format!("once flags are {expected}\n")), "{lock:?}: {}", ran.stdout);
    }
    let plain = run(&program(program_name), &[], &[], LIMIT);
    assert!(plain.stdout.contains("C11 mutexes are glibc's\n"), "{}", plain.stdout);
    assert!(plain.stdout.contains("once flags are glibc's\n"), "{}", plain.stdout);
}

#[test]
fn condition_variables_on_both_clocks_freed_after_broadcast_and_with_glibc_mutexes() {
    everywhere("p_condvar");
}

#[test]
fn recursive_errorcheck_robust_shared_and_priority_mutexes_keep_glibc_behaviour() {
    everywhere("p_passthrough");
}

#[test]
fn fork_sixty_four_nested_locks_and_hand_over_hand() {
    everywhere_and("p_fork_nested", &[SPINNING_CLH]);
}

#[test]
fn a_child_forked_while_threads_queue_releases_what_it_held_and_uses_every_lock_and_condvar() {
    let c = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c");
    let early = compile("libp_fork_early.so", &[c.join("p_fork_early.c")], &["-shared", "-fPIC"]);
    let folder = early.parent().expect("a compiled library has a folder").display().to_string();
    let program = compile(
        "p_fork_threads",
        &[c.join("p_fork_threads.c"), early.clone()],
        &["-ldl", &format!("-Wl,-rpath,{folder}")],
    );
    run(&program, &[], &[], LIMIT).assert_success("p_fork_threads without the preload library");
    // parking_lot is left out: its parked threads live in parking_lot_core's global table,
    // which a fork copies with the parent's threads in it, and an unlock in the child can
    // wake one of those instead of the child's own (docs/preload.md;
    // https://github.com/Amanieu/parking_lot/issues/515).
    let more = [
        "mcs:pause",
        "clh:pause",
        "ticket:spin-park",
        "clh:futex",
        "fair:futex",
        "bounded:spin-yield-park",
        "hmcs:pause",
    ];
    let locks = LOCKS.iter().copied().filter(|&lock| lock != Some("parking_lot")).chain(more.map(Some));
    for lock in locks {
        // Fewer rounds in the child under a lock that hands the lock to a waiter (in order, for
        // those the registry calls fair): the spin-only queue locks and ungated HMCS
        // (p_fork_threads.c says why).
        let in_order =
            lock.and_then(|name| spinlab_registry::LOCKS.info(name).ok()).is_some_and(|entry| entry.facts.hands_over);
        let env: &[(&str, &str)] = if in_order { &[("P_FORK_CHILD_ROUNDS", "1000")] } else { &[] };
        let ran = preloaded(&program, lock, env);
        ran.assert_success(&format!("p_fork_threads with SPINLAB_LOCK={lock:?}"));
        assert!(ran.stdout.ends_with("ok\n"), "{lock:?}: {}", ran.stdout);
        // The rwlocks are spinlab's whatever SPINLAB_LOCK says: they were held across the forks.
        assert!(ran.stdout.contains("rwlocks: spinlab's"), "{lock:?}: {}", ran.stdout);
    }
    for rwlock in ["rw-reader:spin-yield-park", "rw-reader:pause", "rw-reader:yield"] {
        let ran = preloaded(&program, None, &[("SPINLAB_RWLOCK", rwlock)]);
        ran.assert_success(&format!("p_fork_threads with SPINLAB_RWLOCK={rwlock}"));
        assert!(ran.stdout.contains("rwlocks: spinlab's") && ran.stdout.ends_with("ok\n"), "{rwlock}: {}", ran.stdout);
    }
}

#[test]
fn pthread_cancel_ends_a_blocked_condition_wait_with_the_mutex_held_in_the_cleanup_handlers() {
    everywhere("p_cancel");
    let program = program("p_cancel");
    for cond in ["futex", "pause", "spin-park", "yield"] {
        let ran = preloaded(&program, None, &[("SPINLAB_COND", cond)]);
        ran.assert_success(&format!("p_cancel with SPINLAB_COND={cond}"));
        assert!(ran.stdout.ends_with("ok\n"), "{cond}: {}", ran.stdout);
    }
}

#[test]
fn spin_locks_exclude_between_threads_and_between_processes_under_every_setting() {
    for (_, ran) in everywhere("p_spin") {
        assert!(ran.stdout.contains("spin: ttas:pause\n"), "the default spin lock: {}", ran.stdout);
    }
    let program = program("p_spin");
    assert!(run(&program, &[], &[], LIMIT).stdout.contains("spin: none\n"));
    for spin in ["ttas:spin", "tas:pause", "bounded:spin", "ttas:backoff", "default", "pthread"] {
        let ran = preloaded(&program, None, &[("SPINLAB_SPIN", spin)]);
        ran.assert_success(&format!("p_spin with SPINLAB_SPIN={spin}"));
        let expected = if spin == "default" { "ttas:pause" } else { spin };
        assert!(ran.stdout.contains(&format!("spin: {expected}\n")), "{spin}: {}", ran.stdout);
        assert!(ran.stdout.ends_with("ok\n"), "{spin}: {}", ran.stdout);
    }
}

#[test]
fn rwlocks_exclude_writers_share_readers_nest_reads_and_honour_the_writer_kind_under_every_setting() {
    for (lock, ran) in everywhere("p_rwlock") {
        assert!(ran.stdout.contains("rwlock: rw-reader:futex\n"), "the default rwlock: {}", ran.stdout);
        // SPINLAB_LOCK chooses the mutexes only: the rwlocks are replaced under each setting.
        assert!(ran.stdout.contains("default rwlocks are replaced\n"), "{lock:?}: {}", ran.stdout);
    }
    let program = program("p_rwlock");
    let plain = run(&program, &[], &[], LIMIT);
    assert!(plain.stdout.contains("rwlock: none\ndefault rwlocks are glibc's\n"), "{}", plain.stdout);
    for rwlock in
        ["rw-reader:spin-yield-park", "rw-reader:pause", "rw-reader:spin-park", "rw-reader:yield", "default", "pthread"]
    {
        let ran = preloaded(&program, None, &[("SPINLAB_RWLOCK", rwlock)]);
        ran.assert_success(&format!("p_rwlock with SPINLAB_RWLOCK={rwlock}"));
        let expected = if rwlock == "default" { "rw-reader:futex" } else { rwlock };
        assert!(ran.stdout.contains(&format!("rwlock: {expected}\n")), "{rwlock}: {}", ran.stdout);
        let kept = if rwlock == "pthread" { "glibc's" } else { "replaced" };
        assert!(ran.stdout.contains(&format!("default rwlocks are {kept}\n")), "{rwlock}: {}", ran.stdout);
        assert!(ran.stdout.ends_with("ok\n"), "{rwlock}: {}", ran.stdout);
    }
}

#[test]
fn an_rwlock_that_would_deadlock_nested_reads_or_does_not_fit_is_refused_before_main() {
    let program = program("p_rwlock");
    for (rwlock, why) in [
        ("rw-writer:futex", "keeps a reader out while a writer waits"),
        ("rw-phase:spin-park", "keeps a reader out while a writer waits"),
        ("std", "does not fit in a pthread_rwlock_t"),
        ("nope", "is not a reader-writer lock name"),
    ] {
        assert_refused(&program, "SPINLAB_RWLOCK", rwlock, why, "rw-reader:futex");
    }
}

#[test]
fn statistics_count_every_acquisition_of_an_rwlock() {
    let program = program("p_rwlock");
    for (rwlock, kind) in [(None, "rwlock"), (Some("rw-reader:futex"), "rwlock"), (Some("pthread"), "glibc-rwlock")] {
        let mut env = vec![("SPINLAB_STATS", "1")];
        env.extend(rwlock.map(|name| ("SPINLAB_RWLOCK", name)));
        let (ran, profiles) = profiled(&program, &[], None, &env, &format!("p_rwlock-{rwlock:?}"));
        ran.assert_success("p_rwlock with statistics");
        // "counted rwlock 0x55d0c8a4e040 acquired 80001 times"
        let line =
            ran.stdout.lines().find(|l| l.starts_with("counted rwlock ")).expect("the program reports its rwlock");
        let words: Vec<&str> = line.split_whitespace().collect();
        let (address, acquired) = (words[2], words[4]);
        let (site, object) = object_in(main_profile(&profiles, &ran), address);
        assert_eq!(site["kind"], kind, "{rwlock:?}: {site}");
        assert_eq!(object["acquisitions"].to_string(), acquired, "{rwlock:?}: every acquisition is counted, once");
    }
}

/// Checks that `program` with `variable=value` exits with status 2 before `main`, with one line
/// that names the setting, says `why`, and lists valid values including `valid`.
fn assert_refused(program: &Path, variable: &str, value: &str, why: &str, valid: &str) {
    let ran = preloaded(program, None, &[(variable, value)]);
    assert_eq!(ran.code(), Some(2), "{variable}={value}: {}", ran.stderr);
    assert!(ran.stdout.is_empty(), "{variable}={value}: main must not run: {}", ran.stdout);
    let lines: Vec<&str> = ran.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{variable}={value}: one line: {}", ran.stderr);
    assert!(lines[0].starts_with(&format!("spinlab-preload: {variable}={value} ")), "{}", lines[0]);
    assert!(lines[0].contains(why) && lines[0].contains("valid values: ") && lines[0].contains(valid), "{}", lines[0]);
}

#[test]
fn barriers_keep_their_phases_and_one_serial_thread_under_every_setting() {
    for (_, ran) in everywhere("p_barrier") {
        assert!(ran.stdout.contains("barrier: barrier:spin-park\n"), "the default barrier: {}", ran.stdout);
    }
    let program = program("p_barrier");
    assert!(run(&program, &[], &[], LIMIT).stdout.contains("barrier: none\n"));
    for barrier in ["barrier:futex", "barrier:spin-yield-park", "barrier:pause", "barrier:yield", "default", "pthread"]
    {
        let ran = preloaded(&program, None, &[("SPINLAB_BARRIER", barrier)]);
        ran.assert_success(&format!("p_barrier with SPINLAB_BARRIER={barrier}"));
        let expected = if barrier == "default" { "barrier:spin-park" } else { barrier };
        assert!(ran.stdout.contains(&format!("barrier: {expected}\n")), "{barrier}: {}", ran.stdout);
        assert!(ran.stdout.ends_with("ok\n"), "{barrier}: {}", ran.stdout);
    }
    // std's barrier keeps its own memory: it cannot live in the program's pthread_barrier_t.
    assert_refused(&program, "SPINLAB_BARRIER", "std", "cannot live in a pthread_barrier_t", "barrier:futex");
    for barrier in ["nope", "barrier:nap"] {
        assert_refused(&program, "SPINLAB_BARRIER", barrier, "is not a barrier name", "barrier:futex");
    }
}

#[test]
fn a_malformed_topology_is_refused_before_main() {
    let program = program("p_spin");
    assert_refused(&program, "SPINLAB_TOPOLOGY", "socket:0|1", "unknown level `socket`", "LEVEL:CPUS");
    assert_refused(&program, "SPINLAB_TOPOLOGY", "node:0|x", "`x` is not a CPU list", "core, llc, node");
}

#[test]
fn a_spin_lock_that_does_not_fit_or_may_sleep_is_refused_before_main() {
    let program = program("p_spin");
    for (spin, why) in [
        ("mcs:spin", "and the room is 4 bytes aligned to 4"),
        ("ttas:futex", "may sleep"),
        ("std", "reference lock"),
        ("nope", "not a lock name"),
    ] {
        assert_refused(&program, "SPINLAB_SPIN", spin, why, "ttas:pause");
    }
}

#[test]
fn statistics_count_every_acquisition_of_a_spin_lock() {
    let program = program("p_spin");
    for spin in ["ttas:pause", "pthread"] {
        let env = [("SPINLAB_SPIN", spin), ("SPINLAB_STATS", "1")];
        let (ran, profiles) = profiled(&program, &[], None, &env, &format!("p_spin-{spin}"));
        ran.assert_success("p_spin with statistics");
        // "counted spin lock 0x55d0c8a4e040 acquired 80002 times"
        let line =
            ran.stdout.lines().find(|l| l.starts_with("counted spin lock ")).expect("the program reports its lock");
        let words: Vec<&str> = line.split_whitespace().collect();
        let (address, acquired) = (words[3], words[5]);
        let (site, object) = object_in(main_profile(&profiles, &ran), address);
        assert_eq!(site["kind"], "spin", "{spin}: {site}");
        assert_eq!(object["acquisitions"].to_string(), acquired, "{spin}: every acquisition is counted, once");
    }
}

#[test]
fn statistics_count_every_wait_at_a_barrier_and_which_blocked() {
    let program = program("p_barrier");
    for barrier in ["barrier:spin-park", "barrier:futex", "pthread"] {
        let env = [("SPINLAB_BARRIER", barrier), ("SPINLAB_STATS", "1")];
        let (ran, profiles) = profiled(&program, &[], None, &env, &format!("p_barrier-{barrier}"));
        ran.assert_success("p_barrier with statistics");
        // "counted barrier 0x55d0c8a4e040 waited 1204 times, 602 not serial"
        let line = ran.stdout.lines().find(|l| l.starts_with("counted barrier ")).expect("the program reports it");
        let words: Vec<&str> = line.split_whitespace().collect();
        let (address, waits, blocked) = (words[2], words[4], words[6]);
        let (site, object) = object_in(main_profile(&profiles, &ran), address);
        assert_eq!(site["kind"], "barrier", "{barrier}: {site}");
        assert_eq!(object["acquisitions"].to_string(), waits, "{barrier}: every wait is counted, once");
        assert_eq!(object["contended"].to_string(), blocked, "{barrier}: the non-serial waits blocked");
    }
}

/// p_exclusion's `handed` mutex passes between the main thread and a waiter ten times, the
/// waiter inside `pthread_mutex_lock` each time: 10 contended acquisitions, 19 owner changes,
/// one site (the waiter's first contended acquisition); under `mcs:futex` the waiter sleeps,
/// and each release wakes it; under glibc's own mutexes the phases are unknown.
#[test]
fn statistics_count_the_owner_changes_and_wake_ups_of_a_mutex_handed_between_threads() {
    let program = program("p_exclusion");
    for lock in ["mcs:futex", "default", "pthread"] {
        let (ran, profiles) = profiled(&program, &[], Some(lock), &[], &format!("p_exclusion-handed-{lock}"));
        ran.assert_success("p_exclusion with statistics");
        // "handed mutex 0x55d0c8a4e040 handed over 10 times"
        let line = ran.stdout.lines().find(|l| l.starts_with("handed mutex ")).expect("the program reports it");
        let (site, object) = object_in(main_profile(&profiles, &ran), line.split_whitespace().nth(2).unwrap());
        assert_eq!((site["site"].as_str(), site["objects"].as_u64()), (Some("contended"), Some(1)), "{lock}: {site}");
        assert_eq!(object["contended"], 10, "{lock}: {object}");
        assert_eq!(site["owner_changes"], 19, "{lock}: {site}");
        assert_eq!(site["wait"]["count"], 10, "{lock}: {site}");
        assert!(site["wait"]["p50_ns"].as_u64().unwrap() > 1_000_000, "{lock}: each waited ~20 ms: {site}");
        assert_eq!(site["stack"][0]["function"], "lock_handed", "{lock}: {site}");
        match lock {
            "pthread" => assert!(site["wakes"].is_null() && site["sleep_ns"].is_null(), "{lock}: {site}"),
            "mcs:futex" => {
                assert!(site["wakes"].as_u64().unwrap() >= 10, "{lock}: a wake-up per hand-over: {site}");
                assert!(site["sleep_ns"].as_u64().unwrap() > 10 * 10_000_000, "{lock}: asleep most of it: {site}");
            }
            _ => assert!(site["spin_ns"].is_u64(), "{lock}: {site}"),
        }
    }
}

/// Runs `program` with `args` under the library with `lock`, `env` and
/// `SPINLAB_STATS_FILE` naming a fresh folder for `label`; returns the run and the profiles its
/// processes wrote.
fn profiled(program: &Path, args: &[&str], lock: Option<&str>, env: &[(&str, &str)], label: &str) -> (Ran, Vec<Value>) {
    let dir = profile_dir(label);
    let prefix = dir.join("profile").display().to_string();
    let library = preload_library().display().to_string();
    let mut vars = vec![("LD_PRELOAD", library.as_str()), ("SPINLAB_STATS_FILE", prefix.as_str())];
    vars.extend(lock.map(|lock| ("SPINLAB_LOCK", lock)));
    vars.extend_from_slice(env);
    let ran = run(program, args, &vars, LIMIT);
    (ran, profiles_in(&dir))
}

/// A fresh, empty folder for the profiles of `label`.
fn profile_dir(label: &str) -> PathBuf {
    let dir = scratch_dir().join(format!("profiles-{label}").replace([':', '/', '"', ' '], "-"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The profiles in `dir`, by file name; each file's name carries its pid.
fn profiles_in(dir: &Path) -> Vec<Value> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|entry| entry.unwrap().path()).collect();
    names.sort();
    names
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path).unwrap();
            let profile: Value =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON ({e}): {text}", path.display()));
            assert_eq!(profile["format"], "spinlab.profile/1", "{}", path.display());
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            assert!(name.starts_with(&format!("profile.{}.", profile["pid"])) && name.ends_with(".json"), "{name}");
            profile
        })
        .collect()
}

/// The profile of the process that ran `ran` itself: the one whose parent wrote none.
fn main_profile<'a>(profiles: &'a [Value], ran: &Ran) -> &'a Value {
    let pids: Vec<&Value> = profiles.iter().map(|p| &p["pid"]).collect();
    let mut parents = profiles.iter().filter(|p| !pids.contains(&&p["parent_pid"]));
    match (parents.next(), parents.next()) {
        (Some(parent), None) => parent,
        _ => panic!("not one first process among the profiles of {pids:?}:\n{}", ran.stderr),
    }
}

/// The site holding the object at `address` (as a program prints it: `0x…`) in `profile`,
/// and the object's own counts.
fn object_in<'a>(profile: &'a Value, address: &str) -> (&'a Value, &'a Value) {
    let address = u64::from_str_radix(address.trim_start_matches("0x"), 16).expect("a hex address");
    let sites = profile["sites"].as_array().unwrap();
    sites
        .iter()
        .find_map(|site| {
            let objects = site["top_objects"].as_array().unwrap();
            objects.iter().find(|o| o["address"] == address).map(|object| (site, object))
        })
        .unwrap_or_else(|| panic!("no object {address:#x} in the profile: {profile:#}"))
}

#[test]
fn statistics_count_every_acquisition_of_a_mutex() {
    let program = program("p_exclusion");
    for (lock, kind) in [(Some("mcs:futex"), "mutex"), (None, "mutex"), (Some("pthread"), "glibc-mutex")] {
        let label = format!("p_exclusion-{}", lock.unwrap_or("default"));
        let (ran, profiles) = profiled(&program, &[], lock, &[("SPINLAB_STATS", "1")], &label);
        ran.assert_success("p_exclusion with statistics");
        // "tallied mutex 0x55d0c8a4e040 acquired 20000 times"
        let line = ran.stdout.lines().find(|l| l.starts_with("tallied mutex ")).expect("the program reports its mutex");
        let words: Vec<&str> = line.split_whitespace().collect();
        let (address, acquired) = (words[2], words[4]);
        let heading = ran.stderr.lines().find(|l| l.starts_with("spinlab-preload: lock statistics of p_exclusion"));
        let heading = heading.unwrap_or_else(|| panic!("no statistics heading in:\n{}", ran.stderr));
        assert!(heading.contains(&format!("mutexes {}:", lock.unwrap_or("adaptive:pause-yield-park"))), "{heading}");
        let profile = main_profile(&profiles, &ran);
        assert_eq!(profile["lock"], lock.unwrap_or("adaptive:pause-yield-park"));
        let (site, object) = object_in(profile, address);
        assert_eq!(site["kind"], kind, "{lock:?}: {site}");
        assert_eq!(object["acquisitions"].to_string(), acquired, "{lock:?}: every acquisition is counted, once");
        assert!(object["contended"].as_u64().unwrap() <= object["acquisitions"].as_u64().unwrap());
    }
    // Without SPINLAB_STATS nothing is printed.
    let ran = preloaded(&program, Some("mcs:futex"), &[]);
    assert!(!ran.stderr.contains("lock statistics"), "{}", ran.stderr);
}

/// tests/c/p_memo.c: a replaced mutex keeps its row's index in its own bytes, which a copy
/// carries and an init rewrites. Every object counts in its own row all the same, exactly:
/// a copy and the original overwritten by it, a copy first taken after a wait, trylock and
/// timedlock, and memory that is a normal, a recursive and again a normal mutex (one row).
#[test]
fn a_copied_or_remade_mutex_counts_in_its_own_row_whatever_its_bytes_remember() {
    let program = program("p_memo");
    for lock in [None, Some("mcs:futex"), Some("pthread")] {
        let label = format!("p_memo-{}", lock.unwrap_or("default"));
        let (ran, profiles) = profiled(&program, &[], lock, &[], &label);
        ran.assert_success(&label);
        assert!(ran.stdout.ends_with("ok\n"), "{}", ran.stdout);
        let profile = main_profile(&profiles, &ran);
        // "object copied 0x55d0c8a4e040 acquired 42 times"
        let objects: Vec<Vec<&str>> = ran
            .stdout
            .lines()
            .filter(|line| line.starts_with("object "))
            .map(|line| line.split_whitespace().collect())
            .collect();
        assert_eq!(objects.len(), 4, "{}", ran.stdout);
        for words in objects {
            let (name, address, acquired) = (words[1], words[2], words[4].parse::<u64>().unwrap());
            let (site, object) = object_in(profile, address);
            assert_eq!(object["acquisitions"], acquired, "{lock:?} {name}: {site}");
            assert_eq!(site["objects"], 1, "{lock:?} {name}: {site}");
            // One hold timed in 64 acquisitions, counted apart for the hand-overs to each thread
            // of a mutex spinlab replaces (each thread tallies its own): `waited_copy` was
            // handed to its second thread once.
            let holds = match name {
                "waited_copy" if lock != Some("pthread") => 2,
                _ => acquired.div_ceil(64),
            };
            assert_eq!(site["hold"]["count"], holds, "{lock:?} {name}: holds timed: {site}");
            let contended = if name == "waited_copy" { 1 } else { 0 };
            assert_eq!(object["contended"], contended, "{lock:?} {name}: {site}");
        }
    }
}

/// glibc's `mtx_lock` calls its pthread function internally, where no replacement sees it:
/// the C11 mutex must be counted all the same, as the mutex it is.
#[test]
fn statistics_count_every_acquisition_of_a_c11_mutex() {
    let program = program("p_c11");
    for (lock, kind) in [(None, "c11-mutex"), (Some("mcs:futex"), "c11-mutex"), (Some("pthread"), "glibc-mutex")] {
        let label = format!("p_c11-{}", lock.unwrap_or("default"));
        let (ran, profiles) = profiled(&program, &[], lock, &[], &label);
        ran.assert_success("p_c11 with statistics");
        // "tallied mtx 0x55d0c8a4e040 acquired 10000 times"
        let line = ran.stdout.lines().find(|l| l.starts_with("tallied mtx ")).expect("the program reports its mutex");
        let words: Vec<&str> = line.split_whitespace().collect();
        let (address, acquired) = (words[2], words[4]);
        let (site, object) = object_in(main_profile(&profiles, &ran), address);
        assert_eq!(site["kind"], kind, "{lock:?}: {site}");
        assert_eq!(site["site"], "init", "{lock:?}: mtx_init's stack: {site}");
        assert_eq!(object["acquisitions"].to_string(), acquired, "{lock:?}: every acquisition is counted, once");
    }
}

#[test]
fn an_unusable_setting_prints_one_line_and_exits_with_2_before_main() {
    let program = program("p_exclusion");
    let mut cases = vec![
        (
            vec![("SPINLAB_LOCK", "ttas:sleepy")],
            "SPINLAB_LOCK=ttas:sleepy is not a lock name; valid values: ALGORITHM:POLICY",
        ),
        (vec![("SPINLAB_LOCK", "std")], "SPINLAB_LOCK=std cannot replace pthread mutexes: `std` takes "),
        (vec![("SPINLAB_COND", "ttas:futex")], "SPINLAB_COND=ttas:futex is not a wait policy"),
        (vec![("SPINLAB_STATS", "yes")], "SPINLAB_STATS=yes is not 0 or 1"),
        (vec![("SPINLAB_STATS", "2")], "SPINLAB_STATS=2 is not 0 or 1; valid values: 1"),
        (
            vec![("SPINLAB_STATS_FILE", "/nonexistent-spinlab-dir/profile")],
            "SPINLAB_STATS_FILE=/nonexistent-spinlab-dir/profile cannot be written (",
        ),
    ];
    for entry in spinlab_registry::LOCKS.entries().iter().filter(|e| e.availability.is_err()).take(1) {
        cases.push((vec![("SPINLAB_LOCK", entry.name.as_str())], "is unavailable here"));
    }
    let library = preload_library().display().to_string();
    for (env, message) in cases {
        let mut vars = vec![("LD_PRELOAD", library.as_str())];
        vars.extend(env.iter().copied());
        let ran = run(&program, &[], &vars, LIMIT);
        assert_eq!(ran.code(), Some(2), "{env:?}: {}", ran.stderr);
        assert_eq!(ran.stdout, "", "{env:?}: main ran");
        assert_eq!(ran.stderr.lines().count(), 1, "{env:?}: {}", ran.stderr);
        assert!(ran.stderr.starts_with("spinlab-preload: ") && ran.stderr.contains(message), "{env:?}: {}", ran.stderr);
    }
}

/// The line of tests/c/p_profile.c that carries the comment `/* site: {marker} */`.
fn site_line(marker: &str) -> u64 {
    let source = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/p_profile.c")).unwrap();
    let comment = format!("/* site: {marker} */");
    let index = source.lines().position(|line| line.contains(&comment)).unwrap_or_else(|| panic!("no {comment}"));
    index as u64 + 1
}

/// The one site of `profile` of `kind` whose innermost frame is `function` at p_profile.c's
/// line marked `marker`.
fn site_at<'a>(profile: &'a Value, kind: &str, function: &str, marker: &str) -> &'a Value {
    let line = site_line(marker);
    let found: Vec<&Value> = profile["sites"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|site| {
            let top = &site["stack"][0];
            site["kind"] == kind
                && top["function"] == function
                && top["line"] == line
                && top["file"].as_str().is_some_and(|file| file.ends_with("/p_profile.c"))
        })
        .collect();
    assert_eq!(found.len(), 1, "one {kind} site at {function} (p_profile.c:{line}): {profile:#}");
    found[0]
}

/// The number that follows `words` at the start of a line of `stdout`.
fn counted(stdout: &str, words: &str) -> u64 {
    let line =
        stdout.lines().find_map(|line| line.strip_prefix(words)).unwrap_or_else(|| panic!("no {words}: {stdout}"));
    line.split_whitespace().next().unwrap().parse().unwrap()
}

/// tests/c/p_profile.c: each lock made in its own function is a site named by that function
/// and the line of its init call (the lines are found by their comments); the 1000 mutexes
/// made in one loop are one site; a static mutex is named by its first contended acquisition;
/// and every count is the program's own. glibc's mutexes (`pthread`) give the same sites and
/// counts, as `glibc-mutex`.
#[test]
fn the_profile_names_each_site_by_function_and_line_and_counts_what_the_program_counted() {
    let program = program("p_profile");
    for lock in [None, Some("mcs:futex"), Some("pthread")] {
        let label = format!("p_profile-sites-{}", lock.unwrap_or("default"));
        let (ran, profiles) = profiled(&program, &[], lock, &[("SPINLAB_STATS", "1")], &label);
        ran.assert_success(&label);
        assert!(ran.stdout.ends_with("ok\n"), "{}", ran.stdout);
        let out = &ran.stdout;
        let profile = main_profile(&profiles, &ran);
        assert_eq!(profile["lock"], lock.unwrap_or("adaptive:pause-yield-park"));
        assert_eq!(
            (profile["hold_sample_every"].as_u64(), profile["untracked_acquisitions"].as_u64()),
            (Some(64), Some(0))
        );
        assert!(profile["program"].as_str().unwrap().ends_with("/p_profile"), "{}", profile["program"]);
        let mutex = if lock == Some("pthread") { "glibc-mutex" } else { "mutex" };

        let hot = site_at(profile, mutex, "make_hot", "hot");
        assert_eq!((hot["site"].as_str(), hot["objects"].as_u64()), (Some("init"), Some(1)), "{hot}");
        let acquisitions = counted(out, "hot mutex acquired ");
        assert_eq!(hot["acquisitions"], acquisitions, "{hot}");
        // One hold timed in 64 acquisitions of an object, counted apart for the hand-overs to
        // each thread of a mutex spinlab replaces (each thread tallies its own): 4 threads
        // here, so up to 4 more first acquisitions of a count.
        let holds = hot["hold"]["count"].as_u64().unwrap();
        let most = if lock == Some("pthread") { 0 } else { 4 };
        assert!((acquisitions.div_ceil(64)..=acquisitions.div_ceil(64) + most).contains(&holds), "one in 64: {hot}");
        assert!(hot["owner_changes"].as_u64().unwrap() > 0, "four threads took it: {hot}");

        let cold = site_at(profile, mutex, "make_cold", "cold");
        assert_eq!(cold["acquisitions"], counted(out, "cold mutex acquired "), "the children's are their own: {cold}");

        let array = site_at(profile, mutex, "make_array", "array");
        assert_eq!(array["objects"], counted(out, "array of "), "{array}");
        assert_eq!(array["acquisitions"], 5000, "{array}");
        assert_eq!(array["top_objects"].as_array().unwrap().len(), 8);

        let waited = site_at(profile, mutex, "wait_for_static", "contended");
        assert_eq!((waited["site"].as_str(), waited["objects"].as_u64()), (Some("contended"), Some(1)), "{waited}");
        assert_eq!((waited["acquisitions"].as_u64(), waited["contended"].as_u64()), (Some(2), Some(1)), "{waited}");
        assert!(waited["wait"]["max_ns"].as_u64().unwrap() >= 15_000_000, "waited ~20 ms: {waited}");
        assert_eq!(waited["max_waiters"], 1);
        assert!(waited["contended_ns"].as_u64().unwrap() >= 15_000_000, "{waited}");

        let cond = site_at(profile, "cond", "make_cond", "cond");
        // "cond waited 13 times, 3 timed, 3 timed out"
        let line = out.lines().find_map(|l| l.strip_prefix("cond waited ")).unwrap();
        let numbers: Vec<u64> = line.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse().ok()).collect();
        let c = &cond["cond"];
        assert_eq!([&c["waits"], &c["timed_waits"], &c["timed_out"]], [numbers[0], numbers[1], numbers[2]], "{cond}");
        assert_eq!((c["signals"].as_u64(), c["broadcasts"].as_u64()), (Some(10), Some(0)), "{cond}");
        assert_eq!(cond["acquisitions"], c["waits"]);
        assert!(cond["rwlock"].is_null() && hot["cond"].is_null());

        let rwlock = site_at(profile, "rwlock", "make_table", "rwlock");
        // "rwlock read 10000 times, written 6000 times"
        let line = out.lines().find_map(|l| l.strip_prefix("rwlock read ")).unwrap();
        let numbers: Vec<u64> = line.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse().ok()).collect();
        let rw = &rwlock["rwlock"];
        assert_eq!([&rw["reads"], &rw["writes"]], [numbers[0], numbers[1]], "{rwlock}");
        assert_eq!(rwlock["acquisitions"], numbers[0] + numbers[1]);

        let waits: Vec<u64> =
            profile["sites"].as_array().unwrap().iter().map(|s| s["wait"]["total_ns"].as_u64().unwrap()).collect();
        assert!(waits.windows(2).all(|pair| pair[0] >= pair[1]), "sites by total wait: {waits:?}");
        let hist = &hot["wait"];
        let buckets = hist["buckets"].as_array().unwrap();
        let in_buckets: u64 = buckets.iter().map(|b| b[1].as_u64().unwrap()).sum();
        assert_eq!(in_buckets, hist["count"].as_u64().unwrap(), "{hist}");
        assert_eq!(hist["count"], hot["contended"]);

        let place = format!("make_hot (p_profile.c:{})", site_line("hot"));
        assert!(ran.stderr.contains(&format!("{mutex} init: {place}")), "the table names the site:\n{}", ran.stderr);
        assert!(ran.stderr.lines().all(|line| line.len() <= 100 || line.starts_with("spinlab-preload: ")));
    }
}

/// A forked child and a child that execs write their own profiles, each with only its own
/// acquisitions: the fork child's at its exit, the exec child's before the exec, and the
/// image it execs its own at its exit (the same pid: the next free name). A run that locks
/// nothing writes nothing.
/// tests/c/p_spurious.c: a condition wait that returns before any signal or broadcast is
/// counted as spurious, exactly as often as the program saw it happen; a notified one is not.
/// Under spinlab's condition variable a signal handler ends the wait (a spurious return), so
/// the count is 1 there; glibc's restarts the wait, and the count is what glibc did.
#[test]
fn a_condition_wait_that_returns_unsignalled_is_counted_as_spurious() {
    let program = program("p_spurious");
    for lock in [None, Some("mcs:futex"), Some("pthread")] {
        let label = format!("p_spurious-{}", lock.unwrap_or("default"));
        let (ran, profiles) = profiled(&program, &[], lock, &[], &label);
        ran.assert_success(&label);
        let seen = counted(&ran.stdout, "spurious");
        let profile = main_profile(&profiles, &ran);
        let cond = profile["sites"].as_array().unwrap().iter().find(|s| s["kind"] == "cond").expect("a cond site");
        assert_eq!(cond["cond"]["spurious"].as_u64(), Some(seen), "{label}: {cond:#}");
        assert_eq!(cond["cond"]["waits"].as_u64(), Some(1), "{label}");
        if lock != Some("pthread") {
            assert_eq!(seen, 1, "{label}: spinlab's condition variable returns when a handler ran");
        }
    }
}

#[test]
fn fork_and_exec_children_write_their_own_profiles_and_a_program_that_locks_nothing_writes_none() {
    let program = program("p_profile");
    let (ran, profiles) = profiled(&program, &[], None, &[], "p_profile-children");
    ran.assert_success("p_profile");
    let out = &ran.stdout;
    let (parent, forked, execed) = (counted(out, "parent "), counted(out, "fork child "), counted(out, "exec child "));
    assert_eq!(profiles.len(), 4, "{}", profiles.iter().map(|p| p["pid"].to_string()).collect::<Vec<_>>().join(" "));
    let of = |pid: u64, exec_child: bool| {
        let is_image = |p: &&Value| p["argv"].as_array().unwrap().iter().any(|a| a == "exec-child");
        let found: Vec<&Value> = profiles.iter().filter(|p| p["pid"] == pid && is_image(p) == exec_child).collect();
        assert_eq!(found.len(), 1, "pid {pid}");
        found[0]
    };
    let cold = |profile: &Value| site_at(profile, "mutex", "make_cold", "cold")["acquisitions"].as_u64().unwrap();
    assert_eq!(cold(of(parent, false)), 3, "the parent's own");
    let child = of(forked, false);
    assert_eq!((child["parent_pid"].as_u64(), cold(child)), (Some(parent), 7), "{child:#}");
    assert_eq!(child["sites"].as_array().unwrap().len(), 1, "nothing of its parent's: {child:#}");
    let before_exec = of(execed, false);
    assert_eq!(cold(before_exec), 2, "{before_exec:#}");
    let image = of(execed, true);
    let own = site_at(image, "mutex", "exec_child_locks", "exec-child");
    assert_eq!((own["acquisitions"].as_u64(), image["sites"].as_array().unwrap().len()), (Some(11), 1), "{image:#}");

    let dir = profile_dir("p_profile-nothing");
    let prefix = dir.join("profile").display().to_string();
    let library = preload_library().display().to_string();
    let vars = [("LD_PRELOAD", library.as_str()), ("SPINLAB_STATS_FILE", prefix.as_str()), ("SPINLAB_STATS", "1")];
    let ran = run(&program, &["nothing"], &vars, LIMIT);
    ran.assert_success("p_profile nothing");
    assert_eq!(ran.stderr, "", "no table either");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "no file, and no check file left behind");
}
