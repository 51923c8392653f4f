//! Values and patterns of the case format: TOML integers (raw bits), TOML floats (values of a
//! float-typed location), typed strings `"<type>:<value>"`, and the patterns `"any"`,
//! `"<float type>:nan"`, `{ one_of = [...] }`, `{ bits = ..., mask = ... }`.

use crate::corpus::float_display::display;
use atomcts_reference::float::{self, Format};
use atomcts_reference::types::mask;
use toml::Value;

/// A value with its width in bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bits {
    /// The bit pattern.
    pub value: u64,
    /// Width in bits.
    pub width: u32,
}

/// How a value is shown to people beside its hex bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Human {
    /// As an integer (unsigned, and signed when negative).
    #[default]
    Int,
    /// As a float of this format.
    Float(Format),
    /// As two binary16 halves, low first.
    F16x2,
}

impl Human {
    /// `0x3fc00000 (1.5)`.
    pub fn show(self, v: u64, width: u32) -> String {
        let h = hex(v, width);
        match self {
            Human::Int => {
                let signed = atomcts_reference::types::sext(v, width);
                if signed < 0 {
                    format!("{h} ({v} / {signed})")
                } else {
                    format!("{h} ({v})")
                }
            }
            Human::Float(f) => format!("{h} ({})", display(f, v)),
            Human::F16x2 => format!(
                "{h} ({}, {})",
                display(Format::F16, v & 0xffff),
                display(Format::F16, (v >> 16) & 0xffff)
            ),
        }
    }
}

/// What a location is expected (or given) to hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pat {
    /// These bits under `care`; every `(lo, fmt)` field must be a NaN of `fmt`.
    Bits {
        /// How to show the value.
        human: Human,
        /// Expected bits.
        value: u64,
        /// Which bits are checked.
        care: u64,
        /// Fields that must hold any NaN.
        nan: Vec<(u32, Format)>,
        /// Width in bits of the pattern (64-bit values span SASS register pairs).
        width: u32,
    },
    /// Anything.
    Any,
    /// One of these.
    OneOf(Vec<Pat>),
}

impl Pat {
    /// An exact value.
    pub fn exact(b: Bits) -> Pat {
        Pat::Bits {
            human: Human::Int,
            value: b.value & mask(b.width),
            care: mask(b.width),
            nan: vec![],
            width: b.width,
        }
    }

    /// The same pattern shown as `h`.
    pub fn shown_as(self, h: Human) -> Pat {
        match self {
            Pat::Bits {
                value,
                care,
                nan,
                width,
                ..
            } => Pat::Bits {
                human: h,
                value,
                care,
                nan,
                width,
            },
            Pat::OneOf(ps) => Pat::OneOf(ps.into_iter().map(|p| p.shown_as(h)).collect()),
            Pat::Any => Pat::Any,
        }
    }

    /// How the pattern's values are shown.
    pub fn human(&self) -> Human {
        match self {
            Pat::Bits { human, .. } => *human,
            Pat::OneOf(ps) => ps.first().map_or(Human::Int, Pat::human),
            Pat::Any => Human::Int,
        }
    }

    /// Whether `v` matches.
    pub fn admits(&self, v: u64) -> bool {
        match self {
            Pat::Any => true,
            Pat::OneOf(ps) => ps.iter().any(|p| p.admits(v)),
            Pat::Bits {
                value, care, nan, ..
            } => (v ^ value) & care == 0 && nan.iter().all(|(lo, f)| float::is_nan(*f, v >> lo)),
        }
    }

    /// Width in bits (the widest alternative).
    pub fn width(&self) -> Option<u32> {
        match self {
            Pat::Any => None,
            Pat::Bits { width, .. } => Some(*width),
            Pat::OneOf(ps) => ps.iter().filter_map(|p| p.width()).max(),
        }
    }

    /// The pattern restricted to bits `[lo, lo+bits)`, shifted down (SASS register pairs).
    pub fn slice(&self, lo: u32, bits: u32) -> Pat {
        match self {
            Pat::Any => Pat::Any,
            Pat::OneOf(ps) => Pat::OneOf(ps.iter().map(|p| p.slice(lo, bits)).collect()),
            Pat::Bits {
                value,
                care,
                nan,
                human,
                ..
            } => Pat::Bits {
                human: *human,
                value: (value >> lo) & mask(bits),
                care: (care >> lo) & mask(bits),
                nan: nan
                    .iter()
                    .filter(|(l, f)| *l >= lo && *l + f.bits() <= lo + bits)
                    .map(|(l, f)| (l - lo, *f))
                    .collect(),
                width: bits,
            },
        }
    }

    /// The value a `given` entry stands for: the exact bits, with `<float>:nan` fields as the
    /// format's default quiet NaN. Patterns that leave bits open (`any`, masks) have none.
    pub fn representative(&self) -> Option<Bits> {
        match self {
            Pat::Bits {
                value,
                care,
                nan,
                width,
                ..
            } => {
                let mut v = *value & care;
                let mut covered = *care;
                for (lo, f) in nan {
                    v |= f.default_nan() << lo;
                    covered |= f.mask() << lo;
                }
                (covered & mask(*width) == mask(*width)).then_some(Bits {
                    value: v,
                    width: *width,
                })
            }
            _ => None,
        }
    }
}

/// The type named by a typed string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    U(u32),
    S(u32),
    F(Format),
    F16x2,
}

fn ty_of(name: &str) -> Option<Ty> {
    Some(match name {
        "u8" => Ty::U(8),
        "u16" => Ty::U(16),
        "u32" => Ty::U(32),
        "u64" => Ty::U(64),
        "s8" => Ty::S(8),
        "s16" => Ty::S(16),
        "s32" => Ty::S(32),
        "s64" => Ty::S(64),
        "f16" => Ty::F(Format::F16),
        "bf16" => Ty::F(Format::BF16),
        "f32" => Ty::F(Format::F32),
        "f64" => Ty::F(Format::F64),
        "f16x2" => Ty::F16x2,
        _ => return None,
    })
}

/// Parses an integer literal: decimal (optionally negative), `0x`, `0b`, `0o`; `_` separators.
pub fn parse_int(s: &str) -> Option<i128> {
    // Without copies unless there are `_` separators: every generated value passes here.
    let s = s.trim();
    let joined;
    let s = if s.contains('_') {
        joined = s.replace('_', "");
        joined.as_str()
    } else {
        s
    };
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let v = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        u128::from_str_radix(h, 16).ok()?
    } else if let Some(b) = body.strip_prefix("0b") {
        u128::from_str_radix(b, 2).ok()?
    } else if let Some(o) = body.strip_prefix("0o") {
        u128::from_str_radix(o, 8).ok()?
    } else {
        body.parse::<u128>().ok()?
    };
    let v = i128::try_from(v).ok()?;
    Some(if neg { -v } else { v })
}

fn int_in(v: i128, width: u32, signed_ok: bool) -> Result<u64, String> {
    let lo = if signed_ok {
        -(1i128 << (width - 1))
    } else {
        0
    };
    let hi = (1i128 << width) - 1;
    if v < lo || v > hi {
        return Err(format!("{v} does not fit in {width} bits"));
    }
    Ok((v as u64) & mask(width))
}

fn float_value(f: Format, s: &str) -> Result<Pat, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("nan") {
        return Ok(Pat::Bits {
            human: Human::Float(f),
            value: 0,
            care: 0,
            nan: vec![(0, f)],
            width: f.bits(),
        });
    }
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        let v = u64::from_str_radix(&h.replace('_', ""), 16)
            .map_err(|e| format!("bad hex `{t}`: {e}"))?;
        if v > f.mask() {
            return Err(format!("{t} does not fit in {}", f.name()));
        }
        return Ok(Pat::exact(Bits {
            value: v,
            width: f.bits(),
        })
        .shown_as(Human::Float(f)));
    }
    float::parse(f, t)
        .map(|v| {
            Pat::exact(Bits {
                value: v,
                width: f.bits(),
            })
            .shown_as(Human::Float(f))
        })
        .ok_or_else(|| format!("`{t}` is not a {} value", f.name()))
}

/// Parses a typed string `"<type>:<value>"` (also `"<float type>:nan"`).
pub fn parse_typed(s: &str) -> Result<Pat, String> {
    let (t, v) = s
        .split_once(':')
        .ok_or_else(|| format!("`{s}` is not `<type>:<value>`"))?;
    let ty = ty_of(t.trim()).ok_or_else(|| format!("unknown type `{t}` in `{s}`"))?;
    match ty {
        _ if v.trim() == "any" => {
            let width = match ty {
                Ty::U(w) | Ty::S(w) => w,
                Ty::F(f) => f.bits(),
                Ty::F16x2 => 32,
            };
            Ok(Pat::Bits {
                human: Human::Int,
                value: 0,
                care: 0,
                nan: vec![],
                width,
            })
        }
        Ty::U(w) => {
            let n = parse_int(v).ok_or_else(|| format!("`{v}` is not an integer"))?;
            Ok(Pat::exact(Bits {
                value: int_in(n, w, false)?,
                width: w,
            }))
        }
        Ty::S(w) => {
            let n = parse_int(v).ok_or_else(|| format!("`{v}` is not an integer"))?;
            // A signed type also accepts its raw hex pattern.
            let signed = !(v.trim().starts_with("0x") || v.trim().starts_with("0b"));
            Ok(Pat::exact(Bits {
                value: int_in(n, w, signed)?,
                width: w,
            }))
        }
        Ty::F(f) => float_value(f, v),
        Ty::F16x2 => {
            let (lo, hi) = v
                .split_once(',')
                .ok_or_else(|| format!("f16x2 needs two halves: `{s}`"))?;
            let mut value = 0;
            let mut care = 0;
            let mut nan = vec![];
            for (i, part) in [lo, hi].into_iter().enumerate() {
                let shift = 16 * i as u32;
                match float_value(Format::F16, part)? {
                    Pat::Bits {
                        value: v,
                        care: c,
                        nan: n,
                        ..
                    } => {
                        value |= v << shift;
                        care |= c << shift;
                        nan.extend(n.into_iter().map(|(l, f)| (l + shift, f)));
                    }
                    _ => return Err(format!("bad half `{part}`")),
                }
            }
            Ok(Pat::Bits {
                human: Human::F16x2,
                value,
                care,
                nan,
                width: 32,
            })
        }
    }
}

/// How a location's raw numbers are to be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// Width in bits.
    pub width: u32,
    /// Float format for TOML floats, if the location is float-typed.
    pub float: Option<Format>,
    /// How raw integers at this location are shown.
    pub human: Human,
}

/// An integer for a location of shape `slot`: it must fit, unsigned or signed (never truncated).
pub fn int_pat(i: i64, slot: Slot) -> Result<Pat, String> {
    Ok(Pat::exact(int_bits(i, slot)?).shown_as(slot.human))
}

/// The bits of an integer for a location of shape `slot` ([`int_pat`]'s exact value), or why
/// it does not fit.
pub fn int_bits(i: i64, slot: Slot) -> Result<Bits, String> {
    let i = i128::from(i);
    let w = slot.width;
    if w < 64 && (i >= (1i128 << w) || i < -(1i128 << (w - 1))) {
        return Err(format!("{i} does not fit in {w} bits"));
    }
    Ok(Bits {
        value: (i as u64) & mask(w),
        width: w,
    })
}

/// A boolean for a location of shape `slot`: 0 or 1.
pub fn bool_pat(b: bool, slot: Slot) -> Pat {
    Pat::exact(Bits {
        value: u64::from(b),
        width: slot.width.max(1),
    })
}

/// Parses one value or pattern for a location of shape `slot`.
pub fn parse_pat(v: &Value, slot: Slot) -> Result<Pat, String> {
    match v {
        Value::Integer(i) => int_pat(*i, slot),
        Value::Float(x) => {
            let f = slot
                .float
                .ok_or_else(|| format!("float {x} for a location that is not float-typed"))?;
            float_value(f, &format_float(*x))
        }
        Value::Boolean(b) => Ok(bool_pat(*b, slot)),
        Value::String(s) if s == "any" => Ok(Pat::Any),
        Value::String(s) => parse_typed(s),
        Value::Table(t) => {
            if let Some(alts) = t.get("one_of") {
                let Value::Array(a) = alts else {
                    return Err("one_of takes an array".into());
                };
                if t.len() != 1 {
                    return Err("one_of takes no other keys".into());
                }
                if a.is_empty() {
                    return Err("one_of = [] admits nothing: list at least one value".into());
                }
                return Ok(Pat::OneOf(
                    a.iter()
                        .map(|x| parse_pat(x, slot))
                        .collect::<Result<_, _>>()?,
                ));
            }
            if let (Some(b), Some(m)) = (t.get("bits"), t.get("mask")) {
                if t.len() != 2 {
                    return Err("bits/mask take no other keys".into());
                }
                let w = slot.width;
                let num = |x: &Value, what: &str| {
                    let v = match x {
                        Value::Integer(i) => i128::from(*i),
                        Value::String(s) => {
                            parse_int(s).ok_or_else(|| format!("{what}: bad number `{s}`"))?
                        }
                        _ => return Err("bits and mask are integers or hex strings".to_string()),
                    };
                    // Never truncated: a value wider than the location is an input error.
                    u64::try_from(v)
                        .ok()
                        .filter(|v| v & !mask(w) == 0)
                        .ok_or_else(|| format!("{what} = {x} does not fit in {w} bits"))
                };
                return Ok(Pat::Bits {
                    human: slot.human,
                    value: num(b, "bits")?,
                    care: num(m, "mask")?,
                    nan: vec![],
                    width: slot.width,
                });
            }
            Err(format!(
                "unknown pattern table (keys: {})",
                t.keys().cloned().collect::<Vec<_>>().join(", ")
            ))
        }
        other => Err(format!("unexpected value {other}")),
    }
}

/// A TOML float as a decimal string that round-trips (`-0` keeps its sign).
pub fn format_float(x: f64) -> String {
    if x.is_infinite() {
        if x < 0.0 { "-inf".into() } else { "inf".into() }
    } else if x.is_nan() {
        "nan".into()
    } else {
        format!("{x:?}")
    }
}

/// Renders bits as fixed-width hex.
pub fn hex(v: u64, width: u32) -> String {
    let digits = width.div_ceil(4).max(1) as usize;
    format!("0x{:0digits$x}", v & mask(width))
}

/// Parses `"base+len"`.
pub fn parse_range(s: &str) -> Result<(u64, u64), String> {
    let (b, l) = s
        .split_once('+')
        .ok_or_else(|| format!("`{s}` is not `base+len`"))?;
    let b = parse_int(b).ok_or_else(|| format!("bad base in `{s}`"))?;
    let l = parse_int(l).ok_or_else(|| format!("bad length in `{s}`"))?;
    let b = u64::try_from(b).map_err(|_| format!("base out of range in `{s}`"))?;
    let l = u64::try_from(l).map_err(|_| format!("length out of range in `{s}`"))?;
    if u128::from(b) + u128::from(l) > 1u128 << 64 {
        return Err(format!("`{s}` goes past 2^64"));
    }
    Ok((b, l))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_strings() {
        assert_eq!(
            parse_typed("s32:-3").unwrap(),
            Pat::exact(Bits {
                value: 0xFFFF_FFFD,
                width: 32
            })
        );
        assert_eq!(
            parse_typed("u64:0x100000000").unwrap(),
            Pat::exact(Bits {
                value: 1 << 32,
                width: 64
            })
        );
        assert!(parse_typed("u16:65536").is_err());
        assert!(parse_typed("q32:1").is_err());
        assert!(parse_typed("f16:0x10000").is_err());
        let nan = parse_typed("f32:nan").unwrap();
        assert!(nan.admits(0x7fc0_0000) && nan.admits(0xffff_ffff) && !nan.admits(0x7f80_0000));
        assert_eq!(
            parse_typed("f16x2:0x0001,0x8000").unwrap().representative(),
            Some(Bits {
                value: 0x8000_0001,
                width: 32
            })
        );
    }

    #[test]
    fn integers_and_patterns() {
        let s32 = Slot {
            width: 32,
            float: None,
            human: Human::Int,
        };
        assert_eq!(
            parse_pat(&Value::Integer(-1), s32).unwrap(),
            Pat::exact(Bits {
                value: 0xFFFF_FFFF,
                width: 32
            })
        );
        assert!(parse_pat(&Value::Integer(1 << 32), s32).is_err());
        assert!(parse_pat(&Value::Float(1.5), s32).is_err());
        assert_eq!(
            parse_pat(&Value::String("any".into()), s32).unwrap(),
            Pat::Any
        );
        let masked: Value =
            toml::from_str::<toml::Table>("x = { bits = \"0xabcd\", mask = \"0xffff\" }").unwrap()
                ["x"]
                .clone();
        let p = parse_pat(&masked, s32).unwrap();
        assert!(p.admits(0x1234_abcd) && !p.admits(0xabce));
        assert_eq!(parse_range("0x2000+0x100").unwrap(), (0x2000, 0x100));
        assert!(parse_range("0xffffffffffffffff+2").is_err());
        assert_eq!(hex(5, 32), "0x00000005");
    }
}
