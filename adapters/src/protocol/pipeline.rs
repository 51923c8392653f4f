//! Pipelining (issue 9, adapters/PROTOCOL.md "Pipelining"): up to a window of requests in
//! flight to one shim, answered in order, through [`crate::Pipelined::send`] and [`crate::Pipelined::receive`].
//! A shim that fails with requests in flight loses all of them, each an adapter error, and is
//! restarted for the requests not sent yet.

use super::{Flight, Missing, SubprocessAdapter, gone, quote, wait_line};
use crate::{Adapter, AdapterError, AdapterErrorKind, Observation, Request};
use std::time::Duration;

impl SubprocessAdapter {
    /// Accepts one request: its line goes into the pending buffer, handed to the writer thread
    /// (one write) once it holds a quarter of the window, or when [`Self::receive_one`] needs
    /// an answer not written yet. With nothing of the shim's in flight, a shim that has gone
    /// is restarted first. A request that cannot be sent (not applicable, a model error, a
    /// shim that cannot start) is answered here, as an error, and is not in flight.
    pub(super) fn send_one(&mut self, r: &Request<'_>) -> Result<(), AdapterError> {
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
        let result = match self.message(r, &mut buf, "run") {
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
        let count = std::mem::take(&mut self.pending_count) as u64;
        self.running
            .as_mut()
            .is_some_and(|run| run.send(buf, count))
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
    pub(super) fn receive_one(&mut self, r: &Request<'_>) -> Result<Observation, AdapterError> {
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
        self.answer_start = None;
        let Some(run) = self.running.as_mut() else {
            return Err(self.err(AdapterErrorKind::Crashed("not running".into())));
        };
        let result = wait_line(run, timeout).map_err(|m| match m {
            Missing::Early(bytes) => AdapterErrorKind::Protocol(format!(
                "the shim wrote a line nobody asked for (`{}`)",
                quote(&bytes, 100)
            )),
            Missing::Failed(kind) => kind,
        });
        result.map_err(|kind| {
            self.running = None;
            self.err(kind)
        })
    }
}
