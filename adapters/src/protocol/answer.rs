//! Reading a shim's answers (adapters/PROTOCOL.md): every answer line, of every shape (the
//! handshake, the version 1 and 2 outcomes, concurrent answers), is read into borrowed, typed
//! structs, and read strictly (issue 27, H7): a key of the wrong JSON type (a flag that is not a
//! boolean, a number that is negative or fractional, a string where an array belongs, `null`
//! where a value belongs), a key given twice, a hex value without `0x`, with a sign or with a
//! digit that is not hex, or a value wider than its location is a malformed answer, never read
//! as something else. Keys the protocol does not define are ignored (a shim may add its own).

use atomcts_reference::state::{AtomicType, Buffer, MAX_ELEMS, Reg, State, Window};
use atomcts_reference::types::{ElemType, Space};
use serde::de::{self, Deserialize, Deserializer, Visitor};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

/// A `0x...` hex string read as a number: `0x` and then one or more hex digits, nothing else
/// (no sign, no space), at most 64 bits.
pub(crate) struct HexIn(pub u64);

impl<'de> Deserialize<'de> for HexIn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<HexIn, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = HexIn;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a 0x hex string")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<HexIn, E> {
                hex(s).map(HexIn).map_err(E::custom)
            }
        }
        d.deserialize_str(V)
    }
}

/// `s` as a `0x...` hex number (what [`HexIn`] reads).
pub(crate) fn hex(s: &str) -> Result<u64, String> {
    let digits = s
        .strip_prefix("0x")
        .filter(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| format!("`{}` is not a 0x hex string", shorten(s, 40)))?;
    u64::from_str_radix(digits, 16).map_err(|_| format!("`{}` exceeds 64 bits", shorten(s, 40)))
}

/// A key that, when present, must hold a `T`: `null` is an error unless `T` itself takes it
/// (unlike `Option<T>`, which reads `null` as absent). Absent: `Present(None)`.
pub(crate) struct Present<T>(pub Option<T>);

impl<T> Default for Present<T> {
    fn default() -> Self {
        Present(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Present<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::deserialize(d).map(|t| Present(Some(t)))
    }
}

/// A JSON object read as a map whose keys are all different (a key given twice is an error,
/// where a map would keep one of the two silently).
pub(crate) struct Unique<K, V>(pub BTreeMap<K, V>);

impl<'de, K, V> Deserialize<'de> for Unique<K, V>
where
    K: Deserialize<'de> + Ord + fmt::Display,
    V: Deserialize<'de>,
{
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct M<K, V>(std::marker::PhantomData<(K, V)>);
        impl<'de, K, V> Visitor<'de> for M<K, V>
        where
            K: Deserialize<'de> + Ord + fmt::Display,
            V: Deserialize<'de>,
        {
            type Value = Unique<K, V>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = BTreeMap::new();
                while let Some(k) = map.next_key::<K>()? {
                    if out.contains_key(&k) {
                        return Err(de::Error::custom(format!("duplicate key `{k}`")));
                    }
                    let v = map.next_value()?;
                    out.insert(k, v);
                }
                Ok(Unique(out))
            }
        }
        d.deserialize_map(M(std::marker::PhantomData))
    }
}

/// One allocated range: its base and every byte, as pairs of hex digits.
#[derive(serde::Deserialize)]
pub(crate) struct RangeIn<'a> {
    base: HexIn,
    #[serde(borrow)]
    bytes: Cow<'a, str>,
}

/// A state's or an answer's `memory`: `{"global": [...], "shared": [...]}` (a space left out
/// holds no range).
#[derive(serde::Deserialize)]
pub(crate) struct MemoryIn<'a> {
    #[serde(borrow, default)]
    global: Present<Vec<RangeIn<'a>>>,
    #[serde(borrow, default)]
    shared: Present<Vec<RangeIn<'a>>>,
}

/// A register: its type and its elements (hex, each within the type's width).
#[derive(serde::Deserialize)]
struct RegIn<'a> {
    #[serde(borrow, rename = "type")]
    ty: Cow<'a, str>,
    #[serde(deserialize_with = "hex_vec")]
    elems: Vec<u64>,
}

/// An array of `0x...` hex strings read straight into numbers.
fn hex_vec<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u64>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<u64>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an array of 0x hex strings")
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u64>, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
            while let Some(h) = seq.next_element::<HexIn>()? {
                if out.len() == MAX_ELEMS {
                    return Err(de::Error::custom(format!("more than {MAX_ELEMS} elements")));
                }
                out.push(h.0);
            }
            Ok(out)
        }
    }
    d.deserialize_seq(V)
}

/// A SASS generic window.
#[derive(serde::Deserialize)]
struct WindowIn {
    base: HexIn,
    len: HexIn,
}

/// An MSL buffer.
#[derive(serde::Deserialize)]
struct BufferIn<'a> {
    #[serde(borrow)]
    space: Cow<'a, str>,
    #[serde(borrow, rename = "type")]
    ty: Cow<'a, str>,
    base: HexIn,
    len: u64,
}

/// A state in an answer (PROTOCOL.md, the table of `state`). `slm_size`, `shared_window` and
/// `local_window` may be `null` (none); every other key, when present, must hold its type.
#[derive(serde::Deserialize)]
pub(crate) struct StateIn<'a> {
    lanes: u64,
    #[serde(default)]
    active: Present<Vec<bool>>,
    #[serde(borrow, default)]
    regs: Present<Unique<Cow<'a, str>, RegIn<'a>>>,
    #[serde(borrow, default)]
    memory: Present<MemoryIn<'a>>,
    #[serde(default)]
    slm_size: Option<HexIn>,
    #[serde(default)]
    shared_window: Option<WindowIn>,
    #[serde(default)]
    local_window: Option<WindowIn>,
    #[serde(borrow, default)]
    buffers: Present<Unique<Cow<'a, str>, BufferIn<'a>>>,
    #[serde(default)]
    emask: Present<HexIn>,
    #[serde(default)]
    simd_width: Present<u64>,
}

/// An answer to a `run` request, of any outcome (version 1 and 2). Which keys an outcome needs
/// is checked by the caller; a defined key of the wrong type fails the whole answer.
#[derive(serde::Deserialize)]
pub(crate) struct AnswerIn<'a> {
    #[serde(borrow)]
    pub id: Cow<'a, str>,
    #[serde(borrow)]
    pub outcome: Cow<'a, str>,
    /// `completed`.
    #[serde(borrow, default)]
    pub state: Present<StateIn<'a>>,
    /// `accesses`.
    #[serde(borrow, default)]
    pub memory: Present<MemoryIn<'a>>,
    /// `accesses`.
    #[serde(default)]
    pub returned: Present<Vec<HexIn>>,
    /// `accesses` (compare-exchange).
    #[serde(default)]
    pub ok: Present<Vec<bool>>,
    /// `fault`: `[lane, class]` pairs.
    #[serde(borrow, default)]
    pub lanes: Present<Vec<(u64, Cow<'a, str>)>>,
    /// `invalid`.
    #[serde(borrow, default)]
    pub reason: Present<Cow<'a, str>>,
    /// `invalid` (optional): checked by the caller, so its message names the column.
    #[serde(default)]
    pub column: Present<serde_json::Value>,
    /// `error`, `unsupported`, `not_applicable`.
    #[serde(borrow, default)]
    pub why: Present<Cow<'a, str>>,
}

/// Just the `id` of an answer the typed reader refused: whether the refused line still answers
/// the request in flight (then it costs that case only) or is out of step with the requests.
#[derive(serde::Deserialize)]
pub(crate) struct IdIn<'a> {
    #[serde(borrow)]
    pub id: Cow<'a, str>,
}

/// The handshake answer. `window`, `name`, `implementation` and `profile` may be `null`
/// (absent); `capabilities` is an array of strings.
#[derive(serde::Deserialize)]
pub(crate) struct HelloIn<'a> {
    #[serde(borrow, rename = "type")]
    pub ty: Cow<'a, str>,
    #[serde(borrow)]
    pub protocol: Cow<'a, str>,
    pub version: u64,
    #[serde(borrow, default)]
    pub level: Option<Cow<'a, str>>,
    #[serde(default)]
    pub window: Option<u64>,
    #[serde(default)]
    pub profile_once: Option<bool>,
    #[serde(borrow, default)]
    pub name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub implementation: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub profile: Option<Cow<'a, str>>,
    #[serde(default)]
    pub capabilities: Option<Vec<String>>,
}

/// Per instruction, per iteration, per access (a concurrent answer's `returned`, `ok` and
/// `attempts`); an instruction's entry may be `null` where the protocol allows it.
pub(crate) type PerAccess<T> = Vec<Option<Vec<Vec<T>>>>;

/// An answer to a `run_concurrent` request.
#[derive(serde::Deserialize)]
pub(crate) struct ConcurrentIn<'a> {
    #[serde(borrow)]
    pub id: Cow<'a, str>,
    #[serde(borrow)]
    pub outcome: Cow<'a, str>,
    #[serde(borrow, default)]
    pub why: Present<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub memory: Present<MemoryIn<'a>>,
    #[serde(default)]
    pub returned: Present<Vec<Vec<Vec<HexIn>>>>,
    #[serde(default)]
    pub ok: Present<PerAccess<bool>>,
    #[serde(default)]
    pub attempts: Present<PerAccess<u32>>,
    #[serde(default)]
    pub executed: Present<Vec<Vec<u32>>>,
}

/// Fills `space` of `s` from answer ranges: ascending bases (allocation is then linear in the
/// number of ranges, issue 7 D2), each allocated and written.
fn fill_memory(s: &mut State, space: Space, ranges: &[RangeIn<'_>]) -> Result<(), String> {
    let mut parsed = Vec::with_capacity(ranges.len());
    for r in ranges {
        parsed.push((r.base.0, bytes_of_hex(&r.bytes)?));
    }
    parsed.sort_by_key(|(base, _)| *base);
    let mem = s.memory_mut(space);
    for (base, data) in parsed {
        mem.alloc(base, data.len() as u64)
            .map_err(|e| e.to_string())?;
        mem.write_slice(base, &data);
    }
    Ok(())
}

impl MemoryIn<'_> {
    fn fill(&self, s: &mut State) -> Result<(), String> {
        fill_memory(s, Space::Global, self.global.0.as_deref().unwrap_or(&[]))?;
        fill_memory(s, Space::Shared, self.shared.0.as_deref().unwrap_or(&[]))
    }
}

/// The memory of an answer as a state of `lanes` lanes holding only that memory.
pub(crate) fn memory_state(lanes: u32, mem: &MemoryIn<'_>) -> Result<State, String> {
    let mut s = new_state(u64::from(lanes))?;
    mem.fill(&mut s)?;
    s.validate().map_err(|e| e.to_string())?;
    Ok(s)
}

fn new_state(lanes: u64) -> Result<State, String> {
    let lanes = u32::try_from(lanes)
        .ok()
        .filter(|l| (1..=atomcts_reference::state::MAX_LANES).contains(l))
        .ok_or_else(|| format!("state.lanes = {lanes}"))?;
    Ok(State::new(lanes))
}

fn type_of(name: &str) -> Option<ElemType> {
    match name {
        "b32" => Some(ElemType::B32),
        "bool" => Some(ElemType::BOOL),
        other => ElemType::from_visa_name(other),
    }
}

impl StateIn<'_> {
    /// The state, with the model's limits; a register element wider than its type is an
    /// error (never masked to fit).
    pub(crate) fn into_state(self) -> Result<State, String> {
        let mut s = new_state(self.lanes)?;
        if let Some(a) = self.active.0 {
            s.active = a;
        }
        for (name, r) in self.regs.0.map(|m| m.0).into_iter().flatten() {
            let ty = type_of(&r.ty).ok_or(format!("regs.{name}: bad type"))?;
            s.regs.insert(name.into_owned(), Reg { ty, elems: r.elems });
        }
        if let Some(m) = &self.memory.0 {
            m.fill(&mut s)?;
        }
        s.slm_size = self.slm_size.map(|h| h.0);
        let window = |w: WindowIn| Window {
            base: w.base.0,
            len: w.len.0,
        };
        s.shared_window = self.shared_window.map(window);
        s.local_window = self.local_window.map(window);
        for (name, b) in self.buffers.0.map(|m| m.0).into_iter().flatten() {
            let space = match &*b.space {
                "global" => Space::Global,
                "shared" => Space::Shared,
                other => return Err(format!("buffers.{name}.space = {other:?}")),
            };
            let ty = AtomicType::from_name(&b.ty).ok_or(format!("buffers.{name}.type"))?;
            s.buffers.insert(
                name.into_owned(),
                Buffer {
                    space,
                    ty,
                    base: b.base.0,
                    len: b.len,
                },
            );
        }
        if let Some(e) = self.emask.0 {
            s.emask = u32::try_from(e.0).map_err(|_| "emask exceeds 32 bits".to_string())?;
        }
        if let Some(w) = self.simd_width.0 {
            s.simd_width = u32::try_from(w).map_err(|_| "simd_width too large".to_string())?;
        }
        s.validate().map_err(|e| e.to_string())?;
        Ok(s)
    }
}

/// Checks one access row of returned values (and `ok` flags where given) against the lowered
/// instruction: one value per access, each within the datum's width (issue 27, H2, H7).
pub(crate) fn check_row(
    lowered: &atomcts_reference::ir::Lowered,
    old: &[u64],
    ok: Option<&[bool]>,
    what: &str,
) -> Result<(), String> {
    let atomcts_reference::ir::Instr::Mem(m) = &lowered.instr else {
        return Err(format!("{what}: not a memory instruction"));
    };
    let n = m.accesses.len();
    if old.len() != n {
        return Err(format!(
            "{what} has {} returned values for {n} accesses",
            old.len()
        ));
    }
    if let Some(ok) = ok
        && ok.len() != n
    {
        return Err(format!(
            "{what} has {} `ok` flags for {n} accesses",
            ok.len()
        ));
    }
    if let Some((j, v)) = old
        .iter()
        .enumerate()
        .find(|(_, v)| **v & !m.ty.mask() != 0)
    {
        return Err(format!(
            "{what}[{j}] = {v:#x} does not fit {} (the datum's {} bits)",
            m.ty.name(),
            m.ty.mask().count_ones()
        ));
    }
    Ok(())
}

/// A memory range's `bytes`: pairs of hex digits, one pair per byte, within the memory limit.
fn bytes_of_hex(hex: &str) -> Result<Vec<u8>, String> {
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    if !hex.len().is_multiple_of(2) {
        return Err("memory bytes must be pairs of hex digits".into());
    }
    if hex.len() as u64 / 2 > atomcts_reference::memory::MAX_BYTES {
        return Err("memory bytes exceed the memory limit".into());
    }
    hex.as_bytes()
        .chunks(2)
        .map(|p| match (digit(p[0]), digit(p[1])) {
            (Some(h), Some(l)) => Ok(h << 4 | l),
            _ => Err("memory bytes must be pairs of hex digits".to_string()),
        })
        .collect()
}

/// Parses the protocol's JSON form of a state, with the model's limits, as strictly as an
/// answer's state is read (a key of the wrong type or a value wider than its register is an
/// error).
pub fn state_from_json(v: &serde_json::Value) -> Result<State, String> {
    StateIn::deserialize(v)
        .map_err(|e| format!("malformed state: {e}"))?
        .into_state()
}

/// At most `n` characters of `s`, with `...` when cut.
pub(super) fn shorten(s: &str, n: usize) -> String {
    let mut out: String = s.chars().take(n).collect();
    if s.chars().nth(n).is_some() {
        out.push_str("...");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::state_to_json;
    use super::*;
    use serde_json::json;

    #[test]
    fn state_round_trips_through_json() {
        for s in [
            super::super::wire::tests::sample(),
            State::new(1),
            State::new(32),
        ] {
            assert_eq!(state_from_json(&state_to_json(&s)).unwrap(), s);
        }
    }

    #[test]
    fn hostile_states_are_errors() {
        for bad in [
            json!({"lanes": 0}),
            json!({"lanes": 5000}),
            json!({"lanes": 1, "regs": {"R0": {"type": "zz", "elems": []}}}),
            json!({"lanes": 1, "regs": {"R0": {"type": "b32", "elems": ["12"]}}}),
            json!({"lanes": 1, "memory": {"global": [{"base": "0x0", "bytes": "0g"}]}}),
            json!({"lanes": 1, "memory": {"global": [{"base": "0xffffffffffffffff", "bytes": "0000"}]}}),
            json!({"lanes": 1, "emask": "0x100000000"}),
            // Issue 27, H7: nothing is masked to fit, nothing of the wrong type is ignored.
            json!({"lanes": 1, "regs": {"R0": {"type": "b32", "elems": ["0xabc000000005"]}}}),
            json!({"lanes": 1, "regs": {"P0": {"type": "bool", "elems": ["0x2"]}}}),
            json!({"lanes": 1, "regs": {"R0": {"type": "ub", "elems": ["0x100"]}}}),
            json!({"lanes": 1, "regs": {"R0": {"type": "b32", "elems": ["0x+5"]}}}),
            json!({"lanes": 1, "regs": {"R0": {"type": "b32", "elems": ["0x"]}}}),
            json!({"lanes": 1, "regs": {"R0": {"type": "b32", "elems": ["0x 5"]}}}),
            json!({"lanes": 1, "regs": {"R0": {"type": "b32", "elems": [5]}}}),
            json!({"lanes": 1, "regs": {"R0": {"type": "b32", "elems": ["0x10000000000000000"]}}}),
            json!({"lanes": 1, "regs": []}),
            json!({"lanes": 1, "regs": null}),
            json!({"lanes": 2, "active": "yes"}),
            json!({"lanes": 2, "active": [true, "no"]}),
            json!({"lanes": 2, "active": [true, 1]}),
            json!({"lanes": 2, "active": [true]}),
            json!({"lanes": 1.0}),
            json!({"lanes": -1}),
            json!({"lanes": "1"}),
            json!({"lanes": 1, "simd_width": "x"}),
            json!({"lanes": 1, "simd_width": 32.5}),
            json!({"lanes": 1, "simd_width": null}),
            json!({"lanes": 1, "emask": null}),
            json!({"lanes": 1, "emask": "3"}),
            json!({"lanes": 1, "memory": "none"}),
            json!({"lanes": 1, "memory": {"global": null}}),
            json!({"lanes": 1, "memory": {"global": {"base": "0x0", "bytes": "00"}}}),
            json!({"lanes": 1, "memory": {"global": [{"base": 0, "bytes": "00"}]}}),
            json!({"lanes": 1, "memory": {"global": [{"base": "0x0", "bytes": "0x00"}]}}),
            json!({"lanes": 1, "buffers": []}),
            json!({"lanes": 1, "buffers": {"b": {"space": "global", "type": "atomic_int", "base": "0x0", "len": -1}}}),
            json!({"lanes": 1, "shared_window": {"base": "0x0"}}),
            json!({"lanes": 1, "slm_size": 4}),
        ] {
            assert!(state_from_json(&bad).is_err(), "{bad}");
        }
        // A key given twice is ambiguous: an error, at any depth.
        for text in [
            r#"{"lanes": 1, "lanes": 2}"#,
            r#"{"lanes": 1, "regs": {"R0": {"type": "b32", "elems": ["0x1"]}, "R0": {"type": "b32", "elems": ["0x2"]}}}"#,
            r#"{"lanes": 1, "regs": {"R0": {"type": "b32", "elems": ["0x1"], "elems": ["0x2"]}}}"#,
            r#"{"lanes": 1, "memory": {"global": [], "global": []}}"#,
        ] {
            assert!(serde_json::from_str::<StateIn<'_>>(text).is_err(), "{text}");
        }
        // Keys the protocol does not define are ignored; null windows and SLM size are none.
        let ok = json!({"lanes": 1, "mine": [1], "slm_size": null, "shared_window": null,
                        "regs": {"R0": {"type": "b32", "elems": ["0xFFFFFFFF"]}}});
        assert_eq!(
            state_from_json(&ok).unwrap().elem("R0", 0),
            Some(0xffff_ffff)
        );
    }
}
