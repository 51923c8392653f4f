//! Interprets a case's `expect` as an [`Expectation`], per dialect (FORMAT.md "Expectations");
//! its `given` is read by [`crate::corpus::state`].

use crate::corpus::case::Case;
use crate::corpus::expectation::{Check, Expectation, Target};
use crate::corpus::pos::Pos;
use crate::corpus::state::{
    BuildError, buffer_slot, err, int_of, mem_pat, msl_type, per_lane, reg_index, slot,
    typed_vector,
};
use crate::corpus::value::{Human, Pat, Slot, parse_int, parse_pat};
use atomcts_reference::float::Format;
use atomcts_reference::outcome::FaultClass;
use atomcts_reference::program::Dialect;
use atomcts_reference::state::State;
use atomcts_reference::types::{ElemType, Space};
use toml::Value;

/// One entry of `fault_lanes`: a lane the case has (never truncated).
fn fault_lane(v: &Value, pos: &Pos, bound: u32) -> Result<u32, BuildError> {
    let l = int_of(v, pos, "fault_lanes")?;
    match u32::try_from(l) {
        Ok(l) if l < bound => Ok(l),
        _ => err(
            pos,
            format!("fault_lanes: lane {l} is not one of the case's lanes 0..{bound}"),
        ),
    }
}

/// Interprets an expectation table (`expect` or one option of `expect_if`).
pub fn build_expectation(
    case: &Case,
    initial: &State,
    entries: &[(String, Value, Pos)],
    at: &Pos,
) -> Result<Expectation, BuildError> {
    let get = |k: &str| entries.iter().find(|(key, _, _)| key == k);
    let kinds = ["fault", "invalid", "unspecified"]
        .iter()
        .filter(|k| get(k).is_some())
        .count();
    if kinds > 1 {
        return err(
            at,
            "an expectation is exactly one of values, fault, invalid, unspecified",
        );
    }
    if let Some((_, v, pos)) = get("fault") {
        if let Some((k, _, p)) = entries
            .iter()
            .find(|(k, _, _)| k != "fault" && k != "fault_lanes")
        {
            return err(p, format!("`{k}` cannot go with fault"));
        }
        let Some(class) = v.as_str().and_then(FaultClass::from_name) else {
            return err(
                pos,
                format!(
                    "unknown fault class {v} (misaligned_address, address_out_of_range, invalid_address_space)"
                ),
            );
        };
        let lanes = match get("fault_lanes") {
            None => None,
            Some((_, Value::Array(a), p)) => {
                let bound =
                    crate::corpus::verify::fault_lane_bound(initial, case.dialect != Dialect::Visa);
                let lanes = a
                    .iter()
                    .map(|x| fault_lane(x, p, bound))
                    .collect::<Result<Vec<_>, _>>()?;
                if lanes.is_empty() {
                    return err(p, "fault_lanes = []: a fault names at least one lane");
                }
                let mut sorted = lanes.clone();
                sorted.sort_unstable();
                if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
                    return err(p, format!("fault_lanes names lane {} twice", w[0]));
                }
                Some(lanes)
            }
            Some((_, _, p)) => return err(p, "fault_lanes is an array of lanes"),
        };
        return Ok(Expectation::Fault { class, lanes });
    }
    if get("fault_lanes").is_some() {
        return err(at, "fault_lanes without fault");
    }
    if let Some((_, v, pos)) = get("invalid") {
        let column = match get("column") {
            None => None,
            Some((_, c, p)) => {
                if case.asm.contains('\n') {
                    return err(
                        p,
                        "column needs a one-line asm (it counts within that line)",
                    );
                }
                // One past the end is a place too (a rejection for something missing there).
                let end = case.asm.len() + 1;
                let n = c.as_integer().and_then(|n| usize::try_from(n).ok());
                match n.filter(|n| (1..=end).contains(n)) {
                    Some(n) => Some(n),
                    None => {
                        return err(p, format!("column = {c}: a byte column of asm, 1..={end}"));
                    }
                }
            }
        };
        if entries.len() != 1 + usize::from(column.is_some()) {
            return err(pos, "invalid takes no other keys than column");
        }
        let Some(code) = v.as_str() else {
            return err(pos, "invalid = \"<reason>\"");
        };
        if atomcts_reference::Reason::from_code(code).is_none() {
            let all: Vec<_> = atomcts_reference::Reason::ALL
                .iter()
                .map(|r| r.code())
                .collect();
            return err(
                pos,
                format!("unknown reason `{code}` (reasons: {})", all.join(", ")),
            );
        }
        return Ok(Expectation::Invalid {
            reason: code.to_string(),
            column,
        });
    }
    if let Some((_, _, pos)) = get("column") {
        return err(pos, "column without invalid (it places a rejection)");
    }
    if let Some((_, v, pos)) = get("unspecified") {
        if let Some((k, _, p)) = entries
            .iter()
            .find(|(k, _, _)| k != "unspecified" && k != "because")
        {
            return err(
                p,
                format!("`{k}` cannot go with unspecified (only `because`)"),
            );
        }
        if v.as_bool() != Some(true) {
            return err(pos, "unspecified takes only `true`");
        }
        if let Some((_, b, p)) = get("because")
            && b.as_str().is_none_or(|t| t.trim().is_empty())
        {
            return err(
                p,
                "because names what the documents leave undefined: a non-empty string",
            );
        }
        return Ok(Expectation::Unspecified);
    }
    if let Some((_, _, pos)) = get("because") {
        return err(
            pos,
            "because without unspecified (it says why the outcome is undefined)",
        );
    }
    let mut checks = Vec::new();
    for (key, v, pos) in entries {
        expect_entry(case.dialect, initial, key, v, pos, &mut checks)?;
    }
    Ok(Expectation::Values(checks))
}

fn check(pos: &Pos, key: &str, target: Target, pat: Pat) -> Check {
    Check {
        pos: pos.clone(),
        key: key.to_string(),
        target,
        pat,
        multiset: vec![],
    }
}

fn multiset_of(v: &Value) -> Option<&Vec<Value>> {
    match v {
        Value::Table(t) if t.len() == 1 => t.get("multiset").and_then(|m| m.as_array()),
        _ => None,
    }
}

fn mem_checks(
    initial: &State,
    space: Space,
    v: &Value,
    pos: &Pos,
    out: &mut Vec<Check>,
    key: &str,
) -> Result<(), BuildError> {
    let Value::Table(t) = v else {
        return err(pos, format!("{key} must be a table of address = value"));
    };
    for (k, val) in t {
        let Some(addr) = parse_int(k).and_then(|a| u64::try_from(a).ok()) else {
            return err(pos, format!("{key} key `{k}` is not an address"));
        };
        let p = mem_pat(val, pos, k)?;
        let Some(w) = p.width() else {
            return err(
                pos,
                format!("{key} {k}: \"any\" needs a width; use a typed value"),
            );
        };
        // An expectation on memory the case never allocated can only ever fail: input error.
        if !initial.memory(space).contains(addr, u64::from(w / 8)) {
            return err(
                pos,
                format!(
                    "{key} {k}: {} bytes at {addr:#x} are not allocated in the given state",
                    w / 8
                ),
            );
        }
        out.push(check(
            pos,
            key,
            Target::Mem {
                space,
                addr,
                bytes: w / 8,
            },
            p,
        ));
    }
    Ok(())
}

pub(crate) fn expect_entry(
    dialect: Dialect,
    initial: &State,
    key: &str,
    v: &Value,
    pos: &Pos,
    out: &mut Vec<Check>,
) -> Result<(), BuildError> {
    let lanes = initial.lanes;
    match (dialect, key) {
        (_, "mem") => return mem_checks(initial, Space::Global, v, pos, out, key),
        (Dialect::Visa, "slm") => {
            let Value::Table(t) = v else {
                return err(pos, "slm = { mem = { ... } }");
            };
            if let Some(k) = t.keys().find(|k| *k != "mem") {
                return err(pos, format!("unknown key `{k}` in expected slm"));
            }
            if let Some(m) = t.get("mem") {
                mem_checks(initial, Space::Shared, m, pos, out, "slm")?;
            }
            return Ok(());
        }
        _ => {}
    }
    match dialect {
        Dialect::Sass => {
            let (is_pred, n) = match (reg_index(key, 'R', 254), reg_index(key, 'P', 6)) {
                (Some(n), _) => (false, n),
                (_, Some(n)) => (true, n),
                _ => return err(pos, format!("unknown SASS location `{key}`")),
            };
            let slot = if is_pred {
                Slot {
                    width: 1,
                    float: None,
                    human: Human::Int,
                }
            } else {
                Slot {
                    width: 32,
                    float: Some(Format::F32),
                    human: Human::Int,
                }
            };
            let parse = |x: &Value| {
                parse_pat(x, slot)
                    .or_else(|e| match x {
                        Value::Integer(_) if !is_pred => parse_pat(
                            x,
                            Slot {
                                width: 64,
                                float: None,
                                human: Human::Int,
                            },
                        ),
                        _ => Err(e),
                    })
                    .or_else(|e| err(pos, format!("{key}: {e}")))
            };
            if let Some(ms) = multiset_of(v) {
                let pats = ms.iter().map(parse).collect::<Result<Vec<_>, _>>()?;
                if pats.len() != lanes as usize {
                    return err(
                        pos,
                        format!("{key}: multiset of {} values for {lanes} lanes", pats.len()),
                    );
                }
                let width = pats.iter().filter_map(|p| p.width()).max().unwrap_or(32);
                let target = Target::Multiset {
                    name: format!("{}{n}", if is_pred { 'P' } else { 'R' }),
                    lanes,
                    width,
                };
                out.push(Check {
                    pos: pos.clone(),
                    key: key.to_string(),
                    target,
                    pat: Pat::Any,
                    multiset: pats,
                });
                return Ok(());
            }
            for (l, x) in per_lane(v, lanes, pos, key)?.into_iter().enumerate() {
                let p = parse(x)?;
                if is_pred {
                    out.push(check(
                        pos,
                        key,
                        Target::Reg {
                            name: format!("P{n}"),
                            idx: l as u32,
                        },
                        p,
                    ));
                } else if p.width().unwrap_or(32) > 32 {
                    if n + 1 > 254 {
                        return err(pos, format!("{key}: a 64-bit value needs R{}", n + 1));
                    }
                    for w in 0..2 {
                        let t = Target::Reg {
                            name: format!("R{}", n + w),
                            idx: l as u32,
                        };
                        out.push(check(pos, key, t, p.slice(32 * w, 32)));
                    }
                } else {
                    out.push(check(
                        pos,
                        key,
                        Target::Reg {
                            name: format!("R{n}"),
                            idx: l as u32,
                        },
                        p,
                    ));
                }
            }
            Ok(())
        }
        Dialect::Visa => {
            if reg_index(key, 'V', u32::MAX - 1).is_some_and(|n| n > 0) {
                // `{ ud = { multiset = [...] } }`: the first n elements, in some order.
                if let Value::Table(t) = v
                    && let Some((tyname, inner)) = t.iter().next()
                    && t.len() == 1
                    && let Some(ms) = multiset_of(inner)
                {
                    let Some(et) = ElemType::from_visa_name(tyname) else {
                        return err(pos, format!("{key}: unknown type `{tyname}`"));
                    };
                    let pats = ms
                        .iter()
                        .map(|x| {
                            parse_pat(x, slot(et)).or_else(|e| err(pos, format!("{key}: {e}")))
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    let target = Target::Multiset {
                        name: key.to_string(),
                        lanes: pats.len() as u32,
                        width: u32::from(et.bits),
                    };
                    out.push(Check {
                        pos: pos.clone(),
                        key: key.to_string(),
                        target,
                        pat: Pat::Any,
                        multiset: pats,
                    });
                    return Ok(());
                }
                let (et, vals) = typed_vector(v, pos, key, ElemType::from_visa_name)?;
                if let Some(decl) = initial.regs.get(key)
                    && decl.ty != et
                {
                    return err(
                        pos,
                        format!(
                            "{key} is declared {} in given, expected as {}",
                            decl.ty.visa_name(),
                            et.visa_name()
                        ),
                    );
                }
                for (i, x) in vals.iter().enumerate() {
                    let p =
                        parse_pat(x, slot(et)).or_else(|e| err(pos, format!("{key}[{i}]: {e}")))?;
                    out.push(check(
                        pos,
                        key,
                        Target::Reg {
                            name: key.to_string(),
                            idx: i as u32,
                        },
                        p,
                    ));
                }
                return Ok(());
            }
            err(
                pos,
                format!("unknown vISA location `{key}` (V<n>, mem, slm)"),
            )
        }
        Dialect::Msl => {
            if let Some(b) = initial.buffers.get(key) {
                let Value::Array(a) = v else {
                    return err(
                        pos,
                        format!("buffer {key} is expected as its final contents [..]"),
                    );
                };
                if a.len() as u64 != b.len {
                    return err(
                        pos,
                        format!(
                            "buffer {key} has {} elements, expected lists {}",
                            b.len,
                            a.len()
                        ),
                    );
                }
                for (i, x) in a.iter().enumerate() {
                    let p = parse_pat(x, buffer_slot(b.ty))
                        .or_else(|e| err(pos, format!("{key}[{i}]: {e}")))?;
                    out.push(check(
                        pos,
                        key,
                        Target::Mem {
                            space: b.space,
                            addr: b.base + 4 * i as u64,
                            bytes: 4,
                        },
                        p,
                    ));
                }
                return Ok(());
            }
            if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return err(pos, format!("`{key}` is not an MSL identifier"));
            }
            let et = initial.regs.get(key).map_or(ElemType::UD, |r| r.ty);
            let (et, v) = match v {
                Value::Table(t)
                    if !t.contains_key("multiset")
                        && !t.contains_key("one_of")
                        && !t.contains_key("bits") =>
                {
                    let (et, vals) = typed_vector(v, pos, key, msl_type)?;
                    (et, Value::Array(vals.into_iter().cloned().collect()))
                }
                other => (et, other.clone()),
            };
            let sl = Slot {
                float: slot(et).float.or(Some(Format::F32)),
                ..slot(et)
            };
            if let Some(ms) = multiset_of(&v) {
                let pats = ms
                    .iter()
                    .map(|x| parse_pat(x, sl).or_else(|e| err(pos, format!("{key}: {e}"))))
                    .collect::<Result<Vec<_>, _>>()?;
                if pats.len() != lanes as usize {
                    return err(
                        pos,
                        format!(
                            "{key}: multiset of {} values for {lanes} threads",
                            pats.len()
                        ),
                    );
                }
                let target = Target::Multiset {
                    name: key.to_string(),
                    lanes,
                    width: sl.width,
                };
                out.push(Check {
                    pos: pos.clone(),
                    key: key.to_string(),
                    target,
                    pat: Pat::Any,
                    multiset: pats,
                });
                return Ok(());
            }
            for (l, x) in per_lane(&v, lanes, pos, key)?.into_iter().enumerate() {
                let p = parse_pat(x, sl).or_else(|e| err(pos, format!("{key}: {e}")))?;
                out.push(check(
                    pos,
                    key,
                    Target::Reg {
                        name: key.to_string(),
                        idx: l as u32,
                    },
                    p,
                ));
            }
            Ok(())
        }
    }
}

/// The mask of a register's element width.
pub fn elem_mask(st: &State, name: &str) -> u64 {
    st.regs.get(name).map_or(u64::MAX, |r| r.ty.mask().max(1))
}
