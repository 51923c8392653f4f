//! `atomcts repro` (issue 30, point 5): standalone reproducers that run without atomcts. Bad
//! input (an unknown adapter, an `--out` that is a file, no case selected) is one clear error
//! and exit 2 on any machine. With the drivers installed (tools/install-implementations.sh
//! opencl vulkan; CI runs these with `--ignored`): llvmpipe-1 (docs/repro/llvmpipe-1-loop-limit.toml)
//! fails in atomcts on lavapipe and rusticl, and its reproducers, run by `python3` alone, exit 1
//! printing the observed 0x0000ffff, while on PoCL `--all` writes one that exits 0; a planted
//! wrong built-in or opcode makes corpus cases fail, and their reproducers (holding the planted
//! kernel) exit 1 standalone while the unplanted ones exit 0.

mod common;
use common::{atomcts_env as atomcts, text, tmp};
use std::path::{Path, PathBuf};
use std::process::Output;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

fn repro(
    adapter: &str,
    cases: &str,
    filter: &str,
    out: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Output {
    let cases = format!("{ROOT}/{cases}");
    let out = out.to_str().unwrap();
    let mut args = vec![
        "repro",
        "--profile",
        "spirv",
        "--cases",
        &cases,
        "--adapter",
        adapter,
        "--out",
        out,
    ];
    if !filter.is_empty() {
        args.extend(["--filter", filter]);
    }
    args.extend(extra);
    atomcts(&args, env)
}

/// The scripts in `dir`, sorted.
fn scripts(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|e| e == "py"));
    v.sort();
    v
}

/// `python3 script` with nothing of atomcts in its environment but what the script sets.
fn python(script: &Path) -> Output {
    std::process::Command::new("python3")
        .arg(script)
        .env_remove("ATOMCTS_OPENCL_PLANT")
        .env_remove("ATOMCTS_VULKAN_PLANT")
        .env_remove("ATOMCTS_START_LINE")
        .output()
        .expect("run python3")
}

#[test]
fn an_unknown_adapter_is_one_line_and_exit_2() {
    let dir = tmp("unknown");
    let o = repro(
        "no-such-kind:x",
        "docs/repro/llvmpipe-1-loop-limit.toml",
        "",
        &dir.join("out"),
        &[],
        &[],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("no-such-kind"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(scripts(&dir.join("out")).is_empty());
}

#[test]
fn an_out_that_is_a_file_is_an_error_before_anything_runs() {
    let dir = tmp("out-file");
    let file = dir.join("taken");
    std::fs::write(&file, "x").unwrap();
    let o = repro(
        "fast",
        "docs/repro/llvmpipe-1-loop-limit.toml",
        "",
        &file,
        &["--all"],
        &[],
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("--out") && t.contains("not a folder"), "{t}");
    assert!(!t.contains("panicked"), "{t}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
}

#[test]
fn no_case_selected_is_an_error() {
    let dir = tmp("none");
    let o = repro(
        "fast",
        "docs/repro/llvmpipe-1-loop-limit.toml",
        "no-such-case-xyz",
        &dir.join("out"),
        &[],
        &[],
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("no case selected"), "{t}");
}

#[test]
fn a_kind_without_reproducers_says_so_for_each_case_it_was_asked_for() {
    // The built-in fast path runs no program of its own: with --all, one line per case.
    let dir = tmp("fast");
    let o = repro(
        "fast",
        "docs/repro/llvmpipe-1-loop-limit.toml",
        "",
        &dir.join("out"),
        &["--all"],
        &[],
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(
        t.contains("not written: llvmpipe-1-loop-limit::one_thread_65536_fetch_adds (pass): adapter fast writes no standalone reproducer"),
        "{t}"
    );
    assert!(scripts(&dir.join("out")).is_empty(), "{t}");
}

#[test]
#[ignore = "needs rusticl, lavapipe and PoCL (tools/install-implementations.sh opencl vulkan); CI runs it"]
fn llvmpipe_1_reproduces_without_atomcts() {
    for adapter in ["vulkan:lavapipe", "opencl:rusticl"] {
        let dir = tmp(&adapter.replace(':', "-"));
        let o = repro(
            adapter,
            "docs/repro/llvmpipe-1-loop-limit.toml",
            "",
            &dir,
            &[],
            &[("ATOMCTS_START_LINE", "0")],
        );
        let t = text(&o);
        assert_eq!(o.status.code(), Some(1), "{adapter}: {t}");
        assert!(t.contains("wrote "), "{adapter}: {t}");
        let s = scripts(&dir);
        assert_eq!(s.len(), 1, "{adapter}: {t}");
        let body = std::fs::read_to_string(&s[0]).unwrap();
        assert!(
            body.contains("one thread's 65,536 fetch-adds"),
            "the cite: {body}"
        );
        let p = python(&s[0]);
        let pt = text(&p);
        assert_eq!(p.status.code(), Some(1), "{adapter}: {pt}");
        assert!(pt.contains("0x00010000"), "{adapter}: expected: {pt}");
        assert!(pt.contains("0x0000ffff   <-- differs"), "{adapter}: {pt}");
    }
    let dir = tmp("pocl");
    let o = repro(
        "opencl:pocl",
        "docs/repro/llvmpipe-1-loop-limit.toml",
        "",
        &dir,
        &["--all"],
        &[],
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let s = scripts(&dir);
    assert_eq!(s.len(), 1, "{t}");
    let p = python(&s[0]);
    assert_eq!(p.status.code(), Some(0), "{}", text(&p));
    assert!(text(&p).contains("0x00010000"), "{}", text(&p));
}

/// Every script of `dir` exits `code` standalone; returns how many there were.
fn all_exit(dir: &Path, code: i32) -> usize {
    let s = scripts(dir);
    for f in &s {
        let p = python(f);
        assert_eq!(p.status.code(), Some(code), "{}: {}", f.display(), text(&p));
    }
    s.len()
}

#[test]
#[ignore = "needs PoCL and lavapipe (tools/install-implementations.sh opencl vulkan); CI runs it"]
fn planted_bugs_reproduce_standalone_and_clean_kernels_pass() {
    for (adapter, plant, filter, builtin) in [
        (
            "opencl:pocl",
            ("ATOMCTS_OPENCL_PLANT", "add_as_sub"),
            "fetch_add_sub::add",
            "atomic_fetch_sub",
        ),
        (
            "vulkan:lavapipe",
            ("ATOMCTS_VULKAN_PLANT", "smax_as_umax"),
            "max",
            "OpAtomicUMax",
        ),
    ] {
        let dir = tmp(&format!("planted-{}", adapter.replace(':', "-")));
        let o = repro(adapter, "spec-cases", filter, &dir, &[], &[plant]);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(1), "{adapter}: {t}");
        let n = all_exit(&dir, 1);
        assert!(n >= 3, "{adapter}: {n} reproducers: {t}");
        // The planted kernel is the one in the script.
        let first = std::fs::read_to_string(&scripts(&dir)[0]).unwrap();
        assert!(first.contains(builtin), "{adapter}: {first}");
        let clean = tmp(&format!("clean-{}", adapter.replace(':', "-")));
        let o = repro(adapter, "spec-cases", filter, &clean, &["--all"], &[]);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(0), "{adapter}: {t}");
        assert!(all_exit(&clean, 0) >= n, "{adapter}: {t}");
    }
    // The WGSL route: naga's SPIR-V as it ran, with the WGSL it came from.
    let clean = tmp("clean-wgsl");
    let o = repro(
        "wgsl-naga:lavapipe",
        "spec-cases",
        "max",
        &clean,
        &["--all"],
        &[],
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(all_exit(&clean, 0) >= 3, "{t}");
    let first = std::fs::read_to_string(&scripts(&clean)[0]).unwrap();
    assert!(
        first.contains("The WGSL shader atomcts wrote") && first.contains("@compute"),
        "{first}"
    );
}
