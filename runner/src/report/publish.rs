//! `atomcts report`'s work (issue 28: the command line parses the options and calls this): each
//! implementation's run, as `atomcts run` in a process of its own ([`run_implementation`]), and
//! the conformance report's files in `--out` ([`check_outputs`], [`files`], [`readme`],
//! [`stale`], [`write`]).

use crate::report::conformance::Conformance;
use crate::report::output::{self, FileError};
use std::path::{Path, PathBuf};

/// The files `report` writes into `--out`.
pub const REPORT_FILES: [&str; 3] = ["conformance.json", "conformance.md", "conformance.html"];

/// Why `atomcts report` stops.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// `--out` exists and is not a directory.
    #[error("--out {0}: not a directory")]
    NotADirectory(String),
    /// An input or output file that cannot be used.
    #[error(transparent)]
    File(#[from] FileError),
    /// The `--readme` file has no summary block to fill.
    #[error("{path}: {message}")]
    Readme {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
    /// A folder that cannot be created.
    #[error("creating {path}")]
    Create {
        /// The folder.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The atomcts executable cannot be found.
    #[error("locating the atomcts executable")]
    Executable(#[source] std::io::Error),
    /// `atomcts run` cannot be started or waited for.
    #[error("running atomcts run")]
    Run(#[source] std::io::Error),
    /// Another input or output error.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A stop request came while an implementation ran.
    #[error("interrupted by {signal} while {adapter} ran: no report written")]
    Interrupted {
        /// The signal's name.
        signal: String,
        /// The implementation.
        adapter: String,
    },
    /// The run wrote no report.
    #[error("{adapter}: the run wrote no report (exit {code}): {last} (see {log})")]
    NoReport {
        /// The implementation.
        adapter: String,
        /// Its exit code (-1: a signal).
        code: i32,
        /// The last line of its log.
        last: String,
        /// The log.
        log: String,
    },
}

/// Checks the outputs before anything runs (issue 27, H9): `out` is a folder (or a new one)
/// whose report files are regular files (or new ones) unless only `check`ed, the README a
/// regular file.
pub fn check_outputs(out: &Path, check: bool, readme: Option<&Path>) -> Result<(), PublishError> {
    let outs: Vec<PathBuf> = REPORT_FILES.iter().map(|n| out.join(n)).collect();
    if let Ok(m) = std::fs::metadata(out)
        && !m.is_dir()
    {
        return Err(PublishError::NotADirectory(out.display().to_string()));
    }
    if out.is_dir() && !check {
        let list: Vec<(&str, &Path)> = outs.iter().map(|p| ("--out", p.as_path())).collect();
        output::check_outputs(&list)?;
    }
    if let Some(p) = readme {
        output::check_output("--readme", p)?;
    }
    Ok(())
}

/// Runs the corpus (`cases`, else the default) on one implementation under its claimed
/// profile, as `atomcts run` (the executable `exe` gives) in a process of its own (a driver's
/// environment and crashes stay there), its report and log in `runs`; `note` gets the progress
/// lines. The path of its JSON report.
pub fn run_implementation(
    exe: &dyn Fn() -> std::io::Result<PathBuf>,
    adapter: &str,
    cases: Option<&Path>,
    runs: &Path,
    note: &mut dyn FnMut(&str),
) -> Result<PathBuf, PublishError> {
    let slug = atomcts_adapters::discover::slug(adapter);
    let json = runs.join(format!("{slug}.json"));
    let log = runs.join(format!("{slug}.log"));
    output::check_outputs(&[("--json", &json), ("log", &log)])?;
    let _ = std::fs::remove_file(&json);
    let exe = exe().map_err(PublishError::Executable)?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args([
        "run",
        "--no-progress",
        "--profile",
        "claimed",
        "--adapter",
        adapter,
    ])
    .arg("--json")
    .arg(&json);
    if let Some(c) = cases {
        cmd.arg("--cases").arg(c);
    }
    let logf = output::create("log", &log)?;
    let t0 = std::time::Instant::now();
    note(&format!(
        "report: running {adapter} (log: {})",
        log.display()
    ));
    let mut child = cmd
        .stdout(logf.try_clone()?)
        .stderr(logf)
        .spawn()
        .map_err(PublishError::Run)?;
    // A stop request reaches the run, which writes what it has and stops its adapter.
    let status = crate::run::interrupt::wait_forwarding(&mut child).map_err(PublishError::Run)?;
    if let Some(sig) = crate::run::interrupt::requested() {
        return Err(PublishError::Interrupted {
            signal: crate::run::interrupt::name(sig),
            adapter: adapter.to_string(),
        });
    }
    let last = output::last_line(&log);
    note(&format!(
        "report: {adapter}: {last} ({:.1} s, exit {})",
        t0.elapsed().as_secs_f64(),
        status.code().map_or("signal".into(), |c| c.to_string())
    ));
    if !json.exists() {
        return Err(PublishError::NoReport {
            adapter: adapter.to_string(),
            code: status.code().unwrap_or(-1),
            last,
            log: log.display().to_string(),
        });
    }
    Ok(json)
}

/// The report's files, named as in `--out`.
pub fn files(c: &Conformance) -> [(&'static str, String); 3] {
    [
        (REPORT_FILES[0], c.json()),
        (REPORT_FILES[1], c.markdown()),
        (REPORT_FILES[2], c.html()),
    ]
}

/// The `--readme` file `p` as it is and with its summary block filled from `c`.
pub fn readme(c: &Conformance, p: &Path) -> Result<(String, String), PublishError> {
    let old = output::read_text("--readme", p, output::MAX_TEXT_FILE)?;
    let new = c
        .fill_readme(&old)
        .map_err(|message| PublishError::Readme {
            path: p.display().to_string(),
            message,
        })?;
    Ok((old, new))
}

/// Which of `files` in `out`, and the `readme` block (its file, old and new text), differ from
/// what is committed there, named (a missing file is stale; one that is not a regular file, or
/// too large, an error).
pub fn stale(
    out: &Path,
    files: &[(&str, String)],
    readme: Option<(&Path, &str, &str)>,
) -> Result<Vec<String>, FileError> {
    let mut stale = Vec::new();
    for (name, text) in files {
        let p = out.join(name);
        let committed = match output::read_text("--out", &p, output::MAX_REPORT_FILE) {
            Ok(t) => Some(t),
            Err(FileError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                None
            }
            Err(e) => return Err(e),
        };
        if committed.as_deref() != Some(text.as_str()) {
            stale.push(p.display().to_string());
        }
    }
    if let Some((p, old, new)) = readme
        && old != new
    {
        stale.push(format!("{} (the summary block)", p.display()));
    }
    Ok(stale)
}

/// Writes `files` into `out` (made if new) and the filled `readme` (its file and new text).
pub fn write(
    out: &Path,
    files: &[(&str, String)],
    readme: Option<(&Path, &str)>,
) -> Result<(), PublishError> {
    std::fs::create_dir_all(out).map_err(|source| PublishError::Create {
        path: out.display().to_string(),
        source,
    })?;
    for (name, text) in files {
        output::write("--out", &out.join(name), text)?;
    }
    if let Some((p, new)) = readme {
        output::write("--readme", p, new)?;
    }
    Ok(())
}
