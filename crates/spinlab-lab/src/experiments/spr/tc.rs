//! Transitive closure of a directed graph in dense representation, blocked (seed 001: 1600
//! vertices, 25000 edges, 16×16 blocks): Warshall's algorithm, `a[i][j] |= a[i][k] & a[k][j]`
//! for every k, done tile by tile as in blocked Floyd-Warshall. For each diagonal tile `kb`:
//! the tile itself, then its tile row and column (together one unit of work), then every other
//! tile row `I` (one unit each), whose tiles `(I, J)` take `(I, kb)` and `(kb, J)`.
//!
//! The matrix is stored tile by tile (a B×B tile is contiguous, one byte per entry), so a unit
//! touches whole lines. The helper's precomputation for a unit is the tiles it will update;
//! the worker writes the matrix meanwhile, so the helper only issues prefetch instructions (a
//! hint that reads nothing the language sees: no data race), never loads.

use super::Kernel;

/// The tile sides the kernel is built for.
pub const TILE_SIDES: [usize; 4] = [8, 16, 32, 64];

/// A graph's adjacency matrix, padded to whole tiles.
pub struct Closure {
    /// The input, tile by tile.
    adjacency: Vec<u8>,
    /// Vertices, padded to a multiple of `b` (padding vertices have no edges).
    n: usize,
    /// Tile side.
    b: usize,
    /// The units, in order.
    units: Vec<Unit>,
}

#[derive(Clone, Copy, Debug)]
enum Unit {
    /// Tile (kb, kb), then tile row and column kb.
    Pivot(usize),
    /// Tile row `row` against pivot `kb`.
    Row { kb: usize, row: usize },
}

impl Closure {
    /// A random graph: `vertices` vertices, `edges` edges (repeats allowed, no self loops
    /// unless there is one vertex), tiles of `b`×`b`: one of [`TILE_SIDES`].
    ///
    /// # Panics
    ///
    /// If `b` is not one of [`TILE_SIDES`].
    pub fn generate(vertices: usize, edges: usize, b: usize, seed: u64) -> Closure {
        assert!(TILE_SIDES.contains(&b), "tile side {b} is not one of {TILE_SIDES:?}");
        let vertices = vertices.max(1);
        let n = vertices.div_ceil(b) * b;
        let mut state = seed | 1;
        let mut next = move || {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            (state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 16) as usize
        };
        let mut c = Closure { adjacency: vec![0; n * n], n, b, units: Vec::new() };
        for _ in 0..edges {
            let from = next() % vertices;
            let mut to = next() % vertices;
            if to == from && vertices > 1 {
                to = (to + 1) % vertices;
            }
            let at = c.at(from, to);
            c.adjacency[at] = 1;
        }
        let tiles = n / b;
        for kb in 0..tiles {
            c.units.push(Unit::Pivot(kb));
            c.units.extend((0..tiles).filter(|&r| r != kb).map(|row| Unit::Row { kb, row }));
        }
        c
    }

    /// Vertices (padded).
    pub fn vertices(&self) -> usize {
        self.n
    }

    /// Where entry (i, j) lives.
    pub fn at(&self, i: usize, j: usize) -> usize {
        let (b, tiles) = (self.b, self.n / self.b);
        ((i / b) * tiles + j / b) * b * b + (i % b) * b + j % b
    }

    /// The input matrix, tile by tile.
    pub fn adjacency(&self) -> &[u8] {
        &self.adjacency
    }

    fn tile(&self, row: usize, col: usize) -> usize {
        (row * (self.n / self.b) + col) * self.b * self.b
    }

    /// Tile `c` |= tile `l` ⊗ tile `r` (boolean), k outermost so it is right in place when
    /// `c` is `l` or `r` (the pivot tile and its row and column).
    fn update(&self, m: &mut [u8], c: usize, l: usize, r: usize) {
        match self.b {
            8 => update_tile::<8>(m, c, l, r),
            16 => update_tile::<16>(m, c, l, r),
            32 => update_tile::<32>(m, c, l, r),
            _ => update_tile::<64>(m, c, l, r),
        }
    }

    /// The tiles a unit writes, with the two it reads from (for the helper).
    fn tiles_of(&self, unit: Unit) -> Vec<usize> {
        let tiles = self.n / self.b;
        match unit {
            Unit::Pivot(kb) => (0..tiles).flat_map(|t| [self.tile(kb, t), self.tile(t, kb)]).collect(),
            Unit::Row { kb, row } => (0..tiles).map(|t| self.tile(row, t)).chain([self.tile(row, kb)]).collect(),
        }
    }
}

/// [`Closure::update`] for tiles of side `B`: rows of a known length, so the OR of a row is a
/// few vector instructions.
#[inline]
fn update_tile<const B: usize>(m: &mut [u8], c: usize, l: usize, r: usize) {
    for k in 0..B {
        let mut rk = [0u8; B];
        rk.copy_from_slice(&m[r + k * B..r + k * B + B]);
        for i in 0..B {
            if m[l + i * B + k] != 0 {
                let row: &mut [u8; B] = (&mut m[c + i * B..c + i * B + B]).try_into().expect("a whole row");
                for (d, s) in row.iter_mut().zip(&rk) {
                    *d |= *s;
                }
            }
        }
    }
}

#[inline]
fn prefetch_line(addr: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 is a hint: it never faults, even on an invalid address, and reads
    // nothing in the abstract machine. SSE, which it needs, is part of x86_64.
    unsafe {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(addr as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr; // No portable prefetch: the helper only paces itself here.
}

impl Kernel for Closure {
    type Out = Vec<u8>;

    fn fresh(&self) -> Vec<u8> {
        self.adjacency.clone()
    }

    fn units(&self) -> usize {
        self.units.len()
    }

    fn compute(&self, m: &mut Vec<u8>, unit: usize) {
        let tiles = self.n / self.b;
        match self.units[unit] {
            Unit::Pivot(kb) => {
                let p = self.tile(kb, kb);
                self.update(m, p, p, p);
                for t in (0..tiles).filter(|&t| t != kb) {
                    let row = self.tile(kb, t);
                    self.update(m, row, p, row);
                    let col = self.tile(t, kb);
                    self.update(m, col, col, p);
                }
            }
            Unit::Row { kb, row } => {
                let left = self.tile(row, kb);
                for t in (0..tiles).filter(|&t| t != kb) {
                    self.update(m, self.tile(row, t), left, self.tile(kb, t));
                }
            }
        }
    }

    fn prefetch(&self, out: usize, unit: usize) -> u64 {
        let tile_bytes = self.b * self.b;
        let mut lines = 0;
        for t in self.tiles_of(self.units[unit]) {
            for offset in (0..tile_bytes).step_by(64) {
                prefetch_line(out + t + offset);
                lines += 1;
            }
        }
        lines
    }

    fn out_addr(out: &Vec<u8>) -> usize {
        out.as_ptr() as usize
    }

    fn equal(a: &Vec<u8>, b: &Vec<u8>) -> bool {
        a == b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Plain Warshall on a row-major copy, the reference.
    fn warshall(c: &Closure) -> Vec<u8> {
        let n = c.n;
        let mut a: Vec<u8> = (0..n * n).map(|x| c.adjacency[c.at(x / n, x % n)]).collect();
        for k in 0..n {
            for i in 0..n {
                if a[i * n + k] != 0 {
                    for j in 0..n {
                        a[i * n + j] |= a[k * n + j];
                    }
                }
            }
        }
        a
    }

    #[test]
    fn the_blocked_closure_equals_warshall() {
        for (v, e, b) in [(37, 60, 8), (50, 40, 16), (70, 300, 32), (5, 3, 16), (65, 100, 64)] {
            let c = Closure::generate(v, e, b, 7);
            let mut m = c.fresh();
            for u in 0..c.units() {
                c.compute(&mut m, u);
            }
            let expected = warshall(&c);
            let n = c.n;
            for i in 0..n {
                for j in 0..n {
                    assert_eq!(m[c.at(i, j)], expected[i * n + j], "{v} vertices, b {b}: ({i},{j})");
                }
            }
        }
    }
}
