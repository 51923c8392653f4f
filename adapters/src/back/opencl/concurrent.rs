//! Concurrent cases on OpenCL (issue 12): one kernel, one NDRange launch, one work-group per
//! instruction (so the instructions really run at the same time on the device), each work-item
//! one lane looping over its iterations, every atomic at device scope. Every iteration's
//! returned value goes to `ret[group][iteration][item]`.

use super::emit::{Features, Form, KERNEL_NAME, Kernel, form, literal, scalar};
use crate::plan::{ConcurrentPlan, NotApplicable};
use atomcts_reference::ir::{AtomicOp, Compare};
use std::fmt::Write as _;

/// Emits the kernel of a concurrent case: launch it with `groups.len()` work-groups of
/// [`local_size`] work-items.
pub fn emit(
    cp: &ConcurrentPlan,
    features: &Features,
    plant: super::emit::Plant,
    title: &str,
) -> Result<Kernel, NotApplicable> {
    let mut s = String::new();
    let w = &mut s;
    let mut c11_any = false;
    let mut bodies = String::new();
    let _ = writeln!(w, "// atomcts: {title}");
    let _ = writeln!(
        w,
        "// concurrent: {} instructions, one work-group each, launched together; device-scope atomics",
        cp.groups.len()
    );
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
        let n = g.items.len();
        let list = |f: &dyn Fn(&crate::plan::Item) -> String| {
            g.items.iter().map(f).collect::<Vec<_>>().join(", ")
        };
        let _ = writeln!(
            w,
            "__constant uint OFF{k}[{n}] = {{{}}}; // byte offsets (lanes {})",
            list(&|i| format!("{}u", i.offset)),
            list(&|i| i.lane.to_string())
        );
        let _ = writeln!(
            w,
            "__constant {t} SRC0_{k}[{n}] = {{{}}};",
            list(&|i| literal(t, i.src[0]))
        );
        if g.op == AtomicOp::Cas {
            let _ = writeln!(
                w,
                "__constant {t} SRC1_{k}[{n}] = {{{}}};",
                list(&|i| literal(t, i.src[1]))
            );
        }
        let iters = cp.iterations[k];
        let base = cp.ret_base(k);
        let b = &mut bodies;
        let _ = writeln!(
            b,
            "    if (g == {k}u && i < {n}u) {{ // {} {}",
            g.op.name(),
            g.ty.name()
        );
        let _ = writeln!(b, "        for (uint it = 0; it < {iters}u; it++) {{");
        let _ = writeln!(b, "            {t} old = 0;");
        let _ = writeln!(b, "            int success = 1;");
        match fm {
            Form::Legacy(name) => {
                let f = if wide {
                    format!("atom_{name}")
                } else {
                    format!("atomic_{name}")
                };
                let p = format!("(volatile __global {t} *)(mem + OFF{k}[i])");
                match g.op {
                    AtomicOp::Inc | AtomicOp::Dec => {
                        let _ = writeln!(b, "            old = {f}({p});");
                    }
                    AtomicOp::PreDec => {
                        let _ = writeln!(
                            b,
                            "            old = {f}({p}) - 1; // vISA PREDEC returns the new value (A11)"
                        );
                    }
                    AtomicOp::Cas => {
                        let _ =
                            writeln!(b, "            old = {f}({p}, SRC0_{k}[i], SRC1_{k}[i]);");
                        let _ = writeln!(b, "            success = old == SRC0_{k}[i];");
                    }
                    _ => {
                        let _ = writeln!(b, "            old = {f}({p}, SRC0_{k}[i]);");
                    }
                }
            }
            Form::C11(name) => {
                c11_any = true;
                let f = format!("atomic_{name}_explicit");
                let p = format!("(volatile __global atomic_{t} *)(mem + OFF{k}[i])");
                let ord = "memory_order_relaxed";
                let scope = "memory_scope_device";
                if g.op == AtomicOp::Cas {
                    let _ = writeln!(b, "            old = SRC0_{k}[i];");
                    let _ = writeln!(
                        b,
                        "            success = {f}({p}, &old, SRC1_{k}[i], {ord}, {ord}, {scope});"
                    );
                } else {
                    let _ = writeln!(
                        b,
                        "            old = {f}({p}, SRC0_{k}[i], {ord}, {scope});"
                    );
                }
            }
        }
        let _ = writeln!(b, "            ret[{base}u + it * {n}u + i] = (ulong)old;");
        let _ = writeln!(b, "            ok[{base}u + it * {n}u + i] = success;");
        let _ = writeln!(b, "        }}");
        let _ = writeln!(b, "    }}");
    }
    let _ = writeln!(
        w,
        "__kernel void {KERNEL_NAME}(__global uchar *mem, __global ulong *ret, __global int *ok) {{"
    );
    let _ = writeln!(w, "    const uint g = get_group_id(0);");
    let _ = writeln!(w, "    const uint i = get_local_id(0);");
    w.push_str(&bodies);
    let _ = writeln!(w, "}}");
    Ok(Kernel {
        source: s,
        options: if c11_any {
            "-cl-std=CL3.0".into()
        } else {
            String::new()
        },
        elem_bytes: 1,
        args: None,
    })
}

/// The work-group size of a concurrent launch: the largest instruction's lanes.
pub fn local_size(cp: &ConcurrentPlan) -> usize {
    cp.groups.iter().map(|g| g.items.len()).max().unwrap_or(1)
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
        assert_eq!(local_size(&cp), 4);
        let f = Features {
            int64_base: true,
            int64_extended: true,
            c11: true,
        };
        let k = emit(&cp, &f, super::super::emit::Plant::None, "t").unwrap();
        assert!(k.source.contains("if (g == 0u && i < 4u)"), "{}", k.source);
        assert!(k.source.contains("for (uint it = 0; it < 5u; it++)"));
        assert!(k.source.contains("memory_scope_device"));
        assert!(!k.source.contains("memory_scope_work_group"));
        assert!(k.source.contains("ret[12u + it * 2u + i] = (ulong)old;"));
        let legacy = emit(
            &cp,
            &Features::default(),
            super::super::emit::Plant::None,
            "t",
        )
        .unwrap();
        assert!(
            legacy
                .source
                .contains("atomic_xchg((volatile __global uint *)(mem + OFF1[i])")
        );
        assert_eq!(legacy.options, "");
    }
}
