//! Intel's vISA assembler as an implementation under test (`visa-asm:<platform>`, issue 29
//! point 2; docs/visa-asm.md), from the command line: a valid case passes on GenX_IR's
//! acceptance with its values not applicable; an illegal form is judged on Intel's rejection
//! reason; planted wrong translations (a wrong op, a wrong surface: `ATOMCTS_VISA_ASM_PLANT`)
//! make valid cases fail, never pass; other dialects are never a pass.
//!
//! `GenX_IR` is Debian `libigc-tools` (`tools/install-implementations.sh intel`, which `.ci/run`
//! runs first). Without it the tests fail under `CI=true` and otherwise print why they did not
//! run.

mod common;
use common::{atomcts_env, text, tmp};
use serde_json::Value;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// Whether GenX_IR is here; `false` (with the reason printed) only outside CI.
fn genx_or_skip(test: &str) -> bool {
    match atomcts_adapters::visa_asm::availability() {
        Ok(()) => true,
        Err(why) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("{test}: {why} (CI=true: GenX_IR must be installed)")
        }
        Err(why) => {
            eprintln!("{test}: NOT RUN: {why}");
            false
        }
    }
}

/// `atomcts run` of `cases` on `visa-asm:<platform>` with `plant`: exit code, output and the
/// JSON report's results.
fn run(
    name: &str,
    cases: &str,
    platform: &str,
    plant: &str,
    extra: &[&str],
) -> (Option<i32>, String, Vec<Value>) {
    let dir = tmp(name);
    let json = dir.join("r.json");
    let cases = format!("{ROOT}/{cases}");
    let adapter = format!("visa-asm:{platform}");
    let mut args = vec![
        "run",
        "--no-progress",
        "--cases",
        &cases,
        "--adapter",
        &adapter,
        "--profile",
        "claimed",
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = atomcts_env(&args, &[("ATOMCTS_VISA_ASM_PLANT", plant)]);
    let t = text(&o);
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("{name}: {e}: {t}")),
    )
    .unwrap();
    let results = report["results"].as_array().cloned().unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    (o.status.code(), t, results)
}

fn status(r: &Value) -> &str {
    r["status"].as_str().unwrap_or("")
}

fn notes(r: &Value) -> String {
    r["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| format!("{}: {} {}", f["location"], f["observed"], f["note"]))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn valid_cases_pass_on_acceptance_and_their_values_are_not_applicable() {
    if !genx_or_skip("valid_cases_pass") {
        return;
    }
    for platform in ["SKL", "DG2"] {
        let (code, t, results) = run(
            "valid",
            "spec-cases/visa/dword_atomic/add_sub.toml",
            platform,
            "",
            &[],
        );
        assert_eq!(code, Some(0), "{platform}: {t}");
        assert!(results.len() >= 10, "{t}");
        for r in &results {
            assert_eq!(status(r), "pass", "{platform}: {r}");
            let n = notes(r);
            assert!(
                n.contains("not applicable: assembler only: no execution"),
                "{n}"
            );
            // The lowered message is the case's own: add or subtract, and IGA says which.
            let op = if r["asm"].as_str().unwrap().contains(".sub") {
                "integer subtract"
            } else {
                "integer add"
            };
            assert!(n.contains(op), "{platform}: {n}");
        }
    }
}

#[test]
fn planted_wrong_translations_fail_and_never_pass() {
    if !genx_or_skip("planted_wrong_translations") {
        return;
    }
    for plant in ["wrong_op", "wrong_surface"] {
        let (code, t, results) = run(
            plant,
            "spec-cases/visa/dword_atomic/add_sub.toml",
            "TGLLP",
            plant,
            &[],
        );
        assert_eq!(code, Some(1), "{plant}: {t}");
        assert!(!results.is_empty(), "{t}");
        for r in &results {
            assert_eq!(status(r), "fail", "{plant}: {r}");
            assert!(
                notes(r).contains("accepted as another instruction"),
                "{plant}: {}",
                notes(r)
            );
        }
    }
    // A wrong op GenX_IR rejects (add on float operands) fails as a rejection of a valid case.
    let (code, t, results) = run(
        "wrong_op_float",
        "spec-cases/visa/dword_atomic/fmin_fmax.toml",
        "SKL",
        "wrong_op",
        &["--filter", "fmin_basic"],
    );
    assert_eq!(code, Some(1), "{t}");
    assert!(
        !results.is_empty() && results.iter().all(|r| status(r) == "fail"),
        "{t}"
    );
    assert!(t.contains("observed invalid (operand_type)"), "{t}");
}

/// A case already in Intel's form reaches GenX_IR as the case spells it (names renamed): a
/// planted wrong op or surface on such a line fails too, never passes.
#[test]
fn planted_wrong_translations_of_intels_own_lines_fail() {
    if !genx_or_skip("planted_intel_lines") {
        return;
    }
    for plant in ["wrong_op", "wrong_surface"] {
        let (code, t, results) = run(
            &format!("intel-{plant}"),
            "spec-cases/visa/intel_text.toml",
            "DG2",
            plant,
            &[],
        );
        assert_eq!(code, Some(1), "{plant}: {t}");
        // Every valid DWORD_ATOMIC line (a plant changes its op or its %slm / %scratch).
        let valid: Vec<&Value> = results
            .iter()
            .filter(|r| {
                r["op"]
                    .as_str()
                    .is_some_and(|o| o.starts_with("DWORD_ATOMIC"))
            })
            .collect();
        assert!(valid.len() >= 10, "{plant}: {t}");
        for r in valid {
            assert_eq!(status(r), "fail", "{plant}: {r}");
        }
    }
}

#[test]
fn illegal_forms_are_judged_on_intels_reason() {
    if !genx_or_skip("illegal_forms") {
        return;
    }
    let (code, t, results) = run(
        "illegal",
        "spec-cases/visa/dword_atomic/illegal_forms.toml",
        "SKL",
        "",
        &[],
    );
    // Differences from the documents (adapters/baselines/visa-asm-SKL.baseline lists them).
    assert_eq!(code, Some(1), "{t}");
    let by = |name: &str| {
        results
            .iter()
            .find(|r| r["id"].as_str().unwrap().ends_with(&format!("::{name}")))
            .unwrap_or_else(|| panic!("no case {name}: {t}"))
    };
    // Rejected for the document's reason: the verifier's type message, the reader's exec size
    // and mask messages, the grammar's op token.
    for name in [
        "imin_with_ud_operands",
        "exec_size_3",
        "mask_m9",
        "op_mul",
        "missing_exec_size",
    ] {
        assert_eq!(status(by(name)), "pass", "{name}: {}", by(name));
    }
    // Accepted although the document rejects it: a difference (intel-visa-6, intel-visa-8).
    for name in ["src0_too_short", "add_with_d_operands"] {
        assert_eq!(status(by(name)), "fail", "{name}: {}", by(name));
        assert!(
            notes(by(name)).contains("accepted ("),
            "{}",
            notes(by(name))
        );
    }
    // Every failure of the file is one the baseline lists with its reason.
    let baseline =
        std::fs::read_to_string(format!("{ROOT}/adapters/baselines/visa-asm-SKL.baseline"))
            .unwrap();
    for r in results.iter().filter(|r| status(r) == "fail") {
        let id = r["id"].as_str().unwrap();
        assert!(
            baseline
                .lines()
                .any(|l| l.starts_with(&format!("{id}  # "))),
            "{id} is not in the baseline"
        );
    }
    // A surface Intel's text cannot write is not applicable, whatever the case expects.
    assert_eq!(
        status(by("surface_t1")),
        "not_applicable",
        "{}",
        by("surface_t1")
    );
    assert!(notes(by("surface_t1")).contains("X4"));
}

#[test]
fn other_dialects_and_unwritable_forms_are_never_a_pass() {
    if !genx_or_skip("other_dialects") {
        return;
    }
    let (code, t, results) = run("sass", "spec-cases/sass/atom/inc_dec.toml", "DG2", "", &[]);
    // Nothing judged: a run that checks nothing is an error, never a pass.
    assert_eq!(code, Some(2), "{t}");
    assert!(t.contains("a run that checks nothing never passes"), "{t}");
    assert!(!results.is_empty());
    for r in &results {
        assert!(matches!(status(r), "not_applicable" | "skip"), "{r}");
    }
    let (_, t, results) = run(
        "predec",
        "spec-cases/visa/dword_atomic/inc_dec_predec.toml",
        "SKL",
        "",
        &["--filter", "::predec"],
    );
    assert!(!results.is_empty(), "{t}");
    for r in &results {
        assert_eq!(status(r), "not_applicable", "{r}");
        assert!(notes(r).contains("X3"), "{r}");
    }
}
