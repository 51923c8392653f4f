//! Observations the documents allow but the reference does not produce must pass too. For every
//! corpus case, under every named profile, this builds such an observation from the reference's
//! run: lanes racing on one address applied in reverse order; NaN results given another NaN
//! payload where the case only asks for "a NaN"; the unspecified upper half of vISA `.16`
//! writebacks flipped; every value a case leaves open (`"any"`, outside races) inverted. The
//! case's expectation and the reference's judge (race checker included) must both accept it.
//! Then every alternative result a knob allows (the other signed zero of a float min/max, the
//! other NaN-or-number choice, the other denormal comparison, a spurious weak compare-exchange
//! failure) is presented under each profile that allows it. This keeps the corpus from
//! over-specifying and the judge from being stricter than the documents.

use atomcts::corpus::build::build_expectation;
use atomcts::corpus::case::load;
use atomcts::corpus::expectation::{Expectation, Target};
use atomcts::corpus::state::build_state;
use atomcts::corpus::value::Pat;
use atomcts::corpus::verify;
use atomcts::fuzzing::plant::alternatives;
use atomcts_adapters::Observation;
use atomcts_reference::check::{Judgement, judge};
use atomcts_reference::exec::execute;
use atomcts_reference::ir::{Instr, SameAddress};
use atomcts_reference::outcome::Outcome;
use atomcts_reference::program::{Dialect, run};
use atomcts_reference::types::mask;
use atomcts_reference::{Profile, State};
use std::collections::BTreeMap;

/// Sets the bits under `m` of a location to `v`.
fn poke(st: &mut State, t: &Target, m: u64, v: u64) {
    match t {
        Target::Reg { name, idx } => {
            if let Some(e) = st
                .regs
                .get_mut(name)
                .and_then(|r| r.elems.get_mut(*idx as usize))
            {
                *e = (*e & !m) | (v & m);
            }
        }
        Target::Mem { space, addr, bytes } => {
            let mem = st.memory_mut(*space);
            if let Some(old) = mem.read(*addr, u64::from(*bytes)) {
                mem.write(*addr, u64::from(*bytes), (old & !m) | (v & m));
            }
        }
        Target::Multiset { .. } => {}
    }
}

fn read(st: &State, t: &Target) -> Option<u64> {
    match t {
        Target::Reg { name, idx } => st.elem(name, *idx),
        Target::Mem { space, addr, bytes } => st.memory(*space).read(*addr, u64::from(*bytes)),
        Target::Multiset { .. } => None,
    }
}

/// Orders of `n` accesses that are neither program order nor its reverse (`n > 2`): the last
/// first, then the others in program order; evens before odds.
fn other_orders(n: usize) -> [(&'static str, Vec<usize>); 2] {
    [
        (
            "rotated order",
            [n - 1].into_iter().chain(0..n - 1).collect(),
        ),
        (
            "evens before odds",
            (0..n).step_by(2).chain((1..n).step_by(2)).collect(),
        ),
    ]
}

#[test]
fn allowed_variations_of_the_reference_pass() {
    let loaded = load(&atomcts::default_corpus());
    assert!(loaded.errors.is_empty());
    let mut tried: BTreeMap<&str, usize> = BTreeMap::new();
    let mut problems = Vec::new();
    for name in Profile::names() {
        let profile = Profile::named(name).unwrap();
        for case in &loaded.cases {
            if case.probe.is_some()
                || case
                    .where_
                    .iter()
                    .any(|(k, o)| profile.get(k).ok() != Some(o.as_str()))
            {
                continue;
            }
            let Ok(state) = build_state(case) else {
                continue;
            };
            let Some((entries, at)) = &case.expect else {
                continue;
            };
            let Ok(Expectation::Values(checks)) = build_expectation(case, &state, entries, at)
            else {
                continue;
            };
            let Ok(r) = run(case.dialect, &case.asm, &state, &profile) else {
                continue;
            };
            let (Outcome::Completed(reference), Some(lowered)) = (&r.outcome, &r.lowered) else {
                continue;
            };
            // 1. Racing lanes in reverse order.
            let mut observed = reference.state.clone();
            if let Instr::Mem(m) = &lowered.instr
                && m.same_address == SameAddress::AnyOrder
                && m.accesses.len() > 1
            {
                let mut rev = lowered.clone();
                if let Instr::Mem(rm) = &mut rev.instr {
                    rm.accesses.reverse();
                }
                if let Ok(Outcome::Completed(c)) = execute(&rev, &state) {
                    observed = c.state;
                    *tried.entry("reversed order").or_default() += 1;
                }
            }
            // 1b. Racing lanes in orders that are neither ascending nor descending (the last lane
            // first, evens before odds): the race checker's linear fast paths cannot find them, so
            // its exhaustive search must (vISA DWORD_ATOMIC Notes, A19: the order of lanes on
            // one address is not fixed).
            if let Instr::Mem(m) = &lowered.instr
                && m.same_address == SameAddress::AnyOrder
                && m.accesses.len() > 2
            {
                for (kind, order) in other_orders(m.accesses.len()) {
                    let mut perm = lowered.clone();
                    if let Instr::Mem(pm) = &mut perm.instr {
                        pm.accesses = order.iter().map(|&i| m.accesses[i].clone()).collect();
                    }
                    let Ok(Outcome::Completed(c)) = execute(&perm, &state) else {
                        continue;
                    };
                    *tried.entry(kind).or_default() += 1;
                    let exp = build_expectation(case, &state, entries, at).unwrap();
                    let findings = verify::check(
                        &exp,
                        &state,
                        &Observation::Completed(c.state.clone()),
                        case.dialect != Dialect::Visa,
                    );
                    let verdict = judge(lowered, &state, reference, &c.state, 1_000_000);
                    if !findings.is_empty() || !matches!(verdict, Ok(Judgement::Pass)) {
                        problems.push(format!(
                            "{} under {name}: {kind}: findings {findings:?}; judge {verdict:?}",
                            case.id
                        ));
                    }
                }
            }
            // 2. Other NaNs where only "a NaN" is asked; flipped unspecified `.16` upper halves.
            for c in &checks {
                if let Pat::Bits {
                    care, nan, width, ..
                } = &c.pat
                {
                    // Only where the profile allows any NaN (A4 `any`); `canonical` and
                    // `propagate` fix the bits.
                    let any_nan =
                        profile.float_nan_result == atomcts_reference::knobs::NanResult::Any;
                    for (lo, f) in nan.iter().filter(|_| any_nan) {
                        let m = f.mask() << lo;
                        let cur = read(&observed, &c.target).unwrap_or(0) >> lo & f.mask();
                        let other = if cur == f.canonical_nan() {
                            f.default_nan() | 1
                        } else {
                            f.canonical_nan()
                        };
                        poke(&mut observed, &c.target, m, other << lo);
                        *tried.entry("other NaN").or_default() += 1;
                    }
                    if case.dialect == Dialect::Visa
                        && *width == 32
                        && *care == 0xffff
                        && nan.is_empty()
                    {
                        let cur = read(&observed, &c.target).unwrap_or(0);
                        poke(&mut observed, &c.target, mask(32) & !0xffff, !cur);
                        *tried.entry("flipped .16 upper half").or_default() += 1;
                    }
                }
            }
            // 3. Every value the case leaves open ("any") inverted: a value the documents leave
            // undefined is whatever an implementation makes it, so the reference must not fix it.
            // Racing lanes are left out: there "any" stands for an order the case does not
            // know, and the race checker rightly holds the values to some order.
            let races = matches!(&lowered.instr, Instr::Mem(m) if m.accesses.iter().enumerate().any(
                |(i, a)| m.accesses[..i].iter().any(|b| a.addr >> 3 == b.addr >> 3)
            ));
            for c in checks.iter().filter(|_| !races) {
                if matches!(c.pat, Pat::Any)
                    && let Some(cur) = read(&observed, &c.target)
                {
                    let m = match &c.target {
                        Target::Reg { name, .. } => observed.regs[name].ty.mask(),
                        Target::Mem { bytes, .. } => mask(8 * *bytes),
                        Target::Multiset { .. } => 0,
                    };
                    poke(&mut observed, &c.target, m, !cur);
                    *tried.entry("inverted \"any\"").or_default() += 1;
                }
            }
            let lanes_are_lanes = case.dialect != Dialect::Visa;
            let exp = build_expectation(case, &state, entries, at).unwrap();
            let findings = verify::check(
                &exp,
                &state,
                &Observation::Completed(observed.clone()),
                lanes_are_lanes,
            );
            let verdict = judge(lowered, &state, reference, &observed, 1_000_000);
            if !findings.is_empty() || !matches!(verdict, Ok(Judgement::Pass)) {
                problems.push(format!(
                    "{} under {name}: findings {findings:?}; judge {verdict:?}",
                    case.id
                ));
            }
        }
    }
    // 3. Every alternative result a knob allows, under the profiles that allow it: presented
    // on its own (lanes in program order, one access taking the alternative).
    for name in Profile::names() {
        let profile = Profile::named(name).unwrap();
        for case in &loaded.cases {
            if case
                .where_
                .iter()
                .any(|(k, o)| profile.get(k).ok() != Some(o.as_str()))
            {
                continue;
            }
            // A probe's expectation is the one of the option the profile picks.
            let picked = match &case.probe {
                Some(knob) => case
                    .expect_if
                    .iter()
                    .find(|(o, _, _)| Some(o.as_str()) == profile.get(knob).ok())
                    .map(|(_, e, p)| (e, p)),
                None => case.expect.as_ref().map(|(e, p)| (e, p)),
            };
            let (Ok(state), Some((entries, at))) = (build_state(case), picked) else {
                continue;
            };
            let Ok(exp) = build_expectation(case, &state, entries, at) else {
                continue;
            };
            let Ok(r) = run(case.dialect, &case.asm, &state, &profile) else {
                continue;
            };
            let (Outcome::Completed(reference), Some(lowered)) = (&r.outcome, &r.lowered) else {
                continue;
            };
            for alt in alternatives(lowered, &state, 4) {
                *tried.entry(alt.kind).or_default() += 1;
                let findings = verify::check(
                    &exp,
                    &state,
                    &Observation::Completed(alt.state.clone()),
                    case.dialect != Dialect::Visa,
                );
                let verdict = judge(lowered, &state, reference, &alt.state, 1_000_000);
                if !findings.is_empty() || !matches!(verdict, Ok(Judgement::Pass)) {
                    problems.push(format!(
                        "{} under {name}: {} on lane {}: findings {findings:?}; judge {verdict:?}",
                        case.id, alt.kind, alt.lane
                    ));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
    // The test must have exercised every kind of variation.
    for kind in [
        "reversed order",
        "rotated order",
        "evens before odds",
        "other NaN",
        "flipped .16 upper half",
        "inverted \"any\"",
        "other signed zero",
        "other NaN choice",
        "other denormal comparison",
        "spurious compare-exchange failure",
    ] {
        assert!(
            tried.get(kind).copied().unwrap_or(0) > 3,
            "{kind}: {tried:?}"
        );
    }
}

/// PROTOCOL.md `invalid`: an implementation may reject without saying why (`rejected`) or
/// without saying where (no `column`). Every corpus rejection must accept both, and the
/// reference's own rejection, column included.
#[test]
fn rejections_without_a_reason_or_a_column_pass() {
    let loaded = load(&atomcts::default_corpus());
    assert!(loaded.errors.is_empty());
    let (mut tried, mut with_column) = (0, 0);
    let mut problems = Vec::new();
    for case in &loaded.cases {
        let (Ok(state), Some((entries, at))) = (build_state(case), &case.expect) else {
            continue;
        };
        let Ok(ref exp @ Expectation::Invalid { ref reason, column }) =
            build_expectation(case, &state, entries, at)
        else {
            continue;
        };
        tried += 1;
        with_column += usize::from(column.is_some());
        let reference = run(case.dialect, &case.asm, &state, &Profile::default())
            .map(|r| Observation::from_outcome(&r.outcome));
        let mut variations = vec![
            (
                "no reason",
                Observation::Invalid {
                    reason: "rejected".into(),
                    column,
                },
            ),
            (
                "no column",
                Observation::Invalid {
                    reason: reason.clone(),
                    column: None,
                },
            ),
        ];
        // (A case stating bytes the decoder rejects has a text that runs: the rejection is the
        // decoder's, checked by the runner.)
        if case.encoding.is_none() {
            variations.extend(reference.ok().map(|o| ("the reference's", o)));
        }
        for (what, o) in variations {
            let findings = verify::check(exp, &state, &o, case.dialect != Dialect::Visa);
            if !findings.is_empty() {
                problems.push(format!("{}: {what}: {findings:?}", case.id));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        tried > 100 && with_column > 3,
        "{tried} rejections, {with_column} with a column"
    );
}
