//! JSON building blocks both request writers share ([`super::wire`] for states,
//! [`super::lowered`] for the lowered IR): hex numbers and mapped sequences, serialized
//! without building `serde_json::Value` trees.

use serde::ser::{Serialize, SerializeSeq, Serializer};

/// `v` as `0x...` lowercase hex (what `format!("{v:#x}")` prints), without allocating.
pub(crate) fn hex_u64(v: u64, buf: &mut [u8; 18]) -> &str {
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
