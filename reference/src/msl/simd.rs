//! MSL SIMD-group functions (Table 34 of §5.13 in the 2017 copy, §6.9.2 later): shuffle,
//! broadcast, shuffle up/down/xor, and the later rotate and and_fill functions. Parse, print and
//! lower to one [`ShuffleInstr`], in that order.
//!
//! A thread may read only from threads of its SIMD-group that take part; what it gets from an
//! inactive one is undefined ([`Source::Undefined`]). With `l` the caller's SIMD
//! lane ID, `N` the SIMD-group size and `d` the delta (which must be the same for all threads of
//! the SIMD-group, else the behaviour is undefined), the functions read:
//!
//! | function | source |
//! | --- | --- |
//! | `simd_shuffle(data, id)` | `data[id]` (id per thread; an invalid id is undefined) |
//! | `simd_broadcast(data, id)` | `data[id]` (id uniform and valid, else undefined behaviour) |
//! | `simd_shuffle_up(data, d)` | `l >= d ? data[l-d] : data[l]` |
//! | `simd_shuffle_down(data, d)` | `l+d < N ? data[l+d] : data[l]` |
//! | `simd_shuffle_xor(data, m)` | `data[l ^ m]` (m uniform; `l ^ m >= N` undefined, A22) |
//! | `simd_shuffle_rotate_up(data, d)` | `data[(l - d) mod N]` |
//! | `simd_shuffle_rotate_down(data, d)` | `data[(l + d) mod N]` |
//! | `simd_shuffle_and_fill_up(data, fill, d[, M])` | `k >= d ? data[l-d] : fill[b+M-d+k]` |
//! | `simd_shuffle_and_fill_down(data, fill, d[, M])` | `k+d < M ? data[l+d] : fill[b+k+d-M]` |
//!
//! with `M = N` when no modulo is given, `k = l mod M`, `b = l - k` (research notes §1.6, checked
//! against the document's example tables; the and_fill_down boundary is A23). What `N` is for a
//! partial last SIMD-group, and what deltas at or beyond `N` do, are knobs (A22).

use super::{CallSyntax, Operand, ident_arg, int_arg, int_value};
use crate::error::{ModelError, Reason, Rejection};
use crate::ir::{Instr, Lowered, Lowering, ShuffleInstr, Source};
use crate::knobs::{FillDownBoundary, PartialGroup, Profile, ShuffleDelta};
use crate::state::{Reg, State};
use std::collections::BTreeMap;
use std::fmt;

/// MSL Table 34 (and the later rotate and and_fill functions): a SIMD-group function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SimdFunction {
    /// `simd_shuffle(data, simd_lane_id)`.
    Shuffle,
    /// `simd_broadcast(data, broadcast_lane_id)`.
    Broadcast,
    /// `simd_shuffle_up(data, delta)`.
    ShuffleUp,
    /// `simd_shuffle_down(data, delta)`.
    ShuffleDown,
    /// `simd_shuffle_xor(value, mask)`.
    ShuffleXor,
    /// `simd_shuffle_rotate_up(data, delta)`.
    ShuffleRotateUp,
    /// `simd_shuffle_rotate_down(data, delta)`.
    ShuffleRotateDown,
    /// `simd_shuffle_and_fill_up(data, filling_data, delta[, modulo])`.
    ShuffleAndFillUp,
    /// `simd_shuffle_and_fill_down(data, filling_data, delta[, modulo])`.
    ShuffleAndFillDown,
}

impl SimdFunction {
    /// Every function.
    pub const ALL: &'static [SimdFunction] = &[
        SimdFunction::Shuffle,
        SimdFunction::Broadcast,
        SimdFunction::ShuffleUp,
        SimdFunction::ShuffleDown,
        SimdFunction::ShuffleXor,
        SimdFunction::ShuffleRotateUp,
        SimdFunction::ShuffleRotateDown,
        SimdFunction::ShuffleAndFillUp,
        SimdFunction::ShuffleAndFillDown,
    ];

    /// The MSL name.
    pub fn name(self) -> &'static str {
        match self {
            SimdFunction::Shuffle => "simd_shuffle",
            SimdFunction::Broadcast => "simd_broadcast",
            SimdFunction::ShuffleUp => "simd_shuffle_up",
            SimdFunction::ShuffleDown => "simd_shuffle_down",
            SimdFunction::ShuffleXor => "simd_shuffle_xor",
            SimdFunction::ShuffleRotateUp => "simd_shuffle_rotate_up",
            SimdFunction::ShuffleRotateDown => "simd_shuffle_rotate_down",
            SimdFunction::ShuffleAndFillUp => "simd_shuffle_and_fill_up",
            SimdFunction::ShuffleAndFillDown => "simd_shuffle_and_fill_down",
        }
    }

    fn from_name(s: &str) -> Option<SimdFunction> {
        SimdFunction::ALL.iter().copied().find(|f| f.name() == s)
    }

    fn has_fill(self) -> bool {
        matches!(
            self,
            SimdFunction::ShuffleAndFillUp | SimdFunction::ShuffleAndFillDown
        )
    }

    /// The name of the integer argument in the document.
    fn arg_name(self) -> &'static str {
        match self {
            SimdFunction::Shuffle => "simd_lane_id",
            SimdFunction::Broadcast => "broadcast_lane_id",
            SimdFunction::ShuffleXor => "mask",
            _ => "delta",
        }
    }
}

/// MSL Table 34: a parsed SIMD-group statement, `r = f(data[, fill], arg[, modulo])`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SimdCall {
    /// The per-thread variable receiving the result.
    pub result: String,
    /// The function.
    pub function: SimdFunction,
    /// The per-thread `data` operand.
    pub data: String,
    /// The per-thread `filling_data` operand of the and_fill functions.
    pub fill: Option<String>,
    /// The lane ID, delta or mask: an identifier or an integer literal.
    pub arg: Operand,
    /// The optional `modulo` of the and_fill functions.
    pub modulo: Option<Operand>,
}

impl SimdCall {
    /// Builds the call from its parts (the name starts with `simd_`).
    pub(crate) fn from_syntax(c: CallSyntax) -> Result<SimdCall, Rejection> {
        let function = SimdFunction::from_name(&c.name).ok_or_else(|| {
            Rejection::at(
                Reason::UnknownOperation,
                c.name_col,
                format!("`{}` is not a SIMD-group function this model knows", c.name),
            )
        })?;
        let Some((result, _)) = c.result.clone() else {
            return Err(Rejection::at(
                Reason::Syntax,
                0,
                format!("`{}` returns a value; write `r = {}(...)`", c.name, c.name),
            ));
        };
        let what = function.arg_name();
        let mut at = 0;
        let mut next = |want: &str| -> Result<&(super::Arg, usize), Rejection> {
            let a = c.args.get(at).ok_or_else(|| {
                Rejection::at(Reason::Syntax, c.close_col, format!("missing {want}"))
            })?;
            at += 1;
            Ok(a)
        };
        let (data, fill, arg, modulo);
        if function.has_fill() {
            c.arity(&[3, 4], "(data, filling_data, delta[, modulo])")?;
            data = ident_arg(next("data")?, "the per-thread `data` operand")?;
            fill = Some(ident_arg(
                next("filling_data")?,
                "the per-thread `filling_data` operand",
            )?);
            arg = int_arg(next(what)?, "an identifier or integer literal `delta`")?;
            modulo = match c.args.get(3) {
                Some(a) => Some(int_arg(a, "an identifier or integer literal `modulo`")?),
                None => None,
            };
        } else {
            c.arity(&[2], &format!("(data, {what})"))?;
            data = ident_arg(next("data")?, "the per-thread `data` operand")?;
            fill = None;
            arg = int_arg(
                next(what)?,
                &format!("an identifier or integer literal `{what}`"),
            )?;
            modulo = None;
        }
        Ok(SimdCall {
            result,
            function,
            data,
            fill,
            arg,
            modulo,
        })
    }
}

impl fmt::Display for SimdCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} = {}({}",
            self.result,
            self.function.name(),
            self.data
        )?;
        if let Some(fill) = &self.fill {
            write!(f, ", {fill}")?;
        }
        write!(f, ", {}", self.arg)?;
        if let Some(m) = &self.modulo {
            write!(f, ", {m}")?;
        }
        f.write_str(")")
    }
}

/// The thread `t`'s place: the first thread of its SIMD-group, its SIMD lane ID, and `N`.
#[derive(Clone, Copy, Debug)]
struct Place {
    base: u32,
    lane: u32,
    n: u32,
}

/// MSL §4.4.1 (A22): `N` for thread `t` is the SIMD width, or, when the profile says so, the
/// actual size of a partial last SIMD-group (the last group may be smaller).
fn place(t: u32, state: &State, profile: &Profile) -> Place {
    let w = state.simd_width.max(1);
    let base = t - t % w;
    let n = match profile.msl_partial_simd_group {
        PartialGroup::SimdWidth => w,
        PartialGroup::GroupSize => w.min(state.lanes - base),
    };
    Place {
        base,
        lane: t - base,
        n,
    }
}

/// MSL §5.13: the thread behind SIMD lane ID `j` of a group, if it exists and takes part; any
/// other source gives an undefined value.
fn usable(state: &State, p: Place, j: i64) -> Option<u32> {
    let j = u32::try_from(j).ok().filter(|j| *j < p.n)?;
    let t = p.base.checked_add(j)?;
    (t < state.lanes && state.active.get(t as usize).copied().unwrap_or(false)).then_some(t)
}

/// MSL Table 34: the lane ID, delta, mask and modulo parameters are `ushort`, so an argument of
/// thread `t` converts modulo 2^16.
fn ushort(state: &State, op: &Operand, t: u32) -> Result<u32, Rejection> {
    Ok((int_value(state, op, t)? as u64 & 0xFFFF) as u32)
}

enum Plan {
    Run(Vec<(u32, Source)>, Vec<(String, Reg)>),
    Unspecified(String),
}

/// MSL Table 34: lowers a SIMD-group statement to one [`ShuffleInstr`] for the active threads.
pub fn lower(c: &SimdCall, state: &State, profile: &Profile) -> Result<Lowering, ModelError> {
    Ok(match plan(c, state, profile) {
        Ok(Plan::Run(lanes, declare)) => Lowering::Run(Lowered {
            instr: Instr::Shuffle(ShuffleInstr {
                data: c.data.clone(),
                fill: c.fill.clone(),
                dst: c.result.clone(),
                lanes,
            }),
            writes: Vec::new(),
            declare,
        }),
        Ok(Plan::Unspecified(why)) => Lowering::Unspecified(why),
        Err(r) => Lowering::Invalid(r),
    })
}

fn per_thread<'s>(state: &'s State, name: &str, role: &str) -> Result<&'s Reg, Rejection> {
    let reg = state.regs.get(name).ok_or_else(|| {
        Rejection::new(
            Reason::UnknownOperand,
            format!("`{name}` ({role}) is not a per-thread operand of the state"),
        )
    })?;
    if reg.elems.len() < state.lanes as usize {
        return Err(Rejection::new(
            Reason::OperandSize,
            format!(
                "`{name}` has {} elements for {} threads",
                reg.elems.len(),
                state.lanes
            ),
        ));
    }
    Ok(reg)
}

fn plan(c: &SimdCall, state: &State, profile: &Profile) -> Result<Plan, Rejection> {
    let f = c.function;
    let data = per_thread(state, &c.data, "data")?;
    if let Some(fill) = &c.fill
        && per_thread(state, fill, "filling_data")?.ty != data.ty
    {
        return Err(Rejection::new(
            Reason::OperandType,
            format!("`{fill}` and `{}` must both have type T", c.data),
        ));
    }
    let mut declare = Vec::new();
    match state.regs.get(&c.result) {
        None => declare.push((
            c.result.clone(),
            Reg {
                ty: data.ty,
                elems: vec![0; state.lanes as usize],
            },
        )),
        Some(_) => {
            if per_thread(state, &c.result, "result")?.ty.bits != data.ty.bits {
                return Err(Rejection::new(
                    Reason::OperandType,
                    format!("`{}` does not have the width of T", c.result),
                ));
            }
        }
    }
    let active: Vec<u32> = (0..state.lanes)
        .filter(|t| state.active.get(*t as usize).copied().unwrap_or(false))
        .collect();
    let mut args = Vec::with_capacity(active.len());
    let mut moduli = Vec::with_capacity(active.len());
    for &t in &active {
        args.push(ushort(state, &c.arg, t)?);
        moduli.push(match &c.modulo {
            Some(m) => Some(ushort(state, m, t)?),
            None => None,
        });
    }
    // Table 34: except for simd_shuffle's lane ID, the argument must be the same for every
    // thread of the SIMD-group, or the behaviour is undefined.
    if f != SimdFunction::Shuffle {
        let mut seen: BTreeMap<u32, (u32, Option<u32>, u32)> = BTreeMap::new();
        for (i, &t) in active.iter().enumerate() {
            let p = place(t, state, profile);
            let (a, m) = (args[i], moduli[i]);
            match seen.get(&p.base) {
                None => {
                    seen.insert(p.base, (a, m, t));
                }
                Some(&(a0, m0, t0)) if a0 != a || m0 != m => {
                    let what = if a0 != a { f.arg_name() } else { "modulo" };
                    return Ok(Plan::Unspecified(format!(
                        "{}: {what} differs between threads {t0} and {t} of one SIMD-group; MSL Table 34 requires it to be uniform across the SIMD-group and leaves the behaviour undefined otherwise",
                        f.name()
                    )));
                }
                Some(_) => {}
            }
        }
    }
    let mut lanes = Vec::with_capacity(active.len());
    for (i, &t) in active.iter().enumerate() {
        let p = place(t, state, profile);
        let (l, n) = (i64::from(p.lane), i64::from(p.n));
        let data_at = |j: i64| usable(state, p, j).map_or(Source::Undefined, Source::Data);
        let fill_at = |j: i64| usable(state, p, j).map_or(Source::Undefined, Source::Fill);
        let mut a = args[i];
        // A22: a delta at or beyond N.
        let shifts = !matches!(
            f,
            SimdFunction::Shuffle | SimdFunction::Broadcast | SimdFunction::ShuffleXor
        );
        if shifts && a >= p.n {
            match profile.msl_shuffle_delta_out_of_range {
                ShuffleDelta::Formula => {}
                ShuffleDelta::MaskToWidth => {
                    if p.n.is_power_of_two() {
                        a &= p.n - 1;
                    }
                }
                ShuffleDelta::Undefined => {
                    return Ok(Plan::Unspecified(format!(
                        "{}: delta {a} is not below the SIMD-group size {}; behaviour left unspecified (msl.shuffle_delta_out_of_range = undefined, A22)",
                        f.name(),
                        p.n
                    )));
                }
            }
        }
        let d = i64::from(a);
        let source = match f {
            // An invalid lane ID leaves this thread's value undefined.
            SimdFunction::Shuffle => data_at(d),
            SimdFunction::Broadcast => {
                if a >= p.n {
                    return Ok(Plan::Unspecified(format!(
                        "simd_broadcast: broadcast_lane_id {a} is not a valid SIMD lane ID (the group has {} lanes); MSL Table 34 leaves the behaviour undefined",
                        p.n
                    )));
                }
                data_at(d)
            }
            SimdFunction::ShuffleUp => {
                if l >= d {
                    data_at(l - d)
                } else {
                    Source::Data(t)
                }
            }
            SimdFunction::ShuffleDown => {
                if l + d < n {
                    data_at(l + d)
                } else {
                    Source::Data(t)
                }
            }
            SimdFunction::ShuffleXor => data_at((p.lane ^ a).into()),
            SimdFunction::ShuffleRotateUp => data_at((l - d).rem_euclid(n)),
            SimdFunction::ShuffleRotateDown => data_at((l + d).rem_euclid(n)),
            SimdFunction::ShuffleAndFillUp | SimdFunction::ShuffleAndFillDown => {
                let m = i64::from(moduli[i].unwrap_or(p.n));
                if m == 0 {
                    return Ok(Plan::Unspecified(format!(
                        "{}: modulo 0 splits the SIMD-group into no vectors; the document defines no result",
                        f.name()
                    )));
                }
                let k = l % m;
                let b = l - k;
                if f == SimdFunction::ShuffleAndFillUp {
                    if k >= d {
                        data_at(l - d)
                    } else {
                        fill_at(b + m - d + k)
                    }
                } else {
                    // A23: the text says the fill is taken when the sum exceeds the size, the
                    // example tables take it when the sum reaches it.
                    let from_data = match profile.msl_fill_down_boundary {
                        FillDownBoundary::Ge => k + d < m,
                        FillDownBoundary::Gt => k + d <= m,
                    };
                    if from_data {
                        data_at(l + d)
                    } else {
                        fill_at(b + k + d - m)
                    }
                }
            }
        };
        lanes.push((t, source));
    }
    Ok(Plan::Run(lanes, declare))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msl::{self, Statement};
    use crate::outcome::{Allowed, Outcome};
    use crate::program::{Dialect, run};
    use crate::state::Loc;
    use crate::types::ElemType;

    fn call(text: &str) -> SimdCall {
        match msl::parse(text) {
            Ok(Statement::Simd(c)) => c,
            other => panic!("{text}: {other:?}"),
        }
    }

    /// `lanes` threads of SIMD width `w`; `x[t] = 10 + t`, `y[t] = 20 + t` (uint).
    fn state(lanes: u32, w: u32) -> State {
        let mut s = State::new(lanes);
        s.simd_width = w;
        for (name, base) in [("x", 10), ("y", 20)] {
            s.regs.insert(
                name.into(),
                Reg {
                    ty: ElemType::UD,
                    elems: (0..u64::from(lanes)).map(|t| base + t).collect(),
                },
            );
        }
        s
    }

    fn var(s: &mut State, name: &str, elems: &[u64]) {
        s.regs.insert(
            name.into(),
            Reg {
                ty: ElemType::UD,
                elems: elems.to_vec(),
            },
        );
    }

    fn profile(knobs: &[(&str, &str)]) -> Profile {
        let mut p = Profile::default();
        for (k, o) in knobs {
            p.set(k, o).unwrap();
        }
        p
    }

    /// Runs and returns `r` per thread, `None` where the value is undefined (open).
    fn result(text: &str, s: &State, p: &Profile) -> Vec<Option<u64>> {
        match run(Dialect::Msl, text, s, p).unwrap().outcome {
            Outcome::Completed(c) => (0..s.lanes)
                .map(|t| {
                    let open = c.open.iter().any(|(loc, f)| {
                        *loc == Loc::Reg {
                            name: "r".into(),
                            idx: t,
                        } && f.allowed == Allowed::Any
                    });
                    if open { None } else { c.state.elem("r", t) }
                })
                .collect(),
            other => panic!("{text}: {other:?}"),
        }
    }

    /// The reason an unspecified outcome gives, up to its first `;`.
    fn why(text: &str, s: &State, p: &Profile) -> Option<String> {
        match run(Dialect::Msl, text, s, p).unwrap().outcome {
            Outcome::Unspecified(w) => w.split(';').next().map(str::to_string),
            _ => None,
        }
    }

    fn unspecified(text: &str, s: &State, p: &Profile) -> bool {
        matches!(
            run(Dialect::Msl, text, s, p).unwrap().outcome,
            Outcome::Unspecified(_)
        )
    }

    fn some(v: &[u64]) -> Vec<Option<u64>> {
        v.iter().map(|x| Some(*x)).collect()
    }

    #[test]
    fn print_parse_round_trip() {
        let texts = [
            "r = simd_shuffle(x, i)",
            "r = simd_broadcast(x, 3)",
            "r = simd_shuffle_up(x, 2)",
            "r = simd_shuffle_down(x, d)",
            "r = simd_shuffle_xor(x, 1)",
            "r = simd_shuffle_rotate_up(x, 5)",
            "r = simd_shuffle_rotate_down(x, d)",
            "r = simd_shuffle_and_fill_up(x, y, 2)",
            "r = simd_shuffle_and_fill_down(x, y, d, 4)",
        ];
        for t in texts {
            let c = call(t);
            assert_eq!(c.to_string(), t);
            assert_eq!(call(&c.to_string()), c);
        }
        let c = call("r=simd_shuffle_and_fill_up( x ,y, 0x2 , m );");
        assert_eq!(c.to_string(), "r = simd_shuffle_and_fill_up(x, y, 2, m)");
        assert_eq!(c.fill.as_deref(), Some("y"));
        assert_eq!(c.modulo, Some(Operand::Var("m".into())));
        assert_eq!(c.function, SimdFunction::ShuffleAndFillUp);
    }

    #[test]
    fn parse_rejections() {
        use Reason::{Syntax, UnknownOperation};
        let cases = [
            ("simd_shuffle_up(x, 2)", Syntax),
            ("r = simd_shuffle_sideways(x, 2)", UnknownOperation),
            ("r = simd_sum(x)", UnknownOperation),
            ("r = simd_shuffle_up(3, 2)", Syntax),
            ("r = simd_shuffle_up(x, 2.0)", Syntax),
            ("r = simd_shuffle_up(x, &d)", Syntax),
            ("r = simd_shuffle_up(x)", Syntax),
            ("r = simd_shuffle_up(x, 1, 2)", Syntax),
            ("r = simd_shuffle_and_fill_up(x, 2)", Syntax),
            ("r = simd_shuffle_and_fill_up(x, 7, 2)", Syntax),
            ("r = simd_shuffle_and_fill_down(x, y, 2, 4, 4)", Syntax),
            ("r = simd_shuffle_and_fill_down(x, y, 2, 4.5)", Syntax),
            ("r = simd_broadcast(&b[0], 1)", Syntax),
        ];
        for (text, reason) in cases {
            assert_eq!(msl::parse(text).unwrap_err().reason, reason, "{text}");
        }
    }

    #[test]
    fn seed_example_up_and_down_by_two() {
        // The document's example: six threads a..f (here 10..15), delta 2. Up: a b a b c d;
        // down: c d e f e f. The example's group is the six threads: N = 6.
        let s = state(6, 6);
        let p = Profile::default();
        assert_eq!(
            result("r = simd_shuffle_up(x, 2)", &s, &p),
            some(&[10, 11, 10, 11, 12, 13])
        );
        assert_eq!(
            result("r = simd_shuffle_down(x, 2)", &s, &p),
            some(&[12, 13, 14, 15, 14, 15])
        );
    }

    #[test]
    fn partial_group_under_both_knob_options() {
        // Six threads in a SIMD width of 8. group_size: N = 6, the seed's picture again.
        // simd_width: N = 8, so threads 4 and 5 read lanes 6 and 7, which hold no thread.
        let s = state(6, 8);
        let group = profile(&[("msl.partial_simd_group", "group_size")]);
        assert_eq!(
            result("r = simd_shuffle_down(x, 2)", &s, &group),
            some(&[12, 13, 14, 15, 14, 15])
        );
        let width = profile(&[("msl.partial_simd_group", "simd_width")]);
        let got = result("r = simd_shuffle_down(x, 2)", &s, &width);
        assert_eq!(
            got,
            vec![Some(12), Some(13), Some(14), Some(15), None, None]
        );
        // Rotation wraps at N: by 8 under simd_width (thread 0 reads lane 6: no thread), by 6
        // under group_size (thread 0 reads lane 4).
        assert_eq!(
            result("r = simd_shuffle_rotate_up(x, 2)", &s, &group),
            some(&[14, 15, 10, 11, 12, 13])
        );
        assert_eq!(
            result("r = simd_shuffle_rotate_up(x, 2)", &s, &width),
            vec![None, None, Some(10), Some(11), Some(12), Some(13)]
        );
    }

    #[test]
    fn shuffle_reads_any_lane_per_thread() {
        // Six threads, width 8: ids [3, 3, 0, 5, 9, 6]. Id 9 is not a lane ID; lane 6 holds no
        // thread: both undefined for their caller only.
        let mut s = state(6, 8);
        var(&mut s, "i", &[3, 3, 0, 5, 9, 6]);
        assert_eq!(
            result("r = simd_shuffle(x, i)", &s, &Profile::default()),
            vec![Some(13), Some(13), Some(10), Some(15), None, None]
        );
        // Ids convert to ushort: 65536 + 2 reads lane 2.
        assert_eq!(
            result("r = simd_shuffle(x, 65538)", &s, &Profile::default()),
            some(&[12; 6])
        );
    }

    #[test]
    fn broadcast() {
        let mut s = state(4, 4);
        let p = Profile::default();
        assert_eq!(
            result("r = simd_broadcast(x, 2)", &s, &p),
            some(&[12, 12, 12, 12])
        );
        assert!(unspecified("r = simd_broadcast(x, 4)", &s, &p));
        var(&mut s, "i", &[1, 1, 2, 1]);
        assert!(unspecified("r = simd_broadcast(x, i)", &s, &p));
        // Uniform among the active threads is enough.
        s.active = vec![true, true, false, true];
        assert_eq!(
            result("r = simd_broadcast(x, i)", &s, &p),
            vec![Some(11), Some(11), Some(0), Some(11)]
        );
        // From an inactive thread every value is undefined; the inactive caller is not written.
        let lowered = run(Dialect::Msl, "r = simd_broadcast(x, 2)", &s, &p)
            .unwrap()
            .lowered
            .unwrap();
        let Instr::Shuffle(sh) = lowered.instr else {
            panic!()
        };
        assert_eq!(
            sh.lanes,
            vec![
                (0, Source::Undefined),
                (1, Source::Undefined),
                (3, Source::Undefined)
            ]
        );
    }

    #[test]
    fn xor_and_masks_beyond_the_group() {
        let s = state(8, 8);
        let p = Profile::default();
        assert_eq!(
            result("r = simd_shuffle_xor(x, 1)", &s, &p),
            some(&[11, 10, 13, 12, 15, 14, 17, 16])
        );
        // Mask 8 in a group of 8: every l ^ 8 >= 8, undefined (A22).
        assert_eq!(result("r = simd_shuffle_xor(x, 8)", &s, &p), vec![None; 8]);
        // Mask 4 with six threads in a width of 8: lanes 6 and 7 hold no thread.
        let s = state(6, 8);
        assert_eq!(
            result("r = simd_shuffle_xor(x, 4)", &s, &p),
            vec![Some(14), Some(15), None, None, Some(10), Some(11)]
        );
    }

    #[test]
    fn rotate() {
        let s = state(8, 8);
        let p = Profile::default();
        // (l - 3) mod 8 = 5 6 7 0 1 2 3 4; (l + 3) mod 8 = 3 4 5 6 7 0 1 2.
        assert_eq!(
            result("r = simd_shuffle_rotate_up(x, 3)", &s, &p),
            some(&[15, 16, 17, 10, 11, 12, 13, 14])
        );
        assert_eq!(
            result("r = simd_shuffle_rotate_down(x, 3)", &s, &p),
            some(&[13, 14, 15, 16, 17, 10, 11, 12])
        );
    }

    #[test]
    fn and_fill_up_with_and_without_modulo() {
        let s = state(8, 8);
        let p = Profile::default();
        // M = N = 8, d = 2: lanes 0, 1 take fill[8 - 2 + k] = fill[6], fill[7]; the rest data[l-2].
        assert_eq!(
            result("r = simd_shuffle_and_fill_up(x, y, 2)", &s, &p),
            some(&[26, 27, 10, 11, 12, 13, 14, 15])
        );
        // M = 4, d = 1: k = 0 takes fill[b + 3]; others data[l-1].
        assert_eq!(
            result("r = simd_shuffle_and_fill_up(x, y, 1, 4)", &s, &p),
            some(&[23, 10, 11, 12, 27, 14, 15, 16])
        );
    }

    #[test]
    fn and_fill_down_with_and_without_modulo_and_the_boundary_knob() {
        let s = state(8, 8);
        let ge = profile(&[("msl.fill_down_boundary", "ge")]);
        let gt = profile(&[("msl.fill_down_boundary", "gt")]);
        // M = 8, d = 2: lanes 6, 7 take fill[k + 2 - 8] = fill[0], fill[1].
        assert_eq!(
            result("r = simd_shuffle_and_fill_down(x, y, 2)", &s, &ge),
            some(&[12, 13, 14, 15, 16, 17, 20, 21])
        );
        // M = 4, d = 1, ge: k = 3 (k + d = 4 = M) takes fill[b + 3 + 1 - 4] = fill[b].
        let text = "r = simd_shuffle_and_fill_down(x, y, 1, 4)";
        assert_eq!(
            result(text, &s, &ge),
            some(&[11, 12, 13, 20, 15, 16, 17, 24])
        );
        // gt: k + d = M takes data[l + 1]: thread 3 reads 14, thread 7 reads lane 8 (none).
        assert_eq!(
            result(text, &s, &gt),
            vec![
                Some(11),
                Some(12),
                Some(13),
                Some(14),
                Some(15),
                Some(16),
                Some(17),
                None
            ]
        );
        // gt with d = 2, M = 4: k = 3 exceeds (5 > 4) and takes fill[b + 1]; k = 2 reaches M
        // and takes data[l + 2]: thread 2 reads lane 4, thread 6 reads lane 8 (none).
        assert_eq!(
            result("r = simd_shuffle_and_fill_down(x, y, 2, 4)", &s, &gt),
            vec![
                Some(12),
                Some(13),
                Some(14),
                Some(21),
                Some(16),
                Some(17),
                None,
                Some(25)
            ]
        );
        // Modulo 0 is no vector width.
        assert!(unspecified(
            "r = simd_shuffle_and_fill_down(x, y, 2, 0)",
            &s,
            &ge
        ));
    }

    #[test]
    fn inactive_sources_are_undefined_and_inactive_callers_untouched() {
        let mut s = state(4, 4);
        s.active = vec![true, false, true, true];
        var(&mut s, "r", &[99, 99, 99, 99]);
        // Up by 1: thread 0 keeps its own value, thread 2 reads inactive thread 1.
        assert_eq!(
            result("r = simd_shuffle_up(x, 1)", &s, &Profile::default()),
            vec![Some(10), Some(99), None, Some(12)]
        );
    }

    #[test]
    fn non_uniform_delta_is_unspecified() {
        let mut s = state(4, 4);
        let p = Profile::default();
        var(&mut s, "d", &[1, 1, 2, 1]);
        // The reason names the argument by the document's name.
        for (f, arg) in [
            ("simd_shuffle_up", "delta"),
            ("simd_shuffle_down", "delta"),
            ("simd_shuffle_xor", "mask"),
            ("simd_broadcast", "broadcast_lane_id"),
            ("simd_shuffle_rotate_up", "delta"),
            ("simd_shuffle_rotate_down", "delta"),
        ] {
            assert_eq!(
                why(&format!("r = {f}(x, d)"), &s, &p),
                Some(format!(
                    "{f}: {arg} differs between threads 0 and 2 of one SIMD-group"
                ))
            );
        }
        assert_eq!(
            why("r = simd_shuffle_and_fill_up(x, y, d)", &s, &p).as_deref(),
            Some(
                "simd_shuffle_and_fill_up: delta differs between threads 0 and 2 of one SIMD-group"
            )
        );
        var(&mut s, "m", &[4, 4, 2, 4]);
        assert_eq!(
            why("r = simd_shuffle_and_fill_up(x, y, 1, m)", &s, &p).as_deref(),
            Some(
                "simd_shuffle_and_fill_up: modulo differs between threads 0 and 2 of one SIMD-group"
            )
        );
        // Only active threads count.
        s.active = vec![true, true, false, true];
        // Thread 1 reads inactive thread 2; thread 2 is not written (r is declared zero).
        assert_eq!(
            result("r = simd_shuffle_down(x, d)", &s, &p),
            vec![Some(11), None, Some(0), Some(13)]
        );
    }

    #[test]
    fn each_simd_group_has_its_own_delta() {
        // Eight threads in two groups of four; group 0 shifts down by 1, group 1 by 2.
        let mut s = state(8, 4);
        var(&mut s, "d", &[1, 1, 1, 1, 2, 2, 2, 2]);
        assert_eq!(
            result("r = simd_shuffle_down(x, d)", &s, &Profile::default()),
            some(&[11, 12, 13, 13, 16, 17, 16, 17])
        );
    }

    #[test]
    fn delta_at_or_beyond_n_under_the_three_options() {
        let s = state(8, 8);
        let formula = profile(&[("msl.shuffle_delta_out_of_range", "formula")]);
        let masked = profile(&[("msl.shuffle_delta_out_of_range", "mask_to_width")]);
        let undefined = profile(&[("msl.shuffle_delta_out_of_range", "undefined")]);
        let own = [10, 11, 12, 13, 14, 15, 16, 17];
        // formula: up/down by 9 keep every own value; rotate uses the mod: by 9 = by 1.
        assert_eq!(
            result("r = simd_shuffle_up(x, 9)", &s, &formula),
            some(&own)
        );
        assert_eq!(
            result("r = simd_shuffle_down(x, 9)", &s, &formula),
            some(&own)
        );
        assert_eq!(
            result("r = simd_shuffle_rotate_down(x, 9)", &s, &formula),
            some(&[11, 12, 13, 14, 15, 16, 17, 10])
        );
        // mask_to_width: 9 & 7 = 1.
        assert_eq!(
            result("r = simd_shuffle_up(x, 9)", &s, &masked),
            some(&[10, 10, 11, 12, 13, 14, 15, 16])
        );
        assert_eq!(
            result("r = simd_shuffle_down(x, 9)", &s, &masked),
            some(&[11, 12, 13, 14, 15, 16, 17, 17])
        );
        // undefined: the whole outcome.
        for f in ["up", "down", "rotate_up", "rotate_down"] {
            assert!(unspecified(
                &format!("r = simd_shuffle_{f}(x, 9)"),
                &s,
                &undefined
            ));
            assert!(!unspecified(
                &format!("r = simd_shuffle_{f}(x, 7)"),
                &s,
                &undefined
            ));
        }
        // A width that is not a power of two is not masked: with N = 6 the delta 7 stays 7,
        // as in the formula (up by 7 >= 6 keeps own values).
        let s6 = state(6, 6);
        assert_eq!(
            result("r = simd_shuffle_up(x, 7)", &s6, &masked),
            some(&[10, 11, 12, 13, 14, 15])
        );
    }

    #[test]
    fn lowering_rejections() {
        let mut s = state(4, 4);
        s.regs.insert(
            "f".into(),
            Reg {
                ty: ElemType::F,
                elems: vec![0; 4],
            },
        );
        s.regs.insert(
            "short".into(),
            Reg {
                ty: ElemType::UD,
                elems: vec![0; 3],
            },
        );
        s.regs.insert(
            "h".into(),
            Reg {
                ty: ElemType::UW,
                elems: vec![0; 4],
            },
        );
        let cases = [
            ("r = simd_shuffle_up(z, 1)", Reason::UnknownOperand),
            ("r = simd_shuffle_up(x, d)", Reason::UnknownOperand),
            ("r = simd_shuffle_up(x, f)", Reason::OperandType),
            ("r = simd_shuffle_up(short, 1)", Reason::OperandSize),
            ("short = simd_shuffle_up(x, 1)", Reason::OperandSize),
            ("h = simd_shuffle_up(x, 1)", Reason::OperandType),
            ("r = simd_shuffle_and_fill_up(x, f, 1)", Reason::OperandType),
            (
                "r = simd_shuffle_and_fill_up(x, q, 1)",
                Reason::UnknownOperand,
            ),
        ];
        for (text, reason) in cases {
            match run(Dialect::Msl, text, &s, &Profile::default())
                .unwrap()
                .outcome
            {
                Outcome::Invalid(r) => assert_eq!(r.reason, reason, "{text}"),
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn float_data_lowers_to_the_same_exchange() {
        // T may be a float type: the exchange moves bits; the result takes T.
        let mut s = state(4, 4);
        s.regs.insert(
            "v".into(),
            Reg {
                ty: ElemType::F,
                elems: vec![0x3F80_0000, 0x4000_0000, 0x4040_0000, 0x4080_0000],
            },
        );
        let c = call("r = simd_shuffle_rotate_down(v, 1)");
        let Lowering::Run(l) = lower(&c, &s, &Profile::default()).unwrap() else {
            panic!()
        };
        assert_eq!(
            l.declare,
            vec![(
                "r".to_string(),
                Reg {
                    ty: ElemType::F,
                    elems: vec![0; 4]
                }
            )]
        );
        assert_eq!(
            l.instr,
            Instr::Shuffle(ShuffleInstr {
                data: "v".into(),
                fill: None,
                dst: "r".into(),
                lanes: vec![
                    (0, Source::Data(1)),
                    (1, Source::Data(2)),
                    (2, Source::Data(3)),
                    (3, Source::Data(0))
                ],
            })
        );
    }
}
