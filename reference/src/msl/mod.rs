//! Apple Metal Shading Language: atomic functions (§6.15.4.5; in the 2017 copy of the seed
//! document, the `atomic_fetch_key_explicit` family) and SIMD-group functions (Table 34, §5.13
//! of the 2017 copy, §6.9.2 later).
//!
//! The text form is one statement over named operands, `[<ident> =] <call>` with an optional
//! trailing `;`. Arguments are identifiers (per-thread operands of the state), integer literals
//! (decimal, or hexadecimal with `0x`), float literals, `&buf[<index>]` (an element of a buffer
//! of atomic objects) and `&<ident>` (the `expected` operand of a compare-exchange). This module
//! holds the shared lexer and argument grammar; [`atomic`] and [`simd`] give the calls their
//! meaning.

pub mod atomic;
pub mod simd;

use crate::error::{ModelError, Reason, Rejection};
use crate::ir::Lowering;
use crate::knobs::Profile;
use crate::state::State;
use crate::types::{Kind, sext};
use std::fmt;

/// A parsed MSL statement.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Statement {
    /// An atomic function call.
    Atomic(atomic::AtomicCall),
    /// A SIMD-group function call.
    Simd(simd::SimdCall),
}

impl fmt::Display for Statement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Statement::Atomic(s) => s.fmt(f),
            Statement::Simd(s) => s.fmt(f),
        }
    }
}

/// Parses one statement: the `atomic_*` functions go to [`atomic`], the `simd_*` functions to
/// [`simd`]; any other function name is an unknown operation.
pub fn parse(text: &str) -> Result<Statement, Rejection> {
    let call = CallSyntax::parse(text)?;
    if call.name.starts_with("atomic_") {
        Ok(Statement::Atomic(atomic::AtomicCall::from_syntax(call)?))
    } else if call.name.starts_with("simd_") {
        Ok(Statement::Simd(simd::SimdCall::from_syntax(call)?))
    } else {
        Err(Rejection::at(
            Reason::UnknownOperation,
            call.name_col,
            format!(
                "`{}` is neither an MSL atomic function nor a SIMD-group function",
                call.name
            ),
        ))
    }
}

/// Lowers to the IR against a state (buffers, per-thread operands, active threads).
pub fn lower(s: &Statement, state: &State, profile: &Profile) -> Result<Lowering, ModelError> {
    match s {
        Statement::Atomic(c) => atomic::lower(c, state, profile),
        Statement::Simd(c) => simd::lower(c, state, profile),
    }
}

/// A value argument: a per-thread operand or a literal.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Operand {
    /// A per-thread operand of the state (one element per thread).
    Var(String),
    /// An integer literal (printed in decimal).
    Int(i64),
    /// A float literal, kept as written (`1.5`, `-0.0`, `1e-40`, `2.0f`); converted when the
    /// statement is lowered against a float atomic type.
    Float(String),
}

impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Operand::Var(s) | Operand::Float(s) => f.write_str(s),
            Operand::Int(v) => write!(f, "{v}"),
        }
    }
}

/// One argument of a call as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Arg {
    /// An identifier or a literal.
    Value(Operand),
    /// `&name`: the address of a per-thread operand.
    Ref(String),
    /// `&buffer[index]`: the address of an element of a buffer.
    Element {
        /// Buffer name.
        buffer: String,
        /// Element index: an identifier or an integer literal.
        index: Operand,
    },
}

impl Arg {
    fn describe(&self) -> &'static str {
        match self {
            Arg::Value(Operand::Var(_)) => "an identifier",
            Arg::Value(Operand::Int(_)) => "an integer literal",
            Arg::Value(Operand::Float(_)) => "a float literal",
            Arg::Ref(_) => "`&name`",
            Arg::Element { .. } => "`&buffer[index]`",
        }
    }
}

/// A statement split into its parts: the assigned identifier, the function name and the
/// arguments, each with the byte column where it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CallSyntax {
    /// `r` of `r = f(...)`, with its column.
    pub result: Option<(String, usize)>,
    /// The function name.
    pub name: String,
    /// Column of the function name.
    pub name_col: usize,
    /// Arguments with their columns.
    pub args: Vec<(Arg, usize)>,
    /// Column of the closing parenthesis (for "missing argument" reports).
    pub close_col: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tok<'a> {
    Ident(&'a str),
    Num(&'a str),
    Punct(u8),
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Splits the text into identifiers, numbers and punctuation, with byte columns.
fn lex(text: &str) -> Result<Vec<(Tok<'_>, usize)>, Rejection> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let digit_at = |j: usize| b.get(j).is_some_and(|c| c.is_ascii_digit());
        if c.is_ascii_whitespace() {
            i += 1;
        } else if is_ident_start(c) {
            let start = i;
            while i < b.len() && is_ident_char(b[i]) {
                i += 1;
            }
            out.push((Tok::Ident(&text[start..i]), start));
        } else if c.is_ascii_digit()
            || (c == b'.' && digit_at(i + 1))
            || (c == b'-' && (digit_at(i + 1) || (b.get(i + 1) == Some(&b'.') && digit_at(i + 2))))
        {
            let start = i;
            if c == b'-' {
                i += 1;
            }
            if b.get(i) == Some(&b'0') && matches!(b.get(i + 1), Some(b'x' | b'X')) {
                i += 2;
                let digits = i;
                while i < b.len() && b[i].is_ascii_hexdigit() {
                    i += 1;
                }
                if i == digits {
                    return Err(Rejection::at(
                        Reason::Syntax,
                        start,
                        "hexadecimal literal without digits",
                    ));
                }
            } else {
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                if b.get(i) == Some(&b'.') {
                    i += 1;
                    while i < b.len() && b[i].is_ascii_digit() {
                        i += 1;
                    }
                }
                if matches!(b.get(i), Some(b'e' | b'E')) {
                    let mut j = i + 1;
                    if matches!(b.get(j), Some(b'+' | b'-')) {
                        j += 1;
                    }
                    if digit_at(j) {
                        i = j;
                        while i < b.len() && b[i].is_ascii_digit() {
                            i += 1;
                        }
                    }
                }
                if matches!(b.get(i), Some(b'f' | b'F')) {
                    i += 1;
                }
            }
            if b.get(i).is_some_and(|c| is_ident_char(*c) || *c == b'.') {
                return Err(Rejection::at(
                    Reason::Syntax,
                    start,
                    format!("malformed number starting `{}`", &text[start..=i]),
                ));
            }
            out.push((Tok::Num(&text[start..i]), start));
        } else if b"=(),&[];".contains(&c) {
            out.push((Tok::Punct(c), i));
            i += 1;
        } else {
            // Columns are byte offsets; report the character that starts here.
            let ch = text[i..].chars().next().unwrap_or('?');
            return Err(Rejection::at(
                Reason::Syntax,
                i,
                format!("unexpected character `{ch}`"),
            ));
        }
    }
    Ok(out)
}

/// A number token as an operand: integers (decimal or `0x`) in the `i64` range, anything with a
/// fraction, exponent or `f` suffix as a float literal.
fn number(text: &str, col: usize) -> Result<Operand, Rejection> {
    let (neg, digits) = match text.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, text),
    };
    let hex = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"));
    let magnitude = match hex {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None if digits.bytes().all(|c| c.is_ascii_digit()) => digits.parse::<u64>().ok(),
        None => return Ok(Operand::Float(text.to_string())),
    };
    let value = magnitude.and_then(|m| {
        if neg {
            0i64.checked_sub_unsigned(m)
        } else {
            i64::try_from(m).ok()
        }
    });
    value.map(Operand::Int).ok_or_else(|| {
        Rejection::at(
            Reason::Syntax,
            col,
            format!("integer literal `{text}` is outside the 64-bit range"),
        )
    })
}

struct Cursor<'a> {
    toks: Vec<(Tok<'a>, usize)>,
    pos: usize,
    end: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<Tok<'a>> {
        self.toks.get(self.pos).map(|t| t.0)
    }

    fn col(&self) -> usize {
        self.toks.get(self.pos).map_or(self.end, |t| t.1)
    }

    fn next(&mut self) -> Option<(Tok<'a>, usize)> {
        let t = self.toks.get(self.pos).copied();
        if t.is_some() {
            self.pos += 1;
        }
        t
    }

    fn expect(&mut self, p: u8, what: &str) -> Result<usize, Rejection> {
        match self.next() {
            Some((Tok::Punct(c), col)) if c == p => Ok(col),
            Some((_, col)) => Err(Rejection::at(
                Reason::Syntax,
                col,
                format!("expected `{}` {what}", p as char),
            )),
            None => Err(Rejection::at(
                Reason::Syntax,
                self.end,
                format!("expected `{}` {what}, found the end", p as char),
            )),
        }
    }

    fn ident(&mut self, what: &str) -> Result<(String, usize), Rejection> {
        match self.next() {
            Some((Tok::Ident(s), col)) => Ok((s.to_string(), col)),
            Some((_, col)) => Err(Rejection::at(
                Reason::Syntax,
                col,
                format!("expected {what}"),
            )),
            None => Err(Rejection::at(
                Reason::Syntax,
                self.end,
                format!("expected {what}, found the end"),
            )),
        }
    }

    fn arg(&mut self) -> Result<(Arg, usize), Rejection> {
        let col = self.col();
        match self.next() {
            Some((Tok::Ident(s), _)) => Ok((Arg::Value(Operand::Var(s.to_string())), col)),
            Some((Tok::Num(n), _)) => Ok((Arg::Value(number(n, col)?), col)),
            Some((Tok::Punct(b'&'), _)) => {
                let (name, _) = self.ident("a name after `&`")?;
                if self.peek() != Some(Tok::Punct(b'[')) {
                    return Ok((Arg::Ref(name), col));
                }
                self.pos += 1;
                let icol = self.col();
                let index = match self.next() {
                    Some((Tok::Ident(s), _)) => Operand::Var(s.to_string()),
                    Some((Tok::Num(n), _)) => match number(n, icol)? {
                        Operand::Float(_) => {
                            return Err(Rejection::at(
                                Reason::Syntax,
                                icol,
                                format!("buffer index `{n}` is not an integer"),
                            ));
                        }
                        op => op,
                    },
                    _ => {
                        return Err(Rejection::at(
                            Reason::Syntax,
                            icol,
                            "a buffer index is an identifier or an integer literal",
                        ));
                    }
                };
                self.expect(b']', "after the buffer index")?;
                Ok((
                    Arg::Element {
                        buffer: name,
                        index,
                    },
                    col,
                ))
            }
            Some(_) => Err(Rejection::at(Reason::Syntax, col, "expected an argument")),
            None => Err(Rejection::at(
                Reason::Syntax,
                col,
                "expected an argument, found the end",
            )),
        }
    }
}

impl CallSyntax {
    /// `[<ident> =] <name> ( [<arg> {, <arg>}] ) [;]`
    fn parse(text: &str) -> Result<CallSyntax, Rejection> {
        let toks = lex(text)?;
        let mut c = Cursor {
            toks,
            pos: 0,
            end: text.len(),
        };
        let mut result = None;
        if c.toks.get(1).map(|t| t.0) == Some(Tok::Punct(b'=')) {
            result = Some(c.ident("the assigned identifier")?);
            c.pos += 1;
        }
        let (name, name_col) = c.ident("a function name")?;
        c.expect(b'(', "after the function name")?;
        let mut args = Vec::new();
        if c.peek() != Some(Tok::Punct(b')')) {
            loop {
                args.push(c.arg()?);
                match c.peek() {
                    Some(Tok::Punct(b',')) => c.pos += 1,
                    _ => break,
                }
            }
        }
        let close_col = c.expect(b')', "closing the argument list")?;
        if c.peek() == Some(Tok::Punct(b';')) {
            c.pos += 1;
        }
        if let Some((_, col)) = c.next() {
            return Err(Rejection::at(
                Reason::Syntax,
                col,
                "unexpected text after the statement",
            ));
        }
        Ok(CallSyntax {
            result,
            name,
            name_col,
            args,
            close_col,
        })
    }

    /// Checks the argument count, naming the function's forms in the rejection.
    pub(crate) fn arity(&self, allowed: &[usize], forms: &str) -> Result<(), Rejection> {
        if allowed.contains(&self.args.len()) {
            return Ok(());
        }
        let col = self
            .args
            .get(allowed.iter().copied().max().unwrap_or(0))
            .map_or(self.close_col, |a| a.1);
        Err(Rejection::at(
            Reason::Syntax,
            col,
            format!(
                "`{}` takes {forms}, not {} arguments",
                self.name,
                self.args.len()
            ),
        ))
    }
}

/// Rejects an argument of the wrong form.
pub(crate) fn wrong_arg(arg: &(Arg, usize), want: &str) -> Rejection {
    Rejection::at(
        Reason::Syntax,
        arg.1,
        format!("expected {want}, found {}", arg.0.describe()),
    )
}

/// The argument as an identifier.
pub(crate) fn ident_arg(arg: &(Arg, usize), want: &str) -> Result<String, Rejection> {
    match &arg.0 {
        Arg::Value(Operand::Var(s)) => Ok(s.clone()),
        _ => Err(wrong_arg(arg, want)),
    }
}

/// The argument as an identifier or integer literal.
pub(crate) fn int_arg(arg: &(Arg, usize), want: &str) -> Result<Operand, Rejection> {
    match &arg.0 {
        Arg::Value(op @ (Operand::Var(_) | Operand::Int(_))) => Ok(op.clone()),
        _ => Err(wrong_arg(arg, want)),
    }
}

/// Element `lane` of a per-thread operand as an integer value (sign-extended from signed
/// element types, as a C++ integral conversion does), or why it cannot be read.
pub(crate) fn int_elem(state: &State, name: &str, lane: u32) -> Result<i64, Rejection> {
    let reg = state.regs.get(name).ok_or_else(|| {
        Rejection::new(
            Reason::UnknownOperand,
            format!("`{name}` is not a per-thread operand of the state"),
        )
    })?;
    if reg.ty.kind == Kind::Float {
        return Err(Rejection::new(
            Reason::OperandType,
            format!("`{name}` is a float operand where an integer is needed"),
        ));
    }
    let v = reg.elems.get(lane as usize).copied().ok_or_else(|| {
        Rejection::new(
            Reason::OperandSize,
            format!("`{name}` has no element for thread {lane}"),
        )
    })?;
    let bits = u32::from(reg.ty.bits);
    Ok(match reg.ty.kind {
        Kind::Signed => sext(v, bits),
        _ => (v & reg.ty.mask()) as i64,
    })
}

/// An integer operand (identifier element `lane`, or literal) as an integer value.
pub(crate) fn int_value(state: &State, op: &Operand, lane: u32) -> Result<i64, Rejection> {
    match op {
        Operand::Var(name) => int_elem(state, name, lane),
        Operand::Int(v) => Ok(*v),
        Operand::Float(s) => Err(Rejection::new(
            Reason::OperandType,
            format!("float literal `{s}` where an integer is needed"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexer_columns_and_literals() {
        let c = CallSyntax::parse("r = f(&b[0x10], -7, 1.5f, &e, x);").unwrap();
        assert_eq!(c.result, Some(("r".to_string(), 0)));
        assert_eq!(c.name, "f");
        assert_eq!(c.name_col, 4);
        assert_eq!(
            c.args,
            vec![
                (
                    Arg::Element {
                        buffer: "b".into(),
                        index: Operand::Int(16)
                    },
                    6
                ),
                (Arg::Value(Operand::Int(-7)), 16),
                (Arg::Value(Operand::Float("1.5f".into())), 20),
                (Arg::Ref("e".into()), 26),
                (Arg::Value(Operand::Var("x".into())), 30),
            ]
        );
    }

    #[test]
    fn lexer_rejections() {
        let cases = [
            ("r = f(1, 2", 10),  // missing `)`
            ("r = f(0x)", 6),    // hex without digits
            ("r = f(12ab)", 6),  // malformed number
            ("r = f(1) x", 9),   // trailing text
            ("r = f(a) ;;", 10), // second `;`
            ("r = f(#)", 6),     // stray character
            ("r = f(&b[1.5])", 9),
            ("r = f(&b[])", 9),
            ("r = f(&b[i)", 10),
            ("= f(x)", 0),
            ("r = (x)", 4),
            ("r = f(99999999999999999999)", 6),
        ];
        for (text, col) in cases {
            let e = CallSyntax::parse(text).unwrap_err();
            assert_eq!(e.reason, Reason::Syntax, "{text}");
            assert_eq!(e.column, Some(col), "{text}: {e}");
        }
    }

    #[test]
    fn extreme_integer_literals() {
        let c = CallSyntax::parse("f(-9223372036854775808, 0xFFFFFFFF)").unwrap();
        assert_eq!(c.args[0].0, Arg::Value(Operand::Int(i64::MIN)));
        assert_eq!(c.args[1].0, Arg::Value(Operand::Int(0xFFFF_FFFF)));
        assert!(CallSyntax::parse("f(9223372036854775808)").is_err());
    }

    #[test]
    fn a_wrong_argument_is_named_by_its_form() {
        let c = CallSyntax::parse("f(x, 7, 1.5, &e, &b[0])").unwrap();
        let found: Vec<String> = c
            .args
            .iter()
            .map(|a| wrong_arg(a, "something else").detail)
            .collect();
        assert_eq!(
            found,
            [
                "expected something else, found an identifier",
                "expected something else, found an integer literal",
                "expected something else, found a float literal",
                "expected something else, found `&name`",
                "expected something else, found `&buffer[index]`",
            ]
        );
    }

    #[test]
    fn other_function_names_are_unknown_operations() {
        let e = parse("r = fetch_add(&b[0], 1)").unwrap_err();
        assert_eq!(e.reason, Reason::UnknownOperation);
        assert_eq!(e.column, Some(4));
    }
}
