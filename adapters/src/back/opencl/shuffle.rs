//! Emit: a [`ShufflePlan`] (an MSL SIMD-group function) -> one OpenCL C kernel whose sub-groups
//! are the case's SIMD-groups, with the sub-group built-in of the same meaning:
//!
//! | MSL (Table 34 and later) | OpenCL C | extension |
//! | --- | --- | --- |
//! | simd_shuffle | sub_group_shuffle | cl_khr_subgroup_shuffle |
//! | simd_shuffle_xor | sub_group_shuffle_xor | cl_khr_subgroup_shuffle |
//! | simd_shuffle_up / down | sub_group_shuffle_up / down | cl_khr_subgroup_shuffle_relative |
//! | simd_broadcast | sub_group_broadcast | `__opencl_c_subgroups` / cl_khr_subgroups |
//! | simd_shuffle_rotate_down / up | sub_group_rotate by `d` / by `W - d` | cl_khr_subgroup_rotate |
//! | simd_shuffle_and_fill_down / up | intel_sub_group_shuffle_down / up | cl_intel_subgroups |
//!
//! The kernel requires sub-groups of the case's SIMD width `W`
//! (`intel_reqd_sub_group_size(W)`, cl_intel_required_subgroup_size; a device without it, or
//! without `W` among `CL_DEVICE_SUB_GROUP_SIZES_INTEL`, cannot run the case) in one work-group of
//! `ceil(lanes / W) * W` work-items; Metal thread `t` is sub-group lane `t % W` of sub-group
//! `t / W`, indexed by `get_sub_group_id()` and `get_sub_group_local_id()`, and every work-item
//! writes the sub-group size it ran with into `ok`, which the run checks.
//!
//! Every work-item calls the built-in (the OpenCL sub-group functions must be met by the whole
//! sub-group): what a thread reads from an inactive Metal thread or from padding is undefined in
//! MSL too, and the lowering leaves those results unchecked. Where Metal defines a value and
//! OpenCL does not, the kernel adds what Metal says, as the Vulkan back end does:
//! simd_shuffle_up keeps the caller's value when `lane < delta`, simd_shuffle_down when
//! `lane + delta >= N`. The rotate and and_fill built-ins work on the whole sub-group: a case
//! whose Metal SIMD-group is smaller (a partial group under `msl.partial_simd_group =
//! group_size`) or whose and_fill `modulo` splits it is not applicable, as is a delta at or
//! beyond `W` for and_fill (cl_intel_subgroups leaves it undefined). Deltas, masks and lane IDs
//! other than simd_shuffle's are uniform within each SIMD-group (MSL requires it; the lowering
//! marks anything else unspecified): the kernel takes each sub-group's from its first active
//! thread, so that the OpenCL argument is uniform across the sub-group as OpenCL requires.
//! 8- and 16-bit data move in the low bits of a `uint`.

use super::emit::{Features, KERNEL_NAME, Kernel, Plant};
use crate::plan::NotApplicable;
use crate::shuffle::ShufflePlan;
use atomcts_reference::msl::simd::SimdFunction;
use std::fmt::Write as _;

fn na<T>(why: impl Into<String>) -> Result<T, NotApplicable> {
    Err(NotApplicable(why.into()))
}

/// Checks that `plan` can run on a device with `f` and work-groups of up to `max_work_group`.
pub fn check(plan: &ShufflePlan, f: &Features, max_work_group: usize) -> Result<(), NotApplicable> {
    let sg = &f.sub_groups;
    let w = plan.width;
    let name = plan.function.name();
    let (has, needs) = match plan.function {
        SimdFunction::Shuffle | SimdFunction::ShuffleXor => (sg.shuffle, "cl_khr_subgroup_shuffle"),
        SimdFunction::ShuffleUp | SimdFunction::ShuffleDown => {
            (sg.shuffle_relative, "cl_khr_subgroup_shuffle_relative")
        }
        SimdFunction::Broadcast => (sg.core, "__opencl_c_subgroups or cl_khr_subgroups"),
        SimdFunction::ShuffleRotateUp | SimdFunction::ShuffleRotateDown => {
            (sg.rotate, "cl_khr_subgroup_rotate")
        }
        SimdFunction::ShuffleAndFillUp | SimdFunction::ShuffleAndFillDown => {
            (sg.intel, "cl_intel_subgroups")
        }
    };
    if !has {
        return na(format!("{name}: the device does not report {needs}"));
    }
    if !sg.core && plan.function != SimdFunction::Broadcast {
        return na(format!(
            "{name}: the device reports no sub-groups (__opencl_c_subgroups or cl_khr_subgroups)"
        ));
    }
    if sg.required_sizes == 0 {
        return na(format!(
            "SIMD width {w}: the device does not report cl_intel_required_subgroup_size, so a kernel cannot require its sub-group size"
        ));
    }
    if !sg.can_require(w) {
        let sizes: Vec<String> = (0..128)
            .filter(|n| sg.can_require(*n))
            .map(|n| n.to_string())
            .collect();
        return na(format!(
            "SIMD width {w}: the device's sub-groups are of {} work-items (CL_DEVICE_SUB_GROUP_SIZES_INTEL)",
            sizes.join(", ")
        ));
    }
    if plan.threads.len() > max_work_group {
        return na(format!(
            "{} work-items exceed the device's work-group size {max_work_group}",
            plan.threads.len()
        ));
    }
    let whole = matches!(
        plan.function,
        SimdFunction::ShuffleRotateUp
            | SimdFunction::ShuffleRotateDown
            | SimdFunction::ShuffleAndFillUp
            | SimdFunction::ShuffleAndFillDown
    );
    let active = || plan.threads.iter().filter(|t| t.active);
    if whole && active().any(|t| t.n != w) {
        return na(format!(
            "{name} on a partial SIMD-group of fewer than {w} threads (msl.partial_simd_group): the OpenCL built-in works on the whole sub-group of {w}"
        ));
    }
    if matches!(
        plan.function,
        SimdFunction::ShuffleAndFillUp | SimdFunction::ShuffleAndFillDown
    ) {
        if active().any(|t| t.modulo.is_some_and(|m| m != w)) {
            return na(format!(
                "{name} with a modulo below the SIMD width {w}: intel_sub_group_shuffle_{} fills across the whole sub-group",
                if plan.function == SimdFunction::ShuffleAndFillUp {
                    "up"
                } else {
                    "down"
                }
            ));
        }
        if active().any(|t| t.arg >= w) {
            return na(format!(
                "{name} with a delta at or beyond the SIMD width {w}: cl_intel_subgroups leaves it undefined"
            ));
        }
    }
    if plan.bits == 64
        && matches!(
            plan.function,
            SimdFunction::ShuffleAndFillUp | SimdFunction::ShuffleAndFillDown
        )
        && !sg.intel_long
    {
        return na(format!(
            "{name} on 64-bit data: the device does not report cl_intel_subgroups_long"
        ));
    }
    Ok(())
}

/// Each thread's argument as the kernel passes it: simd_shuffle's own lane ID; for the other
/// functions the argument of the first active thread of its SIMD-group (uniform across the
/// sub-group, as OpenCL requires; MSL requires it of the active threads).
fn arguments(plan: &ShufflePlan) -> Vec<u32> {
    let w = plan.width as usize;
    if plan.function == SimdFunction::Shuffle {
        return plan.threads.iter().map(|t| t.arg).collect();
    }
    plan.threads
        .chunks(w)
        .flat_map(|g| {
            let a = g.iter().find(|t| t.active).map_or(0, |t| t.arg);
            std::iter::repeat_n(a, g.len())
        })
        .collect()
}

/// A `__constant` array of `values` of type `ty` (hex literals with `suffix`).
fn table(w: &mut String, ty: &str, name: &str, values: &[u64], suffix: &str) {
    let v: Vec<String> = values.iter().map(|x| format!("{x:#x}{suffix}")).collect();
    let _ = writeln!(
        w,
        "__constant {ty} {name}[{}] = {{{}}};",
        values.len(),
        v.join(", ")
    );
}

/// Emits the kernel for `plan` (checked with [`check`] first; `plant` for checking the corpus
/// only). Arguments: `mem` (unused), `ret` (each thread's result, a `ulong` per work-item), `ok`
/// (the sub-group size each work-item ran with).
pub fn emit(
    plan: &ShufflePlan,
    f: &Features,
    max_work_group: usize,
    plant: Plant,
) -> Result<Kernel, NotApplicable> {
    check(plan, f, max_work_group)?;
    let w = plan.width;
    let threads = plan.threads.len();
    let (t, suffix) = if plan.bits == 64 {
        ("ulong", "ul")
    } else {
        ("uint", "u")
    };
    let args: Vec<u64> = arguments(plan).into_iter().map(u64::from).collect();
    let mut s = String::new();
    let out = &mut s;
    let _ = writeln!(
        out,
        "// {} on {}-bit data at SIMD width {w}: Metal thread t is sub-group lane t % {w} of sub-group t / {w}\n// (one work-group of {threads} work-items, sub-groups of {w} required)",
        plan.function.name(),
        plan.bits
    );
    table(
        out,
        t,
        "DATA",
        &plan.threads.iter().map(|x| x.data).collect::<Vec<_>>(),
        suffix,
    );
    table(out, "uint", "ARG", &args, "u");
    let fill = matches!(
        plan.function,
        SimdFunction::ShuffleAndFillUp | SimdFunction::ShuffleAndFillDown
    );
    if fill {
        table(
            out,
            t,
            "FILL",
            &plan.threads.iter().map(|x| x.fill).collect::<Vec<_>>(),
            suffix,
        );
    }
    if plan.function == SimdFunction::ShuffleDown {
        table(
            out,
            "uint",
            "N",
            &plan
                .threads
                .iter()
                .map(|x| u64::from(x.n))
                .collect::<Vec<_>>(),
            "u",
        );
    }
    let _ = writeln!(
        out,
        "__kernel __attribute__((intel_reqd_sub_group_size({w})))\nvoid {KERNEL_NAME}(__global ulong *mem, __global ulong *ret, __global int *ok) {{"
    );
    let _ = writeln!(out, "    const uint l = get_sub_group_local_id();");
    let _ = writeln!(out, "    const uint t = get_sub_group_id() * {w}u + l;");
    let _ = writeln!(out, "    const {t} x = DATA[t];");
    let _ = writeln!(out, "    const uint a = ARG[t];");
    // Every work-item calls the built-in; Metal's defined edges are selected after.
    let body = match plan.function {
        SimdFunction::Shuffle => format!("    const {t} r = sub_group_shuffle(x, a);"),
        SimdFunction::ShuffleXor => format!("    const {t} r = sub_group_shuffle_xor(x, a);"),
        SimdFunction::Broadcast => format!("    const {t} r = sub_group_broadcast(x, a);"),
        SimdFunction::ShuffleUp => format!(
            "    const {t} s = sub_group_shuffle_{}(x, a);\n    // Metal: the lower delta lanes keep their value.\n    const {t} r = l >= a ? s : x;",
            if plant == Plant::UpAsDown {
                "down"
            } else {
                "up"
            }
        ),
        SimdFunction::ShuffleDown => format!(
            "    const {t} s = sub_group_shuffle_down(x, a);\n    // Metal: the upper delta lanes keep their value (N: the SIMD-group's size).\n    const {t} r = l + a < N[t] ? s : x;"
        ),
        SimdFunction::ShuffleRotateDown => {
            format!("    const {t} r = sub_group_rotate(x, (int)(a % {w}u));")
        }
        SimdFunction::ShuffleRotateUp => {
            format!("    const {t} r = sub_group_rotate(x, (int)(({w}u - a % {w}u) % {w}u));")
        }
        SimdFunction::ShuffleAndFillDown => {
            format!("    const {t} r = intel_sub_group_shuffle_down(x, FILL[t], a);")
        }
        SimdFunction::ShuffleAndFillUp => {
            format!("    const {t} r = intel_sub_group_shuffle_up(FILL[t], x, a);")
        }
    };
    let _ = writeln!(out, "{body}");
    let _ = writeln!(out, "    ret[t] = (ulong)r;");
    let _ = writeln!(out, "    ok[t] = (int)get_sub_group_size();");
    let _ = writeln!(out, "}}");
    Ok(Kernel {
        source: s.into(),
        options: "-cl-std=CL3.0".into(),
        elem_bytes: 8,
        args: None,
        params: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::back::opencl::emit::SubGroups;
    use atomcts_reference::ir::Lowering;
    use atomcts_reference::program::{Dialect, Program};
    use atomcts_reference::state::Reg;
    use atomcts_reference::types::ElemType;
    use atomcts_reference::{Profile, State};

    /// `lanes` threads of SIMD width `w`: `x[t] = 0x100 + t`, `f[t] = 0x200 + t` (uint).
    fn plan(asm: &str, lanes: u32, w: u32) -> ShufflePlan {
        let mut s = State::new(lanes);
        s.simd_width = w;
        for (name, base) in [("x", 0x100), ("f", 0x200)] {
            s.regs.insert(
                name.into(),
                Reg {
                    ty: ElemType::UD,
                    elems: (0..u64::from(lanes)).map(|t| base + t).collect(),
                },
            );
        }
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

    /// A device with every sub-group extension and sizes 4, 8, 16.
    fn all() -> Features {
        Features {
            c11: true,
            sub_groups: SubGroups {
                core: true,
                shuffle: true,
                shuffle_relative: true,
                rotate: true,
                intel: true,
                intel_long: true,
                required_sizes: (1 << 4) | (1 << 8) | (1 << 16),
            },
            ..Features::default()
        }
    }

    #[test]
    fn each_function_is_its_builtin_at_the_required_size() {
        let k = emit(
            &plan("r = simd_shuffle_up(x, 2)", 8, 8),
            &all(),
            1024,
            Plant::None,
        )
        .unwrap();
        assert!(
            k.source
                .contains("__kernel __attribute__((intel_reqd_sub_group_size(8)))"),
            "{}",
            k.source
        );
        assert!(k.source.contains("sub_group_shuffle_up(x, a)"));
        assert!(k.source.contains("l >= a ? s : x"));
        assert!(k.source.contains("__constant uint ARG[8] = {0x2u, 0x2u"));
        assert_eq!(k.options, "-cl-std=CL3.0");
        for (asm, builtin) in [
            ("r = simd_shuffle(x, 3)", "sub_group_shuffle(x, a)"),
            ("r = simd_shuffle_xor(x, 1)", "sub_group_shuffle_xor(x, a)"),
            ("r = simd_shuffle_down(x, 1)", "l + a < N[t] ? s : x"),
            ("r = simd_broadcast(x, 5)", "sub_group_broadcast(x, a)"),
            (
                "r = simd_shuffle_rotate_down(x, 3)",
                "sub_group_rotate(x, (int)(a % 8u))",
            ),
            (
                "r = simd_shuffle_rotate_up(x, 3)",
                "sub_group_rotate(x, (int)((8u - a % 8u) % 8u))",
            ),
            (
                "r = simd_shuffle_and_fill_down(x, f, 3)",
                "intel_sub_group_shuffle_down(x, FILL[t], a)",
            ),
            (
                "r = simd_shuffle_and_fill_up(x, f, 3)",
                "intel_sub_group_shuffle_up(FILL[t], x, a)",
            ),
        ] {
            let k = emit(&plan(asm, 8, 8), &all(), 1024, Plant::None).unwrap();
            assert!(k.source.contains(builtin), "{asm}: {}", k.source);
        }
        let k = emit(
            &plan("r = simd_shuffle_and_fill_down(x, f, 3)", 8, 8),
            &all(),
            1024,
            Plant::None,
        )
        .unwrap();
        assert!(
            k.source
                .contains("__constant uint FILL[8] = {0x200u, 0x201u")
        );
    }

    #[test]
    fn the_plant_swaps_up_for_down() {
        let p = plan("r = simd_shuffle_up(x, 2)", 8, 8);
        let k = emit(&p, &all(), 1024, Plant::UpAsDown).unwrap();
        assert!(
            k.source.contains("sub_group_shuffle_down(x, a)"),
            "{}",
            k.source
        );
        assert!(!k.source.contains("sub_group_shuffle_up("));
        assert_eq!(Plant::from_name("up_as_down"), Some(Plant::UpAsDown));
    }

    #[test]
    fn partial_groups_are_padded_to_whole_sub_groups() {
        let k = emit(
            &plan("r = simd_shuffle_xor(x, 1)", 6, 4),
            &all(),
            1024,
            Plant::None,
        )
        .unwrap();
        assert!(
            k.source.contains("__constant uint DATA[8] = {0x100u"),
            "{}",
            k.source
        );
        assert!(k.source.contains("0x105u, 0x0u, 0x0u}"), "{}", k.source);
    }

    #[test]
    fn what_the_device_lacks_is_not_applicable_with_the_reason() {
        let p = plan("r = simd_shuffle_up(x, 1)", 8, 8);
        let mut f = all();
        f.sub_groups.shuffle_relative = false;
        let why = emit(&p, &f, 1024, Plant::None).unwrap_err();
        assert!(why.0.contains("cl_khr_subgroup_shuffle_relative"), "{why}");
        let mut f = all();
        f.sub_groups.required_sizes = 0;
        let why = emit(&p, &f, 1024, Plant::None).unwrap_err();
        assert!(why.0.contains("cl_intel_required_subgroup_size"), "{why}");
        let why = emit(
            &plan("r = simd_shuffle(x, 1)", 32, 32),
            &all(),
            1024,
            Plant::None,
        )
        .unwrap_err();
        assert!(why.0.contains("SIMD width 32"), "{why}");
        assert!(why.0.contains("4, 8, 16"), "{why}");
        let why = emit(&p, &all(), 4, Plant::None).unwrap_err();
        assert!(why.0.contains("work-group size 4"), "{why}");
        let mut f = all();
        f.sub_groups.rotate = false;
        let why = emit(
            &plan("r = simd_shuffle_rotate_up(x, 1)", 8, 8),
            &f,
            1024,
            Plant::None,
        )
        .unwrap_err();
        assert!(why.0.contains("cl_khr_subgroup_rotate"), "{why}");
        let mut f = all();
        f.sub_groups.intel = false;
        let why = emit(
            &plan("r = simd_shuffle_and_fill_up(x, f, 1)", 8, 8),
            &f,
            1024,
            Plant::None,
        )
        .unwrap_err();
        assert!(why.0.contains("cl_intel_subgroups"), "{why}");
        let why = emit(
            &plan("r = simd_shuffle_and_fill_up(x, f, 1, 4)", 8, 8),
            &all(),
            1024,
            Plant::None,
        )
        .unwrap_err();
        assert!(why.0.contains("modulo"), "{why}");
        let why = emit(
            &plan("r = simd_shuffle_and_fill_down(x, f, 9)", 8, 8),
            &all(),
            1024,
            Plant::None,
        )
        .unwrap_err();
        assert!(why.0.contains("delta"), "{why}");
        assert!(emit(&p, &Features::default(), 1024, Plant::None).is_err());
    }
}
