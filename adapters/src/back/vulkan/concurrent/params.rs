//! The parameters of a concurrent case (issue 31): every per-case number the module of
//! [`super::emit`] reads, in one read-only storage buffer ([`PARAMS`]), so that the module's
//! words depend only on the case's shape ([`super::Shape`]) and one pipeline serves every case
//! of a shape.
//!
//! Layout, in 32-bit words (little-endian; the module also views the buffer as 64-bit words
//! where some instruction is 64-bit, so that a 64-bit operand is one load with its exact bits):
//!
//! | words | value |
//! | --- | --- |
//! | 0 | [`WORK_GROUPS`]: work-groups dispatched (the start line waits for as many) |
//! | 1 | [`IMAGE_ELEMS`]: elements of the local-memory image (the copy loops' end; 0 without one) |
//! | 2 | [`IMAGE_BASE`]: the image's first element in the memory buffer, in elements of its width |
//! | [`HEAD`] + [`INSTR`] k .. | instruction k: [`N`], [`FIRST`], [`ITERATIONS`], [`RET_BASE`], [`THREAD_BASE`], [`IDX`], [`SRC0`], [`SRC1`] |
//! | after them | per instruction its arrays, one element per invocation: element indices (32-bit), first operands, second operands (compare-exchange only), each of the instruction's width; a 64-bit array starts at an even word, each value two words, low word first |
//!
//! [`IDX`], [`SRC0`] and [`SRC1`] are the words where the arrays start.

use super::super::emit::operand_line;
use crate::plan::ConcurrentPlan;
use atomcts_reference::ir::AtomicOp;

/// The binding of the parameters.
pub(super) const PARAMS: u32 = 4;

/// Word: work-groups dispatched.
pub(super) const WORK_GROUPS: u32 = 0;
/// Word: elements of the local-memory image (0 without one).
pub(super) const IMAGE_ELEMS: u32 = 1;
/// Word: the image's first element in the memory buffer (in elements of its width).
pub(super) const IMAGE_BASE: u32 = 2;
/// Words before the first instruction's.
pub(super) const HEAD: u32 = 3;
/// Words per instruction.
pub(super) const INSTR: u32 = 8;

/// Instruction word: invocations that run it (items).
pub(super) const N: u32 = 0;
/// Instruction word: its first local invocation index (one work-group for all; else 0).
pub(super) const FIRST: u32 = 1;
/// Instruction word: iterations each invocation runs.
pub(super) const ITERATIONS: u32 = 2;
/// Instruction word: its first slot in the returned values (`[group][iteration][item]`).
pub(super) const RET_BASE: u32 = 3;
/// Instruction word: its first slot in the iterations executed (`[group][item]`).
pub(super) const THREAD_BASE: u32 = 4;
/// Instruction word: the word where its element indices start.
pub(super) const IDX: u32 = 5;
/// Instruction word: the word where its first operands start.
pub(super) const SRC0: u32 = 6;
/// Instruction word: the word where its second operands start (compare-exchange; else 0).
pub(super) const SRC1: u32 = 7;

/// The parameters of a case: the buffer's words and their listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Params {
    /// The buffer, in 32-bit words.
    pub(super) words: Vec<u32>,
    /// One comment line per value group, as printed beside the disassembly of a failing case
    /// ([`super::super::emit::Dispatch::operands`]).
    pub(super) listing: String,
}

/// Appends `values` (`bytes` wide each) to `words` (a 64-bit array at an even word); returns
/// the word where they start.
fn push(words: &mut Vec<u32>, bytes: u64, values: &[u64]) -> u32 {
    if bytes == 8 && words.len() % 2 == 1 {
        words.push(0);
    }
    let at = words.len() as u32;
    for v in values {
        words.push(*v as u32);
        if bytes == 8 {
            words.push((*v >> 32) as u32);
        }
    }
    at
}

/// The parameters of `cp`, whose local-memory image (if any) has elements of `lw` bytes.
pub(super) fn params(cp: &ConcurrentPlan, lw: u64) -> Params {
    let count = cp.groups.len() as u32;
    let mut words = vec![0u32; (HEAD + INSTR * count) as usize];
    words[WORK_GROUPS as usize] = cp.work_groups() as u32;
    if cp.has_local_image() {
        words[IMAGE_ELEMS as usize] = (cp.shared.size / lw) as u32;
        words[IMAGE_BASE as usize] = (cp.shared_base() / lw) as u32;
    }
    let mut listing = String::new();
    for (k, g) in cp.groups.iter().enumerate() {
        let bytes = g.ty.bytes();
        let idx: Vec<u64> = g.items.iter().map(|i| i.offset / bytes).collect();
        let src0: Vec<u64> = g.items.iter().map(|i| i.src[0]).collect();
        let src1: Vec<u64> = g.items.iter().map(|i| i.src[1]).collect();
        let at_idx = push(&mut words, 4, &idx);
        let at_src0 = push(&mut words, bytes, &src0);
        let at_src1 = (g.op == AtomicOp::Cas).then(|| push(&mut words, bytes, &src1));
        let h = (HEAD + INSTR * k as u32) as usize;
        let fields = [
            (N, g.items.len() as u32),
            (FIRST, cp.first_item(k) as u32),
            (ITERATIONS, cp.iterations[k]),
            (RET_BASE, cp.ret_base(k) as u32),
            (THREAD_BASE, cp.thread_base(k) as u32),
            (IDX, at_idx),
            (SRC0, at_src0),
            (SRC1, at_src1.unwrap_or(0)),
        ];
        for (f, v) in fields {
            words[h + f as usize] = v;
        }
        listing.push_str(&format!(
            "; binding {PARAMS} words {h}..{}: instruction {k} ({} {} on {} memory): {} invocation(s) from local invocation {}, {} iteration(s), returned values from slot {}, iterations executed from slot {}\n",
            h + INSTR as usize,
            g.op.name(),
            g.ty.name(),
            g.space.name(),
            g.items.len(),
            cp.first_item(k),
            cp.iterations[k],
            cp.ret_base(k),
            cp.thread_base(k),
        ));
        let role = |what: &str, at: u32| format!("words {at}.., instruction {k}: {what}");
        listing.push_str(&operand_line(
            PARAMS,
            &role("element index per invocation", at_idx),
            4,
            &idx,
        ));
        listing.push_str(&operand_line(
            PARAMS,
            &role("first operand per invocation", at_src0),
            bytes,
            &src0,
        ));
        if let Some(at) = at_src1 {
            listing.push_str(&operand_line(
                PARAMS,
                &role("second operand per invocation", at),
                bytes,
                &src1,
            ));
        }
    }
    let head = format!(
        "; binding {PARAMS} (parameters, {} words): {} work-group(s); {}\n",
        words.len(),
        words[WORK_GROUPS as usize],
        if cp.has_local_image() {
            format!(
                "local memory: {} elements of {lw} bytes, its image from memory element {}",
                words[IMAGE_ELEMS as usize], words[IMAGE_BASE as usize]
            )
        } else {
            "no local memory".to_string()
        }
    );
    Params {
        words,
        listing: head + &listing,
    }
}
