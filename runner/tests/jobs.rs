//! `atomcts run --jobs N` (issue 31): the built-in model's cases spread over threads give the
//! results one thread gives, in the same order (every JSON line and the summary compared), for
//! the corpus, generated cases, filters, shards, repeats and failing cases; on an adapter with
//! one instance (a shim), generated cases made on other threads ahead of it give them too, and
//! so does a generated stream that learns from the shim's answers (`--learn`); bad thread
//! counts are refused.

mod common;
use common::{atomcts_env, text, tmp, write};
use std::path::Path;
use std::process::Output;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// `atomcts run ARGS --jobs N --jsonl <d>/<N>.jsonl`: the output and the JSON lines.
fn run_jobs(d: &Path, args: &[&str], jobs: usize) -> (Output, String) {
    let jsonl = d.join(format!("{jobs}.jsonl"));
    let jobs = jobs.to_string();
    let mut all = vec!["run", "--no-progress", "--jobs", &jobs];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--jsonl", jsonl.to_str().unwrap()]);
    let o = atomcts_env(&all, &[]);
    let lines = std::fs::read_to_string(&jsonl).unwrap_or_default();
    (o, lines)
}

/// The run with `jobs` threads against the run with one: same exit code, same summary, same
/// JSON lines in the same order; returns the one-thread run's output.
fn same_as_one_thread(d: &Path, args: &[&str], jobs: &[usize]) -> Output {
    let (one, one_lines) = run_jobs(d, args, 1);
    assert!(
        matches!(one.status.code(), Some(0 | 1)),
        "{args:?}: {}",
        text(&one)
    );
    assert!(!one_lines.is_empty(), "{args:?}: no JSON lines");
    for &n in jobs {
        let (o, lines) = run_jobs(d, args, n);
        assert_eq!(
            o.status.code(),
            one.status.code(),
            "{args:?} --jobs {n}: {}",
            text(&o)
        );
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&one.stdout),
            "{args:?} --jobs {n}: the summary differs"
        );
        let (a, b): (Vec<&str>, Vec<&str>) = (one_lines.lines().collect(), lines.lines().collect());
        assert_eq!(a.len(), b.len(), "{args:?} --jobs {n}: result count");
        if let Some(k) = (0..a.len()).find(|&k| a[k] != b[k]) {
            panic!(
                "{args:?} --jobs {n}: result {k} differs\none thread: {}\n{n} threads: {}",
                a[k], b[k]
            );
        }
    }
    one
}

#[test]
fn the_corpus_on_the_reference_gives_one_threads_results() {
    let d = tmp("corpus");
    let cases = format!("{ROOT}/spec-cases");
    let o = same_as_one_thread(&d, &["--adapter", "reference", "--cases", &cases], &[2, 3]);
    assert!(text(&o).contains(" passed, 0 failed"), "{}", text(&o));
}

#[test]
fn generated_cases_give_one_threads_results() {
    let d = tmp("generated");
    // Enough cases for many blocks per thread, and a last block that is not full.
    same_as_one_thread(
        &d,
        &["--generated", "3001", "--generated-only", "--seed", "7"],
        &[2, 5],
    );
    // A filter and a shard: only some cases run, the others are accounted the same way.
    same_as_one_thread(
        &d,
        &[
            "--generated",
            "2000",
            "--generated-only",
            "--seed",
            "9",
            "--filter",
            "sass",
            "--partition",
            "hash:2/3",
        ],
        &[2],
    );
}

#[test]
fn generated_cases_made_ahead_of_a_shim_give_one_threads_results() {
    let d = tmp("made-ahead");
    // The project's adversary with a planted stale min/max return (semantic level): some
    // cases fail, in their places.
    let shim = format!(
        "cmd:'{}' --planted stale-minmax",
        env!("CARGO_BIN_EXE_atomcts-adversary")
    );
    let o = same_as_one_thread(
        &d,
        &[
            "--adapter",
            &shim,
            "--generated",
            "3001",
            "--generated-only",
            "--seed",
            "11",
        ],
        &[2, 3],
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(!t.contains(" 0 failed") && !t.contains(" 0 passed"), "{t}");
    // A shard and a filter on the same route.
    same_as_one_thread(
        &d,
        &[
            "--adapter",
            &shim,
            "--generated",
            "1500",
            "--generated-only",
            "--seed",
            "12",
            "--filter",
            "msl",
            "--partition",
            "hash:1/2",
        ],
        &[2],
    );
}

/// `N drafts ... passed over` from a run's closing lines.
fn passed_over(t: &str) -> u64 {
    t.lines()
        .find_map(|l| {
            l.strip_prefix("(")?
                .split_once(" drafts of the generated stream passed over")
        })
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("no passed-over line: {t}"))
}

#[test]
fn a_learning_stream_gives_one_threads_results_and_accounts_for_every_draft() {
    let d = tmp("learn");
    // The planted stale min/max return at semantic level: the runner turns away illegal
    // forms, faults and capabilities the shim does not report; some cases fail.
    let shim = format!(
        "cmd:'{}' --planted stale-minmax",
        env!("CARGO_BIN_EXE_atomcts-adversary")
    );
    let n: u64 = 20_000;
    let args = [
        "--adapter",
        &shim,
        "--generated",
        &n.to_string(),
        "--generated-only",
        "--seed",
        "11",
    ];
    let mut learning = args.to_vec();
    learning.push("--learn");
    let o = same_as_one_thread(&d, &learning, &[2, 3]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    // Every draft is a result or passed over.
    let results = std::fs::read_to_string(d.join("1.jsonl")).unwrap();
    let count = |status: &str| {
        results
            .lines()
            .filter(|l| l.contains(&format!("\"status\":\"{status}\"")))
            .count() as u64
    };
    let made = results.lines().count() as u64;
    let skipped = passed_over(&t);
    assert!(skipped > 1000, "{t}");
    assert_eq!(made + skipped, n, "{t}");
    assert!(count("fail") > 0, "the planted bug is still found: {t}");
    let turned_learning = count("not_applicable") + count("skip");
    // Without learning: every draft made, and more of them turned away (learning starts
    // after the first LAG + STEP drafts, a quarter of these).
    let (plain, plain_lines) = run_jobs(&d, &args, 1);
    assert_eq!(plain_lines.lines().count() as u64, n, "{}", text(&plain));
    let turned_plain = plain_lines
        .lines()
        .filter(|l| {
            l.contains("\"status\":\"not_applicable\"") || l.contains("\"status\":\"skip\"")
        })
        .count() as u64;
    assert!(
        turned_learning * 3 < turned_plain * 2,
        "{turned_learning} turned away learning, {turned_plain} not: {t}"
    );
    // A case learning made is the plain stream's case of that number, with its verdict.
    let plain_by_id: std::collections::HashMap<&str, &str> = plain_lines
        .lines()
        .map(|l| {
            (
                l.split("\"id\":\"")
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap(),
                l,
            )
        })
        .collect();
    for l in results.lines() {
        let id = l
            .split("\"id\":\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        let status = |x: &str| {
            x.split("\"status\":\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .to_string()
        };
        assert_eq!(status(l), status(plain_by_id[id]), "{id}");
    }
}

#[test]
fn failing_and_repeated_cases_keep_their_order_and_verdicts() {
    let d = tmp("failing");
    let mut body =
        String::from("dialect = \"sass\"\ncite = \"SASS ATOM, Atomic Operations table\"\n");
    for i in 0..70u32 {
        // Every seventh expectation is wrong: those cases fail, in their places.
        let sum = 3 + i + u32::from(i % 7 == 0);
        body.push_str(&format!(
            "[[case]]\nname = \"add_{i}\"\nasm = \"ATOM.ADD.U32 R0, [R2], R4\"\ngiven = {{ R2 = 0x1000, R4 = {i}, mem = {{ 0x1000 = \"u32:3\" }} }}\nexpect = {{ R0 = 3, mem = {{ 0x1000 = \"u32:{sum}\" }} }}\n"
        ));
    }
    write(&d, "spec-cases/sass/atom/a.toml", &body);
    let cases = d.join("spec-cases");
    let cases = cases.to_str().unwrap();
    let o = same_as_one_thread(&d, &["--cases", cases], &[2, 4]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("60 passed, 10 failed"), "{}", text(&o));
    let o = same_as_one_thread(&d, &["--cases", cases, "--repeat", "3"], &[2]);
    assert!(text(&o).contains("10 failed"), "{}", text(&o));
}

#[test]
fn bad_thread_counts_are_refused() {
    for n in ["0", "65", "-1", "many"] {
        let o = atomcts_env(&["run", "--no-progress", &format!("--jobs={n}")], &[]);
        assert_eq!(o.status.code(), Some(2), "--jobs {n}: {}", text(&o));
        assert!(text(&o).contains("--jobs"), "--jobs {n}: {}", text(&o));
    }
    // `--learn` passes over generated drafts, and a shard would learn from its own.
    for args in [
        &["--learn"][..],
        &["--learn", "--generated", "10", "--partition", "hash:1/2"],
    ] {
        let mut all = vec!["run", "--no-progress"];
        all.extend_from_slice(args);
        let o = atomcts_env(&all, &[]);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains("--learn"), "{args:?}: {}", text(&o));
    }
}
