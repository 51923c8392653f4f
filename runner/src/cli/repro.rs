//! `atomcts repro`: standalone reproducers of failing cases (issue 30, point 5), one Python
//! script a case (`atomcts::report::reproducers`).

use super::{DEFAULT_ADAPTER_TIMEOUT_MS, ProfileArgs, adapter, adapter_repro_args, load_corpus};
use anyhow::{Context, Result, bail};
use atomcts::report::reproducers::write_reproducers;
use atomcts::report::session::Plan;
use atomcts::run::results::Options;
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub(super) struct ReproArgs {
    /// Corpus directory or file (default: ./spec-cases, else the one beside the source).
    #[arg(long)]
    cases: Option<PathBuf>,
    #[arg(long, help = atomcts_adapters::registry::adapter_help())]
    adapter: String,
    /// Per-case deadline for `cmd:` adapters, in milliseconds.
    #[arg(long, default_value_t = DEFAULT_ADAPTER_TIMEOUT_MS)]
    adapter_timeout_ms: u64,
    #[command(flatten)]
    profile: ProfileArgs,
    /// Only cases whose id contains this text, `id:<exact id>`, or `tag:<t>` (repeatable; any
    /// matches).
    #[arg(long)]
    filter: Vec<String>,
    /// The folder the scripts go to (`<folder>/<case id>.py`; created if missing).
    #[arg(long)]
    out: PathBuf,
    /// Write a reproducer of every selected case, not only the failing ones.
    #[arg(long)]
    all: bool,
    /// Race-checker budget in expanded states per address.
    #[arg(long, default_value_t = atomcts_reference::race::DEFAULT_BUDGET)]
    race_budget: u64,
}

pub(super) fn cmd_repro(a: ReproArgs) -> Result<u8> {
    if a.profile.profile != "claimed" {
        a.profile.profile()?;
    }
    if a.out.exists() && !a.out.is_dir() {
        bail!("--out {}: exists and is not a folder", a.out.display());
    }
    atomcts::run::interrupt::install().context("taking SIGINT and SIGTERM")?;
    let (path, loaded) = load_corpus(&a.cases)?;
    for e in &loaded.errors {
        eprintln!("error: {e}");
    }
    let mut adapter = adapter(&a.adapter, a.adapter_timeout_ms)?;
    let profile = a.profile.profile_claimed(Some(adapter.as_ref()))?;
    let opts = Options {
        profile,
        race_budget: a.race_budget,
        cases_arg: path.display().to_string(),
        adapter_arg: adapter_repro_args(
            Some(&a.adapter),
            a.adapter_timeout_ms,
            &a.profile.set,
            a.race_budget,
        ),
    };
    let plan = Plan {
        filters: a.filter.clone(),
        ..Plan::default()
    };
    let outcome = write_reproducers(
        &loaded.cases,
        &plan,
        adapter.as_mut(),
        &opts,
        &a.out,
        a.all,
        &mut |line| println!("{line}"),
    )
    .map_err(anyhow::Error::msg)?;
    if outcome.selected == 0 {
        eprintln!("error: no case selected (check --cases and --filter): nothing was run");
    } else {
        println!(
            "{} case(s) run, {} failing, {} reproducer(s) written",
            outcome.selected,
            outcome.failing,
            outcome
                .lines
                .iter()
                .filter(|l| matches!(l, atomcts::report::reproducers::Line::Written { .. }))
                .count()
        );
    }
    if !loaded.errors.is_empty() {
        return Ok(atomcts::exit::EXIT_ERROR);
    }
    if let Some(sig) = atomcts::run::interrupt::requested() {
        return Ok(atomcts::run::interrupt::exit_code(sig));
    }
    Ok(outcome.exit_code())
}
