//! Concurrent cases on OpenCL (issue 12): one kernel, one NDRange launch, one work-group per
//! instruction (so the instructions really run at the same time on the device), each work-item
//! one lane looping over its iterations, every atomic at device scope (work-group scope when
//! the launch is one work-group; a device reporting work-group scope only runs no launch of
//! several, issue 30). Every iteration's returned value goes to `ret[group][iteration][item]`,
//! and the iterations each work-item executed to the words after the start line in `mem`
//! ([`counts_at`]), so that a loop cut short is told apart from a lost update.
//!
//! Instructions on work-group local memory (vISA SLM, MSL `threadgroup`;
//! [`ConcurrentPlan::new_local`]) run as disjoint ranges of work-items of one work-group: a
//! `__local` array starts as the image after global memory in `mem`, a barrier, the atomics
//! (work-group scope on local memory), a barrier, and the array is copied back.
//!
//! A compare-and-swap loop (FORMAT.md, "Compare-and-swap loops") is a real retry loop around
//! the compare-exchange built-in: `ret` gets the value its successful attempt returned (the
//! compare), `ok` the number of attempts of that iteration.
//!
//! The kernel's text holds the case's shape only (per instruction its OpenCL C type and space,
//! whether it is a compare-and-swap loop, the start line, the size of local memory); every
//! number of the case (offsets, operands, iterations, where its returned values and counts go)
//! and each instruction's op (the kernel switches on it, `OPS`) are in its parameter buffer,
//! argument 3 ([`params`]), so that the driver builds one program per shape, not one per case
//! (issue 31: a fuzzing campaign on PoCL was its compiles).

use super::emit::{Features, Form, KERNEL_NAME, Kernel, arms, call, form, op_code, scalar, widen};
use crate::plan::{ConcurrentPlan, NotApplicable, START_READS, START_SPINS};
use atomcts_reference::concurrent::LOOP_UPDATES;
use atomcts_reference::ir::{AtomicOp, Compare};
use atomcts_reference::types::Space;
use std::fmt::Write as _;

/// The bytes [`emit`]'s kernel needs after [`ConcurrentPlan::image`] in `mem`: the start line
/// of a launch of several work-groups (8 bytes), then one `uint` per work-item that runs an
/// instruction, the iterations it executed ([`counts_at`]; issue 30), padded to 8 bytes.
pub fn extra_bytes(cp: &ConcurrentPlan) -> usize {
    let counts = 4 * cp.threads();
    start_bytes(cp) + counts.next_multiple_of(8)
}

fn start_bytes(cp: &ConcurrentPlan) -> usize {
    if cp.has_start_line() { 8 } else { 0 }
}

/// Where in `mem` the iteration counts start (`[group][item]`, [`ConcurrentPlan::thread_base`]).
pub fn counts_at(cp: &ConcurrentPlan) -> usize {
    cp.image_len() as usize + start_bytes(cp)
}

/// The iterations each work-item executed, from `mem` after the launch ([`counts_at`]).
pub fn read_counts(cp: &ConcurrentPlan, mem: &[u8]) -> Vec<u32> {
    let at = counts_at(cp);
    (0..cp.threads())
        .map(|t| {
            mem.get(at + 4 * t..at + 4 * t + 4)
                .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        })
        .collect()
}

/// `P`'s words before the instructions' headers: where the counts start in `mem`
/// ([`counts_at`]), where the start line is, the work-groups it waits for, where local
/// memory's image starts.
const HEAD: usize = 4;
/// `P`'s words per instruction, after [`HEAD`]: work-items, iterations, its first `ret` and
/// `ok` slot, its first count slot, its first work-item (local memory), a compare-and-swap
/// loop's operand, where its `OFF`, `SRC0` and `SRC1` arrays (a word per work-item each)
/// start in `P`, and its op's code ([`crate::back::OPS`]; a loop's update op).
const PER_GROUP: usize = 8;

/// The parameter buffer of `cp`'s kernel (argument 3, `__global const ulong *P`): `HEAD` words,
/// then `PER_GROUP` words per instruction, then each instruction's byte offsets, first and
/// second operands (bit patterns, zero-extended).
pub fn params(cp: &ConcurrentPlan) -> Vec<u64> {
    let mut p = vec![
        counts_at(cp) as u64,
        cp.image_len(),
        cp.work_groups() as u64,
        cp.shared_base(),
    ];
    let mut data = Vec::new();
    let data_at = HEAD + PER_GROUP * cp.groups.len();
    for (k, g) in cp.groups.iter().enumerate() {
        let first = if cp.local { cp.first_item(k) } else { 0 };
        let lp = cp.loops.get(k).copied().flatten();
        let operand = lp.map_or(0, |l| l.operand);
        let op = op_code(lp.map_or(g.op, |l| l.update)).map_or(u64::MAX, u64::from);
        p.extend([
            g.items.len() as u64,
            u64::from(cp.iterations[k]),
            cp.ret_base(k) as u64,
            cp.thread_base(k) as u64,
            first as u64,
            operand,
            (data_at + data.len()) as u64,
            op,
        ]);
        data.extend(g.items.iter().map(|i| i.offset));
        data.extend(g.items.iter().map(|i| i.src[0]));
        data.extend(g.items.iter().map(|i| i.src[1]));
    }
    p.extend(data);
    p
}

/// [`params`] as a person reads it beside the kernel: one comment line per instruction.
pub fn params_listing(cp: &ConcurrentPlan) -> String {
    let mut s = format!(
        "// argument 3, P: counts at byte {} of mem, start line at {} ({} work-groups), local memory's image at {}\n",
        counts_at(cp),
        cp.image_len(),
        cp.work_groups(),
        cp.shared_base()
    );
    for (k, g) in cp.groups.iter().enumerate() {
        let list = |f: &dyn Fn(&crate::plan::Item) -> String| {
            g.items.iter().map(f).collect::<Vec<_>>().join(", ")
        };
        let _ = writeln!(
            s,
            "// instruction {k} ({} {}): {} work-items (lanes {}) x {} iterations, OFF = {{{}}}, SRC0 = {{{}}}, SRC1 = {{{}}}{}",
            g.op.name(),
            g.ty.name(),
            g.items.len(),
            list(&|i| i.lane.to_string()),
            cp.iterations[k],
            list(&|i| i.offset.to_string()),
            list(&|i| format!("{:#x}", i.src[0])),
            list(&|i| format!("{:#x}", i.src[1])),
            cp.loops
                .get(k)
                .copied()
                .flatten()
                .map_or(String::new(), |l| format!(
                    ", cas loop: desired = {}(cmp, {:#x})",
                    l.update.name(),
                    l.operand
                )),
        );
    }
    s
}

/// The OpenCL C expression of type `t` with the bits of `P`'s word `e` (truncated to `t`'s
/// width; conversions to unsigned types wrap, the signed types reinterpret).
fn from_word(t: &str, e: &str) -> String {
    match t {
        "uint" => format!("(uint){e}"),
        "int" => format!("as_int((uint){e})"),
        "ulong" => e.to_string(),
        _ => format!("as_long({e})"),
    }
}

/// Emits the kernel of a concurrent case: launch it with `groups.len()` work-groups of
/// [`local_size`] work-items, on `mem` = [`ConcurrentPlan::image`] then [`extra_bytes`] zeros,
/// with [`params`] as argument 3 ([`Kernel::params`]).
pub fn emit(
    cp: &ConcurrentPlan,
    features: &Features,
    plant: super::emit::Plant,
) -> Result<Kernel, NotApplicable> {
    // The scope of atomics on global memory: device scope across work-groups; within one
    // work-group, work-group scope, which holds every work-item that touches the memory during
    // the launch (what the host reads after it completes is the same at either scope), so a
    // device reporting work-group scope only runs those cases too.
    let global_scope = if cp.work_groups() > 1 {
        "memory_scope_device"
    } else {
        "memory_scope_work_group"
    };
    let mut s = String::new();
    let w = &mut s;
    let mut c11_any = false;
    let mut bodies = String::new();
    // The types of the compare-and-swap loops (each needs its update function).
    let mut updates: Vec<&str> = Vec::new();
    if cp.local {
        let _ = writeln!(
            w,
            "// concurrent: {} instructions, disjoint work-items of one work-group sharing local memory",
            cp.groups.len()
        );
    } else {
        let _ = writeln!(
            w,
            "// concurrent: {} instructions, one work-group each, launched together; device-scope atomics",
            cp.groups.len()
        );
    }
    if cp.groups.iter().any(|g| g.ty.bytes() == 8) {
        let _ = writeln!(
            w,
            "#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable"
        );
        let _ = writeln!(
            w,
            "#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable"
        );
    }
    for (k, g) in cp.groups.iter().enumerate() {
        let t = scalar(g.op, g.ty, g.env.compare)
            .map_err(|e| NotApplicable(format!("instruction {k}: {e}")))?;
        let wide = g.ty.bytes() == 8;
        let fm = form(g.op, features, wide, plant)
            .map_err(|e| NotApplicable(format!("instruction {k}: {e}")))?;
        if g.op == AtomicOp::Cas && g.env.compare != Compare::Bitwise {
            return Err(NotApplicable(format!(
                "instruction {k}: cas with a numeric compare (A9): OpenCL's compare-exchange compares bits"
            )));
        }
        if g.op == AtomicOp::Store {
            return Err(NotApplicable(format!(
                "instruction {k}: plain stores racing with other instructions: not emitted"
            )));
        }
        let b = &mut bodies;
        // Instruction k's numbers and op, from its header in P.
        let _ = writeln!(
            b,
            "    {{ // instruction {k}: {t} on {} memory",
            g.space.name()
        );
        let _ = writeln!(
            b,
            "        __global const ulong *H = P + {}u;",
            HEAD + PER_GROUP * k
        );
        let _ = writeln!(
            b,
            "        const uint n = (uint)H[0], iters = (uint)H[1], base = (uint)H[2], thread = (uint)H[3], first = (uint)H[4], op = (uint)H[7];"
        );
        let _ = writeln!(b, "        __global const ulong *OFF = P + H[6];");
        if let Some(lp) = cp.loops.get(k).copied().flatten() {
            if cp.local {
                return Err(NotApplicable(format!(
                    "instruction {k}: a compare-and-swap loop among instructions sharing one work-group's local memory is not emitted"
                )));
            }
            c11_any |= matches!(fm, Form::C11(_));
            if !updates.contains(&t) {
                updates.push(t);
            }
            emit_loop(b, k, (t, fm, global_scope), lp)?;
        } else {
            let arms = arms(t, features, plant);
            c11_any |= arms.iter().any(|(_, _, f)| matches!(f, Form::C11(_)));
            emit_body(b, k, (t, g.space), &arms, global_scope, cp.local);
        }
        let _ = writeln!(b, "    }}");
    }
    // After every instruction's own reasons (what OpenCL C cannot express at all comes first).
    if cp.work_groups() > 1 && features.work_group_scope_only {
        return Err(NotApplicable(
            "the device reports atomics at work-group scope only (CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES has no CL_DEVICE_ATOMIC_SCOPE_DEVICE): instructions in different work-groups on one location need device scope".into(),
        ));
    }
    for t in updates {
        emit_update(w, t);
    }
    let _ = writeln!(
        w,
        "__kernel void {KERNEL_NAME}(__global uchar *mem, __global ulong *ret, __global int *ok, __global const ulong *P) {{"
    );
    let _ = writeln!(w, "    const uint g = get_group_id(0);");
    let _ = writeln!(w, "    const uint i = get_local_id(0);");
    let _ = writeln!(
        w,
        "    __global uint *done = (__global uint *)(mem + (uint)P[0]); // iterations each work-item executed"
    );
    if cp.has_start_line() {
        // The start line (after the image in `mem`): work-item 0 of each work-group arrives,
        // then waits (at most START_SPINS spins of START_READS reads each) until every
        // work-group has, so that the instructions overlap even where the driver starts
        // work-groups one after another.
        let _ = writeln!(w, "    if (i == 0u) {{");
        let _ = writeln!(
            w,
            "        volatile __global uint *start = (volatile __global uint *)(mem + (uint)P[1]);"
        );
        let _ = writeln!(w, "        const uint groups = (uint)P[2];");
        let _ = writeln!(w, "        atomic_inc(start);");
        let _ = writeln!(
            w,
            "        for (uint s = 0; s < {START_SPINS}u && atomic_add(start, 0u) < groups; s++) {{"
        );
        let _ = writeln!(
            w,
            "            // {} more reads, straight-line: a driver that limits loop iterations (llvmpipe) counts one spin",
            START_READS - 1
        );
        let reads = vec!["(void)atomic_add(start, 0u);"; START_READS as usize - 1];
        for line in reads.chunks(8) {
            let _ = writeln!(w, "            {}", line.join(" "));
        }
        let _ = writeln!(w, "        }}");
        let _ = writeln!(w, "    }}");
        let _ = writeln!(w, "    barrier(CLK_GLOBAL_MEM_FENCE);");
    }
    let image = cp.has_local_image();
    let ss = cp.shared.size;
    if image {
        // Local memory as 8-byte words (so every datum keeps its alignment), from its image.
        let _ = writeln!(w, "    __local ulong lm[{}];", ss / 8);
        let _ = writeln!(w, "    const uint sb = (uint)P[3];");
        let _ = writeln!(
            w,
            "    for (uint j = i; j < {ss}u; j += get_local_size(0)) ((__local uchar *)lm)[j] = mem[sb + j];"
        );
        let _ = writeln!(w, "    barrier(CLK_LOCAL_MEM_FENCE);");
    }
    w.push_str(&bodies);
    if image {
        let _ = writeln!(w, "    barrier(CLK_LOCAL_MEM_FENCE);");
        let _ = writeln!(
            w,
            "    for (uint j = i; j < {ss}u; j += get_local_size(0)) mem[sb + j] = ((__local uchar *)lm)[j];"
        );
    }
    let _ = writeln!(w, "}}");
    Ok(Kernel {
        source: s.into(),
        options: if c11_any {
            "-cl-std=CL3.0".into()
        } else {
            String::new()
        },
        elem_bytes: 1,
        args: None,
        params: Some(params(cp)),
    })
}

/// The body of instruction `k` (not a loop): its work-items (`i` in `[first, first + n)` on
/// local memory, `i < n` of work-group `k` on global memory) each run `iters` iterations of
/// the built-in chosen by `op` ([`crate::back::OPS`]) on their datum at `OFF[j]`.
fn emit_body(
    b: &mut String,
    k: usize,
    (t, space): (&str, Space),
    arms: &[(u64, AtomicOp, Form)],
    global_scope: &str,
    local: bool,
) {
    let wide = t.contains("long");
    if local {
        let _ = writeln!(b, "        if (i >= first && i < first + n) {{");
        let _ = writeln!(b, "            const uint j = i - first;");
    } else {
        let _ = writeln!(b, "        if (g == {k}u && i < n) {{");
        let _ = writeln!(b, "            const uint j = i;");
    }
    let _ = writeln!(
        b,
        "            const {t} src0 = {}, src1 = {};",
        from_word(t, "OFF[n + j]"),
        from_word(t, "OFF[2u * n + j]")
    );
    let on_local = space == Space::Shared;
    let (space_q, base_ptr) = if on_local {
        ("__local", "(__local uchar *)lm")
    } else {
        ("__global", "mem")
    };
    let _ = writeln!(
        b,
        "            volatile {space_q} {t} *pl = (volatile {space_q} {t} *)({base_ptr} + (uint)OFF[j]);"
    );
    if arms.iter().any(|(_, _, f)| matches!(f, Form::C11(_))) {
        let _ = writeln!(
            b,
            "            volatile {space_q} atomic_{t} *pc = (volatile {space_q} atomic_{t} *)pl;"
        );
    }
    let _ = writeln!(b, "            for (uint it = 0; it < iters; it++) {{");
    let _ = writeln!(b, "                {t} old = 0;");
    let _ = writeln!(b, "                int success = 1;");
    let _ = writeln!(b, "                switch (op) {{");
    let scope = if on_local {
        "memory_scope_work_group"
    } else {
        global_scope
    };
    for (code, op, fm) in arms {
        let call = call(*op, *fm, wide, scope);
        let _ = writeln!(
            b,
            "                case {code}u: {call} break; // {}",
            op.name()
        );
    }
    let _ = writeln!(b, "                }}");
    record(b, t, ("j", "old", "success"));
    let _ = writeln!(b, "            }}");
    let _ = writeln!(b, "        }}");
}

/// The end of an iteration of work-item `j`: its returned value `old` (of type `t`, its bits:
/// [`widen`]) and its `ok` word at
/// `[group][iteration][item]`, and the iterations it has executed (issue 30).
fn record(b: &mut String, t: &str, (j, old, ok): (&str, &str, &str)) {
    let _ = writeln!(
        b,
        "                ret[base + it * n + {j}] = {};",
        widen(t, old)
    );
    let _ = writeln!(b, "                ok[base + it * n + {j}] = {ok};");
    let _ = writeln!(
        b,
        "                done[thread + {j}] = it + 1u; // iterations executed (issue 30)"
    );
}

/// The unsigned OpenCL C type of `t`'s width (wrapping arithmetic without signed overflow).
fn unsigned(t: &str) -> &'static str {
    if t.contains("long") { "ulong" } else { "uint" }
}

/// The function `update_<t>(op, cmp, K)` of a kernel with compare-and-swap loops on `t`: the
/// desired value of an attempt, for every update op of [`LOOP_UPDATES`] (its code in
/// [`crate::back::OPS`]).
fn emit_update(w: &mut String, t: &str) {
    let u = unsigned(t);
    let _ = writeln!(w, "{t} update_{t}(uint op, {t} cmp, {t} K) {{");
    let _ = writeln!(w, "    switch (op) {{");
    for &op in LOOP_UPDATES {
        let e = match op {
            AtomicOp::Add => format!("as_{t}(({u})cmp + ({u})K)"),
            AtomicOp::Sub => format!("as_{t}(({u})cmp - ({u})K)"),
            AtomicOp::And => "cmp & K".to_string(),
            AtomicOp::Or => "cmp | K".to_string(),
            AtomicOp::Xor => "cmp ^ K".to_string(),
            AtomicOp::Min => "min(cmp, K)".to_string(),
            _ => "max(cmp, K)".to_string(),
        };
        let _ = writeln!(
            w,
            "    case {}u: return {e}; // {}",
            op_code(op).map_or(u32::MAX, |c| c),
            op.name()
        );
    }
    let _ = writeln!(w, "    }}");
    let _ = writeln!(w, "    return cmp;");
    let _ = writeln!(w, "}}");
}

/// The body of instruction `k`, a compare-and-swap loop: per iteration, attempts with
/// `desired = update_<t>(op, cmp, K)` until one succeeds; a failed attempt's returned value is
/// the next compare; the next iteration starts from the value stored.
fn emit_loop(
    b: &mut String,
    k: usize,
    (t, fm, scope): (&str, Form, &str),
    lp: atomcts_reference::concurrent::CasLoop,
) -> Result<(), NotApplicable> {
    if !LOOP_UPDATES.contains(&lp.update) {
        return Err(NotApplicable(format!(
            "instruction {k}: cas_loop update {} is not emitted",
            lp.update.name()
        )));
    }
    let update = format!("update_{t}(op, cmp, K)");
    let _ = writeln!(b, "        if (g == {k}u && i < n) {{ // cas loop on {t}");
    let _ = writeln!(b, "            const {t} K = {};", from_word(t, "H[5]"));
    let _ = writeln!(b, "            {t} cmp = {};", from_word(t, "OFF[n + i]"));
    let _ = writeln!(b, "            for (uint it = 0; it < iters; it++) {{");
    let _ = writeln!(b, "                int attempts = 0;");
    let _ = writeln!(b, "                int won = 0;");
    let _ = writeln!(b, "                for (;;) {{");
    let _ = writeln!(b, "                    const {t} desired = {update};");
    let _ = writeln!(b, "                    attempts++;");
    match fm {
        Form::Legacy(name) => {
            let f = if t.contains("long") {
                format!("atom_{name}")
            } else {
                format!("atomic_{name}")
            };
            let p = format!("(volatile __global {t} *)(mem + (uint)OFF[i])");
            let _ = writeln!(
                b,
                "                    const {t} old = {f}({p}, cmp, desired);"
            );
            let _ = writeln!(
                b,
                "                    if (old == cmp) {{ won = 1; break; }}"
            );
            let _ = writeln!(b, "                    cmp = old;");
        }
        Form::C11(name) => {
            let p = format!("(volatile __global atomic_{t} *)(mem + (uint)OFF[i])");
            let ord = "memory_order_relaxed";
            let _ = writeln!(
                b,
                "                    if (atomic_{name}_explicit({p}, &cmp, desired, {ord}, {ord}, {scope})) {{ won = 1; break; }}"
            );
            let _ = writeln!(
                b,
                "                    // failed: cmp now holds the value the object held"
            );
        }
    }
    let _ = writeln!(b, "                }}");
    let _ = writeln!(
        b,
        "                if (!won) break; // the retry loop was cut short: this iteration did not run"
    );
    record(b, t, ("i", "cmp", "attempts"));
    let _ = writeln!(b, "                cmp = {update};");
    let _ = writeln!(b, "            }}");
    let _ = writeln!(b, "        }}");
    Ok(())
}

/// The work-group size of a concurrent launch: the largest instruction's lanes (one
/// work-group each), or all instructions' lanes (one work-group).
pub fn local_size(cp: &ConcurrentPlan) -> usize {
    cp.local_size()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::ConcurrentPlan;
    use atomcts_reference::ir::Lowering;
    use atomcts_reference::program::{Dialect, Program};
    use atomcts_reference::state::Reg;
    use atomcts_reference::types::ElemType;
    use atomcts_reference::{Profile, State};

    fn state(lanes: u32, r4: u64) -> State {
        let mut s = State::new(lanes);
        for (r, v) in [("R2", 0x1000), ("R4", r4)] {
            s.regs.insert(
                r.into(),
                Reg {
                    ty: ElemType::B32,
                    elems: vec![v; lanes as usize],
                },
            );
        }
        s.global.alloc(0x1000, 8).unwrap();
        s
    }

    fn lower(asm: &str, s: &State) -> atomcts_reference::ir::Lowered {
        match Program::parse(Dialect::Sass, asm)
            .unwrap()
            .lower(s, &Profile::default())
            .unwrap()
        {
            Lowering::Run(l) => l,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn one_work_group_per_instruction_device_scope_and_flat_returns() {
        let (a, b) = (state(4, 1), state(2, 7));
        let la = lower("ATOM.ADD R0, [R2], R4", &a);
        let lb = lower("ATOM.EXCH R0, [R2], R4", &b);
        let cp = ConcurrentPlan::new(&[la, lb], &[a, b], &[3, 5]).unwrap();
        assert_eq!((cp.ret_base(1), cp.ret_len()), (12, 22));
        // The start line (8 bytes), then 6 counts of iterations executed (24 bytes).
        assert_eq!(
            (local_size(&cp), extra_bytes(&cp), counts_at(&cp)),
            (4, 32, 16)
        );
        let f = Features {
            int64_base: true,
            int64_extended: true,
            c11: true,
            ..Features::default()
        };
        let k = emit(&cp, &f, super::super::emit::Plant::None).unwrap();
        // The text holds the shape; the numbers are in P: per instruction its work-items,
        // iterations, first ret slot, first count slot.
        let p = k.params.as_ref().unwrap();
        assert_eq!(*p, params(&cp));
        let head = |g: usize| &p[HEAD + PER_GROUP * g..HEAD + PER_GROUP * (g + 1)];
        assert_eq!(head(0)[..4], [4, 3, 0, 0]);
        assert_eq!(head(1)[..4], [2, 5, 12, 4]);
        // The op: its code in OPS, which the kernel switches on.
        assert_eq!((head(0)[7], head(1)[7]), (0, 10));
        assert!(
            k.source.contains(
                "case 0u: old = atomic_fetch_add_explicit(pc, src0, memory_order_relaxed, memory_scope_device); break; // add"
            ),
            "{}",
            k.source
        );
        assert!(
            k.source
                .contains("case 2u: old = atomic_inc(pl); break; // inc"),
            "{}",
            k.source
        );
        assert!(k.source.contains("if (g == 0u && i < n)"), "{}", k.source);
        assert!(k.source.contains("if (g == 1u && i < n)"), "{}", k.source);
        assert!(k.source.contains("for (uint it = 0; it < iters; it++)"));
        assert!(k.source.contains("memory_scope_device"));
        assert!(!k.source.contains("memory_scope_work_group"));
        assert!(k.source.contains("ret[base + it * n + j] = (ulong)old;"));
        // Offsets and operands: a word per work-item, where the instruction's header says.
        let data = |g: usize| &p[head(g)[6] as usize..];
        assert_eq!(data(0)[..12], [0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0]);
        assert_eq!(data(1)[..6], [0, 0, 7, 7, 0, 0]);
        assert_eq!(p.len(), HEAD + 2 * PER_GROUP + 3 * 4 + 3 * 2);
        // The start line after the 8 bytes of memory, waiting for both work-groups: 1,024
        // spins of 64 reads, 63 of them straight-line (issue 30).
        assert_eq!(p[..3], [16, 8, 2]);
        assert!(k.source.contains("(mem + (uint)P[1])"), "{}", k.source);
        assert!(
            k.source
                .contains("for (uint s = 0; s < 1024u && atomic_add(start, 0u) < groups; s++) {"),
            "{}",
            k.source
        );
        assert_eq!(
            k.source.matches("(void)atomic_add(start, 0u);").count(),
            63,
            "{}",
            k.source
        );
        // Each work-item's iterations executed, after every iteration, at [group][item].
        assert!(k.source.contains("(mem + (uint)P[0])"), "{}", k.source);
        assert!(
            k.source.contains("done[thread + j] = it + 1u;"),
            "{}",
            k.source
        );
        // A device with work-group scope only (rusticl) runs no launch of several work-groups.
        let wg_only = Features {
            work_group_scope_only: true,
            ..f
        };
        let why = emit(&cp, &wg_only, super::super::emit::Plant::None).unwrap_err();
        assert!(why.0.contains("work-group scope only"), "{why}");
        // One work-group: work-group scope holds every work-item, also on such a device.
        let s1 = state(4, 1);
        let one = ConcurrentPlan::new(&[lower("ATOM.ADD R0, [R2], R4", &s1)], &[s1], &[3]);
        let one = emit(&one.unwrap(), &wg_only, super::super::emit::Plant::None).unwrap();
        assert!(
            one.source.contains("memory_scope_work_group"),
            "{}",
            one.source
        );
        assert!(
            !one.source.contains("memory_scope_device"),
            "{}",
            one.source
        );
        assert!(!one.source.contains("start"), "{}", one.source);
        // The counts read back from `mem`.
        let mut mem = vec![0u8; 8 + extra_bytes(&cp)];
        mem[16..20].copy_from_slice(&3u32.to_le_bytes());
        mem[36..40].copy_from_slice(&2u32.to_le_bytes());
        assert_eq!(read_counts(&cp, &mem), vec![3, 0, 0, 0, 0, 2]);
        let legacy = emit(&cp, &Features::default(), super::super::emit::Plant::None).unwrap();
        assert!(
            legacy
                .source
                .contains("case 10u: old = atomic_xchg(pl, src0); break; // exch")
        );
        assert_eq!(legacy.options, "");
    }

    fn slm(src: u64) -> State {
        let mut s = State::default();
        s.shared.alloc(0, 16).unwrap();
        s.slm_size = Some(16);
        for (r, v) in [("V10", [0u64, 4]), ("V11", [src, src])] {
            s.regs.insert(
                r.into(),
                Reg {
                    ty: ElemType::UD,
                    elems: v.to_vec(),
                },
            );
        }
        s
    }

    #[test]
    fn local_memory_instructions_are_work_item_ranges_of_one_work_group() {
        let (a, b) = (slm(1), slm(2));
        let lower_visa = |asm: &str, s: &State| match Program::parse(Dialect::Visa, asm)
            .unwrap()
            .lower(s, &Profile::default())
            .unwrap()
        {
            Lowering::Run(l) => l,
            other => panic!("{other:?}"),
        };
        let la = lower_visa("DWORD_ATOMIC.add (2) T0 V10 V11 V0 V0", &a);
        let lb = lower_visa("DWORD_ATOMIC.xchg (2) T0 V10 V11 V0 V0", &b);
        let cp = ConcurrentPlan::new_local(&[la, lb], &[a, b], &[4, 2]).unwrap();
        assert_eq!(
            (local_size(&cp), extra_bytes(&cp)),
            (4, 16),
            "4 counts, no start line"
        );
        let f = Features {
            c11: true,
            ..Features::default()
        };
        let k = emit(&cp, &f, super::super::emit::Plant::None).unwrap();
        let src = &k.source;
        assert!(src.contains("__local ulong lm[2];"), "{src}");
        assert!(src.contains("mem[sb + j]"), "{src}");
        assert!(src.contains("if (i >= first && i < first + n)"), "{src}");
        assert!(src.contains("const uint j = i - first;"), "{src}");
        assert!(src.contains("memory_scope_work_group"), "{src}");
        assert!(!src.contains("memory_scope_device"), "{src}");
        assert!(src.contains("ret[base + it * n + j]"), "{src}");
        // Local memory's image at byte 8 of mem; instruction 1: work-items 2 and 3 (2 of
        // them), 2 iterations, ret slots from 8, count slots from 2, first work-item 2.
        let p = k.params.as_ref().unwrap();
        assert_eq!(p[3], 8);
        assert_eq!(p[HEAD + PER_GROUP..HEAD + PER_GROUP + 5], [2, 2, 8, 2, 2]);
        // Copied in before a barrier, copied out after one.
        assert_eq!(
            src.matches("barrier(CLK_LOCAL_MEM_FENCE);").count(),
            2,
            "{src}"
        );
    }

    #[test]
    fn cas_loops_are_real_retry_loops_and_other_back_ends_can_refuse_them() {
        let mut a = state(2, 0);
        a.regs.insert(
            "R5".into(),
            Reg {
                ty: ElemType::B32,
                elems: vec![0; 2],
            },
        );
        let b = state(2, 1);
        let la = lower("ATOM.CAS.32 R0, [R2], R4, R5", &a);
        let lb = lower("ATOM.ADD R0, [R2], R4", &b);
        let mut cp = ConcurrentPlan::new(&[la, lb], &[a, b], &[4, 4]).unwrap();
        assert!(cp.require_no_loops().is_ok());
        cp.loops[0] = Some(atomcts_reference::concurrent::CasLoop {
            update: AtomicOp::Add,
            operand: 3,
        });
        let why = cp.require_no_loops().unwrap_err().0;
        assert!(
            why.contains("instruction 0 is a compare-and-swap loop"),
            "{why}"
        );
        let c11 = Features {
            int64_base: true,
            int64_extended: true,
            c11: true,
            ..Features::default()
        };
        let k = emit(&cp, &c11, super::super::emit::Plant::None).unwrap();
        let src = &k.source;
        assert!(src.contains("for (;;) {"), "{src}");
        assert!(
            src.contains("const uint desired = update_uint(op, cmp, K);"),
            "{src}"
        );
        assert!(
            src.contains("if (atomic_compare_exchange_strong_explicit((volatile __global atomic_uint *)(mem + (uint)OFF[i]), &cmp, desired"),
            "{src}"
        );
        assert!(src.contains("const uint K = (uint)H[5];"), "{src}");
        assert!(
            src.contains("case 0u: return as_uint((uint)cmp + (uint)K); // add"),
            "{src}"
        );
        assert!(src.contains("case 6u: return max(cmp, K); // max"), "{src}");
        assert_eq!(
            k.params.as_ref().unwrap()[HEAD + 7],
            0,
            "the loop's update op (add)"
        );
        assert_eq!(
            k.params.as_ref().unwrap()[HEAD + 5],
            3,
            "the loop's operand"
        );
        assert!(src.contains("ok[base + it * n + i] = attempts;"), "{src}");
        // An iteration counts once its attempt succeeded; a retry loop cut short ends the lane.
        assert!(src.contains("{ won = 1; break; }"), "{src}");
        assert!(src.contains("if (!won) break;"), "{src}");
        assert!(src.contains("done[thread + i] = it + 1u;"), "{src}");
        assert!(src.contains("done[thread + j] = it + 1u;"), "{src}");
        assert_eq!(k.options, "-cl-std=CL3.0");
        let legacy = emit(&cp, &Features::default(), super::super::emit::Plant::None)
            .unwrap()
            .source;
        assert!(
            legacy.contains("const uint old = atomic_cmpxchg((volatile __global uint *)(mem + (uint)OFF[i]), cmp, desired);"),
            "{legacy}"
        );
        assert!(
            legacy.contains("if (old == cmp) { won = 1; break; }"),
            "{legacy}"
        );
    }

    #[test]
    fn cases_of_one_shape_share_one_kernel_text_and_differ_in_their_parameters() {
        let f = Features {
            c11: true,
            ..Features::default()
        };
        let kernel = |asm: [&str; 2], lanes: [u32; 2], src: [u64; 2], iters: [u32; 2]| {
            let (a, b) = (state(lanes[0], src[0]), state(lanes[1], src[1]));
            let (la, lb) = (lower(asm[0], &a), lower(asm[1], &b));
            let cp = ConcurrentPlan::new(&[la, lb], &[a, b], &iters).unwrap();
            emit(&cp, &f, super::super::emit::Plant::None).unwrap()
        };
        let ops = ["ATOM.ADD R0, [R2], R4", "ATOM.EXCH R0, [R2], R4"];
        let one = kernel(ops, [4, 2], [1, 7], [3, 5]);
        // Every arm of an op switch ends in its `break` (no comment before it, no fall through).
        let arms = one.source.lines().map(str::trim_start);
        for line in arms.filter(|l| l.starts_with("case ") && !l.contains("return")) {
            let code = line.split("//").next().unwrap();
            assert!(code.trim_end().ends_with("break;"), "{line}");
        }
        assert!(
            one.source
                .contains("/* vISA PREDEC returns the new value (A11) */ break;")
        );
        // Other lanes, operands and iterations: the same program, other numbers.
        let other = kernel(ops, [8, 3], [0xffff_fffe, 9], [16, 2]);
        assert_eq!(one.source, other.source);
        assert_eq!(one.options, other.options);
        assert_ne!(one.params, other.params);
        let p = other.params.unwrap();
        assert_eq!(p[HEAD..HEAD + 4], [8, 16, 0, 0]);
        assert_eq!(p[HEAD + PER_GROUP..HEAD + PER_GROUP + 4], [3, 2, 128, 8]);
        let at = p[HEAD + 6] as usize;
        assert_eq!(
            p[at + 8..at + 16],
            [0xffff_fffe; 8],
            "SRC0 of instruction 0"
        );
        // Another op of the type: the same program, another op code.
        let max = kernel(
            ["ATOM.ADD R0, [R2], R4", "ATOM.MAX R0, [R2], R4"],
            [4, 2],
            [1, 7],
            [3, 5],
        );
        assert_eq!(one.source, max.source);
        let code = |k: &Kernel| k.params.as_ref().unwrap()[HEAD + PER_GROUP + 7];
        assert_eq!((code(&one), code(&max)), (10, 6));
        // A signed op is another type, so another program.
        let smax = kernel(
            ["ATOM.ADD R0, [R2], R4", "ATOM.MAX.S32 R0, [R2], R4"],
            [4, 2],
            [1, 7],
            [3, 5],
        );
        assert_ne!(one.source, smax.source);
        assert!(
            smax.source
                .contains("const int src0 = as_int((uint)OFF[n + j])"),
            "{}",
            smax.source
        );
        // The listing beside a failing case shows the numbers.
        let (a, b) = (state(4, 1), state(2, 7));
        let (la, lb) = (lower(ops[0], &a), lower(ops[1], &b));
        let cp = ConcurrentPlan::new(&[la, lb], &[a, b], &[3, 5]).unwrap();
        let listing = params_listing(&cp);
        assert!(
            listing.contains(
                "instruction 1 (exch u32): 2 work-items (lanes 0, 1) x 5 iterations, OFF = {0, 0}, SRC0 = {0x7, 0x7}"
            ),
            "{listing}"
        );
    }
}
