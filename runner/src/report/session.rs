//! One `atomcts run` session (issue 28: the command line parses the options and calls this):
//! the selected cases of this shard run on one adapter, the corpus first, then the generated
//! cases chunk by chunk (generated, run, judged, dropped: issue 9); the results go to a
//! [`Collector`] as they come; [`Session::finish`] makes the run's [`Report`].

use crate::corpus::baseline::Baseline;
use crate::corpus::case::{Case, GeneratedCase, Item};
use crate::report::{Collector, CorpusId, Interrupted, PassedOver, REPORT_VERSION, Report};
use crate::run;
use crate::run::results::{CaseResult, Options, Status};
use atomcts_adapters::Adapter;
use std::collections::BTreeSet;
use std::path::Path;

/// Which cases a run selects and how often it runs each.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// `--filter`: a case is selected when one of these matches (none: every case).
    pub filters: Vec<String>,
    /// `--partition K/N`.
    pub partition: Option<(u64, u64)>,
    /// `--repeat`.
    pub repeat: u32,
    /// `--concurrent-repeat`.
    pub concurrent_repeat: u32,
    /// `--generated N`.
    pub generated: u64,
}

impl Plan {
    /// Whether `--filter` selects `case`: its id contains a filter, or a filter is `id:<its id>`
    /// or `tag:<one of its tags>`.
    pub fn selects(&self, case: &Case) -> bool {
        self.filters.is_empty()
            || self.filters.iter().any(|f| {
                if let Some(t) = f.strip_prefix("tag:") {
                    case.tags.iter().any(|x| x == t)
                } else if let Some(id) = f.strip_prefix("id:") {
                    case.id == id
                } else {
                    case.id.contains(f.as_str())
                }
            })
    }

    /// Whether `case` is in this run's shard.
    pub fn in_shard(&self, case: &Case) -> bool {
        self.partition
            .is_none_or(|(k, n)| run::in_partition(&case.id, k, n))
    }

    /// About how many cases the run takes: the selected corpus cases of this shard and this
    /// shard's share of the generated cases.
    pub fn estimate(&self, corpus: &[Case]) -> u64 {
        corpus
            .iter()
            .filter(|c| self.selects(c) && self.in_shard(c))
            .count() as u64
            + self
                .partition
                .map_or(self.generated, |(_, n)| self.generated / n)
    }

    /// How many times `case` runs (--repeat, concurrent cases: issue 12).
    pub fn times(&self, case: &Case) -> u32 {
        if case.is_concurrent() {
            self.repeat.max(self.concurrent_repeat)
        } else {
            self.repeat
        }
    }
}

/// A run under way.
pub struct Session<'p> {
    plan: &'p Plan,
    known: BTreeSet<String>,
    flaky: BTreeSet<String>,
    collector: Collector,
    /// Loaded cases the baseline names.
    baseline_hits: BTreeSet<String>,
    /// Sum of the selected ids' hashes ([`CorpusId::digest`]).
    ids_hash: u64,
    selected: usize,
    /// Cases of this shard taken to run, and generated cases made (for an interrupted run's
    /// count of what did not run).
    planned: u64,
    generated_made: u64,
    /// Threads for an adapter that can be forked ([`Session::with_jobs`]).
    jobs: usize,
    /// Drafts of the generated stream passed over (`--learn`).
    passed_over: Option<PassedOver>,
}

/// What a case's result says to a stream that learns ([`crate::fuzzing::learn::Lagged`]):
/// `Some(true)` not applicable or skipped, `Some(false)` run, `None` not run here (not
/// selected, another shard's, or after a stop).
pub type Turned = Option<bool>;

impl<'p> Session<'p> {
    /// A run of about `estimate` cases ([`Plan::estimate`]) under `baseline`, writing each
    /// result as a JSON line to `jsonl` (its name for messages, and the file).
    pub fn new(
        plan: &'p Plan,
        baseline: Option<&Baseline>,
        estimate: u64,
        jsonl: Option<(String, std::fs::File)>,
    ) -> Session<'p> {
        let known: BTreeSet<String> = baseline.map(Baseline::known).unwrap_or_default();
        let flaky: BTreeSet<String> = baseline.map(Baseline::flaky).unwrap_or_default();
        // Results are collected as they come: counts, what the reports need, and every one as
        // a JSON line (issue 9).
        let collector = Collector::new(known.clone(), estimate, jsonl).with_flaky(flaky.clone());
        Session {
            plan,
            known,
            flaky,
            collector,
            baseline_hits: BTreeSet::new(),
            ids_hash: 0,
            selected: 0,
            planned: 0,
            generated_made: 0,
            jobs: 1,
            passed_over: None,
        }
    }

    /// Runs cases on `jobs` threads where the adapter gives an instance per thread
    /// ([`Adapter::fork`]: the built-in model); results keep the cases' order. Other adapters
    /// run on this thread whatever `jobs` says.
    pub fn with_jobs(mut self, jobs: usize) -> Session<'p> {
        self.jobs = jobs.max(1);
        self
    }

    /// Selected cases so far (before partitioning).
    pub fn selected(&self) -> usize {
        self.selected
    }

    /// Runs the selected cases of `cases` that are in this shard; `progress` is called after
    /// each result taken.
    pub fn run_chunk(
        &mut self,
        cases: Vec<Case>,
        adapter: &mut dyn Adapter,
        opts: &Options,
        progress: &mut dyn FnMut(),
    ) {
        let items: Vec<Item<'_>> = cases.iter().map(Item::from).collect();
        self.run_items(&items, adapter, opts, progress);
    }

    /// [`Session::run_chunk`] for a chunk of generated cases; returns each one's [`Turned`].
    pub fn run_generated(
        &mut self,
        cases: Vec<GeneratedCase>,
        adapter: &mut dyn Adapter,
        opts: &Options,
        progress: &mut dyn FnMut(),
    ) -> Vec<Turned> {
        self.run_made(&cases, adapter, opts, progress)
    }

    /// [`Session::run_generated`] for cases another thread made (and frees).
    pub fn run_made(
        &mut self,
        cases: &[GeneratedCase],
        adapter: &mut dyn Adapter,
        opts: &Options,
        progress: &mut dyn FnMut(),
    ) -> Vec<Turned> {
        self.made_generated(cases.len() as u64);
        let items: Vec<Item<'_>> = cases.iter().map(GeneratedCase::item).collect();
        self.run_items(&items, adapter, opts, progress)
    }

    /// `drafts` of the generated stream were passed over, never made, and `shapes` were
    /// passed over at the end (`--learn`).
    pub fn passed_over(&mut self, drafts: u64, shapes: usize) {
        self.passed_over = Some(PassedOver { drafts, shapes });
    }

    /// The run's [`Plan`].
    pub fn plan(&self) -> &'p Plan {
        self.plan
    }

    /// Takes `item` into the run's accounts (selection, baseline hits, the ids' digest) and
    /// says whether this shard runs it.
    pub fn take(&mut self, item: Item<'_>) -> bool {
        let c = item.case();
        if self.known.contains(&c.id) || self.flaky.contains(&c.id) {
            self.baseline_hits.insert(c.id.clone());
        }
        if !self.plan.selects(c) {
            return false;
        }
        self.selected += 1;
        self.ids_hash = self.ids_hash.wrapping_add(run::stable_hash(&c.id));
        let runs = self.plan.in_shard(c);
        self.planned += u64::from(runs);
        runs
    }

    /// Counts `n` generated cases made (for an interrupted run's count of what did not run).
    pub fn made_generated(&mut self, n: u64) {
        self.generated_made += n;
    }

    /// Gives `case`'s result to the collector, completed (instruction, position, citation,
    /// reproduce line) only if the collector keeps or writes it (issue 9). A result that
    /// comes after a stop request may be the stop's doing: it is not taken (not run).
    pub fn give(&mut self, case: &Case, r: CaseResult, opts: &Options) -> bool {
        if run::stopped() {
            return false;
        }
        self.collector
            .push_with(r, |r| run::repro::complete(r, case, opts));
        true
    }

    /// [`Session::run_chunk`] over cases as the runner takes them; returns each one's
    /// [`Turned`].
    fn run_items(
        &mut self,
        items: &[Item<'_>],
        adapter: &mut dyn Adapter,
        opts: &Options,
        progress: &mut dyn FnMut(),
    ) -> Vec<Turned> {
        let plan = self.plan;
        let (todo, at): (Vec<Item<'_>>, Vec<usize>) = items
            .iter()
            .enumerate()
            .filter(|&(_, &i)| self.take(i))
            .map(|(n, &i)| (i, n))
            .unzip();
        let jobs = self.jobs;
        let mut turned: Vec<Turned> = vec![None; items.len()];
        // The results come in `todo`'s order (some missing after a stop).
        let mut next = 0;
        let mut emit = |c: &Case, r: CaseResult| {
            while next < todo.len() && !std::ptr::eq(todo[next].case(), c) {
                next += 1;
            }
            if let Some(&n) = at.get(next) {
                turned[n] = Some(matches!(r.status, Status::NotApplicable | Status::Skip));
                next += 1;
            }
            if self.give(c, r, opts) {
                progress();
            }
        };
        // `--jobs`: every case on the adapter's forks, in order.
        if jobs > 1
            && let Some(forks) = (0..jobs).map(|_| adapter.fork()).collect()
        {
            run::parallel::run_cases_parallel(&todo, forks, opts, &|c| plan.times(c), &mut emit);
            return turned;
        }
        // Cases run more than once (--repeat, concurrent cases: issue 12) run one by one; the
        // others in order, a pipelined adapter's window at a time (issue 9).
        let mut i = 0;
        while i < todo.len() && !run::stopped() {
            let j = (i..todo.len())
                .find(|&k| plan.times(todo[k].case()) > 1)
                .unwrap_or(todo.len());
            if j > i {
                run::run_cases_lean(&todo[i..j], adapter, opts, &mut emit);
                i = j;
                continue;
            }
            let c = todo[i].case();
            emit(
                c,
                run::run_case_repeated(todo[i], adapter, opts, plan.times(c)),
            );
            i += 1;
        }
        turned
    }

    /// The run's report: what the adapter says about itself, then the adapter is stopped (a
    /// shim's process group with it) before the results are taken out of the collector.
    /// `baseline` (the file and what it holds): each of its entries that names no loaded case
    /// is a load error (D22), whatever the filter or shard.
    pub fn finish(
        self,
        adapter: Box<dyn Adapter>,
        profile: &str,
        baseline: Option<(&Path, &Baseline)>,
        mut load_errors: Vec<String>,
    ) -> Report {
        let taken = self.collector.taken();
        let interrupted = run::interrupt::requested().map(|sig| Interrupted {
            signal: run::interrupt::name(sig),
            not_run: self.planned.saturating_sub(taken),
            not_generated: self
                .plan
                .generated
                .saturating_sub(self.generated_made)
                .saturating_sub(self.passed_over.map_or(0, |p| p.drafts)),
        });
        let (adapter_name, implementation, level, device) = (
            adapter.name().to_string(),
            adapter.describe(),
            adapter.level().name().to_string(),
            adapter.device(),
        );
        drop(adapter);
        let (results, omitted, jsonl) = self.collector.finish();
        if let Some((file, b)) = baseline {
            load_errors.extend(b.unmatched(file, &self.baseline_hits));
        }
        Report {
            version: REPORT_VERSION,
            adapter: adapter_name,
            profile: profile.to_string(),
            implementation,
            level: Some(level),
            partition: self.plan.partition.map(|(k, n)| format!("hash:{k}/{n}")),
            corpus: CorpusId {
                selected: self.selected,
                digest: format!("{:016x}", self.ids_hash),
            },
            load_errors,
            results,
            omitted,
            device,
            jsonl,
            interrupted,
            passed_over: self.passed_over,
        }
    }
}
