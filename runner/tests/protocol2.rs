//! Protocol version 2 and the semantic level, against the example shim
//! adapters/shims/mini_ir.py (reads the lowered IR, answers `accesses`): it conforms, a
//! planted bug is caught, and cases it cannot apply to are not applicable with the reason,
//! never failures. Version 1 shims keep working (runner/tests/subprocess.rs). Needs `python3`.

mod common;
use common::{text, tmp, write};
use std::process::{Command, Output};

fn run(bug: &str, cases: &str, extra: &[&str]) -> Output {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let shim = format!("cmd:python3 {root}/adapters/shims/mini_ir.py");
    let cases = format!("{root}/spec-cases/{cases}");
    let mut args = vec![
        "run",
        "--no-progress",
        "--cases",
        &cases,
        "--adapter",
        &shim,
    ];
    args.extend_from_slice(extra);
    Command::new(env!("CARGO_BIN_EXE_atomcts"))
        .args(&args)
        .env("MINI_IR_BUG", bug)
        .output()
        .expect("run atomcts")
}

/// The totals line: passed, failed, not applicable, cases.
fn totals(t: &str) -> (usize, usize, usize, usize) {
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
    // passed, failed, errors, skipped, known, not applicable, cases
    assert_eq!(nums.len(), 7, "{line}");
    assert_eq!(
        nums[0] + nums[1] + nums[2] + nums[3] + nums[4] + nums[5],
        nums[6],
        "{line}"
    );
    (nums[0], nums[1], nums[5], nums[6])
}

#[test]
fn a_semantic_shim_conforms_and_illegal_forms_are_not_applicable() {
    let o = run("", "sass/atom", &["--verbose"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let (pass, fail, na, _) = totals(&t);
    assert!(pass > 50, "{t}");
    assert_eq!(fail, 0, "{t}");
    assert!(na > 0, "{t}");
    // Reasons are given: an illegal form, a fault, and what the shim itself declines.
    assert!(
        t.contains("expects an illegal form (cas_register_pairing)"),
        "{t}"
    );
    assert!(t.contains("expects a fault (misaligned_address)"), "{t}");
    assert!(
        t.contains("mini_ir runs integer add/sub/and/or/xor/exch only"),
        "{t}"
    );
}

#[test]
fn a_planted_bug_in_a_semantic_shim_is_caught() {
    let o = run("xor_as_or", "sass/atom", &[]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    let (_, fail, _, _) = totals(&t);
    assert!(fail > 0, "{t}");
    assert!(t.contains("FAIL sass/atom/"), "{t}");
}

/// The streamed request forms (issue 9: no `Value` tree per message) write exactly the bytes
/// of the `Value` forms, for every case of the corpus that builds, in both dialect-neutral
/// parts (the state and the lowered IR), and the state read back is the state sent.
#[test]
fn streamed_requests_are_the_value_forms_bytes_on_the_corpus() {
    use atomcts_adapters::protocol::lowered::{LoweredOut, lowered_to_json};
    use atomcts_adapters::protocol::{StateOut, state_from_json, state_to_json};
    use atomcts_reference::ir::Lowering;
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../spec-cases");
    let loaded = atomcts::corpus::case::load(std::path::Path::new(root));
    let profile = atomcts_reference::Profile::default();
    let (mut states, mut lowered) = (0, 0);
    for c in &loaded.cases {
        let Ok(st) = atomcts::corpus::state::build_state(c) else {
            continue;
        };
        let tree = state_to_json(&st);
        let streamed = serde_json::to_string(&StateOut(&st)).unwrap();
        assert_eq!(streamed, tree.to_string(), "{}", c.id);
        // The direct writer the requests use (issue 9): the same bytes.
        let mut direct = Vec::new();
        StateOut(&st).write_to(&mut direct);
        assert_eq!(String::from_utf8(direct).unwrap(), streamed, "{}", c.id);
        assert_eq!(state_from_json(&tree).as_ref(), Ok(&st), "{}", c.id);
        states += 1;
        let Ok(p) = atomcts_reference::program::Program::parse(c.dialect, &c.asm) else {
            continue;
        };
        if let Ok(Lowering::Run(l)) = p.lower(&st, &profile) {
            let streamed = serde_json::to_string(&LoweredOut(&l)).unwrap();
            assert_eq!(streamed, lowered_to_json(&l).to_string(), "{}", c.id);
            lowered += 1;
        }
    }
    assert!(
        states > 1000 && lowered > 500,
        "{states} states, {lowered} lowered"
    );
}

/// The sliding window (issue 9): a pipelining shim that dies on its 21st request, with 60
/// requests in one `run_batch` and a window of 8, loses only requests that were in flight (at
/// most the window), each an adapter error; the requests answered before and every request
/// sent after the restart are answered, each with its own state.
#[test]
fn a_sliding_window_loses_only_the_requests_in_flight() {
    use atomcts_adapters::{Observation, Pipelined, Request, SubprocessAdapter};
    let d = tmp("sliding");
    let mark = d.join("crashed");
    let shim = write(
        &d,
        "crashy.py",
        &format!(
            r#"import os, sys
sys.path.insert(0, "{root}/adapters/shims")
import atomcts_shim
seen = [0]
def run(req):
    seen[0] += 1
    if seen[0] == 21 and not os.path.exists("{mark}"):
        open("{mark}", "w").close()
        os._exit(3)
    return {{"outcome": "completed", "state": req["state"]}}
atomcts_shim.serve(run, name="crashy", window=8)
"#,
            root = concat!(env!("CARGO_MANIFEST_DIR"), "/.."),
            mark = mark.display()
        ),
    );
    let profile = atomcts_reference::Profile::default();
    let cases = atomcts::fuzzing::generate::generate(1, 60, &profile).unwrap();
    let states: Vec<_> = cases
        .iter()
        .map(|c| atomcts::corpus::state::item_state(c.item()).unwrap())
        .collect();
    let requests: Vec<Request<'_>> = cases
        .iter()
        .zip(&states)
        .map(|(c, s)| Request {
            id: &c.case.id,
            dialect: c.case.dialect,
            asm: &c.case.asm,
            state: s,
            profile: &profile,
            lowered: None,
        })
        .collect();
    let cmd = format!("python3 {}", shim.display());
    let mut a = SubprocessAdapter::start(&cmd, std::time::Duration::from_secs(30)).unwrap();
    assert_eq!(a.window(), 8);
    let answers = a.run_batch(&requests);
    assert_eq!(answers.len(), 60);
    assert!(mark.exists(), "the shim never crashed");
    let lost: Vec<usize> = (0..60).filter(|i| answers[*i].is_err()).collect();
    assert!(!lost.is_empty() && lost.len() <= 8, "lost {lost:?}");
    // In flight together: within one window of the 21st request.
    assert!(lost.iter().all(|i| (12..=27).contains(i)), "lost {lost:?}");
    for (i, ans) in answers.iter().enumerate() {
        match ans {
            Ok(Observation::Completed(s)) => assert_eq!(s, &states[i], "{i}"),
            Ok(other) => panic!("{i}: {other:?}"),
            Err(e) => {
                let m = e.to_string();
                assert!(
                    m.contains("in flight when the shim failed") || m.contains("exit status 3"),
                    "{i}: {m}"
                );
            }
        }
    }
}

/// The profile sent once (issue 9, PROTOCOL.md "The profile sent once"): a shim that asks for
/// it gets a `profile` message before the first request of each profile (and again after a
/// restart), and requests without a `profile` key; `atomcts_shim.serve` puts the profile back
/// into each request for the shim's function. A shim that does not ask gets the profile in
/// every request, as before.
#[test]
fn the_profile_is_sent_once_per_profile_and_shim_instance() {
    use atomcts_adapters::{Observation, Pipelined, Request, SubprocessAdapter};
    let d = tmp("profile_once");
    let log = d.join("log");
    let mark = d.join("crashed");
    // The raw lines, logged before the helper sees them: `P <name>` for a profile message,
    // `R <profile key present> <profile name the function sees>` for a request.
    let shim = write(
        &d,
        "once.py",
        &format!(
            r#"import json, os, sys
sys.path.insert(0, "{root}/adapters/shims")
import atomcts_shim
ONCE = os.environ.get("ONCE") == "1"
log = open("{log}", "a", buffering=1)
class Tap:
    def __init__(self, f): self.f = f
    def fileno(self): return self.f
seen = [0]
def run(req):
    seen[0] += 1
    if seen[0] == 5 and not os.path.exists("{mark}"):
        open("{mark}", "w").close()
        os._exit(3)
    log.write("R %s\n" % req["profile"]["name"])
    return {{"outcome": "invalid", "reason": req["profile"]["name"]}}
r, w = os.pipe()
if os.fork() == 0:
    # Copies stdin to the helper, logging what the runner sent.
    os.close(r)
    os.close(1)
    for line in sys.stdin.buffer:
        m = json.loads(line)
        if m.get("type") == "profile":
            log.write("P %s\n" % m["profile"]["name"])
        elif m.get("type") == "run":
            log.write("K %s\n" % ("profile" in m))
        elif m.get("type") == "hello" and not ONCE:
            m.pop("profile_once", None)
            line = (json.dumps(m) + "\n").encode()
        os.write(w, line)
    os._exit(0)
os.close(w)
atomcts_shim.serve(run, name="once", window=8, stdin=Tap(r))
"#,
            root = concat!(env!("CARGO_MANIFEST_DIR"), "/.."),
            log = log.display(),
            mark = mark.display(),
        ),
    );
    let default = atomcts_reference::Profile::default();
    let ptx = atomcts_reference::Profile::named("nvidia-ptx").unwrap();
    // 30 requests: the crash (the 5th) loses at most a window (8), so the restarted shim
    // gets the rest of the first batch.
    let cases = atomcts::fuzzing::generate::generate(1, 30, &default).unwrap();
    let states: Vec<_> = cases
        .iter()
        .map(|c| atomcts::corpus::state::item_state(c.item()).unwrap())
        .collect();
    fn requests<'a>(
        cases: &'a [atomcts::corpus::case::GeneratedCase],
        states: &'a [atomcts_reference::state::State],
        p: &'a atomcts_reference::Profile,
    ) -> Vec<Request<'a>> {
        cases
            .iter()
            .zip(states)
            .map(|(c, s)| Request {
                id: &c.case.id,
                dialect: c.case.dialect,
                asm: &c.case.asm,
                state: s,
                profile: p,
                lowered: None,
            })
            .collect()
    }
    for once in ["1", "0"] {
        let _ = std::fs::remove_file(&log);
        let _ = std::fs::remove_file(&mark);
        let cmd = format!("ONCE={once} python3 {}", shim.display());
        let mut a = SubprocessAdapter::start(&cmd, std::time::Duration::from_secs(30)).unwrap();
        // Default (a crash on the 5th request and a restart), then nvidia-ptx, then default.
        let mut answers = a.run_batch(&requests(&cases, &states, &default));
        answers.extend(a.run_batch(&requests(&cases, &states, &ptx)));
        answers.extend(a.run_batch(&requests(&cases, &states, &default)[..2]));
        assert!(mark.exists(), "the shim never crashed");
        let names: Vec<&str> = answers
            .iter()
            .map(|x| match x {
                Ok(Observation::Invalid { reason, .. }) => reason.as_str(),
                Err(_) => "lost",
                Ok(other) => panic!("{other:?}"),
            })
            .collect();
        assert!(names[..30].contains(&"lost"), "{names:?}");
        assert!(
            names[..30].iter().all(|n| ["default", "lost"].contains(n))
                && names[20..30].iter().all(|n| *n == "default")
                && names[30..60].iter().all(|n| *n == "nvidia-ptx")
                && names[60..] == ["default", "default"],
            "{names:?}"
        );
        drop(a);
        let log = std::fs::read_to_string(&log).unwrap();
        let profiles: Vec<&str> = log.lines().filter(|l| l.starts_with("P ")).collect();
        let keys: Vec<&str> = log.lines().filter(|l| l.starts_with("K ")).collect();
        if once == "1" {
            // Once to the first instance, once to the restarted one, then on each change.
            assert_eq!(
                profiles,
                ["P default", "P default", "P nvidia-ptx", "P default"],
                "{log}"
            );
            assert!(keys.iter().all(|k| *k == "K False"), "{log}");
        } else {
            assert!(profiles.is_empty(), "{log}");
            assert!(keys.iter().all(|k| *k == "K True"), "{log}");
        }
    }
}

/// Concurrent cases among pipelined ones (issue 9): `run_cases` keeps the window full but lets
/// a concurrent case run alone, once everything before it is answered. A shim with a window of
/// 16 that runs both kinds (adapters/shims/concurrent_ir.py behind `atomcts_shim.serve`) gives
/// the totals the same shim gives one request at a time.
#[test]
fn concurrent_cases_among_pipelined_ones_give_the_same_totals() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let d = tmp("pipelined_concurrent");
    let shim = write(
        &d,
        "cwin.py",
        &format!(
            r#"import sys
sys.path.insert(0, "{root}/adapters/shims")
import atomcts_shim, concurrent_ir
def handle(req):
    if req.get("type") == "run_concurrent":
        return concurrent_ir.run_concurrent(req)
    return concurrent_ir.run(req)
atomcts_shim.serve(handle, name="cwin", level="semantic", version=2, window=16,
                   capabilities=["concurrent", "cas_loop"])
"#
        ),
    );
    let cases = format!("{root}/spec-cases/sass/atom");
    let mut lines = Vec::new();
    for cmd in [
        format!("cmd:python3 {root}/adapters/shims/concurrent_ir.py"),
        format!("cmd:python3 {}", shim.display()),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_atomcts"))
            .args(["run", "--no-progress", "--cases", &cases, "--adapter", &cmd])
            .output()
            .expect("run atomcts");
        let t = text(&o);
        assert_eq!(o.status.code(), Some(0), "{t}");
        lines.push(t.lines().last().unwrap_or("").to_string());
    }
    let (passed, _, _, cases) = totals(&lines[0]);
    assert!(passed > 100 && cases > passed, "{}", lines[0]);
    assert_eq!(lines[0], lines[1]);
}
