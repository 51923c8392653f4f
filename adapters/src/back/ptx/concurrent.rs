//! Concurrent cases on CUDA (issue 12): one PTX kernel per case, one launch, one thread block
//! (CTA) per instruction, so that the instructions really run at the same time on the device;
//! each thread is one lane of its instruction and loops over its iterations; every iteration's
//! returned value goes to `ret[group][iteration][item]` ([`ConcurrentPlan::ret_base`]).
//!
//! The atoms are the single-instruction back end's ([`super::emit`]: exactly the op, never
//! emulated) on global memory at device scope. PTX ISA, "Parallel Synchronization and
//! Communication Instructions: atom": without `.sem` an atom is `.relaxed`, without `.scope` it
//! is `.gpu` (all threads of the device, "Memory Consistency Model: Scope"); from sm_70 the
//! kernel says `atom.relaxed.gpu` explicitly (the qualifiers need sm_70 and PTX ISA 6.0), for
//! older targets it relies on the default. Threads of different CTAs are in one `.gpu` scope,
//! so the read-modify-writes of all instructions on one address are atomic with respect to
//! each other: a lost update is the implementation's, not the harness's.
//!
//! Deadline: a kernel may run long (65,536 iterations of 1,024 threads of several
//! instructions on one address). The first thread to start stores the `%globaltimer` in
//! `ctl[0]` (a 64-bit compare-and-swap with zero); every thread reads the timer every
//! [`DEADLINE_CHECK`] iterations and stops once `budget_ns` has passed since then, setting
//! `ctl[1]`. The host reports that as a timeout (`run.rs`), so the adapter's
//! `--adapter-timeout-ms` holds for the kernel too.
//!
//! Parameters ([`PARAMS`], all `.u64`): `mem` (the flat global buffer), `items` (three u64 per
//! thread of every group, group after group: byte offset, src0, src1), `ret` (one u64 per
//! operation, zero-extended), `ctl` (two u64: start time, stopped flag; zeroed before the
//! launch), `budget_ns` and `att` (one u32 per operation: a compare-and-swap loop's attempts).
//!
//! A compare-and-swap loop (FORMAT.md, "Compare-and-swap loops") is a real retry loop around
//! `atom.cas` (PTX ISA, `atom`: `.cas` stores `c` when the old value equals `b` and returns the
//! old value): a failed attempt's returned value is the next compare, the new value is
//! `update(compare, operand)`, and each iteration ends at its first success.

use super::emit::{Class, KERNEL_NAME, MAX_THREADS, Plant, spelling, version};
use crate::plan::{ConcurrentPlan, NotApplicable};
use atomcts_reference::ir::AtomicOp;
use atomcts_reference::types::DataType;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The kernel's parameters in order, each a `.u64` (device pointers and the budget): `run.rs`
/// pushes exactly these, in this order (a unit test reads them back from the emitted `.entry`).
pub const PARAMS: [&str; 6] = ["mem", "items", "ret", "ctl", "budget_ns", "att"];

/// How many iterations a thread runs between two reads of `%globaltimer`.
pub const DEADLINE_CHECK: u32 = 256;

/// The most bytes of returned values one launch may write (`ret_len` u64s); more is not
/// applicable (a limit of this adapter, not of the device).
pub const MAX_RET_BYTES: u64 = 1 << 30;

/// An emitted concurrent kernel and its launch shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConcurrentKernel {
    /// PTX source.
    pub source: String,
    /// The oldest target with every instruction.
    pub min_sm: u32,
    /// Each group's memory access (the `atom`, or the planted load and store), for reports.
    pub atoms: Vec<String>,
    /// CTAs: one per instruction.
    pub grid: u32,
    /// Threads per CTA: the most lanes of any instruction (threads past a group's lanes return
    /// at once).
    pub block: u32,
}

fn na<T>(why: impl Into<String>) -> Result<T, NotApplicable> {
    Err(NotApplicable(why.into()))
}

/// Emits the kernel of a concurrent case for target `sm_<sm>`.
pub fn emit(
    cp: &ConcurrentPlan,
    sm: u32,
    plant: Plant,
    title: &str,
) -> Result<ConcurrentKernel, NotApplicable> {
    let groups = cp.groups.len();
    if groups == 0 || groups != cp.iterations.len() {
        return na("no instructions to launch");
    }
    if let Some(k) = cp.iterations.iter().position(|&n| n == 0) {
        return na(format!("instruction {k}: no iterations to run"));
    }
    let ret_bytes = cp.ret_len() as u64 * 8;
    if ret_bytes > MAX_RET_BYTES {
        return na(format!(
            "{} returned values ({ret_bytes} bytes) exceed this adapter's limit of {MAX_RET_BYTES} bytes per launch",
            cp.ret_len()
        ));
    }
    // Per address, the groups that touch it (for the per-half f16x2 atoms below).
    let mut users: BTreeMap<u64, usize> = BTreeMap::new();
    for g in &cp.groups {
        for i in &g.items {
            *users.entry(i.offset).or_default() += 1;
        }
    }
    let mut spellings = Vec::with_capacity(groups);
    let mut min_ptx = (6, 0);
    let mut min_sm = 50;
    for (k, g) in cp.groups.iter().enumerate() {
        let sp = spelling(g, plant).map_err(|e| NotApplicable(format!("instruction {k}: {e}")))?;
        if sp.min_sm > sm {
            return na(format!(
                "instruction {k}: atom.{} needs sm_{}; the target is sm_{sm}",
                sp.op, sp.min_sm
            ));
        }
        if sp.class == Class::V2F16 && g.items.iter().any(|i| users[&i.offset] > 1) {
            return na(format!(
                "instruction {k}: atom.{} is atomic per half, not per 32-bit word as the instruction is, and threads of this case race on its address",
                sp.op
            ));
        }
        if g.items.len() > MAX_THREADS {
            return na(format!(
                "instruction {k}: {} threads exceed a thread block ({MAX_THREADS})",
                g.items.len()
            ));
        }
        min_ptx = min_ptx.max(sp.min_ptx);
        min_sm = min_sm.max(sp.min_sm);
        spellings.push(sp);
    }
    let (major, minor) = version(sm, min_ptx);
    let sem = if sm >= 70 { ".relaxed.gpu" } else { "" };
    let block = cp.groups.iter().map(|g| g.items.len()).max().unwrap_or(1);
    let mut s = String::new();
    let w = &mut s;
    let _ = writeln!(w, "// atomcts PTX back end, concurrent: {title}");
    let _ = writeln!(
        w,
        "// {groups} instructions, one CTA each ({block} threads), launched together; device-scope atoms"
    );
    let _ = writeln!(w, ".version {major}.{minor}");
    let _ = writeln!(w, ".target sm_{sm}");
    let _ = writeln!(w, ".address_size 64");
    let params: Vec<String> = PARAMS.iter().map(|p| format!(".param .u64 {p}")).collect();
    let _ = writeln!(w, ".visible .entry {KERNEL_NAME}({})", params.join(", "));
    let _ = writeln!(w, "{{");
    let _ = writeln!(w, "  .reg .pred %p<8>;");
    let _ = writeln!(w, "  .reg .b32 %r<16>;");
    let _ = writeln!(w, "  .reg .b64 %rd<24>;");
    let _ = writeln!(w, "  .reg .f32 %f<4>;");
    let _ = writeln!(w, "  .reg .f64 %fd<4>;");
    let _ = writeln!(w, "  .reg .b16 %h<8>;");
    for (r, p) in [(1, "mem"), (2, "items"), (3, "ret"), (4, "ctl")] {
        let _ = writeln!(w, "  ld.param.u64 %rd{r}, [{p}];");
        let _ = writeln!(w, "  cvta.to.global.u64 %rd{r}, %rd{r};");
    }
    let _ = writeln!(w, "  ld.param.u64 %rd5, [budget_ns];");
    let _ = writeln!(w, "  ld.param.u64 %rd22, [att];");
    let _ = writeln!(w, "  cvta.to.global.u64 %rd22, %rd22;");
    let _ = writeln!(w, "  mov.u32 %r1, %ctaid.x;");
    let _ = writeln!(w, "  mov.u32 %r2, %tid.x;");
    // The start of the run: the first thread's clock (ctl[0] is zero before the launch).
    let _ = writeln!(w, "  mov.u64 %rd6, %globaltimer;");
    let _ = writeln!(w, "  mov.u64 %rd8, 0;");
    let _ = writeln!(w, "  atom.global.cas.b64 %rd7, [%rd4], %rd8, %rd6;");
    let _ = writeln!(w, "  setp.ne.u64 %p1, %rd7, 0;");
    let _ = writeln!(w, "  selp.u64 %rd6, %rd7, %rd6, %p1;");
    for k in 0..groups {
        let _ = writeln!(w, "  setp.eq.u32 %p1, %r1, {k};");
        let _ = writeln!(w, "  @%p1 bra G{k};");
    }
    let _ = writeln!(w, "  bra DONE;");
    let mut atoms = Vec::with_capacity(groups);
    let mut item_base = 0usize;
    for (k, (g, sp)) in cp.groups.iter().zip(&spellings).enumerate() {
        let n = g.items.len();
        let iters = cp.iterations[k];
        let ret_base = cp.ret_base(k);
        let lanes: Vec<String> = g.items.iter().map(|i| i.lane.to_string()).collect();
        let _ = writeln!(
            w,
            "G{k}: // instruction {k}: {} {}, lanes {}, {iters} iterations",
            g.op.name(),
            g.ty.name(),
            lanes.join(" ")
        );
        let _ = writeln!(w, "  setp.ge.u32 %p2, %r2, {n};");
        let _ = writeln!(w, "  @%p2 bra DONE;");
        let _ = writeln!(w, "  add.u32 %r3, %r2, {item_base};");
        let _ = writeln!(w, "  mul.wide.u32 %rd9, %r3, 24;");
        let _ = writeln!(w, "  add.u64 %rd9, %rd2, %rd9;");
        let _ = writeln!(w, "  ld.global.u64 %rd10, [%rd9];");
        let _ = writeln!(w, "  ld.global.u64 %rd11, [%rd9+8];");
        let _ = writeln!(w, "  ld.global.u64 %rd12, [%rd9+16];");
        let (a, b) = operands(w, sp.class);
        let _ = writeln!(w, "  add.u64 %rd13, %rd1, %rd10;");
        // ret + 8 * (ret_base + tid); each iteration moves on by the group's lanes.
        let _ = writeln!(w, "  cvt.u64.u32 %rd14, %r2;");
        let _ = writeln!(w, "  add.u64 %rd14, %rd14, {ret_base};");
        let _ = writeln!(w, "  shl.b64 %rd14, %rd14, 3;");
        let _ = writeln!(w, "  add.u64 %rd14, %rd3, %rd14;");
        let _ = writeln!(w, "  mov.u32 %r5, 0;");
        let looped = cp.loops.get(k).copied().flatten();
        if let Some(lp) = looped {
            loop_setup(w, k, sp.class, a, lp, ret_base)?;
        }
        let _ = writeln!(w, "L{k}:");
        let dst = dst(sp.class);
        let access = match (looped, split(g.op, g.ty, sp.class, plant)) {
            (Some(lp), _) => loop_body(w, k, g.ty, sp.class, lp, sem, n)?,
            (None, Some(lines)) => {
                for l in &lines {
                    let _ = writeln!(w, "  {l}");
                }
                lines.join(" ")
            }
            (None, None) => {
                let atom = if g.op == AtomicOp::Cas {
                    format!("atom{sem}.global.{} {dst}, [%rd13], {a}, {b};", sp.op)
                } else {
                    format!("atom{sem}.global.{} {dst}, [%rd13], {a};", sp.op)
                };
                let _ = writeln!(w, "  {atom}");
                atom
            }
        };
        atoms.push(access);
        widen(w, sp.class);
        let _ = writeln!(w, "  st.global.u64 [%rd14], %rd15;");
        let _ = writeln!(w, "  add.u64 %rd14, %rd14, {};", 8 * n);
        let _ = writeln!(w, "  add.u32 %r5, %r5, 1;");
        let _ = writeln!(w, "  setp.ge.u32 %p2, %r5, {iters};");
        let _ = writeln!(w, "  @%p2 bra DONE;");
        let _ = writeln!(w, "  and.b32 %r6, %r5, {};", DEADLINE_CHECK - 1);
        let _ = writeln!(w, "  setp.ne.u32 %p3, %r6, 0;");
        let _ = writeln!(w, "  @%p3 bra L{k};");
        let _ = writeln!(w, "  mov.u64 %rd16, %globaltimer;");
        let _ = writeln!(w, "  sub.u64 %rd16, %rd16, %rd6;");
        let _ = writeln!(w, "  setp.lt.u64 %p3, %rd16, %rd5;");
        let _ = writeln!(w, "  @%p3 bra L{k};");
        let _ = writeln!(w, "  bra STOP;");
        item_base += n;
    }
    // Out of time: say so and stop (the host reports a timeout; the results are not used).
    let _ = writeln!(w, "STOP:");
    let _ = writeln!(w, "  mov.u64 %rd17, 1;");
    let _ = writeln!(w, "  st.global.u64 [%rd4+8], %rd17;");
    let _ = writeln!(w, "DONE:");
    let _ = writeln!(w, "  ret;");
    let _ = writeln!(w, "}}");
    Ok(ConcurrentKernel {
        source: s,
        min_sm,
        atoms,
        grid: groups as u32,
        block: block as u32,
    })
}

/// A compare-and-swap loop's registers before its first iteration: the compare starts as the
/// instruction's compare operand (`a`), the operand `k` in a register, and the attempts
/// pointer `att + 4 * (ret_base + tid)` in `%rd21`.
fn loop_setup(
    w: &mut String,
    k: usize,
    class: Class,
    a: &str,
    lp: atomcts_reference::concurrent::CasLoop,
    ret_base: usize,
) -> Result<(), NotApplicable> {
    match class {
        Class::B32 => {
            let _ = writeln!(w, "  mov.b32 %r7, {a};");
            let _ = writeln!(w, "  mov.b32 %r4, 0x{:08x};", lp.operand as u32);
        }
        Class::B64 => {
            let _ = writeln!(w, "  mov.b64 %rd19, {a};");
            let _ = writeln!(w, "  mov.b64 %rd23, 0x{:016x};", lp.operand);
        }
        _ => {
            return na(format!(
                "instruction {k}: a compare-and-swap loop needs integer data"
            ));
        }
    }
    let _ = writeln!(w, "  cvt.u64.u32 %rd21, %r2;");
    let _ = writeln!(w, "  add.u64 %rd21, %rd21, {ret_base};");
    let _ = writeln!(w, "  shl.b64 %rd21, %rd21, 2;");
    let _ = writeln!(w, "  add.u64 %rd21, %rd22, %rd21;");
    Ok(())
}

/// One iteration of a compare-and-swap loop: attempts until one succeeds; leaves the
/// successful attempt's returned value in the class's destination (for `widen`), stores the
/// attempts, and sets the next iteration's compare to the value stored. Returns the `atom`.
fn loop_body(
    w: &mut String,
    k: usize,
    ty: DataType,
    class: Class,
    lp: atomcts_reference::concurrent::CasLoop,
    sem: &str,
    n: usize,
) -> Result<String, NotApplicable> {
    let signed = ty.is_signed();
    let (cmp, new, kk, d, bits) = match class {
        Class::B32 => ("%r7", "%r8", "%r4", "%r12", 32),
        Class::B64 => ("%rd19", "%rd20", "%rd23", "%rd18", 64),
        _ => {
            return na(format!(
                "instruction {k}: a compare-and-swap loop needs integer data"
            ));
        }
    };
    let update = match lp.update {
        AtomicOp::Add => format!("add.u{bits} {new}, {cmp}, {kk};"),
        AtomicOp::Sub => format!("sub.u{bits} {new}, {cmp}, {kk};"),
        AtomicOp::And => format!("and.b{bits} {new}, {cmp}, {kk};"),
        AtomicOp::Or => format!("or.b{bits} {new}, {cmp}, {kk};"),
        AtomicOp::Xor => format!("xor.b{bits} {new}, {cmp}, {kk};"),
        AtomicOp::Min if signed => format!("min.s{bits} {new}, {cmp}, {kk};"),
        AtomicOp::Min => format!("min.u{bits} {new}, {cmp}, {kk};"),
        AtomicOp::Max if signed => format!("max.s{bits} {new}, {cmp}, {kk};"),
        AtomicOp::Max => format!("max.u{bits} {new}, {cmp}, {kk};"),
        other => {
            return na(format!(
                "instruction {k}: cas_loop update {} is not emitted",
                other.name()
            ));
        }
    };
    let atom = format!("atom{sem}.global.cas.b{bits} {d}, [%rd13], {cmp}, {new};");
    let _ = writeln!(w, "  mov.u32 %r9, 0;");
    let _ = writeln!(w, "C{k}:");
    let _ = writeln!(w, "  {update}");
    let _ = writeln!(w, "  add.u32 %r9, %r9, 1;");
    let _ = writeln!(w, "  {atom}");
    let _ = writeln!(w, "  setp.ne.b{bits} %p4, {d}, {cmp};");
    let _ = writeln!(w, "  mov.b{bits} {cmp}, {d};");
    let _ = writeln!(w, "  @%p4 bra C{k};");
    let _ = writeln!(w, "  st.global.u32 [%rd21], %r9;");
    let _ = writeln!(w, "  add.u64 %rd21, %rd21, {};", 4 * n);
    let _ = writeln!(w, "  mov.b{bits} {cmp}, {new};");
    Ok(atom)
}

/// The operands in the datum's register class, from `%rd11` (src0) and `%rd12` (src1).
fn operands(w: &mut String, class: Class) -> (&'static str, &'static str) {
    match class {
        Class::B32 => {
            let _ = writeln!(w, "  cvt.u32.u64 %r10, %rd11;");
            let _ = writeln!(w, "  cvt.u32.u64 %r11, %rd12;");
            ("%r10", "%r11")
        }
        Class::B64 => ("%rd11", "%rd12"),
        Class::F32 => {
            let _ = writeln!(w, "  cvt.u32.u64 %r10, %rd11;");
            let _ = writeln!(w, "  mov.b32 %f1, %r10;");
            ("%f1", "%f1")
        }
        Class::F64 => {
            let _ = writeln!(w, "  mov.b64 %fd1, %rd11;");
            ("%fd1", "%fd1")
        }
        Class::V2F16 => {
            let _ = writeln!(w, "  cvt.u32.u64 %r10, %rd11;");
            let _ = writeln!(w, "  mov.b32 {{%h3, %h4}}, %r10;");
            ("{%h3, %h4}", "{%h3, %h4}")
        }
    }
}

/// The register the access returns into.
fn dst(class: Class) -> &'static str {
    match class {
        Class::B32 => "%r12",
        Class::B64 => "%rd18",
        Class::F32 => "%f2",
        Class::F64 => "%fd2",
        Class::V2F16 => "{%h1, %h2}",
    }
}

/// The returned value, zero-extended into `%rd15`.
fn widen(w: &mut String, class: Class) {
    match class {
        Class::B32 => {
            let _ = writeln!(w, "  cvt.u64.u32 %rd15, %r12;");
        }
        Class::B64 => {
            let _ = writeln!(w, "  mov.b64 %rd15, %rd18;");
        }
        Class::F32 => {
            let _ = writeln!(w, "  mov.b32 %r13, %f2;");
            let _ = writeln!(w, "  cvt.u64.u32 %rd15, %r13;");
        }
        Class::F64 => {
            let _ = writeln!(w, "  mov.b64 %rd15, %fd2;");
        }
        Class::V2F16 => {
            let _ = writeln!(w, "  mov.b32 %r13, {{%h1, %h2}};");
            let _ = writeln!(w, "  cvt.u64.u32 %rd15, %r13;");
        }
    }
}

/// [`Plant::SplitRmw`]: an integer read-modify-write as a volatile load, the op in registers
/// and a volatile store (not atomic as a whole). `None` where the plant does not apply (no
/// plant, float ops): the atom is emitted.
fn split(op: AtomicOp, ty: DataType, class: Class, plant: Plant) -> Option<Vec<String>> {
    if plant != Plant::SplitRmw || !matches!(class, Class::B32 | Class::B64) {
        return None;
    }
    let integer = matches!(
        ty,
        DataType::U32 | DataType::S32 | DataType::U64 | DataType::S64
    );
    if !integer {
        return None;
    }
    let wide = class == Class::B64;
    let bits = if wide { 64 } else { 32 };
    let (old, a, b, new) = if wide {
        ("%rd18", "%rd11", "%rd12", "%rd19")
    } else {
        ("%r12", "%r10", "%r11", "%r14")
    };
    let signed = matches!(ty, DataType::S32 | DataType::S64);
    let compute = match op {
        AtomicOp::Add => vec![format!("add.u{bits} {new}, {old}, {a};")],
        AtomicOp::And | AtomicOp::Or | AtomicOp::Xor => {
            vec![format!("{}.b{bits} {new}, {old}, {a};", op.name())]
        }
        AtomicOp::Exch => vec![format!("mov.b{bits} {new}, {a};")],
        AtomicOp::Min | AtomicOp::Max => vec![format!(
            "{}.{}{bits} {new}, {old}, {a};",
            op.name(),
            if signed { "s" } else { "u" }
        )],
        AtomicOp::IncBounded if !wide => vec![
            format!("setp.ge.u32 %p4, {old}, {a};"),
            format!("add.u32 {new}, {old}, 1;"),
            format!("selp.u32 {new}, 0, {new}, %p4;"),
        ],
        AtomicOp::DecBounded if !wide => vec![
            format!("setp.eq.u32 %p4, {old}, 0;"),
            format!("setp.gt.u32 %p5, {old}, {a};"),
            "or.pred %p4, %p4, %p5;".to_string(),
            format!("sub.u32 {new}, {old}, 1;"),
            format!("selp.u32 {new}, {a}, {new}, %p4;"),
        ],
        AtomicOp::Cas => vec![
            format!("setp.eq.b{bits} %p4, {old}, {a};"),
            format!("selp.b{bits} {new}, {b}, {old}, %p4;"),
        ],
        _ => return None,
    };
    let mut lines = vec![format!("ld.volatile.global.b{bits} {old}, [%rd13];")];
    lines.extend(compute);
    lines.push(format!("st.volatile.global.b{bits} [%rd13], {new};"));
    Some(lines)
}

/// The per-thread data of every group, group after group: offset, src0, src1 per item.
pub fn items(cp: &ConcurrentPlan) -> Vec<u64> {
    cp.groups
        .iter()
        .flat_map(|g| g.items.iter().flat_map(|i| [i.offset, i.src[0], i.src[1]]))
        .collect()
}

/// Whether each operation succeeded, laid out like the returned values
/// (`[group][iteration][item]`): `atom.cas` returns the old value only, and a strong
/// compare-and-swap succeeded exactly when that equals the compare value, bit for bit; every
/// other op "succeeds".
pub fn successes(cp: &ConcurrentPlan, old: &[u64]) -> Vec<bool> {
    let mut ok = vec![true; cp.ret_len()];
    for (k, g) in cp.groups.iter().enumerate() {
        // A loop's every iteration ends with its successful attempt.
        if g.op != AtomicOp::Cas || cp.loops.get(k).copied().flatten().is_some() {
            continue;
        }
        let (base, n) = (cp.ret_base(k), g.items.len());
        for it in 0..cp.iterations[k] as usize {
            for (i, item) in g.items.iter().enumerate() {
                let at = base + it * n + i;
                if let (Some(o), Some(slot)) = (old.get(at), ok.get_mut(at)) {
                    *slot = *o == item.src[0];
                }
            }
        }
    }
    ok
}

/// The `.entry` parameters of an emitted kernel, as `(PTX type, name)`, in order.
pub fn entry_params(source: &str) -> Vec<(String, String)> {
    let Some(line) = source.lines().find(|l| l.contains(".entry")) else {
        return vec![];
    };
    let inner = line
        .split_once('(')
        .and_then(|(_, r)| r.rsplit_once(')'))
        .map_or("", |(p, _)| p);
    inner
        .split(',')
        .filter_map(|p| {
            let words: Vec<&str> = p.split_whitespace().collect();
            match words.as_slice() {
                [".param", ty, name] => Some((ty.to_string(), name.to_string())),
                _ => None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::ConcurrentPlan;
    use atomcts_reference::ir::{Lowered, Lowering};
    use atomcts_reference::program::{Dialect, Program};
    use atomcts_reference::state::Reg;
    use atomcts_reference::types::ElemType;
    use atomcts_reference::{Profile, State};

    fn state(lanes: u32, r4: u64, r5: u64) -> State {
        let mut s = State::new(lanes);
        for (r, v) in [("R2", 0x1000), ("R3", 0), ("R4", r4), ("R5", r5)] {
            s.regs.insert(
                r.into(),
                Reg {
                    ty: ElemType::B32,
                    elems: vec![v; lanes as usize],
                },
            );
        }
        s.global.alloc(0x1000, 8).unwrap();
        s
    }

    fn lower(asm: &str, s: &State) -> Lowered {
        match Program::parse(Dialect::Sass, asm)
            .unwrap()
            .lower(s, &Profile::default())
            .unwrap()
        {
            Lowering::Run(l) => l,
            other => panic!("{other:?}"),
        }
    }

    fn plan(instrs: &[(&str, u32, u64, u32)]) -> ConcurrentPlan {
        let states: Vec<State> = instrs
            .iter()
            .map(|(_, lanes, r4, _)| state(*lanes, *r4, *r4))
            .collect();
        let lowered: Vec<Lowered> = instrs
            .iter()
            .zip(&states)
            .map(|((asm, ..), s)| lower(asm, s))
            .collect();
        let iterations: Vec<u32> = instrs.iter().map(|i| i.3).collect();
        ConcurrentPlan::new(&lowered, &states, &iterations).unwrap()
    }

    #[test]
    fn a_cas_loop_retries_with_the_returned_value_and_counts_its_attempts() {
        let mut cp = plan(&[
            ("ATOM.CAS R0, [R2], R4, R5", 2, 0, 4),
            ("ATOM.ADD R0, [R2], R4", 2, 1, 4),
        ]);
        cp.loops[0] = Some(atomcts_reference::concurrent::CasLoop {
            update: AtomicOp::Add,
            operand: 3,
        });
        let k = emit(&cp, 90, Plant::None, "t").unwrap();
        let src = &k.source;
        for line in [
            "mov.b32 %r7, %r10;",
            "mov.b32 %r4, 0x00000003;",
            "C0:\n  add.u32 %r8, %r7, %r4;\n  add.u32 %r9, %r9, 1;\n  atom.relaxed.gpu.global.cas.b32 %r12, [%rd13], %r7, %r8;\n  setp.ne.b32 %p4, %r12, %r7;\n  mov.b32 %r7, %r12;\n  @%p4 bra C0;",
            "st.global.u32 [%rd21], %r9;",
            "mov.b32 %r7, %r8;",
        ] {
            assert!(src.contains(line), "{line}\n{src}");
        }
        // The add group is not a loop: one atom per iteration, no retry label.
        assert!(!src.contains("C1:"), "{src}");
        // Every iteration of a loop succeeds, whatever the value it returned.
        let ok = successes(&cp, &[9, 9, 9, 9, 9, 9, 9, 9, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert!(ok.iter().all(|o| *o), "{ok:?}");
    }

    #[test]
    fn one_cta_per_instruction_guarded_loops_and_flat_returns() {
        let cp = plan(&[
            ("ATOM.ADD R0, [R2], R4", 4, 1, 3),
            ("ATOM.EXCH R0, [R2], R4", 2, 7, 70000),
        ]);
        let k = emit(&cp, 90, Plant::None, "t").unwrap();
        let src = &k.source;
        assert_eq!((k.grid, k.block), (2, 4));
        // Dispatch on the CTA, a guard per group for its own lanes.
        assert!(
            src.contains("setp.eq.u32 %p1, %r1, 1;\n  @%p1 bra G1;"),
            "{src}"
        );
        assert!(src.contains("G0:") && src.contains("setp.ge.u32 %p2, %r2, 4;"));
        assert!(src.contains("G1:") && src.contains("setp.ge.u32 %p2, %r2, 2;"));
        // Items of group 1 follow group 0's; returns at ret_base(1) = 12, stride 2 lanes.
        assert!(src.contains("add.u32 %r3, %r2, 4;"));
        assert!(src.contains("add.u64 %rd14, %rd14, 12;"));
        assert!(src.contains("add.u64 %rd14, %rd14, 16;"));
        // Large iteration counts are a 32-bit compare, not an unrolled constant.
        assert!(src.contains("setp.ge.u32 %p2, %r5, 70000;"));
        // Device scope, relaxed, on global memory.
        assert_eq!(
            k.atoms,
            [
                "atom.relaxed.gpu.global.add.u32 %r12, [%rd13], %r10;",
                "atom.relaxed.gpu.global.exch.b32 %r12, [%rd13], %r10;"
            ]
        );
        assert!(!src.contains(".cta") && !src.contains("shared"));
        // The deadline: one start time, a clock read every DEADLINE_CHECK iterations.
        assert!(src.contains("atom.global.cas.b64 %rd7, [%rd4], %rd8, %rd6;"));
        assert!(src.contains(&format!("and.b32 %r6, %r5, {};", DEADLINE_CHECK - 1)));
        assert!(src.contains("st.global.u64 [%rd4+8], %rd17;"));
        // Before sm_70 the scope is the default (.gpu), not spelt.
        let old = emit(&cp, 50, Plant::None, "t").unwrap();
        assert_eq!(old.atoms[0], "atom.global.add.u32 %r12, [%rd13], %r10;");
        assert!(old.source.contains(".target sm_50"));
    }

    #[test]
    fn the_entry_parameters_are_what_the_launch_pushes() {
        let cp = plan(&[("ATOM.CAS R0, [R2], R4, R5", 3, 0, 2)]);
        let k = emit(&cp, 70, Plant::None, "t").unwrap();
        let params = entry_params(&k.source);
        assert_eq!(
            params,
            PARAMS
                .iter()
                .map(|p| (".u64".to_string(), p.to_string()))
                .collect::<Vec<_>>()
        );
        assert_eq!(
            k.atoms[0],
            "atom.relaxed.gpu.global.cas.b32 %r12, [%rd13], %r10, %r11;"
        );
    }

    #[test]
    fn items_and_successes_follow_the_flat_layout() {
        let cp = plan(&[
            ("ATOM.ADD R0, [R2], R4", 2, 5, 2),
            ("ATOM.CAS R0, [R2], R4, R5", 3, 9, 2),
        ]);
        assert_eq!(items(&cp), [0, 5, 0, 0, 5, 0, 0, 9, 9, 0, 9, 9, 0, 9, 9]);
        assert_eq!((cp.ret_base(1), cp.ret_len()), (4, 10));
        let old = [0, 0, 0, 0, 9, 8, 9, 1, 2, 9];
        assert_eq!(
            successes(&cp, &old),
            [
                true, true, true, true, true, false, true, false, false, true
            ]
        );
    }

    #[test]
    fn the_split_plant_replaces_integer_atoms_with_a_load_and_a_store() {
        let cp = plan(&[
            ("ATOM.INC R0, [R2], R4", 2, 10, 2),
            ("ATOM.ADD.U64 R0, [R2], R4", 2, 1, 2),
        ]);
        let k = emit(&cp, 90, Plant::SplitRmw, "t").unwrap();
        assert!(!k.atoms.iter().any(|a| a.contains("atom")), "{:?}", k.atoms);
        assert!(k.atoms[0].starts_with("ld.volatile.global.b32 %r12, [%rd13];"));
        assert!(k.atoms[1].contains("add.u64 %rd19, %rd18, %rd11;"));
        assert!(k.atoms[1].ends_with("st.volatile.global.b64 [%rd13], %rd19;"));
        let clean = emit(&cp, 90, Plant::None, "t").unwrap();
        assert_eq!(
            clean.atoms[0],
            "atom.relaxed.gpu.global.inc.u32 %r12, [%rd13], %r10;"
        );
    }

    #[test]
    fn ops_without_an_exact_atom_and_oversized_groups_are_not_applicable() {
        // vISA-style wrapping ops have no PTX atom; SASS has none either for them, so use a
        // float add whose flushing does not match.
        let mut keep = Profile::default();
        keep.set("sass.f32_add_ftz", "preserve").unwrap();
        let s = state(2, 0x3f80_0000, 0);
        let l = match Program::parse(Dialect::Sass, "ATOM.ADD.F32.FTZ.RN R0, [R2], R4")
            .unwrap()
            .lower(&s, &keep)
            .unwrap()
        {
            Lowering::Run(l) => l,
            other => panic!("{other:?}"),
        };
        let a = state(2, 1, 1);
        let la = lower("ATOM.ADD R0, [R2], R4", &a);
        let cp = ConcurrentPlan::new(&[la, l], &[a, s], &[1, 1]).unwrap();
        let why = emit(&cp, 90, Plant::None, "t").unwrap_err();
        assert!(why.0.starts_with("instruction 1:"), "{why}");
        // The f64 add needs sm_60.
        let cp = plan(&[("ATOM.ADD.F64.RN R0, [R2], R4", 1, 0, 1)]);
        assert!(
            emit(&cp, 50, Plant::None, "t")
                .unwrap_err()
                .0
                .contains("needs sm_60")
        );
    }

    #[test]
    fn entry_params_reads_the_entry_line() {
        assert_eq!(
            entry_params(".visible .entry k(.param .u64 a, .param .u32 n)\n{"),
            [
                (".u64".to_string(), "a".to_string()),
                (".u32".to_string(), "n".to_string())
            ]
        );
        assert!(entry_params("no entry").is_empty());
    }
}
