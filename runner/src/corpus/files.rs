//! Finding and reading case files: discovery under a path (one visit per file, misspelt
//! extensions reported), the bounded read, and the paths a case id is made from.

use crate::corpus::pos::{LoadError, Pos, Source};
use atomcts_reference::program::Dialect;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The id prefix of a file: its path below the corpus root, without `.toml`, with `/`.
pub fn id_prefix(root: &Path, file: &Path) -> String {
    let (root_n, file_n) = (normalize(root), normalize(file));
    let rel = if root.as_os_str().is_empty() {
        file
    } else {
        file_n.strip_prefix(&root_n).unwrap_or(file)
    };
    let s = rel.with_extension("").to_string_lossy().replace('\\', "/");
    s.trim_start_matches("./").to_string()
}

/// The largest case file read (bytes), checked before reading: parsing costs about 70 times a
/// file's size in memory, so this bounds loading one file to about 600 MiB (issue 7, D9).
pub const MAX_CASE_FILE: u64 = 8 << 20;

fn io_error(file: &Path, message: String) -> LoadError {
    LoadError {
        pos: Pos {
            file: Arc::from(file),
            line: 0,
            col: 0,
        },
        message,
    }
}

/// Whether a file name claims to be a case file in a spelling the loader does not read
/// (`case.TOML`, `case.tml`): reported, never silently ignored.
fn misspelt_case_file(p: &Path) -> bool {
    p.extension().is_some_and(|x| {
        x != "toml" && (x.eq_ignore_ascii_case("toml") || x.eq_ignore_ascii_case("tml"))
    })
}

/// The `.toml` files below `path` (or `path` itself), sorted, each once, and the problems met
/// on the way, each naming its own path: a directory that cannot be read, a symbolic link that
/// loops back to a directory already walked, a case file that is not a regular file (a FIFO, a
/// device) or is too large, a misspelt extension. Nothing is followed twice, so symlink cycles
/// end (issue 7, D8).
pub fn discover(path: &Path) -> (Vec<PathBuf>, Vec<LoadError>) {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    let mut seen_dirs = std::collections::BTreeSet::new();
    let mut seen_files = std::collections::BTreeSet::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(p) = stack.pop() {
        let meta = match std::fs::metadata(&p) {
            Ok(m) => m,
            Err(e) => {
                errors.push(io_error(&p, format!("cannot read: {e}")));
                continue;
            }
        };
        let id = file_id(&p, &meta);
        if meta.is_dir() {
            if !seen_dirs.insert(id) {
                errors.push(io_error(
                    &p,
                    "directory already walked (a symbolic link loops back): skipped".into(),
                ));
                continue;
            }
            let entries = match std::fs::read_dir(&p) {
                Ok(e) => e,
                Err(e) => {
                    errors.push(io_error(&p, format!("cannot read directory: {e}")));
                    continue;
                }
            };
            for e in entries {
                match e {
                    Ok(e) => {
                        let c = e.path();
                        let is_dir = std::fs::metadata(&c).is_ok_and(|m| m.is_dir());
                        if is_dir || c.extension().is_some_and(|x| x == "toml") {
                            stack.push(c);
                        } else if misspelt_case_file(&c) {
                            errors.push(io_error(
                                &c,
                                "case files must end in `.toml` (lowercase): not loaded".into(),
                            ));
                        }
                    }
                    Err(e) => errors.push(io_error(&p, format!("cannot read directory: {e}"))),
                }
            }
            continue;
        }
        if !meta.is_file() {
            errors.push(io_error(
                &p,
                "not a regular file (a FIFO, socket or device): not read".into(),
            ));
            continue;
        }
        if meta.len() > MAX_CASE_FILE {
            errors.push(io_error(
                &p,
                format!(
                    "{} bytes: larger than the {MAX_CASE_FILE}-byte limit for one case file; split it",
                    meta.len()
                ),
            ));
            continue;
        }
        if seen_files.insert(id) {
            files.push(p);
        }
    }
    files.sort();
    (files, errors)
}

/// A file's identity: device and inode where there are such, else its path.
fn file_id(p: &Path, meta: &std::fs::Metadata) -> (u64, u64, PathBuf) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let _ = p;
        (meta.dev(), meta.ino(), PathBuf::new())
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        (
            0,
            0,
            std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf()),
        )
    }
}

/// Reads one case file: at most [`MAX_CASE_FILE`] bytes (even if it grew since it was
/// listed), and UTF-8, else an error at the line and column of the first invalid byte.
pub fn read_case_file(f: &Path) -> Result<String, LoadError> {
    use std::io::Read;
    let file = std::fs::File::open(f).map_err(|e| io_error(f, format!("cannot read: {e}")))?;
    let mut bytes = Vec::new();
    file.take(MAX_CASE_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(f, format!("cannot read: {e}")))?;
    if bytes.len() as u64 > MAX_CASE_FILE {
        return Err(io_error(
            f,
            format!("larger than the {MAX_CASE_FILE}-byte limit for one case file; split it"),
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        let ok = e.utf8_error().valid_up_to();
        let bytes = e.into_bytes();
        let prefix = String::from_utf8_lossy(&bytes[..ok]).into_owned();
        let mut pos = Source::new(f, prefix).pos(ok);
        pos.line = pos.line.max(1);
        LoadError {
            pos,
            message: format!(
                "invalid UTF-8 (byte {:#04x}): case files are UTF-8",
                bytes[ok]
            ),
        }
    })
}

/// `p` made absolute (against the current directory) with `.` and `..` resolved by text, so
/// that every spelling of one path agrees; symbolic links are left as they are.
pub fn normalize(p: &Path) -> PathBuf {
    use std::path::Component;
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    };
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The folder a case file's id is relative to (issue 7, D22: ids do not depend on how
/// `--cases` is spelt or which subfolder is run): the nearest ancestor named `spec-cases`;
/// else the parent of the nearest ancestor named after a dialect (`sass`, `visa`, `msl`); else
/// the folder given to `--cases` (or the file's own folder).
pub fn id_root(file: &Path, given: &Path) -> PathBuf {
    let f = normalize(file);
    let mut dialect_dir = None;
    for a in f.ancestors().skip(1) {
        match a.file_name().and_then(|n| n.to_str()) {
            Some("spec-cases") => return a.to_path_buf(),
            Some(n) if dialect_dir.is_none() && Dialect::from_name(n).is_some() => {
                dialect_dir = a.parent().map(Path::to_path_buf)
            }
            _ => {}
        }
    }
    if let Some(d) = dialect_dir {
        return d;
    }
    let g = normalize(given);
    if g == f {
        g.parent().map(Path::to_path_buf).unwrap_or_default()
    } else {
        g
    }
}

/// The corpus root of a path: the nearest ancestor named `spec-cases`, else the path itself.
/// Ids are relative to it, so a case keeps its id whichever subfolder is run.
pub fn corpus_root(p: &Path) -> PathBuf {
    let mut cur = Some(p);
    while let Some(c) = cur {
        if c.file_name().is_some_and(|n| n == "spec-cases") {
            return c.to_path_buf();
        }
        cur = c.parent();
    }
    p.to_path_buf()
}
