//! Parsing what the user selects on the command line: lock and wait-policy lists, thread
//! counts, placements, durations. Each parser returns one line naming the bad input and what
//! is accepted.

use crate::machine::Placement;
use spinlab_registry::{self as registry, LockEntry, Origin};
use std::time::Duration;

/// The alias `--locks` accepts for the library's recommended lock.
pub const DEFAULT_ALIAS: &str = "default";

/// The registry name of `spinlab::DefaultRawMutex` (`Adaptive<PauseYieldPark>`). The registry
/// has no alias for it; a test checks this name against the type.
pub const DEFAULT_LOCK: &str = "adaptive:pause-yield-park";

/// A lock chosen by name.
#[derive(Clone, Debug)]
pub struct LockChoice {
    /// The registry entry.
    pub entry: &'static LockEntry,
    /// Whether it was asked for as `default`.
    pub via_alias: bool,
}

impl LockChoice {
    /// The registry name.
    pub fn name(&self) -> &'static str {
        &self.entry.name
    }

    /// Whether it is one of the reference locks (std, parking_lot, pthread).
    pub fn is_reference(&self) -> bool {
        self.entry.origin == Origin::Reference
    }

    /// Whether it is the library's default lock.
    pub fn is_default(&self) -> bool {
        self.entry.name == DEFAULT_LOCK
    }

    /// `spinlab` or `reference`.
    pub fn origin(&self) -> &'static str {
        if self.is_reference() {
            "reference"
        } else {
            "spinlab"
        }
    }

    /// Why this CPU cannot run it, if it cannot.
    pub fn unavailable(&self) -> Option<String> {
        self.entry.availability.err().map(|e| e.to_string())
    }
}

/// One lock by name (`default` is the library's default lock).
pub fn lock(name: &str) -> Result<LockChoice, String> {
    let (real, via_alias) = if name == DEFAULT_ALIAS { (DEFAULT_LOCK, true) } else { (name, false) };
    registry::LOCKS.info(real).map(|entry| LockChoice { entry, via_alias }).map_err(|e| {
        format!("{e}; `{DEFAULT_ALIAS}` names spinlab's default lock ({DEFAULT_LOCK}); `spinlab list` shows every name")
    })
}

/// Splits a comma-separated list, refusing empty items.
pub fn split_list(text: &str) -> Result<Vec<&str>, String> {
    let items: Vec<&str> = text.split(',').map(str::trim).collect();
    if items.iter().any(|i| i.is_empty()) {
        return Err(format!("malformed list `{text}`: items are separated by single commas, none empty"));
    }
    Ok(items)
}

/// A comma-separated lock list, duplicates dropped.
pub fn lock_list(text: &str) -> Result<Vec<LockChoice>, String> {
    let mut out: Vec<LockChoice> = Vec::new();
    for item in split_list(text)? {
        let choice = lock(item)?;
        if !out.iter().any(|c| c.name() == choice.name()) {
            out.push(choice);
        }
    }
    Ok(out)
}

/// Locks by name from a built-in default list (names known to exist).
pub fn default_locks(names: &[&str]) -> Vec<LockChoice> {
    names.iter().filter_map(|n| lock(n).ok()).collect()
}

/// A comma-separated wait-policy list.
pub fn wait_list(text: &str) -> Result<Vec<&'static str>, String> {
    let policies = spinlab::wait::policies();
    let mut out: Vec<&'static str> = Vec::new();
    for item in split_list(text)? {
        let Some(p) = policies.iter().find(|p| p.name == item) else {
            return Err(format!(
                "unknown wait policy `{item}`; accepted: {}",
                policies.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
            ));
        };
        if !out.contains(&p.name) {
            out.push(p.name);
        }
    }
    Ok(out)
}

/// A thread count: a number, or a multiple of the CPUs this process may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadCount {
    /// Exactly this many.
    Exact(usize),
    /// This many per allowed CPU (`cpus` is 1x, `4x` four per CPU).
    PerCpu(usize),
}

impl ThreadCount {
    /// The count on a machine with `cpus` usable CPUs.
    pub fn resolve(self, cpus: usize) -> usize {
        match self {
            ThreadCount::Exact(n) => n,
            ThreadCount::PerCpu(k) => k.saturating_mul(cpus.max(1)),
        }
    }
}

/// The most threads one configuration may run: [`THREADS_PER_CPU`] per usable CPU (herd's
/// default reaches 32x), but at least [`THREADS_FLOOR`] on a small machine and at most
/// [`THREADS_CEILING`]. Each thread maps a stack and a signal stack, each with a guard page:
/// four memory maps. 8192 threads stay well inside Linux's default of 65530 maps per process;
/// near it (about 16 000 threads) a new thread fails while std sets up its signal stack, and
/// that aborts the process rather than returning an error to the spawner.
pub fn max_threads(cpus: usize) -> usize {
    THREADS_PER_CPU.saturating_mul(cpus).clamp(THREADS_FLOOR, THREADS_CEILING)
}

/// Threads per usable CPU in [`max_threads`].
pub const THREADS_PER_CPU: usize = 32;
/// The thread limit on a machine with fewer than 32 usable CPUs.
pub const THREADS_FLOOR: usize = 1024;
/// The thread limit on any machine.
pub const THREADS_CEILING: usize = 8192;

/// What `--threads` accepts, in words (for help and errors).
pub const THREADS_ACCEPTED: &str = "accepted: whole numbers, `cpus`, or multiples of the CPUs like `2x`, each \
     count from 1 to 32 per usable CPU (a limit never below 1024 nor above 8192)";

/// A thread list: `1,2,4`, with `cpus` for the number of usable CPUs and `Nx` for N times it.
/// Counts above [`THREADS_CEILING`] are refused here; [`resolve_threads`] checks the rest
/// against this machine's [`max_threads`].
pub fn thread_list(text: &str) -> Result<Vec<ThreadCount>, String> {
    split_list(text)?
        .into_iter()
        .map(|item| {
            let parsed = if item == "cpus" {
                Some(ThreadCount::PerCpu(1))
            } else if let Some(k) = item.strip_suffix('x') {
                k.parse::<usize>().ok().map(ThreadCount::PerCpu)
            } else {
                item.parse::<usize>().ok().map(ThreadCount::Exact)
            };
            match parsed {
                Some(ThreadCount::Exact(0)) | Some(ThreadCount::PerCpu(0)) => {
                    Err(format!("`{item}` is not a thread count: at least one thread is needed; {THREADS_ACCEPTED}"))
                }
                Some(ThreadCount::Exact(n)) if n > THREADS_CEILING => {
                    Err(format!("`{item}` is too many threads; {THREADS_ACCEPTED}"))
                }
                Some(ThreadCount::PerCpu(k)) if k > THREADS_CEILING => {
                    Err(format!("`{item}` is too many threads per CPU; {THREADS_ACCEPTED}"))
                }
                Some(c) => Ok(c),
                None => Err(format!("`{item}` is not a thread count; {THREADS_ACCEPTED}")),
            }
        })
        .collect()
}

/// Resolves thread counts for `cpus` CPUs, ascending, duplicates dropped; a count above
/// [`max_threads`] is an error that names it and the limit.
pub fn resolve_threads(counts: &[ThreadCount], cpus: usize) -> Result<Vec<usize>, String> {
    let limit = max_threads(cpus);
    let mut out: Vec<usize> = counts.iter().map(|c| c.resolve(cpus)).collect();
    if let Some(&too_many) = out.iter().find(|&&n| n > limit) {
        return Err(format!(
            "{too_many} threads is more than this machine allows: at most {limit} with {cpus} usable CPUs; {THREADS_ACCEPTED}"
        ));
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// A comma-separated placement list.
pub fn placement_list(text: &str) -> Result<Vec<Placement>, String> {
    let mut out = Vec::new();
    for item in split_list(text)? {
        let p = Placement::parse(item)?;
        if !out.contains(&p) {
            out.push(p);
        }
    }
    Ok(out)
}

/// The whole numbers a count option accepts. The option's parser, its help text and its error
/// messages all come from one value, so the limits a user reads are the limits enforced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// The smallest value accepted.
    pub min: u64,
    /// The largest value accepted.
    pub max: u64,
    /// Words after the range (` ns`, ` MiB`), or empty.
    pub unit: &'static str,
}

impl Bounds {
    /// `min` to `max`, no unit.
    pub const fn new(min: u64, max: u64) -> Bounds {
        Bounds { min, max, unit: "" }
    }

    /// The same range, followed by `unit` in messages.
    pub const fn unit(self, unit: &'static str) -> Bounds {
        Bounds { unit, ..self }
    }

    /// What is accepted, in words: `1 to 10000`.
    pub fn accepted(&self) -> String {
        format!("{} to {}{}", self.min, self.max, self.unit)
    }

    /// An option's help: `what`, then the accepted range.
    pub fn help(&self, what: &str) -> String {
        format!("{what}; accepted: {}", self.accepted())
    }

    /// Parses `text` as a whole number inside the bounds; the error names `text` and the range.
    pub fn parse<T: TryFrom<u64>>(&self, text: &str) -> Result<T, String> {
        let accepted = self.accepted();
        let digits = text.trim();
        let value: u64 = digits.parse().map_err(|_| {
            // A run of digits too long for 64 bits is a whole number, only far too large.
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                format!("`{text}` is above the limit; accepted: {accepted}")
            } else {
                format!("`{text}` is not a whole number; accepted: {accepted}")
            }
        })?;
        if value < self.min {
            return Err(format!("`{text}` is below the limit; accepted: {accepted}"));
        }
        if value > self.max {
            return Err(format!("`{text}` is above the limit; accepted: {accepted}"));
        }
        T::try_from(value).map_err(|_| format!("`{text}` is too large for this machine; accepted: {accepted}"))
    }
}

/// The lengths of time an option accepts, as [`Bounds`] does for counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeBounds {
    /// The shortest accepted.
    pub min: Duration,
    /// The longest accepted.
    pub max: Duration,
}

impl TimeBounds {
    /// What is accepted, in words: `1ms to 1h`.
    pub fn accepted(&self) -> String {
        format!("{} to {}", time_words(self.min), time_words(self.max))
    }

    /// An option's help: `what`, then the accepted range and the forms a time takes.
    pub fn help(&self, what: &str) -> String {
        format!("{what}, e.g. 200ms, 2s, 10min; accepted: {}", self.accepted())
    }

    /// Parses a time: `2s`, `200ms`, `500us`, `10min`, `1h`, `1.5` (seconds), inside the
    /// bounds; the error names `text` and the range.
    pub fn parse(&self, text: &str) -> Result<Duration, String> {
        let t = text.trim();
        let accepted = format!("a time from {}, such as 200ms, 2s, 10min or 1.5 (seconds)", self.accepted());
        let (number, scale) = if let Some(n) = t.strip_suffix("ms") {
            (n, 1e-3)
        } else if let Some(n) = t.strip_suffix("us") {
            (n, 1e-6)
        } else if let Some(n) = t.strip_suffix("ns") {
            (n, 1e-9)
        } else if let Some(n) = t.strip_suffix("min") {
            (n, 60.0)
        } else if let Some(n) = t.strip_suffix('h') {
            (n, 3600.0)
        } else if let Some(n) = t.strip_suffix('s') {
            (n, 1.0)
        } else {
            (t, 1.0)
        };
        let value: f64 = number.trim().parse().map_err(|_| format!("`{text}` is not a time; give {accepted}"))?;
        if value.is_nan() {
            return Err(format!("`{text}` is not a time; give {accepted}"));
        }
        if value < 0.0 {
            return Err(format!("`{text}` is negative; give {accepted}"));
        }
        let seconds = value * scale;
        if seconds < self.min.as_secs_f64() {
            return Err(format!("`{text}` is shorter than the limit; give {accepted}"));
        }
        if seconds > self.max.as_secs_f64() {
            return Err(format!("`{text}` is longer than the limit; give {accepted}"));
        }
        Ok(Duration::from_secs_f64(seconds))
    }
}

/// A duration as a person writes it: `1ms`, `10s`, `1h`.
fn time_words(d: Duration) -> String {
    let (secs, nanos) = (d.as_secs(), d.subsec_nanos());
    if nanos == 0 && secs > 0 && secs.is_multiple_of(3600) {
        format!("{}h", secs / 3600)
    } else if nanos == 0 && secs > 0 && secs.is_multiple_of(60) {
        format!("{}min", secs / 60)
    } else if nanos == 0 {
        format!("{secs}s")
    } else if d.as_nanos().is_multiple_of(1_000_000) {
        format!("{}ms", d.as_millis())
    } else if d.as_nanos().is_multiple_of(1_000) {
        format!("{}us", d.as_micros())
    } else {
        format!("{}ns", d.as_nanos())
    }
}

/// `--duration`: one repetition, from a millisecond to an hour.
pub const DURATION: TimeBounds = TimeBounds { min: Duration::from_millis(1), max: Duration::from_secs(3600) };

/// `--min-reps`, `--max-reps` and `spinlab app --reps`: repetitions per treatment.
pub const REPS: Bounds = Bounds::new(1, 1000);

/// A duration for `--duration` (see [`DURATION`]).
pub fn duration(text: &str) -> Result<Duration, String> {
    DURATION.parse(text)
}

/// A repetition count (see [`REPS`]).
pub fn reps(text: &str) -> Result<usize, String> {
    REPS.parse(text)
}

/// What `--maiv` accepts, in words.
pub const MAIV_ACCEPTED: &str = "a percentage above 0 and at most 100 (e.g. 1 or 0.5)";

/// A FAME maximum allowable variation, in percent: above 0, at most 100.
pub fn maiv(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 100.0 => Ok(p),
        _ => Err(format!("`{text}` is not accepted; give {MAIV_ACCEPTED}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_alias_names_the_library_default_type() {
        let name = std::any::type_name::<spinlab::DefaultRawMutex>();
        assert!(name.contains("Adaptive<") && name.contains("PauseYieldPark"), "{name}: update DEFAULT_LOCK");
        let choice = lock("default").unwrap();
        assert_eq!(choice.name(), DEFAULT_LOCK);
        assert!(choice.via_alias && choice.is_default());
    }

    #[test]
    fn unknown_locks_list_what_is_accepted() {
        let err = lock_list("ttas:spin,nope").unwrap_err();
        assert!(
            err.contains("`nope`") && err.contains("ticket") && err.contains("parking_lot") && err.contains("default")
        );
        assert!(lock_list("std,,pthread").unwrap_err().contains("malformed"));
        let locks = lock_list("std,default,adaptive:pause-yield-park").unwrap();
        assert_eq!(locks.iter().map(|l| l.name()).collect::<Vec<_>>(), ["std", "adaptive:pause-yield-park"]);
    }

    #[test]
    fn thread_lists() {
        use ThreadCount::*;
        assert_eq!(thread_list("1,2,cpus,4x").unwrap(), [Exact(1), Exact(2), PerCpu(1), PerCpu(4)]);
        assert!(thread_list("0").unwrap_err().contains("at least one thread"));
        assert!(thread_list("0x").is_err());
        assert!(thread_list("1,,2").unwrap_err().contains("malformed"));
        assert!(thread_list("two").unwrap_err().contains("`two`"));
        assert!(thread_list("-1").is_err());
        assert_eq!(resolve_threads(&[Exact(2), PerCpu(1), PerCpu(8), Exact(1)], 2).unwrap(), [1, 2, 16]);
    }

    #[test]
    fn thread_counts_stop_at_the_machines_limit() {
        use ThreadCount::*;
        assert_eq!(max_threads(2), 1024);
        assert_eq!(max_threads(64), 2048);
        assert_eq!(max_threads(1000), 8192);
        assert!(thread_list("100000").unwrap_err().contains("never below 1024 nor above 8192"));
        assert!(thread_list("9000x").unwrap_err().contains("too many threads per CPU"));
        assert_eq!(resolve_threads(&[Exact(1024)], 2).unwrap(), [1024]);
        let err = resolve_threads(&[Exact(1025)], 2).unwrap_err();
        assert!(err.contains("1025 threads") && err.contains("at most 1024 with 2 usable CPUs"), "{err}");
        assert!(resolve_threads(&[PerCpu(8000)], 2).is_err());
        assert_eq!(resolve_threads(&[PerCpu(32)], 64).unwrap(), [2048]);
        // A multiple that would overflow saturates, and is refused rather than wrapped.
        assert!(resolve_threads(&[PerCpu(usize::MAX)], 2).is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(duration("200ms"), Ok(Duration::from_millis(200)));
        assert_eq!(duration("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(duration("1ms"), Ok(Duration::from_millis(1)));
        assert_eq!(duration("10min"), Ok(Duration::from_secs(600)));
        assert_eq!(duration("1h"), Ok(Duration::from_secs(3600)));
        assert!(duration("-1").unwrap_err().contains("negative"));
        assert!(duration("-2s").unwrap_err().contains("negative"));
        assert!(duration("0").unwrap_err().contains("1ms to 1h"));
        assert!(duration("500us").unwrap_err().contains("shorter"));
        assert!(duration("1e9").unwrap_err().contains("longer than the limit"));
        assert!(duration("61min").is_err());
        assert!(duration("inf").is_err());
        assert!(duration("NaN").is_err());
        assert!(duration("soon").is_err());
    }

    #[test]
    fn bounded_counts() {
        let b = Bounds::new(1, 10_000);
        assert_eq!(b.parse::<usize>("10000"), Ok(10_000));
        assert_eq!(b.parse::<u64>(" 1 "), Ok(1));
        assert!(b.parse::<usize>("10001").unwrap_err().contains("above the limit; accepted: 1 to 10000"));
        assert!(b.parse::<usize>("0").unwrap_err().contains("below the limit"));
        assert!(b.parse::<usize>("-3").unwrap_err().contains("not a whole number"));
        assert!(b.parse::<usize>("1e3").unwrap_err().contains("not a whole number"));
        let huge = b.parse::<usize>("99999999999999999999").unwrap_err();
        assert!(huge.contains("above the limit"), "{huge}");
        assert!(b.parse::<usize>("99999999999999999999999").is_err());
        assert!(b.parse::<u8>("300").unwrap_err().contains("too large"));
        assert_eq!(Bounds::new(0, 10).unit(" ns").accepted(), "0 to 10 ns");
        assert_eq!(maiv("100"), Ok(100.0));
        assert!(maiv("0").is_err() && maiv("101").is_err() && maiv("nan").is_err() && maiv("inf").is_err());
    }

    #[test]
    fn wait_and_placement_lists() {
        assert_eq!(wait_list("spin,futex,spin").unwrap(), ["spin", "futex"]);
        assert!(wait_list("nap").unwrap_err().contains("spin-park"));
        assert_eq!(placement_list("core,smt").unwrap(), [Placement::Core, Placement::Smt]);
        assert!(placement_list("socket").is_err());
    }
}
