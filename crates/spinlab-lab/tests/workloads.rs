//! Every active workload's checksum against a reference implementation written the plain way:
//! closed forms for the instruction blocks, a walk of the links for the chases, row-major
//! loops for the products, the standard library's sort, and a true 2-D table of vectors for
//! the hash.

use spinlab_lab::workloads::multiple::{self, fold, hash32, Hash, MbvFp, MbvInt, Sort, MATCH_MASK, SLOTS};
use spinlab_lab::workloads::single::{self, Chase, BLOCK, STEP};
use spinlab_lab::workloads::{Active, CacheSizes, Rng, Sizes, Workload, SEED};

#[test]
fn add_is_512_additions_per_unit_on_four_registers() {
    for units in [0u64, 1, 3, 1000] {
        let per_register = STEP.wrapping_mul(units * BLOCK / 4);
        let seed = 42u64;
        let expected = [seed, seed ^ 1, seed ^ 2, seed ^ 3]
            .iter()
            .fold(0u64, |acc, r| acc.wrapping_add(r.wrapping_add(per_register)));
        assert_eq!(single::add(units, seed), expected, "{units} units");
    }
}

#[test]
fn mul_is_512_multiplications_per_unit_on_four_registers() {
    for units in [0u64, 1, 2, 77] {
        let seed = 40u64;
        let expected = [seed | 1, seed | 3, seed | 5, seed | 7].iter().fold(0u64, |acc, &r| {
            let mut x = r;
            for _ in 0..units * BLOCK / 4 {
                x = x.wrapping_mul(STEP);
            }
            acc.wrapping_add(x)
        });
        assert_eq!(single::mul(units, seed), expected, "{units} units");
    }
}

#[test]
fn branch_counts_512_taken_branches_per_unit() {
    assert_eq!(single::branch(0), 0);
    assert_eq!(single::branch(5), 5 * 512);
}

#[test]
fn chases_visit_every_line_in_one_cycle() {
    for bytes in [128u64, 4096, 16 << 10] {
        let chase = Chase::new(bytes, 9);
        let lines = chase.lines();
        assert_eq!(lines as u64, bytes / 64);
        let mut seen = vec![false; lines];
        let mut i = 0usize;
        for _ in 0..lines {
            assert_eq!(i % 8, 0, "links point at the start of a line");
            assert!(!seen[i / 8], "line {} visited twice", i / 8);
            seen[i / 8] = true;
            i = chase.next[i];
        }
        assert_eq!(i, 0, "the walk returns to the start after every line");
        // Reference: follow the links one by one.
        let units = 3;
        let mut j = 0usize;
        for _ in 0..units * BLOCK {
            j = chase.next[j];
        }
        assert_eq!(chase.walk(units), j as u64 + units * BLOCK);
    }
}

#[test]
fn mbv_int_computes_the_product_whatever_order_it_walks_in() {
    let mut m = MbvInt::with_shape(7, 48, 3);
    let mut y = vec![0u64; m.rows];
    for (r, y) in y.iter_mut().enumerate() {
        for c in 0..m.cols {
            *y = y.wrapping_add(m.matrix[r * m.cols + c] as u64 * m.vector[c] as u64);
        }
    }
    let expected = y.iter().fold(0, |acc, &v| fold(acc, v));
    assert_eq!(m.run(), expected);
    assert_ne!(m.row_order, (0..7).collect::<Vec<u32>>(), "rows are visited out of order");
    let big = MbvInt::new(1 << 20, 1);
    assert!(big.rows * big.cols * 4 <= 1 << 20 && big.cols.is_multiple_of(16));
}

#[test]
fn mbv_fp_computes_the_product() {
    let mut m = MbvFp::with_shape(5, 9, 4);
    let mut expected = 0u64;
    for r in 0..m.rows {
        let mut s = 0.0f64;
        for c in 0..m.cols {
            s += m.matrix[r * m.cols + c] * m.vector[c];
        }
        expected = fold(expected, s.to_bits());
    }
    assert_eq!(m.run(), expected);
}

#[test]
fn sort_sorts_like_the_standard_library() {
    let mut s = Sort::new(4096, 5);
    let mut reference = s.input.clone();
    reference.sort_unstable();
    let expected = reference.iter().fold(0, |acc, &v| fold(acc, v as u64));
    assert_eq!(s.run(), expected);
    for mut v in [vec![], vec![1], vec![2, 1], vec![3, 3, 3], vec![5, 1, 4, 1, 5, 9, 2, 6, 5, 3]] {
        let mut r = v.clone();
        r.sort_unstable();
        multiple::quicksort(&mut v);
        assert_eq!(v, r);
    }
}

/// The hash benchmark written the plain way: a vector of buckets, each a vector of numbers.
fn hash_reference(buckets: usize, units: u64, seed: u64) -> u64 {
    let mut table: Vec<Vec<u32>> = vec![Vec::new(); buckets];
    let mut rng = Rng::new(seed);
    let mut acc = 0u64;
    for _ in 0..units * multiple::INSERTS_PER_UNIT {
        let x = (rng.next_u64() as u32) | 1;
        let h = hash32(x);
        let b = h as usize % buckets;
        let bucket = &mut table[b];
        let code = if let Some(s) = bucket.iter().position(|&v| v & MATCH_MASK == x & MATCH_MASK) {
            s as u64
        } else if bucket.len() < SLOTS {
            bucket.push(x);
            0x100 | (bucket.len() - 1) as u64
        } else {
            let s = (h >> 28) as usize;
            bucket[s] = x;
            0x200 | s as u64
        };
        acc = fold(acc, (b as u64) << 12 | code);
    }
    acc
}

#[test]
fn hash_inserts_like_a_plain_two_dimensional_table() {
    // Small tables fill up, so matches, stores and evictions all happen.
    for bytes in [64u64, 4096, 1 << 16] {
        let mut h = Hash::new(bytes);
        assert_eq!(h.buckets % 2, 1);
        assert_eq!(h.run(2, 77), hash_reference(h.buckets, 2, 77), "{bytes} bytes");
        assert_eq!(h.run(2, 77), hash_reference(h.buckets, 2, 77), "the table is cleared per call");
    }
}

#[test]
fn every_workload_runs_through_active_with_the_reference_checksum() {
    let caches = CacheSizes { l1d: 2 << 10, l2: 8 << 10, llc: 32 << 10 };
    let sizes = Sizes::for_caches(caches);
    for w in Workload::ALL {
        let mut a = Active::new(w, &sizes, 2);
        let got = a.run();
        let expected = match w {
            Workload::Add => single::add(2, SEED),
            Workload::Mul => single::mul(2, SEED),
            Workload::Branch => single::branch(2),
            Workload::L1 => Chase::new(sizes.l1_bytes, SEED).walk(2),
            Workload::L2 => Chase::new(sizes.l2_bytes, SEED).walk(2),
            Workload::MbvInt => {
                let one = MbvInt::new(sizes.mbv_int_bytes, SEED).run();
                one.rotate_left(1) ^ one
            }
            Workload::MbvFp => {
                let one = MbvFp::new(sizes.mbv_fp_bytes, SEED).run();
                one.rotate_left(1) ^ one
            }
            Workload::Sort => {
                let one = Sort::new(sizes.sort_bytes, SEED).run();
                one.rotate_left(1) ^ one
            }
            Workload::Hash => {
                let h = Hash::new(sizes.hash_bytes);
                hash_reference(h.buckets, 2, SEED)
            }
        };
        // Two units of a product or a sort: `Active` rotates before combining.
        assert_eq!(got, expected, "{w}");
        assert_ne!(got, 0, "{w}");
    }
}

#[test]
fn calibration_picks_at_least_one_unit() {
    let sizes = Sizes::for_caches(CacheSizes { l1d: 2 << 10, l2: 8 << 10, llc: 32 << 10 });
    let mut a = Active::new(Workload::Add, &sizes, 1);
    a.calibrate(std::time::Duration::from_micros(200));
    assert!(a.units() >= 1);
    let mut slow = Active::new(Workload::MbvFp, &sizes, 1);
    slow.calibrate(std::time::Duration::from_nanos(1));
    assert_eq!(slow.units(), 1);
}
