//! `atomcts fuzz`: differential fuzzing of an adapter.

use super::{DEFAULT_ADAPTER_TIMEOUT_MS, ProfileArgs, adapter, adapter_repro_args};
use anyhow::{Context, Result, bail};
use atomcts::run;
use atomcts::run::results::Options;
use clap::Args;
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(Args)]
pub(super) struct FuzzArgs {
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
    /// Send every drawn case, also those an adapter declares it cannot run before running
    /// them (by default such a case is screened out and another drawn; the summary counts
    /// them by reason).
    #[arg(long)]
    no_screen: bool,
    /// Make every draft: by default a shape (instruction, types, spaces, edge addresses) the
    /// screen turned away 4 times and never let through is passed over, one draft in 64 of it
    /// still made (the summary counts them).
    #[arg(long, conflicts_with = "no_screen")]
    no_learn: bool,
    /// Send the screened cases too, and report as an error any that an adapter does not
    /// answer not applicable (checks the screen; the screened cases stay out of the counts).
    #[arg(long, conflicts_with = "no_screen")]
    audit_screen: bool,
}

pub(super) fn cmd_fuzz(a: FuzzArgs) -> Result<u8> {
    atomcts::run::interrupt::install().context("taking SIGINT and SIGTERM")?;
    use atomcts::fuzzing::fuzz::{FuzzOptions, fuzz, summary_text};
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
    // `claimed`: the profile the adapter under test claims.
    let profile = a.profile.profile_claimed(Some(under_test.as_ref()))?;
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
        format!(
            " --profile {}{rest}",
            run::repro::shell_quote(&a.profile.profile)
        )
    };
    let command: Vec<String> = std::env::args()
        .map(|w| run::repro::shell_quote(&w))
        .collect();
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
        screen: !a.no_screen,
        learn: !a.no_learn,
        audit_screen: a.audit_screen,
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
