//! `atomcts regress`: a fuzz artifact as a regression case.

use anyhow::{Context, Result, bail};
use atomcts::corpus::case;
use atomcts::corpus::files::corpus_root;
use atomcts::exit::{EXIT_NONCONFORMANCE, EXIT_OK};
use atomcts::report::output;
use atomcts::run;
use atomcts::run::results::Options;
use atomcts_adapters::ReferenceAdapter;
use atomcts_reference::Profile;
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub(super) struct RegressArgs {
    /// The artifact (a crash-*, leak-* or timeout-* file of cargo fuzz).
    artifact: PathBuf,
    /// The fuzz target that found it: diff_fast_reference, parse_sass, parse_visa, parse_msl.
    #[arg(long)]
    target: String,
    /// Output directory.
    #[arg(long, default_value = "spec-cases/regressions")]
    out: PathBuf,
}

pub(super) fn cmd_regress(a: RegressArgs) -> Result<u8> {
    let data = output::read_bounded("artifact", &a.artifact, output::MAX_ARTIFACT)?;
    let name = a.artifact.file_name().map_or_else(
        || a.artifact.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let r = atomcts::fuzzing::oracles::regression_case(&a.target, &name, &data)
        .map_err(|m| anyhow::anyhow!("{m}"))?;
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let path = a.out.join(&r.file_name);
    output::write("--out", &path, &r.text)?;
    println!("wrote {}", path.display());
    // The new case must load and pass on the reference under its own pins.
    let root = corpus_root(&a.out);
    let loaded = case::parse_file(&root, &path, r.text.clone());
    if let Some(e) = loaded.errors.first() {
        bail!("the written case does not load: {e}");
    }
    let mut profile = Profile::default();
    for c in &loaded.cases {
        for (k, o) in &c.where_ {
            profile.set(k, o)?;
        }
        let opts = Options {
            profile: profile.clone(),
            race_budget: atomcts_reference::race::DEFAULT_BUDGET,
            cases_arg: path.display().to_string(),
            adapter_arg: String::new(),
        };
        let res = run::run_case(c, &mut ReferenceAdapter, &opts);
        println!("{}: {:?} on the reference", c.id, res.status);
        if res.status.is_failure() || res.status == run::results::Status::Error {
            return Ok(EXIT_NONCONFORMANCE);
        }
    }
    Ok(EXIT_OK)
}
