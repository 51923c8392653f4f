//! cl_ext_float_atomics: which float add, sub, min and max a device runs with an exact built-in
//! (`atomic_fetch_{add,sub,min,max}_explicit` on `atomic_half`, `atomic_float`,
//! `atomic_double`), from the capability bits it reports per type and space, and what a case's
//! data asks beyond that (subnormals, NaN and signed-zero rules of min/max). The emitter
//! ([`super::emit`]) spells the built-in.

use super::emit::Features;
use crate::plan::{NotApplicable, Plan};
use atomcts_reference::float::{FtzMode, Round};
use atomcts_reference::ir::AtomicOp;
use atomcts_reference::types::{DataType, Space};

fn na<T>(why: impl Into<String>) -> Result<T, NotApplicable> {
    Err(NotApplicable(why.into()))
}

/// cl_ext_float_atomics, "New API Enums": `CL_DEVICE_GLOBAL_FP_ATOMIC_ADD_EXT` (add and sub).
pub const FP_GLOBAL_ADD: u64 = 1 << 1;
/// `CL_DEVICE_GLOBAL_FP_ATOMIC_MIN_MAX_EXT`.
pub const FP_GLOBAL_MIN_MAX: u64 = 1 << 2;
/// `CL_DEVICE_LOCAL_FP_ATOMIC_ADD_EXT`.
pub const FP_LOCAL_ADD: u64 = 1 << 17;
/// `CL_DEVICE_LOCAL_FP_ATOMIC_MIN_MAX_EXT`.
pub const FP_LOCAL_MIN_MAX: u64 = 1 << 18;

/// A float atomic with an exact cl_ext_float_atomics built-in: the C11-style
/// `atomic_fetch_{add,sub,min,max}_explicit` on `atomic_half`, `atomic_float` or
/// `atomic_double`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FloatAtomic {
    /// The float type (`half`, `float`, `double`).
    pub float: &'static str,
    /// Its bits as an unsigned integer type (`ushort`, `uint`, `ulong`): memory and the
    /// returned value move as these, so no bit pattern passes through a float conversion.
    pub bits: &'static str,
    /// Index into [`Features::fp_atomics`] and [`Features::fp_denorm`].
    pub index: usize,
}

/// The name of `CL_DEVICE_*_FP_ATOMIC_CAPABILITIES_EXT` for index `i` of
/// [`Features::fp_atomics`].
fn fp_query(i: usize) -> &'static str {
    ["HALF", "SINGLE", "DOUBLE"][i]
}

/// The cl_ext_float_atomics built-in for a float add, sub, min or max on a device with `f`:
/// `Ok(None)` where the op is no float arithmetic (integers; exchange, store and a bitwise
/// compare-exchange move bits), the exact reason where the device cannot run it.
pub fn float_atomic(plan: &Plan, f: &Features) -> Result<Option<FloatAtomic>, NotApplicable> {
    let (float, bits, index) = match plan.ty {
        DataType::F16 => ("half", "ushort", 0),
        DataType::F32 => ("float", "uint", 1),
        DataType::F64 => ("double", "ulong", 2),
        _ => return Ok(None),
    };
    let (global, local, what, bit_name) = match plan.op {
        AtomicOp::Add | AtomicOp::Sub => (FP_GLOBAL_ADD, FP_LOCAL_ADD, "add", "ADD"),
        AtomicOp::Min | AtomicOp::Max => {
            (FP_GLOBAL_MIN_MAX, FP_LOCAL_MIN_MAX, "min/max", "MIN_MAX")
        }
        _ => return Ok(None),
    };
    let shared = plan.space == Space::Shared;
    let (bit, scope) = if shared {
        (local, "LOCAL")
    } else {
        (global, "GLOBAL")
    };
    if f.fp_atomics[index] & bit == 0 {
        return na(format!(
            "{} atomic {what} on {} memory: the device does not report CL_DEVICE_{scope}_FP_ATOMIC_{bit_name}_EXT in CL_DEVICE_{}_FP_ATOMIC_CAPABILITIES_EXT (cl_ext_float_atomics)",
            plan.ty.name(),
            plan.space.name(),
            fp_query(index)
        ));
    }
    if !f.c11 {
        return na(
            "float atomics: the cl_ext_float_atomics built-ins are the atomic_*_explicit forms, and the device reports no OpenCL C 3.0",
        );
    }
    if matches!(plan.op, AtomicOp::Add | AtomicOp::Sub) && plan.env.round != Round::NearestEven {
        return na(
            "float atomic with a rounding other than to nearest even: OpenCL C float arithmetic rounds to nearest even (OpenCL C 3.0, 7.1 \"Rounding Modes\")",
        );
    }
    Ok(Some(FloatAtomic { float, bits, index }))
}

/// What a float atomic's data asks of the device (checked per case, after [`super::single::emit`]): a float
/// min/max meeting a NaN or signed zeros the profile wants decided (SPIR-V's OpAtomicFMinEXT /
/// FMaxEXT, which cl_ext_float_atomics maps to, leave them open), and subnormals, whose
/// handling OpenCL leaves to the device unless it reports `CL_FP_DENORM` for the type and the
/// case wants them kept (this back end never passes `-cl-denorms-are-zero`, which only allows
/// flushing).
pub fn check_float_values(plan: &Plan, mem: &[u8], f: &Features) -> Result<(), NotApplicable> {
    let Some(fa) = float_atomic(plan, f)? else {
        return Ok(());
    };
    crate::float_values::check_minmax_rules(
        plan,
        mem,
        &format!(
            "atomic_fetch_{}_explicit on atomic_{}",
            if plan.op == AtomicOp::Min {
                "min"
            } else {
                "max"
            },
            fa.float
        ),
    )?;
    let flush = plan.env.ftz != FtzMode::NONE;
    let kept = !flush && f.fp_denorm[fa.index];
    if kept || crate::float_values::minmax_any_denormals(plan) {
        return Ok(());
    }
    if crate::float_values::touches_subnormals(plan, mem) {
        return na(if flush {
            format!(
                "subnormal {} values (operands, or sums of them) with flushing required: OpenCL C never requires a device to flush (-cl-denorms-are-zero only allows it)",
                plan.ty.name()
            )
        } else {
            format!(
                "subnormal {} values (operands, or sums of them): the device does not report CL_FP_DENORM for {}, so subnormal handling is its choice",
                plan.ty.name(),
                fa.float
            )
        });
    }
    Ok(())
}
