//! Hostile shims against the adapter protocol (issue 27: H2, H3, H4, H7, H10, H18): answers
//! that are short, over-wide or of the wrong type, shims that crash with a request in flight,
//! flood lines after an answer or write a line nobody asked for, and shims that never see a
//! case. None of them is ever a pass. Shims are small Python scripts written per test.

mod common;
use common::{atomcts_guarded, text, tmp, write};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

/// A hang guard far above any expected cost (never a timing assertion).
const LIMIT: Duration = Duration::from_secs(300);

fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn corpus(rel: &str) -> String {
    root().join("spec-cases").join(rel).display().to_string()
}

/// Runs atomcts, killing it if it has not finished after [`LIMIT`]; panics on a hang.
fn atomcts(args: &[&str]) -> Output {
    atomcts_guarded(args, LIMIT).unwrap_or_else(|| panic!("atomcts {args:?} hung"))
}

/// `atomcts run --no-progress --cases CASES --adapter ADAPTER EXTRA...`.
fn run(cases: &str, adapter: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "run",
        "--no-progress",
        "--cases",
        cases,
        "--adapter",
        adapter,
    ];
    args.extend_from_slice(extra);
    atomcts(&args)
}

/// The totals line: passed, failed, errors, skipped, known failures, not applicable, cases
/// (checked to add up).
#[derive(Debug, PartialEq, Eq)]
struct Totals {
    passed: usize,
    failed: usize,
    errors: usize,
    skipped: usize,
    not_applicable: usize,
    cases: usize,
}

fn totals(o: &Output) -> Totals {
    let t = text(o);
    let line = t
        .lines()
        .rev()
        .find(|l| l.contains(" passed, ") && l.ends_with(" cases)"))
        .unwrap_or_else(|| panic!("no totals in {t}"));
    let n: Vec<usize> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    assert_eq!(n.len(), 7, "{line}");
    assert_eq!(n[..6].iter().sum::<usize>(), n[6], "{line}");
    Totals {
        passed: n[0],
        failed: n[1],
        errors: n[2],
        skipped: n[3],
        not_applicable: n[5],
        cases: n[6],
    }
}

/// A Python shim. `hello` is Python dict items added to the handshake answer (`"version": 2,
/// "window": 8`); `body` defines `answer(req, n)` for the `n`-th request (1-based, profile
/// messages not counted): it returns a dict (written as one JSON line with the request's `id`
/// unless it has one), a str or bytes (written as they are), or None (nothing written).
fn shim(dir: &Path, name: &str, hello: &str, body: &str) -> String {
    let src = format!(
        r#"import json, sys, os
CAPS = ["u64_atomics", "f32_atomic_add", "f64_atomic_add", "f16x2_atomics", "visa_16bit_atomics", "visa_scatter4"]
{body}
n = 0
for line in sys.stdin:
    req = json.loads(line)
    t = req.get("type")
    if t == "profile":
        continue
    if t == "hello":
        h = {{"type": "hello", "protocol": "atomcts-adapter", "version": 1, "name": "{name}", "capabilities": CAPS}}
        h.update({{{hello}}})
        sys.stdout.write(json.dumps(h) + "\n")
        sys.stdout.flush()
        continue
    n += 1
    a = answer(req, n)
    if a is None:
        continue
    if isinstance(a, dict):
        a.setdefault("id", req["id"])
        a = json.dumps(a) + "\n"
    if isinstance(a, str):
        a = a.encode()
    sys.stdout.buffer.write(a)
    sys.stdout.flush()
"#
    );
    let p = write(dir, &format!("{name}.py"), &src);
    format!("cmd:python3 '{}'", p.display())
}

// ---- H3: cases decided on their stated bytes alone are not an adapter's pass -------------

/// Every encoding case of the corpus: some state bytes the decoder rejects, decided without
/// running anything.
fn encoding_cases() -> (String, [&'static str; 2]) {
    (corpus(""), ["--filter", "encoding::"])
}

#[test]
fn h3_a_shim_never_asked_gets_no_pass_from_encoding_cases() {
    let d = tmp("h3");
    let (cases, filter) = encoding_cases();
    let unsupported = shim(
        &d,
        "unsupported",
        "",
        "def answer(req, n):\n    return {\"outcome\": \"unsupported\", \"why\": \"nothing\"}\n",
    );
    let errors = shim(
        &d,
        "errors",
        "",
        "def answer(req, n):\n    return {\"outcome\": \"error\", \"why\": \"always\"}\n",
    );
    let quits = shim(&d, "quits", "", "def answer(req, n):\n    sys.exit(0)\n");
    for adapter in [&unsupported, &errors, &quits] {
        let mut extra = filter.to_vec();
        extra.push("--verbose");
        let o = run(&cases, adapter, &extra);
        let t = text(&o);
        let n = totals(&o);
        assert_eq!(n.passed, 0, "{adapter}: {t}");
        assert!(n.not_applicable >= 20, "{adapter}: {n:?} {t}");
        assert_eq!(o.status.code(), Some(2), "{adapter}: {t}");
        assert!(
            t.contains("which are the built-in model's decoder's input: adapter cmd:"),
            "{adapter}: {t}"
        );
        assert!(t.contains("was not asked (nothing is run)"), "{t}");
    }
    // The built-in model is what those cases check: they stay its passes.
    for builtin in ["fast", "reference"] {
        let o = run(&cases, builtin, &filter);
        let n = totals(&o);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        assert_eq!(n.passed, n.cases, "{builtin}: {n:?}");
    }
}

// ---- H7: values wider than their location, flags that are not booleans, wrong types -------

/// Three cases with easy answers: a completed add, a misaligned fault, an illegal size.
const THREE: &str = r#"dialect = "sass"
cite = "SASS ATOM"
[[case]]
name = "add"
asm = "ATOM.ADD.U32 R0, [R2], R4"
given = { R2 = 0x1000, R4 = 7, mem = { 0x1000 = "u32:3" } }
expect = { R0 = 3, mem = { 0x1000 = "u32:10" } }
[[case]]
name = "misaligned"
where = { "sass.misaligned" = "fault" }
asm = "ATOM.ADD.U32 R0, [R2], R4"
given = { R2 = 0x1002, R4 = 1, alloc = ["0x1000+0x10"] }
expect = { fault = "misaligned_address" }
[[case]]
name = "illegal"
asm = "ATOM.ADD.128 R0, [R2], R4"
given = { R2 = 0x1000, R4 = 1, alloc = ["0x1000+0x10"] }
expect = { invalid = "illegal_size" }
"#;

/// Python: `truthful(req)`, the right answer to each of [`THREE`] (an `accesses` answer to the
/// add for a version 2 shim); `lie(name, a)` (defined by the caller) then changes it.
const TRUTHFUL: &str = r#"import copy
def truthful(req):
    name = req["id"].split("::")[1]
    if name == "add":
        st = copy.deepcopy(req["state"])
        r = st["memory"]["global"][0]
        r["bytes"] = "0a000000" + r["bytes"][8:]
        if req.get("lowered") is not None:
            return {"outcome": "accesses", "memory": st["memory"], "returned": ["0x3"]}
        st["regs"]["R0"] = {"type": "b32", "elems": ["0x3"] * st["lanes"]}
        return {"outcome": "completed", "state": st}
    if name == "misaligned":
        return {"outcome": "fault", "lanes": [[0, "misaligned_address"]]}
    return {"outcome": "invalid", "reason": "illegal_size"}
def answer(req, n):
    a = truthful(req)
    a["id"] = req["id"]
    return lie(req["id"].split("::")[1], a)
"#;

#[test]
fn h7_over_wide_values_and_wrongly_typed_keys_are_protocol_errors() {
    let d = tmp("h7");
    write(&d, "spec-cases/sass/three.toml", THREE);
    let cases = d.join("spec-cases").display().to_string();
    // The truthful shims conform, in both versions.
    for (hello, n) in [("", 3), ("\"version\": 2, \"level\": \"semantic\"", 1)] {
        let body = format!("{TRUTHFUL}def lie(name, a):\n    return a\n");
        let o = run(&cases, &shim(&d, "truthful", hello, &body), &[]);
        assert_eq!(totals(&o).passed, n, "{}", text(&o));
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    }
    // Each lie (on one case, in Python, given `name` and the answer `a`): that case is a
    // protocol error, never a pass and never read as something else.
    let v1 = "";
    let v2 = "\"version\": 2, \"level\": \"semantic\"";
    let lies: &[(&str, &str, &str, &str)] = &[
        (
            "wide_register",
            v1,
            "add",
            "a['state']['regs']['R0']['elems'] = ['0xabc000000003']",
        ),
        (
            "signed_hex",
            v1,
            "add",
            "a['state']['regs']['R0']['elems'] = ['0x+3']",
        ),
        (
            "hex_without_0x",
            v1,
            "add",
            "a['state']['regs']['R0']['elems'] = ['3']",
        ),
        ("active_text", v1, "add", "a['state']['active'] = 'yes'"),
        (
            "active_not_bool",
            v1,
            "add",
            "a['state']['active'] = ['no']",
        ),
        ("lanes_fraction", v1, "add", "a['state']['lanes'] = 1.0"),
        (
            "simd_width_text",
            v1,
            "add",
            "a['state']['simd_width'] = 'x'",
        ),
        (
            "memory_null",
            v1,
            "add",
            "a['state']['memory']['shared'] = None",
        ),
        (
            "regs_list",
            v1,
            "add",
            "a['state']['regs'] = [a['state']['regs']]",
        ),
        // The wrong state first, the right one last: a map keeps the last.
        (
            "duplicate_state",
            v1,
            "add",
            "bad = copy.deepcopy(a['state'])\nbad['regs']['R0']['elems'] = ['0x9']\nreturn '{\"state\": ' + json.dumps(bad) + ', ' + json.dumps(a)[1:] + '\\n'",
        ),
        (
            "fault_lane_triple",
            v1,
            "misaligned",
            "a['lanes'] = [[0, 'misaligned_address', 'x']]",
        ),
        ("fault_lanes_missing", v1, "misaligned", "del a['lanes']"),
        (
            "fault_lanes_text",
            v1,
            "misaligned",
            "a['lanes'] = 'lane 0'",
        ),
        ("reason_number", v1, "illegal", "a['reason'] = 5"),
        ("reason_missing", v1, "illegal", "del a['reason']"),
        ("column_null", v1, "illegal", "a['column'] = None"),
        (
            "returned_wide",
            v2,
            "add",
            "a['returned'] = ['0xabc000000003']",
        ),
        ("returned_number", v2, "add", "a['returned'] = [3]"),
        ("ok_not_bool", v2, "add", "a['ok'] = ['no']"),
        ("ok_short", v2, "add", "a['ok'] = []"),
    ];
    for (name, hello, target, change) in lies {
        let change: String = change.lines().map(|l| format!("        {l}\n")).collect();
        let body = format!(
            "{TRUTHFUL}def lie(name, a):\n    if name == {target:?}:\n{change}    return a\n"
        );
        let o = run(&cases, &shim(&d, name, hello, &body), &[]);
        let t = text(&o);
        let n = totals(&o);
        let truthful = if hello.is_empty() { 2 } else { 0 };
        assert_eq!(
            (n.passed, n.failed, n.errors),
            (truthful, 0, 1),
            "{name}: {t}"
        );
        assert!(
            t.contains(&format!("ERROR sass/three::{target}")) && t.contains("protocol error"),
            "{name}: {t}"
        );
        assert_eq!(o.status.code(), Some(2), "{name}: {t}");
    }
}

// ---- H2: concurrent answers of the wrong shape ---------------------------------------------

/// Two exchanges, one lane and two iterations each, from 0: one serialization returns 0, 1
/// (instruction 0) then 1, 2 (instruction 1) and leaves 2.
const EXCHANGES: &str = r#"dialect = "sass"
cite = "SASS ATOM"
[[case]]
name = "two_exchanges"
tags = ["concurrent"]
given = { mem = { 0x1000 = "u32:0" } }
expect = { mem = { 0x1000 = { bits = "0x0", mask = "0xfffffffc" } } }
[[case.concurrent]]
asm = "ATOM.EXCH R0, [R2], R4"
lanes = 1
iterations = 2
given = { R2 = 0x1000, R4 = 1 }
[[case.concurrent]]
asm = "ATOM.EXCH R0, [R2], R4"
lanes = 1
iterations = 2
given = { R2 = 0x1000, R4 = 2 }
"#;

#[test]
fn h2_concurrent_rows_of_the_wrong_shape_are_protocol_errors() {
    let d = tmp("h2");
    write(&d, "spec-cases/sass/exchanges.toml", EXCHANGES);
    let cases = d.join("spec-cases").display().to_string();
    let hello = "\"version\": 2, \"capabilities\": [\"concurrent\"]";
    let shim_for = |name: &str, change: &str| {
        let body = format!(
            "def answer(req, n):\n    a = {{\"outcome\": \"concurrent\", \"memory\": {{\"global\": [{{\"base\": \"0x1000\", \"bytes\": \"02000000\"}}], \"shared\": []}},\n         \"returned\": [[[\"0x0\"], [\"0x1\"]], [[\"0x1\"], [\"0x2\"]]], \"ok\": [[[True], [True]], [[True], [True]]]}}\n    {change}\n    return a\n"
        );
        shim(&d, name, hello, &body)
    };
    let o = run(&cases, &shim_for("truthful", "pass"), &[]);
    assert_eq!(totals(&o).passed, 1, "{}", text(&o));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // Both exchanges returning the initial value fit no order: a failure, and leaving one of
    // those values out (the issue's report) does not make it pass.
    let o = run(
        &cases,
        &shim_for("both_initial", "a['returned'][1][0] = ['0x0']"),
        &[],
    );
    assert_eq!(totals(&o).failed, 1, "{}", text(&o));
    for (name, change, says) in [
        (
            "both_initial_one_left_out",
            "a['returned'][1][0] = []",
            "returned[1][0] has 0 returned values for 1 accesses",
        ),
        (
            "short_row",
            "a['returned'][0][0] = []",
            "returned[0][0] has 0 returned values for 1 accesses",
        ),
        (
            "long_row",
            "a['returned'][0][0] = ['0x0', '0x7']",
            "returned[0][0] has 2 returned values for 1 accesses",
        ),
        (
            "missing_iteration",
            "a['returned'][1] = [['0x2']]",
            "returned[1] has 1 iterations, the request 2",
        ),
        (
            "extra_instruction",
            "a['returned'].append([['0x2'], ['0x2']])",
            "`returned` has 3 lists for 2 instructions",
        ),
        (
            "wide_value",
            "a['returned'][0][0] = ['0xabc000000000']",
            "does not fit u32",
        ),
        (
            "null_value",
            "a['returned'][0][0] = [None]",
            "invalid type: null",
        ),
        (
            "short_ok_row",
            "a['ok'][1][0] = []",
            "has 0 `ok` flags for 1 accesses",
        ),
        (
            "missing_ok_iteration",
            "a['ok'][1] = [[True]]",
            "ok[1] has 1 iterations, the request 2",
        ),
        (
            "ok_not_bool",
            "a['ok'][0][0] = ['no']",
            "invalid type: string",
        ),
        (
            "plain_attempts",
            "a['attempts'] = [[[1], [3]], None]",
            "attempts[0][1]: expected 1 counts, each 1 (not a loop)",
        ),
    ] {
        let o = run(&cases, &shim_for(name, change), &["--verbose"]);
        let t = text(&o);
        let n = totals(&o);
        assert_eq!((n.passed, n.errors), (0, 1), "{name}: {t}");
        assert!(
            t.contains("protocol error") && t.contains(says),
            "{name}: {t}"
        );
        assert_eq!(o.status.code(), Some(2), "{name}: {t}");
    }
}

// ---- H4: a crash with a request in flight costs that request --------------------------------

/// A shim that reads its input a byte at a time (so it reads exactly what it says), answers
/// every request of `sass/atom/faults.toml` with the misaligned fault, and on the `n`-th request
/// of each instance does what `MODE` says: `crash_after_reading` (every third: read it whole,
/// exit 1), `crash_mid_request` (every third: read 10 bytes of it, exit 1), `exit_unread`
/// (after every second answer: wait, then exit 4 without reading anything more).
fn exact_reader(dir: &Path, name: &str, mode: &str, window: usize) -> String {
    let src = format!(
        r#"import json, os, sys, time
MODE, WINDOW = {mode:?}, {window}
buf = b""
def readline():
    global buf
    while b"\n" not in buf:
        b = os.read(0, 1)
        if not b:
            sys.exit(0)
        buf += b
    line, _, buf = buf.partition(b"\n")
    return line
def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
hello = {{"type": "hello", "protocol": "atomcts-adapter", "version": 1, "name": {name:?}}}
if WINDOW > 1:
    hello["window"] = WINDOW
readline()
out(hello)
n = 0
while True:
    if MODE == "crash_mid_request" and n % 3 == 2:
        os.read(0, 10)
        sys.exit(1)
    req = json.loads(readline())
    if req["type"] != "run":
        continue
    n += 1
    if MODE == "crash_after_reading" and n % 3 == 0:
        sys.exit(1)
    out({{"id": req["id"], "outcome": "fault", "lanes": [[0, "misaligned_address"]]}})
    if MODE == "exit_unread" and n % 2 == 0:
        time.sleep(0.3)
        sys.exit(4)
"#
    );
    let p = write(dir, &format!("{name}.py"), &src);
    format!("cmd:python3 '{}'", p.display())
}

#[test]
fn h4_a_crash_with_a_request_in_flight_is_that_requests_error() {
    let d = tmp("h4");
    let faults = corpus("sass/atom/faults.toml");
    let steady = totals(&run(&faults, &exact_reader(&d, "steady", "", 1), &[]));
    assert_eq!((steady.errors, steady.cases), (0, 36), "{steady:?}");
    // One request at a time (no window, or a window of 1): the crashed request, read whole or
    // in part, is an error; each instance answers two first, so exactly a third are errors.
    for window in [1, 0] {
        for mode in ["crash_after_reading", "crash_mid_request"] {
            let name = format!("{mode}_{window}");
            let o = run(&faults, &exact_reader(&d, &name, mode, window), &[]);
            let t = text(&o);
            let n = totals(&o);
            assert_eq!(n.errors, 12, "{name}: {t}");
            assert_eq!(
                n.passed + n.failed,
                steady.passed + steady.failed - 12,
                "{name}: {t}"
            );
            assert!(
                t.contains("crashed: the shim exited (exit status 1)"),
                "{name}: {t}"
            );
            assert!(!t.contains("after its last answer"), "{name}: {t}");
            assert_eq!(o.status.code(), Some(2), "{name}: {t}");
        }
    }
    // Pipelined: the crash costs every request in flight, the crashed one first among them.
    for mode in ["crash_after_reading", "crash_mid_request"] {
        let name = format!("{mode}_pipelined");
        let o = run(&faults, &exact_reader(&d, &name, mode, 4), &[]);
        let t = text(&o);
        let n = totals(&o);
        assert!(
            n.errors >= 12 && n.passed + n.failed + n.errors == 36,
            "{name}: {t}"
        );
        assert!(
            t.contains("crashed: the shim exited (exit status 1)"),
            "{name}: {t}"
        );
        assert!(!t.contains("after its last answer"), "{name}: {t}");
    }
    // A shim that exits after its answer without reading the next request costs nothing,
    // whether the runner finds it gone before writing that request or after.
    let o = run(
        &faults,
        &exact_reader(&d, "exit_unread", "exit_unread", 0),
        &[],
    );
    let t = text(&o);
    assert_eq!(totals(&o), steady, "{t}");
    assert!(
        t.contains("the shim exited (exit status 4) after its last answer; restarting it"),
        "{t}"
    );
    assert!(!t.contains("ERROR"), "{t}");
}

// ---- H18: without a window, a line nobody asked for costs no case ---------------------------

#[test]
fn h18_an_extra_line_without_a_window_is_charged_to_nobody() {
    let d = tmp("h18");
    let faults = corpus("sass/atom/faults.toml");
    let fault = "a = json.dumps({\"id\": req[\"id\"], \"outcome\": \"fault\", \"lanes\": [[0, \"misaligned_address\"]]}) + \"\\n\"\n";
    let steady = totals(&run(
        &faults,
        &shim(
            &d,
            "steady",
            "",
            &format!("def answer(req, n):\n    {fault}    return a\n"),
        ),
        &[],
    ));
    assert_eq!((steady.errors, steady.cases), (0, 36), "{steady:?}");
    // After every second answer: what else the shim writes (the answer `a` is written first).
    for (name, hello, extra) in [
        ("repeat_in_one_write", "", "return a + a"),
        (
            "repeat_in_a_second_write",
            "",
            "sys.stdout.write(a)\n    sys.stdout.flush()\n    return a",
        ),
        ("garbage_in_one_write", "", "return a + 'not json\\n'"),
        ("unfinished_line", "", "return a + '{\"id\": '"),
        ("repeat_window_1", "\"window\": 1", "return a + a"),
    ] {
        let body = format!(
            "def answer(req, n):\n    {fault}    if n % 2:\n        return a\n    {extra}\n"
        );
        let o = run(&faults, &shim(&d, name, hello, &body), &[]);
        let t = text(&o);
        assert_eq!(totals(&o), steady, "{name}: {t}");
        assert!(!t.contains("ERROR"), "{name}: {t}");
        assert!(
            t.contains("nobody asked for") && t.contains("after its last answer; restarting it"),
            "{name}: {t}"
        );
    }
}

// ---- H10: lines after an answer are bounded --------------------------------------------------

/// This process's resident memory in bytes.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb << 10)
}

#[test]
fn h10_lines_after_an_answer_are_not_read_without_bound() {
    use atomcts_adapters::{Adapter, Observation, Request, SubprocessAdapter};
    let d = tmp("h10");
    let started = d.join("started").display().to_string();
    let flooded = d.join("flooded");
    // The first instance, after its first answer, writes 512 MiB of lines nobody asked for
    // (then says so in `flooded`); every instance answers `invalid`.
    let body = format!(
        r#"def answer(req, n):
    sys.stdout.write(json.dumps({{"id": req["id"], "outcome": "invalid", "reason": "rejected"}}) + "\n")
    sys.stdout.flush()
    if n == 1 and not os.path.exists({started:?}):
        open({started:?}, "w").close()
        line = ("x" * 1023 + "\n") * 1024
        for _ in range(512):
            sys.stdout.write(line)
        sys.stdout.flush()
        open({:?}, "w").close()
"#,
        flooded.display().to_string()
    );
    let cmd = shim(&d, "flood", "", &body);
    let mut a = SubprocessAdapter::start(cmd.trim_start_matches("cmd:"), Duration::from_secs(120))
        .expect("the shim starts");
    let state = atomcts_reference::State::new(1);
    let profile = atomcts_reference::Profile::default();
    let request = |id| Request {
        id,
        dialect: atomcts_reference::program::Dialect::Sass,
        asm: "ATOM.ADD.U32 R0, [R2], R4",
        state: &state,
        profile: &profile,
        lowered: None,
    };
    let before = rss();
    let first = a.run(&request("flood::1"));
    assert!(
        matches!(first, Ok(Observation::Invalid { .. })),
        "{first:?}"
    );
    // The runner is busy elsewhere (judging, reporting) while the shim floods: give it time to
    // write it all, if the runner takes it.
    let t0 = Instant::now();
    while !flooded.exists() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let grown = rss().saturating_sub(before);
    assert!(
        grown < 128 << 20,
        "the runner holds {} MiB of lines nobody asked for",
        grown >> 20
    );
    assert!(
        !flooded.exists(),
        "the runner read 512 MiB of lines nobody asked for"
    );
    // The next request: the extra line is noticed before it is sent, the shim restarted, and
    // the request answered by the fresh shim.
    let second = a.run(&request("flood::2"));
    assert!(
        matches!(second, Ok(Observation::Invalid { .. })),
        "{second:?}"
    );
}
