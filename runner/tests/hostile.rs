//! Hostile input and faults (issue 7, defects D1..D22): one or more tests per group, each
//! reproducing the defect as reported. Shims are small Python scripts written per test.

mod common;
use common::{atomcts_guarded, pid_alive, text, tmp, write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

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

// ---- Subprocess adapter: D4 write deadlines, D5 process groups, D6 circuit breaker, D16
// ---- `sh -c`, D19 exits and invalid UTF-8 ------------------------------------------------

#[test]
fn d4_a_shim_that_stops_reading_cannot_block_a_large_request() {
    let d = tmp("d4");
    // 1 MiB of memory: the request line is over 2 MiB, far beyond a pipe's buffer.
    write(
        &d,
        "spec-cases/sass/big.toml",
        &one_case(
            "{ R2 = 0x0, R4 = 1, alloc = [\"0x0+0x100000\"] }",
            "{ R0 = 0, mem = { 0x0 = \"u32:1\" } }",
        ),
    );
    let p = write(
        &d,
        "deaf.py",
        "import sys, time\nsys.stdin.readline()\nprint('{\"type\":\"hello\",\"protocol\":\"atomcts-adapter\",\"version\":1}', flush=True)\ntime.sleep(3600)\n",
    );
    let cmd = format!("cmd:python3 {}", p.display());
    let o = atomcts_guarded(
        &[
            "run",
            "--no-progress",
            "--cases",
            d.join("spec-cases").to_str().unwrap(),
            "--adapter",
            &cmd,
            "--adapter-timeout-ms",
            "500",
        ],
        Duration::from_secs(60),
    )
    .expect("writing to a shim that stops reading hung the run");
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("timed out after 500 ms"), "{t}");
}

#[test]
fn d5_timed_out_shims_leave_no_process_behind() {
    let d = tmp("d5");
    let pids = d.join("pids");
    let hang = write(
        &d,
        "hang.py",
        &format!(
            "import sys, os, time\nif os.fork() == 0:\n    open({:?}, 'a').write(str(os.getpid()) + '\\n')\n    time.sleep(3600)\nopen({:?}, 'a').write(str(os.getpid()) + '\\n')\nsys.stdin.readline()\nprint('{{\"type\":\"hello\",\"protocol\":\"atomcts-adapter\",\"version\":1}}', flush=True)\ntime.sleep(3600)\n",
            pids.display().to_string(),
            pids.display().to_string()
        ),
    );
    for (i, cmd) in [
        format!("cmd:python3 {} | cat", hang.display()),
        format!("cmd:bash -c 'python3 {}; true'", hang.display()),
    ]
    .iter()
    .enumerate()
    {
        let _ = std::fs::remove_file(&pids);
        let cases = corpus("sass/atom/exch.toml");
        let o = atomcts_guarded(
            &[
                "run",
                "--no-progress",
                "--cases",
                &cases,
                "--adapter",
                cmd,
                "--adapter-timeout-ms",
                "300",
                "--filter",
                "exch::",
            ],
            Duration::from_secs(120),
        )
        .expect("hung");
        assert_eq!(o.status.code(), Some(2), "{i}: {}", text(&o));
        std::thread::sleep(Duration::from_millis(300));
        let list = std::fs::read_to_string(&pids).unwrap_or_default();
        let started: Vec<u32> = list.lines().filter_map(|l| l.parse().ok()).collect();
        assert!(started.len() >= 2, "{i}: {list}");
        let alive: Vec<u32> = started.into_iter().filter(|p| pid_alive(*p)).collect();
        assert!(alive.is_empty(), "{i}: left behind: {alive:?}");
    }
}

#[test]
fn d6_a_shim_that_hangs_its_handshake_after_a_restart_trips_the_breaker() {
    let d = tmp("d6");
    let marker = d.join("started");
    let p = write(
        &d,
        "flaky.py",
        &format!(
            "import sys, os, time\nm = {:?}\nif os.path.exists(m):\n    time.sleep(3600)\nopen(m, 'w').write('x')\nsys.stdin.readline()\nprint('{{\"type\":\"hello\",\"protocol\":\"atomcts-adapter\",\"version\":1}}', flush=True)\nsys.stdin.readline()\nsys.exit(7)\n",
            marker.display().to_string()
        ),
    );
    let cmd = format!("cmd:python3 {}", p.display());
    let cases = corpus("sass/atom/inc_dec.toml");
    let o = atomcts_guarded(
        &[
            "run",
            "--no-progress",
            "--cases",
            &cases,
            "--adapter",
            &cmd,
            "--adapter-timeout-ms",
            "200",
        ],
        Duration::from_secs(120),
    )
    .expect("restarts were not bounded");
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("exit status 7"), "{t}");
    assert!(t.contains("circuit breaker"), "{t}");
    assert!(t.contains("33 errors"), "{t}");
}

#[test]
fn d16_cmd_is_plain_sh_c() {
    let d = tmp("d16");
    let sub = d.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    write(
        &sub,
        "envshim.py",
        "import sys, os, json\nfor line in sys.stdin:\n    req = json.loads(line)\n    if req['type'] == 'hello':\n        print(json.dumps({'type':'hello','protocol':'atomcts-adapter','version':1,'name':os.environ.get('SHIM_NAME','unset')}), flush=True)\n    else:\n        print(json.dumps({'id':req['id'],'outcome':'unsupported','why':'test'}), flush=True)\n",
    );
    let faults = corpus("sass/atom/faults.toml");
    let cmd = format!(
        "cmd:cd {} && SHIM_NAME=from_env python3 envshim.py",
        sub.display()
    );
    let o = atomcts(&[
        "run",
        "--no-progress",
        "--cases",
        &faults,
        "--adapter",
        &cmd,
        "--verbose",
    ]);
    let t = text(&o);
    assert!(t.contains("cmd:from_env adapter"), "{t}");
    assert!(t.contains("unsupported: test"), "{t}");
}

#[test]
fn d19_a_shim_exiting_after_each_answer_costs_no_case_and_keeps_its_status() {
    let d = tmp("d19");
    let answer = "def answer(req):\n    return {\"id\": req[\"id\"], \"outcome\": \"fault\", \"lanes\": [[0, \"misaligned_address\"]]}\n";
    let steady = shim(&d, "steady", answer);
    let quitter = shim(
        &d,
        "quitter",
        &format!(
            "{answer}_answer = answer\ndef answer(req):\n    sys.stdout.write(json.dumps(_answer(req)) + '\\n')\n    sys.stdout.flush()\n    sys.exit(3)\n"
        ),
    );
    let faults = corpus("sass/atom/faults.toml");
    let summary = |o: &Output| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .last()
            .unwrap_or("")
            .to_string()
    };
    let a = atomcts(&[
        "run",
        "--no-progress",
        "--cases",
        &faults,
        "--adapter",
        &steady,
    ]);
    let b = atomcts(&[
        "run",
        "--no-progress",
        "--cases",
        &faults,
        "--adapter",
        &quitter,
    ]);
    assert!(summary(&a).contains(" passed, "), "{}", text(&a));
    assert_eq!(summary(&a), summary(&b), "{}", text(&b));
    let notes = String::from_utf8_lossy(&b.stderr);
    assert!(
        notes.contains("exited (exit status 3) after its last answer"),
        "{notes}"
    );
    assert!(!text(&b).contains("ERROR"), "{}", text(&b));
}

#[test]
fn d19_invalid_utf8_in_an_answer_is_a_protocol_error() {
    let d = tmp("d19-utf8");
    let cmd = shim(
        &d,
        "latin1",
        "def answer(req):\n    return b'{\"id\": \"' + req['id'].encode() + b'\", \"outcome\": \"invalid\", \"reason\": \"r\\xe9jected\"}\\n'\n",
    );
    let faults = corpus("sass/atom/faults.toml");
    let o = atomcts(&[
        "run",
        "--no-progress",
        "--cases",
        &faults,
        "--adapter",
        &cmd,
        "--filter",
        "u32_at_offset_2_misaligned",
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("answer is not UTF-8"), "{t}");
}

// ---- D20/D21: escaping and size caps in terminal output and JUnit -----------------------

#[test]
fn d20_d21_control_characters_are_escaped_visibly_everywhere() {
    let d = tmp("d20");
    write(
        &d,
        "spec-cases/sass/e.toml",
        "dialect = \"sass\"\ncite = \"evil \\u001b[2J cite\\nFAIL forged\"\n[[case]]\nname = \"c\"\nasm = \"ATOM.ADD.U32 R0, [R2], R4\"\ngiven = { R2 = 0x1000, R4 = 1, mem = { 0x1000 = \"u32:1\" } }\nexpect = { R0 = 1, mem = { 0x1000 = \"u32:3\" } }\n",
    );
    let cmd = shim(
        &d,
        "evil",
        "def answer(req):\n    return {\"id\": req[\"id\"], \"outcome\": \"error\", \"why\": \"bad\\u001b[31m\\nPASS all\"}\n",
    );
    let body = std::fs::read_to_string(d.join("evil.py")).unwrap().replace(
        "\"name\": \"evil\"",
        "\"name\": \"ev\\u001b]0;x\\u0007il\\n0 passed, 0 failed\"",
    );
    std::fs::write(d.join("evil.py"), body).unwrap();
    let junit = d.join("j.xml");
    let o = run_dir(
        &d,
        &[
            "--adapter",
            &cmd,
            "--junit",
            junit.to_str().unwrap(),
            "--verbose",
        ],
    );
    let t = text(&o);
    assert!(!t.contains('\u{1b}') && !t.contains('\u{7}'), "{t:?}");
    assert!(t.contains("evil \\e[2J cite\\nFAIL forged"), "{t}");
    assert!(t.contains("ev\\e]0;x\\u{7}il\\n0 passed, 0 failed"), "{t}");
    assert!(t.contains("bad\\e[31m\\nPASS all"), "{t}");
    let x = std::fs::read_to_string(&junit).unwrap();
    assert!(x.contains("bad\\e[31m\\nPASS all"), "{x}");
    assert!(!x.contains("expected , observed"), "{x}");
}

// ---- D8/D9/D18: corpus discovery ---------------------------------------------------------

#[test]
fn d8_symlink_cycles_are_walked_once() {
    let d = tmp("d8");
    write(&d, "spec-cases/sass/a.toml", GOOD);
    std::os::unix::fs::symlink(".", d.join("spec-cases/loop")).unwrap();
    std::os::unix::fs::symlink("..", d.join("spec-cases/sass/up")).unwrap();
    let o = atomcts_guarded(
        &[
            "run",
            "--no-progress",
            "--cases",
            d.join("spec-cases").to_str().unwrap(),
        ],
        Duration::from_secs(60),
    )
    .expect("two symlink loops hung the loader");
    let t = text(&o);
    assert!(t.contains("\n1 passed, 0 failed"), "{t}");
    assert!(t.contains("a symbolic link loops back"), "{t}");
}

#[test]
fn d9_fifos_devices_and_huge_files_are_errors_not_reads() {
    let d = tmp("d9");
    write(&d, "spec-cases/sass/a.toml", GOOD);
    std::os::unix::fs::symlink("/dev/zero", d.join("spec-cases/sass/zero.toml")).unwrap();
    let fifo = d.join("spec-cases/sass/fifo.toml");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let big = d.join("spec-cases/sass/big.toml");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(20 << 20).unwrap();
    let o = atomcts_guarded(
        &[
            "run",
            "--no-progress",
            "--cases",
            d.join("spec-cases").to_str().unwrap(),
        ],
        Duration::from_secs(60),
    )
    .expect("a FIFO or /dev/zero blocked the loader");
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("zero.toml:0:0: not a regular file"), "{t}");
    assert!(t.contains("fifo.toml:0:0: not a regular file"), "{t}");
    assert!(
        t.contains("big.toml:0:0: 20971520 bytes: larger than"),
        "{t}"
    );
    assert!(t.contains("\n1 passed"), "{t}");
}

#[test]
fn d18_invalid_utf8_and_unreadable_folders_are_reported_where_they_are() {
    let d = tmp("d18");
    write(&d, "spec-cases/sass/a.toml", GOOD);
    std::fs::write(
        d.join("spec-cases/sass/latin1.toml"),
        b"dialect = \"sass\"\ncite = \"caf\xe9\"\n",
    )
    .unwrap();
    let locked = d.join("spec-cases/visa");
    write(&d, "spec-cases/visa/v.toml", GOOD);
    let mut perm = std::fs::metadata(&locked).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o000);
    std::fs::set_permissions(&locked, perm).unwrap();
    let readable_anyway = std::fs::read_dir(&locked).is_ok(); // root reads everything
    let o = run_dir(&d, &[]);
    let mut perm = std::fs::metadata(&locked).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&locked, perm).unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("latin1.toml:2:12: invalid UTF-8 (byte 0xe9)"),
        "{t}"
    );
    if readable_anyway {
        // Running as root: the folder is read regardless.
        assert!(t.contains("\n2 passed"), "{t}");
    } else {
        assert!(
            t.contains("spec-cases/visa:0:0: cannot read directory"),
            "{t}"
        );
        assert!(t.contains("\n1 passed"), "{t}");
    }
}

#[test]
fn d18_messages_name_what_is_wrong() {
    let o = atomcts(&["run", "--partition", "hash:-1/4"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("--partition hash:-1/4: K `-1` is not a positive integer"),
        "{}",
        text(&o)
    );
    let o = atomcts(&["export", "--json", "--out", "/nonexistent/x.json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("/nonexistent/x.json"), "{}", text(&o));
    // --given is a TOML value, never pasted into a case file.
    let o = atomcts(&[
        "exec",
        "--dialect",
        "sass",
        "--asm",
        "ATOM.ADD.U32 R0, [R2], R4",
        "--given",
        "{ R2 = 0x1000 }\nexpect = { R0 = 1 }",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!text(&o).contains("duplicate key"), "{}", text(&o));
    assert!(text(&o).contains("--given"), "{}", text(&o));
}

// ---- D11: a gate never passes on nothing ------------------------------------------------

#[test]
fn d11_runs_that_check_nothing_exit_2() {
    let d = tmp("d11");
    std::fs::create_dir_all(d.join("empty")).unwrap();
    let o = atomcts(&[
        "run",
        "--no-progress",
        "--cases",
        d.join("empty").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "empty: {}", text(&o));
    let o = atomcts(&["run", "--no-progress", "--filter", "sass/atom/incdec"]);
    assert_eq!(o.status.code(), Some(2), "typo filter: {}", text(&o));
    assert!(text(&o).contains("no case was judged"), "{}", text(&o));
    let o = atomcts(&["run", "--no-progress", "--generated-only"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let cmd = shim(
        &d,
        "nothing",
        "def answer(req):\n    return {\"id\": req[\"id\"], \"outcome\": \"unsupported\", \"why\": \"no\"}\n",
    );
    let o = atomcts(&[
        "run",
        "--no-progress",
        "--cases",
        &corpus("sass/atom/faults.toml"),
        "--adapter",
        &cmd,
    ]);
    assert_eq!(o.status.code(), Some(2), "all unsupported: {}", text(&o));
    write(
        &d,
        "spec-cases/sass/cap.toml",
        &GOOD.replace("expect =", "requires = [\"u64_atomic\"]\nexpect ="),
    );
    write(&d, "spec-cases/sass/case.TOML", GOOD);
    write(&d, "spec-cases/sass/case.tml", GOOD);
    let o = run_dir(&d, &[]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("unknown capability `u64_atomic`"), "{t}");
    assert!(
        t.contains("case.TOML:0:0: case files must end in `.toml`"),
        "{t}"
    );
    assert!(
        t.contains("case.tml:0:0: case files must end in `.toml`"),
        "{t}"
    );
}

// ---- D12: outputs validated before running; D13: merge proves coverage; D22: baselines ---

#[test]
fn d12_bad_output_paths_fail_before_running() {
    let o = atomcts(&["run", "--no-progress", "--junit", "/nonexistent/dir/j.xml"]);
    assert_eq!(o.status.code(), Some(2));
    let t = text(&o);
    assert!(
        t.contains("--junit /nonexistent/dir/j.xml: cannot write there"),
        "{t}"
    );
    assert!(!t.contains("passed"), "ran before failing: {t}");
    let o = atomcts(&["run", "--no-progress", "--baseline", "/nonexistent/b.txt"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!text(&o).contains("passed"), "{}", text(&o));
}

#[test]
fn d13_merge_detects_missing_and_duplicated_shards() {
    let d = tmp("d13");
    let json = |k: u32| d.join(format!("s{k}.json")).display().to_string();
    let broken = d.join("spec-cases/sass/broken.toml");
    write(
        &d,
        "spec-cases/sass/broken.toml",
        "dialect = \"sass\"\nbogus = 1\n",
    );
    let atom = root().join("spec-cases/sass/atom");
    // A corpus of the SASS ATOM cases and one broken file.
    let status = Command::new("cp")
        .arg("-r")
        .arg(&atom)
        .arg(d.join("spec-cases/sass/"))
        .status()
        .unwrap();
    assert!(status.success());
    let _ = broken;
    for k in 1..=4 {
        let o = run_dir(
            &d,
            &["--partition", &format!("hash:{k}/4"), "--json", &json(k)],
        );
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    }
    let merge = |ks: &[u32]| {
        let mut args = vec!["merge".to_string()];
        args.extend(ks.iter().map(|k| json(*k)));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        atomcts(&args)
    };
    let all = merge(&[1, 2, 3, 4]);
    let t = text(&all);
    assert_eq!(t.matches("broken.toml:2:1").count(), 1, "{t}");
    assert!(!t.contains("merge:"), "{t}");
    let three = merge(&[1, 2, 3]);
    let t = text(&three);
    assert_eq!(three.status.code(), Some(2), "{t}");
    assert!(t.contains("missing shard(s): hash:4/4"), "{t}");
    assert!(t.contains("selected cases are missing"), "{t}");
    let dup = merge(&[1, 2, 3, 4, 4]);
    assert!(
        text(&dup).contains("given more than once: hash:4/4"),
        "{}",
        text(&dup)
    );
}

#[test]
fn d22_stale_baseline_entries_fail_and_ids_ignore_path_spelling() {
    let d = tmp("d22");
    write(&d, "corpus/sass/atom/a.toml", GOOD);
    let b = write(&d, "baseline.txt", "sass/atom/a::no_such_case  # typo\n");
    let cases = d.join("corpus").display().to_string();
    let o = atomcts(&[
        "run",
        "--no-progress",
        "--cases",
        &cases,
        "--baseline",
        b.to_str().unwrap(),
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("baseline.txt:1: baseline entry `sass/atom/a::no_such_case` matches no case"),
        "{t}"
    );
    // The same case has the same id however the corpus is named.
    let ids = |p: &str| text(&atomcts(&["list", "cases", "--cases", p]));
    let want = "sass/atom/a::add_returns_old\n";
    assert_eq!(ids(&cases), want);
    assert_eq!(ids(&format!("{cases}/sass")), want);
    assert_eq!(ids(&format!("{cases}/./sass/atom/")), want);
    assert_eq!(ids(&format!("{cases}/sass/atom/a.toml")), want);
}

// ---- D15: every reproduce line reproduces ------------------------------------------------

#[test]
fn d15_printed_reproduce_lines_reproduce_the_verdict() {
    let d = tmp("d15 dir with space");
    write(
        &d,
        "spec-cases/sass/atom/a.toml",
        &GOOD.replace("u32:10", "u32:11"),
    );
    let cmd = shim(
        &d,
        "rejecter",
        "def answer(req):\n    return {\"id\": req[\"id\"], \"outcome\": \"invalid\", \"reason\": \"rejected\"}\n",
    );
    let cases = d.join("spec-cases").display().to_string();
    for extra in [
        vec!["--set", "sass.misaligned=fault", "--race-budget", "777"],
        vec![
            "--generated",
            "40",
            "--seed",
            "5",
            "--adapter",
            "reference",
            "--set",
            "sass.misaligned=fault",
        ],
        vec!["--adapter", &cmd, "--adapter-timeout-ms", "1234"],
        vec![
            "--generated",
            "6",
            "--seed",
            "5",
            "--generated-only",
            "--adapter",
            &cmd,
        ],
    ] {
        let mut args = vec!["run", "--no-progress", "--cases", &cases];
        args.extend(extra.iter().copied());
        let o = atomcts(&args);
        let t = text(&o);
        let repros: Vec<&str> = t
            .lines()
            .filter_map(|l| l.trim().strip_prefix("reproduce: "))
            .collect();
        assert!(!repros.is_empty(), "{t}");
        for r in repros {
            for flag in extra
                .iter()
                .filter(|f| f.starts_with("--") && **f != "--generated" && **f != "--seed")
            {
                assert!(r.contains(flag), "{flag} missing from {r}");
            }
            let line = r.replacen("atomcts", env!("CARGO_BIN_EXE_atomcts"), 1);
            let again = Command::new("sh")
                .arg("-c")
                .arg(format!("{line} --no-progress"))
                .output()
                .unwrap();
            let t2 = text(&again);
            assert_eq!(again.status.code(), o.status.code(), "{r}\n{t2}");
            let id = r
                .split("--filter ")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap();
            let id = id.trim_matches('\'').trim_start_matches("id:");
            let verdict = |t: &str| {
                t.lines()
                    .find(|l| l.contains(&format!(" {id}  (")))
                    .map(|l| l.split(' ').next().unwrap().to_string())
            };
            assert_eq!(verdict(&t2), verdict(&t), "{r}\n{t2}");
            assert!(
                t2.contains("\n0 passed") || t2.contains("\n1 passed"),
                "{t2}"
            );
        }
    }
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
