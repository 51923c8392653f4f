//! MSL atomic functions: `atomic_fetch_key_explicit` (key add, and, max, min, or, sub, xor) with
//! and without the device-memory `memory_scope` argument, the ios-metal2.0 `atomic_fetch_key`
//! forms with the implied `memory_order_seq_cst`, `atomic_exchange_explicit` and
//! `atomic_compare_exchange_weak_explicit`: parse, print and lower, in that order.
//!
//! MSL §6.15.4.5: every call returns the object's prior value, and the document leaves no
//! result undefined. `atomic_int` arithmetic wraps in two's complement and its min/max compare signed;
//! `atomic_uint` compares unsigned: the signedness comes from the object type, not the function
//! (A25). `atomic_float` supports only add and sub, and only in device memory (A24).

use super::{Arg, CallSyntax, Operand, ident_arg, int_value, wrong_arg};
use crate::error::{ModelError, Reason, Rejection};
use crate::float::{self, Format, FtzMode, Round};
use crate::ir::{
    Access, AtomicOp, Compare, Dest, Env, Instr, Lowered, Lowering, MemInstr, Misaligned,
    OutOfRange, RegField, SameAddress, Upper,
};
use crate::knobs::{MslDenormals, MslMemoryOrder, MslRounding, Profile};
use crate::state::{AtomicType, Buffer, Reg, State};
use crate::types::{DataType, ElemType, Kind, Space};
use std::fmt;

/// MSL §6.15.4.5, `atomic_fetch_key_explicit`: the `key`, in the document's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Key {
    /// `add`: `old + operand`.
    Add,
    /// `and`: `old & operand`.
    And,
    /// `max`: the larger, signed for `atomic_int`, unsigned for `atomic_uint`.
    Max,
    /// `min`: the smaller, signed for `atomic_int`, unsigned for `atomic_uint`.
    Min,
    /// `or`: `old | operand`.
    Or,
    /// `sub`: `old - operand`.
    Sub,
    /// `xor`: `old ^ operand`.
    Xor,
}

impl Key {
    /// Every key.
    pub const ALL: &'static [Key] = &[
        Key::Add,
        Key::And,
        Key::Max,
        Key::Min,
        Key::Or,
        Key::Sub,
        Key::Xor,
    ];

    /// The spelling inside the function name.
    pub fn name(self) -> &'static str {
        match self {
            Key::Add => "add",
            Key::And => "and",
            Key::Max => "max",
            Key::Min => "min",
            Key::Or => "or",
            Key::Sub => "sub",
            Key::Xor => "xor",
        }
    }

    fn from_name(s: &str) -> Option<Key> {
        Key::ALL.iter().copied().find(|k| k.name() == s)
    }

    fn op(self) -> AtomicOp {
        match self {
            Key::Add => AtomicOp::Add,
            Key::And => AtomicOp::And,
            Key::Max => AtomicOp::Max,
            Key::Min => AtomicOp::Min,
            Key::Or => AtomicOp::Or,
            Key::Sub => AtomicOp::Sub,
            Key::Xor => AtomicOp::Xor,
        }
    }
}

/// MSL §6.15.4.5 (N4): `memory_order` values, with their C++ names; every Metal version supports
/// `memory_order_relaxed`, ios-metal2.0 all of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryOrder {
    /// `memory_order_relaxed`.
    Relaxed,
    /// `memory_order_consume`.
    Consume,
    /// `memory_order_acquire`.
    Acquire,
    /// `memory_order_release`.
    Release,
    /// `memory_order_acq_rel`.
    AcqRel,
    /// `memory_order_seq_cst` (implied by the non-explicit functions).
    SeqCst,
}

impl MemoryOrder {
    /// Every order.
    pub const ALL: &'static [MemoryOrder] = &[
        MemoryOrder::Relaxed,
        MemoryOrder::Consume,
        MemoryOrder::Acquire,
        MemoryOrder::Release,
        MemoryOrder::AcqRel,
        MemoryOrder::SeqCst,
    ];

    /// The MSL spelling.
    pub fn name(self) -> &'static str {
        match self {
            MemoryOrder::Relaxed => "memory_order_relaxed",
            MemoryOrder::Consume => "memory_order_consume",
            MemoryOrder::Acquire => "memory_order_acquire",
            MemoryOrder::Release => "memory_order_release",
            MemoryOrder::AcqRel => "memory_order_acq_rel",
            MemoryOrder::SeqCst => "memory_order_seq_cst",
        }
    }

    fn from_name(s: &str) -> Option<MemoryOrder> {
        MemoryOrder::ALL.iter().copied().find(|o| o.name() == s)
    }
}

/// MSL §6.15.4.5, the device overloads of `atomic_fetch_key_explicit`: `memory_scope` values.
/// On one instruction the scope changes nothing observable; it only selects the overload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryScope {
    /// `memory_scope_device`.
    Device,
    /// `memory_scope_threadgroup`.
    Threadgroup,
    /// `memory_scope_simdgroup`.
    Simdgroup,
}

impl MemoryScope {
    /// Every scope.
    pub const ALL: &'static [MemoryScope] = &[
        MemoryScope::Device,
        MemoryScope::Threadgroup,
        MemoryScope::Simdgroup,
    ];

    /// The MSL spelling.
    pub fn name(self) -> &'static str {
        match self {
            MemoryScope::Device => "memory_scope_device",
            MemoryScope::Threadgroup => "memory_scope_threadgroup",
            MemoryScope::Simdgroup => "memory_scope_simdgroup",
        }
    }

    fn from_name(s: &str) -> Option<MemoryScope> {
        MemoryScope::ALL.iter().copied().find(|o| o.name() == s)
    }
}

/// The order (and optional scope) arguments of an `_explicit` function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Explicit {
    /// `order` (the success order of a compare-exchange).
    pub order: MemoryOrder,
    /// `scope`, present only in the device-memory overloads.
    pub scope: Option<MemoryScope>,
}

/// MSL §6.15.4.5: which atomic function.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Function {
    /// `atomic_fetch_key_explicit(object, operand, order[, scope])`, or with `explicit: None`
    /// the ios-metal2.0 `atomic_fetch_key(object, operand)` (implied `memory_order_seq_cst`).
    FetchKey {
        /// The key.
        key: Key,
        /// Order and scope of the `_explicit` form.
        explicit: Option<Explicit>,
    },
    /// `atomic_exchange_explicit(object, desired, order[, scope])`.
    Exchange {
        /// Order and scope.
        explicit: Explicit,
    },
    /// `atomic_compare_exchange_weak_explicit(object, &expected, desired, success, failure
    /// [, scope])`.
    CompareExchangeWeak {
        /// The per-thread `expected` operand (`&e`): compared, and updated on failure.
        expected: String,
        /// Success order and scope.
        explicit: Explicit,
        /// Failure order.
        failure: MemoryOrder,
    },
}

/// MSL §6.15.4.5: a parsed atomic statement, `[r =] f(&buffer[index], ...)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AtomicCall {
    /// The identifier the returned value is assigned to, if any.
    pub result: Option<String>,
    /// The function.
    pub function: Function,
    /// The buffer of atomic objects.
    pub buffer: String,
    /// The element index: an identifier or an integer literal.
    pub index: Operand,
    /// `operand` of fetch_key, `desired` of exchange and compare-exchange.
    pub value: Operand,
}

impl AtomicCall {
    /// The function's name as written.
    pub fn name(&self) -> String {
        match &self.function {
            Function::FetchKey {
                key,
                explicit: Some(_),
            } => format!("atomic_fetch_{}_explicit", key.name()),
            Function::FetchKey {
                key,
                explicit: None,
            } => format!("atomic_fetch_{}", key.name()),
            Function::Exchange { .. } => "atomic_exchange_explicit".to_string(),
            Function::CompareExchangeWeak { .. } => {
                "atomic_compare_exchange_weak_explicit".to_string()
            }
        }
    }

    /// Builds the call from its parts (the name starts with `atomic_`).
    pub(crate) fn from_syntax(c: CallSyntax) -> Result<AtomicCall, Rejection> {
        enum Shape {
            Fetch(Key, bool),
            Exchange,
            Cas,
        }
        let name = c.name.as_str();
        let shape = if name == "atomic_exchange_explicit" {
            Shape::Exchange
        } else if name == "atomic_compare_exchange_weak_explicit" {
            Shape::Cas
        } else if let Some(rest) = name.strip_prefix("atomic_fetch_") {
            let (key, explicit) = match rest.strip_suffix("_explicit") {
                Some(k) => (k, true),
                None => (rest, false),
            };
            match Key::from_name(key) {
                Some(k) => Shape::Fetch(k, explicit),
                None => return Err(unknown(&c)),
            }
        } else {
            return Err(unknown(&c));
        };
        let result = c.result.as_ref().map(|r| r.0.clone());
        let (buffer, index) = match c.args.first() {
            Some((
                Arg::Element {
                    buffer: b,
                    index: i,
                },
                _,
            )) => (b.clone(), i.clone()),
            Some(a) => return Err(wrong_arg(a, "the atomic object `&buffer[index]`")),
            None => {
                return Err(Rejection::at(
                    Reason::Syntax,
                    c.close_col,
                    format!("`{name}` needs the atomic object `&buffer[index]`"),
                ));
            }
        };
        let value_at = |i: usize| -> Result<Operand, Rejection> {
            match c.args.get(i) {
                Some((Arg::Value(v), _)) => Ok(v.clone()),
                Some(a) => Err(wrong_arg(a, "an identifier or a literal")),
                None => Err(Rejection::at(
                    Reason::Syntax,
                    c.close_col,
                    "missing operand",
                )),
            }
        };
        let explicit_at = |i: usize| -> Result<Explicit, Rejection> {
            let order = order_at(&c, i)?;
            let scope = match c.args.get(i + 1) {
                None => None,
                Some(a) => {
                    let s = ident_arg(a, "a memory_scope")?;
                    Some(MemoryScope::from_name(&s).ok_or_else(|| {
                        Rejection::at(Reason::Syntax, a.1, format!("`{s}` is not a memory_scope"))
                    })?)
                }
            };
            Ok(Explicit { order, scope })
        };
        let (function, value) = match shape {
            Shape::Fetch(key, true) => {
                c.arity(&[3, 4], "(object, operand, order[, scope])")?;
                let explicit = Some(explicit_at(2)?);
                (Function::FetchKey { key, explicit }, value_at(1)?)
            }
            Shape::Fetch(key, false) => {
                c.arity(&[2], "(object, operand)")?;
                let explicit = None;
                (Function::FetchKey { key, explicit }, value_at(1)?)
            }
            Shape::Exchange => {
                c.arity(&[3, 4], "(object, desired, order[, scope])")?;
                let explicit = explicit_at(2)?;
                (Function::Exchange { explicit }, value_at(1)?)
            }
            Shape::Cas => {
                c.arity(
                    &[5, 6],
                    "(object, &expected, desired, success, failure[, scope])",
                )?;
                let expected = match c.args.get(1) {
                    Some((Arg::Ref(e), _)) => e.clone(),
                    Some(a) => return Err(wrong_arg(a, "`&expected`")),
                    None => return Err(Rejection::at(Reason::Syntax, c.close_col, "missing")),
                };
                let success = order_at(&c, 3)?;
                let Explicit { scope, .. } = explicit_at(4)?;
                let failure = order_at(&c, 4)?;
                (
                    Function::CompareExchangeWeak {
                        expected,
                        explicit: Explicit {
                            order: success,
                            scope,
                        },
                        failure,
                    },
                    value_at(2)?,
                )
            }
        };
        Ok(AtomicCall {
            result,
            function,
            buffer,
            index,
            value,
        })
    }
}

fn unknown(c: &CallSyntax) -> Rejection {
    Rejection::at(
        Reason::UnknownOperation,
        c.name_col,
        format!(
            "`{}` is not an MSL atomic function this model knows",
            c.name
        ),
    )
}

fn order_at(c: &CallSyntax, i: usize) -> Result<MemoryOrder, Rejection> {
    let a = c
        .args
        .get(i)
        .ok_or_else(|| Rejection::at(Reason::Syntax, c.close_col, "missing memory_order"))?;
    let s = ident_arg(a, "a memory_order")?;
    MemoryOrder::from_name(&s)
        .ok_or_else(|| Rejection::at(Reason::Syntax, a.1, format!("`{s}` is not a memory_order")))
}

impl fmt::Display for AtomicCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(r) = &self.result {
            write!(f, "{r} = ")?;
        }
        write!(f, "{}(&{}[{}], ", self.name(), self.buffer, self.index)?;
        let scope = |f: &mut fmt::Formatter<'_>, s: Option<MemoryScope>| match s {
            Some(s) => write!(f, ", {}", s.name()),
            None => Ok(()),
        };
        match &self.function {
            Function::FetchKey { explicit, .. } => {
                write!(f, "{}", self.value)?;
                if let Some(e) = explicit {
                    write!(f, ", {}", e.order.name())?;
                    scope(f, e.scope)?;
                }
            }
            Function::Exchange { explicit } => {
                write!(f, "{}, {}", self.value, explicit.order.name())?;
                scope(f, explicit.scope)?;
            }
            Function::CompareExchangeWeak {
                expected,
                explicit,
                failure,
            } => {
                write!(
                    f,
                    "&{expected}, {}, {}, {}",
                    self.value,
                    explicit.order.name(),
                    failure.name()
                )?;
                scope(f, explicit.scope)?;
            }
        }
        f.write_str(")")
    }
}

/// MSL §8.1-8.2 (A24): the float environment of `atomic_float` add/sub under a profile. §8.2
/// allows rounding to nearest even or toward zero, §8.1 flushing of subnormal inputs and outputs;
/// the returned value's flush (A3) and NaN bits (A4) follow the shared float knobs.
/// Compare-exchange compares bits (A9).
pub fn env(profile: &Profile) -> Env {
    Env {
        round: match profile.msl_float_rounding {
            MslRounding::NearestEven => Round::NearestEven,
            MslRounding::TowardZero => Round::TowardZero,
        },
        ftz: match profile.msl_float_denormals {
            MslDenormals::Preserve => FtzMode::NONE,
            MslDenormals::Flush => FtzMode::BOTH,
        },
        compare: Compare::Bitwise,
        ..Env::from_profile(profile)
    }
}

fn invalid(reason: Reason, detail: String) -> Result<Lowering, ModelError> {
    Ok(Lowering::Invalid(Rejection::new(reason, detail)))
}

/// MSL §6.15.4.5: lowers one atomic statement; each active thread, in ascending order, accesses
/// element `index` of the buffer. Checks in order: the buffer, the function × object type table, the
/// address space, the memory orders, then the operands of every active thread.
pub fn lower(c: &AtomicCall, state: &State, profile: &Profile) -> Result<Lowering, ModelError> {
    let Some(buf) = state.buffers.get(&c.buffer) else {
        return invalid(
            Reason::UnknownOperand,
            format!("`{}` is not a buffer of the state", c.buffer),
        );
    };
    // "applicable to any atomic object of type atomic_int, and atomic_uint. Atomic add and sub
    // support atomic_float only in device memory" (A24, A25).
    let op = match &c.function {
        Function::FetchKey { key, .. } => key.op(),
        Function::Exchange { .. } => AtomicOp::Exch,
        Function::CompareExchangeWeak { .. } => AtomicOp::Cas,
    };
    let ty = match buf.ty {
        AtomicType::Int => DataType::S32,
        AtomicType::Uint => DataType::U32,
        AtomicType::Float if matches!(op, AtomicOp::Add | AtomicOp::Sub) => DataType::F32,
        AtomicType::Float => {
            return invalid(
                Reason::UnsupportedType,
                format!("`{}` does not take an atomic_float object", c.name()),
            );
        }
    };
    if buf.ty == AtomicType::Float && buf.space != Space::Global {
        return invalid(
            Reason::UnsupportedAddressSpace,
            format!(
                "atomic_float `{}` is in threadgroup memory; float add and sub are device-only",
                c.buffer
            ),
        );
    }
    // The overloads with a memory_scope argument take a `device A*` object only.
    let scope = match &c.function {
        Function::FetchKey { explicit, .. } => explicit.and_then(|e| e.scope),
        Function::Exchange { explicit } | Function::CompareExchangeWeak { explicit, .. } => {
            explicit.scope
        }
    };
    if let Some(s) = scope
        && buf.space != Space::Global
    {
        return invalid(
            Reason::UnsupportedAddressSpace,
            format!(
                "the `{}` overload takes a device object; `{}` is in threadgroup memory",
                s.name(),
                c.buffer
            ),
        );
    }
    // N4: "For all versions of Metal, memory_order_relaxed is supported"; ios-metal2.0 adds the
    // rest, and its non-explicit functions imply memory_order_seq_cst.
    let orders: Vec<MemoryOrder> = match &c.function {
        Function::FetchKey { explicit, .. } => {
            vec![explicit.map_or(MemoryOrder::SeqCst, |e| e.order)]
        }
        Function::Exchange { explicit } => vec![explicit.order],
        Function::CompareExchangeWeak {
            explicit, failure, ..
        } => vec![explicit.order, *failure],
    };
    if profile.msl_memory_order == MslMemoryOrder::RelaxedOnly
        && let Some(o) = orders.iter().find(|o| **o != MemoryOrder::Relaxed)
    {
        let how = if matches!(c.function, Function::FetchKey { explicit: None, .. }) {
            " (implied by the non-explicit form)"
        } else {
            ""
        };
        return invalid(
            Reason::UnsupportedMemoryOrder,
            format!(
                "{}{how} is not supported; only memory_order_relaxed is (msl.memory_order = relaxed_only, N4)",
                o.name()
            ),
        );
    }
    match threads(c, state, buf, ty) {
        Ok(Threads::Run(accesses, declare)) => Ok(Lowering::Run(Lowered {
            instr: Instr::Mem(MemInstr {
                op,
                ty,
                space: buf.space,
                env: Env {
                    weak: op == AtomicOp::Cas,
                    ..env(profile)
                },
                misaligned: Misaligned::Fault,
                out_of_range: OutOfRange::Fault,
                same_address: SameAddress::AnyOrder,
                accesses,
            }),
            writes: Vec::new(),
            declare,
        })),
        Ok(Threads::OutOfBounds(why)) => Ok(Lowering::Unspecified(why)),
        Err(r) => Ok(Lowering::Invalid(r)),
    }
}

enum Threads {
    Run(Vec<Access>, Vec<(String, Reg)>),
    OutOfBounds(String),
}

/// The accesses of the active threads, and the result variables to declare.
fn threads(
    c: &AtomicCall,
    state: &State,
    buf: &Buffer,
    ty: DataType,
) -> Result<Threads, Rejection> {
    let lanes = state.lanes;
    let mut declare = Vec::new();
    let result_ty = match (&c.function, ty) {
        (Function::CompareExchangeWeak { .. }, _) => ElemType::BOOL,
        (_, DataType::S32) => ElemType::D,
        (_, DataType::F32) => ElemType::F,
        _ => ElemType::UD,
    };
    if let Some(r) = &c.result {
        match state.regs.get(r) {
            None => declare.push((
                r.clone(),
                Reg {
                    ty: result_ty,
                    elems: vec![0; lanes as usize],
                },
            )),
            Some(reg) => {
                if reg.elems.len() < lanes as usize {
                    return Err(Rejection::new(
                        Reason::OperandSize,
                        format!("`{r}` has {} elements for {lanes} threads", reg.elems.len()),
                    ));
                }
                if reg.ty.bits < result_ty.bits {
                    return Err(Rejection::new(
                        Reason::OperandType,
                        format!("`{r}` ({}-bit) cannot hold the result", reg.ty.bits),
                    ));
                }
            }
        }
    }
    // MSL is C++14-based: `r = f(...)` converts the returned value to the variable's type
    // (C++14 [conv.integral]): an `int` result is sign-extended into a wider integer variable,
    // a `uint` or `bool` result zero-extended; the whole variable is replaced.
    let width = c
        .result
        .as_ref()
        .and_then(|r| state.regs.get(r))
        .map_or(u32::from(result_ty.bits), |reg| u32::from(reg.ty.bits));
    let result_upper = if width <= u32::from(result_ty.bits) {
        Upper::Keep
    } else if result_ty == ElemType::D {
        Upper::Sign { width }
    } else {
        Upper::Zero { width }
    };
    if let Function::CompareExchangeWeak { expected, .. } = &c.function {
        let reg = state.regs.get(expected).ok_or_else(|| {
            Rejection::new(
                Reason::UnknownOperand,
                format!("`{expected}` (expected) is not a per-thread operand of the state"),
            )
        })?;
        if reg.ty.bits != 32 || reg.ty.kind == Kind::Float {
            return Err(Rejection::new(
                Reason::OperandType,
                format!("`&{expected}` must point to a 32-bit integer, the object's value type"),
            ));
        }
    }
    let mut accesses = Vec::new();
    for lane in 0..lanes {
        if !state.active.get(lane as usize).copied().unwrap_or(false) {
            continue;
        }
        let idx = super::int_value(state, &c.index, lane)?;
        // MSL defines no result for an element outside the object the pointer designates.
        let addr = u64::try_from(idx)
            .ok()
            .filter(|i| *i < buf.len)
            .and_then(|i| i.checked_mul(4))
            .and_then(|off| buf.base.checked_add(off));
        let Some(addr) = addr else {
            return Ok(Threads::OutOfBounds(format!(
                "thread {lane} accesses `{}[{idx}]`, outside its {} elements: the specification defines no result for an access outside the buffer",
                c.buffer, buf.len
            )));
        };
        let field = |name: &str, bits: u32, upper: Upper| RegField {
            name: name.to_string(),
            idx: lane,
            lo: 0,
            bits,
            upper,
        };
        let value = operand(state, &c.value, lane, ty)?;
        let (src, dst) = match &c.function {
            Function::CompareExchangeWeak { expected, .. } => {
                let e = super::int_elem(state, expected, lane)? as u64 & ty.mask();
                let dst = Dest::CasWeak {
                    ok: c.result.as_deref().map(|r| field(r, 1, result_upper)),
                    expected: field(expected, 32, Upper::Keep),
                };
                ([e, value], dst)
            }
            _ => {
                let dst = match &c.result {
                    Some(r) => Dest::Fields(vec![field(r, 32, result_upper)]),
                    None => Dest::None,
                };
                ([value, 0], dst)
            }
        };
        accesses.push(Access {
            lane,
            addr,
            src,
            dst,
            fault: None,
        });
    }
    Ok(Threads::Run(accesses, declare))
}

/// The `operand`/`desired` value of thread `lane`, converted to the object's value type: an
/// integer masked to 32 bits (modular conversion to `int`/`uint`), or binary32 bits.
fn operand(state: &State, op: &Operand, lane: u32, ty: DataType) -> Result<u64, Rejection> {
    if ty != DataType::F32 {
        return Ok(int_value(state, op, lane)? as u64 & ty.mask());
    }
    let parsed = |text: &str| {
        let t = text.trim_end_matches(['f', 'F']);
        float::parse(Format::F32, t).ok_or_else(|| {
            Rejection::new(
                Reason::Syntax,
                format!("`{text}` is not a float literal the model can read"),
            )
        })
    };
    match op {
        Operand::Var(name) => {
            let reg = state.regs.get(name).ok_or_else(|| {
                Rejection::new(
                    Reason::UnknownOperand,
                    format!("`{name}` is not a per-thread operand of the state"),
                )
            })?;
            if reg.ty != ElemType::F {
                return Err(Rejection::new(
                    Reason::OperandType,
                    format!("`{name}` is not a 32-bit float operand of an atomic_float"),
                ));
            }
            reg.elems
                .get(lane as usize)
                .map(|v| v & ty.mask())
                .ok_or_else(|| {
                    Rejection::new(
                        Reason::OperandSize,
                        format!("`{name}` has no element for thread {lane}"),
                    )
                })
        }
        // An integer literal converts to float by value (decimal text, never raw bits).
        Operand::Int(v) => parsed(&v.to_string()),
        Operand::Float(text) => parsed(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::NanBits;

    use crate::msl::{self, Statement};
    use crate::outcome::Outcome;
    use crate::program::{Dialect, run};

    fn call(text: &str) -> AtomicCall {
        match msl::parse(text) {
            Ok(Statement::Atomic(c)) => c,
            other => panic!("{text}: {other:?}"),
        }
    }

    fn reject(text: &str) -> Reason {
        msl::parse(text).unwrap_err().reason
    }

    /// A state of `lanes` threads with one buffer `b` of `init` at 0x100 in `space`.
    fn state(lanes: u32, ty: AtomicType, space: Space, init: &[u32]) -> State {
        let mut s = State::new(lanes);
        let base = 0x100;
        let mem = s.memory_mut(space);
        mem.alloc(base, 4 * init.len() as u64).unwrap();
        for (i, v) in init.iter().enumerate() {
            assert!(mem.write(base + 4 * i as u64, 4, u64::from(*v)));
        }
        s.buffers.insert(
            "b".into(),
            Buffer {
                space,
                ty,
                base,
                len: init.len() as u64,
            },
        );
        s
    }

    fn var(s: &mut State, name: &str, ty: ElemType, elems: &[u64]) {
        s.regs.insert(
            name.into(),
            Reg {
                ty,
                elems: elems.to_vec(),
            },
        );
    }

    fn any_order() -> Profile {
        let mut p = Profile::default();
        p.set("msl.memory_order", "any").unwrap();
        p
    }

    /// Runs and returns the final state.
    fn done(text: &str, s: &State, p: &Profile) -> State {
        match run(Dialect::Msl, text, s, p).unwrap().outcome {
            Outcome::Completed(c) => c.state,
            other => panic!("{text}: {other:?}"),
        }
    }

    fn outcome(text: &str, s: &State, p: &Profile) -> Outcome {
        run(Dialect::Msl, text, s, p).unwrap().outcome
    }

    fn invalid_reason(text: &str, s: &State, p: &Profile) -> Reason {
        match outcome(text, s, p) {
            Outcome::Invalid(r) => r.reason,
            other => panic!("{text}: {other:?}"),
        }
    }

    fn word(s: &State, space: Space, i: u64) -> u64 {
        s.memory(space).read(0x100 + 4 * i, 4).unwrap()
    }

    #[test]
    fn print_parse_round_trip() {
        let texts = [
            "r = atomic_fetch_add_explicit(&b[i], v, memory_order_relaxed)",
            "atomic_fetch_and_explicit(&b[0], 255, memory_order_relaxed)",
            "r = atomic_fetch_max_explicit(&b[3], -1, memory_order_relaxed, memory_scope_device)",
            "r = atomic_fetch_min_explicit(&b[i], 4294967295, memory_order_seq_cst)",
            "r = atomic_fetch_or_explicit(&b[i], v, memory_order_acquire, memory_scope_threadgroup)",
            "r = atomic_fetch_sub_explicit(&b[i], 1.5f, memory_order_release)",
            "r = atomic_fetch_xor_explicit(&b[i], v, memory_order_acq_rel, memory_scope_simdgroup)",
            "r = atomic_fetch_add(&b[i], v)",
            "atomic_fetch_xor(&b[i], 1e-40)",
            "r = atomic_exchange_explicit(&b[i], v, memory_order_consume)",
            "ok = atomic_compare_exchange_weak_explicit(&b[i], &e, d, memory_order_relaxed, memory_order_relaxed)",
            "atomic_compare_exchange_weak_explicit(&b[0], &e, 7, memory_order_seq_cst, memory_order_acquire, memory_scope_device)",
        ];
        for t in texts {
            let c = call(t);
            assert_eq!(c.to_string(), t);
            assert_eq!(call(&c.to_string()), c);
        }
        // Canonical printing: hex literals in decimal, spacing normalised, `;` dropped.
        let c = call("  r=atomic_fetch_and_explicit( &b[0x2] ,0xFF,memory_order_relaxed ) ;");
        assert_eq!(
            c.to_string(),
            "r = atomic_fetch_and_explicit(&b[2], 255, memory_order_relaxed)"
        );
    }

    #[test]
    fn parsed_fields() {
        let c = call(
            "ok = atomic_compare_exchange_weak_explicit(&b[i], &e, 9, memory_order_relaxed, memory_order_acquire)",
        );
        assert_eq!(c.result.as_deref(), Some("ok"));
        assert_eq!(c.buffer, "b");
        assert_eq!(c.index, Operand::Var("i".into()));
        assert_eq!(c.value, Operand::Int(9));
        assert_eq!(
            c.function,
            Function::CompareExchangeWeak {
                expected: "e".into(),
                explicit: Explicit {
                    order: MemoryOrder::Relaxed,
                    scope: None
                },
                failure: MemoryOrder::Acquire,
            }
        );
        let c = call("atomic_fetch_min(&b[1], x)");
        assert_eq!(
            c.function,
            Function::FetchKey {
                key: Key::Min,
                explicit: None
            }
        );
        assert_eq!(c.result, None);
    }

    #[test]
    fn parse_rejections() {
        use Reason::{Syntax, UnknownOperation};
        let cases = [
            (
                "r = atomic_fetch_nand_explicit(&b[0], 1, memory_order_relaxed)",
                UnknownOperation,
            ),
            (
                "r = atomic_fetch_inc_explicit(&b[0], memory_order_relaxed)",
                UnknownOperation,
            ),
            (
                "r = atomic_compare_exchange_strong_explicit(&b[0], &e, 1, memory_order_relaxed, memory_order_relaxed)",
                UnknownOperation,
            ),
            (
                "r = atomic_load_explicit(&b[0], memory_order_relaxed)",
                UnknownOperation,
            ),
            (
                "r = atomic_fetch_add_explicit(&b[0], 1, memory_order_weird)",
                Syntax,
            ),
            ("r = atomic_fetch_add_explicit(&b[0], 1, 0)", Syntax),
            (
                "r = atomic_fetch_add_explicit(&b[0], 1, memory_order_relaxed, memory_scope_galaxy)",
                Syntax,
            ),
            ("r = atomic_fetch_add_explicit(&b[0], 1)", Syntax),
            (
                "r = atomic_fetch_add_explicit(&b[0], 1, memory_order_relaxed, memory_scope_device, memory_scope_device)",
                Syntax,
            ),
            (
                "r = atomic_fetch_add(&b[0], 1, memory_order_relaxed)",
                Syntax,
            ),
            (
                "r = atomic_fetch_add_explicit(b, 1, memory_order_relaxed)",
                Syntax,
            ),
            (
                "r = atomic_fetch_add_explicit(&b, 1, memory_order_relaxed)",
                Syntax,
            ),
            (
                "r = atomic_fetch_add_explicit(&b[0], &v, memory_order_relaxed)",
                Syntax,
            ),
            ("r = atomic_fetch_add_explicit()", Syntax),
            ("r = atomic_exchange_explicit(&b[0], 1)", Syntax),
            (
                "r = atomic_compare_exchange_weak_explicit(&b[0], e, 1, memory_order_relaxed, memory_order_relaxed)",
                Syntax,
            ),
            (
                "r = atomic_compare_exchange_weak_explicit(&b[0], &e, 1, memory_order_relaxed)",
                Syntax,
            ),
            (
                "r = atomic_compare_exchange_weak_explicit(&b[0], &e, 1, memory_order_relaxed, memory_order_nope)",
                Syntax,
            ),
            (
                "r = atomic_fetch_add_explicit(&b[i], 1, memory_order_relaxed",
                Syntax,
            ),
        ];
        for (text, reason) in cases {
            assert_eq!(reject(text), reason, "{text}");
        }
    }

    #[test]
    fn add_returns_old_and_wraps_signed() {
        // INT_MAX + 1 wraps to INT_MIN: "two's complement representation with silent
        // wrap-around on overflow".
        let s = state(1, AtomicType::Int, Space::Global, &[0x7FFF_FFFF]);
        let t = done(
            "r = atomic_fetch_add_explicit(&b[0], 1, memory_order_relaxed)",
            &s,
            &Profile::default(),
        );
        assert_eq!(word(&t, Space::Global, 0), 0x8000_0000);
        assert_eq!(t.elem("r", 0), Some(0x7FFF_FFFF));
        assert_eq!(t.regs["r"].ty, ElemType::D);
        // uint 0 - 1 wraps to 0xFFFFFFFF; the result is declared uint.
        let s = state(1, AtomicType::Uint, Space::Global, &[0]);
        let t = done(
            "r = atomic_fetch_sub_explicit(&b[0], 1, memory_order_relaxed)",
            &s,
            &Profile::default(),
        );
        assert_eq!(word(&t, Space::Global, 0), 0xFFFF_FFFF);
        assert_eq!(t.elem("r", 0), Some(0));
        assert_eq!(t.regs["r"].ty, ElemType::UD);
    }

    #[test]
    fn min_max_signedness_comes_from_the_object_type() {
        let p = Profile::default();
        // atomic_int: min(5, -1) = -1.
        let s = state(1, AtomicType::Int, Space::Global, &[5]);
        let t = done(
            "atomic_fetch_min_explicit(&b[0], -1, memory_order_relaxed)",
            &s,
            &p,
        );
        assert_eq!(word(&t, Space::Global, 0), 0xFFFF_FFFF);
        // atomic_uint: min(5, 0xFFFFFFFF) = 5.
        let s = state(1, AtomicType::Uint, Space::Global, &[5]);
        let t = done(
            "atomic_fetch_min_explicit(&b[0], 0xFFFFFFFF, memory_order_relaxed)",
            &s,
            &p,
        );
        assert_eq!(word(&t, Space::Global, 0), 5);
        // max: signed max(-2, 3) = 3, unsigned max(0xFFFFFFFE, 3) = 0xFFFFFFFE.
        let s = state(1, AtomicType::Int, Space::Global, &[0xFFFF_FFFE]);
        let t = done(
            "r = atomic_fetch_max_explicit(&b[0], 3, memory_order_relaxed)",
            &s,
            &p,
        );
        assert_eq!(
            (word(&t, Space::Global, 0), t.elem("r", 0)),
            (3, Some(0xFFFF_FFFE))
        );
        let s = state(1, AtomicType::Uint, Space::Global, &[0xFFFF_FFFE]);
        let t = done(
            "r = atomic_fetch_max_explicit(&b[0], 3, memory_order_relaxed)",
            &s,
            &p,
        );
        assert_eq!(word(&t, Space::Global, 0), 0xFFFF_FFFE);
        // A per-thread 16-bit signed operand converts by value: -1 is 0xFFFFFFFF as int.
        let mut s = state(1, AtomicType::Int, Space::Global, &[5]);
        var(&mut s, "v", ElemType::W, &[0xFFFF]);
        let t = done(
            "atomic_fetch_min_explicit(&b[0], v, memory_order_relaxed)",
            &s,
            &p,
        );
        assert_eq!(word(&t, Space::Global, 0), 0xFFFF_FFFF);
    }

    #[test]
    fn bitwise_keys() {
        let p = Profile::default();
        let s = state(1, AtomicType::Uint, Space::Global, &[0b1100]);
        for (key, want) in [("and", 0b1000), ("or", 0b1110), ("xor", 0b0110)] {
            let t = done(
                &format!("r = atomic_fetch_{key}_explicit(&b[0], 10, memory_order_relaxed)"),
                &s,
                &p,
            );
            assert_eq!(word(&t, Space::Global, 0), want, "{key}");
            assert_eq!(t.elem("r", 0), Some(0b1100), "{key}");
        }
    }

    #[test]
    fn exchange() {
        let s = state(1, AtomicType::Int, Space::Shared, &[11, 22]);
        let t = done(
            "r = atomic_exchange_explicit(&b[1], -5, memory_order_relaxed)",
            &s,
            &Profile::default(),
        );
        assert_eq!(word(&t, Space::Shared, 1), 0xFFFF_FFFB);
        assert_eq!(word(&t, Space::Shared, 0), 11);
        assert_eq!(t.elem("r", 0), Some(22));
    }

    #[test]
    fn compare_exchange_success_and_failure() {
        let p = Profile::default();
        let text = "ok = atomic_compare_exchange_weak_explicit(&b[0], &e, 9, memory_order_relaxed, memory_order_relaxed)";
        // Success: memory 4 equals e = 4, so memory becomes 9, ok = true, e unchanged.
        let mut s = state(1, AtomicType::Uint, Space::Global, &[4]);
        var(&mut s, "e", ElemType::UD, &[4]);
        let t = done(text, &s, &p);
        assert_eq!(word(&t, Space::Global, 0), 9);
        assert_eq!(t.elem("ok", 0), Some(1));
        assert_eq!(t.regs["ok"].ty, ElemType::BOOL);
        assert_eq!(t.elem("e", 0), Some(4));
        // Failure: memory 5 differs from e = 4: memory kept, ok = false, e receives 5.
        let mut s = state(1, AtomicType::Uint, Space::Global, &[5]);
        var(&mut s, "e", ElemType::UD, &[4]);
        let t = done(text, &s, &p);
        assert_eq!(word(&t, Space::Global, 0), 5);
        assert_eq!(t.elem("ok", 0), Some(0));
        assert_eq!(t.elem("e", 0), Some(5));
        // The weak form may fail spuriously: the IR says so.
        let Ok(Statement::Atomic(c)) = msl::parse(text) else {
            panic!()
        };
        let mut s = state(1, AtomicType::Uint, Space::Global, &[4]);
        var(&mut s, "e", ElemType::UD, &[4]);
        let Lowering::Run(l) = lower(&c, &s, &p).unwrap() else {
            panic!()
        };
        let Instr::Mem(m) = l.instr else { panic!() };
        assert!(m.env.weak);
        assert_eq!(m.op, AtomicOp::Cas);
        assert_eq!(m.accesses[0].src, [4, 9]);
        assert_eq!(
            m.accesses[0].dst,
            Dest::CasWeak {
                ok: Some(RegField {
                    name: "ok".into(),
                    idx: 0,
                    lo: 0,
                    bits: 1,
                    upper: Upper::Keep
                }),
                expected: RegField {
                    name: "e".into(),
                    idx: 0,
                    lo: 0,
                    bits: 32,
                    upper: Upper::Keep
                },
            }
        );
        // Without an assignment the flag goes nowhere; e still updates on failure.
        let mut s = state(1, AtomicType::Int, Space::Global, &[0xFFFF_FFFF]);
        var(&mut s, "e", ElemType::D, &[0]);
        let t = done(
            "atomic_compare_exchange_weak_explicit(&b[0], &e, 1, memory_order_relaxed, memory_order_relaxed)",
            &s,
            &p,
        );
        assert_eq!(t.elem("e", 0), Some(0xFFFF_FFFF));
        assert!(!t.regs.contains_key("ok"));
    }

    #[test]
    fn racing_threads_in_ascending_order() {
        // Four threads add 1, 2, 3, 4 to b[0] = 10: the canonical order is ascending thread,
        // so thread l sees 10 + 1 + ... + l.
        let mut s = state(4, AtomicType::Uint, Space::Global, &[10]);
        var(&mut s, "v", ElemType::UD, &[1, 2, 3, 4]);
        let t = done(
            "r = atomic_fetch_add_explicit(&b[0], v, memory_order_relaxed)",
            &s,
            &Profile::default(),
        );
        assert_eq!(word(&t, Space::Global, 0), 20);
        assert_eq!(t.regs["r"].elems, vec![10, 11, 13, 16]);
        // The race is declared as any order.
        let Ok(Statement::Atomic(c)) =
            msl::parse("r = atomic_fetch_add_explicit(&b[0], v, memory_order_relaxed)")
        else {
            panic!()
        };
        let Lowering::Run(l) = lower(&c, &s, &Profile::default()).unwrap() else {
            panic!()
        };
        let Instr::Mem(m) = l.instr else { panic!() };
        assert_eq!(m.same_address, SameAddress::AnyOrder);
    }

    #[test]
    fn per_thread_index_and_inactive_threads() {
        // Threads 0..3 with index i = [1, 0, 1, 0], thread 2 inactive: b[1] gets thread 0's
        // value only, b[0] gets thread 1 then thread 3's; r[2] is not written.
        let mut s = state(4, AtomicType::Int, Space::Shared, &[0, 0]);
        s.active = vec![true, true, false, true];
        var(&mut s, "i", ElemType::UD, &[1, 0, 1, 0]);
        var(&mut s, "v", ElemType::D, &[5, 6, 7, 8]);
        var(&mut s, "r", ElemType::D, &[99, 99, 99, 99]);
        let t = done(
            "r = atomic_exchange_explicit(&b[i], v, memory_order_relaxed)",
            &s,
            &Profile::default(),
        );
        assert_eq!(word(&t, Space::Shared, 0), 8);
        assert_eq!(word(&t, Space::Shared, 1), 5);
        assert_eq!(t.regs["r"].elems, vec![0, 0, 99, 6]);
        assert_eq!(t.global, s.global);
    }

    #[test]
    fn device_and_threadgroup_buffers() {
        for space in [Space::Global, Space::Shared] {
            let s = state(1, AtomicType::Uint, space, &[1]);
            let t = done(
                "atomic_fetch_add_explicit(&b[0], 2, memory_order_relaxed)",
                &s,
                &Profile::default(),
            );
            assert_eq!(word(&t, space, 0), 3);
        }
        // The memory_scope overload is declared for device objects only.
        let s = state(1, AtomicType::Uint, Space::Global, &[1]);
        let text = "atomic_fetch_add_explicit(&b[0], 2, memory_order_relaxed, memory_scope_device)";
        assert_eq!(
            word(&done(text, &s, &Profile::default()), Space::Global, 0),
            3
        );
        let s = state(1, AtomicType::Uint, Space::Shared, &[1]);
        assert_eq!(
            invalid_reason(text, &s, &Profile::default()),
            Reason::UnsupportedAddressSpace
        );
    }

    #[test]
    fn out_of_bounds_index_is_unspecified() {
        let mut s = state(2, AtomicType::Int, Space::Global, &[0, 0]);
        var(&mut s, "i", ElemType::D, &[0, 2]);
        let p = Profile::default();
        for text in [
            "atomic_fetch_add_explicit(&b[2], 1, memory_order_relaxed)",
            "atomic_fetch_add_explicit(&b[-1], 1, memory_order_relaxed)",
            "atomic_fetch_add_explicit(&b[i], 1, memory_order_relaxed)",
        ] {
            assert!(
                matches!(outcome(text, &s, &p), Outcome::Unspecified(_)),
                "{text}"
            );
        }
        // Thread 1 inactive: only b[0] is touched.
        s.active = vec![true, false];
        let t = done(
            "atomic_fetch_add_explicit(&b[i], 1, memory_order_relaxed)",
            &s,
            &p,
        );
        assert_eq!(word(&t, Space::Global, 0), 1);
    }

    #[test]
    fn float_add_only_in_device_memory() {
        let p = Profile::default();
        let mut s = state(1, AtomicType::Float, Space::Global, &[0x3F80_0000]);
        var(&mut s, "v", ElemType::F, &[0x4000_0000]);
        let Ok(Statement::Atomic(c)) =
            msl::parse("r = atomic_fetch_add_explicit(&b[0], v, memory_order_relaxed)")
        else {
            panic!()
        };
        let Lowering::Run(l) = lower(&c, &s, &p).unwrap() else {
            panic!()
        };
        let Instr::Mem(m) = &l.instr else { panic!() };
        assert_eq!(
            (m.op, m.ty, m.space),
            (AtomicOp::Add, DataType::F32, Space::Global)
        );
        assert_eq!(m.accesses[0].src, [0x4000_0000, 0]);
        assert_eq!(m.accesses[0].addr, 0x100);
        assert_eq!(l.declare[0].1.ty, ElemType::F);
        // sub is the other float key.
        let Ok(Statement::Atomic(c)) =
            msl::parse("atomic_fetch_sub_explicit(&b[0], v, memory_order_relaxed)")
        else {
            panic!()
        };
        assert!(matches!(lower(&c, &s, &p).unwrap(), Lowering::Run(_)));
        // Other functions on atomic_float are not in the table.
        for text in [
            "atomic_fetch_min_explicit(&b[0], v, memory_order_relaxed)",
            "atomic_fetch_and_explicit(&b[0], v, memory_order_relaxed)",
            "atomic_exchange_explicit(&b[0], v, memory_order_relaxed)",
        ] {
            assert_eq!(
                invalid_reason(text, &s, &p),
                Reason::UnsupportedType,
                "{text}"
            );
        }
        // atomic_float in threadgroup memory.
        let mut s = state(1, AtomicType::Float, Space::Shared, &[0]);
        var(&mut s, "v", ElemType::F, &[0x4000_0000]);
        assert_eq!(
            invalid_reason(
                "atomic_fetch_add_explicit(&b[0], v, memory_order_relaxed)",
                &s,
                &p
            ),
            Reason::UnsupportedAddressSpace
        );
        // An integer operand variable for a float object.
        let mut s = state(1, AtomicType::Float, Space::Global, &[0]);
        var(&mut s, "v", ElemType::D, &[1]);
        assert_eq!(
            invalid_reason(
                "atomic_fetch_add_explicit(&b[0], v, memory_order_relaxed)",
                &s,
                &p
            ),
            Reason::OperandType
        );
        // A float literal for an integer object.
        let s = state(1, AtomicType::Int, Space::Global, &[0]);
        assert_eq!(
            invalid_reason(
                "atomic_fetch_add_explicit(&b[0], 1.5, memory_order_relaxed)",
                &s,
                &p
            ),
            Reason::OperandType
        );
    }

    #[test]
    fn float_env_follows_the_knobs() {
        let e = env(&Profile::default());
        assert_eq!(
            (e.round, e.ftz, e.ftz_return),
            (Round::NearestEven, FtzMode::NONE, false)
        );
        assert_eq!((e.nan, e.nan_exact), (NanBits::Propagate, false));
        assert_eq!(e.compare, Compare::Bitwise);
        let e = env(&Profile::named("metal").unwrap());
        assert_eq!((e.round, e.ftz), (Round::TowardZero, FtzMode::BOTH));
        let mut p = Profile::default();
        p.set("float.nan_result", "canonical").unwrap();
        p.set("float.ftz_return", "flushed").unwrap();
        let e = env(&p);
        assert_eq!(
            (e.nan, e.nan_exact, e.ftz_return),
            (NanBits::Canonical, true, true)
        );
        p.set("float.nan_result", "propagate").unwrap();
        assert_eq!((env(&p).nan, env(&p).nan_exact), (NanBits::Propagate, true));
    }

    #[test]
    fn memory_orders_under_both_knob_options() {
        let s = state(1, AtomicType::Uint, Space::Global, &[0]);
        let relaxed_only = Profile::default();
        let any = any_order();
        for o in MemoryOrder::ALL {
            let text = format!("atomic_fetch_add_explicit(&b[0], 1, {})", o.name());
            let t = done(&text, &s, &any);
            assert_eq!(word(&t, Space::Global, 0), 1);
            if *o == MemoryOrder::Relaxed {
                done(&text, &s, &relaxed_only);
            } else {
                assert_eq!(
                    invalid_reason(&text, &s, &relaxed_only),
                    Reason::UnsupportedMemoryOrder,
                    "{text}"
                );
            }
        }
        // The non-explicit form implies memory_order_seq_cst.
        let text = "r = atomic_fetch_add(&b[0], 1)";
        assert_eq!(
            invalid_reason(text, &s, &relaxed_only),
            Reason::UnsupportedMemoryOrder
        );
        assert_eq!(word(&done(text, &s, &any), Space::Global, 0), 1);
        // A compare-exchange's failure order counts too.
        let mut s = state(1, AtomicType::Uint, Space::Global, &[0]);
        var(&mut s, "e", ElemType::UD, &[0]);
        let text = "atomic_compare_exchange_weak_explicit(&b[0], &e, 1, memory_order_relaxed, memory_order_acquire)";
        assert_eq!(
            invalid_reason(text, &s, &relaxed_only),
            Reason::UnsupportedMemoryOrder
        );
        assert_eq!(word(&done(text, &s, &any), Space::Global, 0), 1);
    }

    #[test]
    fn lowering_rejections() {
        let p = Profile::default();
        let mut s = state(2, AtomicType::Int, Space::Global, &[0]);
        var(&mut s, "f", ElemType::F, &[0, 0]);
        var(&mut s, "short", ElemType::D, &[0]);
        var(&mut s, "small", ElemType::UW, &[0, 0]);
        var(&mut s, "e16", ElemType::W, &[0, 0]);
        let cases = [
            (
                "atomic_fetch_add_explicit(&nope[0], 1, memory_order_relaxed)",
                Reason::UnknownOperand,
            ),
            (
                "atomic_fetch_add_explicit(&b[0], v, memory_order_relaxed)",
                Reason::UnknownOperand,
            ),
            (
                "atomic_fetch_add_explicit(&b[j], 1, memory_order_relaxed)",
                Reason::UnknownOperand,
            ),
            (
                "atomic_fetch_add_explicit(&b[f], 1, memory_order_relaxed)",
                Reason::OperandType,
            ),
            (
                "atomic_fetch_add_explicit(&b[0], f, memory_order_relaxed)",
                Reason::OperandType,
            ),
            (
                "atomic_fetch_add_explicit(&b[0], short, memory_order_relaxed)",
                Reason::OperandSize,
            ),
            (
                "short = atomic_fetch_add_explicit(&b[0], 1, memory_order_relaxed)",
                Reason::OperandSize,
            ),
            (
                "small = atomic_fetch_add_explicit(&b[0], 1, memory_order_relaxed)",
                Reason::OperandType,
            ),
            (
                "atomic_compare_exchange_weak_explicit(&b[0], &e, 1, memory_order_relaxed, memory_order_relaxed)",
                Reason::UnknownOperand,
            ),
            (
                "atomic_compare_exchange_weak_explicit(&b[0], &e16, 1, memory_order_relaxed, memory_order_relaxed)",
                Reason::OperandType,
            ),
            (
                "atomic_compare_exchange_weak_explicit(&b[0], &f, 1, memory_order_relaxed, memory_order_relaxed)",
                Reason::OperandType,
            ),
        ];
        for (text, reason) in cases {
            assert_eq!(invalid_reason(text, &s, &p), reason, "{text}");
        }
    }
}
