//! `atomcts merge`: the JSON reports of shards as one report.

use super::{read_report, write_outputs};
use anyhow::Result;
use atomcts::report::Report;
use atomcts::report::output;
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub(super) struct MergeArgs {
    /// JSON reports of the shards.
    files: Vec<PathBuf>,
    /// Write JUnit XML here.
    #[arg(long)]
    junit: Option<PathBuf>,
    /// Write the merged JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
}

pub(super) fn cmd_merge(a: MergeArgs) -> Result<u8> {
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
