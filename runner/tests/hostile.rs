//! Hostile input and faults (issue 7, defects D1..D22): one or more tests per group, each
//! reproducing the defect as reported. Shims are small Python scripts written per test.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_atomcts"))
}

fn atomcts(args: &[&str]) -> Output {
    bin().args(args).output().expect("run atomcts")
}

/// Runs atomcts and kills it if it has not finished after `limit` (a hang guard far above the
/// expected cost, never a timing assertion): returns `None` on a hang.
fn atomcts_guarded(args: &[&str], limit: Duration) -> Option<Output> {
    use std::io::Read;
    let mut child = bin()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run atomcts");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Some(Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    })
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("atomcts-hostile-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(dir: &Path, rel: &str, body: &str) -> PathBuf {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, body).unwrap();
    p
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
    format!("cmd:python3 {}", p.display())
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
