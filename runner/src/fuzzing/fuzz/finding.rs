//! A shrunk finding as a corpus case (issue 9): pinned to the profile's knobs, tagged
//! `fuzz_regression`, with a header that says how it was found and the command that reproduces
//! it on every adapter of the campaign (issue 27, H16).

use super::options::FuzzOptions;
use super::shrink::Shrunk;
use crate::run::repro::shell_quote;
use crate::run::results::Options;
use atomcts_reference::knobs::KNOBS;
use atomcts_reference::program::Dialect;
use std::path::{Path, PathBuf};
use toml::{Table, Value};

/// `where` pins for a case whose expectation holds under `profile`: every knob of the dialect
/// and the float knobs, at the profile's options.
pub fn where_pins(dialect: Dialect, profile: &atomcts_reference::Profile) -> Table {
    let mut pins = Table::new();
    for k in KNOBS {
        let applies = k.id.starts_with("float.") || k.id.starts_with(&format!("{dialect}."));
        if let (true, Ok(o)) = (applies, profile.get(k.id)) {
            pins.insert(k.id.into(), Value::String(o.into()));
        }
    }
    pins
}

/// The shell command that reruns the finding in `path` on every adapter of the campaign (one
/// `atomcts run` per adapter, joined by `;`, so a disagreement shows as the two verdicts).
pub fn reproduce(path: &Path, opts: &FuzzOptions) -> String {
    let file = shell_quote(&path.display().to_string());
    opts.repro_sides
        .iter()
        .map(|side| format!("atomcts run --cases {file}{side}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Writes the shrunk case as `<out>/fuzz-<hash>.toml` with its reproduce command.
pub(super) fn write_finding(
    shrunk: &Shrunk,
    key: &str,
    k: u64,
    opts: &FuzzOptions,
    run_opts: &Options,
) -> Result<PathBuf, String> {
    let gc = &shrunk.case;
    let hash = format!("{:08x}", crate::run::stable_hash(key) >> 32);
    let name = format!("fuzz_{hash}");
    let how = super::shrink::shrink_note(shrunk.runs, shrunk.cut);
    let cite = format!(
        "atomcts fuzz --seed {} case {k}, {how}; expectation from the reference model, profile {}",
        opts.seed, run_opts.profile.name
    );
    let mut t = crate::fuzzing::generate::case_table(&name, &cite, gc, &run_opts.profile)?;
    t.insert(
        "where".into(),
        Value::Table(where_pins(gc.dialect, &run_opts.profile)),
    );
    t.insert(
        "tags".into(),
        Value::Array(vec![Value::String("fuzz_regression".into())]),
    );
    std::fs::create_dir_all(&opts.out)
        .map_err(|e| format!("creating {}: {e}", opts.out.display()))?;
    let path = opts.out.join(format!("fuzz-{hash}.toml"));
    let header = format!(
        "Found by `{}` (case {k}), {how}.\nSignature: {key}\nReproduce: {}\nThe expectation is the reference model's outcome (profile {}), not the documents'.",
        opts.command,
        reproduce(&path, opts),
        run_opts.profile.name
    );
    let text = crate::fuzzing::generate::file_text(gc.dialect, &header, &[t])?;
    std::fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(path)
}
