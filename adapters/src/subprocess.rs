//! The subprocess adapter: an implementation in any language behind a small shim that speaks
//! the line protocol of `adapters/PROTOCOL.md` on its standard input and output. Per-case
//! deadlines that cover writing the request as well as reading the answer, crash isolation (a
//! shim that dies, hangs or speaks garbage costs only the case in flight and is restarted for
//! the next), every shim in its own process group (stopped as a whole, orphans included), and a
//! circuit breaker after [`MAX_CONSECUTIVE_FAILURES`] failures in a row. A shim that offers a
//! `window` in its handshake is pipelined (issue 9): up to [`MAX_WINDOW`] requests in flight,
//! answered in order, through [`Adapter::send`] and [`Adapter::receive`] (or
//! [`Adapter::run_batch`]); one that answers `profile_once` gets the profile in a message of its
//! own instead of in every request.

use crate::interrupt::Wait;
use crate::{Adapter, AdapterError, AdapterErrorKind, Level, Observation, Request};
use atomcts_reference::outcome::FaultClass;
use atomcts_reference::state::{AtomicType, Buffer, MAX_ELEMS, Reg, State, Window};
use atomcts_reference::types::{ElemType, Space};
use serde_json::{Map, Value, json};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

mod concurrent;
pub(crate) mod wire;
pub use wire::StateOut;

/// Protocol version spoken.
pub const VERSION: u64 = 1;
/// Highest protocol version spoken: version 2 adds the lowered IR and semantic-level shims
/// (adapters/PROTOCOL.md); a shim answering version 1 is spoken to in version 1.
pub const MAX_VERSION: u64 = 2;
/// Longest answer line accepted (bytes); longer is a protocol error, never an allocation.
pub const MAX_LINE: u64 = 256 << 20;
/// The least time a shim gets to start and answer its first handshake, whatever the case
/// timeout.
pub const MIN_STARTUP: Duration = Duration::from_secs(30);
/// After this many adapter failures in a row (crash, timeout, protocol error, failed start),
/// the adapter stops restarting the shim and fails the remaining cases at once.
pub const MAX_CONSECUTIVE_FAILURES: u32 = 5;
/// The most JSON objects one answer may hold (memory ranges, registers, buffers, ...): counted
/// on the raw line before it is parsed, so an answer of millions of tiny ranges is a protocol
/// error instead of gigabytes of parsed JSON. At the limit, reading one answer peaks near 1 GiB.
pub const MAX_ANSWER_OBJECTS: usize = 1 << 20;
/// How long a shim that closed its output gets to exit, so its exit status can be reported.
const EXIT_GRACE: Duration = Duration::from_millis(500);

/// What the reader and writer threads report.
enum Event {
    /// One answer line (without checking it is UTF-8).
    Line(Vec<u8>),
    /// The shim closed its output.
    Eof,
    /// Writing a request failed.
    WriteFailed(String),
}

struct Running {
    child: Child,
    /// Requests to the writer thread (which owns the shim's stdin).
    requests: Option<Sender<Vec<u8>>>,
    events: Receiver<Event>,
    /// Request buffers the writer thread has written and hands back for reuse.
    spare: Receiver<Vec<u8>>,
    /// Answer buffers handed back to the reader thread for reuse.
    recycle: Sender<Vec<u8>>,
    /// Answers this instance has given.
    answered: u64,
    /// The profile this instance last received in a `profile` message (profile_once): a
    /// restarted shim gets it again before its first request.
    profile: Option<atomcts_reference::Profile>,
}

impl Running {
    /// Stops the whole process group the runner created for this shim: the shell, the shim and
    /// anything they started (`| cat`, forks). The group is signalled before the leader is
    /// reaped, so its id cannot have been reused by then.
    fn stop(&mut self) {
        self.requests = None;
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
    fn exit_status(&mut self, grace: Duration) -> Option<String> {
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

/// A shim started with `sh -c <command>`, in a process group of its own.
pub struct SubprocessAdapter {
    command: String,
    name: String,
    capabilities: Vec<String>,
    timeout: Duration,
    running: Option<Running>,
    /// How long the first handshake took (restarts get a bounded allowance from it).
    first_startup: Option<Duration>,
    consecutive_failures: u32,
    /// Set when a shim that had answered earlier requests went away with the next one in
    /// flight: it may have exited after its last answer, so that case is tried once more.
    died_after_answers: Option<String>,
    /// The version the shim answered (1 or 2).
    version: u64,
    /// Version 2: what the shim consumes.
    level: Level,
    /// The handshake's optional `implementation` (what runs behind the shim, with versions).
    implementation: Option<String>,
    /// The handshake's optional `profile` (the profile the implementation claims).
    profile: Option<String>,
    /// Requests the shim accepts in flight at once (its handshake's `window`, at most
    /// [`MAX_WINDOW`]); 1 without pipelining.
    window: usize,
    /// The request's `profile` object, serialized once per profile.
    profile_json: Option<(atomcts_reference::Profile, Vec<u8>)>,
    /// The shim takes the profile once, in a `profile` message, instead of in every request
    /// (its handshake's `profile_once`, PROTOCOL.md "The profile sent once").
    profile_once: bool,
    /// Requests [`Adapter::send`] accepted and [`Adapter::receive`] has not answered yet, in
    /// order.
    in_flight: VecDeque<Flight>,
    /// How many of `in_flight` are [`Flight::Sent`].
    sent: usize,
    /// Request lines not yet handed to the writer thread (the last `pending_count` of the sent
    /// requests).
    pending: Vec<u8>,
    pending_count: usize,
}

/// A request accepted by [`Adapter::send`], until [`Adapter::receive`] gives its answer.
enum Flight {
    /// Written to the shim, or waiting in `pending`; with the lowered IR sent with it.
    Sent(Option<atomcts_reference::ir::Lowered>),
    /// Lost with a shim that failed while it was in flight.
    Lost(AdapterError),
    /// Answered when it was sent: the shim (restarted without a window) takes one request at
    /// a time, so `send` ran it (with nothing of the shim's in flight).
    Done(Result<Observation, AdapterError>),
}

/// The most requests the runner keeps in flight to one shim (issue 9): offered as `window`
/// in the handshake; a shim that answers `"window": W` gets up to `min(W, MAX_WINDOW)`.
pub const MAX_WINDOW: usize = 256;

impl SubprocessAdapter {
    /// Starts the shim and performs the handshake.
    pub fn start(command: &str, timeout: Duration) -> Result<SubprocessAdapter, AdapterError> {
        let mut a = SubprocessAdapter {
            command: command.to_string(),
            name: format!("cmd:{}", crate::escape_controls(command)),
            capabilities: vec![],
            timeout,
            running: None,
            first_startup: None,
            consecutive_failures: 0,
            died_after_answers: None,
            implementation: None,
            profile: None,
            version: VERSION,
            level: Level::Text,
            window: 1,
            profile_json: None,
            profile_once: false,
            in_flight: VecDeque::new(),
            sent: 0,
            pending: Vec::new(),
            pending_count: 0,
        };
        a.ensure_running()?;
        Ok(a)
    }

    fn err(&self, kind: AdapterErrorKind) -> AdapterError {
        AdapterError {
            adapter: self.name.clone(),
            kind,
        }
    }

    /// The handshake allowance: the first start gets at least [`MIN_STARTUP`]; a restart gets
    /// the case timeout or twice the first start's duration plus a second, whichever is longer,
    /// and never more than [`MIN_STARTUP`].
    fn handshake_timeout(&self) -> Duration {
        match self.first_startup {
            None => self.timeout.max(MIN_STARTUP),
            Some(first) => self
                .timeout
                .max((first * 2 + Duration::from_secs(1)).min(MIN_STARTUP)),
        }
    }

    /// Whether the circuit breaker has tripped.
    fn tripped(&self) -> bool {
        self.consecutive_failures >= MAX_CONSECUTIVE_FAILURES
    }

    /// Counts the shim's failures for the circuit breaker: a case whose failure stopped the
    /// shim (crash, hang, garbage, failed start) counts; any case it answered resets the count.
    fn record<T>(&mut self, r: Result<T, AdapterError>) -> Result<T, AdapterError> {
        if r.is_err() && self.running.is_none() {
            self.consecutive_failures += 1;
        } else {
            self.consecutive_failures = 0;
        }
        r
    }

    /// Notices a shim that exited (or closed its output, or wrote more than its answer) after
    /// its last answer, before a new request is sent: one note on standard error with the exit
    /// status, and a fresh shim for the next case, which is not lost (issue 7, D19).
    fn reap_if_gone(&mut self) {
        let Some(run) = self.running.as_mut() else {
            return;
        };
        let how = match run.events.try_recv() {
            Ok(Event::Line(extra)) => Some(format!(
                "wrote a line nobody asked for (`{}`)",
                crate::escape_controls(&shorten(&String::from_utf8_lossy(&extra), 100))
            )),
            Ok(Event::Eof | Event::WriteFailed(_)) => Some(
                run.exit_status(EXIT_GRACE)
                    .map_or("closed its output".to_string(), |s| format!("exited ({s})")),
            ),
            Err(_) => run.peek_exit().map(|s| format!("exited ({s})")),
        };
        if let Some(how) = how {
            eprintln!(
                "note: adapter {}: the shim {how} after its last answer; restarting it",
                self.name
            );
            self.running = None;
        }
    }

    fn spawn(&self) -> Result<Running, AdapterError> {
        // `sh -c` exactly as documented: `VAR=x cmd`, `cd d && cmd` and pipelines work; the
        // process group holds the shell and everything it starts.
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(&self.command);
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| {
                self.err(AdapterErrorKind::Unavailable(format!(
                    "cannot start `{}`: {e}",
                    crate::escape_controls(&self.command)
                )))
            })?;
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(self.err(AdapterErrorKind::Unavailable("no pipes to the shim".into())));
        };
        let (etx, events) = channel();
        let wtx = etx.clone();
        // Answer buffers come back from the runner once read (issue 9: no allocation and
        // regrowth per answer line).
        let (recycle, lines_back) = channel::<Vec<u8>>();
        std::thread::spawn(move || {
            let mut r = BufReader::with_capacity(1 << 16, stdout);
            loop {
                let mut buf = lines_back.try_recv().unwrap_or_default();
                buf.clear();
                let ev = match (&mut r).take(MAX_LINE).read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => Event::Eof,
                    Ok(_) => Event::Line(buf),
                };
                let last = matches!(ev, Event::Eof);
                if etx.send(ev).is_err() || last {
                    return;
                }
            }
        });
        // Writes go through their own thread, so a shim that stops reading cannot block the
        // runner past the case deadline (issue 7, D4).
        let (requests, rx) = channel::<Vec<u8>>();
        let (give_back, spare) = channel::<Vec<u8>>();
        std::thread::spawn(move || {
            for mut msg in rx {
                if let Err(e) = stdin.write_all(&msg).and_then(|_| stdin.flush()) {
                    let _ = wtx.send(Event::WriteFailed(e.to_string()));
                    return;
                }
                msg.clear();
                let _ = give_back.send(msg);
            }
        });
        Ok(Running {
            child,
            requests: Some(requests),
            events,
            spare,
            recycle,
            answered: 0,
            profile: None,
        })
    }

    fn ensure_running(&mut self) -> Result<(), AdapterError> {
        self.reap_if_gone();
        if self.running.is_some() {
            return Ok(());
        }
        // Nothing new starts once a stop was requested (issue 27, H15).
        if let Some(sig) = crate::interrupt::requested() {
            return Err(self.err(AdapterErrorKind::Interrupted(sig)));
        }
        if self.tripped() {
            return Err(self.err(AdapterErrorKind::Unavailable(format!(
                "not restarted after {} consecutive failures (circuit breaker)",
                self.consecutive_failures
            ))));
        }
        self.start_and_handshake()
    }

    fn start_and_handshake(&mut self) -> Result<(), AdapterError> {
        self.running = Some(self.spawn()?);
        let hello = json!({"type": "hello", "protocol": "atomcts-adapter", "version": VERSION, "versions": [VERSION, MAX_VERSION], "window": MAX_WINDOW, "profile_once": true});
        let t0 = Instant::now();
        let answer = self.exchange(&hello, self.handshake_timeout())?;
        self.first_startup.get_or_insert(t0.elapsed());
        if let Some(run) = self.running.as_mut() {
            // Only answers to cases count (see `died_after_answers`).
            run.answered = 0;
        }
        let ok = answer.get("type").and_then(Value::as_str) == Some("hello")
            && answer.get("protocol").and_then(Value::as_str) == Some("atomcts-adapter")
            && answer
                .get("version")
                .and_then(Value::as_u64)
                .is_some_and(|v| (VERSION..=MAX_VERSION).contains(&v));
        if !ok {
            self.running = None;
            return Err(self.err(AdapterErrorKind::Protocol(format!(
                "bad handshake answer: {}",
                truncate(&answer)
            ))));
        }
        self.version = answer
            .get("version")
            .and_then(Value::as_u64)
            .unwrap_or(VERSION);
        self.level = match answer.get("level").and_then(Value::as_str) {
            Some("semantic") if self.version >= 2 => Level::Semantic,
            None | Some("text") => Level::Text,
            Some(other) => {
                self.running = None;
                return Err(self.err(AdapterErrorKind::Protocol(format!(
                    "handshake level `{other}` (expected text or semantic, version 2)"
                ))));
            }
        };
        // Pipelining (issue 9): a shim that answers `window` accepts that many requests in
        // flight and answers them in order; without it, one at a time.
        self.window = match answer.get("window") {
            None | Some(Value::Null) => 1,
            Some(w) => match w.as_u64() {
                Some(w) if w >= 1 => (w as usize).min(MAX_WINDOW),
                _ => {
                    self.running = None;
                    return Err(self.err(AdapterErrorKind::Protocol(format!(
                        "handshake window `{w}` (expected a positive integer)"
                    ))));
                }
            },
        };
        // The profile sent once (issue 9): only a shim that says so.
        self.profile_once = answer.get("profile_once").and_then(Value::as_bool) == Some(true);
        if let Some(n) = answer.get("name").and_then(Value::as_str) {
            self.name = format!("cmd:{}", crate::escape_controls(&shorten(n, 200)));
        }
        self.implementation = answer
            .get("implementation")
            .and_then(Value::as_str)
            .map(|s| crate::escape_controls(&shorten(s, 300)));
        self.profile = answer
            .get("profile")
            .and_then(Value::as_str)
            .map(|s| crate::escape_controls(&shorten(s, 100)));
        self.capabilities = answer
            .get("capabilities")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|c| c.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        Ok(())
    }

    /// Sends one message and waits for one answer, both within `timeout`; on any failure the
    /// shim's process group is stopped.
    fn exchange(&mut self, msg: &Value, timeout: Duration) -> Result<Value, AdapterError> {
        let mut line = msg.to_string().into_bytes();
        line.push(b'\n');
        let answer = self.exchange_line(line, timeout)?;
        parse_answer(&answer).map_err(|kind| {
            self.running = None;
            self.err(kind)
        })
    }

    /// Sends one line (with its `\n`) and waits for one answer line, both within `timeout`;
    /// the answer is UTF-8 and within [`MAX_ANSWER_OBJECTS`] (not parsed yet). On any failure
    /// the shim's process group is stopped.
    fn exchange_line(&mut self, line: Vec<u8>, timeout: Duration) -> Result<Vec<u8>, AdapterError> {
        let Some(run) = self.running.as_mut() else {
            return Err(self.err(AdapterErrorKind::Crashed("not running".into())));
        };
        let sent = run.requests.as_ref().map(|tx| tx.send(line).is_ok());
        let result = if sent != Some(true) {
            Err(AdapterErrorKind::Crashed(
                "the shim stopped reading its input".into(),
            ))
        } else {
            match crate::interrupt::recv_timeout(&run.events, timeout) {
                Ok(Event::Line(bytes)) => {
                    run.answered += 1;
                    match check_answer(&bytes) {
                        Ok(_) => Ok(bytes),
                        Err(e) => Err(e),
                    }
                }
                Ok(Event::WriteFailed(e)) => Err(gone(run, &format!("writing to it failed: {e}"))),
                Ok(Event::Eof) | Err(Wait::Disconnected) => Err(gone(run, "closed its output")),
                Err(Wait::Interrupted(sig)) => Err(AdapterErrorKind::Interrupted(sig)),
                Err(Wait::Timeout) => Err(AdapterErrorKind::Timeout(timeout.as_millis() as u64)),
            }
        };
        result.map_err(|kind| {
            let prior = self.running.as_ref().map_or(0, |r| r.answered);
            if let AdapterErrorKind::Crashed(how) = &kind
                && prior > 0
            {
                self.died_after_answers = Some(how.clone());
            }
            self.running = None;
            self.err(kind)
        })
    }
}

/// One message for a shim that went away while a case was in flight: its exit status when it
/// has one (issue 7, D19).
fn gone(run: &mut Running, otherwise: &str) -> AdapterErrorKind {
    AdapterErrorKind::Crashed(match run.exit_status(EXIT_GRACE) {
        Some(s) => format!("the shim exited ({s})"),
        None => format!("the shim {otherwise}"),
    })
}

/// An answer line: UTF-8 JSON, or a protocol error quoting (escaped, shortened) what came.
fn parse_answer(bytes: &[u8]) -> Result<Value, AdapterErrorKind> {
    let line = check_answer(bytes)?;
    serde_json::from_str::<Value>(line.trim()).map_err(|e| {
        AdapterErrorKind::Protocol(format!(
            "answer is not JSON ({e}): `{}`",
            crate::escape_controls(&shorten(line.trim(), 200))
        ))
    })
}

/// An answer line's text: UTF-8 and at most [`MAX_ANSWER_OBJECTS`] objects (counted before
/// anything is parsed), or a protocol error quoting (escaped, shortened) what came.
fn check_answer(bytes: &[u8]) -> Result<&str, AdapterErrorKind> {
    let line = std::str::from_utf8(bytes).map_err(|e| {
        AdapterErrorKind::Protocol(format!(
            "answer is not UTF-8 (invalid byte at offset {}): `{}`",
            e.valid_up_to(),
            crate::escape_controls(&shorten(&String::from_utf8_lossy(bytes), 200))
        ))
    })?;
    let objects = memchr_count(b'{', bytes);
    if objects > MAX_ANSWER_OBJECTS {
        return Err(AdapterErrorKind::Protocol(format!(
            "answer of {} bytes holds {objects} JSON objects (at most {MAX_ANSWER_OBJECTS})",
            bytes.len()
        )));
    }
    Ok(line)
}

/// How many times `b` occurs in `bytes`.
fn memchr_count(b: u8, bytes: &[u8]) -> usize {
    bytes.iter().filter(|x| **x == b).count()
}

/// At most `n` characters of `s`, with `...` when cut.
fn shorten(s: &str, n: usize) -> String {
    let mut out: String = s.chars().take(n).collect();
    if s.chars().nth(n).is_some() {
        out.push_str("...");
    }
    out
}

impl SubprocessAdapter {
    /// Version 2: the lowered IR of the request. For a semantic-level shim, an instruction
    /// that does not lower to something to run is not applicable (it runs valid instructions
    /// only); a text-level shim gets `lowered: null` then.
    fn lower(
        &self,
        r: &Request<'_>,
    ) -> Result<Option<atomcts_reference::ir::Lowered>, AdapterError> {
        use atomcts_reference::ir::Lowering;
        let na = |why: String| match self.level {
            Level::Semantic => Err(self.err(AdapterErrorKind::NotApplicable(why))),
            Level::Text => Ok(None),
        };
        let program = match atomcts_reference::program::Program::parse(r.dialect, r.asm) {
            Ok(p) => p,
            Err(rej) => return na(format!("an illegal form ({})", rej.reason.code())),
        };
        match program.lower(r.state, r.profile) {
            Ok(Lowering::Run(l)) => Ok(Some(l)),
            Ok(Lowering::Invalid(rej)) => na(format!("an illegal form ({})", rej.reason.code())),
            Ok(Lowering::Unspecified(why)) => na(format!("the outcome is unspecified ({why})")),
            Err(e) => Err(self.err(AdapterErrorKind::Model(e.to_string()))),
        }
    }
}

impl Adapter for SubprocessAdapter {
    fn name(&self) -> &str {
        &self.name
    }

    fn describe(&self) -> Option<String> {
        self.implementation.clone()
    }

    fn claimed_profile(&self) -> Option<String> {
        self.profile.clone()
    }

    fn level(&self) -> Level {
        self.level
    }

    fn supports(&self, capability: &str) -> bool {
        self.capabilities.iter().any(|c| c == capability)
    }

    /// The shim says per request (capability `cas_loop`, known after its handshake).
    fn runs_cas_loops(&self) -> bool {
        true
    }

    fn locates_rejections(&self) -> bool {
        self.capabilities.iter().any(|c| c == "rejection_columns")
    }

    fn run_concurrent(
        &mut self,
        r: &crate::concurrent::ConcurrentRequest<'_>,
    ) -> Result<crate::concurrent::ConcurrentObservation, AdapterError> {
        let result = self.run_concurrent_once(r);
        self.record(result)
    }

    fn window(&self) -> usize {
        self.window
    }

    fn run_batch(&mut self, requests: &[Request<'_>]) -> Vec<Result<Observation, AdapterError>> {
        if self.window <= 1 {
            return requests.iter().map(|r| self.run(r)).collect();
        }
        crate::run_streamed(self, requests)
    }

    fn send(&mut self, r: &Request<'_>) -> Result<(), AdapterError> {
        self.send_one(r)
    }

    fn receive(&mut self, r: &Request<'_>) -> Result<Observation, AdapterError> {
        self.receive_one(r)
    }

    fn run(&mut self, r: &Request<'_>) -> Result<Observation, AdapterError> {
        self.died_after_answers = None;
        let mut result = self.run_once(r);
        // A shim that exits after answering may be seen gone only once the next request is
        // sent: that case is not its fault, so it runs once more on a fresh shim, and the exit
        // is reported once, with its status (issue 7, D19). A shim that dies on the case again
        // has crashed on it.
        if result.is_err()
            && let Some(how) = self.died_after_answers.take()
        {
            let how = how.strip_prefix("the shim ").unwrap_or(&how).to_string();
            eprintln!(
                "note: adapter {}: the shim {how} after its last answer; restarting it",
                self.name
            );
            result = self.run_once(r);
        }
        self.record(result)
    }
}

impl SubprocessAdapter {
    fn run_once(&mut self, r: &Request<'_>) -> Result<Observation, AdapterError> {
        self.ensure_running()?;
        let mut line = self.spare_buffer();
        let lowered = self.message(r, &mut line)?;
        let timeout = self.timeout;
        let answer = self.exchange_line(line, timeout)?;
        self.observation_line(r, lowered, &answer)
    }

    /// Hands an answer line's buffer back to the reader thread (not a huge one: its memory
    /// would stay held).
    fn recycle(&self, line: Vec<u8>) {
        if line.capacity() <= 1 << 20
            && let Some(run) = &self.running
        {
            let _ = run.recycle.send(line);
        }
    }

    /// An empty buffer for request lines: one the writer thread has handed back, or a new one.
    fn spare_buffer(&self) -> Vec<u8> {
        self.running
            .as_ref()
            .and_then(|run| run.spare.try_recv().ok())
            .unwrap_or_default()
    }

    /// Appends the request line for `r` to `buf` (streamed, issue 9) and returns the lowered
    /// IR sent in it (version 2).
    fn message(
        &mut self,
        r: &Request<'_>,
        buf: &mut Vec<u8>,
    ) -> Result<Option<atomcts_reference::ir::Lowered>, AdapterError> {
        if self.profile_json.as_ref().map(|(p, _)| p) != Some(r.profile) {
            let knobs: Map<String, Value> = atomcts_reference::knobs::KNOBS
                .iter()
                .map(|k| {
                    (
                        k.id.to_string(),
                        Value::String(r.profile.get(k.id).unwrap_or("?").to_string()),
                    )
                })
                .collect();
            let profile = json!({"name": r.profile.name, "knobs": knobs});
            self.profile_json = Some((r.profile.clone(), profile.to_string().into_bytes()));
        }
        let lowered = if self.version >= 2 {
            self.lower(r)?
        } else {
            None
        };
        let profile = self.profile_json.as_ref().map_or(&b"null"[..], |(_, p)| p);
        // With profile_once, a `profile` message goes before the first request of each profile
        // to each shim instance (a restarted shim gets it again), and requests carry none.
        let profile = match self.running.as_mut() {
            Some(run) if self.profile_once => {
                if run.profile.as_ref() != Some(r.profile) {
                    buf.extend_from_slice(b"{\"type\":\"profile\",\"profile\":");
                    buf.extend_from_slice(profile);
                    buf.extend_from_slice(b"}\n");
                    run.profile = Some(r.profile.clone());
                }
                None
            }
            _ => Some(profile),
        };
        wire::write_run(
            buf,
            r,
            profile,
            (self.version >= 2).then_some(lowered.as_ref()),
        );
        Ok(lowered)
    }

    /// The observation an answer line to `r` gives: answers of the common shapes are read
    /// typed (no `Value` tree); anything else, and anything the typed reader refuses, goes
    /// through [`Self::observation`] exactly as before (the same results and messages).
    fn observation_line(
        &mut self,
        r: &Request<'_>,
        lowered: Option<atomcts_reference::ir::Lowered>,
        bytes: &[u8],
    ) -> Result<Observation, AdapterError> {
        // `bytes` passed `check_answer` (UTF-8, bounded object count) when it was received.
        let text = std::str::from_utf8(bytes).unwrap_or("");
        if let Ok(a) = serde_json::from_str::<wire::AnswerIn<'_>>(text)
            && a.id == r.id
        {
            match (&*a.outcome, a.state) {
                ("completed", Some(st)) => {
                    if let Ok(s) = st.into_state() {
                        return Ok(Observation::Completed(s));
                    }
                }
                ("accesses", _) if self.version >= 2 => {
                    if let (Some(l), Some(mem), Some(returned)) = (&lowered, &a.memory, &a.returned)
                        && let Ok(s) = crate::protocol2::accesses_typed(
                            l,
                            r.state,
                            mem,
                            returned.iter().map(|h| h.0).collect(),
                            a.ok.clone().unwrap_or_default(),
                        )
                    {
                        return Ok(Observation::Completed(s));
                    }
                }
                _ => {}
            }
        }
        let answer = parse_answer(bytes).map_err(|kind| {
            self.running = None;
            self.err(kind)
        })?;
        self.observation(r, lowered, answer)
    }

    /// The observation an answer to `r` gives.
    fn observation(
        &mut self,
        r: &Request<'_>,
        lowered: Option<atomcts_reference::ir::Lowered>,
        answer: Value,
    ) -> Result<Observation, AdapterError> {
        if answer.get("id").and_then(Value::as_str) != Some(r.id) {
            self.running = None;
            return Err(self.err(AdapterErrorKind::Protocol(format!(
                "answer for another id: {}",
                truncate(&answer)
            ))));
        }
        let proto =
            |what: String| AdapterErrorKind::Protocol(format!("{what} in {}", truncate(&answer)));
        match answer.get("outcome").and_then(Value::as_str) {
            Some("completed") => {
                let st = answer
                    .get("state")
                    .ok_or_else(|| self.err(proto("no state".into())))?;
                state_from_json(st)
                    .map(Observation::Completed)
                    .map_err(|e| self.err(proto(e)))
            }
            Some("fault") => {
                let mut lanes = Vec::new();
                for l in answer
                    .get("lanes")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default()
                {
                    let lane = l.get(0).and_then(Value::as_u64);
                    let class = l
                        .get(1)
                        .and_then(Value::as_str)
                        .and_then(FaultClass::from_name);
                    match (lane, class) {
                        (Some(lane), Some(c)) if lane < u64::from(u32::MAX) => {
                            lanes.push((lane as u32, c))
                        }
                        _ => return Err(self.err(proto(format!("bad fault lane {l}")))),
                    }
                }
                Ok(Observation::Fault(lanes))
            }
            Some("invalid") => {
                let column = match answer.get("column") {
                    None | Some(Value::Null) => None,
                    Some(c) => match c.as_u64() {
                        Some(n @ 1..=0xFFFF_FFFF) => Some(n as usize),
                        _ => return Err(self.err(proto(format!("bad column {c}")))),
                    },
                };
                Ok(Observation::Invalid {
                    reason: answer
                        .get("reason")
                        .and_then(Value::as_str)
                        .unwrap_or("rejected")
                        .to_string(),
                    column,
                })
            }
            Some("error") => Err(self.err(AdapterErrorKind::Crashed(format!(
                "the shim reported an error: {}",
                answer.get("why").and_then(Value::as_str).unwrap_or("")
            )))),
            Some("accesses") if self.version >= 2 => {
                let l = lowered.ok_or_else(|| self.err(proto("no lowered IR was sent".into())))?;
                crate::protocol2::accesses_answer(&l, r.state, &answer)
                    .map(Observation::Completed)
                    .map_err(|e| self.err(proto(e)))
            }
            Some("not_applicable") if self.version >= 2 => {
                Err(self.err(AdapterErrorKind::NotApplicable(
                    answer
                        .get("why")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                )))
            }
            Some("unsupported") => Err(self.err(AdapterErrorKind::Unsupported(
                answer
                    .get("why")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            ))),
            other => Err(self.err(proto(format!("unknown outcome {other:?}")))),
        }
    }
}

/// Pipelining (issue 9, adapters/PROTOCOL.md "Pipelining"): up to a window of requests in
/// flight, answered in order, through [`Adapter::send`] and [`Adapter::receive`].
impl SubprocessAdapter {
    /// Accepts one request: its line goes into the pending buffer, handed to the writer thread
    /// (one write) once it holds a quarter of the window, or when [`Self::receive_one`] needs
    /// an answer not written yet. With nothing of the shim's in flight, a shim that has gone
    /// is restarted first. A request that cannot be sent (not applicable, a model error, a
    /// shim that cannot start) is answered here, as an error, and is not in flight.
    fn send_one(&mut self, r: &Request<'_>) -> Result<(), AdapterError> {
        if self.sent == 0 {
            self.pending.clear();
            self.pending_count = 0;
            if let Err(e) = self.ensure_running() {
                return self.record(Err(e));
            }
        }
        if self.window <= 1 {
            // The shim was restarted and no longer pipelines (nothing of it is in flight, as
            // the window only changes on a restart): it runs now, one at a time.
            let answer = self.run(r);
            self.in_flight.push_back(Flight::Done(answer));
            return Ok(());
        }
        let mut buf = std::mem::take(&mut self.pending);
        let len = buf.len();
        let result = match self.message(r, &mut buf) {
            Ok(lowered) => {
                self.in_flight.push_back(Flight::Sent(lowered));
                self.sent += 1;
                self.pending_count += 1;
                Ok(())
            }
            Err(e) => {
                buf.truncate(len);
                Err(e)
            }
        };
        self.pending = buf;
        if self.pending_count >= (self.window / 4).max(1) && !self.flush() {
            let _ = self.shim_stopped_reading();
        }
        result
    }

    /// Hands the pending request lines to the writer thread; false if it is gone.
    fn flush(&mut self) -> bool {
        if self.pending_count == 0 {
            return true;
        }
        let spare = self.spare_buffer();
        let buf = std::mem::replace(&mut self.pending, spare);
        self.pending_count = 0;
        self.running
            .as_ref()
            .and_then(|run| run.requests.as_ref())
            .is_some_and(|tx| tx.send(buf).is_ok())
    }

    /// The writer thread is gone (the shim exited or stopped reading): every request in
    /// flight is lost. Returns the failure, with the exit status when there is one.
    fn shim_stopped_reading(&mut self) -> AdapterError {
        let kind = match self.running.as_mut() {
            Some(run) => gone(run, "stopped reading its input"),
            None => AdapterErrorKind::Crashed("the shim stopped reading its input".into()),
        };
        self.running = None;
        let e = self.err(kind);
        let lost = AdapterError {
            adapter: e.adapter.clone(),
            kind: AdapterErrorKind::Crashed(format!("in flight when the shim failed ({})", e.kind)),
        };
        self.lose_in_flight(&lost);
        e
    }

    /// The shim is gone: every request sent to it and not answered is lost with it, each an
    /// adapter error naming the failure; one failure for the circuit breaker.
    fn lose_in_flight(&mut self, e: &AdapterError) {
        for f in &mut self.in_flight {
            if matches!(f, Flight::Sent(_)) {
                *f = Flight::Lost(e.clone());
            }
        }
        self.sent = 0;
        self.pending.clear();
        self.pending_count = 0;
        self.consecutive_failures += 1;
    }

    /// The answer to the oldest request in flight (`r` is that request again). Each answer
    /// has the case deadline, counted from the previous answer (or from writing the request);
    /// a shim that crashes, hangs or speaks garbage costs every request in flight, each an
    /// adapter error, and is restarted for the next request sent. The circuit breaker counts
    /// such a failure once; any answer resets it.
    fn receive_one(&mut self, r: &Request<'_>) -> Result<Observation, AdapterError> {
        let lowered = match self.in_flight.pop_front() {
            None => {
                return Err(self.err(AdapterErrorKind::Protocol(
                    "an answer was asked for with no request in flight".into(),
                )));
            }
            Some(Flight::Done(answer)) => return answer,
            Some(Flight::Lost(e)) => return Err(e),
            Some(Flight::Sent(lowered)) => lowered,
        };
        // The oldest request not written yet: write what is pending first.
        if self.sent == self.pending_count && !self.flush() {
            return Err(self.shim_stopped_reading());
        }
        self.sent -= 1;
        let result = match self.receive_line(self.timeout) {
            Ok(line) => {
                let obs = self.observation_line(r, lowered, &line);
                self.recycle(line);
                obs
            }
            Err(e) => Err(e),
        };
        match &result {
            Err(e) if self.running.is_none() => {
                let lost = AdapterError {
                    adapter: e.adapter.clone(),
                    kind: AdapterErrorKind::Crashed(format!(
                        "in flight when the shim failed ({})",
                        e.kind
                    )),
                };
                self.lose_in_flight(&lost);
            }
            _ => self.consecutive_failures = 0,
        }
        result
    }

    /// Reads one answer line within `timeout` (UTF-8, bounded, not parsed yet); on any failure
    /// the shim is stopped.
    fn receive_line(&mut self, timeout: Duration) -> Result<Vec<u8>, AdapterError> {
        let Some(run) = self.running.as_mut() else {
            return Err(self.err(AdapterErrorKind::Crashed("not running".into())));
        };
        let result = match crate::interrupt::recv_timeout(&run.events, timeout) {
            Ok(Event::Line(bytes)) => {
                run.answered += 1;
                match check_answer(&bytes) {
                    Ok(_) => Ok(bytes),
                    Err(e) => Err(e),
                }
            }
            Ok(Event::WriteFailed(e)) => Err(gone(run, &format!("writing to it failed: {e}"))),
            Ok(Event::Eof) | Err(Wait::Disconnected) => Err(gone(run, "closed its output")),
            Err(Wait::Interrupted(sig)) => Err(AdapterErrorKind::Interrupted(sig)),
            Err(Wait::Timeout) => Err(AdapterErrorKind::Timeout(timeout.as_millis() as u64)),
        };
        result.map_err(|kind| {
            self.running = None;
            self.err(kind)
        })
    }
}

fn truncate(v: &Value) -> String {
    crate::escape_controls(&shorten(&v.to_string(), 200))
}

fn hexs(v: u64) -> Value {
    Value::String(format!("{v:#x}"))
}

fn type_name(t: ElemType) -> &'static str {
    t.visa_name()
}

fn type_of(name: &str) -> Option<ElemType> {
    match name {
        "b32" => Some(ElemType::B32),
        "bool" => Some(ElemType::BOOL),
        other => ElemType::from_visa_name(other),
    }
}

/// The protocol's JSON form of a state.
pub fn state_to_json(s: &State) -> Value {
    let regs: Map<String, Value> = s
        .regs
        .iter()
        .map(|(n, r)| {
            (n.clone(), json!({"type": type_name(r.ty), "elems": r.elems.iter().map(|e| hexs(*e)).collect::<Vec<_>>()}))
        })
        .collect();
    let mem = |space: Space| -> Value {
        let m = s.memory(space);
        let mut out = Vec::new();
        for (base, data) in m.regions() {
            out.push(json!({"base": hexs(base), "bytes": hex_bytes(data)}));
        }
        Value::Array(out)
    };
    let window = |w: &Option<Window>| {
        w.map_or(
            Value::Null,
            |w| json!({"base": hexs(w.base), "len": hexs(w.len)}),
        )
    };
    let buffers: Map<String, Value> = s
        .buffers
        .iter()
        .map(|(n, b)| {
            (n.clone(), json!({"space": b.space.name(), "type": b.ty.name(), "base": hexs(b.base), "len": b.len}))
        })
        .collect();
    json!({
        "lanes": s.lanes,
        "active": s.active,
        "regs": regs,
        "memory": {"global": mem(Space::Global), "shared": mem(Space::Shared)},
        "slm_size": s.slm_size.map_or(Value::Null, hexs),
        "shared_window": window(&s.shared_window),
        "local_window": window(&s.local_window),
        "buffers": buffers,
        "emask": hexs(u64::from(s.emask)),
        "simd_width": s.simd_width,
    })
}

fn hex_bytes(data: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(2 * data.len());
    for b in data {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

fn bytes_of_hex(hex: &str) -> Result<Vec<u8>, String> {
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    if !hex.len().is_multiple_of(2) {
        return Err("memory bytes must be pairs of hex digits".into());
    }
    if hex.len() as u64 / 2 > atomcts_reference::memory::MAX_BYTES {
        return Err("memory bytes exceed the memory limit".into());
    }
    hex.as_bytes()
        .chunks(2)
        .map(|p| match (digit(p[0]), digit(p[1])) {
            (Some(h), Some(l)) => Ok(h << 4 | l),
            _ => Err("memory bytes must be pairs of hex digits".to_string()),
        })
        .collect()
}

fn hex_of(v: Option<&Value>, what: &str) -> Result<u64, String> {
    let s = v
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{what}: expected a hex string"))?;
    let h = s
        .strip_prefix("0x")
        .ok_or_else(|| format!("{what}: `{s}` lacks 0x"))?;
    u64::from_str_radix(h, 16).map_err(|e| format!("{what}: `{s}`: {e}"))
}

/// Parses the protocol's JSON form of a state, with the model's limits.
pub fn state_from_json(v: &Value) -> Result<State, String> {
    let lanes = v
        .get("lanes")
        .and_then(Value::as_u64)
        .ok_or("state.lanes missing")?;
    let lanes = u32::try_from(lanes).map_err(|_| "state.lanes too large".to_string())?;
    if lanes == 0 || lanes > atomcts_reference::state::MAX_LANES {
        return Err(format!("state.lanes = {lanes}"));
    }
    let mut s = State::new(lanes);
    if let Some(a) = v.get("active").and_then(Value::as_array) {
        s.active = a.iter().map(|x| x.as_bool().unwrap_or(false)).collect();
    }
    if let Some(regs) = v.get("regs").and_then(Value::as_object) {
        for (name, r) in regs {
            let ty = r
                .get("type")
                .and_then(Value::as_str)
                .and_then(type_of)
                .ok_or(format!("regs.{name}: bad type"))?;
            let elems = r
                .get("elems")
                .and_then(Value::as_array)
                .ok_or(format!("regs.{name}: no elems"))?;
            if elems.len() > MAX_ELEMS {
                return Err(format!("regs.{name}: {} elements", elems.len()));
            }
            let elems = elems
                .iter()
                .enumerate()
                .map(|(i, e)| hex_of(Some(e), &format!("regs.{name}[{i}]")).map(|x| x & ty.mask()))
                .collect::<Result<Vec<_>, _>>()?;
            s.regs.insert(name.clone(), Reg { ty, elems });
        }
    }
    for (key, space) in [("global", Space::Global), ("shared", Space::Shared)] {
        let ranges = v
            .get("memory")
            .and_then(|m| m.get(key))
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        let mut parsed = Vec::with_capacity(ranges.len());
        for r in ranges {
            let base = hex_of(r.get("base"), "memory base")?;
            let bytes = r
                .get("bytes")
                .and_then(Value::as_str)
                .ok_or("memory bytes missing")?;
            parsed.push((base, bytes_of_hex(bytes)?));
        }
        // Ascending bases: allocation is then linear in the number of ranges (issue 7, D2).
        parsed.sort_by_key(|(base, _)| *base);
        let mem = s.memory_mut(space);
        for (base, data) in parsed {
            mem.alloc(base, data.len() as u64)
                .map_err(|e| e.to_string())?;
            mem.write_slice(base, &data);
        }
    }
    if let Some(x) = v.get("slm_size").filter(|x| !x.is_null()) {
        s.slm_size = Some(hex_of(Some(x), "slm_size")?);
    }
    for (key, slot) in [
        ("shared_window", &mut s.shared_window),
        ("local_window", &mut s.local_window),
    ] {
        if let Some(w) = v.get(key).filter(|x| !x.is_null()) {
            *slot = Some(Window {
                base: hex_of(w.get("base"), key)?,
                len: hex_of(w.get("len"), key)?,
            });
        }
    }
    if let Some(bufs) = v.get("buffers").and_then(Value::as_object) {
        for (name, b) in bufs {
            let space = match b.get("space").and_then(Value::as_str) {
                Some("global") => Space::Global,
                Some("shared") => Space::Shared,
                other => return Err(format!("buffers.{name}.space = {other:?}")),
            };
            let ty = b
                .get("type")
                .and_then(Value::as_str)
                .and_then(AtomicType::from_name)
                .ok_or(format!("buffers.{name}.type"))?;
            let base = hex_of(b.get("base"), "buffer base")?;
            let len = b
                .get("len")
                .and_then(Value::as_u64)
                .ok_or(format!("buffers.{name}.len"))?;
            s.buffers.insert(
                name.clone(),
                Buffer {
                    space,
                    ty,
                    base,
                    len,
                },
            );
        }
    }
    if let Some(e) = v.get("emask") {
        s.emask = u32::try_from(hex_of(Some(e), "emask")?)
            .map_err(|_| "emask exceeds 32 bits".to_string())?;
    }
    if let Some(w) = v.get("simd_width").and_then(Value::as_u64) {
        s.simd_width = u32::try_from(w).map_err(|_| "simd_width too large".to_string())?;
    }
    s.validate().map_err(|e| e.to_string())?;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips_through_json() {
        let mut s = State::new(3);
        s.active = vec![true, false, true];
        s.regs.insert(
            "R2".into(),
            Reg {
                ty: ElemType::B32,
                elems: vec![0x1000, 0xffff_ffff, 7],
            },
        );
        s.regs.insert(
            "P0".into(),
            Reg {
                ty: ElemType::BOOL,
                elems: vec![1, 0, 1],
            },
        );
        s.global.alloc(0x1000, 8).unwrap();
        s.global.write(0x1004, 4, 0xdead_beef);
        s.shared.alloc(0, 4).unwrap();
        s.slm_size = Some(4);
        s.shared_window = Some(Window {
            base: 0x8000,
            len: 0x100,
        });
        s.buffers.insert(
            "buf".into(),
            Buffer {
                space: Space::Shared,
                ty: AtomicType::Int,
                base: 0,
                len: 1,
            },
        );
        s.emask = 0xff;
        let back = state_from_json(&state_to_json(&s)).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn hostile_states_are_errors() {
        for bad in [
            json!({"lanes": 0}),
            json!({"lanes": 5000}),
            json!({"lanes": 1, "regs": {"R0": {"type": "zz", "elems": []}}}),
            json!({"lanes": 1, "regs": {"R0": {"type": "b32", "elems": ["12"]}}}),
            json!({"lanes": 1, "memory": {"global": [{"base": "0x0", "bytes": "0g"}]}}),
            json!({"lanes": 1, "memory": {"global": [{"base": "0xffffffffffffffff", "bytes": "0000"}]}}),
            json!({"lanes": 1, "emask": "0x100000000"}),
        ] {
            assert!(state_from_json(&bad).is_err(), "{bad}");
        }
    }
}
