//! `atomcts list`: cases, knobs, profiles or adapters.

use super::load_corpus;
use anyhow::{Result, bail};
use atomcts::exit::{EXIT_ERROR, EXIT_OK};
use atomcts::run;
use atomcts_reference::knobs::{KNOBS, PROFILES};
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
            let mut per_op: std::collections::BTreeMap<(String, String), usize> =
                Default::default();
            let mut per_doc: std::collections::BTreeMap<String, usize> = Default::default();
            let mut probes: std::collections::BTreeMap<String, usize> = Default::default();
            for c in &loaded.cases {
                *per_op
                    .entry((c.dialect.name().into(), run::repro::case_label(c.into())))
                    .or_default() += 1;
                let section = c
                    .cite
                    .split([',', ';', ':'])
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_string();
                *per_doc.entry(section).or_default() += 1;
                if let Some(k) = &c.probe {
                    *probes.entry(k.clone()).or_default() += 1;
                }
            }
            println!("cases per dialect and op:");
            for ((d, op), n) in &per_op {
                println!("  {d:<5} {op:<40} {n:>5}");
            }
            println!("cases per cited document section:");
            for (sec, n) in &per_doc {
                println!("  {sec:<70} {n:>5}");
            }
            println!("probes per knob:");
            for k in KNOBS {
                println!(
                    "  {:<36} {:>5}",
                    k.id,
                    probes.get(k.id).copied().unwrap_or(0)
                );
            }
            println!("{} cases in all", loaded.cases.len());
            return Ok(if loaded.errors.is_empty() {
                EXIT_OK
            } else {
                EXIT_ERROR
            });
        }
        "knobs" => {
            for k in KNOBS {
                println!(
                    "{} ({}): {}  [default: {}]",
                    k.id, k.ambiguity, k.summary, k.default
                );
                for o in k.options {
                    println!("    {:<22} {}", o.name, o.cite);
                }
            }
        }
        "profiles" => {
            for (name, desc, picks) in PROFILES {
                println!("{name}: {desc}");
                for (k, o) in picks.iter() {
                    println!("    {k} = {o}");
                }
            }
        }
        "adapters" => {
            print!("{}", atomcts_adapters::registry::kinds_help());
            println!(
                "implementations (`atomcts report` runs the available ones, each under the profile it claims):"
            );
            for i in atomcts_adapters::discover::implementations() {
                let state = match &i.available {
                    Ok(()) => "available".to_string(),
                    Err(why) => format!("unavailable: {why}"),
                };
                println!(
                    "{} ({state}; {}; claims profile {}{})",
                    i.adapter,
                    i.what,
                    atomcts_adapters::discover::claimed_profile(&i.adapter),
                    i.baseline
                        .as_deref()
                        .map_or(String::new(), |b| format!("; baseline {b}"))
                );
            }
        }
        other => bail!("unknown list `{other}` (cases, stats, knobs, profiles, adapters)"),
    }
    Ok(EXIT_OK)
}
