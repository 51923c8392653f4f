//! Emit, SIMD-group functions: a [`ShufflePlan`] -> one SPIR-V compute module (the mapping is
//! in [`super::emit`]).

use crate::plan::NotApplicable;
use crate::shuffle::ShufflePlan;
use atomcts_reference::msl::simd::SimdFunction;
use rspirv::spirv::{BuiltIn, Capability};

/// The entry point's name.
use super::emit::*;

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
        operands: Operands::Text(format!(
            "{}{}",
            operand_line(1, "datum per thread", bytes, &data),
            operand_line(
                2,
                "argument per thread, then active (1) per thread, then SIMD-group size per thread",
                4,
                &tab
            )
        )),
        batched: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use atomcts_reference::ir::Lowering;
    use atomcts_reference::program::{Dialect, Program};
    use atomcts_reference::state::Reg;
    use atomcts_reference::types::ElemType;
    use atomcts_reference::{Profile, State};
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
