//! One running shim (adapters/PROTOCOL.md, "Timeouts and failures"): its process group, the
//! thread that writes its requests (so a shim that stops reading cannot block the runner past a
//! deadline, issue 7 D4) and the thread that reads its output into answer lines.
//!
//! What the runner can know about the pipes, it knows exactly (issue 27):
//! - **Lines nobody asked for** (H10, H18). The reader counts the requests handed to the writer;
//!   a line beyond them answers nothing and stops the reading at once ([`Event::Extra`]), so a
//!   shim that floods lines after an answer holds at most one line and a pipe's buffer. Lines
//!   waiting to be taken hold at most [`MAX_UNREAD`] bytes plus the line being read (the reader
//!   reads further only below it). The reader consumes output only while it holds a lock, so
//!   [`Running::output_after_answers`] sees everything the shim wrote before it was called.
//! - **Requests the shim never read** (H4, H18). The writer counts the bytes it has written; with
//!   the bytes still unread in the request pipe (Linux: `FIONREAD`), [`Running::read_nothing_from`]
//!   says whether the shim has read any byte of a request. Only a request it read nothing of may
//!   be tried again at no cost when the shim goes away (or answers it before reading it).

use std::io::{BufRead, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Longest answer line accepted (bytes); longer is a protocol error, never an allocation.
pub const MAX_LINE: u64 = 256 << 20;
/// How long a shim that closed its output gets to exit, so its exit status can be reported.
pub(super) const EXIT_GRACE: Duration = Duration::from_millis(500);
/// The most bytes of answer lines read ahead of the answer the runner waits for (pipelined
/// answers, or lines a shim writes after its answer): the reader reads further only below it,
/// so lines waiting to be taken hold at most this plus one line ([`MAX_LINE`]). Beyond the
/// requests sent, the first line nobody asked for stops the reading (issue 27, H10).
pub const MAX_UNREAD: u64 = 64 << 20;

/// What the reader and writer threads report.
pub(super) enum Event {
    /// One answer line (without checking it is UTF-8).
    Line(Vec<u8>),
    /// A line read when every request handed to the writer already had its line: nobody asked
    /// for it. The reader stops at it.
    Extra(Vec<u8>),
    /// A line longer than [`MAX_LINE`] bytes. The reader stops at it.
    TooLong,
    /// The shim closed its output.
    Eof,
    /// Writing a request failed.
    WriteFailed(String),
}

/// The reader's state, shared with the runner under one lock.
#[derive(Default)]
struct Reading {
    /// Bytes of an unfinished line the reader holds.
    tail: usize,
    /// Bytes of lines sent and not yet taken by the runner.
    unread: u64,
    /// Set when the runner stops the shim: the reader ends.
    stopped: bool,
}

#[derive(Default)]
struct Shared {
    reading: Mutex<Reading>,
    /// Signalled when the runner takes a line or stops the shim.
    wake: Condvar,
    /// Answer lines expected: one for the handshake, one per request handed to the writer.
    asked: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A shim started with `sh -c <command>`, in a process group of its own.
pub(super) struct Running {
    child: Child,
    /// Requests to the writer thread (which owns the shim's stdin).
    requests: Option<Sender<Vec<u8>>>,
    events: Receiver<Event>,
    /// Request buffers the writer thread has written and hands back for reuse.
    spare: Receiver<Vec<u8>>,
    /// Answer buffers handed back to the reader thread for reuse.
    recycle: Sender<Vec<u8>>,
    /// The profile this instance last received in a `profile` message (profile_once): a
    /// restarted shim gets it again before its first request.
    pub(super) profile: Option<atomcts_reference::Profile>,
    shared: Arc<Shared>,
    /// Bytes handed to the writer thread.
    handed: u64,
    /// Bytes the writer thread has written (locked while a write is under way).
    written: Arc<Mutex<u64>>,
    /// A second handle on the request pipe, to ask how much of it is unread (Linux: the
    /// `FIONREAD` of a pipe's writing end counts the bytes in the pipe).
    #[cfg(any(target_os = "linux", target_os = "android"))]
    stdin: Option<std::os::fd::OwnedFd>,
    /// The answer pipe, shared with the reader thread.
    #[cfg(unix)]
    stdout: Arc<std::fs::File>,
}

impl Running {
    /// Starts `command` through `sh -c` in a process group of its own, with the reader and
    /// writer threads.
    pub(super) fn spawn(command: &str) -> std::io::Result<Running> {
        // `sh -c` exactly as documented: `VAR=x cmd`, `cd d && cmd` and pipelines work; the
        // process group holds the shell and everything it starts.
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(command);
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other("no pipes to the shim"));
        };
        // The handshake's answer is expected from the start: a shim may write it before it
        // reads the runner's.
        let shared = Arc::new(Shared {
            asked: AtomicU64::new(1),
            ..Shared::default()
        });
        let (etx, events) = channel();
        let wtx = etx.clone();
        // Answer buffers come back from the runner once read (issue 9: no allocation and
        // regrowth per answer line).
        let (recycle, lines_back) = channel::<Vec<u8>>();
        #[cfg(unix)]
        let stdout = Arc::new(std::fs::File::from(std::os::fd::OwnedFd::from(stdout)));
        {
            let shared = shared.clone();
            #[cfg(unix)]
            let source = stdout.clone();
            #[cfg(not(unix))]
            let source = stdout;
            std::thread::spawn(move || read_lines(source, &shared, &etx, &lines_back));
        }
        #[cfg(any(target_os = "linux", target_os = "android"))]
        let stdin_handle = {
            use std::os::fd::AsFd;
            stdin.as_fd().try_clone_to_owned().ok()
        };
        let written = Arc::new(Mutex::new(0u64));
        let (requests, rx) = channel::<Vec<u8>>();
        let (give_back, spare) = channel::<Vec<u8>>();
        {
            let written = written.clone();
            std::thread::spawn(move || write_requests(stdin, &rx, &written, &wtx, &give_back));
        }
        Ok(Running {
            child,
            requests: Some(requests),
            events,
            spare,
            recycle,
            profile: None,
            shared,
            handed: 0,
            written,
            #[cfg(any(target_os = "linux", target_os = "android"))]
            stdin: stdin_handle,
            #[cfg(unix)]
            stdout,
        })
    }

    /// Hands `buf` (whole request lines, and `profile` messages) to the writer thread; `answers`
    /// of them expect an answer line. False if the writer thread is gone.
    pub(super) fn send(&mut self, buf: Vec<u8>, answers: u64) -> bool {
        // Counted before the bytes can reach the shim: an answer to them is never taken for a
        // line nobody asked for.
        self.shared.asked.fetch_add(answers, Ordering::SeqCst);
        self.handed += buf.len() as u64;
        self.requests
            .as_ref()
            .is_some_and(|tx| tx.send(buf).is_ok())
    }

    /// Bytes handed to the writer thread so far: where the next request starts.
    pub(super) fn handed(&self) -> u64 {
        self.handed
    }

    /// The next event within `timeout`, or sooner when a stop is requested (issue 27, H15).
    pub(super) fn recv(&mut self, timeout: Duration) -> Result<Event, crate::interrupt::Wait> {
        let ev = crate::interrupt::recv_timeout(&self.events, timeout)?;
        self.took(&ev);
        Ok(ev)
    }

    /// Accounts a line the runner took: the reader may read further.
    fn took(&self, ev: &Event) {
        if let Event::Line(l) = ev {
            let mut st = lock(&self.shared.reading);
            st.unread = st.unread.saturating_sub(l.len() as u64);
            self.shared.wake.notify_all();
        }
    }

    /// An empty buffer for request lines: one the writer thread has handed back, or a new one.
    pub(super) fn spare_buffer(&self) -> Vec<u8> {
        self.spare.try_recv().unwrap_or_default()
    }

    /// Hands an answer line's buffer back to the reader thread (not a huge one: its memory
    /// would stay held).
    pub(super) fn recycle(&self, line: Vec<u8>) {
        if line.capacity() <= 1 << 20 {
            let _ = self.recycle.send(line);
        }
    }

    /// With every request answered: what the shim did after its last answer, if anything (it
    /// wrote more, closed its output or exited). Everything it wrote before this call is seen:
    /// a line taken by the reader, an unfinished line it holds, or bytes in the pipe.
    pub(super) fn output_after_answers(&mut self) -> Option<String> {
        let st = lock(&self.shared.reading);
        let ev = self.events.try_recv().ok();
        let waiting = st.tail > 0 || self.unread_output() > 0;
        drop(st);
        let how = match ev {
            Some(Event::Line(l) | Event::Extra(l)) => Some(format!(
                "wrote a line nobody asked for (`{}`)",
                super::quote(&l, 100)
            )),
            Some(Event::TooLong) => Some(format!(
                "wrote a line nobody asked for (longer than {MAX_LINE} bytes)"
            )),
            Some(Event::Eof | Event::WriteFailed(_)) => Some(
                self.exit_status(EXIT_GRACE)
                    .map_or("closed its output".to_string(), |s| format!("exited ({s})")),
            ),
            None if waiting => Some("wrote output nobody asked for (an unfinished line)".into()),
            None => None,
        };
        how.or_else(|| self.peek_exit().map(|s| format!("exited ({s})")))
    }

    /// Bytes in the answer pipe that the reader has not taken yet.
    fn unread_output(&self) -> u64 {
        #[cfg(unix)]
        {
            rustix::io::ioctl_fionread(&*self.stdout).unwrap_or(0)
        }
        #[cfg(not(unix))]
        {
            0
        }
    }

    /// Whether the shim has read nothing at or after byte `start` of its input (the start of a
    /// request): the bytes written there are all still in the pipe. False when that cannot be
    /// known within `grace` (a write under way; a system without `FIONREAD` on a pipe's writing
    /// end), so a request is never taken for unread when it may have been read.
    pub(super) fn read_nothing_from(&self, start: u64, grace: Duration) -> bool {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            let Some(stdin) = &self.stdin else {
                return false;
            };
            let t0 = Instant::now();
            loop {
                let written = match self.written.try_lock() {
                    Ok(w) => Some(*w),
                    Err(std::sync::TryLockError::Poisoned(p)) => Some(*p.into_inner()),
                    Err(std::sync::TryLockError::WouldBlock) => None,
                };
                if let Some(written) = written {
                    // The writer is between writes: `written` is every byte put in the pipe,
                    // and the shim can only read more from now on (which counts as read).
                    return rustix::io::ioctl_fionread(stdin)
                        .is_ok_and(|unread| written.saturating_sub(unread) <= start);
                }
                if t0.elapsed() >= grace {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        {
            let _ = (start, grace, &self.written);
            false
        }
    }

    /// Stops the whole process group the runner created for this shim: the shell, the shim and
    /// anything they started (`| cat`, forks). The group is signalled before the leader is
    /// reaped, so its id cannot have been reused by then.
    pub(super) fn stop(&mut self) {
        self.requests = None;
        {
            let mut st = lock(&self.shared.reading);
            st.stopped = true;
            self.shared.wake.notify_all();
        }
        #[cfg(unix)]
        {
            let pgid = rustix::process::Pid::from_child(&self.child);
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
        }
        #[cfg(not(unix))]
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// How the shim ended, in words, if it has exited, waiting up to `grace` for it. The shim
    /// is not reaped here (its id stays reserved until [`Running::stop`] has signalled its
    /// group).
    pub(super) fn exit_status(&mut self, grace: Duration) -> Option<String> {
        let t0 = Instant::now();
        loop {
            if let Some(s) = self.peek_exit() {
                return Some(s);
            }
            if t0.elapsed() >= grace {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The exit status in words if the shim has exited, without reaping it.
    #[cfg(unix)]
    fn peek_exit(&mut self) -> Option<String> {
        use rustix::process::{Pid, WaitId, WaitIdOptions, waitid};
        let opts = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
        let st = waitid(WaitId::Pid(Pid::from_child(&self.child)), opts).ok()??;
        if let Some(sig) = st.terminating_signal() {
            return Some(format!("killed by signal {sig}"));
        }
        st.exit_status().map(|c| format!("exit status {c}"))
    }

    #[cfg(not(unix))]
    fn peek_exit(&mut self) -> Option<String> {
        let s = self.child.try_wait().ok()??;
        Some(
            s.code()
                .map_or(s.to_string(), |c| format!("exit status {c}")),
        )
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The writer thread: writes each request buffer whole, counting the bytes written.
fn write_requests(
    mut stdin: ChildStdin,
    rx: &Receiver<Vec<u8>>,
    written: &Mutex<u64>,
    events: &Sender<Event>,
    give_back: &Sender<Vec<u8>>,
) {
    for mut msg in rx {
        let mut at = 0;
        while at < msg.len() {
            let mut w = lock(written);
            match stdin.write(&msg[at..]) {
                Ok(0) => {
                    let _ = events.send(Event::WriteFailed("the pipe took no bytes".into()));
                    return;
                }
                Ok(n) => {
                    *w += n as u64;
                    at += n;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    drop(w);
                    let _ = events.send(Event::WriteFailed(e.to_string()));
                    return;
                }
            }
        }
        msg.clear();
        let _ = give_back.send(msg);
    }
}

/// The answer pipe as the reader thread reads it.
#[cfg(unix)]
type Source = Arc<std::fs::File>;
#[cfg(not(unix))]
type Source = std::process::ChildStdout;

/// Waits until the answer pipe has bytes (or is closed), without taking any.
#[cfg(unix)]
fn wait_readable(source: &Source) {
    use rustix::event::{PollFd, PollFlags, poll};
    let mut fds = [PollFd::new(&**source, PollFlags::IN)];
    while let Err(rustix::io::Errno::INTR) = poll(&mut fds, None) {}
}

/// The reader thread: splits the shim's output into lines, at most [`MAX_LINE`] bytes each,
/// and stops at a line nobody asked for. It reads further only while fewer than
/// [`MAX_UNREAD`] bytes of lines wait to be taken. On Unix it takes bytes from the pipe only
/// while it holds the shared lock (see [`Running::output_after_answers`]).
fn read_lines(
    #[allow(unused_mut)] mut source: Source,
    shared: &Shared,
    events: &Sender<Event>,
    lines_back: &Receiver<Vec<u8>>,
) {
    let mut chunk = vec![0u8; 1 << 16];
    let mut line = Vec::new();
    let mut lines = 0u64;
    let fresh = || {
        let mut b = lines_back.try_recv().unwrap_or_default();
        b.clear();
        b
    };
    loop {
        {
            let mut st = lock(&shared.reading);
            while st.unread >= MAX_UNREAD && !st.stopped {
                st = shared.wake.wait(st).unwrap_or_else(|p| p.into_inner());
            }
            if st.stopped {
                return;
            }
        }
        #[cfg(unix)]
        let (mut st, n) = {
            wait_readable(&source);
            let st = lock(&shared.reading);
            (st, (&*source).read(&mut chunk))
        };
        #[cfg(not(unix))]
        let (n, mut st) = {
            let n = source.read(&mut chunk);
            (n, lock(&shared.reading))
        };
        let n = match n {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => 0,
        };
        let mut complete = Vec::new();
        if n == 0 && !line.is_empty() {
            // A last line without its newline is still a line.
            complete.push(std::mem::take(&mut line));
        }
        let mut rest = &chunk[..n];
        while !rest.is_empty() {
            // Reading from a slice cannot fail.
            let _ = rest.read_until(b'\n', &mut line);
            if line.len() as u64 > MAX_LINE {
                st.stopped = true;
                let _ = events.send(Event::TooLong);
                return;
            }
            if line.last() == Some(&b'\n') {
                complete.push(std::mem::replace(&mut line, fresh()));
            }
        }
        for l in complete {
            lines += 1;
            if lines > shared.asked.load(Ordering::SeqCst) {
                st.stopped = true;
                let _ = events.send(Event::Extra(l));
                return;
            }
            st.unread += l.len() as u64;
            if events.send(Event::Line(l)).is_err() {
                return;
            }
        }
        if n == 0 {
            let _ = events.send(Event::Eof);
            return;
        }
        st.tail = line.len();
    }
}
