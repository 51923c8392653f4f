//! `atomcts export`: the corpus with its expectations as JSON.

use anyhow::{Result, bail};
use atomcts::corpus::export;
use atomcts::exit::{EXIT_ERROR, EXIT_OK};
use atomcts::report::output;
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub(super) struct ExportArgs {
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

pub(super) fn cmd_export(a: ExportArgs) -> Result<u8> {
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
    let (doc, errors) = export::export(&p)?;
    let text = serde_json::to_string_pretty(&doc)?;
    match &a.out {
        Some(p) => output::write("--out", p, text)?,
        None => println!("{text}"),
    }
    Ok(if errors.is_empty() {
        EXIT_OK
    } else {
        EXIT_ERROR
    })
}
