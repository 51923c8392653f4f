//! The alternative results a profile allows for one memory instruction (what an implementation
//! may return instead of the reference's pick).

use atomcts_reference::exec::{Resolved, resolve, writeback};
use atomcts_reference::float;
use atomcts_reference::ir::{Instr, Lowered, MemInstr};
use atomcts_reference::semantics::Effect;
use atomcts_reference::semantics::apply;
use atomcts_reference::state::State;
use atomcts_reference::types::{DataType, mask};

/// One allowed alternative result: the state an implementation leaves when one access takes
/// another effect the documents allow (the other signed zero, the other NaN or number, the
/// other denormal comparison, a spurious compare-exchange failure), every other access taking
/// the reference's pick, lanes in program order.
#[derive(Clone, Debug)]
pub struct Alternative {
    /// What differs: `other signed zero`, `other NaN choice`, `other denormal comparison`,
    /// `spurious compare-exchange failure` or `other allowed result`.
    pub kind: &'static str,
    /// The lane whose access took it.
    pub lane: u32,
    /// The final state.
    pub state: State,
}

/// Every alternative result of a memory instruction on `initial`, one access at a time (at most
/// `limit` accesses with alternatives).
pub fn alternatives(lowered: &Lowered, initial: &State, limit: usize) -> Vec<Alternative> {
    let Instr::Mem(m) = &lowered.instr else {
        return vec![];
    };
    let Ok(resolved) = resolve(m, initial) else {
        return vec![];
    };
    let bytes = m.ty.bytes();
    // The effects each access may take with the reference's picks before it.
    let replay = |choice: Option<(usize, usize)>| -> Option<(State, Vec<Vec<Effect>>)> {
        let mut st = initial.clone();
        let mut all = Vec::new();
        let mut open = Vec::new();
        for (j, (a, r)) in m.accesses.iter().zip(&resolved).enumerate() {
            let (ret, success, effects) = match *r {
                Resolved::Dropped => (0, false, vec![]),
                Resolved::Mem(addr) => {
                    let old = st.memory(m.space).read(addr, bytes)?;
                    let effects: Vec<Effect> = apply(m.op, m.ty, &m.env, old, a.src).ok()?.to_vec();
                    let k = match choice {
                        Some((cj, ck)) if cj == j => ck,
                        _ => 0,
                    };
                    let e = *effects.get(k)?;
                    st.memory_mut(m.space).write(addr, bytes, e.new);
                    (e.ret, e.success, effects)
                }
            };
            writeback(a, m.ty, ret, success, &mut st, &mut open).ok()?;
            all.push(effects);
        }
        Some((st, all))
    };
    let Some((_, effects)) = replay(None) else {
        return vec![];
    };
    let mut out = Vec::new();
    for (j, e) in effects
        .iter()
        .enumerate()
        .filter(|(_, e)| e.len() > 1)
        .take(limit)
    {
        for k in 1..e.len() {
            let Some((state, _)) = replay(Some((j, k))) else {
                continue;
            };
            out.push(Alternative {
                kind: classify(m, &e[0], &e[k]),
                lane: m.accesses[j].lane,
                state,
            });
        }
    }
    out
}

fn classify(m: &MemInstr, pick: &Effect, alt: &Effect) -> &'static str {
    if pick.success != alt.success {
        return "spurious compare-exchange failure";
    }
    let (parts, width, fmt) = if m.ty == DataType::F16x2 {
        (2, 16, Some(float::Format::F16))
    } else {
        (1, m.ty.bits(), m.ty.float_format())
    };
    let Some(f) = fmt else {
        return "other allowed result";
    };
    for p in 0..parts {
        let (a, b) = (
            (pick.new >> (p * width)) & mask(width),
            (alt.new >> (p * width)) & mask(width),
        );
        if a == b {
            continue;
        }
        let zero = |v: u64| v & !(1 << (width - 1)) == 0;
        if zero(a) && zero(b) {
            return "other signed zero";
        }
        if float::is_nan(f, a) || float::is_nan(f, b) {
            return "other NaN choice";
        }
        return "other denormal comparison";
    }
    "other allowed result"
}
