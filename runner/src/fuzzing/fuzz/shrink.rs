//! Shrinking a finding (issue 9): candidate simplifications of a generated case (fewer lanes
//! or channels, no guard, fewer state entries, simpler values), tried greedily while the case
//! still fails the same way, within the shrink budget and the campaign's limit (issue 27, H8).

use super::judge::{Limit, Verdict, judge_case};
use crate::fuzzing::draft::GenCase;
use crate::run::results::Options;
use atomcts_adapters::Adapter;
use atomcts_reference::program::Dialect;
use toml::Value;

/// The most candidate cases one shrink runs (each is a reference run plus an adapter run).
pub const SHRINK_BUDGET: u32 = 2_000;

/// Why a shrink stopped before it ran out of candidates that still fail the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShrinkCut {
    /// [`SHRINK_BUDGET`] candidates were run.
    Budget,
    /// The campaign's time limit (or a stop request) came.
    Limit,
    /// An adapter became unavailable (its circuit breaker tripped, or it cannot start).
    Unavailable,
}

impl std::fmt::Display for ShrinkCut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ShrinkCut::Budget => "its budget of candidate runs was spent",
            ShrinkCut::Limit => "the campaign's time limit came",
            ShrinkCut::Unavailable => "an adapter became unavailable",
        })
    }
}

/// How a shrink went, in words: `shrunk in N runs`, or that it was cut short and why.
pub fn shrink_note(runs: u32, cut: Option<ShrinkCut>) -> String {
    match cut {
        None => format!("shrunk in {runs} runs"),
        Some(cut) => {
            format!("shrink cut short after {runs} runs ({cut}): the smallest case found so far")
        }
    }
}

/// A shrunk finding: the smallest case found that fails the same way, its verdict, the
/// candidates run, and why the shrink stopped early, if it did.
pub struct Shrunk {
    /// The smallest case.
    pub case: GenCase,
    /// Its verdict (the results the summary and the finding's file show).
    pub(super) verdict: Verdict,
    /// Candidate cases run.
    pub runs: u32,
    /// Why it stopped early (`None`: no candidate left fails the same way).
    pub cut: Option<ShrinkCut>,
}

/// Shrinks `gc` (whose verdict `v` has the signature `key`) greedily: the first candidate
/// that still fails with the same signature replaces it, until none does, [`SHRINK_BUDGET`]
/// candidates are spent, the campaign's `limit` comes (checked before every adapter call, so
/// it overruns by at most one call), or an adapter becomes unavailable. Returns the smallest
/// case found so far in every case.
pub(super) fn shrink(
    gc: &GenCase,
    v: Verdict,
    key: &str,
    id: &str,
    adapters: &mut [&mut dyn Adapter],
    opts: &Options,
    limit: &Limit,
) -> Shrunk {
    let mut best = Shrunk {
        case: gc.clone(),
        verdict: v,
        runs: 0,
        cut: None,
    };
    'outer: loop {
        for c in candidates(&best.case) {
            if best.runs >= SHRINK_BUDGET {
                best.cut = Some(ShrinkCut::Budget);
                break 'outer;
            }
            if limit.reached() {
                best.cut = Some(ShrinkCut::Limit);
                break 'outer;
            }
            best.runs += 1;
            match judge_case(&c, id, adapters, opts, limit) {
                None => {
                    best.cut = Some(ShrinkCut::Limit);
                    break 'outer;
                }
                Some(Ok(v)) if v.unavailable.is_some() => {
                    best.cut = Some(ShrinkCut::Unavailable);
                    break 'outer;
                }
                Some(Ok(v)) if v.signature.as_deref() == Some(key) => {
                    best.case = c;
                    best.verdict = v;
                    continue 'outer;
                }
                Some(_) => {}
            }
        }
        break;
    }
    best
}

/// The vISA execution size in `asm` (`(16)`, `(M1, 8)`), with the byte range of the number.
fn visa_exec(asm: &str) -> Option<(u32, std::ops::Range<usize>)> {
    let open = asm.find(" (")? + 2;
    let close = open + asm[open..].find(')')?;
    let inner = &asm[open..close];
    let start = open
        + inner
            .rfind(|c: char| !c.is_ascii_digit())
            .map_or(0, |i| i + 1);
    let n = asm[start..close].parse().ok()?;
    Some((n, start..close))
}

/// The per-lane width of the case: SASS/MSL lanes, vISA execution size.
fn width(gc: &GenCase) -> u32 {
    match gc.dialect {
        Dialect::Visa => visa_exec(&gc.asm).map_or(1, |(n, _)| n),
        _ => gc.lanes,
    }
}

/// Applies `f` to every array of exactly `n` elements in `v` (per-lane lists, also inside
/// typed tables such as `{ ud = [...] }`).
fn map_lane_arrays(v: &mut Value, n: usize, f: &dyn Fn(&mut Vec<Value>)) {
    match v {
        Value::Array(a) if a.len() == n => f(a),
        Value::Table(t) => {
            for (_, x) in t.iter_mut() {
                map_lane_arrays(x, n, f);
            }
        }
        _ => {}
    }
}

/// The case with only the lanes (channels) in `keep`, in order.
fn keep_lanes(gc: &GenCase, keep: &[usize]) -> Option<GenCase> {
    let w = width(gc) as usize;
    if keep.is_empty() || keep.len() >= w {
        return None;
    }
    let mut out = gc.clone();
    let pick = |a: &mut Vec<Value>| {
        let kept: Vec<Value> = keep.iter().map(|&i| a[i].clone()).collect();
        *a = kept;
    };
    for (k, v) in out.given.iter_mut() {
        // vISA predicates and masks are bit masks, not lists: left as they are.
        if k != "emask" {
            map_lane_arrays(v, w, &pick);
        }
    }
    match gc.dialect {
        Dialect::Visa => {
            let (_, range) = visa_exec(&gc.asm)?;
            out.asm.replace_range(range, &keep.len().to_string());
        }
        _ => out.lanes = keep.len() as u32,
    }
    Some(out)
}

/// Smaller versions of a value: 0, 1, half, the lowest set bit cleared (each strictly
/// smaller as an unsigned number).
fn smaller(v: u64) -> Vec<u64> {
    let mut c = vec![0, 1, v >> 1, v & v.wrapping_sub(1), v - v.min(1)];
    c.retain(|x| *x < v);
    c.sort_unstable();
    c.dedup();
    c
}

/// Every leaf of `v` replaced by each of its simpler forms, one at a time.
fn simpler_leaves(v: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    match v {
        Value::Integer(i) => {
            out.extend(
                smaller(*i as u64)
                    .into_iter()
                    .map(|x| Value::Integer(x as i64)),
            );
        }
        Value::Boolean(true) => out.push(Value::Boolean(false)),
        Value::String(s) => {
            if let Some((ty, hex)) = s.split_once(':')
                && let Some(x) = hex
                    .strip_prefix("0x")
                    .and_then(|h| u64::from_str_radix(h, 16).ok())
            {
                out.extend(
                    smaller(x)
                        .into_iter()
                        .map(|y| Value::String(format!("{ty}:{y:#x}"))),
                );
            }
        }
        Value::Array(a) => {
            // A list of one repeated value first becomes that value (fewer operands).
            if a.len() > 1 && a.windows(2).all(|w| w[0] == w[1]) {
                out.push(a[0].clone());
            }
            for (i, x) in a.iter().enumerate() {
                for y in simpler_leaves(x) {
                    let mut b = a.clone();
                    b[i] = y;
                    out.push(Value::Array(b));
                }
            }
        }
        Value::Table(t) => {
            for (k, x) in t {
                for y in simpler_leaves(x) {
                    let mut u = t.clone();
                    u.insert(k.clone(), y);
                    out.push(Value::Table(u));
                }
            }
        }
        _ => {}
    }
    out
}

/// Candidate simplifications of a concurrent case: an instruction dropped, then one
/// instruction's iterations and lanes cut to one or halved (the generator's registers are one
/// value for every lane, so any lane count keeps them valid).
fn concurrent_candidates(gc: &GenCase) -> Vec<GenCase> {
    let mut out = Vec::new();
    let n = gc.concurrent.len();
    let with = |k: usize, f: &dyn Fn(&mut crate::fuzzing::draft::GenInstr)| {
        let mut c = gc.clone();
        f(&mut c.concurrent[k]);
        c.asm = join_asm(&c);
        c
    };
    if n > 1 {
        for k in 0..n {
            let mut c = gc.clone();
            c.concurrent.remove(k);
            c.asm = join_asm(&c);
            out.push(c);
        }
    }
    for k in 0..n {
        let (it, lanes) = (gc.concurrent[k].iterations, gc.concurrent[k].lanes);
        for to in [1, it / 2].into_iter().filter(|&t| t >= 1 && t < it) {
            out.push(with(k, &|i| i.iterations = to));
        }
        for to in [1, lanes / 2].into_iter().filter(|&t| t >= 1 && t < lanes) {
            out.push(with(k, &|i| i.lanes = to));
        }
    }
    out
}

/// A concurrent case's `asm`: its instructions' texts joined by ` || ` (as the loader joins
/// them).
fn join_asm(gc: &GenCase) -> String {
    let texts: Vec<&str> = gc.concurrent.iter().map(|i| i.asm.as_str()).collect();
    texts.join(" || ")
}

/// Candidate simplifications of `gc`, biggest steps first.
pub(super) fn candidates(gc: &GenCase) -> Vec<GenCase> {
    if !gc.concurrent.is_empty() {
        return concurrent_candidates(gc);
    }
    let mut out = Vec::new();
    let w = width(gc) as usize;
    // Fewer lanes: one, half, then each single lane dropped.
    if w > 1 {
        for i in 0..w {
            out.extend(keep_lanes(gc, &[i]));
        }
        out.extend(keep_lanes(gc, &(0..w / 2).collect::<Vec<_>>()));
        for i in 0..w {
            let keep: Vec<usize> = (0..w).filter(|&j| j != i).collect();
            out.extend(keep_lanes(gc, &keep));
        }
    }
    // No guard.
    for g in ["@P0 ", "@!P0 ", "(P1) ", "(!P1) "] {
        if let Some(rest) = gc.asm.strip_prefix(g) {
            let mut c = gc.clone();
            c.asm = rest.to_string();
            out.push(c);
        }
    }
    // Fewer state entries: a whole key, then single memory words.
    for k in gc.given.keys() {
        let mut c = gc.clone();
        c.given.remove(k);
        out.push(c);
    }
    for (k, v) in &gc.given {
        if let Value::Table(t) = v {
            for mk in t.keys() {
                let mut c = gc.clone();
                if let Some(Value::Table(u)) = c.given.get_mut(k) {
                    u.remove(mk);
                }
                out.push(c);
            }
        }
    }
    // Simpler values.
    for (k, v) in &gc.given {
        for y in simpler_leaves(v) {
            let mut c = gc.clone();
            c.given.insert(k.clone(), y);
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzzing::generate::gen_case;
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    #[test]
    fn smaller_values_strictly_decrease() {
        assert_eq!(smaller(0), Vec::<u64>::new());
        assert_eq!(smaller(1), vec![0]);
        assert_eq!(smaller(6), vec![0, 1, 3, 4, 5]);
        for v in [2u64, 7, u64::MAX] {
            assert!(smaller(v).iter().all(|x| *x < v));
        }
    }

    #[test]
    fn lanes_shrink_in_every_per_lane_list() {
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let mut seen = 0;
        for _ in 0..300 {
            let gc = gen_case(&mut rng);
            let w = width(&gc) as usize;
            if w < 2 {
                continue;
            }
            let one = keep_lanes(&gc, &[w - 1]).unwrap();
            assert_eq!(width(&one), 1, "{} -> {}", gc.asm, one.asm);
            // The smaller case still loads: every per-lane list shrank with it.
            crate::fuzzing::expect::load_state(&one).unwrap_or_else(|e| panic!("{}: {e}", one.asm));
            seen += 1;
        }
        assert!(seen > 50);
    }
}
