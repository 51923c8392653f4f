//! Contended cases for `atomcts fuzz` (issue 31 point 3): concurrent cases (FORMAT.md,
//! "Concurrent cases") of several SASS ATOM instructions at once, each in its own warp, on one
//! or a few words: mixed ops across instructions on one word, mixed widths across words
//! (a 32-bit, a 64-bit and a float word side by side), and compare-and-swap retry loops
//! (FORMAT.md, "Compare-and-swap loops") of several iterations against the other ops. Returns
//! are kept (`R0`, except in stress cases below): every iteration's returned value is judged, and every operation's
//! return fixes its effect, so a wrong answer is refuted by the walks (FORMAT.md, "Concurrent
//! cases", stage 3) instead of a search that may run out of its budget (a case of 92
//! operations with 64 unobserved decrements took the default budget, 50 s, to be undecided).
//!
//! One concurrent case in [`STRESS_ONE_IN`] is a stress case instead ([`gen_stress`]): the lost
//! updates of real implementations (docs/findings.md numba-cudasim-4, swiftshader-1) show only
//! when many read-modify-writes of different kinds overlap in time, which a few dozen never do.
//! Its instructions discard their returns (`RZ`) and are adds beside operations that change no
//! value (a max of 0, a min of all ones, an and of all ones, an or or xor of 0, a
//! compare-exchange of a value for itself), so every order ends at the initial value plus the
//! adds, which the reference folds in one pass however many operations there are.
//!
//! Such a case expects nothing of its own (`expect = {}`): the reference's checker across
//! instructions (`atomcts_reference::concurrent`) judges the whole observation, as for the
//! corpus's concurrent cases. Reproducible from the [`Entropy`] like every generated case.

use crate::fuzzing::draft::{GenCase, GenInstr};
use crate::fuzzing::generate::{Entropy, gen_case, hot_float};
use atomcts_reference::concurrent::{CasLoop, LOOP_UPDATES};
use atomcts_reference::float::Format;
use atomcts_reference::ir::AtomicOp;
use atomcts_reference::program::Dialect;
use toml::{Table, Value};

/// One in this many cases of the fuzz stream is a concurrent case.
pub const CONCURRENT_ONE_IN: u64 = 6;

/// The most read-modify-writes one generated instruction makes (lanes times iterations): the
/// judge decides every honest answer at once (the serial order is a candidate schedule), and
/// a wrong one is refuted by the walks.
pub const MAX_OPS_PER_INSTR: u32 = 32;

/// One in this many concurrent cases is a stress case ([`gen_stress`]).
pub const STRESS_ONE_IN: u64 = 4;

/// The next case of the fuzz stream: a concurrent case one time in [`CONCURRENT_ONE_IN`],
/// else a single instruction ([`gen_case`]).
pub fn gen_fuzz_case(e: &mut dyn Entropy) -> GenCase {
    if e.chance(1, CONCURRENT_ONE_IN) {
        gen_concurrent(e)
    } else {
        gen_case(e)
    }
}

/// A word of the shared memory and the SASS size its instructions use.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Word {
    /// `u32` at 0x1000: `.U32` integer ops.
    W32,
    /// `u64` at 0x1008: `.U64` integer ops.
    W64,
    /// `f32` at 0x1010: `.F32.FTZ.RN` adds.
    F32,
}

impl Word {
    fn addr(self) -> u64 {
        match self {
            Word::W32 => 0x1000,
            Word::W64 => 0x1008,
            Word::F32 => 0x1010,
        }
    }
    fn bits(self) -> u32 {
        if self == Word::W64 { 64 } else { 32 }
    }
}

fn pick<T: Copy>(e: &mut dyn Entropy, xs: &[T]) -> T {
    xs[e.below(xs.len() as u64) as usize]
}

/// An integer of `bits` bits: small, at a bound, or random.
fn int_value(e: &mut dyn Entropy, bits: u32) -> u64 {
    let m = atomcts_reference::types::mask(bits);
    match e.below(4) {
        0 => e.below(8),
        1 => pick(e, &[m, m >> 1, (m >> 1) + 1, 100, 1000]),
        _ => e.next_u64() & m,
    }
}

/// A generated concurrent case of 2 to 4 SASS instructions (a stress case one time in
/// [`STRESS_ONE_IN`]).
pub fn gen_concurrent(e: &mut dyn Entropy) -> GenCase {
    if e.chance(1, STRESS_ONE_IN) {
        return gen_stress(e);
    }
    let hot = pick(e, &[Word::W32, Word::W32, Word::W32, Word::W64, Word::F32]);
    let mut mem = Table::new();
    let typed = |bits: u32, v: u64| Value::String(format!("u{bits}:{v:#x}"));
    mem.insert("0x1000".into(), typed(32, int_value(e, 32)));
    mem.insert("0x1004".into(), typed(32, 0));
    mem.insert("0x1008".into(), typed(64, int_value(e, 64)));
    mem.insert("0x1010".into(), typed(32, hot_float(e, Format::F32)));
    let mut given = Table::new();
    given.insert("mem".into(), Value::Table(mem));
    let n = 2 + e.below(3);
    let instrs: Vec<GenInstr> = (0..n)
        .map(|_| {
            // Most instructions on the hot word; some on another word (mixed widths).
            let word = if e.chance(3, 4) {
                hot
            } else {
                pick(e, &[Word::W32, Word::W64, Word::F32])
            };
            instr(e, word)
        })
        .collect();
    sass_concurrent(given, instrs)
}

/// A stress case: 2 or 3 SASS instructions on the `u32` word at 0x1000, 8 to 32 lanes of 16 to
/// 64 iterations each, returns discarded: an add, then adds or operations of other kinds that
/// change no value, so that the final value is the initial one plus every add in every order,
/// and one lost anywhere shows.
pub fn gen_stress(e: &mut dyn Entropy) -> GenCase {
    let mut mem = Table::new();
    let u32v = |v: u64| Value::String(format!("u32:{v:#x}"));
    mem.insert("0x1000".into(), u32v(int_value(e, 32)));
    let mut given = Table::new();
    given.insert("mem".into(), Value::Table(mem));
    let n = 2 + e.below(2);
    let instrs: Vec<GenInstr> = (0..n)
        .map(|k| {
            let mut regs = Table::new();
            regs.insert("R2".into(), Value::Integer(0x1000));
            let (asm, operands): (&str, &[u64]) = if k == 0 {
                ("ATOM.ADD.U32 RZ, [R2], R4", &[])
            } else {
                pick(
                    e,
                    &[
                        ("ATOM.ADD.U32 RZ, [R2], R4", &[][..]),
                        ("ATOM.MAX.U32 RZ, [R2], R4", &[0][..]),
                        ("ATOM.MIN.U32 RZ, [R2], R4", &[0xffff_ffff][..]),
                        ("ATOM.AND.U32 RZ, [R2], R4", &[0xffff_ffff][..]),
                        ("ATOM.OR.U32 RZ, [R2], R4", &[0][..]),
                        ("ATOM.XOR.U32 RZ, [R2], R4", &[0][..]),
                        ("ATOM.CAS.U32 RZ, [R2], R4, R5", &[][..]),
                    ],
                )
            };
            let r4 = match operands.first() {
                Some(v) => *v,
                // An add: small (a count) or any value (wrapping).
                None if asm.contains(".ADD") => {
                    if e.chance(1, 2) {
                        1 + e.below(16)
                    } else {
                        e.next_u64() & 0xffff_ffff
                    }
                }
                // A compare-exchange of a value for itself: it changes nothing, and fails
                // unless memory holds it.
                None => int_value(e, 32),
            };
            regs.insert("R4".into(), u32v(r4));
            if asm.contains("R5") {
                regs.insert("R5".into(), u32v(r4));
            }
            GenInstr {
                asm: asm.to_string(),
                lanes: pick(e, &[8u32, 16, 32]),
                iterations: pick(e, &[16u32, 32, 64]),
                given: regs,
                cas_loop: None,
            }
        })
        .collect();
    sass_concurrent(given, instrs)
}

/// The concurrent SASS case of `instrs` on the state `given`.
fn sass_concurrent(given: Table, instrs: Vec<GenInstr>) -> GenCase {
    let asm: Vec<&str> = instrs.iter().map(|i| i.asm.as_str()).collect();
    GenCase {
        dialect: Dialect::Sass,
        asm: asm.join(" || "),
        lanes: 1,
        given,
        concurrent: instrs,
        edge: false,
    }
}

/// One instruction on `word`: an op of the word's type, its lanes and iterations.
fn instr(e: &mut dyn Entropy, word: Word) -> GenInstr {
    let lanes = pick(e, &[1u32, 2, 4, 8, 16, 32]);
    let iterations = pick(e, &[1u32, 1, 2, 4, 8])
        .min(MAX_OPS_PER_INSTR / lanes)
        .max(1);
    let bits = word.bits();
    let reg = |v: u64| Value::String(format!("u{bits}:{v:#x}"));
    let mut given = Table::new();
    given.insert("R2".into(), Value::Integer(word.addr() as i64));
    let (op, size) = match word {
        Word::W32 => (
            pick(
                e,
                &[
                    "ADD", "MIN", "MAX", "AND", "OR", "XOR", "EXCH", "INC", "DEC", "CAS", "CAS",
                ],
            ),
            "U32",
        ),
        Word::W64 => (
            pick(
                e,
                &[
                    "ADD", "MIN", "MAX", "AND", "OR", "XOR", "EXCH", "CAS", "CAS",
                ],
            ),
            "U64",
        ),
        Word::F32 => ("ADD", "F32.FTZ.RN"),
    };
    if op == "CAS" {
        // A compare-and-swap retry loop: its first compare the word's likely value or 0.
        let update = pick(e, LOOP_UPDATES);
        let operand = match update {
            AtomicOp::Add | AtomicOp::Sub => 1 + e.below(16),
            _ => int_value(e, bits),
        };
        given.insert("R4".into(), reg(int_value(e, bits)));
        let (c, asm) = if bits == 64 {
            ("R6", format!("ATOM.CAS.{size} R0, [R2], R4, R6"))
        } else {
            ("R5", format!("ATOM.CAS.{size} R0, [R2], R4, R5"))
        };
        given.insert(c.into(), reg(0));
        return GenInstr {
            asm,
            lanes,
            iterations,
            given,
            cas_loop: Some(CasLoop { update, operand }),
        };
    }
    let operand = match (word, op) {
        (Word::F32, _) => hot_float(e, Format::F32),
        (_, "INC" | "DEC") => pick(e, &[0, 1, 5, 1000, 0xFFFF_FFFF]),
        _ => int_value(e, bits),
    };
    given.insert("R4".into(), reg(operand));
    GenInstr {
        asm: format!("ATOM.{op}.{size} R0, [R2], R4"),
        lanes,
        iterations,
        given,
        cas_loop: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::results::{Options, Status};
    use crate::run::run_case;
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    fn stream(seed: u64, n: usize) -> Vec<GenCase> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..n).map(|_| gen_concurrent(&mut rng)).collect()
    }

    /// The same seed gives the same cases; every case loads as the corpus's concurrent cases
    /// do (its TOML form, `atomcts fuzz`'s finding files, too) and passes on the fast path,
    /// judged by the reference's checker across instructions, never undecided.
    #[test]
    fn concurrent_cases_are_reproducible_and_pass_on_the_fast_path() {
        let (a, b) = (stream(5, 200), stream(5, 200));
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.asm, y.asm);
            assert_eq!(x.given, y.given);
        }
        let p = atomcts_reference::Profile::default();
        let opts = Options {
            profile: p.clone(),
            race_budget: atomcts_reference::race::DEFAULT_BUDGET,
            cases_arg: String::new(),
            adapter_arg: String::new(),
        };
        let mut loops = 0;
        for (k, gc) in a.iter().enumerate() {
            let id = format!("fuzz/seed5::case_{k}");
            let case = gc.to_case(
                id.clone(),
                std::path::Path::new("fuzz"),
                "test".into(),
                Some(Table::new()),
            );
            assert!(case.is_concurrent());
            let r = run_case(&case, &mut atomcts_adapters::FastAdapter, &opts);
            assert_eq!(r.status, Status::Pass, "{}: {:?}", gc.asm, r.findings);
            // The file form loads to the same instructions.
            let t = crate::fuzzing::generate::case_table("c", "cite", gc, &p).unwrap();
            let text = crate::fuzzing::generate::file_text(Dialect::Sass, "", &[t]).unwrap();
            let l = crate::corpus::case::parse_file(
                std::path::Path::new(""),
                std::path::Path::new("f.toml"),
                text,
            );
            assert!(l.errors.is_empty(), "{:?}", l.errors);
            let c = &l.cases[0];
            assert_eq!(c.asm, gc.asm);
            assert_eq!(c.concurrent.len(), gc.concurrent.len());
            for (x, y) in c.concurrent.iter().zip(&gc.concurrent) {
                assert_eq!((x.lanes, x.iterations), (y.lanes, y.iterations));
                assert_eq!(x.cas_loop.as_ref().map(|l| l.0), y.cas_loop);
            }
            loops += gc
                .concurrent
                .iter()
                .filter(|i| i.cas_loop.is_some())
                .count();
        }
        assert!(loops > 50, "{loops}");
    }
}
