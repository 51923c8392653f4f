//! `atomcts export`: the corpus with its expectations as JSON.

use anyhow::{Result, bail};
use atomcts::corpus::case::{self};
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
    let mut cases = Vec::new();
    let (files, found_errors) = case::discover(&p);
    let mut errors: Vec<String> = found_errors.iter().map(|e| e.to_string()).collect();
    for f in files {
        let text = match case::read_case_file(&f) {
            Ok(t) => t,
            Err(e) => {
                errors.push(e.to_string());
                continue;
            }
        };
        let root = case::id_root(&f, &p);
        let loaded = case::parse_file(&root, &f, text.clone());
        errors.extend(loaded.errors.iter().map(|e| e.to_string()));
        let raw: toml::Table = match toml::from_str(&text) {
            Ok(t) => t,
            Err(_) => continue,
        };
        let raw_cases = raw
            .get("case")
            .and_then(|c| c.as_array())
            .cloned()
            .unwrap_or_default();
        let file_cite = raw.get("cite").cloned();
        for c in loaded.cases {
            let name = c.id.split("::").nth(1).unwrap_or("");
            if let Some(rc) = raw_cases
                .iter()
                .find(|rc| rc.get("name").and_then(|n| n.as_str()) == Some(name))
            {
                let mut obj = serde_json::to_value(rc)?;
                if let Some(m) = obj.as_object_mut() {
                    m.insert("id".into(), c.id.clone().into());
                    m.insert("dialect".into(), c.dialect.name().into());
                    if !m.contains_key("cite")
                        && let Some(fc) = &file_cite
                    {
                        m.insert("cite".into(), serde_json::to_value(fc)?);
                    }
                }
                cases.push(obj);
            }
        }
    }
    let doc = serde_json::json!({ "format": "atomcts-spec-cases", "version": 1, "errors": errors, "cases": cases });
    let text = serde_json::to_string_pretty(&doc)?;
    match &a.out {
        Some(p) => output::write("--out", p, text)?,
        None => println!("{text}"),
    }
    Ok(if errors.is_empty() { 0 } else { 2 })
}
