//! A trivial compiled shim for measuring the adapter protocol's throughput (issue 9): it
//! answers every request at once with the request's own state (`completed`, nothing
//! changed), so the cost measured is the runner's and the pipe's, not an implementation's.
//! `ECHO_WINDOW=N` offers N requests in flight (default 256; 1: no pipelining). It takes the
//! profile once (PROTOCOL.md, "The profile sent once"), and ignores it.
//!
//! It builds no JSON tree: one pass over each request line finds the top-level `type`, `id`
//! and `state` values (skipping strings, escapes and nested brackets), and the answer copies
//! the `id` and `state` text as it came. Reading and writing are buffered, and answers are
//! flushed only when no further request is waiting (one write per batch).
//!
//! `cargo build --release --example echo_shim`, then
//! `atomcts run --generated-only --generated 100000 --adapter cmd:target/release/examples/echo_shim`.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::ops::Range;

/// The end of the string whose opening quote is at `i` (just past its closing quote).
fn skip_string(b: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        match *b.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// The end of the JSON value starting at `i` (a string, an object or array with everything
/// nested in it, or a number or literal).
fn skip_value(b: &[u8], mut i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => skip_string(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            loop {
                match *b.get(i)? {
                    b'"' => {
                        i = skip_string(b, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            while let Some(c) = b.get(i) {
                if matches!(c, b',' | b'}' | b']') || c.is_ascii_whitespace() {
                    break;
                }
                i += 1;
            }
            Some(i)
        }
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// The text ranges of the top-level `type`, `id` and `state` values of an object.
fn fields(b: &[u8]) -> Option<[Option<Range<usize>>; 3]> {
    let mut out = [None, None, None];
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return Some(out);
    }
    loop {
        let key_end = skip_value(b, i)?;
        let key = b.get(i..key_end)?;
        i = skip_ws(b, key_end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        let start = skip_ws(b, i + 1);
        let end = skip_value(b, start)?;
        let slot = match key {
            b"\"type\"" => Some(0),
            b"\"id\"" => Some(1),
            b"\"state\"" => Some(2),
            _ => None,
        };
        if let Some(k) = slot {
            out[k] = Some(start..end);
        }
        i = skip_ws(b, end);
        match b.get(i) {
            Some(b',') => i = skip_ws(b, i + 1),
            Some(b'}') => return Some(out),
            _ => return None,
        }
    }
}

fn main() -> std::io::Result<()> {
    let window: u64 = std::env::var("ECHO_WINDOW")
        .ok()
        .and_then(|w| w.parse().ok())
        .unwrap_or(256);
    let mut input = BufReader::with_capacity(1 << 16, std::io::stdin().lock());
    let mut out = BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let mut line = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return out.flush();
        }
        let Some([ty, id, state]) = fields(&line) else {
            continue;
        };
        let ty = ty.map(|t| &line[t]);
        if ty == Some(&b"\"profile\""[..]) {
            // The profile sent once (PROTOCOL.md): never answered.
        } else if ty == Some(&b"\"hello\""[..]) {
            out.write_all(
                b"{\"type\":\"hello\",\"protocol\":\"atomcts-adapter\",\"version\":1,\"name\":\"echo\",\"capabilities\":[],\"profile_once\":true",
            )?;
            if window > 1 {
                write!(out, ",\"window\":{window}")?;
            }
            out.write_all(b"}\n")?;
        } else {
            out.write_all(b"{\"id\":")?;
            out.write_all(id.map_or(&b"null"[..], |r| &line[r]))?;
            out.write_all(b",\"outcome\":\"completed\",\"state\":")?;
            out.write_all(state.map_or(&b"null"[..], |r| &line[r]))?;
            out.write_all(b"}\n")?;
        }
        // Answers go out when no more requests are waiting: one write per batch.
        if input.buffer().is_empty() {
            out.flush()?;
        }
    }
}
