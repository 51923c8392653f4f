//! Differential tests: the fast path against the reference model, bit for bit.

mod common;

use atomcts_fast::{apply, apply_batch, execute, execute_own};
use atomcts_reference::exec;
use atomcts_reference::float::{Format, FtzMode, Round};
use atomcts_reference::ir::{
    Access, AtomicOp, Compare, Dest, Env, Instr, Lowered, MemInstr, Misaligned, NanBits,
    OutOfRange, RegField, SameAddress, ShuffleInstr, Source, StaticWrite, Upper,
};
use atomcts_reference::outcome::{FaultClass, Outcome};
use atomcts_reference::state::{Reg, State};
use atomcts_reference::types::{DataType, ElemType, Space};
use common::*;

fn check(op: AtomicOp, ty: DataType, env: &Env, old: u64, src: [u64; 2]) {
    let fast = apply(op, ty, env, old, src);
    let reference = reference_first(op, ty, env, old, src);
    assert_eq!(
        fast, reference,
        "{op:?} {ty} old={old:#x} src={src:#x?} env={env:?}"
    );
}

/// Operands for one case: edge or random values, for floats often a partner that makes a tie
/// or a cancellation with the other operand.
fn operands(rng: &mut Rng, ty: DataType) -> (u64, [u64; 2]) {
    let old = value(rng, ty);
    let s0 = match ty.float_format() {
        Some(f) if ty != DataType::F16x2 && rng.below(3) == 0 => {
            float_partner(rng, f, old & f.mask())
        }
        _ => value(rng, ty),
    };
    // A compare-and-swap that compares equal now and then.
    let s0 = if rng.below(4) == 0 { old } else { s0 };
    (old, [s0, value(rng, ty)])
}

/// Every op x type x the environments the op reads (full product of the fields it reads, the
/// rest random), with seeded edge and random operands.
#[test]
fn apply_matches_the_reference_for_every_op_type_and_environment() {
    let mut rng = Rng(0x5eed_0001);
    let mut cases = 0u64;
    for &op in AtomicOp::ALL {
        for &ty in DataType::ALL {
            for env in envs_for(&mut rng, op) {
                for _ in 0..140 {
                    let (old, src) = operands(&mut rng, ty);
                    check(op, ty, &env, old, src);
                    cases += 1;
                }
            }
        }
    }
    println!("{cases} cases");
    assert!(cases > 300_000);
}

/// Every pair of edge values of every float format (and f16x2 halves), under environments
/// that change the answer on edges.
#[test]
fn apply_matches_the_reference_on_all_float_edge_pairs() {
    let mut rng = Rng(0x5eed_0002);
    let envs: Vec<Env> = [
        Env::default(),
        Env {
            round: Round::TowardZero,
            ..Env::default()
        },
        Env {
            ftz: FtzMode::BOTH,
            ftz_return: true,
            nan: NanBits::Canonical,
            ..Env::default()
        },
        Env {
            round: Round::TowardZero,
            ftz: FtzMode::OUTPUTS,
            compare: Compare::Numeric { daz: true },
            ..Env::default()
        },
    ]
    .into_iter()
    .chain((0..4).map(|_| random_env(&mut rng)))
    .collect();
    let mut cases = 0u64;
    for (ty, f) in [
        (DataType::F16, Format::F16),
        (DataType::BF16, Format::BF16),
        (DataType::F32, Format::F32),
        (DataType::F64, Format::F64),
    ] {
        let edges = float_edges(f);
        for env in &envs {
            for &a in &edges {
                for &b in &edges {
                    for op in [AtomicOp::Add, AtomicOp::Sub, AtomicOp::Min, AtomicOp::Max] {
                        check(op, ty, env, a, [b, 0]);
                    }
                    check(AtomicOp::Cas, ty, env, a, [b, 0x1234]);
                    cases += 5;
                    if ty == DataType::F16 {
                        check(
                            AtomicOp::Add,
                            DataType::F16x2,
                            env,
                            a | (b << 16),
                            [b | (a << 16), 0],
                        );
                        cases += 1;
                    }
                }
            }
        }
    }
    println!("{cases} cases");
    assert!(cases > 100_000);
}

/// Random op, type and environment from the full product, including op and type pairs the
/// reference rejects (errors must be equal too).
#[test]
fn apply_matches_the_reference_under_random_environments() {
    let mut rng = Rng(0x5eed_0003);
    for _ in 0..100_000 {
        let op = rng.pick(AtomicOp::ALL);
        let ty = rng.pick(DataType::ALL);
        let env = random_env(&mut rng);
        let (old, src) = operands(&mut rng, ty);
        check(op, ty, &env, old, src);
    }
}

#[test]
fn apply_batch_equals_apply_lane_by_lane() {
    let mut rng = Rng(0x5eed_0004);
    for _ in 0..3_000 {
        let op = rng.pick(AtomicOp::ALL);
        let ty = rng.pick(DataType::ALL);
        let env = random_env(&mut rng);
        let n = rng.below(9) as usize;
        let mut olds = Vec::new();
        let mut srcs = Vec::new();
        for _ in 0..n {
            let (o, s) = operands(&mut rng, ty);
            olds.push(o);
            srcs.push(s);
        }
        let mut rets = vec![0xdead; n];
        let mut batch = olds.clone();
        let r = apply_batch(op, ty, &env, &mut batch, &srcs, &mut rets);
        match apply(op, ty, &env, 0, [0, 0]) {
            Err(e) => {
                assert_eq!(r, Err(e));
                assert_eq!(batch, olds, "nothing touched on error");
            }
            Ok(_) => {
                assert_eq!(r, Ok(()));
                for i in 0..n {
                    let e = reference_first(op, ty, &env, olds[i], srcs[i]).unwrap();
                    assert_eq!(
                        (batch[i], rets[i]),
                        (e.new, e.ret),
                        "{op:?} {ty} lane {i} old={:#x} src={:#x?} env={env:?}",
                        olds[i],
                        srcs[i]
                    );
                }
            }
        }
    }
    // Slices of different lengths: an error, nothing touched.
    let mut olds = [1u64, 2];
    let mut rets = [0u64; 2];
    assert!(
        apply_batch(
            AtomicOp::Add,
            DataType::U32,
            &Env::default(),
            &mut olds,
            &[[1, 0]],
            &mut rets
        )
        .is_err()
    );
    assert_eq!(olds, [1, 2]);
}

// ---------------------------------------------------------------------------------------------
// execute

const GLOBAL_BASE: u64 = 0x1000;
const MEM_LEN: u64 = 64;

fn random_state(rng: &mut Rng) -> State {
    let lanes = 1 + rng.below(6) as u32;
    let mut s = State::new(lanes);
    if rng.below(40) == 0 {
        // Inconsistent: the model must refuse it (BadState).
        s.active.push(true);
    }
    s.global.alloc(GLOBAL_BASE, MEM_LEN).unwrap();
    s.shared.alloc(0, MEM_LEN).unwrap();
    for k in 0..MEM_LEN / 8 {
        let ty = rng.pick(&[DataType::U64, DataType::F64, DataType::F32, DataType::F16x2]);
        let lo = value(rng, ty);
        let hi = if ty.bits() == 32 {
            value(rng, ty) << 32
        } else {
            0
        };
        s.global.write(GLOBAL_BASE + 8 * k, 8, lo | hi);
        s.shared.write(8 * k, 8, rng.next());
    }
    let types = [
        ElemType::B32,
        ElemType::UD,
        ElemType::UQ,
        ElemType::W,
        ElemType::HF,
        ElemType::F,
        ElemType::DF,
        ElemType::BOOL,
    ];
    for name in ["R0", "R1", "R2", "R3", "P0"] {
        let ty = if name == "P0" {
            ElemType::BOOL
        } else {
            rng.pick(&types)
        };
        let n = match rng.below(40) {
            0 => lanes as usize - 1,
            _ => lanes as usize,
        };
        let elems = (0..n).map(|_| rng.next() & ty.mask()).collect();
        s.regs.insert(name.to_string(), Reg { ty, elems });
    }
    s
}

fn random_field(rng: &mut Rng, lanes: u32, lo: u32, bits: u32) -> RegField {
    let width = rng.pick(&[16u32, 32, 64]);
    let beyond = u64::from(rng.below(30) == 0);
    RegField {
        // R4 is undeclared unless the lowering declares it: a model error otherwise.
        name: if rng.below(25) == 0 {
            "R4".to_string()
        } else {
            rng.pick(&["R0", "R1", "R2", "R3"]).to_string()
        },
        idx: rng.below(u64::from(lanes) + beyond) as u32,
        lo,
        bits,
        upper: match rng.below(4) {
            0 => Upper::Keep,
            1 => Upper::Zero { width },
            2 => Upper::Sign { width },
            _ => Upper::Unspecified { width },
        },
    }
}

fn random_dest(rng: &mut Rng, lanes: u32, ty: DataType) -> Dest {
    let w = ty.bits();
    match rng.below(5) {
        0 => Dest::None,
        1 if w == 64 => Dest::Fields(vec![
            random_field(rng, lanes, 0, 32),
            random_field(rng, lanes, 0, 32),
        ]),
        1 | 2 => {
            let lo = if w <= 32 {
                rng.pick(&[0u32, 0, 16, 32])
            } else {
                0
            };
            Dest::Fields(vec![random_field(rng, lanes, lo.min(64 - w), w)])
        }
        3 => Dest::Fields(vec![random_field(rng, lanes, 0, 16)]),
        _ => Dest::CasWeak {
            ok: if rng.bool() {
                Some(RegField {
                    name: "P0".into(),
                    idx: rng.below(u64::from(lanes)) as u32,
                    lo: 0,
                    bits: 1,
                    upper: Upper::Keep,
                })
            } else {
                None
            },
            expected: random_field(rng, lanes, 0, w.min(32)),
        },
    }
}

fn random_mem(rng: &mut Rng, lanes: u32) -> MemInstr {
    let op = rng.pick(AtomicOp::ALL);
    let ty = rng.pick(DataType::ALL);
    let space = if rng.below(3) == 0 {
        Space::Shared
    } else {
        Space::Global
    };
    let base = if space == Space::Global {
        GLOBAL_BASE
    } else {
        0
    };
    let bytes = ty.bytes();
    let n = 1 + rng.below(2 * u64::from(lanes)) as usize;
    let mut accesses = Vec::new();
    for i in 0..n {
        // A few addresses, so that lanes hit the same one.
        let mut addr = base + bytes * rng.below(3);
        match rng.below(12) {
            0 => addr += 1 + rng.below(bytes - 1), // misaligned
            1 => addr = base + MEM_LEN + bytes * rng.below(3), // past the end
            2 => addr = base + MEM_LEN - bytes / 2, // straddles the end, misaligned
            3 => addr = base.wrapping_sub(bytes),  // before the start
            _ => {}
        }
        accesses.push(Access {
            lane: (i as u32) % lanes,
            addr,
            src: [value(rng, ty), value(rng, ty)],
            dst: random_dest(rng, lanes, ty),
            fault: if rng.below(30) == 0 {
                Some(FaultClass::InvalidAddressSpace)
            } else {
                None
            },
        });
    }
    MemInstr {
        op,
        ty,
        space,
        env: random_env(rng),
        misaligned: rng.pick(&[
            Misaligned::Fault,
            Misaligned::MaskLowBits,
            Misaligned::MaskLowBits,
            Misaligned::Unspecified,
        ]),
        out_of_range: rng.pick(&[
            OutOfRange::Fault,
            OutOfRange::ReadZeroDropWrite,
            OutOfRange::ReadZeroDropWrite,
            OutOfRange::Unspecified,
        ]),
        same_address: if rng.bool() {
            SameAddress::AnyOrder
        } else {
            SameAddress::ProgramOrder
        },
        accesses,
    }
}

fn random_shuffle(rng: &mut Rng, lanes: u32) -> ShuffleInstr {
    let l = u64::from(lanes);
    let extra = u32::from(rng.below(8) == 0);
    ShuffleInstr {
        data: rng.pick(&["R0", "R1", "R0", "R1", "R4"]).to_string(),
        fill: match rng.below(3) {
            0 => None,
            1 => Some("R2".into()),
            _ => Some(rng.pick(&["R3", "R3", "R3", "R9"]).into()),
        },
        dst: rng.pick(&["R2", "R5", "R6"]).to_string(),
        lanes: (0..lanes + extra)
            .map(|lane| {
                let src = match rng.below(4) {
                    0 => Source::Undefined,
                    1 => Source::Fill(rng.below(l + 2) as u32),
                    _ => Source::Data(rng.below(l + 2) as u32),
                };
                (lane, src)
            })
            .collect(),
    }
}

fn random_lowered(rng: &mut Rng, lanes: u32) -> Lowered {
    let instr = if rng.below(5) == 0 {
        Instr::Shuffle(random_shuffle(rng, lanes))
    } else {
        Instr::Mem(random_mem(rng, lanes))
    };
    let writes = (0..rng.below(3))
        .map(|_| (rng.below(20) == 0, rng.next()))
        .collect::<Vec<_>>()
        .into_iter()
        .map(|(beyond, _)| StaticWrite {
            name: rng
                .pick(&["P0", "R1", "R1", "R1", "R1", "R4", "R4", "R7"])
                .to_string(),
            idx: rng.below(u64::from(lanes) + u64::from(beyond)) as u32,
            value: rng.next(),
        })
        .collect();
    let declare = if rng.bool() {
        vec![(
            "R4".to_string(),
            Reg {
                ty: ElemType::B32,
                elems: vec![0; lanes as usize],
            },
        )]
    } else {
        Vec::new()
    };
    Lowered {
        instr,
        writes,
        declare,
    }
}

/// Random lowered instructions (memory ops of every op and type with several lanes on one
/// address, misaligned and out-of-range addresses under each policy, every Dest and Upper
/// variant, SIMD-group shuffles, static writes, declarations) on random states: the same
/// outcome, open fields and errors as the reference, and the fast run itself fails exactly
/// where the reference does.
#[test]
fn execute_matches_the_reference() {
    let mut rng = Rng(0x5eed_0005);
    let mut kinds = std::collections::BTreeMap::<&str, u32>::new();
    for _ in 0..20_000 {
        let state = random_state(&mut rng);
        let lowered = random_lowered(&mut rng, state.lanes);
        let fast = execute(&lowered, &state);
        let reference = exec::execute(&lowered, &state);
        assert_eq!(fast, reference, "{lowered:#?}\n{state:#?}");
        match (execute_own(&lowered, &state), &reference) {
            (Ok(a), Ok(b)) => assert_eq!(&a, b),
            (Err(None), Err(_)) => {}
            (own, _) => panic!("fast run {own:?} where the reference gives {reference:?}"),
        }
        let kind = match &reference {
            Ok(Outcome::Completed(c)) if !c.open.is_empty() => "completed_open",
            Ok(o) => o.kind(),
            Err(e) => {
                if std::env::var("SHOW_ERRORS").is_ok() {
                    println!("{e}");
                }
                "error"
            }
        };
        *kinds.entry(kind).or_default() += 1;
    }
    println!("{kinds:?}");
    for k in [
        "completed",
        "completed_open",
        "fault",
        "unspecified",
        "error",
    ] {
        assert!(kinds.get(k).copied().unwrap_or(0) > 200, "{k}: {kinds:?}");
    }
}
