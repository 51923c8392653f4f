//! Concurrent cases on Vulkan (issue 12): one SPIR-V compute shader per case over the shared
//! [`ConcurrentPlan`], dispatched once.
//!
//! - Global memory ([`ConcurrentPlan::new`]): one work-group per instruction (`WorkgroupId.x`
//!   selects it), all in one dispatch, so the instructions really run at the same time; each
//!   invocation is one lane looping over its iterations; every atomic at `Device` scope on the
//!   storage buffer (SPIR-V 1.6 §3.42.18 "Atomic Instructions", scope and memory semantics
//!   operands; relaxed semantics, as in the single-instruction emitter).
//! - Work-group local memory (vISA SLM, MSL `threadgroup`; [`ConcurrentPlan::new_local`]): the
//!   instructions are disjoint ranges of invocations of one work-group; a `Workgroup` array
//!   starts as the image after global memory in the storage buffer, then a control barrier
//!   (`Workgroup` scope, AcquireRelease | WorkgroupMemory), the atomics at `Workgroup` scope, a
//!   barrier, and the array is copied back.
//!
//! Every iteration's returned value goes to binding 1 at `[group][iteration][item]` (64-bit
//! elements if some instruction is 64-bit), a compare-exchange's success to binding 2.
//! Global memory is binding 0, viewed as 32-bit and (where needed) 64-bit elements through two
//! variables decorated with the same binding (Vulkan allows aliased descriptors of one type).

use super::atomic::{atomic_instruction, check_atomic};
use super::emit::{Buffer, Ctx, Datum, Dispatch, Features, Plant, bug, na};
use crate::plan::{ConcurrentPlan, NotApplicable, START_READS, START_SPINS};
use atomcts_reference::ir::AtomicOp;
use atomcts_reference::types::Space;
use rspirv::dr::Operand;
use rspirv::spirv::{BuiltIn, Capability, Decoration, LoopControl, StorageClass, Word};

/// Emits the module of a concurrent case on the buffer image `mem` ([`ConcurrentPlan::image`]):
/// dispatch [`Dispatch::groups`] work-groups of [`Dispatch::local_size`].
pub fn emit(
    cp: &ConcurrentPlan,
    mem: Vec<u8>,
    f: &Features,
    plant: Plant,
) -> Result<Dispatch, NotApplicable> {
    let prefix = |k: usize, e: NotApplicable| NotApplicable(format!("instruction {k}: {e}"));
    for (k, g) in cp.groups.iter().enumerate() {
        if check_atomic(g, f).map_err(|e| prefix(k, e))? == Datum::Float {
            return na(format!(
                "instruction {k}: float {} in a concurrent case: not emitted (subnormal and NaN handling are checked per instruction only)",
                g.op.name()
            ));
        }
        if g.op == AtomicOp::Store {
            return na(format!(
                "instruction {k}: stores racing with other instructions: not emitted"
            ));
        }
    }
    let local = cp.local_size() as u32;
    if local == 0 {
        return na("no enabled access: nothing to dispatch");
    }
    if local > f.max_invocations {
        return na(format!(
            "{local} invocations exceed the device's work-group size {}",
            f.max_invocations
        ));
    }
    let image = cp.has_local_image();
    // Local memory is one typed array: one datum width for every instruction on it.
    let mut widths: Vec<u64> = cp
        .groups
        .iter()
        .filter(|g| g.space == Space::Shared)
        .map(|g| g.ty.bytes())
        .collect();
    widths.sort_unstable();
    widths.dedup();
    if widths.len() > 1 {
        return na(
            "32- and 64-bit atomics on one work-group's local memory: one Workgroup array has one element type (aliased workgroup memory needs WorkgroupMemoryExplicitLayoutKHR, not emitted)",
        );
    }
    let lw = widths.first().copied().unwrap_or(4);
    if image && cp.shared.size > u64::from(f.max_shared_bytes) {
        return na(format!(
            "{} bytes of workgroup memory exceed the device's {}",
            cp.shared.size, f.max_shared_bytes
        ));
    }
    let wide = cp.groups.iter().any(|g| g.ty.bytes() == 8);
    let mut cx = Ctx::new();
    if wide {
        cx.b.capability(Capability::Int64);
        cx.b.capability(Capability::Int64Atomics);
    }
    let (u32_t, bool_t) = (cx.u32_t, cx.bool_t);
    let u64_t = wide.then(|| cx.b.type_int(64, 0));
    let int_of = |bytes: u64| if bytes == 8 { u64_t } else { Some(u32_t) };
    // Bindings: 0 memory (32-bit view, 64-bit view), 1 returned values, 2 success flags.
    let mem32 = cx.storage_buffer(u32_t, 4, 0);
    let mem64 = u64_t.map(|t| cx.storage_buffer(t, 8, 0));
    let ret_t = u64_t.unwrap_or(u32_t);
    let ret_bytes: u64 = if wide { 8 } else { 4 };
    let ret_var = cx.storage_buffer(ret_t, ret_bytes as u32, 1);
    let ok_var = cx.storage_buffer(u32_t, 4, 2);
    let groups = cp.work_groups() as u32;
    // Binding 3: the iterations each invocation executed, `[group][item]` (issue 30).
    let done_var = cx.storage_buffer(u32_t, 4, 3);
    let start_var = cp.has_start_line().then(|| cx.storage_buffer(u32_t, 4, 4));
    let mem_view = |bytes: u64| if bytes == 8 { mem64 } else { Some(mem32) };
    let lid_var = cx.builtin(BuiltIn::LocalInvocationIndex);
    let wg_var = {
        let v3 = cx.b.type_vector(u32_t, 3);
        let p = cx.b.type_pointer(None, StorageClass::Input, v3);
        let var = cx.b.variable(p, None, StorageClass::Input, None);
        cx.b.decorate(
            var,
            Decoration::BuiltIn,
            [Operand::BuiltIn(BuiltIn::WorkgroupId)],
        );
        cx.inputs.push(var);
        (var, v3)
    };
    // Per instruction: element indices, operands.
    struct Consts {
        idx: Word,
        src0: Word,
        src1: Option<Word>,
        t: Word,
    }
    let mut consts = Vec::new();
    for g in &cp.groups {
        let bytes = g.ty.bytes();
        let t =
            int_of(bytes).ok_or_else(|| NotApplicable("no 64-bit type (a back-end bug)".into()))?;
        let idx: Vec<u64> = g.items.iter().map(|i| i.offset / bytes).collect();
        let idx = cx.const_array(u32_t, 4, &idx);
        let src0 = cx.const_array(
            t,
            bytes,
            &g.items.iter().map(|i| i.src[0]).collect::<Vec<_>>(),
        );
        let src1 = (g.op == AtomicOp::Cas).then(|| {
            cx.const_array(
                t,
                bytes,
                &g.items.iter().map(|i| i.src[1]).collect::<Vec<_>>(),
            )
        });
        consts.push(Consts { idx, src0, src1, t });
    }
    let lw_t = int_of(lw).ok_or_else(|| NotApplicable("no 64-bit type (a back-end bug)".into()))?;
    let lm_elems = (cp.shared.size / lw) as u32;
    let lm = if image {
        let len = cx.c32(lm_elems);
        let arr = cx.b.type_array(lw_t, len);
        let p = cx.b.type_pointer(None, StorageClass::Workgroup, arr);
        Some(cx.b.variable(p, None, StorageClass::Workgroup, None))
    } else {
        None
    };
    let f_id = cx.begin_main(local)?;
    // Function variables come first in the first block.
    let fp = cx.b.type_pointer(None, StorageClass::Function, u32_t);
    // Per instruction an iteration counter, then the copy loops' counter, then (planted
    // serial loops) per instruction a lane counter.
    let counters: Vec<Word> = (0..=2 * cp.groups.len())
        .map(|_| cx.b.variable(fp, None, StorageClass::Function, None))
        .collect();
    let lid = cx.b.load(u32_t, None, lid_var, None, []).map_err(bug)?;
    let wg3 = cx.b.load(wg_var.1, None, wg_var.0, None, []).map_err(bug)?;
    let wg = cx.b.composite_extract(u32_t, None, wg3, [0]).map_err(bug)?;
    let wg_scope = cx.c32(2); // Scope Workgroup
    let barrier_sem = cx.c32(0x108); // AcquireRelease | WorkgroupMemory
    let lm_ptr = |cx: &mut Ctx, j: Word| -> Result<Word, NotApplicable> {
        let p = cx.b.type_pointer(None, StorageClass::Workgroup, lw_t);
        cx.b.access_chain(p, None, lm.unwrap_or(0), [j])
            .map_err(bug)
    };
    let image_base = (cp.shared_base() / lw) as u32;
    let image_view =
        mem_view(lw).ok_or_else(|| NotApplicable("no 64-bit view (a back-end bug)".into()))?;
    let copy_counter = counters[cp.groups.len()];
    if let Some(start) = start_var {
        // The start line: invocation 0 of each work-group arrives, then waits (at most
        // START_SPINS spins of START_READS reads each, the reads after the first straight-line
        // so that a driver limiting loop iterations, llvmpipe, counts one spin) until every
        // work-group has, so that the instructions overlap even where the device starts its
        // work-groups one after another.
        let zero = cx.c32(0);
        let is0 = cx.b.i_equal(bool_t, None, lid, zero).map_err(bug)?;
        cx.if_then(is0, |cx| {
            let (one, device, relaxed) = (cx.c32(1), cx.c32(1), cx.c32(0));
            let at = cx.element(start, u32_t, zero)?;
            cx.b.atomic_i_add(u32_t, None, at, device, relaxed, one)
                .map_err(bug)?;
            cx.b.store(copy_counter, zero, None, []).map_err(bug)?;
            let (header, check, body, cont, merge) =
                (cx.b.id(), cx.b.id(), cx.b.id(), cx.b.id(), cx.b.id());
            cx.b.branch(header).map_err(bug)?;
            cx.b.begin_block(Some(header)).map_err(bug)?;
            cx.b.loop_merge(merge, cont, LoopControl::NONE, [])
                .map_err(bug)?;
            cx.b.branch(check).map_err(bug)?;
            cx.b.begin_block(Some(check)).map_err(bug)?;
            let j =
                cx.b.load(u32_t, None, copy_counter, None, [])
                    .map_err(bug)?;
            let limit = cx.c32(START_SPINS);
            let more_spins = cx.b.u_less_than(bool_t, None, j, limit).map_err(bug)?;
            let arrived =
                cx.b.atomic_load(u32_t, None, at, device, relaxed)
                    .map_err(bug)?;
            let all = cx.c32(groups);
            let waiting = cx.b.u_less_than(bool_t, None, arrived, all).map_err(bug)?;
            let go_on =
                cx.b.logical_and(bool_t, None, more_spins, waiting)
                    .map_err(bug)?;
            cx.b.branch_conditional(go_on, body, merge, [])
                .map_err(bug)?;
            cx.b.begin_block(Some(body)).map_err(bug)?;
            for _ in 1..START_READS {
                // A read-modify-write adding 0: a read no compiler may drop.
                cx.b.atomic_i_add(u32_t, None, at, device, relaxed, zero)
                    .map_err(bug)?;
            }
            cx.b.branch(cont).map_err(bug)?;
            cx.b.begin_block(Some(cont)).map_err(bug)?;
            let next = cx.b.i_add(u32_t, None, j, one).map_err(bug)?;
            cx.b.store(copy_counter, next, None, []).map_err(bug)?;
            cx.b.branch(header).map_err(bug)?;
            cx.b.begin_block(Some(merge)).map_err(bug)?;
            Ok(())
        })?;
        // The other invocations of the work-group wait for invocation 0.
        cx.b.control_barrier(wg_scope, wg_scope, barrier_sem)
            .map_err(bug)?;
    }
    if image {
        // Local memory starts as its image.
        cx.for_loop(copy_counter, lid, lm_elems, local, |cx, j| {
            let base = cx.c32(image_base);
            let at = cx.b.i_add(u32_t, None, j, base).map_err(bug)?;
            let src = cx.element(image_view, lw_t, at)?;
            let v = cx.b.load(lw_t, None, src, None, []).map_err(bug)?;
            let dst = lm_ptr(cx, j)?;
            cx.b.store(dst, v, None, []).map_err(bug)
        })?;
        cx.b.control_barrier(wg_scope, wg_scope, barrier_sem)
            .map_err(bug)?;
    }
    for (k, (g, c)) in cp.groups.iter().zip(&consts).enumerate() {
        let n = g.items.len() as u32;
        let first = cp.first_item(k) as u32;
        let (lo, hi) = (cx.c32(first), cx.c32(first + n));
        let cond = if cp.local {
            let a =
                cx.b.u_greater_than_equal(bool_t, None, lid, lo)
                    .map_err(bug)?;
            let b = cx.b.u_less_than(bool_t, None, lid, hi).map_err(bug)?;
            cx.b.logical_and(bool_t, None, a, b).map_err(bug)?
        } else {
            let kc = cx.c32(k as u32);
            let a = cx.b.i_equal(bool_t, None, wg, kc).map_err(bug)?;
            let b = cx.b.u_less_than(bool_t, None, lid, hi).map_err(bug)?;
            cx.b.logical_and(bool_t, None, a, b).map_err(bug)?
        };
        let on_local = g.space == Space::Shared;
        let view = if on_local {
            None
        } else {
            Some(
                mem_view(g.ty.bytes())
                    .ok_or_else(|| NotApplicable("no 64-bit view (a back-end bug)".into()))?,
            )
        };
        let (op, ty) = (g.op, g.ty);
        let iters = cp.iterations[k];
        let base = cp.ret_base(k) as u32;
        let thread_base = cp.thread_base(k) as u32;
        let counter = counters[k];
        let t = c.t;
        let (idx_var, src0_var, src1_var) = (c.idx, c.src0, c.src1);
        // One operation of lane `i` in iteration `it`, its result recorded at
        // [group][iteration][item].
        let serial = plant == Plant::GroupSerialRmw
            && !on_local
            && matches!(op, AtomicOp::Add | AtomicOp::Sub);
        let one_op = |cx: &mut Ctx, it: Word, i: Word| -> Result<(), NotApplicable> {
            let e = cx.load_private(idx_var, u32_t, i)?;
            let ptr = match view {
                Some(v) => cx.element(v, t, e)?,
                None => lm_ptr(cx, e)?,
            };
            let src0 = cx.load_private(src0_var, t, i)?;
            let src1 = match src1_var {
                Some(var) => Some(cx.load_private(var, t, i)?),
                None => None,
            };
            let (old, success) = if serial {
                // The planted bug: a plain read-modify-write.
                let old = cx.b.load(t, None, ptr, None, []).map_err(bug)?;
                let new = if op == AtomicOp::Add {
                    cx.b.i_add(t, None, old, src0)
                } else {
                    cx.b.i_sub(t, None, old, src0)
                }
                .map_err(bug)?;
                cx.b.store(ptr, new, None, []).map_err(bug)?;
                (old, None)
            } else {
                let scope = cx.c32(if on_local { 2 } else { 1 }); // Workgroup / Device
                atomic_instruction(cx, (op, ty, Datum::Int), t, ptr, scope, (src0, src1), plant)?
            };
            // slot = base + it * n + i
            let nc = cx.c32(n);
            let bc = cx.c32(base);
            let itn = cx.b.i_mul(u32_t, None, it, nc).map_err(bug)?;
            let s0 = cx.b.i_add(u32_t, None, bc, itn).map_err(bug)?;
            let slot = cx.b.i_add(u32_t, None, s0, i).map_err(bug)?;
            let old = if t == ret_t {
                old
            } else {
                cx.b.u_convert(ret_t, None, old).map_err(bug)?
            };
            let rp = cx.element(ret_var, ret_t, slot)?;
            cx.b.store(rp, old, None, []).map_err(bug)?;
            let one = cx.c32(1);
            let zero = cx.c32(0);
            let okv = match success {
                Some(s) => cx.b.select(u32_t, None, s, one, zero).map_err(bug)?,
                None => one,
            };
            let op_ = cx.element(ok_var, u32_t, slot)?;
            cx.b.store(op_, okv, None, []).map_err(bug)?;
            // The iterations this invocation executed: it + 1 after iteration `it`.
            let tb = cx.c32(thread_base);
            let at = cx.b.i_add(u32_t, None, tb, i).map_err(bug)?;
            let done = cx.b.i_add(u32_t, None, it, one).map_err(bug)?;
            let dp = cx.element(done_var, u32_t, at)?;
            cx.b.store(dp, done, None, []).map_err(bug)
        };
        if serial {
            // Invocation 0 of the instruction's work-group runs all its lanes, in order.
            let kc = cx.c32(k as u32);
            let zero = cx.c32(0);
            let a = cx.b.i_equal(bool_t, None, wg, kc).map_err(bug)?;
            let b = cx.b.i_equal(bool_t, None, lid, zero).map_err(bug)?;
            let cond = cx.b.logical_and(bool_t, None, a, b).map_err(bug)?;
            let lanes = counters[cp.groups.len() + 1 + k];
            cx.if_then(cond, |cx| {
                cx.for_loop(counter, zero, iters, 1, |cx, it| {
                    cx.for_loop(lanes, zero, n, 1, |cx, i| one_op(cx, it, i))
                })
            })?;
            continue;
        }
        cx.if_then(cond, |cx| {
            let i = if first > 0 {
                cx.b.i_sub(u32_t, None, lid, lo).map_err(bug)?
            } else {
                lid
            };
            let zero = cx.c32(0);
            cx.for_loop(counter, zero, iters, 1, |cx, it| one_op(cx, it, i))
        })?;
    }
    if image {
        cx.b.control_barrier(wg_scope, wg_scope, barrier_sem)
            .map_err(bug)?;
        cx.for_loop(copy_counter, lid, lm_elems, local, |cx, j| {
            let src = lm_ptr(cx, j)?;
            let v = cx.b.load(lw_t, None, src, None, []).map_err(bug)?;
            let base = cx.c32(image_base);
            let at = cx.b.i_add(u32_t, None, j, base).map_err(bug)?;
            let dst = cx.element(image_view, lw_t, at)?;
            cx.b.store(dst, v, None, []).map_err(bug)
        })?;
    }
    let words = cx.end_main(f_id)?;
    let slots = cp.ret_len().max(1) as u64;
    Ok(Dispatch {
        words,
        local_size: local,
        groups: cp.work_groups() as u32,
        subgroup_size: None,
        buffers: vec![
            Buffer {
                role: "memory",
                bytes: mem,
            },
            Buffer {
                role: "returned values",
                bytes: vec![0; (slots * ret_bytes) as usize],
            },
            Buffer {
                role: "compare-exchange success",
                bytes: vec![0; (slots * 4) as usize],
            },
            Buffer {
                role: "iterations executed",
                bytes: vec![0; cp.threads().max(1) * 4],
            },
        ]
        .into_iter()
        .chain(start_var.map(|_| Buffer {
            role: "start line",
            bytes: vec![0; 4],
        }))
        .collect(),
        ret_bytes,
        operands: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use atomcts_reference::ir::{Lowered, Lowering};
    use atomcts_reference::program::{Dialect, Program};
    use atomcts_reference::state::Reg;
    use atomcts_reference::types::ElemType;
    use atomcts_reference::{Profile, State};

    fn lower(d: Dialect, asm: &str, s: &State) -> Lowered {
        match Program::parse(d, asm)
            .unwrap()
            .lower(s, &Profile::default())
            .unwrap()
        {
            Lowering::Run(l) => l,
            other => panic!("{other:?}"),
        }
    }

    fn state(lanes: usize, regs: &[(&str, ElemType, u64)]) -> State {
        let mut s = State::new(lanes as u32);
        for (r, ty, v) in regs {
            s.regs.insert(
                (*r).into(),
                Reg {
                    ty: *ty,
                    elems: vec![*v; lanes],
                },
            );
        }
        s.global.alloc(0x1000, 16).unwrap();
        s
    }

    fn emitted(cp: &ConcurrentPlan, s: &State) -> Dispatch {
        emit(cp, cp.image(s), &Features::all(), Plant::None).unwrap()
    }

    #[test]
    fn one_work_group_per_instruction_in_one_dispatch_at_device_scope() {
        let b32 = ElemType::B32;
        let a = state(4, &[("R2", b32, 0x1000), ("R4", b32, 1)]);
        let b = state(2, &[("R2", b32, 0x1000), ("R4", b32, 7)]);
        let la = lower(Dialect::Sass, "ATOM.ADD R0, [R2], R4", &a);
        let lb = lower(Dialect::Sass, "ATOM.EXCH R0, [R2], R4", &b);
        let cp = ConcurrentPlan::new(&[la, lb], &[a.clone(), b], &[3, 5]).unwrap();
        let d = emitted(&cp, &a);
        assert_eq!((d.groups, d.local_size, d.ret_bytes), (2, 4, 4));
        assert_eq!(d.buffers[1].bytes.len(), 22 * 4);
        let text = d.disassemble();
        for needle in [
            "WorkgroupId",
            "OpAtomicIAdd",
            "OpAtomicExchange",
            "OpLoopMerge",
        ] {
            assert!(text.contains(needle), "{needle}: {text}");
        }
        // The iterations executed (binding 3), then the start line: a fifth buffer, an
        // arrival, a bounded wait of START_SPINS spins with START_READS reads each, one barrier.
        assert_eq!(d.buffers.len(), 5);
        assert_eq!(d.buffers[3].bytes.len(), 6 * 4);
        assert!(
            text.lines()
                .any(|l| l.contains("OpConstant") && l.ends_with(" 1024")),
            "{text}"
        );
        assert_eq!(text.matches("OpAtomicIAdd").count(), 1 + 63 + 1, "{text}");
        assert!(text.contains("OpAtomicLoad"), "{text}");
        assert_eq!(text.matches("OpControlBarrier").count(), 1, "{text}");
        // ATOMCTS_START_LINE=0: the work-groups start as the driver starts them.
        let mut off = cp.clone();
        off.start_line = false;
        let d = emitted(&off, &a);
        assert_eq!(d.buffers.len(), 4);
        assert!(!d.disassemble().contains("OpControlBarrier"));
        assert!(
            !text.contains("OpTypePointer Workgroup"),
            "no workgroup memory: {text}"
        );
    }

    #[test]
    fn a_64_bit_instruction_beside_a_32_bit_one_returns_64_bit_values() {
        let b32 = ElemType::B32;
        let a = state(2, &[("R2", b32, 0x1000), ("R4", b32, 1), ("R5", b32, 0)]);
        let b = state(2, &[("R2", b32, 0x1008), ("R4", b32, 1)]);
        let la = lower(Dialect::Sass, "ATOM.ADD.U64 RZ, [R2], R4", &a);
        let lb = lower(Dialect::Sass, "ATOM.ADD RZ, [R2], R4", &b);
        let cp = ConcurrentPlan::new(&[la, lb], &[a.clone(), b], &[1, 1]).unwrap();
        let d = emitted(&cp, &a);
        assert_eq!(d.ret_bytes, 8);
        let text = d.disassemble();
        assert!(text.contains("OpCapability Int64Atomics"), "{text}");
        assert!(text.contains("OpUConvert"), "{text}");
        // Two views of the one memory buffer.
        assert_eq!(text.matches("Binding 0").count(), 2, "{text}");
        // Without 64-bit atomics on the device: not applicable, saying why.
        let why = emit(&cp, cp.image(&a), &Features::default(), Plant::None).unwrap_err();
        assert!(why.0.contains("instruction 0: 64-bit"), "{why}");
    }

    #[test]
    fn local_memory_instructions_are_invocation_ranges_of_one_work_group() {
        let ud = ElemType::UD;
        let mut a = state(2, &[("V10", ud, 4), ("V11", ud, 1)]);
        a.shared.alloc(0, 16).unwrap();
        a.slm_size = Some(16);
        let mut b = a.clone();
        b.regs.get_mut("V11").unwrap().elems = vec![2, 2];
        let la = lower(Dialect::Visa, "DWORD_ATOMIC.add (2) T0 V10 V11 V0 V0", &a);
        let lb = lower(Dialect::Visa, "DWORD_ATOMIC.sub (2) T0 V10 V11 V0 V0", &b);
        let cp = ConcurrentPlan::new_local(&[la, lb], &[a.clone(), b], &[4, 2]).unwrap();
        let d = emitted(&cp, &a);
        assert_eq!((d.groups, d.local_size, d.buffers.len()), (1, 4, 4));
        // Global memory (16 bytes), then the image of local memory.
        assert_eq!(d.buffers[0].bytes.len(), 16 + 16);
        let text = d.disassemble();
        assert_eq!(text.matches("OpControlBarrier").count(), 2, "{text}");
        assert!(text.contains("OpTypePointer Workgroup"), "{text}");
        assert!(text.contains("OpAtomicISub"), "{text}");
    }
}
