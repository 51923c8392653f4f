//! What every OpenCL kernel of this back end shares: the device's [`Features`], the kernels'
//! [`Kernel`] and [`Args`], and the built-ins. The built-in is the one with exactly the op's
//! semantics (OpenCL C 1.2 spec, 6.12.11 "Atomic Functions"; cl_khr_int64_base_atomics /
//! cl_khr_int64_extended_atomics for 64-bit; OpenCL C 3.0, 6.15.12 "Atomic Functions" for the
//! C11-style `atomic_*_explicit` forms, used where the device reports OpenCL C 3.0). Ops with
//! no exact built-in are not applicable, never emulated: the bounded CUDA/SASS INC/DEC (no
//! OpenCL built-in: `atomic_inc`/`atomic_dec` are the plain wrapping forms), 16-bit atomics,
//! float arithmetic atomics, numeric CAS.

use crate::plan::NotApplicable;
use atomcts_reference::ir::{AtomicOp, Compare};
use atomcts_reference::types::DataType;
use std::fmt::Write as _;

/// The kernel's entry point.
pub const KERNEL_NAME: &str = "atomcts_case";

/// What the device reports that decides the emitted source (from its extensions and OpenCL C
/// versions, never a hand table).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Features {
    /// `cl_khr_int64_base_atomics`: 64-bit add, sub, xchg, inc, dec, cmpxchg.
    pub int64_base: bool,
    /// `cl_khr_int64_extended_atomics`: 64-bit min, max, and, or, xor.
    pub int64_extended: bool,
    /// The device reports OpenCL C 3.0: C11-style `atomic_*_explicit` with `-cl-std=CL3.0`.
    pub c11: bool,
    /// cl_ext_float_atomics: the capability bits of half, float and double, in that order
    /// (`CL_DEVICE_{HALF,SINGLE,DOUBLE}_FP_ATOMIC_CAPABILITIES_EXT`; zero without the extension).
    pub fp_atomics: [u64; 3],
    /// `CL_FP_DENORM` of half, float and double, in that order.
    pub fp_denorm: [bool; 3],
    /// The sub-group functions the device reports (the SIMD-group cases).
    pub sub_groups: SubGroups,
    /// An OpenCL 3.0 device whose `CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES` lack
    /// `CL_DEVICE_ATOMIC_SCOPE_DEVICE` (rusticl 22.3 reports relaxed and work-group scope
    /// only): atomics of different work-groups on one location are not atomic with each other
    /// there, so a concurrent case of several work-groups is not applicable (issue 30). False
    /// where the device reports device scope, or predates the query (OpenCL 1.x atomics on
    /// global memory).
    pub work_group_scope_only: bool,
}

/// OpenCL 3.0 API, `cl_device_atomic_capabilities`: the bits of
/// `CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES` and `CL_DEVICE_ATOMIC_FENCE_CAPABILITIES`, with the
/// words `describe` prints.
pub const ATOMIC_CAPABILITY_BITS: [(u64, &str); 7] = [
    (1 << 0, "relaxed"),
    (1 << 1, "acquire/release"),
    (1 << 2, "sequentially consistent"),
    (1 << 3, "work-item scope"),
    (1 << 4, "work-group scope"),
    (1 << 5, "device scope"),
    (1 << 6, "all-devices scope"),
];

/// `CL_DEVICE_ATOMIC_SCOPE_DEVICE`.
pub const ATOMIC_SCOPE_DEVICE: u64 = 1 << 5;

/// The capabilities `bits` as words ("relaxed, work-group scope"), "none" for none.
pub fn atomic_capabilities(bits: u64) -> String {
    let words: Vec<&str> = ATOMIC_CAPABILITY_BITS
        .iter()
        .filter(|(b, _)| bits & b != 0)
        .map(|(_, w)| *w)
        .collect();
    if words.is_empty() {
        "none".into()
    } else {
        words.join(", ")
    }
}

/// What the device reports of OpenCL sub-groups: the extensions whose built-ins the SIMD-group
/// cases use, and the sub-group sizes a kernel can require.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SubGroups {
    /// `__opencl_c_subgroups` (OpenCL C 3.0) or `cl_khr_subgroups`: `sub_group_broadcast` and
    /// the sub-group built-ins.
    pub core: bool,
    /// `cl_khr_subgroup_shuffle`: `sub_group_shuffle`, `sub_group_shuffle_xor`.
    pub shuffle: bool,
    /// `cl_khr_subgroup_shuffle_relative`: `sub_group_shuffle_up`, `sub_group_shuffle_down`.
    pub shuffle_relative: bool,
    /// `cl_khr_subgroup_rotate`: `sub_group_rotate`.
    pub rotate: bool,
    /// `cl_intel_subgroups`: `intel_sub_group_shuffle_up/down` with a second operand.
    pub intel: bool,
    /// `cl_intel_subgroups_long`: those on 64-bit data.
    pub intel_long: bool,
    /// `cl_intel_required_subgroup_size`: `intel_reqd_sub_group_size(N)`, with the sizes of
    /// `CL_DEVICE_SUB_GROUP_SIZES_INTEL` as bits (bit `n`: size `n`, sizes up to 127).
    pub required_sizes: u128,
}

impl SubGroups {
    /// Whether a kernel can require sub-groups of `n` work-items.
    pub fn can_require(&self, n: u32) -> bool {
        n < 128 && self.required_sizes & (1u128 << n) != 0
    }
}

/// A deliberately wrong built-in, for checking that the corpus catches an emitter bug
/// (`ATOMCTS_OPENCL_PLANT`); never set in normal runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Plant {
    /// No planted bug.
    #[default]
    None,
    /// Emit the subtract built-in where add is meant.
    AddAsSub,
    /// Emit `sub_group_shuffle_down` where `sub_group_shuffle_up` is meant.
    UpAsDown,
    /// The batched kernel ([`super::single::emit_batched`]) also writes the word after its case's memory
    /// region (into the guard before the next case): the batch's guard check must catch it.
    CrossCaseWrite,
}

impl Plant {
    /// From the value of `ATOMCTS_OPENCL_PLANT` (`add_as_sub`, `up_as_down`,
    /// `cross_case_write`).
    pub fn from_name(s: &str) -> Option<Plant> {
        match s {
            "" | "none" => Some(Plant::None),
            "add_as_sub" => Some(Plant::AddAsSub),
            "up_as_down" => Some(Plant::UpAsDown),
            "cross_case_write" => Some(Plant::CrossCaseWrite),
            _ => None,
        }
    }
}

/// An emitted kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kernel {
    /// OpenCL C source (shared: a shape's text is written once, [`super::single::Texts`]).
    pub source: std::sync::Arc<str>,
    /// Build options (`-cl-std=CL3.0` for the C11 forms).
    pub options: String,
    /// Size of one buffer element (the datum) in bytes.
    pub elem_bytes: u64,
    /// The per-case arguments after `mem`, `ret` and `ok`, for a kernel whose text holds none
    /// of the case's data (`None`: the text holds everything).
    pub args: Option<Args>,
    /// A concurrent case's parameter buffer (argument 3, `ulong`s), for a kernel whose text
    /// holds its shape only (`None`: no such argument).
    pub params: Option<Vec<u64>>,
}

/// The per-case kernel arguments of a shape kernel (after `mem`, `ret`, `ok`): `IDX` (element
/// index of each work-item's datum), `SRC0` and `SRC1` (operands, `elem_bytes` wide each), `N`
/// (the work-items that run an access), and for shared memory the `__local` buffer (its size)
/// and its element count `ELEMS`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Args {
    /// Element index per work-item.
    pub idx: Vec<u32>,
    /// First operand per work-item.
    pub src0: Vec<u64>,
    /// Second operand per work-item (compare-exchange's new value; zero otherwise).
    pub src1: Vec<u64>,
    /// The case's lane per work-item (for the listing only).
    pub lanes: Vec<u32>,
    /// Bytes of the `__local` copy of memory (shared-memory cases), else `None`.
    pub local_bytes: Option<u64>,
    /// The op's code in [`OPS`] (argument `OP`; per work-group `OPV` batched) for a kernel
    /// that switches on it, else `None` (the op is in the text; the argument is 0).
    pub op: Option<u32>,
}

impl Kernel {
    /// The source with its build options, the work-group size it ran with (`local`) and (for a
    /// shape kernel) every argument's values, as printed beside a failing case.
    pub fn listing(&self, title: &str, local: usize) -> String {
        let mut s = format!(
            "// atomcts: {title}\n// build options: `{}`; dispatch: one work-group of {local} work-items\n",
            self.options
        );
        if let Some(a) = &self.args {
            let list = |v: &mut dyn Iterator<Item = String>| v.collect::<Vec<_>>().join(", ");
            let _ = writeln!(
                s,
                "// arguments 3..: IDX = {{{}}}, SRC0 = {{{}}}, SRC1 = {{{}}}, N = {}, OP = {}{} (work-item i runs lane LANE[i] = {{{}}})",
                list(&mut a.idx.iter().map(|v| format!("{v}"))),
                list(&mut a.src0.iter().map(|v| format!("{v:#x}"))),
                list(&mut a.src1.iter().map(|v| format!("{v:#x}"))),
                a.idx.len(),
                a.op.map_or(
                    "0 (unused: the op is in the text)".to_string(),
                    |c| format!("{c} ({})", OPS.get(c as usize).map_or("?", |o| o.name()))
                ),
                a.local_bytes.map_or(String::new(), |b| format!(
                    ", lm = __local {b} bytes, ELEMS = {}",
                    b / self.elem_bytes.max(1)
                )),
                list(&mut a.lanes.iter().map(|v| format!("{v}"))),
            );
        }
        s.push_str(&self.source);
        s
    }
}

pub(super) fn na<T>(why: impl Into<String>) -> Result<T, NotApplicable> {
    Err(NotApplicable(why.into()))
}

/// The OpenCL C scalar type holding the datum, or why there is none.
pub(super) fn scalar(
    op: AtomicOp,
    ty: DataType,
    compare: Compare,
) -> Result<&'static str, NotApplicable> {
    // Exchange, store and a bitwise compare-exchange move bit patterns: the integer type of
    // the same width is exact for floats too.
    let bitwise = matches!(op, AtomicOp::Exch | AtomicOp::Store)
        || (op == AtomicOp::Cas && compare == Compare::Bitwise);
    Ok(match ty {
        DataType::U32 => "uint",
        DataType::S32 => "int",
        DataType::U64 => "ulong",
        DataType::S64 => "long",
        DataType::F32 if bitwise => "uint",
        DataType::F64 if bitwise => "ulong",
        DataType::F16 if bitwise => {
            return na(format!(
                "{} on f16: OpenCL C has no 16-bit integer atomics, and this back end does not emit cl_ext_float_atomics' half load, store and exchange",
                op.name()
            ));
        }
        DataType::F32 | DataType::F64 | DataType::F16 => {
            return na(format!(
                "{} on {}: OpenCL C has no float {} atomic (cl_ext_float_atomics has add, sub, min, max, load, store and exchange only)",
                op.name(),
                ty.name(),
                op.name()
            ));
        }
        DataType::U16 | DataType::S16 => {
            return na(format!(
                "{} on {}: OpenCL C has no 16-bit integer atomic built-ins",
                op.name(),
                ty.name()
            ));
        }
        DataType::BF16 | DataType::F16x2 => {
            return na(format!(
                "{} on {}: no OpenCL C atomic built-in on this type (cl_ext_float_atomics covers half, float and double)",
                op.name(),
                ty.name()
            ));
        }
    })
}

/// How the op is spelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Form {
    /// `atomic_<name>(p, ...)` / `atom_<name>(p, ...)` (OpenCL C 1.x).
    Legacy(&'static str),
    /// `atomic_<name>_explicit(p, ..., memory_order_relaxed, memory_scope_work_group)`.
    C11(&'static str),
}

pub(super) fn form(
    op: AtomicOp,
    f: &Features,
    wide: bool,
    plant: Plant,
) -> Result<Form, NotApplicable> {
    let base = match op {
        AtomicOp::Add if plant == Plant::AddAsSub => "sub",
        AtomicOp::Add => "add",
        AtomicOp::Sub => "sub",
        AtomicOp::Inc => "inc",
        AtomicOp::Dec | AtomicOp::PreDec => "dec",
        AtomicOp::Min => "min",
        AtomicOp::Max => "max",
        AtomicOp::And => "and",
        AtomicOp::Or => "or",
        AtomicOp::Xor => "xor",
        AtomicOp::Exch => "xchg",
        AtomicOp::Cas => "cmpxchg",
        AtomicOp::Store => "store",
        AtomicOp::IncBounded | AtomicOp::DecBounded => {
            return na(format!(
                "{}: the bounded CUDA/SASS form has no OpenCL built-in (atomic_inc/atomic_dec wrap); not emulated",
                op.name()
            ));
        }
    };
    if wide {
        let extended = matches!(base, "min" | "max" | "and" | "or" | "xor");
        if !f.int64_base || (extended && !f.int64_extended) {
            return na(format!(
                "64-bit atomic {base}: the device does not report {}",
                if extended {
                    "cl_khr_int64_extended_atomics"
                } else {
                    "cl_khr_int64_base_atomics"
                }
            ));
        }
    }
    // atomic_inc/atomic_dec have no C11-style form: the 1.x built-ins stay exact there.
    if f.c11 && !matches!(base, "inc" | "dec") {
        return Ok(Form::C11(match base {
            "add" => "fetch_add",
            "sub" => "fetch_sub",
            "min" => "fetch_min",
            "max" => "fetch_max",
            "and" => "fetch_and",
            "or" => "fetch_or",
            "xor" => "fetch_xor",
            "xchg" => "exchange",
            "cmpxchg" => "compare_exchange_strong",
            _ => "store",
        }));
    }
    Ok(Form::Legacy(base))
}

pub(super) use crate::back::{OPS, op_code};

/// The integer type an OpenCL C scalar type `t` is ([`scalar`]'s result).
fn data_type(t: &str) -> DataType {
    match t {
        "uint" => DataType::U32,
        "int" => DataType::S32,
        "ulong" => DataType::U64,
        _ => DataType::S64,
    }
}

/// The arms of a switch on the op for type `t`: each op of [`OPS`] this device runs on
/// `t`, with its built-in form.
pub(super) fn arms(t: &str, features: &Features, plant: Plant) -> Vec<(u64, AtomicOp, Form)> {
    let ty = data_type(t);
    OPS.iter()
        .enumerate()
        .filter(|(_, op)| scalar(**op, ty, Compare::Bitwise).is_ok_and(|u| u == t))
        .filter_map(|(c, op)| {
            form(*op, features, ty.bytes() == 8, plant)
                .ok()
                .map(|f| (c as u64, *op, f))
        })
        .collect()
}

/// The statement of a switch's arm ([`arms`]): built-in `fm` running `op` through the
/// pointers `pl` (to the plain type, the 1.x built-ins) or `pc` (to its atomic type, the
/// C11-style ones, relaxed at `scope`) with operands `src0` and `src1`, its returned value in
/// `old` and, for a compare-and-swap, whether it swapped in `success`.
pub(super) fn call(op: AtomicOp, fm: Form, wide: bool, scope: &str) -> String {
    let ord = "memory_order_relaxed";
    match fm {
        Form::Legacy(name) => {
            let f = if wide {
                format!("atom_{name}")
            } else {
                format!("atomic_{name}")
            };
            match op {
                AtomicOp::Inc | AtomicOp::Dec => format!("old = {f}(pl);"),
                AtomicOp::PreDec => {
                    format!("old = {f}(pl) - 1; /* vISA PREDEC returns the new value (A11) */")
                }
                AtomicOp::Cas => format!("old = {f}(pl, src0, src1); success = old == src0;"),
                _ => format!("old = {f}(pl, src0);"),
            }
        }
        Form::C11(name) => {
            let f = format!("atomic_{name}_explicit");
            if op == AtomicOp::Cas {
                format!("old = src0; success = {f}(pc, &old, src1, {ord}, {ord}, {scope});")
            } else {
                format!("old = {f}(pc, src0, {ord}, {scope});")
            }
        }
    }
}

/// A returned value `v` of OpenCL C type `t` as the `ulong` of a `ret` slot: its bits,
/// zero-extended (an `int` converts by sign extension, which a reader of all 8 bytes, such as a
/// standalone reproducer, would take for another value).
pub(super) fn widen(t: &str, v: &str) -> String {
    if t == "int" {
        format!("(ulong)(uint){v}")
    } else {
        format!("(ulong){v}")
    }
}
