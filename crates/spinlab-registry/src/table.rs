//! The one table type behind every kind the registry names (locks, barriers, events,
//! reader-writer locks): rows built once on first use, listed in registry order, and found by
//! name with an error that says what names the kind accepts.

use super::{Origin, RegistryError};
use spinlab::wait::Unavailable;
use std::sync::OnceLock;

/// What every registry row says about itself, whatever it builds.
pub trait Entry: Sync + 'static {
    /// The registry name (`mcs:spin-park`, `barrier:futex`, `std`, …).
    fn name(&self) -> &str;
    /// The wait policy; `None` for references, which wait their own way.
    fn policy(&self) -> Option<&'static str>;
    /// spinlab's own, or a reference.
    fn origin(&self) -> Origin;
    /// Whether a waiter may sleep in the kernel.
    fn may_sleep(&self) -> bool;
    /// `Ok`, or the CPU feature the policy needs and this CPU lacks.
    fn availability(&self) -> Result<(), Unavailable>;

    /// `Ok`, or the error a build of this entry returns on this CPU.
    fn check(&self) -> Result<(), RegistryError> {
        self.availability().map_err(|reason| RegistryError::Unavailable { name: self.name().to_string(), reason })
    }
}

/// Implements [`Entry`] for an entry struct with the fields `name`, `policy`, `origin`,
/// `may_sleep` and `availability`.
macro_rules! entry_fields {
    ($entry:ty) => {
        impl $crate::Entry for $entry {
            fn name(&self) -> &str {
                &self.name
            }
            fn policy(&self) -> Option<&'static str> {
                self.policy
            }
            fn origin(&self) -> $crate::Origin {
                self.origin
            }
            fn may_sleep(&self) -> bool {
                self.may_sleep
            }
            fn availability(&self) -> Result<(), spinlab::wait::Unavailable> {
                self.availability
            }
        }
    };
}
pub(crate) use entry_fields;

/// The rows of one kind: filled on first use by `fill`, in the order `fill` gives.
pub struct Table<E> {
    rows: OnceLock<Vec<E>>,
    fill: fn() -> Vec<E>,
    /// What names of this kind look like, for the unknown-name error.
    expected: fn() -> String,
}

impl<E: Entry> Table<E> {
    pub(crate) const fn new(fill: fn() -> Vec<E>, expected: fn() -> String) -> Self {
        Table { rows: OnceLock::new(), fill, expected }
    }

    /// Every row, available here or not.
    pub fn entries(&self) -> &[E] {
        self.rows.get_or_init(self.fill)
    }

    /// Every name, available here or not.
    pub fn names(&self) -> Vec<&str> {
        self.entries().iter().map(Entry::name).collect()
    }

    /// The row called `name`, or an error that says what names are accepted.
    pub fn info(&self, name: &str) -> Result<&E, RegistryError> {
        self.entries()
            .iter()
            .find(|e| e.name() == name)
            .ok_or_else(|| RegistryError::Unknown { name: name.to_string(), expected: (self.expected)() })
    }
}

#[cfg(test)]
mod tests {
    use super::super::{barriers, events, locks, rwlocks};
    use super::*;

    fn check_all<E: Entry>(entries: &[E]) {
        assert!(!entries.is_empty());
        for entry in entries {
            match (entry.availability(), entry.check()) {
                (Ok(()), Ok(())) => {}
                (Err(reason), Err(RegistryError::Unavailable { name, reason: said })) => {
                    assert_eq!((name.as_str(), reason), (entry.name(), said));
                }
                (a, b) => panic!("{}: availability {a:?} but check gave {b:?}", entry.name()),
            }
            assert_eq!(entry.origin() == Origin::Reference, entry.policy().is_none(), "{}", entry.name());
        }
    }

    #[test]
    fn every_kind_refuses_exactly_its_unavailable_rows_and_only_references_lack_a_policy() {
        check_all(locks());
        check_all(barriers());
        check_all(events());
        check_all(rwlocks());
    }

    #[test]
    fn a_table_fills_once_and_finds_by_name() {
        struct Row(&'static str);
        impl Entry for Row {
            fn name(&self) -> &str {
                self.0
            }
            fn policy(&self) -> Option<&'static str> {
                None
            }
            fn origin(&self) -> Origin {
                Origin::Reference
            }
            fn may_sleep(&self) -> bool {
                false
            }
            fn availability(&self) -> Result<(), Unavailable> {
                Ok(())
            }
        }
        static FILLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        static TABLE: Table<Row> = Table::new(
            || {
                FILLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                vec![Row("a"), Row("b")]
            },
            || "a or b".to_string(),
        );
        assert_eq!(TABLE.names(), ["a", "b"]);
        assert_eq!(TABLE.info("b").map(|r| r.0), Ok("b"));
        let err = TABLE.info("c").err().unwrap().to_string();
        assert_eq!(err, "unknown name `c`: a or b");
        assert_eq!(FILLS.load(std::sync::atomic::Ordering::Relaxed), 1);
    }
}
