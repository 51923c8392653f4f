//! Concurrent cases over the protocol (adapters/PROTOCOL.md, "Concurrent cases"): a version 2
//! shim that announces the capability `concurrent` gets `run_concurrent` requests listing the
//! instructions (text, iterations, state, lowered IR) and answers the final memory and every
//! iteration's returned values; the runner writes the last iteration's values into each
//! instruction's destinations with the reference's writeback.

use super::answer::{ConcurrentIn, check_row, memory_state};
use super::{SubprocessAdapter, quote, state_to_json};
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
                    "lowered": super::lowered::lowered_to_json(l),
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
        let mut line = msg.to_string().into_bytes();
        line.push(b'\n');
        let kept = (self.capture && self.level == crate::Level::Semantic).then_some(msg);
        let timeout = self.timeout;
        let bytes = self.exchange_line(line, timeout, true)?;
        let text = std::str::from_utf8(&bytes).unwrap_or("");
        let answer = match serde_json::from_str::<ConcurrentIn<'_>>(text) {
            Ok(a) if a.id == r.id => a,
            Ok(_) => {
                return Err(
                    self.garbage(format!("answer for another id: `{}`", quote(&bytes, 200)))
                );
            }
            Err(e) => {
                return Err(self.garbage(format!(
                    "malformed answer to a concurrent case ({e}): `{}`",
                    quote(&bytes, 200)
                )));
            }
        };
        let why = || answer.why.0.as_deref().unwrap_or("").to_string();
        let kind = match &*answer.outcome {
            "concurrent" => match concurrent_answer(r, &lowered, &answer) {
                Ok(o) => {
                    if let Some(msg) = kept {
                        // Kept for `atomcts repro` (PROTOCOL.md, "Standalone reproducers").
                        self.last = Some(super::repro::Last::Concurrent(
                            super::repro::LastConcurrent::of(
                                r,
                                &lowered,
                                msg,
                                answer.executed.0.is_some(),
                            ),
                        ));
                    }
                    return Ok(o);
                }
                Err(e) => AdapterErrorKind::Protocol(format!("{e} in `{}`", quote(&bytes, 200))),
            },
            "not_applicable" => AdapterErrorKind::NotApplicable(why()),
            "unsupported" => AdapterErrorKind::Unsupported(why()),
            "error" => AdapterErrorKind::Crashed(format!("the shim reported an error: {}", why())),
            other => AdapterErrorKind::Protocol(format!(
                "unknown outcome `{}` for a concurrent case in `{}`",
                crate::escape_controls(&super::answer::shorten(other, 40)),
                quote(&bytes, 200)
            )),
        };
        Err(self.err(kind))
    }
}

/// Turns a `concurrent` answer into the observation: `memory` (the shape of a state's, the
/// same ranges as the request), `returned[k][iteration][access]` hex values, optional
/// `ok[k][iteration][access]` booleans for compare-exchange, and for every compare-and-swap
/// loop `attempts[k][iteration][access]` counts (the successful attempt's value in
/// `returned`), and optionally `executed[k][access]`, the iterations each access's thread
/// executed (at most the request's; issue 30). Every list has exactly the request's shape: one
/// entry per instruction, one row per iteration, one value per access, each within the datum's
/// width (issue 27, H2, H7); an `ok` or `attempts` entry may be `null` for an instruction.
pub(super) fn concurrent_answer(
    r: &ConcurrentRequest<'_>,
    lowered: &[atomcts_reference::ir::Lowered],
    answer: &ConcurrentIn<'_>,
) -> Result<ConcurrentObservation, String> {
    let first = r.instrs.first().ok_or("no instructions")?.state;
    let mem = answer
        .memory
        .0
        .as_ref()
        .ok_or("a `concurrent` answer needs `memory`")?;
    let parsed = memory_state(first.lanes, mem)?;
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
        .returned
        .0
        .as_ref()
        .ok_or("a `concurrent` answer needs `returned`")?;
    let n = r.instrs.len();
    for (what, len) in [
        ("returned", Some(returned.len())),
        ("ok", answer.ok.0.as_ref().map(Vec::len)),
        ("attempts", answer.attempts.0.as_ref().map(Vec::len)),
        ("executed", answer.executed.0.as_ref().map(Vec::len)),
    ] {
        if let Some(len) = len.filter(|l| *l != n) {
            return Err(format!("`{what}` has {len} lists for {n} instructions"));
        }
    }
    let mut states = Vec::new();
    let mut all = Vec::new();
    let mut all_attempts = Vec::new();
    for (k, ((i, l), per)) in r.instrs.iter().zip(lowered).zip(returned).enumerate() {
        let iterations = i.iterations as usize;
        let rows_of = |what: &str, rows: Option<usize>| match rows {
            Some(got) if got != iterations => Err(format!(
                "{what}[{k}] has {got} iterations, the request {iterations}"
            )),
            _ => Ok(()),
        };
        rows_of("returned", Some(per.len()))?;
        let ok = answer.ok.0.as_ref().and_then(|o| o[k].as_ref());
        rows_of("ok", ok.map(Vec::len))?;
        let attempts = answer.attempts.0.as_ref().and_then(|a| a[k].as_ref());
        rows_of("attempts", attempts.map(Vec::len))?;
        let accesses = match &l.instr {
            atomcts_reference::ir::Instr::Mem(m) => m.accesses.len(),
            _ => 0,
        };
        let attempts: Vec<Vec<u32>> = match (i.cas_loop, attempts) {
            (Some(_), None) => {
                return Err(format!(
                    "instruction {k} is a compare-and-swap loop: the answer needs `attempts[{k}]`"
                ));
            }
            (lp, Some(rows)) => {
                // A loop makes at least one attempt per iteration; any other access exactly one.
                let (fits, each): (fn(&u32) -> bool, _) = match lp {
                    Some(_) => (|c| *c >= 1, "at least 1"),
                    None => (|c| *c == 1, "1 (not a loop)"),
                };
                if let Some(it) = rows
                    .iter()
                    .position(|row| row.len() != accesses || !row.iter().all(fits))
                {
                    return Err(format!(
                        "attempts[{k}][{it}]: expected {accesses} counts, each {each}"
                    ));
                }
                rows.clone()
            }
            (None, None) => vec![vec![1; accesses]; iterations],
        };
        all_attempts.push(attempts);
        if let Some(row) = answer.executed.0.as_ref().map(|e| &e[k]) {
            // One count per access (its thread), each at most the iterations asked for.
            if row.len() != accesses {
                return Err(format!(
                    "executed[{k}] has {} counts for {accesses} accesses",
                    row.len()
                ));
            }
            if let Some(j) = row.iter().position(|c| *c as usize > iterations) {
                return Err(format!(
                    "executed[{k}][{j}] is {}: more iterations than the request's {iterations}",
                    row[j]
                ));
            }
        }
        let mut rows = Vec::new();
        let mut last = Returned::default();
        for (it, row) in per.iter().enumerate() {
            let old: Vec<u64> = row.iter().map(|h| h.0).collect();
            let flags = ok.map(|o| o[it].as_slice());
            check_row(l, &old, flags, &format!("returned[{k}][{it}]"))?;
            let flags = flags.map(<[bool]>::to_vec).unwrap_or_default();
            rows.push(observed_of(l, &old, &flags));
            last = Returned { old, ok: flags };
        }
        let mut with_memory = i.state.clone();
        for space in [Space::Global, Space::Shared] {
            *with_memory.memory_mut(space) = parsed.memory(space).clone();
        }
        let mut done = complete(l, with_memory, &last)?;
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
        executed: answer.executed.0.clone(),
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

    /// `concurrent_answer` on an answer given as a JSON value (its id and outcome added).
    fn read(
        r: &ConcurrentRequest<'_>,
        lowered: &[atomcts_reference::ir::Lowered],
        answer: &Value,
    ) -> Result<ConcurrentObservation, String> {
        let mut a = answer.clone();
        a["id"] = json!("x");
        a["outcome"] = json!("concurrent");
        let text = a.to_string();
        let typed = serde_json::from_str::<ConcurrentIn<'_>>(&text).map_err(|e| e.to_string())?;
        concurrent_answer(r, lowered, &typed)
    }

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
        let o = read(&r, &lowered, &answer).unwrap();
        assert_eq!(o.states[0].elem("R0", 0), Some(2));
        assert_eq!(o.states[0].elem("R0", 1), Some(3));
        assert_eq!(o.states[0].global.read(0x100, 4), Some(4));
        let rets = o.returned.unwrap();
        assert_eq!(rets[0][0][1].ret, Some(1));
        let short = json!({"memory": answer["memory"], "returned": [[["0x0", "0x1"]]]});
        assert!(
            read(&r, &lowered, &short)
                .unwrap_err()
                .contains("iterations")
        );
        let moved =
            json!({"memory": {"global": [{"base": "0x200", "bytes": "00"}]}, "returned": [[]]});
        assert!(read(&r, &lowered, &moved).is_err());
        // Issue 27, H2 and H7: every row has one value per access, within the datum's width;
        // `ok` where given has the same shape and holds booleans.
        let memory = &answer["memory"];
        for (returned, ok, says) in [
            (
                json!([[["0x0", "0x1"], ["0x2"]]]),
                None,
                "returned[0][1] has 1 returned values for 2 accesses",
            ),
            (
                json!([[["0x0"], ["0x2", "0x3"]]]),
                None,
                "returned[0][0] has 1 returned values",
            ),
            (
                json!([[["0x0", "0x1"], ["0x2", "0x3", "0x4"]]]),
                None,
                "3 returned values",
            ),
            (
                json!([[["0x0", "0x1"], ["0x2", null]]]),
                None,
                "invalid type: null",
            ),
            (
                json!([[["0x0", "0x1"], ["0x2", "0xabc000000003"]]]),
                None,
                "does not fit u32",
            ),
            (
                json!([[["0x0", "0x1"], ["0x2", "0x3"]], []]),
                None,
                "2 lists for 1 instructions",
            ),
            (
                json!([[["0x0", "0x1"], ["0x2", "0x3"]]]),
                Some(json!([[[true, true]]])),
                "ok[0] has 1 iterations",
            ),
            (
                json!([[["0x0", "0x1"], ["0x2", "0x3"]]]),
                Some(json!([[[true, true], [true]]])),
                "1 `ok` flags for 2 accesses",
            ),
            (
                json!([[["0x0", "0x1"], ["0x2", "0x3"]]]),
                Some(json!([[[true, true], [true, "no"]]])),
                "invalid type",
            ),
            (
                json!([[["0x0", "0x1"], ["0x2", "0x3"]]]),
                Some(json!([])),
                "`ok` has 0 lists for 1 instructions",
            ),
        ] {
            let mut a = json!({"memory": memory, "returned": returned});
            if let Some(ok) = ok {
                a["ok"] = ok;
            }
            let e = read(&r, &lowered, &a).unwrap_err();
            assert!(e.contains(says), "{a}: {e}");
        }
        // `ok` of the right shape, or null for the instruction, is read.
        for ok in [json!([[[true, true], [true, false]]]), json!([null])] {
            let mut a = answer.clone();
            a["ok"] = ok;
            assert!(read(&r, &lowered, &a).is_ok(), "{a}");
        }
        // A plain instruction makes one attempt per access and iteration.
        let mut a = answer.clone();
        a["attempts"] = json!([[[1, 1], [1, 2]]]);
        let e = read(&r, &lowered, &a).unwrap_err();
        assert!(e.contains("attempts[0][1]"), "{e}");
        // Issue 30: `executed`, one count per access, at most the request's 2 iterations; a
        // count under it is read (the runner judges it), anything else is a protocol error.
        for (executed, says) in [
            (json!([[2, 2], [2]]), "2 lists for 1 instructions"),
            (json!([[2]]), "executed[0] has 1 counts for 2 accesses"),
            (
                json!([[2, 2, 2]]),
                "executed[0] has 3 counts for 2 accesses",
            ),
            (json!([[2, 3]]), "executed[0][1] is 3: more iterations"),
            (json!([[2, 4294967296u64]]), "invalid value"),
            (json!([[2, -1]]), "invalid value"),
            (json!([[2, "0x2"]]), "invalid type"),
        ] {
            let mut a = answer.clone();
            a["executed"] = executed;
            let e = read(&r, &lowered, &a).unwrap_err();
            assert!(e.contains(says), "{a}: {e}");
        }
        let mut a = answer.clone();
        a["executed"] = json!([[2, 1]]);
        assert_eq!(
            read(&r, &lowered, &a).unwrap().executed,
            Some(vec![vec![2, 1]])
        );
        assert_eq!(read(&r, &lowered, &answer).unwrap().executed, None);
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
        let o = read(&r, &lowered, &answer).unwrap();
        assert_eq!(o.attempts, Some(vec![vec![vec![1, 2]]]));
        assert_eq!(o.states[0].elem("R0", 1), Some(1));
        for bad in [
            json!({"memory": memory, "returned": [[["0x0", "0x1"]]]}),
            json!({"memory": memory, "returned": [[["0x0", "0x1"]]], "attempts": [[[1]]]}),
            json!({"memory": memory, "returned": [[["0x0", "0x1"]]], "attempts": [[[1, 0]]]}),
        ] {
            let e = read(&r, &lowered, &bad).unwrap_err();
            assert!(e.contains("attempts"), "{e}");
        }
        let bad =
            json!({"memory": memory, "returned": [[["0x0", "0x1"]]], "attempts": [[[1, -1]]]});
        let e = read(&r, &lowered, &bad).unwrap_err();
        assert!(e.contains("integer `-1`, expected u32"), "{e}");
    }
}
