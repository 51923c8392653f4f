//! `atomcts report`: the conformance matrix and the ambiguity report across implementations.

use super::read_report;
use anyhow::{Context, Result, bail};
use atomcts::exit::{EXIT_NONCONFORMANCE, EXIT_OK};
use atomcts::report::Report;
use atomcts::report::output;
use clap::Args;
use std::path::{Path, PathBuf};

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
    /// Corpus directory or file passed on to each run (default: ./spec-cases).
    #[arg(long)]
    cases: Option<PathBuf>,
}

/// Runs the corpus on one adapter under its claimed profile, as `atomcts run` in a process of
/// its own (a driver's environment and crashes stay there); its JSON report, named by its path.
pub(super) fn report_run(a: &ReportArgs, adapter: &str, runs: &Path) -> Result<(String, Report)> {
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
    let status =
        atomcts::run::interrupt::wait_forwarding(&mut child).context("running atomcts run")?;
    if let Some(sig) = atomcts::run::interrupt::requested() {
        bail!(
            "interrupted by {} while {adapter} ran: no report written",
            atomcts::run::interrupt::name(sig)
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
pub(super) const REPORT_FILES: [&str; 3] =
    ["conformance.json", "conformance.md", "conformance.html"];
pub(super) fn cmd_report(a: ReportArgs) -> Result<u8> {
    use atomcts::report::conformance::Conformance;
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
            return Ok(EXIT_OK);
        }
        println!(
            "report: stale (regenerate with tools/regen-conformance.sh): {}",
            stale.join(", ")
        );
        return Ok(EXIT_NONCONFORMANCE);
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
    Ok(EXIT_OK)
}
