//! `atomcts list`: cases, knobs, profiles or adapters.

use super::load_corpus;
use anyhow::{Result, bail};
use atomcts::exit::{EXIT_ERROR, EXIT_OK};
use atomcts::report::listing;
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub(super) struct ListArgs {
    /// What to list: cases, stats (counts per op, document section and knob), knobs, profiles,
    /// adapters.
    what: String,
    /// Corpus for `cases`.
    #[arg(long)]
    cases: Option<PathBuf>,
}

pub(super) fn cmd_list(a: ListArgs) -> Result<u8> {
    match a.what.as_str() {
        "cases" => {
            let (_, loaded) = load_corpus(&a.cases)?;
            for c in &loaded.cases {
                println!("{}", c.id);
            }
            for e in &loaded.errors {
                eprintln!("error: {e}");
            }
            return Ok(if loaded.errors.is_empty() {
                EXIT_OK
            } else {
                EXIT_ERROR
            });
        }
        "stats" => {
            // Corpus counts per dialect and op, and per document section cited.
            let (_, loaded) = load_corpus(&a.cases)?;
            print!("{}", listing::Stats::of(&loaded.cases).text());
            return Ok(if loaded.errors.is_empty() {
                EXIT_OK
            } else {
                EXIT_ERROR
            });
        }
        "knobs" => print!("{}", listing::knobs_text()),
        "profiles" => print!("{}", listing::profiles_text()),
        "adapters" => listing::adapters(&mut |s| print!("{s}")),
        other => bail!("unknown list `{other}` (cases, stats, knobs, profiles, adapters)"),
    }
    Ok(EXIT_OK)
}
