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

use atomcts_adapters::concurrent::{ConcurrentInstr, ConcurrentRequest};
use atomcts_adapters::subprocess::{state_from_json, state_to_json};
use atomcts_adapters::{Adapter, Observation, ReferenceAdapter, Request};
use atomcts_reference::concurrent::{CasLoop, LOOP_UPDATES};
use atomcts_reference::ir::{AtomicOp, Env, Instr, Lowered, MemInstr};
use atomcts_reference::program::Dialect;
use atomcts_reference::{Profile, State};
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
pub const LIES: &[Lie] = &[
    lie(
        "honest",
        Text,
        Innocent,
        "no lie: the reference's answer, every time",
    ),
    lie(
        "honest-semantic",
        Semantic,
        Innocent,
        "no lie, at semantic level (`accesses` answers)",
    ),
    lie("garbage", Text, NotPass, "a line that is not JSON"),
    lie(
        "garbage-v1",
        Version1,
        NotPass,
        "a line that is not JSON, under protocol 1",
    ),
    lie(
        "bad-utf8",
        Text,
        NotPass,
        "the answer with an invalid UTF-8 byte in a string",
    ),
    lie(
        "truncated",
        Text,
        NotPass,
        "the answer cut in half (still one line)",
    ),
    lie("wrong-id", Text, NotPass, "the answer with another id"),
    lie("no-id", Text, NotPass, "the answer without its id"),
    lie("unknown-outcome", Text, NotPass, "outcome `passed`"),
    lie(
        "reorder",
        Text,
        NotPass,
        "two answers of one batch swapped (each with its own id)",
    ),
    lie(
        "wide-reg",
        Text,
        NotPass,
        "a register element with a bit above its type's width",
    ),
    lie(
        "reg-number",
        Text,
        NotPass,
        "a register element as a JSON number, not a hex string",
    ),
    lie(
        "reg-no-prefix",
        Text,
        NotPass,
        "a register element's hex without `0x`",
    ),
    lie(
        "reg-short",
        Text,
        NotPass,
        "a register with one element fewer",
    ),
    lie(
        "reg-missing",
        Text,
        NotPass,
        "a register of the state left out",
    ),
    lie("reg-type", Text, NotPass, "a register's type changed"),
    lie("mem-long", Text, NotPass, "a memory range one byte longer"),
    lie(
        "mem-short",
        Text,
        NotPass,
        "a memory range one byte shorter",
    ),
    lie(
        "mem-odd",
        Text,
        NotPass,
        "a memory range with an odd number of hex digits",
    ),
    lie("mem-missing", Text, NotPass, "a memory range left out"),
    lie(
        "mem-moved",
        Text,
        NotPass,
        "a memory range's base moved by one byte",
    ),
    lie("fault-no-lanes", Text, NotPass, "a fault with no lanes"),
    lie(
        "fault-lane-out",
        Text,
        NotPass,
        "a fault on a lane the case does not have, beside the right ones",
    ),
    lie(
        "fault-class",
        Text,
        NotPass,
        "a fault of a class nobody knows",
    ),
    lie("invalid-column-0", Text, NotPass, "a rejection at column 0"),
    lie(
        "invalid-column-text",
        Text,
        NotPass,
        "a rejection whose column is a string",
    ),
    lie(
        "returned-short",
        Semantic,
        NotPass,
        "`accesses`: one returned value fewer",
    ),
    lie(
        "returned-long",
        Semantic,
        NotPass,
        "`accesses`: one returned value more",
    ),
    lie(
        "returned-wide",
        Semantic,
        NotPass,
        "`accesses`: a returned value wider than its type",
    ),
    lie(
        "ok-string",
        Semantic,
        NotPass,
        "`accesses`: `ok` as the string \"no\"",
    ),
    lie(
        "ok-short",
        Semantic,
        NotPass,
        "`accesses`: `ok` with one flag fewer",
    ),
    lie(
        "accesses-mem-long",
        Semantic,
        NotPass,
        "`accesses`: a memory range one byte longer",
    ),
    lie(
        "conc-row-short",
        Text,
        NotPass,
        "`concurrent`: a `returned` row with one value fewer",
    ),
    lie(
        "conc-row-long",
        Text,
        NotPass,
        "`concurrent`: a `returned` row with one value more",
    ),
    lie(
        "conc-iteration-missing",
        Text,
        NotPass,
        "`concurrent`: one iteration's row left out",
    ),
    lie(
        "conc-instr-missing",
        Text,
        NotPass,
        "`concurrent`: one instruction's rows left out",
    ),
    lie(
        "conc-wide",
        Text,
        NotPass,
        "`concurrent`: a returned value wider than its type",
    ),
    lie(
        "conc-ok-string",
        Text,
        NotPass,
        "`concurrent`: an `ok` flag as the string \"no\"",
    ),
    lie(
        "conc-ok-short",
        Text,
        NotPass,
        "`concurrent`: an `ok` row with one flag fewer",
    ),
    lie(
        "conc-mem-long",
        Text,
        NotPass,
        "`concurrent`: a memory range one byte longer",
    ),
    lie(
        "conc-attempts-zero",
        Text,
        NotPass,
        "`concurrent`: a loop's attempt count of 0",
    ),
    lie(
        "conc-attempts-short",
        Text,
        NotPass,
        "`concurrent`: a loop's `attempts` row one short",
    ),
    lie(
        "crash-in-flight",
        Text,
        NotPass,
        "exits (status 1) after reading every third request, unanswered",
    ),
    lie(
        "crash-in-flight-v1",
        Unpipelined,
        NotPass,
        "the same, one request at a time",
    ),
    lie(
        "half-line",
        Text,
        NotPass,
        "writes half an answer without its newline, then exits",
    ),
    lie(
        "slow-drip",
        Unpipelined,
        NotPass,
        "writes the answer one byte per 50 ms (past the deadline)",
    ),
    lie(
        "huge-line",
        Text,
        NotPass,
        "an answer line of 257 MiB (past the 256 MiB limit)",
    ),
    lie(
        "stall",
        Text,
        AllErrors,
        "never answers after the handshake",
    ),
    lie(
        "exit-after-hello",
        Text,
        AllErrors,
        "exits (status 0) right after the handshake",
    ),
    lie(
        "error-all",
        Text,
        AllErrors,
        "answers `error` to everything",
    ),
    lie(
        "unsupported-all",
        Text,
        NothingChecked,
        "answers `unsupported` to everything",
    ),
    lie(
        "not-applicable-all",
        Semantic,
        NothingChecked,
        "answers `not_applicable` to everything",
    ),
    lie(
        "extra-line",
        Unpipelined,
        Innocent,
        "after each answer, a line nobody asked for",
    ),
    lie(
        "extra-answer",
        Unpipelined,
        Innocent,
        "each answer written twice",
    ),
    lie(
        "crash-after-answer",
        Unpipelined,
        Innocent,
        "exits (status 3) after every third answer",
    ),
    lie(
        "extra-line-pipelined",
        Text,
        Accounted,
        "after each batch, a line nobody asked for",
    ),
    lie(
        "flood",
        Text,
        Accounted,
        "after its first answer, writes lines without end",
    ),
];

/// The lie named `name`.
pub fn find(name: &str) -> Option<&'static Lie> {
    LIES.iter().find(|l| l.name == name)
}

/// The adversary's handshake answer.
fn hello(l: &Lie) -> Value {
    let mut caps: Vec<&str> = atomcts_adapters::CAPABILITIES.to_vec();
    let version = if l.hello == Version1 { 1 } else { 2 };
    if version == 2 {
        caps.extend(["concurrent", "cas_loop"]);
    }
    caps.push("rejection_columns");
    let mut h = json!({
        "type": "hello", "protocol": "atomcts-adapter", "version": version,
        "name": format!("adversary:{}", l.name),
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

/// A profile from a request's `profile` object (its name and every knob).
fn profile_of(v: &Value) -> Result<Profile, String> {
    let mut p = Profile::default();
    if let Some(name) = v.get("name").and_then(Value::as_str) {
        p.name = name.to_string();
    }
    if let Some(knobs) = v.get("knobs").and_then(Value::as_object) {
        for (k, o) in knobs {
            let o = o
                .as_str()
                .ok_or_else(|| format!("knob {k}: not a string"))?;
            p.set(k, o).map_err(|e| e.to_string())?;
        }
    }
    Ok(p)
}

fn dialect_of(req: &Value) -> Result<Dialect, String> {
    req.get("dialect")
        .and_then(Value::as_str)
        .and_then(Dialect::from_name)
        .ok_or_else(|| "no dialect".to_string())
}

fn hex(v: u64) -> Value {
    Value::String(format!("{v:#x}"))
}

/// What one serialization returned: per instruction, per iteration, per access, the returned
/// value, the success flag and the attempts; and the final memory.
struct Serial {
    memory: State,
    returned: Vec<Vec<Vec<u64>>>,
    ok: Vec<Vec<Vec<bool>>>,
    attempts: Vec<Vec<Vec<u32>>>,
}

/// Runs lowered instructions in one serialization (iterations round-robin over the
/// instructions, accesses in program order): each access through the semantics of the IR,
/// its first (the reference's) effect. A compare-and-swap loop retries at once, so its second
/// attempt always succeeds.
fn serialize(
    lowered: &[Lowered],
    states: &[State],
    iterations: &[u32],
    loops: &[Option<CasLoop>],
) -> Result<Serial, String> {
    let mut memory = states.first().ok_or("no instructions")?.clone();
    let mut out = Serial {
        memory: State::new(memory.lanes),
        returned: vec![Vec::new(); lowered.len()],
        ok: vec![Vec::new(); lowered.len()],
        attempts: vec![Vec::new(); lowered.len()],
    };
    let mems: Vec<&MemInstr> = lowered
        .iter()
        .map(|l| match &l.instr {
            Instr::Mem(m) => Ok(m),
            _ => Err("not a memory instruction".to_string()),
        })
        .collect::<Result<_, _>>()?;
    let mut compares: Vec<Vec<u64>> = mems
        .iter()
        .map(|m| m.accesses.iter().map(|a| a.src[0]).collect())
        .collect();
    let rounds = iterations.iter().copied().max().unwrap_or(0);
    for it in 0..rounds {
        for (k, m) in mems.iter().enumerate() {
            if it >= iterations[k] {
                continue;
            }
            let (mut ret, mut ok, mut att) = (Vec::new(), Vec::new(), Vec::new());
            for (j, a) in m.accesses.iter().enumerate() {
                let mut step = |op: AtomicOp, env: &Env, src: [u64; 2]| {
                    let mem = memory.memory_mut(m.space);
                    let old = mem
                        .read(a.addr, m.ty.bytes())
                        .ok_or(format!("address {:#x} is not allocated", a.addr))?;
                    let e = atomcts_reference::semantics::apply(op, m.ty, env, old, src)
                        .map_err(|e| e.to_string())?;
                    let e = *e.first().ok_or("no effect")?;
                    mem.write(a.addr, m.ty.bytes(), e.new);
                    Ok::<_, String>((old, e))
                };
                match loops[k] {
                    None => {
                        let (_, e) = step(m.op, &m.env, a.src)?;
                        ret.push(e.ret);
                        ok.push(e.success);
                        att.push(1);
                    }
                    Some(lp) => {
                        let env = Env {
                            weak: false,
                            ..m.env
                        };
                        let mut c = compares[k][j];
                        let mut n = 0;
                        loop {
                            n += 1;
                            let new = lp.new_value(m.ty, m.env, c).map_err(|e| e.to_string())?;
                            let (old, e) = step(AtomicOp::Cas, &env, [c, new])?;
                            if e.success {
                                break;
                            }
                            c = old;
                        }
                        ret.push(c);
                        ok.push(true);
                        att.push(n);
                        compares[k][j] = lp.new_value(m.ty, m.env, c).map_err(|e| e.to_string())?;
                    }
                }
            }
            out.returned[k].push(ret);
            out.ok[k].push(ok);
            out.attempts[k].push(att);
        }
    }
    out.memory = memory;
    Ok(out)
}

fn memory_json(s: &State) -> Value {
    state_to_json(s)["memory"].clone()
}

/// The honest answer to a `run` request (without its id).
fn honest_run(req: &Value, profile: &Profile, semantic: bool) -> Result<Value, String> {
    let dialect = dialect_of(req)?;
    let asm = req.get("asm").and_then(Value::as_str).ok_or("no asm")?;
    let state = state_from_json(req.get("state").ok_or("no state")?)?;
    if semantic {
        let one = ConcurrentInstr {
            asm,
            state: &state,
            iterations: 1,
            cas_loop: None,
        };
        let r = ConcurrentRequest {
            id: "",
            dialect,
            instrs: std::slice::from_ref(&one),
            profile,
        };
        if let Ok((_, lowered)) = r.lowered()
            && matches!(lowered[0].instr, Instr::Mem(_))
            // Out-of-range accesses (vISA's zero reads and dropped writes) are answered with
            // the reference's completed state instead.
            && let Ok(s) = serialize(&lowered, std::slice::from_ref(&state), &[1], &[None])
        {
            return Ok(json!({
                "outcome": "accesses",
                "memory": memory_json(&s.memory),
                "returned": s.returned[0][0].iter().map(|v| hex(*v)).collect::<Vec<_>>(),
                "ok": s.ok[0][0],
            }));
        }
    }
    let request = Request {
        id: "",
        dialect,
        asm,
        state: &state,
        profile,
        lowered: None,
    };
    match ReferenceAdapter.run(&request).map_err(|e| e.to_string())? {
        Observation::Completed(s) => {
            Ok(json!({"outcome": "completed", "state": state_to_json(&s)}))
        }
        Observation::Fault(lanes) => Ok(json!({
            "outcome": "fault",
            "lanes": lanes.iter().map(|(l, c)| json!([l, c.name()])).collect::<Vec<_>>(),
        })),
        Observation::Invalid { reason, column } => {
            let mut v = json!({"outcome": "invalid", "reason": reason});
            if let Some(c) = column {
                v["column"] = json!(c);
            }
            Ok(v)
        }
        Observation::Unspecified(why) => Ok(
            json!({"outcome": "unsupported", "why": format!("the documents leave it undefined: {why}")}),
        ),
    }
}

/// The honest answer to a `run_concurrent` request (without its id).
fn honest_concurrent(req: &Value, profile: &Profile) -> Result<Value, String> {
    let dialect = dialect_of(req)?;
    let instrs = req
        .get("instrs")
        .and_then(Value::as_array)
        .ok_or("no instrs")?;
    let mut states = Vec::new();
    let mut asms = Vec::new();
    let mut iterations = Vec::new();
    let mut loops = Vec::new();
    for i in instrs {
        asms.push(i.get("asm").and_then(Value::as_str).ok_or("no asm")?);
        states.push(state_from_json(i.get("state").ok_or("no state")?)?);
        iterations.push(
            i.get("iterations")
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
                .ok_or("no iterations")?,
        );
        loops.push(match i.get("cas_loop") {
            None | Some(Value::Null) => None,
            Some(l) => {
                let name = l.get("update").and_then(Value::as_str).ok_or("no update")?;
                let update = LOOP_UPDATES
                    .iter()
                    .copied()
                    .find(|u| u.name() == name)
                    .ok_or("unknown update")?;
                let operand = l
                    .get("operand")
                    .and_then(Value::as_str)
                    .and_then(|s| s.strip_prefix("0x"))
                    .and_then(|s| u64::from_str_radix(s, 16).ok())
                    .ok_or("bad operand")?;
                Some(CasLoop { update, operand })
            }
        });
    }
    let parts: Vec<ConcurrentInstr> = (0..instrs.len())
        .map(|k| ConcurrentInstr {
            asm: asms[k],
            state: &states[k],
            iterations: iterations[k],
            cas_loop: loops[k],
        })
        .collect();
    let r = ConcurrentRequest {
        id: "",
        dialect,
        instrs: &parts,
        profile,
    };
    let (_, lowered) = r.lowered()?;
    let s = serialize(&lowered, &states, &iterations, &loops)?;
    let rows = |v: &Vec<Vec<Vec<u64>>>| -> Value {
        v.iter()
            .map(|k| {
                k.iter()
                    .map(|i| i.iter().map(|x| hex(*x)).collect::<Vec<_>>())
                    .collect::<Vec<_>>()
            })
            .collect::<Vec<_>>()
            .into()
    };
    Ok(json!({
        "outcome": "concurrent",
        "memory": memory_json(&s.memory),
        "returned": rows(&s.returned),
        "ok": s.ok,
        "attempts": s.attempts,
    }))
}

/// The width in bits of a register type of the protocol (`b32`, `bool`, a vISA type).
fn reg_bits(ty: &str) -> Option<u32> {
    match ty {
        "b32" => Some(32),
        "bool" => Some(1),
        t => atomcts_reference::types::ElemType::from_visa_name(t).map(|e| u32::from(e.bits)),
    }
}

/// `v` (a `0x..` string) with the lowest bit above `bits` set: one hex digit more at 64 bits.
fn widen(v: &Value, bits: u32) -> Option<Value> {
    let n = u64::from_str_radix(v.as_str()?.strip_prefix("0x")?, 16).ok()?;
    Some(Value::String(if bits >= 64 {
        format!("0x1{n:016x}")
    } else {
        format!("{:#x}", n | (1u64 << bits))
    }))
}

/// The data width of a lowered memory instruction in a `run_concurrent` or v2 `run` request.
fn lowered_bits(lowered: &Value) -> Option<u32> {
    let ty = lowered.pointer("/instr/type")?.as_str()?;
    atomcts_reference::types::DataType::from_name(ty).map(|t| t.bits())
}

/// The first memory range of an answer (`memory` of a state or of the answer itself).
fn first_range(mem: &mut Value) -> Option<&mut Value> {
    let space = ["global", "shared"]
        .into_iter()
        .find(|s| mem[*s].as_array().is_some_and(|r| !r.is_empty()))?;
    mem.get_mut(space)?.get_mut(0)
}

fn edit_bytes(mem: &mut Value, f: impl FnOnce(&mut String)) -> bool {
    let Some(range) = first_range(mem) else {
        return false;
    };
    let Some(Value::String(b)) = range.get_mut("bytes") else {
        return false;
    };
    if b.is_empty() {
        return false;
    }
    f(b);
    true
}

/// The first register element of a state, with its register's type.
fn first_elem(state: &mut Value) -> Option<(&mut Value, String)> {
    let regs = state.get_mut("regs")?.as_object_mut()?;
    let (_, r) = regs
        .iter_mut()
        .find(|(_, r)| r["elems"].as_array().is_some_and(|e| !e.is_empty()))?;
    let ty = r["type"].as_str()?.to_string();
    Some((r["elems"].get_mut(0)?, ty))
}

/// Applies `lie` to the honest answer `a` of request `req`; `false` when the lie has no place
/// in this answer (it is then sent honestly).
fn tell(lie: &str, a: &mut Value, req: &Value) -> bool {
    let outcome = a["outcome"].as_str().unwrap_or("").to_string();
    let completed = outcome == "completed";
    match lie {
        "wide-reg" if completed => first_elem(&mut a["state"])
            .and_then(|(e, ty)| Some((widen(e, reg_bits(&ty)?)?, e)))
            .map(|(w, e)| *e = w)
            .is_some(),
        "reg-number" if completed => first_elem(&mut a["state"])
            .and_then(|(e, _)| {
                let n = u64::from_str_radix(e.as_str()?.strip_prefix("0x")?, 16).ok()?;
                *e = json!(n);
                Some(())
            })
            .is_some(),
        "reg-no-prefix" if completed => first_elem(&mut a["state"])
            .and_then(|(e, _)| {
                let s = e.as_str()?.strip_prefix("0x")?.to_string();
                *e = Value::String(s);
                Some(())
            })
            .is_some(),
        "reg-short" | "reg-missing" | "reg-type" if completed => {
            let Some(regs) = a["state"]["regs"].as_object_mut() else {
                return false;
            };
            let Some(name) = regs
                .iter()
                .find(|(_, r)| r["elems"].as_array().is_some_and(|e| !e.is_empty()))
                .map(|(n, _)| n.clone())
            else {
                return false;
            };
            match lie {
                "reg-missing" => {
                    regs.remove(&name);
                }
                "reg-short" => {
                    regs[&name]["elems"].as_array_mut().map(Vec::pop);
                }
                _ => {
                    let ty = if regs[&name]["type"] == "b32" {
                        "uq"
                    } else {
                        "b32"
                    };
                    regs[&name]["type"] = json!(ty);
                }
            }
            true
        }
        "mem-long" | "mem-short" | "mem-odd" | "mem-missing" | "mem-moved" if completed => {
            mem_lie(lie, &mut a["state"]["memory"])
        }
        "accesses-mem-long" | "conc-mem-long"
            if outcome == "accesses" || outcome == "concurrent" =>
        {
            mem_lie("mem-long", &mut a["memory"])
        }
        "fault-no-lanes" if outcome == "fault" => {
            a["lanes"] = json!([]);
            true
        }
        "fault-lane-out" if outcome == "fault" => {
            let lanes = req
                .pointer("/state/lanes")
                .and_then(Value::as_u64)
                .unwrap_or(32);
            let (l, c) = (lanes.max(32), a["lanes"][0][1].clone());
            a["lanes"]
                .as_array_mut()
                .map(|v| v.push(json!([l, c])))
                .is_some()
        }
        "fault-class" if outcome == "fault" => {
            let Some(first) = a["lanes"].get_mut(0) else {
                return false;
            };
            first[1] = json!("page_fault");
            true
        }
        "invalid-column-0" if outcome == "invalid" => {
            a["column"] = json!(0);
            true
        }
        "invalid-column-text" if outcome == "invalid" => {
            a["column"] = json!("3");
            true
        }
        "returned-short" | "returned-long" | "returned-wide" | "ok-string" | "ok-short"
            if outcome == "accesses" =>
        {
            let bits = req.get("lowered").and_then(lowered_bits);
            let (mut row, mut ok) = (a["returned"].take(), a["ok"].take());
            let told = row_lie(lie.trim_start_matches("returned-"), &mut row, &mut ok, bits);
            (a["returned"], a["ok"]) = (row, ok);
            told
        }
        _ if lie.starts_with("conc-") && outcome == "concurrent" => concurrent_lie(lie, a, req),
        _ => false,
    }
}

fn mem_lie(lie: &str, mem: &mut Value) -> bool {
    match lie {
        "mem-long" => edit_bytes(mem, |b| b.push_str("00")),
        "mem-short" => edit_bytes(mem, |b| {
            b.truncate(b.len() - 2);
        }),
        "mem-odd" => edit_bytes(mem, |b| {
            b.pop();
        }),
        "mem-missing" => {
            for space in ["global", "shared"] {
                if let Some(r) = mem.get_mut(space).and_then(Value::as_array_mut)
                    && !r.is_empty()
                {
                    r.remove(0);
                    return true;
                }
            }
            false
        }
        _ => first_range(mem)
            .and_then(|r| {
                let base = r["base"].as_str()?.strip_prefix("0x")?;
                let base = u64::from_str_radix(base, 16).ok()?.checked_add(1)?;
                r["base"] = hex(base);
                Some(())
            })
            .is_some(),
    }
}

/// A lie on one row of returned values and its `ok` flags: `short`, `long`, `wide`,
/// `ok-string`, `ok-short`.
fn row_lie(lie: &str, returned: &mut Value, ok: &mut Value, bits: Option<u32>) -> bool {
    let (Some(r), Some(o)) = (returned.as_array_mut(), ok.as_array_mut()) else {
        return false;
    };
    if r.is_empty() {
        return false;
    }
    match lie {
        "short" => {
            r.pop();
        }
        "long" => r.push(r[0].clone()),
        "wide" => match bits.and_then(|b| widen(&r[0], b)) {
            Some(w) => r[0] = w,
            None => return false,
        },
        "ok-string" => o[0] = json!("no"),
        _ => {
            o.pop();
        }
    }
    true
}

fn concurrent_lie(lie: &str, a: &mut Value, req: &Value) -> bool {
    let Some(rows) = a["returned"].as_array_mut() else {
        return false;
    };
    // The first instruction with an iteration that has accesses.
    let Some(k) = rows.iter().position(|r| {
        r.get(0)
            .and_then(Value::as_array)
            .is_some_and(|r| !r.is_empty())
    }) else {
        return false;
    };
    let bits = req
        .pointer(&format!("/instrs/{k}/lowered"))
        .and_then(lowered_bits);
    match lie {
        "conc-iteration-missing" => rows[k].as_array_mut().map(Vec::pop).is_some(),
        "conc-instr-missing" => {
            rows.remove(k);
            true
        }
        "conc-attempts-zero" | "conc-attempts-short" => {
            let is_loop = req
                .pointer(&format!("/instrs/{k}/cas_loop"))
                .is_some_and(|l| !l.is_null());
            let Some(row) = a
                .pointer_mut(&format!("/attempts/{k}/0"))
                .and_then(Value::as_array_mut)
            else {
                return false;
            };
            if !is_loop {
                return false;
            }
            if lie == "conc-attempts-zero" {
                row[0] = json!(0);
            } else {
                row.pop();
            }
            true
        }
        _ => {
            let kind = match lie {
                "conc-row-short" => "short",
                "conc-row-long" => "long",
                "conc-wide" => "wide",
                "conc-ok-string" => "ok-string",
                _ => "ok-short",
            };
            let mut row = rows[k][0].take();
            let mut ok = a["ok"][k][0].take();
            let told = row_lie(kind, &mut row, &mut ok, bits);
            a["returned"][k][0] = row;
            a["ok"][k][0] = ok;
            told
        }
    }
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

    fn line(&mut self, s: &str) {
        if let Some(f) = &mut self.0 {
            let _ = writeln!(f, "{s}");
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
fn answer(lie: &Lie, req: &Value, profile: &Value) -> (Vec<u8>, bool) {
    let id = id_of(req);
    let p = match req.get("profile").unwrap_or(profile) {
        Value::Null => Ok(Profile::default()),
        v => profile_of(v),
    };
    let concurrent = req.get("type").and_then(Value::as_str) == Some("run_concurrent");
    let honest = p.and_then(|p| {
        if concurrent {
            honest_concurrent(req, &p)
        } else {
            honest_run(req, &p, lie.hello == Semantic)
        }
    });
    let mut a = honest.unwrap_or_else(|e| json!({"outcome": "error", "why": e}));
    let mut lied = match lie.name {
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
        name => tell(name, &mut a, req),
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
    let mut log = Log::open();
    log.line(&format!("pid {}", std::process::id()));
    let mut line = String::new();
    input.read_line(&mut line)?;
    if line.is_empty() {
        return Ok(());
    }
    writeln!(output, "{}", hello(lie))?;
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
        let (bytes, lied) = answer(lie, &req, &profile);
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
