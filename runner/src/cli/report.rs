//! `atomcts report`: the conformance matrix and the ambiguity report across implementations.

use super::read_report;
use anyhow::{Context, Result, bail};
use atomcts::exit::{EXIT_NONCONFORMANCE, EXIT_OK};
use atomcts::report::Report;
use atomcts::report::publish;
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub(super) struct ReportArgs {
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
    /// Evidence about knobs from outside the runs (repeatable): a TOML file per source, such as
    /// `docs/evidence/intel-genx-ir.toml` (docs/report-format.md "Evidence").
    #[arg(long, value_name = "EVIDENCE.toml")]
    evidence: Vec<PathBuf>,
    /// Corpus directory or file passed on to each run (default: ./spec-cases).
    #[arg(long)]
    cases: Option<PathBuf>,
}

pub(super) fn cmd_report(a: ReportArgs) -> Result<u8> {
    use atomcts::report::conformance::Conformance;
    if !a.from.is_empty() && !a.adapter.is_empty() {
        bail!("--from and --adapter exclude each other: build from runs, or run");
    }
    // The outputs and the evidence are checked before anything runs (issue 27, H9).
    publish::check_outputs(&a.out, a.check, a.readme.as_deref())?;
    let mut evidence = Vec::new();
    for f in &a.evidence {
        evidence.extend(atomcts::report::evidence::read(f)?);
    }
    atomcts::run::interrupt::install().context("taking SIGINT and SIGTERM")?;
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
            let json = publish::run_implementation(
                &std::env::current_exe,
                ad,
                a.cases.as_deref(),
                &runs,
                &mut |line| eprintln!("{line}"),
            )?;
            named.push((json.display().to_string(), read_report(&json)?));
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
    let c = Conformance::build(&reports).with_evidence(evidence);
    let files = publish::files(&c);
    let readme = match &a.readme {
        Some(p) => {
            let (old, new) = publish::readme(&c, p)?;
            Some((p.as_path(), old, new))
        }
        None => None,
    };
    if a.check {
        let readme = readme
            .as_ref()
            .map(|(p, old, new)| (*p, old.as_str(), new.as_str()));
        let stale = publish::stale(&a.out, &files, readme)?;
        if stale.is_empty() {
            println!("report: the committed report is up to date");
            return Ok(EXIT_OK);
        }
        println!(
            "report: stale (regenerate with tools/regen-conformance.sh): {}",
            stale.join(", ")
        );
        return Ok(EXIT_NONCONFORMANCE);
    }
    let readme = readme.as_ref().map(|(p, _, new)| (*p, new.as_str()));
    publish::write(&a.out, &files, readme)?;
    print!("{}", c.readme_summary());
    println!(
        "report: wrote {}",
        a.out.join("conformance.{json,md,html}").display()
    );
    Ok(EXIT_OK)
}
