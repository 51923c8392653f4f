//! Concurrent cases (issue 12), end to end: the corpus's concurrent cases pass on the built-in
//! adapters and on a shim that runs them really concurrently with one lock for every
//! operation, and fail on the same shim when each kind of operation takes its own lock (each
//! atomic with respect to itself only). Flaky baseline entries, `--repeat` and the loader's
//! errors. Needs `python3` (adapters/shims/concurrent_ir.py).

mod common;
use common::text;
use std::process::{Command, Output};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

fn atomcts(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_atomcts"));
    c.args(args).arg("--no-progress");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run atomcts")
}

fn shim() -> String {
    format!("cmd:python3 {ROOT}/adapters/shims/concurrent_ir.py")
}

fn corpus() -> String {
    format!("{ROOT}/spec-cases")
}

/// (passed, failed) from the totals line.
fn totals(t: &str) -> (usize, usize) {
    let line = t
        .lines()
        .rev()
        .find(|l| l.contains(" passed, "))
        .expect("totals");
    let nums: Vec<usize> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    (nums[0], nums[1])
}

/// The corpus's concurrent cases (tag `concurrent`), and how many of them have a float
/// operation, which `concurrent_ir.py` does not run (it answers not applicable for them, with
/// the reason).
fn concurrent_cases() -> (usize, usize) {
    let loaded = atomcts::corpus::case::load(&atomcts::default_corpus());
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let tagged: Vec<_> = loaded
        .cases
        .iter()
        .filter(|c| c.tags.iter().any(|t| t == "concurrent"))
        .collect();
    // A float operation (an MSL atomic_float, a SASS .F16x2 or .F32 add, ...) anywhere in it.
    let profile = atomcts_reference::Profile::default();
    let float = tagged
        .iter()
        .filter(|c| {
            let states = atomcts::run::concurrent::build_states(c).unwrap();
            let programs: Vec<atomcts_reference::Program> = c
                .concurrent
                .iter()
                .map(|i| atomcts_reference::Program::parse(c.dialect, &i.asm).unwrap())
                .collect();
            let parts = atomcts::run::concurrent::parts(c, &programs, &states);
            atomcts_reference::concurrent::lower_all(&parts, &profile)
                .unwrap()
                .iter()
                .any(|l| {
                    matches!(&l.instr, atomcts_reference::ir::Instr::Mem(m)
                        if m.ty.float_format().is_some())
                })
        })
        .count();
    assert!(tagged.len() >= 29, "{} concurrent cases", tagged.len());
    (tagged.len(), float)
}

/// The corpus's compare-and-swap loop cases (FORMAT.md, "Compare-and-swap loops").
const LOOP_CASES: [&str; 7] = [
    "sass/atom/concurrent::cas_loop_against_add",
    "sass/atom/concurrent::cas_loop_against_add_stress",
    "sass/atom/concurrent::cas_loop_xor_against_add",
    "visa/dword_atomic/concurrent::cmpxchg_loop_against_add",
    "visa/dword_atomic/concurrent::cmpxchg_loop_or_against_add",
    "msl/atomic/concurrent::compare_exchange_loop_against_add",
    "msl/atomic/concurrent::compare_exchange_loop_and_against_add",
];

#[test]
fn built_in_adapters_pass_every_concurrent_case() {
    for adapter in ["reference", "fast"] {
        let c = corpus();
        let o = atomcts(
            &[
                "run",
                "--cases",
                &c,
                "--filter",
                "tag:concurrent",
                "--adapter",
                adapter,
            ],
            &[],
        );
        let t = text(&o);
        assert_eq!(o.status.code(), Some(0), "{adapter}: {t}");
        assert_eq!(totals(&t), (concurrent_cases().0, 0), "{adapter}: {t}");
    }
}

#[test]
fn a_correct_concurrent_shim_passes_and_per_operation_locks_fail() {
    let (c, s) = (corpus(), shim());
    let args = [
        "run",
        "--cases",
        &c,
        "--filter",
        "tag:concurrent",
        "--adapter",
        &s,
    ];
    let o = atomcts(&args, &[("CONCURRENT_IR_LOCKS", "global")]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let (all, float) = concurrent_cases();
    assert_eq!(totals(&t), (all - float, 0), "{t}");
    assert!(
        t.contains(&format!("{float} not applicable ({all} cases)")),
        "{t}"
    );
    // Each kind of operation atomic with respect to itself only: lost updates between kinds.
    let o = atomcts(&args, &[("CONCURRENT_IR_LOCKS", "per_op")]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    let (_, failed) = totals(&t);
    assert!(failed >= 5, "{t}");
    assert!(t.contains("failure rates of repeated cases"), "{t}");
    // The stress cases whose final value every order agrees on fail on it.
    assert!(
        t.contains("FAIL visa/dword_atomic/concurrent::add_against_sub"),
        "{t}"
    );
    // Every thread ran every iteration (the shim reports `executed`): the report says so, and
    // no loop was cut short.
    assert!(
        t.contains("every thread executed the iterations the case asks for"),
        "{t}"
    );
    assert!(!t.contains("loop cut short: thread"), "{t}");
}

/// Issue 30: a thread whose loops stop early (as llvmpipe stops a kernel invocation's loops
/// after 65,535 iterations in all) fails as a loop cut short, with its count, never as a lost
/// update and never as a pass; with every lock right and every iteration run, the same cases
/// pass.
#[test]
fn loops_cut_short_fail_as_cut_short_not_as_lost_updates() {
    let (c, s) = (corpus(), shim());
    let args = [
        "run",
        "--cases",
        &c,
        "--filter",
        "id:findings/llvmpipe/lost_updates::fetch_add_from_two_work_groups",
        "--filter",
        "id:sass/atom/concurrent::cas_loop_against_add",
        "--adapter",
        &s,
        "--concurrent-repeat",
        "1",
    ];
    let o = atomcts(&args, &[]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert_eq!(totals(&t), (2, 0), "{t}");
    let o = atomcts(&args, &[("CONCURRENT_IR_LOOP_LIMIT", "2")]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert_eq!(totals(&t), (0, 2), "{t}");
    // 4096 fetch-adds asked of each thread, 2 run; the loop of 4 compare-and-swap successes too.
    assert!(
        t.contains("loop cut short: thread 0 executed 2 of 4096 iterations"),
        "{t}"
    );
    assert!(t.contains("instruction 1: thread 0 (lane 0)"), "{t}");
    // Judged by the counts, not as a history: no lost update is claimed.
    assert!(!t.contains("reference model"), "{t}");
}

#[test]
fn cas_loops_fail_when_cas_and_add_take_different_locks() {
    let (c, s) = (corpus(), shim());
    let mut args = vec!["run", "--cases", &c, "--adapter", &s];
    for id in LOOP_CASES {
        args.push("--filter");
        args.push(id);
    }
    // One lock for every operation: every loop passes, its returns fit one order.
    let o = atomcts(&args, &[("CONCURRENT_IR_LOCKS", "global")]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert_eq!(totals(&t), (LOOP_CASES.len(), 0), "{t}");
    // A compare-and-swap atomic with respect to compare-and-swaps only: the run fails, and
    // nearly every loop case does (BENCHMARKS.md: 100 of 100 runs failed, 697 of 700 cases).
    let o = atomcts(&args, &[("CONCURRENT_IR_LOCKS", "per_op")]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    let failed = LOOP_CASES
        .iter()
        .filter(|id| t.contains(&format!("FAIL {id} ")))
        .count();
    assert!(failed >= LOOP_CASES.len() - 2, "{failed} failed: {t}");
}

#[test]
fn bad_cas_loops_are_errors_with_positions() {
    let dir = std::env::temp_dir().join(format!("atomcts-cc-loop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("loop.toml");
    std::fs::write(
        &f,
        r#"dialect = "sass"
cite = "x"

[[case]]
name = "unknown_update"
given = { mem = { 0x1000 = "u32:0" } }
expect = {}
[[case.concurrent]]
asm = "ATOM.CAS.32 R0, [R2], R4, R5"
given = { R2 = 0x1000 }
cas_loop = { update = "exch", operand = 1 }

[[case]]
name = "negative_operand"
given = { mem = { 0x1000 = "u32:0" } }
expect = {}
[[case.concurrent]]
asm = "ATOM.CAS.32 R0, [R2], R4, R5"
given = { R2 = 0x1000 }
cas_loop = { update = "add", operand = -1 }
"#,
    )
    .unwrap();
    let p = f.display().to_string();
    let o = atomcts(&["run", "--cases", &p, "--adapter", "reference"], &[]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains(
            "loop.toml:11:23: cas_loop update `exch` is not one of add, sub, and, or, xor, min, max"
        ),
        "{t}"
    );
    assert!(
        t.contains("loop.toml:20:40: cas_loop operand: expected a non-negative integer"),
        "{t}"
    );
    // A key the loop does not have (a whole-file error, as for any unknown key).
    let g = dir.join("key.toml");
    std::fs::write(
        &g,
        r#"dialect = "sass"
cite = "x"

[[case]]
name = "unknown_key"
given = { mem = { 0x1000 = "u32:0" } }
expect = {}
[[case.concurrent]]
asm = "ATOM.CAS.32 R0, [R2], R4, R5"
given = { R2 = 0x1000 }
cas_loop = { update = "add", operand = 1, first = "read" }
"#,
    )
    .unwrap();
    let q = g.display().to_string();
    let o = atomcts(&["run", "--cases", &q, "--adapter", "reference"], &[]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("key.toml:11:43: unknown field `first`"), "{t}");
    // A loop on an instruction that is not a compare-and-swap, or an operand wider than its
    // type: the case's error, at the loop.
    std::fs::write(
        &f,
        r#"dialect = "sass"
cite = "x"

[[case]]
name = "loop_on_add"
given = { mem = { 0x1000 = "u32:0" } }
expect = {}
[[case.concurrent]]
asm = "ATOM.ADD R0, [R2], R4"
given = { R2 = 0x1000, R4 = 1 }
cas_loop = { update = "add", operand = 1 }

[[case]]
name = "wide_operand"
given = { mem = { 0x1000 = "u32:0" } }
expect = {}
[[case.concurrent]]
asm = "ATOM.CAS.32 R0, [R2], R4, R5"
given = { R2 = 0x1000 }
cas_loop = { update = "add", operand = "0x100000000" }
"#,
    )
    .unwrap();
    let o = atomcts(&["run", "--cases", &p, "--adapter", "reference"], &[]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("loop.toml:11:12: bad state: instruction 0: cas_loop needs a compare-and-swap instruction, not add"),
        "{t}"
    );
    assert!(
        t.contains("loop.toml:20:12: bad state: instruction 0: cas_loop operand 0x100000000 is wider than the 32-bit type"),
        "{t}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn flaky_baseline_entries_allow_both_outcomes() {
    let dir = std::env::temp_dir().join(format!("atomcts-flaky-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let baseline = dir.join("flaky.baseline");
    let ids = [
        "sass/atom/concurrent::inc_against_dec_away_from_bounds",
        "visa/dword_atomic/concurrent::add_against_sub",
    ];
    let text_b: String = ids
        .iter()
        .map(|id| format!("flaky {id}  # lost updates between kinds, sometimes\n"))
        .collect();
    std::fs::write(&baseline, text_b).unwrap();
    let (c, s, b) = (corpus(), shim(), baseline.display().to_string());
    let mut args = vec!["run", "--cases", &c, "--adapter", &s, "--baseline", &b];
    for id in ids {
        args.push("--filter");
        args.push(id);
    }
    // Failing: known failures, exit 0.
    let o = atomcts(&args, &[("CONCURRENT_IR_LOCKS", "per_op")]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("2 known failures"), "{t}");
    // Passing: passes, not a stale baseline.
    let o = atomcts(&args, &[("CONCURRENT_IR_LOCKS", "global")]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert_eq!(totals(&t), (2, 0), "{t}");
    // A flaky entry naming no case is an error like any other baseline entry.
    std::fs::write(&baseline, "flaky sass/atom/concurrent::no_such_case\n").unwrap();
    let o = atomcts(&args, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("matches no case"), "{}", text(&o));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn repeat_reports_runs_in_json() {
    let dir = std::env::temp_dir().join(format!("atomcts-repeat-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("r.json").display().to_string();
    let c = corpus();
    let o = atomcts(
        &[
            "run",
            "--cases",
            &c,
            "--filter",
            "id:sass/atom/concurrent::add_against_exch",
            "--filter",
            "id:sass/atom/add_int::add_u32_returns_old_and_stores_sum",
            "--adapter",
            "reference",
            "--repeat",
            "5",
            "--json",
            &json,
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for res in r["results"].as_array().unwrap() {
        assert_eq!(res["runs"]["runs"], 5, "{res}");
        assert_eq!(res["runs"]["failed"], 0, "{res}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn malformed_concurrent_cases_are_errors_with_positions() {
    let dir = std::env::temp_dir().join(format!("atomcts-cc-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bad.toml");
    std::fs::write(
        &f,
        r#"dialect = "sass"
cite = "x"

[[case]]
name = "both_asm_and_concurrent"
asm = "ATOM.ADD R0, [R2], R4"
expect = {}
[[case.concurrent]]
asm = "ATOM.ADD R0, [R2], R4"

[[case]]
name = "registers_in_shared_given"
given = { R2 = 0x1000, mem = { 0x1000 = "u32:0" } }
expect = {}
[[case.concurrent]]
asm = "ATOM.ADD R0, [R2], R4"

[[case]]
name = "zero_iterations"
expect = {}
[[case.concurrent]]
asm = "ATOM.ADD R0, [R2], R4"
iterations = 0

[[case]]
name = "memory_in_instruction_given"
given = { mem = { 0x1000 = "u32:0" } }
expect = {}
[[case.concurrent]]
asm = "ATOM.ADD R0, [R2], R4"
given = { R2 = 0x1000, R4 = 1, mem = { 0x2000 = "u32:0" } }
"#,
    )
    .unwrap();
    let p = f.display().to_string();
    let o = atomcts(&["run", "--cases", &p, "--adapter", "reference"], &[]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("bad.toml:6:7: concurrent case `both_asm_and_concurrent` has a case-level asm"),
        "{t}"
    );
    assert!(
        t.contains("bad.toml:23:14: iterations = 0 is outside"),
        "{t}"
    );
    assert!(t.contains("`R2` in a concurrent case's given"), "{t}");
    assert!(t.contains("`mem` in instruction 0's given"), "{t}");
    std::fs::remove_dir_all(&dir).ok();
}
