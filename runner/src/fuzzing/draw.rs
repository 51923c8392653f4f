//! The random draw of one generated case (`atomcts gen`, `atomcts run --generated`, `atomcts
//! fuzz`): an instruction of every dialect over a state biased to edge values (0, 1, bounds, max,
//! min, subnormals, signed zeros, NaN payloads, infinities, misaligned and unallocated addresses,
//! racing lanes, many lanes on one or two addresses). It reads only an [`Entropy`] source:
//! ChaCha8 seeded by `--seed` for `gen`, libFuzzer's bytes for the fuzz targets.

use crate::fuzzing::draft::{Draft, G, GenCase, per_lane};
use atomcts_reference::float::Format;
use atomcts_reference::program::Dialect;
use atomcts_reference::state::AtomicType;
use atomcts_reference::types::mask;
use atomcts_reference::{msl, sass, visa};
use rand_chacha::ChaCha8Rng;
use rand_core::Rng;

/// A source of random numbers for the generator.
pub trait Entropy {
    /// The next 64 random bits.
    fn next_u64(&mut self) -> u64;

    /// A number in `0..n` (0 when `n` is 0).
    #[inline]
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }

    /// True with probability `num/den`.
    #[inline]
    fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }
}

impl Entropy for ChaCha8Rng {
    #[inline]
    fn next_u64(&mut self) -> u64 {
        Rng::next_u64(self)
    }
}

fn pick<T: Copy, E: Entropy + ?Sized>(e: &mut E, xs: &[T]) -> T {
    xs[e.below(xs.len() as u64) as usize]
}

/// Edge values of a width/format, or a random value a quarter of the time.
fn value<E: Entropy + ?Sized>(e: &mut E, width: u32, fmt: Option<Format>) -> u64 {
    if e.chance(1, 4) {
        return e.next_u64() & mask(width);
    }
    match fmt {
        Some(f) => {
            let sign = if e.chance(1, 2) { f.sign_mask() } else { 0 };
            let one = (f.exp_mask() >> 1) & f.exp_mask();
            // One of thirteen edge values, only the one drawn computed (`pick` over the
            // list of them draws the same index).
            let edge = match e.below(13) {
                0 => 0,
                1 => one,
                2 => one + (1 << f.frac_bits()),
                3 => 1,
                4 => f.frac_mask(),
                5 => 1 << f.frac_bits(),
                6 => f.exp_mask() - 1,
                7 => f.exp_mask(),
                8 => f.default_nan(),
                9 => f.exp_mask() | 1,
                10 => f.default_nan() | 0x5,
                11 => one | 1,
                _ => (one - (1 << f.frac_bits())) | (1 << (f.frac_bits() - 1)),
            };
            (edge | sign) & f.mask()
        }
        None => {
            let m = mask(width);
            let picks = [
                0,
                1,
                2,
                5,
                100,
                m,
                m - 1,
                m >> 1,
                (m >> 1) + 1,
                0x1234_5678_9abc_def0 & m,
            ];
            pick(e, &picks)
        }
    }
}

/// An ordinary float of format `f` (issue 31 point 3): finite, normal, between 1/4 and 8 in
/// magnitude, a quarter of the time negative, its fraction random (a third of the time only
/// its top bits, so that some sums are exact): racing min, max and add on such values change
/// the value held and round, where edge values (NaN, infinities, zeros) often mask both.
pub fn hot_float<E: Entropy + ?Sized>(e: &mut E, f: Format) -> u64 {
    let unit = 1u64 << f.frac_bits();
    let one = (f.exp_mask() >> 1) & f.exp_mask();
    let exp = one - 2 * unit + unit * e.below(5);
    let mut frac = e.next_u64() & f.frac_mask();
    if e.chance(1, 3) {
        frac &= !(f.frac_mask() >> 3);
    }
    let sign = if e.chance(1, 4) { f.sign_mask() } else { 0 };
    (sign | exp | frac) & f.mask()
}

/// One in this many generated cases is contended (issue 31 point 3): many lanes on one or
/// two addresses, every lane enabled, returns kept, float operands ordinary
/// ([`hot_float`]) most of the time, float ops drawn more often.
pub const HOT_ONE_IN: u64 = 3;

/// Generates one case of a random dialect.
pub fn gen_case<E: Entropy + ?Sized>(e: &mut E) -> GenCase {
    gen_draft(e).gen_case()
}

/// Generates one case of a random dialect, its state as typed values (the same draws and the
/// same case as [`gen_case`]).
pub fn gen_draft<E: Entropy + ?Sized>(e: &mut E) -> Draft {
    // The last of HOT_ONE_IN values, so that all-zero entropy (libFuzzer's empty input) still
    // makes the plain case with every `chance` taken.
    let hot = e.below(HOT_ONE_IN) == HOT_ONE_IN - 1;
    match e.below(10) {
        0..=3 => gen_sass(e, hot),
        4..=6 => gen_visa(e, hot),
        _ => gen_msl(e, hot),
    }
}

fn is_float_size(s: sass::atom::Size) -> bool {
    use sass::atom::Size;
    matches!(
        s,
        Size::F32FtzRn | Size::F64Rn | Size::F16x2Rn | Size::F16x2FtzRn
    )
}

fn gen_sass<E: Entropy + ?Sized>(e: &mut E, hot: bool) -> Draft {
    use sass::atom::{Op, Size};
    let op = if hot && e.chance(1, 2) {
        pick(e, &[Op::Add, Op::Min, Op::Max])
    } else {
        pick(e, Op::ALL)
    };
    let floats: Vec<Size> = op
        .sizes()
        .iter()
        .copied()
        .filter(|s| is_float_size(*s))
        .collect();
    let size = if hot && !floats.is_empty() && e.chance(2, 3) {
        pick(e, &floats)
    } else if e.chance(1, 12) {
        pick(e, Size::ALL)
    } else {
        pick(e, op.sizes())
    };
    let lanes = if hot {
        pick(e, &[8, 16, 32, 32])
    } else {
        pick(e, &[1, 1, 2, 3, 4, 8, 16, 32])
    };
    let wide = matches!(size, Size::U64 | Size::S64 | Size::F64Rn);
    let fmt = match size {
        Size::F32FtzRn => Some(Format::F32),
        Size::F64Rn => Some(Format::F64),
        Size::F16x2Rn | Size::F16x2FtzRn => Some(Format::F16),
        _ => None,
    };
    let width = if wide { 64 } else { 32 };
    let elem = |e: &mut E| -> u64 {
        let one = |e: &mut E, w: u32| match fmt {
            Some(f) if hot && e.chance(3, 4) => hot_float(e, f),
            _ => value(e, w, fmt),
        };
        match fmt {
            Some(Format::F16) => one(e, 16) | (one(e, 16) << 16),
            _ => one(e, width),
        }
    };
    let mut given = Draft::new(Dialect::Sass, lanes);
    let base = 0x1000u64;
    let slots = 8u64;
    let mut mem = Vec::with_capacity(2 * slots as usize);
    let tyw = if wide { 64 } else { 32 };
    for k in 0..slots {
        mem.push((base + 8 * k, G::Typed(tyw, elem(e))));
        if !wide {
            mem.push((base + 8 * k + 4, G::Typed(32, elem(e))));
        }
    }
    given.insert("mem", G::Mem(mem));
    if e.chance(1, 10) {
        given.insert("shared_window", G::Range(0x8000, 0x100));
    }
    let imm: i64 = if e.chance(1, 3) {
        8 * (e.below(4) as i64) - 8
    } else {
        0
    };
    let shared = e.below(slots);
    // A contended case: every lane on the shared slot, or a quarter of them on a second one.
    let second = base + 8 * e.below(slots);
    let n = lanes as usize;
    let mut ra = Vec::with_capacity(n);
    let (mut rb, mut rc) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..lanes {
        let addr = match if hot { 21 + e.below(4) } else { e.below(20) } {
            21 => second,
            22.. => base + 8 * shared,
            0 => {
                given.edge = true;
                base + 8 * e.below(slots) + 2
            }
            1 => {
                given.edge = true;
                0x2000 + 8 * e.below(4)
            }
            2 if given.get("shared_window").is_some() => 0x8000,
            3..=10 => base + 8 * shared,
            _ => base + 8 * e.below(slots) + if wide { 0 } else { 4 * e.below(2) },
        };
        ra.push(G::Int((addr as i64 - imm) as u64 & 0xFFFF_FFFF));
        let b = if matches!(op, Op::Inc | Op::Dec) {
            let small = e.next_u64() & 0xFF;
            pick(e, &[0, 1, 5, 0xFFFF_FFFF, small])
        } else {
            elem(e)
        };
        rb.push(G::Typed(tyw, b));
        rc.push(G::Typed(tyw, elem(e)));
    }
    given.insert("R2", per_lane(ra));
    given.insert("R4", per_lane(rb));
    if op == Op::Cas {
        let r = if wide { "R6" } else { "R5" };
        given.insert(r, per_lane(rc));
    }
    let guard = if !hot && e.chance(1, 5) {
        let ps: Vec<G> = (0..lanes).map(|_| G::Bool(e.chance(1, 2))).collect();
        given.insert("P0", per_lane(ps));
        if e.chance(1, 2) { "@P0 " } else { "@!P0 " }
    } else {
        ""
    };
    if !hot && e.chance(1, 10) {
        let act: Vec<G> = (0..lanes).map(|_| G::Bool(!e.chance(1, 4))).collect();
        given.insert("active", G::List(act));
    }
    let rd = if !hot && e.chance(1, 10) { "RZ" } else { "R0" };
    let sparse = e.chance(1, 20);
    let addr = if sparse || imm == 0 {
        "[R2]".to_string()
    } else if imm < 0 {
        format!("[R2-{:#x}]", -imm)
    } else {
        format!("[R2+{imm:#x}]")
    };
    if sparse && imm != 0 {
        // The sparse form has no immediate: fold it back into Ra.
        if let Some(v) = given.get_mut("R2") {
            fix_ra(v, imm);
        }
    }
    let ps = if sparse { "P1, " } else { "" };
    let operands = if op == Op::Cas {
        if wide { "R4, R6" } else { "R4, R5" }
    } else {
        "R4"
    };
    given.asm = concat(&[
        guard,
        "ATOM.",
        op.name(),
        ".",
        size.spelling(),
        " ",
        ps,
        rd,
        ", ",
        &addr,
        ", ",
        operands,
    ]);
    given
}

/// The instruction text of `parts`, written in one allocation (the draw makes one per case:
/// `format!` cost ten times as many instructions).
fn concat(parts: &[&str]) -> String {
    let mut s = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    for p in parts {
        s.push_str(p);
    }
    s
}

fn fix_ra(v: &mut G, imm: i64) {
    let f = |x: &G| match x {
        G::Int(i) => G::Int(i.wrapping_add(imm as u64) & 0xFFFF_FFFF),
        o => o.clone(),
    };
    let new = match &*v {
        G::List(a) => G::List(a.iter().map(f).collect()),
        o => f(o),
    };
    *v = new;
}

fn gen_visa<E: Entropy + ?Sized>(e: &mut E, hot: bool) -> Draft {
    if !hot && e.chance(1, 6) {
        return gen_scatter4(e);
    }
    use visa::dword_atomic::Op;
    let floats: Vec<Op> = Op::ALL
        .iter()
        .copied()
        .filter(|o| matches!(o.name(), "fmin" | "fmax" | "fadd" | "fsub"))
        .collect();
    let op = if hot && e.chance(1, 2) {
        pick(e, &floats)
    } else {
        pick(e, Op::ALL)
    };
    let w16 = e.chance(1, 5);
    let exec = if hot {
        pick(e, &[8u64, 16, 16])
    } else {
        pick(e, &[1u64, 2, 4, 8, 16])
    };
    let name = op.name();
    let ty = match name {
        "imin" | "imax" => "d",
        "fmax" | "fmin" | "fcmpwr" | "fadd" | "fsub" => "f",
        "predec" if e.chance(1, 2) => "d",
        _ => "ud",
    };
    let fmt = (ty == "f").then_some(if w16 { Format::F16 } else { Format::F32 });
    let width = if w16 { 16 } else { 32 };
    let bytes = u64::from(width / 8);
    let slm = e.chance(1, 2);
    let mut given = Draft::new(Dialect::Visa, 1);
    let size = 64 * bytes;
    let mut mem = Vec::with_capacity((size / 4) as usize);
    let base = if slm { 0 } else { 0x1000 };
    for k in 0..(size / 4) {
        let v = match fmt {
            Some(Format::F16) if hot => {
                hot_float(e, Format::F16) | (hot_float(e, Format::F16) << 16)
            }
            Some(f) if hot => hot_float(e, f),
            _ => value(e, 32, fmt.filter(|_| !w16).or(None)),
        };
        mem.push((base + 4 * k, G::Typed(32, v)));
    }
    if slm {
        given.insert(
            "slm",
            G::Table(vec![("size", G::Int(size)), ("mem", G::Mem(mem))]),
        );
    } else {
        given.insert("mem", G::Mem(mem));
    }
    let shared = e.below(16);
    let second = e.below(16);
    let mut edge = false;
    let offs: Vec<G> = (0..exec)
        .map(|_| {
            let o = match if hot { 17 + e.below(4) } else { e.below(16) } {
                17 => bytes * second,
                18.. => bytes * shared,
                0 => {
                    edge = true;
                    bytes * e.below(64) + 1
                }
                1 => {
                    edge = true;
                    size + bytes * e.below(4)
                }
                2..=6 => bytes * shared,
                _ => bytes * e.below(64),
            };
            G::Int(base + o)
        })
        .collect();
    given.edge = edge;
    let vec = |vals: Vec<G>, t: &'static str| G::Table(vec![(t, G::List(vals))]);
    given.insert("V10", vec(offs, "ud"));
    let data = |e: &mut E| -> Vec<G> {
        (0..exec)
            .map(|_| {
                let v = match fmt {
                    Some(f) if hot && e.chance(3, 4) => hot_float(e, f),
                    _ => value(e, width, fmt),
                };
                let junk = if w16 && e.chance(1, 2) {
                    (e.next_u64() & 0xFFFF) << 16
                } else {
                    0
                };
                G::Int(v | junk)
            })
            .collect()
    };
    let needs_src0 = !matches!(name, "inc" | "dec" | "predec");
    let needs_src1 = matches!(name, "cmpxchg" | "fcmpwr");
    let src0 = if needs_src0 {
        given.insert("V11", vec(data(e), ty));
        "V11"
    } else {
        "V0"
    };
    let src1 = if needs_src1 {
        given.insert("V12", vec(data(e), ty));
        "V12"
    } else {
        "V0"
    };
    let dst = if !hot && e.chance(1, 10) {
        "V0"
    } else {
        given.insert(
            "V13",
            vec((0..exec).map(|_| G::Int(0xDDDD_DDDD)).collect(), ty),
        );
        "V13"
    };
    let pred = if !hot && e.chance(1, 5) {
        given.insert("P1", G::Int(e.next_u64() & 0xFFFF));
        if e.chance(1, 2) { "(P1) " } else { "(!P1) " }
    } else {
        ""
    };
    if !hot && e.chance(1, 5) {
        given.insert("emask", G::Int(e.next_u64() & 0xFFFF_FFFF));
    }
    let mask = match e.below(6) {
        0 => "M1_NM, ".to_string(),
        1 => format!("M{}, ", 1 + e.below(3)),
        _ => String::new(),
    };
    let surface = if slm { "T0" } else { "T255" };
    let exec = exec.to_string();
    given.asm = concat(&[
        pred,
        "DWORD_ATOMIC.",
        name,
        if w16 { ".16" } else { "" },
        " (",
        &mask,
        &exec,
        ") ",
        surface,
        " V10 ",
        src0,
        " ",
        src1,
        " ",
        dst,
    ]);
    given
}

fn gen_scatter4<E: Entropy + ?Sized>(e: &mut E) -> Draft {
    let exec = pick(e, &[8u64, 16]);
    let mut chans = String::new();
    let bits = 1 + e.below(15);
    for (i, c) in ['R', 'G', 'B', 'A'].into_iter().enumerate() {
        if bits >> i & 1 == 1 {
            chans.push(c);
        }
    }
    let mut given = Draft::new(Dialect::Visa, 1);
    given.insert("V20", G::Table(vec![("uq", G::Int(0x1000))]));
    let mut edge = false;
    let offs: Vec<G> = (0..exec)
        .map(|i| match e.below(12) {
            0 => {
                edge = true;
                G::Int(16 * i + 2)
            }
            1 => {
                edge = true;
                G::Int(0x10_0000)
            }
            2..=3 => G::Int(0),
            _ => G::Int(16 * i),
        })
        .collect();
    given.edge = edge;
    given.insert("V21", G::Table(vec![("uq", G::List(offs))]));
    let src: Vec<G> = (0..64).map(|_| G::Int(value(e, 32, None))).collect();
    given.insert("V22", G::Table(vec![("ud", G::List(src))]));
    given.insert("alloc", G::List(vec![G::Range(0x1000, 0x200)]));
    if e.chance(1, 5) {
        given.insert("emask", G::Int(e.next_u64() & 0xFFFF));
    }
    let asm = format!("SVM_SCATTER4_SCALED.{chans} ({exec}) V20 V21 V22");
    given.asm = asm;
    given
}

fn gen_msl<E: Entropy + ?Sized>(e: &mut E, hot: bool) -> Draft {
    if !hot && e.chance(1, 3) {
        return gen_simd(e);
    }
    let lanes = if hot {
        pick(e, &[8u32, 32, 64])
    } else {
        pick(e, &[1u32, 2, 4, 8, 32, 64])
    };
    let ty = match e.below(if hot { 3 } else { 10 }) {
        0 => AtomicType::Float,
        1..=5 => AtomicType::Int,
        _ => AtomicType::Uint,
    };
    // `atomic_float` add and sub are device-only (MSL §8.2): a contended float case is there.
    let space = if !(hot && ty == AtomicType::Float) && e.chance(1, 3) {
        "threadgroup"
    } else {
        "device"
    };
    let len = 1 + e.below(6);
    let fmt = (ty == AtomicType::Float).then_some(Format::F32);
    let mut given = Draft::new(Dialect::Msl, lanes);
    let msl_value = |e: &mut E| match fmt {
        Some(f) if hot && e.chance(3, 4) => hot_float(e, f),
        _ => value(e, 32, fmt),
    };
    let init = G::List((0..len).map(|_| G::Int(msl_value(e))).collect());
    given.insert(
        "buf",
        G::Table(vec![
            ("space", G::Str(space)),
            ("type", G::Str(ty.name())),
            ("init", init),
        ]),
    );
    let second = e.below(len);
    let mut edge = false;
    let idx: Vec<G> = (0..lanes)
        .map(|_| match if hot { 17 + e.below(4) } else { e.below(16) } {
            17 => G::Int(second),
            18.. => G::Int(0),
            0 => {
                edge = true;
                G::Int(len + e.below(3))
            }
            1..=8 => G::Int(0),
            _ => G::Int(e.below(len)),
        })
        .collect();
    given.edge = edge;
    given.insert("i", G::List(idx));
    let vals: Vec<G> = (0..lanes).map(|_| G::Int(msl_value(e))).collect();
    let opty = if ty == AtomicType::Float {
        "float"
    } else if ty == AtomicType::Int {
        "int"
    } else {
        "uint"
    };
    given.insert("v", G::Table(vec![(opty, G::List(vals))]));
    let key = if hot && ty == AtomicType::Float {
        pick(e, &[msl::atomic::Key::Add, msl::atomic::Key::Sub])
    } else {
        pick(e, msl::atomic::Key::ALL)
    };
    let fetch = |r: &str| {
        concat(&[
            r,
            "atomic_fetch_",
            key.name(),
            "_explicit(&buf[i], v, memory_order_relaxed)",
        ])
    };
    let asm = match e.below(10) {
        // A contended case keeps its returns (no bare call).
        2 if hot => fetch("r = "),
        0 => "r = atomic_exchange_explicit(&buf[i], v, memory_order_relaxed)".to_string(),
        1 => {
            let exp: Vec<G> = (0..lanes).map(|_| G::Int(value(e, 32, None))).collect();
            given.insert("ex", G::Table(vec![("uint", G::List(exp))]));
            "ok = atomic_compare_exchange_weak_explicit(&buf[i], &ex, v, memory_order_relaxed, memory_order_relaxed)".to_string()
        }
        2 => fetch(""),
        _ => fetch("r = "),
    };
    given.asm = asm;
    given
}

fn gen_simd<E: Entropy + ?Sized>(e: &mut E) -> Draft {
    use msl::simd::SimdFunction as F;
    let width = pick(e, &[4u64, 8, 16, 32]);
    let lanes = if e.chance(1, 4) {
        1 + e.below(width)
    } else {
        width
    } as u32;
    let f = pick(e, F::ALL);
    let mut given = Draft::new(Dialect::Msl, lanes);
    given.insert("simd_width", G::Int(width));
    let data: Vec<G> = (0..lanes)
        .map(|_| G::Int(e.next_u64() & 0xFFFF_FFFF))
        .collect();
    given.insert("x", G::List(data));
    if e.chance(1, 5) {
        let act: Vec<G> = (0..lanes).map(|_| G::Bool(!e.chance(1, 4))).collect();
        given.insert("active", G::List(act));
    }
    let arg = |e: &mut E, g: &mut Draft| -> String {
        if e.chance(1, 6) {
            let vals: Vec<G> = (0..lanes).map(|_| G::Int(e.below(width + 2))).collect();
            g.insert("d", G::List(vals));
            "d".into()
        } else {
            pick(e, &[0, 1, 2, 3, width - 1, width, width + 1]).to_string()
        }
    };
    let asm = match f {
        F::ShuffleAndFillUp | F::ShuffleAndFillDown => {
            let fill: Vec<G> = (0..lanes)
                .map(|_| G::Int(e.next_u64() & 0xFFFF_FFFF))
                .collect();
            given.insert("y", G::List(fill));
            let d = arg(e, &mut given);
            if e.chance(1, 2) {
                format!(
                    "r = {}(x, y, {d}, {})",
                    f.name(),
                    pick(e, &[2u64, 4, 8, width])
                )
            } else {
                format!("r = {}(x, y, {d})", f.name())
            }
        }
        _ => {
            let d = arg(e, &mut given);
            format!("r = {}(x, {d})", f.name())
        }
    };
    given.asm = asm;
    given
}
