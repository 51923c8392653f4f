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
//!
//! The module's words depend only on the case's shape ([`Shape`], issue 31): per instruction
//! its op, type and space; one work-group or one per instruction; the start line; the
//! local-memory image's element width; the work-group size and the `Workgroup` array's length,
//! both rounded up as for a single instruction ([`shape_sizes`]: the next power of two, at least
//! [`super::emit::MIN_LOCAL`] invocations and [`super::emit::MIN_LM_BYTES`] bytes, where the
//! device allows). Every per-case number (element indices, operands, iterations, invocation
//! counts and ranges, result slots, the work-groups the start line waits for, the image's size
//! and place) is read from the read-only parameters at binding 4 ([`params`]); invocations past
//! an instruction's count skip it. One pipeline then serves every case of a shape (lavapipe
//! compiles each pipeline with LLVM, about 0.27 s cold).

mod params;

use super::atomic::{atomic_instruction, check_atomic};
use super::emit::{Buffer, Ctx, Datum, Dispatch, Features, Plant, bug, le_bytes, na, shape_sizes};
use crate::plan::{ConcurrentPlan, NotApplicable, START_READS, START_SPINS};
use atomcts_reference::ir::AtomicOp;
use atomcts_reference::types::{DataType, Space};
use params::{
    FIRST, HEAD, IDX, IMAGE_BASE, IMAGE_ELEMS, INSTR, ITERATIONS, N, PARAMS, RET_BASE, SRC0, SRC1,
    THREAD_BASE, WORK_GROUPS,
};
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
    let n = cp.local_size() as u32;
    if n == 0 {
        return na("no enabled access: nothing to dispatch");
    }
    if n > f.max_invocations {
        return na(format!(
            "{n} invocations exceed the device's work-group size {}",
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
    let (local, lm_len) = shape_sizes(n, cp.shared.size / lw, lw, f);
    let shape = Shape {
        instrs: cp.groups.iter().map(|g| (g.op, g.ty, g.space)).collect(),
        one_group: cp.local,
        local,
        start_line: cp.has_start_line(),
        image: image.then_some((lw, lm_len)),
        plant,
    };
    let words = MODULES.with(|m| {
        let mut m = m.borrow_mut();
        if let Some(w) = m.get(&shape) {
            return Ok(w.clone());
        }
        let w = module(&shape)?;
        if m.len() >= MAX_MODULES {
            m.clear();
        }
        m.insert(shape.clone(), w.clone());
        Ok::<_, NotApplicable>(w)
    })?;
    let p = params::params(cp, lw);
    let wide = cp.groups.iter().any(|g| g.ty.bytes() == 8);
    let ret_bytes: u64 = if wide { 8 } else { 4 };
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
            Buffer {
                role: "parameters",
                bytes: le_bytes(
                    4,
                    &p.words.iter().map(|w| u64::from(*w)).collect::<Vec<_>>(),
                ),
            },
        ]
        .into_iter()
        .chain(shape.start_line.then(|| Buffer {
            role: "start line",
            bytes: vec![0; 4],
        }))
        .collect(),
        ret_bytes,
        operands: p.listing,
    })
}

/// What a concurrent case's module depends on (issue 31): equal shapes have equal words.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Shape {
    /// Per instruction: its op, type and space.
    instrs: Vec<(AtomicOp, DataType, Space)>,
    /// One work-group whose invocation ranges are the instructions ([`ConcurrentPlan::local`]),
    /// rather than one work-group per instruction.
    one_group: bool,
    /// `LocalSize` x (rounded up, [`shape_sizes`]).
    local: u32,
    /// Whether the work-groups wait for each other first ([`ConcurrentPlan::has_start_line`]).
    start_line: bool,
    /// The local-memory image: its element width in bytes and the `Workgroup` array's length
    /// (rounded up, [`shape_sizes`]).
    image: Option<(u64, u64)>,
    plant: Plant,
}

/// The most modules kept by shape per thread; when full, the map is emptied.
const MAX_MODULES: usize = 1024;

thread_local! {
    /// Built modules by shape.
    static MODULES: std::cell::RefCell<std::collections::HashMap<Shape, Vec<u32>>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
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
fn module(s: &Shape) -> Result<Vec<u32>, NotApplicable> {
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

/// The control barrier of one work-group: `Workgroup` scope, AcquireRelease | WorkgroupMemory
/// (SPIR-V 1.6 §3.42.20 "Barrier Instructions").
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
        // Work-groups of 4 invocations rounded up to MIN_LOCAL.
        assert_eq!((d.groups, d.local_size, d.ret_bytes), (2, 32, 4));
        assert_eq!(d.buffers[1].bytes.len(), 22 * 4);
        // Binding 4: 2 work-groups, no image; per instruction N, FIRST, ITERATIONS, RET_BASE,
        // THREAD_BASE and where its indices and operands start; then the arrays.
        #[rustfmt::skip]
        let words: [u64; 31] = [
            2, 0, 0,
            4, 0, 3, 0, 0, 19, 23, 0,
            2, 0, 5, 12, 4, 27, 29, 0,
            0, 0, 0, 0, 1, 1, 1, 1,
            0, 0, 7, 7,
        ];
        assert_eq!(d.buffers[4].role, "parameters");
        assert_eq!(d.buffers[4].bytes, le_bytes(4, &words));
        let text = d.disassemble();
        for needle in [
            "WorkgroupId",
            "OpAtomicIAdd",
            "OpAtomicExchange",
            "OpLoopMerge",
        ] {
            assert!(text.contains(needle), "{needle}: {text}");
        }
        // The iterations executed (binding 3), the parameters (binding 4, read-only), then the
        // start line: a sixth buffer, an arrival, a bounded wait of START_SPINS spins with
        // START_READS reads each, one barrier.
        assert_eq!(d.buffers.len(), 6);
        assert_eq!(d.buffers[3].bytes.len(), 6 * 4);
        assert_eq!(d.buffers[5].role, "start line");
        assert_eq!(text.matches("NonWritable").count(), 1, "{text}");
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
        assert_eq!(d.buffers.len(), 5);
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
        // Two views of the one memory buffer, two of the parameters.
        assert_eq!(text.matches("Binding 0").count(), 2, "{text}");
        assert_eq!(text.matches("Binding 4").count(), 2, "{text}");
        // The 64-bit operands start at an even word (a 64-bit view's element), low word first.
        let w =
            |i: usize| u32::from_le_bytes(d.buffers[4].bytes[4 * i..4 * i + 4].try_into().unwrap());
        let src0 = w(3 + params::SRC0 as usize) as usize;
        assert_eq!(src0 % 2, 0);
        assert_eq!(
            (w(src0), w(src0 + 1), w(src0 + 2), w(src0 + 3)),
            (1, 0, 1, 0)
        );
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
        assert_eq!((d.groups, d.local_size, d.buffers.len()), (1, 32, 5));
        // Global memory (16 bytes), then the image of local memory: its 4 elements from
        // element 4 (words 1, 2 of binding 4); instruction 1's invocations from 2.
        assert_eq!(d.buffers[0].bytes.len(), 16 + 16);
        let w =
            |i: usize| u32::from_le_bytes(d.buffers[4].bytes[4 * i..4 * i + 4].try_into().unwrap());
        assert_eq!((w(0), w(1), w(2)), (1, 4, 4));
        let h1 = (params::HEAD + params::INSTR) as usize;
        assert_eq!((w(h1), w(h1 + 1), w(h1 + 2)), (2, 2, 2));
        let text = d.disassemble();
        assert_eq!(text.matches("OpControlBarrier").count(), 2, "{text}");
        assert!(text.contains("OpTypePointer Workgroup"), "{text}");
        assert!(text.contains("OpAtomicISub"), "{text}");
        // The Workgroup array rounded up to MIN_LM_BYTES: 256 elements.
        let len = text
            .lines()
            .find_map(|l| {
                l.split_once(" = OpConstant  %3  256")
                    .map(|(id, _)| id.to_string())
            })
            .expect("a constant 256");
        assert!(text.contains(&format!("OpTypeArray %3 {len}\n")), "{text}");
        // Other lane counts (4 and 1), iterations and operands: the same module; instruction
        // 1's invocations now from 4.
        let local = |lanes: &[usize], its: &[u32]| {
            let st: Vec<State> = lanes
                .iter()
                .map(|n| {
                    let mut s = state(*n, &[("V10", ud, 8), ("V11", ud, 3)]);
                    s.shared.alloc(0, 16).unwrap();
                    s.slm_size = Some(16);
                    s
                })
                .collect();
            let l: Vec<Lowered> = lanes
                .iter()
                .zip(&st)
                .enumerate()
                .map(|(k, (n, s))| {
                    let op = if k % 2 == 0 { "add" } else { "sub" };
                    lower(
                        Dialect::Visa,
                        &format!("DWORD_ATOMIC.{op} ({n}) T0 V10 V11 V0 V0"),
                        s,
                    )
                })
                .collect();
            let cp = ConcurrentPlan::new_local(&l, &st, its).unwrap();
            emitted(&cp, &st[0])
        };
        let e = local(&[4, 1], &[1, 7]);
        assert_eq!(e.words, d.words);
        assert_ne!(e.buffers[4], d.buffers[4]);
        let w =
            |i: usize| u32::from_le_bytes(e.buffers[4].bytes[4 * i..4 * i + 4].try_into().unwrap());
        assert_eq!((w(h1), w(h1 + 1), w(h1 + 2)), (1, 4, 7));
        // 34 invocations round up to 64, 3 or 32 to 32: 64 is another module.
        let (f, g, h) = (
            local(&[16, 16, 2], &[1, 1, 1]),
            local(&[1, 1, 1], &[1, 1, 1]),
            local(&[16, 8, 8], &[2, 1, 3]),
        );
        assert_eq!((f.local_size, g.local_size, h.local_size), (64, 32, 32));
        assert_ne!(f.words, g.words);
        assert_eq!(g.words, h.words);
    }

    /// Two instructions `asm` on states of `lanes` lanes with addresses `at` (one per lane) and
    /// operand `v`, iterated `its` times.
    fn case(
        asm: [&str; 2],
        lanes: [usize; 2],
        at: [&[u64]; 2],
        v: [u64; 2],
        its: [u32; 2],
    ) -> Dispatch {
        let b32 = ElemType::B32;
        let states: Vec<State> = (0..2)
            .map(|k| {
                let mut s = state(
                    lanes[k],
                    &[("R4", b32, v[k]), ("R5", b32, !v[k] & 0xffff_ffff)],
                );
                s.regs.insert(
                    "R2".into(),
                    Reg {
                        ty: b32,
                        elems: at[k].to_vec(),
                    },
                );
                s
            })
            .collect();
        let lowered: Vec<Lowered> = (0..2)
            .map(|k| lower(Dialect::Sass, asm[k], &states[k]))
            .collect();
        let cp = ConcurrentPlan::new(&lowered, &states, &its).unwrap();
        emitted(&cp, &states[0])
    }

    #[test]
    fn cases_of_one_shape_share_their_module_and_differ_in_their_parameters() {
        let asm = ["ATOM.ADD R0, [R2], R4", "ATOM.CAS R0, [R2], R4, R5"];
        let a = case(asm, [4, 2], [&[0x1000; 4], &[0x1004; 2]], [1, 7], [3, 5]);
        let b = case(
            asm,
            [3, 1],
            [&[0x1008, 0x100c, 0x1000], &[0x1000]],
            [0xffff_fffe, 9],
            [1, 2],
        );
        assert_eq!(a.words, b.words);
        assert_eq!((a.local_size, b.local_size), (32, 32));
        assert_ne!(a.buffers[4], b.buffers[4]);
        let w = |d: &Dispatch, i: usize| {
            u32::from_le_bytes(d.buffers[4].bytes[4 * i..4 * i + 4].try_into().unwrap())
        };
        // Instruction 1 of b: 1 invocation, 2 iterations, returned values after a's 3 x 1;
        // its element index 0, comparand 9, new value !9.
        let h1 = (params::HEAD + params::INSTR) as usize;
        assert_eq!((w(&b, h1), w(&b, h1 + 2), w(&b, h1 + 3)), (1, 2, 3));
        let at = |f: u32| w(&b, h1 + f as usize) as usize;
        assert_eq!(
            (
                w(&b, at(params::IDX)),
                w(&b, at(params::SRC0)),
                w(&b, at(params::SRC1))
            ),
            (0, 9, !9u32)
        );
        // Instruction 0 of b: the indices of 0x1008, 0x100c, 0x1000; operand 0xfffffffe.
        let at = |f: u32| w(&b, params::HEAD as usize + f as usize) as usize;
        let idx: Vec<u32> = (0..3).map(|i| w(&b, at(params::IDX) + i)).collect();
        assert_eq!(idx, [2, 3, 0]);
        assert_eq!(w(&b, at(params::SRC0) + 2), 0xffff_fffe);
        // The module holds none of the case's numbers: no constant array, no 0xfffffffe.
        let text = b.disassemble();
        assert!(!text.contains("OpConstantComposite"), "{text}");
        assert!(!text.contains("4294967294"), "{text}");
        // Another op, or another order of the ops, is another module.
        let c = case(
            ["ATOM.EXCH R0, [R2], R4", asm[1]],
            [4, 2],
            [&[0x1000; 4], &[0x1004; 2]],
            [1, 7],
            [3, 5],
        );
        assert_ne!(c.words, a.words);
        let d = case(
            [asm[1], asm[0]],
            [2, 4],
            [&[0x1004; 2], &[0x1000; 4]],
            [7, 1],
            [5, 3],
        );
        assert_ne!(d.words, a.words);
    }

    #[test]
    fn the_listing_shows_each_instructions_parameters() {
        let asm = ["ATOM.ADD R0, [R2], R4", "ATOM.CAS R0, [R2], R4, R5"];
        let a = case(asm, [2, 1], [&[0x1000, 0x1004], &[0x1008]], [1, 7], [3, 5]);
        let want = "\
; binding 4 (parameters, 26 words): 2 work-group(s); no local memory
; binding 4 words 3..11: instruction 0 (add u32 on global memory): 2 invocation(s) from local invocation 0, 3 iteration(s), returned values from slot 0, iterations executed from slot 0
; binding 4 (words 19.., instruction 0: element index per invocation): {0x00000000, 0x00000001}
; binding 4 (words 21.., instruction 0: first operand per invocation): {0x00000001, 0x00000001}
; binding 4 words 11..19: instruction 1 (cas u32 on global memory): 1 invocation(s) from local invocation 0, 5 iteration(s), returned values from slot 6, iterations executed from slot 2
; binding 4 (words 23.., instruction 1: element index per invocation): {0x00000002}
; binding 4 (words 24.., instruction 1: first operand per invocation): {0x00000007}
; binding 4 (words 25.., instruction 1: second operand per invocation): {0xfffffff8}
";
        assert_eq!(a.operands, want);
        assert!(a.listing().starts_with(want));
    }
}
