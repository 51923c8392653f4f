//! The subprocess adapter: an implementation in any language behind a small shim that speaks
//! the line protocol of `adapters/PROTOCOL.md` on its standard input and output. Per-case
//! deadlines that cover writing the request as well as reading the answer, crash isolation (a
//! shim that dies, hangs or speaks garbage costs only the case in flight and is restarted for
//! the next), every shim in its own process group (stopped as a whole, orphans included), and a
//! circuit breaker after [`MAX_CONSECUTIVE_FAILURES`] failures in a row. A shim that offers a
//! `window` in its handshake is pipelined (issue 9): up to [`MAX_WINDOW`] requests in flight,
//! answered in order, through [`crate::Pipelined::send`] and [`crate::Pipelined::receive`] (or
//! [`crate::Pipelined::run_batch`]); one that answers `profile_once` gets the profile in a message of its
//! own instead of in every request.

use crate::interrupt::Wait;
use crate::{Adapter, AdapterError, AdapterErrorKind, Level, Observation, Request};
use atomcts_reference::outcome::FaultClass;
pub use repro::{MAX_REPRO_BODY, REPRO};
use serde_json::{Map, Value, json};
use shim::{EXIT_GRACE, Event, Running};
pub use shim::{MAX_LINE, MAX_UNREAD};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

pub(crate) mod answer;
mod concurrent;
mod json;
pub mod lowered;
mod pipeline;
mod repro;
mod shim;
pub(crate) mod wire;
use answer::shorten;
pub use answer::state_from_json;
pub use wire::{StateOut, state_to_json};

/// Protocol version spoken.
pub const VERSION: u64 = 1;
/// Highest protocol version spoken: version 2 adds the lowered IR and semantic-level shims
/// (adapters/PROTOCOL.md); a shim answering version 1 is spoken to in version 1.
pub const MAX_VERSION: u64 = 2;
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
    /// Set when the request in flight failed because the shim went away, or wrote a line,
    /// before it read any byte of it (after its last answer): that request is tried once more
    /// on a fresh shim, at no cost (issue 7 D19; issue 27 H4, H18). Anything else that fails
    /// with a request read, in part or whole, is that request's error.
    retry: Option<String>,
    /// Where the request sent alone whose answer is being read starts in the shim's input
    /// (bytes), for [`Self::garbage`].
    answer_start: Option<u64>,
    /// The id of the last request this shim instance answered: a second line with it answers
    /// nothing (issue 27, H18).
    answered: String,
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
    /// Requests [`crate::Pipelined::send`] accepted and [`crate::Pipelined::receive`] has not answered yet, in
    /// order.
    in_flight: VecDeque<Flight>,
    /// How many of `in_flight` are [`Flight::Sent`].
    sent: usize,
    /// Request lines not yet handed to the writer thread (the last `pending_count` of the sent
    /// requests).
    pending: Vec<u8>,
    pending_count: usize,
    /// Whether to keep the last case for [`Adapter::reproducer`] (`atomcts repro`).
    capture: bool,
    /// The last case a semantic-level shim answered, kept while capturing.
    last: Option<repro::Last>,
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
            retry: None,
            answer_start: None,
            answered: String::new(),
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
            capture: false,
            last: None,
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

    /// Notices a shim that exited (or closed its output, or wrote anything) after its last
    /// answer, before a new request is sent: one note on standard error with the exit status
    /// or the line, and a fresh shim for the next case, which is not lost (issue 7, D19). Called
    /// only with every request answered, so it sees all the shim wrote before it (issue 27, H18).
    fn reap_if_gone(&mut self) {
        let Some(run) = self.running.as_mut() else {
            return;
        };
        if let Some(how) = run.output_after_answers() {
            eprintln!(
                "note: adapter {}: the shim {how} after its last answer; restarting it",
                self.name
            );
            self.running = None;
        }
    }

    fn spawn(&self) -> Result<Running, AdapterError> {
        Running::spawn(&self.command).map_err(|e| {
            self.err(AdapterErrorKind::Unavailable(format!(
                "cannot start `{}`: {e}",
                crate::escape_controls(&self.command)
            )))
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
        self.answered.clear();
        let hello = json!({"type": "hello", "protocol": "atomcts-adapter", "version": VERSION, "versions": [VERSION, MAX_VERSION], "window": MAX_WINDOW, "profile_once": true});
        let mut line = hello.to_string().into_bytes();
        line.push(b'\n');
        let t0 = Instant::now();
        // A shim may write its handshake before it reads the runner's (its line is expected
        // from the start): not a request.
        let bytes = self.exchange_line(line, self.handshake_timeout(), false)?;
        self.first_startup.get_or_insert(t0.elapsed());
        let text = std::str::from_utf8(&bytes).unwrap_or("");
        let answer = match serde_json::from_str::<answer::HelloIn<'_>>(text) {
            Ok(a)
                if a.ty == "hello"
                    && a.protocol == "atomcts-adapter"
                    && (VERSION..=MAX_VERSION).contains(&a.version) =>
            {
                a
            }
            other => {
                let why = other.err().map_or(String::new(), |e| format!(" ({e})"));
                return Err(self.garbage(format!(
                    "bad handshake answer{why}: `{}`",
                    quote(&bytes, 200)
                )));
            }
        };
        self.version = answer.version;
        self.level = match answer.level.as_deref() {
            Some("semantic") if self.version >= 2 => Level::Semantic,
            None | Some("text") => Level::Text,
            Some(other) => {
                let other = crate::escape_controls(&shorten(other, 100));
                return Err(self.garbage(format!(
                    "handshake level `{other}` (expected text or semantic, version 2)"
                )));
            }
        };
        // Pipelining (issue 9): a shim that answers `window` accepts that many requests in
        // flight and answers them in order; without it, one at a time.
        self.window = match answer.window {
            None => 1,
            Some(w) if w >= 1 => usize::try_from(w).unwrap_or(MAX_WINDOW).min(MAX_WINDOW),
            Some(w) => {
                return Err(self.garbage(format!(
                    "handshake window `{w}` (expected a positive integer)"
                )));
            }
        };
        // The profile sent once (issue 9): only a shim that says so.
        self.profile_once = answer.profile_once == Some(true);
        if let Some(n) = &answer.name {
            self.name = format!("cmd:{}", crate::escape_controls(&shorten(n, 200)));
        }
        self.implementation = answer
            .implementation
            .map(|s| crate::escape_controls(&shorten(&s, 300)));
        self.profile = answer
            .profile
            .map(|s| crate::escape_controls(&shorten(&s, 100)));
        self.capabilities = answer.capabilities.unwrap_or_default();
        Ok(())
    }

    /// A protocol error that stops the shim (it is restarted for the next request).
    /// A line that is no answer to a request sent alone, written before the shim read any
    /// byte of that request, was not meant for it: the request is tried again ([`Self::retry`],
    /// issue 27 H18).
    fn garbage(&mut self, what: String) -> AdapterError {
        if let (Some(start), Some(run)) = (self.answer_start.take(), &self.running)
            && run.read_nothing_from(start, Duration::ZERO)
        {
            let how = format!("wrote a line nobody asked for ({what})");
            let e = self.err(AdapterErrorKind::Protocol(format!(
                "the shim {how} before it read the request"
            )));
            self.retry = Some(how);
            self.running = None;
            return e;
        }
        self.running = None;
        self.err(AdapterErrorKind::Protocol(what))
    }

    /// Sends one line (with its `\n`) and waits for one answer line, both within `timeout`;
    /// the answer is UTF-8 and within [`MAX_ANSWER_OBJECTS`] (not parsed yet). On any failure
    /// the shim's process group is stopped. For a `request` (not the handshake), a failure
    /// before the shim read any byte of it (it went away, or wrote a line) sets
    /// [`Self::retry`]: the failure is not that request's, and a line that came before the
    /// shim read any of the request is no answer to it (issue 27, H4, H18).
    fn exchange_line(
        &mut self,
        line: Vec<u8>,
        timeout: Duration,
        request: bool,
    ) -> Result<Vec<u8>, AdapterError> {
        let Some(run) = self.running.as_mut() else {
            return Err(self.err(AdapterErrorKind::Crashed("not running".into())));
        };
        let start = run.handed();
        self.answer_start = request.then_some(start);
        let result = if run.send(line, u64::from(request)) {
            wait_line(run, timeout)
        } else {
            Err(gone(run, "stopped reading its input").into())
        };
        let unread = |run: &Running, grace| request && run.read_nothing_from(start, grace);
        let kind = match result {
            // Read as an answer; one that is none ([`Self::garbage`]) may come too early.
            Ok(bytes) => return Ok(bytes),
            // Read before the request was handed to the writer: it cannot answer it.
            Err(Missing::Early(bytes)) if request => self.early_line(&bytes, "before the request"),
            Err(Missing::Early(bytes)) => AdapterErrorKind::Protocol(format!(
                "the shim wrote a line nobody asked for (`{}`)",
                quote(&bytes, 100)
            )),
            // A shim that hangs, or a run that stops, is no reason to try the request again.
            Err(Missing::Failed(
                kind @ (AdapterErrorKind::Timeout(_) | AdapterErrorKind::Interrupted(_)),
            )) => kind,
            Err(Missing::Failed(kind)) => {
                if unread(run, EXIT_GRACE) {
                    let how = match &kind {
                        AdapterErrorKind::Crashed(how) => {
                            how.strip_prefix("the shim ").unwrap_or(how).to_string()
                        }
                        other => format!("failed ({other})"),
                    };
                    self.retry = Some(how);
                }
                kind
            }
        };
        self.running = None;
        Err(self.err(kind))
    }

    /// A line the shim wrote before it read the request in flight: no answer to it. The
    /// request is tried again on a fresh shim ([`Self::retry`]).
    fn early_line(&mut self, bytes: &[u8], when: &str) -> AdapterErrorKind {
        let how = format!("wrote a line nobody asked for (`{}`)", quote(bytes, 100));
        let kind = AdapterErrorKind::Protocol(format!("the shim {how} {when}"));
        self.retry = Some(how);
        kind
    }

    /// Runs `attempt` once, and once more on a fresh shim when it failed on a request the shim
    /// never read ([`Self::retry`]), with one note on standard error: that failure is not the
    /// request's (issue 7 D19, issue 27 H4). A shim that fails on it again has failed on it.
    fn with_retry<T>(
        &mut self,
        mut attempt: impl FnMut(&mut Self) -> Result<T, AdapterError>,
    ) -> Result<T, AdapterError> {
        self.retry = None;
        let result = attempt(self);
        match self.retry.take() {
            Some(how) if result.is_err() => {
                eprintln!(
                    "note: adapter {}: the shim {how} after its last answer; restarting it",
                    self.name
                );
                attempt(self)
            }
            _ => result,
        }
    }
}

/// Why no answer line came.
enum Missing {
    /// A line nobody asked for: read before the request in flight was handed to the writer.
    Early(Vec<u8>),
    /// Anything else: a crash, a timeout, a line that is no answer.
    Failed(AdapterErrorKind),
}

impl From<AdapterErrorKind> for Missing {
    fn from(kind: AdapterErrorKind) -> Missing {
        Missing::Failed(kind)
    }
}

/// The next answer line within `timeout`: UTF-8 and within [`MAX_ANSWER_OBJECTS`] (not parsed
/// yet), or why there is none.
fn wait_line(run: &mut Running, timeout: Duration) -> Result<Vec<u8>, Missing> {
    Err(match run.recv(timeout) {
        Ok(Event::Line(bytes)) => {
            check_answer(&bytes)?;
            return Ok(bytes);
        }
        Ok(Event::Extra(bytes)) => return Err(Missing::Early(bytes)),
        Ok(Event::TooLong) => {
            AdapterErrorKind::Protocol(format!("an answer line longer than {MAX_LINE} bytes"))
        }
        Ok(Event::WriteFailed(e)) => gone(run, &format!("writing to it failed: {e}")),
        Ok(Event::Eof) | Err(Wait::Disconnected) => gone(run, "closed its output"),
        Err(Wait::Interrupted(sig)) => AdapterErrorKind::Interrupted(sig),
        Err(Wait::Timeout) => AdapterErrorKind::Timeout(timeout.as_millis() as u64),
    }
    .into())
}

/// One message for a shim that went away while a case was in flight: its exit status when it
/// has one (issue 7, D19).
fn gone(run: &mut Running, otherwise: &str) -> AdapterErrorKind {
    AdapterErrorKind::Crashed(match run.exit_status(EXIT_GRACE) {
        Some(s) => format!("the shim exited ({s})"),
        None => format!("the shim {otherwise}"),
    })
}

/// At most `n` characters of a line, decoded lossily and with control characters escaped.
fn quote(bytes: &[u8], n: usize) -> String {
    crate::escape_controls(&shorten(String::from_utf8_lossy(bytes).trim_end(), n))
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

/// A request accepted by [`crate::Pipelined::send`], until [`crate::Pipelined::receive`] gives
/// its answer.
enum Flight {
    /// Written to the shim, or waiting in `pending`; with the lowered IR sent with it.
    Sent(Option<atomcts_reference::ir::Lowered>),
    /// Lost with a shim that failed while it was in flight.
    Lost(AdapterError),
    /// Answered when it was sent: the shim (restarted without a window) takes one request at
    /// a time, so `send` ran it (with nothing of the shim's in flight).
    Done(Result<Observation, AdapterError>),
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

    fn locates_rejections(&self) -> bool {
        self.capabilities.iter().any(|c| c == "rejection_columns")
    }

    fn capture_dispatches(&mut self, on: bool) {
        self.capture = on;
        self.last = None;
    }

    fn reproducer(&mut self, about: &crate::repro::About) -> Option<Result<String, String>> {
        Some(self.write_reproducer(about))
    }

    fn run(&mut self, r: &Request<'_>) -> Result<Observation, AdapterError> {
        self.last = None;
        // A shim that exits after answering may be seen gone only once the next request is
        // written: if it read nothing of it, the request runs once more on a fresh shim, and the
        // exit is reported once, with its status (issue 7 D19, issue 27 H4).
        let result = self.with_retry(|a| a.run_once(r));
        self.record(result)
    }

    fn concurrent(&self) -> Option<&dyn crate::Concurrent> {
        Some(self)
    }

    fn concurrent_mut(&mut self) -> Option<&mut dyn crate::Concurrent> {
        Some(self)
    }

    fn pipelined(&self) -> Option<&dyn crate::Pipelined> {
        Some(self)
    }

    fn pipelined_mut(&mut self) -> Option<&mut dyn crate::Pipelined> {
        Some(self)
    }
}

impl crate::Pipelined for SubprocessAdapter {
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
}

impl crate::Concurrent for SubprocessAdapter {
    /// The shim says per request (capability `cas_loop`, known after its handshake).
    fn runs_cas_loops(&self) -> bool {
        true
    }

    fn run_concurrent(
        &mut self,
        r: &crate::concurrent::ConcurrentRequest<'_>,
    ) -> Result<crate::concurrent::ConcurrentObservation, AdapterError> {
        self.last = None;
        let result = self.with_retry(|a| a.run_concurrent_once(r));
        self.record(result)
    }
}

impl SubprocessAdapter {
    fn run_once(&mut self, r: &Request<'_>) -> Result<Observation, AdapterError> {
        self.ensure_running()?;
        let mut line = self.spare_buffer();
        let lowered = self.message(r, &mut line, "run")?;
        let timeout = self.timeout;
        let answer = self.exchange_line(line, timeout, true)?;
        let kept = if self.capture { lowered.clone() } else { None };
        let obs = self.observation_line(r, lowered, &answer);
        self.recycle(answer);
        if let (Some(lowered), Ok(Observation::Completed(seen))) = (kept, &obs)
            && self.level == Level::Semantic
        {
            self.last = Some(repro::Last::Single(Box::new(repro::LastCase::of(
                r,
                lowered,
                seen.clone(),
            ))));
        }
        obs
    }

    /// Hands an answer line's buffer back to the reader thread.
    fn recycle(&self, line: Vec<u8>) {
        if let Some(run) = &self.running {
            run.recycle(line);
        }
    }

    /// An empty buffer for request lines: one the writer thread has handed back, or a new one.
    fn spare_buffer(&self) -> Vec<u8> {
        self.running
            .as_ref()
            .map(Running::spare_buffer)
            .unwrap_or_default()
    }

    /// Appends the request line for `r` to `buf` (streamed, issue 9) and returns the lowered
    /// IR sent in it (version 2).
    fn message(
        &mut self,
        r: &Request<'_>,
        buf: &mut Vec<u8>,
        kind: &str,
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
        wire::write_request(
            buf,
            r,
            profile,
            (self.version >= 2).then_some(lowered.as_ref()),
            kind,
        );
        Ok(lowered)
    }

    /// The observation an answer line to `r` gives, read strictly ([`answer`], issue 27 H7). A
    /// line that is not JSON, or answers another id, stops the shim; an answer to `r` that is
    /// malformed is a protocol error of that case only.
    fn observation_line(
        &mut self,
        r: &Request<'_>,
        lowered: Option<atomcts_reference::ir::Lowered>,
        bytes: &[u8],
    ) -> Result<Observation, AdapterError> {
        // `bytes` passed `check_answer` (UTF-8, bounded object count) when it was received.
        let text = std::str::from_utf8(bytes).unwrap_or("");
        let a = match serde_json::from_str::<answer::AnswerIn<'_>>(text) {
            Ok(a) if a.id == r.id => {
                self.answered.clear();
                self.answered.push_str(r.id);
                a
            }
            // The previous request's answer again: a line nobody asked for, not this one's.
            Ok(a) if !self.answered.is_empty() && a.id == self.answered => {
                let kind = self.early_line(bytes, "after its answer");
                self.running = None;
                return Err(self.err(kind));
            }
            Ok(_) => {
                return Err(self.garbage(format!("answer for another id: `{}`", quote(bytes, 200))));
            }
            Err(e) if e.is_data() && answers(text, r.id) => {
                return Err(self.err(AdapterErrorKind::Protocol(format!(
                    "malformed answer ({e}): `{}`",
                    quote(bytes, 200)
                ))));
            }
            Err(e) if e.is_data() => {
                return Err(self.garbage(format!(
                    "malformed answer for another id ({e}): `{}`",
                    quote(bytes, 200)
                )));
            }
            Err(e) => {
                return Err(
                    self.garbage(format!("answer is not JSON ({e}): `{}`", quote(bytes, 200)))
                );
            }
        };
        let proto =
            |what: String| AdapterErrorKind::Protocol(format!("{what} in `{}`", quote(bytes, 200)));
        let why = |w: &answer::Present<std::borrow::Cow<'_, str>>| {
            w.0.as_deref().unwrap_or("").to_string()
        };
        let kind = match &*a.outcome {
            "completed" => match a.state.0.map(answer::StateIn::into_state) {
                Some(Ok(s)) => return Ok(Observation::Completed(s)),
                Some(Err(e)) => proto(e),
                None => proto("no state".into()),
            },
            "fault" => match a.lanes.0.as_deref().map(fault_lanes) {
                Some(Ok(lanes)) => return Ok(Observation::Fault(lanes)),
                Some(Err(e)) => proto(e),
                None => proto("a fault answer needs `lanes`".into()),
            },
            "invalid" => {
                let column = match &a.column.0 {
                    None => Ok(None),
                    Some(c) => match c.as_u64() {
                        Some(n @ 1..=0xFFFF_FFFF) => Ok(Some(n as usize)),
                        _ => Err(proto(format!("bad column {c}"))),
                    },
                };
                match (&a.reason.0, column) {
                    (_, Err(kind)) => kind,
                    (None, _) => proto("an invalid answer needs `reason`".into()),
                    (Some(reason), Ok(column)) => {
                        return Ok(Observation::Invalid {
                            reason: reason.to_string(),
                            column,
                        });
                    }
                }
            }
            "error" => {
                AdapterErrorKind::Crashed(format!("the shim reported an error: {}", why(&a.why)))
            }
            "unsupported" => AdapterErrorKind::Unsupported(why(&a.why)),
            "accesses" if self.version >= 2 => match (&lowered, &a.memory.0, &a.returned.0) {
                (None, _, _) => proto("no lowered IR was sent".into()),
                (Some(l), Some(mem), Some(returned)) => {
                    match lowered::accesses_typed(
                        l,
                        r.state,
                        mem,
                        returned.iter().map(|h| h.0).collect(),
                        a.ok.0.as_deref(),
                    ) {
                        Ok(s) => return Ok(Observation::Completed(s)),
                        Err(e) => proto(e),
                    }
                }
                _ => proto("an `accesses` answer needs `memory` and `returned`".into()),
            },
            "not_applicable" if self.version >= 2 => AdapterErrorKind::NotApplicable(why(&a.why)),
            other => proto(format!(
                "unknown outcome `{}`",
                crate::escape_controls(&shorten(other, 40))
            )),
        };
        Err(self.err(kind))
    }
}

/// Whether an answer line the typed reader refused still carries `id` (it answers the request
/// in flight, badly).
fn answers(text: &str, id: &str) -> bool {
    serde_json::from_str::<answer::IdIn<'_>>(text).is_ok_and(|a| a.id == id)
}

/// A fault answer's `lanes`: `[lane, class]` pairs, a lane below 2^32 - 1 and a known class.
fn fault_lanes(
    lanes: &[(u64, std::borrow::Cow<'_, str>)],
) -> Result<Vec<(u32, FaultClass)>, String> {
    lanes
        .iter()
        .map(
            |(lane, class)| match (u32::try_from(*lane), FaultClass::from_name(class)) {
                (Ok(l), Some(c)) if l < u32::MAX => Ok((l, c)),
                _ => Err(format!(
                    "bad fault lane [{lane}, \"{}\"]",
                    crate::escape_controls(&shorten(class, 40))
                )),
            },
        )
        .collect()
}
