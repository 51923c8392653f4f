//! Process isolation for the PTX back end: every kernel runs in a worker process
//! (`atomcts __ptx-worker`, the runner's own executable), never in the runner's process.
//!
//! Why: CUDA reports a kernel's fault (an illegal address, a trap) as a sticky error, and on
//! the H100 this project ran on (driver 580.159.04) every later `cuCtxCreate` in the same
//! process failed with the same error, so one faulting case turned every later case into an
//! error. A hung kernel cannot be stopped from inside its process either. So the runner sends
//! each launch to a worker over a pipe (one JSON line each way), waits at most the adapter
//! timeout, and on a fault, a crash or a timeout the case is an adapter error, the worker is
//! stopped (SIGKILL to that one child) and the next case gets a fresh one.
//!
//! The worker keeps one context (the device's primary context) while its launches succeed and
//! exits after the first failure, so a sticky error never decides a later case.

use super::run::{self, Launch};
use crate::interrupt::Wait;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

/// The first command-line argument that makes the runner's executable a worker.
pub const WORKER_ARG: &str = "__ptx-worker";

/// The worker's executable: `ATOMCTS_CUDA_WORKER` if set (for a library user whose program is
/// not `atomcts`), else this process's own executable.
fn worker_exe() -> Result<std::path::PathBuf, String> {
    match std::env::var_os("ATOMCTS_CUDA_WORKER") {
        Some(p) => Ok(p.into()),
        None => std::env::current_exe()
            .map_err(|e| format!("cannot find this program to start the CUDA worker: {e}")),
    }
}

/// One answer line of the worker.
#[derive(serde::Serialize, serde::Deserialize)]
enum Answer {
    /// Every buffer's bytes after the launch.
    Done(run::Buffers),
    /// What failed (the worker exits after it).
    Failed(String),
}

/// The worker's loop: one [`Launch`] per stdin line, one [`Answer`] per stdout line; exits after
/// the first failure (exit status 3) or at end of input (0). Returns the exit status.
pub fn serve_stdio() -> u8 {
    let ctx = match run::availability()
        .and_then(|()| cudarc::driver::CudaContext::new(0).map_err(|e| format!("cuCtxCreate: {e}")))
    {
        Ok(c) => c,
        Err(e) => return answer(&Answer::Failed(e)),
    };
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { return 3 };
        let result = serde_json::from_str::<Launch>(&line)
            .map_err(|e| format!("the worker could not read the launch: {e}"))
            .and_then(|l| run::launch(&ctx, &l));
        match result {
            Ok(buffers) => {
                if answer(&Answer::Done(run::Buffers(buffers))) != 0 {
                    return 3;
                }
            }
            Err(e) => return answer(&Answer::Failed(e)),
        }
    }
    0
}

/// Writes one answer line; 3 for a failure (or a broken pipe), 0 otherwise.
fn answer(a: &Answer) -> u8 {
    let mut out = std::io::stdout().lock();
    let ok = serde_json::to_writer(&mut out, a).is_ok()
        && out.write_all(b"\n").is_ok()
        && out.flush().is_ok();
    match a {
        Answer::Done(_) if ok => 0,
        _ => 3,
    }
}

/// The runner's side: a worker process started on demand and replaced after any failure.
pub struct Worker {
    timeout: Duration,
    /// The worker's executable, where not [`worker_exe`]'s.
    program: Option<std::path::PathBuf>,
    live: Option<Live>,
}

struct Live {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<std::io::Result<String>>,
}

impl Worker {
    /// A worker whose launches may each take at most `timeout` (start-up included).
    pub fn new(timeout: Duration) -> Worker {
        Worker {
            timeout,
            program: None,
            live: None,
        }
    }

    /// A worker that runs `program` (given [`WORKER_ARG`]) rather than this executable: a
    /// stand-in device for tests of the adapter's host side on a machine without a GPU.
    pub fn with_program(timeout: Duration, program: std::path::PathBuf) -> Worker {
        Worker {
            timeout,
            program: Some(program),
            live: None,
        }
    }

    fn start(&mut self) -> Result<&mut Live, String> {
        if self.live.is_none() {
            let exe = match &self.program {
                Some(p) => p.clone(),
                None => worker_exe()?,
            };
            let mut child = Command::new(&exe)
                .arg(WORKER_ARG)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("cannot start the CUDA worker `{}`: {e}", exe.display()))?;
            let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                let _ = child.kill();
                let _ = child.wait();
                return Err("the CUDA worker has no pipes".into());
            };
            let (tx, lines) = channel();
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let stop = line.is_err();
                    if tx.send(line).is_err() || stop {
                        break;
                    }
                }
            });
            self.live = Some(Live {
                child,
                stdin,
                lines,
            });
        }
        self.live
            .as_mut()
            .ok_or_else(|| "the CUDA worker did not start".to_string())
    }

    /// Stops the worker (SIGKILL to this one child, then reaped) and says how it ended.
    fn stop(&mut self) -> String {
        match self.live.take() {
            Some(mut l) => {
                let _ = l.child.kill();
                match l.child.wait() {
                    Ok(s) => s.to_string(),
                    Err(e) => e.to_string(),
                }
            }
            None => "not running".into(),
        }
    }

    /// Runs one launch in the worker: every buffer's bytes after it, or why not. After any
    /// failure the worker is stopped; the next launch starts a fresh one.
    pub fn launch(&mut self, l: &Launch) -> Result<Vec<Vec<u8>>, String> {
        let timeout = self.timeout;
        let live = self.start()?;
        let mut line = serde_json::to_vec(l).map_err(|e| e.to_string())?;
        line.push(b'\n');
        if let Err(e) = live
            .stdin
            .write_all(&line)
            .and_then(|()| live.stdin.flush())
        {
            let how = self.stop();
            return Err(format!(
                "the CUDA worker did not take the launch ({e}; it {how})"
            ));
        }
        let got = crate::interrupt::recv_timeout(&live.lines, timeout);
        let failed = match got {
            Ok(Ok(text)) => match serde_json::from_str::<Answer>(&text) {
                Ok(Answer::Done(buffers)) => return Ok(buffers.0),
                Ok(Answer::Failed(why)) => why,
                Err(e) => format!("the CUDA worker answered an unreadable line ({e})"),
            },
            Ok(Err(e)) => format!("reading the CUDA worker's answer: {e}"),
            Err(Wait::Interrupted(sig)) => format!("interrupted by signal {sig}"),
            Err(Wait::Timeout) => format!(
                "the kernel did not finish within {} ms (the worker was stopped)",
                timeout.as_millis()
            ),
            Err(Wait::Disconnected) => "the CUDA worker died".to_string(),
        };
        let how = self.stop();
        Err(format!("{failed} [worker {how}]"))
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::back::ptx::run::{Arg, Buffers};

    #[test]
    fn launches_and_answers_travel_as_one_line_of_hex() {
        let l = Launch {
            ptx: ".version 7.8\n".into(),
            entry: "atomcts_case".into(),
            grid: 2,
            block: 32,
            args: vec![
                Arg::Buffer(vec![0x00, 0xff, 0x10]),
                Arg::Buffer(vec![]),
                Arg::U32(7),
                Arg::U64(u64::MAX),
            ],
        };
        let text = serde_json::to_string(&l).unwrap();
        assert!(!text.contains('\n'), "{text}");
        assert!(text.contains("\"00ff10\""), "{text}");
        assert_eq!(serde_json::from_str::<Launch>(&text).unwrap(), l);
        let a = Answer::Done(Buffers(vec![vec![1, 2], vec![]]));
        let text = serde_json::to_string(&a).unwrap();
        assert_eq!(text, r#"{"Done":["0102",""]}"#);
        let Answer::Done(b) = serde_json::from_str::<Answer>(&text).unwrap() else {
            panic!("not Done")
        };
        assert_eq!(b.0, vec![vec![1, 2], vec![]]);
        // A garbled buffer is an error, not a guess.
        assert!(serde_json::from_str::<Answer>(r#"{"Done":["0g"]}"#).is_err());
        assert!(serde_json::from_str::<Answer>(r#"{"Done":["012"]}"#).is_err());
    }

    #[test]
    fn a_worker_that_does_not_speak_the_protocol_is_an_error_not_a_hang() {
        let mut w = Worker::new(Duration::from_secs(5));
        let l = Launch {
            ptx: String::new(),
            entry: "e".into(),
            grid: 1,
            block: 1,
            args: vec![],
        };
        // This test binary is not atomcts: started as the worker it prints the test harness's
        // text and exits, so the launch fails (an unreadable line or a dead worker).
        let err = w.launch(&l).unwrap_err();
        assert!(
            err.contains("worker") || err.contains("CUDA"),
            "unexpected error: {err}"
        );
    }
}
