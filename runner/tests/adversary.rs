//! The project's own adversary (issue 27): every lie of `atomcts::adversary::LIES` is told to
//! `atomcts run`, and the runner must make of it what the lie's `Expect` says: above all, a case
//! the adversary lied on is never a pass. Every run must also account for every case exactly
//! once, hold its memory under a bound (`ulimit -v`), and leave no process behind.
//!
//! By default the lies are told on a slice of the corpus that holds every kind of answer
//! (completed, fault, invalid, concurrent, loops, encodings) with the debug binaries. CI also
//! runs `every_lie_over_the_whole_corpus` (ignored by default) against the release build:
//! `ATOMCTS_BIN_DIR=target/release cargo test -p atomcts --test adversary -- --ignored`.

mod common;
use atomcts::adversary::{Expect, Hello, LIES, Lie};
use common::{pid_alive, text, tmp};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The binaries: those in `ATOMCTS_BIN_DIR` (a release build; relative to the workspace
/// root) or this build's.
fn bins() -> (PathBuf, PathBuf) {
    match std::env::var_os("ATOMCTS_BIN_DIR") {
        Some(d) => {
            // Relative to the workspace root (tests run in runner/).
            let d = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join(d);
            (d.join("atomcts"), d.join("atomcts-adversary"))
        }
        None => (
            PathBuf::from(env!("CARGO_BIN_EXE_atomcts")),
            PathBuf::from(env!("CARGO_BIN_EXE_atomcts-adversary")),
        ),
    }
}

fn corpus() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/../spec-cases").to_string()
}

/// A slice of the corpus with every kind of answer: concurrent cases (compare-exchange, loops,
/// mixed widths; the cheap ones: the judge runs in a debug build here), stated encodings,
/// faults, out-of-range accesses, rejections, SIMD-group shuffles, compare-exchange.
const SLICE: &[&str] = &[
    "id:msl/atomic/concurrent::compare_exchange_against_add",
    "id:msl/atomic/concurrent::compare_exchange_loop_against_add",
    "id:sass/atom/concurrent::cas_loop_against_add",
    "id:sass/atom/concurrent::exch_against_add_returns_two_by_two",
    "id:visa/dword_atomic/concurrent::add16_beside_add32",
    "encoding",
    "sass/atom/faults",
    "visa/dword_atomic/out_of_bounds",
    "sass/atom/illegal_forms",
    "sass/atom/inc_dec",
    "msl/simd/shuffle_xor",
    "msl/atomic/compare_exchange_weak",
    "visa/scatter4/channels",
];

/// The most virtual memory a run may take (KiB): far above what the corpus needs, far below
/// what an unbounded queue of a flooding shim's lines takes.
const MEMORY_KIB: u64 = 4 << 20;

/// What one run gave.
#[derive(Clone)]
struct Run {
    rc: i32,
    /// Each case's status in the JSON report.
    statuses: BTreeMap<String, String>,
    /// How many results the report holds (each id once: checked against `statuses`).
    results: usize,
    /// The cases the adversary lied on.
    lied: BTreeSet<String>,
    /// Every process the adversary ran as.
    pids: Vec<u32>,
    output: String,
}

/// Whether `pid` is still alive 5 s after the run ended: a process killed with its group may
/// take a moment to die after the runner has exited (SIGKILL is delivered asynchronously), one
/// left behind lives on.
fn outlived(pid: u32) -> bool {
    let t0 = Instant::now();
    while pid_alive(pid) {
        if t0.elapsed() > std::time::Duration::from_secs(5) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

/// The adapter deadline for a lie: short where the lie is a stall (so the run ends soon), long
/// enough elsewhere that a loaded machine never turns an honest answer into a timeout.
fn timeout_ms(l: &Lie) -> &'static str {
    match l.name {
        "stall" | "slow-drip" | "huge-line" => "1000",
        _ => "20000",
    }
}

/// `atomcts run` of `filters` (empty: the whole corpus) with the adversary telling `lie`.
fn run_lie(l: &Lie, filters: &[&str], dir: &Path) -> Run {
    let log = dir.join(format!("{}.log", l.name));
    let json = dir.join(format!("{}.json", l.name));
    let _ = std::fs::remove_file(&log);
    let _ = std::fs::remove_file(&json);
    let mut a = args(&["run", "--no-progress", "--cases", &corpus()]);
    a.extend(["--adapter-timeout-ms".into(), timeout_ms(l).into()]);
    a.extend(["--json".into(), json.display().to_string()]);
    a.extend(["--adapter".into(), adapter(l.name)]);
    for f in filters {
        a.extend(["--filter".into(), f.to_string()]);
    }
    let (rc, output) = atomcts(&a, &[("ATOMCTS_ADVERSARY_LOG", &log)]);
    // The closing line (`N passed, ...`), or the last line when there is none.
    let tail = output
        .lines()
        .rev()
        .find(|l| l.contains(" passed, "))
        .or(output.lines().last())
        .unwrap_or("")
        .to_string();
    assert!(
        rc >= 0,
        "lie {}: atomcts ended by a signal (the memory bound or the hang guard): {tail}",
        l.name
    );
    let report: serde_json::Value = serde_json::from_slice(
        &std::fs::read(&json)
            .unwrap_or_else(|e| panic!("lie {}: no JSON report ({e}): {tail}", l.name)),
    )
    .unwrap_or_else(|e| panic!("lie {}: the JSON report does not parse ({e})", l.name));
    let results = report["results"].as_array().expect("results");
    let statuses: BTreeMap<String, String> = results
        .iter()
        .map(|r| {
            (
                r["id"].as_str().expect("id").to_string(),
                r["status"].as_str().expect("status").to_string(),
            )
        })
        .collect();
    let (mut lied, mut pids) = (BTreeSet::new(), Vec::new());
    for line in std::fs::read_to_string(&log).unwrap_or_default().lines() {
        if let Some(id) = line.strip_prefix("lied ") {
            lied.insert(id.to_string());
        } else if let Some(p) = line.strip_prefix("pid ") {
            pids.push(p.parse().expect("pid"));
        }
    }
    Run {
        rc,
        results: results.len(),
        statuses,
        lied,
        pids,
        output: tail,
    }
}

/// The statuses an honest adversary gets with the handshake `hello` (the baseline of the
/// innocent lies), per filter set.
fn honest(hello: Hello, filters: &[&str], dir: &Path) -> Run {
    let name = if hello == Hello::Semantic {
        "honest-semantic"
    } else {
        "honest"
    };
    run_lie(
        atomcts::adversary::find(name).expect("honest"),
        filters,
        dir,
    )
}

/// Checks one lie's run against its expectation; `Err` says what went wrong.
fn judge(l: &Lie, r: &Run, honest: &Run) -> Result<(), String> {
    let name = l.name;
    // Accounting: every case of the selection once, whatever the adapter did.
    if r.results != r.statuses.len() {
        return Err(format!("{name}: a case is reported twice"));
    }
    let want: BTreeSet<_> = honest.statuses.keys().collect();
    let got: BTreeSet<_> = r.statuses.keys().collect();
    if want != got {
        return Err(format!(
            "{name}: the report does not hold exactly the selected cases ({} of {})",
            got.len(),
            want.len()
        ));
    }
    if let Some(p) = r.pids.iter().find(|p| outlived(**p)) {
        return Err(format!(
            "{name}: the adversary's process {p} outlived the run"
        ));
    }
    if r.pids.is_empty() {
        return Err(format!("{name}: the adversary never ran"));
    }
    let never = |ok: &[&str]| -> Result<(), String> {
        match r.statuses.iter().find(|(_, s)| !ok.contains(&s.as_str())) {
            Some((id, s)) => Err(format!("{name}: case {id} is {s}")),
            None => Ok(()),
        }
    };
    match l.expect {
        Expect::NotPass => {
            if r.lied.is_empty() {
                return Err(format!("{name}: no lie was told on this selection"));
            }
            for id in &r.lied {
                let s = r.statuses.get(id).map_or("absent", String::as_str);
                if !matches!(s, "fail" | "error") {
                    return Err(format!("{name}: case {id}, lied on, is {s}"));
                }
            }
            if r.rc == 0 {
                return Err(format!("{name}: exit 0 after lies"));
            }
        }
        Expect::NothingChecked => {
            never(&["skip", "not_applicable"])?;
            if r.rc != 2 {
                return Err(format!(
                    "{name}: exit {} for a run that checked nothing",
                    r.rc
                ));
            }
        }
        Expect::AllErrors => {
            never(&["error", "not_applicable"])?;
            if r.rc != 2 {
                return Err(format!("{name}: exit {} for a run of adapter errors", r.rc));
            }
        }
        Expect::Innocent => {
            if let Some((id, s)) = r
                .statuses
                .iter()
                .find(|(id, s)| honest.statuses.get(*id) != Some(s))
            {
                return Err(format!(
                    "{name}: case {id} is {s}, {} when the adversary is honest",
                    honest.statuses[id]
                ));
            }
            if r.rc != honest.rc {
                return Err(format!("{name}: exit {}, {} when honest", r.rc, honest.rc));
            }
        }
        Expect::Accounted => {}
    }
    Ok(())
}

/// Tells every lie of `expects` on `filters`, and fails with every lie the runner fell for.
fn tell_lies(expects: &[Expect], filters: &[&str], tag: &str) {
    let dir = tmp(tag);
    let (honest_text, honest_semantic) = if filters == SLICE {
        // Shared by the tests of the slice (computed once).
        static SLICE_HONEST: std::sync::OnceLock<(Run, Run)> = std::sync::OnceLock::new();
        let (t, s) = SLICE_HONEST.get_or_init(|| {
            let dir = tmp("honest");
            (
                honest(Hello::Text, SLICE, &dir),
                honest(Hello::Semantic, SLICE, &dir),
            )
        });
        (t.clone(), s.clone())
    } else {
        (
            honest(Hello::Text, filters, &dir),
            honest(Hello::Semantic, filters, &dir),
        )
    };
    assert!(
        honest_text.statuses.values().any(|s| s == "pass") && honest_text.rc == 0,
        "the honest adversary must conform: exit {}: {}",
        honest_text.rc,
        honest_text.output
    );
    let mut wrong = Vec::new();
    for l in LIES.iter().filter(|l| expects.contains(&l.expect)) {
        let r = run_lie(l, filters, &dir);
        let base = if l.hello == Hello::Semantic {
            &honest_semantic
        } else {
            &honest_text
        };
        let verdict = judge(l, &r, base);
        // The score table of docs/corpus-strength.md (`-- --nocapture`).
        let mut of_lied = BTreeMap::<&str, usize>::new();
        for id in &r.lied {
            *of_lied
                .entry(r.statuses.get(id).map_or("absent", String::as_str))
                .or_default() += 1;
        }
        eprintln!(
            "| {} | {:?} | {} | {} | {:?} | {} | {} |",
            l.name,
            l.expect,
            r.statuses.len(),
            r.lied.len(),
            of_lied,
            r.rc,
            if verdict.is_ok() { "held" } else { "FELL" }
        );
        if let Err(e) = verdict {
            wrong.push(format!("{e} (exit {}: {})", r.rc, r.output));
        }
    }
    assert!(
        wrong.is_empty(),
        "the runner fell for:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn lies_about_answers_are_never_passes() {
    tell_lies(&[Expect::NotPass], SLICE, "notpass");
}

#[test]
fn shims_that_check_nothing_or_only_fail_never_pass_a_run() {
    tell_lies(
        &[Expect::NothingChecked, Expect::AllErrors],
        SLICE,
        "nothing",
    );
}

#[test]
fn lines_nobody_asked_for_cost_no_innocent_case() {
    tell_lies(&[Expect::Innocent, Expect::Accounted], SLICE, "innocent");
}

/// Every lie over the whole corpus (CI, against the release build; about 3 minutes there).
#[test]
#[ignore = "the whole corpus per lie: .ci/run runs it against the release build"]
fn every_lie_over_the_whole_corpus() {
    tell_lies(
        &[
            Expect::NotPass,
            Expect::NothingChecked,
            Expect::AllErrors,
            Expect::Innocent,
            Expect::Accounted,
        ],
        &[],
        "whole",
    );
}

/// `atomcts ARGS` (the binaries of [`bins`]) under the memory bound, with a hang guard far
/// above the expected cost (never a timing assertion): exit code and output.
fn atomcts(args: &[String], env: &[(&str, &Path)]) -> (i32, String) {
    let quote = |a: &str| format!("'{}'", a.replace('\'', r"'\''"));
    let quoted: Vec<String> = args.iter().map(|a| quote(a)).collect();
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v {MEMORY_KIB}; exec timeout -s KILL 900 {} {}",
            quote(&bins().0.display().to_string()),
            quoted.join(" ")
        ))
        .envs(env.iter().map(|(k, v)| (*k, *v)))
        .output()
        .expect("run atomcts");
    (out.status.code().unwrap_or(-1), text(&out))
}

fn adapter(lie: &str) -> String {
    format!("cmd:'{}' {lie}", bins().1.display())
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// `atomcts fuzz` over generated cases: a lying adapter never gives a campaign that exits 0,
/// one that checks nothing exits 2, and a campaign of two adapters that both fail is no
/// agreement.
#[test]
fn fuzz_never_passes_a_lie() {
    let dir = tmp("fuzz");
    let log = dir.join("fuzz.log");
    let fuzz = |adapter_lie: &str, against: Option<&str>| {
        let mut a = args(&["fuzz", "--no-progress", "--cases", "120", "--seed", "7"]);
        a.extend(["--out".into(), dir.join("findings").display().to_string()]);
        a.extend(["--adapter".into(), adapter(adapter_lie)]);
        if let Some(b) = against {
            a.extend(["--against".into(), adapter(b)]);
        }
        let _ = std::fs::remove_file(&log);
        let (rc, text) = atomcts(&a, &[("ATOMCTS_ADVERSARY_LOG", &log)]);
        let pids: Vec<u32> = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.strip_prefix("pid ")?.parse().ok())
            .collect();
        assert!(
            !pids.is_empty(),
            "{adapter_lie}: the adversary never ran: {text}"
        );
        assert!(
            pids.iter().all(|p| !outlived(*p)),
            "{adapter_lie}: a process outlived the campaign"
        );
        (rc, text)
    };
    let (rc, text) = fuzz("honest", None);
    assert_eq!(rc, 0, "the honest adversary conforms: {text}");
    let mut wrong = Vec::new();
    for lie in [
        "garbage",
        "wide-reg",
        "reg-type",
        "mem-long",
        "returned-wide",
        "crash-in-flight",
    ] {
        let (rc, text) = fuzz(lie, None);
        if rc == 0 {
            wrong.push(format!(
                "{lie}: exit 0: {}",
                text.lines().last().unwrap_or("")
            ));
        }
    }
    for lie in ["error-all", "unsupported-all", "exit-after-hello"] {
        let (rc, text) = fuzz(lie, None);
        if rc != 2 {
            wrong.push(format!(
                "{lie}: exit {rc}: {}",
                text.lines().last().unwrap_or("")
            ));
        }
    }
    for (a, b) in [
        ("error-all", "error-all"),
        ("exit-after-hello", "crash-in-flight"),
    ] {
        let (rc, text) = fuzz(a, Some(b));
        if rc != 2 {
            wrong.push(format!(
                "{a} against {b}: exit {rc}: {}",
                text.lines().last().unwrap_or("")
            ));
        }
    }
    let (rc, text) = fuzz("honest", Some("wide-reg"));
    if rc == 0 {
        wrong.push(format!("honest against wide-reg: exit 0: {text}"));
    }
    assert!(wrong.is_empty(), "fuzz fell for:\n{}", wrong.join("\n"));
}

/// `run --generated N --learn` (the stream learns from the adapter's answers): a case lied on
/// is never a pass, every draft is a result or counted as passed over, and an adapter that
/// answers everything not applicable checks nothing (exit 2) however much is passed over.
#[test]
fn a_learning_stream_never_passes_a_lie() {
    let dir = tmp("learn");
    let n: u64 = 6000;
    let run = |lie: &str| {
        let (log, jsonl) = (
            dir.join(format!("{lie}.log")),
            dir.join(format!("{lie}.jsonl")),
        );
        let _ = std::fs::remove_file(&log);
        let mut a = args(&["run", "--no-progress", "--generated-only", "--learn"]);
        a.extend([
            "--generated".into(),
            n.to_string(),
            "--seed".into(),
            "4".into(),
        ]);
        a.extend(["--jsonl".into(), jsonl.display().to_string()]);
        a.extend(["--adapter".into(), adapter(lie)]);
        let (rc, text) = atomcts(&a, &[("ATOMCTS_ADVERSARY_LOG", &log)]);
        let statuses: BTreeMap<String, String> = std::fs::read_to_string(&jsonl)
            .unwrap_or_default()
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
                (
                    v["id"].as_str().expect("id").into(),
                    v["status"].as_str().expect("status").into(),
                )
            })
            .collect();
        let lied: Vec<String> = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| Some(l.strip_prefix("lied ")?.to_string()))
            .collect();
        let passed_over: u64 = text
            .lines()
            .find_map(|l| {
                l.strip_prefix("(")?
                    .split_once(" drafts of the generated stream")?
                    .0
                    .parse()
                    .ok()
            })
            .unwrap_or(0);
        assert_eq!(
            statuses.len() as u64 + passed_over,
            n,
            "{lie}: every draft is a result or passed over: {text}"
        );
        (rc, statuses, lied, passed_over, text)
    };
    let mut wrong = Vec::new();
    for lie in [
        "reorder",
        "wide-reg",
        "mem-moved",
        "returned-short",
        "fault-class",
    ] {
        let (rc, statuses, lied, _, text) = run(lie);
        if lied.is_empty() {
            wrong.push(format!("{lie}: no lie was told"));
        }
        if let Some(id) = lied.iter().find(|id| {
            !matches!(
                statuses.get(*id).map(String::as_str),
                Some("fail" | "error")
            )
        }) {
            wrong.push(format!(
                "{lie}: case {id}, lied on, is {:?}",
                statuses.get(id)
            ));
        }
        if rc == 0 {
            wrong.push(format!(
                "{lie}: exit 0: {}",
                text.lines().last().unwrap_or("")
            ));
        }
    }
    let (rc, statuses, _, passed_over, text) = run("not-applicable-all");
    if rc != 2 || statuses.values().any(|s| s != "not_applicable") || passed_over < 1000 {
        wrong.push(format!(
            "not-applicable-all: exit {rc}, {passed_over} passed over: {}",
            text.lines().last().unwrap_or("")
        ));
    }
    assert!(
        wrong.is_empty(),
        "the learning stream fell for:\n{}",
        wrong.join("\n")
    );
}

/// `merge` and `report --from` refuse shards that do not make up one run: one shard alone, a
/// shard twice, shards of two selections, a truncated or edited shard (a result left out or
/// twice, a malformed count of drafts passed over), an absurd partition, inputs that are not
/// reports (`/dev/zero`); `regress` refuses what is not an artifact.
#[test]
fn merge_and_report_refuse_lying_inputs() {
    let dir = tmp("merge");
    let shard = |k: u32, filter: &str, name: &str| {
        let p = dir.join(name);
        let (rc, text) = atomcts(
            &args(&[
                "run",
                "--no-progress",
                "--cases",
                &corpus(),
                "--filter",
                filter,
                "--partition",
                &format!("hash:{k}/2"),
                "--json",
                &p.display().to_string(),
            ]),
            &[],
        );
        assert!(rc == 0, "shard {name}: exit {rc}: {text}");
        p
    };
    let one = shard(1, "sass/atom/inc_dec", "one.json");
    let two = shard(2, "sass/atom/inc_dec", "two.json");
    let other = shard(2, "visa/dword_atomic/add_sub", "other.json");
    let text = std::fs::read_to_string(&one).unwrap();
    let shard: serde_json::Value = serde_json::from_str(&text).unwrap();
    let results = shard["results"].as_array().unwrap();
    assert!(results.len() >= 2, "the shard holds too few cases to edit");
    let edit = |f: &dyn Fn(&mut Vec<serde_json::Value>)| {
        let mut v = shard.clone();
        f(v["results"].as_array_mut().unwrap());
        v
    };
    let dropped = edit(&|r| {
        r.pop();
    });
    let doubled = edit(&|r| r.push(r[0].clone()));
    let write = |name: &str, body: &str| {
        let p = dir.join(name);
        std::fs::write(&p, body).unwrap();
        p.display().to_string()
    };
    // A learning run's count of drafts passed over, in shapes no report has.
    let passed_over = |v: serde_json::Value| {
        let mut r = shard.clone();
        r["passed_over"] = v;
        r.to_string()
    };
    let bad_count = write(
        "passed-over-text.json",
        &passed_over(serde_json::json!({ "drafts": "many", "shapes": 1 })),
    );
    let bare_count = write("passed-over-bare.json", &passed_over(serde_json::json!(12)));
    let truncated = write("truncated.json", &text[..text.len() / 2]);
    let dropped = write("dropped.json", &dropped.to_string());
    let doubled = write("doubled.json", &doubled.to_string());
    let absurd = {
        let p = dir.join("absurd.json");
        let (rc, t) = atomcts(
            &args(&[
                "run",
                "--no-progress",
                "--cases",
                &corpus(),
                "--filter",
                "sass/atom/inc_dec",
                "--partition",
                "hash:1/18446744073709551615",
                "--json",
                &p.display().to_string(),
            ]),
            &[],
        );
        assert!(rc == 0 || rc == 2, "absurd shard: exit {rc}: {t}");
        p.display().to_string()
    };
    let [one, two, other] = [one, two, other].map(|p| p.display().to_string());
    let lies: Vec<(&str, Vec<String>)> = vec![
        ("one shard alone", vec![one.clone()]),
        ("a shard twice", vec![one.clone(), one.clone(), two.clone()]),
        ("shards of two selections", vec![one.clone(), other.clone()]),
        ("a truncated shard", vec![truncated, two.clone()]),
        ("a shard with a result left out", vec![dropped, two.clone()]),
        ("a shard with a result twice", vec![doubled, two.clone()]),
        ("one shard of 2^64-1", vec![absurd]),
        ("/dev/zero", vec!["/dev/zero".into(), two.clone()]),
        ("drafts passed over as text", vec![bad_count, two.clone()]),
        (
            "drafts passed over as a bare number",
            vec![bare_count, two.clone()],
        ),
    ];
    let mut wrong = Vec::new();
    for (what, files) in &lies {
        let mut m = args(&["merge"]);
        m.extend(files.iter().cloned());
        let (rc, text) = atomcts(&m, &[]);
        if rc != 2 {
            wrong.push(format!(
                "merge of {what}: exit {rc}: {}",
                text.lines().last().unwrap_or("")
            ));
        }
        let mut r = args(&["report", "--out", &dir.join("report").display().to_string()]);
        for f in files {
            r.extend(["--from".into(), f.clone()]);
        }
        let (rc, text) = atomcts(&r, &[]);
        if rc != 2 {
            wrong.push(format!(
                "report --from {what}: exit {rc}: {}",
                text.lines().last().unwrap_or("")
            ));
        }
    }
    let (rc, text) = atomcts(&args(&["merge", &one, &two]), &[]);
    assert_eq!(rc, 0, "the two honest shards merge: {text}");
    let (rc, text) = atomcts(
        &args(&["regress", "/dev/zero", "--target", "diff_fast_reference"]),
        &[],
    );
    if rc != 2 {
        wrong.push(format!(
            "regress /dev/zero: exit {rc}: {}",
            text.lines().last().unwrap_or("")
        ));
    }
    assert!(
        wrong.is_empty(),
        "merge and report fell for:\n{}",
        wrong.join("\n")
    );
}
