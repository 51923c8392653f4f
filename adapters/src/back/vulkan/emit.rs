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
//! A module's words depend only on the case's shape (op, type, space, float mode, work-group
//! size rounded up to a power of two, workgroup memory rounded likewise; for a shuffle the
//! function, width and invocations; see [`shape_sizes`]): the element indices and operands are read from storage
//! buffers ([`Dispatch::operands`] lists them beside the disassembly printed for a failing
//! case), so one pipeline serves every case of a shape (issue 9: lavapipe compiles each
//! pipeline with LLVM, about 0.1 s of CPU).

use crate::plan::{NotApplicable, Plan};
use crate::shuffle::ShufflePlan;
use atomcts_reference::float::Round;
use atomcts_reference::float::{DenormRule, FtzMode};
use atomcts_reference::ir::{AtomicOp, Compare};
use atomcts_reference::msl::simd::SimdFunction;
use atomcts_reference::types::{DataType, Space};
use rspirv::binary::{Assemble, Disassemble};
use rspirv::dr::{Builder, Operand};
use rspirv::spirv::{
    AddressingModel, BuiltIn, Capability, Decoration, ExecutionMode, ExecutionModel,
    FunctionControl, LoopControl, MemoryModel, SelectionControl, StorageClass, Word,
};
use std::collections::HashSet;

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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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
}

impl Plant {
    /// From the value of `ATOMCTS_VULKAN_PLANT` (`smax_as_umax`, `up_as_down`,
    /// `group_serial_rmw`).
    pub fn from_name(s: &str) -> Option<Plant> {
        match s {
            "" | "none" => Some(Plant::None),
            "smax_as_umax" => Some(Plant::SmaxAsUmax),
            "up_as_down" => Some(Plant::UpAsDown),
            "group_serial_rmw" => Some(Plant::GroupSerialRmw),
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
    pub operands: String,
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
        format!("{}{}", self.operands, self.disassemble())
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

/// Little-endian bytes of `values`, `bytes` wide each.
pub(crate) fn le_bytes(bytes: u64, values: &[u64]) -> Vec<u8> {
    values
        .iter()
        .flat_map(|v| v.to_le_bytes()[..bytes as usize].to_vec())
        .collect()
}

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
        }
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

    /// A `Private` array of constants `values` of type `elem`; returns the variable.
    pub(super) fn const_array(&mut self, elem: Word, bytes: u64, values: &[u64]) -> Word {
        let len = self.c32(values.len() as u32);
        let arr = self.b.type_array(elem, len);
        let ids: Vec<Word> = values.iter().map(|v| self.c(elem, bytes, *v)).collect();
        let init = self.b.constant_composite(arr, ids);
        let ptr = self.b.type_pointer(None, StorageClass::Private, arr);
        self.b
            .variable(ptr, None, StorageClass::Private, Some(init))
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

    /// Loads element `idx` of a `Private` constant array.
    pub(super) fn load_private(
        &mut self,
        var: Word,
        elem: Word,
        idx: Word,
    ) -> Result<Word, NotApplicable> {
        let p = self.b.type_pointer(None, StorageClass::Private, elem);
        let at = self.b.access_chain(p, None, var, [idx]).map_err(bug)?;
        self.b.load(elem, None, at, None, []).map_err(bug)
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

    /// `for (j = start; j < end; j += step) body(j)` as a structured loop; `counter` is a
    /// `Function` variable of type u32.
    pub(super) fn for_loop(
        &mut self,
        counter: Word,
        start: Word,
        end: u32,
        step: u32,
        body: impl FnOnce(&mut Ctx, Word) -> Result<(), NotApplicable>,
    ) -> Result<(), NotApplicable> {
        let end_c = self.c32(end);
        self.for_loop_to(counter, start, end_c, step, body)
    }

    /// [`Ctx::for_loop`] with the end a value of the module (`end`, a u32 id).
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

/// How the datum is typed in the module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Datum {
    Int,
    Float,
}

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
    let mut cx = Ctx::new();
    let wide = bytes == 8;
    if wide {
        cx.b.capability(Capability::Int64);
        cx.b.capability(Capability::Int64Atomics);
    }
    let float_flush = if datum == Datum::Float {
        if plan.op == AtomicOp::Add {
            cx.b.extension("SPV_EXT_shader_atomic_float_add");
            cx.b.capability(Capability::AtomicFloat32AddEXT);
        } else {
            cx.b.extension("SPV_EXT_shader_atomic_float_min_max");
            cx.b.capability(Capability::AtomicFloat32MinMaxEXT);
        }
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
            cx.b.extension("SPV_KHR_float_controls");
            cx.b.capability(if flush {
                Capability::DenormFlushToZero
            } else {
                Capability::DenormPreserve
            });
            Some(flush)
        }
    } else {
        None
    };
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
    // 3: N, ELEMS, then each invocation's element index; 4: first operands; 5: second
    // operands (compare-exchange).
    let inv_var = cx.storage_buffer(u32_t, 4, 3);
    let src0_var = cx.storage_buffer(elem_t, bytes as u32, 4);
    let src1_var = (plan.op == AtomicOp::Cas).then(|| cx.storage_buffer(elem_t, bytes as u32, 5));
    let lid_var = cx.builtin(BuiltIn::LocalInvocationIndex);
    let inv: Vec<u64> = [u64::from(n), elems]
        .into_iter()
        .chain(plan.items.iter().map(|i| i.offset / bytes))
        .collect();
    let src0: Vec<u64> = plan.items.iter().map(|i| i.src[0]).collect();
    let src1: Vec<u64> = plan.items.iter().map(|i| i.src[1]).collect();
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
        let two = cx.c32(2);
        let at = cx.b.i_add(u32_t, None, lid, two).map_err(bug)?;
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
        let (old, success) = atomic_instruction(
            cx,
            (plan.op, plan.ty, datum),
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
        let rp = cx.element(ret_var, int_t, lid)?;
        cx.b.store(rp, old_bits, None, []).map_err(bug)?;
        let okv = match success {
            Some(s) => cx.b.select(u32_t, None, s, one, zero).map_err(bug)?,
            None => one,
        };
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
    let words = cx.end_main(f_id)?;
    let mut operands = operand_line(3, "N, ELEMS, element index per invocation", 4, &inv);
    operands.push_str(&operand_line(
        4,
        "first operand per invocation",
        bytes,
        &src0,
    ));
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
        Buffer {
            role: "invocations",
            bytes: le_bytes(4, &inv),
        },
        Buffer {
            role: "first operands",
            bytes: le_bytes(bytes, &src0),
        },
    ];
    if src1_var.is_some() {
        operands.push_str(&operand_line(
            5,
            "second operand per invocation",
            bytes,
            &src1,
        ));
        buffers.push(Buffer {
            role: "second operands",
            bytes: le_bytes(bytes, &src1),
        });
    }
    Ok(Dispatch {
        words,
        local_size: local,
        groups: 1,
        subgroup_size: None,
        buffers,
        ret_bytes: bytes,
        operands,
    })
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

/// Checks that a sub-group exchange of `plan` can run on a device with `f`.
pub fn check_shuffle(plan: &ShufflePlan, f: &Features) -> Result<(), NotApplicable> {
    let w = plan.width;
    let supported = match plan.function {
        SimdFunction::Shuffle | SimdFunction::ShuffleXor => f.subgroup_shuffle,
        SimdFunction::ShuffleUp | SimdFunction::ShuffleDown => f.subgroup_shuffle_relative,
        SimdFunction::Broadcast => f.subgroup_ballot,
        SimdFunction::ShuffleRotateUp
        | SimdFunction::ShuffleRotateDown
        | SimdFunction::ShuffleAndFillUp
        | SimdFunction::ShuffleAndFillDown => {
            return na(format!(
                "{}: no SPIR-V sub-group instruction on this device (rotate needs SPV_KHR_subgroup_rotate, and_fill has none); not emulated",
                plan.function.name()
            ));
        }
    };
    if !supported || !f.subgroup_basic {
        return na(format!(
            "{}: the device does not report the sub-group operations it needs in compute shaders",
            plan.function.name()
        ));
    }
    if !(f.min_subgroup_size <= w && w <= f.max_subgroup_size) {
        return na(format!(
            "SIMD width {w}: the device's sub-groups are {}..{} lanes{}",
            f.min_subgroup_size,
            f.max_subgroup_size,
            if f.subgroup_size_control {
                ""
            } else {
                " (no subgroup size control)"
            }
        ));
    }
    if !f.subgroup_size_control {
        return na(format!(
            "SIMD width {w}: the device cannot require full sub-groups (no computeFullSubgroups)"
        ));
    }
    if plan.threads.len() as u32 > f.max_invocations {
        return na(format!(
            "{} invocations exceed the device's work-group size {}",
            plan.threads.len(),
            f.max_invocations
        ));
    }
    if plan.bits == 64 && !(f.int64 && f.subgroup_extended_types) {
        return na(
            "64-bit data: the device does not report shaderSubgroupExtendedTypes with shaderInt64",
        );
    }
    if plan.function == SimdFunction::Broadcast && plan.uniform_arg().is_none() {
        return na(
            "simd_broadcast with a lane that differs between SIMD-groups: OpGroupNonUniformBroadcast in SPIR-V 1.3 takes a constant lane",
        );
    }
    Ok(())
}

/// Emits the module for a SIMD-group exchange.
pub fn emit_shuffle(
    plan: &ShufflePlan,
    f: &Features,
    plant: Plant,
) -> Result<Dispatch, NotApplicable> {
    check_shuffle(plan, f)?;
    let w = plan.width;
    let threads = plan.threads.len() as u32;
    let mut cx = Ctx::new();
    cx.b.capability(Capability::GroupNonUniform);
    cx.b.capability(match plan.function {
        SimdFunction::ShuffleUp | SimdFunction::ShuffleDown => {
            Capability::GroupNonUniformShuffleRelative
        }
        SimdFunction::Broadcast => Capability::GroupNonUniformBallot,
        _ => Capability::GroupNonUniformShuffle,
    });
    let wide = plan.bits == 64;
    if wide {
        cx.b.capability(Capability::Int64);
    }
    // 8- and 16-bit data move in the low bits of a 32-bit value (bits move unchanged).
    let t = cx.b.type_int(if wide { 64 } else { 32 }, 0);
    let bytes = if wide { 8 } else { 4 };
    let (u32_t, bool_t) = (cx.u32_t, cx.bool_t);
    // 0: results; 1: each thread's datum; 2: each thread's argument, then whether it is
    // active, then its SIMD-group's size (`threads` words each).
    let out_var = cx.storage_buffer(t, bytes as u32, 0);
    let data_var = cx.storage_buffer(t, bytes as u32, 1);
    let tab_var = cx.storage_buffer(u32_t, 4, 2);
    let sg_id = cx.builtin(BuiltIn::SubgroupId);
    let sg_lane = cx.builtin(BuiltIn::SubgroupLocalInvocationId);
    let th = &plan.threads;
    let data: Vec<u64> = th.iter().map(|x| x.data).collect();
    let tab: Vec<u64> = th
        .iter()
        .map(|x| u64::from(x.arg))
        .chain(th.iter().map(|x| u64::from(x.active)))
        .chain(th.iter().map(|x| u64::from(x.n)))
        .collect();
    let f_id = cx.begin_main(threads)?;
    // Metal thread t = SIMD-group * w + SIMD lane, taken from the sub-group built-ins.
    let g = cx.b.load(u32_t, None, sg_id, None, []).map_err(bug)?;
    let l = cx.b.load(u32_t, None, sg_lane, None, []).map_err(bug)?;
    let wc = cx.c32(w);
    let gw = cx.b.i_mul(u32_t, None, g, wc).map_err(bug)?;
    let tid = cx.b.i_add(u32_t, None, gw, l).map_err(bug)?;
    let tc = cx.c32(threads);
    let active_at = cx.b.i_add(u32_t, None, tid, tc).map_err(bug)?;
    let active = cx.load_storage(tab_var, u32_t, active_at)?;
    let zero = cx.c32(0);
    let is_active = cx.b.i_not_equal(bool_t, None, active, zero).map_err(bug)?;
    let function = plan.function;
    let broadcast_lane = plan.uniform_arg().unwrap_or(0);
    cx.if_then(is_active, |cx| {
        let x = cx.load_storage(data_var, t, tid)?;
        let a = cx.load_storage(tab_var, u32_t, tid)?;
        let sub = cx.c32(3); // Scope Subgroup
        let r = match function {
            SimdFunction::Shuffle => {
                cx.b.group_non_uniform_shuffle(t, None, sub, x, a)
                    .map_err(bug)?
            }
            SimdFunction::ShuffleXor => {
                cx.b.group_non_uniform_shuffle_xor(t, None, sub, x, a)
                    .map_err(bug)?
            }
            SimdFunction::Broadcast => {
                let lane = cx.c32(broadcast_lane);
                cx.b.group_non_uniform_broadcast(t, None, sub, x, lane)
                    .map_err(bug)?
            }
            SimdFunction::ShuffleUp => {
                let s = if plant == Plant::UpAsDown {
                    cx.b.group_non_uniform_shuffle_down(t, None, sub, x, a)
                } else {
                    cx.b.group_non_uniform_shuffle_up(t, None, sub, x, a)
                }
                .map_err(bug)?;
                // Metal: the lower delta lanes keep their value.
                let inside = cx.b.u_greater_than_equal(bool_t, None, l, a).map_err(bug)?;
                cx.b.select(t, None, inside, s, x).map_err(bug)?
            }
            SimdFunction::ShuffleDown => {
                let s =
                    cx.b.group_non_uniform_shuffle_down(t, None, sub, x, a)
                        .map_err(bug)?;
                // Metal: the upper delta lanes keep their value (N: the group's size).
                let n_at = cx.b.i_add(u32_t, None, active_at, tc).map_err(bug)?;
                let n = cx.load_storage(tab_var, u32_t, n_at)?;
                let la = cx.b.i_add(u32_t, None, l, a).map_err(bug)?;
                let inside = cx.b.u_less_than(bool_t, None, la, n).map_err(bug)?;
                cx.b.select(t, None, inside, s, x).map_err(bug)?
            }
            _ => return na("unreachable: checked"),
        };
        let p = cx.element(out_var, t, tid)?;
        cx.b.store(p, r, None, []).map_err(bug)
    })?;
    let words = cx.end_main(f_id)?;
    Ok(Dispatch {
        words,
        local_size: threads,
        groups: 1,
        subgroup_size: Some(w),
        buffers: vec![
            Buffer {
                role: "results",
                bytes: vec![0; (u64::from(threads) * bytes) as usize],
            },
            Buffer {
                role: "data",
                bytes: le_bytes(bytes, &data),
            },
            Buffer {
                role: "arguments, active, group sizes",
                bytes: le_bytes(4, &tab),
            },
        ],
        ret_bytes: bytes,
        operands: format!(
            "{}{}",
            operand_line(1, "datum per thread", bytes, &data),
            operand_line(
                2,
                "argument per thread, then active (1) per thread, then SIMD-group size per thread",
                4,
                &tab
            )
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Plan;
    use atomcts_reference::ir::Lowering;
    use atomcts_reference::program::{Dialect, Program};
    use atomcts_reference::state::Reg;
    use atomcts_reference::types::ElemType;
    use atomcts_reference::{Profile, State};

    fn sass(asm: &str) -> Plan {
        let mut s = State::new(2);
        for (r, v) in [
            ("R2", [0x1000, 0x1008]),
            ("R3", [0, 0]),
            ("R4", [5, 6]),
            ("R5", [7, 8]),
        ] {
            s.regs.insert(
                r.into(),
                Reg {
                    ty: ElemType::B32,
                    elems: v.to_vec(),
                },
            );
        }
        s.global.alloc(0x1000, 16).unwrap();
        let p = Program::parse(Dialect::Sass, asm).unwrap();
        match p.lower(&s, &Profile::default()).unwrap() {
            Lowering::Run(l) => Plan::new(&l, &s).unwrap(),
            other => panic!("{other:?}"),
        }
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
        // Binding 3: N, ELEMS, the element indices; binding 4: the operands.
        assert_eq!(a.buffers[3].bytes, le_bytes(4, &[2, 4, 0, 2]));
        assert_eq!(a.buffers[4].bytes, le_bytes(4, &[5, 6]));
        assert_eq!(b.buffers[3].bytes, le_bytes(4, &[2, 4, 1, 3]));
        assert_eq!(b.buffers[4].bytes, le_bytes(4, &[7, 8]));
        assert!(
            a.listing()
                .starts_with("; binding 3 (N, ELEMS, element index per invocation): {0x00000002, 0x00000004, 0x00000000, 0x00000002}\n; binding 4 (first operand per invocation): {0x00000005, 0x00000006}\n"),
            "{}",
            a.listing()
        );
        let c = emit("ATOM.E.CAS R0, [R2], R4, R5");
        assert_eq!(c.buffers.len(), 6);
        assert_eq!(c.buffers[5].bytes, le_bytes(4, &[7, 8]));
        assert_ne!(c.words, a.words);
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

    fn shuffle(asm: &str, lanes: u32, w: u32) -> ShufflePlan {
        let mut s = State::new(lanes);
        s.simd_width = w;
        s.regs.insert(
            "x".into(),
            Reg {
                ty: ElemType::UD,
                elems: (0..u64::from(lanes)).collect(),
            },
        );
        let p = Profile::default();
        match Program::parse(Dialect::Msl, asm)
            .unwrap()
            .lower(&s, &p)
            .unwrap()
        {
            Lowering::Run(l) => ShufflePlan::new(asm, &l, &s, &p).unwrap(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn shuffles_are_group_non_uniform_ops_at_the_required_size() {
        let all = Features::all();
        let d = emit_shuffle(
            &shuffle("r = simd_shuffle_up(x, 1)", 8, 8),
            &all,
            Plant::None,
        )
        .unwrap();
        assert_eq!(d.subgroup_size, Some(8));
        let text = d.disassemble();
        assert!(text.contains("OpGroupNonUniformShuffleUp"), "{text}");
        // Metal's "lower delta lanes remain unchanged", which SPIR-V leaves undefined.
        assert!(text.contains("OpSelect"), "{text}");
        let d = emit_shuffle(
            &shuffle("r = simd_broadcast(x, 3)", 8, 8),
            &all,
            Plant::None,
        )
        .unwrap();
        assert!(d.disassemble().contains("OpGroupNonUniformBroadcast"));
        let eight = Features {
            min_subgroup_size: 8,
            max_subgroup_size: 8,
            ..all
        };
        let why = emit_shuffle(
            &shuffle("r = simd_shuffle_xor(x, 1)", 4, 4),
            &eight,
            Plant::None,
        )
        .unwrap_err();
        assert!(why.0.contains("SIMD width 4"), "{why}");
        let why = emit_shuffle(
            &shuffle("r = simd_shuffle_rotate_up(x, 1)", 8, 8),
            &all,
            Plant::None,
        )
        .unwrap_err();
        assert!(why.0.contains("not emulated"), "{why}");
    }
}
