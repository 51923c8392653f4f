//! Batched launches on Vulkan (issue 31, point 1; adapters/src/back/vulkan/batch.rs): batching
//! never changes a verdict, and a planted cross-case write is caught, never a pass. Each run
//! goes through the `atomcts` binary with and without `ATOMCTS_VULKAN_BATCH=1` (every case
//! alone, the path before batching) and compares the `--json` reports' result entries whole.
//! Needs lavapipe (tools/install-implementations.sh vulkan); CI runs these with `--ignored`.

mod common;
use common::{atomcts_env as atomcts, text, tmp};
use serde_json::Value;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// `atomcts run --profile spirv --adapter ADAPTER EXTRA --json` under `env`: the results.
fn results(adapter: &str, extra: &[&str], env: &[(&str, &str)], tag: &str) -> Vec<Value> {
    // One folder per run: the tests run in parallel, and each compares two runs of its own.
    let mut name = format!("{tag}-{adapter}-{}", extra.join("-"));
    name.retain(|c| c.is_ascii_alphanumeric() || c == '-');
    let dir = tmp(&name);
    let json = dir.join("r.json");
    let cases = format!("{ROOT}/spec-cases");
    let mut args = vec![
        "run",
        "--no-progress",
        "--profile",
        "spirv",
        "--cases",
        &cases,
        "--adapter",
        adapter,
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = atomcts(&args, env);
    // Exit 0 (all as the baseline-free run expects) unless a plant makes errors.
    let planted = env.iter().any(|(k, _)| *k == "ATOMCTS_VULKAN_PLANT");
    assert!(
        o.status.code() == Some(0) || (planted && o.status.code().is_some()),
        "{adapter} {extra:?} {env:?}: {}",
        text(&o)
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let r = v["results"].as_array().unwrap().clone();
    assert!(!r.is_empty(), "{adapter}: no results");
    r
}

/// The two runs' result entries are the same, entry by entry (and some passed: the runs did
/// something).
fn assert_same(adapter: &str, extra: &[&str]) {
    let batched = results(adapter, extra, &[], "batched");
    let alone = results(adapter, extra, &[("ATOMCTS_VULKAN_BATCH", "1")], "alone");
    assert_eq!(batched.len(), alone.len(), "{adapter} {extra:?}");
    let differ: Vec<String> = batched
        .iter()
        .zip(&alone)
        .filter(|(a, b)| a != b)
        .map(|(a, b)| format!("batched {a}\n  alone {b}"))
        .collect();
    assert!(
        differ.is_empty(),
        "{adapter} {extra:?}: {} of {} results differ:\n{}",
        differ.len(),
        batched.len(),
        differ
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    let passed = batched.iter().filter(|r| r["status"] == "pass").count();
    assert!(passed > 100, "{adapter} {extra:?}: only {passed} passed");
}

#[test]
#[ignore = "needs lavapipe (tools/install-implementations.sh vulkan); CI runs it"]
fn batched_and_alone_give_identical_results_on_the_spirv_route() {
    assert_same("vulkan:lavapipe", &[]);
    assert_same(
        "vulkan:lavapipe",
        &["--generated", "5000", "--generated-only", "--seed", "11"],
    );
}

#[test]
#[ignore = "needs lavapipe (tools/install-implementations.sh vulkan); CI runs it"]
fn batched_and_alone_give_identical_results_on_the_wgsl_route() {
    assert_same("wgsl-naga:lavapipe", &[]);
    assert_same(
        "wgsl-naga:lavapipe",
        &["--generated", "5000", "--generated-only", "--seed", "12"],
    );
}

#[test]
#[ignore = "needs lavapipe (tools/install-implementations.sh vulkan); CI runs it"]
fn a_planted_cross_case_write_is_caught_never_a_pass() {
    // Every single-instruction memory case writes one element past its memory, into the guard
    // before the next case: the cases on both sides are errors naming the write.
    let plant = [("ATOMCTS_VULKAN_PLANT", "cross_case_write")];
    let clean = results("vulkan:lavapipe", &["--filter", "sass/atom"], &[], "clean");
    let planted = results(
        "vulkan:lavapipe",
        &["--filter", "sass/atom"],
        &plant,
        "planted",
    );
    assert_eq!(clean.len(), planted.len());
    let mut caught = 0;
    for (c, p) in clean.iter().zip(&planted) {
        if c["status"] != "pass" {
            continue;
        }
        let id = c["id"].as_str().unwrap_or("");
        let findings = p["findings"].to_string();
        if id.contains("concurrent") || p["status"] == "pass" {
            // Concurrent cases run alone, outside any batch (the plant is a memory-instruction
            // one); nothing else may pass.
            assert!(id.contains("concurrent"), "{id} passed: {p}");
            continue;
        }
        assert_eq!(p["status"], "error", "{id}: {p}");
        assert!(
            findings.contains("cross-case write: byte ") && findings.contains("in the guard"),
            "{id}: {p}"
        );
        caught += 1;
    }
    assert!(caught > 50, "only {caught} cases caught");
}
