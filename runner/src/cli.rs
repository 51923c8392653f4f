//! Command-line parsing and the subcommands. The only place that uses `anyhow`.

use anyhow::{Context, Result, bail};
use atomcts::case::{self, Case, Loaded, corpus_root};
use atomcts::output;
use atomcts::report::{CorpusId, Interrupted, REPORT_VERSION, Report};
use atomcts::run::{self, CaseResult, Options};
use atomcts::sweep;
use atomcts_adapters::{Adapter, ReferenceAdapter};
use atomcts_reference::Profile;
use atomcts_reference::knobs::{KNOBS, PROFILES};
use atomcts_reference::outcome::Outcome;
use atomcts_reference::program::{self, Dialect};
use clap::{Args, Parser, Subcommand};
use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Default of `--adapter-timeout-ms`.
const DEFAULT_ADAPTER_TIMEOUT_MS: u64 = 10_000;

/// Conformance test suite and differential fuzzer for GPU atomic memory operations.
#[derive(Parser)]
#[command(name = "atomcts", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the corpus (and generated cases) against an adapter.
    Run(RunArgs),
    /// Write reproducible generated cases in the corpus format.
    Gen(GenArgs),
    /// Run one instruction on a state given on the command line and print the outcome.
    Exec(ExecArgs),
    /// List cases, knobs, profiles or adapters.
    List(ListArgs),
    /// Print the whole corpus with its expectations as JSON.
    Export(ExportArgs),
    /// Merge the JSON results of shards into one report.
    Merge(MergeArgs),
    /// Exhaustive check of a 16-bit float op: the fast path against the reference, every pair.
    Sweep(SweepArgs),
    /// Turn a fuzz artifact into a regression case in the corpus format.
    Regress(RegressArgs),
    /// The conformance matrix and the ambiguity report across implementations (Markdown, JSON,
    /// HTML): runs the corpus on each under the profile it claims, or reads earlier runs.
    Report(ReportArgs),
    /// Differential fuzzing of an adapter: generated cases judged against the reference (or
    /// compared with a second adapter); failures shrunk and written as corpus cases.
    Fuzz(FuzzArgs),
}

#[derive(Args)]
struct ReportArgs {
    /// An implementation to run (repeatable; default: every one `atomcts list adapters` says
    /// is available here), each under the profile it claims (`--profile claimed`).
    #[arg(long)]
    adapter: Vec<String>,
    /// Build from these JSON run reports (`atomcts run --json`) instead of running anything;
    /// shards of one run are merged.
    #[arg(long = "from", value_name = "REPORT.json")]
    from: Vec<PathBuf>,
    /// Output folder: conformance.json, conformance.md, conformance.html.
    #[arg(long)]
    out: PathBuf,
    /// Also fill the summary block of this Markdown file (between the markers
    /// `<!-- conformance-summary:begin ... -->` and `<!-- conformance-summary:end -->`).
    #[arg(long)]
    readme: Option<PathBuf>,
    /// Write nothing: exit 1 when the files in --out (and the --readme block) differ from what
    /// the runs give (a stale committed report), naming them.
    #[arg(long)]
    check: bool,
    /// Where the runs' JSON reports and logs go (default: <out>/runs).
    #[arg(long)]
    runs: Option<PathBuf>,
    /// Corpus directory or file passed on to each run (default: ./spec-cases).
    #[arg(long)]
    cases: Option<PathBuf>,
}

#[derive(Args)]
struct FuzzArgs {
    /// The adapter under test (as for `run`).
    #[arg(long)]
    adapter: String,
    /// A second adapter: a finding is a case the two are judged differently on (an adapter
    /// error on either side is an error of that case, never "the same").
    #[arg(long)]
    against: Option<String>,
    /// Stop after N cases, N >= 1 (default: no limit).
    #[arg(long)]
    cases: Option<u64>,
    /// Stop after S seconds, S > 0 (default: no limit), shrinking included: no adapter call
    /// starts after S, so the campaign ends at most one adapter call later (one
    /// --adapter-timeout-ms for a `cmd:` shim; a shim that must be restarted first also has
    /// its handshake). Cases in flight then are dropped and counted apart. Without --cases or
    /// --time, fuzzing runs until interrupted; findings are written as they are found.
    #[arg(long)]
    time: Option<f64>,
    /// Seed of the case stream.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[command(flatten)]
    profile: ProfileArgs,
    /// Where shrunk failing cases are written (one TOML file per signature).
    #[arg(long, default_value = "target/fuzz-findings")]
    out: PathBuf,
    /// Per-case deadline for `cmd:` adapters, in milliseconds.
    #[arg(long, default_value_t = DEFAULT_ADAPTER_TIMEOUT_MS)]
    adapter_timeout_ms: u64,
    /// Race-checker budget in expanded states per address.
    #[arg(long, default_value_t = atomcts_reference::race::DEFAULT_BUDGET)]
    race_budget: u64,
    /// No progress bar.
    #[arg(long)]
    no_progress: bool,
}

#[derive(Args, Clone)]
struct ProfileArgs {
    /// Profile: default, nvidia-ptx, intel-xe, intel-skylake, spirv, metal; for `run`, also
    /// `claimed`: the profile the adapter claims (`atomcts list adapters`).
    #[arg(long, default_value = "default")]
    profile: String,
    /// Override one knob: `--set knob=option` (repeatable).
    #[arg(long = "set", value_name = "KNOB=OPTION")]
    set: Vec<String>,
}

impl ProfileArgs {
    fn profile(&self) -> Result<Profile> {
        self.profile_claimed(None)
    }

    /// The profile, `claimed` resolved to the adapter's claim (its own, else the one
    /// [`atomcts_adapters::discover::claimed_profile`] gives its name).
    fn profile_claimed(&self, adapter: Option<&dyn Adapter>) -> Result<Profile> {
        let name = match (self.profile.as_str(), adapter) {
            ("claimed", Some(a)) => a.claimed_profile().unwrap_or_else(|| {
                atomcts_adapters::discover::claimed_profile(a.name()).to_string()
            }),
            ("claimed", None) => bail!("--profile claimed needs an adapter (atomcts run)"),
            (n, _) => n.to_string(),
        };
        let mut p = Profile::named(&name)?;
        for s in &self.set {
            let (k, o) = s
                .split_once('=')
                .with_context(|| format!("--set {s}: expected KNOB=OPTION"))?;
            p.set(k, o)?;
            p.name = format!("{}+{k}={o}", p.name);
        }
        Ok(p)
    }
}

#[derive(Args)]
struct RunArgs {
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
    /// other reports keep at most 10,000 results and no passes beyond 100,000 cases).
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
    #[arg(long, default_value_t = atomcts::concurrent::DEFAULT_REPEAT)]
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
}

#[derive(Args)]
struct GenArgs {
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Number of cases.
    #[arg(long, default_value_t = 100)]
    count: u64,
    /// Output directory (one file per dialect).
    #[arg(long)]
    out: PathBuf,
    #[command(flatten)]
    profile: ProfileArgs,
}

#[derive(Args)]
struct ExecArgs {
    /// Dialect: sass, visa, msl.
    #[arg(long)]
    dialect: String,
    /// The instruction.
    #[arg(long)]
    asm: String,
    /// The state as a TOML inline table, e.g. '{ R2 = 0x1000, mem = { 0x1000 = "u32:5" } }'.
    #[arg(long, default_value = "{}")]
    given: String,
    /// Lanes.
    #[arg(long, default_value_t = 1)]
    lanes: u32,
    #[command(flatten)]
    profile: ProfileArgs,
}

#[derive(Args)]
struct ListArgs {
    /// What to list: cases, stats (counts per op, document section and knob), knobs, profiles,
    /// adapters.
    what: String,
    /// Corpus for `cases`.
    #[arg(long)]
    cases: Option<PathBuf>,
}

#[derive(Args)]
struct ExportArgs {
    /// JSON output (the only format).
    #[arg(long)]
    json: bool,
    /// Corpus.
    #[arg(long)]
    cases: Option<PathBuf>,
    /// Write here instead of stdout.
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Args)]
struct MergeArgs {
    /// JSON reports of the shards.
    files: Vec<PathBuf>,
    /// Write JUnit XML here.
    #[arg(long)]
    junit: Option<PathBuf>,
    /// Write the merged JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(Args)]
struct SweepArgs {
    /// Format: f16, bf16.
    #[arg(long, default_value = "f16")]
    format: String,
    /// Op: add, min, max.
    #[arg(long, default_value = "add")]
    op: String,
    /// Rounding of add: nearest_even, toward_zero.
    #[arg(long, default_value = "nearest_even")]
    round: String,
    /// Flushing of subnormals: none, inputs, outputs, both.
    #[arg(long, default_value = "none")]
    ftz: String,
    /// Returned old value of a flushing add (A3): raw, flushed.
    #[arg(long, default_value = "raw")]
    ftz_return: String,
    /// NaN results (A4): canonical, propagate.
    #[arg(long, default_value = "propagate")]
    nan: String,
    /// Min/max NaN rule (A5): minimum_number, intel_snan_wins, spirv_either.
    #[arg(long, default_value = "minimum_number")]
    minmax_nan: String,
    /// Min/max signed zeros (A6): ordered, either, skylake.
    #[arg(long, default_value = "ordered")]
    minmax_zero: String,
    /// Min/max subnormals (A7): compare_raw, flush_before_compare, either.
    #[arg(long, default_value = "compare_raw")]
    minmax_denormals: String,
    /// Every pair of F16x2 halves (old = a | b<<16, src = b | a<<16); needs --format f16.
    #[arg(long)]
    f16x2: bool,
    /// Every combination of options for the format and op (ignores the option flags).
    #[arg(long)]
    all: bool,
    /// First value of the first operand (to resume), e.g. 0x3c00.
    #[arg(long, default_value = "0", value_parser = parse_u16_bound)]
    start: u64,
    /// End (exclusive) of the first operand, at most 0x10000.
    #[arg(long, default_value = "0x10000", value_parser = parse_u16_bound)]
    end: u64,
    /// No progress bar.
    #[arg(long)]
    no_progress: bool,
}

fn parse_u16_bound(s: &str) -> std::result::Result<u64, String> {
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    }
    .map_err(|e| format!("{s}: {e}"))?;
    if v > 0x1_0000 {
        return Err(format!("{s}: at most 0x10000"));
    }
    Ok(v)
}

#[derive(Args)]
struct RegressArgs {
    /// The artifact (a crash-*, leak-* or timeout-* file of cargo fuzz).
    artifact: PathBuf,
    /// The fuzz target that found it: diff_fast_reference, parse_sass, parse_visa, parse_msl.
    #[arg(long)]
    target: String,
    /// Output directory.
    #[arg(long, default_value = "spec-cases/regressions")]
    out: PathBuf,
}

/// Parses arguments, runs, and maps errors to exit code 2.
pub fn main() -> ExitCode {
    // The CUDA adapter's worker process (adapters/src/back/ptx/worker.rs): this executable,
    // started by the adapter itself; not a user command.
    if std::env::args_os().nth(1).as_deref()
        == Some(std::ffi::OsStr::new(
            atomcts_adapters::back::ptx::worker::WORKER_ARG,
        ))
    {
        return ExitCode::from(atomcts_adapters::back::ptx::worker::serve_stdio());
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let code = match dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            2
        }
    };
    // A command stopped by SIGINT or SIGTERM (where it takes them: `run`, `report`) exits with
    // the signal's code whatever it had come to (issue 27, H15).
    ExitCode::from(atomcts::interrupt::requested().map_or(code, atomcts::interrupt::exit_code))
}

fn dispatch(cli: Cli) -> Result<u8> {
    match cli.command {
        Command::Run(a) => cmd_run(a),
        Command::Gen(a) => cmd_gen(a),
        Command::Exec(a) => cmd_exec(a),
        Command::List(a) => cmd_list(a),
        Command::Export(a) => cmd_export(a),
        Command::Merge(a) => cmd_merge(a),
        Command::Sweep(a) => cmd_sweep(a),
        Command::Regress(a) => cmd_regress(a),
        Command::Report(a) => cmd_report(a),
        Command::Fuzz(a) => cmd_fuzz(a),
    }
}

/// Opens the adapter `name` names ([`atomcts_adapters::registry`]). One that must run in a
/// process of its own environment (a known OpenCL driver) runs this command again with it, so
/// that two drivers' LLVMs never share one process. A missing driver is one line, exit 2.
fn adapter(name: &str, timeout_ms: u64) -> Result<Box<dyn Adapter>> {
    use atomcts_adapters::registry::{self, OpenError};
    let options = registry::Options {
        timeout: std::time::Duration::from_millis(timeout_ms),
    };
    match registry::open(name, &options) {
        Ok(a) => Ok(a),
        Err(OpenError::Environment(env)) => {
            let exe = std::env::current_exe().context("locating the atomcts executable")?;
            let mut child = std::process::Command::new(exe)
                .args(std::env::args_os().skip(1))
                .envs(env)
                .env(registry::REEXEC_VAR, "1")
                .spawn()
                .context("running atomcts again with the driver's environment")?;
            // A SIGTERM sent to this process alone reaches the run doing the work (issue 27, H15).
            let status = atomcts::interrupt::wait_forwarding(&mut child)
                .context("running atomcts again with the driver's environment")?;
            if status.code().is_none() {
                #[cfg(unix)]
                let signal = std::os::unix::process::ExitStatusExt::signal(&status);
                #[cfg(not(unix))]
                let signal: Option<i32> = None;
                eprintln!(
                    "error: adapter {name}: the driver's process died (signal {}); narrow it down with --filter",
                    signal.unwrap_or(0)
                );
            }
            std::process::exit(status.code().unwrap_or(2));
        }
        Err(e) => Err(e.into()),
    }
}

fn load_corpus(path: &Option<PathBuf>) -> Result<(PathBuf, Loaded)> {
    let p = path.clone().unwrap_or_else(atomcts::default_corpus);
    if !p.exists() {
        bail!("{}: no such corpus directory or file", p.display());
    }
    let loaded = case::load(&p);
    Ok((p, loaded))
}

fn parse_partition(s: &str) -> Result<(u64, u64)> {
    let spec = s
        .strip_prefix("hash:")
        .with_context(|| format!("--partition {s}: expected hash:K/N"))?;
    let (k, n) = spec
        .split_once('/')
        .with_context(|| format!("--partition {s}: expected hash:K/N"))?;
    let num = |x: &str, what: &str| {
        x.parse::<u64>().with_context(|| {
            format!("--partition {s}: {what} `{x}` is not a positive integer (expected hash:K/N)")
        })
    };
    let (k, n) = (num(k, "K")?, num(n, "N")?);
    if n == 0 || k == 0 || k > n {
        bail!("--partition {s}: need 1 <= K <= N");
    }
    Ok((k, n))
}

fn selected(case: &Case, filters: &[String]) -> bool {
    filters.is_empty()
        || filters.iter().any(|f| {
            if let Some(t) = f.strip_prefix("tag:") {
                case.tags.iter().any(|x| x == t)
            } else if let Some(id) = f.strip_prefix("id:") {
                case.id == id
            } else {
                case.id.contains(f.as_str())
            }
        })
}

/// Reads a baseline: `(line number, case id)` per entry; `#` starts a comment.
fn read_baseline(p: &Path) -> Result<Vec<(usize, String)>> {
    let text = output::read_text("--baseline", p, output::MAX_TEXT_FILE)?;
    Ok(text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.split('#').next().unwrap_or("").trim().to_string()))
        .filter(|(_, l)| !l.is_empty())
        .collect())
}

/// The repro command's words after the profile: adapter, knob overrides, adapter timeout and
/// race budget when they differ from the defaults, each shell-quoted.
fn repro_args(a: &RunArgs) -> String {
    let adapter = (a.adapter != "fast").then_some(a.adapter.as_str());
    adapter_repro_args(adapter, a.adapter_timeout_ms, &a.profile.set, a.race_budget)
}

/// [`repro_args`] from its parts (also `fuzz`'s, per adapter): the adapter (`None`: the
/// default one) with its deadline, knob overrides and race budget.
fn adapter_repro_args(
    adapter: Option<&str>,
    timeout_ms: u64,
    sets: &[String],
    race_budget: u64,
) -> String {
    let mut s = String::new();
    if let Some(adapter) = adapter {
        s.push_str(&format!(" --adapter {}", run::shell_quote(adapter)));
        if timeout_ms != DEFAULT_ADAPTER_TIMEOUT_MS {
            s.push_str(&format!(" --adapter-timeout-ms {timeout_ms}"));
        }
    }
    for set in sets {
        s.push_str(&format!(" --set {}", run::shell_quote(set)));
    }
    if race_budget != atomcts_reference::race::DEFAULT_BUDGET {
        s.push_str(&format!(" --race-budget {race_budget}"));
    }
    s
}

fn cmd_run(a: RunArgs) -> Result<u8> {
    if a.generated_only && a.generated == 0 {
        bail!("--generated-only needs --generated N with N > 0: nothing would run");
    }
    if a.profile.profile != "claimed" {
        a.profile.profile()?;
    }
    let partition = a.partition.as_deref().map(parse_partition).transpose()?;
    // SIGINT and SIGTERM stop the run and keep its reports (issue 27, H15).
    atomcts::interrupt::install().context("taking SIGINT and SIGTERM")?;
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
        .then(|| atomcts::generate::Generator::new(a.seed, a.generated, &profile))
        .transpose()
        .map_err(|e| anyhow::anyhow!("--generated {}: {}", a.generated, e.message))?;
    let opts = Options {
        profile: profile.clone(),
        race_budget: a.race_budget,
        cases_arg,
        adapter_arg: repro_args(&a),
    };
    let in_shard = |c: &Case| partition.is_none_or(|(k, n)| run::in_partition(&c.id, k, n));
    let estimate = corpus
        .iter()
        .filter(|c| selected(c, &a.filter) && in_shard(c))
        .count() as u64
        + partition.map_or(a.generated, |(_, n)| a.generated / n);
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
    let mut baseline_hits: BTreeSet<String> = BTreeSet::new();
    let known: BTreeSet<String> = baseline
        .iter()
        .flatten()
        .filter(|(_, id)| !id.starts_with("flaky "))
        .map(|(_, id)| id.clone())
        .collect();
    let flaky: BTreeSet<String> = baseline
        .iter()
        .flatten()
        .filter_map(|(_, id)| id.strip_prefix("flaky ").map(|s| s.trim().to_string()))
        .collect();
    let mut ids_hash = 0u64;
    let mut selected_count = 0usize;
    // Cases of this shard taken to run, and generated cases made (for an interrupted run's
    // count of what did not run).
    let (mut planned, mut generated_made) = (0u64, 0u64);
    // Results are collected as they come: counts, what the reports need, and every one as a
    // JSON line (issue 9).
    let mut collector =
        atomcts::report::Collector::new(known.clone(), estimate, jsonl).with_flaky(flaky.clone());
    // Corpus first, then generated cases chunk by chunk: generated, run, judged, dropped (a
    // pipelined adapter's window stays full through a chunk: 4 windows, issue 9).
    let gen_chunk = atomcts::generate::RUN_CHUNK.max(4 * adapter.window());
    let mut run_chunk = |cases: Vec<Case>| {
        let mut todo: Vec<&Case> = Vec::new();
        for c in &cases {
            if known.contains(&c.id) || flaky.contains(&c.id) {
                baseline_hits.insert(c.id.clone());
            }
            if !selected(c, &a.filter) {
                continue;
            }
            selected_count += 1;
            ids_hash = ids_hash.wrapping_add(run::stable_hash(&c.id));
            if in_shard(c) {
                todo.push(c);
            }
        }
        planned += todo.len() as u64;
        // A result is completed (instruction, position, citation, reproduce line) only if
        // the collector keeps or writes it (issue 9).
        let mut emit = |c: &Case, r: CaseResult| {
            if run::stopped() {
                // A result that came after a stop request may be the stop's doing: not run.
                return;
            }
            collector.push_with(r, |r| run::complete(r, c, &opts));
            if let Some(b) = &bar {
                b.inc(1);
            }
        };
        // Cases run more than once (--repeat, concurrent cases: issue 12) run one by one; the
        // others in order, a pipelined adapter's window at a time (issue 9).
        let times = |c: &Case| {
            if c.is_concurrent() {
                a.repeat.max(a.concurrent_repeat)
            } else {
                a.repeat
            }
        };
        let mut i = 0;
        while i < todo.len() && !run::stopped() {
            let j = (i..todo.len())
                .find(|&k| times(todo[k]) > 1)
                .unwrap_or(todo.len());
            if j > i {
                run::run_cases_lean(&todo[i..j], adapter.as_mut(), &opts, &mut emit);
                i = j;
                continue;
            }
            emit(
                todo[i],
                run::run_case_repeated(todo[i], adapter.as_mut(), &opts, times(todo[i])),
            );
            i += 1;
        }
    };
    run_chunk(corpus);
    if let Some(mut g) = generator {
        while !run::stopped()
            && let Some(chunk) = g.next_chunk(gen_chunk)
        {
            let chunk = chunk.map_err(|e| anyhow::anyhow!("{e}"))?;
            generated_made += chunk.len() as u64;
            run_chunk(chunk);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let taken = collector.taken();
    let interrupted = atomcts::interrupt::requested().map(|sig| Interrupted {
        signal: atomcts::interrupt::name(sig),
        not_run: planned.saturating_sub(taken),
        not_generated: a.generated.saturating_sub(generated_made),
    });
    // What the report says about the adapter, then the adapter itself is stopped (a shim's
    // process group with it) before the reports are written.
    let (adapter_name, implementation, level, device) = (
        adapter.name().to_string(),
        adapter.describe(),
        adapter.level().name().to_string(),
        adapter.device(),
    );
    drop(adapter);
    let (results, omitted, jsonl) = collector.finish();
    if let (Some(b), Some(entries)) = (&a.baseline, &baseline) {
        // A baseline entry that names no case is stale or misspelt: an error, never ignored
        // (D22). Checked against every loaded case, whatever the filter or shard.
        for (line, id) in entries {
            let id = id.strip_prefix("flaky ").map_or(id.as_str(), str::trim);
            if !baseline_hits.contains(id) {
                load_errors.push(format!(
                    "{}:{line}: baseline entry `{id}` matches no case",
                    b.display()
                ));
            }
        }
    }
    let report = Report {
        version: REPORT_VERSION,
        adapter: adapter_name,
        profile: profile.name.clone(),
        implementation,
        level: Some(level),
        partition: partition.map(|(k, n)| format!("hash:{k}/{n}")),
        corpus: CorpusId {
            selected: selected_count,
            digest: format!("{ids_hash:016x}"),
        },
        load_errors,
        results,
        omitted,
        device,
        jsonl,
        interrupted,
    };
    let written = write_outputs(&report, &a.junit, &a.json);
    let programs = a
        .json
        .as_ref()
        .map_or(Ok(()), |json| write_programs(&report, json));
    print!("{}", report.human(a.verbose));
    written?;
    programs?;
    if let Some(sig) = atomcts::interrupt::requested() {
        return Ok(atomcts::interrupt::exit_code(sig));
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

/// Beside a JSON report `r.json`: `r.programs/<case>.cl` (`.spvasm`, `.wgsl`), the program that
/// ran each failing case on a semantic-level implementation (the OpenCL C kernel, the SPIR-V
/// disassembly, the WGSL shader), headed by its reproduce command.
fn write_programs(report: &Report, json: &Path) -> Result<()> {
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

/// Writes the reports; a failure to write one does not stop the other (nor the human report),
/// and is an error at the end (D12).
fn write_outputs(report: &Report, junit: &Option<PathBuf>, json: &Option<PathBuf>) -> Result<()> {
    let mut failed = Vec::new();
    if let Some(p) = junit
        && let Err(e) = output::write("--junit", p, report.junit())
    {
        failed.push(format!("writing {e}"));
    }
    if let Some(p) = json {
        let text = serde_json::to_string_pretty(report)?;
        if let Err(e) = output::write("--json", p, text) {
            failed.push(format!("writing {e}"));
        }
    }
    if !failed.is_empty() {
        bail!("{}", failed.join("; "));
    }
    Ok(())
}

fn cmd_gen(a: GenArgs) -> Result<u8> {
    let profile = a.profile.profile()?;
    let n = atomcts::generate::write(a.seed, a.count, &profile, &a.out)?;
    println!("wrote {n} cases to {}", a.out.display());
    Ok(0)
}

fn cmd_exec(a: ExecArgs) -> Result<u8> {
    let dialect = Dialect::from_name(&a.dialect)
        .with_context(|| format!("unknown dialect `{}` (sass, visa, msl)", a.dialect))?;
    let profile = a.profile.profile()?;
    let (_, state) = atomcts::given::case(dialect, &a.asm, a.lanes, &a.given)?;
    let run = program::run(dialect, &a.asm, &state, &profile)?;
    match &run.outcome {
        Outcome::Completed(c) => {
            println!("completed");
            for line in atomcts::verify::diff(&state, &c.state) {
                println!("  {line}");
            }
            for (loc, f) in &c.open {
                println!(
                    "  open: {loc} bits {}..{}: {:?}",
                    f.lo,
                    f.lo + f.bits,
                    f.allowed
                );
            }
        }
        Outcome::Fault(f) => {
            println!("fault");
            for (l, c) in &f.lanes {
                println!("  lane {l}: {c}");
            }
        }
        Outcome::Invalid(r) => println!("invalid: {r}"),
        Outcome::Unspecified(w) => println!("unspecified: {w}"),
    }
    Ok(0)
}

fn cmd_list(a: ListArgs) -> Result<u8> {
    match a.what.as_str() {
        "cases" => {
            let (_, loaded) = load_corpus(&a.cases)?;
            for c in &loaded.cases {
                println!("{}", c.id);
            }
            for e in &loaded.errors {
                eprintln!("error: {e}");
            }
            return Ok(if loaded.errors.is_empty() { 0 } else { 2 });
        }
        "stats" => {
            // Corpus counts per dialect and op, and per document section cited.
            let (_, loaded) = load_corpus(&a.cases)?;
            let mut per_op: std::collections::BTreeMap<(String, String), usize> =
                Default::default();
            let mut per_doc: std::collections::BTreeMap<String, usize> = Default::default();
            let mut probes: std::collections::BTreeMap<String, usize> = Default::default();
            for c in &loaded.cases {
                *per_op
                    .entry((c.dialect.name().into(), run::op_label(c.dialect, &c.asm)))
                    .or_default() += 1;
                let section = c
                    .cite
                    .split([',', ';', ':'])
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_string();
                *per_doc.entry(section).or_default() += 1;
                if let Some(k) = &c.probe {
                    *probes.entry(k.clone()).or_default() += 1;
                }
            }
            println!("cases per dialect and op:");
            for ((d, op), n) in &per_op {
                println!("  {d:<5} {op:<40} {n:>5}");
            }
            println!("cases per cited document section:");
            for (sec, n) in &per_doc {
                println!("  {sec:<70} {n:>5}");
            }
            println!("probes per knob:");
            for k in KNOBS {
                println!(
                    "  {:<36} {:>5}",
                    k.id,
                    probes.get(k.id).copied().unwrap_or(0)
                );
            }
            println!("{} cases in all", loaded.cases.len());
            return Ok(if loaded.errors.is_empty() { 0 } else { 2 });
        }
        "knobs" => {
            for k in KNOBS {
                println!(
                    "{} ({}): {}  [default: {}]",
                    k.id, k.ambiguity, k.summary, k.default
                );
                for o in k.options {
                    println!("    {:<22} {}", o.name, o.cite);
                }
            }
        }
        "profiles" => {
            for (name, desc, picks) in PROFILES {
                println!("{name}: {desc}");
                for (k, o) in picks.iter() {
                    println!("    {k} = {o}");
                }
            }
        }
        "adapters" => {
            print!("{}", atomcts_adapters::registry::kinds_help());
            println!(
                "implementations (`atomcts report` runs the available ones, each under the profile it claims):"
            );
            for i in atomcts_adapters::discover::implementations() {
                let state = match &i.available {
                    Ok(()) => "available".to_string(),
                    Err(why) => format!("unavailable: {why}"),
                };
                println!(
                    "{} ({state}; {}; claims profile {}{})",
                    i.adapter,
                    i.what,
                    atomcts_adapters::discover::claimed_profile(&i.adapter),
                    i.baseline
                        .as_deref()
                        .map_or(String::new(), |b| format!("; baseline {b}"))
                );
            }
        }
        other => bail!("unknown list `{other}` (cases, stats, knobs, profiles, adapters)"),
    }
    Ok(0)
}

fn cmd_export(a: ExportArgs) -> Result<u8> {
    if !a.json {
        bail!("export supports --json only");
    }
    let p = a.cases.clone().unwrap_or_else(atomcts::default_corpus);
    if !p.exists() {
        bail!("{}: no such corpus directory or file", p.display());
    }
    if let Some(out) = &a.out {
        output::check_outputs(&[("--out", out)])?;
    }
    let mut cases = Vec::new();
    let (files, found_errors) = case::discover(&p);
    let mut errors: Vec<String> = found_errors.iter().map(|e| e.to_string()).collect();
    for f in files {
        let text = match case::read_case_file(&f) {
            Ok(t) => t,
            Err(e) => {
                errors.push(e.to_string());
                continue;
            }
        };
        let root = case::id_root(&f, &p);
        let loaded = case::parse_file(&root, &f, text.clone());
        errors.extend(loaded.errors.iter().map(|e| e.to_string()));
        let raw: toml::Table = match toml::from_str(&text) {
            Ok(t) => t,
            Err(_) => continue,
        };
        let raw_cases = raw
            .get("case")
            .and_then(|c| c.as_array())
            .cloned()
            .unwrap_or_default();
        let file_cite = raw.get("cite").cloned();
        for c in loaded.cases {
            let name = c.id.split("::").nth(1).unwrap_or("");
            if let Some(rc) = raw_cases
                .iter()
                .find(|rc| rc.get("name").and_then(|n| n.as_str()) == Some(name))
            {
                let mut obj = serde_json::to_value(rc)?;
                if let Some(m) = obj.as_object_mut() {
                    m.insert("id".into(), c.id.clone().into());
                    m.insert("dialect".into(), c.dialect.name().into());
                    if !m.contains_key("cite")
                        && let Some(fc) = &file_cite
                    {
                        m.insert("cite".into(), serde_json::to_value(fc)?);
                    }
                }
                cases.push(obj);
            }
        }
    }
    let doc = serde_json::json!({ "format": "atomcts-spec-cases", "version": 1, "errors": errors, "cases": cases });
    let text = serde_json::to_string_pretty(&doc)?;
    match &a.out {
        Some(p) => output::write("--out", p, text)?,
        None => println!("{text}"),
    }
    Ok(if errors.is_empty() { 0 } else { 2 })
}

fn cmd_merge(a: MergeArgs) -> Result<u8> {
    let outputs: Vec<(&str, &Path)> = [("--junit", &a.junit), ("--json", &a.json)]
        .into_iter()
        .filter_map(|(f, p)| Some((f, p.as_deref()?)))
        .collect();
    output::check_outputs(&outputs)?;
    let mut reports = Vec::new();
    for f in &a.files {
        reports.push((f.display().to_string(), read_report(f)?));
    }
    // What keeps the shards from being one whole run is reported in the merged report (its
    // load errors) and makes the exit code 2; `report --from` refuses the same.
    let (mut merged, problems) = Report::merge_named(reports).map_err(|e| anyhow::anyhow!(e))?;
    merged
        .load_errors
        .extend(problems.into_iter().map(|e| format!("merge: {e}")));
    write_outputs(&merged, &a.junit, &a.json)?;
    print!("{}", merged.human(false));
    Ok(merged.exit_code() as u8)
}

fn sweep_configs(a: &SweepArgs) -> Result<Vec<sweep::Config>> {
    use atomcts_reference::float::MinMaxRules;
    use atomcts_reference::ir::AtomicOp;
    use atomcts_reference::types::DataType;
    let e = |m: String| anyhow::anyhow!(m);
    let ty = match (a.format.as_str(), a.f16x2) {
        ("f16", false) => DataType::F16,
        ("f16", true) => DataType::F16x2,
        ("bf16", false) => DataType::BF16,
        ("bf16", true) => bail!("--f16x2 needs --format f16"),
        (other, _) => bail!("unknown format `{other}` (f16, bf16)"),
    };
    let op = match a.op.as_str() {
        "add" => AtomicOp::Add,
        "min" => AtomicOp::Min,
        "max" => AtomicOp::Max,
        other => bail!("unknown op `{other}` (add, min, max)"),
    };
    if a.start >= a.end {
        bail!("--start {:#x} is not below --end {:#x}", a.start, a.end);
    }
    if a.all {
        return Ok(sweep::all_configs(ty, op));
    }
    let ftz_return = match a.ftz_return.as_str() {
        "raw" => false,
        "flushed" => true,
        other => bail!("unknown --ftz-return `{other}` (raw, flushed)"),
    };
    let env = sweep::env(
        sweep::lookup(sweep::ROUNDS, "rounding", &a.round).map_err(e)?,
        sweep::lookup(sweep::FTZ, "ftz mode", &a.ftz).map_err(e)?,
        ftz_return,
        sweep::lookup(sweep::NANS, "NaN encoding", &a.nan).map_err(e)?,
        MinMaxRules {
            nan: sweep::lookup(sweep::NAN_RULES, "min/max NaN rule", &a.minmax_nan).map_err(e)?,
            zero: sweep::lookup(sweep::ZERO_RULES, "min/max zero rule", &a.minmax_zero)
                .map_err(e)?,
            denormals: sweep::lookup(
                sweep::DENORM_RULES,
                "min/max subnormal rule",
                &a.minmax_denormals,
            )
            .map_err(e)?,
        },
    );
    Ok(vec![sweep::Config { ty, op, env }])
}

fn cmd_sweep(a: SweepArgs) -> Result<u8> {
    let configs = sweep_configs(&a)?;
    let t0 = std::time::Instant::now();
    let rows = a.end - a.start;
    let show = !a.no_progress && std::io::stderr().is_terminal();
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(rows * configs.len() as u64),
        if show {
            indicatif::ProgressDrawTarget::stderr()
        } else {
            indicatif::ProgressDrawTarget::hidden()
        },
    );
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:40} {pos}/{len} first operands {elapsed_precise} eta {eta} {msg}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (mut pairs, mut mismatches) = (0u64, 0u64);
    for c in &configs {
        bar.set_message(c.describe());
        let o = sweep::sweep(c, a.start, a.end, &|| bar.inc(1), &stop);
        pairs += o.pairs;
        mismatches += o.mismatches;
        if o.mismatches > 0 {
            bar.suspend(|| {
                println!("{}: {} mismatches", c.describe(), o.mismatches);
                for m in &o.first {
                    println!("  {m}");
                }
                if o.mismatches > o.first.len() as u64 {
                    println!("  ... ({} more)", o.mismatches - o.first.len() as u64);
                }
            });
        }
    }
    bar.finish_and_clear();
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "sweep: {pairs} pairs checked in {} configuration(s), first operand {:#06x}..{:#06x}, {mismatches} mismatches, {secs:.1} s ({:.1} M pairs/s)",
        configs.len(),
        a.start,
        a.end,
        pairs as f64 / secs.max(1e-9) / 1e6
    );
    Ok(if mismatches > 0 { 1 } else { 0 })
}

fn cmd_regress(a: RegressArgs) -> Result<u8> {
    let data = output::read_bounded("artifact", &a.artifact, output::MAX_ARTIFACT)?;
    let name = a.artifact.file_name().map_or_else(
        || a.artifact.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let r = atomcts::oracles::regression_case(&a.target, &name, &data)
        .map_err(|m| anyhow::anyhow!("{m}"))?;
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let path = a.out.join(&r.file_name);
    output::write("--out", &path, &r.text)?;
    println!("wrote {}", path.display());
    // The new case must load and pass on the reference under its own pins.
    let root = corpus_root(&a.out);
    let loaded = case::parse_file(&root, &path, r.text.clone());
    if let Some(e) = loaded.errors.first() {
        bail!("the written case does not load: {e}");
    }
    let mut profile = Profile::default();
    for c in &loaded.cases {
        for (k, o) in &c.where_ {
            profile.set(k, o)?;
        }
        let opts = Options {
            profile: profile.clone(),
            race_budget: atomcts_reference::race::DEFAULT_BUDGET,
            cases_arg: path.display().to_string(),
            adapter_arg: String::new(),
        };
        let res = run::run_case(c, &mut ReferenceAdapter, &opts);
        println!("{}: {:?} on the reference", c.id, res.status);
        if res.status.is_failure() || res.status == run::Status::Error {
            return Ok(1);
        }
    }
    Ok(0)
}

/// Reads a JSON run report of this atomcts's format (a regular file of at most
/// [`output::MAX_REPORT_FILE`] bytes).
fn read_report(f: &Path) -> Result<Report> {
    let text = output::read_text("report", f, output::MAX_REPORT_FILE)?;
    let r: Report = serde_json::from_str(&text)
        .with_context(|| format!("{} is not an atomcts JSON report", f.display()))?;
    if r.version != REPORT_VERSION {
        bail!(
            "{}: report version {} (this atomcts reads {REPORT_VERSION})",
            f.display(),
            r.version
        );
    }
    Ok(r)
}

/// Runs the corpus on one adapter under its claimed profile, as `atomcts run` in a process of
/// its own (a driver's environment and crashes stay there); its JSON report, named by its path.
fn report_run(a: &ReportArgs, adapter: &str, runs: &Path) -> Result<(String, Report)> {
    let slug = atomcts_adapters::discover::slug(adapter);
    let json = runs.join(format!("{slug}.json"));
    let log = runs.join(format!("{slug}.log"));
    output::check_outputs(&[("--json", &json), ("log", &log)])?;
    let _ = std::fs::remove_file(&json);
    let exe = std::env::current_exe().context("locating the atomcts executable")?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args([
        "run",
        "--no-progress",
        "--profile",
        "claimed",
        "--adapter",
        adapter,
    ])
    .arg("--json")
    .arg(&json);
    if let Some(c) = &a.cases {
        cmd.arg("--cases").arg(c);
    }
    let logf = output::create("log", &log)?;
    let t0 = std::time::Instant::now();
    eprintln!("report: running {adapter} (log: {})", log.display());
    let mut child = cmd
        .stdout(logf.try_clone()?)
        .stderr(logf)
        .spawn()
        .context("running atomcts run")?;
    // A stop request reaches the run, which writes what it has and stops its adapter.
    let status = atomcts::interrupt::wait_forwarding(&mut child).context("running atomcts run")?;
    if let Some(sig) = atomcts::interrupt::requested() {
        bail!(
            "interrupted by {} while {adapter} ran: no report written",
            atomcts::interrupt::name(sig)
        );
    }
    let last = output::last_line(&log);
    eprintln!(
        "report: {adapter}: {last} ({:.1} s, exit {})",
        t0.elapsed().as_secs_f64(),
        status.code().map_or("signal".into(), |c| c.to_string())
    );
    if !json.exists() {
        bail!(
            "{adapter}: the run wrote no report (exit {}): {last} (see {})",
            status.code().unwrap_or(-1),
            log.display()
        );
    }
    Ok((json.display().to_string(), read_report(&json)?))
}

/// The files `report` writes into `--out`.
const REPORT_FILES: [&str; 3] = ["conformance.json", "conformance.md", "conformance.html"];

fn cmd_report(a: ReportArgs) -> Result<u8> {
    use atomcts::conformance::Conformance;
    if !a.from.is_empty() && !a.adapter.is_empty() {
        bail!("--from and --adapter exclude each other: build from runs, or run");
    }
    // The outputs are checked before anything runs (issue 27, H9): `--out` is a folder (or a
    // new one) whose report files are regular files (or new ones), the README a regular file.
    let outs: Vec<PathBuf> = REPORT_FILES.iter().map(|n| a.out.join(n)).collect();
    if let Ok(m) = std::fs::metadata(&a.out)
        && !m.is_dir()
    {
        bail!("--out {}: not a directory", a.out.display());
    }
    if a.out.is_dir() && !a.check {
        let list: Vec<(&str, &Path)> = outs.iter().map(|p| ("--out", p.as_path())).collect();
        output::check_outputs(&list)?;
    }
    if let Some(p) = &a.readme {
        output::check_output("--readme", p)?;
    }
    atomcts::interrupt::install().context("taking SIGINT and SIGTERM")?;
    // The run reports of each implementation, named by their files.
    let mut named: Vec<(String, Report)> = Vec::new();
    if !a.from.is_empty() {
        for f in &a.from {
            named.push((f.display().to_string(), read_report(f)?));
        }
    } else {
        let adapters: Vec<String> = if a.adapter.is_empty() {
            let found = atomcts_adapters::discover::available();
            if found.is_empty() {
                bail!("no implementation is available here (atomcts list adapters says why)");
            }
            found.into_iter().map(|i| i.adapter).collect()
        } else {
            a.adapter.clone()
        };
        let runs = a.runs.clone().unwrap_or_else(|| a.out.join("runs"));
        std::fs::create_dir_all(&runs).with_context(|| format!("creating {}", runs.display()))?;
        for ad in &adapters {
            named.push(report_run(&a, ad, &runs)?);
        }
    }
    // Reports of one run (same adapter and profile) are its shards: merged, and refused unless
    // they are the whole run, as `atomcts merge` checks (issue 27, H14).
    let (reports, refused) = Report::merge_runs(named).map_err(|e| anyhow::anyhow!(e))?;
    if !refused.is_empty() {
        bail!(
            "the run reports are not whole runs, so no conformance report is made:\n  {}",
            refused.join("\n  ")
        );
    }
    let c = Conformance::build(&reports);
    let files = [
        (REPORT_FILES[0], c.json()),
        (REPORT_FILES[1], c.markdown()),
        (REPORT_FILES[2], c.html()),
    ];
    let readme = match &a.readme {
        Some(p) => {
            let old = output::read_text("--readme", p, output::MAX_TEXT_FILE)?;
            let new = c
                .fill_readme(&old)
                .map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
            Some((p.clone(), old, new))
        }
        None => None,
    };
    if a.check {
        let mut stale = Vec::new();
        for (name, text) in &files {
            let p = a.out.join(name);
            // A missing file is stale; one that is not a regular file, or too large, an error.
            let committed = match output::read_text("--out", &p, output::MAX_REPORT_FILE) {
                Ok(t) => Some(t),
                Err(output::FileError::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    None
                }
                Err(e) => return Err(e.into()),
            };
            if committed.as_deref() != Some(text.as_str()) {
                stale.push(p.display().to_string());
            }
        }
        if let Some((p, old, new)) = &readme
            && old != new
        {
            stale.push(format!("{} (the summary block)", p.display()));
        }
        if stale.is_empty() {
            println!("report: the committed report is up to date");
            return Ok(0);
        }
        println!(
            "report: stale (regenerate with tools/regen-conformance.sh): {}",
            stale.join(", ")
        );
        return Ok(1);
    }
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    for (name, text) in &files {
        output::write("--out", &a.out.join(name), text)?;
    }
    if let Some((p, _, new)) = &readme {
        output::write("--readme", p, new)?;
    }
    print!("{}", c.readme_summary());
    println!(
        "report: wrote {}",
        a.out.join("conformance.{json,md,html}").display()
    );
    Ok(0)
}

fn cmd_fuzz(a: FuzzArgs) -> Result<u8> {
    atomcts::interrupt::install().context("taking SIGINT and SIGTERM")?;
    use atomcts::fuzz::{FuzzOptions, fuzz, summary_text};
    let profile = a.profile.profile()?;
    if a.cases == Some(0) {
        bail!("--cases 0: a campaign of no case checks nothing (give N >= 1)");
    }
    let time = match a.time {
        // A campaign of no time checks nothing; a limit too long to represent is none.
        Some(t) if !(t.is_finite() && t > 0.0) => {
            bail!(
                "--time {t}: expected a number of seconds more than 0 (a campaign of no time checks nothing)"
            )
        }
        t => {
            t.map(|t| std::time::Duration::try_from_secs_f64(t).unwrap_or(std::time::Duration::MAX))
        }
    };
    let mut under_test = adapter(&a.adapter, a.adapter_timeout_ms)?;
    let mut other = a
        .against
        .as_deref()
        .map(|b| adapter(b, a.adapter_timeout_ms))
        .transpose()?;
    // The words after `atomcts run --cases FILE` that rerun a finding on one adapter.
    let repro = |adapter: &str| {
        let rest = adapter_repro_args(
            Some(adapter),
            a.adapter_timeout_ms,
            &a.profile.set,
            a.race_budget,
        );
        format!(" --profile {}{rest}", run::shell_quote(&a.profile.profile))
    };
    let command: Vec<String> = std::env::args().map(|w| run::shell_quote(&w)).collect();
    let opts = FuzzOptions {
        seed: a.seed,
        cases: a.cases,
        time,
        out: a.out.clone(),
        repro_sides: std::iter::once(&a.adapter)
            .chain(&a.against)
            .map(|x| repro(x))
            .collect(),
        command: command.join(" "),
        // SIGINT and SIGTERM (`interrupt::install` below) end the campaign with its summary;
        // the adapters are dropped (their processes stopped) on the way out and the exit code
        // is the signal's.
        stop: None,
    };
    let run_opts = Options {
        profile: profile.clone(),
        race_budget: a.race_budget,
        cases_arg: String::new(),
        adapter_arg: String::new(),
    };
    let show = !a.no_progress && std::io::stderr().is_terminal();
    let bar = show.then(|| {
        let b = match a.cases {
            Some(n) => indicatif::ProgressBar::new(n),
            None => indicatif::ProgressBar::new_spinner(),
        };
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:30} {pos} cases {per_sec} {elapsed_precise} eta {eta} {msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    });
    eprintln!(
        "fuzzing {}{} under profile {} (seed {}), findings to {}",
        under_test.name(),
        other
            .as_ref()
            .map_or(String::new(), |b| format!(" against {}", b.name())),
        profile.name,
        a.seed,
        a.out.display()
    );
    let summary = fuzz(
        under_test.as_mut(),
        match &mut other {
            Some(b) => Some(&mut **b),
            None => None,
        },
        &run_opts,
        &opts,
        &mut |s| {
            if let Some(b) = &bar {
                b.set_position(s.cases);
                b.set_message(format!(
                    "{} failing, {} signatures",
                    s.failing,
                    s.signatures.len()
                ));
            }
        },
    );
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    print!("{}", summary_text(&summary));
    Ok(summary.exit_code())
}
