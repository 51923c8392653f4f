//! Concurrent cases over the protocol (adapters/PROTOCOL.md, "Concurrent cases"): a version 2
//! shim that announces the capability `concurrent` gets `run_concurrent` requests listing the
//! instructions (text, iterations, state, lowered IR) and answers the final memory and every
//! iteration's returned values; the runner writes the last iteration's values into each
//! instruction's destinations with the reference's writeback.

use super::{SubprocessAdapter, state_from_json, state_to_json, truncate};
use crate::concurrent::{ConcurrentObservation, ConcurrentRequest, finish_loops, observed_of};
use crate::plan::{Returned, complete};
use crate::{AdapterError, AdapterErrorKind};
use atomcts_reference::types::Space;
use serde_json::{Map, Value, json};

/// The capability a shim announces in its handshake to get concurrent cases.
pub const CONCURRENT: &str = "concurrent";

/// The capability a concurrent shim announces to get compare-and-swap loops (`cas_loop` in a
/// `run_concurrent` instruction); without it a case with one is not applicable.
pub const CAS_LOOP: &str = "cas_loop";

fn hex_list(v: &Value, what: &str) -> Result<Vec<u64>, String> {
    v.as_array()
        .ok_or(format!("{what}: expected an array"))?
        .iter()
        .enumerate()
        .map(|(i, x)| {
            x.as_str()
                .and_then(|s| s.strip_prefix("0x"))
                .and_then(|h| u64::from_str_radix(h, 16).ok())
                .ok_or(format!("{what}[{i}]: expected a 0x hex string"))
        })
        .collect()
}

impl SubprocessAdapter {
    pub(super) fn run_concurrent_once(
        &mut self,
        r: &ConcurrentRequest<'_>,
    ) -> Result<ConcurrentObservation, AdapterError> {
        self.ensure_running()?;
        if self.version < 2 || !self.capabilities.iter().any(|c| c == CONCURRENT) {
            return Err(self.err(AdapterErrorKind::NotApplicable(format!(
                "the shim does not announce the capability `{CONCURRENT}` (protocol version 2)"
            ))));
        }
        if r.has_loops() && !self.capabilities.iter().any(|c| c == CAS_LOOP) {
            return Err(self.err(AdapterErrorKind::NotApplicable(format!(
                "the shim does not announce the capability `{CAS_LOOP}`: it cannot run compare-and-swap loops"
            ))));
        }
        let (_, lowered) = r
            .lowered()
            .map_err(|e| self.err(AdapterErrorKind::Model(e)))?;
        let knobs: Map<String, Value> = atomcts_reference::knobs::KNOBS
            .iter()
            .map(|k| {
                (
                    k.id.to_string(),
                    Value::String(r.profile.get(k.id).unwrap_or("?").to_string()),
                )
            })
            .collect();
        let instrs: Vec<Value> = r
            .instrs
            .iter()
            .zip(&lowered)
            .map(|(i, l)| {
                let mut v = json!({
                    "asm": i.asm,
                    "iterations": i.iterations,
                    "state": state_to_json(i.state),
                    "lowered": crate::protocol2::lowered_to_json(l),
                });
                if let Some(lp) = i.cas_loop {
                    v["cas_loop"] = json!({
                        "update": lp.update.name(),
                        "operand": format!("{:#x}", lp.operand),
                    });
                }
                v
            })
            .collect();
        let msg = json!({
            "type": "run_concurrent",
            "id": r.id,
            "dialect": r.dialect.name(),
            "profile": {"name": r.profile.name, "knobs": knobs},
            "instrs": instrs,
        });
        let timeout = self.timeout;
        let answer = self.exchange(&msg, timeout)?;
        if answer.get("id").and_then(Value::as_str) != Some(r.id) {
            self.running = None;
            return Err(self.err(AdapterErrorKind::Protocol(format!(
                "answer for another id: {}",
                truncate(&answer)
            ))));
        }
        let why = || {
            answer
                .get("why")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        match answer.get("outcome").and_then(Value::as_str) {
            Some("concurrent") => {}
            Some("not_applicable") => {
                return Err(self.err(AdapterErrorKind::NotApplicable(why())));
            }
            Some("unsupported") => return Err(self.err(AdapterErrorKind::Unsupported(why()))),
            Some("error") => {
                return Err(self.err(AdapterErrorKind::Crashed(format!(
                    "the shim reported an error: {}",
                    why()
                ))));
            }
            other => {
                return Err(self.err(AdapterErrorKind::Protocol(format!(
                    "unknown outcome {other:?} for a concurrent case in {}",
                    truncate(&answer)
                ))));
            }
        }
        concurrent_answer(r, &lowered, &answer).map_err(|e| {
            self.err(AdapterErrorKind::Protocol(format!(
                "{e} in {}",
                truncate(&answer)
            )))
        })
    }
}

/// Turns a `concurrent` answer into the observation: `memory` (the shape of a state's, the
/// same ranges as the request), `returned[k][iteration][access]` hex values, optional
/// `ok[k][iteration][access]` booleans for compare-exchange, and for every compare-and-swap
/// loop `attempts[k][iteration][access]` counts (the successful attempt's value in
/// `returned`).
pub fn concurrent_answer(
    r: &ConcurrentRequest<'_>,
    lowered: &[atomcts_reference::ir::Lowered],
    answer: &Value,
) -> Result<ConcurrentObservation, String> {
    let first = r.instrs.first().ok_or("no instructions")?.state;
    let mem = answer
        .get("memory")
        .ok_or("a `concurrent` answer needs `memory`")?;
    let parsed = state_from_json(&json!({"lanes": first.lanes, "memory": mem}))?;
    for space in [Space::Global, Space::Shared] {
        let want: Vec<_> = first.memory(space).ranges().collect();
        let got: Vec<_> = parsed.memory(space).ranges().collect();
        if want != got {
            return Err(format!(
                "answer memory.{} has other ranges than the request",
                space.name()
            ));
        }
    }
    let returned = answer
        .get("returned")
        .and_then(Value::as_array)
        .ok_or("a `concurrent` answer needs `returned`")?;
    if returned.len() != r.instrs.len() {
        return Err(format!(
            "`returned` has {} lists for {} instructions",
            returned.len(),
            r.instrs.len()
        ));
    }
    let mut states = Vec::new();
    let mut all = Vec::new();
    let mut all_attempts = Vec::new();
    for (k, ((i, l), per)) in r.instrs.iter().zip(lowered).zip(returned).enumerate() {
        let accesses = match &l.instr {
            atomcts_reference::ir::Instr::Mem(m) => m.accesses.len(),
            _ => 0,
        };
        let attempts: Vec<Vec<u32>> = match (i.cas_loop, answer.pointer(&format!("/attempts/{k}")))
        {
            (None, _) => vec![vec![1; accesses]; i.iterations as usize],
            (Some(_), None | Some(Value::Null)) => {
                return Err(format!(
                    "instruction {k} is a compare-and-swap loop: the answer needs `attempts[{k}]`"
                ));
            }
            (Some(_), Some(v)) => {
                let rows = v
                    .as_array()
                    .ok_or(format!("attempts[{k}]: expected an array"))?;
                if rows.len() != i.iterations as usize {
                    return Err(format!(
                        "attempts[{k}] has {} iterations, the request {}",
                        rows.len(),
                        i.iterations
                    ));
                }
                rows.iter()
                    .enumerate()
                    .map(|(it, row)| {
                        let row = row
                            .as_array()
                            .filter(|a| a.len() == accesses)
                            .ok_or(format!("attempts[{k}][{it}]: expected {accesses} counts"))?;
                        row.iter()
                            .map(|c| {
                                c.as_u64()
                                    .and_then(|c| u32::try_from(c).ok())
                                    .ok_or(format!("attempts[{k}][{it}]: expected counts"))
                            })
                            .collect()
                    })
                    .collect::<Result<_, String>>()?
            }
        };
        all_attempts.push(attempts);
        let per = per
            .as_array()
            .ok_or(format!("returned[{k}]: expected an array"))?;
        if per.len() != i.iterations as usize {
            return Err(format!(
                "returned[{k}] has {} iterations, the request {}",
                per.len(),
                i.iterations
            ));
        }
        let mut rows = Vec::new();
        let mut last = Returned::default();
        for (it, row) in per.iter().enumerate() {
            let old = hex_list(row, &format!("returned[{k}][{it}]"))?;
            let ok: Vec<bool> = answer
                .pointer(&format!("/ok/{k}/{it}"))
                .and_then(Value::as_array)
                .map(|a| a.iter().map(|b| b.as_bool().unwrap_or(true)).collect())
                .unwrap_or_default();
            rows.push(observed_of(l, &old, &ok));
            last = Returned { old, ok };
        }
        let mut with_memory = i.state.clone();
        for space in [Space::Global, Space::Shared] {
            *with_memory.memory_mut(space) = parsed.memory(space).clone();
        }
        let mut done = complete(l, &with_memory, &last)?;
        if i.cas_loop.is_some() {
            finish_loops(l, &mut done, &last.old)?;
        }
        states.push(done);
        all.push(rows);
    }
    Ok(ConcurrentObservation {
        states,
        returned: Some(all),
        attempts: Some(all_attempts),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::concurrent::ConcurrentInstr;
    use atomcts_reference::program::Dialect;
    use atomcts_reference::state::Reg;
    use atomcts_reference::types::ElemType;
    use atomcts_reference::{Profile, State};

    #[test]
    fn answers_fill_destinations_from_the_last_iteration_and_bad_shapes_are_errors() {
        let mut s = State::new(2);
        for (r, v) in [("R2", 0x100), ("R4", 1)] {
            s.regs.insert(
                r.into(),
                Reg {
                    ty: ElemType::B32,
                    elems: vec![v, v],
                },
            );
        }
        s.global.alloc(0x100, 4).unwrap();
        let profile = Profile::default();
        let instrs = [ConcurrentInstr {
            asm: "ATOM.ADD R0, [R2], R4",
            state: &s,
            iterations: 2,
            cas_loop: None,
        }];
        let r = ConcurrentRequest {
            id: "x",
            dialect: Dialect::Sass,
            instrs: &instrs,
            profile: &profile,
        };
        let (_, lowered) = r.lowered().unwrap();
        let answer = json!({"outcome": "concurrent",
            "memory": {"global": [{"base": "0x100", "bytes": "04000000"}], "shared": []},
            "returned": [[["0x0", "0x1"], ["0x2", "0x3"]]]});
        let o = concurrent_answer(&r, &lowered, &answer).unwrap();
        assert_eq!(o.states[0].elem("R0", 0), Some(2));
        assert_eq!(o.states[0].elem("R0", 1), Some(3));
        assert_eq!(o.states[0].global.read(0x100, 4), Some(4));
        let rets = o.returned.unwrap();
        assert_eq!(rets[0][0][1].ret, Some(1));
        let short = json!({"memory": answer["memory"], "returned": [[["0x0", "0x1"]]]});
        assert!(
            concurrent_answer(&r, &lowered, &short)
                .unwrap_err()
                .contains("iterations")
        );
        let moved =
            json!({"memory": {"global": [{"base": "0x200", "bytes": "00"}]}, "returned": [[]]});
        assert!(concurrent_answer(&r, &lowered, &moved).is_err());
    }

    #[test]
    fn loop_answers_need_attempts_per_iteration_and_lane() {
        let mut s = State::new(2);
        for (r, v) in [("R2", 0x100), ("R4", 0), ("R5", 0)] {
            s.regs.insert(
                r.into(),
                Reg {
                    ty: ElemType::B32,
                    elems: vec![v, v],
                },
            );
        }
        s.global.alloc(0x100, 4).unwrap();
        let profile = Profile::default();
        let instrs = [ConcurrentInstr {
            asm: "ATOM.CAS.32 R0, [R2], R4, R5",
            state: &s,
            iterations: 1,
            cas_loop: Some(atomcts_reference::concurrent::CasLoop {
                update: atomcts_reference::ir::AtomicOp::Add,
                operand: 1,
            }),
        }];
        let r = ConcurrentRequest {
            id: "x",
            dialect: Dialect::Sass,
            instrs: &instrs,
            profile: &profile,
        };
        assert!(r.has_loops());
        let (_, lowered) = r.lowered().unwrap();
        let memory = json!({"global": [{"base": "0x100", "bytes": "02000000"}], "shared": []});
        let answer = json!({"memory": memory, "returned": [[["0x0", "0x1"]]],
            "attempts": [[[1, 2]]]});
        let o = concurrent_answer(&r, &lowered, &answer).unwrap();
        assert_eq!(o.attempts, Some(vec![vec![vec![1, 2]]]));
        assert_eq!(o.states[0].elem("R0", 1), Some(1));
        for bad in [
            json!({"memory": memory, "returned": [[["0x0", "0x1"]]]}),
            json!({"memory": memory, "returned": [[["0x0", "0x1"]]], "attempts": [[[1]]]}),
            json!({"memory": memory, "returned": [[["0x0", "0x1"]]], "attempts": [[[1, -1]]]}),
        ] {
            let e = concurrent_answer(&r, &lowered, &bad).unwrap_err();
            assert!(e.contains("attempts"), "{e}");
        }
    }
}
