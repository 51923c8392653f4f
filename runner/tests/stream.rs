//! Issue 9: streamed runs (JSON lines, omitted passes counted), the pipelined protocol (a
//! pipelining shim gives the same results as one at a time; a crash costs the requests in
//! flight, each an adapter error), and `atomcts fuzz` finding and shrinking a planted bug.
//! Needs `python3`.

mod common;
use common::{text, tmp};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

fn atomcts(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_atomcts"))
        .args(args)
        .envs(env.iter().copied())
        .current_dir(ROOT)
        .output()
        .expect("run atomcts")
}

/// The totals line's numbers: passed, failed, errors, skipped, known, not applicable, cases.
fn totals(t: &str) -> Vec<usize> {
    let line = t
        .lines()
        .rev()
        .find(|l| l.contains(" passed, "))
        .expect("totals");
    line.split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect()
}

#[test]
fn every_result_is_a_json_line_and_the_totals_agree() {
    let d = tmp("jsonl");
    let jsonl = d.join("r.jsonl");
    let json = d.join("r.json");
    let o = atomcts(
        &[
            "run",
            "--no-progress",
            "--generated-only",
            "--generated",
            "300",
            "--seed",
            "4",
            "--jsonl",
            jsonl.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(totals(&text(&o))[0], 300);
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 300);
    assert!(lines.iter().all(|l| l["status"] == "pass"));
    let ids: std::collections::BTreeSet<_> = lines.iter().map(|l| l["id"].to_string()).collect();
    assert_eq!(ids.len(), 300);
    // A run this small keeps every result in the JSON report too, and omits nothing.
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["results"].as_array().unwrap().len(), 300);
    assert!(report.get("omitted").is_none());
}

fn mini_sass(window: &str) -> (String, Vec<(&'static str, String)>) {
    (
        format!("cmd:python3 {ROOT}/adapters/shims/mini_sass.py"),
        vec![("MINI_SASS_WINDOW", window.to_string())],
    )
}

/// The same corpus through the example shim one request at a time and with 16 in flight: the
/// same results, case by case.
#[test]
fn a_pipelining_shim_gives_the_same_results() {
    let d = tmp("pipe");
    let mut per_window = Vec::new();
    let mut codes = Vec::new();
    for window in ["1", "16"] {
        let (shim, env) = mini_sass(window);
        let out = d.join(format!("w{window}.jsonl"));
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let o = atomcts(
            &[
                "run",
                "--no-progress",
                "--cases",
                "spec-cases/sass/atom",
                "--adapter",
                &shim,
                "--jsonl",
                out.to_str().unwrap(),
            ],
            &env,
        );
        assert_ne!(o.status.code(), Some(2), "{}", text(&o));
        codes.push(o.status.code());
        let results: Vec<(String, String)> = std::fs::read_to_string(&out)
            .unwrap()
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                (v["id"].to_string(), v["status"].to_string())
            })
            .collect();
        assert!(results.iter().any(|(_, s)| s == "\"pass\""));
        per_window.push(results);
    }
    assert_eq!(per_window[0], per_window[1]);
    assert_eq!(codes[0], codes[1]);
}

/// A pipelining shim that crashes loses the requests in flight, each an adapter error naming
/// the crash; none is a pass or a fail.
#[test]
fn a_crash_costs_the_requests_in_flight() {
    let (shim, _) = mini_sass("8");
    let o = atomcts(
        &[
            "run",
            "--no-progress",
            "--cases",
            "spec-cases/sass/atom/inc_dec.toml",
            "--adapter",
            &shim,
        ],
        &[("MINI_SASS_WINDOW", "8"), ("MINI_SASS_BUG", "crash")],
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    let n = totals(&t);
    // passed, failed, errors, ..., cases
    assert_eq!((n[0], n[1]), (0, 0), "{t}");
    assert!(n[2] > 0, "{t}");
    assert!(t.contains("in flight when the shim failed"), "{t}");
}

fn fuzz(dir: &Path, bug: &str, cases: &str) -> Output {
    let shim = format!("cmd:python3 {ROOT}/adapters/shims/mini_sass.py");
    atomcts(
        &[
            "fuzz",
            "--no-progress",
            "--adapter",
            &shim,
            "--cases",
            cases,
            "--seed",
            "1",
            "--out",
            dir.to_str().unwrap(),
        ],
        &[("MINI_SASS_BUG", bug)],
    )
}

/// The planted off-by-one in the example shim's INC is found, shrunk to one lane and simple
/// operands, and written as a case that fails on the buggy shim and passes on the reference.
#[test]
fn fuzz_finds_and_shrinks_a_planted_bug() {
    let d = tmp("fuzz");
    let o = fuzz(&d, "inc", "2000");
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("sass ATOM.INC fail"), "{t}");
    let files: Vec<PathBuf> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{t}");
    let case = std::fs::read_to_string(&files[0]).unwrap();
    assert!(case.contains("ATOM.INC"), "{case}");
    assert!(case.contains("Reproduce: atomcts run --cases"), "{case}");
    // Shrunk: one lane (no `lanes` key), no guard.
    assert!(!case.contains("lanes ="), "{case}");
    assert!(!case.contains('@'), "{case}");
    let file = files[0].to_str().unwrap();
    let on_ref = atomcts(
        &[
            "run",
            "--no-progress",
            "--cases",
            file,
            "--adapter",
            "reference",
        ],
        &[],
    );
    assert_eq!(on_ref.status.code(), Some(0), "{}", text(&on_ref));
    let shim = format!("cmd:python3 {ROOT}/adapters/shims/mini_sass.py");
    let on_bug = atomcts(
        &["run", "--no-progress", "--cases", file, "--adapter", &shim],
        &[("MINI_SASS_BUG", "inc")],
    );
    assert_eq!(on_bug.status.code(), Some(1), "{}", text(&on_bug));
    let fixed = atomcts(
        &["run", "--no-progress", "--cases", file, "--adapter", &shim],
        &[],
    );
    assert_eq!(fixed.status.code(), Some(0), "{}", text(&fixed));
}

/// Without the bug the same stream has no finding and writes nothing.
#[test]
fn fuzz_without_a_bug_finds_nothing() {
    let d = tmp("fuzz-clean");
    let o = fuzz(&d, "", "500");
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("0 failing, 0 distinct"), "{t}");
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
}

/// `--against`: the buggy shim (pipelined) and the reference are judged differently on the
/// planted bug's cases, and only there.
#[test]
fn fuzz_against_a_second_adapter_reports_where_they_differ() {
    let d = tmp("fuzz-against");
    let shim = format!("cmd:python3 {ROOT}/adapters/shims/mini_sass.py");
    let o = atomcts(
        &[
            "fuzz",
            "--no-progress",
            "--adapter",
            &shim,
            "--against",
            "reference",
            "--cases",
            "1500",
            "--out",
            d.to_str().unwrap(),
        ],
        // Pipelined: cases go to the shim 16 at a time.
        &[("MINI_SASS_BUG", "inc"), ("MINI_SASS_WINDOW", "16")],
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("1500 cases"), "{t}");
    assert!(t.contains("1 distinct signature"), "{t}");
    assert!(
        t.contains("sass ATOM.INC: A sass ATOM.INC fail global / B pass"),
        "{t}"
    );
}
