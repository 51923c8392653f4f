//! Running `GenX_IR` (IGC's standalone vISA assembler, verifier and finalizer; Debian
//! `libigc-tools`) on one kernel: `GenX_IR t.visaasm -platform <P> -output` in a directory of
//! its own, in a process group of its own, killed (the whole group) and reaped when it runs
//! past the deadline, the directory removed afterwards.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What one run of `GenX_IR` left.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Assembled {
    /// Its exit status (`None`: killed by a signal).
    pub status: Option<i32>,
    /// Its standard output and error, in that order.
    pub output: String,
    /// `t.errors.txt`, which the verifier writes when it finds errors.
    pub errors: Option<String>,
    /// `t.asm`, the GEN assembly with IGA's decoding of each `send`.
    pub asm: Option<String>,
}

/// Why `GenX_IR` gave no answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunError {
    /// It ran past the deadline (killed).
    Timeout(Duration),
    /// It could not be started, or its files not written or read.
    Io(String),
}

/// The `GenX_IR` to run: `$GENX_IR`, else `GenX_IR` on `PATH`; `Err` says why there is none.
pub fn locate() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("GENX_IR") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("GENX_IR={} is not a file", p.display()))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("GenX_IR"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            "GenX_IR not found on PATH (Debian libigc-tools: tools/install-implementations.sh intel)"
                .to_string()
        })
}

/// A fresh directory under the system's temporary directory.
fn scratch_dir() -> Result<PathBuf, RunError> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("atomcts-visa-asm-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| RunError::Io(format!("{}: {e}", dir.display())))?;
    Ok(dir)
}

/// Removes the directory when dropped (also on an early return).
struct Cleanup(PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Assembles `kernel` for `platform` with `exe`, waiting at most `timeout`.
pub fn assemble(
    exe: &Path,
    kernel: &str,
    platform: &str,
    timeout: Duration,
) -> Result<Assembled, RunError> {
    let dir = scratch_dir()?;
    let _cleanup = Cleanup(dir.clone());
    let io = |what: &str, e: std::io::Error| RunError::Io(format!("{what}: {e}"));
    std::fs::write(dir.join("t.visaasm"), kernel).map_err(|e| io("t.visaasm", e))?;
    let out = std::fs::File::create(dir.join("stdout")).map_err(|e| io("stdout", e))?;
    let err = std::fs::File::create(dir.join("stderr")).map_err(|e| io("stderr", e))?;
    let mut cmd = Command::new(exe);
    cmd.args(["t.visaasm", "-platform", platform, "-output"])
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| io(&format!("cannot start {}", exe.display()), e))?;
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if start.elapsed() >= timeout => {
                #[cfg(unix)]
                {
                    let pgid = rustix::process::Pid::from_child(&child);
                    let _ =
                        rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
                }
                let _ = child.kill();
                let _ = child.wait();
                return Err(RunError::Timeout(timeout));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(io("waiting for GenX_IR", e));
            }
        }
    };
    let read = |name: &str| std::fs::read(dir.join(name)).ok();
    let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    let mut output = read("stdout").map(text).unwrap_or_default();
    output.push_str(&read("stderr").map(text).unwrap_or_default());
    Ok(Assembled {
        status: status.code(),
        output,
        errors: read("t.errors.txt").map(text),
        asm: read("t.asm").map(text),
    })
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A stand-in for GenX_IR that starts a child and hangs: past the deadline both are killed
    /// (the whole process group), nothing is left running, and the scratch folder is removed.
    #[test]
    fn a_hung_assembler_is_killed_with_its_children() {
        let dir = std::env::temp_dir().join(format!("atomcts-genx-hang-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let pids = dir.join("pids");
        let exe = dir.join("GenX_IR");
        std::fs::write(
            &exe,
            format!(
                "#!/bin/sh\nsleep 30 &\necho \"$$ $! $PWD\" > {}\nwait\n",
                pids.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let start = Instant::now();
        let r = assemble(&exe, "kernel", "SKL", Duration::from_millis(300));
        assert_eq!(r, Err(RunError::Timeout(Duration::from_millis(300))));
        assert!(start.elapsed() < Duration::from_secs(10));
        let text = std::fs::read_to_string(&pids).unwrap();
        let mut words = text.split_whitespace();
        let (shell, child, cwd) = (
            words.next().unwrap(),
            words.next().unwrap(),
            words.next().unwrap(),
        );
        assert!(!Path::new(cwd).exists(), "scratch folder {cwd} left behind");
        // The shell was reaped by `assemble`; its child was killed with the group (a zombie
        // until init reaps it, so give it a moment, and accept `Z`).
        let alive = |pid: &str| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.split_whitespace().nth(2).is_none_or(|st| st != "Z"))
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        while alive(child) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!alive(shell), "GenX_IR stand-in {shell} still running");
        assert!(!alive(child), "its child {child} still running");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_assembler_is_an_io_error() {
        let r = assemble(
            Path::new("/nonexistent/GenX_IR"),
            "kernel",
            "SKL",
            Duration::from_secs(5),
        );
        assert!(matches!(r, Err(RunError::Io(m)) if m.contains("cannot start")));
    }
}
