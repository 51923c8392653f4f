//! `atomcts gen`: generated cases written in the corpus format.

use super::ProfileArgs;
use anyhow::Result;
use atomcts::exit::EXIT_OK;
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub(super) struct GenArgs {
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

pub(super) fn cmd_gen(a: GenArgs) -> Result<u8> {
    let profile = a.profile.profile()?;
    let n = atomcts::fuzzing::generate::write(a.seed, a.count, &profile, &a.out)?;
    println!("wrote {n} cases to {}", a.out.display());
    Ok(EXIT_OK)
}
