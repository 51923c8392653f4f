//! Hostile input and faults (issue 7, defects D1..D22): one or more tests per group, each
//! reproducing the defect as reported. Shims are small Python scripts written per test.

mod common;
use common::{atomcts_guarded, pid_alive, text, tmp, write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

#[path = "hostile/runs.rs"]
mod runs;
#[path = "hostile/shims.rs"]
mod shims;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_atomcts"))
}

fn atomcts(args: &[&str]) -> Output {
    bin().args(args).output().expect("run atomcts")
}

fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn corpus(rel: &str) -> String {
    root().join("spec-cases").join(rel).display().to_string()
}

/// A Python shim: the handshake, then `answer(req)` (Python source defining it) for each run
/// request. `prelude` runs before the handshake.
fn shim(dir: &Path, name: &str, answer: &str) -> String {
    let body = format!(
        r#"import json, sys, os
{answer}
for line in sys.stdin:
    req = json.loads(line)
    if req["type"] == "hello":
        out = {{"type": "hello", "protocol": "atomcts-adapter", "version": 1, "name": "{name}", "capabilities": CAPS if "CAPS" in globals() else []}}
    else:
        out = answer(req)
    if out is None:
        continue
    if isinstance(out, (bytes, bytearray)):
        sys.stdout.buffer.write(out)
        sys.stdout.flush()
        continue
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
"#
    );
    let p = write(dir, &format!("{name}.py"), &body);
    format!("cmd:python3 '{}'", p.display())
}

const GOOD: &str = r#"dialect = "sass"
cite = "SASS ATOM, Atomic Operations table"
[[case]]
name = "add_returns_old"
asm = "ATOM.ADD.U32 R0, [R2], R4"
given = { R2 = 0x1000, R4 = 7, mem = { 0x1000 = "u32:3" } }
expect = { R0 = 3, mem = { 0x1000 = "u32:10" } }
"#;

fn one_case(given: &str, expect: &str) -> String {
    format!(
        "dialect = \"sass\"\ncite = \"SASS ATOM\"\n[[case]]\nname = \"c\"\nasm = \"ATOM.ADD.U32 R0, [R2], R4\"\ngiven = {given}\nexpect = {expect}\n"
    )
}

fn run_dir(d: &Path, extra: &[&str]) -> Output {
    let cases = d.join("spec-cases").display().to_string();
    let mut args = vec!["run", "--no-progress", "--cases", &cases];
    args.extend_from_slice(extra);
    atomcts(&args)
}

// ---- D1: loading is linear in cases per file --------------------------------------------

#[test]
fn d1_twenty_thousand_cases_in_one_file_load_without_rescanning() {
    let d = tmp("d1");
    let mut body = String::from("dialect = \"sass\"\ncite = \"x\"\n");
    for i in 0..20_000 {
        body.push_str(&format!(
            "[[case]]\nname = \"c{i}\"\nasm = \"ATOM.ADD.U32 R0, [R2], R4\"\ngiven = {{ R2 = 0x1000, R4 = 1, mem = {{ 0x1000 = \"u32:1\" }} }}\nexpect = {{ R0 = 1, mem = {{ 0x1000 = \"u32:2\" }} }}\n"
        ));
    }
    // A broken last case: its position must be exact after 20,000 cases.
    body.push_str("[[case]]\nname = \"Bad\"\nasm = \"x\"\nexpect = { R0 = 0 }\n");
    let f = write(&d, "spec-cases/sass/big.toml", &body);
    let o = atomcts_guarded(
        &["list", "cases", "--cases", f.to_str().unwrap()],
        Duration::from_secs(60),
    )
    .expect("listing 20,000 cases hung (quadratic positions)");
    let t = text(&o);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        &t[t.len().saturating_sub(500)..]
    );
    assert!(
        t.contains("big.toml:100004:8: case name `Bad`"),
        "{}",
        &t[t.len() - 300..]
    );
    assert_eq!(
        t.lines().filter(|l| l.starts_with("sass/big::c")).count(),
        20_000
    );
}

// ---- D2: Memory::alloc is linear-ish; D3: comparison by ranges, findings capped ---------

#[test]
fn d2_a_mem_map_of_100k_entries_loads_and_runs() {
    let d = tmp("d2");
    let mut mem = String::new();
    for i in 0..100_000u64 {
        mem.push_str(&format!("0x{:x} = \"u32:{i}\", ", 0x10_0000 + 8 * i));
    }
    let body = one_case(
        &format!("{{ R2 = 0x100000, R4 = 1, mem = {{ {mem} }} }}"),
        "{ R0 = 0, mem = { 0x100000 = \"u32:1\" } }",
    );
    write(&d, "spec-cases/sass/m.toml", &body);
    let cases = d.join("spec-cases").display().to_string();
    let o = atomcts_guarded(
        &["run", "--no-progress", "--cases", &cases],
        Duration::from_secs(120),
    )
    .expect("a mem map of 10^5 entries hung");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("1 passed"), "{}", text(&o));
}

#[test]
fn d3_an_answer_differing_in_64_mib_is_bounded_and_summarised() {
    let d = tmp("d3");
    write(
        &d,
        "spec-cases/sass/big.toml",
        &one_case(
            "{ R2 = 0x0, R4 = 1, alloc = [\"0x0+0x4000000\"] }",
            "{ R0 = 0, mem = { 0x0 = \"u32:1\" } }",
        ),
    );
    // The shim flips every byte after the first word.
    let cmd = shim(
        &d,
        "flip",
        r#"def answer(req):
    st = req["state"]
    m = st["memory"]["global"][0]
    n = len(m["bytes"]) // 2
    m["bytes"] = "01000000" + "ff" * (n - 4)
    st["regs"]["R0"] = {"type": "b32", "elems": ["0x0"]}
    return {"id": req["id"], "outcome": "completed", "state": st}
"#,
    );
    let o = atomcts_guarded(
        &[
            "run",
            "--no-progress",
            "--cases",
            d.join("spec-cases").to_str().unwrap(),
            "--adapter",
            &cmd,
            "--adapter-timeout-ms",
            "60000",
        ],
        Duration::from_secs(300),
    )
    .expect("a 64 MiB difference hung");
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{}", &t[..t.len().min(3000)]);
    assert!(
        t.contains("further differences not listed"),
        "{}",
        &t[..t.len().min(3000)]
    );
    assert!(t.len() < 64 * 1024, "report of {} bytes", t.len());
}

// ---- D14: fault lanes are validated ------------------------------------------------------

#[test]
fn d14_fault_lanes_out_of_range_or_empty_never_pass() {
    let d = tmp("d14");
    let faults = corpus("sass/atom/faults.toml");
    for (name, lanes) in [
        (
            "lane99",
            r#"[[99, "misaligned_address"], [99, "address_out_of_range"], [99, "invalid_address_space"]]"#,
        ),
        ("nolanes", "[]"),
    ] {
        let cmd = shim(
            &d,
            name,
            &format!(
                "def answer(req):\n    return {{\"id\": req[\"id\"], \"outcome\": \"fault\", \"lanes\": {lanes}}}\n"
            ),
        );
        let o = atomcts(&[
            "run",
            "--no-progress",
            "--cases",
            &faults,
            "--adapter",
            &cmd,
        ]);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(1), "{t}");
        assert!(t.contains("\n0 passed,"), "{name}: {t}");
        if name == "nolanes" {
            assert!(
                t.contains("fault with no lanes (class and lanes unknown)"),
                "{t}"
            );
        } else {
            assert!(
                t.contains("fault reported on a lane the case does not have"),
                "{t}"
            );
        }
    }
}

// ---- D17: values out of range or unsatisfiable are input errors --------------------------

#[test]
fn d17_truncated_or_unsatisfiable_values_are_input_errors() {
    for (i, (given, expect, says)) in [
        (
            "{ R2 = 0x1001, R4 = 1, alloc = [\"0x1000+0x10\"] }",
            "{ fault = \"misaligned_address\", fault_lanes = [4294967296] }",
            "lane 4294967296 is not one of the case's lanes 0..1",
        ),
        (
            "{ R2 = 0x1001, R4 = 1, alloc = [\"0x1000+0x10\"] }",
            "{ fault = \"misaligned_address\", fault_lanes = [3] }",
            "lane 3 is not one of the case's lanes",
        ),
        (
            "{ R2 = 0x1001, R4 = 1, alloc = [\"0x1000+0x10\"] }",
            "{ fault = \"misaligned_address\", fault_lanes = [0, 0] }",
            "fault_lanes names lane 0 twice",
        ),
        (
            "{ R2 = 0x1000, R4 = 1, mem = { 0x1000 = \"u32:0\" } }",
            "{ R0 = { bits = \"0x100000000000000000001\", mask = \"0xffffffff\" }, mem = { 0x1000 = \"u32:1\" } }",
            "does not fit in 32 bits",
        ),
        (
            "{ R2 = 0x1000, R4 = 1, mem = { 0x1000 = \"u32:0\" } }",
            "{ R0 = { bits = 0, mask = \"0x1ffffffff\" }, mem = { 0x1000 = \"u32:1\" } }",
            "does not fit in 32 bits",
        ),
        (
            "{ R2 = 0x1000, R4 = 1, mem = { 0x1000 = \"u32:0\" } }",
            "{ R0 = { one_of = [] }, mem = { 0x1000 = \"u32:1\" } }",
            "one_of = [] admits nothing",
        ),
        (
            "{ R2 = 0x1000, R4 = 1, mem = { 0x1000 = \"u32:0\" } }",
            "{ R0 = 0, mem = { 0x1000 = \"u32:1\", 0x2000 = \"u32:0\" } }",
            "are not allocated in the given state",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let d = tmp(&format!("d17-{i}"));
        write(&d, "spec-cases/sass/v.toml", &one_case(given, expect));
        let o = run_dir(&d, &[]);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{i}: {t}");
        assert!(t.contains(says), "{i}: {t}");
        assert!(t.contains("v.toml:7:"), "{i}: {t}");
    }
}

#[test]
fn d17_a_range_ending_exactly_at_2_pow_64_is_legal() {
    let d = tmp("d17-top");
    write(
        &d,
        "spec-cases/sass/top.toml",
        &one_case(
            "{ R2 = 0x1000, R4 = 1, mem = { 0x1000 = \"u32:1\", 0xFFFFFFFFFFFFFFFC = \"u32:7\" } }",
            "{ R0 = 1, mem = { 0x1000 = \"u32:2\", 0xFFFFFFFFFFFFFFFC = \"u32:7\" } }",
        ),
    );
    let o = run_dir(&d, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

// ---- D7: generated counts are bounded, not allocated ------------------------------------

#[test]
fn d7_absurd_generated_counts_are_usage_errors() {
    for args in [
        vec![
            "run",
            "--no-progress",
            "--generated",
            "10000000000",
            "--generated-only",
        ],
        vec![
            "gen",
            "--count",
            "10000000000",
            "--out",
            "/tmp/atomcts-never-written",
        ],
    ] {
        let o = atomcts_guarded(&args, Duration::from_secs(30)).expect("allocated until killed");
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(
            text(&o).contains("at most 1000000000 generated cases"),
            "{}",
            text(&o)
        );
    }
}

#[test]
fn d2_answers_with_huge_numbers_of_ranges_are_bounded() {
    let d = tmp("d2-answer");
    write(&d, "spec-cases/sass/a.toml", GOOD);
    for (n, verdict) in [(100_000, "1 failed"), (1_100_000, "1 errors")] {
        let cmd = shim(
            &d,
            &format!("ranges{n}"),
            &format!(
                "def answer(req):\n    st = req[\"state\"]\n    st[\"memory\"][\"global\"] += [{{\"base\": hex(0x10000000 + 2 * i), \"bytes\": \"00\"}} for i in range({n})]\n    return {{\"id\": req[\"id\"], \"outcome\": \"completed\", \"state\": st}}\n"
            ),
        );
        let o = atomcts_guarded(
            &[
                "run",
                "--no-progress",
                "--cases",
                d.join("spec-cases").to_str().unwrap(),
                "--adapter",
                &cmd,
                "--adapter-timeout-ms",
                "60000",
            ],
            Duration::from_secs(240),
        )
        .expect("an answer with many ranges hung the runner");
        let t = text(&o);
        assert!(t.contains(verdict), "{n}: {}", &t[..t.len().min(3000)]);
        if n > 1_000_000 {
            assert!(t.contains("JSON objects (at most 1048576)"), "{t}");
        } else {
            assert!(t.contains("further differences not listed"), "{t}");
        }
    }
}

/// FORMAT.md "Encodings": a SASS case states `word` alone, as `0x` and 16 hex digits; vISA
/// cases state byte fields; anything else is an input error at the `encoding` key.
#[test]
fn encoding_words_and_fields_out_of_place_are_input_errors() {
    let root = Path::new("spec-cases");
    for (dialect, asm, enc, want) in [
        (
            "sass",
            "ATOM.E.ADD R0, [R2], R4",
            r#"{ word = "0xed0100000047020" }"#,
            "is not `0x` and 16 hex digits",
        ),
        (
            "sass",
            "ATOM.E.ADD R0, [R2], R4",
            r#"{ word = "ed01000000470200" }"#,
            "is not `0x` and 16 hex digits",
        ),
        (
            "sass",
            "ATOM.E.ADD R0, [R2], R4",
            r#"{ word = "0xed0100000047020g" }"#,
            "is not `0x` and 16 hex digits",
        ),
        (
            "sass",
            "ATOM.E.ADD R0, [R2], R4",
            r#"{ word = "0xed01000000470200", op = 1 }"#,
            "states `word`",
        ),
        (
            "sass",
            "ATOM.E.ADD R0, [R2], R4",
            "{ op = 1 }",
            "states `word`",
        ),
        (
            "visa",
            "DWORD_ATOMIC.add (1) T0 V10 V11 V0 V13",
            r#"{ word = "0xed01000000470200" }"#,
            "is a SASS field",
        ),
        (
            "visa",
            "DWORD_ATOMIC.add (1) T0 V10 V11 V0 V13",
            "{}",
            "names no field",
        ),
        (
            "msl",
            "r = atomic_fetch_add_explicit(&buf[0], 1, memory_order_relaxed)",
            "{ op = 1 }",
            "is for sass and visa cases",
        ),
    ] {
        let text = format!(
            "dialect = \"{dialect}\"\ncite = \"x\"\n\n[[case]]\nname = \"c\"\nasm = \"{}\"\nencoding = {enc}\nexpect = {{}}\n",
            asm.replace('"', "\\\"")
        );
        let loaded = atomcts::corpus::case::parse_file(root, &root.join("t.toml"), text);
        assert!(loaded.cases.is_empty(), "{dialect} {enc}: loaded");
        assert!(
            loaded
                .errors
                .iter()
                .any(|e| e.message.contains(want) && e.pos.line == 7 && e.pos.col == 12),
            "{dialect} {enc}: {:?}",
            loaded
                .errors
                .iter()
                .map(|e| format!("{}: {}", e.pos, e.message))
                .collect::<Vec<_>>()
        );
    }
}

// ---- D23: rejection columns (FORMAT.md `column`, PROTOCOL.md `invalid`) ------------------

const MISSING_OP: &str = "dialect = \"sass\"\ncite = \"SASS ATOM, Format\"\n[[case]]\nname = \"c\"\nasm = \"ATOM.E R0, [R2], R4\"\ngiven = { R2 = 0x1000, R4 = 1, alloc = [\"0x1000+0x10\"] }\nexpect = { invalid = \"syntax\", column = 7 }\n";

#[test]
fn d23_a_stated_column_is_compared_and_a_promised_one_required() {
    let d = tmp("d23");
    write(&d, "spec-cases/sass/c.toml", MISSING_OP);
    for (name, caps, column, code, says) in [
        ("right", "[]", "7", 0, "1 passed"),
        (
            "wrong",
            "[]",
            "8",
            1,
            "expected column 7, observed column 8",
        ),
        ("untold", "[]", "None", 0, "1 passed"),
        (
            "promised",
            "[\"rejection_columns\"]",
            "None",
            1,
            "locates its rejections, but not this one",
        ),
        ("garbage", "[]", "'x'", 2, "bad column \"x\""),
        ("zero", "[]", "0", 2, "bad column 0"),
    ] {
        let cmd = shim(
            &d,
            name,
            &format!(
                "CAPS = {caps}\ndef answer(req):\n    a = {{\"id\": req[\"id\"], \"outcome\": \"invalid\", \"reason\": \"syntax\"}}\n    if {column} is not None:\n        a[\"column\"] = {column}\n    return a\n"
            ),
        );
        let o = run_dir(&d, &["--adapter", &cmd]);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(code), "{name}: {t}");
        assert!(t.contains(says), "{name}: {t}");
    }
    // The built-in model locates its rejections: the case passes on it.
    let o = run_dir(&d, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn d23_columns_out_of_place_are_input_errors() {
    for (i, (asm, expect, says)) in [
        (
            "ATOM.E R0, [R2], R4",
            "{ invalid = \"syntax\", column = 0 }",
            "column = 0: a byte column of asm, 1..=20",
        ),
        (
            "ATOM.E R0, [R2], R4",
            "{ invalid = \"syntax\", column = 21 }",
            "column = 21: a byte column of asm, 1..=20",
        ),
        (
            "ATOM.E R0, [R2], R4",
            "{ invalid = \"syntax\", column = \"7\" }",
            "a byte column of asm",
        ),
        (
            "ATOM.ADD R0, [R2], R4",
            "{ R0 = 0, column = 3 }",
            "column without invalid",
        ),
        (
            "ATOM.E R0, [R2], R4\\nATOM.E R0, [R2], R4",
            "{ invalid = \"syntax\", column = 7 }",
            "column needs a one-line asm",
        ),
        (
            "ATOM.ADD R0, [R2], R4",
            "{ R0 = 0, because = \"delta\" }",
            "because without unspecified",
        ),
        (
            "ATOM.ADD R0, [R2], R4",
            "{ unspecified = true, because = \"\" }",
            "because names what the documents leave undefined",
        ),
        (
            "ATOM.ADD R0, [R2], R4",
            "{ unspecified = true, R0 = 0 }",
            "`R0` cannot go with unspecified",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let d = tmp(&format!("d23-in-{i}"));
        write(
            &d,
            "spec-cases/sass/v.toml",
            &format!(
                "dialect = \"sass\"\ncite = \"SASS ATOM\"\n[[case]]\nname = \"c\"\nasm = \"{asm}\"\ngiven = {{ R2 = 0x1000, R4 = 1, alloc = [\"0x1000+0x10\"] }}\nexpect = {expect}\n"
            ),
        );
        let o = run_dir(&d, &[]);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{i}: {t}");
        assert!(t.contains(says), "{i}: {t}");
        assert!(t.contains("v.toml:7:"), "{i}: {t}");
    }
}
