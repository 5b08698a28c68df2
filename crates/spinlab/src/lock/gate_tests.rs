//! Unit tests of every gate: passing the gate on to a sleeper leaves its wake-up to the word's
//! release. They count the wake-ups the gate makes, rather than watch the sleeper: a pooled
//! queue node may get another lock's late wake-up, a spurious return that would read as an
//! early wake-up.

use super::{Clh, CnaQueue, Fair, Gate, Gated, Hapax, HmcsQueue, McsQueue, Reciprocating, Ticket};
use crate::sync::AtomicU32;
use crate::sys::futex::FutexWait;
use crate::wait::{Episode, Futex, Wait};
use lock_api::RawMutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Sleeps and wakes as `futex` does, and counts its sleeps and wake-ups, so that a test can
/// tell who has gone to sleep and whether a release woke anyone. The counts are process-wide:
/// a test that reads them holds [`counting`]'s guard.
struct Counted;

static SLEEPS: AtomicUsize = AtomicUsize::new(0);
static WAKES: AtomicUsize = AtomicUsize::new(0);

impl Wait for Counted {
    const NAME: &'static str = "counted";
    const MAY_SLEEP: bool = true;

    fn relax(_: &AtomicU32, _: u32, _: &mut Episode) -> bool {
        false
    }

    fn sleep(word: &AtomicU32, current: u32, deadline: Option<Instant>) -> FutexWait {
        SLEEPS.fetch_add(1, SeqCst);
        Futex::sleep(word, current, deadline)
    }

    fn wake_one(word: &AtomicU32) -> usize {
        WAKES.fetch_add(1, SeqCst);
        Futex::wake_one(word)
    }

    fn wake_all(word: &AtomicU32) {
        WAKES.fetch_add(1, SeqCst);
        Futex::wake_all(word);
    }
}

/// One counting test at a time, from counts of zero.
fn counting() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    let serial = SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    SLEEPS.store(0, SeqCst);
    WAKES.store(0, SeqCst);
    serial
}

fn wait_until(done: impl Fn() -> bool) {
    while !done() {
        std::thread::yield_now();
    }
}

/// A head asleep on the word and a second waiter asleep at the gate behind it; this thread
/// releases, waking the head, which takes the lock and passes the gate on to the second. While
/// the head holds the lock nobody else is woken: the second's wake-up is owed to the head's
/// release, which makes it. The head and the second waiter are in the topology groups `groups`
/// declares, which only the topology-aware gates read: in two groups, an HMCS gate passes its
/// root.
fn a_sleeper_passed_the_gate_is_woken_by_the_release<L: Gate + Sync>(groups: [u32; 2]) {
    let _counting = counting();
    let lock = Gated::<L, Counted>::default();
    let (in_section, release) = (AtomicBool::new(false), AtomicBool::new(false));
    let take_turn = |group: u32| {
        let _group = crate::testing::declare_cna_group(group);
        let guard = lock.lock();
        if !in_section.swap(true, SeqCst) {
            wait_until(|| release.load(SeqCst));
        }
        // SAFETY: locked just above, on this thread.
        unsafe { lock.unlock(guard) };
    };
    let barged = lock.lock();
    let wakes_in_section = std::thread::scope(|s| {
        // Over a policy that ends its spin at once, the first waiter spins as the one spinner,
        // then takes the gate and sleeps on the word; the second sleeps at the gate.
        s.spawn(|| take_turn(groups[0]));
        wait_until(|| SLEEPS.load(SeqCst) == 1);
        s.spawn(|| take_turn(groups[1]));
        wait_until(|| SLEEPS.load(SeqCst) == 2);
        // SAFETY: locked above, on this thread.
        unsafe { lock.unlock(barged) };
        wait_until(|| in_section.load(SeqCst));
        // A wake-up made inside the section would be counted by now.
        std::thread::sleep(Duration::from_millis(20));
        let wakes = WAKES.load(SeqCst);
        release.store(true, SeqCst);
        wakes
    });
    assert_eq!(wakes_in_section, 1, "only the head was woken before its release");
    assert!(WAKES.load(SeqCst) >= 2, "the head's release woke the waiter it passed the gate to");
    assert!(!lock.is_locked());
}

macro_rules! gates {
    ($($name:ident: $gate:ty, $groups:expr;)*) => {$(
        #[test]
        fn $name() {
            a_sleeper_passed_the_gate_is_woken_by_the_release::<$gate>($groups);
        }
    )*};
}

gates! {
    a_sleeper_passed_an_mcs_gate_is_woken_by_the_release_not_inside_it: McsQueue<Counted>, [0, 0];
    a_sleeper_passed_a_cna_gate_is_woken_by_the_release_not_inside_it: CnaQueue<Counted>, [0, 1];
    a_sleeper_passed_an_hmcs_gate_within_its_group_is_woken_by_the_release: HmcsQueue<Counted>, [0, 0];
    a_sleeper_passed_the_root_of_an_hmcs_gate_is_woken_by_the_release: HmcsQueue<Counted>, [0, 1];
    a_sleeper_passed_a_ticket_gate_is_woken_by_the_release_not_inside_it: Ticket<Counted>, [0, 0];
    a_sleeper_passed_a_clh_gate_is_woken_by_the_release_not_inside_it: Clh<Counted>, [0, 0];
    a_sleeper_passed_a_fair_gate_is_woken_by_the_release_not_inside_it: Fair<Counted>, [0, 0];
    a_sleeper_passed_a_reciprocating_gate_is_woken_by_the_release_not_inside_it: Reciprocating<Counted>, [0, 0];
    a_sleeper_passed_a_hapax_gate_is_woken_by_the_release_not_inside_it: Hapax<Counted>, [0, 0];
}
