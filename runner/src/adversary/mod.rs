//! The project's own adversary (issue 27): a protocol shim (adapters/PROTOCOL.md) that knows the
//! right answer to every request, the reference model's, and tells one chosen kind of lie.
//!
//! Each [`Lie`] is one way a careless or hostile implementation can answer: malformed, short,
//! long, over-wide, reordered, crashing, stalling, flooding. The table [`LIES`] is declared once;
//! the binary `atomcts-adversary <lie>` serves it, `runner/tests/adversary.rs` runs every lie
//! over the whole corpus and asserts what [`Expect`] says the runner must make of it (above all:
//! a case the adversary lied on is never a pass), and `atomcts-adversary --list` prints the table
//! for docs/corpus-strength.md.
//!
//! The honest answer is built from the reference: a `run` request by the reference adapter
//! (`completed`, `fault` or `invalid`); a semantic-level `run` and a `run_concurrent` request by
//! one serialization in program order (iterations round-robin over the instructions, accesses
//! in order, compare-and-swap loops retried at once), each access through
//! [`atomcts_reference::semantics::apply`], the one semantics of the IR. Which requests were lied
//! on is written to the file named by `ATOMCTS_ADVERSARY_LOG` (one line per request: `lied ID`
//! or `honest ID`, and `pid N` per process), so a test can check every lie was caught.

mod lies;
pub mod planted;
mod truth;

pub use planted::{BUGS, Bug, bug_name, find_bug};

use atomcts_reference::Profile;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};

/// What the runner must make of a lie.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Every case lied on is failed or an error (never passed, skipped, not applicable or a
    /// known failure), and the run does not exit 0.
    NotPass,
    /// Every case is skipped or not applicable, and the run exits 2 (it checked nothing).
    NothingChecked,
    /// Every case is an error or not applicable, and the run exits 2.
    AllErrors,
    /// The lie is about no case (a line nobody asked for): every case keeps the status the
    /// honest answer gets.
    Innocent,
    /// The run ends, accounts for every case and leaves no process behind (the lie costs what
    /// PROTOCOL.md says: cases in flight may be lost, never passed on a lie).
    Accounted,
}

/// Which handshake the adversary answers with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hello {
    /// Protocol version 2, text level, pipelined (a window of 16), every capability including
    /// `concurrent`, `cas_loop` and `rejection_columns`.
    Text,
    /// The same at semantic level (answers `accesses`).
    Semantic,
    /// Protocol version 2, text level, without a window: one request at a time.
    Unpipelined,
    /// Protocol version 1 without a window.
    Version1,
}

/// One kind of lie.
#[derive(Clone, Copy, Debug)]
pub struct Lie {
    /// Its name, the binary's argument.
    pub name: &'static str,
    /// What the adversary does.
    pub what: &'static str,
    /// Its handshake.
    pub hello: Hello,
    /// What the runner must make of it.
    pub expect: Expect,
}

const fn lie(name: &'static str, hello: Hello, expect: Expect, what: &'static str) -> Lie {
    Lie {
        name,
        what,
        hello,
        expect,
    }
}

use Expect::*;
use Hello::*;

/// Every lie the adversary tells.
#[rustfmt::skip]
pub const LIES: &[Lie] = &[
    lie("honest", Text, Innocent, "no lie: the reference's answer, every time"),
    lie("honest-semantic", Semantic, Innocent, "no lie, at semantic level (`accesses` answers)"),
    lie("garbage", Text, NotPass, "a line that is not JSON"),
    lie("garbage-v1", Version1, NotPass, "a line that is not JSON, under protocol 1"),
    lie("bad-utf8", Text, NotPass, "the answer with an invalid UTF-8 byte in a string"),
    lie("truncated", Text, NotPass, "the answer cut in half (still one line)"),
    lie("wrong-id", Text, NotPass, "the answer with another id"),
    lie("no-id", Text, NotPass, "the answer without its id"),
    lie("unknown-outcome", Text, NotPass, "outcome `passed`"),
    lie("reorder", Text, NotPass, "two answers of one batch swapped (each with its own id)"),
    lie("wide-reg", Text, NotPass, "a register element with a bit above its type's width"),
    lie("reg-number", Text, NotPass, "a register element as a JSON number, not a hex string"),
    lie("reg-no-prefix", Text, NotPass, "a register element's hex without `0x`"),
    lie("reg-short", Text, NotPass, "a register with one element fewer"),
    lie("reg-missing", Text, NotPass, "a register of the state left out"),
    lie("reg-type", Text, NotPass, "a register's type changed"),
    lie("mem-long", Text, NotPass, "a memory range one byte longer"),
    lie("mem-short", Text, NotPass, "a memory range one byte shorter"),
    lie("mem-odd", Text, NotPass, "a memory range with an odd number of hex digits"),
    lie("mem-missing", Text, NotPass, "a memory range left out"),
    lie("mem-moved", Text, NotPass, "a memory range's base moved by one byte"),
    lie("fault-no-lanes", Text, NotPass, "a fault with no lanes"),
    lie("fault-lane-out", Text, NotPass, "a fault on a lane the case does not have, beside the right ones"),
    lie("fault-class", Text, NotPass, "a fault of a class nobody knows"),
    lie("invalid-column-0", Text, NotPass, "a rejection at column 0"),
    lie("invalid-column-text", Text, NotPass, "a rejection whose column is a string"),
    lie("returned-short", Semantic, NotPass, "`accesses`: one returned value fewer"),
    lie("returned-long", Semantic, NotPass, "`accesses`: one returned value more"),
    lie("returned-wide", Semantic, NotPass, "`accesses`: a returned value wider than its type"),
    lie("ok-string", Semantic, NotPass, "`accesses`: `ok` as the string \"no\""),
    lie("ok-short", Semantic, NotPass, "`accesses`: `ok` with one flag fewer"),
    lie("accesses-mem-long", Semantic, NotPass, "`accesses`: a memory range one byte longer"),
    lie("conc-row-short", Text, NotPass, "`concurrent`: a `returned` row with one value fewer"),
    lie("conc-row-long", Text, NotPass, "`concurrent`: a `returned` row with one value more"),
    lie("conc-iteration-missing", Text, NotPass, "`concurrent`: one iteration's row left out"),
    lie("conc-instr-missing", Text, NotPass, "`concurrent`: one instruction's rows left out"),
    lie("conc-wide", Text, NotPass, "`concurrent`: a returned value wider than its type"),
    lie("conc-ok-string", Text, NotPass, "`concurrent`: an `ok` flag as the string \"no\""),
    lie("conc-ok-short", Text, NotPass, "`concurrent`: an `ok` row with one flag fewer"),
    lie("conc-mem-long", Text, NotPass, "`concurrent`: a memory range one byte longer"),
    lie("conc-attempts-zero", Text, NotPass, "`concurrent`: a loop's attempt count of 0"),
    lie("conc-attempts-short", Text, NotPass, "`concurrent`: a loop's `attempts` row one short"),
    lie("conc-executed-wide", Text, NotPass, "`concurrent`: an `executed` count wider than 32 bits"),
    lie("conc-executed-short", Text, NotPass, "`concurrent`: an `executed` list one count short"),
    lie("conc-executed-over", Text, NotPass, "`concurrent`: a thread `executed` one iteration more than asked"),
    lie("conc-executed-cut", Text, NotPass, "`concurrent`: a thread `executed` one iteration fewer than asked, the values honest"),
    lie("crash-in-flight", Text, NotPass, "exits (status 1) after reading every third request, unanswered"),
    lie("crash-in-flight-v1", Unpipelined, NotPass, "the same, one request at a time"),
    lie("half-line", Text, NotPass, "writes half an answer without its newline, then exits"),
    lie("slow-drip", Unpipelined, NotPass, "writes the answer one byte per 50 ms (past the deadline)"),
    lie("huge-line", Text, NotPass, "an answer line of 257 MiB (past the 256 MiB limit)"),
    lie("stall", Text, AllErrors, "never answers after the handshake"),
    lie("exit-after-hello", Text, AllErrors, "exits (status 0) right after the handshake"),
    lie("error-all", Text, AllErrors, "answers `error` to everything"),
    lie("unsupported-all", Text, NothingChecked, "answers `unsupported` to everything"),
    lie("not-applicable-all", Semantic, NothingChecked, "answers `not_applicable` to everything"),
    lie("extra-line", Unpipelined, Innocent, "after each answer, in the same write, a line nobody asked for"),
    lie("extra-line-late", Unpipelined, Accounted, "after each answer, in a write of its own, a line nobody asked for"),
    lie("extra-answer", Unpipelined, Innocent, "each answer written twice"),
    lie("crash-after-answer", Unpipelined, Innocent, "exits (status 3) after every third answer"),
    lie("extra-line-pipelined", Text, Accounted, "after each batch, a line nobody asked for"),
    lie("flood", Text, Accounted, "after its first answer, writes lines without end"),
];

/// The lie named `name`.
pub fn find(name: &str) -> Option<&'static Lie> {
    LIES.iter().find(|l| l.name == name)
}

/// The lie a planted bug is served under: no lie, at semantic level (`accesses` answers, so
/// that every returned value is the serialization's).
pub const PLANTED: Lie = lie(
    "honest-semantic",
    Semantic,
    Innocent,
    "no lie, at semantic level (`accesses` answers)",
);

/// The adversary's handshake answer.
fn hello(l: &Lie, bug: Option<Bug>) -> Value {
    let mut caps: Vec<&str> = atomcts_adapters::CAPABILITIES.to_vec();
    let version = if l.hello == Version1 { 1 } else { 2 };
    if version == 2 {
        caps.extend(["concurrent", "cas_loop"]);
    }
    caps.push("rejection_columns");
    let mut h = json!({
        "type": "hello", "protocol": "atomcts-adapter", "version": version,
        "name": match bug {
            Some(b) => format!("adversary:planted-{}", bug_name(b)),
            None => format!("adversary:{}", l.name),
        },
        "implementation": format!("atomcts adversary ({})", l.what),
        "capabilities": caps, "profile_once": true,
    });
    if version == 2 {
        h["level"] = json!(if l.hello == Semantic {
            "semantic"
        } else {
            "text"
        });
    }
    if matches!(l.hello, Text | Semantic) {
        h["window"] = json!(16);
    }
    h
}

/// Where the adversary records what it did (`ATOMCTS_ADVERSARY_LOG`).
struct Log(Option<std::fs::File>);

impl Log {
    fn open() -> Log {
        Log(std::env::var_os("ATOMCTS_ADVERSARY_LOG").and_then(|p| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .ok()
        }))
    }

    /// One line in one `write` (the file is opened for appending, so the line lands whole even
    /// when the runner kills this process right after, or another adversary process appends:
    /// `writeln!` would write the text and its newline apart, and a killed process's half line
    /// once ran into the next process's `pid` line).
    fn line(&mut self, s: &str) {
        if let Some(f) = &mut self.0 {
            let _ = f.write_all(format!("{s}\n").as_bytes());
        }
    }
}

fn id_of(req: &Value) -> String {
    req.get("id")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// One answer line (with its newline) for `req` under `lie`, and whether it lies.
fn answer(lie: &Lie, bug: Option<Bug>, req: &Value, profile: &Value) -> (Vec<u8>, bool) {
    let id = id_of(req);
    let p = match req.get("profile").unwrap_or(profile) {
        Value::Null => Ok(Profile::default()),
        v => truth::profile_of(v),
    };
    let concurrent = req.get("type").and_then(Value::as_str) == Some("run_concurrent");
    let honest = p.and_then(|p| {
        if concurrent {
            truth::honest_concurrent(req, &p, bug)
        } else {
            truth::honest_run(req, &p, lie.hello == Semantic, bug)
        }
    });
    let (mut a, planted) =
        honest.unwrap_or_else(|e| (json!({"outcome": "error", "why": e}), false));
    let mut lied = planted
        || match lie.name {
            "error-all" => {
                a = json!({"outcome": "error", "why": "adversary: error-all"});
                true
            }
            "unsupported-all" => {
                a = json!({"outcome": "unsupported", "why": "adversary: unsupported-all"});
                true
            }
            "not-applicable-all" => {
                a = json!({"outcome": "not_applicable", "why": "adversary: not-applicable-all"});
                true
            }
            "unknown-outcome" => {
                a = json!({"outcome": "passed"});
                true
            }
            name => lies::tell(name, &mut a, req),
        };
    match lie.name {
        "wrong-id" => a["id"] = json!(format!("{id}#")),
        "no-id" => {}
        _ => a["id"] = json!(id),
    }
    lied |= matches!(lie.name, "wrong-id" | "no-id");
    let mut line = serde_json::to_vec(&a).unwrap_or_default();
    match lie.name {
        "garbage" | "garbage-v1" => {
            line = b"this is not JSON".to_vec();
            lied = true;
        }
        "truncated" => {
            line.truncate(line.len() / 2);
            lied = true;
        }
        "bad-utf8" => {
            // Inside the id string: `"id":"...\xff"`.
            let at = line
                .windows(6)
                .position(|w| w == b"\"id\":\"")
                .map(|p| p + 6)
                .unwrap_or(0);
            line.insert(at, 0xff);
            lied = true;
        }
        _ => {}
    }
    line.push(b'\n');
    (line, lied)
}

/// Serves the protocol on `input`/`output` as `lie` says until the input closes (or the lie
/// ends the process).
pub fn serve<R: Read>(
    lie: &Lie,
    input: &mut BufReader<R>,
    output: &mut dyn Write,
) -> std::io::Result<()> {
    serve_with(lie, None, input, output)
}

/// Serves the protocol honestly at semantic level except where the planted `bug` touches an
/// answer (logged as `lied ID`).
pub fn serve_planted<R: Read>(
    bug: Bug,
    input: &mut BufReader<R>,
    output: &mut dyn Write,
) -> std::io::Result<()> {
    serve_with(&PLANTED, Some(bug), input, output)
}

fn serve_with<R: Read>(
    lie: &Lie,
    bug: Option<Bug>,
    input: &mut BufReader<R>,
    output: &mut dyn Write,
) -> std::io::Result<()> {
    let mut log = Log::open();
    log.line(&format!("pid {}", std::process::id()));
    let mut line = String::new();
    input.read_line(&mut line)?;
    if line.is_empty() {
        return Ok(());
    }
    writeln!(output, "{}", hello(lie, bug))?;
    output.flush()?;
    if lie.name == "exit-after-hello" {
        std::process::exit(0);
    }
    let mut profile = Value::Null;
    let (mut requests, mut answers) = (0u64, 0u64);
    let mut batch: Vec<(Vec<u8>, String, bool)> = Vec::new();
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let Ok(req) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        match req.get("type").and_then(Value::as_str) {
            Some("profile") => {
                profile = req.get("profile").cloned().unwrap_or(Value::Null);
                continue;
            }
            Some("run" | "run_concurrent") => {}
            _ => continue,
        }
        requests += 1;
        let id = id_of(&req);
        match lie.name {
            "stall" => loop {
                std::thread::sleep(std::time::Duration::from_secs(3600));
            },
            "crash-in-flight" | "crash-in-flight-v1" if requests % 3 == 0 => {
                log.line(&format!("lied {id}"));
                std::process::exit(1);
            }
            _ => {}
        }
        let (bytes, lied) = answer(lie, bug, &req, &profile);
        match lie.name {
            "half-line" => {
                log.line(&format!("lied {id}"));
                output.write_all(&bytes[..bytes.len() / 2])?;
                output.flush()?;
                std::process::exit(0);
            }
            "huge-line" => {
                log.line(&format!("lied {id}"));
                // A string value padded past 256 MiB, in one line.
                let pad = vec![b' '; 257 << 20];
                output.write_all(&bytes[..bytes.len() - 1])?;
                output.write_all(&pad)?;
                output.write_all(b"\n")?;
                output.flush()?;
                continue;
            }
            "slow-drip" => {
                log.line(&format!("lied {id}"));
                for b in &bytes {
                    output.write_all(&[*b])?;
                    output.flush()?;
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                continue;
            }
            _ => {}
        }
        batch.push((bytes, id, lied));
        // Answer once nothing more is waiting (a pipelined batch), or at once without a
        // window.
        if matches!(lie.hello, Text | Semantic) && !input.buffer().is_empty() {
            continue;
        }
        if lie.name == "reorder" && batch.len() >= 2 {
            batch.swap(0, 1);
            batch[0].2 = true;
            batch[1].2 = true;
        }
        for (bytes, id, lied) in batch.drain(..) {
            log.line(&format!("{} {id}", if lied { "lied" } else { "honest" }));
            output.write_all(&bytes)?;
            answers += 1;
            match lie.name {
                "extra-line" => output.write_all(b"{\"note\":\"a line nobody asked for\"}\n")?,
                "extra-line-late" => {
                    // The shim may read the next request before the runner sees this line:
                    // then it is that request's (malformed) answer (PROTOCOL.md).
                    output.flush()?;
                    output.write_all(b"{\"note\":\"a line nobody asked for\"}\n")?;
                }
                "extra-answer" => output.write_all(&bytes)?,
                _ => {}
            }
            output.flush()?;
            if lie.name == "crash-after-answer" && answers % 3 == 0 {
                std::process::exit(3);
            }
        }
        match lie.name {
            "extra-line-pipelined" => {
                output.write_all(b"{\"note\":\"a line nobody asked for\"}\n")?;
                output.flush()?;
            }
            "flood" => loop {
                // Until the runner stops reading or kills the process group.
                output.write_all(&[b'{'; 1 << 20])?;
                output.write_all(b"\n")?;
            },
            _ => {}
        }
    }
}
