//! The measurement core every experiment shares: clocks and timer-overhead correction,
//! calibrated busy work, pinning, the FAME stopping rule, statistics, histograms, interleaved
//! repetition, progress, starting threads the OS may refuse, partner threads pinned to other
//! CPUs, and the other load on the CPUs while something is measured.

pub mod clock;
pub mod fame;
pub mod histogram;
pub mod interleave;
pub mod load;
pub mod memory;
pub mod partner;
pub mod pin;
pub mod progress;
pub mod sharing;
pub mod stats;
pub mod team;
pub mod work;

pub use clock::Clock;
pub use fame::{StoppingRule, Verdict};
pub use interleave::{interleave, interleave_stoppable, repeat, Rep, Series, Taken};
pub use progress::Progress;
pub use stats::Summary;
pub use work::Work;
