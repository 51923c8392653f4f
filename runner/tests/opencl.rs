//! The OpenCL back end from the command line. Without a driver: an unknown or missing device is
//! one line and exit 2, and `list adapters` says what is available. With the drivers installed
//! (tools/install-implementations.sh; CI runs these with `--ignored`): the corpus passes on each
//! driver against its baseline, and a planted wrong built-in (ATOMCTS_OPENCL_PLANT=add_as_sub:
//! atomic_sub where atomic_add is meant) is caught.

use std::process::{Command, Output};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

fn atomcts(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_atomcts"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run atomcts")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

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
    for name in ["pocl", "oclgrind", "rusticl"] {
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

fn corpus_on(driver: &str, plant: &str, filter: &str) -> Output {
    let cases = format!("{ROOT}/spec-cases");
    let adapter = format!("opencl:{driver}");
    atomcts(
        &[
            "run",
            "--no-progress",
            "--cases",
            &cases,
            "--filter",
            filter,
            "--adapter",
            &adapter,
        ],
        &[("ATOMCTS_OPENCL_PLANT", plant)],
    )
}

#[test]
#[ignore = "needs the OpenCL drivers (tools/install-implementations.sh opencl); CI runs it"]
fn a_planted_wrong_builtin_is_caught_on_every_driver() {
    for driver in ["pocl", "oclgrind", "rusticl"] {
        let clean = corpus_on(driver, "", "add");
        assert_eq!(clean.status.code(), Some(0), "{driver}: {}", text(&clean));
        let planted = corpus_on(driver, "add_as_sub", "add");
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
        assert!(t.contains("sub"), "{driver}: {t}");
    }
}
