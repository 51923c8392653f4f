//! The OpenCL back end from the command line. Without a driver: an unknown or missing device is
//! one line and exit 2, and `list adapters` says what is available. With the drivers installed
//! (tools/install-implementations.sh; CI runs these with `--ignored`): the corpus passes on each
//! driver against its baseline, and a planted wrong built-in (ATOMCTS_OPENCL_PLANT=add_as_sub:
//! atomic_sub where atomic_add is meant) is caught.

mod common;
use common::{atomcts_env as atomcts, text};
use std::process::Output;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

#[test]
fn an_unknown_device_is_one_line_and_exit_2() {
    let cases = format!("{ROOT}/spec-cases/sass/atom/inc_dec.toml");
    let o = atomcts(
        &[
            "run",
            "--no-progress",
            "--cases",
            &cases,
            "--adapter",
            "opencl:no-such-device-xyz",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("opencl:no-such-device-xyz: unavailable"),
        "{err}"
    );
}

#[test]
fn list_adapters_says_what_is_available_and_why_not() {
    let o = atomcts(&["list", "adapters"], &[]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    for name in ["pocl", "oclgrind", "rusticl", "intel-cpu"] {
        let line = t
            .lines()
            .find(|l| l.contains(&format!("opencl:{name} ")))
            .unwrap_or_else(|| panic!("no line for {name}: {t}"));
        assert!(
            line.contains("(available;") || line.contains("(unavailable: "),
            "{line}"
        );
    }
}

/// The corpus cases matching `filter` on `driver`, judged against the driver's baseline (its
/// findings, e.g. rusticl's lost updates between work-groups, are known or flaky).
fn corpus_on(driver: &str, plant: &str, filter: &str, json: &str) -> Output {
    let cases = format!("{ROOT}/spec-cases");
    let adapter = format!("opencl:{driver}");
    let baseline = format!("{ROOT}/adapters/baselines/opencl-{driver}.baseline");
    // From the source tree's root, where a driver installed under target/ (intel-cpu) is found.
    std::process::Command::new(env!("CARGO_BIN_EXE_atomcts"))
        .current_dir(ROOT)
        .args([
            "run",
            "--no-progress",
            "--cases",
            &cases,
            "--filter",
            filter,
            "--adapter",
            &adapter,
            "--baseline",
            &baseline,
            "--json",
            json,
        ])
        .env("ATOMCTS_OPENCL_PLANT", plant)
        .output()
        .expect("run atomcts")
}

#[test]
#[ignore = "needs the OpenCL drivers (tools/install-implementations.sh opencl); CI runs it"]
fn a_planted_wrong_builtin_is_caught_on_every_driver() {
    let dir = std::env::temp_dir().join(format!("atomcts-opencl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for driver in ["pocl", "oclgrind", "rusticl", "intel-cpu"] {
        let json = dir.join(format!("{driver}.json"));
        let json = json.to_str().unwrap();
        let clean = corpus_on(driver, "", "add", json);
        assert_eq!(clean.status.code(), Some(0), "{driver}: {}", text(&clean));
        // Programs are written for failures only: none without the baseline's findings.
        let programs = dir.join(format!("{driver}.programs"));
        let baseline = format!("{ROOT}/adapters/baselines/opencl-{driver}.baseline");
        let findings = std::fs::read_to_string(&baseline)
            .unwrap()
            .lines()
            .any(|l| !l.starts_with('#') && !l.trim().is_empty());
        if findings {
            let _ = std::fs::remove_dir_all(&programs);
        } else {
            assert!(!programs.exists(), "{driver}");
        }
        let planted = corpus_on(driver, "add_as_sub", "add", json);
        let t = text(&planted);
        assert_eq!(planted.status.code(), Some(1), "{driver}: {t}");
        assert!(
            t.contains("FAIL msl/atomic/fetch_add_sub::"),
            "{driver}: {t}"
        );
        assert!(t.contains("FAIL sass/atom/add"), "{driver}: {t}");
        assert!(t.contains("FAIL visa/dword_atomic/"), "{driver}: {t}");
        // The kernel that ran is shown, with the planted built-in in it.
        assert!(t.contains("program that ran:"), "{driver}: {t}");
        assert!(
            t.contains("// ran batched: one work-group"),
            "{driver}: {t}"
        );
        assert!(t.contains("sub"), "{driver}: {t}");
        // ... and written beside the JSON report, headed by the reproduce command.
        let kernel = dir
            .join(format!("{driver}.programs"))
            .join("msl_atomic_fetch_add_sub__add_int_device_returns_old.cl");
        let k = std::fs::read_to_string(&kernel).unwrap_or_else(|e| panic!("{kernel:?}: {e}"));
        assert!(k.contains("// reproduce: atomcts run --cases"), "{k}");
        assert!(k.contains("__kernel void atomcts_case("), "{k}");
        assert!(k.contains("sub"), "{k}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// On a driver that reports cl_ext_float_atomics and the sub-group extensions (Intel's CPU
/// runtime), the float and SIMD-group cases run, and a wrong float built-in (atomic_fetch_sub
/// for atomic_fetch_add on atomic_float) and a wrong sub-group built-in (sub_group_shuffle_down
/// for sub_group_shuffle_up) are caught.
#[test]
#[ignore = "needs Intel's OpenCL CPU runtime (tools/install-implementations.sh opencl); CI runs it"]
fn planted_float_and_sub_group_builtins_are_caught_on_intel_cpu() {
    let dir = std::env::temp_dir().join(format!("atomcts-opencl-intel-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("intel-cpu.json");
    let json = json.to_str().unwrap();
    for (plant, filter, fails, builtin) in [
        (
            "add_as_sub",
            "msl/atomic/float",
            "FAIL msl/atomic/float::add_exact_returns_old",
            "atomic_fetch_sub_explicit((volatile __global atomic_float *)",
        ),
        (
            "up_as_down",
            "msl/simd/shuffle_up",
            "FAIL msl/simd/shuffle_up::",
            "sub_group_shuffle_down(x, a)",
        ),
    ] {
        let clean = corpus_on("intel-cpu", "", filter, json);
        let t = text(&clean);
        assert_eq!(clean.status.code(), Some(0), "{filter}: {t}");
        let passed: u32 = t
            .lines()
            .find(|l| l.contains(" passed, "))
            .and_then(|l| l.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(passed > 0, "{filter}: nothing ran: {t}");
        let planted = corpus_on("intel-cpu", plant, filter, json);
        let t = text(&planted);
        assert_eq!(planted.status.code(), Some(1), "{plant}: {t}");
        assert!(t.contains(fails), "{plant}: {t}");
        assert!(t.contains(builtin), "{plant}: {t}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 31: single-instruction cases of one type and space run one program whatever their op
/// (the kernel switches on argument `OP`), and each case's own op comes out, not the last's: an
/// add, a xor, an unsigned max and an exchange on PoCL build one program; a signed max (another
/// OpenCL C type) builds a second.
#[test]
#[ignore = "needs PoCL (tools/install-implementations.sh opencl); CI runs it"]
fn ops_of_one_type_share_one_program_and_each_runs_its_own_op() {
    use atomcts_adapters::back::opencl::OpenClAdapter;
    use atomcts_adapters::{Adapter, Observation, Request};
    use atomcts_reference::Profile;
    use atomcts_reference::program::Dialect;
    // Two lanes: `vals` into the words at 0x1000 and 0x1008, which hold 0x0f0 and 0x00f.
    let state = |vals: [u64; 2]| common::two_lanes([0x1000, 0x1008], vals, [0x0f0, 0, 0x00f, 0]);
    let profile = Profile::default();
    let mut a = OpenClAdapter::open("pocl").unwrap();
    let run = |a: &mut OpenClAdapter, asm: &str, vals: [u64; 2]| {
        let s = state(vals);
        match a
            .run(&Request {
                id: "t",
                dialect: Dialect::Sass,
                asm,
                state: &s,
                profile: &profile,
                lowered: None,
            })
            .unwrap()
        {
            Observation::Completed(end) => [0x1000, 0x1008].map(|x| end.global.read(x, 4).unwrap()),
            other => panic!("{asm}: {other:?}"),
        }
    };
    assert_eq!(
        run(&mut a, "ATOM.E.ADD R0, [R2], R4", [1, 2]),
        [0x0f1, 0x011]
    );
    assert_eq!(
        run(&mut a, "ATOM.E.XOR R0, [R2], R4", [0xff, 0xff]),
        [0x00f, 0x0f0]
    );
    assert_eq!(
        run(&mut a, "ATOM.E.MAX R0, [R2], R4", [0x100, 1]),
        [0x100, 0x00f]
    );
    assert_eq!(run(&mut a, "ATOM.E.EXCH R0, [R2], R4", [7, 8]), [7, 8]);
    assert_eq!(
        run(&mut a, "ATOM.E.ADD R0, [R2], R4", [0x10, 0x20]),
        [0x100, 0x02f]
    );
    let b = a.builds().unwrap();
    assert_eq!((b.built, b.reused), (1, 4), "programs built and reused");
    // A signed max compares as int: another program; -1 is below both words.
    assert_eq!(
        run(&mut a, "ATOM.E.MAX.S32 R0, [R2], R4", [0xffff_ffff, 0x10]),
        [0x0f0, 0x010]
    );
    let b = a.builds().unwrap();
    assert_eq!((b.built, b.reused), (2, 4), "programs built and reused");
}
