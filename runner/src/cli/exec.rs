//! `atomcts exec`: one instruction on a state given on the command line.

use super::ProfileArgs;
use anyhow::{Context, Result};
use atomcts::exit::EXIT_OK;
use atomcts_reference::outcome::Outcome;
use atomcts_reference::program::{self, Dialect};
use clap::Args;

#[derive(Args)]
pub(super) struct ExecArgs {
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

pub(super) fn cmd_exec(a: ExecArgs) -> Result<u8> {
    let dialect = Dialect::from_name(&a.dialect)
        .with_context(|| format!("unknown dialect `{}` (sass, visa, msl)", a.dialect))?;
    let profile = a.profile.profile()?;
    let (_, state) = atomcts::corpus::given::case(dialect, &a.asm, a.lanes, &a.given)?;
    let run = program::run(dialect, &a.asm, &state, &profile)?;
    match &run.outcome {
        Outcome::Completed(c) => {
            println!("completed");
            for line in atomcts::corpus::verify::diff(&state, &c.state) {
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
    Ok(EXIT_OK)
}
