//! Checks an observation against a case's expectation: named locations match their patterns,
//! every other location is unchanged.

use crate::corpus::expectation::{Check, Expectation, Target};
use crate::corpus::value::{Human, Pat, hex};
use atomcts_adapters::Observation;
use atomcts_reference::outcome::FaultClass;
use atomcts_reference::state::State;
use atomcts_reference::types::Space;
use std::collections::BTreeSet;

/// One failed check, for people: the location, what was expected, what was observed.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Finding {
    /// The location (`R0[lane 3]`, `global[0x1000]`, `buf[1]`...).
    pub location: String,
    /// The expectation (hex with the human value).
    pub expected: String,
    /// The observation (hex with the human value).
    pub observed: String,
    /// A note.
    pub note: String,
}

fn describe(v: u64, width: u32) -> String {
    Human::Int.show(v, width)
}

fn describe_pat(p: &Pat) -> String {
    match p {
        Pat::Any => "any".into(),
        Pat::OneOf(ps) => format!(
            "one of [{}]",
            ps.iter().map(describe_pat).collect::<Vec<_>>().join(", ")
        ),
        Pat::Bits {
            value,
            care,
            nan,
            width,
            human,
        } => {
            let full = atomcts_reference::types::mask(*width);
            let mut s = if *care == full {
                human.show(*value, *width)
            } else if *care == 0 {
                String::new()
            } else {
                format!("{} under mask {}", hex(*value, *width), hex(*care, *width))
            };
            for (lo, f) in nan {
                if !s.is_empty() {
                    s.push_str(", ");
                }
                s.push_str(&format!("any {} NaN at bit {lo}", f.name()));
            }
            s
        }
    }
}

/// A float rendering beside hex, when the pattern says the location is float-typed.
pub fn human(v: u64, fmt: Option<atomcts_reference::float::Format>) -> String {
    match fmt {
        Some(f) => format!(
            "{} ({})",
            hex(v, f.bits()),
            crate::corpus::float_display::display(f, v)
        ),
        None => describe(v, 32),
    }
}

fn label(t: &Target, lanes_are_lanes: bool) -> String {
    match t {
        Target::Reg { name, idx } if lanes_are_lanes => format!("{name}[lane {idx}]"),
        Target::Reg { name, idx } => format!("{name}[{idx}]"),
        Target::Multiset { name, .. } => format!("{name}[all lanes]"),
        Target::Mem { space, addr, .. } => format!("{}[{addr:#x}]", space.name()),
    }
}

fn read_target(st: &State, t: &Target) -> Option<u64> {
    match t {
        Target::Reg { name, idx } => Some(st.elem(name, *idx).unwrap_or(0)),
        Target::Mem { space, addr, bytes } => st.memory(*space).read(*addr, u64::from(*bytes)),
        Target::Multiset { .. } => None,
    }
}

/// Whether `values` can be matched one-to-one with `pats` (bipartite matching).
fn multiset_matches(pats: &[Pat], values: &[u64]) -> bool {
    if pats.len() != values.len() {
        return false;
    }
    let n = pats.len();
    let mut owner: Vec<Option<usize>> = vec![None; n];
    fn augment(
        p: usize,
        pats: &[Pat],
        values: &[u64],
        seen: &mut [bool],
        owner: &mut [Option<usize>],
    ) -> bool {
        for v in 0..values.len() {
            if !seen[v] && pats[p].admits(values[v]) {
                seen[v] = true;
                if owner[v].is_none_or(|o| augment(o, pats, values, seen, owner)) {
                    owner[v] = Some(p);
                    return true;
                }
            }
        }
        false
    }
    (0..n).all(|p| augment(p, pats, values, &mut vec![false; n], &mut owner))
}

/// Checks `obs` against `exp`; an empty result means it passes.
pub fn check(
    exp: &Expectation,
    initial: &State,
    obs: &Observation,
    lanes_are_lanes: bool,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let finding = |location: String, expected: String, observed: String, note: &str| Finding {
        location,
        expected,
        observed,
        note: note.to_string(),
    };
    match (exp, obs) {
        (Expectation::Unspecified, _) => {}
        (Expectation::Fault { .. }, Observation::Fault(got)) if got.is_empty() => {
            // PROTOCOL.md: an empty lane list means the lanes (and so the class) are unknown.
            // A fault expectation names a class, which then cannot be confirmed: a failure
            // with a plain statement of why, never a pass.
            out.push(finding(
                "fault".into(),
                describe_fault_expectation(exp),
                "fault with no lanes (class and lanes unknown)".into(),
                "the implementation reported a fault without lanes, so its class cannot be checked",
            ));
        }
        (Expectation::Fault { class, lanes }, Observation::Fault(got)) => {
            let bound = fault_lane_bound(initial, lanes_are_lanes);
            let bad: Vec<String> = got
                .iter()
                .filter(|(l, _)| *l >= bound)
                .map(|(l, c)| format!("lane {l}: {c}"))
                .collect();
            if !bad.is_empty() {
                out.push(finding(
                    "fault_lanes".into(),
                    format!("lanes below {bound}"),
                    bad.join(", "),
                    "fault reported on a lane the case does not have",
                ));
            }
            if !got.iter().any(|(_, c)| c == class) {
                let seen: Vec<_> = got.iter().map(|(l, c)| format!("lane {l}: {c}")).collect();
                out.push(finding(
                    "fault".into(),
                    class.name().into(),
                    seen.join(", "),
                    "wrong fault class",
                ));
            }
            if let Some(want) = lanes {
                let mut g: Vec<u32> = got.iter().map(|(l, _)| *l).collect();
                g.sort();
                g.dedup();
                let mut w = want.clone();
                w.sort();
                if g != w {
                    out.push(finding(
                        "fault_lanes".into(),
                        format!("{w:?}"),
                        format!("{g:?}"),
                        "wrong faulting lanes",
                    ));
                }
            }
        }
        (
            Expectation::Invalid { reason, column },
            Observation::Invalid {
                reason: got,
                column: got_column,
            },
        ) => {
            if got != reason && got != "rejected" {
                out.push(finding(
                    "invalid".into(),
                    reason.clone(),
                    got.clone(),
                    "wrong rejection reason",
                ));
            }
            // A stated column is compared where the implementation locates its rejections
            // (PROTOCOL.md: `column` is optional, like a fault's lanes).
            if let (Some(want), Some(got)) = (column, got_column)
                && want != got
            {
                out.push(finding(
                    "invalid column".into(),
                    format!("column {want}"),
                    format!("column {got}"),
                    "the rejection points elsewhere in the text",
                ));
            }
        }
        (Expectation::Values(checks), Observation::Completed(st)) => {
            values(checks, initial, st, lanes_are_lanes, &mut out)
        }
        // An implementation that executes nothing (an assembler) accepted the instruction: on
        // a case the documents call valid, acceptance is all it can show (its values, fault or
        // other run-time outcome are not applicable: `crate::run::finish` says so); a case
        // that expects a rejection fails below.
        (
            Expectation::Values(_) | Expectation::Fault { .. },
            Observation::Accepted { differs, lowered },
        ) => {
            if let Some(how) = differs {
                out.push(finding(
                    "lowered".into(),
                    "the instruction's own message".into(),
                    lowered.clone(),
                    &format!("accepted as another instruction: {how}"),
                ));
            }
        }
        (e, o) => {
            let detail = match o {
                Observation::Completed(_) => "completed".to_string(),
                Observation::Fault(f) => format!(
                    "fault ({})",
                    f.iter()
                        .map(|(l, c)| format!("lane {l}: {c}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Observation::Invalid { reason, .. } => format!("invalid ({reason})"),
                Observation::Unspecified(w) => format!("unspecified ({w})"),
                Observation::Accepted { lowered, .. } => format!("accepted ({lowered})"),
            };
            let want = match e {
                Expectation::Fault { class, .. } => format!("fault ({class})"),
                Expectation::Invalid { reason, .. } => format!("invalid ({reason})"),
                other => other.kind().to_string(),
            };
            out.push(finding(
                "outcome".into(),
                want,
                detail,
                "wrong kind of outcome",
            ));
        }
    }
    out
}

/// A rejection with no column where the case states one, from an implementation that locates
/// its rejections ([`atomcts_adapters::Adapter::locates_rejections`]; `check` alone passes it,
/// as PROTOCOL.md lets an implementation leave the column out).
pub fn unlocated_rejection(exp: &Expectation, obs: &Observation) -> Option<Finding> {
    match (exp, obs) {
        (
            Expectation::Invalid {
                column: Some(want), ..
            },
            Observation::Invalid { column: None, .. },
        ) => Some(Finding {
            location: "invalid column".into(),
            expected: format!("column {want}"),
            observed: "no column".into(),
            note: "this implementation locates its rejections, but not this one".into(),
        }),
        _ => None,
    }
}

/// The faulting lanes and their classes against the reference's, which knows them whether or
/// not the case names `fault_lanes`: a fault on other lanes, on fewer lanes, or of another class
/// on a lane fails. An empty list (PROTOCOL.md: the lanes are unknown) is not compared here; it
/// already fails a fault expectation with its own finding, never passes.
pub fn fault_against_reference(
    reference: &[(u32, FaultClass)],
    got: &[(u32, FaultClass)],
) -> Option<Finding> {
    if got.is_empty() {
        return None;
    }
    let set = |v: &[(u32, FaultClass)]| v.iter().copied().collect::<BTreeSet<_>>();
    let (want, seen) = (set(reference), set(got));
    if want == seen {
        return None;
    }
    let show = |s: &BTreeSet<(u32, FaultClass)>| {
        s.iter()
            .map(|(l, c)| format!("lane {l}: {c}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    Some(Finding {
        location: "fault_lanes".into(),
        expected: show(&want),
        observed: show(&seen),
        note: "reference model: other faulting lanes or classes".into(),
    })
}

/// What an instruction cannot change in a completed state, compared with the reference's final
/// state (issue 27): every register's type, and the lanes, active lanes, windows, buffers, SLM
/// size, execution mask and SIMD-group width. An implementation that reports them changed has
/// not run the instruction on this state, whatever its values say.
pub fn state_shape(reference: &State, observed: &State) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut differs = |location: String, expected: String, observed: String| {
        out.push(Finding {
            location,
            expected,
            observed,
            note: "the instruction cannot change this".into(),
        })
    };
    for (name, r) in &reference.regs {
        if let Some(o) = observed.regs.get(name)
            && o.ty != r.ty
        {
            differs(
                format!("{name} (type)"),
                format!("{:?}", r.ty),
                format!("{:?}", o.ty),
            );
        }
    }
    macro_rules! same {
        ($($field:ident),*) => {$(
            if reference.$field != observed.$field {
                differs(
                    format!("state.{}", stringify!($field)),
                    format!("{:?}", reference.$field),
                    format!("{:?}", observed.$field),
                );
            }
        )*};
    }
    same!(
        lanes,
        active,
        slm_size,
        shared_window,
        local_window,
        buffers,
        emask,
        simd_width
    );
    out
}

/// The lanes a fault may name: the case's lanes (SASS, MSL), or the 32 channels of the widest
/// vISA execution size.
pub fn fault_lane_bound(initial: &State, lanes_are_lanes: bool) -> u32 {
    if lanes_are_lanes { initial.lanes } else { 32 }
}

fn describe_fault_expectation(e: &Expectation) -> String {
    match e {
        Expectation::Fault {
            class,
            lanes: Some(l),
        } => format!("{class} on lanes {l:?}"),
        Expectation::Fault { class, .. } => class.name().into(),
        other => other.kind().into(),
    }
}

fn values(
    checks: &[Check],
    initial: &State,
    st: &State,
    lanes_are_lanes: bool,
    out: &mut Vec<Finding>,
) {
    // Named register elements, borrowed from the checks (a 64-bit multiset's high register
    // is the only name made here): no copy of a name per element checked (issue 9).
    let mut regs: BTreeSet<(std::borrow::Cow<'_, str>, u32)> = BTreeSet::new();
    let mut bytes: BTreeSet<(Space, u64)> = BTreeSet::new();
    for c in checks {
        match &c.target {
            Target::Reg { name, idx } => {
                regs.insert((name.as_str().into(), *idx));
            }
            Target::Mem {
                space,
                addr,
                bytes: n,
            } => {
                for b in 0..u64::from(*n) {
                    bytes.insert((*space, addr + b));
                }
            }
            Target::Multiset { name, lanes, width } => {
                for l in 0..*lanes {
                    regs.insert((name.as_str().into(), l));
                    if *width > 32
                        && let Some(n) = name.strip_prefix('R').and_then(|n| n.parse::<u32>().ok())
                    {
                        regs.insert((format!("R{}", n + 1).into(), l));
                    }
                }
            }
        }
        match &c.target {
            Target::Multiset { name, lanes, width } => {
                let pair = name
                    .strip_prefix('R')
                    .and_then(|n| n.parse::<u32>().ok())
                    .filter(|_| *width > 32);
                let vals: Vec<u64> = (0..*lanes)
                    .map(|l| {
                        let lo = st.elem(name, l).unwrap_or(0);
                        match pair {
                            Some(n) => lo | (st.elem(&format!("R{}", n + 1), l).unwrap_or(0) << 32),
                            None => lo,
                        }
                    })
                    .collect();
                if !multiset_matches(&c.multiset, &vals) {
                    out.push(Finding {
                        location: label(&c.target, lanes_are_lanes),
                        expected: format!(
                            "multiset [{}]",
                            c.multiset
                                .iter()
                                .map(describe_pat)
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                        observed: format!(
                            "[{}]",
                            vals.iter()
                                .map(|v| describe(*v, *width))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                        note: format!("at {}", c.pos),
                    });
                }
            }
            t => match read_target(st, t) {
                Some(v) if c.pat.admits(v) => {}
                got => out.push(Finding {
                    location: label(t, lanes_are_lanes),
                    expected: describe_pat(&c.pat),
                    observed: got.map_or("unallocated".into(), |v| {
                        c.pat.human().show(v, c.pat.width().unwrap_or(32))
                    }),
                    note: format!("at {}", c.pos),
                }),
            },
        }
    }
    // Every location not named is expected unchanged.
    let names: BTreeSet<&String> = initial.regs.keys().chain(st.regs.keys()).collect();
    for name in names {
        let (before, after) = (initial.regs.get(name), st.regs.get(name));
        let elem = |r: Option<&atomcts_reference::state::Reg>, i: u32| {
            r.and_then(|r| r.elems.get(i as usize).copied())
                .unwrap_or(0)
        };
        let n = before
            .map_or(0, |r| r.elems.len())
            .max(after.map_or(0, |r| r.elems.len()));
        for idx in 0..n as u32 {
            let (a, b) = (elem(before, idx), elem(after, idx));
            if a != b && !regs.contains(&(std::borrow::Cow::Borrowed(name.as_str()), idx)) {
                let t = Target::Reg {
                    name: name.clone(),
                    idx,
                };
                out.push(Finding {
                    location: label(&t, lanes_are_lanes),
                    expected: format!("unchanged {}", describe(a, 32)),
                    observed: describe(b, 32),
                    note: "not named in expect, so expected unchanged".into(),
                });
                if out.len() > MAX_FINDINGS {
                    return;
                }
            }
        }
    }
    for space in [Space::Global, Space::Shared] {
        for span in initial.memory(space).diff(st.memory(space)) {
            for (addr, a, b) in span.bytes() {
                if bytes.contains(&(space, addr)) {
                    continue;
                }
                out.push(Finding {
                    location: format!("{}[{addr:#x}] (byte)", space.name()),
                    expected: a.map_or("unallocated".into(), |v| format!("unchanged {v:#04x}")),
                    observed: b.map_or("unallocated".into(), |v| format!("{v:#04x}")),
                    note: "not named in expect, so expected unchanged".into(),
                });
                if out.len() > MAX_FINDINGS {
                    return;
                }
            }
        }
    }
}

/// The most findings a case lists; [`cap_findings`] replaces the rest by one summary line.
pub const MAX_FINDINGS: usize = 64;

/// Keeps the first [`MAX_FINDINGS`] findings and summarises the rest in one (issue 7, D3):
/// a report stays readable and bounded whatever an implementation answers.
pub fn cap_findings(mut f: Vec<Finding>) -> Vec<Finding> {
    if f.len() > MAX_FINDINGS {
        let more = f.len() - MAX_FINDINGS;
        f.truncate(MAX_FINDINGS);
        f.push(Finding {
            location: "more".into(),
            expected: String::new(),
            observed: String::new(),
            note: format!(
                "further differences not listed (at least {more}; at most {MAX_FINDINGS} are shown)"
            ),
        });
    }
    f
}

/// The locations that differ between two states, for `atomcts exec`.
pub fn diff(before: &State, after: &State) -> Vec<String> {
    let mut out = Vec::new();
    let names: BTreeSet<&String> = before.regs.keys().chain(after.regs.keys()).collect();
    for name in names {
        let n = before
            .regs
            .get(name)
            .map_or(0, |r| r.elems.len())
            .max(after.regs.get(name).map_or(0, |r| r.elems.len()));
        let width = after.regs.get(name).map_or(32, |r| u32::from(r.ty.bits));
        for idx in 0..n as u32 {
            let (a, b) = (before.elem(name, idx), after.elem(name, idx));
            if a != b {
                let was = a.map_or("unset".to_string(), |v| hex(v, width));
                out.push(format!(
                    "{name}[{idx}] = {} (was {was})",
                    describe(b.unwrap_or(0), width)
                ));
            }
        }
    }
    for space in [Space::Global, Space::Shared] {
        for span in before.memory(space).diff(after.memory(space)) {
            for (addr, a, b) in span.bytes() {
                let Some(v) = b else { continue };
                out.push(format!(
                    "{}[{addr:#x}] = {v:#04x} (was {})",
                    space.name(),
                    a.map_or("unset".into(), |x| format!("{x:#04x}"))
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::value::Bits;

    #[test]
    fn multisets_need_a_perfect_matching() {
        let e = |v| {
            Pat::exact(Bits {
                value: v,
                width: 32,
            })
        };
        assert!(multiset_matches(&[e(1), e(2), Pat::Any], &[2, 9, 1]));
        assert!(!multiset_matches(&[e(1), e(1)], &[1, 2]));
        assert!(multiset_matches(&[Pat::Any, e(1)], &[1, 5]));
    }

    /// An assembler's acceptance (`Observation::Accepted`): judged on acceptance alone; it
    /// fails a case that expects a rejection, and an acceptance as another instruction fails.
    #[test]
    fn an_acceptance_is_judged_on_acceptance_alone() {
        let st = State::new(1);
        let accepted = |differs: Option<&str>| Observation::Accepted {
            lowered: "send".into(),
            differs: differs.map(str::to_string),
        };
        let values = Expectation::Values(vec![]);
        assert!(check(&values, &st, &accepted(None), false).is_empty());
        assert!(check(&Expectation::Unspecified, &st, &accepted(None), false).is_empty());
        let invalid = Expectation::Invalid {
            reason: "operand_type".into(),
            column: None,
        };
        let f = check(&invalid, &st, &accepted(None), false);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].expected, "invalid (operand_type)");
        assert_eq!(f[0].observed, "accepted (send)");
        let f = check(&values, &st, &accepted(Some("not ADD")), false);
        assert_eq!(f.len(), 1);
        assert!(f[0].note.contains("not ADD"), "{:?}", f[0]);
        // An unmapped rejection never matches a reason.
        let unmapped = Observation::Invalid {
            reason: "unmapped: oops".into(),
            column: None,
        };
        assert_eq!(check(&invalid, &st, &unmapped, false).len(), 1);
    }
}
