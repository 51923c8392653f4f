//! Lane-op throughput on one core: the reference's `semantics::apply` (first effect) against
//! the fast path's `apply` and `apply_batch`, per op family.
//!
//! Run: `cargo bench -p atomcts-fast --bench throughput` (optionally, after `--`, a time per
//! measurement in milliseconds and a substring of the family names to run). Each lane owns one memory value; every
//! pass applies the op once to each of 4096 lanes and writes the new value back.

use atomcts_fast::{apply, apply_batch};
use atomcts_reference::float::{FtzMode, Round};
use atomcts_reference::ir::{AtomicOp, Env};
use atomcts_reference::semantics;
use atomcts_reference::types::DataType;
use std::hint::black_box;
use std::time::{Duration, Instant};

const LANES: usize = 4096;

struct Family {
    name: &'static str,
    op: AtomicOp,
    ty: DataType,
    env: Env,
}

/// SplitMix64.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Memory values and operands a simulator would see: random integers; floats between 1 and
/// 2 in memory and small operands of both signs (a random walk that stays finite).
fn inputs(ty: DataType, rng: &mut Rng) -> (Vec<u64>, Vec<[u64; 2]>) {
    let f32v = |x: f64| u64::from((x as f32).to_bits());
    let unit = |r: &mut Rng| (r.next() >> 11) as f64 / (1u64 << 53) as f64;
    let mut olds = Vec::with_capacity(LANES);
    let mut srcs = Vec::with_capacity(LANES);
    for _ in 0..LANES {
        let (o, s0, s1) = match ty {
            DataType::F32 => {
                let o = f32v(1.0 + unit(rng));
                let s = f32v((unit(rng) - 0.5) * 1e-3);
                (o, s, 0)
            }
            DataType::F64 => (
                (1.0 + unit(rng)).to_bits(),
                ((unit(rng) - 0.5) * 1e-3).to_bits(),
                0,
            ),
            DataType::F16 => (
                0x3c00 | (rng.next() & 0x3ff),
                (rng.next() & 0x8000) | 0x1400 | (rng.next() & 0x3ff),
                0,
            ),
            DataType::BF16 => (
                0x3f80 | (rng.next() & 0x7f),
                (rng.next() & 0x8000) | 0x3a00 | (rng.next() & 0x7f),
                0,
            ),
            DataType::F16x2 => {
                // f16 1.0..2.0 in memory (0x3c00..0x3fff), operands +-2^-10..2^-9.
                let h = |r: &mut Rng| 0x3c00 | (r.next() & 0x3ff);
                let d = |r: &mut Rng| (r.next() & 0x8000) | 0x1400 | (r.next() & 0x3ff);
                (h(rng) | (h(rng) << 16), d(rng) | (d(rng) << 16), 0)
            }
            _ => {
                let o = rng.next() & 0xffff;
                (o, rng.next() & 0xffff, rng.next() & 0xffff)
            }
        };
        olds.push(o);
        srcs.push([s0, s1]);
    }
    (olds, srcs)
}

/// Lane-ops per second of `pass` (one pass = LANES lane-ops), measured over `budget`.
fn measure(budget: Duration, mut pass: impl FnMut()) -> f64 {
    pass(); // warm-up
    let start = Instant::now();
    let mut passes = 0u64;
    while start.elapsed() < budget {
        for _ in 0..8 {
            pass();
        }
        passes += 8;
    }
    (passes * LANES as u64) as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    let ms: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(300);
    let budget = Duration::from_millis(ms);
    // A non-numeric argument keeps the families whose name contains it.
    let filter: Option<String> = std::env::args()
        .skip(1)
        .find(|a| a.parse::<u64>().is_err() && !a.starts_with('-'));
    let rz = Env {
        round: Round::TowardZero,
        ..Env::default()
    };
    let ftz = Env {
        ftz: FtzMode::BOTH,
        ..Env::default()
    };
    let d = Env::default();
    let families = [
        Family {
            name: "u32 add",
            op: AtomicOp::Add,
            ty: DataType::U32,
            env: d,
        },
        Family {
            name: "s32 min",
            op: AtomicOp::Min,
            ty: DataType::S32,
            env: d,
        },
        Family {
            name: "u32 max",
            op: AtomicOp::Max,
            ty: DataType::U32,
            env: d,
        },
        Family {
            name: "u32 inc_bounded",
            op: AtomicOp::IncBounded,
            ty: DataType::U32,
            env: d,
        },
        Family {
            name: "u32 dec_bounded",
            op: AtomicOp::DecBounded,
            ty: DataType::U32,
            env: d,
        },
        Family {
            name: "u32 cas",
            op: AtomicOp::Cas,
            ty: DataType::U32,
            env: d,
        },
        Family {
            name: "u64 exch",
            op: AtomicOp::Exch,
            ty: DataType::U64,
            env: d,
        },
        Family {
            name: "f32 add RNE",
            op: AtomicOp::Add,
            ty: DataType::F32,
            env: d,
        },
        Family {
            name: "f32 add RNE FTZ",
            op: AtomicOp::Add,
            ty: DataType::F32,
            env: ftz,
        },
        Family {
            name: "f32 add RZ",
            op: AtomicOp::Add,
            ty: DataType::F32,
            env: rz,
        },
        Family {
            name: "f16x2 add RNE",
            op: AtomicOp::Add,
            ty: DataType::F16x2,
            env: d,
        },
        Family {
            name: "f16 add RNE",
            op: AtomicOp::Add,
            ty: DataType::F16,
            env: d,
        },
        Family {
            name: "bf16 add RNE",
            op: AtomicOp::Add,
            ty: DataType::BF16,
            env: d,
        },
        Family {
            name: "f64 add RNE",
            op: AtomicOp::Add,
            ty: DataType::F64,
            env: d,
        },
        Family {
            name: "f32 min",
            op: AtomicOp::Min,
            ty: DataType::F32,
            env: d,
        },
    ];
    println!("lane-ops/s on one core, {LANES} lanes per pass, {ms} ms per measurement");
    println!(
        "{:<18} {:>12} {:>12} {:>12} {:>9} {:>9}",
        "family", "reference", "fast apply", "fast batch", "apply/ref", "batch/ref"
    );
    let mut rng = Rng(0x5eed);
    for fam in &families {
        if filter
            .as_ref()
            .is_some_and(|f| !fam.name.contains(f.as_str()))
        {
            continue;
        }
        let (olds0, srcs) = inputs(fam.ty, &mut rng);
        let mut olds = olds0.clone();
        let mut rets = vec![0u64; LANES];
        let reference = measure(budget, || {
            let (op, ty, env) = black_box((fam.op, fam.ty, fam.env));
            for i in 0..LANES {
                if let Ok(e) = semantics::apply(op, ty, &env, olds[i], srcs[i]) {
                    olds[i] = e[0].new;
                    rets[i] = e[0].ret;
                }
            }
            black_box(&mut rets);
        });
        olds.copy_from_slice(&olds0);
        let fast = measure(budget, || {
            let (op, ty, env) = black_box((fam.op, fam.ty, fam.env));
            for i in 0..LANES {
                if let Ok(e) = apply(op, ty, &env, olds[i], srcs[i]) {
                    olds[i] = e.new;
                    rets[i] = e.ret;
                }
            }
            black_box(&mut rets);
        });
        olds.copy_from_slice(&olds0);
        let batch = measure(budget, || {
            let (op, ty, env) = black_box((fam.op, fam.ty, fam.env));
            let _ = apply_batch(op, ty, &env, &mut olds, &srcs, &mut rets);
            black_box(&mut rets);
        });
        println!(
            "{:<18} {:>10.1} M {:>10.1} M {:>10.1} M {:>8.1}x {:>8.1}x",
            fam.name,
            reference / 1e6,
            fast / 1e6,
            batch / 1e6,
            fast / reference,
            batch / reference
        );
    }
}
