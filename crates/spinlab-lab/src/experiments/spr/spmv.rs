//! Sparse matrix-vector multiply, `y = A·x`, A in compressed sparse rows, generated: each row
//! has the same number of non-zeroes at uniformly random columns (sorted within the row), and
//! `x` is larger than the last-level cache, so the gathers `x[col]` miss. A unit of work is a
//! block of rows. The helper's precomputation slice for a block is the address stream of its
//! gathers: it loads the block's column indices and the `x` entries they name (and one value
//! per cache line), so those lines are near when the worker gets there.

use super::Kernel;
use std::hint::black_box;

/// A CSR matrix and the vector it multiplies.
pub struct Spmv {
    row_start: Vec<usize>,
    cols: Vec<u32>,
    values: Vec<f64>,
    x: Vec<f64>,
    block_rows: usize,
}

impl Spmv {
    /// `rows`×`cols` with `per_row` non-zeroes in each row, units of `block_rows` rows.
    pub fn generate(rows: usize, cols: usize, per_row: usize, block_rows: usize, seed: u64) -> Spmv {
        let cols = cols.clamp(1, u32::MAX as usize);
        let mut state = seed | 1;
        let mut next = move || {
            // xorshift64*: fast, and good enough to scatter columns.
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            state.wrapping_mul(0x2545_f491_4f6c_dd1d)
        };
        let mut row_start = Vec::with_capacity(rows + 1);
        let mut col_idx = Vec::with_capacity(rows * per_row);
        row_start.push(0);
        for _ in 0..rows {
            let from = col_idx.len();
            col_idx.extend((0..per_row).map(|_| ((next() >> 16) % cols as u64) as u32));
            col_idx[from..].sort_unstable();
            row_start.push(col_idx.len());
        }
        let values = (0..col_idx.len()).map(|k| 1.0 + (k % 13) as f64 / 16.0).collect();
        let x = (0..cols).map(|j| 1.0 / (1 + j % 17) as f64).collect();
        Spmv { row_start, cols: col_idx, values, x, block_rows: block_rows.max(1) }
    }

    /// Bytes of the matrix and the vector.
    pub fn bytes(&self) -> usize {
        self.row_start.len() * 8 + self.cols.len() * 4 + self.values.len() * 8 + self.x.len() * 8
    }

    fn rows(&self) -> usize {
        self.row_start.len() - 1
    }

    fn block(&self, unit: usize) -> std::ops::Range<usize> {
        let from = unit * self.block_rows;
        from..(from + self.block_rows).min(self.rows())
    }
}

impl Kernel for Spmv {
    type Out = Vec<f64>;

    fn fresh(&self) -> Vec<f64> {
        vec![0.0; self.rows()]
    }

    fn units(&self) -> usize {
        self.rows().div_ceil(self.block_rows)
    }

    fn compute(&self, y: &mut Vec<f64>, unit: usize) {
        for row in self.block(unit) {
            let (from, to) = (self.row_start[row], self.row_start[row + 1]);
            // One summation order, the serial one, so SPR's result is bit-equal.
            let mut sum = 0.0;
            for (v, &c) in self.values[from..to].iter().zip(&self.cols[from..to]) {
                sum += v * self.x[c as usize];
            }
            y[row] = sum;
        }
    }

    fn prefetch(&self, _out: usize, unit: usize) -> u64 {
        let range = self.block(unit);
        let (from, to) = (self.row_start[range.start], self.row_start[range.end]);
        let mut sink = 0.0;
        for &c in &self.cols[from..to] {
            sink += self.x[c as usize];
        }
        // Values stream in order: one load per 64-byte line brings the line.
        for k in (from..to).step_by(8) {
            sink += self.values[k];
        }
        black_box(sink).to_bits()
    }

    fn out_addr(_out: &Vec<f64>) -> usize {
        0
    }

    fn equal(a: &Vec<f64>, b: &Vec<f64>) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_every_row_and_the_product_is_right() {
        let m = Spmv::generate(10, 7, 3, 4, 42);
        assert_eq!(m.units(), 3);
        let mut y = m.fresh();
        for u in 0..m.units() {
            m.compute(&mut y, u);
        }
        for (row, got) in y.iter().enumerate() {
            let (f, t) = (m.row_start[row], m.row_start[row + 1]);
            let expected: f64 = (f..t).map(|k| m.values[k] * m.x[m.cols[k] as usize]).sum();
            assert!((got - expected).abs() < 1e-12);
            assert!(m.cols[f..t].windows(2).all(|w| w[0] <= w[1]) && m.cols[f..t].iter().all(|&c| c < 7));
        }
    }
}
