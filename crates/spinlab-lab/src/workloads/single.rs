//! Seed 000's single-behaviour benchmarks: a unit is a block of 512 instructions of one kind
//! (000's Fig. 3: 512 instructions, then a decrement and a branch back), so more than 99% of
//! the instructions executed are the kind under test.
//!
//! On x86-64 the blocks are written in assembly, so the compiler can neither fold a run of
//! additions into one nor vectorise it; elsewhere they are plain Rust loops kept honest with
//! `black_box` (correct, but not 000's instruction mix).

#[cfg(target_arch = "x86_64")]
use std::arch::asm;
use std::hint::black_box;

/// Added by `add` and multiplied by `mul` (odd, so products never collapse to zero).
pub const STEP: u64 = 0x9e37_79b9_7f4a_7c15;
/// Instructions of the kind under test per unit.
pub const BLOCK: u64 = 512;

/// `units` blocks of 512 additions on four independent registers (a modern core issues
/// several additions per cycle, as T1 issued one: the workload with the lowest CPI, the one
/// 000 found most hurt by a spinning neighbour). Returns the sum of the four registers.
pub fn add(units: u64, seed: u64) -> u64 {
    let [mut a, mut b, mut c, mut d] = [seed, seed ^ 1, seed ^ 2, seed ^ 3];
    if units == 0 {
        return a.wrapping_add(b).wrapping_add(c).wrapping_add(d);
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: register-only arithmetic and a loop on `n`, which is at least 1.
    unsafe {
        asm!(
            "2:",
            ".rept 128",
            "add {a}, {k}",
            "add {b}, {k}",
            "add {c}, {k}",
            "add {d}, {k}",
            ".endr",
            "dec {n}",
            "jnz 2b",
            a = inout(reg) a, b = inout(reg) b, c = inout(reg) c, d = inout(reg) d,
            n = inout(reg) units => _, k = in(reg) STEP,
            options(nomem, nostack),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    for _ in 0..units {
        for _ in 0..BLOCK / 4 {
            a = black_box(a.wrapping_add(STEP));
            b = b.wrapping_add(STEP);
            c = c.wrapping_add(STEP);
            d = d.wrapping_add(STEP);
        }
    }
    black_box(a.wrapping_add(b).wrapping_add(c).wrapping_add(d))
}

/// `units` blocks of 512 64-bit multiplications (000's MULX) on four independent registers.
/// Returns the sum of the four registers.
pub fn mul(units: u64, seed: u64) -> u64 {
    let [mut a, mut b, mut c, mut d] = [seed | 1, seed | 3, seed | 5, seed | 7];
    if units == 0 {
        return a.wrapping_add(b).wrapping_add(c).wrapping_add(d);
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: register-only arithmetic and a loop on `n`, which is at least 1.
    unsafe {
        asm!(
            "2:",
            ".rept 128",
            "imul {a}, {k}",
            "imul {b}, {k}",
            "imul {c}, {k}",
            "imul {d}, {k}",
            ".endr",
            "dec {n}",
            "jnz 2b",
            a = inout(reg) a, b = inout(reg) b, c = inout(reg) c, d = inout(reg) d,
            n = inout(reg) units => _, k = in(reg) STEP,
            options(nomem, nostack),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    for _ in 0..units {
        for _ in 0..BLOCK / 4 {
            a = black_box(a.wrapping_mul(STEP));
            b = b.wrapping_mul(STEP);
            c = c.wrapping_mul(STEP);
            d = d.wrapping_mul(STEP);
        }
    }
    black_box(a.wrapping_add(b).wrapping_add(c).wrapping_add(d))
}

/// `units` blocks of 512 taken unconditional branches (000's BAA: "branch always"), each to
/// the next instruction. Returns the number of branches taken, counted by the block itself.
pub fn branch(units: u64) -> u64 {
    let mut taken: u64 = 0;
    if units == 0 {
        return 0;
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: jumps stay inside the block; register-only counting; `n` is at least 1.
    unsafe {
        asm!(
            "2:",
            ".rept 512",
            "jmp 3f",
            "3:",
            ".endr",
            "add {t}, 512",
            "dec {n}",
            "jnz 2b",
            t = inout(reg) taken, n = inout(reg) units => _,
            options(nomem, nostack),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    for _ in 0..units {
        for _ in 0..BLOCK {
            taken = black_box(taken + 1);
        }
    }
    black_box(taken)
}

/// Words per 64-byte line.
const LINE_WORDS: usize = 8;

/// A pointer chase over a buffer: one link per 64-byte line, in a random cyclic order, so
/// each load depends on the last and every line is visited before any repeats. Over half the
/// L1d every load hits the L1 (000's L1 hit); over half the L2 every load misses the L1 and
/// hits the L2 (000's L2 hit), since a random order defeats the prefetchers.
pub struct Chase {
    /// `next[line * 8]` is the word index of the next line's link; other words are unused.
    pub next: Vec<usize>,
}

impl Chase {
    /// A chase over `bytes` (at least two lines).
    pub fn new(bytes: u64, seed: u64) -> Chase {
        let lines = (bytes as usize / (LINE_WORDS * 8)).max(2);
        let cycle = super::random_cycle(lines, &mut super::Rng::new(seed));
        let mut next = vec![0usize; lines * LINE_WORDS];
        for (line, &to) in cycle.iter().enumerate() {
            next[line * LINE_WORDS] = to * LINE_WORDS;
        }
        Chase { next }
    }

    /// Lines in the chase.
    pub fn lines(&self) -> usize {
        self.next.len() / LINE_WORDS
    }

    /// `units` blocks of 512 dependent loads from the first line. Returns the word index
    /// reached, plus the number of loads.
    pub fn walk(&self, units: u64) -> u64 {
        let next = &self.next[..];
        let mut i = 0usize;
        for _ in 0..units {
            for _ in 0..BLOCK / 8 {
                // Eight per iteration: the loop's own branch is one instruction in 65.
                i = next[i];
                i = next[i];
                i = next[i];
                i = next[i];
                i = next[i];
                i = next[i];
                i = next[i];
                i = next[i];
            }
        }
        black_box(i as u64 + units * BLOCK)
    }
}
