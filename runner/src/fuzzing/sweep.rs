//! `atomcts sweep`: exhaustive checks of the 16-bit float atomics, the fast path
//! (`atomcts_fast::apply`) against the reference semantics (`semantics::apply`, its first
//! effect, the reference's pick) over every pair of operands, as rustc_apfloat's brute-force
//! tests do for 8-bit formats. One configuration is 2^32 pairs.

use atomcts_reference::ModelError;
use atomcts_reference::float::{DenormRule, FtzMode, MinMaxRules, NanRule, Round, ZeroRule};
use atomcts_reference::ir::{AtomicOp, Compare, Env, NanBits};
use atomcts_reference::semantics;
use atomcts_reference::semantics::Effect;
use atomcts_reference::types::DataType;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

/// How many mismatches a sweep keeps (the first ones in operand order).
pub const KEEP: usize = 20;

/// One configuration: the datum type, the op and the float environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// F16, BF16, or F16x2 (pairs of halves).
    pub ty: DataType,
    /// Add, Min or Max.
    pub op: AtomicOp,
    /// The environment.
    pub env: Env,
}

impl Config {
    /// A one-line description with the option names of the command line.
    pub fn describe(&self) -> String {
        let e = &self.env;
        let mut s = format!("{} {}", self.ty, self.op.name());
        if self.op == AtomicOp::Add {
            s += &format!(" round={} ftz={}", round_name(e.round), ftz_name(e.ftz));
        } else {
            s += &format!(
                " minmax-nan={} minmax-zero={} minmax-denormals={}",
                nan_rule_name(e.minmax.nan),
                zero_rule_name(e.minmax.zero),
                denorm_rule_name(e.minmax.denormals)
            );
        }
        s += &format!(
            " nan={} ftz-return={}",
            if e.nan == NanBits::Canonical {
                "canonical"
            } else {
                "propagate"
            },
            if e.ftz_return { "flushed" } else { "raw" }
        );
        s
    }
}

/// An environment with the given float options and the rest as the front ends set them for a
/// plain float atomic (bit-exact NaNs, bitwise compare, strong).
pub fn env(round: Round, ftz: FtzMode, ftz_return: bool, nan: NanBits, minmax: MinMaxRules) -> Env {
    Env {
        round,
        ftz,
        ftz_return,
        nan,
        nan_exact: true,
        minmax,
        compare: Compare::Bitwise,
        weak: false,
    }
}

/// Names of [`Round`] on the command line.
pub const ROUNDS: &[(&str, Round)] = &[
    ("nearest_even", Round::NearestEven),
    ("toward_zero", Round::TowardZero),
];

/// Names of [`FtzMode`] on the command line.
pub const FTZ: &[(&str, FtzMode)] = &[
    ("none", FtzMode::NONE),
    (
        "inputs",
        FtzMode {
            inputs: true,
            outputs: false,
        },
    ),
    ("outputs", FtzMode::OUTPUTS),
    ("both", FtzMode::BOTH),
];

/// Names of [`NanBits`] on the command line.
pub const NANS: &[(&str, NanBits)] = &[
    ("canonical", NanBits::Canonical),
    ("propagate", NanBits::Propagate),
];

/// A5 rule names (the `float.minmax_nan` knob's options).
pub const NAN_RULES: &[(&str, NanRule)] = &[
    ("minimum_number", NanRule::MinimumNumber),
    ("intel_snan_wins", NanRule::IntelSnanWins),
    ("spirv_either", NanRule::SpirvEither),
];

/// A6 rule names (the `float.minmax_signed_zero` knob's options).
pub const ZERO_RULES: &[(&str, ZeroRule)] = &[
    ("ordered", ZeroRule::Ordered),
    ("either", ZeroRule::Either),
    ("skylake", ZeroRule::Skylake),
];

/// A7 rule names (the `float.minmax_denormals` knob's options).
pub const DENORM_RULES: &[(&str, DenormRule)] = &[
    ("compare_raw", DenormRule::CompareRaw),
    ("flush_before_compare", DenormRule::FlushBeforeCompare),
    ("either", DenormRule::Either),
];

fn name_of<T: PartialEq + Copy>(table: &[(&'static str, T)], v: T) -> &'static str {
    table.iter().find(|(_, x)| *x == v).map_or("?", |(n, _)| n)
}

fn round_name(r: Round) -> &'static str {
    name_of(ROUNDS, r)
}
fn ftz_name(f: FtzMode) -> &'static str {
    name_of(FTZ, f)
}
fn nan_rule_name(r: NanRule) -> &'static str {
    name_of(NAN_RULES, r)
}
fn zero_rule_name(r: ZeroRule) -> &'static str {
    name_of(ZERO_RULES, r)
}
fn denorm_rule_name(r: DenormRule) -> &'static str {
    name_of(DENORM_RULES, r)
}

/// Looks a name up in one of the option tables; the error lists the names.
pub fn lookup<T: Copy>(table: &[(&'static str, T)], what: &str, name: &str) -> Result<T, String> {
    table
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| *v)
        .ok_or_else(|| {
            let names: Vec<_> = table.iter().map(|(n, _)| *n).collect();
            format!("unknown {what} `{name}` ({})", names.join(", "))
        })
}

/// Every configuration `--all` covers for a type and op: for add every rounding, flushing,
/// returned-value flushing (only where inputs flush) and NaN encoding; for min/max every A5,
/// A6 and A7 rule and NaN encoding.
pub fn all_configs(ty: DataType, op: AtomicOp) -> Vec<Config> {
    let mut out = Vec::new();
    for &(_, nan) in NANS {
        if op == AtomicOp::Add {
            for &(_, round) in ROUNDS {
                for &(_, ftz) in FTZ {
                    for ftz_return in [false, true] {
                        if ftz_return && !ftz.inputs {
                            continue;
                        }
                        let env = env(round, ftz, ftz_return, nan, MinMaxRules::default());
                        out.push(Config { ty, op, env });
                    }
                }
            }
        } else {
            for &(_, n) in NAN_RULES {
                for &(_, zero) in ZERO_RULES {
                    for &(_, denormals) in DENORM_RULES {
                        let rules = MinMaxRules {
                            nan: n,
                            zero,
                            denormals,
                        };
                        let env = env(Round::NearestEven, FtzMode::NONE, false, nan, rules);
                        out.push(Config { ty, op, env });
                    }
                }
            }
        }
    }
    out
}

/// One operand pair where the fast path and the reference differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The memory value before.
    pub old: u64,
    /// The operand.
    pub src: u64,
    /// The reference's first effect (or its model error).
    pub reference: Result<Effect, String>,
    /// The fast path's effect (or its model error).
    pub fast: Result<Effect, String>,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |r: &Result<Effect, String>| match r {
            Ok(e) => format!("new={:#06x} ret={:#06x}", e.new, e.ret),
            Err(m) => format!("error: {m}"),
        };
        write!(
            f,
            "old={:#06x} src={:#06x}: reference {}; fast {}",
            self.old,
            self.src,
            show(&self.reference),
            show(&self.fast)
        )
    }
}

/// The result of a sweep over first operands `a` in a range and every second operand.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Pairs checked.
    pub pairs: u64,
    /// Pairs that differ.
    pub mismatches: u64,
    /// The first [`KEEP`] mismatches in operand order.
    pub first: Vec<Mismatch>,
}

impl Outcome {
    fn merge(mut self, other: Outcome) -> Outcome {
        self.pairs += other.pairs;
        self.mismatches += other.mismatches;
        self.first.extend(other.first);
        self.first.sort_by_key(|m| (m.old, m.src));
        self.first.truncate(KEEP);
        self
    }
}

/// The reference's pick: the first allowed effect.
fn reference(c: &Config, old: u64, src: u64) -> Result<Effect, ModelError> {
    let effects = semantics::apply(c.op, c.ty, &c.env, old, [src, 0])?;
    effects
        .first()
        .copied()
        .ok_or_else(|| ModelError::NotImplemented(format!("{} gave no effect", c.op.name())))
}

/// The operands of pair `(a, b)`: plain values, or for F16x2 both halves at once with the
/// operands swapped in the high half (`old = a | b << 16`, `src = b | a << 16`).
pub fn operands(ty: DataType, a: u64, b: u64) -> (u64, u64) {
    if ty == DataType::F16x2 {
        (a | (b << 16), b | (a << 16))
    } else {
        (a, b)
    }
}

/// Checks every second operand `b` for one first operand `a`.
pub fn row(c: &Config, a: u64) -> Outcome {
    let mut out = Outcome::default();
    for b in 0..=0xFFFFu64 {
        let (old, src) = operands(c.ty, a, b);
        let r = reference(c, old, src);
        let f = atomcts_fast::apply(c.op, c.ty, &c.env, old, [src, 0]);
        out.pairs += 1;
        let same = match (&r, &f) {
            (Ok(r), Ok(f)) => r == f,
            (Err(r), Err(f)) => std::mem::discriminant(r) == std::mem::discriminant(f),
            _ => false,
        };
        if !same {
            out.mismatches += 1;
            if out.first.len() < KEEP {
                out.first.push(Mismatch {
                    old,
                    src,
                    reference: r.map_err(|e| e.to_string()),
                    fast: f.map_err(|e| e.to_string()),
                });
            }
        }
    }
    out
}

/// Sweeps first operands `start..end` (at most 0x10000) in parallel; `tick` is called once per
/// finished first operand (for a progress bar); `stop` ends the sweep early when set.
pub fn sweep(
    c: &Config,
    start: u64,
    end: u64,
    tick: &(dyn Fn() + Sync),
    stop: &AtomicBool,
) -> Outcome {
    (start..end.min(0x1_0000))
        .into_par_iter()
        .map(|a| {
            if stop.load(Ordering::Relaxed) {
                return Outcome::default();
            }
            let r = row(c, a);
            tick();
            r
        })
        .reduce(Outcome::default, Outcome::merge)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(ty: DataType, op: AtomicOp) -> Config {
        Config {
            ty,
            op,
            env: env(
                Round::NearestEven,
                FtzMode::NONE,
                false,
                NanBits::Propagate,
                MinMaxRules::default(),
            ),
        }
    }

    #[test]
    fn a_row_checks_every_second_operand_and_agrees_with_the_reference() {
        // 1.0 (0x3c00) + every f16: 65536 pairs, no mismatch.
        let o = row(&cfg(DataType::F16, AtomicOp::Add), 0x3c00);
        assert_eq!(o.pairs, 0x10000);
        assert_eq!(o.mismatches, 0);
        let o = row(&cfg(DataType::BF16, AtomicOp::Max), 0x8000);
        assert_eq!((o.pairs, o.mismatches), (0x10000, 0));
    }

    #[test]
    fn f16x2_pairs_put_each_operand_in_both_halves() {
        assert_eq!(
            operands(DataType::F16x2, 0x3c00, 0xc000),
            (0xc000_3c00, 0x3c00_c000)
        );
        assert_eq!(operands(DataType::F16, 0x3c00, 0xc000), (0x3c00, 0xc000));
        // 1.0 + -2.0 = -1.0 (0xbc00) in both halves, the old value returned.
        let c = cfg(DataType::F16x2, AtomicOp::Add);
        let (old, src) = operands(c.ty, 0x3c00, 0xc000);
        let e = reference(&c, old, src).unwrap();
        assert_eq!(e.new, 0xbc00_bc00);
        assert_eq!(e.ret, 0xc000_3c00);
    }

    #[test]
    fn a_sweep_range_counts_pairs_and_ticks_once_per_first_operand() {
        let ticks = std::sync::atomic::AtomicU64::new(0);
        let stop = AtomicBool::new(false);
        let o = sweep(
            &cfg(DataType::F16, AtomicOp::Min),
            0x7c00,
            0x7c04,
            &|| {
                ticks.fetch_add(1, Ordering::Relaxed);
            },
            &stop,
        );
        assert_eq!(o.pairs, 4 * 0x10000);
        assert_eq!(ticks.load(Ordering::Relaxed), 4);
        assert_eq!(o.mismatches, 0);
    }

    #[test]
    fn merging_keeps_the_first_mismatches_in_operand_order() {
        let e = Effect {
            new: 1,
            ret: 2,
            success: true,
        };
        let m = |old| Mismatch {
            old,
            src: 0,
            reference: Ok(e),
            fast: Err("x".into()),
        };
        let a = Outcome {
            pairs: 10,
            mismatches: 15,
            first: (20..35).map(m).collect(),
        };
        let b = Outcome {
            pairs: 5,
            mismatches: 12,
            first: (0..12).map(m).collect(),
        };
        let o = a.merge(b);
        assert_eq!((o.pairs, o.mismatches), (15, 27));
        assert_eq!(o.first.len(), KEEP);
        assert_eq!(o.first[0].old, 0);
        assert_eq!(o.first[12].old, 20);
        assert_eq!(
            o.first[0].to_string(),
            "old=0x0000 src=0x0000: reference new=0x0001 ret=0x0002; fast error: x"
        );
    }

    #[test]
    fn all_covers_every_option_once() {
        let add = all_configs(DataType::F16, AtomicOp::Add);
        // 2 NaN encodings x 2 roundings x (none, outputs, inputs raw/flushed, both raw/flushed).
        assert_eq!(add.len(), 2 * 2 * 6);
        let max = all_configs(DataType::BF16, AtomicOp::Max);
        assert_eq!(max.len(), 2 * 3 * 3 * 3);
        for (i, a) in max.iter().enumerate() {
            assert!(max[i + 1..].iter().all(|b| b != a));
        }
        assert!(
            add[0]
                .describe()
                .starts_with("f16 add round=nearest_even ftz=none")
        );
    }

    #[test]
    fn lookup_names_the_options_on_error() {
        assert_eq!(lookup(FTZ, "ftz", "both"), Ok(FtzMode::BOTH));
        let e = lookup(ROUNDS, "rounding", "up").unwrap_err();
        assert_eq!(e, "unknown rounding `up` (nearest_even, toward_zero)");
    }
}
