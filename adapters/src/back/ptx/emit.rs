//! Emit: a [`Plan`] -> one PTX kernel, one thread per IR access in one thread block.
//!
//! The `atom` is the one with exactly the op's semantics (PTX ISA 9.0, "Parallel
//! Synchronization and Communication Instructions: atom"): bounded `atom.inc.u32` /
//! `atom.dec.u32` (the SASS/CUDA INC/DEC of ambiguity A10), `atom.cas.b32/.b64` (bitwise
//! compare, A9), `atom.exch`, `atom.add.f32` (round to nearest even; on global memory it
//! flushes subnormal inputs and results, which is SASS `.F32.FTZ.RN`, A2; on shared memory it
//! keeps them), `atom.add.noftz.f16x2` (subnormals kept, the table's `.F16x2.RN`, A1),
//! `atom.add.f64`, 64-bit `atom.min/.max.u64/.s64`, and f16x2 min/max as `atom.v2.f16.min/.max.noftz`
//! (sm_90; atomic per half, so only where no two threads share an address). Ops with no
//! exact `atom` are not applicable, never emulated: subtract, the wrapping vISA INC/DEC and
//! PREDEC, a numeric compare-and-swap, 16-bit atomics, plain stores, float min/max other than
//! f16x2, a float add whose flushing or rounding the instruction does not have.
//!
//! The kernel text depends only on the op, the datum type, the space and (for shared memory)
//! the buffer size; the per-thread data (buffer offset, operands) come in a buffer, so one
//! kernel serves every case of its shape. Parameters: `mem` (the flat buffer of the plan's
//! space), `items` (three u64 per thread: offset, src0, src1), `old` (one u64 per thread: the
//! returned value, zero-extended), `n` (threads that run the op), `bytes` (the flat buffer's
//! size, for the copies in and out of shared memory).

use crate::plan::{NotApplicable, Plan};
use atomcts_reference::float::FtzMode;
use atomcts_reference::float::Round;
use atomcts_reference::ir::{AtomicOp, Compare};
use atomcts_reference::types::{DataType, Space};
use std::fmt::Write as _;

/// The kernel's entry point.
pub const KERNEL_NAME: &str = "atomcts_case";

/// The largest static shared array a kernel may declare (48 KiB, every target).
pub const MAX_SHARED: u64 = 48 * 1024;

/// The most threads of one block (every target since sm_20).
pub const MAX_THREADS: usize = 1024;

/// A deliberately wrong `atom`, for checking that the tests catch an emitter bug
/// (`ATOMCTS_PTX_PLANT`); never set in normal runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Plant {
    /// No planted bug.
    #[default]
    None,
    /// `atom.max` where `atom.min` is meant: well-formed PTX with the wrong semantics (caught
    /// by decoding the sm_50 ATOM word ptxas makes of it).
    MinAsMax,
    /// `atom.inc.u64` for the bounded increment: not a PTX instruction (caught by ptxas).
    IncAsU64,
    /// Concurrent kernels only (`concurrent.rs`): the integer read-modify-writes split into a
    /// `ld.volatile` and a `st.volatile` (each atomic on its own, the pair not), so that
    /// updates from other threads are lost; the single-instruction kernels are unchanged.
    /// Caught on a GPU by the corpus's concurrent cases, without one by the sm_50 decode.
    SplitRmw,
    /// Batched kernels only ([`Form::Batched`]): thread 0 of each CTA also writes the byte just
    /// past its case's memory, in the padding or guard before the next case's region; caught
    /// by the guard check as a cross-case write, never a pass. Single kernels are unchanged.
    CrossCaseWrite,
}

impl Plant {
    /// From the value of `ATOMCTS_PTX_PLANT` (`min_as_max`, `inc_as_u64`, `split_rmw`).
    pub fn from_name(s: &str) -> Option<Plant> {
        match s {
            "" | "none" => Some(Plant::None),
            "min_as_max" => Some(Plant::MinAsMax),
            "inc_as_u64" => Some(Plant::IncAsU64),
            "split_rmw" => Some(Plant::SplitRmw),
            "cross_case_write" => Some(Plant::CrossCaseWrite),
            _ => None,
        }
    }
}

/// Whether a kernel runs one case, its thread count and buffer size in the parameters `n` and
/// `bytes`, or a batch of cases of one shape (issue 31), one CTA per case: parameter `cases`
/// holds a row of [`CASE_ROW_BYTES`] per CTA, and each CTA offsets `mem`, `items` and `old` by
/// its row before running exactly the single case's code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// One case: `mem, items, old, n, bytes`.
    Alone,
    /// One CTA per case: `mem, items, old, cases`.
    Batched,
}

/// Bytes of a batched launch's row of `cases` per CTA, little-endian: the byte offset of the
/// case's region in `mem` (u64), the index of its first item in `items` and `old` (u64), its
/// threads `n` (u32) and its buffer's bytes (u32).
pub const CASE_ROW_BYTES: u64 = 24;

/// An emitted kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kernel {
    /// PTX source.
    pub source: String,
    /// The oldest target with the instruction (`sm_<min_sm>`).
    pub min_sm: u32,
    /// The `atom` line, for reports.
    pub atom: String,
    /// Bytes of the datum.
    pub elem_bytes: u64,
}

fn na<T>(why: impl Into<String>) -> Result<T, NotApplicable> {
    Err(NotApplicable(why.into()))
}

/// The `atom` spelling of a plan's op and type (without state space): the modifiers and type
/// suffix, the register class of the datum, the oldest target and PTX ISA version.
pub(super) struct Spelling {
    pub(super) op: String,
    pub(super) class: Class,
    pub(super) min_sm: u32,
    pub(super) min_ptx: (u32, u32),
}

/// Register class of the datum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Class {
    B32,
    B64,
    F32,
    F64,
    /// Two halves (`{%h, %h}`) of a 32-bit word.
    V2F16,
}

pub(super) fn spelling(plan: &Plan, plant: Plant) -> Result<Spelling, NotApplicable> {
    let (op, ty, env) = (plan.op, plan.ty, plan.env);
    let what = format!("{} on {}", op.name(), ty.name());
    let int_width = match ty {
        DataType::U32 | DataType::S32 => Some(32),
        DataType::U64 | DataType::S64 => Some(64),
        _ => None,
    };
    let bits = ty.bits();
    let b = |w: u32| if w == 32 { Class::B32 } else { Class::B64 };
    let plain = |name: &str, suffix: String, class: Class| Spelling {
        op: format!("{name}.{suffix}"),
        class,
        min_sm: 50,
        min_ptx: (6, 0),
    };
    Ok(match op {
        AtomicOp::Add => match ty {
            DataType::U32 | DataType::U64 => plain("add", ty.name().to_string(), b(bits)),
            DataType::S32 => plain("add", "s32".into(), Class::B32),
            // Two's complement: a 64-bit add is the same bits signed or unsigned (PTX has no
            // atom.add.s64).
            DataType::S64 => plain("add", "u64".into(), Class::B64),
            DataType::F32 => {
                if env.round != Round::NearestEven {
                    return na(format!("{what}: atom.add.f32 rounds to nearest even only"));
                }
                // PTX atom: .add.f32 on global memory flushes subnormal inputs and results;
                // on shared memory it keeps them.
                let flushes = plan.space == Space::Global;
                let wants = if env.ftz == FtzMode::BOTH {
                    true
                } else if env.ftz == FtzMode::NONE {
                    false
                } else {
                    return na(format!(
                        "{what}: flushing only inputs or only results; atom.add.f32 has no such form"
                    ));
                };
                if flushes != wants {
                    return na(format!(
                        "{what} on {} memory: atom.add.f32 there {} subnormals; the instruction {} them",
                        plan.space.name(),
                        if flushes { "flushes" } else { "keeps" },
                        if wants { "flushes" } else { "keeps" }
                    ));
                }
                plain("add", "f32".into(), Class::F32)
            }
            DataType::F64 => {
                if env.round != Round::NearestEven || env.ftz != FtzMode::NONE {
                    return na(format!(
                        "{what}: atom.add.f64 rounds to nearest even and keeps subnormals"
                    ));
                }
                Spelling {
                    min_sm: 60,
                    ..plain("add", "f64".into(), Class::F64)
                }
            }
            DataType::F16x2 => {
                if env.round != Round::NearestEven || env.ftz != FtzMode::NONE {
                    return na(format!(
                        "{what}: atom.add.noftz.f16x2 rounds to nearest even and keeps subnormals"
                    ));
                }
                Spelling {
                    min_sm: 60,
                    min_ptx: (6, 2),
                    ..plain("add.noftz", "f16x2".into(), Class::B32)
                }
            }
            _ => return na(format!("{what}: no atom.add of this type")),
        },
        AtomicOp::Min | AtomicOp::Max => {
            let name = match (op, plant) {
                (AtomicOp::Min, Plant::MinAsMax) => "max",
                (AtomicOp::Min, _) => "min",
                _ => "max",
            };
            match ty {
                DataType::U32 | DataType::S32 | DataType::U64 | DataType::S64 => {
                    plain(name, ty.name().to_string(), b(bits))
                }
                // PTX has f16 min/max atoms only as a vector of two halves (sm_90), which is
                // atomic per half, not per 32-bit word: exact only where no two threads race.
                DataType::F16x2 if plan.has_shared_addresses() => {
                    return na(format!(
                        "{what}: atom.v2.f16.{name} is atomic per half, not per 32-bit word as the instruction is, and threads of this case race on one address"
                    ));
                }
                DataType::F16x2 => Spelling {
                    op: format!("v2.f16.{name}.noftz"),
                    class: Class::V2F16,
                    min_sm: 90,
                    min_ptx: (8, 1),
                },
                _ => return na(format!("{what}: no exact atom.{name} of this type")),
            }
        }
        AtomicOp::IncBounded | AtomicOp::DecBounded => {
            let name = if op == AtomicOp::IncBounded {
                "inc"
            } else {
                "dec"
            };
            if plant == Plant::IncAsU64 && op == AtomicOp::IncBounded {
                plain(name, "u64".into(), Class::B64)
            } else if ty == DataType::U32 {
                plain(name, "u32".into(), Class::B32)
            } else {
                return na(format!(
                    "{what}: the bounded atom.{name} is .u32 only; not emulated"
                ));
            }
        }
        AtomicOp::And | AtomicOp::Or | AtomicOp::Xor => {
            let w = int_width.ok_or_else(|| NotApplicable(format!("{what}: no bitwise atom")))?;
            plain(op.name(), format!("b{w}"), b(w))
        }
        AtomicOp::Exch => match bits {
            32 | 64 => plain("exch", format!("b{bits}"), b(bits)),
            _ => return na(format!("{what}: atom.exch is .b32/.b64 here")),
        },
        AtomicOp::Cas => {
            if let Compare::Numeric { .. } = env.compare {
                return na(format!(
                    "{what}: a numeric compare (A9); atom.cas compares bits"
                ));
            }
            match bits {
                32 | 64 => plain("cas", format!("b{bits}"), b(bits)),
                _ => return na(format!("{what}: atom.cas is .b32/.b64 here")),
            }
        }
        AtomicOp::Sub | AtomicOp::Inc | AtomicOp::Dec | AtomicOp::PreDec | AtomicOp::Store => {
            return na(format!(
                "{what}: PTX has no atom with exactly this op; not emulated"
            ));
        }
    })
}

/// The PTX ISA version a kernel for `sm` declares: the oldest that has the target and the
/// instruction.
pub(super) fn version(sm: u32, min_ptx: (u32, u32)) -> (u32, u32) {
    let for_target = match sm {
        0..=72 => (6, 0),
        73..=86 => (7, 0),
        _ => (7, 8),
    };
    for_target.max(min_ptx)
}

/// Emits the kernel of `plan` for target `sm_<sm>`.
pub fn emit(plan: &Plan, sm: u32, plant: Plant) -> Result<Kernel, NotApplicable> {
    emit_form(plan, sm, plant, Form::Alone)
}

/// [`emit`]'s kernel in its [`Form::Batched`] form: the same code after a prologue that reads
/// the CTA's row of `cases`; kernels of one shape still share their text.
pub fn emit_batched(plan: &Plan, sm: u32, plant: Plant) -> Result<Kernel, NotApplicable> {
    emit_form(plan, sm, plant, Form::Batched)
}

fn emit_form(plan: &Plan, sm: u32, plant: Plant, form: Form) -> Result<Kernel, NotApplicable> {
    let sp = spelling(plan, plant)?;
    if sp.min_sm > sm {
        return na(format!(
            "atom.{} needs sm_{}; the target is sm_{sm}",
            sp.op, sp.min_sm
        ));
    }
    if plan.items.len() > MAX_THREADS {
        return na(format!(
            "{} threads exceed a thread block ({MAX_THREADS})",
            plan.items.len()
        ));
    }
    let shared = plan.space == Space::Shared;
    // A bucketed static size, so that kernels of one shape are one text.
    let smem = plan.layout().size.next_power_of_two().max(256);
    if shared && smem > MAX_SHARED {
        return na(format!(
            "{} bytes of shared memory exceed a static shared array ({MAX_SHARED})",
            plan.layout().size
        ));
    }
    let (major, minor) = version(sm, sp.min_ptx);
    let elem_bytes = plan.ty.bytes();
    let mut s = String::new();
    let w = &mut s;
    let _ = writeln!(
        w,
        "// atomcts PTX back end: {} {} on {} memory{}",
        plan.op.name(),
        plan.ty.name(),
        plan.space.name(),
        match form {
            Form::Alone => "",
            Form::Batched => " (batched: a CTA per case)",
        }
    );
    let _ = writeln!(w, ".version {major}.{minor}");
    let _ = writeln!(w, ".target sm_{sm}");
    let _ = writeln!(w, ".address_size 64");
    if shared {
        let _ = writeln!(w, ".shared .align 16 .b8 atomcts_smem[{smem}];");
    }
    let params = match form {
        Form::Alone => ".param .u32 n, .param .u32 bytes",
        Form::Batched => ".param .u64 cases",
    };
    let _ = writeln!(
        w,
        ".visible .entry {KERNEL_NAME}(.param .u64 mem, .param .u64 items, .param .u64 old, {params})"
    );
    let _ = writeln!(w, "{{");
    let _ = writeln!(w, "  .reg .pred %p<4>;");
    let _ = writeln!(w, "  .reg .b32 %r<16>;");
    let _ = writeln!(w, "  .reg .b64 %rd<24>;");
    let _ = writeln!(w, "  .reg .f32 %f<4>;");
    let _ = writeln!(w, "  .reg .f64 %fd<4>;");
    let _ = writeln!(w, "  .reg .b16 %h<8>;");
    let _ = writeln!(w, "  ld.param.u64 %rd1, [mem];");
    let _ = writeln!(w, "  cvta.to.global.u64 %rd1, %rd1;");
    let _ = writeln!(w, "  ld.param.u64 %rd2, [items];");
    let _ = writeln!(w, "  cvta.to.global.u64 %rd2, %rd2;");
    let _ = writeln!(w, "  ld.param.u64 %rd3, [old];");
    let _ = writeln!(w, "  cvta.to.global.u64 %rd3, %rd3;");
    match form {
        Form::Alone => {
            let _ = writeln!(w, "  ld.param.u32 %r1, [n];");
            let _ = writeln!(w, "  ld.param.u32 %r2, [bytes];");
        }
        Form::Batched => batch_prologue(w),
    }
    let _ = writeln!(w, "  mov.u32 %r3, %tid.x;");
    let _ = writeln!(w, "  mov.u32 %r4, %ntid.x;");
    if shared {
        // Copy the buffer into shared memory, four bytes per step (its size is a multiple of 8).
        copy_loop(
            w,
            "IN",
            "ld.global.b32 %r7, [%rd5];",
            "st.shared.b32 [%r6], %r7;",
        );
        let _ = writeln!(w, "  bar.sync 0;");
    }
    let _ = writeln!(w, "  setp.ge.u32 %p1, %r3, %r1;");
    let _ = writeln!(w, "  @%p1 bra SKIP;");
    let _ = writeln!(w, "  mul.wide.u32 %rd4, %r3, 24;");
    let _ = writeln!(w, "  add.u64 %rd4, %rd2, %rd4;");
    let _ = writeln!(w, "  ld.global.u64 %rd6, [%rd4];");
    let _ = writeln!(w, "  ld.global.u64 %rd7, [%rd4+8];");
    let _ = writeln!(w, "  ld.global.u64 %rd8, [%rd4+16];");
    // Operands in the datum's register class.
    let (a, b) = match sp.class {
        Class::B32 => {
            let _ = writeln!(w, "  cvt.u32.u64 %r8, %rd7;");
            let _ = writeln!(w, "  cvt.u32.u64 %r9, %rd8;");
            ("%r8", "%r9")
        }
        Class::B64 => ("%rd7", "%rd8"),
        Class::F32 => {
            let _ = writeln!(w, "  cvt.u32.u64 %r8, %rd7;");
            let _ = writeln!(w, "  mov.b32 %f1, %r8;");
            ("%f1", "%f1")
        }
        Class::F64 => {
            let _ = writeln!(w, "  mov.b64 %fd1, %rd7;");
            ("%fd1", "%fd1")
        }
        Class::V2F16 => {
            let _ = writeln!(w, "  cvt.u32.u64 %r8, %rd7;");
            let _ = writeln!(w, "  mov.b32 {{%h3, %h4}}, %r8;");
            ("{%h3, %h4}", "{%h3, %h4}")
        }
    };
    let addr = if shared {
        let _ = writeln!(w, "  cvt.u32.u64 %r10, %rd6;");
        let _ = writeln!(w, "  mov.u32 %r11, atomcts_smem;");
        let _ = writeln!(w, "  add.u32 %r11, %r11, %r10;");
        "[%r11]"
    } else {
        let _ = writeln!(w, "  add.u64 %rd9, %rd1, %rd6;");
        "[%rd9]"
    };
    let space = if shared { "shared" } else { "global" };
    let dst = match sp.class {
        // Not %r2: that holds `bytes`, the bound of the copy back out of shared memory.
        Class::B32 => "%r14",
        Class::B64 => "%rd12",
        Class::F32 => "%f2",
        Class::F64 => "%fd2",
        Class::V2F16 => "{%h1, %h2}",
    };
    let atom = if plan.op == AtomicOp::Cas {
        format!("atom.{space}.{} {dst}, {addr}, {a}, {b};", sp.op)
    } else {
        format!("atom.{space}.{} {dst}, {addr}, {a};", sp.op)
    };
    let _ = writeln!(w, "  {atom}");
    // The returned value, zero-extended into one u64 per thread.
    match sp.class {
        Class::B32 => {
            let _ = writeln!(w, "  cvt.u64.u32 %rd10, %r14;");
        }
        Class::B64 => {
            let _ = writeln!(w, "  mov.b64 %rd10, %rd12;");
        }
        Class::F32 => {
            let _ = writeln!(w, "  mov.b32 %r12, %f2;");
            let _ = writeln!(w, "  cvt.u64.u32 %rd10, %r12;");
        }
        Class::F64 => {
            let _ = writeln!(w, "  mov.b64 %rd10, %fd2;");
        }
        Class::V2F16 => {
            let _ = writeln!(w, "  mov.b32 %r12, {{%h1, %h2}};");
            let _ = writeln!(w, "  cvt.u64.u32 %rd10, %r12;");
        }
    }
    let _ = writeln!(w, "  mul.wide.u32 %rd11, %r3, 8;");
    let _ = writeln!(w, "  add.u64 %rd11, %rd3, %rd11;");
    let _ = writeln!(w, "  st.global.u64 [%rd11], %rd10;");
    let _ = writeln!(w, "SKIP:");
    if shared {
        let _ = writeln!(w, "  bar.sync 0;");
        copy_loop(
            w,
            "OUT",
            "ld.shared.b32 %r7, [%r6];",
            "st.global.b32 [%rd5], %r7;",
        );
    }
    if form == Form::Batched && plant == Plant::CrossCaseWrite {
        for line in [
            "setp.ne.u32 %p3, %r3, 0;",
            "@%p3 bra PLANT_DONE;",
            "cvt.u64.u32 %rd17, %r2;",
            "add.u64 %rd17, %rd1, %rd17;",
            "mov.u32 %r15, 255;",
            "st.global.u8 [%rd17], %r15;",
        ] {
            let _ = writeln!(w, "  {line}");
        }
        let _ = writeln!(w, "PLANT_DONE:");
    }
    let _ = writeln!(w, "  ret;");
    let _ = writeln!(w, "}}");
    Ok(Kernel {
        source: s,
        min_sm: sp.min_sm,
        atom,
        elem_bytes,
    })
}

/// A batched kernel's CTA finds its case: its row of `cases` ([`CASE_ROW_BYTES`] at
/// `%ctaid.x`) moves `mem` (`%rd1`) to the case's region, `items` (`%rd2`, 24 bytes an item)
/// and `old` (`%rd3`, 8 bytes an item) to its first item, and gives `n` (`%r1`) and `bytes`
/// (`%r2`), which the single case's code then reads as its parameters. Uses `%r15` and
/// `%rd13..%rd16`, which that code does not.
fn batch_prologue(w: &mut String) {
    for line in [
        "ld.param.u64 %rd13, [cases];",
        "cvta.to.global.u64 %rd13, %rd13;",
        "mov.u32 %r15, %ctaid.x;",
        &format!("mul.wide.u32 %rd14, %r15, {CASE_ROW_BYTES};"),
        "add.u64 %rd13, %rd13, %rd14;",
        "ld.global.u64 %rd15, [%rd13];",
        "add.u64 %rd1, %rd1, %rd15;",
        "ld.global.u64 %rd15, [%rd13+8];",
        "mul.lo.u64 %rd16, %rd15, 24;",
        "add.u64 %rd2, %rd2, %rd16;",
        "shl.b64 %rd16, %rd15, 3;",
        "add.u64 %rd3, %rd3, %rd16;",
        "ld.global.u32 %r1, [%rd13+16];",
        "ld.global.u32 %r2, [%rd13+20];",
    ] {
        let _ = writeln!(w, "  {line}");
    }
}

/// A loop over the flat buffer, four bytes per thread per step: `%r5` the byte index, `%rd5`
/// its global address, `%r6` its shared address.
fn copy_loop(w: &mut String, tag: &str, load: &str, store: &str) {
    let _ = writeln!(w, "  shl.b32 %r5, %r3, 2;");
    let _ = writeln!(w, "{tag}_LOOP:");
    let _ = writeln!(w, "  setp.ge.u32 %p2, %r5, %r2;");
    let _ = writeln!(w, "  @%p2 bra {tag}_DONE;");
    let _ = writeln!(w, "  cvt.u64.u32 %rd5, %r5;");
    let _ = writeln!(w, "  add.u64 %rd5, %rd1, %rd5;");
    let _ = writeln!(w, "  mov.u32 %r6, atomcts_smem;");
    let _ = writeln!(w, "  add.u32 %r6, %r6, %r5;");
    let _ = writeln!(w, "  {load}");
    let _ = writeln!(w, "  {store}");
    let _ = writeln!(w, "  shl.b32 %r13, %r4, 2;");
    let _ = writeln!(w, "  add.u32 %r5, %r5, %r13;");
    let _ = writeln!(w, "  bra {tag}_LOOP;");
    let _ = writeln!(w, "{tag}_DONE:");
}

/// The per-thread data of `plan`: offset, src0, src1 per item, little-endian u64s.
pub fn items(plan: &Plan) -> Vec<u64> {
    plan.items
        .iter()
        .flat_map(|i| [i.offset, i.src[0], i.src[1]])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use atomcts_reference::Profile;
    use atomcts_reference::program::{Dialect, Program};
    use atomcts_reference::state::{Reg, State};
    use atomcts_reference::types::ElemType;

    /// A two-lane SASS case on global memory at 0x1000 (lanes 8 bytes apart).
    fn plan(asm: &str, profile: &Profile) -> Plan {
        let mut s = State::new(2);
        s.global.alloc(0x1000, 32).unwrap();
        for (name, v) in [
            ("R2", [0x1000u64, 0x1008]),
            ("R3", [0, 0]),
            ("R4", [1, 2]),
            ("R5", [3, 4]),
        ] {
            s.regs.insert(
                name.into(),
                Reg {
                    ty: ElemType::B32,
                    elems: v.to_vec(),
                },
            );
        }
        let p = Program::parse(Dialect::Sass, asm).unwrap();
        match p.lower(&s, profile).unwrap() {
            atomcts_reference::ir::Lowering::Run(l) => Plan::new(&l, &s).unwrap(),
            other => panic!("{other:?}"),
        }
    }

    fn atom(asm: &str, sm: u32) -> Result<String, NotApplicable> {
        emit(&plan(asm, &Profile::default()), sm, Plant::None).map(|k| k.atom)
    }

    #[test]
    fn each_sass_op_gets_exactly_its_atom() {
        for (asm, want) in [
            (
                "ATOM.E.INC R0, [R2], R4",
                "atom.global.inc.u32 %r14, [%rd9], %r8;",
            ),
            (
                "ATOM.E.DEC R0, [R2], R4",
                "atom.global.dec.u32 %r14, [%rd9], %r8;",
            ),
            (
                "ATOM.E.ADD.S32 R0, [R2], R4",
                "atom.global.add.s32 %r14, [%rd9], %r8;",
            ),
            (
                "ATOM.E.MIN.S64 R0, [R2], R4",
                "atom.global.min.s64 %rd12, [%rd9], %rd7;",
            ),
            (
                "ATOM.E.CAS R0, [R2], R4, R5",
                "atom.global.cas.b32 %r14, [%rd9], %r8, %r9;",
            ),
            (
                "ATOM.E.EXCH.U64 R0, [R2], R4",
                "atom.global.exch.b64 %rd12, [%rd9], %rd7;",
            ),
            (
                "ATOM.E.ADD.F32.FTZ.RN R0, [R2], R4",
                "atom.global.add.f32 %f2, [%rd9], %f1;",
            ),
        ] {
            assert_eq!(atom(asm, 50).unwrap(), want, "{asm}");
        }
        assert_eq!(
            atom("ATOM.E.ADD.F64.RN R0, [R2], R4", 70).unwrap(),
            "atom.global.add.f64 %fd2, [%rd9], %fd1;"
        );
        assert_eq!(
            atom("ATOM.E.ADD.F16x2.RN R0, [R2], R4", 70).unwrap(),
            "atom.global.add.noftz.f16x2 %r14, [%rd9], %r8;"
        );
        assert_eq!(
            atom("ATOM.E.MAX.F16x2.RN R0, [R2], R4", 90).unwrap(),
            "atom.global.v2.f16.max.noftz {%h1, %h2}, [%rd9], {%h3, %h4};"
        );
    }

    #[test]
    fn targets_and_float_modes_without_an_exact_atom_are_not_applicable() {
        assert!(
            atom("ATOM.E.ADD.F64.RN R0, [R2], R4", 50)
                .unwrap_err()
                .0
                .contains("needs sm_60")
        );
        assert!(
            atom("ATOM.E.MIN.F16x2.RN R0, [R2], R4", 70)
                .unwrap_err()
                .0
                .contains("needs sm_90")
        );
        // sass.f32_add_ftz = preserve: atom.add.f32 on global memory flushes.
        let mut keep = Profile::default();
        keep.set("sass.f32_add_ftz", "preserve").unwrap();
        let why = emit(
            &plan("ATOM.E.ADD.F32.FTZ.RN R0, [R2], R4", &keep),
            90,
            Plant::None,
        )
        .unwrap_err();
        assert!(why.0.contains("flushes subnormals"), "{why}");
        let mut flush = Profile::default();
        flush.set("sass.f16x2_add_subnormals", "flush").unwrap();
        assert!(
            emit(
                &plan("ATOM.E.ADD.F16x2.RN R0, [R2], R4", &flush),
                90,
                Plant::None
            )
            .is_err()
        );
    }

    #[test]
    fn the_shared_copy_out_bound_survives_the_atom() {
        // %r2 holds `bytes`, the bound of the copy back out of shared memory: no atom of any
        // class may return into it.
        // vISA DWORD_ATOMIC on SLM (T0): shared memory.
        let mut s = State::new(4);
        for (name, v) in [("V10", [0u64, 4, 8, 12]), ("V11", [1, 2, 3, 4])] {
            s.regs.insert(
                name.into(),
                Reg {
                    ty: ElemType::UD,
                    elems: v.to_vec(),
                },
            );
        }
        s.shared.alloc(0, 64).unwrap();
        s.slm_size = Some(64);
        let p = Program::parse(Dialect::Visa, "DWORD_ATOMIC.add (4) T0 V10 V11 V0 V0").unwrap();
        let l = match p.lower(&s, &Profile::default()).unwrap() {
            atomcts_reference::ir::Lowering::Run(l) => l,
            other => panic!("{other:?}"),
        };
        let plan = Plan::new(&l, &s).unwrap();
        assert_eq!(plan.space, Space::Shared);
        let k = emit(&plan, 70, Plant::None).unwrap();
        assert_eq!(k.atom, "atom.shared.add.u32 %r14, [%r11], %r8;");
        let writes_r2 = k.source.lines().map(str::trim).filter(|l| {
            !l.starts_with("setp")
                && !l.starts_with("st.")
                && l.split_whitespace().nth(1) == Some("%r2,")
        });
        assert_eq!(
            writes_r2.collect::<Vec<_>>(),
            ["ld.param.u32 %r2, [bytes];"]
        );
    }

    #[test]
    fn the_entry_parameters_are_what_run_pushes() {
        // run.rs: three device pointers (u64), then `n` and `bytes` as u32.
        let k = emit(
            &plan("ATOM.E.ADD R0, [R2], R4", &Profile::default()),
            70,
            Plant::None,
        )
        .unwrap();
        let want: Vec<(String, String)> = [
            (".u64", "mem"),
            (".u64", "items"),
            (".u64", "old"),
            (".u32", "n"),
            (".u32", "bytes"),
        ]
        .iter()
        .map(|(t, n)| (t.to_string(), n.to_string()))
        .collect();
        assert_eq!(super::super::concurrent::entry_params(&k.source), want);
    }

    #[test]
    fn plants_change_the_atom() {
        let p = plan("ATOM.E.MIN R0, [R2], R4", &Profile::default());
        assert!(
            emit(&p, 50, Plant::MinAsMax)
                .unwrap()
                .atom
                .contains("atom.global.max.u32")
        );
        let p = plan("ATOM.E.INC R0, [R2], R4", &Profile::default());
        assert!(
            emit(&p, 50, Plant::IncAsU64)
                .unwrap()
                .atom
                .contains("atom.global.inc.u64")
        );
        assert_eq!(Plant::from_name("min_as_max"), Some(Plant::MinAsMax));
        assert_eq!(Plant::from_name("bogus"), None);
    }

    #[test]
    fn kernels_of_one_shape_share_their_text_and_items_carry_the_data() {
        let a = plan("ATOM.E.ADD R0, [R2], R4", &Profile::default());
        let b = plan("ATOM.E.ADD R0, [R2+0x4], R5", &Profile::default());
        assert_eq!(
            emit(&a, 70, Plant::None).unwrap().source,
            emit(&b, 70, Plant::None).unwrap().source
        );
        assert_eq!(items(&a), [0, 1, 0, 8, 2, 0]);
        assert_eq!(items(&b), [4, 3, 0, 12, 4, 0]);
    }
}
