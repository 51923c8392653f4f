//! The subprocess adapter: an implementation in any language behind a small shim that speaks
//! the line protocol of `adapters/PROTOCOL.md` on its standard input and output. Per-case
//! timeouts, and crash isolation: a shim that dies, hangs or speaks garbage costs only the case
//! in flight and is restarted for the next.

use crate::{Adapter, AdapterError, AdapterErrorKind, Level, Observation, Request};
use atomcts_reference::outcome::FaultClass;
use atomcts_reference::state::{AtomicType, Buffer, MAX_ELEMS, Reg, State, Window};
use atomcts_reference::types::{ElemType, Space};
use serde_json::{Map, Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

/// Protocol version spoken.
pub const VERSION: u64 = 1;
/// Highest protocol version spoken: version 2 adds the lowered IR and semantic-level shims
/// (adapters/PROTOCOL.md); a shim answering version 1 is spoken to in version 1.
pub const MAX_VERSION: u64 = 2;
/// Longest answer line accepted (bytes); longer is a protocol error, never an allocation.
pub const MAX_LINE: u64 = 256 << 20;
/// The least time a shim gets to start and answer the handshake, whatever the case timeout.
pub const MIN_STARTUP: Duration = Duration::from_secs(30);

struct Running {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<Option<String>>,
}

impl Drop for Running {
    /// Stops the shim. It is started as `exec <command>`, so the child is the shim itself (not
    /// a shell around it) and killing the child stops it.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A shim started with `sh -c <command>`.
pub struct SubprocessAdapter {
    command: String,
    name: String,
    capabilities: Vec<String>,
    timeout: Duration,
    running: Option<Running>,
    /// The version the shim answered (1 or 2).
    version: u64,
    /// Version 2: what the shim consumes.
    level: Level,
}

impl SubprocessAdapter {
    /// Starts the shim and performs the handshake.
    pub fn start(command: &str, timeout: Duration) -> Result<SubprocessAdapter, AdapterError> {
        let mut a = SubprocessAdapter {
            command: command.to_string(),
            name: format!("cmd:{command}"),
            capabilities: vec![],
            timeout,
            running: None,
            version: VERSION,
            level: Level::Text,
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

    fn ensure_running(&mut self) -> Result<(), AdapterError> {
        if self.running.is_some() {
            return Ok(());
        }
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(format!("exec {}", self.command));
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| {
                self.err(AdapterErrorKind::Unavailable(format!(
                    "cannot start `{}`: {e}",
                    self.command
                )))
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            return Err(self.err(AdapterErrorKind::Unavailable("no pipes to the shim".into())));
        };
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let mut buf = Vec::new();
                match (&mut r).take(MAX_LINE).read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => {
                        let _ = tx.send(None);
                        return;
                    }
                    Ok(_) => {
                        if tx
                            .send(Some(String::from_utf8_lossy(&buf).into_owned()))
                            .is_err()
                        {
                            return;
                        }
                    }
                }
            }
        });
        self.running = Some(Running {
            child,
            stdin,
            lines: rx,
        });
        let hello = json!({"type": "hello", "protocol": "atomcts-adapter", "version": VERSION, "versions": [VERSION, MAX_VERSION]});
        let case_timeout = self.timeout;
        self.timeout = case_timeout.max(MIN_STARTUP);
        let answer = self.exchange(&hello);
        self.timeout = case_timeout;
        let answer = answer?;
        let ok = answer.get("type").and_then(Value::as_str) == Some("hello")
            && answer.get("protocol").and_then(Value::as_str) == Some("atomcts-adapter")
            && answer
                .get("version")
                .and_then(Value::as_u64)
                .is_some_and(|v| (VERSION..=MAX_VERSION).contains(&v));
        if !ok {
            self.running = None;
            return Err(self.err(AdapterErrorKind::Protocol(format!(
                "bad handshake answer: {answer}"
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
        if let Some(n) = answer.get("name").and_then(Value::as_str) {
            self.name = format!("cmd:{n}");
        }
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

    /// Sends one line and waits for one answer line; on any failure the shim is stopped.
    fn exchange(&mut self, msg: &Value) -> Result<Value, AdapterError> {
        let timeout = self.timeout;
        let Some(run) = self.running.as_mut() else {
            return Err(self.err(AdapterErrorKind::Crashed("not running".into())));
        };
        let sent = writeln!(run.stdin, "{msg}").and_then(|_| run.stdin.flush());
        let result = match sent {
            Err(e) => Err(AdapterErrorKind::Crashed(format!(
                "writing to the shim failed: {e}"
            ))),
            Ok(()) => match run.lines.recv_timeout(timeout) {
                Ok(Some(line)) => serde_json::from_str::<Value>(line.trim()).map_err(|e| {
                    let shown: String = line.trim().chars().take(200).collect();
                    AdapterErrorKind::Protocol(format!("answer is not JSON ({e}): `{shown}`"))
                }),
                Ok(None) | Err(RecvTimeoutError::Disconnected) => {
                    let status = run.child.try_wait().ok().flatten();
                    Err(AdapterErrorKind::Crashed(match status {
                        Some(s) => format!("the shim exited ({s})"),
                        None => "the shim closed its output".into(),
                    }))
                }
                Err(RecvTimeoutError::Timeout) => {
                    Err(AdapterErrorKind::Timeout(timeout.as_millis() as u64))
                }
            },
        };
        result.map_err(|kind| {
            self.running = None;
            self.err(kind)
        })
    }
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

    fn level(&self) -> Level {
        self.level
    }

    fn supports(&self, capability: &str) -> bool {
        self.capabilities.iter().any(|c| c == capability)
    }

    fn run(&mut self, r: &Request<'_>) -> Result<Observation, AdapterError> {
        self.ensure_running()?;
        let knobs: Map<String, Value> = atomcts_reference::knobs::KNOBS
            .iter()
            .map(|k| {
                (
                    k.id.to_string(),
                    Value::String(r.profile.get(k.id).unwrap_or("?").to_string()),
                )
            })
            .collect();
        let lowered = if self.version >= 2 {
            self.lower(r)?
        } else {
            None
        };
        let mut msg = json!({
            "type": "run",
            "id": r.id,
            "dialect": r.dialect.name(),
            "asm": r.asm,
            "profile": {"name": r.profile.name, "knobs": knobs},
            "state": state_to_json(r.state),
        });
        if self.version >= 2 {
            msg["lowered"] = lowered
                .as_ref()
                .map_or(Value::Null, crate::protocol2::lowered_to_json);
        }
        let answer = self.exchange(&msg)?;
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
            Some("invalid") => Ok(Observation::Invalid(
                answer
                    .get("reason")
                    .and_then(Value::as_str)
                    .unwrap_or("rejected")
                    .to_string(),
            )),
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

fn truncate(v: &Value) -> String {
    v.to_string().chars().take(200).collect()
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
        for (base, len) in m.ranges() {
            let bytes: String = (0..len)
                .map(|i| format!("{:02x}", m.read(base + i, 1).unwrap_or(0)))
                .collect();
            out.push(json!({"base": hexs(base), "bytes": bytes}));
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
            .cloned()
            .unwrap_or_default();
        for r in ranges {
            let base = hex_of(r.get("base"), "memory base")?;
            let bytes = r
                .get("bytes")
                .and_then(Value::as_str)
                .ok_or("memory bytes missing")?;
            if bytes.len() % 2 != 0 || !bytes.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err("memory bytes must be pairs of hex digits".into());
            }
            let len = (bytes.len() / 2) as u64;
            let mem = s.memory_mut(space);
            mem.alloc(base, len).map_err(|e| e.to_string())?;
            for i in 0..len {
                let b = u64::from_str_radix(&bytes[2 * i as usize..2 * i as usize + 2], 16)
                    .map_err(|e| e.to_string())?;
                mem.write(base + i, 1, b);
            }
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
