//! A trivial compiled shim for measuring the adapter protocol's throughput (issue 9): it
//! answers every request at once with the request's own state (`completed`, nothing
//! changed), so the cost measured is the runner's and the pipe's, not an implementation's.
//! `ECHO_WINDOW=N` offers N requests in flight (default 256; 1: no pipelining).
//!
//! `cargo build --release --example echo_shim`, then
//! `atomcts run --generated-only --generated 100000 --adapter cmd:target/release/examples/echo_shim`.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, BufWriter, Write};

fn main() -> std::io::Result<()> {
    let window: u64 = std::env::var("ECHO_WINDOW")
        .ok()
        .and_then(|w| w.parse().ok())
        .unwrap_or(256);
    let stdin = std::io::stdin();
    let mut input = BufReader::new(stdin.lock());
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            return out.flush();
        }
        let Ok(req) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let answer = if req["type"] == "hello" {
            let mut hello = json!({"type": "hello", "protocol": "atomcts-adapter", "version": 1,
                                   "name": "echo", "capabilities": []});
            if window > 1 {
                hello["window"] = json!(window);
            }
            hello
        } else {
            json!({"id": req["id"], "outcome": "completed", "state": req["state"]})
        };
        serde_json::to_writer(&mut out, &answer)?;
        out.write_all(b"\n")?;
        // Answers go out when no more requests are waiting: one write per batch.
        if input.buffer().is_empty() {
            out.flush()?;
        }
    }
}
