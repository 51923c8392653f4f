//! The browser the `webgpu:` adapter drives: Debian's Chromium, headless, with WebGPU on
//! SwiftShader (`--enable-unsafe-webgpu --use-webgpu-adapter=swiftshader`), opened on a page
//! served by a loopback HTTP server of this process (tiny_http, 127.0.0.1 only). The page
//! (`page.html`) posts its answers to `/answer`; the server holds each such request open until
//! the next batch is ready and answers it with that batch, so one round trip runs one batch.
//!
//! Chromium runs in its own process group with a fresh profile folder; both are removed when
//! the browser is dropped, after any failure and when a stop is requested
//! ([`crate::interrupt`]). Nothing of the page is trusted: what comes back is checked by
//! [`super::answer`].

use crate::interrupt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The browser executable (Debian's `chromium`).
pub const CHROMIUM: &str = "chromium";

/// The flags Chromium is started with (headless, no first-run work or network of its own,
/// WebGPU on SwiftShader), before the profile folder and the page's address; the standalone
/// reproducers use the same ([`super::repro`]).
pub const FLAGS: &[&str] = &[
    "--headless=new",
    "--no-sandbox",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-unsafe-webgpu",
    "--use-webgpu-adapter=swiftshader",
    "--enable-features=Vulkan",
    "--disable-gpu-sandbox",
];

/// The page, with its plant (`__PLANT__`) still to fill in.
const PAGE: &str = include_str!("page.html");

/// How long the page may take to start and say hello (a cold SwiftShader start is seconds).
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

/// `chromium --version`'s first line (`Chromium 156.0.8078.108 ...`), up to the build note.
pub fn version() -> String {
    Command::new(CHROMIUM)
        .arg("--version")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()
        .and_then(|o| {
            let t = String::from_utf8_lossy(&o.stdout).into_owned();
            t.lines()
                .next()
                .map(|l| l.split(" built on").next().unwrap_or(l).trim().to_string())
        })
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| CHROMIUM.to_string())
}

/// Why the browser could not go on.
#[derive(Debug)]
pub enum Failure {
    /// Nothing came in time.
    Timeout(Duration),
    /// A stop was requested (this signal).
    Interrupted(i32),
    /// Anything else, in one line.
    Other(String),
}

/// A running Chromium on the page, and the page's pending request.
pub struct Browser {
    child: Child,
    server: tiny_http::Server,
    /// The page's last POST, waiting for the next batch.
    pending: Option<tiny_http::Request>,
    profile: PathBuf,
    plant: String,
}

impl Browser {
    /// Starts the server and Chromium on its page; the page's hello (what it posts first) is
    /// the second value. `plant` is the page's planted lie (empty: none).
    pub fn start(plant: &str) -> Result<(Browser, String), Failure> {
        let server = tiny_http::Server::http("127.0.0.1:0")
            .map_err(|e| Failure::Other(format!("loopback HTTP server: {e}")))?;
        let port = server
            .server_addr()
            .to_ip()
            .map(|a| a.port())
            .ok_or_else(|| Failure::Other("loopback HTTP server has no port".into()))?;
        let profile =
            std::env::temp_dir().join(format!("atomcts-chromium-{}-{port}", std::process::id()));
        let mut cmd = Command::new(CHROMIUM);
        cmd.args(FLAGS)
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(format!("http://127.0.0.1:{port}/"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
        }
        let child = cmd
            .spawn()
            .map_err(|e| Failure::Other(format!("{CHROMIUM}: {e} (install chromium)")))?;
        let mut b = Browser {
            child,
            server,
            pending: None,
            profile,
            plant: plant.to_string(),
        };
        let hello = b.wait_answer(START_TIMEOUT)?;
        Ok((b, hello))
    }

    /// Sends `batch` (a JSON text) to the page and waits at most `timeout` for its answer,
    /// returned as the raw text the page posted.
    pub fn exchange(&mut self, batch: &str, timeout: Duration) -> Result<String, Failure> {
        let Some(req) = self.pending.take() else {
            return Err(Failure::Other("the page has no request open".into()));
        };
        let header = tiny_http::Header::from_bytes("Content-Type", "application/json")
            .map_err(|_| Failure::Other("header".into()))?;
        req.respond(tiny_http::Response::from_string(batch).with_header(header))
            .map_err(|e| Failure::Other(format!("writing to the page: {e}")))?;
        self.wait_answer(timeout)
    }

    /// Serves the page until it posts to `/answer`; keeps that request open and gives its body.
    fn wait_answer(&mut self, timeout: Duration) -> Result<String, Failure> {
        let t0 = Instant::now();
        loop {
            if let Some(s) = interrupt::requested() {
                return Err(Failure::Interrupted(s));
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(Failure::Other(format!("{CHROMIUM} exited ({status})")));
            }
            let left = timeout.saturating_sub(t0.elapsed());
            if left.is_zero() {
                return Err(Failure::Timeout(timeout));
            }
            let req = match self.server.recv_timeout(left.min(interrupt::POLL)) {
                Ok(Some(r)) => r,
                Ok(None) => continue,
                Err(e) => return Err(Failure::Other(format!("loopback HTTP server: {e}"))),
            };
            match (req.method(), req.url()) {
                (tiny_http::Method::Get, "/") => {
                    let page = PAGE.replace("__PLANT__", &self.plant);
                    let header = tiny_http::Header::from_bytes("Content-Type", "text/html")
                        .map_err(|_| Failure::Other("header".into()))?;
                    let _ = req.respond(tiny_http::Response::from_string(page).with_header(header));
                }
                (tiny_http::Method::Post, "/answer") => {
                    let mut req = req;
                    let mut body = String::new();
                    let read = std::io::Read::read_to_string(
                        &mut std::io::Read::take(req.as_reader(), super::MAX_ANSWER_BYTES + 1),
                        &mut body,
                    );
                    if let Err(e) = read {
                        return Err(Failure::Other(format!("the page's answer: {e}")));
                    }
                    if body.len() as u64 > super::MAX_ANSWER_BYTES {
                        return Err(Failure::Other(format!(
                            "the page's answer is over {} bytes",
                            super::MAX_ANSWER_BYTES
                        )));
                    }
                    self.pending = Some(req);
                    return Ok(body);
                }
                _ => {
                    let _ = req.respond(tiny_http::Response::empty(404));
                }
            }
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(req) = self.pending.take() {
            let _ = req.respond(tiny_http::Response::from_string(r#"{"type":"quit"}"#));
        }
        #[cfg(unix)]
        if let Some(pgid) = rustix::process::Pid::from_raw(self.child.id() as i32) {
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}
