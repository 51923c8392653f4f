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
//! and place) is read from the read-only parameters at binding 4 ([`params`]; [`module`] builds
//! the words); invocations past an instruction's count skip it. One pipeline then serves every
//! case of a shape (lavapipe compiles each pipeline with LLVM, about 0.27 s cold).

mod module;
mod params;

use super::atomic::check_atomic;
use super::emit::{
    Buffer, Datum, Dispatch, Features, ModuleCache, Operands, Plant, le_bytes, na, shape_sizes,
};
use crate::plan::{ConcurrentPlan, NotApplicable};
use atomcts_reference::ir::AtomicOp;
use atomcts_reference::types::Space;
use module::{Shape, module};

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
    let words = MODULES
        .with(|m| m.get_or_build(&shape, |k| module(k).map(std::sync::Arc::from)))?
        .to_vec();
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
        operands: Operands::Text(p.listing),
        batched: None,
    })
}

thread_local! {
    /// Built modules by shape.
    static MODULES: ModuleCache<Shape> = ModuleCache::new();
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
        let a = state(
            2,
            &[
                ("R2", b32, 0x1000),
                ("R4", b32, 0xffff_fffe),
                ("R5", b32, 0x8000_0001),
            ],
        );
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
        // The 64-bit operands (0x80000001_fffffffe) start at an even word (an element of the
        // 64-bit view; the two element indices end at word 21), low word first.
        let w =
            |i: usize| u32::from_le_bytes(d.buffers[4].bytes[4 * i..4 * i + 4].try_into().unwrap());
        let src0 = w(3 + params::SRC0 as usize) as usize;
        assert_eq!(src0, 22);
        assert_eq!(
            (w(src0), w(src0 + 1), w(src0 + 2), w(src0 + 3)),
            (0xffff_fffe, 0x8000_0001, 0xffff_fffe, 0x8000_0001)
        );
        assert!(
            d.operands.text().contains(
                "first operand per invocation): {0x80000001fffffffe, 0x80000001fffffffe}"
            ),
            "{}",
            d.operands.text()
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
        assert_eq!(a.operands.text(), want);
        assert!(a.listing().starts_with(want));
    }
}
