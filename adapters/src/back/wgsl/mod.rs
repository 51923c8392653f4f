//! The WGSL route: a translation layer under test. Each case becomes a WGSL compute shader
//! (emit), which naga compiles to SPIR-V (WGSL in, SPIR-V out), and the Vulkan back end's run
//! dispatches on the device (`--adapter wgsl-naga:<device>`). What is judged is naga and
//! the driver together: a wrong lowering by naga shows up as a wrong result on a driver that passes the
//! direct SPIR-V route.
//!
//! Only standard WGSL (W3C WGSL, §17.8 "Atomic Built-in Functions", §17.13 "Subgroup Built-in
//! Functions"; see [`emit_shuffle`] on the `enable subgroups;` directive) is emitted; naga's own extensions (64-bit and float
//! atomics) are not WGSL and are not used. So:
//!
//! | IR op | WGSL |
//! | --- | --- |
//! | add sub min max and or xor exch store on i32/u32 | atomicAdd ... atomicExchange, atomicStore |
//! | cas, MSL weak form | atomicCompareExchangeWeak (`exchanged` is the success flag) |
//! | cas, strong forms | not applicable: WGSL only has the weak form, which may fail spuriously |
//! | inc, dec, predec, bounded forms, 16/64-bit, float | not applicable: no WGSL built-in |
//!
//! SIMD-group functions: subgroupShuffle, subgroupShuffleXor, subgroupShuffleUp/Down and
//! subgroupBroadcast. WGSL requires the delta/mask of the relative shuffles to be uniform and
//! the broadcast lane to be a const-expression; a uniform MSL argument is emitted as a
//! const-expression (so the WGSL rule that a constant id/delta/mask outside [0, 128) is a
//! shader-creation error applies to it). The Metal boundary rule of simd_shuffle_up/down is
//! added with `select`, as in the SPIR-V route.
//!
//! As on the SPIR-V route, the shader's text depends only on the case's shape: indices and
//! operands are read from `var<storage, read>` buffers (listed as comments above the shader
//! printed for a failing case), and a shader of an integer op on `i32` or `u32` switches on the
//! op's code ([`OPS`], word 2 of `INV`), so naga compiles, and the driver builds, one shader per
//! type, space and size (issue 31). A memory instruction's text is written once per shape and
//! shared ([`Shader::source`]), so a case of a seen shape writes and hashes no text.
//!
//! The WGSL rules on shader creation that naga must enforce are checked by
//! `adapters/wgsl-cases/shader_creation.toml` (test `wgsl_shader_creation`).

use crate::back::vulkan::emit::{
    BATCH_BASES_STRIDE, Buffer, Dispatch, Features, ModuleCache, OperandLines, Operands, le_bytes,
    operand_line, shape_sizes,
};
use crate::back::vulkan::shuffle::check_shuffle;
use crate::back::{OPS, op_code};
use crate::plan::{NotApplicable, Plan};
use crate::shuffle::ShufflePlan;
use atomcts_reference::ir::{AtomicOp, Compare};
use atomcts_reference::msl::simd::SimdFunction;
use atomcts_reference::types::{DataType, Space};
use std::fmt::Write as _;
use std::sync::Arc;

fn na<T>(why: impl Into<String>) -> Result<T, NotApplicable> {
    Err(NotApplicable(why.into()))
}

/// A WGSL shader and how to dispatch it once compiled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shader {
    /// WGSL source (a memory instruction's: shared by every case of its shape).
    pub source: Arc<str>,
    /// The batched form of the source (memory instructions; [`Dispatch::batched`]).
    pub batched: Option<Arc<str>>,
    /// The dispatch, without words until [`compile`] fills them.
    pub dispatch: Dispatch,
}

/// Why naga did not produce SPIR-V.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompileError {
    /// The WGSL front end or validator rejected the shader (a shader-creation error).
    Rejected(String),
    /// The SPIR-V writer failed.
    Writer(String),
}

/// Compiles WGSL `source` to SPIR-V 1.3 with naga (all capabilities a Vulkan 1.3 device with
/// subgroups may have; validation as WGSL demands).
pub fn compile(source: &str) -> Result<Vec<u32>, CompileError> {
    use naga::valid::{
        Capabilities, ShaderStages, SubgroupOperationSet, ValidationFlags, Validator,
    };
    let module = naga::front::wgsl::parse_str(source)
        .map_err(|e| CompileError::Rejected(e.emit_to_string(source)))?;
    let mut v = Validator::new(ValidationFlags::all(), Capabilities::SUBGROUP);
    v.subgroup_stages(ShaderStages::COMPUTE);
    v.subgroup_operations(SubgroupOperationSet::all());
    let info = v
        .validate(&module)
        .map_err(|e| CompileError::Rejected(e.emit_to_string(source)))?;
    let opts = naga::back::spv::Options {
        lang_version: (1, 3),
        ..Default::default()
    };
    let pipeline = naga::back::spv::PipelineOptions {
        shader_stage: naga::ShaderStage::Compute,
        entry_point: "main".into(),
    };
    naga::back::spv::write_vec(&module, &info, &opts, Some(&pipeline))
        .map_err(|e| CompileError::Writer(e.to_string()))
}

fn u32_lit(v: u64) -> String {
    format!("{:#x}u", v as u32)
}

fn i32_lit(v: u64) -> String {
    let x = v as u32 as i32;
    if x == i32::MIN {
        "(-2147483647i - 1i)".into()
    } else {
        format!("{x}i")
    }
}

/// The WGSL built-in of an op with one operand, `None` for the others.
fn builtin(op: AtomicOp) -> Option<&'static str> {
    Some(match op {
        AtomicOp::Add => "atomicAdd",
        AtomicOp::Sub => "atomicSub",
        AtomicOp::Min => "atomicMin",
        AtomicOp::Max => "atomicMax",
        AtomicOp::And => "atomicAnd",
        AtomicOp::Or => "atomicOr",
        AtomicOp::Xor => "atomicXor",
        AtomicOp::Exch => "atomicExchange",
        _ => return None,
    })
}

/// What a memory instruction's shader text depends on: its shape (issue 31), so that the text
/// is written once per shape and naga compiles it once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct AtomicShape {
    /// The op, `None` where the shader switches on its code (binding 3's word 2, [`OPS`]):
    /// every integer op of [`OPS`] that WGSL has, on `i32` or `u32`.
    op: Option<AtomicOp>,
    /// The datum's type (an `f32` exchange or bitwise compare-exchange is typed `u32`).
    ty: DataType,
    space: Space,
    /// The workgroup size and the workgroup memory's elements.
    local: u32,
    lm_elems: u64,
}

thread_local! {
    /// Memory instructions' shader texts (plain, batched) by shape.
    static TEXTS: ModuleCache<AtomicShape, (Arc<str>, Arc<str>)> = ModuleCache::new();
}

/// Emits the WGSL shader for a memory instruction.
pub fn emit_atomic(plan: &Plan, mem: Vec<u8>, f: &Features) -> Result<Shader, NotApplicable> {
    let bitwise = matches!(plan.op, AtomicOp::Exch | AtomicOp::Store)
        || (plan.op == AtomicOp::Cas && plan.env.compare == Compare::Bitwise);
    let int = matches!(plan.ty, DataType::U32 | DataType::S32);
    if !(int || (plan.ty == DataType::F32 && bitwise)) {
        return na(format!(
            "{} on {}: WGSL has atomics on i32 and u32 only",
            plan.op.name(),
            plan.ty.name()
        ));
    }
    match plan.op {
        AtomicOp::Store => {}
        AtomicOp::Cas if plan.env.compare != Compare::Bitwise => {
            return na("cas with a numeric compare (A9): WGSL compares bits");
        }
        AtomicOp::Cas if !plan.env.weak => {
            return na(
                "a strong compare-exchange: WGSL has only atomicCompareExchangeWeak, which may fail spuriously",
            );
        }
        AtomicOp::Cas => {}
        other if builtin(other).is_none() => {
            return na(format!(
                "{}: no WGSL atomic built-in (WGSL has add, sub, max, min, and, or, xor, exchange, compare-exchange-weak, load, store); not emulated",
                other.name()
            ));
        }
        _ => {}
    }
    let n = plan.items.len();
    if n == 0 {
        return na("no enabled access: nothing to dispatch");
    }
    if n as u32 > f.max_invocations {
        return na(format!(
            "{n} invocations exceed the device's work-group size {}",
            f.max_invocations
        ));
    }
    let shared = plan.space == Space::Shared;
    let elems = plan.layout().size / 4;
    if shared && plan.layout().size > u64::from(f.max_shared_bytes) {
        return na(format!(
            "{} bytes of workgroup memory exceed the device's {}",
            plan.layout().size,
            f.max_shared_bytes
        ));
    }
    // The shape's sizes (invocations past N only copy workgroup memory), as on the SPIR-V route.
    let (local, lm_elems) = shape_sizes(n as u32, elems, 4, f);
    // Every integer op of OPS switches on its code, as on the SPIR-V route.
    let code = op_code(plan.op);
    let switched = int && code.is_some();
    let shape = AtomicShape {
        op: (!switched).then_some(plan.op),
        ty: plan.ty,
        space: plan.space,
        local,
        lm_elems,
    };
    let (source, batched) = TEXTS.with(|t| {
        t.get_or_build(&shape, |s| {
            Ok((Arc::from(s.write(false)?), Arc::from(s.write(true)?)))
        })
    })?;
    let inv: Vec<u64> = [n as u64, elems, code.map_or(u64::from(u32::MAX), u64::from)]
        .into_iter()
        .chain(plan.items.iter().map(|i| i.offset / 4))
        .collect();
    let src0: Vec<u64> = plan.items.iter().map(|i| i.src[0]).collect();
    let src1: Vec<u64> = plan.items.iter().map(|i| i.src[1]).collect();
    let mut buffers = vec![
        Buffer {
            role: "memory",
            bytes: mem,
        },
        Buffer {
            role: "returned values",
            bytes: vec![0; n * 4],
        },
        Buffer {
            role: "compare-exchange success",
            bytes: vec![0; n * 4],
        },
        Buffer {
            role: "invocations",
            bytes: le_bytes(4, &inv),
        },
        Buffer {
            role: "first operands",
            bytes: le_bytes(4, &src0),
        },
    ];
    let mut lines = vec![(3, "INV", 4, inv), (4, "SRC0", 4, src0)];
    if shape.src1() {
        buffers.push(Buffer {
            role: "second operands",
            bytes: le_bytes(4, &src1),
        });
        lines.push((5, "SRC1", 4, src1));
    }
    let operands = Operands::Lines(Box::new(OperandLines {
        op: Some((plan.op, code.filter(|_| switched))),
        wgsl: true,
        lines,
    }));
    Ok(Shader {
        source,
        batched: Some(batched),
        dispatch: Dispatch {
            words: Vec::new(),
            local_size: local,
            groups: 1,
            subgroup_size: None,
            buffers,
            ret_bytes: 4,
            operands,
            batched: None,
        },
    })
}

impl AtomicShape {
    /// Whether the second operands are bound (binding 5): a compare-exchange's, and every
    /// switching shader's.
    fn src1(&self) -> bool {
        matches!(self.op, None | Some(AtomicOp::Cas))
    }

    /// The WGSL type of the datum and how its literals are written.
    fn datum(&self) -> (&'static str, fn(u64) -> String) {
        match self.ty {
            DataType::S32 => ("i32", i32_lit),
            _ => ("u32", u32_lit),
        }
    }

    /// The shader, or with `batched` its batched form (issue 31): one workgroup per case of a
    /// batch, each workgroup's accesses to binding `b` offset by the byte offset in word
    /// `BATCH_BASES_STRIDE * workgroup_id.x + b` of `BASES`, bound after the case's buffers
    /// ([`Dispatch::batched`]).
    fn write(&self, batched: bool) -> Result<String, NotApplicable> {
        let (t, lit) = self.datum();
        let local = self.local;
        let shared = self.space == Space::Shared;
        // An index of binding `b`: the case's own, offset by its base when batched.
        let ix = |b: usize, e: &str| {
            if batched {
                format!("B{b} + {e}")
            } else {
                e.to_string()
            }
        };
        let mut s = String::new();
        let w = &mut s;
        let _ = writeln!(
            w,
            "// atomcts: {} {} on {} memory, N invocations of a workgroup of {local}{}",
            self.op.map_or("an integer op (OP)", AtomicOp::name),
            self.ty.name(),
            self.space.name(),
            if batched {
                ", a workgroup per case of a batch"
            } else {
                ""
            }
        );
        let mem_ty = if shared {
            format!("array<{t}>")
        } else {
            format!("array<atomic<{t}>>")
        };
        let _ = writeln!(
            w,
            "@group(0) @binding(0) var<storage, read_write> mem: {mem_ty};"
        );
        let _ = writeln!(
            w,
            "@group(0) @binding(1) var<storage, read_write> ret: array<{t}>;"
        );
        let _ = writeln!(
            w,
            "@group(0) @binding(2) var<storage, read_write> ok: array<u32>;"
        );
        let _ = writeln!(
            w,
            "// INV: N, ELEMS, OP (the code switched on, or 0xffffffff), then each invocation's element index; SRC0, SRC1: its operands"
        );
        let _ = writeln!(
            w,
            "@group(0) @binding(3) var<storage, read> INV: array<u32>;"
        );
        let _ = writeln!(
            w,
            "@group(0) @binding(4) var<storage, read> SRC0: array<{t}>;"
        );
        if self.src1() {
            let _ = writeln!(
                w,
                "@group(0) @binding(5) var<storage, read> SRC1: array<{t}>;"
            );
        }
        let buffers = if self.src1() { 6 } else { 5 };
        if batched {
            let _ = writeln!(
                w,
                "// BASES: per case, each binding's byte offset ({BATCH_BASES_STRIDE} words)"
            );
            let _ = writeln!(
                w,
                "@group(0) @binding({buffers}) var<storage, read> BASES: array<u32>;"
            );
        }
        if shared {
            let _ = writeln!(
                w,
                "var<workgroup> lm: array<atomic<{t}>, {}>;",
                self.lm_elems
            );
        }
        let _ = writeln!(w, "@compute @workgroup_size({local})");
        if batched {
            let _ = writeln!(
                w,
                "fn main(@builtin(local_invocation_index) i: u32, @builtin(workgroup_id) wg: vec3<u32>) {{"
            );
            for b in 0..buffers {
                let _ = writeln!(
                    w,
                    "    let B{b} = BASES[wg.x * {BATCH_BASES_STRIDE}u + {b}u] / 4u;"
                );
            }
        } else {
            let _ = writeln!(w, "fn main(@builtin(local_invocation_index) i: u32) {{");
        }
        let (n, elems) = (
            format!("INV[{}]", ix(3, "0")),
            format!("INV[{}]", ix(3, "1")),
        );
        let buf = if shared {
            let _ = writeln!(
                w,
                "    for (var j = i; j < {elems}; j += {local}u) {{ atomicStore(&lm[j], mem[{}]); }}",
                ix(0, "j")
            );
            let _ = writeln!(w, "    workgroupBarrier();");
            "lm".to_string()
        } else {
            "mem".to_string()
        };
        let _ = writeln!(w, "    if (i < {n}) {{");
        let at = format!("INV[{}]", ix(3, "i + 3u"));
        let p = if shared {
            format!("&{buf}[{at}]")
        } else {
            format!("&{buf}[{}]", ix(0, &at))
        };
        let (ret, ok) = (
            format!("ret[{}]", ix(1, "i")),
            format!("ok[{}]", ix(2, "i")),
        );
        let src0 = format!("SRC0[{}]", ix(4, "i"));
        let src1 = format!("SRC1[{}]", ix(5, "i"));
        let cas = |w: &mut String, pad: &str, r: &str, s: &str| {
            let _ = writeln!(
                w,
                "{pad}let x = atomicCompareExchangeWeak({p}, {src0}, {src1});"
            );
            let _ = writeln!(w, "{pad}{r} = x.old_value;");
            let _ = writeln!(w, "{pad}{s} = select(0u, 1u, x.exchanged);");
        };
        match self.op {
            None => {
                let _ = writeln!(w, "        var r: {t} = {};", lit(0));
                let _ = writeln!(w, "        var s = 1u;");
                let _ = writeln!(w, "        switch INV[{}] {{", ix(3, "2"));
                for (code, op) in OPS.iter().enumerate() {
                    if *op == AtomicOp::Cas {
                        let _ = writeln!(w, "            case {code}u: {{");
                        cas(w, "                ", "r", "s");
                        let _ = writeln!(w, "            }}");
                    } else if let Some(call) = builtin(*op) {
                        let _ = writeln!(
                            w,
                            "            case {code}u: {{ r = {call}({p}, {src0}); }}"
                        );
                    }
                }
                let _ = writeln!(w, "            default: {{ s = 0u; }}");
                let _ = writeln!(w, "        }}");
                let _ = writeln!(w, "        {ret} = r;");
                let _ = writeln!(w, "        {ok} = s;");
            }
            Some(AtomicOp::Store) => {
                let _ = writeln!(w, "        atomicStore({p}, {src0});");
                let _ = writeln!(w, "        {ret} = {};", lit(0));
                let _ = writeln!(w, "        {ok} = 1u;");
            }
            Some(AtomicOp::Cas) => cas(w, "        ", &ret, &ok),
            Some(op) => {
                let Some(call) = builtin(op) else {
                    return na(format!("{}: no WGSL atomic built-in", op.name()));
                };
                let _ = writeln!(w, "        {ret} = {call}({p}, {src0});");
                let _ = writeln!(w, "        {ok} = 1u;");
            }
        }
        let _ = writeln!(w, "    }}");
        if shared {
            let _ = writeln!(w, "    workgroupBarrier();");
            let _ = writeln!(
                w,
                "    for (var j = i; j < {elems}; j += {local}u) {{ mem[{}] = atomicLoad(&lm[j]); }}",
                ix(0, "j")
            );
        }
        let _ = writeln!(w, "}}");
        Ok(s)
    }
}

/// Emits the WGSL shader for a SIMD-group exchange.
pub fn emit_shuffle(plan: &ShufflePlan, f: &Features) -> Result<Shader, NotApplicable> {
    check_shuffle(plan, f)?;
    if plan.bits == 64 {
        return na("64-bit data: WGSL has no 64-bit integer type");
    }
    let uniform = plan.uniform_arg();
    let call = match plan.function {
        SimdFunction::Shuffle => "subgroupShuffle",
        SimdFunction::ShuffleXor => "subgroupShuffleXor",
        SimdFunction::ShuffleUp => "subgroupShuffleUp",
        SimdFunction::ShuffleDown => "subgroupShuffleDown",
        SimdFunction::Broadcast => "subgroupBroadcast",
        other => return na(format!("{}: no WGSL subgroup built-in", other.name())),
    };
    let relative = !matches!(plan.function, SimdFunction::Shuffle);
    // WGSL §17.13: the relative shuffles need a uniform delta/mask and subgroupBroadcast a
    // const-expression lane.
    let arg = match (relative, uniform) {
        (true, Some(a)) if a >= 128 => {
            return na(format!(
                "{call} with the uniform argument {a}: as a WGSL const-expression outside [0, 128) it is a shader-creation error, so the translation has no valid WGSL for it",
            ));
        }
        (true, Some(a)) => format!("{a}u"),
        (true, None) => {
            return na(format!(
                "{call}: the argument differs between SIMD-groups, and WGSL requires it to be uniform",
            ));
        }
        (false, _) => "TAB[t]".to_string(),
    };
    let w_ = plan.width;
    let threads = plan.threads.len();
    let th = &plan.threads;
    let data: Vec<u64> = th.iter().map(|x| x.data).collect();
    let tab: Vec<u64> = th
        .iter()
        .map(|x| u64::from(x.arg))
        .chain(th.iter().map(|x| u64::from(x.active)))
        .chain(th.iter().map(|x| u64::from(x.n)))
        .collect();
    let mut s = String::new();
    let w = &mut s;
    // WGSL §4.1.1 requires `enable subgroups;` before the subgroup built-ins; naga 30 rejects
    // that directive ("not yet supported") and accepts the built-ins without it (a deviation
    // recorded in adapters/wgsl-cases/naga.baseline). The shader leaves it out so that naga
    // compiles the exchange at all.
    let _ = writeln!(
        w,
        "// atomcts: {} at SIMD width {w_}, {threads} invocations",
        plan.function.name()
    );
    let _ = writeln!(
        w,
        "@group(0) @binding(0) var<storage, read_write> out: array<u32>;"
    );
    let _ = writeln!(
        w,
        "// DATA: each thread's datum; TAB: its argument, then whether it is active, then its SIMD-group's size ({threads} each)"
    );
    let _ = writeln!(
        w,
        "@group(0) @binding(1) var<storage, read> DATA: array<u32>;"
    );
    let _ = writeln!(
        w,
        "@group(0) @binding(2) var<storage, read> TAB: array<u32>;"
    );
    let _ = writeln!(w, "@compute @workgroup_size({threads})");
    let _ = writeln!(
        w,
        "fn main(@builtin(subgroup_id) g: u32, @builtin(subgroup_invocation_id) l: u32) {{"
    );
    let _ = writeln!(w, "    let t = g * {w_}u + l;");
    let _ = writeln!(w, "    if (TAB[t + {threads}u] != 0u) {{");
    let _ = writeln!(w, "        let x = DATA[t];");
    let _ = writeln!(w, "        let a = {arg};");
    let expr = match plan.function {
        SimdFunction::ShuffleUp => format!("select(x, {call}(x, {arg}), l >= a)"),
        SimdFunction::ShuffleDown => {
            format!(
                "select(x, {call}(x, {arg}), l + a < TAB[t + {}u])",
                2 * threads
            )
        }
        _ => format!("{call}(x, {arg})"),
    };
    let _ = writeln!(w, "        out[t] = {expr};");
    let _ = writeln!(w, "    }}");
    let _ = writeln!(w, "}}");
    Ok(Shader {
        source: Arc::from(s),
        batched: None,
        dispatch: Dispatch {
            words: Vec::new(),
            local_size: threads as u32,
            groups: 1,
            subgroup_size: Some(w_),
            buffers: vec![
                Buffer {
                    role: "results",
                    bytes: vec![0; threads * 4],
                },
                Buffer {
                    role: "data",
                    bytes: le_bytes(4, &data),
                },
                Buffer {
                    role: "arguments, active, group sizes",
                    bytes: le_bytes(4, &tab),
                },
            ],
            ret_bytes: 4,
            operands: Operands::Text(format!(
                "{}{}",
                operand_line(1, "DATA", 4, &data).replacen(';', "//", 1),
                operand_line(2, "TAB", 4, &tab).replacen(';', "//", 1)
            )),
            batched: None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::back::sass_plan;

    fn shader(asm: &str, weak: bool) -> Result<Shader, NotApplicable> {
        let mut p = sass_plan(asm);
        p.env.weak = weak;
        let mem = vec![0; p.layout().size as usize];
        emit_atomic(&p, mem, &Features::all())
    }

    #[test]
    fn every_integer_op_of_a_type_and_space_is_one_shader_switching_on_its_code() {
        let add = shader("ATOM.E.ADD R0, [R2], R4", false).unwrap();
        for (asm, code) in [
            ("ATOM.E.MAX R0, [R2], R4", 6),
            ("ATOM.E.XOR R0, [R2], R4", 9),
            ("ATOM.E.EXCH R0, [R2], R4", 10),
            ("ATOM.E.CAS R0, [R2], R4, R5", 11),
        ] {
            let s = shader(asm, true).unwrap();
            // One text, written once: the same allocation, so naga compiles it once.
            assert!(Arc::ptr_eq(&s.source, &add.source), "{asm}");
            let (b, a) = (s.batched.as_ref().unwrap(), add.batched.as_ref().unwrap());
            assert!(Arc::ptr_eq(b, a), "{asm}");
            // Binding 3: N, ELEMS, the op's code, the element indices; the second operands
            // are bound for every op.
            assert_eq!(
                s.dispatch.buffers[3].bytes,
                le_bytes(4, &[2, 4, code, 0, 2])
            );
            assert_eq!(s.dispatch.buffers.len(), 6, "{asm}");
            if code == 11 {
                assert_eq!(s.dispatch.buffers[5].bytes, le_bytes(4, &[7, 8]));
            }
            let listing = s.dispatch.operands.text();
            assert!(
                listing.starts_with(&format!("// OP = {code} (")),
                "{listing}"
            );
        }
        assert!(add.source.contains("switch INV[2]"), "{}", add.source);
        // Another type is another shader; a store keeps its op in the text.
        let signed = shader("ATOM.E.MAX.S32 R0, [R2], R4", false).unwrap();
        assert!(!Arc::ptr_eq(&signed.source, &add.source));
        assert!(signed.source.contains("atomic<i32>"), "{}", signed.source);
        // naga compiles both forms, and the switch is in its SPIR-V.
        for src in [&add.source, add.batched.as_ref().unwrap(), &signed.source] {
            let words = compile(src).unwrap_or_else(|e| panic!("{e:?}\n{src}"));
            assert!(words.len() > 100);
        }
        // WGSL's compare-exchange is the weak one: a strong one is not applicable.
        let why = shader("ATOM.E.CAS R0, [R2], R4, R5", false).unwrap_err();
        assert!(why.0.contains("strong"), "{why}");
    }
}
