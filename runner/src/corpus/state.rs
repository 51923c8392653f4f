//! Interprets a case's `given` as a [`State`], per dialect (FORMAT.md "State"): the one state
//! builder. It reads values through [`GivenValue`], which the loader's TOML values implement and
//! the generator's typed drafts (`crate::fuzzing::draft::G`) implement too, so a generated case
//! gets the state its TOML form would get without being written and parsed back (issue 9), and
//! the case format is interpreted in one place (issue 28).

use crate::corpus::case::{Case, Item};
use crate::corpus::pos::Pos;
use crate::corpus::value::{Bits, Human, Pat, Slot, parse_int, parse_pat, parse_range};
use atomcts_reference::float::Format;
use atomcts_reference::program::Dialect;
use atomcts_reference::state::{AtomicType, Buffer, MAX_ELEMS, Reg, State, Window};
use atomcts_reference::types::{ElemType, Kind, Space};
use std::fmt;
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

pub(crate) fn err<T>(pos: &Pos, message: impl Into<String>) -> Result<T, BuildError> {
    Err(BuildError {
        pos: pos.clone(),
        message: message.into(),
    })
}

/// The key of one cell of a memory map: the text of a TOML key, or an address.
#[derive(Clone, Copy, Debug)]
pub enum CellKey<'a> {
    /// A TOML key as written (`"0x1000"`).
    Text(&'a str),
    /// An address.
    Addr(u64),
}

impl CellKey<'_> {
    /// The address, when the key is one.
    pub fn addr(self) -> Option<u64> {
        match self {
            CellKey::Text(k) => parse_int(k).and_then(|a| u64::try_from(a).ok()),
            CellKey::Addr(a) => Some(a),
        }
    }
}

impl fmt::Display for CellKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CellKey::Text(k) => f.write_str(k),
            CellKey::Addr(a) => write!(f, "{a:#x}"),
        }
    }
}

/// A value of the case format as the builder reads it (FORMAT.md "Values"). Every reading
/// answers `None` where the value has another shape; the builder turns that into its error.
pub trait GivenValue: Sized + fmt::Display {
    /// An integer.
    fn int(&self) -> Option<i64>;
    /// A boolean.
    fn boolean(&self) -> Option<bool>;
    /// A name or other string, as written.
    fn text(&self) -> Option<&str>;
    /// A range `"base+len"`: `None` when the value is not a string.
    fn range(&self) -> Option<Result<(u64, u64), String>>;
    /// An array.
    fn list(&self) -> Option<&[Self]>;
    /// The number of entries of a table; `None` when the value is not a table.
    fn table_len(&self) -> Option<usize>;
    /// The entry `key` of a table.
    fn field(&self, key: &str) -> Option<&Self>;
    /// The first entry of a table.
    fn first_field(&self) -> Option<(&str, &Self)>;
    /// An entry of a table whose key is not in `allowed`.
    fn unknown_field(&self, allowed: &[&str]) -> Option<&str>;
    /// The cells of a memory map `{ addr = value }`.
    fn cells(&self) -> Option<Vec<(CellKey<'_>, &Self)>>;
    /// The value or pattern for a location of shape `slot`.
    fn pat(&self, slot: Slot) -> Result<Pat, String>;
    /// A float written as a number (not a typed string).
    fn is_float(&self) -> bool {
        false
    }
    /// The exact bits of the value for a location of shape `slot`, when it is one (the fast
    /// path of a given value; anything else goes through [`GivenValue::pat`], whose messages
    /// the builder reports).
    fn exact(&self, slot: Slot) -> Option<Bits> {
        self.pat(slot).ok()?.representative()
    }
}

impl GivenValue for Value {
    fn int(&self) -> Option<i64> {
        self.as_integer()
    }
    fn boolean(&self) -> Option<bool> {
        self.as_bool()
    }
    fn text(&self) -> Option<&str> {
        self.as_str()
    }
    fn range(&self) -> Option<Result<(u64, u64), String>> {
        self.as_str().map(parse_range)
    }
    fn list(&self) -> Option<&[Value]> {
        self.as_array().map(Vec::as_slice)
    }
    fn table_len(&self) -> Option<usize> {
        self.as_table().map(toml::Table::len)
    }
    fn field(&self, key: &str) -> Option<&Value> {
        self.as_table()?.get(key)
    }
    fn first_field(&self) -> Option<(&str, &Value)> {
        self.as_table()?.iter().next().map(|(k, v)| (k.as_str(), v))
    }
    fn unknown_field(&self, allowed: &[&str]) -> Option<&str> {
        self.as_table()?
            .keys()
            .find(|k| !allowed.contains(&k.as_str()))
            .map(String::as_str)
    }
    fn cells(&self) -> Option<Vec<(CellKey<'_>, &Value)>> {
        let t = self.as_table()?;
        Some(t.iter().map(|(k, v)| (CellKey::Text(k), v)).collect())
    }
    fn pat(&self, slot: Slot) -> Result<Pat, String> {
        parse_pat(self, slot)
    }
    fn is_float(&self) -> bool {
        self.is_float()
    }
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

pub(crate) fn int_of<V: GivenValue>(v: &V, pos: &Pos, what: &str) -> Result<u64, BuildError> {
    if let Some(i) = v.int().filter(|i| *i >= 0) {
        return Ok(i as u64);
    }
    match v.text() {
        Some(s) => match parse_int(s).and_then(|x| u64::try_from(x).ok()) {
            Some(x) => Ok(x),
            None => err(pos, format!("{what}: `{s}` is not a non-negative integer")),
        },
        None => err(
            pos,
            format!("{what}: expected a non-negative integer, got {v}"),
        ),
    }
}

/// Per-lane values: an array of `lanes` values or one value for all lanes.
pub(crate) fn per_lane<'a, V: GivenValue>(
    v: &'a V,
    lanes: u32,
    pos: &Pos,
    key: &str,
) -> Result<Vec<&'a V>, BuildError> {
    match v.list() {
        Some(a) => {
            if a.len() != lanes as usize {
                return err(
                    pos,
                    format!("{key} has {} values for {lanes} lanes", a.len()),
                );
            }
            Ok(a.iter().collect())
        }
        None => Ok(vec![v; lanes as usize]),
    }
}

fn active_of<V: GivenValue>(v: &V, lanes: u32, pos: &Pos) -> Result<Vec<bool>, BuildError> {
    match v.list() {
        Some(a) => {
            if a.len() != lanes as usize {
                return err(
                    pos,
                    format!("active has {} entries for {lanes} lanes", a.len()),
                );
            }
            a.iter()
                .map(|x| match x.boolean() {
                    Some(b) => Ok(b),
                    None => err(pos, format!("active entries are booleans, got {x}")),
                })
                .collect()
        }
        None => {
            let m = int_of(v, pos, "active")?;
            Ok((0..lanes).map(|l| l < 64 && m >> l & 1 == 1).collect())
        }
    }
}

pub(crate) fn bits_of(p: &Pat, pos: &Pos, key: impl fmt::Display) -> Result<Bits, BuildError> {
    p.representative().ok_or_else(|| BuildError {
        pos: pos.clone(),
        message: format!("{key}: a given value must be exact bits, not a pattern"),
    })
}

/// A given value's exact bits for a location of shape `slot` (errors name `key`).
fn given_bits<V: GivenValue>(v: &V, slot: Slot, pos: &Pos, key: &str) -> Result<Bits, BuildError> {
    match v.exact(slot) {
        Some(b) => Ok(b),
        None => {
            let p = v.pat(slot).or_else(|e| err(pos, format!("{key}: {e}")))?;
            bits_of(&p, pos, key)
        }
    }
}

/// `mem = { addr = value }` into a memory.
fn fill_mem<V: GivenValue>(
    mem: &mut atomcts_reference::memory::Memory,
    v: &V,
    pos: &Pos,
) -> Result<(), BuildError> {
    let Some(cells) = v.cells() else {
        return err(pos, "mem must be a table of address = value");
    };
    let mut bits = Vec::with_capacity(cells.len());
    for (k, val) in cells {
        let Some(addr) = k.addr() else {
            return err(pos, format!("mem key `{k}` is not an address"));
        };
        let word = Slot {
            width: 32,
            float: None,
            human: Human::Int,
        };
        let b = match val.exact(word) {
            Some(b) if !val.is_float() && b.width % 8 == 0 && b.width <= 64 => b,
            _ => bits_of(&mem_pat(val, pos, k)?, pos, k)?,
        };
        bits.push((addr, k, b));
    }
    // Ascending addresses (TOML keys sort as text), then one allocation per run of touching or
    // overlapping cells: the memory merges touching ranges, so this is the memory one
    // allocation per cell makes, at O(n log n) for a map of n entries (issue 7, D2). A run that
    // cannot be allocated is retried cell by cell, so the message names the cell that fails.
    bits.sort_by_key(|(addr, _, _)| *addr);
    // Each run: its cells, where it starts and ends, and whether it was allocated whole.
    let mut runs = Vec::new();
    let mut i = 0;
    while i < bits.len() {
        let start = bits[i].0;
        let mut end = u128::from(start);
        let mut j = i;
        while j < bits.len() && u128::from(bits[j].0) <= end {
            end = end.max(u128::from(bits[j].0) + u128::from(bits[j].2.width / 8));
            j += 1;
        }
        let whole = u64::try_from(end - u128::from(start))
            .ok()
            .and_then(|len| mem.alloc(start, len).ok());
        if whole.is_none() {
            for (addr, k, b) in &bits[i..j] {
                mem.alloc(*addr, u64::from(b.width / 8))
                    .or_else(|e| err(pos, format!("mem {k}: {e}")))?;
            }
        }
        runs.push((
            i..j,
            start,
            whole.is_some().then_some(end - u128::from(start)),
        ));
        i = j;
    }
    // A run allocated whole is written as one slice: its cells' bytes laid down in address
    // order (a cell overlapping an earlier one overwrites it, as writing them one by one
    // does; a run has no gaps). Any other run, cell by cell.
    let mut buf = Vec::new();
    for (cells, start, len) in runs {
        let cells = &bits[cells];
        let plain = |b: &Bits| b.width.is_multiple_of(8) && (8..=64).contains(&b.width);
        if let Some(len) = len.filter(|_| cells.iter().all(|(_, _, b)| plain(b))) {
            buf.clear();
            buf.resize(len as usize, 0u8);
            for (addr, _, b) in cells {
                let at = (addr - start) as usize;
                let n = (b.width / 8) as usize;
                buf[at..at + n].copy_from_slice(&b.value.to_le_bytes()[..n]);
            }
            if mem.write_slice(start, &buf) {
                continue;
            }
        }
        for (addr, _, b) in cells {
            mem.write(*addr, u64::from(b.width / 8), b.value);
        }
    }
    Ok(())
}

/// A memory value: typed strings set the width; an untyped integer is a `u32`.
pub(crate) fn mem_pat<V: GivenValue>(
    v: &V,
    pos: &Pos,
    key: impl fmt::Display + Copy,
) -> Result<Pat, BuildError> {
    if v.is_float() {
        return err(
            pos,
            format!("mem {key}: a float needs a typed string (\"f32:1.5\")"),
        );
    }
    let p = v.pat(Slot {
        width: 32,
        float: None,
        human: Human::Int,
    });
    let p = p.or_else(|e| err(pos, format!("mem {key}: {e}")))?;
    if p.width().is_some_and(|w| w % 8 != 0 || w > 64) {
        return err(pos, format!("mem {key}: width must be whole bytes"));
    }
    Ok(p)
}

fn alloc_list<V: GivenValue>(
    mem: &mut atomcts_reference::memory::Memory,
    v: &V,
    pos: &Pos,
) -> Result<(), BuildError> {
    let Some(a) = v.list() else {
        return err(pos, "alloc must be an array of \"base+len\"");
    };
    for r in a {
        let Some(range) = r.range() else {
            return err(pos, "alloc entries are \"base+len\" strings");
        };
        let (b, l) = range.or_else(|e| err(pos, e))?;
        mem.alloc(b, l)
            .or_else(|e| err(pos, format!("alloc {r}: {e}")))?;
    }
    Ok(())
}

fn window<V: GivenValue>(v: &V, pos: &Pos) -> Result<Window, BuildError> {
    let Some(range) = v.range() else {
        return err(pos, "a window is \"base+len\"");
    };
    let (base, len) = range.or_else(|e| err(pos, e))?;
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
pub(crate) fn typed_vector<'a, V: GivenValue>(
    v: &'a V,
    pos: &Pos,
    key: &str,
    type_of: fn(&str) -> Option<ElemType>,
) -> Result<(ElemType, Vec<&'a V>), BuildError> {
    let Some(len) = v.table_len() else {
        return err(pos, format!("{key} must be {{ <type> = [...] }}"));
    };
    if len != 1 {
        return err(pos, format!("{key} must have exactly one type key"));
    }
    let Some((ty, vals)) = v.first_field() else {
        return err(pos, format!("{key} must have exactly one type key"));
    };
    let Some(et) = type_of(ty) else {
        return err(pos, format!("{key}: unknown type `{ty}`"));
    };
    let vals: Vec<&V> = match vals.list() {
        Some(a) => a.iter().collect(),
        None => vec![vals],
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
/// ([`build_state`]); a generated case's from the generator's draft (issue 9), which the same
/// builder reads ([`build`]).
pub fn item_state(item: Item<'_>) -> Result<State, BuildError> {
    match item {
        Item::Loaded(case) => build_state(case),
        Item::Generated(case, g) => g.build_state().or_else(|m| err(&case.pos, m)),
    }
}

/// Builds the initial state of a loaded case from its `given`.
pub fn build_state(case: &Case) -> Result<State, BuildError> {
    build(
        case.dialect,
        case.lanes,
        case.given.iter().map(|(k, v, p)| (k.as_str(), v, p)),
        &case.pos,
    )
}

/// Builds the initial state of a case of `dialect` on `lanes` lanes from its `given` entries
/// (key, value, position), in key order (MSL buffers are placed in that order); `at` is the
/// case's position.
pub fn build<'a, V: GivenValue + 'a>(
    dialect: Dialect,
    lanes: u32,
    entries: impl Iterator<Item = (&'a str, &'a V, &'a Pos)>,
    at: &Pos,
) -> Result<State, BuildError> {
    if dialect == Dialect::Sass && lanes > 32 {
        return err(at, format!("SASS lanes = {lanes}: a warp has at most 32"));
    }
    let mut st = State::new(if dialect == Dialect::Visa { 1 } else { lanes });
    let mut buffers = 0usize;
    // `alloc` ranges are added after everything else, keeping the bytes already written
    // (FORMAT.md): the order of the keys changes nothing.
    let mut allocs = Vec::new();
    for (key, v, pos) in entries {
        match key {
            "mem" => fill_mem(&mut st.global, v, pos)?,
            "alloc" => allocs.push((v, pos)),
            "active" if dialect != Dialect::Visa => st.active = active_of(v, st.lanes, pos)?,
            "shared_window" if dialect == Dialect::Sass => st.shared_window = Some(window(v, pos)?),
            "local_window" if dialect == Dialect::Sass => st.local_window = Some(window(v, pos)?),
            "emask" if dialect == Dialect::Visa => {
                st.emask = u32::try_from(int_of(v, pos, "emask")?)
                    .or_else(|_| err(pos, "emask is 32 bits"))?
            }
            "simd_width" if dialect == Dialect::Msl => {
                let w = int_of(v, pos, "simd_width")?;
                if !(1..=64).contains(&w) {
                    return err(pos, format!("simd_width = {w} (1..=64)"));
                }
                st.simd_width = w as u32;
            }
            "slm" if dialect == Dialect::Visa => slm(&mut st, v, pos)?,
            _ => match dialect {
                Dialect::Sass => sass_given(&mut st, key, v, pos)?,
                Dialect::Visa => visa_given(&mut st, key, v, pos)?,
                Dialect::Msl if v.field("space").is_some() => {
                    msl_buffer(&mut st, key, v, pos, buffer_base(buffers))?;
                    buffers += 1;
                }
                Dialect::Msl => msl_operand(&mut st, key, v, pos)?,
            },
        }
    }
    for (v, pos) in allocs {
        alloc_list(&mut st.global, v, pos)?;
    }
    st.validate().or_else(|e| err(at, e.to_string()))?;
    Ok(st)
}

/// vISA `slm = { size = N, mem = {...} }`.
fn slm<V: GivenValue>(st: &mut State, v: &V, pos: &Pos) -> Result<(), BuildError> {
    if v.table_len().is_none() {
        return err(pos, "slm must be { size = N, mem = {...} }");
    }
    if let Some(k) = v.unknown_field(&["size", "mem"]) {
        return err(pos, format!("unknown key `{k}` in slm"));
    }
    let size = v
        .field("size")
        .map(|s| int_of(s, pos, "slm size"))
        .transpose()?
        .unwrap_or(0);
    st.shared
        .alloc(0, size)
        .or_else(|e| err(pos, format!("slm: {e}")))?;
    st.slm_size = Some(size);
    if let Some(m) = v.field("mem") {
        fill_mem(&mut st.shared, m, pos)?;
        if st.shared.ranges().any(|(b, l)| b + l > size) {
            return err(pos, "slm mem lies outside slm size");
        }
    }
    Ok(())
}

fn sass_given<V: GivenValue>(
    st: &mut State,
    key: &str,
    v: &V,
    pos: &Pos,
) -> Result<(), BuildError> {
    let lanes = st.lanes;
    if let Some(n) = reg_index(key, 'R', 254) {
        let vals = per_lane(v, lanes, pos, key)?;
        // The names of the register and the next one (a 64-bit pair), made once per entry.
        let names = [format!("R{n}"), format!("R{}", n + 1)];
        for (l, x) in vals.into_iter().enumerate() {
            let word = Slot {
                width: 32,
                float: Some(Format::F32),
                human: Human::Int,
            };
            // Integers above 32 bits are 64-bit pair values.
            let pair = Slot {
                width: 64,
                float: None,
                human: Human::Int,
            };
            let b = match x.exact(word) {
                Some(b) => b,
                None => {
                    let p = x.pat(word).or_else(|e| {
                        if x.int().is_some() {
                            x.pat(pair)
                        } else {
                            Err(e)
                        }
                    });
                    let p = p.or_else(|e| err(pos, format!("{key}: {e}")))?;
                    bits_of(&p, pos, key)?
                }
            };
            let words = if b.width > 32 { 2 } else { 1 };
            if n + words - 1 > 254 {
                return err(pos, format!("{key}: a 64-bit value needs R{}", n + 1));
            }
            for (w, name) in names.iter().enumerate().take(words as usize) {
                if !st.regs.contains_key(name) {
                    let elems = vec![0; lanes as usize];
                    let ty = ElemType::B32;
                    st.regs.insert(name.clone(), Reg { ty, elems });
                }
                if let Some(r) = st.regs.get_mut(name) {
                    r.elems[l] = (b.value >> (32 * w)) & 0xFFFF_FFFF;
                }
            }
        }
        return Ok(());
    }
    if let Some(n) = reg_index(key, 'P', 6) {
        let vals = per_lane(v, lanes, pos, key)?;
        let mut elems = Vec::new();
        for x in vals {
            match x.boolean() {
                Some(b) => elems.push(u64::from(b)),
                None => return err(pos, format!("{key}: predicates are booleans, got {x}")),
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

fn visa_given<V: GivenValue>(
    st: &mut State,
    key: &str,
    v: &V,
    pos: &Pos,
) -> Result<(), BuildError> {
    if let Some(n) = reg_index(key, 'V', u32::MAX - 1) {
        if n == 0 {
            return err(pos, "V0 is the null variable and holds nothing");
        }
        let (et, vals) = typed_vector(v, pos, key, ElemType::from_visa_name)?;
        let mut elems = Vec::new();
        for x in vals {
            let b = given_bits(x, slot(et), pos, key)?;
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

fn msl_buffer<V: GivenValue>(
    st: &mut State,
    key: &str,
    v: &V,
    pos: &Pos,
    base: u64,
) -> Result<(), BuildError> {
    if let Some(k) = v.unknown_field(&["space", "type", "init"]) {
        return err(pos, format!("unknown key `{k}` in buffer {key}"));
    }
    let space = match v.field("space").and_then(V::text) {
        Some("device") => Space::Global,
        Some("threadgroup") => Space::Shared,
        other => {
            return err(
                pos,
                format!("buffer {key}: space {other:?} is not \"device\" or \"threadgroup\""),
            );
        }
    };
    let Some(ty) = v
        .field("type")
        .and_then(V::text)
        .and_then(AtomicType::from_name)
    else {
        return err(
            pos,
            format!("buffer {key}: type must be atomic_int, atomic_uint or atomic_float"),
        );
    };
    let init = match v.field("init") {
        Some(i) => match i.list() {
            Some(a) => a,
            None => {
                return err(pos, format!("buffer {key}: init must be an array, got {i}"));
            }
        },
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
        let b = match x.exact(buffer_slot(ty)) {
            Some(b) => b,
            None => {
                let p = x
                    .pat(buffer_slot(ty))
                    .or_else(|e| err(pos, format!("{key}[{i}]: {e}")))?;
                bits_of(&p, pos, key)?
            }
        };
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

fn msl_operand<V: GivenValue>(
    st: &mut State,
    key: &str,
    v: &V,
    pos: &Pos,
) -> Result<(), BuildError> {
    if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return err(pos, format!("`{key}` is not an MSL identifier"));
    }
    let lanes = st.lanes;
    let (et, vals): (ElemType, Vec<&V>) = if v.table_len().is_some() {
        let (et, vals) = typed_vector(v, pos, key, msl_type)?;
        if vals.len() == 1 {
            (et, vec![vals[0]; lanes as usize])
        } else {
            (et, vals)
        }
    } else {
        (ElemType::UD, per_lane(v, lanes, pos, key)?)
    };
    if vals.len() != lanes as usize {
        return err(
            pos,
            format!("{key} has {} values for {lanes} threads", vals.len()),
        );
    }
    let mut elems = Vec::new();
    for x in vals {
        elems.push(given_bits(x, slot(et), pos, key)?.value & et.mask());
    }
    st.regs.insert(key.to_string(), Reg { ty: et, elems });
    Ok(())
}
