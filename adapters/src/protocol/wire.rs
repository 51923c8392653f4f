//! The protocol's hot path without `serde_json::Value` trees (issue 9, deliverable 3): request
//! lines are written by a streaming serializer into one reused buffer. The bytes written are
//! exactly those of the `Value` route (`state_to_json`, keys in the same sorted order), as the
//! tests below check. Answers are read by [`super::answer`].

use atomcts_reference::state::{Buffer, Reg, State, Window};
use atomcts_reference::types::{ElemType, Space};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::fmt;

use super::json::{Hex, Seq, hex_u64};

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

/// Appends one request line of type `kind` (`run`, or `repro`: the same fields, PROTOCOL.md
/// "Standalone reproducers") (with its `\n`) to `buf`: the same bytes as the `Value`
/// route. `profile` is the request's `profile` object, serialized once per profile (`None`:
/// no `profile` key, for a shim that takes the profile once); `lowered` is `Some` for version
/// 2 (`Some(None)`: `"lowered": null`).
pub fn write_request(
    buf: &mut Vec<u8>,
    r: &crate::Request<'_>,
    profile: Option<&[u8]>,
    lowered: Option<Option<&atomcts_reference::ir::Lowered>>,
    kind: &str,
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
            Some(l) => put(buf, &super::lowered::LoweredOut(l)),
        }
    }
    if let Some(profile) = profile {
        buf.extend_from_slice(b",\"profile\":");
        buf.extend_from_slice(profile);
    }
    buf.extend_from_slice(b",\"state\":");
    StateOut(r.state).write_to(buf);
    buf.extend_from_slice(b",\"type\":");
    put(buf, &kind);
    buf.extend_from_slice(b"}\n");
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
// The `Value` route (concurrent requests, tests).

fn hexs(v: u64) -> Value {
    Value::String(format!("{v:#x}"))
}

fn type_name(t: ElemType) -> &'static str {
    t.visa_name()
}

/// The protocol's JSON form of a state.
pub fn state_to_json(s: &State) -> Value {
    let regs: Map<String, Value> = s
        .regs
        .iter()
        .map(|(n, r)| {
            (n.clone(), json!({"type": type_name(r.ty), "elems": r.elems.iter().map(|e| hexs(*e)).collect::<Vec<_>>()}))
        })
        .collect();
    let mem = |space: Space| -> Value {
        let m = s.memory(space);
        let mut out = Vec::new();
        for (base, data) in m.regions() {
            out.push(json!({"base": hexs(base), "bytes": hex_bytes(data)}));
        }
        Value::Array(out)
    };
    let window = |w: &Option<Window>| {
        w.map_or(
            Value::Null,
            |w| json!({"base": hexs(w.base), "len": hexs(w.len)}),
        )
    };
    let buffers: Map<String, Value> = s
        .buffers
        .iter()
        .map(|(n, b)| {
            (n.clone(), json!({"space": b.space.name(), "type": b.ty.name(), "base": hexs(b.base), "len": b.len}))
        })
        .collect();
    json!({
        "lanes": s.lanes,
        "active": s.active,
        "regs": regs,
        "memory": {"global": mem(Space::Global), "shared": mem(Space::Shared)},
        "slm_size": s.slm_size.map_or(Value::Null, hexs),
        "shared_window": window(&s.shared_window),
        "local_window": window(&s.local_window),
        "buffers": buffers,
        "emask": hexs(u64::from(s.emask)),
        "simd_width": s.simd_width,
    })
}

fn hex_bytes(data: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(2 * data.len());
    for b in data {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use atomcts_reference::state::AtomicType;
    use serde_json::{Value, json};

    /// A state with every kind of key set (registers, both spaces, windows, buffers).
    pub(in crate::protocol) fn sample() -> State {
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
        write_request(&mut line, &r, Some(p.to_string().as_bytes()), None, "run");
        let want = json!({"type": "run", "id": r.id, "dialect": "sass", "asm": r.asm,
                          "profile": p, "state": state_to_json(&s)});
        assert_eq!(
            String::from_utf8(line).unwrap(),
            format!("{}\n", serde_json::to_string(&want).unwrap())
        );
        let mut line = Vec::new();
        write_request(
            &mut line,
            &r,
            Some(p.to_string().as_bytes()),
            Some(None),
            "run",
        );
        let mut want = want;
        want["lowered"] = Value::Null;
        assert_eq!(
            String::from_utf8(line).unwrap(),
            format!("{}\n", serde_json::to_string(&want).unwrap())
        );
    }
}
