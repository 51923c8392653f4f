//! Exhaustive sweeps of the 16-bit float adds: every one of the 65536 bit patterns as `old`,
//! against a sample of operands (random, edges, and partners that make ties and
//! cancellations), fast path against the reference.

mod common;

use atomcts_fast::apply;
use atomcts_reference::float::{Format, FtzMode, Round};
use atomcts_reference::ir::{AtomicOp, Env};
use atomcts_reference::types::DataType;
use common::*;

fn sweep(ty: DataType, f: Format, env: &Env, per_a: usize, seed: u64) -> u64 {
    let mut rng = Rng(seed);
    let edges = float_edges(f);
    let mut cases = 0;
    for a in 0..=0xffffu64 {
        for k in 0..per_a {
            let b = match k % 4 {
                0 => rng.next() & 0xffff,
                1 => rng.pick(&edges),
                _ => float_partner(&mut rng, f, a),
            };
            for op in [AtomicOp::Add, AtomicOp::Sub] {
                let fast = apply(op, ty, env, a, [b, 0]);
                let reference = reference_first(op, ty, env, a, [b, 0]);
                assert_eq!(fast, reference, "{op:?} {ty} {a:#06x} {b:#06x} {env:?}");
                cases += 1;
            }
        }
    }
    cases
}

#[test]
fn f16_add_nearest_even_all_old_values() {
    let n = sweep(DataType::F16, Format::F16, &Env::default(), 40, 0xf16);
    assert_eq!(n, 65536 * 40 * 2);
}

#[test]
fn bf16_add_nearest_even_all_old_values() {
    let n = sweep(DataType::BF16, Format::BF16, &Env::default(), 40, 0xbf16);
    assert_eq!(n, 65536 * 40 * 2);
}

#[test]
fn f16_and_bf16_add_toward_zero_with_ftz_all_old_values() {
    let rz = Env {
        round: Round::TowardZero,
        ..Env::default()
    };
    let rz_ftz = Env {
        ftz: FtzMode::BOTH,
        ..rz
    };
    for (ty, f) in [(DataType::F16, Format::F16), (DataType::BF16, Format::BF16)] {
        sweep(ty, f, &rz, 4, 0x12);
        sweep(ty, f, &rz_ftz, 2, 0x13);
    }
}
