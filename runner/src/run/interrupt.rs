//! SIGINT and SIGTERM during a run (issue 27, H15). [`install`] turns the first of them into a
//! stop request ([`atomcts_adapters::interrupt`]) instead of the end of the process: the run
//! stops taking cases, every wait on an implementation ends within 50 ms, the processes the
//! run started are stopped, and the reports are written with what was run, marked incomplete.
//! The process then exits with [`exit_code`] (130 for SIGINT, 143 for SIGTERM). Later signals
//! change nothing: the stop is already under way.

pub use atomcts_adapters::interrupt::requested;

/// The exit code of a run stopped by `signal`: 128 + its number.
pub fn exit_code(signal: i32) -> u8 {
    u8::try_from(128 + signal.clamp(1, 127)).unwrap_or(u8::MAX)
}

/// The signal's name (`SIGINT`, `SIGTERM`, else `signal N`).
pub fn name(signal: i32) -> String {
    match signal {
        2 => "SIGINT".into(),
        15 => "SIGTERM".into(),
        n => format!("signal {n}"),
    }
}

/// Takes SIGINT and SIGTERM for the rest of the process (once; later calls do nothing): each
/// becomes a stop request, noted once on standard error.
pub fn install() -> std::io::Result<()> {
    static INSTALLED: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    if INSTALLED.get().is_some() {
        return Ok(());
    }
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
        std::thread::Builder::new()
            .name("atomcts-signals".into())
            .spawn(move || {
                for sig in signals.forever() {
                    if requested().is_none() {
                        eprintln!(
                            "\natomcts: {}: stopping; the reports keep what has run",
                            name(sig)
                        );
                    }
                    atomcts_adapters::interrupt::request(sig);
                }
            })?;
    }
    let _ = INSTALLED.set(());
    Ok(())
}

/// Passes the stop request's signal on to `child` (a process this one started, which does
/// not get a signal sent to this process alone); nothing when no stop was requested.
pub fn forward(child: &std::process::Child) {
    #[cfg(unix)]
    if let Some(sig) = requested().and_then(rustix::process::Signal::from_named_raw) {
        let _ = rustix::process::kill_process(rustix::process::Pid::from_child(child), sig);
    }
    #[cfg(not(unix))]
    let _ = child;
}

/// Waits for `child`, passing a stop request on to it once (see [`forward`]).
pub fn wait_forwarding(
    child: &mut std::process::Child,
) -> std::io::Result<std::process::ExitStatus> {
    let mut forwarded = false;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if !forwarded && requested().is_some() {
            forward(child);
            forwarded = true;
        }
        std::thread::sleep(atomcts_adapters::interrupt::POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit::{EXIT_SIGINT, EXIT_SIGTERM};

    #[test]
    fn exit_codes_are_the_shells() {
        assert_eq!(exit_code(2), EXIT_SIGINT);
        assert_eq!(exit_code(15), EXIT_SIGTERM);
        assert_eq!(name(15), "SIGTERM");
    }
}
