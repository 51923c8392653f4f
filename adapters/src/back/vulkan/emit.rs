//! Emit: a [`Plan`] or [`ShufflePlan`] -> one SPIR-V compute module, built instruction by
//! instruction with `rspirv`'s builder, so that every atomic is exactly the intended SPIR-V
//! instruction with the intended scope and memory semantics (SPIR-V 1.6 §3.42.18 "Atomic
//! Instructions", §3.42.24 "Non-Uniform Instructions"; SPV_EXT_shader_atomic_float_add and
//! SPV_EXT_shader_atomic_float_min_max for the float forms).
//!
//! | IR op | instruction |
//! | --- | --- |
//! | add / sub | OpAtomicIAdd / OpAtomicISub; f32 add: OpAtomicFAddEXT |
//! | inc / dec (plain, wrapping) | OpAtomicIIncrement / OpAtomicIDecrement |
//! | predec (vISA, returns the new value) | OpAtomicIDecrement, the returned value minus one |
//! | min / max | OpAtomicSMin/UMin / OpAtomicSMax/UMax by type; f32: OpAtomicFMinEXT/FMaxEXT |
//! | and / or / xor | OpAtomicAnd / OpAtomicOr / OpAtomicXor |
//! | exch | OpAtomicExchange (floats as the integer of their width: bits move unchanged) |
//! | cas (bitwise compare) | OpAtomicCompareExchange, success = returned == comparand |
//! | store | OpAtomicStore |
//! | inc_bounded / dec_bounded (CUDA/SASS) | not applicable: no SPIR-V instruction, never a CAS loop |
//!
//! Scope: `Device` for storage buffers, `Workgroup` for workgroup memory; semantics `None`
//! (relaxed: every case is one instruction, MSL's atomics are relaxed).
//!
//! The SIMD-group functions map onto OpGroupNonUniformShuffle (simd_shuffle),
//! OpGroupNonUniformBroadcast with a constant lane (simd_broadcast), OpGroupNonUniformShuffleUp
//! / ShuffleDown (simd_shuffle_up/down) and OpGroupNonUniformShuffleXor (simd_shuffle_xor), all
//! at `Subgroup` scope. Where Metal defines a value and SPIR-V does not, the translation adds
//! what Metal says: simd_shuffle_up keeps the caller's value when `lane < delta`, simd_shuffle_down
//! when `lane + delta >= N` (SPIR-V leaves both undefined). The rotate and and_fill functions
//! have no SPIR-V instruction on Vulkan 1.3 without SPV_KHR_subgroup_rotate: not applicable.
//!
//! A module's words depend only on the case's shape (type, space, float mode, work-group
//! size rounded up to a power of two, workgroup memory rounded likewise; the op only for a
//! float atomic or a store: an integer op's code is read from binding 3 and the module switches
//! on it, one arm per op of [`crate::back::OPS`], issue 31; for a shuffle the function, width and
//! invocations; see [`shape_sizes`]): the op's code, element indices and operands are read from storage
//! buffers ([`Dispatch::operands`] lists them beside the disassembly printed for a failing
//! case), so one pipeline serves every case of a shape (issue 9: lavapipe compiles each
//! pipeline with LLVM, about 0.1 s of CPU).

use crate::back::regions::Region;
use crate::plan::NotApplicable;
use atomcts_reference::ir::AtomicOp;
use rspirv::binary::{Assemble, Disassemble};
use rspirv::dr::{Builder, Operand};
use rspirv::spirv::{
    AddressingModel, BuiltIn, Capability, Decoration, ExecutionMode, ExecutionModel,
    FunctionControl, LoopControl, MemoryModel, SelectionControl, StorageClass, Word,
};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// The entry point's name.
pub const ENTRY: &str = "main";

/// What the device reports that decides what can be emitted (from its features, extensions and
/// properties; never a hand table).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Features {
    /// `shaderInt64`.
    pub int64: bool,
    /// `shaderBufferInt64Atomics`.
    pub buffer_int64_atomics: bool,
    /// `shaderSharedInt64Atomics`.
    pub shared_int64_atomics: bool,
    /// `shaderBufferFloat32AtomicAdd` (VK_EXT_shader_atomic_float).
    pub buffer_f32_add: bool,
    /// `shaderSharedFloat32AtomicAdd`.
    pub shared_f32_add: bool,
    /// `shaderBufferFloat32AtomicMinMax` (VK_EXT_shader_atomic_float2).
    pub buffer_f32_minmax: bool,
    /// `shaderSharedFloat32AtomicMinMax`.
    pub shared_f32_minmax: bool,
    /// `shaderDenormFlushToZeroFloat32` (float controls).
    pub denorm_ftz_f32: bool,
    /// `shaderDenormPreserveFloat32`.
    pub denorm_preserve_f32: bool,
    /// Sub-group operations in compute shaders: basic.
    pub subgroup_basic: bool,
    /// `VK_SUBGROUP_FEATURE_SHUFFLE_BIT`.
    pub subgroup_shuffle: bool,
    /// `VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT`.
    pub subgroup_shuffle_relative: bool,
    /// `VK_SUBGROUP_FEATURE_BALLOT_BIT` (OpGroupNonUniformBroadcast).
    pub subgroup_ballot: bool,
    /// `shaderSubgroupExtendedTypes` (64-bit data in sub-group operations).
    pub subgroup_extended_types: bool,
    /// `subgroupSizeControl` and `computeFullSubgroups`, compute in
    /// `requiredSubgroupSizeStages`.
    pub subgroup_size_control: bool,
    /// `minSubgroupSize` (the default size where size control is absent).
    pub min_subgroup_size: u32,
    /// `maxSubgroupSize`.
    pub max_subgroup_size: u32,
    /// `maxComputeSharedMemorySize`.
    pub max_shared_bytes: u32,
    /// `maxComputeWorkGroupSize[0]` and `maxComputeWorkGroupInvocations`, the smaller.
    pub max_invocations: u32,
}

impl Features {
    /// Every feature the emitters can use, sub-groups of 1 to 128 lanes: for checking emitted
    /// modules (with `spirv-val`) without a device.
    pub fn all() -> Features {
        Features {
            int64: true,
            buffer_int64_atomics: true,
            shared_int64_atomics: true,
            buffer_f32_add: true,
            shared_f32_add: true,
            buffer_f32_minmax: true,
            shared_f32_minmax: true,
            denorm_ftz_f32: false,
            denorm_preserve_f32: false,
            subgroup_basic: true,
            subgroup_shuffle: true,
            subgroup_shuffle_relative: true,
            subgroup_ballot: true,
            subgroup_extended_types: true,
            subgroup_size_control: true,
            min_subgroup_size: 1,
            max_subgroup_size: 128,
            max_shared_bytes: 1 << 16,
            max_invocations: 1024,
        }
    }
}

/// A deliberately wrong SPIR-V opcode, for checking that the corpus catches an emitter bug
/// (`ATOMCTS_VULKAN_PLANT`); never set in normal runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Plant {
    /// No planted bug.
    #[default]
    None,
    /// OpAtomicUMax where OpAtomicSMax is meant.
    SmaxAsUmax,
    /// OpGroupNonUniformShuffleDown where OpGroupNonUniformShuffleUp is meant.
    UpAsDown,
    /// Concurrent cases: each instruction's adds and subtracts on global memory done by one
    /// invocation of its work-group, serially, as a plain load, add and store: atomic with
    /// respect to the instruction itself, not to the other instructions (issue 12's bug).
    GroupSerialRmw,
    /// Memory instructions: invocation 0 also stores to the element just past the case's
    /// memory, and a batched run binds the memory 8 bytes wider, so that the store lands in
    /// the guard between this case and the next ([`super::run::batch`]; issue 31's check that
    /// a cross-case write is caught, never a pass).
    CrossCaseWrite,
}

impl Plant {
    /// From the value of `ATOMCTS_VULKAN_PLANT` (`smax_as_umax`, `up_as_down`,
    /// `group_serial_rmw`, `cross_case_write`).
    pub fn from_name(s: &str) -> Option<Plant> {
        match s {
            "" | "none" => Some(Plant::None),
            "smax_as_umax" => Some(Plant::SmaxAsUmax),
            "up_as_down" => Some(Plant::UpAsDown),
            "group_serial_rmw" => Some(Plant::GroupSerialRmw),
            "cross_case_write" => Some(Plant::CrossCaseWrite),
            _ => None,
        }
    }
}

/// One storage buffer of the dispatch (descriptor set 0, binding = its index).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Buffer {
    /// What it holds (for messages).
    pub role: &'static str,
    /// Initial contents; read back after the dispatch.
    pub bytes: Vec<u8>,
}

/// A module and how to dispatch it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dispatch {
    /// The SPIR-V words.
    pub words: Vec<u32>,
    /// Invocations in one work-group (`LocalSize` x).
    pub local_size: u32,
    /// Work-groups dispatched (x): 1 but for a concurrent case with one work-group per
    /// instruction.
    pub groups: u32,
    /// The sub-group size the pipeline must have, with full sub-groups.
    pub subgroup_size: Option<u32>,
    /// The storage buffers, bindings 0...
    pub buffers: Vec<Buffer>,
    /// Element size of the results buffer (binding 1 for atomics, 0 for shuffles).
    pub ret_bytes: u64,
    /// The case's values in the input buffers, one comment line per buffer, as printed beside
    /// the disassembly (empty where the module holds them).
    pub operands: Operands,
    /// The batched form of [`Dispatch::words`] (issue 31): the same module run by one
    /// work-group per case of a batch, each work-group's accesses to binding `b` offset by the
    /// byte offset in word `BATCH_BASES_STRIDE * g + b` of the bases buffer (bound after the
    /// case's buffers), so that the cases of one shape in a batch are one `vkCmdDispatch`
    /// ([`super::run::batch`]). `None`: the case runs as its own dispatch.
    pub batched: Option<Arc<[u32]>>,
}

/// Words of a batched module's bases buffer per case (per work-group): binding `b`'s region
/// starts at the byte offset in word `b` ([`Dispatch::batched`]).
pub const BATCH_BASES_STRIDE: u32 = 8;

/// The bases buffer's words for the cases `cases` (indices into the regions of `bindings`),
/// [`BATCH_BASES_STRIDE`] words each: word `b` the byte offset of the case's region in binding
/// `b` (a batched module's [`Dispatch::batched`]).
pub fn bases_words(cases: &[usize], bindings: &[&[Region]]) -> Vec<u32> {
    let mut words = Vec::with_capacity(cases.len() * BATCH_BASES_STRIDE as usize);
    for &c in cases {
        let mut w = [0u32; BATCH_BASES_STRIDE as usize];
        for (b, regions) in bindings.iter().enumerate().take(w.len()) {
            // A binding's buffer is at most a batch's bytes plus guards: far below 4 GiB.
            w[b] = regions[c].start as u32;
        }
        words.extend_from_slice(&w);
    }
    words
}

impl Dispatch {
    /// The SPIR-V disassembly (rspirv's), for reports.
    pub fn disassemble(&self) -> String {
        match rspirv::dr::load_words(&self.words) {
            Ok(m) => m.disassemble(),
            Err(e) => format!("(cannot disassemble: {e})"),
        }
    }

    /// The disassembly after the input buffers' values ([`Dispatch::operands`]).
    pub fn listing(&self) -> String {
        format!("{}{}", self.operands.text(), self.disassemble())
    }
}

/// A dispatch's values in its input buffers as printed beside its program
/// ([`Dispatch::operands`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Operands {
    /// Written out.
    Text(String),
    /// A memory instruction's, written out only when printed (issue 31: formatting them for
    /// every case was a twelfth of a generated run's CPU; a listing is printed for a failing
    /// case only).
    Lines(Box<OperandLines>),
}

/// A memory instruction's operands, kept as values ([`Operands::Lines`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperandLines {
    /// The SPIR-V route's head line: the op, and the code the module switches on where it
    /// does.
    pub op: Option<(AtomicOp, Option<u32>)>,
    /// WGSL's comment marker (`//`) in place of SPIR-V's `;`.
    pub wgsl: bool,
    /// Per input buffer: its binding, role, element bytes and values.
    pub lines: Vec<(u32, &'static str, u64, Vec<u64>)>,
}

impl Operands {
    /// The lines as printed.
    pub fn text(&self) -> String {
        let l = match self {
            Operands::Text(t) => return t.clone(),
            Operands::Lines(l) => l,
        };
        let mut s = match l.op {
            Some((op, Some(c))) => format!(
                "{} OP = {c} ({}): the {} switches on binding 3's word 2\n",
                if l.wgsl { "//" } else { ";" },
                op.name(),
                if l.wgsl { "shader" } else { "module" }
            ),
            Some((op, None)) => format!(
                "{} OP: {} in the {} (binding 3's word 2 unused)\n",
                if l.wgsl { "//" } else { ";" },
                op.name(),
                if l.wgsl { "shader" } else { "module" }
            ),
            None => String::new(),
        };
        for (binding, role, bytes, values) in &l.lines {
            let line = operand_line(*binding, role, *bytes, values);
            s.push_str(&if l.wgsl {
                line.replacen(';', "//", 1)
            } else {
                line
            });
        }
        s
    }
}

/// One comment line: binding `binding` (`role`) holds `values` (fixed-width hex of `bytes`).
pub(crate) fn operand_line(binding: u32, role: &str, bytes: u64, values: &[u64]) -> String {
    let w = (bytes * 2) as usize;
    let v: Vec<String> = values
        .iter()
        .map(|x| format!("{x:#0w$x}", w = w + 2))
        .collect();
    format!("; binding {binding} ({role}): {{{}}}\n", v.join(", "))
}

/// The work-group size and workgroup-memory elements of a memory instruction's shape, for `n`
/// accessing invocations and `elems` elements of `bytes` bytes: at least [`MIN_LOCAL`]
/// invocations and [`MIN_LM_BYTES`] bytes, else the next power of two, where the device allows
/// (invocations past `n` only copy workgroup memory; the copies stop at `elems`). Few shapes
/// means few pipelines: a fuzzing campaign's cases have thousands of (op, type, lanes, memory
/// size) combinations, lavapipe compiles each pipeline with LLVM.
pub(crate) fn shape_sizes(n: u32, elems: u64, bytes: u64, f: &Features) -> (u32, u64) {
    let local = Some(n.next_power_of_two().max(MIN_LOCAL))
        .filter(|l| *l <= f.max_invocations)
        .or(Some(n.next_power_of_two()).filter(|l| *l <= f.max_invocations))
        .unwrap_or(n);
    let lm = Some(
        elems
            .max(1)
            .next_power_of_two()
            .max(MIN_LM_BYTES / bytes.max(1)),
    )
    .filter(|e| e * bytes <= u64::from(f.max_shared_bytes))
    .or(Some(elems.max(1).next_power_of_two())
        .filter(|e| e * bytes <= u64::from(f.max_shared_bytes)))
    .unwrap_or(elems);
    (local, lm)
}

/// The smallest work-group of a memory instruction's shape ([`shape_sizes`]).
pub const MIN_LOCAL: u32 = 32;

/// The smallest workgroup memory of a memory instruction's shape, in bytes ([`shape_sizes`]).
pub const MIN_LM_BYTES: u64 = 1024;

pub(crate) use crate::back::le_bytes;

pub(super) fn na<T>(why: impl Into<String>) -> Result<T, NotApplicable> {
    Err(NotApplicable(why.into()))
}

pub(super) fn bug(e: rspirv::dr::Error) -> NotApplicable {
    NotApplicable(format!("SPIR-V builder error (a back-end bug): {e}"))
}

/// Types and constants the emitters share.
pub(super) struct Ctx {
    pub(super) b: Builder,
    void: Word,
    pub(super) bool_t: Word,
    pub(super) u32_t: Word,
    decorated: HashSet<Word>,
    pub(super) inputs: Vec<Word>,
    /// A batched module's storage-buffer variables: the element index where this work-group's
    /// case starts ([`Ctx::batch_bases`]); [`Ctx::element`] adds it to every index.
    bases: HashMap<Word, Word>,
}

/// What a batched module reads its case's place from: the bases buffer and `WorkgroupId`
/// ([`Ctx::batch_inputs`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct BatchInputs {
    bases: Word,
    group: Word,
}

impl Ctx {
    pub(super) fn new() -> Ctx {
        let mut b = Builder::new();
        b.set_version(1, 3);
        b.capability(Capability::Shader);
        b.memory_model(AddressingModel::Logical, MemoryModel::GLSL450);
        let void = b.type_void();
        let bool_t = b.type_bool();
        let u32_t = b.type_int(32, 0);
        Ctx {
            b,
            void,
            bool_t,
            u32_t,
            decorated: HashSet::new(),
            inputs: Vec::new(),
            bases: HashMap::new(),
        }
    }

    /// A batched module's inputs, declared before `main`: the bases buffer (read-only, u32
    /// words) at `binding` and the `WorkgroupId` built-in.
    pub(super) fn batch_inputs(&mut self, binding: u32) -> BatchInputs {
        let u = self.u32_t;
        let bases = self.readonly_buffer(u, 4, binding);
        let (group, _) = self.workgroup_id();
        BatchInputs { bases, group }
    }

    /// The `WorkgroupId` built-in (an `Input` of type `uvec3`): the variable and its type.
    pub(super) fn workgroup_id(&mut self) -> (Word, Word) {
        let u = self.u32_t;
        let v3 = self.b.type_vector(u, 3);
        let ptr = self.b.type_pointer(None, StorageClass::Input, v3);
        let var = self.b.variable(ptr, None, StorageClass::Input, None);
        self.b.decorate(
            var,
            Decoration::BuiltIn,
            [Operand::BuiltIn(BuiltIn::WorkgroupId)],
        );
        self.inputs.push(var);
        (var, v3)
    }

    /// In `main`, after its `Function` variables: this work-group's case's element index in
    /// each of `buffers` (variable, element bytes, in binding order from 0), read from the
    /// bases buffer's words `BATCH_BASES_STRIDE * WorkgroupId.x + binding` (byte offsets) and
    /// kept for [`Ctx::element`].
    pub(super) fn batch_bases(
        &mut self,
        inputs: BatchInputs,
        buffers: &[(Word, u64)],
    ) -> Result<(), NotApplicable> {
        let u = self.u32_t;
        let v3 = self.b.type_vector(u, 3);
        let ids = self.b.load(v3, None, inputs.group, None, []).map_err(bug)?;
        let g = self.b.composite_extract(u, None, ids, [0]).map_err(bug)?;
        let stride = self.c32(BATCH_BASES_STRIDE);
        let first = self.b.i_mul(u, None, g, stride).map_err(bug)?;
        for (binding, &(var, bytes)) in buffers.iter().enumerate() {
            let b = self.c32(binding as u32);
            let at = self.b.i_add(u, None, first, b).map_err(bug)?;
            let offset = self.load_storage(inputs.bases, u, at)?;
            let shift = self.c32(bytes.trailing_zeros());
            let base = self
                .b
                .shift_right_logical(u, None, offset, shift)
                .map_err(bug)?;
            self.bases.insert(var, base);
        }
        Ok(())
    }

    pub(super) fn c32(&mut self, v: u32) -> Word {
        let t = self.u32_t;
        self.b.constant_bit32(t, v)
    }

    /// A constant of integer/float type `ty` of `bytes` bytes.
    pub(super) fn c(&mut self, ty: Word, bytes: u64, v: u64) -> Word {
        if bytes == 8 {
            self.b.constant_bit64(ty, v)
        } else {
            self.b.constant_bit32(ty, v as u32)
        }
    }

    /// A `StorageBuffer` block `{ elem data[]; }` at `binding`; returns the variable.
    pub(super) fn storage_buffer(&mut self, elem: Word, stride: u32, binding: u32) -> Word {
        self.buffer(elem, stride, binding, false)
    }

    /// SPIR-V 1.6 §3.20 "Decoration", `NonWritable`: [`Ctx::storage_buffer`] with its member
    /// decorated so (the shader only reads it).
    pub(super) fn readonly_buffer(&mut self, elem: Word, stride: u32, binding: u32) -> Word {
        self.buffer(elem, stride, binding, true)
    }

    fn buffer(&mut self, elem: Word, stride: u32, binding: u32, readonly: bool) -> Word {
        let arr = self.b.type_runtime_array(elem);
        if self.decorated.insert(arr) {
            self.b.decorate(
                arr,
                Decoration::ArrayStride,
                [Operand::LiteralBit32(stride)],
            );
        }
        // A struct per binding (the builder would share identical ones).
        let st = self.b.id();
        self.b.type_struct_id(Some(st), [arr]);
        self.b.decorate(st, Decoration::Block, []);
        self.b
            .member_decorate(st, 0, Decoration::Offset, [Operand::LiteralBit32(0)]);
        if readonly {
            self.b.member_decorate(st, 0, Decoration::NonWritable, []);
        }
        let ptr = self.b.type_pointer(None, StorageClass::StorageBuffer, st);
        let var = self
            .b
            .variable(ptr, None, StorageClass::StorageBuffer, None);
        self.b
            .decorate(var, Decoration::DescriptorSet, [Operand::LiteralBit32(0)]);
        self.b
            .decorate(var, Decoration::Binding, [Operand::LiteralBit32(binding)]);
        var
    }

    /// An `Input` built-in of type `u32`.
    pub(super) fn builtin(&mut self, which: BuiltIn) -> Word {
        let u = self.u32_t;
        let ptr = self.b.type_pointer(None, StorageClass::Input, u);
        let var = self.b.variable(ptr, None, StorageClass::Input, None);
        self.b
            .decorate(var, Decoration::BuiltIn, [Operand::BuiltIn(which)]);
        self.inputs.push(var);
        var
    }

    /// Loads element `idx` of storage buffer `var`.
    pub(super) fn load_storage(
        &mut self,
        var: Word,
        elem: Word,
        idx: Word,
    ) -> Result<Word, NotApplicable> {
        let p = self.element(var, elem, idx)?;
        self.b.load(elem, None, p, None, []).map_err(bug)
    }

    /// A pointer to element `idx` of storage buffer `var`.
    pub(super) fn element(
        &mut self,
        var: Word,
        elem: Word,
        idx: Word,
    ) -> Result<Word, NotApplicable> {
        let p = self.b.type_pointer(None, StorageClass::StorageBuffer, elem);
        let zero = self.c32(0);
        let idx = match self.bases.get(&var) {
            Some(&base) => {
                let u = self.u32_t;
                self.b.i_add(u, None, base, idx).map_err(bug)?
            }
            None => idx,
        };
        self.b.access_chain(p, None, var, [zero, idx]).map_err(bug)
    }

    /// Begins `void main()` with `LocalSize local`; returns the function id.
    pub(super) fn begin_main(&mut self, local: u32) -> Result<Word, NotApplicable> {
        let void = self.void;
        let fty = self.b.type_function(void, []);
        let f = self
            .b
            .begin_function(void, None, FunctionControl::NONE, fty)
            .map_err(bug)?;
        self.b
            .execution_mode(f, ExecutionMode::LocalSize, [local, 1, 1]);
        self.b.begin_block(None).map_err(bug)?;
        Ok(f)
    }

    pub(super) fn end_main(mut self, f: Word) -> Result<Vec<u32>, NotApplicable> {
        self.b.ret().map_err(bug)?;
        self.b.end_function().map_err(bug)?;
        let inputs = self.inputs.clone();
        self.b
            .entry_point(ExecutionModel::GLCompute, f, ENTRY, inputs);
        Ok(self.b.module().assemble())
    }

    /// `if cond { body }` as a structured selection.
    pub(super) fn if_then(
        &mut self,
        cond: Word,
        body: impl FnOnce(&mut Ctx) -> Result<(), NotApplicable>,
    ) -> Result<(), NotApplicable> {
        let then = self.b.id();
        let merge = self.b.id();
        self.b
            .selection_merge(merge, SelectionControl::NONE)
            .map_err(bug)?;
        self.b
            .branch_conditional(cond, then, merge, [])
            .map_err(bug)?;
        self.b.begin_block(Some(then)).map_err(bug)?;
        body(self)?;
        self.b.branch(merge).map_err(bug)?;
        self.b.begin_block(Some(merge)).map_err(bug)?;
        Ok(())
    }

    /// SPIR-V 1.6 §3.42.17 "Control-Flow Instructions", OpSwitch headed by OpSelectionMerge:
    /// `switch (sel) { case cases[i]: arm(i); break; default: }`, a structured selection whose
    /// default target is the merge block (a u32 selector, 32-bit literals).
    pub(super) fn switch(
        &mut self,
        sel: Word,
        cases: &[u32],
        mut arm: impl FnMut(&mut Ctx, usize) -> Result<(), NotApplicable>,
    ) -> Result<(), NotApplicable> {
        let merge = self.b.id();
        let labels: Vec<Word> = cases.iter().map(|_| self.b.id()).collect();
        self.b
            .selection_merge(merge, SelectionControl::NONE)
            .map_err(bug)?;
        let targets: Vec<(Operand, Word)> = cases
            .iter()
            .zip(&labels)
            .map(|(c, l)| (Operand::LiteralBit32(*c), *l))
            .collect();
        self.b.switch(sel, merge, targets).map_err(bug)?;
        for (i, l) in labels.iter().enumerate() {
            self.b.begin_block(Some(*l)).map_err(bug)?;
            arm(self, i)?;
            self.b.branch(merge).map_err(bug)?;
        }
        self.b.begin_block(Some(merge)).map_err(bug)?;
        Ok(())
    }

    /// `for (j = start; j < end; j += step) body(j)` as a structured loop; `counter` is a
    /// `Function` variable of type u32, `end_c` a u32 value of the module.
    pub(super) fn for_loop_to(
        &mut self,
        counter: Word,
        start: Word,
        end_c: Word,
        step: u32,
        body: impl FnOnce(&mut Ctx, Word) -> Result<(), NotApplicable>,
    ) -> Result<(), NotApplicable> {
        let (u, bt) = (self.u32_t, self.bool_t);
        self.b.store(counter, start, None, []).map_err(bug)?;
        let (header, check, body_l, cont, merge) = (
            self.b.id(),
            self.b.id(),
            self.b.id(),
            self.b.id(),
            self.b.id(),
        );
        self.b.branch(header).map_err(bug)?;
        self.b.begin_block(Some(header)).map_err(bug)?;
        self.b
            .loop_merge(merge, cont, LoopControl::NONE, [])
            .map_err(bug)?;
        self.b.branch(check).map_err(bug)?;
        self.b.begin_block(Some(check)).map_err(bug)?;
        let j = self.b.load(u, None, counter, None, []).map_err(bug)?;
        let more = self.b.u_less_than(bt, None, j, end_c).map_err(bug)?;
        self.b
            .branch_conditional(more, body_l, merge, [])
            .map_err(bug)?;
        self.b.begin_block(Some(body_l)).map_err(bug)?;
        body(self, j)?;
        self.b.branch(cont).map_err(bug)?;
        self.b.begin_block(Some(cont)).map_err(bug)?;
        let step_c = self.c32(step);
        let next = self.b.i_add(u, None, j, step_c).map_err(bug)?;
        self.b.store(counter, next, None, []).map_err(bug)?;
        self.b.branch(header).map_err(bug)?;
        self.b.begin_block(Some(merge)).map_err(bug)?;
        Ok(())
    }
}

/// The most modules a [`ModuleCache`] keeps; when full, it is emptied.
pub(crate) const MAX_MODULES: usize = 1024;

/// Built modules kept by shape `K` (a thread's own: each holds one in a `thread_local!`), so
/// that a case of a seen shape emits nothing (emitting with rspirv was 15 % of a batched run's
/// CPU, issue 9); at most [`MAX_MODULES`].
pub(crate) struct ModuleCache<K, V = Arc<[u32]>>(std::cell::RefCell<HashMap<K, V>>);

impl<K: std::hash::Hash + Eq + Clone, V: Clone> ModuleCache<K, V> {
    pub(crate) fn new() -> Self {
        ModuleCache(std::cell::RefCell::new(HashMap::new()))
    }

    /// What shape `k`'s module is (its words; on the WGSL route its texts), built by `build`
    /// the first time.
    pub(crate) fn get_or_build(
        &self,
        k: &K,
        build: impl FnOnce(&K) -> Result<V, NotApplicable>,
    ) -> Result<V, NotApplicable> {
        let mut m = self.0.borrow_mut();
        if let Some(w) = m.get(k) {
            return Ok(w.clone());
        }
        let w = build(k)?;
        if m.len() >= MAX_MODULES {
            m.clear();
        }
        m.insert(k.clone(), w.clone());
        Ok(w)
    }
}

/// How the datum is typed in the module.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Datum {
    Int,
    Float,
}
