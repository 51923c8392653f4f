//! Hostile outputs, inputs, merges, signals and messages (issue 27: H9, H12-H15, H17-H19): one
//! or more tests per group, each reproducing the defect as reported. The binary runs as a child
//! process under a time limit far above its cost (a hang guard, never a timing assertion), and
//! every process a test starts is gone when it ends.

mod common;
use common::{finish_guarded, text, tmp, write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Generous: a loaded 2-core CI machine runs these in well under a second each.
const LIMIT: Duration = Duration::from_secs(120);

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_atomcts"))
}

fn spawn(args: &[&str]) -> Child {
    bin()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run atomcts")
}

/// atomcts under the hang guard; panics naming `what` on a hang.
fn atomcts(args: &[&str], what: &str) -> Output {
    finish_guarded(spawn(args), LIMIT).unwrap_or_else(|| panic!("atomcts hung: {what}"))
}

/// Asserts that atomcts exited 2 with `needle` in its output; the output.
fn refused(o: &Output, needle: &str) -> String {
    let t = text(o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains(needle), "no `{needle}` in:\n{t}");
    t
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

const CASE: &str = r#"
[[case]]
name = "add_NAME"
asm = "ATOM.ADD.U32 R0, [R2], R4"
given = { R2 = 0x1000, R4 = 7, mem = { 0x1000 = "u32:3" } }
expect = { R0 = 3, mem = { 0x1000 = "u32:10" } }
"#;

/// A corpus of `n` passing cases in one file: `<d>/spec-cases`.
fn corpus(d: &Path, n: usize) -> PathBuf {
    let mut body = String::from("dialect = \"sass\"\ncite = \"SASS ATOM\"\n");
    for i in 0..n {
        body.push_str(&CASE.replace("NAME", &i.to_string()));
    }
    write(d, "spec-cases/sass/atom/a.toml", &body);
    d.join("spec-cases")
}

fn mkfifo(p: &Path) {
    let st = Command::new("mkfifo").arg(p).status().expect("mkfifo");
    assert!(st.success());
}

/// A run's JSON report (`run --json`) of `n` cases, written to `<d>/<name>`.
fn run_report(d: &Path, cases: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let json = d.join(name);
    let mut args = vec![
        "run",
        "--no-progress",
        "--cases",
        s(cases),
        "--json",
        s(&json),
    ];
    args.extend_from_slice(extra);
    let o = atomcts(&args, "a plain run");
    assert!(json.exists(), "{}", text(&o));
    json
}

// ---- H9: an output that is a FIFO without a reader is refused, never waited on ------------

#[test]
fn h9_fifo_outputs_are_refused_before_any_case() {
    let d = tmp("h9");
    let cases = corpus(&d, 2);
    let fifo = d.join("out.fifo");
    mkfifo(&fifo);
    for flag in ["--jsonl", "--json", "--junit"] {
        let o = atomcts(
            &["run", "--no-progress", "--cases", s(&cases), flag, s(&fifo)],
            &format!("run {flag} FIFO"),
        );
        let t = refused(&o, &format!("{flag} {}: a FIFO", fifo.display()));
        assert!(!t.contains("passed"), "nothing runs: {t}");
    }
    let json = run_report(&d, &cases, "r.json", &[]);
    let o = atomcts(
        &["merge", s(&json), "--json", s(&fifo)],
        "merge --json FIFO",
    );
    refused(&o, "a FIFO");
    // `report --out DIR` with a FIFO in place of one of its files; a directory as --json.
    let out = d.join("conf");
    std::fs::create_dir_all(&out).unwrap();
    mkfifo(&out.join("conformance.md"));
    let o = atomcts(
        &["report", "--from", s(&json), "--out", s(&out)],
        "report --out with a FIFO",
    );
    refused(&o, "conformance.md: a FIFO");
    let o = atomcts(
        &[
            "run",
            "--no-progress",
            "--cases",
            s(&cases),
            "--json",
            s(&d),
        ],
        "run --json DIR",
    );
    refused(&o, "a directory, not a regular file");
}

// ---- H12: merging a legal shard of 2^64 - 1 shards ------------------------------------------

#[test]
fn h12_merge_of_one_shard_in_huge_partition_counts_the_missing() {
    let d = tmp("h12");
    let cases = corpus(&d, 3);
    let n = u64::MAX;
    let json = run_report(
        &d,
        &cases,
        "s1.json",
        &["--partition", &format!("hash:1/{n}")],
    );
    let o = atomcts(&["merge", s(&json)], "merge of hash:1/2^64-1");
    let t = refused(&o, &format!("missing shard(s): hash:2/{n}, hash:3/{n}"));
    assert!(t.contains(&format!("({} of {n} missing)", n - 1)), "{t}");
    assert!(t.len() < 20_000, "a bounded message: {} bytes", t.len());
}

// ---- H13: inputs of any size are bounded and special files refused --------------------------

#[test]
fn h13_inputs_are_bounded_before_reading() {
    let d = tmp("h13");
    // `regress` of a device that never ends.
    let o = atomcts(
        &[
            "regress",
            "/dev/zero",
            "--target",
            "parse_sass",
            "--out",
            s(&d),
        ],
        "regress /dev/zero",
    );
    refused(&o, "/dev/zero: a character device, not a regular file");
    // A report larger than the limit, refused by its size before a byte is read (sparse: no
    // disk used).
    let big = d.join("big.json");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(300 << 20)
        .unwrap();
    for args in [
        vec!["merge", s(&big)],
        vec!["report", "--from", s(&big), "--out", s(&d)],
    ] {
        let o = atomcts(&args, "a 300 MiB report");
        refused(&o, "314572800 bytes, larger than the");
    }
    std::fs::remove_file(&big).unwrap();
    let fifo = d.join("in.fifo");
    mkfifo(&fifo);
    let o = atomcts(&["merge", s(&fifo)], "merge of a FIFO");
    refused(&o, "a FIFO");
}

// ---- H14: `report --from` refuses what `merge` refuses --------------------------------------

#[test]
fn h14_report_refuses_partial_or_repeated_runs() {
    let d = tmp("h14");
    let cases = corpus(&d, 6);
    let whole = run_report(&d, &cases, "whole.json", &[]);
    let out = d.join("conf");
    let report = |files: &[&Path]| {
        let mut args = vec!["report", "--out", s(&out)];
        for f in files {
            args.extend(["--from", s(f)]);
        }
        atomcts(&args, "report --from")
    };
    let o = report(&[&whole]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // One shard of two.
    let s1 = run_report(&d, &cases, "s1.json", &["--partition", "hash:1/2"]);
    let o = report(&[&s1]);
    let t = refused(&o, "missing shard(s): hash:2/2");
    assert!(t.contains("s1.json"), "names the file: {t}");
    // The same run twice.
    let o = report(&[&whole, &whole]);
    let t = refused(&o, "2 unpartitioned reports of one selection");
    assert!(t.contains("whole.json, "), "names the files: {t}");
    // A report whose results were cut (valid JSON, fewer results than its selection).
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&whole).unwrap()).unwrap();
    v["results"].as_array_mut().unwrap().truncate(2);
    let cut = write(&d, "cut.json", &v.to_string());
    let o = report(&[&cut]);
    let t = refused(
        &o,
        "4 of the 6 selected cases are missing from the merged reports",
    );
    assert!(t.contains("cut.json"), "names the file: {t}");
    // `merge` says the same of the same files.
    let o = atomcts(&["merge", s(&cut)], "merge of a cut report");
    refused(&o, "4 of the 6 selected cases are missing");
}

// ---- H15: SIGINT and SIGTERM keep the reports and stop the shim -----------------------------

/// A shim that writes its pid to `pid_file`, answers `unsupported` to the first `answered`
/// requests and never answers the next (it sleeps).
fn stalling_shim(d: &Path, pid_file: &Path, answered: usize, window: Option<usize>) -> String {
    let window = window.map_or(String::new(), |w| format!(", 'window': {w}"));
    let body = format!(
        r#"import json, os, sys, time
open({pid:?}, "w").write(str(os.getpid()))
n = 0
for line in sys.stdin:
    req = json.loads(line)
    if req["type"] == "hello":
        print(json.dumps({{"type": "hello", "protocol": "atomcts-adapter", "version": 1, "name": "stall"{window}}}), flush=True)
        continue
    n += 1
    if n > {answered}:
        time.sleep(1000)
    print(json.dumps({{"id": req["id"], "outcome": "unsupported", "why": "test"}}), flush=True)
"#,
        pid = pid_file.display().to_string()
    );
    let p = write(d, "stall.py", &body);
    format!("cmd:python3 '{}'", p.display())
}

/// Kills the shim whose pid is in the file when dropped (a failing test leaves nothing behind).
struct Reaper(PathBuf);

impl Drop for Reaper {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(&self.0) {
            let _ = Command::new("kill").args(["-9", pid.trim()]).status();
        }
    }
}

/// A child killed when dropped unless taken back to be waited for (a failing test leaves no
/// process behind).
struct KillOnDrop(Option<Child>);

impl KillOnDrop {
    fn id(&self) -> String {
        self.0.as_ref().map_or(0, Child::id).to_string()
    }

    fn take(mut self) -> Child {
        self.0.take().expect("the child")
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Whether process `pid` still runs (a zombie has ended).
fn alive(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Waits until `cond` holds, up to [`LIMIT`].
fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !cond() {
        assert!(t0.elapsed() < LIMIT, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn lines(p: &Path) -> usize {
    std::fs::read_to_string(p).map_or(0, |t| t.lines().count())
}

/// `atomcts run --no-progress ARGS` (a stalling shim's long case deadline added): once its
/// first two results are in `jsonl` and the shim (its pid in `pid_file`) runs, sends `signal`
/// and gives the run's output and the shim's pid.
fn run_and_signal(args: &[&str], jsonl: &Path, pid_file: &Path, signal: &str) -> (Output, String) {
    let mut all = vec!["run", "--no-progress", "--adapter-timeout-ms", "600000"];
    all.extend_from_slice(args);
    let child = KillOnDrop(Some(spawn(&all)));
    // Each result is in the JSON lines as it comes (not in 8 KiB steps).
    wait_for("the first two results in --jsonl", || lines(jsonl) == 2);
    wait_for("the shim's pid", || pid_file.exists());
    let pid = std::fs::read_to_string(pid_file).unwrap();
    assert!(alive(pid.trim()), "the shim runs");
    let st = Command::new("kill")
        .args([&format!("-{signal}"), &child.id()])
        .status()
        .unwrap();
    assert!(st.success());
    let o = finish_guarded(child.take(), LIMIT).expect("the interrupted run did not end");
    (o, pid)
}

/// Runs 6 cases on the stalling shim (2 answered), sends `signal` once the JSON lines of both
/// answers are there, and checks the reports, the exit code and that the shim is gone.
fn interrupted_run(name: &str, signal: &str, code: i32, window: Option<usize>) {
    let d = tmp(name);
    let cases = corpus(&d, 6);
    let pid_file = d.join("shim.pid");
    let _reaper = Reaper(pid_file.clone());
    let shim = stalling_shim(&d, &pid_file, 2, window);
    let (json, junit, jsonl) = (d.join("r.json"), d.join("r.xml"), d.join("r.jsonl"));
    let (o, pid) = run_and_signal(
        &[
            "--cases",
            s(&cases),
            "--adapter",
            &shim,
            "--json",
            s(&json),
            "--junit",
            s(&junit),
            "--jsonl",
            s(&jsonl),
        ],
        &jsonl,
        &pid_file,
        signal,
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(code), "{t}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    let last = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    assert!(
        last.contains(&format!(
            "interrupted by SIG{signal}: 4 selected cases were not run"
        )),
        "closing line: {last}\n{t}"
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("--json written")).unwrap();
    assert_eq!(r["interrupted"]["signal"], format!("SIG{signal}"), "{r}");
    assert_eq!(r["interrupted"]["not_run"], 4, "{r}");
    assert_eq!(r["results"].as_array().unwrap().len(), 2, "{r}");
    let x = std::fs::read_to_string(&junit).expect("--junit written");
    assert!(x.contains(&format!("interrupted by SIG{signal}")), "{x}");
    assert_eq!(lines(&jsonl), 2);
    wait_for("the shim to be stopped", || !alive(pid.trim()));
    // An interrupted run is no whole run.
    let o = atomcts(&["merge", s(&json)], "merge of an interrupted run");
    refused(&o, "the run was interrupted");
}

#[test]
fn h15_sigint_keeps_the_reports_and_stops_the_shim() {
    interrupted_run("h15int", "INT", 130, None);
}

#[test]
fn h15_sigterm_stops_a_pipelined_run_the_same_way() {
    interrupted_run("h15term", "TERM", 143, Some(4));
}

/// H15 on generated cases made ahead of a shim (`--jobs 2`, issue 31) as on one thread: the
/// stalling shim answers 2 of 40 generated cases; SIGINT ends the run with both answers kept,
/// the same accounting of what did not run, and the shim stopped.
#[test]
fn h15_sigint_stops_generated_cases_made_ahead_the_same_way() {
    let mut closing = Vec::new();
    for jobs in ["1", "2"] {
        let d = tmp(&format!("h15gen{jobs}"));
        let pid_file = d.join("shim.pid");
        let _reaper = Reaper(pid_file.clone());
        let shim = stalling_shim(&d, &pid_file, 2, None);
        let (json, jsonl) = (d.join("r.json"), d.join("r.jsonl"));
        let (o, pid) = run_and_signal(
            &[
                "--generated",
                "40",
                "--generated-only",
                "--seed",
                "3",
                "--jobs",
                jobs,
                "--adapter",
                &shim,
                "--json",
                s(&json),
                "--jsonl",
                s(&jsonl),
            ],
            &jsonl,
            &pid_file,
            "INT",
        );
        let t = text(&o);
        assert_eq!(o.status.code(), Some(130), "--jobs {jobs}: {t}");
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).expect("--json written")).unwrap();
        assert_eq!(r["interrupted"]["signal"], "SIGINT", "{r}");
        assert_eq!(r["results"].as_array().unwrap().len(), 2, "{r}");
        assert_eq!(lines(&jsonl), 2);
        wait_for("the shim to be stopped", || !alive(pid.trim()));
        closing.push((
            r["interrupted"].clone(),
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .to_string(),
        ));
    }
    assert!(
        closing[0].1.contains("interrupted by SIGINT"),
        "{closing:?}"
    );
    assert_eq!(closing[0], closing[1], "--jobs 1 against --jobs 2");
}

#[test]
fn h15_sigterm_to_report_reaches_its_run_and_the_shim() {
    let d = tmp("h15report");
    let cases = corpus(&d, 6);
    let pid_file = d.join("shim.pid");
    let _reaper = Reaper(pid_file.clone());
    let shim = stalling_shim(&d, &pid_file, 2, None);
    let out = d.join("conf");
    let child = KillOnDrop(Some(spawn(&[
        "report",
        "--cases",
        s(&cases),
        "--adapter",
        &shim,
        "--out",
        s(&out),
    ])));
    wait_for("the shim's pid", || pid_file.exists());
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let st = Command::new("kill")
        .args(["-TERM", &child.id()])
        .status()
        .unwrap();
    assert!(st.success());
    let o = finish_guarded(child.take(), LIMIT).expect("the interrupted report did not end");
    assert_eq!(o.status.code(), Some(143), "{}", text(&o));
    assert!(text(&o).contains("interrupted by SIGTERM"), "{}", text(&o));
    assert!(!out.join("conformance.md").exists());
    wait_for("the shim to be stopped", || !alive(pid.trim()));
}

// ---- H17: untrusted names are escaped in Markdown ------------------------------------------

#[test]
fn h17_a_hostile_handshake_name_renders_as_text() {
    let d = tmp("h17");
    let cases = corpus(&d, 2);
    let name = "<img src=x onerror=alert(1)>`|*x*";
    let shim = write(
        &d,
        "evil.py",
        &format!(
            r#"import json, sys
for line in sys.stdin:
    req = json.loads(line)
    if req["type"] == "hello":
        print(json.dumps({{"type": "hello", "protocol": "atomcts-adapter", "version": 1, "name": {name:?}, "implementation": "<script>x</script> `v1`"}}), flush=True)
    else:
        print(json.dumps({{"id": req["id"], "outcome": "error", "why": "<b>bold</b> `tick`"}}), flush=True)
"#
        ),
    );
    let json = run_report(
        &d,
        &cases,
        "evil.json",
        &["--adapter", &format!("cmd:python3 '{}'", shim.display())],
    );
    let readme = write(
        &d,
        "README.md",
        "x\n<!-- conformance-summary:begin (generated by tools/regen-conformance.sh; do not edit) -->\n<!-- conformance-summary:end -->\n",
    );
    let out = d.join("conf");
    let o = atomcts(
        &[
            "report",
            "--from",
            s(&json),
            "--out",
            s(&out),
            "--readme",
            s(&readme),
        ],
        "report of a hostile name",
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let md = std::fs::read_to_string(out.join("conformance.md")).unwrap();
    let summary = std::fs::read_to_string(&readme).unwrap();
    for (what, t) in [("conformance.md", &md), ("README block", &summary)] {
        for raw in ["<img", "<script", "<b>", "`|*x*", "alert(1)>`"] {
            assert!(!t.contains(raw), "{what} holds `{raw}`:\n{t}");
        }
        assert!(
            t.contains(r"cmd:&lt;img src=x onerror=alert(1)&gt;\`\|\*x\*"),
            "{what}:\n{t}"
        );
    }
    assert!(md.contains(r"&lt;b&gt;bold&lt;/b&gt; \`tick\`"), "{md}");
}

// ---- H18: messages and outputs that tell the truth ------------------------------------------

#[test]
fn h18_two_outputs_naming_one_file_are_refused() {
    let d = tmp("h18same");
    let cases = corpus(&d, 2);
    let x = d.join("x.json");
    std::os::unix::fs::symlink(&x, d.join("link.json")).unwrap();
    for (a, b) in [
        ("--jsonl", s(&x).to_string()),
        ("--junit", d.join("./x.json").display().to_string()),
        ("--jsonl", d.join("link.json").display().to_string()),
    ] {
        let o = atomcts(
            &[
                "run",
                "--no-progress",
                "--cases",
                s(&cases),
                "--json",
                s(&x),
                a,
                &b,
            ],
            "two outputs, one file",
        );
        let t = refused(&o, "name the same file");
        assert!(!t.contains("passed"), "nothing runs: {t}");
    }
}

#[test]
fn h18_a_jsonl_report_that_could_not_be_written_says_so() {
    let d = tmp("h18jsonl");
    let cases = corpus(&d, 40);
    let jsonl = d.join("r.jsonl");
    // Files of at most one block: the JSON lines fail part way (EFBIG, not SIGXFSZ).
    let script = format!(
        "trap '' XFSZ; ulimit -f 1; exec '{}' run --no-progress --cases '{}' --jsonl '{}'",
        env!("CARGO_BIN_EXE_atomcts"),
        cases.display(),
        jsonl.display()
    );
    let child = Command::new("sh")
        .args(["-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let o = finish_guarded(child, LIMIT).expect("hung");
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    // Complete lines (the failed write may have left part of one).
    let written = std::fs::read_to_string(&jsonl)
        .unwrap()
        .matches('\n')
        .count();
    assert!(written < 40, "the limit cut the JSON lines: {written}");
    assert!(
        t.contains(&format!(
            "error: the --jsonl report {} is incomplete: it holds {written} of the 40 results",
            jsonl.display()
        )),
        "{t}"
    );
}

#[test]
fn h18_a_deep_dotted_header_is_placed_at_its_line() {
    let d = tmp("h18deep");
    let header = vec!["a"; 10_000].join(".");
    let f = write(
        &d,
        "spec-cases/sass/deep.toml",
        &format!("dialect = \"sass\"\ncite = \"x\"\n\n  [{header}]\n"),
    );
    let o = atomcts(&["list", "cases", "--cases", s(&f)], "a deep header");
    refused(&o, "deep.toml:4:4: a dotted key of 10000 parts");
}

#[test]
fn h18_exec_given_errors_name_their_column() {
    let exec = |given: &str| {
        atomcts(
            &[
                "exec",
                "--dialect",
                "sass",
                "--asm",
                "ATOM.ADD.U32 R0, [R2], R4",
                "--given",
                given,
            ],
            "exec",
        )
    };
    refused(
        &exec("{ R2 = 0x1000, R4 = , }"),
        "`{ R2 = 0x1000, R4 = , }`, column 21:",
    );
    refused(&exec("{ R2 = 0x1000, R9 = \"zz\" }"), ", column 16: R9:");
}

// ---- H19: reports do not depend on the host's processor -------------------------------------

#[test]
fn h19_reports_differing_only_in_the_device_name_give_the_same_report() {
    let d = tmp("h19");
    let cases = corpus(&d, 2);
    let json = run_report(&d, &cases, "r.json", &[]);
    let base: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let mut outs = Vec::new();
    for (i, device) in [
        "pthread-skylake-avx512-AMD EPYC",
        "Intel(R) Xeon(R) Processor",
    ]
    .iter()
    .enumerate()
    {
        let mut r = base.clone();
        r["adapter"] = "opencl:pocl".into();
        r["device"] = (*device).into();
        let res = &mut r["results"][0];
        res["status"] = "not_applicable".into();
        res["findings"] = serde_json::json!([{
            "location": "adapter", "expected": "", "observed": "",
            "note": format!("a SIMD-group shuffle: {device} does not report cl_khr_subgroup_shuffle")
        }]);
        let f = write(&d, &format!("host{i}.json"), &r.to_string());
        let out = d.join(format!("conf{i}"));
        let o = atomcts(&["report", "--from", s(&f), "--out", s(&out)], "report");
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        outs.push(out);
    }
    for name in ["conformance.json", "conformance.md", "conformance.html"] {
        let a = std::fs::read_to_string(outs[0].join(name)).unwrap();
        let b = std::fs::read_to_string(outs[1].join(name)).unwrap();
        assert_eq!(a, b, "{name} depends on the device name");
        assert!(!a.contains("EPYC"), "{a}");
        // The Markdown lists failures only; the other two hold the reason.
        assert!(
            name.ends_with(".md") || a.contains("the device does not report"),
            "{a}"
        );
    }
}
