//! One memory instruction as one OpenCL C kernel: a [`Plan`] -> one work-item per IR access in
//! one work-group ([`emit`]), or one work-group per case of a batch ([`emit_batched`]).
//!
//! The built-in is the one with exactly the op's semantics (`form` in [`super::emit`]). The
//! kernel's text depends only on the case's shape: its OpenCL C type, space and the device's
//! built-in forms; the element indices, operands and (for every integer op but a store) the op
//! are kernel arguments ([`Args`]; the kernel switches on `OP`, issue 31), so one built program
//! serves every case of that shape (issue 9: PoCL spends about 0.14 s of CPU building one). The
//! listing printed beside a failing case ([`Kernel::listing`]) gives the source with every
//! argument's values, enough to reproduce the dispatch with any OpenCL host.

use super::emit::{
    Args, Features, Form, KERNEL_NAME, Kernel, Plant, arms, call, form, na, op_code, scalar, widen,
};
use super::float::{FloatAtomic, float_atomic};
use crate::plan::{NotApplicable, Plan};
use atomcts_reference::ir::{AtomicOp, Compare, Env};
use atomcts_reference::types::{DataType, Space};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

/// Emits the kernel for `plan` on a device with `features`.
pub fn emit(
    plan: &Plan,
    features: &Features,
    plant: Plant,
    title: &str,
) -> Result<Kernel, NotApplicable> {
    let _ = title;
    emit_form(plan, features, plant, false, None)
}

/// [`emit`] for an adapter that keeps the texts it wrote (`texts`, its own: for one device's
/// `features` and one `plant`): a shape's text is written once and shared (issue 31: writing
/// it was a third of the time of the thread that runs generated cases on PoCL).
pub fn emit_kept(
    plan: &Plan,
    features: &Features,
    plant: Plant,
    texts: &mut Texts,
) -> Result<Kernel, NotApplicable> {
    emit_form(plan, features, plant, false, Some(texts))
}

/// What a single-instruction kernel's text depends on besides the device's features and the
/// plant: the op, the datum's type, the space, the instruction's environment (rounding,
/// compare...) and whether it is the batched form. (The op is in the key even where the kernel
/// switches on it.)
type TextKey = (AtomicOp, DataType, Space, Env, bool);

/// Single-instruction kernel texts already written, by [`TextKey`]: an adapter's own (one
/// device's features, one plant).
#[derive(Debug, Default)]
pub struct Texts {
    kept: HashMap<TextKey, Arc<str>>,
}

/// The batched form of [`emit`]'s kernel (issue 31): the same body, run by one work-group per
/// case of a batch. Work-group `g` runs the case whose memory region starts at element
/// `MEMBASE[g]` of `mem`, whose per-work-item arguments (and `ret`, `ok` slots) start at
/// `ARGBASE[g]`, with `NS[g]` work-items running an access and `ELEMSV[g]` elements of memory
/// (the `__local` copy of a shared-memory case is sized for the largest case of the batch).
/// Its arguments after `SRC1`: `MEMBASE`, `ARGBASE`, `NS`, `ELEMSV`, `OPV` (each case's op
/// code), then `lm` for shared memory. The text, like [`emit`]'s, depends on the shape only.
pub fn emit_batched(
    plan: &Plan,
    features: &Features,
    plant: Plant,
    title: &str,
) -> Result<Kernel, NotApplicable> {
    let _ = title;
    emit_form(plan, features, plant, true, None)
}

/// [`emit`] or [`emit_batched`], the text taken from `texts` where it was written before.
fn emit_form(
    plan: &Plan,
    features: &Features,
    plant: Plant,
    batched: bool,
    texts: Option<&mut Texts>,
) -> Result<Kernel, NotApplicable> {
    let fa = float_atomic(plan, features)?;
    let t = match fa {
        Some(x) => x.bits,
        None => scalar(plan.op, plan.ty, plan.env.compare)?,
    };
    // The operands' and the returned value's type: the float type of a float atomic.
    let val_t = fa.map_or(t, |x| x.float);
    let wide = plan.ty.bytes() == 8;
    let fm = form(plan.op, features, wide, plant)?;
    if plan.op == AtomicOp::Cas && plan.env.compare != Compare::Bitwise {
        return na("cas with a numeric compare (A9): OpenCL's compare-exchange compares bits");
    }
    if plan.op == AtomicOp::Store && matches!(fm, Form::Legacy(_)) && plan.has_shared_addresses() {
        return na(
            "plain stores racing on one address are a data race (undefined) in OpenCL C 1.x",
        );
    }
    let n = plan.items.len();
    if n == 0 {
        return na("no enabled access: nothing to dispatch");
    }
    let bytes = plan.ty.bytes();
    let shared = plan.space == Space::Shared;
    // An integer op of OPS (not a float atomic, not a store): the kernel switches on its code,
    // argument `OP`, one arm per op the device runs on `t`, so that the text depends on the
    // type, space and the device's forms only (issue 31).
    let arms = if fa.is_none() && op_code(plan.op).is_some() {
        let arms = arms(t, features, plant);
        if !arms.iter().any(|(_, op, _)| *op == plan.op) {
            return na(format!(
                "{} on {t}: no arm of the op switch",
                plan.op.name()
            ));
        }
        Some(arms)
    } else {
        None
    };
    let c11 = match &arms {
        Some(arms) => arms.iter().any(|(_, _, f)| matches!(f, Form::C11(_))),
        None => matches!(fm, Form::C11(_)),
    };
    // Memory of a float atomic is declared as its bits and copied plainly (between barriers);
    // only the built-in's pointer is the atomic float type.
    let c11_mem = c11 && fa.is_none();
    let elems = plan.layout().size / bytes;
    let op = arms.as_ref().and_then(|_| op_code(plan.op));
    let key: TextKey = (plan.op, plan.ty, plan.space, plan.env, batched);
    let source = match texts.as_ref().and_then(|t| t.kept.get(&key)) {
        Some(s) => s.clone(),
        None => {
            let s: Arc<str> = write_text(
                plan,
                (t, val_t, fa),
                fm,
                arms.as_deref(),
                (c11_mem, batched, plant),
            )?
            .into();
            if let Some(texts) = texts {
                texts.kept.insert(key, s.clone());
            }
            s
        }
    };
    let args = args(plan, shared.then_some(elems * bytes), op);
    Ok(Kernel {
        source,
        options: if c11 {
            "-cl-std=CL3.0".into()
        } else {
            String::new()
        },
        elem_bytes: bytes,
        args: Some(args),
        params: None,
    })
}

/// The text of [`emit_form`]'s kernel: its OpenCL C type `t` (the operands' `val_t`, the
/// float atomic `fa`), the built-in form `fm` or the op switch's `arms`, whether its memory is
/// of an atomic type, whether batched, and the plant.
fn write_text(
    plan: &Plan,
    (t, val_t, fa): (&str, &str, Option<FloatAtomic>),
    fm: Form,
    arms: Option<&[(u64, AtomicOp, Form)]>,
    (c11_mem, batched, plant): (bool, bool, Plant),
) -> Result<String, NotApplicable> {
    let wide = plan.ty.bytes() == 8;
    let atomic_t = format!("atomic_{t}");
    let shared = plan.space == Space::Shared;
    let mut s = String::new();
    let w = &mut s;
    if arms.is_some() {
        let _ = writeln!(
            w,
            "// {t} atomics on {} memory, the op chosen by OP: one work-item per lane, in one work-group",
            plan.space.name()
        );
    } else {
        let _ = writeln!(
            w,
            "// {} {} on {} memory: one work-item per lane, in one work-group",
            plan.op.name(),
            plan.ty.name(),
            plan.space.name()
        );
    }
    pragmas(w, fa.map(|x| x.float), wide);
    let mem_param = if c11_mem && !shared {
        format!("volatile __global {atomic_t} *mem")
    } else {
        format!("__global {t} *mem")
    };
    // The element count of `mem` (and of the `__local` copy) is an argument too.
    let lm_t = if c11_mem { &atomic_t } else { t };
    let lm_param = match (shared, batched) {
        (false, _) => String::new(),
        (true, false) => format!(", __local {lm_t} *lm, const uint ELEMS"),
        (true, true) => format!(", __local {lm_t} *lm"),
    };
    let n_param = if batched {
        "__global const uint *MEMBASE, __global const uint *ARGBASE,\n    __global const uint *NS, __global const uint *ELEMSV, __global const uint *OPV"
    } else {
        "const uint N, const uint OP"
    };
    let _ = writeln!(
        w,
        "__kernel void {KERNEL_NAME}({mem_param}, __global ulong *ret, __global int *ok,\n    __global const uint *IDX, __global const {val_t} *SRC0, __global const {val_t} *SRC1,\n    {n_param}{lm_param}) {{"
    );
    let _ = writeln!(w, "    const size_t i = get_local_id(0);");
    // The index of a work-item's arguments and `ret`/`ok` slots.
    let k = if batched {
        let _ = writeln!(
            w,
            "    const size_t g = get_group_id(0);\n    const uint N = NS[g];\n    const uint ELEMS = ELEMSV[g];\n    const uint OP = OPV[g];\n    const size_t k = ARGBASE[g] + i;\n    mem += MEMBASE[g];"
        );
        "k"
    } else {
        "i"
    };
    let buf = if shared {
        local_copy(w, c11_mem, true);
        "lm"
    } else {
        "mem"
    };
    let space_q = if shared { "__local" } else { "__global" };
    let p = match fa {
        Some(x) => format!("(volatile {space_q} atomic_{} *)&{buf}[IDX[{k}]]", x.float),
        None => format!("&{buf}[IDX[{k}]]"),
    };
    let _ = writeln!(w, "    {val_t} old = 0;");
    let _ = writeln!(w, "    int success = 1;");
    // The work-group may be larger than the case (a power of two, so that a driver that
    // specializes kernels per work-group size builds few): work-items past N only copy memory.
    let _ = writeln!(w, "    if (i < N) {{");
    match arms {
        Some(arms) => emit_switch(w, (t, space_q, buf, k), arms),
        None => emit_one(w, plan, (buf, k), fm, &p)?,
    }
    match fa {
        // The float's bits, not its value converted.
        Some(x) => {
            let _ = writeln!(w, "    ret[{k}] = (ulong)as_{}(old);", x.bits);
        }
        None => {
            let _ = writeln!(w, "    ret[{k}] = {};", widen(t, "old"));
        }
    }
    let _ = writeln!(w, "    ok[{k}] = success;");
    if batched && plant == Plant::CrossCaseWrite {
        let _ = writeln!(
            w,
            "    if (i == 0) *(__global uint *)(mem + ELEMS) = 0x0badf00du; // planted cross-case write"
        );
    }
    let _ = writeln!(w, "    }}");
    if shared {
        local_copy(w, c11_mem, false);
    }
    let _ = writeln!(w, "}}");
    Ok(s)
}

/// The per-case arguments of `plan`'s kernel: element indices (in units of the datum), operands,
/// lanes, the `__local` copy's size (`local_bytes`), the op's code (`op`, where it switches).
fn args(plan: &Plan, local_bytes: Option<u64>, op: Option<u32>) -> Args {
    let bytes = plan.ty.bytes();
    Args {
        idx: plan
            .items
            .iter()
            .map(|i| u32::try_from(i.offset / bytes).unwrap_or(u32::MAX))
            .collect(),
        src0: plan.items.iter().map(|i| i.src[0]).collect(),
        src1: plan.items.iter().map(|i| i.src[1]).collect(),
        lanes: plan.items.iter().map(|i| i.lane).collect(),
        local_bytes,
        op,
    }
}

/// The `#pragma`s a kernel on `float` (a float atomic's type) or a 64-bit datum (`wide`) needs.
fn pragmas(w: &mut String, float: Option<&str>, wide: bool) {
    match float {
        Some("half") => {
            let _ = writeln!(w, "#pragma OPENCL EXTENSION cl_khr_fp16 : enable");
        }
        Some("double") => {
            let _ = writeln!(w, "#pragma OPENCL EXTENSION cl_khr_fp64 : enable");
        }
        _ => {}
    }
    if wide {
        let _ = writeln!(
            w,
            "#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable"
        );
        let _ = writeln!(
            w,
            "#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable"
        );
    }
}

/// A shared-memory case's copy of `mem` into the `__local` `lm` (`into`, then a barrier) or
/// back out of it (a barrier, then the copy); atomically where `lm` is of an atomic type
/// (`c11_mem`).
fn local_copy(w: &mut String, c11_mem: bool, into: bool) {
    let (relaxed, scope) = ("memory_order_relaxed", "memory_scope_work_group");
    let each = "    for (size_t j = i; j < ELEMS; j += get_local_size(0))\n        ";
    if into {
        if c11_mem {
            let _ = writeln!(
                w,
                "{each}atomic_store_explicit(&lm[j], mem[j], {relaxed}, {scope});"
            );
        } else {
            let _ = writeln!(w, "{each}lm[j] = mem[j];");
        }
        let _ = writeln!(w, "    barrier(CLK_LOCAL_MEM_FENCE);");
    } else {
        let _ = writeln!(w, "    barrier(CLK_LOCAL_MEM_FENCE);");
        if c11_mem {
            let _ = writeln!(
                w,
                "{each}mem[j] = atomic_load_explicit(&lm[j], {relaxed}, {scope});"
            );
        } else {
            let _ = writeln!(w, "{each}mem[j] = lm[j];");
        }
    }
}

/// The access of a kernel without an op switch: a store (plain in OpenCL C 1.x, else
/// `atomic_store_explicit`) or a float atomic (its C11-style built-in `fm`), on `p` (the
/// datum's pointer expression), the work-item's arguments at `k`. Every other op switches
/// ([`emit_switch`]).
fn emit_one(
    w: &mut String,
    plan: &Plan,
    (buf, k): (&str, &str),
    fm: Form,
    p: &str,
) -> Result<(), NotApplicable> {
    let relaxed = "memory_order_relaxed";
    let scope = "memory_scope_work_group";
    match (fm, plan.op) {
        (Form::Legacy(_), AtomicOp::Store) => {
            let _ = writeln!(w, "    {buf}[IDX[{k}]] = SRC0[{k}];");
        }
        (Form::C11(name), AtomicOp::Store) => {
            let _ = writeln!(
                w,
                "    atomic_{name}_explicit({p}, SRC0[{k}], {relaxed}, {scope});"
            );
        }
        (Form::C11(name), AtomicOp::Add | AtomicOp::Sub | AtomicOp::Min | AtomicOp::Max) => {
            let _ = writeln!(
                w,
                "    old = atomic_{name}_explicit({p}, SRC0[{k}], {relaxed}, {scope});"
            );
        }
        (fm, op) => {
            return na(format!(
                "{} as {fm:?}: neither a store nor a float atomic, yet no op switch",
                op.name()
            ));
        }
    }
    Ok(())
}

/// The access of a kernel switching on `OP` (`OPS` in [`super::emit`]): the datum's pointer as `pl` (and `pc`,
/// its atomic type, where an arm has a C11-style form: every arm's [`call`]), the
/// work-item's operands as `src0` and `src1`.
fn emit_switch(
    w: &mut String,
    (t, space_q, buf, k): (&str, &str, &str, &str),
    arms: &[(u64, AtomicOp, Form)],
) {
    // A C11 kernel declares its memory atomic: the 1.x built-ins (inc, dec) take the plain type.
    let _ = writeln!(
        w,
        "    volatile {space_q} {t} *pl = (volatile {space_q} {t} *)&{buf}[IDX[{k}]];"
    );
    if arms.iter().any(|(_, _, f)| matches!(f, Form::C11(_))) {
        let _ = writeln!(
            w,
            "    volatile {space_q} atomic_{t} *pc = (volatile {space_q} atomic_{t} *)pl;"
        );
    }
    let _ = writeln!(w, "    const {t} src0 = SRC0[{k}], src1 = SRC1[{k}];");
    let _ = writeln!(w, "    switch (OP) {{");
    for (code, op, fm) in arms {
        let _ = writeln!(
            w,
            "    case {code}u: {} break; // {}",
            call(*op, *fm, t.contains("long"), "memory_scope_work_group"),
            op.name()
        );
    }
    let _ = writeln!(w, "    }}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::back::opencl::emit::SubGroups;
    use crate::back::opencl::float::{
        FP_GLOBAL_ADD, FP_GLOBAL_MIN_MAX, FP_LOCAL_ADD, check_float_values,
    };
    use crate::plan::Plan;

    fn plan(asm: &str) -> Plan {
        plan_with(asm, [5, 6])
    }

    /// Two lanes on 0x1000 and 0x1008 (zeroed), operands `r4` (R4) and R5 = {7, 8}.
    fn plan_with(asm: &str, r4: [u64; 2]) -> Plan {
        crate::back::sass_plan_with(asm, r4)
    }

    const ALL: Features = Features {
        int64_base: true,
        int64_extended: true,
        c11: false,
        fp_atomics: [0; 3],
        fp_denorm: [false; 3],
        sub_groups: SubGroups {
            core: false,
            shuffle: false,
            shuffle_relative: false,
            rotate: false,
            intel: false,
            intel_long: false,
            required_sizes: 0,
        },
        work_group_scope_only: false,
    };

    #[test]
    fn legacy_builtins_and_constants() {
        let k = emit(&plan("ATOM.E.ADD.U32 R0, [R2], R4"), &ALL, Plant::None, "t").unwrap();
        for line in [
            "volatile __global uint *pl = (volatile __global uint *)&mem[IDX[i]];",
            "const uint src0 = SRC0[i], src1 = SRC1[i];",
            "switch (OP) {",
            "case 0u: old = atomic_add(pl, src0); break; // add",
            "case 2u: old = atomic_inc(pl); break; // inc",
            "case 4u: old = atomic_dec(pl) - 1; /* vISA PREDEC returns the new value (A11) */ break; // predec",
            "case 11u: old = atomic_cmpxchg(pl, src0, src1); success = old == src0; break; // cas",
        ] {
            assert!(k.source.contains(line), "{line}\n{}", k.source);
        }
        // Every arm ends in its `break` (no comment before it, no fall through).
        for line in k
            .source
            .lines()
            .filter(|l| l.trim_start().starts_with("case "))
        {
            let code = line.split("//").next().unwrap();
            assert!(code.trim_end().ends_with("break;"), "{line}");
        }
        // The op is an argument: its name is in no line of the text but the arm's comment.
        assert!(!k.source.contains("// add on"), "{}", k.source);
        let a = k.args.as_ref().unwrap();
        assert_eq!((&a.idx[..], &a.src0[..]), (&[0, 2][..], &[5, 6][..]));
        assert_eq!(a.op, Some(0));
        assert!(
            k.listing("t", 2).contains(
                "IDX = {0, 2}, SRC0 = {0x5, 0x6}, SRC1 = {0x0, 0x0}, N = 2, OP = 0 (add)"
            ),
            "{}",
            k.listing("t", 2)
        );
        assert_eq!(k.options, "");
        // Another op on the same type: the same program, another OP.
        let xor = emit(&plan("ATOM.E.XOR R0, [R2], R4"), &ALL, Plant::None, "t").unwrap();
        assert_eq!((&xor.source, &xor.options), (&k.source, &k.options));
        assert_eq!(xor.args.as_ref().unwrap().op, Some(9));
        assert!(xor.listing("t", 2).contains("OP = 9 (xor)"));
        // The text is the shape's: other operands and addresses, the same program.
        let other = emit(
            &plan("ATOM.E.ADD.U32 R0, [R2+0x4], R5"),
            &ALL,
            Plant::None,
            "u",
        )
        .unwrap();
        assert_eq!(other.source, k.source);
        assert_ne!(other.args, k.args);
        let k = emit(&plan("ATOM.E.MIN.S64 R0, [R2], R4"), &ALL, Plant::None, "t").unwrap();
        assert!(
            k.source
                .contains("volatile __global long *pl = (volatile __global long *)")
        );
        assert!(
            k.source
                .contains("case 5u: old = atom_min(pl, src0); break; // min")
        );
        assert!(k.source.contains("cl_khr_int64_extended_atomics"));
        assert!(k.source.contains("ret[i] = (ulong)old;"));
        // A 32-bit signed value is its bits in the 64-bit slot, not sign-extended.
        let k = emit(&plan("ATOM.E.MIN.S32 R0, [R2], R4"), &ALL, Plant::None, "t").unwrap();
        assert!(
            k.source.contains("ret[i] = (ulong)(uint)old;"),
            "{}",
            k.source
        );
    }

    #[test]
    fn c11_forms_where_the_device_has_opencl_c_3() {
        let f = Features { c11: true, ..ALL };
        let k = emit(&plan("ATOM.E.XOR R0, [R2], R4"), &f, Plant::None, "t").unwrap();
        for line in [
            "volatile __global atomic_uint *mem",
            "volatile __global atomic_uint *pc = (volatile __global atomic_uint *)pl;",
            "case 9u: old = atomic_fetch_xor_explicit(pc, src0, memory_order_relaxed, memory_scope_work_group); break; // xor",
            // atomic_inc has no C11-style form: the 1.x built-in on the plain pointer.
            "case 2u: old = atomic_inc(pl); break; // inc",
        ] {
            assert!(k.source.contains(line), "{line}\n{}", k.source);
        }
        assert_eq!(k.options, "-cl-std=CL3.0");
        // An op whose own built-in is a 1.x one runs in the same program.
        let inc = emit(&plan("ATOM.E.EXCH R0, [R2], R4"), &f, Plant::None, "t").unwrap();
        assert_eq!((&inc.source, &inc.options), (&k.source, &k.options));
        let k = emit(&plan("ATOM.E.CAS R0, [R2], R4, R5"), &f, Plant::None, "t");
        assert!(k.is_err() || k.unwrap().source.contains("compare_exchange_strong"));
    }

    #[test]
    fn no_builtin_means_not_applicable() {
        let why = emit(&plan("ATOM.E.INC R0, [R2], R4"), &ALL, Plant::None, "t").unwrap_err();
        assert!(why.0.contains("bounded"), "{why}");
        let no64 = Features::default();
        let why = emit(&plan("ATOM.E.ADD.64 R0, [R2], R4"), &no64, Plant::None, "t").unwrap_err();
        assert!(why.0.contains("cl_khr_int64_base_atomics"), "{why}");
        let why = emit(
            &plan("ATOM.E.ADD.F32.FTZ.RN R0, [R2], R4"),
            &ALL,
            Plant::None,
            "t",
        )
        .unwrap_err();
        assert!(why.0.contains("float"), "{why}");
    }

    /// A device reporting cl_ext_float_atomics with `bits` for float and double, OpenCL C 3.0
    /// and denormals kept.
    fn fp(bits: u64) -> Features {
        Features {
            c11: true,
            fp_atomics: [0, bits, bits],
            fp_denorm: [false, true, true],
            ..ALL
        }
    }

    #[test]
    fn float_atomics_use_the_exact_builtin_where_the_device_reports_it() {
        let f = fp(FP_GLOBAL_ADD | FP_GLOBAL_MIN_MAX);
        let p = plan_with(
            "ATOM.E.ADD.F32.FTZ.RN R0, [R2], R4",
            [0x3fc0_0000, 0x4010_0000],
        );
        let k = emit(&p, &f, Plant::None, "t").unwrap();
        assert!(
            k.source.contains(
                "old = atomic_fetch_add_explicit((volatile __global atomic_float *)&mem[IDX[i]], SRC0[i], memory_order_relaxed, memory_scope_work_group);"
            ),
            "{}",
            k.source
        );
        // Memory and the returned value move as bits; the operands are floats.
        assert!(k.source.contains("__global uint *mem"), "{}", k.source);
        assert!(k.source.contains("__global const float *SRC0"));
        assert!(k.source.contains("ret[i] = (ulong)as_uint(old);"));
        assert_eq!(k.options, "-cl-std=CL3.0");
        assert_eq!(check_float_values(&p, &[0; 16], &f), Ok(()));
        let k = emit(
            &plan_with("ATOM.E.ADD.F64.RN R0, [R2], R4", [0, 0x3ff0_0000]),
            &f,
            Plant::None,
            "t",
        )
        .unwrap();
        assert!(k.source.contains("atomic_double *)"), "{}", k.source);
        assert!(
            k.source
                .contains("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
        );
        assert!(k.source.contains("as_ulong(old)"));
        // The plant reaches float adds too.
        let k = emit(&p, &f, Plant::AddAsSub, "t").unwrap();
        assert!(
            k.source
                .contains("atomic_fetch_sub_explicit((volatile __global atomic_float")
        );
    }

    #[test]
    fn float_atomics_the_device_lacks_are_not_applicable_with_the_reason() {
        let p = plan_with(
            "ATOM.E.ADD.F32.FTZ.RN R0, [R2], R4",
            [0x3fc0_0000, 0x4010_0000],
        );
        // No cl_ext_float_atomics (PoCL, oclgrind, rusticl) or no add bit for this space.
        for f in [fp(0), fp(FP_GLOBAL_MIN_MAX | FP_LOCAL_ADD)] {
            let why = emit(&p, &f, Plant::None, "t").unwrap_err();
            assert!(
                why.0.contains("CL_DEVICE_GLOBAL_FP_ATOMIC_ADD_EXT in CL_DEVICE_SINGLE_FP_ATOMIC_CAPABILITIES_EXT"),
                "{why}"
            );
        }
        let no_c3 = Features {
            c11: false,
            ..fp(FP_GLOBAL_ADD)
        };
        let why = emit(&p, &no_c3, Plant::None, "t").unwrap_err();
        assert!(why.0.contains("OpenCL C 3.0"), "{why}");
        // Subnormal operands (5 and 6 as f32 bits) with SASS's flush-to-zero required: no
        // OpenCL device has to flush.
        let sub = plan("ATOM.E.ADD.F32.FTZ.RN R0, [R2], R4");
        let f = fp(FP_GLOBAL_ADD);
        assert!(emit(&sub, &f, Plant::None, "t").is_ok());
        let why = check_float_values(&sub, &[0; 16], &f).unwrap_err();
        assert!(why.0.contains("flushing required"), "{why}");
        // A sum that lands on a subnormal counts too: 2^-125 + -1.5 * 2^-126 = 2^-127.
        let sum = plan_with(
            "ATOM.E.ADD.F32.FTZ.RN R0, [R2], R4",
            [0x0100_0000, 0x0100_0000],
        );
        let mut mem = vec![0u8; 16];
        mem[..4].copy_from_slice(&0x80c0_0000u32.to_le_bytes());
        assert!(check_float_values(&sum, &mem, &f).is_err());
        assert_eq!(check_float_values(&sum, &[0; 16], &f), Ok(()));
    }

    #[test]
    fn the_batched_form_indexes_by_group_and_only_it_carries_the_cross_case_plant() {
        let p = plan("ATOM.E.ADD.U32 R0, [R2], R4");
        let one = emit(&p, &ALL, Plant::None, "t").unwrap();
        let k = emit_batched(&p, &ALL, Plant::None, "t").unwrap();
        assert!(k.source.contains("mem += MEMBASE[g];"), "{}", k.source);
        for line in [
            "const uint OP = OPV[g];",
            "volatile __global uint *pl = (volatile __global uint *)&mem[IDX[k]];",
            "case 0u: old = atomic_add(pl, src0); break; // add",
        ] {
            assert!(k.source.contains(line), "{line}\n{}", k.source);
        }
        assert!(k.source.contains("ret[k] = (ulong)old;"));
        assert_eq!((&k.options, &k.args), (&one.options, &one.args));
        assert!(!one.source.contains("MEMBASE"));
        // The plant changes the batched text only.
        let planted = emit(&p, &ALL, Plant::CrossCaseWrite, "t").unwrap();
        assert_eq!(planted.source, one.source);
        let planted = emit_batched(&p, &ALL, Plant::CrossCaseWrite, "t").unwrap();
        assert!(planted.source.contains("(mem + ELEMS) = 0x0badf00du"));
        assert_eq!(
            Plant::from_name("cross_case_write"),
            Some(Plant::CrossCaseWrite)
        );
    }

    #[test]
    fn the_plant_swaps_add_for_sub() {
        let k = emit(&plan("ATOM.E.ADD R0, [R2], R4"), &ALL, Plant::AddAsSub, "t").unwrap();
        // In the add arm only: the sub arm is the sub it always was.
        assert!(
            k.source
                .contains("case 0u: old = atomic_sub(pl, src0); break; // add")
        );
        assert!(
            k.source
                .contains("case 1u: old = atomic_sub(pl, src0); break; // sub")
        );
        assert_eq!(Plant::from_name("add_as_sub"), Some(Plant::AddAsSub));
        assert_eq!(Plant::from_name("bogus"), None);
    }

    #[test]
    fn kept_texts_are_the_texts_emit_writes() {
        let c11 = Features {
            c11: true,
            fp_atomics: [FP_GLOBAL_ADD | FP_GLOBAL_MIN_MAX | FP_LOCAL_ADD; 3],
            ..ALL
        };
        let asms = [
            "ATOM.E.ADD.U32 R0, [R2], R4",
            "ATOM.E.XOR R0, [R2], R4",
            "ATOM.E.MIN.S32 R0, [R2], R4",
            "ATOM.E.MIN.S64 R0, [R2], R4",
            "ATOM.E.EXCH R0, [R2], R4",
            "ATOM.E.CAS R0, [R2], R4, R5",
            "ATOM.E.ADD.F32.FTZ.RN R0, [R2], R4",
            "ATOM.E.ADD.U32 R0, [R2+0x4], R5",
        ];
        for f in [ALL, c11] {
            for plant in [Plant::None, Plant::AddAsSub] {
                let mut texts = Texts::default();
                // Twice, with other operands: the second time every text is a kept one.
                for r4 in [[5, 6], [0x8000_0000, 1]] {
                    for asm in asms {
                        let p = plan_with(asm, r4);
                        let (fresh, kept) = (
                            emit(&p, &f, plant, "t"),
                            emit_kept(&p, &f, plant, &mut texts),
                        );
                        match (fresh, kept) {
                            (Ok(a), Ok(b)) => {
                                assert_eq!(a.source, b.source, "{asm}");
                                assert_eq!((a.options, a.args), (b.options, b.args), "{asm}");
                            }
                            (Err(a), Err(b)) => assert_eq!(a.0, b.0, "{asm}"),
                            (a, b) => panic!("{asm}: {a:?} against {b:?}"),
                        }
                    }
                }
                // One text per shape: the two offsets of ADD.U32 share one.
                assert!(texts.kept.len() < asms.len(), "{}", texts.kept.len());
            }
        }
    }
}
