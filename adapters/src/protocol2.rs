//! Protocol version 2 (adapters/PROTOCOL.md): the JSON form of the lowered IR that a
//! semantic-level shim runs, and the `accesses` answer (final memory and each access's
//! returned value) that the runner turns into a final state with the reference's writeback.

use crate::plan::{Returned, complete};
use atomcts_reference::ir::{Dest, Instr, Lowered, RegField, Source, Upper};
use atomcts_reference::state::State;
use atomcts_reference::types::Space;
use serde_json::{Value, json};

fn hex(v: u64) -> Value {
    Value::String(format!("{v:#x}"))
}

fn field(f: &RegField) -> Value {
    let (upper, width) = match f.upper {
        Upper::Keep => ("keep", None),
        Upper::Zero { width } => ("zero", Some(width)),
        Upper::Sign { width } => ("sign", Some(width)),
        Upper::Unspecified { width } => ("unspecified", Some(width)),
    };
    json!({"name": f.name, "idx": f.idx, "lo": f.lo, "bits": f.bits, "upper": upper, "width": width})
}

/// The protocol's JSON form of a lowered instruction.
pub fn lowered_to_json(l: &Lowered) -> Value {
    let instr = match &l.instr {
        Instr::Mem(m) => {
            let accesses: Vec<Value> = m
                .accesses
                .iter()
                .map(|a| {
                    let dst = match &a.dst {
                        Dest::None => json!([]),
                        Dest::Fields(fs) => Value::Array(fs.iter().map(field).collect()),
                        Dest::CasWeak { ok, expected } => json!({
                            "cas_weak": {"ok": ok.as_ref().map(field), "expected": field(expected)}
                        }),
                    };
                    json!({
                        "lane": a.lane,
                        "addr": hex(a.addr),
                        "src": [hex(a.src[0]), hex(a.src[1])],
                        "dst": dst,
                        "fault": a.fault.map(|c| c.name()),
                    })
                })
                .collect();
            json!({
                "kind": "mem",
                "op": m.op.name(),
                "type": m.ty.name(),
                "space": m.space.name(),
                "compare": match m.env.compare {
                    atomcts_reference::ir::Compare::Bitwise => "bitwise",
                    atomcts_reference::ir::Compare::Numeric { .. } => "numeric",
                },
                "weak": m.env.weak,
                // The float environment (ignored for integer data): flushing of subnormal
                // operands and results, and the rounding.
                "ftz": {"inputs": m.env.ftz.inputs, "outputs": m.env.ftz.outputs},
                "round": match m.env.round {
                    atomcts_reference::float::Round::NearestEven => "nearest_even",
                    atomcts_reference::float::Round::TowardZero => "toward_zero",
                },
                "accesses": accesses,
            })
        }
        Instr::Shuffle(s) => json!({
            "kind": "shuffle",
            "data": s.data,
            "fill": s.fill,
            "dst": s.dst,
            "lanes": s.lanes.iter().map(|(lane, src)| match src {
                Source::Data(j) => json!([lane, "data", j]),
                Source::Fill(j) => json!([lane, "fill", j]),
                Source::Undefined => json!([lane, "undefined"]),
            }).collect::<Vec<_>>(),
        }),
    };
    json!({
        "instr": instr,
        "writes": l.writes.iter().map(|w| json!({"name": w.name, "idx": w.idx, "value": hex(w.value)})).collect::<Vec<_>>(),
        "declare": l.declare.iter().map(|(n, r)| json!({"name": n, "type": r.ty.visa_name(), "elems": r.elems.len()})).collect::<Vec<_>>(),
    })
}

/// Turns a v2 `accesses` answer (`memory` as in a state, `returned` one hex value per access
/// in order, optional `ok` booleans for compare-exchange) into the final state.
pub fn accesses_answer(l: &Lowered, state: &State, answer: &Value) -> Result<State, String> {
    let mut with_memory = state.clone();
    if let Some(mem) = answer.get("memory") {
        // Reuse the state parser for the memory part: same shape as a state's `memory`.
        let probe = json!({"lanes": state.lanes, "memory": mem});
        let parsed = crate::subprocess::state_from_json(&probe)?;
        for space in [Space::Global, Space::Shared] {
            let want: Vec<_> = state.memory(space).ranges().collect();
            let got: Vec<_> = parsed.memory(space).ranges().collect();
            if want != got {
                return Err(format!(
                    "answer memory.{} has other ranges than the request",
                    space.name()
                ));
            }
            *with_memory.memory_mut(space) = parsed.memory(space).clone();
        }
    } else {
        return Err("an `accesses` answer needs `memory`".into());
    }
    let old = answer
        .get("returned")
        .and_then(Value::as_array)
        .ok_or("an `accesses` answer needs `returned`")?
        .iter()
        .enumerate()
        .map(|(i, v)| {
            v.as_str()
                .and_then(|s| s.strip_prefix("0x"))
                .and_then(|h| u64::from_str_radix(h, 16).ok())
                .ok_or(format!("returned[{i}]: expected a 0x hex string"))
        })
        .collect::<Result<Vec<u64>, String>>()?;
    let ok = answer
        .get("ok")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|b| b.as_bool().unwrap_or(true)).collect())
        .unwrap_or_default();
    complete(l, &with_memory, &Returned { old, ok })
}

#[cfg(test)]
mod tests {
    use super::*;
    use atomcts_reference::Profile;
    use atomcts_reference::ir::Lowering;
    use atomcts_reference::outcome::Outcome;
    use atomcts_reference::program::{Dialect, Program};
    use atomcts_reference::state::Reg;
    use atomcts_reference::types::ElemType;

    #[test]
    fn an_accesses_answer_completes_like_the_reference() {
        let mut s = State::new(2);
        s.regs.insert(
            "R2".into(),
            Reg {
                ty: ElemType::B32,
                elems: vec![0x100, 0x100],
            },
        );
        s.regs.insert(
            "R4".into(),
            Reg {
                ty: ElemType::B32,
                elems: vec![1, 2],
            },
        );
        s.global.alloc(0x100, 4).unwrap();
        let asm = "ATOM.E.ADD R0, [R2], R4";
        let l = match Program::parse(Dialect::Sass, asm)
            .unwrap()
            .lower(&s, &Profile::default())
            .unwrap()
        {
            Lowering::Run(l) => l,
            other => panic!("{other:?}"),
        };
        let j = lowered_to_json(&l);
        assert_eq!(j["instr"]["op"], "add");
        assert_eq!(j["instr"]["accesses"][1]["src"][0], "0x2");
        let answer = json!({
            "outcome": "accesses",
            "memory": {"global": [{"base": "0x100", "bytes": "03000000"}], "shared": []},
            "returned": ["0x0", "0x1"],
        });
        let done = accesses_answer(&l, &s, &answer).unwrap();
        let reference =
            atomcts_reference::program::run(Dialect::Sass, asm, &s, &Profile::default()).unwrap();
        match reference.outcome {
            Outcome::Completed(c) => assert_eq!(done, c.state),
            other => panic!("{other:?}"),
        }
        let bad = json!({"memory": {"global": [{"base": "0x200", "bytes": "00"}]}, "returned": []});
        assert!(accesses_answer(&l, &s, &bad).is_err());
    }
}
