//! The shared plan of a SIMD-group exchange (MSL simd_shuffle and friends, Table 34 of §5.13 in
//! the 2017 copy) on a GPU API with sub-groups (Vulkan, WGSL): which invocation is which Metal
//! thread, what each one holds, and how the results go back into the state.
//!
//! The lowered IR of a shuffle ([`ShuffleInstr`]) carries only the resolved sources; an API must
//! be handed the *function* and its per-thread argument so that the implementation does the
//! exchange itself. So the plan takes the parsed MSL call next to the lowered IR.
//!
//! - Metal thread `t` of SIMD width `w` is SIMD lane `t % w` of SIMD-group `t / w`; on the API
//!   it is sub-group lane `t % w` of sub-group `t / w` (the back end requires sub-group size `w`
//!   with full sub-groups and indexes its inputs by the sub-group built-ins, so the mapping does
//!   not depend on how the driver packs invocations). A partial last group is padded with
//!   invocations that do not take part.
//! - Inactive threads (and the padding) skip the exchange: on both sides reading one of them is
//!   undefined (MSL §5.13; SPIR-V 1.6 §3.42.24 "inactive invocation"), so the lowering marks
//!   those results open and the API's value is not checked.
//! - The lane ID, delta or mask is `ushort` (Table 34): converted modulo 2^16 here, as the
//!   front end does.
//! - [`ShufflePlan::n`] is Metal's SIMD-group size for the thread's group (knob
//!   `msl.partial_simd_group`, A22), used by the back ends where Metal defines a value that the
//!   API leaves undefined (simd_shuffle_up/down keep the caller's value where the computed lane
//!   falls outside the group).

use crate::plan::NotApplicable;
use atomcts_reference::ir::{Instr, Lowered, ShuffleInstr};
use atomcts_reference::msl::simd::{SimdCall, SimdFunction};
use atomcts_reference::msl::{self, Operand, Statement};
use atomcts_reference::{Profile, State};

/// One invocation of the dispatch (one Metal thread, or padding).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Thread {
    /// Whether it takes part in the exchange (an active thread of the case).
    pub active: bool,
    /// Its `data` bits (zero for padding).
    pub data: u64,
    /// Its lane ID, delta or mask (`ushort`).
    pub arg: u32,
    /// Metal's SIMD-group size for its group.
    pub n: u32,
    /// Its `filling_data` bits (the and_fill functions; zero otherwise and for padding).
    pub fill: u64,
    /// Its `modulo` (`ushort`; the and_fill functions' optional fourth argument).
    pub modulo: Option<u32>,
}

/// A SIMD-group exchange laid out for one work-group.
#[derive(Clone, Debug, PartialEq)]
pub struct ShufflePlan {
    /// The function.
    pub function: SimdFunction,
    /// The SIMD width `w` (the sub-group size required of the device).
    pub width: u32,
    /// Bits of `data` (8, 16, 32 or 64).
    pub bits: u32,
    /// One entry per invocation, `ceil(lanes / w) * w` of them.
    pub threads: Vec<Thread>,
    lowered: ShuffleInstr,
    declare: Vec<(String, atomcts_reference::state::Reg)>,
}

fn na<T>(why: impl Into<String>) -> Result<T, NotApplicable> {
    Err(NotApplicable(why.into()))
}

impl ShufflePlan {
    /// Plans the MSL SIMD-group statement `asm`, lowered to `lowered`, on `state`.
    pub fn new(
        asm: &str,
        lowered: &Lowered,
        state: &State,
        profile: &Profile,
    ) -> Result<ShufflePlan, NotApplicable> {
        let Instr::Shuffle(s) = &lowered.instr else {
            return na("not a SIMD-group exchange");
        };
        let call: SimdCall = match msl::parse(asm) {
            Ok(Statement::Simd(c)) => c,
            _ => {
                return na(
                    "a SIMD-group exchange from a statement that is not an MSL SIMD-group call",
                );
            }
        };
        let width = state.simd_width.max(1);
        let data = state
            .regs
            .get(&call.data)
            .ok_or_else(|| NotApplicable(format!("`{}` undeclared", call.data)))?;
        let bits = u32::from(data.ty.bits);
        if !matches!(bits, 8 | 16 | 32 | 64) {
            return na(format!("{bits}-bit data"));
        }
        let fill = match &call.fill {
            Some(name) => Some(
                state
                    .regs
                    .get(name)
                    .ok_or_else(|| NotApplicable(format!("`{name}` undeclared")))?,
            ),
            None => None,
        };
        // A lane ID, delta, mask or modulo of thread `t`, converted to `ushort`.
        let ushort = |op: &Operand, t: u32| -> Result<u32, NotApplicable> {
            match op {
                Operand::Int(v) => Ok((*v as u64 & 0xFFFF) as u32),
                Operand::Var(name) => Ok((state
                    .elem(name, t)
                    .ok_or_else(|| NotApplicable(format!("`{name}` has no element {t}")))?
                    & 0xFFFF) as u32),
                Operand::Float(f) => na(format!("float argument `{f}`")),
            }
        };
        let group_size = profile
            .get("msl.partial_simd_group")
            .unwrap_or("simd_width");
        let groups = state.lanes.div_ceil(width);
        let mut threads = Vec::with_capacity((groups * width) as usize);
        for t in 0..groups * width {
            let base = t - t % width;
            let n = if group_size == "group_size" {
                width.min(state.lanes - base)
            } else {
                width
            };
            let real = t < state.lanes;
            let active = real && state.active.get(t as usize).copied().unwrap_or(false);
            let arg = if real { ushort(&call.arg, t)? } else { 0 };
            let modulo = match (&call.modulo, real) {
                (Some(m), true) => Some(ushort(m, t)?),
                _ => None,
            };
            threads.push(Thread {
                active,
                data: if real {
                    data.elems.get(t as usize).copied().unwrap_or(0)
                } else {
                    0
                },
                arg,
                n,
                fill: match (fill, real) {
                    (Some(f), true) => f.elems.get(t as usize).copied().unwrap_or(0),
                    _ => 0,
                },
                modulo,
            });
        }
        Ok(ShufflePlan {
            function: call.function,
            width,
            bits,
            threads,
            lowered: s.clone(),
            declare: lowered.declare.clone(),
        })
    }

    /// The argument if it is the same for every active thread (SPIR-V's broadcast takes a
    /// constant lane).
    pub fn uniform_arg(&self) -> Option<u32> {
        let mut it = self.threads.iter().filter(|t| t.active).map(|t| t.arg);
        let first = it.next()?;
        it.all(|a| a == first).then_some(first)
    }

    /// The final state: the result of every active thread of the lowering written into the
    /// destination (`results` indexed by thread; the lowering's open lanes are not checked).
    pub fn finish(&self, state: &State, results: &[u64]) -> Result<State, String> {
        let mut next = state.clone();
        for (name, reg) in &self.declare {
            next.regs.entry(name.clone()).or_insert_with(|| reg.clone());
        }
        for &(lane, _) in &self.lowered.lanes {
            let v = results
                .get(lane as usize)
                .copied()
                .ok_or_else(|| format!("no result for thread {lane}"))?;
            next.set_field(&self.lowered.dst, lane, 0, self.bits, v)
                .map_err(|e| e.to_string())?;
        }
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use atomcts_reference::ir::Lowering;
    use atomcts_reference::program::{Dialect, Program};
    use atomcts_reference::state::Reg;
    use atomcts_reference::types::ElemType;

    fn plan(asm: &str, lanes: u32, w: u32, active: &[bool]) -> ShufflePlan {
        let mut s = State::new(lanes);
        s.simd_width = w;
        s.active = active.to_vec();
        s.regs.insert(
            "x".into(),
            Reg {
                ty: ElemType::UD,
                elems: (0..u64::from(lanes)).map(|t| 0x100 + t).collect(),
            },
        );
        s.regs.insert(
            "d".into(),
            Reg {
                ty: ElemType::UD,
                elems: vec![0x1_0002; lanes as usize],
            },
        );
        let p = Profile::default();
        let l = match Program::parse(Dialect::Msl, asm)
            .unwrap()
            .lower(&s, &p)
            .unwrap()
        {
            Lowering::Run(l) => l,
            other => panic!("{other:?}"),
        };
        ShufflePlan::new(asm, &l, &s, &p).unwrap()
    }

    #[test]
    fn pads_partial_groups_and_converts_to_ushort() {
        let p = plan("r = simd_shuffle_up(x, d)", 6, 4, &[true; 6]);
        assert_eq!(p.threads.len(), 8);
        assert_eq!(p.function, SimdFunction::ShuffleUp);
        assert!(p.threads[..6].iter().all(|t| t.active && t.arg == 2));
        assert!(p.threads[6..].iter().all(|t| !t.active));
        assert_eq!(p.threads[5].data, 0x105);
        assert_eq!(p.uniform_arg(), Some(2));
    }

    #[test]
    fn finish_writes_active_lanes_only() {
        let mut active = vec![true; 4];
        active[1] = false;
        let p = plan("r = simd_shuffle_xor(x, 1)", 4, 4, &active);
        assert!(!p.threads[1].active);
        let s = {
            let mut s = State::new(4);
            s.simd_width = 4;
            s.active = active.clone();
            s
        };
        let done = p.finish(&s, &[9, 8, 7, 6]).unwrap();
        assert_eq!(done.regs["r"].elems, vec![9, 0, 7, 6]);
    }
}
