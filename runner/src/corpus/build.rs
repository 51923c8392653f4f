//! Interprets a case's `given` as a [`State`] and its `expect` as an [`Expectation`], per
//! dialect (FORMAT.md "State" and "Expectations").

use crate::corpus::case::{Case, Item};
use crate::corpus::expectation::{Check, Expectation, Target};
use crate::corpus::pos::Pos;
use crate::corpus::value::{Bits, Human, Pat, Slot, parse_int, parse_pat, parse_range};
use atomcts_reference::float::Format;
use atomcts_reference::outcome::FaultClass;
use atomcts_reference::program::Dialect;
use atomcts_reference::state::{AtomicType, Buffer, MAX_ELEMS, Reg, State, Window};
use atomcts_reference::types::{ElemType, Kind, Space};
use toml::Value;

/// An error in a case's state or expectation, with its position.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{pos}: {message}")]
pub struct BuildError {
    /// Where.
    pub pos: Pos,
    /// What.
    pub message: String,
}

fn err<T>(pos: &Pos, message: impl Into<String>) -> Result<T, BuildError> {
    Err(BuildError {
        pos: pos.clone(),
        message: message.into(),
    })
}

/// Base address of the k-th MSL buffer (in its memory).
pub fn buffer_base(k: usize) -> u64 {
    0x1000_0000 + (k as u64) * 0x0100_0000
}

pub(crate) fn reg_index(key: &str, prefix: char, max: u32) -> Option<u32> {
    let n = key.strip_prefix(prefix)?;
    if n.is_empty() || (n.len() > 1 && n.starts_with('0')) {
        return None;
    }
    n.parse::<u32>().ok().filter(|v| *v <= max)
}

fn int_of(v: &Value, pos: &Pos, what: &str) -> Result<u64, BuildError> {
    match v {
        Value::Integer(i) if *i >= 0 => Ok(*i as u64),
        Value::String(s) => match parse_int(s).and_then(|x| u64::try_from(x).ok()) {
            Some(x) => Ok(x),
            None => err(pos, format!("{what}: `{s}` is not a non-negative integer")),
        },
        other => err(
            pos,
            format!("{what}: expected a non-negative integer, got {other}"),
        ),
    }
}

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

/// Per-lane values: an array of `lanes` values or one value for all lanes.
fn per_lane<'a>(
    v: &'a Value,
    lanes: u32,
    pos: &Pos,
    key: &str,
) -> Result<Vec<&'a Value>, BuildError> {
    match v {
        Value::Array(a) => {
            if a.len() != lanes as usize {
                return err(
                    pos,
                    format!("{key} has {} values for {lanes} lanes", a.len()),
                );
            }
            Ok(a.iter().collect())
        }
        other => Ok(vec![other; lanes as usize]),
    }
}

fn active_of(v: &Value, lanes: u32, pos: &Pos) -> Result<Vec<bool>, BuildError> {
    match v {
        Value::Array(a) => {
            if a.len() != lanes as usize {
                return err(
                    pos,
                    format!("active has {} entries for {lanes} lanes", a.len()),
                );
            }
            a.iter()
                .map(|x| match x {
                    Value::Boolean(b) => Ok(*b),
                    other => err(pos, format!("active entries are booleans, got {other}")),
                })
                .collect()
        }
        other => {
            let m = int_of(other, pos, "active")?;
            Ok((0..lanes).map(|l| l < 64 && m >> l & 1 == 1).collect())
        }
    }
}

fn bits_of(p: &Pat, pos: &Pos, key: &str) -> Result<Bits, BuildError> {
    p.representative().ok_or_else(|| BuildError {
        pos: pos.clone(),
        message: format!("{key}: a given value must be exact bits, not a pattern"),
    })
}

/// `mem = { addr = value }` into a memory.
fn fill_mem(
    mem: &mut atomcts_reference::memory::Memory,
    v: &Value,
    pos: &Pos,
) -> Result<(), BuildError> {
    let Value::Table(t) = v else {
        return err(pos, "mem must be a table of address = value");
    };
    let mut cells = Vec::with_capacity(t.len());
    for (k, val) in t {
        let addr = parse_int(k).and_then(|a| u64::try_from(a).ok());
        let Some(addr) = addr else {
            return err(pos, format!("mem key `{k}` is not an address"));
        };
        let p = mem_pat(val, pos, k)?;
        let b = bits_of(&p, pos, k)?;
        cells.push((addr, k, b));
    }
    // Ascending addresses (TOML keys sort as text): each allocation then extends the last
    // range in place, so a map of n entries costs O(n log n) (issue 7, D2).
    cells.sort_by_key(|(addr, _, _)| *addr);
    for (addr, k, b) in cells {
        let bytes = u64::from(b.width / 8);
        mem.alloc(addr, bytes)
            .or_else(|e| err(pos, format!("mem {k}: {e}")))?;
        mem.write(addr, bytes, b.value);
    }
    Ok(())
}

/// A memory value: typed strings set the width; an untyped integer is a `u32`.
pub(crate) fn mem_pat(v: &Value, pos: &Pos, key: &str) -> Result<Pat, BuildError> {
    let p = match v {
        Value::Float(_) => {
            return err(
                pos,
                format!("mem {key}: a float needs a typed string (\"f32:1.5\")"),
            );
        }
        other => parse_pat(
            other,
            Slot {
                width: 32,
                float: None,
                human: Human::Int,
            },
        ),
    };
    let p = p.or_else(|e| err(pos, format!("mem {key}: {e}")))?;
    if p.width().is_some_and(|w| w % 8 != 0 || w > 64) {
        return err(pos, format!("mem {key}: width must be whole bytes"));
    }
    Ok(p)
}

fn alloc_list(
    mem: &mut atomcts_reference::memory::Memory,
    v: &Value,
    pos: &Pos,
) -> Result<(), BuildError> {
    let Value::Array(a) = v else {
        return err(pos, "alloc must be an array of \"base+len\"");
    };
    for r in a {
        let Value::String(s) = r else {
            return err(pos, "alloc entries are \"base+len\" strings");
        };
        let (b, l) = parse_range(s).or_else(|e| err(pos, e))?;
        mem.alloc(b, l)
            .or_else(|e| err(pos, format!("alloc {s}: {e}")))?;
    }
    Ok(())
}

fn window(v: &Value, pos: &Pos) -> Result<Window, BuildError> {
    let Value::String(s) = v else {
        return err(pos, "a window is \"base+len\"");
    };
    let (base, len) = parse_range(s).or_else(|e| err(pos, e))?;
    Ok(Window { base, len })
}

/// MSL operand type names.
pub(crate) fn msl_type(name: &str) -> Option<ElemType> {
    MSL_TYPES.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// The MSL operand types of the case format and their element types: one table, read one way
/// by the loader ([`msl_type`]) and the other by the generator's expectations
/// ([`msl_type_name`]).
const MSL_TYPES: [(&str, ElemType); 9] = [
    ("int", ElemType::D),
    ("uint", ElemType::UD),
    ("float", ElemType::F),
    ("half", ElemType::HF),
    ("short", ElemType::W),
    ("ushort", ElemType::UW),
    ("long", ElemType::Q),
    ("ulong", ElemType::UQ),
    ("bool", ElemType::BOOL),
];

/// The MSL operand type name of an element type ([`MSL_TYPES`]): every boolean is `bool`, a
/// type with no name of its own `uint`.
pub(crate) fn msl_type_name(t: ElemType) -> &'static str {
    if t.kind == Kind::Bool {
        return "bool";
    }
    MSL_TYPES
        .iter()
        .find(|(_, x)| *x == t)
        .map_or("uint", |(n, _)| n)
}

pub(crate) fn slot(t: ElemType) -> Slot {
    let float = match (t.kind, t.bits) {
        (Kind::Float, 16) => Some(Format::F16),
        (Kind::Float, 32) => Some(Format::F32),
        (Kind::Float, 64) => Some(Format::F64),
        _ => None,
    };
    Slot {
        width: u32::from(t.bits).max(1),
        float,
        human: float.map_or(Human::Int, Human::Float),
    }
}

/// A typed vector `{ <type> = [..] | value }` (vISA variables, typed MSL operands).
fn typed_vector(
    v: &Value,
    pos: &Pos,
    key: &str,
    type_of: fn(&str) -> Option<ElemType>,
) -> Result<(ElemType, Vec<Value>), BuildError> {
    let Value::Table(t) = v else {
        return err(pos, format!("{key} must be {{ <type> = [...] }}"));
    };
    if t.len() != 1 {
        return err(pos, format!("{key} must have exactly one type key"));
    }
    let (ty, vals) = t.iter().next().ok_or_else(|| BuildError {
        pos: pos.clone(),
        message: "empty".into(),
    })?;
    let Some(et) = type_of(ty) else {
        return err(pos, format!("{key}: unknown type `{ty}`"));
    };
    let vals = match vals {
        Value::Array(a) => a.clone(),
        other => vec![other.clone()],
    };
    if vals.len() > MAX_ELEMS {
        return err(
            pos,
            format!("{key} has {} elements (at most {MAX_ELEMS})", vals.len()),
        );
    }
    Ok((et, vals))
}

/// The initial state of a case as the runner takes it: a loaded case's from its `given`
/// ([`build_state`]); a generated case's from the generator's draft (issue 9), which builds
/// the state [`build_state`] builds from the draft's TOML form (`crate::fuzzing::draft`).
pub fn item_state(item: Item<'_>) -> Result<State, BuildError> {
    match item {
        Item::Loaded(case) => build_state(case),
        Item::Generated(case, g) => g.build_state().or_else(|m| err(&case.pos, m)),
    }
}

/// Builds the initial state of a loaded case from its `given`.
pub fn build_state(case: &Case) -> Result<State, BuildError> {
    let lanes = case.lanes;
    if case.dialect == Dialect::Sass && lanes > 32 {
        return err(
            &case.pos,
            format!("SASS lanes = {lanes}: a warp has at most 32"),
        );
    }
    let mut st = State::new(if case.dialect == Dialect::Visa {
        1
    } else {
        lanes
    });
    let mut buffers = 0usize;
    // `alloc` ranges are added after everything else, keeping the bytes already written
    // (FORMAT.md): the order of the keys changes nothing.
    let mut allocs = Vec::new();
    for (key, v, pos) in &case.given {
        match key.as_str() {
            "mem" => fill_mem(&mut st.global, v, pos)?,
            "alloc" => allocs.push((v, pos)),
            "active" if case.dialect != Dialect::Visa => st.active = active_of(v, st.lanes, pos)?,
            "shared_window" if case.dialect == Dialect::Sass => {
                st.shared_window = Some(window(v, pos)?)
            }
            "local_window" if case.dialect == Dialect::Sass => {
                st.local_window = Some(window(v, pos)?)
            }
            "emask" if case.dialect == Dialect::Visa => {
                st.emask = u32::try_from(int_of(v, pos, "emask")?)
                    .or_else(|_| err(pos, "emask is 32 bits"))?
            }
            "simd_width" if case.dialect == Dialect::Msl => {
                let w = int_of(v, pos, "simd_width")?;
                if !(1..=64).contains(&w) {
                    return err(pos, format!("simd_width = {w} (1..=64)"));
                }
                st.simd_width = w as u32;
            }
            "slm" if case.dialect == Dialect::Visa => {
                let Value::Table(t) = v else {
                    return err(pos, "slm must be { size = N, mem = {...} }");
                };
                if let Some(k) = t.keys().find(|k| *k != "size" && *k != "mem") {
                    return err(pos, format!("unknown key `{k}` in slm"));
                }
                let size = t
                    .get("size")
                    .map(|s| int_of(s, pos, "slm size"))
                    .transpose()?
                    .unwrap_or(0);
                st.shared
                    .alloc(0, size)
                    .or_else(|e| err(pos, format!("slm: {e}")))?;
                st.slm_size = Some(size);
                if let Some(m) = t.get("mem") {
                    fill_mem(&mut st.shared, m, pos)?;
                    if st.shared.ranges().any(|(b, l)| b + l > size) {
                        return err(pos, "slm mem lies outside slm size");
                    }
                }
            }
            _ => match case.dialect {
                Dialect::Sass => sass_given(&mut st, key, v, pos)?,
                Dialect::Visa => visa_given(&mut st, key, v, pos)?,
                Dialect::Msl => {
                    if let Value::Table(t) = v
                        && t.contains_key("space")
                    {
                        msl_buffer(&mut st, key, t, pos, buffer_base(buffers))?;
                        buffers += 1;
                        continue;
                    }
                    msl_operand(&mut st, key, v, pos)?
                }
            },
        }
    }
    for (v, pos) in allocs {
        alloc_list(&mut st.global, v, pos)?;
    }
    st.validate().or_else(|e| err(&case.pos, e.to_string()))?;
    Ok(st)
}

fn sass_given(st: &mut State, key: &str, v: &Value, pos: &Pos) -> Result<(), BuildError> {
    let lanes = st.lanes;
    if let Some(n) = reg_index(key, 'R', 254) {
        let vals = per_lane(v, lanes, pos, key)?;
        for (l, x) in vals.into_iter().enumerate() {
            let p = parse_pat(
                x,
                Slot {
                    width: 32,
                    float: Some(Format::F32),
                    human: Human::Int,
                },
            )
            .or_else(|e| {
                // Integers above 32 bits are 64-bit pair values.
                match x {
                    Value::Integer(_) => parse_pat(
                        x,
                        Slot {
                            width: 64,
                            float: None,
                            human: Human::Int,
                        },
                    ),
                    _ => Err(e),
                }
            });
            let p = p.or_else(|e| err(pos, format!("{key}: {e}")))?;
            let b = bits_of(&p, pos, key)?;
            let words = if b.width > 32 { 2 } else { 1 };
            if n + words - 1 > 254 {
                return err(pos, format!("{key}: a 64-bit value needs R{}", n + 1));
            }
            for w in 0..words {
                let name = format!("R{}", n + w);
                let r = st.regs.entry(name).or_insert_with(|| Reg {
                    ty: ElemType::B32,
                    elems: vec![0; lanes as usize],
                });
                r.elems[l] = (b.value >> (32 * w)) & 0xFFFF_FFFF;
            }
        }
        return Ok(());
    }
    if let Some(n) = reg_index(key, 'P', 6) {
        let vals = per_lane(v, lanes, pos, key)?;
        let mut elems = Vec::new();
        for x in vals {
            match x {
                Value::Boolean(b) => elems.push(u64::from(*b)),
                other => return err(pos, format!("{key}: predicates are booleans, got {other}")),
            }
        }
        st.regs.insert(
            format!("P{n}"),
            Reg {
                ty: ElemType::BOOL,
                elems,
            },
        );
        return Ok(());
    }
    err(
        pos,
        format!(
            "unknown SASS state `{key}` (R0..R254, P0..P6, mem, alloc, active, shared_window, local_window)"
        ),
    )
}

fn visa_given(st: &mut State, key: &str, v: &Value, pos: &Pos) -> Result<(), BuildError> {
    if let Some(n) = reg_index(key, 'V', u32::MAX - 1) {
        if n == 0 {
            return err(pos, "V0 is the null variable and holds nothing");
        }
        let (et, vals) = typed_vector(v, pos, key, ElemType::from_visa_name)?;
        let mut elems = Vec::new();
        for x in &vals {
            let p = parse_pat(x, slot(et)).or_else(|e| err(pos, format!("{key}: {e}")))?;
            let b = bits_of(&p, pos, key)?;
            if b.width > u32::from(et.bits) {
                return err(
                    pos,
                    format!(
                        "{key}: a {}-bit value in a {} vector",
                        b.width,
                        et.visa_name()
                    ),
                );
            }
            elems.push(b.value & et.mask());
        }
        st.regs.insert(key.to_string(), Reg { ty: et, elems });
        return Ok(());
    }
    if let Some(_n) = reg_index(key, 'P', u32::MAX - 1) {
        let m = int_of(v, pos, key)?;
        let elems = (0..32).map(|i| m >> i & 1).collect();
        st.regs.insert(
            key.to_string(),
            Reg {
                ty: ElemType::BOOL,
                elems,
            },
        );
        return Ok(());
    }
    err(
        pos,
        format!("unknown vISA state `{key}` (V<n>, P<n>, emask, slm, mem, alloc)"),
    )
}

fn msl_buffer(
    st: &mut State,
    key: &str,
    t: &toml::Table,
    pos: &Pos,
    base: u64,
) -> Result<(), BuildError> {
    if let Some(k) = t
        .keys()
        .find(|k| !["space", "type", "init"].contains(&k.as_str()))
    {
        return err(pos, format!("unknown key `{k}` in buffer {key}"));
    }
    let space = match t.get("space").and_then(|s| s.as_str()) {
        Some("device") => Space::Global,
        Some("threadgroup") => Space::Shared,
        other => {
            return err(
                pos,
                format!("buffer {key}: space {other:?} is not \"device\" or \"threadgroup\""),
            );
        }
    };
    let ty = match t
        .get("type")
        .and_then(|s| s.as_str())
        .and_then(AtomicType::from_name)
    {
        Some(ty) => ty,
        None => {
            return err(
                pos,
                format!("buffer {key}: type must be atomic_int, atomic_uint or atomic_float"),
            );
        }
    };
    let init: Vec<Value> = match t.get("init") {
        Some(Value::Array(a)) => a.clone(),
        Some(other) => {
            return err(
                pos,
                format!("buffer {key}: init must be an array, got {other}"),
            );
        }
        None => return err(pos, format!("buffer {key}: init is required")),
    };
    if init.len() > MAX_ELEMS {
        return err(
            pos,
            format!(
                "buffer {key} has {} elements (at most {MAX_ELEMS})",
                init.len()
            ),
        );
    }
    let len = init.len() as u64;
    let mem = st.memory_mut(space);
    mem.alloc(base, 4 * len)
        .or_else(|e| err(pos, format!("buffer {key}: {e}")))?;
    for (i, x) in init.iter().enumerate() {
        let p = parse_pat(x, buffer_slot(ty)).or_else(|e| err(pos, format!("{key}[{i}]: {e}")))?;
        let b = bits_of(&p, pos, key)?;
        mem.write(base + 4 * i as u64, 4, b.value);
    }
    st.buffers.insert(
        key.to_string(),
        Buffer {
            space,
            ty,
            base,
            len,
        },
    );
    Ok(())
}

/// How an MSL buffer element is read: 32 bits, binary32 for `atomic_float`.
pub(crate) fn buffer_slot(ty: AtomicType) -> Slot {
    let float = (ty == AtomicType::Float).then_some(Format::F32);
    Slot {
        width: 32,
        float,
        human: float.map_or(Human::Int, Human::Float),
    }
}

fn msl_operand(st: &mut State, key: &str, v: &Value, pos: &Pos) -> Result<(), BuildError> {
    if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return err(pos, format!("`{key}` is not an MSL identifier"));
    }
    let lanes = st.lanes;
    let (et, vals): (ElemType, Vec<Value>) = match v {
        Value::Table(_) => {
            let (et, vals) = typed_vector(v, pos, key, msl_type)?;
            if vals.len() == 1 {
                (et, vec![vals[0].clone(); lanes as usize])
            } else {
                (et, vals)
            }
        }
        other => (
            ElemType::UD,
            per_lane(other, lanes, pos, key)?
                .into_iter()
                .cloned()
                .collect(),
        ),
    };
    if vals.len() != lanes as usize {
        return err(
            pos,
            format!("{key} has {} values for {lanes} threads", vals.len()),
        );
    }
    let mut elems = Vec::new();
    for x in &vals {
        let p = parse_pat(x, slot(et)).or_else(|e| err(pos, format!("{key}: {e}")))?;
        elems.push(bits_of(&p, pos, key)?.value & et.mask());
    }
    st.regs.insert(key.to_string(), Reg { ty: et, elems });
    Ok(())
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
                    (et, Value::Array(vals))
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
