//! Batched launches on OpenCL (issue 31, point 1): batching never changes a verdict, and a
//! batched kernel that writes outside its case's memory is caught by the guards between cases.
//! Needs the OpenCL drivers (tools/install-implementations.sh opencl); CI runs these with
//! `--ignored`, like runner/tests/opencl.rs.

mod common;
use common::{text, tmp};
use serde_json::Value;
use std::process::Output;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// `atomcts run ARGS --adapter opencl:<driver> --json <json>` from the source tree's root,
/// with `ATOMCTS_OPENCL_BATCH` set to `batch` (unset when empty) and the plant `plant`.
fn run(driver: &str, args: &[&str], batch: &str, plant: &str, json: &str) -> Output {
    let adapter = format!("opencl:{driver}");
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_atomcts"));
    c.current_dir(ROOT)
        .args([
            "run",
            "--no-progress",
            "--adapter",
            &adapter,
            "--json",
            json,
        ])
        .args(args)
        .env("ATOMCTS_OPENCL_PLANT", plant)
        .env_remove("ATOMCTS_OPENCL_BATCH");
    if !batch.is_empty() {
        c.env("ATOMCTS_OPENCL_BATCH", batch);
    }
    c.output().expect("run atomcts")
}

/// The `results` array of a JSON report.
fn results(json: &str) -> Vec<Value> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    v["results"].as_array().unwrap().clone()
}

fn status(r: &Value) -> &str {
    r["status"].as_str().unwrap()
}

#[test]
#[ignore = "needs the OpenCL drivers (tools/install-implementations.sh opencl); CI runs it"]
fn batched_and_one_at_a_time_give_identical_results_on_pocl() {
    let dir = tmp("same");
    let cases = format!("{ROOT}/spec-cases");
    let baseline = format!("{ROOT}/adapters/baselines/opencl-pocl.baseline");
    let corpus: Vec<&str> = vec!["--cases", &cases, "--baseline", &baseline];
    for (name, args) in [
        ("corpus", corpus),
        (
            "generated",
            vec!["--generated", "5000", "--generated-only", "--seed", "11"],
        ),
    ] {
        let one = dir.join(format!("{name}-one.json"));
        let batched = dir.join(format!("{name}-batched.json"));
        let (one, batched) = (one.to_str().unwrap(), batched.to_str().unwrap());
        let a = run("pocl", &args, "1", "", one);
        let b = run("pocl", &args, "", "", batched);
        // The exit code is the same batched and one at a time (0: the baseline holds).
        assert_eq!(a.status.code(), b.status.code(), "{name}: {}", text(&b));
        if name == "corpus" {
            assert_eq!(b.status.code(), Some(0), "{}", text(&b));
        }
        let (ra, rb) = (results(one), results(batched));
        assert_eq!(ra.len(), rb.len(), "{name}");
        let differ: Vec<String> = ra
            .iter()
            .zip(&rb)
            .filter(|(x, y)| x != y)
            .map(|(x, y)| format!("one at a time: {x}\nbatched: {y}"))
            .collect();
        assert!(
            differ.is_empty(),
            "{name}: {} of {} results differ, first:\n{}",
            differ.len(),
            ra.len(),
            differ[0]
        );
        // The comparison is not empty: many cases ran on the device and passed.
        let passed = rb.iter().filter(|r| status(r) == "pass").count();
        assert!(passed > 500, "{name}: {passed} passed");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
#[ignore = "needs the OpenCL drivers (tools/install-implementations.sh opencl); CI runs it"]
fn a_planted_cross_case_write_is_caught_and_never_passes() {
    let dir = tmp("plant");
    let generated = ["--generated", "2000", "--generated-only", "--seed", "5"];
    let json = dir.join("planted.json");
    let json = json.to_str().unwrap();
    // Batched, every batched kernel writes the word after its case's region: every case that
    // ran in a batch is next to a changed guard.
    let o = run("pocl", &generated, "", "cross_case_write", json);
    // Every case the device ran is an error: nothing was judged (exit 2), never a pass.
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("no case was judged"), "{}", text(&o));
    let r = results(json);
    let caught: Vec<&Value> = r
        .iter()
        .filter(|x| {
            status(x) == "error"
                && x["findings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|f| f["note"].as_str().unwrap().contains("cross-case write"))
        })
        .collect();
    assert!(caught.len() > 500, "{} caught", caught.len());
    assert!(
        r.iter().all(|x| status(x) != "pass"),
        "a case passed beside a planted cross-case write: {:?}",
        r.iter().find(|x| status(x) == "pass")
    );
    let note = caught[0]["findings"][0]["note"].as_str().unwrap();
    assert!(note.contains("between case `"), "{note}");
    // One at a time, the unbatched kernel (which the plant does not touch) runs: all pass that
    // pass without the plant.
    let json1 = dir.join("one.json");
    let json1 = json1.to_str().unwrap();
    let o = run("pocl", &generated, "1", "cross_case_write", json1);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let passed = results(json1)
        .iter()
        .filter(|x| status(x) == "pass")
        .count();
    assert_eq!(passed, caught.len());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
#[ignore = "needs the OpenCL drivers (tools/install-implementations.sh opencl); CI runs it"]
fn a_bad_batch_window_is_one_line_and_exit_2() {
    let cases = format!("{ROOT}/spec-cases/sass/atom/inc_dec.toml");
    let dir = tmp("window");
    let json = dir.join("w.json");
    let o = run(
        "pocl",
        &["--cases", &cases],
        "0",
        "",
        json.to_str().unwrap(),
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("ATOMCTS_OPENCL_BATCH=`0`"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
