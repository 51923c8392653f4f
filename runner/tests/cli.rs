//! The command line from the outside: exit codes, bad input with positions, hostile sizes,
//! reports, partitions, baselines and merging.

mod common;
use common::{text, tmp, write};
use std::path::Path;
use std::process::Output;

fn atomcts(args: &[&str]) -> Output {
    common::atomcts_env(args, &[])
}

/// `atomcts run` on the `spec-cases` folder below `d`.
fn run_corpus(d: &Path) -> Output {
    atomcts(&[
        "run",
        "--cases",
        d.join("spec-cases").to_str().unwrap(),
        "--no-progress",
    ])
}

const GOOD: &str = r#"# two cases
dialect = "sass"
cite = "SASS ATOM, Atomic Operations table"
[[case]]
name = "inc_resets_to_zero_at_bound"
asm = "ATOM.INC.U32 R0, [R2+0x10], R4"
given = { R2 = 0x1000, R4 = 5, mem = { 0x1010 = "u32:5" } }
expect = { R0 = 5, mem = { 0x1010 = "u32:0" } }
[[case]]
name = "add_returns_old"
asm = "ATOM.ADD.U32 R0, [R2], R4"
given = { R2 = 0x1000, R4 = 7, mem = { 0x1000 = "u32:3" } }
expect = { R0 = 3, mem = { 0x1000 = "u32:10" } }
"#;

#[test]
fn conformant_corpus_exits_zero() {
    let d = tmp("good");
    write(&d, "spec-cases/sass/atom/a.toml", GOOD);
    let o = run_corpus(&d);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("2 passed, 0 failed"), "{}", text(&o));
}

#[test]
fn wrong_expectation_exits_one_with_hex_and_repro() {
    let d = tmp("bad-expect");
    write(
        &d,
        "spec-cases/sass/atom/a.toml",
        &GOOD.replace("u32:10", "u32:11"),
    );
    let o = run_corpus(&d);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("FAIL sass/atom/a::add_returns_old"), "{t}");
    assert!(
        t.contains("expected 0x0000000b (11), observed 0x0000000a (10)"),
        "{t}"
    );
    assert!(t.contains("reproduce: atomcts run --cases"), "{t}");
}

#[test]
fn broken_file_is_reported_with_position_and_others_still_run() {
    let d = tmp("broken");
    write(&d, "spec-cases/sass/atom/a.toml", GOOD);
    write(
        &d,
        "spec-cases/sass/atom/b.toml",
        "dialect = \"sass\"\n[[case]]\nname = \"x\"\nbogus_key = 1\n",
    );
    let o = run_corpus(&d);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("b.toml:4:1: unknown field `bogus_key`"), "{t}");
    assert!(t.contains("2 passed"), "{t}");
}

#[test]
fn unknown_instruction_is_an_input_error_naming_the_asm() {
    let d = tmp("unknown-op");
    let body = "dialect = \"sass\"\ncite = \"x\"\n[[case]]\nname = \"x\"\nasm = \"ATOM.FROB.U32 R0, [R2], R4\"\nexpect = { R0 = 0 }\n";
    write(&d, "spec-cases/sass/x.toml", body);
    let o = run_corpus(&d);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("x.toml:5:"), "{t}");
    assert!(t.contains("unknown_operation"), "{t}");
}

#[test]
fn absurd_sizes_are_rejected_not_allocated() {
    let d = tmp("absurd");
    let body = r#"dialect = "sass"
cite = "x"
[[case]]
name = "huge_alloc"
asm = "ATOM.ADD.U32 R0, [R2], R4"
given = { alloc = ["0x0+0xffffffffffff"] }
expect = { R0 = 0 }
[[case]]
name = "too_many_lanes"
asm = "ATOM.ADD.U32 R0, [R2], R4"
lanes = 100000
expect = { R0 = 0 }
[[case]]
name = "wrapping_range"
asm = "ATOM.ADD.U32 R0, [R2], R4"
given = { alloc = ["0xfffffffffffffff0+0x20"] }
expect = { R0 = 0 }
[[case]]
name = "sass_warp_of_33"
asm = "ATOM.ADD.U32 R0, [R2], R4"
lanes = 33
expect = { R0 = 0 }
"#;
    write(&d, "spec-cases/sass/x.toml", body);
    let o = run_corpus(&d);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("memory limit"), "{t}");
    assert!(t.contains("lanes = 100000 is outside"), "{t}");
    assert!(t.contains("goes past 2^64"), "{t}");
    assert!(t.contains("a warp has at most 32"), "{t}");
}

#[test]
fn json_junit_partition_and_merge_agree() {
    let d = tmp("shards");
    write(&d, "spec-cases/sass/atom/a.toml", GOOD);
    let cases = d.join("spec-cases");
    let mut jsons = vec![];
    for k in 1..=3 {
        let j = d.join(format!("shard{k}.json"));
        let junit = d.join(format!("shard{k}.xml"));
        let o = atomcts(&[
            "run",
            "--cases",
            cases.to_str().unwrap(),
            "--partition",
            &format!("hash:{k}/3"),
            "--json",
            j.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
            "--no-progress",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        assert!(
            std::fs::read_to_string(&junit)
                .unwrap()
                .contains("<testsuites")
        );
        jsons.push(j);
    }
    let mut args = vec!["merge".to_string()];
    args.extend(jsons.iter().map(|j| j.display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = atomcts(&args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("2 passed, 0 failed"), "{}", text(&o));
    let o = atomcts(&["run", "--partition", "hash:0/3"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn baseline_is_asserted() {
    let d = tmp("baseline");
    write(
        &d,
        "spec-cases/sass/atom/a.toml",
        &GOOD.replace("u32:10", "u32:11"),
    );
    let cases = d.join("spec-cases");
    let b = write(
        &d,
        "baseline.txt",
        "# known\nsass/atom/a::add_returns_old\n",
    );
    let o = atomcts(&[
        "run",
        "--cases",
        cases.to_str().unwrap(),
        "--baseline",
        b.to_str().unwrap(),
        "--no-progress",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // A listed case that passes is reported: the baseline is stale.
    let b2 = write(
        &d,
        "baseline2.txt",
        "sass/atom/a::inc_resets_to_zero_at_bound\nsass/atom/a::add_returns_old\n",
    );
    let o = atomcts(&[
        "run",
        "--cases",
        cases.to_str().unwrap(),
        "--baseline",
        b2.to_str().unwrap(),
        "--no-progress",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("BASELINE-PASSES sass/atom/a::inc_resets_to_zero_at_bound"),
        "{}",
        text(&o)
    );
}

#[test]
fn usage_errors_exit_two() {
    assert_eq!(atomcts(&["run", "--profile", "amd"]).status.code(), Some(2));
    assert_eq!(
        atomcts(&["run", "--set", "no.such=knob"]).status.code(),
        Some(2)
    );
    assert_eq!(atomcts(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(
        atomcts(&["run", "--cases", "/no/such/dir"]).status.code(),
        Some(2)
    );
}

#[test]
fn exec_list_and_export() {
    let o = atomcts(&[
        "exec",
        "--dialect",
        "sass",
        "--asm",
        "ATOM.DEC.U32 R0, [R2], R4",
        "--given",
        "{ R2 = 0x1000, R4 = 5, mem = { 0x1000 = \"u32:0\" } }",
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    // DEC: M == 0 gives Rb.
    assert!(t.contains("global[0x1000] = 0x05 (was 0x00)"), "{t}");
    let o = atomcts(&["list", "knobs"]);
    assert!(text(&o).contains("sass.f16x2_add_subnormals (A1)"));
    let o = atomcts(&["list", "profiles"]);
    assert!(text(&o).contains("intel-skylake"));
    let d = tmp("export");
    write(&d, "spec-cases/sass/atom/a.toml", GOOD);
    let o = atomcts(&[
        "export",
        "--json",
        "--cases",
        d.join("spec-cases").to_str().unwrap(),
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["cases"].as_array().unwrap().len(), 2);
    assert_eq!(
        v["cases"][0]["id"],
        "sass/atom/a::inc_resets_to_zero_at_bound"
    );
    assert_eq!(v["cases"][0]["cite"], "SASS ATOM, Atomic Operations table");
}

#[test]
fn generated_cases_run_without_files() {
    let o = atomcts(&[
        "run",
        "--generated",
        "40",
        "--seed",
        "5",
        "--generated-only",
        "--no-progress",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("40 passed"), "{}", text(&o));
}

/// `--adapter cuda` without a CUDA driver: one line saying why, exit 2 (issue 11). On a machine
/// with a driver the adapter opens instead, which `list adapters` reports.
#[test]
fn cuda_adapter_without_a_driver_says_why_and_exits_two() {
    let listed = text(&atomcts(&["list", "adapters"]));
    let cuda_line = listed
        .lines()
        .find(|l| l.starts_with("cuda ("))
        .expect("list adapters names cuda");
    if let Err(why) = atomcts_adapters::back::ptx::run::availability() {
        assert!(cuda_line.contains(&why), "{cuda_line}");
        let sass = concat!(env!("CARGO_MANIFEST_DIR"), "/../spec-cases/sass");
        // The concurrent cases, repeated (issue 12), answer the same way.
        let concurrent = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../spec-cases/sass/atom/concurrent.toml"
        );
        for args in [
            &["run", "--no-progress", "--cases", sass, "--adapter", "cuda"][..],
            &[
                "run",
                "--no-progress",
                "--cases",
                concurrent,
                "--adapter",
                "cuda",
                "--repeat",
                "5",
            ][..],
        ] {
            let o = atomcts(args);
            assert_eq!(o.status.code(), Some(2), "{}", text(&o));
            let err = String::from_utf8_lossy(&o.stderr);
            let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
            assert_eq!(lines.len(), 1, "{err}");
            assert!(
                lines[0].contains("cuda") && lines[0].contains("unavailable"),
                "{err}"
            );
        }
    } else {
        assert!(cuda_line.contains("available"), "{cuda_line}");
    }
}
