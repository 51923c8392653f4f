//! The Vulkan back end from the command line. Without a driver: an unknown device is one line
//! and exit 2, and `list adapters` says what is available. With lavapipe installed
//! (tools/install-implementations.sh vulkan; CI runs these with `--ignored`): planted wrong
//! SPIR-V opcodes (ATOMCTS_VULKAN_PLANT) are caught by the corpus, and the SIMD-group cases of
//! the device's width run while the others are not applicable with the reason.

mod common;
use common::{atomcts_env as atomcts, text};
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
