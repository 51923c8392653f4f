//! Random interleavings of a concurrent case, as hardware may run it (FORMAT.md, "Concurrent
//! cases"): a seeded scheduler picks a thread (one access of one instruction) at each step,
//! each thread's iterations in its own order. A thread's step is one iteration; a
//! compare-and-swap loop's step is one attempt, which fails (and learns the value it read)
//! whenever another thread changed the value since the lane last read it, or, for a weak
//! compare-exchange, now and then spuriously. Where the documents allow several effects (a
//! weak compare-exchange that may fail, a NaN's payload, a signed zero) the scheduler picks one
//! at random. The observation reports every return the reference keeps, every success flag and
//! attempt count, the registers that hold each thread's last iteration and the final memory:
//! what an adapter that reports everything answers. The judge must pass every one
//! (`tests/planted.rs`), and fail it with one return or the final value corrupted.

use atomcts_reference::concurrent::{Part, Serial, finish_loop_lane};
use atomcts_reference::exec::{Resolved, resolve};
use atomcts_reference::ir::{Dest, Instr, Lowered, MemInstr, RegField, Upper};
use atomcts_reference::memory::Memory;
use atomcts_reference::race::OpStep;
use atomcts_reference::race::Step;
use atomcts_reference::state::State;
use atomcts_reference::types::{Space, mask, sext};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

/// One in this many attempts of a weak compare-and-swap loop that would succeed fails
/// spuriously instead (MSL `atomic_compare_exchange_weak_explicit` may).
pub const SPURIOUS: u64 = 4;

/// One thread of a random interleaving: access `i` of instruction `k` at `addr`, in iteration
/// `it`; a compare-and-swap loop's lane compares with `compare` and has tried `tries` times.
struct T {
    k: usize,
    i: usize,
    addr: u64,
    it: usize,
    compare: u64,
    tries: u32,
}

/// How finely a random interleaving mixes the instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grain {
    /// Any thread's next step at each step (a thread-level random schedule).
    Thread,
    /// One iteration of every lane of one instruction at each step, the lanes ascending or
    /// descending (a SIMD-group's atomic instruction serialized by the memory, as GPUs do),
    /// the instructions in a random order.
    Instruction,
}

/// A seeded random interleaving of the whole case at thread grain ([`interleaving`]).
pub fn random_interleaving(
    parts: &[Part<'_>],
    lowered: &[Lowered],
    reference: &Serial,
    seed: u64,
) -> Option<Serial> {
    interleaving(parts, lowered, reference, seed, Grain::Thread)
}

/// A seeded random interleaving of the whole case (every address at once) at `grain`: each thread's
/// returns, success flags and attempts, its registers after its last iteration, and the final
/// memory, in the shape of the reference's [`Serial`] (whose kept returns say which are
/// reported). `None` where an instruction does not lower to memory accesses, an address is
/// outside memory, or the model cannot run a step.
pub fn interleaving(
    parts: &[Part<'_>],
    lowered: &[Lowered],
    reference: &Serial,
    seed: u64,
    grain: Grain,
) -> Option<Serial> {
    let mems: Vec<&MemInstr> = lowered
        .iter()
        .map(|l| match &l.instr {
            Instr::Mem(m) => Some(m),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let mut out = reference.clone();
    let mut memory = (parts[0].state.global.clone(), parts[0].state.shared.clone());
    let mut threads: Vec<T> = Vec::new();
    for (k, m) in mems.iter().enumerate() {
        let resolved = resolve(m, parts[k].state).ok()?;
        for (i, a) in m.accesses.iter().enumerate() {
            let Some(Resolved::Mem(addr)) = resolved.get(i) else {
                return None;
            };
            threads.push(T {
                k,
                i,
                addr: *addr,
                it: 0,
                compare: a.src[0],
                tries: 0,
            });
        }
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut at = |t: &mut T, rng: &mut ChaCha8Rng| -> Option<bool> {
        step(t, &mems, parts, &mut memory, &mut out, rng)
    };
    match grain {
        Grain::Thread => {
            let mut live: Vec<usize> = (0..threads.len()).collect();
            while !live.is_empty() {
                let pick = (rng.next_u64() % live.len() as u64) as usize;
                if at(&mut threads[live[pick]], &mut rng)? {
                    live.swap_remove(pick);
                }
            }
        }
        Grain::Instruction => {
            let mut live: Vec<usize> = (0..mems.len()).collect();
            while !live.is_empty() {
                let pick = (rng.next_u64() % live.len() as u64) as usize;
                let k = live[pick];
                let mut lanes: Vec<usize> =
                    (0..threads.len()).filter(|&t| threads[t].k == k).collect();
                if rng.next_u64() % 2 == 1 {
                    lanes.reverse();
                }
                let mut done = true;
                for t in lanes {
                    let t = &mut threads[t];
                    if t.it < parts[k].iterations as usize {
                        done &= at(t, &mut rng)?;
                    }
                }
                if done {
                    live.swap_remove(pick);
                }
            }
        }
    }
    for st in &mut out.states {
        st.global = memory.0.clone();
        st.shared = memory.1.clone();
    }
    Some(out)
}

/// One step of thread `t` (one iteration, or one attempt of a compare-and-swap loop) on
/// `memory`, recorded in `out`: whether the thread has finished.
fn step(
    t: &mut T,
    mems: &[&MemInstr],
    parts: &[Part<'_>],
    memory: &mut (Memory, Memory),
    out: &mut Serial,
    rng: &mut ChaCha8Rng,
) -> Option<bool> {
    let (m, a) = (mems[t.k], &mems[t.k].accesses[t.i]);
    let last = t.it + 1 == parts[t.k].iterations as usize;
    let mem = if m.space == Space::Shared {
        &mut memory.1
    } else {
        &mut memory.0
    };
    let value = mem.read(t.addr, m.ty.bytes())?;
    let o = &mut out.returned[t.k][t.it][t.i];
    let (ret, success) = match parts[t.k].cas_loop {
        Some(lp) => {
            t.tries += 1;
            let spurious = m.env.weak && rng.next_u64().is_multiple_of(SPURIOUS);
            if value != t.compare || spurious {
                t.compare = value;
                return Some(false);
            }
            let stored = lp.new_value(m.ty, m.env, value).ok()?;
            mem.write(t.addr, m.ty.bytes(), stored);
            out.attempts[t.k][t.it][t.i] = t.tries;
            t.tries = 0;
            t.compare = stored;
            (value, true)
        }
        None => {
            let step = OpStep {
                op: m.op,
                ty: m.ty,
                env: m.env,
                src: a.src,
            };
            let effects = step.step(value).ok()?;
            let e = *effects.get((rng.next_u64() % effects.len().max(1) as u64) as usize)?;
            mem.write(t.addr, m.ty.bytes(), e.new);
            (e.ret, e.success)
        }
    };
    if o.ret.is_some() {
        o.ret = Some(ret & o.kept);
    }
    if o.success.is_some() {
        o.success = Some(success);
    }
    if last {
        let st = &mut out.states[t.k];
        match &a.dst {
            Dest::None => {}
            Dest::Fields(fields) => write_return(st, fields, ret),
            Dest::CasWeak { ok, .. } => {
                // `expected` ends at the value read (on success it equalled it); `ok` says
                // whether it swapped.
                finish_loop_lane(st, &a.dst, ret).ok()?;
                if let Some(f) = ok {
                    st.set_field(&f.name, f.idx, f.lo, f.bits, u64::from(success))
                        .ok()?;
                }
            }
        }
    }
    t.it += 1;
    Some(t.it == parts[t.k].iterations as usize)
}

/// Element `idx` of register `name`, to change it.
pub(crate) fn elem_mut<'a>(st: &'a mut State, name: &str, idx: u32) -> Option<&'a mut u64> {
    st.regs
        .get_mut(name)
        .and_then(|r| r.elems.get_mut(idx as usize))
}

/// Writes `planted` into a lane's destination fields, keeping the bits above each field as the
/// documents want them.
pub(crate) fn write_return(st: &mut State, fields: &[RegField], planted: u64) {
    let mut shift = 0;
    for f in fields {
        let part = (planted >> shift) & mask(f.bits);
        shift += f.bits;
        let Some(e) = elem_mut(st, &f.name, f.idx) else {
            continue;
        };
        *e = (*e & !(mask(f.bits) << f.lo)) | (part << f.lo);
        let top = f.lo + f.bits;
        if let Upper::Sign { width } = f.upper
            && width > top
        {
            let ext = (sext(part, f.bits) >> f.bits.min(63)) as u64 & mask(width - top);
            *e = (*e & !(mask(width - top) << top)) | (ext << top);
        }
    }
}
