//! `atomcts run`: the corpus and generated cases on one adapter.

use super::{
    DEFAULT_ADAPTER_TIMEOUT_MS, ProfileArgs, adapter, adapter_repro_args, load_corpus,
    parse_partition, write_outputs,
};
use anyhow::{Context, Result, bail};
use atomcts::corpus::baseline::Baseline;
use atomcts::fuzzing::parallel::Workers;
use atomcts::report::Report;
use atomcts::report::output;
use atomcts::report::session::{Plan, Session};
use atomcts::run;
use atomcts::run::results::{CaseResult, Options};
use clap::Args;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub(super) struct RunArgs {
    /// Corpus directory or file (default: ./spec-cases, else the one beside the source).
    #[arg(long)]
    cases: Option<PathBuf>,
    #[arg(long, default_value = "fast", help = atomcts_adapters::registry::adapter_help())]
    adapter: String,
    /// Per-case deadline for `cmd:` adapters, in milliseconds (writing the request and
    /// reading the answer).
    #[arg(long, default_value_t = DEFAULT_ADAPTER_TIMEOUT_MS)]
    adapter_timeout_ms: u64,
    #[command(flatten)]
    profile: ProfileArgs,
    /// Only cases whose id contains this text, `id:<exact id>`, or `tag:<t>` (repeatable; any
    /// matches).
    #[arg(long)]
    filter: Vec<String>,
    /// Run shard K of N: `hash:K/N` (stable under adding and filtering cases).
    #[arg(long)]
    partition: Option<String>,
    /// Write JUnit XML here.
    #[arg(long)]
    junit: Option<PathBuf>,
    /// Write the JSON report here (input to `atomcts merge`).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write every result here as it comes, one JSON object per line (a run of any size; the
    /// other reports keep every result of a run of at most 20,000 cases, else at most 10,000
    /// results other than passes: README "Limits").
    #[arg(long)]
    jsonl: Option<PathBuf>,
    /// Known failures, one case id per line: asserted to still fail. A line `flaky <id>`
    /// marks a case that may pass or fail (a race that shows up only sometimes).
    #[arg(long)]
    baseline: Option<PathBuf>,
    /// Run every case R times and report how often it failed (a stress run).
    #[arg(long, default_value_t = 1)]
    repeat: u32,
    /// Run every concurrent case at least this many times (issue 12: races that show up
    /// rarely; see FORMAT.md, "Concurrent cases").
    #[arg(long, default_value_t = atomcts::run::concurrent::DEFAULT_REPEAT)]
    concurrent_repeat: u32,
    /// Also run N generated cases (with --seed); without --cases-only, the corpus too.
    #[arg(long, default_value_t = 0)]
    generated: u64,
    /// Seed of the generated cases.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Run only the generated cases, not the corpus.
    #[arg(long)]
    generated_only: bool,
    /// Race-checker budget in expanded states per address.
    #[arg(long, default_value_t = atomcts_reference::race::DEFAULT_BUDGET)]
    race_budget: u64,
    /// Also list skipped and not-applicable cases.
    #[arg(long, short)]
    verbose: bool,
    /// No progress bar.
    #[arg(long)]
    no_progress: bool,
    /// Threads (at most 64), results in the same order as with one. The built-in model (fast,
    /// reference): its cases and the generated cases are spread over N threads. Any other
    /// adapter runs every case on one thread, and N - 1 threads make the generated cases
    /// (state, the reference's run) ahead of it.
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// Generated cases learn from the adapter's answers (issue 31): a draft whose shape
    /// (dialect, instruction, state words, edge address; as `fuzz` learns) was answered not
    /// applicable 4 times and never run is passed over, one draft in 64 still made. The
    /// drafts keep their numbers; the stream depends on the adapter's answers, never on
    /// --jobs (README, "Huge runs"). Not with --partition.
    #[arg(long)]
    learn: bool,
}

/// Reads a baseline (format: [`Baseline`]).
pub(super) fn read_baseline(p: &Path) -> Result<Baseline> {
    let text = output::read_text("--baseline", p, output::MAX_TEXT_FILE)?;
    Ok(Baseline::parse(&text))
}

/// The repro command's words after the profile: adapter, knob overrides, adapter timeout and
/// race budget when they differ from the defaults, each shell-quoted.
pub(super) fn repro_args(a: &RunArgs) -> String {
    let adapter = (a.adapter != "fast").then_some(a.adapter.as_str());
    adapter_repro_args(adapter, a.adapter_timeout_ms, &a.profile.set, a.race_budget)
}

pub(super) fn cmd_run(a: RunArgs) -> Result<u8> {
    if a.generated_only && a.generated == 0 {
        bail!("--generated-only needs --generated N with N > 0: nothing would run");
    }
    if a.profile.profile != "claimed" {
        a.profile.profile()?;
    }
    if !(1..=atomcts::run::parallel::MAX_JOBS).contains(&a.jobs) {
        bail!(
            "--jobs {}: between 1 and {} threads",
            a.jobs,
            atomcts::run::parallel::MAX_JOBS
        );
    }
    let partition = a.partition.as_deref().map(parse_partition).transpose()?;
    if a.learn && a.generated == 0 {
        bail!("--learn needs --generated N with N > 0: it passes over generated drafts");
    }
    if a.learn && partition.is_some() {
        bail!(
            "--learn with --partition: a shard would learn from its own cases only, so the shards would not add up to one run's stream"
        );
    }
    // SIGINT and SIGTERM stop the run and keep its reports (issue 27, H15).
    atomcts::run::interrupt::install().context("taking SIGINT and SIGTERM")?;
    // Everything that can fail about the outputs fails now, not after the run (D12): each a
    // regular file or a new one, no two the same (issue 27, H9, H18).
    let outputs: Vec<(&str, &Path)> = [
        ("--junit", &a.junit),
        ("--json", &a.json),
        ("--jsonl", &a.jsonl),
    ]
    .into_iter()
    .filter_map(|(f, p)| Some((f, p.as_deref()?)))
    .collect();
    output::check_outputs(&outputs)?;
    let jsonl = a
        .jsonl
        .as_ref()
        .map(|p| output::create("--jsonl", p).map(|f| (p.display().to_string(), f)))
        .transpose()?;
    let baseline = a.baseline.as_deref().map(read_baseline).transpose()?;
    let mut load_errors = Vec::new();
    let mut corpus = Vec::new();
    let mut cases_arg = String::from("<generated>");
    if !a.generated_only {
        let (path, loaded) = load_corpus(&a.cases)?;
        cases_arg = path.display().to_string();
        load_errors.extend(loaded.errors.iter().map(|e| e.to_string()));
        corpus = loaded.cases;
    }
    let mut adapter = adapter(&a.adapter, a.adapter_timeout_ms)?;
    let profile = a.profile.profile_claimed(Some(adapter.as_ref()))?;
    let generator = (a.generated > 0)
        .then(|| atomcts::fuzzing::generate::Generator::new(a.seed, a.generated, &profile))
        .transpose()
        .map(|g| g.map(|g| if a.learn { g.learning() } else { g }))
        .map_err(|e| anyhow::anyhow!("--generated {}: {}", a.generated, e.message))?;
    let opts = Options {
        profile: profile.clone(),
        race_budget: a.race_budget,
        cases_arg,
        adapter_arg: repro_args(&a),
    };
    let plan = Plan {
        filters: a.filter.clone(),
        partition,
        repeat: a.repeat,
        concurrent_repeat: a.concurrent_repeat,
        generated: a.generated,
    };
    let estimate = plan.estimate(&corpus);
    let bar = (!a.no_progress && std::io::stderr().is_terminal() && estimate > 50).then(|| {
        let b = indicatif::ProgressBar::new(estimate);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} cases {elapsed_precise} eta {eta} {msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    });
    let mut tick = || {
        if let Some(b) = &bar {
            b.inc(1);
        }
    };
    let mut session = Session::new(&plan, baseline.as_ref(), estimate, jsonl).with_jobs(a.jobs);
    // Corpus first, then generated cases chunk by chunk, a pipelined adapter's window at a time
    // (issue 9; four windows a chunk made more memory in flight and ran no faster: issue 31).
    let gen_chunk = atomcts::fuzzing::generate::RUN_CHUNK.max(adapter.window());
    session.run_chunk(corpus, adapter.as_mut(), &opts, &mut tick);
    if let Some(mut g) = generator {
        let forks: Option<Vec<_>> = (a.jobs > 1)
            .then(|| (0..a.jobs).map(|_| adapter.fork()).collect())
            .flatten();
        let workers = match forks {
            // `--jobs` on the built-in model: made and run on threads, taken in order.
            Some(forks) => Some(Workers::Forks(forks)),
            // `--jobs` on any other adapter: made on J - 1 threads, run here, in order.
            None if a.jobs > 1 => Some(Workers::Makers {
                count: a.jobs - 1,
                chunk: gen_chunk,
                adapter: adapter.as_mut(),
            }),
            None => None,
        };
        if let Some(workers) = workers {
            atomcts::fuzzing::parallel::run_generated(
                &mut session,
                &mut g,
                workers,
                &opts,
                &mut tick,
            )
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        } else {
            let mut passed_over = 0;
            while !run::stopped()
                && let Some(chunk) = g.next_chunk(gen_chunk)
            {
                let chunk = chunk.map_err(|e| anyhow::anyhow!("{e}"))?;
                let turned = session.run_generated(chunk, adapter.as_mut(), &opts, &mut tick);
                g.give(turned);
                // Drafts passed over count as progress: they are accounted for.
                let now = g.passed_over().map_or(0, |p| p.0);
                for _ in passed_over..now {
                    tick();
                }
                passed_over = now;
            }
        }
        if let Some((drafts, shapes)) = g.passed_over() {
            session.passed_over(drafts, shapes);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let selected_count = session.selected();
    let report = session.finish(
        adapter,
        &profile.name,
        a.baseline.as_deref().zip(baseline.as_ref()),
        load_errors,
    );
    let written = write_outputs(&report, &a.junit, &a.json);
    let programs = a
        .json
        .as_ref()
        .map_or(Ok(()), |json| write_programs(&report, json));
    print!("{}", report.human(a.verbose));
    written?;
    programs?;
    if let Some(sig) = atomcts::run::interrupt::requested() {
        return Ok(atomcts::run::interrupt::exit_code(sig));
    }
    if selected_count == 0 {
        if a.filter.is_empty() {
            eprintln!(
                "error: no case to run (the corpus is empty or did not load): nothing was checked"
            );
        } else {
            eprintln!(
                "error: no case matched --filter {}: nothing was checked",
                a.filter.join(", --filter ")
            );
        }
    }
    Ok(report.exit_code() as u8)
}

/// Beside a JSON report `r.json`: `r.programs/<case>.cl` (`.spvasm`, `.wgsl`, `.ptx`: the
/// registry's extension of the adapter's kind), the program that
/// ran each failing case on a semantic-level implementation (the OpenCL C kernel, the SPIR-V
/// disassembly, the WGSL shader), headed by its reproduce command.
pub(super) fn write_programs(report: &Report, json: &Path) -> Result<()> {
    let failing: Vec<&CaseResult> = report
        .results
        .iter()
        .filter(|r| r.program.is_some())
        .collect();
    if failing.is_empty() {
        return Ok(());
    }
    let dir = json.with_extension("programs");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    for r in failing {
        let name: String =
            r.id.chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
        // The target's own language: SPIR-V assembly, WGSL, PTX or OpenCL C.
        let file = atomcts_adapters::registry::program_file(&report.adapter);
        let path = dir.join(format!("{name}.{}", file.ext));
        let c = file.comment;
        let text = format!(
            "{c} {} ({:?})\n{c} reproduce: {}\n{}",
            r.id,
            r.status,
            r.repro,
            r.program.as_deref().unwrap_or("")
        );
        output::write("program", &path, text)?;
    }
    Ok(())
}
