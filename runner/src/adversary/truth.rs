//! The honest answers (the reference's): a `run` request through the reference adapter, a
//! semantic-level `run` and a `run_concurrent` request through one serialization of the IR.

use atomcts_adapters::concurrent::{ConcurrentInstr, ConcurrentRequest};
use atomcts_adapters::protocol::{state_from_json, state_to_json};
use atomcts_adapters::{Adapter, Observation, ReferenceAdapter, Request};
use atomcts_reference::concurrent::{CasLoop, LOOP_UPDATES};
use atomcts_reference::ir::{AtomicOp, Env, Instr, Lowered, MemInstr};
use atomcts_reference::program::Dialect;
use atomcts_reference::{Profile, State};
use serde_json::{Value, json};
use std::collections::BTreeMap;

use super::planted::{Bug, is_float, toward_zero};

/// A profile from a request's `profile` object (its name and every knob).
pub(super) fn profile_of(v: &Value) -> Result<Profile, String> {
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

pub(super) fn hex(v: u64) -> Value {
    Value::String(format!("{v:#x}"))
}

/// What one serialization returned: per instruction, per iteration, per access, the returned
/// value, the success flag and the attempts; and the final memory.
struct Serial {
    memory: State,
    returned: Vec<Vec<Vec<u64>>>,
    ok: Vec<Vec<Vec<bool>>>,
    attempts: Vec<Vec<Vec<u32>>>,
    /// Whether a planted bug changed anything.
    touched: bool,
}

/// Runs lowered instructions in one serialization (iterations round-robin over the
/// instructions, accesses in program order): each access through the semantics of the IR,
/// its first (the reference's) effect. A compare-and-swap loop retries at once, so its second
/// attempt always succeeds. With a planted `bug`, the bug changes what it touches
/// ([`Bug`]).
fn serialize(
    lowered: &[Lowered],
    states: &[State],
    iterations: &[u32],
    loops: &[Option<CasLoop>],
    bug: Option<Bug>,
) -> Result<Serial, String> {
    let mut memory = states.first().ok_or("no instructions")?.clone();
    let mut out = Serial {
        memory: State::new(memory.lanes),
        returned: vec![Vec::new(); lowered.len()],
        ok: vec![Vec::new(); lowered.len()],
        attempts: vec![Vec::new(); lowered.len()],
        touched: false,
    };
    let mut touched = false;
    let mut lost = false;
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
        // Per address, the instruction that first wrote it in this round (for LostUpdate).
        let mut writer: BTreeMap<u64, usize> = BTreeMap::new();
        for (k, m) in mems.iter().enumerate() {
            if it >= iterations[k] {
                continue;
            }
            // StaleMinMax: per address, how many accesses of this instruction, and the value
            // before its first.
            let mut racing: BTreeMap<u64, u32> = BTreeMap::new();
            for a in &m.accesses {
                *racing.entry(a.addr).or_insert(0) += 1;
            }
            let mut before: BTreeMap<u64, u64> = BTreeMap::new();
            let (mut ret, mut ok, mut att) = (Vec::new(), Vec::new(), Vec::new());
            for (j, a) in m.accesses.iter().enumerate() {
                let mut step = |op: AtomicOp, env: &Env, src: [u64; 2]| {
                    let mem = memory.memory_mut(m.space);
                    let old = mem
                        .read(a.addr, m.ty.bytes())
                        .ok_or(format!("address {:#x} is not allocated", a.addr))?;
                    let e = atomcts_reference::semantics::apply(op, m.ty, env, old, src)
                        .map_err(|e| e.to_string())?;
                    let mut e = *e.first().ok_or("no effect")?;
                    if bug == Some(Bug::RoundTowardZero)
                        && let Some(new) = toward_zero(op, m.ty, old, src[0], e.new)
                    {
                        e.new = new;
                        touched = true;
                    }
                    let first = *writer.entry(a.addr).or_insert(k);
                    if bug == Some(Bug::LostUpdate) && !lost && first != k && e.new != old {
                        lost = true;
                        touched = true;
                    } else {
                        mem.write(a.addr, m.ty.bytes(), e.new);
                    }
                    Ok::<_, String>((old, e))
                };
                match loops[k] {
                    None => {
                        let (old, mut e) = step(m.op, &m.env, a.src)?;
                        let held = *before.entry(a.addr).or_insert(old);
                        if bug == Some(Bug::StaleMinMax)
                            && matches!(m.op, AtomicOp::Min | AtomicOp::Max)
                            && is_float(m.ty)
                            && racing[&a.addr] >= 2
                            && e.ret != held
                        {
                            e.ret = held;
                            touched = true;
                        }
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
    out.touched = touched;
    Ok(out)
}

fn memory_json(s: &State) -> Value {
    state_to_json(s)["memory"].clone()
}

/// The honest answer to a `run` request (without its id).
///
/// With a planted `bug`, the answer is the serialization's with the bug (the second value says
/// whether the bug changed it).
pub(super) fn honest_run(
    req: &Value,
    profile: &Profile,
    semantic: bool,
    bug: Option<Bug>,
) -> Result<(Value, bool), String> {
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
            && let Ok(s) = serialize(&lowered, std::slice::from_ref(&state), &[1], &[None], bug)
        {
            return Ok((
                json!({
                    "outcome": "accesses",
                    "memory": memory_json(&s.memory),
                    "returned": s.returned[0][0].iter().map(|v| hex(*v)).collect::<Vec<_>>(),
                    "ok": s.ok[0][0],
                }),
                s.touched,
            ));
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
    let a = match ReferenceAdapter.run(&request).map_err(|e| e.to_string())? {
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
        // The reference executes: it never answers `accepted` (an assembler's answer).
        Observation::Accepted { lowered, .. } => {
            Err(format!("the reference answered `accepted`: {lowered}"))
        }
    }?;
    Ok((a, false))
}

/// The honest answer to a `run_concurrent` request (without its id).
pub(super) fn honest_concurrent(
    req: &Value,
    profile: &Profile,
    bug: Option<Bug>,
) -> Result<(Value, bool), String> {
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
    let s = serialize(&lowered, &states, &iterations, &loops, bug)?;
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
    let a = json!({
        "outcome": "concurrent",
        "memory": memory_json(&s.memory),
        "returned": rows(&s.returned),
        "ok": s.ok,
        "attempts": s.attempts,
        // Every thread executed every iteration (issue 30).
        "executed": s
            .returned
            .iter()
            .zip(&iterations)
            .map(|(its, n)| vec![*n; its.first().map_or(0, Vec::len)])
            .collect::<Vec<_>>(),
    });
    Ok((a, s.touched))
}
