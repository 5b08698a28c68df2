//! The settings that the unit tests and the loom models make for the locks' waits, all in one
//! place. A build that is neither `cfg(test)` nor `cfg(loom)` has none of them: each reader
//! here is then a constant, and the locks' production paths hold no test-only state.
//!
//! Each setting is a thread-local of the test's own thread: loom runs a model's threads as
//! coroutines on it, and tests running beside it keep their own. Set one before the model (or
//! the scripted test) runs; the guard a setter returns puts the previous value back when
//! dropped, so that a harness that runs tests one after another on one thread carries no
//! setting into the next test.
//!
//! Loom has no clock, so where a real wait reads one these settings say when it would have
//! run out: when a bounded-bypass waiter starves, when a deadline expires, how often a thread
//! moves between fair-lock slots. Others make rare paths reachable in a small model: fewer
//! fair-lock slots, fewer timed sleepers on a ticket lock, futex waits that return spuriously
//! or find their deadline already passed.

#[cfg(any(loom, test))]
use std::cell::Cell;
#[cfg(any(loom, test))]
use std::thread::LocalKey;

/// Puts a setting's previous value back when dropped.
#[cfg(any(loom, test))]
#[doc(hidden)]
#[must_use = "the setting lasts only while the guard lives"]
pub struct Setting<T: Copy + 'static> {
    key: &'static LocalKey<Cell<T>>,
    previous: T,
}

#[cfg(any(loom, test))]
impl<T: Copy + 'static> Drop for Setting<T> {
    fn drop(&mut self) {
        self.key.with(|cell| cell.set(self.previous));
    }
}

/// Sets `key` to `value` on this thread until the guard is dropped.
#[cfg(any(loom, test))]
fn set<T: Copy + 'static>(key: &'static LocalKey<Cell<T>>, value: T) -> Setting<T> {
    Setting { key, previous: key.with(|cell| cell.replace(value)) }
}

#[cfg(any(loom, test))]
fn get<T: Copy + 'static>(key: &'static LocalKey<Cell<T>>) -> T {
    key.with(|cell| cell.get())
}

#[cfg(all(test, not(loom)))]
std::thread_local! {
    static NEVER_STARVES: Cell<bool> = const { Cell::new(false) };
    static CNA_GROUP: Cell<Option<u32>> = const { Cell::new(None) };
}

/// In the unit tests, the CNA (and HMCS) group this thread queues in, whatever CPU it runs on.
#[cfg(all(test, not(loom)))]
pub(crate) fn declare_cna_group(group: u32) -> Setting<Option<u32>> {
    set(&CNA_GROUP, Some(group))
}

/// The CNA (and HMCS) group this thread declared ([`declare_cna_group`]); never outside the
/// unit tests.
#[cfg(not(loom))]
#[inline(always)]
pub(crate) fn declared_cna_group() -> Option<u32> {
    #[cfg(test)]
    return get(&CNA_GROUP);
    #[cfg(not(test))]
    None
}

/// How many groups a lock that keeps a queue per group gives room for at least: in the unit
/// tests, the groups they declare, whatever the machine has; 1 outside them.
#[cfg(not(loom))]
#[inline(always)]
pub(crate) fn declarable_groups() -> usize {
    #[cfg(test)]
    return 4;
    #[cfg(not(test))]
    1
}

/// In the unit tests, keeps this thread's bounded-bypass waits from ever claiming the lock,
/// whatever their length: a scripted test pauses threads for far longer than the bypass bound.
#[cfg(all(test, not(loom)))]
pub(crate) fn never_starve() -> Setting<bool> {
    set(&NEVER_STARVES, true)
}

/// Whether this thread's bounded-bypass waits are kept from starving ([`never_starve`]);
/// never outside the unit tests.
#[cfg(not(loom))]
#[inline(always)]
pub(crate) fn never_starves() -> bool {
    #[cfg(test)]
    return get(&NEVER_STARVES);
    #[cfg(not(test))]
    false
}

#[cfg(loom)]
std::thread_local! {
    static STARVE_AT_LOOK: Cell<u32> = const { Cell::new(2) };
    static SPAN_SLEEPS: Cell<bool> = const { Cell::new(false) };
    static FAIR_MOVES: Cell<u32> = const { Cell::new(0) };
    static FAIR_SLOTS: Cell<Option<usize>> = const { Cell::new(None) };
    static TIMED_SLEEPERS_AT_MOST: Cell<Option<u32>> = const { Cell::new(None) };
    static EXPIRED_AT_ENTRY: Cell<bool> = const { Cell::new(false) };
    static SPURIOUS: Cell<usize> = const { Cell::new(0) };
}

/// Makes every bounded-bypass waiter starve (and claim) at its `look`-th look at a held lock
/// (`u32::MAX`: never). The default, 2, makes claims race everything else; since a real waiter
/// starves only after 0.5 ms, the waits without a claim need models of their own.
#[cfg(loom)]
pub fn starve_at_look(look: u32) -> Setting<u32> {
    set(&STARVE_AT_LOOK, look)
}

/// At which look at a held lock a bounded-bypass waiter starves ([`starve_at_look`]).
#[cfg(loom)]
pub(crate) fn starving_look() -> u32 {
    get(&STARVE_AT_LOOK)
}

/// Makes a deadline expire after three iterations of the whole wait, counted across its
/// sleeps, instead of three of its current spin phase. By default each sleep restarts the
/// count, so a waiter woken from its futex wait spins its budget out (two iterations under
/// loom) before its deadline can pass: no model then sees a woken timed waiter give up while
/// it spins.
#[cfg(loom)]
pub fn deadlines_span_sleeps() -> Setting<bool> {
    set(&SPAN_SLEEPS, true)
}

/// Whether a deadline counts the iterations of the whole wait ([`deadlines_span_sleeps`]).
#[cfg(loom)]
pub(crate) fn deadline_spans_sleeps() -> bool {
    get(&SPAN_SLEEPS)
}

/// Makes threads move to a new slot at every `every`th wait at a fair gate (0: never, the
/// default: each move multiplies the interleavings of every fair gate model).
#[cfg(loom)]
pub fn fair_moves(every: u32) -> Setting<u32> {
    set(&FAIR_MOVES, every)
}

/// Every how many waits at a fair gate a thread moves ([`fair_moves`]).
#[cfg(loom)]
pub(crate) fn fair_waits_per_move() -> u32 {
    get(&FAIR_MOVES)
}

/// Lets threads claim only the first `n` fair-lock slots, so that a model with two or three
/// threads runs out of slots. `n` must not exceed `lock::FAIR_SLOTS` (the fair lock's slots
/// check it when they read it).
#[cfg(loom)]
pub fn fair_slots(n: usize) -> Setting<Option<usize>> {
    set(&FAIR_SLOTS, Some(n))
}

/// How many fair-lock slots a thread may claim ([`fair_slots`]); `None`: all of them.
#[cfg(loom)]
pub(crate) fn fair_slots_claimable() -> Option<usize> {
    get(&FAIR_SLOTS)
}

/// Caps the timed waiters counted asleep on one ticket lock at `most`, so that a model with a
/// few timed waiters reaches the one that may not sleep.
#[cfg(loom)]
pub fn ticket_timed_sleepers_at_most(most: u32) -> Setting<Option<u32>> {
    set(&TIMED_SLEEPERS_AT_MOST, Some(most))
}

/// The cap on a ticket lock's timed sleepers ([`ticket_timed_sleepers_at_most`]); `None`: the
/// lock's own.
#[cfg(loom)]
pub(crate) fn ticket_timed_sleepers_cap() -> Option<u32> {
    get(&TIMED_SLEEPERS_AT_MOST)
}

/// Makes every timed futex wait return timed out at once, without looking at the word: what
/// the real wait does when its deadline has already passed (it checks the time before it asks
/// the kernel to compare). By default a timed wait compares first, as it does while time is
/// left, and sleeps.
#[cfg(loom)]
pub fn timed_waits_expire_at_entry() -> Setting<bool> {
    set(&EXPIRED_AT_ENTRY, true)
}

/// Whether timed futex waits find their deadline passed on entry
/// ([`timed_waits_expire_at_entry`]).
#[cfg(loom)]
pub(crate) fn timed_waits_expired_at_entry() -> bool {
    get(&EXPIRED_AT_ENTRY)
}

/// Lets the first `count` untimed futex waits of every execution that would sleep return
/// woken although nobody woke them. Each such waiter sleeps while the model kernel's lock is
/// let go and taken again, and may take a real wake-up meanwhile. A real futex wait returns
/// early on a signal, and on a wake-up aimed at a past user of the same address (spinlab's
/// releases may wake a lock's memory after it was freed and reused), so every caller must
/// look again.
#[cfg(loom)]
pub fn spurious_wake_ups(count: usize) -> Setting<usize> {
    set(&SPURIOUS, count)
}

/// How many untimed waits of each execution return spuriously ([`spurious_wake_ups`]); read
/// when an execution's model kernel is created.
#[cfg(loom)]
pub(crate) fn spurious_wake_ups_per_execution() -> usize {
    get(&SPURIOUS)
}

// The CNA group of each model thread: loom's thread-local, one per model thread, since the
// threads of one model queue in different groups.
#[cfg(loom)]
crate::sync::thread_local! {
    static CNA_GROUP: Cell<u32> = Cell::new(0);
}

/// The CNA (and HMCS) group of the calling model thread from now on (0 until set): under loom
/// `sched_getcpu` means nothing. Called by a model's own threads, unlike the settings above.
#[cfg(loom)]
pub fn cna_group(group: u32) {
    CNA_GROUP.with(|cell| cell.set(group));
}

/// The CNA group of the calling model thread ([`cna_group`]).
#[cfg(loom)]
pub(crate) fn cna_group_of_this_thread() -> u32 {
    CNA_GROUP.with(|cell| cell.get())
}

/// How many times a CNA head moved waiters to a secondary queue, in every model execution so
/// far: a model reads it to check that its schedules reached that path.
#[cfg(loom)]
static CNA_SECONDARY_MOVES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many times CNA heads have moved waiters to a secondary queue so far, over all
/// executions of every model in this process.
#[cfg(loom)]
pub fn cna_secondary_moves() -> usize {
    CNA_SECONDARY_MOVES.load(std::sync::atomic::Ordering::Relaxed)
}

/// Counts one move to a secondary queue ([`cna_secondary_moves`]).
#[cfg(loom)]
pub(crate) fn count_cna_secondary_move() {
    CNA_SECONDARY_MOVES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// How many times an HMCS head handed the lock to the next waiter of its own group while
/// its group's node stayed at the root's head, in every model execution so far.
#[cfg(loom)]
static HMCS_LOCAL_PASSES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many times an HMCS head that had a waiter of its own group behind it let the root go
/// to another group instead (the pass bound), in every model execution so far.
#[cfg(loom)]
static HMCS_ROOT_RELEASES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many times an HMCS group's head that timed out at the root left its group's node there
/// to the next waiter of its group, in every model execution so far.
#[cfg(loom)]
static HMCS_PLACES_LEFT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Places at the root left to the group so far ([`HMCS_PLACES_LEFT`]).
#[cfg(loom)]
pub fn hmcs_places_left() -> usize {
    HMCS_PLACES_LEFT.load(std::sync::atomic::Ordering::Relaxed)
}

/// Counts one place at the root left to the group ([`hmcs_places_left`]).
#[cfg(loom)]
pub(crate) fn count_hmcs_place_left() {
    HMCS_PLACES_LEFT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// Hand-overs within a group so far ([`HMCS_LOCAL_PASSES`]), over all executions of every
/// model in this process.
#[cfg(loom)]
pub fn hmcs_local_passes() -> usize {
    HMCS_LOCAL_PASSES.load(std::sync::atomic::Ordering::Relaxed)
}

/// Releases of the root past a waiting member of the group so far ([`HMCS_ROOT_RELEASES`]).
#[cfg(loom)]
pub fn hmcs_root_releases() -> usize {
    HMCS_ROOT_RELEASES.load(std::sync::atomic::Ordering::Relaxed)
}

/// Counts one hand-over within a group ([`hmcs_local_passes`]).
#[cfg(loom)]
pub(crate) fn count_hmcs_local_pass() {
    HMCS_LOCAL_PASSES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// Counts one release of the root past a waiting member of the group ([`hmcs_root_releases`]).
#[cfg(loom)]
pub(crate) fn count_hmcs_root_release() {
    HMCS_ROOT_RELEASES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// How many times, over all executions so far, a Malthusian holder admitted a passive thread
/// because the rotation was due, or because nobody waited in the inner lock; a Malthusian
/// waiter that gave up admitted one in its place; and an admitter skipped an abandoned node:
/// a model reads them to check that its schedules reached each path.
#[cfg(loom)]
static MALTHUSIAN_PATHS: [std::sync::atomic::AtomicUsize; 4] = [const { std::sync::atomic::AtomicUsize::new(0) }; 4];

/// The paths `MALTHUSIAN_PATHS` counts.
#[cfg(loom)]
#[derive(Clone, Copy, Debug)]
pub enum MalthusianPath {
    /// A holder admitted a passive thread because the rotation was due.
    Rotation,
    /// A holder admitted one because nobody waited in the inner lock.
    Idle,
    /// An active waiter that gave up, the last one, admitted one in its place.
    Quitter,
    /// An admitter skipped an abandoned node.
    AbandonedSkipped,
}

/// How many times `path` was taken so far, over all executions of every model in this process.
#[cfg(loom)]
pub fn malthusian_path_taken(path: MalthusianPath) -> usize {
    MALTHUSIAN_PATHS[path as usize].load(std::sync::atomic::Ordering::Relaxed)
}

/// Counts one `path` ([`malthusian_path_taken`]).
#[cfg(loom)]
pub(crate) fn count_malthusian_path(path: MalthusianPath) {
    MALTHUSIAN_PATHS[path as usize].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

#[cfg(loom)]
std::thread_local! {
    static MALTHUSIAN_START: Cell<u64> = const { Cell::new(0) };
}

/// Makes every Malthusian lock built from now on start with `acquisitions` counted instead of
/// 0: with 1, the rotation is not due until 64, so a model sees only the other admissions.
#[cfg(loom)]
pub fn malthusian_acquisitions_at_start(acquisitions: u64) -> Setting<u64> {
    set(&MALTHUSIAN_START, acquisitions)
}

/// The count a new Malthusian lock starts at ([`malthusian_acquisitions_at_start`]).
#[cfg(loom)]
pub(crate) fn malthusian_start() -> u64 {
    get(&MALTHUSIAN_START)
}

/// How many times a reciprocating or hapax gate left the wake-up of the waiter it passed the
/// gate to owed in its gated lock's room, in every model execution so far: a model reads it to
/// check that its schedules reached that path.
#[cfg(loom)]
static GATE_WAKE_UPS_OWED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many wake-ups reciprocating and hapax gates have left owed so far, over all executions
/// of every model in this process.
#[cfg(loom)]
pub fn gate_wake_ups_owed() -> usize {
    GATE_WAKE_UPS_OWED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Counts one wake-up a gate left owed ([`gate_wake_ups_owed`]).
#[cfg(loom)]
pub(crate) fn count_gate_wake_up_owed() {
    GATE_WAKE_UPS_OWED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}
