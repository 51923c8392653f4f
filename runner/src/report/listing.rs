//! What `atomcts list` prints: the corpus counted per dialect and op, per cited document
//! section and per probed knob ([`Stats`]), the knobs, the profiles and the adapters.

use crate::corpus::case::Case;
use crate::run::repro::case_label;
use atomcts_reference::knobs::{KNOBS, PROFILES};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The counts of a corpus (`atomcts list stats`).
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Cases per dialect and op label.
    pub per_op: BTreeMap<(String, String), usize>,
    /// Cases per cited document section (the citation up to its first `,`, `;` or `:`).
    pub per_doc: BTreeMap<String, usize>,
    /// Probe cases per knob.
    pub probes: BTreeMap<String, usize>,
    /// Cases in all.
    pub cases: usize,
}

impl Stats {
    /// The counts of `cases`.
    pub fn of(cases: &[Case]) -> Stats {
        let mut s = Stats {
            cases: cases.len(),
            ..Stats::default()
        };
        for c in cases {
            *s.per_op
                .entry((c.dialect.name().into(), case_label(c.into())))
                .or_default() += 1;
            let section = c
                .cite
                .split([',', ';', ':'])
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
            *s.per_doc.entry(section).or_default() += 1;
            if let Some(k) = &c.probe {
                *s.probes.entry(k.clone()).or_default() += 1;
            }
        }
        s
    }

    /// The counts as `atomcts list stats` prints them (every known knob, probed or not).
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "cases per dialect and op:");
        for ((d, op), n) in &self.per_op {
            let _ = writeln!(out, "  {d:<5} {op:<40} {n:>5}");
        }
        let _ = writeln!(out, "cases per cited document section:");
        for (sec, n) in &self.per_doc {
            let _ = writeln!(out, "  {sec:<70} {n:>5}");
        }
        let _ = writeln!(out, "probes per knob:");
        for k in KNOBS {
            let _ = writeln!(
                out,
                "  {:<36} {:>5}",
                k.id,
                self.probes.get(k.id).copied().unwrap_or(0)
            );
        }
        let _ = writeln!(out, "{} cases in all", self.cases);
        out
    }
}

/// The knobs with their options and citations (`atomcts list knobs`).
pub fn knobs_text() -> String {
    let mut out = String::new();
    for k in KNOBS {
        let _ = writeln!(
            out,
            "{} ({}): {}  [default: {}]",
            k.id, k.ambiguity, k.summary, k.default
        );
        for o in k.options {
            let _ = writeln!(out, "    {:<22} {}", o.name, o.cite);
        }
    }
    out
}

/// The named profiles with their picks (`atomcts list profiles`).
pub fn profiles_text() -> String {
    let mut out = String::new();
    for (name, desc, picks) in PROFILES {
        let _ = writeln!(out, "{name}: {desc}");
        for (k, o) in picks.iter() {
            let _ = writeln!(out, "    {k} = {o}");
        }
    }
    out
}

/// The adapter kinds and the implementations found here (`atomcts list adapters`), given to
/// `print` piece by piece as each implementation is probed.
pub fn adapters(print: &mut dyn FnMut(&str)) {
    print(&atomcts_adapters::registry::kinds_help());
    print(
        "implementations (`atomcts report` runs the available ones, each under the profile it claims):\n",
    );
    for i in atomcts_adapters::discover::implementations() {
        let state = match &i.available {
            Ok(()) => "available".to_string(),
            Err(why) => format!("unavailable: {why}"),
        };
        print(&format!(
            "{} ({state}; {}; claims profile {}{})\n",
            i.adapter,
            i.what,
            atomcts_adapters::discover::claimed_profile(&i.adapter),
            i.baseline
                .as_deref()
                .map_or(String::new(), |b| format!("; baseline {b}"))
        ));
    }
}
