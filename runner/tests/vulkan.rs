//! The Vulkan back end from the command line. Without a driver: an unknown device is one line
//! and exit 2, and `list adapters` says what is available. With lavapipe installed
//! (tools/install-implementations.sh vulkan; CI runs these with `--ignored`): planted wrong
//! SPIR-V opcodes (ATOMCTS_VULKAN_PLANT) are caught by the corpus, and the SIMD-group cases of
//! the device's width run while the others are not applicable with the reason; cases of one
//! shape share one pipeline, and nothing carries over from one case to the next (issue 9).

mod common;
use common::{atomcts_env as atomcts, text};

/// [`common::two_lanes`] with every word of memory `init`.
fn two_lanes(addrs: [u64; 2], vals: [u64; 2], init: u64) -> atomcts_reference::State {
    common::two_lanes(addrs, vals, [init; 4])
}
use std::process::Output;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

#[test]
fn an_unknown_device_is_one_line_and_exit_2() {
    let cases = format!("{ROOT}/spec-cases/msl/simd/shuffle.toml");
    for route in ["vulkan", "wgsl-naga"] {
        let adapter = format!("{route}:no-such-device-xyz");
        let o = atomcts(
            &[
                "run",
                "--no-progress",
                "--cases",
                &cases,
                "--adapter",
                &adapter,
            ],
            &[],
        );
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(&format!("{adapter}: unavailable")), "{err}");
    }
}

#[test]
fn list_adapters_says_what_is_available_and_why_not() {
    let o = atomcts(&["list", "adapters"], &[]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    for route in ["vulkan", "wgsl-naga"] {
        let line = t
            .lines()
            .find(|l| l.contains(&format!("{route}:lavapipe ")))
            .unwrap_or_else(|| panic!("no line for {route}: {t}"));
        assert!(
            line.contains("(available;") || line.contains("(unavailable: "),
            "{line}"
        );
    }
}

fn run(adapter: &str, cases: &str, filter: &str, env: &[(&str, &str)]) -> Output {
    let cases = format!("{ROOT}/{cases}");
    atomcts(
        &[
            "run",
            "--no-progress",
            "--profile",
            "spirv",
            "--cases",
            &cases,
            "--filter",
            filter,
            "--adapter",
            adapter,
            "-v",
        ],
        env,
    )
}

#[test]
#[ignore = "needs lavapipe (tools/install-implementations.sh vulkan); CI runs it"]
fn planted_wrong_opcodes_are_caught() {
    // OpAtomicUMax for a signed max.
    let clean = run("vulkan:lavapipe", "spec-cases", "max", &[]);
    assert_eq!(clean.status.code(), Some(0), "{}", text(&clean));
    let planted = run(
        "vulkan:lavapipe",
        "spec-cases",
        "max",
        &[("ATOMCTS_VULKAN_PLANT", "smax_as_umax")],
    );
    let t = text(&planted);
    assert_eq!(planted.status.code(), Some(1), "{t}");
    assert!(t.contains("FAIL msl/atomic/fetch_min_max::"), "{t}");
    assert!(t.contains("FAIL sass/atom/min_max_int::max_s32"), "{t}");
    assert!(
        t.contains("OpAtomicUMax"),
        "the program that ran is shown: {t}"
    );
    // ... saying that it ran batched, as one work-group of its shape's dispatch.
    assert!(t.contains("; ran batched: one work-group"), "{t}");
    // OpGroupNonUniformShuffleDown for simd_shuffle_up.
    let planted = run(
        "vulkan:lavapipe",
        "spec-cases/msl/simd",
        "shuffle_up",
        &[("ATOMCTS_VULKAN_PLANT", "up_as_down")],
    );
    let t = text(&planted);
    assert_eq!(planted.status.code(), Some(1), "{t}");
    assert!(
        t.contains("FAIL msl/simd/device_widths::w8_shuffle_up_1"),
        "{t}"
    );
    assert!(t.contains("OpGroupNonUniformShuffleDown"), "{t}");
}

#[test]
#[ignore = "needs lavapipe (tools/install-implementations.sh vulkan); CI runs it"]
fn simd_cases_of_the_device_width_run_and_the_others_say_why_not() {
    for (lp, width, other) in [("256", 8, 4), ("128", 4, 8)] {
        for route in ["vulkan", "wgsl-naga"] {
            let adapter = format!("{route}:lavapipe");
            let o = run(
                &adapter,
                "spec-cases/msl/simd/device_widths.toml",
                "",
                &[("LP_NATIVE_VECTOR_WIDTH", lp)],
            );
            let t = text(&o);
            assert_eq!(o.status.code(), Some(0), "{route} at {width}: {t}");
            assert!(
                t.contains(&format!("sub-groups {width}..{width} lanes")),
                "{route}: {t}"
            );
            assert!(
                t.contains(&format!(
                    "SIMD width {other}: the device's sub-groups are {width}..{width} lanes"
                )),
                "{route}: {t}"
            );
            assert!(t.contains("13 passed, 0 failed"), "{route} at {width}: {t}");
        }
    }
}

/// Issue 9: cases of one shape share one pipeline and the reused buffers, fence and descriptor
/// pool carry nothing from one case to the next (each case's values come out, not the last's).
#[test]
#[ignore = "needs lavapipe (tools/install-implementations.sh vulkan); CI runs it"]
fn one_pipeline_per_shape_and_nothing_carried_between_cases() {
    use atomcts_adapters::back::vulkan::{Route, VulkanAdapter};
    use atomcts_adapters::{Adapter, Observation, Request};
    use atomcts_reference::program::Dialect;
    use atomcts_reference::{Profile, State};
    let profile = Profile::default();
    for route in [Route::Spirv, Route::WgslNaga] {
        let mut a = VulkanAdapter::open(route, "lavapipe").unwrap();
        let run = |a: &mut VulkanAdapter, asm: &str, s: &State| match a
            .run(&Request {
                id: "t",
                dialect: Dialect::Sass,
                asm,
                state: s,
                profile: &profile,
                lowered: None,
            })
            .unwrap()
        {
            Observation::Completed(end) => (0x1000..0x1010)
                .step_by(4)
                .map(|x| end.global.read(x, 4).unwrap())
                .collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        };
        let add = "ATOM.E.ADD R0, [R2], R4";
        assert_eq!(
            run(&mut a, add, &two_lanes([0x1000, 0x1008], [5, 6], 0)),
            [5, 0, 6, 0]
        );
        assert_eq!(
            run(&mut a, add, &two_lanes([0x1004, 0x100c], [7, 8], 100)),
            [100, 107, 100, 108]
        );
        assert_eq!(
            run(&mut a, add, &two_lanes([0x1000, 0x1000], [1, 2], 0x10)),
            [0x13, 0x10, 0x10, 0x10]
        );
        assert_eq!(a.pipeline_counts(), (1, 2), "{route:?}");
        // Issue 31: another integer op of the same type and space is the same module (it
        // switches on the op's code) on both routes, so max on u32 reuses add's pipeline.
        let umax = "ATOM.E.MAX R0, [R2], R4";
        assert_eq!(
            run(
                &mut a,
                umax,
                &two_lanes([0x1000, 0x1004], [0xffff_ffff, 3], 2)
            ),
            [0xffff_ffff, 3, 2, 2]
        );
        assert_eq!(a.pipeline_counts(), (1, 3), "{route:?}");
        // Another type is another shape; the first is still kept.
        let max = "ATOM.E.MAX.S32 R0, [R2], R4";
        assert_eq!(
            run(
                &mut a,
                max,
                &two_lanes([0x1000, 0x1004], [0xffff_ffff, 3], 0)
            ),
            [0, 3, 0, 0]
        );
        assert_eq!(
            run(&mut a, add, &two_lanes([0x1008, 0x100c], [1, 1], 1)),
            [1, 1, 2, 2]
        );
        assert_eq!(a.pipeline_counts(), (2, 4), "{route:?}");
    }
}

/// Issue 31: a batch's single-instruction cases of one shape are one `vkCmdDispatch` (a
/// work-group per case, each reading its own place in the shared buffers from the bases
/// buffer), on both routes, and each case's own memory comes out.
#[test]
#[ignore = "needs lavapipe (tools/install-implementations.sh vulkan); CI runs it"]
fn a_batch_of_one_shape_is_one_dispatch_and_each_case_gets_its_own_memory() {
    use atomcts_adapters::back::vulkan::{Route, VulkanAdapter};
    use atomcts_adapters::{Observation, Pipelined, Request};
    use atomcts_reference::Profile;
    use atomcts_reference::program::Dialect;
    let (add, umax) = ("ATOM.E.ADD R0, [R2], R4", "ATOM.E.MAX R0, [R2], R4");
    let smax = "ATOM.E.MAX.S32 R0, [R2], R4";
    // (asm, state, the memory's four words after it), worked out by hand.
    let cases = [
        (add, two_lanes([0x1000, 0x1008], [5, 6], 0), [5, 0, 6, 0]),
        (
            smax,
            two_lanes([0x1000, 0x1004], [0xffff_ffff, 3], 0),
            [0, 3, 0, 0],
        ),
        (
            add,
            two_lanes([0x1004, 0x100c], [7, 8], 100),
            [100, 107, 100, 108],
        ),
        (
            add,
            two_lanes([0x1000, 0x1000], [1, 2], 0x10),
            [0x13, 0x10, 0x10, 0x10],
        ),
        (
            umax,
            two_lanes([0x1000, 0x1004], [0xffff_ffff, 3], 2),
            [0xffff_ffff, 3, 2, 2],
        ),
    ];
    let profile = Profile::default();
    let ids: Vec<String> = (0..cases.len()).map(|k| format!("case-{k}")).collect();
    let requests: Vec<Request<'_>> = cases
        .iter()
        .zip(&ids)
        .map(|((asm, s, _), id)| Request {
            id,
            dialect: Dialect::Sass,
            asm,
            state: s,
            profile: &profile,
            lowered: None,
        })
        .collect();
    // u32 add and max are one module (it switches on the op), s32 max another: two
    // dispatches, on both routes.
    for (route, dispatches) in [(Route::Spirv, 2), (Route::WgslNaga, 2)] {
        let mut a = VulkanAdapter::open(route, "lavapipe").unwrap();
        let before = a.dispatch_count();
        // As the runner streams them: every case sent, then every answer received.
        for r in &requests {
            a.send(r).unwrap();
        }
        let answers: Vec<_> = requests.iter().map(|r| a.receive(r)).collect();
        assert_eq!(a.dispatch_count() - before, dispatches, "{route:?}");
        assert_eq!(answers.len(), cases.len());
        for ((answer, (asm, _, want)), id) in answers.into_iter().zip(&cases).zip(&ids) {
            let got: Vec<u64> = match answer {
                Ok(Observation::Completed(end)) => (0x1000..0x1010)
                    .step_by(4)
                    .map(|x| end.global.read(x, 4).unwrap())
                    .collect(),
                other => panic!("{route:?} {id} {asm}: {other:?}"),
            };
            assert_eq!(got, want, "{route:?} {id} {asm}");
        }
    }
}

/// Issue 31: concurrent cases of one shape (other lane counts, addresses, operands and
/// iterations) share one pipeline, their numbers being in the parameters buffer, and each case's
/// own numbers come out, not the last case's.
#[test]
#[ignore = "needs lavapipe (tools/install-implementations.sh vulkan); CI runs it"]
fn concurrent_cases_of_one_shape_share_one_pipeline() {
    use atomcts_adapters::Concurrent;
    use atomcts_adapters::back::vulkan::{Route, VulkanAdapter};
    use atomcts_adapters::concurrent::{ConcurrentInstr, ConcurrentRequest};
    use atomcts_reference::program::Dialect;
    use atomcts_reference::state::Reg;
    use atomcts_reference::types::ElemType;
    use atomcts_reference::{Profile, State};
    // Instruction k: `lanes` lanes adding `v` to the word at `addr`, `its` times each.
    let state = |lanes: usize, addr: u64, v: u64| {
        let mut s = State::new(lanes as u32);
        for (r, x) in [("R2", addr), ("R3", 0), ("R4", v)] {
            s.regs.insert(
                r.into(),
                Reg {
                    ty: ElemType::B32,
                    elems: vec![x; lanes],
                },
            );
        }
        s.global.alloc(0x1000, 16).unwrap();
        s
    };
    let profile = Profile::default();
    let mut a = VulkanAdapter::open(Route::Spirv, "lavapipe").unwrap();
    let mut run = |asm: [&str; 2], k: [(usize, u64, u64, u32); 2]| {
        let states: Vec<State> = k.iter().map(|(n, at, v, _)| state(*n, *at, *v)).collect();
        let instrs: Vec<ConcurrentInstr<'_>> = (0..2)
            .map(|i| ConcurrentInstr {
                asm: asm[i],
                state: &states[i],
                iterations: k[i].3,
                cas_loop: None,
            })
            .collect();
        let r = ConcurrentRequest {
            id: "t",
            dialect: Dialect::Sass,
            instrs: &instrs,
            profile: &profile,
        };
        let o = a.run_concurrent(&r).unwrap();
        let end: Vec<u64> = (0x1000..0x1010)
            .step_by(4)
            .map(|x| o.states[0].global.read(x, 4).unwrap())
            .collect();
        let done = o.executed.unwrap();
        (end, done, a.pipeline_counts())
    };
    let add = "ATOM.E.ADD RZ, [R2], R4";
    // 4 lanes x 3 iterations of +1 at 0x1000 against 2 x 2 of +5 at 0x1008.
    let (end, done, counts) = run([add, add], [(4, 0x1000, 1, 3), (2, 0x1008, 5, 2)]);
    assert_eq!(end, [12, 0, 20, 0]);
    assert_eq!(done, [vec![3; 4], vec![2; 2]]);
    assert_eq!(counts, (1, 0));
    // 3 lanes x 5 of +2 at 0x1004 against 1 x 1 of +7 at 0x100c: the same pipeline.
    let (end, done, counts) = run([add, add], [(3, 0x1004, 2, 5), (1, 0x100c, 7, 1)]);
    assert_eq!(end, [0, 30, 0, 7]);
    assert_eq!(done, [vec![5; 3], vec![1]]);
    assert_eq!(counts, (1, 1));
    // Another op is another shape.
    let exch = "ATOM.E.EXCH RZ, [R2], R4";
    let (end, _, counts) = run([add, exch], [(2, 0x1000, 3, 2), (1, 0x1004, 9, 1)]);
    assert_eq!(end, [12, 9, 0, 0]);
    assert_eq!(counts, (2, 1));
}

/// SwiftShader's manifest (Debian's `chromium`), outside the loader's search path.
const SWIFTSHADER_ICD: &str = "/usr/lib/chromium/vk_swiftshader_icd.json";

#[test]
#[ignore = "needs SwiftShader (tools/install-implementations.sh vulkan); CI runs it"]
fn swiftshader_is_loaded_from_its_manifest_or_through_the_loader_and_judged_alike() {
    // Loaded directly (no loader, no layer) and through the loader (VK_DRIVER_FILES names the
    // manifest, validation layer on): the same verdicts, and a planted wrong opcode is caught
    // by both.
    let through_loader: &[(&str, &str)] = &[
        ("VK_DRIVER_FILES", SWIFTSHADER_ICD),
        ("ATOMCTS_VULKAN_VALIDATION", "1"),
    ];
    // The single-instruction min/max cases: the concurrent ones where a min or max meets
    // another kind of atomic lose updates on SwiftShader in some runs (swiftshader-1,
    // docs/findings.md; flaky in its baseline, which the gate applies).
    for env in [&[][..], through_loader] {
        let clean = run("vulkan:swiftshader", "spec-cases", "min_max_int", env);
        let t = text(&clean);
        assert_eq!(clean.status.code(), Some(0), "{t}");
        assert!(t.contains("SwiftShader"), "the device is named: {t}");
        assert!(!t.contains(" 0 passed"), "{t}");
        let mut planted_env = env.to_vec();
        planted_env.push(("ATOMCTS_VULKAN_PLANT", "smax_as_umax"));
        let planted = run(
            "vulkan:swiftshader",
            "spec-cases",
            "min_max_int",
            &planted_env,
        );
        let t = text(&planted);
        assert_eq!(planted.status.code(), Some(1), "{t}");
        assert!(t.contains("FAIL sass/atom/min_max_int::max_s32"), "{t}");
    }
    // Validation without the loader is refused, saying how to get it.
    let o = run(
        "vulkan:swiftshader",
        "spec-cases",
        "max",
        &[("ATOMCTS_VULKAN_VALIDATION", "1")],
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains(&format!("VK_DRIVER_FILES={SWIFTSHADER_ICD}")),
        "{t}"
    );
}
