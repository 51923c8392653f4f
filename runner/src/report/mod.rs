//! Reports for people (text) and programs (JSON, JUnit XML); merging shards is `crate::report::merge`.
//!
//! The report layer: imports only from `run` and `corpus` below it (`runner/tests/layers.rs`).

pub mod conformance;
pub mod evidence;
pub mod listing;
pub mod markup;
pub mod merge;
pub mod output;
pub mod publish;
pub mod reproducers;
pub mod session;

use crate::exit::{EXIT_ERROR, EXIT_NONCONFORMANCE, EXIT_OK};
use crate::run::results::{CaseResult, FindingOut, Status};
use atomcts_adapters::text::{clip, escape_controls};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Version of the JSON report format. Version 2 adds `partition` and `corpus`, which `merge`
/// needs to prove that the shards cover the corpus exactly once.
pub const REPORT_VERSION: u32 = 2;

/// Which cases a run selected: the same for every shard of one corpus, filter and generator
/// settings, whatever the partition.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct CorpusId {
    /// Cases selected before partitioning.
    pub selected: usize,
    /// Digest (hex) of the selected case ids: the sum modulo 2^64 of their FNV-1a hashes
    /// (independent of order, so a streamed run computes it as it goes).
    pub digest: String,
}

/// A run's results, as written by `--json` and read by `atomcts merge`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    /// Format version.
    pub version: u32,
    /// Adapter name.
    pub adapter: String,
    /// Profile name.
    pub profile: String,
    /// The implementation and its versions in one line, as the adapter describes itself (an
    /// OpenCL driver's platform and device versions, a shim's handshake `implementation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub implementation: Option<String>,
    /// `text` or `semantic` (what the adapter consumes), when the run recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
    /// The shard, `hash:K/N`, if the run was partitioned.
    #[serde(default)]
    pub partition: Option<String>,
    /// The selection the run (or every shard of it) came from.
    #[serde(default)]
    pub corpus: CorpusId,
    /// Errors outside any case (files that do not load), as `file:line:col: message`.
    pub load_errors: Vec<String>,
    /// Per-case results: every one, except in a run of more than [`KEEP_PASSES_UP_TO`] cases
    /// (no passes kept) or beyond [`MAX_KEPT`] results (issue 9): those are counted in
    /// `omitted` and written only to the JSON-lines report (`--jsonl`).
    pub results: Vec<CaseResult>,
    /// Results not kept in `results`, counted per `"<dialect> <op>"`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub omitted: BTreeMap<String, Counts>,
    /// The device the implementation ran on, as the host names it (an OpenCL or Vulkan
    /// device's name names the CPU): what ran where, kept out of the conformance report, which
    /// reads it only to keep it out of reasons (issue 27, H19).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// The `--jsonl` report, when the run wrote one: whether it holds every result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jsonl: Option<Jsonl>,
    /// Set when a signal stopped the run before every selected case ran (issue 27, H15): the
    /// report holds what ran, and `merge` and `report --from` refuse it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<Interrupted>,
    /// `run --generated N --learn`: the drafts of the generated stream passed over, never made
    /// (they have no result; with the results they account for the N drafts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed_over: Option<PassedOver>,
}

/// Drafts a learning generated stream passed over (`run --generated N --learn`).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct PassedOver {
    /// Drafts passed over, never made.
    pub drafts: u64,
    /// Shapes passed over when the run ended (at each level: dialect, instruction, text).
    pub shapes: usize,
}

/// A run stopped by a signal.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Interrupted {
    /// `SIGINT` or `SIGTERM`.
    pub signal: String,
    /// Selected cases (of this shard) that were not run.
    pub not_run: u64,
    /// Generated cases (`--generated N`, before partitioning) not generated when it stopped.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_generated: u64,
}

impl Interrupted {
    /// `interrupted by SIGINT: N selected cases were not run`, and the generated cases not
    /// generated, if any.
    pub fn summary(&self) -> String {
        format!(
            "interrupted by {}: {} selected cases were not run{}",
            safe(&self.signal),
            self.not_run,
            if self.not_generated > 0 {
                format!(" ({} generated cases not generated)", self.not_generated)
            } else {
                String::new()
            }
        )
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The `--jsonl` report of a run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Jsonl {
    /// Its path, as given.
    pub path: String,
    /// Results written to it.
    pub written: u64,
    /// Why it does not hold every result: the write that failed (the run exits 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A run of at most this many cases keeps every result for its reports. A larger one keeps no
/// passing results and at most [`MAX_KEPT`] others: the rest are counted per op (and streamed
/// to `--jsonl`), so memory does not grow with the number of cases (issue 9).
pub const KEEP_PASSES_UP_TO: u64 = 20_000;

/// The most results other than passes a run of more than [`KEEP_PASSES_UP_TO`] cases keeps in
/// memory for its text, JSON and JUnit reports.
pub const MAX_KEPT: usize = 10_000;

/// Collects a run's results as they come (issue 9): applies the baseline, writes each result
/// as one JSON line, keeps what the reports need (see [`Report::results`]) and counts the rest.
pub struct Collector {
    known: std::collections::BTreeSet<String>,
    flaky: std::collections::BTreeSet<String>,
    keep_passes: bool,
    results: Vec<CaseResult>,
    omitted: BTreeMap<String, Counts>,
    jsonl: Option<(String, std::io::BufWriter<std::fs::File>)>,
    jsonl_error: Option<String>,
    /// Results written to `jsonl`.
    jsonl_written: u64,
    /// Scratch for the key of an omitted result.
    key: String,
}

impl Collector {
    /// A collector for a run of about `expected` cases, with the baseline's ids, writing JSON
    /// lines to `jsonl` (its name for messages, and the file), each flushed as it is written so
    /// that a reader sees every result as it comes (issue 27, H15).
    pub fn new(
        known: std::collections::BTreeSet<String>,
        expected: u64,
        jsonl: Option<(String, std::fs::File)>,
    ) -> Collector {
        Collector {
            known,
            flaky: std::collections::BTreeSet::new(),
            keep_passes: expected <= KEEP_PASSES_UP_TO,
            results: Vec::new(),
            omitted: BTreeMap::new(),
            jsonl: jsonl.map(|(n, f)| (n, std::io::BufWriter::new(f))),
            jsonl_error: None,
            jsonl_written: 0,
            key: String::new(),
        }
    }

    /// The baseline's flaky entries (issue 12): a listed case may pass or fail.
    pub fn with_flaky(mut self, flaky: std::collections::BTreeSet<String>) -> Collector {
        self.flaky = flaky;
        self
    }

    /// Takes one result.
    pub fn push(&mut self, r: CaseResult) {
        self.push_with(r, |_| {});
    }

    /// Takes one result, calling `complete` on it first if it is written or kept (issue 9: a
    /// result that is only counted needs its id, dialect, op and status alone; see
    /// [`crate::run::run_cases_lean`]).
    pub fn push_with(&mut self, mut r: CaseResult, complete: impl FnOnce(&mut CaseResult)) {
        use std::io::Write as _;
        if self.known.contains(&r.id) {
            r.status = match r.status {
                Status::Fail | Status::Undecided => Status::KnownFailure,
                Status::Pass => Status::BaselinePasses,
                s => s,
            };
        }
        if self.flaky.contains(&r.id) {
            mark_flaky(&mut r);
        }
        let keep = self.keep_passes || (r.status != Status::Pass && self.results.len() < MAX_KEPT);
        if keep || self.jsonl.is_some() {
            complete(&mut r);
        }
        if let Some((name, w)) = &mut self.jsonl
            && self.jsonl_error.is_none()
        {
            match serde_json::to_writer(&mut *w, &r)
                .map_err(std::io::Error::other)
                .and_then(|_| w.write_all(b"\n"))
                .and_then(|_| w.flush())
            {
                Ok(()) => self.jsonl_written += 1,
                Err(e) => self.jsonl_error = Some(format!("writing {name}: {e}")),
            }
        }
        if keep {
            self.results.push(r);
        } else {
            // The key `dialect op`, made in a reused buffer: a new one only for a new op.
            self.key.clear();
            self.key.push_str(&r.dialect);
            self.key.push(' ');
            self.key.push_str(&r.op);
            match self.omitted.get_mut(self.key.as_str()) {
                Some(c) => c.add(r.status),
                None => self
                    .omitted
                    .entry(self.key.clone())
                    .or_default()
                    .add(r.status),
            }
        }
    }

    /// Results kept so far.
    pub fn kept(&self) -> &[CaseResult] {
        &self.results
    }

    /// Results taken so far.
    pub fn taken(&self) -> u64 {
        self.results.len() as u64 + self.omitted.values().map(|c| c.total() as u64).sum::<u64>()
    }

    /// The kept results, the counts of the others, and what became of the `--jsonl` report:
    /// how many results it holds and, if it does not hold them all, the write that failed.
    pub fn finish(mut self) -> (Vec<CaseResult>, BTreeMap<String, Counts>, Option<Jsonl>) {
        use std::io::Write as _;
        let jsonl = self.jsonl.as_mut().map(|(name, w)| {
            if self.jsonl_error.is_none()
                && let Err(e) = w.flush()
            {
                self.jsonl_error = Some(format!("writing {name}: {e}"));
            }
            Jsonl {
                path: name.clone(),
                written: self.jsonl_written,
                error: self.jsonl_error.take(),
            }
        });
        (self.results, self.omitted, jsonl)
    }
}

/// The most characters of one field (asm, cite, expected, observed, note) a report prints.
pub const MAX_FIELD: usize = 2000;

/// Text from a case file or an adapter, safe to print: control characters shown as escapes
/// (never passed to the terminal, never dropped), and at most [`MAX_FIELD`] characters.
pub fn safe(s: &str) -> String {
    escape_controls(&clip(s, MAX_FIELD))
}

/// One finding on one line: `location: note` when it compares nothing, else `location:
/// expected X, observed Y [note]`.
pub fn finding_line(f: &FindingOut, gap: &str) -> String {
    if f.expected.is_empty() && f.observed.is_empty() {
        format!("{}: {}", safe(&f.location), safe(&f.note))
    } else {
        format!(
            "{}: expected {}, observed {}{gap}[{}]",
            safe(&f.location),
            safe(&f.expected),
            safe(&f.observed),
            safe(&f.note)
        )
    }
}

/// Counts per status.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Counts {
    /// Passed.
    pub passed: usize,
    /// Failed (including undecided and stale baseline entries).
    pub failed: usize,
    /// Errors.
    pub errors: usize,
    /// Skipped (the adapter lacks a capability or says the case is unsupported).
    pub skipped: usize,
    /// Not applicable, each with its reason: the profile's `where`, or what a semantic-level
    /// implementation cannot run (an illegal form, an unobservable fault, no exact primitive).
    #[serde(default)]
    pub not_applicable: usize,
    /// Known failures from the baseline.
    pub known: usize,
}

impl Counts {
    /// Counts one status.
    pub fn add(&mut self, s: Status) {
        match s {
            Status::Pass => self.passed += 1,
            Status::Fail | Status::Undecided | Status::BaselinePasses => self.failed += 1,
            Status::Error => self.errors += 1,
            Status::Skip => self.skipped += 1,
            Status::NotApplicable => self.not_applicable += 1,
            Status::KnownFailure => self.known += 1,
        }
    }

    /// Adds another's counts.
    pub fn merge(&mut self, o: &Counts) {
        self.passed += o.passed;
        self.failed += o.failed;
        self.errors += o.errors;
        self.skipped += o.skipped;
        self.not_applicable += o.not_applicable;
        self.known += o.known;
    }

    /// Every count.
    pub fn total(&self) -> usize {
        self.passed + self.failed + self.errors + self.skipped + self.not_applicable + self.known
    }
}

impl Report {
    /// Totals.
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for r in &self.results {
            c.add(r.status);
        }
        for o in self.omitted.values() {
            c.merge(o);
        }
        c.errors += self.load_errors.len();
        c
    }

    /// Results, kept or counted.
    pub fn total(&self) -> usize {
        self.results.len() + self.omitted.values().map(Counts::total).sum::<usize>()
    }

    /// Cases judged: passed, failed, undecided, known failures, stale baseline entries (not
    /// errors, skips or not-applicable ones).
    pub fn judged(&self) -> usize {
        let c = self.counts();
        c.passed + c.failed + c.known
    }

    /// Whether the run checked nothing that counts: no case judged (a gate never passes on
    /// nothing, issue 7 D11). One shard of a partitioned run may hold no judged case while the
    /// selection has some; then the merge of the shards decides.
    pub fn checked_nothing(&self) -> bool {
        if self.partition.is_some() {
            self.corpus.selected == 0
        } else {
            self.judged() == 0
        }
    }

    /// Why the run's reports do not hold every selected case's result: it was interrupted,
    /// or its `--jsonl` report could not be written in full. One line each, for the text
    /// report and JUnit.
    pub fn incomplete(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(j) = &self.jsonl
            && let Some(e) = &j.error
        {
            out.push(format!(
                "the --jsonl report {} is incomplete: it holds {} of the {} results ({})",
                safe(&j.path),
                j.written,
                self.total(),
                safe(e)
            ));
        }
        if let Some(i) = &self.interrupted {
            out.push(format!(
                "{}; the reports hold the {} results before the stop",
                i.summary(),
                self.total()
            ));
        }
        out
    }

    /// The exit code: 2 on any error, when the run checked nothing or when its reports are
    /// incomplete ([`Report::incomplete`]), else 1 on any failure, else 0.
    pub fn exit_code(&self) -> i32 {
        let c = self.counts();
        let code = if c.errors > 0 || self.checked_nothing() || !self.incomplete().is_empty() {
            EXIT_ERROR
        } else if c.failed > 0 {
            EXIT_NONCONFORMANCE
        } else {
            EXIT_OK
        };
        i32::from(code)
    }

    /// Applies a baseline of known failures (case ids): a listed case that fails becomes a
    /// known failure; a listed case that passes is reported, since the baseline is stale.
    pub fn apply_baseline(&mut self, known: &std::collections::BTreeSet<String>) {
        for r in &mut self.results {
            if known.contains(&r.id) {
                r.status = match r.status {
                    Status::Fail | Status::Undecided => Status::KnownFailure,
                    Status::Pass => Status::BaselinePasses,
                    s => s,
                };
            }
        }
    }

    /// Applies the flaky entries of a baseline (deqp-runner's flakes): a listed case may pass
    /// or fail; a failure becomes a known failure that says so, a pass stays a pass.
    pub fn apply_flaky(&mut self, flaky: &std::collections::BTreeSet<String>) {
        for r in &mut self.results {
            if flaky.contains(&r.id) {
                mark_flaky(r);
            }
        }
    }

    /// The human report.
    pub fn human(&self, verbose: bool) -> String {
        let mut s = String::new();
        for e in &self.load_errors {
            let _ = writeln!(s, "error: {}", safe(e));
        }
        for r in &self.results {
            let show = matches!(
                r.status,
                Status::Fail | Status::Undecided | Status::Error | Status::BaselinePasses
            ) || (verbose && r.status != Status::Pass);
            if !show {
                continue;
            }
            let word = match r.status {
                Status::Fail => "FAIL",
                Status::Undecided => "UNDECIDED",
                Status::Error => "ERROR",
                Status::BaselinePasses => "BASELINE-PASSES",
                Status::Skip => "SKIP",
                Status::NotApplicable => "N/A",
                Status::KnownFailure => "KNOWN",
                Status::Pass => "PASS",
            };
            let _ = writeln!(s, "{word} {}  ({})", safe(&r.id), safe(&r.at));
            if let Some(runs) = r.runs.filter(|x| x.runs > 1) {
                let _ = writeln!(
                    s,
                    "    runs: failed {} of {} ({:.1}%)",
                    runs.failed,
                    runs.runs,
                    100.0 * runs.rate()
                );
            }
            let _ = writeln!(s, "    asm:  {}", safe(&r.asm));
            let _ = writeln!(s, "    cite: {}", safe(&r.cite));
            for f in &r.findings {
                let _ = writeln!(s, "    {}", finding_line(f, "  "));
            }
            if r.status == Status::BaselinePasses {
                let _ = writeln!(
                    s,
                    "    listed as a known failure but passes: remove it from the baseline"
                );
            }
            let _ = writeln!(s, "    reproduce: {}", safe(&r.repro));
            if let Some(p) = &r.program {
                let _ = writeln!(s, "    program that ran:");
                for line in p.lines() {
                    let _ = writeln!(s, "      {}", safe(line));
                }
            }
        }
        // Failure rates of repeated cases that failed at least once.
        let rates: Vec<&CaseResult> = self
            .results
            .iter()
            .filter(|r| r.runs.is_some_and(|x| x.runs > 1 && x.failed > 0))
            .collect();
        if !rates.is_empty() {
            let _ = writeln!(s, "\nfailure rates of repeated cases:");
            for r in rates {
                if let Some(x) = r.runs {
                    let _ = writeln!(
                        s,
                        "  {:>5.1}%  {}/{}  {}",
                        100.0 * x.rate(),
                        x.failed,
                        x.runs,
                        safe(&r.id)
                    );
                }
            }
        }
        // Summary per dialect and op.
        let mut per: BTreeMap<(&str, &str), Counts> = BTreeMap::new();
        for r in &self.results {
            per.entry((r.dialect.as_str(), r.op.as_str()))
                .or_default()
                .add(r.status);
        }
        for (k, c) in &self.omitted {
            let (d, op) = k.split_once(' ').unwrap_or(("?", k));
            per.entry((d, op)).or_default().merge(c);
        }
        let _ = writeln!(
            s,
            "\nsummary ({} adapter, profile {}):",
            safe(&self.adapter),
            safe(&self.profile)
        );
        let _ = writeln!(
            s,
            "  {:<5} {:<36} {:>6} {:>6} {:>6} {:>7}",
            "", "op", "pass", "fail", "error", "skip+na"
        );
        let mut dialect_tot: BTreeMap<&str, Counts> = BTreeMap::new();
        for ((d, op), c) in &per {
            let _ = writeln!(
                s,
                "  {:<5} {:<36} {:>6} {:>6} {:>6} {:>7}",
                d,
                op,
                c.passed,
                c.failed + c.known,
                c.errors,
                c.skipped + c.not_applicable
            );
            let t = dialect_tot.entry(d).or_default();
            t.passed += c.passed;
            t.failed += c.failed;
            t.errors += c.errors;
            t.skipped += c.skipped;
            t.not_applicable += c.not_applicable;
            t.known += c.known;
        }
        for (d, c) in &dialect_tot {
            let _ = writeln!(
                s,
                "  {:<5} {:<36} {:>6} {:>6} {:>6} {:>7}",
                d,
                "(all)",
                c.passed,
                c.failed + c.known,
                c.errors,
                c.skipped + c.not_applicable
            );
        }
        // Ambiguity report: what each probe matched.
        let probes: Vec<_> = self
            .results
            .iter()
            .filter_map(|r| r.probe.as_ref().map(|p| (r, p)))
            .collect();
        if !probes.is_empty() {
            let _ = writeln!(
                s,
                "\nambiguity probes (options the implementation matched):"
            );
            for (r, p) in probes {
                let m = if p.matched.is_empty() {
                    "none".to_string()
                } else {
                    p.matched.join(", ")
                };
                let _ = writeln!(
                    s,
                    "  {:<60} {:<34} matched: {} (profile picks {})",
                    safe(&r.id),
                    safe(&p.knob),
                    safe(&m),
                    safe(&p.picked)
                );
            }
        }
        let c = self.counts();
        if self.checked_nothing() {
            let _ = writeln!(
                s,
                "\nerror: no case was judged ({} results: errors, skipped or not applicable): a run that checks nothing never passes",
                self.total()
            );
        }
        let _ = writeln!(
            s,
            "\n{} passed, {} failed, {} errors, {} skipped, {} known failures, {} not applicable ({} cases)",
            c.passed,
            c.failed,
            c.errors,
            c.skipped,
            c.known,
            c.not_applicable,
            self.total()
        );
        if let Some(p) = self.passed_over {
            let _ = writeln!(
                s,
                "({} drafts of the generated stream passed over by --learn, not made: {} shapes answered only not applicable at the end)",
                p.drafts, p.shapes
            );
        }
        let shown = self.omitted.values().map(|c| c.total()).sum::<usize>();
        if shown > 0 {
            let whole = match &self.jsonl {
                Some(j) if j.error.is_none() => format!("every result is in {}", safe(&j.path)),
                Some(j) => format!("{} holds only {} results", safe(&j.path), j.written),
                None => "--jsonl FILE keeps every result".into(),
            };
            let _ = writeln!(
                s,
                "({shown} results not listed here: in a run of more than {KEEP_PASSES_UP_TO} cases, passes, and other results beyond the first {MAX_KEPT}; {whole})"
            );
        }
        // The closing lines: what the reports lack.
        for line in self.incomplete() {
            let _ = writeln!(s, "error: {line}");
        }
        s
    }

    /// JUnit XML, one test suite per case file.
    pub fn junit(&self) -> String {
        use quick_junit::{NonSuccessKind, Report as JReport, TestCase, TestCaseStatus, TestSuite};
        let mut report = JReport::new("atomcts");
        let mut suites: BTreeMap<String, TestSuite> = BTreeMap::new();
        for r in &self.results {
            let file = r.id.split("::").next().unwrap_or("").to_string();
            let suite = suites
                .entry(file.clone())
                .or_insert_with(|| TestSuite::new(safe(&file)));
            let name = r.id.split("::").nth(1).unwrap_or(&r.id).to_string();
            let detail = r
                .findings
                .iter()
                .map(|f| finding_line(f, " "))
                .collect::<Vec<_>>()
                .join("\n");
            let headline = r
                .findings
                .first()
                .map_or_else(|| format!("{:?}", r.status), |f| finding_line(f, " "));
            let status = match r.status {
                Status::Pass | Status::KnownFailure => TestCaseStatus::success(),
                Status::Skip | Status::NotApplicable => TestCaseStatus::skipped(),
                Status::Error => {
                    let mut st = TestCaseStatus::non_success(NonSuccessKind::Error);
                    st.set_message(clip(&headline, 300));
                    st.set_description(format!("{detail}\nreproduce: {}", safe(&r.repro)));
                    st
                }
                Status::Fail | Status::Undecided | Status::BaselinePasses => {
                    let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    st.set_message(format!("{:?}: {}", r.status, clip(&headline, 300)));
                    st.set_description(format!(
                        "{}\n{detail}\nreproduce: {}",
                        safe(&r.asm),
                        safe(&r.repro)
                    ));
                    st
                }
            };
            let mut tc = TestCase::new(safe(&name), status);
            tc.set_classname(r.dialect.clone());
            suite.add_test_case(tc);
        }
        for (_, s) in suites {
            report.add_test_suite(s);
        }
        // An interrupted run or an incomplete --jsonl report is an error a JUnit reader sees.
        let incomplete = self.incomplete();
        if !incomplete.is_empty() {
            let mut suite = TestSuite::new("atomcts run");
            for line in incomplete {
                let mut st = TestCaseStatus::non_success(NonSuccessKind::Error);
                st.set_message(line);
                let mut tc = TestCase::new("incomplete", st);
                tc.set_classname("atomcts");
                suite.add_test_case(tc);
            }
            report.add_test_suite(suite);
        }
        // A huge run's JUnit lists the kept results and summarises the others in one test
        // case per op (issue 9).
        if !self.omitted.is_empty() {
            let mut suite = TestSuite::new("omitted (counted, listed in the --jsonl report)");
            for (k, c) in &self.omitted {
                let bad = c.failed + c.errors;
                let summary = format!(
                    "{} passed, {} failed, {} errors, {} skipped, {} known, {} not applicable",
                    c.passed, c.failed, c.errors, c.skipped, c.known, c.not_applicable
                );
                let status = if bad > 0 {
                    let kind = if c.failed > 0 {
                        NonSuccessKind::Failure
                    } else {
                        NonSuccessKind::Error
                    };
                    let mut st = TestCaseStatus::non_success(kind);
                    st.set_message(summary);
                    st
                } else {
                    TestCaseStatus::success()
                };
                let mut tc = TestCase::new(safe(k), status);
                tc.set_classname(k.split(' ').next().unwrap_or("").to_string());
                suite.add_test_case(tc);
            }
            report.add_test_suite(suite);
        }
        report
            .to_string()
            .unwrap_or_else(|e| format!("<!-- junit serialization failed: {e} -->"))
    }
}

/// A case the baseline lists as flaky: marked so, and a failure becomes a known failure that
/// says so (a pass stays a pass).
fn mark_flaky(r: &mut CaseResult) {
    r.flaky = true;
    if matches!(r.status, Status::Fail | Status::Undecided) {
        r.status = Status::KnownFailure;
        r.findings.push(FindingOut {
            location: "baseline".into(),
            expected: String::new(),
            observed: String::new(),
            note: "listed as flaky: passing and failing are both allowed".into(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(i: usize, status: Status) -> CaseResult {
        CaseResult {
            id: format!("generated/seed1/sass::gen_1_{i}"),
            dialect: "sass".into(),
            op: "ATOM.ADD".into(),
            asm: "ATOM.ADD.U32 R0, [R2], R4".into(),
            at: String::new(),
            cite: String::new(),
            status,
            findings: vec![],
            probe: None,
            repro: String::new(),
            program: None,
            knob: None,
            runs: None,
            flaky: false,
        }
    }

    /// A huge run keeps failures only (capped), counts the rest per op, writes every result
    /// as a JSON line, and its totals, exit code and merge count every case once.
    #[test]
    fn a_huge_run_keeps_failures_and_counts_the_rest() {
        let dir = std::env::temp_dir().join(format!("atomcts-collector-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.jsonl");
        let file = std::fs::File::create(&path).unwrap();
        let n = KEEP_PASSES_UP_TO as usize + 500;
        let known = ["generated/seed1/sass::gen_1_7".to_string()].into();
        let mut c = Collector::new(known, n as u64, Some(("r.jsonl".into(), file)));
        for i in 0..n {
            c.push(result(
                i,
                if i % 1000 == 7 {
                    Status::Fail
                } else {
                    Status::Pass
                },
            ));
        }
        let (results, omitted, jsonl) = c.finish();
        let jsonl = jsonl.expect("a --jsonl report");
        assert_eq!((jsonl.written, jsonl.error), (n as u64, None));
        let fails = n.div_ceil(1000);
        assert_eq!(results.len(), fails);
        assert!(results.iter().all(|r| r.status != Status::Pass));
        // The baseline applied as results came: case 7 is a known failure.
        assert_eq!(results[0].status, Status::KnownFailure);
        let report = Report {
            version: REPORT_VERSION,
            adapter: "fast".into(),
            profile: "default".into(),
            implementation: None,
            level: None,
            partition: None,
            corpus: CorpusId::default(),
            load_errors: vec![],
            results,
            omitted,
            device: None,
            jsonl: None,
            interrupted: None,
            passed_over: None,
        };
        let counts = report.counts();
        assert_eq!(report.total(), n);
        assert_eq!(
            (counts.passed, counts.failed, counts.known),
            (n - fails, fails - 1, 1)
        );
        assert_eq!(report.exit_code(), 1);
        assert!(report.human(false).contains(&format!("({n} cases)")));
        assert!(report.junit().contains("omitted (counted"));
        let lines = std::fs::read_to_string(&path).unwrap();
        assert_eq!(lines.lines().count(), n);
        let merged = Report::merge(vec![report]).unwrap();
        assert_eq!(merged.total(), n);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A small run keeps every result, passes included.
    #[test]
    fn a_small_run_keeps_every_result() {
        let mut c = Collector::new(Default::default(), 100, None);
        for i in 0..100 {
            c.push(result(i, Status::Pass));
        }
        let (results, omitted, _) = c.finish();
        assert_eq!(results.len(), 100);
        assert!(omitted.is_empty());
    }
}
