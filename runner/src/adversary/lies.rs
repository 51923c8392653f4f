//! The lies told inside an answer: [`tell`] edits the honest answer in the one way a lie names.

use super::truth::hex;
use serde_json::{Value, json};

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
pub(super) fn tell(lie: &str, a: &mut Value, req: &Value) -> bool {
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
        "conc-executed-wide"
        | "conc-executed-short"
        | "conc-executed-over"
        | "conc-executed-cut" => {
            let Some(row) = a
                .pointer_mut(&format!("/executed/{k}"))
                .and_then(Value::as_array_mut)
            else {
                return false;
            };
            let Some(n) = row.first().and_then(Value::as_u64) else {
                return false;
            };
            match lie {
                "conc-executed-wide" => row[0] = json!(1u64 << 32 | n),
                "conc-executed-short" => {
                    row.pop();
                }
                "conc-executed-over" => row[0] = json!(n + 1),
                _ => row[0] = json!(n - 1),
            }
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
