//! The one table behind every kind the registry names (locks, barriers, events,
//! reader-writer locks).
//!
//! A [`Kind`] says what its entries build and what they say beyond the facts every entry
//! carries; an [`Entry`] is one row of any kind; a [`Table`] fills its rows once, on first
//! use, lists them in registry order, and finds one by name with an error that says what
//! names the kind accepts. An algorithm of any kind is named over every policy by one visitor
//! (`add_algorithm`), so `ALGORITHM:POLICY` is spelt the same way for all four.

use crate::error::RegistryError;
use core::marker::PhantomData;
use spinlab::wait::{visit_policies, PolicyVisitor, Unavailable, Wait};
use std::fmt;
use std::sync::OnceLock;

/// One kind of primitive the registry names.
pub trait Kind: Sized + 'static {
    /// What building an entry gives (a boxed lock, barrier, event or reader-writer lock).
    type Built;
    /// What a build takes besides the name: `()`, or a barrier's party count.
    type Args;
    /// What an entry of this kind says beyond the facts every entry carries.
    type Facts: Clone + fmt::Debug + Send + Sync + 'static;
    /// The verbs of the primitive in memory the caller owns.
    type Ops: 'static;

    /// Every entry of the kind, in registry order: its algorithms over every policy, then
    /// the references.
    fn rows() -> Vec<Entry<Self>>;

    /// What names of this kind look like, for the unknown-name error.
    fn expected() -> String;

    /// The entry's verbs in memory the caller owns, with the bytes and the alignment the
    /// primitive takes there; `None` for an entry that keeps its own memory.
    fn in_place(facts: &Self::Facts) -> Option<(&Self::Ops, usize, usize)>;
}

/// Whether an entry is one of spinlab's own primitives or a reference it is compared with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// spinlab's algorithm over one of its wait policies.
    Spinlab,
    /// A primitive people already use (std, parking_lot, pthread).
    Reference,
}

/// What builds an entry's primitive.
pub(crate) type Make<K> = fn(<K as Kind>::Args) -> <K as Kind>::Built;

/// One primitive the registry can build, of any kind.
pub struct Entry<K: Kind> {
    /// The registry name (`mcs:spin-park`, `barrier:futex`, `std`, …).
    pub name: String,
    /// The wait policy; `None` for references, which wait their own way.
    pub policy: Option<&'static str>,
    /// spinlab's own, or a reference.
    pub origin: Origin,
    /// Whether a waiter may sleep in the kernel.
    pub may_sleep: bool,
    /// `Ok`, or the CPU feature the policy needs and this CPU lacks.
    pub availability: Result<(), Unavailable>,
    /// What only this kind says (a lock's fairness bound, a reader-writer lock's preference,
    /// the verbs in the caller's memory).
    pub facts: K::Facts,
    make: Make<K>,
}

// By hand: a derive would ask the same of `K`, a marker, and of what `K` builds.
impl<K: Kind> Clone for Entry<K> {
    fn clone(&self) -> Self {
        Entry { name: self.name.clone(), facts: self.facts.clone(), ..*self }
    }
}

impl<K: Kind> fmt::Debug for Entry<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("name", &self.name)
            .field("policy", &self.policy)
            .field("origin", &self.origin)
            .field("may_sleep", &self.may_sleep)
            .field("availability", &self.availability)
            .field("facts", &self.facts)
            .finish_non_exhaustive()
    }
}

impl<K: Kind> Entry<K> {
    /// `Ok`, or the error a build of this entry returns on this CPU.
    pub fn check(&self) -> Result<(), RegistryError> {
        self.availability.map_err(|reason| RegistryError::Unavailable { name: self.name.clone(), reason })
    }

    /// A new primitive, or the reason this CPU cannot run it.
    ///
    /// # Panics
    ///
    /// The `pthread` barrier panics if `pthread_barrier_init` refuses the party count (glibc
    /// accepts up to `i32::MAX` parties).
    pub fn build(&self, args: K::Args) -> Result<K::Built, RegistryError> {
        self.check()?;
        Ok((self.make)(args))
    }

    /// A reference entry: no policy, may sleep, available everywhere.
    pub(crate) fn reference(name: &str, facts: K::Facts, make: Make<K>) -> Self {
        Entry {
            name: name.to_string(),
            policy: None,
            origin: Origin::Reference,
            may_sleep: true,
            availability: Ok(()),
            facts,
            make,
        }
    }
}

/// The rows of one kind, filled on first use.
pub struct Table<K: Kind> {
    rows: OnceLock<Vec<Entry<K>>>,
}

impl<K: Kind> Table<K> {
    /// A table whose rows are [`Kind::rows`], made at the first call that reads them.
    pub const fn new() -> Self {
        Table { rows: OnceLock::new() }
    }

    /// Every row, available here or not.
    pub fn entries(&self) -> &[Entry<K>] {
        self.rows.get_or_init(K::rows)
    }

    /// Every name, available here or not.
    pub fn names(&self) -> Vec<&str> {
        self.entries().iter().map(|entry| entry.name.as_str()).collect()
    }

    /// The row called `name`, or an error that says what names are accepted.
    pub fn info(&self, name: &str) -> Result<&Entry<K>, RegistryError> {
        self.entries()
            .iter()
            .find(|entry| entry.name == name)
            .ok_or_else(|| RegistryError::Unknown { name: name.to_string(), expected: K::expected() })
    }

    /// A new primitive by name: an error lists the valid names, or names the CPU feature an
    /// unavailable policy needs.
    pub fn build(&self, name: &str, args: K::Args) -> Result<K::Built, RegistryError> {
        self.info(name)?.build(args)
    }
}

impl<K: Kind> Default for Table<K> {
    fn default() -> Self {
        Self::new()
    }
}

/// An algorithm of kind `K`, as the registry sees it: the name before the colon, and what it
/// builds over each policy.
pub(crate) trait Algorithm<K: Kind> {
    /// `ttas`, `rw-phase`, `barrier`, `event`, …
    const NAME: &'static str;
    /// The entry's own facts, and its constructor, over the policy `W`.
    fn over<W: Wait>() -> (K::Facts, Make<K>);
}

/// Adds `A` over every policy, as `NAME:POLICY`, in the policies' order.
pub(crate) fn add_algorithm<K: Kind, A: Algorithm<K>>(rows: &mut Vec<Entry<K>>) {
    struct AddEveryPolicy<'a, K: Kind, A>(&'a mut Vec<Entry<K>>, PhantomData<A>);

    impl<K: Kind, A: Algorithm<K>> PolicyVisitor for AddEveryPolicy<'_, K, A> {
        fn visit<W: Wait>(&mut self) {
            let (facts, make) = A::over::<W>();
            self.0.push(Entry {
                name: format!("{}:{}", A::NAME, W::NAME),
                policy: Some(W::NAME),
                origin: Origin::Spinlab,
                may_sleep: W::MAY_SLEEP,
                availability: W::availability(),
                facts,
                make,
            });
        }
    }

    visit_policies(&mut AddEveryPolicy::<K, A>(rows, PhantomData));
}

/// The policy names, comma-separated, for error messages.
pub(crate) fn policy_list() -> String {
    spinlab::wait::policies().iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BARRIERS, EVENTS, LOCKS, RWLOCKS};

    /// Every row of `table` builds with `args` where it is available, and is refused with
    /// the feature it lacks where it is not; only references lack a policy.
    fn check_all<K: Kind>(table: &Table<K>, args: K::Args)
    where
        K::Args: Copy,
    {
        let entries = table.entries();
        assert!(!entries.is_empty());
        for entry in entries {
            match (entry.availability, entry.build(args)) {
                (Ok(()), Ok(_)) => {}
                (Err(reason), Err(RegistryError::Unavailable { name, reason: said })) => {
                    assert_eq!((name.as_str(), reason), (entry.name.as_str(), said));
                }
                (a, b) => panic!("{}: availability {a:?} but build gave {:?}", entry.name, b.err()),
            }
            assert_eq!(entry.origin == Origin::Reference, entry.policy.is_none(), "{}", entry.name);
        }
    }

    #[test]
    fn every_kind_builds_exactly_its_available_rows_and_only_references_lack_a_policy() {
        check_all(&LOCKS, ());
        check_all(&BARRIERS, std::num::NonZeroU32::MIN);
        check_all(&EVENTS, ());
        check_all(&RWLOCKS, ());
    }

    #[test]
    fn a_table_fills_once_and_finds_by_name() {
        static FILLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        struct Letters;
        impl Kind for Letters {
            type Built = &'static str;
            type Args = ();
            type Facts = ();
            type Ops = ();
            fn rows() -> Vec<Entry<Self>> {
                FILLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                vec![Entry::reference("a", (), |()| "built a"), Entry::reference("b", (), |()| "built b")]
            }
            fn expected() -> String {
                "a or b".to_string()
            }
            fn in_place(_: &()) -> Option<(&(), usize, usize)> {
                None
            }
        }
        static TABLE: Table<Letters> = Table::new();
        assert_eq!(TABLE.names(), ["a", "b"]);
        assert_eq!(TABLE.info("b").map(|r| r.name.as_str()), Ok("b"));
        assert_eq!(TABLE.build("b", ()), Ok("built b"));
        let err = TABLE.info("c").err().unwrap().to_string();
        assert_eq!(err, "unknown name `c`: a or b");
        assert_eq!(FILLS.load(std::sync::atomic::Ordering::Relaxed), 1);
    }
}
