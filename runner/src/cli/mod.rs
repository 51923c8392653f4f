//! Command-line parsing and the subcommands. The only place that uses `anyhow`.
//! One file per subcommand (`cli/<subcommand>.rs`); this file parses the command line,
//! dispatches, and holds what several subcommands share (adapters, corpus loading, filters).

mod exec;
mod export;
mod fuzz;
mod generate;
mod list;
mod merge;
mod regress;
mod report;
mod repro;
mod run;
mod sweep;

use anyhow::{Context, Result, bail};
use atomcts::corpus::case::{self, Loaded};
use atomcts::exit::{EXIT_ERROR, EXIT_OK};
use atomcts::report::output;
use atomcts::report::{REPORT_VERSION, Report};
use atomcts_adapters::Adapter;
use atomcts_reference::Profile;
use clap::{Args, Parser, Subcommand};
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
    Run(run::RunArgs),
    /// Write reproducible generated cases in the corpus format.
    Gen(generate::GenArgs),
    /// Run one instruction on a state given on the command line and print the outcome.
    Exec(exec::ExecArgs),
    /// List cases, knobs, profiles or adapters.
    List(list::ListArgs),
    /// Print the whole corpus with its expectations as JSON.
    Export(export::ExportArgs),
    /// Merge the JSON results of shards into one report.
    Merge(merge::MergeArgs),
    /// Exhaustive check of a 16-bit float op: the fast path against the reference, every pair.
    Sweep(sweep::SweepArgs),
    /// Turn a fuzz artifact into a regression case in the corpus format.
    Regress(regress::RegressArgs),
    /// The conformance matrix and the ambiguity report across implementations (Markdown, JSON,
    /// HTML): runs the corpus on each under the profile it claims, or reads earlier runs.
    Report(report::ReportArgs),
    /// Standalone reproducers of failing cases: one Python script each (the kernel as it ran,
    /// its buffers, the documents' rule), runnable without atomcts.
    Repro(repro::ReproArgs),
    /// Differential fuzzing of an adapter: generated cases judged against the reference (or
    /// compared with a second adapter); failures shrunk and written as corpus cases.
    Fuzz(fuzz::FuzzArgs),
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
            ("claimed", None) => {
                bail!("--profile claimed needs an adapter (atomcts run, fuzz or repro)")
            }
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
            let code = if e.use_stderr() { EXIT_ERROR } else { EXIT_OK };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let code = match dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            EXIT_ERROR
        }
    };
    // A command stopped by SIGINT or SIGTERM (where it takes them: `run`, `report`) exits with
    // the signal's code whatever it had come to (issue 27, H15).
    ExitCode::from(
        atomcts::run::interrupt::requested().map_or(code, atomcts::run::interrupt::exit_code),
    )
}

fn dispatch(cli: Cli) -> Result<u8> {
    match cli.command {
        Command::Run(a) => run::cmd_run(a),
        Command::Gen(a) => generate::cmd_gen(a),
        Command::Exec(a) => exec::cmd_exec(a),
        Command::List(a) => list::cmd_list(a),
        Command::Export(a) => export::cmd_export(a),
        Command::Merge(a) => merge::cmd_merge(a),
        Command::Sweep(a) => sweep::cmd_sweep(a),
        Command::Regress(a) => regress::cmd_regress(a),
        Command::Report(a) => report::cmd_report(a),
        Command::Repro(a) => repro::cmd_repro(a),
        Command::Fuzz(a) => fuzz::cmd_fuzz(a),
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
            let status = atomcts::run::interrupt::wait_forwarding(&mut child)
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
            std::process::exit(status.code().unwrap_or(i32::from(EXIT_ERROR)));
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
        s.push_str(&format!(
            " --adapter {}",
            atomcts::run::repro::shell_quote(adapter)
        ));
        if timeout_ms != DEFAULT_ADAPTER_TIMEOUT_MS {
            s.push_str(&format!(" --adapter-timeout-ms {timeout_ms}"));
        }
    }
    for set in sets {
        s.push_str(&format!(" --set {}", atomcts::run::repro::shell_quote(set)));
    }
    if race_budget != atomcts_reference::race::DEFAULT_BUDGET {
        s.push_str(&format!(" --race-budget {race_budget}"));
    }
    s
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
