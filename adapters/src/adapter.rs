//! The trait every implementation under test implements ([`Adapter`]), and the two things
//! only some do, as extension traits reached from a `dyn Adapter`: keeping several requests in
//! flight ([`Pipelined`], issue 9) and running concurrent cases ([`Concurrent`], issue 12).
//! The inherent methods of `dyn Adapter` (`window`,
//! `send`, `receive`, `run_batch`, `run_concurrent`, `runs_cas_loops`) give every adapter's
//! answer: its extension's where it has one, else the default.

use crate::concurrent::{ConcurrentObservation, ConcurrentRequest};
use crate::{AdapterError, AdapterErrorKind, Level, Observation, Request};

/// Programs an adapter built for its driver ([`Adapter::builds`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Builds {
    /// What it builds, plural (`pipelines`, `programs`).
    pub what: &'static str,
    /// Built (compiled by the driver).
    pub built: u64,
    /// Runs that took a built one from the adapter's cache instead.
    pub reused: u64,
}

/// An implementation under test.
pub trait Adapter {
    /// Short lowercase name (`reference`, `fast`, `subprocess:<cmd>`).
    fn name(&self) -> &str;
    /// Whether it has a capability of [`crate::CAPABILITIES`].
    fn supports(&self, capability: &str) -> bool;
    /// Runs one instruction.
    fn run(&mut self, request: &Request<'_>) -> Result<Observation, AdapterError>;
    /// Whether it reads the text or runs the lowered IR.
    fn level(&self) -> Level {
        Level::Text
    }
    /// The program that ran the last case, in the target's own language (an OpenCL C kernel),
    /// for reports of failing cases; `None` for implementations that ran the text itself.
    fn last_program(&self) -> Option<String> {
        None
    }
    /// Turns on (or off) keeping what each case dispatched, for [`Adapter::reproducer`]
    /// (`atomcts repro`); off by default (it costs a judge of the dispatch's words).
    fn capture_dispatches(&mut self, _on: bool) {}
    /// A standalone reproducer of the last case (issue 30, point 5: a Python script in the
    /// implementation's own terms, [`crate::repro`]): `None` where this kind of adapter writes
    /// none; `Some(Err)` says in one line why not for this case.
    fn reproducer(&mut self, _about: &crate::repro::About) -> Option<Result<String, String>> {
        None
    }
    /// The implementation and its version in one line, for reports (an OpenCL driver's
    /// platform, device and versions; a shim's `implementation` from its handshake); `None`
    /// when it cannot tell.
    fn describe(&self) -> Option<String> {
        None
    }
    /// The device it runs on as the host names it, where that name depends on the machine
    /// (an OpenCL or Vulkan CPU device's name names the processor): recorded in the run's
    /// report as what ran where, and kept out of reasons and of the conformance report (issue
    /// 27, H19). `None` when there is no such name.
    fn device(&self) -> Option<String> {
        None
    }
    /// The profile (`atomcts list profiles`) this implementation claims to follow, which
    /// `atomcts report` judges it under (see [`crate::registry::claimed_profile`]); `None` when it
    /// claims none.
    fn claimed_profile(&self) -> Option<String> {
        None
    }
    /// Whether every rejection it reports says where in the text (FORMAT.md `column`): then a
    /// rejection without a column, where the case states one, fails. The reference model and
    /// the fast path do; a shim says so with the capability `rejection_columns` (PROTOCOL.md).
    fn locates_rejections(&self) -> bool {
        false
    }
    /// Whether this adapter is the built-in model (the reference and the fast path), whose own
    /// vISA and SASS decoder is what a case's stated bytes check (FORMAT.md `encoding`). A case
    /// decided on its bytes alone (the decoder rejects them, or they disagree with the text)
    /// never reaches an adapter: it is the model's verdict, and not applicable to any other
    /// adapter (issue 27, H3).
    fn is_builtin_model(&self) -> bool {
        false
    }
    /// How many programs it built for the driver and how many runs reused a built one, since
    /// it opened (issue 31: on a CPU driver such as lavapipe or PoCL a build is an LLVM
    /// compile, and in a fuzzing campaign of many shapes the builds can cost more than the
    /// cases); `None` where it builds nothing or does not count.
    fn builds(&self) -> Option<Builds> {
        None
    }
    /// An independent instance of this adapter for another thread (`atomcts run --jobs`).
    /// Only adapters whose instances share nothing and run in this process (the built-in
    /// model) give one; `None` by default: a driver, a browser or a shim runs on the calling
    /// thread only.
    fn fork(&self) -> Option<Box<dyn Adapter + Send>> {
        None
    }
    /// Whether this adapter would answer `request` not applicable without running anything:
    /// `Some(reason)` when the lowering or the kernel it would emit already says so (the same
    /// code and reason as [`Adapter::run`]'s answer), `None` when it cannot tell without
    /// running (the default). `atomcts fuzz` draws another case instead of sending one the
    /// adapter cannot run (issue 31 point 2); nothing is judged from it.
    fn screen(&mut self, _request: &Request<'_>) -> Option<String> {
        None
    }
    /// Its pipelining ([`Pipelined`]), if it keeps several requests in flight; `None` by
    /// default.
    fn pipelined(&self) -> Option<&dyn Pipelined> {
        None
    }
    /// [`Adapter::pipelined`], mutable.
    fn pipelined_mut(&mut self) -> Option<&mut dyn Pipelined> {
        None
    }
    /// Its concurrent cases ([`Concurrent`]), if it runs them; `None` by default (every
    /// concurrent case is then not applicable to it).
    fn concurrent(&self) -> Option<&dyn Concurrent> {
        None
    }
    /// [`Adapter::concurrent`], mutable.
    fn concurrent_mut(&mut self) -> Option<&mut dyn Concurrent> {
        None
    }
}

/// An adapter that keeps several requests in flight (issue 9).
pub trait Pipelined: Adapter {
    /// How many requests [`Pipelined::run_batch`] keeps in flight at once.
    fn window(&self) -> usize;
    /// Runs several instructions, one answer per request, in order, up to
    /// [`Pipelined::window`] of them in flight; the default runs them one by one.
    fn run_batch(&mut self, requests: &[Request<'_>]) -> Vec<Result<Observation, AdapterError>> {
        requests.iter().map(|r| self.run(r)).collect()
    }
    /// Streaming: accepts one request to be answered by a later [`Pipelined::receive`]. `Err`
    /// answers it at once (not applicable, an error): it is then not in flight. A caller keeps
    /// at most [`Pipelined::window`] requests in flight and asks for their answers in the order
    /// they were sent, so the window stays full across as many requests as the caller has.
    fn send(&mut self, request: &Request<'_>) -> Result<(), AdapterError>;
    /// The answer to the oldest request [`Pipelined::send`] accepted; `request` is that
    /// request again.
    fn receive(&mut self, request: &Request<'_>) -> Result<Observation, AdapterError>;
}

/// An adapter that runs concurrent cases (issue 12).
pub trait Concurrent: Adapter {
    /// Runs several instructions at the same time on shared memory (a concurrent case). What
    /// it cannot run is [`AdapterErrorKind::NotApplicable`], with the reason.
    fn run_concurrent(
        &mut self,
        r: &ConcurrentRequest<'_>,
    ) -> Result<ConcurrentObservation, AdapterError>;
    /// Whether [`Concurrent::run_concurrent`] runs compare-and-swap loops
    /// ([`crate::concurrent::ConcurrentInstr::cas_loop`]); the runner reports a case with one
    /// as not applicable to an adapter that does not (never a pass). A back end that builds a
    /// [`crate::plan::ConcurrentPlan`] says why with
    /// [`crate::plan::ConcurrentPlan::require_no_loops`].
    fn runs_cas_loops(&self) -> bool {
        false
    }
    /// [`crate::Adapter::screen`] for a concurrent case: `Some(reason)` when
    /// [`Concurrent::run_concurrent`] would answer not applicable before dispatching (the same
    /// planning and emitting code); `None` by default (the run answers).
    fn screen_concurrent(&mut self, _r: &ConcurrentRequest<'_>) -> Option<String> {
        None
    }
}

/// Every adapter's answer to what its extensions do: the extension's where it has one, else
/// the default of an adapter without it.
impl dyn Adapter + '_ {
    /// How many requests [`run_streamed`] keeps in flight at once: 1 unless the adapter is
    /// [`Pipelined`].
    pub fn window(&self) -> usize {
        self.pipelined().map_or(1, Pipelined::window)
    }

    /// [`Pipelined::run_batch`]; one by one for an adapter that is not pipelined.
    pub fn run_batch(
        &mut self,
        requests: &[Request<'_>],
    ) -> Vec<Result<Observation, AdapterError>> {
        match self.pipelined_mut() {
            Some(p) => p.run_batch(requests),
            None => requests.iter().map(|r| self.run(r)).collect(),
        }
    }

    /// [`Pipelined::send`]; an adapter that is not pipelined sends nothing (`receive` runs
    /// the request).
    pub fn send(&mut self, request: &Request<'_>) -> Result<(), AdapterError> {
        match self.pipelined_mut() {
            Some(p) => p.send(request),
            None => Ok(()),
        }
    }

    /// [`Pipelined::receive`]; an adapter that is not pipelined runs the request.
    pub fn receive(&mut self, request: &Request<'_>) -> Result<Observation, AdapterError> {
        match self.pipelined_mut() {
            Some(p) => p.receive(request),
            None => self.run(request),
        }
    }

    /// [`Concurrent::run_concurrent`]; not applicable, with the reason, to an adapter that
    /// does not run concurrent cases.
    pub fn run_concurrent(
        &mut self,
        r: &ConcurrentRequest<'_>,
    ) -> Result<ConcurrentObservation, AdapterError> {
        match self.concurrent_mut() {
            Some(c) => c.run_concurrent(r),
            None => Err(AdapterError {
                adapter: self.name().to_string(),
                kind: AdapterErrorKind::NotApplicable(format!(
                    "adapter {} does not run concurrent cases ({} case `{}`)",
                    self.name(),
                    r.dialect,
                    r.id
                )),
            }),
        }
    }

    /// [`Concurrent::runs_cas_loops`]; false for an adapter that does not run concurrent
    /// cases.
    pub fn runs_cas_loops(&self) -> bool {
        self.concurrent().is_some_and(Concurrent::runs_cas_loops)
    }
}

/// flight (topped up after every answer); one answer per request, in order.
pub fn run_streamed(
    a: &mut dyn Adapter,
    requests: &[Request<'_>],
) -> Vec<Result<Observation, AdapterError>> {
    let mut results: Vec<Option<Result<Observation, AdapterError>>> =
        (0..requests.len()).map(|_| None).collect();
    let mut in_flight = std::collections::VecDeque::new();
    let mut next = 0;
    loop {
        while next < requests.len() && in_flight.len() < a.window().max(1) {
            match a.send(&requests[next]) {
                Ok(()) => in_flight.push_back(next),
                Err(e) => results[next] = Some(Err(e)),
            }
            next += 1;
        }
        let Some(i) = in_flight.pop_front() else {
            break;
        };
        results[i] = Some(a.receive(&requests[i]));
    }
    results
        .into_iter()
        .map(|r| {
            r.unwrap_or_else(|| {
                Err(AdapterError {
                    adapter: a.name().to_string(),
                    kind: AdapterErrorKind::Protocol("no answer".into()),
                })
            })
        })
        .collect()
}
