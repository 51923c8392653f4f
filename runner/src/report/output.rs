//! The files the command line writes and reads besides the corpus (issue 27, H9, H13, H18):
//! outputs are checked before anything runs (a regular file or a new one, never a FIFO, device,
//! socket or directory, and no two outputs naming one file however they are spelt) and opened
//! without blocking; inputs (JSON reports, fuzz artifacts, baselines, the README) are regular
//! files read within a size stated here, checked before reading.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The largest JSON run report `merge` and `report --from` read.
pub const MAX_REPORT_FILE: u64 = 256 << 20;
/// The largest fuzz artifact `regress` reads (libFuzzer's inputs are a few KiB).
pub const MAX_ARTIFACT: u64 = 1 << 20;
/// The largest text input of another kind (a `--baseline`, the `--readme` file, a committed
/// conformance report compared by `report --check`).
pub const MAX_TEXT_FILE: u64 = 8 << 20;

/// A file that cannot be used as asked.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// An output or input that exists and is not a regular file.
    #[error(
        "{what} {path}: {kind}, not a regular file (atomcts reads and writes regular files only)"
    )]
    NotRegular {
        /// The flag or role (`--json`, `merge input`).
        what: String,
        /// The path as given.
        path: String,
        /// `a FIFO`, `a directory`, ...
        kind: &'static str,
    },
    /// Two outputs of one command name the same file.
    #[error(
        "{first} {first_path} and {second} {second_path} name the same file: one report would overwrite the other"
    )]
    SameFile {
        /// The first flag.
        first: String,
        /// Its path as given.
        first_path: String,
        /// The second flag.
        second: String,
        /// Its path as given.
        second_path: String,
    },
    /// An input larger than its limit.
    #[error("{what} {path}: {size} bytes, larger than the {limit}-byte limit for {what}")]
    TooLarge {
        /// The role.
        what: String,
        /// The path.
        path: String,
        /// Its size (or `limit + 1` when it grew while read).
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// An output that cannot be created or opened for writing.
    #[error("{what} {path}: cannot write there ({source})")]
    Unwritable {
        /// The flag.
        what: String,
        /// The path.
        path: String,
        /// What failed.
        source: std::io::Error,
    },
    /// Opening, reading or writing failed.
    #[error("{what} {path}: {source}")]
    Io {
        /// The flag or role.
        what: String,
        /// The path.
        path: String,
        /// What failed.
        source: std::io::Error,
    },
    /// An input that is not UTF-8.
    #[error("{what} {path}: not UTF-8 (invalid byte at offset {offset})")]
    NotUtf8 {
        /// The role.
        what: String,
        /// The path.
        path: String,
        /// The offset of the first invalid byte.
        offset: usize,
    },
}

fn io(what: &str, path: &Path, source: std::io::Error) -> FileError {
    FileError::Io {
        what: what.into(),
        path: path.display().to_string(),
        source,
    }
}

/// What a file that is not a regular file is, in words (`None` for a regular file).
fn irregular(m: &Metadata) -> Option<&'static str> {
    let t = m.file_type();
    if t.is_file() {
        return None;
    }
    if t.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return Some("a FIFO");
        }
        if t.is_socket() {
            return Some("a socket");
        }
        if t.is_char_device() {
            return Some("a character device");
        }
        if t.is_block_device() {
            return Some("a block device");
        }
    }
    Some("a special file")
}

fn not_regular(what: &str, path: &Path, kind: &'static str) -> FileError {
    FileError::NotRegular {
        what: what.into(),
        path: path.display().to_string(),
        kind,
    }
}

/// Options that never block on opening: a FIFO without a reader fails at once (ENXIO) instead
/// of waiting for one; on a regular file the flag changes nothing.
fn nonblocking(o: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    o
}

/// The one special file an output may be: `/dev/null` (or a link to it), which never blocks
/// and keeps nothing, for a report that is not wanted.
pub const NULL_DEVICE: &str = "/dev/null";

fn is_null_device(path: &Path) -> bool {
    std::fs::canonicalize(path).is_ok_and(|p| p == Path::new(NULL_DEVICE))
}

/// Opens the output `path` with `opts`: [`open_regular`], or `/dev/null` as it is.
fn open_output(what: &str, path: &Path, opts: &mut OpenOptions) -> Result<File, FileError> {
    if is_null_device(path) {
        return opts.open(path).map_err(|e| io(what, path, e));
    }
    open_regular(what, path, opts)
}

/// Opens `path` with `opts` (made non-blocking) and checks that what was opened is a regular
/// file; `path` is checked first, so nothing special is even opened when it can be told.
fn open_regular(what: &str, path: &Path, opts: &mut OpenOptions) -> Result<File, FileError> {
    if let Ok(m) = std::fs::metadata(path)
        && let Some(kind) = irregular(&m)
    {
        return Err(not_regular(what, path, kind));
    }
    let f = nonblocking(opts)
        .open(path)
        .map_err(|e| io(what, path, e))?;
    let m = f.metadata().map_err(|e| io(what, path, e))?;
    match irregular(&m) {
        Some(kind) => Err(not_regular(what, path, kind)),
        None => Ok(f),
    }
}

/// Creates (or truncates) the output `path` for writing: a regular file, opened without
/// blocking (or `/dev/null`).
pub fn create(what: &str, path: &Path) -> Result<File, FileError> {
    open_output(
        what,
        path,
        OpenOptions::new().write(true).create(true).truncate(true),
    )
}

/// Writes `bytes` to the output `path` ([`create`]).
pub fn write(what: &str, path: &Path, bytes: impl AsRef<[u8]>) -> Result<(), FileError> {
    create(what, path)?
        .write_all(bytes.as_ref())
        .map_err(|e| io(what, path, e))
}

/// Checks, before anything runs, that `path` can be written as an output: a regular file or a
/// new one in an existing folder (or `/dev/null`). An existing file is left as it is; a new one
/// is removed again. The file's identity for [`check_outputs`]: its canonical path.
pub fn check_output(what: &str, path: &Path) -> Result<PathBuf, FileError> {
    let existed = std::fs::metadata(path).is_ok();
    open_output(what, path, OpenOptions::new().append(true).create(true)).map_err(|e| match e {
        FileError::Io { what, path, source } => FileError::Unwritable { what, path, source },
        e => e,
    })?;
    let canonical = std::fs::canonicalize(path).map_err(|e| io(what, path, e))?;
    if !existed {
        // The file made through a symbolic link is its target: remove that, not the link.
        let _ = std::fs::remove_file(&canonical);
    }
    Ok(canonical)
}

/// [`check_output`] for each `(flag, path)` of one command, and that no two name the same file
/// (through different spellings, `..`, or symbolic links).
pub fn check_outputs(outputs: &[(&str, &Path)]) -> Result<(), FileError> {
    let mut seen: Vec<(PathBuf, &str, &Path)> = Vec::new();
    for (what, path) in outputs {
        let id = check_output(what, path)?;
        // Any number of unwanted reports may go to /dev/null.
        if let Some((_, first, first_path)) = seen
            .iter()
            .find(|(s, _, _)| *s == id && id != Path::new(NULL_DEVICE))
        {
            return Err(FileError::SameFile {
                first: first.to_string(),
                first_path: first_path.display().to_string(),
                second: what.to_string(),
                second_path: path.display().to_string(),
            });
        }
        seen.push((id, what, path));
    }
    Ok(())
}

/// Reads the input `path` whole: a regular file of at most `limit` bytes (its size is checked
/// before reading, and reading stops past the limit if it grew).
pub fn read_bounded(what: &str, path: &Path, limit: u64) -> Result<Vec<u8>, FileError> {
    let f = open_regular(what, path, OpenOptions::new().read(true))?;
    let too_large = |size| FileError::TooLarge {
        what: what.into(),
        path: path.display().to_string(),
        size,
        limit,
    };
    let size = f.metadata().map_err(|e| io(what, path, e))?.len();
    if size > limit {
        return Err(too_large(size));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    f.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io(what, path, e))?;
    if bytes.len() as u64 > limit {
        return Err(too_large(limit + 1));
    }
    Ok(bytes)
}

/// [`read_bounded`] of a UTF-8 text.
pub fn read_text(what: &str, path: &Path, limit: u64) -> Result<String, FileError> {
    String::from_utf8(read_bounded(what, path, limit)?).map_err(|e| FileError::NotUtf8 {
        what: what.into(),
        path: path.display().to_string(),
        offset: e.utf8_error().valid_up_to(),
    })
}

/// The last non-empty line of the log `path` (read from its last 64 KiB at most), or an empty
/// string when there is none.
pub fn last_line(path: &Path) -> String {
    use std::io::{Seek, SeekFrom};
    const TAIL: u64 = 64 << 10;
    let Ok(mut f) = open_regular("log", path, OpenOptions::new().read(true)) else {
        return String::new();
    };
    let len = f.metadata().map_or(0, |m| m.len());
    let mut bytes = Vec::new();
    if f.seek(SeekFrom::Start(len.saturating_sub(TAIL))).is_err()
        || f.take(TAIL).read_to_end(&mut bytes).is_err()
    {
        return String::new();
    }
    String::from_utf8_lossy(&bytes)
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("atomcts-output-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn outputs_are_regular_files_and_distinct() {
        let d = dir("outputs");
        let a = d.join("a.json");
        check_outputs(&[("--json", &a), ("--junit", &d.join("a.xml"))]).unwrap();
        assert!(!a.exists(), "a checked new output is removed again");
        let e = check_outputs(&[("--json", &a), ("--jsonl", &d.join(".").join("a.json"))]);
        assert!(matches!(e, Err(FileError::SameFile { .. })), "{e:?}");
        #[cfg(unix)]
        {
            std::fs::write(&a, "").unwrap();
            std::os::unix::fs::symlink(&a, d.join("link.json")).unwrap();
            let e = check_outputs(&[("--json", &a), ("--junit", &d.join("link.json"))]);
            assert!(matches!(e, Err(FileError::SameFile { .. })), "{e:?}");
            assert!(a.exists(), "an existing output is left as it is");
        }
        let e = check_output("--json", &d).unwrap_err().to_string();
        assert!(e.contains("a directory, not a regular file"), "{e}");
        #[cfg(unix)]
        {
            let null = Path::new(NULL_DEVICE);
            check_outputs(&[("--json", null), ("--jsonl", null)]).unwrap();
            write("--json", null, "x").unwrap();
            let e = check_output("--json", Path::new("/dev/zero")).unwrap_err();
            assert!(e.to_string().contains("a character device"), "{e}");
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn inputs_are_bounded_before_reading() {
        let d = dir("inputs");
        let p = d.join("r.json");
        std::fs::write(&p, vec![b'x'; 100]).unwrap();
        assert_eq!(read_bounded("report", &p, 100).unwrap().len(), 100);
        let e = read_bounded("report", &p, 99).unwrap_err().to_string();
        assert!(
            e.contains("100 bytes, larger than the 99-byte limit"),
            "{e}"
        );
        let e = read_text("report", &d, 99).unwrap_err().to_string();
        assert!(e.contains("a directory"), "{e}");
        std::fs::write(&p, b"ok\xff").unwrap();
        let e = read_text("report", &p, 99).unwrap_err().to_string();
        assert!(e.contains("offset 2"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
