//! `atomcts sweep`: exhaustive checks of the 16-bit float atomics.

use anyhow::{Result, bail};
use atomcts::exit::{EXIT_NONCONFORMANCE, EXIT_OK};
use atomcts::fuzzing::sweep;
use clap::Args;
use std::io::IsTerminal;

#[derive(Args)]
pub(super) struct SweepArgs {
    /// Format: f16, bf16.
    #[arg(long, default_value = "f16")]
    format: String,
    /// Op: add, min, max.
    #[arg(long, default_value = "add")]
    op: String,
    /// Rounding of add: nearest_even, toward_zero.
    #[arg(long, default_value = "nearest_even")]
    round: String,
    /// Flushing of subnormals: none, inputs, outputs, both.
    #[arg(long, default_value = "none")]
    ftz: String,
    /// Returned old value of a flushing add (A3): raw, flushed.
    #[arg(long, default_value = "raw")]
    ftz_return: String,
    /// NaN results (A4): canonical, propagate.
    #[arg(long, default_value = "propagate")]
    nan: String,
    /// Min/max NaN rule (A5): minimum_number, intel_snan_wins, spirv_either.
    #[arg(long, default_value = "minimum_number")]
    minmax_nan: String,
    /// Min/max signed zeros (A6): ordered, either, skylake.
    #[arg(long, default_value = "ordered")]
    minmax_zero: String,
    /// Min/max subnormals (A7): compare_raw, flush_before_compare, either.
    #[arg(long, default_value = "compare_raw")]
    minmax_denormals: String,
    /// Every pair of F16x2 halves (old = a | b<<16, src = b | a<<16); needs --format f16.
    #[arg(long)]
    f16x2: bool,
    /// Every combination of options for the format and op (ignores the option flags).
    #[arg(long)]
    all: bool,
    /// First value of the first operand (to resume), e.g. 0x3c00.
    #[arg(long, default_value = "0", value_parser = parse_u16_bound)]
    start: u64,
    /// End (exclusive) of the first operand, at most 0x10000.
    #[arg(long, default_value = "0x10000", value_parser = parse_u16_bound)]
    end: u64,
    /// No progress bar.
    #[arg(long)]
    no_progress: bool,
}

pub(super) fn parse_u16_bound(s: &str) -> std::result::Result<u64, String> {
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    }
    .map_err(|e| format!("{s}: {e}"))?;
    if v > 0x1_0000 {
        return Err(format!("{s}: at most 0x10000"));
    }
    Ok(v)
}

pub(super) fn sweep_configs(a: &SweepArgs) -> Result<Vec<sweep::Config>> {
    use atomcts_reference::float::MinMaxRules;
    use atomcts_reference::ir::AtomicOp;
    use atomcts_reference::types::DataType;
    let e = |m: String| anyhow::anyhow!(m);
    let ty = match (a.format.as_str(), a.f16x2) {
        ("f16", false) => DataType::F16,
        ("f16", true) => DataType::F16x2,
        ("bf16", false) => DataType::BF16,
        ("bf16", true) => bail!("--f16x2 needs --format f16"),
        (other, _) => bail!("unknown format `{other}` (f16, bf16)"),
    };
    let op = match a.op.as_str() {
        "add" => AtomicOp::Add,
        "min" => AtomicOp::Min,
        "max" => AtomicOp::Max,
        other => bail!("unknown op `{other}` (add, min, max)"),
    };
    if a.start >= a.end {
        bail!("--start {:#x} is not below --end {:#x}", a.start, a.end);
    }
    if a.all {
        return Ok(sweep::all_configs(ty, op));
    }
    let ftz_return = match a.ftz_return.as_str() {
        "raw" => false,
        "flushed" => true,
        other => bail!("unknown --ftz-return `{other}` (raw, flushed)"),
    };
    let env = sweep::env(
        sweep::lookup(sweep::ROUNDS, "rounding", &a.round).map_err(e)?,
        sweep::lookup(sweep::FTZ, "ftz mode", &a.ftz).map_err(e)?,
        ftz_return,
        sweep::lookup(sweep::NANS, "NaN encoding", &a.nan).map_err(e)?,
        MinMaxRules {
            nan: sweep::lookup(sweep::NAN_RULES, "min/max NaN rule", &a.minmax_nan).map_err(e)?,
            zero: sweep::lookup(sweep::ZERO_RULES, "min/max zero rule", &a.minmax_zero)
                .map_err(e)?,
            denormals: sweep::lookup(
                sweep::DENORM_RULES,
                "min/max subnormal rule",
                &a.minmax_denormals,
            )
            .map_err(e)?,
        },
    );
    Ok(vec![sweep::Config { ty, op, env }])
}

pub(super) fn cmd_sweep(a: SweepArgs) -> Result<u8> {
    let configs = sweep_configs(&a)?;
    let t0 = std::time::Instant::now();
    let rows = a.end - a.start;
    let show = !a.no_progress && std::io::stderr().is_terminal();
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(rows * configs.len() as u64),
        if show {
            indicatif::ProgressDrawTarget::stderr()
        } else {
            indicatif::ProgressDrawTarget::hidden()
        },
    );
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:40} {pos}/{len} first operands {elapsed_precise} eta {eta} {msg}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (mut pairs, mut mismatches) = (0u64, 0u64);
    for c in &configs {
        bar.set_message(c.describe());
        let o = sweep::sweep(c, a.start, a.end, &|| bar.inc(1), &stop);
        pairs += o.pairs;
        mismatches += o.mismatches;
        if o.mismatches > 0 {
            bar.suspend(|| {
                println!("{}: {} mismatches", c.describe(), o.mismatches);
                for m in &o.first {
                    println!("  {m}");
                }
                if o.mismatches > o.first.len() as u64 {
                    println!("  ... ({} more)", o.mismatches - o.first.len() as u64);
                }
            });
        }
    }
    bar.finish_and_clear();
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "sweep: {pairs} pairs checked in {} configuration(s), first operand {:#06x}..{:#06x}, {mismatches} mismatches, {secs:.1} s ({:.1} M pairs/s)",
        configs.len(),
        a.start,
        a.end,
        pairs as f64 / secs.max(1e-9) / 1e6
    );
    Ok(if mismatches > 0 {
        EXIT_NONCONFORMANCE
    } else {
        EXIT_OK
    })
}
