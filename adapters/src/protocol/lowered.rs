//! Protocol version 2 (adapters/PROTOCOL.md): the JSON form of the lowered IR that a
//! semantic-level shim runs, and the `accesses` answer (final memory and each access's
//! returned value) that the runner turns into a final state with the reference's writeback.

use super::answer::{HexIn, MemoryIn, Present, check_row, memory_state};
use super::json::{Hex, Seq};
use crate::plan::{Returned, complete};
use atomcts_reference::ir::{Dest, Instr, Lowered, RegField, Source, Upper};
use atomcts_reference::state::State;
use atomcts_reference::types::Space;
use serde::Deserialize;
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
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

/// The protocol's JSON form of a lowered instruction, streamed (issue 9): the same bytes as
/// `serde_json::to_vec(&lowered_to_json(l))`, keys in the same sorted order, no tree built.
pub struct LoweredOut<'a>(pub &'a Lowered);

struct FieldOut<'a>(&'a RegField);

impl Serialize for FieldOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let f = self.0;
        let (upper, width) = match f.upper {
            Upper::Keep => ("keep", None),
            Upper::Zero { width } => ("zero", Some(width)),
            Upper::Sign { width } => ("sign", Some(width)),
            Upper::Unspecified { width } => ("unspecified", Some(width)),
        };
        let mut m = s.serialize_map(Some(6))?;
        m.serialize_entry("bits", &f.bits)?;
        m.serialize_entry("idx", &f.idx)?;
        m.serialize_entry("lo", &f.lo)?;
        m.serialize_entry("name", &f.name)?;
        m.serialize_entry("upper", upper)?;
        m.serialize_entry("width", &width)?;
        m.end()
    }
}

struct DestOut<'a>(&'a Dest);

impl Serialize for DestOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Dest::None => s.serialize_seq(Some(0))?.end(),
            Dest::Fields(fs) => Seq(fs, FieldOut).serialize(s),
            Dest::CasWeak { ok, expected } => {
                struct Inner<'a>(&'a Option<RegField>, &'a RegField);
                impl Serialize for Inner<'_> {
                    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                        let mut m = s.serialize_map(Some(2))?;
                        m.serialize_entry("expected", &FieldOut(self.1))?;
                        m.serialize_entry("ok", &self.0.as_ref().map(FieldOut))?;
                        m.end()
                    }
                }
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("cas_weak", &Inner(ok, expected))?;
                m.end()
            }
        }
    }
}

struct AccessOut<'a>(&'a atomcts_reference::ir::Access);

impl Serialize for AccessOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let a = self.0;
        let mut m = s.serialize_map(Some(5))?;
        m.serialize_entry("addr", &Hex(a.addr))?;
        m.serialize_entry("dst", &DestOut(&a.dst))?;
        m.serialize_entry("fault", &a.fault.map(|c| c.name()))?;
        m.serialize_entry("lane", &a.lane)?;
        m.serialize_entry("src", &[Hex(a.src[0]), Hex(a.src[1])])?;
        m.end()
    }
}

struct InstrOut<'a>(&'a Instr);

impl Serialize for InstrOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Instr::Mem(mi) => {
                // The float environment: keys in the Value route's (sorted) order.
                #[derive(serde::Serialize)]
                struct Ftz {
                    inputs: bool,
                    outputs: bool,
                }
                let mut m = s.serialize_map(Some(9))?;
                m.serialize_entry("accesses", &Seq(&mi.accesses, AccessOut))?;
                m.serialize_entry(
                    "compare",
                    match mi.env.compare {
                        atomcts_reference::ir::Compare::Bitwise => "bitwise",
                        atomcts_reference::ir::Compare::Numeric { .. } => "numeric",
                    },
                )?;
                m.serialize_entry(
                    "ftz",
                    &Ftz {
                        inputs: mi.env.ftz.inputs,
                        outputs: mi.env.ftz.outputs,
                    },
                )?;
                m.serialize_entry("kind", "mem")?;
                m.serialize_entry("op", mi.op.name())?;
                m.serialize_entry(
                    "round",
                    match mi.env.round {
                        atomcts_reference::float::Round::NearestEven => "nearest_even",
                        atomcts_reference::float::Round::TowardZero => "toward_zero",
                    },
                )?;
                m.serialize_entry("space", mi.space.name())?;
                m.serialize_entry("type", mi.ty.name())?;
                m.serialize_entry("weak", &mi.env.weak)?;
                m.end()
            }
            Instr::Shuffle(sh) => {
                let lane = |(lane, src): &(u32, Source)| match src {
                    Source::Data(j) => LaneOut(*lane, Some(("data", *j))),
                    Source::Fill(j) => LaneOut(*lane, Some(("fill", *j))),
                    Source::Undefined => LaneOut(*lane, None),
                };
                let mut m = s.serialize_map(Some(5))?;
                m.serialize_entry("data", &sh.data)?;
                m.serialize_entry("dst", &sh.dst)?;
                m.serialize_entry("fill", &sh.fill)?;
                m.serialize_entry("kind", "shuffle")?;
                m.serialize_entry("lanes", &Seq(&sh.lanes, lane))?;
                m.end()
            }
        }
    }
}

/// `[lane, "data", j]`, `[lane, "fill", j]` or `[lane, "undefined"]`.
struct LaneOut(u32, Option<(&'static str, u32)>);

impl Serialize for LaneOut {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.1 {
            Some((from, j)) => (self.0, from, j).serialize(s),
            None => (self.0, "undefined").serialize(s),
        }
    }
}

impl Serialize for LoweredOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Write<'a>(&'a atomcts_reference::ir::StaticWrite);
        impl Serialize for Write<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(Some(3))?;
                m.serialize_entry("idx", &self.0.idx)?;
                m.serialize_entry("name", &self.0.name)?;
                m.serialize_entry("value", &Hex(self.0.value))?;
                m.end()
            }
        }
        struct Declare<'a>(&'a (String, atomcts_reference::state::Reg));
        impl Serialize for Declare<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(Some(3))?;
                m.serialize_entry("elems", &self.0.1.elems.len())?;
                m.serialize_entry("name", &self.0.0)?;
                m.serialize_entry("type", self.0.1.ty.visa_name())?;
                m.end()
            }
        }
        let l = self.0;
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("declare", &Seq(&l.declare, Declare))?;
        m.serialize_entry("instr", &InstrOut(&l.instr))?;
        m.serialize_entry("writes", &Seq(&l.writes, Write))?;
        m.end()
    }
}

/// Turns a v2 `accesses` answer (`memory` as in a state, `returned` one hex value per access
/// in order, optional `ok` booleans for compare-exchange, one per access) into the final
/// state, read as strictly as the runner reads it from a shim (issue 27, H7).
pub fn accesses_answer(l: &Lowered, state: &State, answer: &Value) -> Result<State, String> {
    #[derive(serde::Deserialize)]
    struct Accesses<'a> {
        #[serde(borrow)]
        memory: MemoryIn<'a>,
        returned: Vec<HexIn>,
        #[serde(default)]
        ok: Present<Vec<bool>>,
    }
    let a =
        Accesses::deserialize(answer).map_err(|e| format!("malformed `accesses` answer: {e}"))?;
    accesses_typed(
        l,
        state,
        &a.memory,
        a.returned.iter().map(|h| h.0).collect(),
        a.ok.0.as_deref(),
    )
}

/// An `accesses` answer read: the answer's memory (the request's ranges), one returned value
/// per access within the datum's width, and `ok` flags (one per access) where given.
pub(crate) fn accesses_typed(
    l: &Lowered,
    state: &State,
    mem: &MemoryIn<'_>,
    old: Vec<u64>,
    ok: Option<&[bool]>,
) -> Result<State, String> {
    check_row(l, &old, ok, "returned")?;
    let parsed = memory_state(state.lanes, mem)?;
    let with_memory = answer_memory(state, &parsed)?;
    let ok = ok.map(<[bool]>::to_vec).unwrap_or_default();
    complete(l, with_memory, &Returned { old, ok })
}

/// `state` with the answer's memory (`parsed`: a state holding only it), which must have the
/// request's ranges.
fn answer_memory(state: &State, parsed: &State) -> Result<State, String> {
    let mut with_memory = state.clone();
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
    Ok(with_memory)
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
        // Issue 27, H2 and H7: a row of the wrong length, a value wider than the datum, a flag
        // that is not a boolean: errors, never read as something else.
        let memory = &answer["memory"];
        for (bad, says) in [
            (json!(["0x0", "0x100000000"]), "does not fit u32"),
            (json!(["0x0"]), "1 returned values for 2 accesses"),
            (
                json!(["0x0", "0x1", "0x2"]),
                "3 returned values for 2 accesses",
            ),
            (json!(["0x0", 1]), "invalid type"),
            (json!(["0x0", "1"]), "not a 0x hex string"),
            (json!(["0x0", "0x-1"]), "not a 0x hex string"),
        ] {
            let a = json!({"memory": memory, "returned": bad});
            let e = accesses_answer(&l, &s, &a).unwrap_err();
            assert!(e.contains(says), "{a}: {e}");
        }
        for (ok, says) in [
            (json!(["no", true]), "invalid type"),
            (json!([true]), "1 `ok` flags for 2 accesses"),
            (json!(null), "invalid type: null"),
        ] {
            let a = json!({"memory": memory, "returned": ["0x0", "0x1"], "ok": ok});
            let e = accesses_answer(&l, &s, &a).unwrap_err();
            assert!(e.contains(says), "{a}: {e}");
        }
    }
}
