//! Hostile shims against the adapter protocol (issue 27: H2, H3, H4, H7, H10, H18): answers
//! that are short, over-wide or of the wrong type, shims that crash with a request in flight,
//! flood lines after an answer or write a line nobody asked for, and shims that never see a
//! case. None of them is ever a pass. Shims are small Python scripts written per test.

mod common;
use common::{text, tmp, write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
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
    use std::io::Read;
    let mut child = Command::new(env!("CARGO_BIN_EXE_atomcts"))
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
        if t0.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("atomcts {args:?} hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
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
