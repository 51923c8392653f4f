//! Reports for people (text) and programs (JSON, JUnit XML), and merging shard results.

use crate::run::{CaseResult, Status};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Version of the JSON report format.
pub const REPORT_VERSION: u32 = 1;

/// A run's results, as written by `--json` and read by `atomcts merge`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    /// Format version.
    pub version: u32,
    /// Adapter name.
    pub adapter: String,
    /// Profile name.
    pub profile: String,
    /// Errors outside any case (files that do not load), as `file:line:col: message`.
    pub load_errors: Vec<String>,
    /// Per-case results.
    pub results: Vec<CaseResult>,
}

/// Counts per status.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
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
    fn add(&mut self, s: Status) {
        match s {
            Status::Pass => self.passed += 1,
            Status::Fail | Status::Undecided | Status::BaselinePasses => self.failed += 1,
            Status::Error => self.errors += 1,
            Status::Skip => self.skipped += 1,
            Status::NotApplicable => self.not_applicable += 1,
            Status::KnownFailure => self.known += 1,
        }
    }
}

impl Report {
    /// Totals.
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for r in &self.results {
            c.add(r.status);
        }
        c.errors += self.load_errors.len();
        c
    }

    /// The exit code: 2 on any error, else 1 on any failure, else 0.
    pub fn exit_code(&self) -> i32 {
        let c = self.counts();
        if c.errors > 0 {
            2
        } else if c.failed > 0 {
            1
        } else {
            0
        }
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

    /// Merges shard reports (same adapter and profile).
    pub fn merge(reports: Vec<Report>) -> Result<Report, String> {
        let mut it = reports.into_iter();
        let mut first = it.next().ok_or("nothing to merge")?;
        for r in it {
            if r.adapter != first.adapter || r.profile != first.profile {
                return Err(format!(
                    "cannot merge {}/{} with {}/{}",
                    r.adapter, r.profile, first.adapter, first.profile
                ));
            }
            first.load_errors.extend(r.load_errors);
            first.results.extend(r.results);
        }
        first.results.sort_by(|a, b| a.id.cmp(&b.id));
        let before = first.results.len();
        first.results.dedup_by(|a, b| a.id == b.id);
        if first.results.len() != before {
            first.load_errors.push(format!(
                "{} case(s) appeared in more than one shard",
                before - first.results.len()
            ));
        }
        Ok(first)
    }

    /// The human report.
    pub fn human(&self, verbose: bool) -> String {
        let mut s = String::new();
        for e in &self.load_errors {
            let _ = writeln!(s, "error: {e}");
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
            let _ = writeln!(s, "{word} {}  ({})", r.id, r.at);
            let _ = writeln!(s, "    asm:  {}", r.asm);
            let _ = writeln!(s, "    cite: {}", r.cite);
            for f in &r.findings {
                if f.expected.is_empty() && f.observed.is_empty() {
                    let _ = writeln!(s, "    {}: {}", f.location, f.note);
                } else {
                    let _ = writeln!(
                        s,
                        "    {}: expected {}, observed {}  [{}]",
                        f.location, f.expected, f.observed, f.note
                    );
                }
            }
            if r.status == Status::BaselinePasses {
                let _ = writeln!(
                    s,
                    "    listed as a known failure but passes: remove it from the baseline"
                );
            }
            let _ = writeln!(s, "    reproduce: {}", r.repro);
            if let Some(p) = &r.program {
                let _ = writeln!(s, "    program that ran:");
                for line in p.lines() {
                    let _ = writeln!(s, "      {line}");
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
        let _ = writeln!(
            s,
            "\nsummary ({} adapter, profile {}):",
            self.adapter, self.profile
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
                    "  {:<60} {:<34} matched: {m} (profile picks {})",
                    r.id, p.knob, p.picked
                );
            }
        }
        let c = self.counts();
        let _ = writeln!(
            s,
            "\n{} passed, {} failed, {} errors, {} skipped, {} known failures, {} not applicable ({} cases)",
            c.passed,
            c.failed,
            c.errors,
            c.skipped,
            c.known,
            c.not_applicable,
            self.results.len()
        );
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
                .or_insert_with(|| TestSuite::new(file));
            let name = r.id.split("::").nth(1).unwrap_or(&r.id).to_string();
            let detail = r
                .findings
                .iter()
                .map(|f| {
                    format!(
                        "{}: expected {}, observed {} [{}]",
                        f.location, f.expected, f.observed, f.note
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            let status = match r.status {
                Status::Pass | Status::KnownFailure => TestCaseStatus::success(),
                Status::Skip | Status::NotApplicable => TestCaseStatus::skipped(),
                Status::Error => {
                    let mut st = TestCaseStatus::non_success(NonSuccessKind::Error);
                    st.set_description(format!("{detail}\nreproduce: {}", r.repro));
                    st
                }
                Status::Fail | Status::Undecided | Status::BaselinePasses => {
                    let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    st.set_message(format!("{:?}", r.status));
                    st.set_description(format!("{}\n{detail}\nreproduce: {}", r.asm, r.repro));
                    st
                }
            };
            let mut tc = TestCase::new(name, status);
            tc.set_classname(r.dialect.clone());
            suite.add_test_case(tc);
        }
        for (_, s) in suites {
            report.add_test_suite(s);
        }
        report
            .to_string()
            .unwrap_or_else(|e| format!("<!-- junit serialization failed: {e} -->"))
    }
}
