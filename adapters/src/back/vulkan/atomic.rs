//! Emit, memory instructions: a [`Plan`] -> one SPIR-V compute module (the table of
//! instructions is in [`super::emit`]).

use crate::plan::{NotApplicable, Plan};
use atomcts_reference::float::Round;
use atomcts_reference::float::{DenormRule, FtzMode};
use atomcts_reference::ir::{AtomicOp, Compare};
use atomcts_reference::types::{DataType, Space};
use rspirv::dr::Builder;
use rspirv::spirv::{BuiltIn, Capability, ExecutionMode, StorageClass, Word};

/// The entry point's name.
use super::emit::*;
use crate::back::{OPS, op_code};

/// Checks that the op on `plan`'s type has an exact instruction on a device with `f`.
pub(super) fn check_atomic(plan: &Plan, f: &Features) -> Result<Datum, NotApplicable> {
    let (op, ty, space) = (plan.op, plan.ty, plan.space);
    let shared = space == Space::Shared;
    let bitwise = matches!(op, AtomicOp::Exch | AtomicOp::Store)
        || (op == AtomicOp::Cas && plan.env.compare == Compare::Bitwise);
    if matches!(op, AtomicOp::IncBounded | AtomicOp::DecBounded) {
        return na(format!(
            "{}: the bounded CUDA/SASS form has no SPIR-V instruction (OpAtomicIIncrement/IDecrement wrap); not emulated",
            op.name()
        ));
    }
    if op == AtomicOp::Cas && plan.env.compare != Compare::Bitwise {
        return na("cas with a numeric compare (A9): OpAtomicCompareExchange compares bits");
    }
    match ty {
        DataType::U32 | DataType::S32 => Ok(Datum::Int),
        DataType::U64 | DataType::S64 => {
            let has = f.int64
                && if shared {
                    f.shared_int64_atomics
                } else {
                    f.buffer_int64_atomics
                };
            if has {
                Ok(Datum::Int)
            } else {
                na(format!(
                    "64-bit atomics on {} memory: the device does not report {}",
                    space.name(),
                    if shared {
                        "shaderSharedInt64Atomics"
                    } else {
                        "shaderBufferInt64Atomics"
                    }
                ))
            }
        }
        DataType::F32 if bitwise => Ok(Datum::Int),
        DataType::F64 if bitwise => {
            if f.int64
                && (if shared {
                    f.shared_int64_atomics
                } else {
                    f.buffer_int64_atomics
                })
            {
                Ok(Datum::Int)
            } else {
                na("64-bit exchange: the device does not report 64-bit integer atomics")
            }
        }
        DataType::F32 => {
            let (feature, has) = match op {
                AtomicOp::Add => (
                    if shared {
                        "shaderSharedFloat32AtomicAdd"
                    } else {
                        "shaderBufferFloat32AtomicAdd"
                    },
                    if shared {
                        f.shared_f32_add
                    } else {
                        f.buffer_f32_add
                    },
                ),
                AtomicOp::Min | AtomicOp::Max => (
                    if shared {
                        "shaderSharedFloat32AtomicMinMax"
                    } else {
                        "shaderBufferFloat32AtomicMinMax"
                    },
                    if shared {
                        f.shared_f32_minmax
                    } else {
                        f.buffer_f32_minmax
                    },
                ),
                _ => {
                    return na(format!(
                        "{} on f32: SPIR-V has no float atomic {} (only add, min and max)",
                        op.name(),
                        op.name()
                    ));
                }
            };
            if !has {
                return na(format!(
                    "f32 atomic {}: the device does not report {feature}",
                    op.name()
                ));
            }
            if plan.env.round != Round::NearestEven {
                return na(
                    "float atomic with a rounding other than to nearest even: Vulkan float atomics round to nearest even",
                );
            }
            Ok(Datum::Float)
        }
        DataType::F64 => na(format!(
            "{} on f64: the device does not report 64-bit float atomics (this back end emits none)",
            op.name()
        )),
        DataType::U16 | DataType::S16 | DataType::F16 | DataType::BF16 | DataType::F16x2 => {
            na(format!(
                "{} on {}: SPIR-V on Vulkan has no 16-bit integer atomics, and this back end emits no 16-bit float atomics",
                op.name(),
                ty.name()
            ))
        }
    }
}

/// Emits the module for a memory instruction.
pub fn emit_atomic(
    plan: &Plan,
    mem: Vec<u8>,
    f: &Features,
    plant: Plant,
) -> Result<Dispatch, NotApplicable> {
    let datum = check_atomic(plan, f)?;
    if datum == Datum::Float && matches!(plan.op, AtomicOp::Min | AtomicOp::Max) {
        let instruction = if plan.op == AtomicOp::Min {
            "OpAtomicFMinEXT"
        } else {
            "OpAtomicFMaxEXT"
        };
        crate::float_values::check_minmax_rules(plan, &mem, instruction)?;
    }
    let n = plan.items.len() as u32;
    if n == 0 {
        return na("no enabled access: nothing to dispatch");
    }
    if n > f.max_invocations {
        return na(format!(
            "{n} invocations exceed the device's work-group size {}",
            f.max_invocations
        ));
    }
    let bytes = plan.ty.bytes();
    let shared = plan.space == Space::Shared;
    let layout = plan.layout();
    let elems = layout.size / bytes;
    if shared && layout.size > u64::from(f.max_shared_bytes) {
        return na(format!(
            "{} bytes of workgroup memory exceed the device's {}",
            layout.size, f.max_shared_bytes
        ));
    }
    let (local, lm_elems) = shape_sizes(n, elems, bytes, f);
    let float_flush = if datum == Datum::Float {
        // Subnormal handling is the device's choice unless it reports a float-controls mode
        // (Vulkan 1.2 §"Floating Point Controls"); a case that touches subnormals then has no
        // defined answer on the API.
        let flush = plan.env.ftz != FtzMode::NONE;
        // Float min/max under a profile that allows either subnormal treatment needs no mode.
        let any_mode = plan.op != AtomicOp::Add && plan.env.minmax.denormals == DenormRule::Either;
        let fixed = any_mode
            || if flush {
                f.denorm_ftz_f32
            } else {
                f.denorm_preserve_f32
            };
        if !fixed && crate::float_values::touches_subnormals(plan, &mem) {
            return na(format!(
                "subnormal f32 values (operands, or sums of them) with {} required, and the device reports no float-controls {} for f32: subnormal handling is the device's choice",
                if flush { "flushing" } else { "no flushing" },
                if flush {
                    "DenormFlushToZero"
                } else {
                    "DenormPreserve"
                }
            ));
        }
        if !fixed || any_mode {
            None
        } else {
            Some(flush)
        }
    } else {
        None
    };
    // An integer op of OPS on an integer type: the module switches on its code (word 2 of
    // binding 3), so that its words depend on the type and space only (issue 31).
    let code = op_code(plan.op);
    let switched = datum == Datum::Int && plan.ty.float_format().is_none() && code.is_some();
    let inv: Vec<u64> = [
        u64::from(n),
        elems,
        code.map_or(u64::from(u32::MAX), u64::from),
    ]
    .into_iter()
    .chain(plan.items.iter().map(|i| i.offset / bytes))
    .collect();
    let src0: Vec<u64> = plan.items.iter().map(|i| i.src[0]).collect();
    let src1: Vec<u64> = plan.items.iter().map(|i| i.src[1]).collect();
    let shape = Shape {
        op: (!switched).then_some(plan.op),
        ty: plan.ty,
        space: plan.space,
        datum,
        float_flush,
        local,
        lm_elems,
        plant,
        batched: false,
    };
    let words = MODULES
        .with(|m| m.get_or_build(&shape, |k| module(k).map(std::sync::Arc::from)))?
        .to_vec();
    let batched = Shape {
        batched: true,
        ..shape
    };
    let batched =
        MODULES.with(|m| m.get_or_build(&batched, |k| module(k).map(std::sync::Arc::from)))?;
    let mut lines = vec![
        (3, "N, ELEMS, OP, element index per invocation", 4, inv),
        (4, "first operand per invocation", bytes, src0),
    ];
    if plan.op == AtomicOp::Cas || switched {
        lines.push((5, "second operand per invocation", bytes, src1));
    }
    let mut buffers = vec![
        Buffer {
            role: "memory",
            bytes: mem,
        },
        Buffer {
            role: "returned values",
            bytes: vec![0; (n as u64 * bytes) as usize],
        },
        Buffer {
            role: "compare-exchange success",
            bytes: vec![0; n as usize * 4],
        },
    ];
    buffers.extend(lines.iter().map(|(binding, _, width, values)| Buffer {
        role: match binding {
            3 => "invocations",
            4 => "first operands",
            _ => "second operands",
        },
        bytes: le_bytes(*width, values),
    }));
    let operands = Operands::Lines(Box::new(OperandLines {
        op: Some((plan.op, code.filter(|_| switched))),
        wgsl: false,
        lines,
    }));
    Ok(Dispatch {
        words,
        local_size: local,
        groups: 1,
        subgroup_size: None,
        buffers,
        ret_bytes: bytes,
        operands,
        batched: Some(batched),
    })
}

/// What a memory instruction's module depends on (its shape, [`super::emit`]): the case's
/// values are in buffers, so equal shapes have equal words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Shape {
    /// The op, `None` where the module switches on its code ([`OPS`]).
    op: Option<AtomicOp>,
    ty: DataType,
    space: Space,
    datum: Datum,
    /// The float-controls mode: `Some(true)` flush, `Some(false)` preserve.
    float_flush: Option<bool>,
    local: u32,
    lm_elems: u64,
    plant: Plant,
    /// The batched form ([`Dispatch::batched`]).
    batched: bool,
}

thread_local! {
    /// Built modules by shape.
    static MODULES: ModuleCache<Shape> = ModuleCache::new();
}

/// Builds the module of shape `k`.
fn module(k: &Shape) -> Result<Vec<u32>, NotApplicable> {
    let Shape {
        datum,
        float_flush,
        local,
        lm_elems,
        plant,
        ..
    } = *k;
    let bytes = k.ty.bytes();
    let shared = k.space == Space::Shared;
    let mut cx = Ctx::new();
    let wide = bytes == 8;
    if wide {
        cx.b.capability(Capability::Int64);
        cx.b.capability(Capability::Int64Atomics);
    }
    if datum == Datum::Float {
        if k.op == Some(AtomicOp::Add) {
            cx.b.extension("SPV_EXT_shader_atomic_float_add");
            cx.b.capability(Capability::AtomicFloat32AddEXT);
        } else {
            cx.b.extension("SPV_EXT_shader_atomic_float_min_max");
            cx.b.capability(Capability::AtomicFloat32MinMaxEXT);
        }
        if let Some(flush) = float_flush {
            cx.b.extension("SPV_KHR_float_controls");
            cx.b.capability(if flush {
                Capability::DenormFlushToZero
            } else {
                Capability::DenormPreserve
            });
        }
    }
    let int_t = cx.b.type_int(if wide { 64 } else { 32 }, 0);
    let elem_t = match datum {
        Datum::Int => int_t,
        Datum::Float => cx.b.type_float(32, None),
    };
    let u32_t = cx.u32_t;
    // Bindings: 0 the memory (global, or the image of workgroup memory), 1 returned values,
    // 2 compare-exchange success flags.
    let mem_var = cx.storage_buffer(elem_t, bytes as u32, 0);
    let ret_var = cx.storage_buffer(int_t, bytes as u32, 1);
    let ok_var = cx.storage_buffer(u32_t, 4, 2);
    // 3: N, ELEMS, the op's code, then each invocation's element index; 4: first operands;
    // 5: second operands (compare-exchange, and every switching module).
    let inv_var = cx.storage_buffer(u32_t, 4, 3);
    let src0_var = cx.storage_buffer(elem_t, bytes as u32, 4);
    let src1_var = matches!(k.op, None | Some(AtomicOp::Cas))
        .then(|| cx.storage_buffer(elem_t, bytes as u32, 5));
    // The batched form: the bases buffer after the case's buffers.
    let buffers: Vec<(Word, u64)> = [
        (mem_var, bytes),
        (ret_var, bytes),
        (ok_var, 4),
        (inv_var, 4),
        (src0_var, bytes),
    ]
    .into_iter()
    .chain(src1_var.map(|v| (v, bytes)))
    .collect();
    let batch = k.batched.then(|| cx.batch_inputs(buffers.len() as u32));
    let lid_var = cx.builtin(BuiltIn::LocalInvocationIndex);
    let lm_var = if shared {
        let len = cx.c32(lm_elems as u32);
        let arr = cx.b.type_array(elem_t, len);
        let p = cx.b.type_pointer(None, StorageClass::Workgroup, arr);
        Some(cx.b.variable(p, None, StorageClass::Workgroup, None))
    } else {
        None
    };
    let f_id = cx.begin_main(local)?;
    if let Some(flush) = float_flush {
        cx.b.execution_mode(
            f_id,
            if flush {
                ExecutionMode::DenormFlushToZero
            } else {
                ExecutionMode::DenormPreserve
            },
            [32],
        );
    }
    let counter = if shared {
        let p = cx.b.type_pointer(None, StorageClass::Function, u32_t);
        Some(cx.b.variable(p, None, StorageClass::Function, None))
    } else {
        None
    };
    // The switch's results (Function variables belong in the first block).
    let results = if k.op.is_none() {
        let p = cx.b.type_pointer(None, StorageClass::Function, int_t);
        let old_v = cx.b.variable(p, None, StorageClass::Function, None);
        let p = cx.b.type_pointer(None, StorageClass::Function, u32_t);
        let ok_v = cx.b.variable(p, None, StorageClass::Function, None);
        Some((old_v, ok_v))
    } else {
        None
    };
    if let Some(inputs) = batch {
        cx.batch_bases(inputs, &buffers)?;
    }
    let lid = cx.b.load(u32_t, None, lid_var, None, []).map_err(bug)?;
    let zero = cx.c32(0);
    let one = cx.c32(1);
    let n_c = cx.load_storage(inv_var, u32_t, zero)?;
    let elems_c = cx.load_storage(inv_var, u32_t, one)?;
    let wg = cx.c32(2); // Scope Workgroup
    let barrier_sem = cx.c32(0x108); // AcquireRelease | WorkgroupMemory
    let lm_elem_ptr = |cx: &mut Ctx, j: Word| -> Result<Word, NotApplicable> {
        let p = cx.b.type_pointer(None, StorageClass::Workgroup, elem_t);
        cx.b.access_chain(p, None, lm_var.unwrap_or(0), [j])
            .map_err(bug)
    };
    if let (Some(_), Some(counter)) = (lm_var, counter) {
        // Workgroup memory starts as the buffer's image.
        cx.for_loop_to(counter, lid, elems_c, local, |cx, j| {
            let src = cx.element(mem_var, elem_t, j)?;
            let v = cx.b.load(elem_t, None, src, None, []).map_err(bug)?;
            let dst = lm_elem_ptr(cx, j)?;
            cx.b.store(dst, v, None, []).map_err(bug)
        })?;
        cx.b.control_barrier(wg, wg, barrier_sem).map_err(bug)?;
    }
    let bool_t = cx.bool_t;
    let runs = cx.b.u_less_than(bool_t, None, lid, n_c).map_err(bug)?;
    cx.if_then(runs, |cx| {
        let three = cx.c32(3);
        let at = cx.b.i_add(u32_t, None, lid, three).map_err(bug)?;
        let i = cx.load_storage(inv_var, u32_t, at)?;
        let ptr = if shared {
            lm_elem_ptr(cx, i)?
        } else {
            cx.element(mem_var, elem_t, i)?
        };
        let scope = cx.c32(if shared { 2 } else { 1 }); // Workgroup / Device
        let src0 = cx.load_storage(src0_var, elem_t, lid)?;
        let src1 = match src1_var {
            Some(var) => Some(cx.load_storage(var, elem_t, lid)?),
            None => None,
        };
        // The op's instruction: the old value's bits and, for a compare-exchange, 1 where it
        // succeeded.
        let run = |cx: &mut Ctx, op: AtomicOp| -> Result<(Word, Option<Word>), NotApplicable> {
            let (old, success) = atomic_instruction(
                cx,
                (op, k.ty, datum),
                elem_t,
                ptr,
                scope,
                (src0, src1),
                plant,
            )?;
            let old_bits = if datum == Datum::Float {
                cx.b.bitcast(int_t, None, old).map_err(bug)?
            } else {
                old
            };
            let okv = match success {
                Some(s) => Some(cx.b.select(u32_t, None, s, one, zero).map_err(bug)?),
                None => None,
            };
            Ok((old_bits, okv))
        };
        let (old_bits, okv) = match (k.op, results) {
            (Some(op), _) => {
                let (old_bits, okv) = run(cx, op)?;
                (old_bits, okv.unwrap_or(one))
            }
            (None, Some((old_v, ok_v))) => {
                // One arm per op of OPS (every one runs on an integer type the device has).
                let two = cx.c32(2);
                let code = cx.load_storage(inv_var, u32_t, two)?;
                let z = cx.c(int_t, bytes, 0);
                cx.b.store(old_v, z, None, []).map_err(bug)?;
                cx.b.store(ok_v, one, None, []).map_err(bug)?;
                let codes: Vec<u32> = (0..OPS.len() as u32).collect();
                cx.switch(code, &codes, |cx, i| {
                    let (old, okv) = run(cx, OPS[i])?;
                    cx.b.store(old_v, old, None, []).map_err(bug)?;
                    if let Some(okv) = okv {
                        cx.b.store(ok_v, okv, None, []).map_err(bug)?;
                    }
                    Ok(())
                })?;
                let old = cx.b.load(int_t, None, old_v, None, []).map_err(bug)?;
                let okv = cx.b.load(u32_t, None, ok_v, None, []).map_err(bug)?;
                (old, okv)
            }
            (None, None) => return na("a switching module without its variables (a back-end bug)"),
        };
        let rp = cx.element(ret_var, int_t, lid)?;
        cx.b.store(rp, old_bits, None, []).map_err(bug)?;
        let op_ = cx.element(ok_var, u32_t, lid)?;
        cx.b.store(op_, okv, None, []).map_err(bug)
    })?;
    if let (Some(_), Some(counter)) = (lm_var, counter) {
        cx.b.control_barrier(wg, wg, barrier_sem).map_err(bug)?;
        cx.for_loop_to(counter, lid, elems_c, local, |cx, j| {
            let src = lm_elem_ptr(cx, j)?;
            let v = cx.b.load(elem_t, None, src, None, []).map_err(bug)?;
            let dst = cx.element(mem_var, elem_t, j)?;
            cx.b.store(dst, v, None, []).map_err(bug)
        })?;
    }
    if plant == Plant::CrossCaseWrite {
        // The planted cross-case write: one element past the case's memory.
        let first = cx.b.i_equal(bool_t, None, lid, zero).map_err(bug)?;
        cx.if_then(first, |cx| {
            let v = cx.c(elem_t, bytes, 0x0bad_cafe);
            let dst = cx.element(mem_var, elem_t, elems_c)?;
            cx.b.store(dst, v, None, []).map_err(bug)
        })?;
    }
    cx.end_main(f_id)
}

/// One atomic instruction of `op` on `ty` (typed `t`, as `datum`) at `ptr` with `scope` and
/// relaxed semantics, operands `src0` (and `src1`, a compare-exchange's value): the value it
/// returns (typed `t`) and, for a compare-exchange, whether it succeeded (returned == comparand).
pub(super) fn atomic_instruction(
    cx: &mut Ctx,
    (op, ty, datum): (AtomicOp, DataType, Datum),
    t: Word,
    ptr: Word,
    scope: Word,
    (src0, src1): (Word, Option<Word>),
    plant: Plant,
) -> Result<(Word, Option<Word>), NotApplicable> {
    let wide = ty.bytes() == 8;
    let relaxed = cx.c32(0);
    let signed = matches!(ty, DataType::S32 | DataType::S64);
    let bool_t = cx.bool_t;
    let mut success = None;
    let b = &mut cx.b;
    let old = match (op, datum) {
        (AtomicOp::Add, Datum::Float) => b.atomic_f_add_ext(t, None, ptr, scope, relaxed, src0),
        (AtomicOp::Min, Datum::Float) => b.atomic_f_min_ext(t, None, ptr, scope, relaxed, src0),
        (AtomicOp::Max, Datum::Float) => b.atomic_f_max_ext(t, None, ptr, scope, relaxed, src0),
        (AtomicOp::Add, _) => b.atomic_i_add(t, None, ptr, scope, relaxed, src0),
        (AtomicOp::Sub, _) => b.atomic_i_sub(t, None, ptr, scope, relaxed, src0),
        (AtomicOp::Inc, _) => b.atomic_i_increment(t, None, ptr, scope, relaxed),
        (AtomicOp::Dec, _) => b.atomic_i_decrement(t, None, ptr, scope, relaxed),
        (AtomicOp::PreDec, _) => b
            .atomic_i_decrement(t, None, ptr, scope, relaxed)
            .and_then(|o| {
                // vISA PREDEC returns the new value (A11).
                let one = if wide {
                    b.constant_bit64(t, 1)
                } else {
                    b.constant_bit32(t, 1)
                };
                b.i_sub(t, None, o, one)
            }),
        (AtomicOp::Min, _) if signed => b.atomic_s_min(t, None, ptr, scope, relaxed, src0),
        (AtomicOp::Min, _) => b.atomic_u_min(t, None, ptr, scope, relaxed, src0),
        (AtomicOp::Max, _) if signed && plant == Plant::SmaxAsUmax => {
            b.atomic_u_max(t, None, ptr, scope, relaxed, src0)
        }
        (AtomicOp::Max, _) if signed => b.atomic_s_max(t, None, ptr, scope, relaxed, src0),
        (AtomicOp::Max, _) => b.atomic_u_max(t, None, ptr, scope, relaxed, src0),
        (AtomicOp::And, _) => b.atomic_and(t, None, ptr, scope, relaxed, src0),
        (AtomicOp::Or, _) => b.atomic_or(t, None, ptr, scope, relaxed, src0),
        (AtomicOp::Xor, _) => b.atomic_xor(t, None, ptr, scope, relaxed, src0),
        (AtomicOp::Exch, _) => b.atomic_exchange(t, None, ptr, scope, relaxed, src0),
        (AtomicOp::Cas, _) => {
            let cmp = src0;
            let Some(v) = src1 else {
                return na("cas without its second operand (a back-end bug)");
            };
            let o = b
                .atomic_compare_exchange(t, None, ptr, scope, relaxed, relaxed, v, cmp)
                .map_err(bug)?;
            success = Some(b.i_equal(bool_t, None, o, cmp).map_err(bug)?);
            Ok(o)
        }
        (AtomicOp::Store, _) => b
            .atomic_store(ptr, scope, relaxed, src0)
            .map(|()| cx_zero(b, t, wide)),
        (AtomicOp::IncBounded | AtomicOp::DecBounded, _) => {
            return na("bounded inc/dec (unreachable: checked above)");
        }
    }
    .map_err(bug)?;
    Ok((old, success))
}

fn cx_zero(b: &mut Builder, t: Word, wide: bool) -> Word {
    if wide {
        b.constant_bit64(t, 0)
    } else {
        b.constant_bit32(t, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Plan;

    fn sass(asm: &str) -> Plan {
        crate::back::sass_plan(asm)
    }

    fn spirv(asm: &str, f: &Features, plant: Plant) -> Result<String, NotApplicable> {
        let p = sass(asm);
        let mem = vec![0; p.layout().size as usize];
        emit_atomic(&p, mem, f, plant).map(|d| d.disassemble())
    }

    #[test]
    fn each_op_is_its_instruction() {
        let all = Features::all();
        for (asm, op) in [
            ("ATOM.E.ADD R0, [R2], R4", "OpAtomicIAdd"),
            ("ATOM.E.MAX.S32 R0, [R2], R4", "OpAtomicSMax"),
            ("ATOM.E.MAX R0, [R2], R4", "OpAtomicUMax"),
            ("ATOM.E.MIN.S32 R0, [R2], R4", "OpAtomicSMin"),
            ("ATOM.E.XOR R0, [R2], R4", "OpAtomicXor"),
            ("ATOM.E.EXCH R0, [R2], R4", "OpAtomicExchange"),
            ("ATOM.E.CAS R0, [R2], R4, R5", "OpAtomicCompareExchange"),
            ("ATOM.E.ADD.64 R0, [R2], R4", "OpAtomicIAdd"),
        ] {
            let d = spirv(asm, &all, Plant::None).unwrap();
            assert!(d.contains(op), "{asm}: {d}");
        }
        let d = spirv("ATOM.E.ADD.64 R0, [R2], R4", &all, Plant::None).unwrap();
        assert!(d.contains("OpCapability Int64Atomics"), "{d}");
        // The operands 5 and 6 are subnormal as f32: flushing needs the device's FTZ mode.
        let ftz = Features {
            denorm_ftz_f32: true,
            ..all
        };
        let d = spirv("ATOM.E.ADD.F32.FTZ.RN R0, [R2], R4", &ftz, Plant::None).unwrap();
        assert!(d.contains("OpAtomicFAddEXT"), "{d}");
        assert!(d.contains("SPV_EXT_shader_atomic_float_add"), "{d}");
        assert!(d.contains("DenormFlushToZero 32"), "{d}");
        let why = spirv("ATOM.E.ADD.F32.FTZ.RN R0, [R2], R4", &all, Plant::None).unwrap_err();
        assert!(why.0.contains("subnormal"), "{why}");
    }

    #[test]
    fn the_module_is_the_shapes_and_the_values_are_in_buffers() {
        let all = Features::all();
        let emit = |asm: &str| {
            let p = sass(asm);
            let mem = vec![0; p.layout().size as usize];
            emit_atomic(&p, mem, &all, Plant::None).unwrap()
        };
        let a = emit("ATOM.E.ADD R0, [R2], R4");
        let b = emit("ATOM.E.ADD R0, [R2+0x4], R5");
        assert_eq!(a.words, b.words);
        assert_ne!(a.buffers, b.buffers);
        // Binding 3: N, ELEMS, the op's code, the element indices; binding 4: the operands.
        assert_eq!(a.buffers[3].bytes, le_bytes(4, &[2, 4, 0, 0, 2]));
        assert_eq!(a.buffers[4].bytes, le_bytes(4, &[5, 6]));
        assert_eq!(b.buffers[3].bytes, le_bytes(4, &[2, 4, 0, 1, 3]));
        assert_eq!(b.buffers[4].bytes, le_bytes(4, &[7, 8]));
        assert!(
            a.listing()
                .starts_with("; OP = 0 (add): the module switches on binding 3's word 2\n; binding 3 (N, ELEMS, OP, element index per invocation): {0x00000002, 0x00000004, 0x00000000, 0x00000000, 0x00000002}\n; binding 4 (first operand per invocation): {0x00000005, 0x00000006}\n"),
            "{}",
            a.listing()
        );
        // Issue 31: every integer op of a type and space is one module switching on the op's
        // code (word 2 of binding 3); the second operands are bound for every op.
        let c = emit("ATOM.E.CAS R0, [R2], R4, R5");
        assert_eq!(c.buffers.len(), 6);
        assert_eq!(a.buffers.len(), 6);
        assert_eq!(c.buffers[5].bytes, le_bytes(4, &[7, 8]));
        assert_eq!(c.buffers[3].bytes, le_bytes(4, &[2, 4, 11, 0, 2]));
        assert_eq!(c.words, a.words);
        let m = emit("ATOM.E.MAX R0, [R2], R4");
        assert_eq!(m.words, a.words);
        assert!(m.listing().starts_with("; OP = 6 (max)"), "{}", m.listing());
        let d = a.disassemble();
        assert!(
            d.contains("OpSwitch") && d.contains("OpSelectionMerge"),
            "{d}"
        );
        // Another type is another module; a float atomic keeps its op in the module.
        assert_ne!(emit("ATOM.E.MAX.S32 R0, [R2], R4").words, a.words);
        let p = sass("ATOM.E.ADD.F32.FTZ.RN R0, [R2], R4");
        let ftz = Features {
            denorm_ftz_f32: true,
            ..all
        };
        let e = emit_atomic(&p, vec![0; p.layout().size as usize], &ftz, Plant::None).unwrap();
        assert!(!e.disassemble().contains("OpSwitch"), "{}", e.disassemble());
        assert!(
            e.listing().starts_with("; OP: add in the module"),
            "{}",
            e.listing()
        );
    }

    #[test]
    fn shapes_round_sizes_up_where_the_device_allows() {
        let all = Features::all();
        assert_eq!(shape_sizes(3, 5, 4, &all), (32, 256));
        assert_eq!(shape_sizes(100, 300, 8, &all), (128, 512));
        let small = Features {
            max_invocations: 16,
            max_shared_bytes: 512,
            ..all
        };
        assert_eq!(shape_sizes(3, 5, 4, &small), (4, 8));
        assert_eq!(shape_sizes(12, 200, 4, &small), (16, 200));
    }

    #[test]
    fn no_instruction_or_no_feature_is_not_applicable() {
        let all = Features::all();
        let why = spirv("ATOM.E.INC R0, [R2], R4", &all, Plant::None).unwrap_err();
        assert!(why.0.contains("bounded"), "{why}");
        let none = Features::default();
        let why = spirv("ATOM.E.ADD.64 R0, [R2], R4", &none, Plant::None).unwrap_err();
        assert!(why.0.contains("shaderBufferInt64Atomics"), "{why}");
        let why = spirv("ATOM.E.ADD.F32.FTZ.RN R0, [R2], R4", &none, Plant::None).unwrap_err();
        assert!(why.0.contains("shaderBufferFloat32AtomicAdd"), "{why}");
    }

    #[test]
    fn the_plant_swaps_signed_max_for_unsigned() {
        let d = spirv(
            "ATOM.E.MAX.S32 R0, [R2], R4",
            &Features::all(),
            Plant::SmaxAsUmax,
        )
        .unwrap();
        assert!(
            d.contains("OpAtomicUMax") && !d.contains("OpAtomicSMax"),
            "{d}"
        );
        assert_eq!(Plant::from_name("up_as_down"), Some(Plant::UpAsDown));
        assert_eq!(Plant::from_name("bogus"), None);
    }
}
