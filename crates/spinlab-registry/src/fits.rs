//! Whether a registry entry can live in memory of a given size and alignment: the one check
//! that the C ABI (a `spinlab_mutex_t`), the preload library (a `pthread_mutex_t`,
//! `pthread_spinlock_t`, `pthread_rwlock_t` or `pthread_barrier_t`) and the lab (`spinlab
//! app`, before it preloads a lock) make before they write a primitive into memory the caller
//! owns.
//!
//! The caller states its room as a [`Layout`]; [`Entry::fits`] answers with the entry's
//! table of verbs, or a [`DoesNotFit`] whose message is one line naming the entry, what it
//! takes and the room. An entry that keeps its own memory (a reference barrier or
//! reader-writer lock, every event) fits no room.
//!
//! ```
//! use core::alloc::Layout;
//! use spinlab_registry::LOCKS;
//! let entry = LOCKS.info("ttas:pause").unwrap();
//! assert!(entry.fits(Layout::new::<u32>()).is_ok());
//! let err = LOCKS.info("std").unwrap().fits(Layout::new::<u32>()).err().unwrap();
//! assert!(err.to_string().starts_with("`std` takes "), "{err}");
//! assert!(err.to_string().ends_with(", and the room is 4 bytes aligned to 4"), "{err}");
//! ```

use crate::table::{Entry, Kind};
use core::alloc::Layout;
use std::fmt;

impl<K: Kind> Entry<K> {
    /// The verbs of the primitive in memory the caller owns; `None` for an entry that keeps
    /// its own memory.
    pub fn in_place(&self) -> Option<&K::Ops> {
        K::in_place(&self.facts).map(|(ops, _, _)| ops)
    }

    /// The verbs, if the primitive fits in `room`: no more bytes than `room.size()`, and an
    /// alignment that `room.align()` satisfies.
    pub fn fits(&self, room: Layout) -> Result<&K::Ops, DoesNotFit> {
        let name = self.name.clone();
        match K::in_place(&self.facts) {
            None => Err(DoesNotFit::OwnMemory { name, room }),
            Some((ops, size, align)) if size <= room.size() && align <= room.align() => Ok(ops),
            Some((_, size, align)) => Err(DoesNotFit::TooLarge { name, size, align, room }),
        }
    }
}

/// Why an entry cannot be written into a room; its message names the entry, what it takes
/// and the room.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DoesNotFit {
    /// The primitive takes more bytes, or a stricter alignment, than the room offers.
    TooLarge {
        /// The entry's name.
        name: String,
        /// Bytes the primitive takes.
        size: usize,
        /// Alignment the primitive needs.
        align: usize,
        /// The memory offered.
        room: Layout,
    },
    /// The entry keeps its own memory, so no room can hold it.
    OwnMemory {
        /// The entry's name.
        name: String,
        /// The memory offered.
        room: Layout,
    },
}

impl fmt::Display for DoesNotFit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DoesNotFit::TooLarge { name, size, align, room } => write!(
                f,
                "`{name}` takes {size} bytes aligned to {align}, and the room is {} bytes aligned to {}",
                room.size(),
                room.align()
            ),
            DoesNotFit::OwnMemory { name, room } => write!(
                f,
                "`{name}` keeps its own memory and has no form for a room of {} bytes aligned to {}",
                room.size(),
                room.align()
            ),
        }
    }
}

impl std::error::Error for DoesNotFit {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Table, BARRIERS, EVENTS, LOCKS, RWLOCKS};

    fn room(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    fn check_all<K: Kind>(table: &Table<K>) {
        for entry in table.entries() {
            let Some((ops, size, align)) = K::in_place(&entry.facts) else {
                let err = entry.fits(room(4096, 4096)).err().unwrap();
                assert_eq!(err, DoesNotFit::OwnMemory { name: entry.name.clone(), room: room(4096, 4096) });
                continue;
            };
            assert!(core::ptr::eq(entry.in_place().unwrap(), ops), "{}", entry.name);
            let exact = room(size, align);
            assert!(core::ptr::eq(entry.fits(exact).ok().unwrap(), ops), "{}: an exact room", entry.name);
            assert!(entry.fits(room(size + 8, align * 2)).is_ok(), "{}: a larger room", entry.name);
            if size > 0 {
                let short = room(size - 1, align);
                let err = entry.fits(short).err().unwrap();
                let name = entry.name.clone();
                assert_eq!(err, DoesNotFit::TooLarge { name, size, align, room: short }, "one byte short");
            }
            if align > 1 {
                let loose = room(size.next_multiple_of(align), align / 2);
                assert!(entry.fits(loose).is_err(), "{}: a looser alignment", entry.name);
            }
        }
    }

    #[test]
    fn every_kind_fits_exactly_its_own_size_and_alignment_and_no_less() {
        check_all(&LOCKS);
        check_all(&BARRIERS);
        check_all(&EVENTS);
        check_all(&RWLOCKS);
    }

    #[test]
    fn the_message_names_the_entry_what_it_takes_and_the_room() {
        let ticket = LOCKS.info("ticket:pause").unwrap();
        let (size, align) = (ticket.facts.ops.size, ticket.facts.ops.align);
        let text = ticket.fits(room(2, 1)).err().unwrap().to_string();
        let expected =
            format!("`ticket:pause` takes {size} bytes aligned to {align}, and the room is 2 bytes aligned to 1");
        assert_eq!(text, expected);
        let text = BARRIERS.info("std").unwrap().fits(room(16, 8)).err().unwrap().to_string();
        assert_eq!(text, "`std` keeps its own memory and has no form for a room of 16 bytes aligned to 8");
        let text = RWLOCKS.info("pthread").unwrap().fits(room(24, 8)).err().unwrap().to_string();
        assert!(text.starts_with("`pthread` keeps its own memory") && !text.contains('\n'), "{text}");
    }
}
