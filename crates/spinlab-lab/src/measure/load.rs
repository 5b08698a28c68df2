//! Other work on the CPUs while something is measured. Every figure here is read against the
//! machine's time, and on a shared machine other processes (or, on a virtual machine, other
//! tenants of the host) take some of it: a figure taken then may not hold. The load average
//! cannot tell, since it counts our own threads; so the meter reads the CPUs' busy time from
//! `/proc/stat` before and after, takes out this process's own CPU time and its waited-for
//! children's (`/proc/self/stat`),
//! and reports the rest, with the hypervisor's steal time, as a share of the CPUs' time.
//!
//! The kernel counts both in clock ticks (usually 10 ms), so a measurement much shorter than
//! a second reads a few ticks at most: the shares are rough there, never precise.

/// A share of the CPUs' time at or above which a measurement is said to be under load.
pub const UNDER_LOAD_PCT: f64 = 10.0;

/// Busy, steal and total ticks of a set of CPUs, and this process's CPU ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Ticks {
    /// Time the CPUs ran anything (user, nice, system, irq, softirq).
    pub busy: u64,
    /// Time the hypervisor ran something else on them.
    pub steal: u64,
    /// All their time, idle included.
    pub total: u64,
    /// This process's user and system time, on any CPU.
    pub ours: u64,
}

/// What else ran while a measurement did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Load {
    /// Busy time of the measured CPUs that was not this process's, in percent of their time;
    /// `None` where `/proc` could not be read.
    pub other_pct: Option<f64>,
    /// The hypervisor's steal time on them, in percent of their time.
    pub steal_pct: Option<f64>,
    /// `/proc/loadavg` before and after (our own threads included).
    pub load_average_start: Option<[f64; 3]>,
    /// See `load_average_start`.
    pub load_average_end: Option<[f64; 3]>,
}

impl Load {
    /// Words for the terminal and the report when the measurement was under load.
    pub fn under_load(&self) -> Option<String> {
        describe(self.other_pct, self.steal_pct)
    }
}

/// `other processes used 23% of the CPUs' time, the hypervisor took 4%`, when either share
/// reaches [`UNDER_LOAD_PCT`].
pub fn describe(other_pct: Option<f64>, steal_pct: Option<f64>) -> Option<String> {
    let other = other_pct.unwrap_or(0.0);
    let steal = steal_pct.unwrap_or(0.0);
    (other >= UNDER_LOAD_PCT || steal >= UNDER_LOAD_PCT).then(|| {
        format!("other processes used {other:.0}% of the measured CPUs' time and the hypervisor took {steal:.0}%")
    })
}

/// Watches the given CPUs from `start` to `finish`.
pub struct Meter {
    cpus: Vec<usize>,
    before: Option<Ticks>,
    load_average_start: Option<[f64; 3]>,
}

impl Meter {
    /// Takes the first reading.
    pub fn start(cpus: &[usize]) -> Meter {
        Meter { cpus: cpus.to_vec(), before: read(cpus), load_average_start: load_average() }
    }

    /// Takes the second reading and returns what else ran in between.
    pub fn finish(self) -> Load {
        let after = read(&self.cpus);
        let (other_pct, steal_pct) = match (self.before, after) {
            (Some(before), Some(after)) => shares(before, after),
            _ => (None, None),
        };
        Load { other_pct, steal_pct, load_average_start: self.load_average_start, load_average_end: load_average() }
    }
}

/// The other-busy and steal shares between two readings, in percent.
pub fn shares(before: Ticks, after: Ticks) -> (Option<f64>, Option<f64>) {
    let total = after.total.saturating_sub(before.total);
    if total == 0 {
        return (None, None);
    }
    let busy = after.busy.saturating_sub(before.busy);
    let ours = after.ours.saturating_sub(before.ours);
    let steal = after.steal.saturating_sub(before.steal);
    let pct = |ticks: u64| 100.0 * ticks as f64 / total as f64;
    (Some(pct(busy.saturating_sub(ours))), Some(pct(steal)))
}

fn read(cpus: &[usize]) -> Option<Ticks> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let own = std::fs::read_to_string("/proc/self/stat").ok()?;
    Some(Ticks { ours: own_ticks(&own)?, ..cpu_ticks(&stat, cpus)? })
}

/// The busy, steal and total ticks of `cpus` from `/proc/stat`'s `cpuN` lines (`None` if a
/// CPU's line is missing).
pub fn cpu_ticks(stat: &str, cpus: &[usize]) -> Option<Ticks> {
    let mut ticks = Ticks::default();
    for &cpu in cpus {
        let name = format!("cpu{cpu}");
        let line = stat.lines().find(|l| l.split_whitespace().next() == Some(name.as_str()))?;
        // user nice system idle iowait irq softirq steal (guest time is inside user).
        let f: Vec<u64> = line.split_whitespace().skip(1).take(8).filter_map(|v| v.parse().ok()).collect();
        if f.len() < 8 {
            return None;
        }
        ticks.busy += f[0] + f[1] + f[2] + f[5] + f[6];
        ticks.steal += f[7];
        ticks.total += f.iter().sum::<u64>();
    }
    Some(ticks)
}

/// The 1-, 5- and 15-minute load averages from `/proc/loadavg` (our own threads included).
pub fn load_average() -> Option<[f64; 3]> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut fields = text.split_whitespace().map(|f| f.parse::<f64>().ok());
    Some([fields.next()??, fields.next()??, fields.next()??])
}

/// This process's user and system ticks, with those of the children it has waited for (the
/// programs `spinlab app` runs), from `/proc/self/stat` fields 14 to 17. The name in
/// parentheses may hold spaces, so fields are counted after its closing parenthesis.
pub fn own_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state): utime is field 14, stime 15, cutime 16, cstime 17.
    (11..15).map(|i| fields.get(i)?.parse::<u64>().ok()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  10 0 10 100 0 0 0 0 0 0\n\
                        cpu0 100 5 50 1000 3 2 1 7 0 0\n\
                        cpu1 200 0 100 500 0 0 0 3 0 0\n\
                        intr 12345\n";

    #[test]
    fn cpu_lines_sum_busy_steal_and_total() {
        let t = cpu_ticks(STAT, &[0, 1]).unwrap();
        assert_eq!(t.busy, 100 + 5 + 50 + 2 + 1 + 200 + 100);
        assert_eq!(t.steal, 10);
        assert_eq!(t.total, 1168 + 803);
        assert_eq!(cpu_ticks(STAT, &[0]).unwrap().busy, 158);
        assert!(cpu_ticks(STAT, &[2]).is_none(), "a CPU without a line");
    }

    #[test]
    fn own_ticks_skip_a_name_with_spaces() {
        let stat = "4242 (spin lab) S 1 4242 4242 0 -1 4194560 100 0 0 0 37 5 8 2 20 0 3 0 100 0 0";
        assert_eq!(own_ticks(stat), Some(52));
        assert_eq!(own_ticks("garbage"), None);
    }

    #[test]
    fn the_other_share_leaves_out_our_own_time() {
        let before = Ticks { busy: 100, steal: 0, total: 1000, ours: 50 };
        // 200 ticks of CPU time: 150 busy, of which 120 ours; 20 stolen.
        let after = Ticks { busy: 250, steal: 20, total: 1200, ours: 170 };
        assert_eq!(shares(before, after), (Some(15.0), Some(10.0)));
        assert!(describe(Some(15.0), Some(10.0)).unwrap().contains("15%"));
        assert_eq!(describe(Some(3.0), Some(2.0)), None);
        // Our time counted on other CPUs than the measured ones never makes the share negative.
        let mine = Ticks { busy: 100, steal: 0, total: 1100, ours: 500 };
        assert_eq!(shares(before, mine), (Some(0.0), Some(0.0)));
        assert_eq!(shares(before, before), (None, None), "no time passed");
    }
}
