//! Runs cases against an adapter and classifies each: pass, fail, undecided, error, skip or
//! not applicable; cross-checks every observation with the reference model (race checker
//! included).
//!
//! This file streams cases through an adapter (one by one, repeated, or a pipelined window at a
//! time); `prepare.rs` decides everything before the adapter runs a case, `finish.rs` judges
//! its answer, `repro.rs` labels results and writes reproduce lines, `results.rs` holds the
//! result records, `concurrent.rs` runs concurrent cases, `parallel.rs` spreads cases over
//! threads (`--jobs`), `interrupt.rs` takes SIGINT and SIGTERM.
//!
//! The run layer: imports only from `corpus` below it (`runner/tests/layers.rs`).

pub mod concurrent;
pub mod finish;
pub mod interrupt;
pub mod parallel;
pub mod prepare;
pub mod repro;
pub mod results;

use crate::corpus::case::{Case, Item};
use crate::run::finish::finish;
use crate::run::prepare::{Step, prepare};
use crate::run::repro::complete;
use crate::run::results::{CaseResult, Options, Runs, Status};
use atomcts_adapters::Adapter;

/// Runs a case `times` times (at least once) and reports the first failing run (else the
/// last) with how many runs failed. Stops early on an error, a skip or a not-applicable
/// answer, which repeating does not change.
pub fn run_case_repeated<'c>(
    case: impl Into<Item<'c>>,
    adapter: &mut dyn Adapter,
    opts: &Options,
    times: u32,
) -> CaseResult {
    let case: Item<'c> = case.into();
    let mut first_failure: Option<CaseResult> = None;
    let mut last = None;
    let mut failed = 0;
    let mut made = 0;
    for i in 0..times.max(1) {
        if i > 0 && stopped() {
            break;
        }
        let r = run_case(case, adapter, opts);
        made += 1;
        if r.status.is_failure() {
            failed += 1;
            if first_failure.is_none() {
                first_failure = Some(r.clone());
            }
        } else if !matches!(r.status, Status::Pass) {
            last = Some(r);
            break;
        }
        last = Some(r);
    }
    let mut out = match (first_failure, last) {
        (_, Some(l))
            if matches!(
                l.status,
                Status::Error | Status::Skip | Status::NotApplicable
            ) =>
        {
            l
        }
        (Some(f), _) => f,
        (None, Some(l)) => l,
        (None, None) => run_case(case, adapter, opts),
    };
    if times > 1 {
        out.runs = Some(Runs { runs: made, failed });
    }
    out
}

/// Runs one case (a loaded [`Case`], or a generated case's [`Item`]).
pub fn run_case<'c>(
    case: impl Into<Item<'c>>,
    adapter: &mut dyn Adapter,
    opts: &Options,
) -> CaseResult {
    let item: Item<'c> = case.into();
    let mut r = run_case_lean(item, adapter, opts);
    complete(&mut r, item.case(), opts);
    r
}

/// [`run_case`] without [`complete`].
pub(crate) fn run_case_lean(
    item: Item<'_>,
    adapter: &mut dyn Adapter,
    opts: &Options,
) -> CaseResult {
    match prepare(item, &*adapter, opts) {
        Step::Done(r) => *r,
        Step::Concurrent(case, r) => crate::run::concurrent::run_case(case, adapter, opts, *r),
        Step::Ready(p) => {
            let observation = adapter.run(&p.request(opts));
            finish(p, observation, &*adapter, opts)
        }
    }
}

/// Whether a stop was requested (SIGINT or SIGTERM, [`crate::run::interrupt`]): a run takes no
/// further case, and a result that comes after the request is not given (the stop may have
/// cut it short), so those cases count as not run.
pub fn stopped() -> bool {
    atomcts_adapters::interrupt::requested().is_some()
}

/// Runs `cases` in order, giving each result to `out` as soon as it and every earlier one
/// are known; through a pipelined adapter ([`atomcts_adapters::Pipelined::window`] > 1), up to a window of them
/// are in flight at once. Stops, giving no further result, when [`stopped`].
pub fn run_cases(
    cases: &[Item<'_>],
    adapter: &mut dyn Adapter,
    opts: &Options,
    out: &mut dyn FnMut(CaseResult),
) {
    run_cases_lean(cases, adapter, opts, &mut |c, mut r| {
        complete(&mut r, c, opts);
        out(r)
    });
}

/// [`run_cases`], giving each result with its case and without the fields [`complete`] fills
/// in (issue 9: a run that only counts a result does not make them).
pub fn run_cases_lean(
    cases: &[Item<'_>],
    adapter: &mut dyn Adapter,
    opts: &Options,
    out: &mut dyn FnMut(&Case, CaseResult),
) {
    run_cases_until(cases, adapter, opts, &|| false, out);
}

/// [`run_cases_lean`] that stops once `stop()` holds (a time limit, an interruption): it is
/// asked before every call that can wait on the adapter (each send, each answer), so a stop
/// costs at most the one call under way (its adapter deadline). The cases after the last
/// result given to `out` are left unrun (those still in flight are abandoned: the adapter is
/// not to be used again for them); the caller accounts for them.
pub fn run_cases_until(
    cases: &[Item<'_>],
    adapter: &mut dyn Adapter,
    opts: &Options,
    stop: &dyn Fn() -> bool,
    out: &mut dyn FnMut(&Case, CaseResult),
) {
    let window = adapter.window().max(1);
    if window == 1 {
        for &c in cases {
            if stop() || stopped() {
                return;
            }
            let r = run_case_lean(c, adapter, opts);
            if stopped() {
                return;
            }
            out(c.case(), r);
        }
        return;
    }
    // Streamed (issue 9): requests are sent as cases are prepared and answers taken in order,
    // the window topped up after every answer, so it stays full across all of `cases`. A
    // concurrent case runs alone: nothing after it is sent until it has run.
    let mut queue = std::collections::VecDeque::new();
    let (mut rest, mut in_flight, mut held) = (cases.iter(), 0, false);
    loop {
        if stopped() {
            // What is in flight is dropped with the adapter's process, which the caller stops.
            return;
        }
        while !held && in_flight < adapter.window().max(1) && !stop() {
            let Some(&c) = rest.next() else { break };
            let step = prepare(c, &*adapter, opts);
            let early = match &step {
                Step::Ready(p) => adapter.send(&p.request(opts)).err().map(Err),
                Step::Concurrent(..) => {
                    held = true;
                    None
                }
                Step::Done(_) => None,
            };
            in_flight += usize::from(matches!(step, Step::Ready(_)) && early.is_none());
            queue.push_back((c.case(), step, early));
        }
        if stop() {
            return;
        }
        let Some((c, step, early)) = queue.pop_front() else {
            break;
        };
        let r = match step {
            Step::Done(r) => *r,
            Step::Concurrent(case, r) => {
                held = false;
                crate::run::concurrent::run_case(case, adapter, opts, *r)
            }
            Step::Ready(p) => {
                let answer = early.unwrap_or_else(|| {
                    in_flight -= 1;
                    adapter.receive(&p.request(opts))
                });
                finish(p, answer, &*adapter, opts)
            }
        };
        if stopped() {
            return;
        }
        out(c, r);
    }
}

/// FNV-1a, 64 bits: a stable hash for `--partition hash:K/N` (stable across releases and
/// platforms, unlike `std::hash`).
pub fn stable_hash(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Whether case `id` belongs to shard `k` (1-based) of `n`.
pub fn in_partition(id: &str, k: u64, n: u64) -> bool {
    stable_hash(id) % n == k - 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::repro::op_label;
    use atomcts_reference::program::Dialect;

    #[test]
    fn op_labels() {
        assert_eq!(
            op_label(Dialect::Sass, "@!P1 ATOM.E.CAS.64 R0, [R2+0x8], R4, R6"),
            "ATOM.CAS"
        );
        assert_eq!(
            op_label(
                Dialect::Visa,
                "(!P1) DWORD_ATOMIC.cmpxchg (M1, 8) T255 V10 V11 V12 V13"
            ),
            "DWORD_ATOMIC.cmpxchg"
        );
        assert_eq!(
            op_label(Dialect::Visa, "DWORD_ATOMIC.INC.16 (16) T0 V10 V0 V0 V13"),
            "DWORD_ATOMIC.inc.16"
        );
        assert_eq!(
            op_label(Dialect::Msl, "r = simd_shuffle_up(x, 2)"),
            "simd_shuffle_up"
        );
    }

    #[test]
    fn illegal_forms_are_labelled_by_reason_not_by_their_text() {
        use crate::run::repro::case_label;
        let text = r#"
dialect = "msl"
cite = "x"
[[case]]
name = "garbage"
asm = "%% atomic !!"
expect = { invalid = "syntax" }
[[case]]
name = "nand"
asm = "r = atomic_fetch_nand_explicit(&buf[0], v, memory_order_relaxed)"
expect = { invalid = "unknown_operation" }
[[case]]
name = "valid"
asm = "r = atomic_fetch_add_explicit(&buf[0], v, memory_order_relaxed)"
given = { v = "int:1", buf = { type = "atomic_int", data = [0] } }
expect = { r = "int:0" }
"#;
        let loaded = crate::corpus::case::parse_file(
            std::path::Path::new("spec-cases"),
            std::path::Path::new("spec-cases/msl/x.toml"),
            text.into(),
        );
        assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
        let labels: Vec<String> = loaded.cases.iter().map(|c| case_label(c.into())).collect();
        assert_eq!(
            labels,
            [
                "illegal form: syntax",
                "illegal form: unknown_operation",
                "atomic_fetch_add_explicit"
            ]
        );
    }

    #[test]
    fn partitions_cover_every_id_exactly_once() {
        for i in 0..200 {
            let id = format!("sass/atom/x::case_{i}");
            let shards: Vec<u64> = (1..=4).filter(|k| in_partition(&id, *k, 4)).collect();
            assert_eq!(shards.len(), 1, "{id}");
        }
        assert_eq!(stable_hash(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(stable_hash("a"), 0xaf63_dc4c_8601_ec8c);
    }
}
