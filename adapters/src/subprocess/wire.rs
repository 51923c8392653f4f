//! The protocol's hot path without `serde_json::Value` trees (issue 9, deliverable 3): request
//! lines are written by a streaming serializer into one reused buffer, and answers of the
//! common shapes (`completed` with a state, `accesses`) are read into borrowed, typed structs.
//!
//! The bytes written are exactly those of the `Value` route (`state_to_json`, keys in the same
//! sorted order), and an answer the typed reader does not take (any other outcome, a
//! duplicate key, a value of an unexpected type) goes through the `Value` route unchanged, so
//! every accepted answer means what it meant before and every error message stays the same.
//! Both facts are checked by the tests below.

use super::{bytes_of_hex, type_of};
use atomcts_reference::state::{AtomicType, Buffer, MAX_ELEMS, Reg, State, Window};
use atomcts_reference::types::Space;
use serde::de::{self, Deserialize, Deserializer, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

/// `v` as `0x...` lowercase hex (what `format!("{v:#x}")` prints), without allocating.
fn hex_u64(v: u64, buf: &mut [u8; 18]) -> &str {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut i = buf.len();
    let mut x = v;
    loop {
        i -= 1;
        buf[i] = DIGITS[(x & 15) as usize];
        x >>= 4;
        if x == 0 {
            break;
        }
    }
    i -= 2;
    buf[i] = b'0';
    buf[i + 1] = b'x';
    std::str::from_utf8(&buf[i..]).unwrap_or("0x0")
}

/// A number serialized as a `0x...` hex string.
pub(crate) struct Hex(pub u64);

impl Serialize for Hex {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(hex_u64(self.0, &mut [0; 18]))
    }
}

/// Bytes as one string of hex digit pairs, written in chunks (no string of the whole range).
struct HexBytes<'a>(&'a [u8]);

impl fmt::Display for HexBytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut buf = [0u8; 512];
        for chunk in self.0.chunks(buf.len() / 2) {
            for (i, b) in chunk.iter().enumerate() {
                buf[2 * i] = DIGITS[usize::from(b >> 4)];
                buf[2 * i + 1] = DIGITS[usize::from(b & 15)];
            }
            f.write_str(std::str::from_utf8(&buf[..2 * chunk.len()]).map_err(|_| fmt::Error)?)?;
        }
        Ok(())
    }
}

impl Serialize for HexBytes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A slice serialized as a JSON array of its items' `Serialize` forms built by `f`.
pub(crate) struct Seq<'a, T, F>(pub &'a [T], pub F);

impl<'a, T, U: Serialize, F: Fn(&'a T) -> U> Serialize for Seq<'a, T, F> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for x in self.0 {
            seq.serialize_element(&(self.1)(x))?;
        }
        seq.end()
    }
}

struct RegOut<'a>(&'a Reg);

impl Serialize for RegOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("elems", &Seq(&self.0.elems, |e: &u64| Hex(*e)))?;
        m.serialize_entry("type", self.0.ty.visa_name())?;
        m.end()
    }
}

struct Regions<'a>(&'a atomcts_reference::memory::Memory);

impl Serialize for Regions<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(None)?;
        for (base, data) in self.0.regions() {
            seq.serialize_element(&Region(base, data))?;
        }
        seq.end()
    }
}

struct Region<'a>(u64, &'a [u8]);

impl Serialize for Region<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("base", &Hex(self.0))?;
        m.serialize_entry("bytes", &HexBytes(self.1))?;
        m.end()
    }
}

/// A state's `memory` object: `{"global": [...], "shared": [...]}`.
pub(super) struct MemoryOut<'a>(pub &'a State);

impl Serialize for MemoryOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("global", &Regions(&self.0.global))?;
        m.serialize_entry("shared", &Regions(&self.0.shared))?;
        m.end()
    }
}

struct WindowOut<'a>(&'a Option<Window>);

impl Serialize for WindowOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            None => s.serialize_none(),
            Some(w) => {
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry("base", &Hex(w.base))?;
                m.serialize_entry("len", &Hex(w.len))?;
                m.end()
            }
        }
    }
}

struct BufferOut<'a>(&'a Buffer);

impl Serialize for BufferOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let b = self.0;
        let mut m = s.serialize_map(Some(4))?;
        m.serialize_entry("base", &Hex(b.base))?;
        m.serialize_entry("len", &b.len)?;
        m.serialize_entry("space", b.space.name())?;
        m.serialize_entry("type", b.ty.name())?;
        m.end()
    }
}

/// The protocol's JSON form of a state, streamed: the same bytes as
/// `serde_json::to_vec(&state_to_json(s))` (keys sorted as in a `serde_json::Map`).
pub struct StateOut<'a>(pub &'a State);

impl Serialize for StateOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let st = self.0;
        let mut m = s.serialize_map(Some(10))?;
        m.serialize_entry("active", &st.active)?;
        m.serialize_entry("buffers", &Named(&st.buffers, BufferOut))?;
        m.serialize_entry("emask", &Hex(u64::from(st.emask)))?;
        m.serialize_entry("lanes", &st.lanes)?;
        m.serialize_entry("local_window", &WindowOut(&st.local_window))?;
        m.serialize_entry("memory", &MemoryOut(st))?;
        m.serialize_entry("regs", &Named(&st.regs, RegOut))?;
        m.serialize_entry("shared_window", &WindowOut(&st.shared_window))?;
        m.serialize_entry("simd_width", &st.simd_width)?;
        m.serialize_entry("slm_size", &st.slm_size.map(Hex))?;
        m.end()
    }
}

impl StateOut<'_> {
    /// Appends the state's JSON to `buf`: the same bytes as its `Serialize` form, with the hex
    /// strings (most of a request's bytes) written straight into the buffer, without the
    /// escape scan a serializer makes (hex digits never need escaping; names are escaped).
    pub fn write_to(&self, buf: &mut Vec<u8>) {
        let st = self.0;
        let hex = |buf: &mut Vec<u8>, v: u64| {
            buf.push(b'"');
            buf.extend_from_slice(hex_u64(v, &mut [0; 18]).as_bytes());
            buf.push(b'"');
        };
        let name = |buf: &mut Vec<u8>, n: &str| {
            // Writing into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut *buf, n);
        };
        let window = |buf: &mut Vec<u8>, w: &Option<Window>| match w {
            None => buf.extend_from_slice(b"null"),
            Some(w) => {
                buf.extend_from_slice(b"{\"base\":");
                hex(buf, w.base);
                buf.extend_from_slice(b",\"len\":");
                hex(buf, w.len);
                buf.push(b'}');
            }
        };
        let regions = |buf: &mut Vec<u8>, m: &atomcts_reference::memory::Memory| {
            const DIGITS: &[u8; 16] = b"0123456789abcdef";
            buf.push(b'[');
            for (i, (base, data)) in m.regions().enumerate() {
                if i > 0 {
                    buf.push(b',');
                }
                buf.extend_from_slice(b"{\"base\":");
                hex(buf, base);
                buf.extend_from_slice(b",\"bytes\":\"");
                buf.reserve(2 * data.len() + 2);
                for b in data {
                    buf.push(DIGITS[usize::from(b >> 4)]);
                    buf.push(DIGITS[usize::from(b & 15)]);
                }
                buf.extend_from_slice(b"\"}");
            }
            buf.push(b']');
        };
        buf.extend_from_slice(b"{\"active\":[");
        for (i, a) in st.active.iter().enumerate() {
            if i > 0 {
                buf.push(b',');
            }
            buf.extend_from_slice(if *a { b"true" } else { b"false" });
        }
        buf.extend_from_slice(b"],\"buffers\":{");
        for (i, (n, b)) in st.buffers.iter().enumerate() {
            if i > 0 {
                buf.push(b',');
            }
            name(buf, n);
            buf.extend_from_slice(b":{\"base\":");
            hex(buf, b.base);
            buf.extend_from_slice(b",\"len\":");
            buf.extend_from_slice(b.len.to_string().as_bytes());
            buf.extend_from_slice(b",\"space\":");
            name(buf, b.space.name());
            buf.extend_from_slice(b",\"type\":");
            name(buf, b.ty.name());
            buf.push(b'}');
        }
        buf.extend_from_slice(b"},\"emask\":");
        hex(buf, u64::from(st.emask));
        buf.extend_from_slice(b",\"lanes\":");
        buf.extend_from_slice(st.lanes.to_string().as_bytes());
        buf.extend_from_slice(b",\"local_window\":");
        window(buf, &st.local_window);
        buf.extend_from_slice(b",\"memory\":{\"global\":");
        regions(buf, &st.global);
        buf.extend_from_slice(b",\"shared\":");
        regions(buf, &st.shared);
        buf.extend_from_slice(b"},\"regs\":{");
        for (i, (n, r)) in st.regs.iter().enumerate() {
            if i > 0 {
                buf.push(b',');
            }
            name(buf, n);
            buf.extend_from_slice(b":{\"elems\":[");
            for (j, e) in r.elems.iter().enumerate() {
                if j > 0 {
                    buf.push(b',');
                }
                hex(buf, *e);
            }
            buf.extend_from_slice(b"],\"type\":");
            name(buf, r.ty.visa_name());
            buf.push(b'}');
        }
        buf.extend_from_slice(b"},\"shared_window\":");
        window(buf, &st.shared_window);
        buf.extend_from_slice(b",\"simd_width\":");
        buf.extend_from_slice(st.simd_width.to_string().as_bytes());
        buf.extend_from_slice(b",\"slm_size\":");
        match st.slm_size {
            None => buf.extend_from_slice(b"null"),
            Some(v) => hex(buf, v),
        }
        buf.push(b'}');
    }
}

/// A map by name, each value serialized through `f`.
struct Named<'a, T, F>(&'a BTreeMap<String, T>, F);

impl<'a, T, U: Serialize + 'a, F: Fn(&'a T) -> U> Serialize for Named<'a, T, F> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            m.serialize_entry(k, &(self.1)(v))?;
        }
        m.end()
    }
}

/// Appends one `run` request line (with its `\n`) to `buf`: the same bytes as the `Value`
/// route. `profile` is the request's `profile` object, serialized once per profile (`None`:
/// no `profile` key, for a shim that takes the profile once); `lowered` is `Some` for version
/// 2 (`Some(None)`: `"lowered": null`).
pub fn write_run(
    buf: &mut Vec<u8>,
    r: &crate::Request<'_>,
    profile: Option<&[u8]>,
    lowered: Option<Option<&atomcts_reference::ir::Lowered>>,
) {
    // Writing into a Vec cannot fail; the keys come in sorted order, as a `Map` prints them.
    let put = |buf: &mut Vec<u8>, v: &dyn erased::Ser| v.write(buf);
    buf.extend_from_slice(b"{\"asm\":");
    put(buf, &r.asm);
    buf.extend_from_slice(b",\"dialect\":");
    put(buf, &r.dialect.name());
    buf.extend_from_slice(b",\"id\":");
    put(buf, &r.id);
    if let Some(l) = lowered {
        buf.extend_from_slice(b",\"lowered\":");
        match l {
            None => buf.extend_from_slice(b"null"),
            Some(l) => put(buf, &crate::protocol2::LoweredOut(l)),
        }
    }
    if let Some(profile) = profile {
        buf.extend_from_slice(b",\"profile\":");
        buf.extend_from_slice(profile);
    }
    buf.extend_from_slice(b",\"state\":");
    StateOut(r.state).write_to(buf);
    buf.extend_from_slice(b",\"type\":\"run\"}\n");
}

/// One `serialize into a Vec` call for values of different types behind one `dyn`.
mod erased {
    pub trait Ser {
        fn write(&self, buf: &mut Vec<u8>);
    }
    impl<T: serde::Serialize + ?Sized> Ser for T {
        fn write(&self, buf: &mut Vec<u8>) {
            // A Vec never fails to grow, and every value here serializes.
            let _ = serde_json::to_writer(&mut *buf, self);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Reading answers.

/// A `0x...` hex string read as a number without allocating (what `hex_of` accepts).
pub(super) struct HexIn(pub u64);

impl<'de> Deserialize<'de> for HexIn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<HexIn, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = HexIn;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a 0x hex string")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<HexIn, E> {
                s.strip_prefix("0x")
                    .and_then(|h| u64::from_str_radix(h, 16).ok())
                    .map(HexIn)
                    .ok_or_else(|| E::custom("not a 0x hex string"))
            }
        }
        d.deserialize_str(V)
    }
}

/// A key that must hold a hex string when present (`null` is an error, as in the `Value`
/// route, which reads any present value with `hex_of`).
#[derive(Default)]
pub(super) enum PresentHex {
    #[default]
    Absent,
    Is(u64),
}

impl<'de> Deserialize<'de> for PresentHex {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<PresentHex, D::Error> {
        HexIn::deserialize(d).map(|h| PresentHex::Is(h.0))
    }
}

#[derive(serde::Deserialize)]
pub(super) struct RangeIn<'a> {
    base: HexIn,
    #[serde(borrow)]
    bytes: Cow<'a, str>,
}

#[derive(serde::Deserialize)]
pub(crate) struct MemoryIn<'a> {
    #[serde(borrow, default)]
    global: Option<Vec<RangeIn<'a>>>,
    #[serde(borrow, default)]
    shared: Option<Vec<RangeIn<'a>>>,
}

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
                out.push(h.0);
            }
            Ok(out)
        }
    }
    d.deserialize_seq(V)
}

#[derive(serde::Deserialize)]
struct WindowIn {
    base: HexIn,
    len: HexIn,
}

#[derive(serde::Deserialize)]
struct BufferIn<'a> {
    #[serde(borrow)]
    space: Cow<'a, str>,
    #[serde(borrow, rename = "type")]
    ty: Cow<'a, str>,
    base: HexIn,
    len: u64,
}

/// A state in an answer, typed. Only shapes the `Value` route reads the same way are
/// accepted here (a key of another type fails the typed read, and the `Value` route then
/// decides, with its own messages).
#[derive(serde::Deserialize)]
pub(super) struct StateIn<'a> {
    lanes: u64,
    #[serde(default)]
    active: Option<Vec<bool>>,
    #[serde(borrow, default)]
    regs: Option<BTreeMap<Cow<'a, str>, RegIn<'a>>>,
    #[serde(borrow, default)]
    memory: Option<MemoryIn<'a>>,
    #[serde(default)]
    slm_size: Option<HexIn>,
    #[serde(default)]
    shared_window: Option<WindowIn>,
    #[serde(default)]
    local_window: Option<WindowIn>,
    #[serde(borrow, default)]
    buffers: Option<BTreeMap<Cow<'a, str>, BufferIn<'a>>>,
    #[serde(default)]
    emask: PresentHex,
    #[serde(default)]
    simd_width: Option<u64>,
}

/// An answer of the common shapes, typed; anything else is read through the `Value` route.
#[derive(serde::Deserialize)]
pub(super) struct AnswerIn<'a> {
    #[serde(borrow)]
    pub id: Cow<'a, str>,
    #[serde(borrow)]
    pub outcome: Cow<'a, str>,
    #[serde(borrow, default)]
    pub state: Option<StateIn<'a>>,
    #[serde(borrow, default)]
    pub memory: Option<MemoryIn<'a>>,
    #[serde(default)]
    pub returned: Option<Vec<HexIn>>,
    #[serde(default)]
    pub ok: Option<Vec<bool>>,
}

/// Fills `space` of `s` from answer ranges, as `state_from_json` does: ascending bases, each
/// allocated and written.
pub(super) fn fill_memory(
    s: &mut State,
    space: Space,
    ranges: &[RangeIn<'_>],
) -> Result<(), String> {
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

/// The memory of an answer as a state of `lanes` lanes holding only that memory (what
/// `state_from_json({"lanes": lanes, "memory": mem})` gives).
pub(crate) fn memory_state(lanes: u32, mem: &MemoryIn<'_>) -> Result<State, String> {
    if lanes == 0 || lanes > atomcts_reference::state::MAX_LANES {
        return Err(format!("state.lanes = {lanes}"));
    }
    let mut s = State::new(lanes);
    fill_memory(&mut s, Space::Global, mem.global.as_deref().unwrap_or(&[]))?;
    fill_memory(&mut s, Space::Shared, mem.shared.as_deref().unwrap_or(&[]))?;
    s.validate().map_err(|e| e.to_string())?;
    Ok(s)
}

impl StateIn<'_> {
    /// The state, with the model's limits: the same result as `state_from_json` on the same
    /// text (an error here is returned as is: the typed read only takes well-typed states, and
    /// the checks and their messages are those of `state_from_json`).
    pub(super) fn into_state(self) -> Result<State, String> {
        let lanes = u32::try_from(self.lanes).map_err(|_| "state.lanes too large".to_string())?;
        if lanes == 0 || lanes > atomcts_reference::state::MAX_LANES {
            return Err(format!("state.lanes = {lanes}"));
        }
        let mut s = State::new(lanes);
        if let Some(a) = self.active {
            s.active = a;
        }
        for (name, r) in self.regs.into_iter().flatten() {
            let ty = type_of(&r.ty).ok_or(format!("regs.{name}: bad type"))?;
            if r.elems.len() > MAX_ELEMS {
                return Err(format!("regs.{name}: {} elements", r.elems.len()));
            }
            let mut elems = r.elems;
            for e in &mut elems {
                *e &= ty.mask();
            }
            s.regs.insert(name.into_owned(), Reg { ty, elems });
        }
        if let Some(m) = &self.memory {
            fill_memory(&mut s, Space::Global, m.global.as_deref().unwrap_or(&[]))?;
            fill_memory(&mut s, Space::Shared, m.shared.as_deref().unwrap_or(&[]))?;
        }
        s.slm_size = self.slm_size.map(|h| h.0);
        s.shared_window = self.shared_window.map(|w| Window {
            base: w.base.0,
            len: w.len.0,
        });
        s.local_window = self.local_window.map(|w| Window {
            base: w.base.0,
            len: w.len.0,
        });
        for (name, b) in self.buffers.into_iter().flatten() {
            let space = match &*b.space {
                "global" => Space::Global,
                "shared" => Space::Shared,
                other => return Err(format!("buffers.{name}.space = {:?}", Some(other))),
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
        if let PresentHex::Is(e) = self.emask {
            s.emask = u32::try_from(e).map_err(|_| "emask exceeds 32 bits".to_string())?;
        }
        if let Some(w) = self.simd_width {
            s.simd_width = u32::try_from(w).map_err(|_| "simd_width too large".to_string())?;
        }
        s.validate().map_err(|e| e.to_string())?;
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{state_from_json, state_to_json};
    use super::*;
    use atomcts_reference::types::ElemType;
    use serde_json::{Value, json};

    fn sample() -> State {
        let mut s = State::new(3);
        s.active = vec![true, false, true];
        s.regs.insert(
            "R2".into(),
            Reg {
                ty: ElemType::B32,
                elems: vec![0x1000, 0xffff_ffff, 0],
            },
        );
        s.regs.insert(
            "P0".into(),
            Reg {
                ty: ElemType::BOOL,
                elems: vec![1, 0, 1],
            },
        );
        s.global.alloc(0x1000, 300).unwrap();
        s.global.write(0x1004, 4, 0xdead_beef);
        s.global.alloc(0x9000, 3).unwrap();
        s.shared.alloc(0, 4).unwrap();
        s.slm_size = Some(4);
        s.shared_window = Some(Window {
            base: 0x8000,
            len: 0x100,
        });
        s.buffers.insert(
            "buf".into(),
            Buffer {
                space: Space::Shared,
                ty: AtomicType::Int,
                base: 0,
                len: 1,
            },
        );
        s.emask = 0xff;
        s
    }

    #[test]
    fn the_streamed_state_is_the_value_routes_bytes() {
        for s in [sample(), State::new(1), State::new(32)] {
            let streamed = serde_json::to_vec(&StateOut(&s)).unwrap();
            let tree = serde_json::to_vec(&state_to_json(&s)).unwrap();
            assert_eq!(
                String::from_utf8(streamed).unwrap(),
                String::from_utf8(tree).unwrap()
            );
        }
        let mut b = [0; 18];
        for v in [0, 1, 0xf, 0x10, u64::MAX, 0x8000_0000] {
            assert_eq!(hex_u64(v, &mut b), format!("{v:#x}"));
        }
    }

    /// The typed reader against `state_from_json`: equal states when it accepts, and it
    /// accepts every well-formed state.
    fn same(v: &Value) {
        let text = v.to_string();
        let old = state_from_json(v);
        match serde_json::from_str::<StateIn<'_>>(&text) {
            Ok(typed) => assert_eq!(typed.into_state(), old, "{text}"),
            Err(_) => assert!(
                old.is_err() || v.get("active").is_some() || v.get("simd_width").is_some(),
                "the typed reader refused a state the Value route takes: {text}"
            ),
        }
    }

    #[test]
    fn the_typed_reader_agrees_with_the_value_route() {
        same(&state_to_json(&sample()));
        same(&state_to_json(&State::new(32)));
        for v in [
            json!({"lanes": 0}),
            json!({"lanes": 5000}),
            json!({"lanes": 1, "regs": {"R0": {"type": "zz", "elems": []}}}),
            json!({"lanes": 1, "regs": {"R0": {"type": "b32", "elems": ["12"]}}}),
            json!({"lanes": 1, "regs": {"R0": {"type": "b32", "elems": ["0x1ffffffff"]}}}),
            json!({"lanes": 1, "memory": {"global": [{"base": "0x0", "bytes": "0g"}]}}),
            json!({"lanes": 1, "memory": {"global": [{"base": "0x0", "bytes": "0"}]}}),
            json!({"lanes": 1, "memory": {"global": [{"base": "0xffffffffffffffff", "bytes": "0000"}]}}),
            json!({"lanes": 1, "memory": {"global": [{"base": "0x10", "bytes": "00"}, {"base": "0x0", "bytes": "0102"}]}}),
            json!({"lanes": 1, "memory": {"global": null, "shared": [{"base": "0x4", "bytes": "ff"}]}}),
            json!({"lanes": 1, "emask": "0x100000000"}),
            json!({"lanes": 1, "emask": null}),
            json!({"lanes": 1, "emask": "0x3"}),
            json!({"lanes": 2, "active": [true]}),
            json!({"lanes": 2, "active": [true, 1]}),
            json!({"lanes": 1, "slm_size": null, "shared_window": null, "local_window": {"base": "0x0", "len": "0x10"}}),
            json!({"lanes": 1, "buffers": {"b": {"space": "device", "type": "atomic_int", "base": "0x0", "len": 1}}}),
            json!({"lanes": 1, "buffers": {"b": {"space": "global", "type": "atomic_uint", "base": "0x0", "len": 4}}}),
            json!({"lanes": 1, "simd_width": 0}),
            json!({"lanes": 1, "simd_width": "x"}),
            json!({"lanes": 1, "extra": {"ignored": [1, 2]}}),
        ] {
            same(&v);
        }
    }

    #[test]
    fn a_request_line_is_the_value_routes_bytes() {
        let s = sample();
        let profile = atomcts_reference::Profile::default();
        let r = crate::Request {
            id: "a \"quoted\" id\n",
            dialect: atomcts_reference::program::Dialect::Sass,
            asm: "ATOM.E.ADD R0, [R2], R4",
            state: &s,
            profile: &profile,
            lowered: None,
        };
        let p = json!({"name": "default", "knobs": {"k": "v"}});
        let mut line = Vec::new();
        write_run(&mut line, &r, Some(p.to_string().as_bytes()), None);
        let want = json!({"type": "run", "id": r.id, "dialect": "sass", "asm": r.asm,
                          "profile": p, "state": state_to_json(&s)});
        assert_eq!(
            String::from_utf8(line).unwrap(),
            format!("{}\n", serde_json::to_string(&want).unwrap())
        );
        let mut line = Vec::new();
        write_run(&mut line, &r, Some(p.to_string().as_bytes()), Some(None));
        let mut want = want;
        want["lowered"] = Value::Null;
        assert_eq!(
            String::from_utf8(line).unwrap(),
            format!("{}\n", serde_json::to_string(&want).unwrap())
        );
    }
}
