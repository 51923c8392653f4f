//! A request to stop, for the whole process (issue 27, H15): the `atomcts` binary records a
//! SIGINT or SIGTERM here, and every wait on an implementation looks at it at least every
//! [`POLL`], so a stopped run never waits out a case's deadline. An adapter that sees the
//! request gives up its case with [`crate::AdapterErrorKind::Interrupted`] and stops what it
//! started (a shim's process group, a worker), as it does after any failure.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The signal that asked the process to stop, or 0.
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// The longest a wait on an implementation goes without looking at the stop request.
pub const POLL: Duration = Duration::from_millis(50);

/// Records a stop request by `signal` (a positive signal number); the first request is kept.
pub fn request(signal: i32) {
    let _ = SIGNAL.compare_exchange(0, signal.max(1), Ordering::SeqCst, Ordering::SeqCst);
}

/// The signal that asked the process to stop, if one has.
pub fn requested() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// Why [`recv_timeout`] returned without a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Nothing came within the timeout.
    Timeout,
    /// The sender is gone.
    Disconnected,
    /// A stop was requested (by this signal) while waiting.
    Interrupted(i32),
}

/// [`Receiver::recv_timeout`] that also ends, within [`POLL`], when a stop is requested.
pub fn recv_timeout<T>(rx: &Receiver<T>, timeout: Duration) -> Result<T, Wait> {
    let t0 = Instant::now();
    loop {
        if let Some(s) = requested() {
            return Err(Wait::Interrupted(s));
        }
        let left = timeout.saturating_sub(t0.elapsed());
        match rx.recv_timeout(left.min(POLL)) {
            Ok(v) => return Ok(v),
            Err(RecvTimeoutError::Disconnected) => return Err(Wait::Disconnected),
            Err(RecvTimeoutError::Timeout) if left <= POLL => return Err(Wait::Timeout),
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_end_at_the_timeout_or_with_a_message() {
        let (tx, rx) = std::sync::mpsc::channel::<u8>();
        let t0 = Instant::now();
        assert_eq!(
            recv_timeout(&rx, Duration::from_millis(120)),
            Err(Wait::Timeout)
        );
        assert!(t0.elapsed() >= Duration::from_millis(120));
        tx.send(7).unwrap();
        assert_eq!(recv_timeout(&rx, Duration::from_secs(5)), Ok(7));
        drop(tx);
        assert_eq!(
            recv_timeout(&rx, Duration::from_secs(5)),
            Err(Wait::Disconnected)
        );
    }
}
