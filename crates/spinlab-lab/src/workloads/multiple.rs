//! Seed 000's multiple-behaviour benchmarks: programs with phases, emulating real algorithms.

use super::{shuffled, Rng};
use std::hint::black_box;

/// Columns per 64-byte block of a `u32` row.
const BLOCK_COLS: usize = 16;

/// Folds a value into a checksum (order-sensitive).
#[inline]
pub fn fold(acc: u64, x: u64) -> u64 {
    acc.wrapping_mul(0x100_0000_01b3).wrapping_add(x)
}

/// Integer matrix by vector (000's MbV INT): `y = A·x` over a `u32` matrix larger than the
/// last-level cache, walked non-sequentially: rows in a random order, and within each row its
/// 64-byte blocks in a random order, so almost every block is a cache miss the prefetchers
/// cannot hide, and every element costs a multiply.
pub struct MbvInt {
    /// Rows.
    pub rows: usize,
    /// Columns (a multiple of 16).
    pub cols: usize,
    /// Row-major elements.
    pub matrix: Vec<u32>,
    /// The vector.
    pub vector: Vec<u32>,
    /// The order rows are visited in.
    pub row_order: Vec<u32>,
    /// The order a row's 16-column blocks are visited in.
    pub block_order: Vec<u32>,
    y: Vec<u64>,
}

impl MbvInt {
    /// A matrix of about `bytes`, with rows of 4096 columns (16 KiB) or fewer for small sizes.
    pub fn new(bytes: u64, seed: u64) -> MbvInt {
        let elements = (bytes as usize / 4).max(BLOCK_COLS);
        let cols = (elements.isqrt().next_power_of_two()).clamp(BLOCK_COLS, 4096);
        let rows = (elements / cols).max(1);
        Self::with_shape(rows, cols, seed)
    }

    /// A `rows` × `cols` matrix (`cols` a multiple of 16) of random numbers.
    pub fn with_shape(rows: usize, cols: usize, seed: u64) -> MbvInt {
        assert!(cols.is_multiple_of(BLOCK_COLS) && cols > 0 && rows > 0, "mbv-int shape {rows}x{cols}");
        let mut rng = Rng::new(seed);
        let matrix = (0..rows * cols).map(|_| rng.next_u64() as u32).collect();
        let vector = (0..cols).map(|_| rng.next_u64() as u32).collect();
        let row_order = shuffled(rows, &mut rng);
        let block_order = shuffled(cols / BLOCK_COLS, &mut rng);
        MbvInt { rows, cols, matrix, vector, row_order, block_order, y: vec![0; rows] }
    }

    /// One product; the checksum folds `y` in row order.
    pub fn run(&mut self) -> u64 {
        let (cols, x) = (self.cols, &self.vector[..]);
        for &r in &self.row_order {
            let row = &self.matrix[r as usize * cols..(r as usize + 1) * cols];
            let mut sum = 0u64;
            for &b in &self.block_order {
                let at = b as usize * BLOCK_COLS;
                for (a, v) in row[at..at + BLOCK_COLS].iter().zip(&x[at..at + BLOCK_COLS]) {
                    sum = sum.wrapping_add(*a as u64 * *v as u64);
                }
            }
            self.y[r as usize] = sum;
        }
        black_box(self.y.iter().fold(0, |acc, &v| fold(acc, v)))
    }
}

/// Floating-point matrix by vector (000's MbV FP): `y = A·x` over an `f64` matrix larger than
/// the last-level cache, row after row (the more sequential of 000's two).
pub struct MbvFp {
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Row-major elements in [0, 1).
    pub matrix: Vec<f64>,
    /// The vector, elements in [0, 1).
    pub vector: Vec<f64>,
    y: Vec<f64>,
}

impl MbvFp {
    /// A square-ish matrix of about `bytes`.
    pub fn new(bytes: u64, seed: u64) -> MbvFp {
        let elements = (bytes as usize / 8).max(1);
        let cols = elements.isqrt().max(1);
        let rows = (elements / cols).max(1);
        Self::with_shape(rows, cols, seed)
    }

    /// A `rows` × `cols` matrix of random numbers in [0, 1).
    pub fn with_shape(rows: usize, cols: usize, seed: u64) -> MbvFp {
        let mut rng = Rng::new(seed);
        let mut unit = || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let matrix = (0..rows * cols).map(|_| unit()).collect();
        let vector = (0..cols).map(|_| unit()).collect();
        MbvFp { rows, cols, matrix, vector, y: vec![0.0; rows] }
    }

    /// One product; the checksum folds the bits of `y` in row order.
    pub fn run(&mut self) -> u64 {
        for (row, y) in self.matrix.chunks_exact(self.cols).zip(self.y.iter_mut()) {
            *y = row.iter().zip(&self.vector).fold(0.0, |s, (a, v)| s + a * v);
        }
        black_box(self.y.iter().fold(0, |acc, v| fold(acc, v.to_bits())))
    }
}

/// 000's QuickSort: a standard recursive quicksort of an array of random `u32`s, refilled
/// from the same unsorted copy before every sort.
pub struct Sort {
    /// The unsorted input.
    pub input: Vec<u32>,
    work: Vec<u32>,
}

impl Sort {
    /// An array of `bytes` (at least 16 elements).
    pub fn new(bytes: u64, seed: u64) -> Sort {
        let n = (bytes as usize / 4).max(16);
        let mut rng = Rng::new(seed);
        let input: Vec<u32> = (0..n).map(|_| rng.next_u64() as u32).collect();
        Sort { work: input.clone(), input }
    }

    /// One copy and sort; the checksum folds the sorted array.
    pub fn run(&mut self) -> u64 {
        self.work.copy_from_slice(&self.input);
        quicksort(&mut self.work);
        black_box(self.work.iter().fold(0, |acc, &v| fold(acc, v as u64)))
    }
}

/// Recursive quicksort: Hoare partition around the middle element, recursing on both sides.
/// The pivot is the lower middle, so the left part never takes the whole slice.
pub fn quicksort(a: &mut [u32]) {
    if a.len() < 2 {
        return;
    }
    let pivot = a[(a.len() - 1) / 2];
    let (mut i, mut j) = (0usize, a.len() - 1);
    loop {
        while a[i] < pivot {
            i += 1;
        }
        while a[j] > pivot {
            j -= 1;
        }
        if i >= j {
            break;
        }
        a.swap(i, j);
        i += 1;
        j -= 1;
    }
    let (left, right) = a.split_at_mut(j + 1);
    quicksort(left);
    quicksort(right);
}

/// Slots per bucket: one 64-byte line of `u32`s.
pub const SLOTS: usize = 16;
/// Numbers inserted per unit of `hash`.
pub const INSERTS_PER_UNIT: u64 = 1 << 16;
/// The low bits of a number that `hash` compares to find a match (000: "the less
/// significant bits of the number").
pub const MATCH_MASK: u32 = 0xffff;

/// 000's Hash: random integers inserted into a large 2-D table. A 32-bit hash of the number
/// picks the bucket (first dimension, by an integer division by a bucket count that is not a
/// power of two); the insertion walks the bucket's slots (second dimension) comparing low
/// bits, counts a match, fills the first empty slot, or evicts one when the bucket is full.
/// The table is cleared at the start of each call, so every call does the same work.
pub struct Hash {
    /// Buckets (odd, so the division is a real one).
    pub buckets: usize,
    table: Vec<u32>,
}

/// A 32-bit hash with an even distribution (murmur3's finaliser).
#[inline]
pub fn hash32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

/// What one insertion did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Insert {
    /// A slot's low bits matched; the slot is unchanged.
    Matched(usize),
    /// Stored in an empty slot.
    Stored(usize),
    /// The bucket was full; the slot was overwritten.
    Evicted(usize),
}

impl Insert {
    /// The slot, and a code for what happened, folded into the checksum.
    pub fn code(self) -> u64 {
        match self {
            Insert::Matched(s) => s as u64,
            Insert::Stored(s) => 0x100 | s as u64,
            Insert::Evicted(s) => 0x200 | s as u64,
        }
    }
}

impl Hash {
    /// A table of about `bytes` (at least one bucket).
    pub fn new(bytes: u64) -> Hash {
        let buckets = ((bytes as usize / (SLOTS * 4)).max(1)) | 1;
        Hash { buckets, table: vec![0; buckets * SLOTS] }
    }

    /// The bucket of `x` and the slot to evict there when it is full.
    #[inline]
    pub fn place(&self, x: u32) -> (usize, usize) {
        let h = hash32(x);
        (h as usize % self.buckets, (h >> 28) as usize)
    }

    /// Clears the table and inserts `units` × 65536 random numbers (non-zero: zero marks an
    /// empty slot) from `seed`; the checksum folds each number's bucket and what happened.
    pub fn run(&mut self, units: u64, seed: u64) -> u64 {
        self.table.fill(0);
        let mut rng = Rng::new(seed);
        let mut acc = 0u64;
        for _ in 0..units * INSERTS_PER_UNIT {
            let x = (rng.next_u64() as u32) | 1;
            let (bucket, victim) = self.place(x);
            let slots = &mut self.table[bucket * SLOTS..(bucket + 1) * SLOTS];
            let mut done = Insert::Evicted(victim);
            for (s, slot) in slots.iter_mut().enumerate() {
                if *slot == 0 {
                    *slot = x;
                    done = Insert::Stored(s);
                    break;
                }
                if *slot & MATCH_MASK == x & MATCH_MASK {
                    done = Insert::Matched(s);
                    break;
                }
            }
            if let Insert::Evicted(s) = done {
                slots[s] = x;
            }
            acc = fold(acc, (bucket as u64) << 12 | done.code());
        }
        black_box(acc)
    }
}
