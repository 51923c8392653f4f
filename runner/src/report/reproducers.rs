//! `atomcts repro` (issue 30, point 5): runs the selected cases like `atomcts run`, and for each
//! that fails (every one with `all`) has the adapter write a standalone reproducer (a Python
//! script in the implementation's own terms, `atomcts_adapters::repro`) into a folder. A case
//! it cannot write gets a line with the reason, never silence.

use crate::corpus::case::Case;
use crate::exit::{EXIT_ERROR, EXIT_NONCONFORMANCE, EXIT_OK};
use crate::report::output;
use crate::report::session::Plan;
use crate::run::results::{Options, Status};
use atomcts_adapters::Adapter;
use atomcts_adapters::repro::{About, sanitise};
use std::path::{Path, PathBuf};

/// What became of one selected case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line {
    /// Its reproducer was written here.
    Written {
        /// The case id.
        id: String,
        /// How atomcts judged it (`fail`, `pass`).
        status: String,
        /// The script.
        path: PathBuf,
    },
    /// It needed a reproducer (it failed, or `all`) that could not be written.
    Refused {
        /// The case id.
        id: String,
        /// How atomcts judged it.
        status: String,
        /// Why, in one line.
        why: String,
        /// Whether the case failed (then the command did not do what was asked).
        failed: bool,
    },
}

impl std::fmt::Display for Line {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Line::Written { id, status, path } => {
                write!(f, "wrote {} ({status}: {id})", path.display())
            }
            Line::Refused {
                id, status, why, ..
            } => write!(f, "not written: {id} ({status}): {why}"),
        }
    }
}

/// What [`write_reproducers`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// One line per case that needed a reproducer.
    pub lines: Vec<Line>,
    /// Cases selected and run.
    pub selected: usize,
    /// Of them, failing.
    pub failing: usize,
}

impl Outcome {
    /// The exit code: an error when nothing was selected or a failing case's reproducer could
    /// not be written; a nonconformance when some case failed; else success.
    pub fn exit_code(&self) -> u8 {
        if self.selected == 0
            || self
                .lines
                .iter()
                .any(|l| matches!(l, Line::Refused { failed: true, .. }))
        {
            EXIT_ERROR
        } else if self.failing > 0 {
            EXIT_NONCONFORMANCE
        } else {
            EXIT_OK
        }
    }
}

fn status_name(s: Status) -> String {
    format!("{s:?}").to_lowercase()
}

/// Runs each case of `cases` that `plan` selects on `adapter` and writes the reproducers of the
/// failing ones (every selected one with `all`) into `out` (created if missing; an existing
/// file there is an error). `each` sees every line as it comes.
pub fn write_reproducers(
    cases: &[Case],
    plan: &Plan,
    adapter: &mut dyn Adapter,
    opts: &Options,
    out: &Path,
    all: bool,
    each: &mut dyn FnMut(&Line),
) -> Result<Outcome, String> {
    if out.exists() && !out.is_dir() {
        return Err(format!(
            "--out {}: exists and is not a folder",
            out.display()
        ));
    }
    std::fs::create_dir_all(out).map_err(|e| format!("--out {}: {e}", out.display()))?;
    adapter.capture_dispatches(true);
    let mut o = Outcome::default();
    for case in cases.iter().filter(|c| plan.selects(c)) {
        if crate::run::stopped() {
            break;
        }
        o.selected += 1;
        let r = crate::run::run_case(case, adapter, opts);
        let failed = r.status.is_failure();
        o.failing += usize::from(failed);
        if !failed && !all {
            continue;
        }
        let status = status_name(r.status);
        let refused = |why: String| Line::Refused {
            id: case.id.clone(),
            status: status.clone(),
            why,
            failed,
        };
        let line = match r.status {
            Status::Pass | Status::Fail | Status::KnownFailure | Status::BaselinePasses => {
                let about = About {
                    id: case.id.clone(),
                    cite: case.cite.clone(),
                    adapter: adapter.name().to_string(),
                    env: Vec::new(),
                    profile: opts.profile.name.clone(),
                    status: status.clone(),
                };
                match adapter.reproducer(&about) {
                    None => refused(format!(
                        "adapter {} writes no standalone reproducer (its kind runs no program of its own that a script could replay; opencl:, vulkan:, wgsl-naga:, webgpu: and cuda do)",
                        adapter.name()
                    )),
                    Some(Err(why)) => refused(why),
                    Some(Ok(script)) => {
                        let path = out.join(format!("{}.py", sanitise(&case.id)));
                        match output::write("reproducer", &path, script) {
                            Ok(()) => Line::Written {
                                id: case.id.clone(),
                                status: status.clone(),
                                path,
                            },
                            Err(e) => return Err(e.to_string()),
                        }
                    }
                }
            }
            _ => refused(
                r.findings
                    .first()
                    .map_or_else(|| "nothing ran".to_string(), |f| f.note.clone()),
            ),
        };
        each(&line);
        o.lines.push(line);
    }
    adapter.capture_dispatches(false);
    Ok(o)
}
