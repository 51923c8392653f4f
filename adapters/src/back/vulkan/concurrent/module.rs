//! The SPIR-V of a concurrent case's shape ([`Shape`], issue 31): every per-case number is
//! loaded from the parameters ([`super::params`]), so the words are the shape's alone. The
//! instructions, scopes and barriers are those [`super`] describes.

use super::super::atomic::atomic_instruction;
use super::super::emit::{Ctx, Datum, Plant, bug};
use super::params::{
    FIRST, HEAD, IDX, IMAGE_BASE, IMAGE_ELEMS, INSTR, ITERATIONS, N, PARAMS, RET_BASE, SRC0, SRC1,
    THREAD_BASE, WORK_GROUPS,
};
use crate::plan::{NotApplicable, START_READS, START_SPINS};
use atomcts_reference::ir::AtomicOp;
use atomcts_reference::types::{DataType, Space};
use rspirv::spirv::{BuiltIn, Capability, LoopControl, StorageClass, Word};

/// What a concurrent case's module depends on (issue 31): equal shapes have equal words.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Shape {
    /// Per instruction: its op, type and space.
    pub(super) instrs: Vec<(AtomicOp, DataType, Space)>,
    /// One work-group whose invocation ranges are the instructions
    /// ([`crate::plan::ConcurrentPlan::local`]), rather than one work-group per instruction.
    pub(super) one_group: bool,
    /// `LocalSize` x (rounded up, [`super::super::emit::shape_sizes`]).
    pub(super) local: u32,
    /// Whether the work-groups wait for each other first
    /// ([`crate::plan::ConcurrentPlan::has_start_line`]).
    pub(super) start_line: bool,
    /// The local-memory image: its element width in bytes and the `Workgroup` array's length
    /// (rounded up, [`super::super::emit::shape_sizes`]).
    pub(super) image: Option<(u64, u64)>,
    /// The planted bug, if any (`ATOMCTS_VULKAN_PLANT`).
    pub(super) plant: Plant,
}

/// The ids every part of a concurrent module uses.
struct Ids {
    u32_t: Word,
    bool_t: Word,
    u64_t: Option<Word>,
    /// The returned values' element type (64-bit where some instruction is).
    ret_t: Word,
    /// Binding 0, as 32-bit and 64-bit elements.
    mem32: Word,
    mem64: Option<Word>,
    ret_var: Word,
    ok_var: Word,
    done_var: Word,
    /// Binding 4, as 32-bit and 64-bit words.
    params32: Word,
    params64: Option<Word>,
    /// The `Workgroup` array and its element type.
    lm: Option<(Word, Word)>,
    /// `LocalInvocationIndex` and `WorkgroupId.x`, loaded.
    lid: Word,
    wg: Word,
}

impl Ids {
    fn no_64(what: &str) -> NotApplicable {
        NotApplicable(format!("no 64-bit {what} (a back-end bug)"))
    }

    /// The integer type of `bytes` bytes.
    fn int_of(&self, bytes: u64) -> Result<Word, NotApplicable> {
        if bytes == 8 {
            self.u64_t.ok_or_else(|| Ids::no_64("type"))
        } else {
            Ok(self.u32_t)
        }
    }

    /// The view of global memory with elements of `bytes` bytes.
    fn mem_view(&self, bytes: u64) -> Result<Word, NotApplicable> {
        if bytes == 8 {
            self.mem64.ok_or_else(|| Ids::no_64("view"))
        } else {
            Ok(self.mem32)
        }
    }

    /// The parameter at word `at` (a u32 id).
    fn param(&self, cx: &mut Ctx, at: Word) -> Result<Word, NotApplicable> {
        cx.load_storage(self.params32, self.u32_t, at)
    }

    /// The parameter at constant word `at`.
    fn param_at(&self, cx: &mut Ctx, at: u32) -> Result<Word, NotApplicable> {
        let c = cx.c32(at);
        self.param(cx, c)
    }

    /// Element `i` of the array of `bytes`-byte values starting at word `start` (u32 ids).
    fn param_elem(
        &self,
        cx: &mut Ctx,
        bytes: u64,
        start: Word,
        i: Word,
    ) -> Result<Word, NotApplicable> {
        let u = self.u32_t;
        if bytes == 8 {
            let (p64, t) = (
                self.params64.ok_or_else(|| Ids::no_64("view"))?,
                self.int_of(8)?,
            );
            let one = cx.c32(1);
            let half = cx.b.shift_right_logical(u, None, start, one).map_err(bug)?;
            let at = cx.b.i_add(u, None, half, i).map_err(bug)?;
            cx.load_storage(p64, t, at)
        } else {
            let at = cx.b.i_add(u, None, start, i).map_err(bug)?;
            self.param(cx, at)
        }
    }

    /// A pointer to element `j` (a u32 id) of the `Workgroup` array.
    fn lm_ptr(&self, cx: &mut Ctx, j: Word) -> Result<Word, NotApplicable> {
        let (var, t) = self
            .lm
            .ok_or_else(|| NotApplicable("no Workgroup array (a back-end bug)".into()))?;
        let p = cx.b.type_pointer(None, StorageClass::Workgroup, t);
        cx.b.access_chain(p, None, var, [j]).map_err(bug)
    }
}

/// Builds the module of shape `s`.
pub(super) fn module(s: &Shape) -> Result<Vec<u32>, NotApplicable> {
    let wide = s.instrs.iter().any(|i| i.1.bytes() == 8);
    let mut cx = Ctx::new();
    if wide {
        cx.b.capability(Capability::Int64);
        cx.b.capability(Capability::Int64Atomics);
    }
    let (u32_t, bool_t) = (cx.u32_t, cx.bool_t);
    let u64_t = wide.then(|| cx.b.type_int(64, 0));
    let ret_t = u64_t.unwrap_or(u32_t);
    // Bindings: 0 memory (32-bit view, 64-bit view), 1 returned values, 2 success flags, 3 the
    // iterations each invocation executed `[group][item]` (issue 30), 4 the parameters
    // (read-only; 32-bit and 64-bit views), 5 the start line.
    let mem32 = cx.storage_buffer(u32_t, 4, 0);
    let mem64 = u64_t.map(|t| cx.storage_buffer(t, 8, 0));
    let ret_var = cx.storage_buffer(ret_t, if wide { 8 } else { 4 }, 1);
    let ok_var = cx.storage_buffer(u32_t, 4, 2);
    let done_var = cx.storage_buffer(u32_t, 4, 3);
    let params32 = cx.readonly_buffer(u32_t, 4, PARAMS);
    let params64 = u64_t.map(|t| cx.readonly_buffer(t, 8, PARAMS));
    let start_var = s
        .start_line
        .then(|| cx.storage_buffer(u32_t, 4, PARAMS + 1));
    let lid_var = cx.builtin(BuiltIn::LocalInvocationIndex);
    let wg_var = cx.workgroup_id();
    let lm = match s.image {
        Some((lw, len)) => {
            let t = if lw == 8 { u64_t } else { Some(u32_t) };
            let t = t.ok_or_else(|| Ids::no_64("type"))?;
            let len = cx.c32(len as u32);
            let arr = cx.b.type_array(t, len);
            let p = cx.b.type_pointer(None, StorageClass::Workgroup, arr);
            Some((cx.b.variable(p, None, StorageClass::Workgroup, None), t))
        }
        None => None,
    };
    let f_id = cx.begin_main(s.local)?;
    // Function variables come first in the first block: per instruction an iteration counter,
    // then the copy loops' counter, then (planted serial loops) per instruction a lane counter.
    let fp = cx.b.type_pointer(None, StorageClass::Function, u32_t);
    let count = s.instrs.len();
    let counters: Vec<Word> = (0..=2 * count)
        .map(|_| cx.b.variable(fp, None, StorageClass::Function, None))
        .collect();
    let lid = cx.b.load(u32_t, None, lid_var, None, []).map_err(bug)?;
    let wg3 = cx.b.load(wg_var.1, None, wg_var.0, None, []).map_err(bug)?;
    let wg = cx.b.composite_extract(u32_t, None, wg3, [0]).map_err(bug)?;
    let ids = Ids {
        u32_t,
        bool_t,
        u64_t,
        ret_t,
        mem32,
        mem64,
        ret_var,
        ok_var,
        done_var,
        params32,
        params64,
        lm,
        lid,
        wg,
    };
    let copy_counter = counters[count];
    if let Some(start) = start_var {
        start_line(&mut cx, &ids, start, copy_counter)?;
    }
    if let Some((lw, _)) = s.image {
        // Local memory starts as its image.
        copy_image(&mut cx, &ids, s.local, lw, copy_counter, true)?;
    }
    for k in 0..count {
        instruction(&mut cx, &ids, s, k, counters[k], counters[count + 1 + k])?;
    }
    if let Some((lw, _)) = s.image {
        copy_image(&mut cx, &ids, s.local, lw, copy_counter, false)?;
    }
    cx.end_main(f_id)
}

/// SPIR-V 1.6 §3.42.20 "Barrier Instructions", OpControlBarrier: the barrier of one
/// work-group, `Workgroup` execution and memory scope, AcquireRelease | WorkgroupMemory.
fn barrier(cx: &mut Ctx) -> Result<(), NotApplicable> {
    let wg_scope = cx.c32(2); // Scope Workgroup
    let sem = cx.c32(0x108); // AcquireRelease | WorkgroupMemory
    cx.b.control_barrier(wg_scope, wg_scope, sem).map_err(bug)
}

/// The start line: invocation 0 of each work-group arrives, then waits (at most START_SPINS
/// spins of START_READS reads each, the reads after the first straight-line so that a driver
/// limiting loop iterations, llvmpipe, counts one spin) until every work-group has
/// ([`WORK_GROUPS`]), so that the instructions overlap even where the device starts its
/// work-groups one after another; the other invocations wait for invocation 0 at a barrier.
fn start_line(cx: &mut Ctx, ids: &Ids, start: Word, counter: Word) -> Result<(), NotApplicable> {
    let (u32_t, bool_t) = (ids.u32_t, ids.bool_t);
    let all = ids.param_at(cx, WORK_GROUPS)?;
    let zero = cx.c32(0);
    let is0 = cx.b.i_equal(bool_t, None, ids.lid, zero).map_err(bug)?;
    cx.if_then(is0, |cx| {
        let (one, device, relaxed) = (cx.c32(1), cx.c32(1), cx.c32(0));
        let at = cx.element(start, u32_t, zero)?;
        cx.b.atomic_i_add(u32_t, None, at, device, relaxed, one)
            .map_err(bug)?;
        cx.b.store(counter, zero, None, []).map_err(bug)?;
        let (header, check, body, cont, merge) =
            (cx.b.id(), cx.b.id(), cx.b.id(), cx.b.id(), cx.b.id());
        cx.b.branch(header).map_err(bug)?;
        cx.b.begin_block(Some(header)).map_err(bug)?;
        cx.b.loop_merge(merge, cont, LoopControl::NONE, [])
            .map_err(bug)?;
        cx.b.branch(check).map_err(bug)?;
        cx.b.begin_block(Some(check)).map_err(bug)?;
        let j = cx.b.load(u32_t, None, counter, None, []).map_err(bug)?;
        let limit = cx.c32(START_SPINS);
        let more_spins = cx.b.u_less_than(bool_t, None, j, limit).map_err(bug)?;
        let arrived =
            cx.b.atomic_load(u32_t, None, at, device, relaxed)
                .map_err(bug)?;
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
        cx.b.store(counter, next, None, []).map_err(bug)?;
        cx.b.branch(header).map_err(bug)?;
        cx.b.begin_block(Some(merge)).map_err(bug)?;
        Ok(())
    })?;
    barrier(cx)
}

/// Copies the local-memory image ([`IMAGE_ELEMS`] elements of `lw` bytes from memory element
/// [`IMAGE_BASE`]) into the `Workgroup` array then a barrier (`into`), or a barrier then the
/// array back out; the `local` invocations share the elements.
fn copy_image(
    cx: &mut Ctx,
    ids: &Ids,
    local: u32,
    lw: u64,
    counter: Word,
    into: bool,
) -> Result<(), NotApplicable> {
    let (u32_t, lid) = (ids.u32_t, ids.lid);
    let (lw_t, view) = (ids.int_of(lw)?, ids.mem_view(lw)?);
    let elems = ids.param_at(cx, IMAGE_ELEMS)?;
    let base = ids.param_at(cx, IMAGE_BASE)?;
    if !into {
        barrier(cx)?;
    }
    cx.for_loop_to(counter, lid, elems, local, |cx, j| {
        let at = cx.b.i_add(u32_t, None, j, base).map_err(bug)?;
        let mem = cx.element(view, lw_t, at)?;
        let lm = ids.lm_ptr(cx, j)?;
        let (src, dst) = if into { (mem, lm) } else { (lm, mem) };
        let v = cx.b.load(lw_t, None, src, None, []).map_err(bug)?;
        cx.b.store(dst, v, None, []).map_err(bug)
    })?;
    if into {
        barrier(cx)?;
    }
    Ok(())
}

/// Instruction `k` of shape `s`: its invocations (invocation `i` of [`N`], from [`FIRST`] in one
/// work-group, else in work-group `k`) each run [`ITERATIONS`] iterations of its atomic on
/// element `[IDX + i]` with operands `[SRC0 + i]` (and `[SRC1 + i]`), recording the returned
/// value at `[group][iteration][item]` ([`RET_BASE`]), a compare-exchange's success, and the
/// iterations it executed ([`THREAD_BASE`]). `counter` and `lanes` are `Function` variables.
fn instruction(
    cx: &mut Ctx,
    ids: &Ids,
    s: &Shape,
    k: usize,
    counter: Word,
    lanes: Word,
) -> Result<(), NotApplicable> {
    let (u32_t, bool_t, ret_t, lid) = (ids.u32_t, ids.bool_t, ids.ret_t, ids.lid);
    let (op, ty, space) = s.instrs[k];
    let h = HEAD + INSTR * k as u32;
    let field = |cx: &mut Ctx, f: u32| ids.param_at(cx, h + f);
    let n = field(cx, N)?;
    let first = field(cx, FIRST)?;
    let iters = field(cx, ITERATIONS)?;
    let base = field(cx, RET_BASE)?;
    let thread_base = field(cx, THREAD_BASE)?;
    let idx_at = field(cx, IDX)?;
    let src0_at = field(cx, SRC0)?;
    let src1_at = match op {
        AtomicOp::Cas => Some(field(cx, SRC1)?),
        _ => None,
    };
    let bytes = ty.bytes();
    let t = ids.int_of(bytes)?;
    let on_local = space == Space::Shared;
    let view = if on_local {
        None
    } else {
        Some(ids.mem_view(bytes)?)
    };
    // One operation of lane `i` in iteration `it`, its result recorded at
    // [group][iteration][item].
    let serial = s.plant == Plant::GroupSerialRmw
        && !on_local
        && matches!(op, AtomicOp::Add | AtomicOp::Sub);
    let one_op = |cx: &mut Ctx, it: Word, i: Word| -> Result<(), NotApplicable> {
        let e = ids.param_elem(cx, 4, idx_at, i)?;
        let ptr = match view {
            Some(v) => cx.element(v, t, e)?,
            None => ids.lm_ptr(cx, e)?,
        };
        let src0 = ids.param_elem(cx, bytes, src0_at, i)?;
        let src1 = match src1_at {
            Some(at) => Some(ids.param_elem(cx, bytes, at, i)?),
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
            atomic_instruction(
                cx,
                (op, ty, Datum::Int),
                t,
                ptr,
                scope,
                (src0, src1),
                s.plant,
            )?
        };
        // slot = base + it * n + i
        let itn = cx.b.i_mul(u32_t, None, it, n).map_err(bug)?;
        let s0 = cx.b.i_add(u32_t, None, base, itn).map_err(bug)?;
        let slot = cx.b.i_add(u32_t, None, s0, i).map_err(bug)?;
        let old = if t == ret_t {
            old
        } else {
            cx.b.u_convert(ret_t, None, old).map_err(bug)?
        };
        let rp = cx.element(ids.ret_var, ret_t, slot)?;
        cx.b.store(rp, old, None, []).map_err(bug)?;
        let one = cx.c32(1);
        let zero = cx.c32(0);
        let okv = match success {
            Some(s) => cx.b.select(u32_t, None, s, one, zero).map_err(bug)?,
            None => one,
        };
        let op_ = cx.element(ids.ok_var, u32_t, slot)?;
        cx.b.store(op_, okv, None, []).map_err(bug)?;
        // The iterations this invocation executed: it + 1 after iteration `it`.
        let at = cx.b.i_add(u32_t, None, thread_base, i).map_err(bug)?;
        let done = cx.b.i_add(u32_t, None, it, one).map_err(bug)?;
        let dp = cx.element(ids.done_var, u32_t, at)?;
        cx.b.store(dp, done, None, []).map_err(bug)
    };
    let kc = cx.c32(k as u32);
    let zero = cx.c32(0);
    if serial {
        // Invocation 0 of the instruction's work-group runs all its lanes, in order.
        let a = cx.b.i_equal(bool_t, None, ids.wg, kc).map_err(bug)?;
        let b = cx.b.i_equal(bool_t, None, lid, zero).map_err(bug)?;
        let cond = cx.b.logical_and(bool_t, None, a, b).map_err(bug)?;
        return cx.if_then(cond, |cx| {
            cx.for_loop_to(counter, zero, iters, 1, |cx, it| {
                cx.for_loop_to(lanes, zero, n, 1, |cx, i| one_op(cx, it, i))
            })
        });
    }
    let cond = if s.one_group {
        let hi = cx.b.i_add(u32_t, None, first, n).map_err(bug)?;
        let a =
            cx.b.u_greater_than_equal(bool_t, None, lid, first)
                .map_err(bug)?;
        let b = cx.b.u_less_than(bool_t, None, lid, hi).map_err(bug)?;
        cx.b.logical_and(bool_t, None, a, b).map_err(bug)?
    } else {
        let a = cx.b.i_equal(bool_t, None, ids.wg, kc).map_err(bug)?;
        let b = cx.b.u_less_than(bool_t, None, lid, n).map_err(bug)?;
        cx.b.logical_and(bool_t, None, a, b).map_err(bug)?
    };
    cx.if_then(cond, |cx| {
        let i = if s.one_group {
            cx.b.i_sub(u32_t, None, lid, first).map_err(bug)?
        } else {
            lid
        };
        cx.for_loop_to(counter, zero, iters, 1, |cx, it| one_op(cx, it, i))
    })
}
