//! What a float atomic's data asks of a device, for the semantic-level back ends that run float
//! atomics through an API's built-in (OpenCL's cl_ext_float_atomics; the Vulkan back end keeps
//! its own f32 copy of these rules): whether the values meet a subnormal (whose handling the API
//! leaves to the device unless it reports a mode), and whether a float min/max meets a NaN or a
//! pair of signed zeros where the profile demands one answer and the API's instruction leaves it
//! open (SPV_EXT_shader_atomic_float_min_max, which cl_ext_float_atomics builds on).

use crate::plan::{NotApplicable, Plan};
use atomcts_reference::float::{DenormRule, Format, NanRule, ZeroRule, is_nan, is_subnormal};
use atomcts_reference::ir::AtomicOp;
use atomcts_reference::types::DataType;

/// The IEEE format of a scalar float type (`None` for integers and packed pairs).
pub fn format(ty: DataType) -> Option<Format> {
    match ty {
        DataType::F16 => Some(Format::F16),
        DataType::F32 => Some(Format::F32),
        DataType::F64 => Some(Format::F64),
        _ => None,
    }
}

/// The value of `bits` in `f` as an `f64` (exact for f16, f32 and f64).
pub fn to_f64(f: Format, bits: u64) -> f64 {
    match f {
        Format::F64 => f64::from_bits(bits),
        Format::F32 => f64::from(f32::from_bits(bits as u32)),
        _ => {
            // IEEE 754 binary16 (and any narrow format): sign, biased exponent, fraction.
            let (e, m) = (f.exp_bits(), f.frac_bits());
            let exp = ((bits & f.exp_mask()) >> m) as i32;
            let frac = (bits & f.frac_mask()) as f64;
            let bias = (1 << (e - 1)) - 1;
            let mag = if exp == (1 << e) - 1 {
                if frac == 0.0 { f64::INFINITY } else { f64::NAN }
            } else if exp == 0 {
                frac * 2f64.powi(1 - bias - m as i32)
            } else {
                (frac + 2f64.powi(m as i32)) * 2f64.powi(exp - bias - m as i32)
            };
            if bits & f.sign_mask() != 0 { -mag } else { mag }
        }
    }
}

/// The smallest positive normal value of `f`.
fn min_normal(f: Format) -> f64 {
    let bias = (1i32 << (f.exp_bits() - 1)) - 1;
    2f64.powi(1 - bias)
}

/// The datum of `plan`'s type at byte `offset` of `mem` (zero past its end).
fn datum(plan: &Plan, mem: &[u8], offset: u64) -> u64 {
    let n = plan.ty.bytes() as usize;
    let o = offset as usize;
    mem.get(o..o + n).map_or(0, |b| {
        let mut w = [0u8; 8];
        w[..n].copy_from_slice(b);
        u64::from_le_bytes(w)
    })
}

/// The distinct offsets `plan` accesses, in order.
fn offsets(plan: &Plan) -> Vec<u64> {
    let mut o: Vec<u64> = plan.items.iter().map(|i| i.offset).collect();
    o.sort_unstable();
    o.dedup();
    o
}

/// Whether a float op of `plan` on memory `mem` may meet a subnormal: an operand or an initial
/// datum is subnormal, or (add, sub) the initial datum with some subset of the operands on its
/// address (every partial sum of every order) is, in exact arithmetic. Sums are taken in `f64`:
/// exact for f16 and f32 data; for f64 data a sum within twice the smallest normal counts too,
/// so rounding in the check never hides one. More than 12 accesses on one address count as
/// touching (not enumerated).
pub fn touches_subnormals(plan: &Plan, mem: &[u8]) -> bool {
    let Some(f) = format(plan.ty) else {
        return false;
    };
    if plan
        .items
        .iter()
        .any(|i| is_subnormal(f, i.src[0]) || is_subnormal(f, datum(plan, mem, i.offset)))
    {
        return true;
    }
    if !matches!(plan.op, AtomicOp::Add | AtomicOp::Sub) {
        return false;
    }
    let limit = if f == Format::F64 {
        2.0 * min_normal(f)
    } else {
        min_normal(f)
    };
    let tiny = |x: f64| x != 0.0 && x.abs() < limit;
    let sign = if plan.op == AtomicOp::Sub { -1.0 } else { 1.0 };
    offsets(plan).into_iter().any(|o| {
        let srcs: Vec<f64> = plan
            .items
            .iter()
            .filter(|i| i.offset == o)
            .map(|i| sign * to_f64(f, i.src[0]))
            .collect();
        if srcs.len() > 12 {
            return true;
        }
        let m = to_f64(f, datum(plan, mem, o));
        (1u32..1 << srcs.len()).any(|set| {
            let sum: f64 = srcs
                .iter()
                .enumerate()
                .filter(|(k, _)| set & (1 << k) != 0)
                .map(|(_, v)| *v)
                .sum::<f64>()
                + m;
            tiny(sum)
        })
    })
}

/// A float min/max of `plan` on memory `mem` whose NaN or signed-zero question the API's
/// `instruction` leaves open (SPV_EXT_shader_atomic_float_min_max: which operand a NaN
/// comparison and a comparison of -0 with +0 give; research A5/A6) while the case's profile
/// demands one answer (`float.minmax_nan`, `float.minmax_signed_zero`; the `spirv` profile
/// leaves both open too): not an exact primitive for it.
pub fn check_minmax_rules(plan: &Plan, mem: &[u8], instruction: &str) -> Result<(), NotApplicable> {
    let Some(f) = format(plan.ty) else {
        return Ok(());
    };
    if !matches!(plan.op, AtomicOp::Min | AtomicOp::Max) {
        return Ok(());
    }
    let rules = plan.env.minmax;
    let zero_bits = (0, f.sign_mask());
    for o in offsets(plan) {
        let mut values = vec![datum(plan, mem, o)];
        values.extend(
            plan.items
                .iter()
                .filter(|i| i.offset == o)
                .map(|i| i.src[0] & f.mask()),
        );
        if values.iter().any(|v| is_nan(f, *v)) && rules.nan != NanRule::SpirvEither {
            return Err(NotApplicable(format!(
                "float {} meets a NaN: {instruction} leaves the NaN result open, the profile demands {:?} (float.minmax_nan; the spirv profile matches the instruction)",
                plan.op.name(),
                rules.nan
            )));
        }
        if values.contains(&zero_bits.0)
            && values.contains(&zero_bits.1)
            && rules.zero != ZeroRule::Either
        {
            return Err(NotApplicable(format!(
                "float {} compares -0 with +0: {instruction} leaves the order of signed zeros open, the profile demands {:?} (float.minmax_signed_zero; the spirv profile matches the instruction)",
                plan.op.name(),
                rules.zero
            )));
        }
    }
    Ok(())
}

/// Whether a float min/max of `plan` may treat subnormals either way under its profile
/// (`float.minmax_denormals = either`), so that no device mode is needed for it.
pub fn minmax_any_denormals(plan: &Plan) -> bool {
    matches!(plan.op, AtomicOp::Min | AtomicOp::Max)
        && plan.env.minmax.denormals == DenormRule::Either
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_decodes_exactly() {
        let h = Format::F16;
        assert_eq!(to_f64(h, 0x3c00), 1.0);
        assert_eq!(to_f64(h, 0xc000), -2.0);
        assert_eq!(to_f64(h, 0x7bff), 65504.0);
        assert_eq!(to_f64(h, 0x0001), 2f64.powi(-24));
        assert_eq!(to_f64(h, 0x0400), min_normal(h));
        assert!(to_f64(h, 0x7e00).is_nan());
        assert_eq!(to_f64(h, 0xfc00), f64::NEG_INFINITY);
        assert_eq!(min_normal(Format::F32), f64::from(f32::MIN_POSITIVE));
        assert_eq!(min_normal(Format::F64), f64::MIN_POSITIVE);
        assert_eq!(to_f64(Format::F32, 0x3fc0_0000), 1.5);
    }
}
