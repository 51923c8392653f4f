//! The shared parts of a standalone reproducer's script ([`script`]): the header (the case,
//! the documents' rule, what is and is not judged), the tables of arguments, checks and order
//! data, and the comparison with its exit codes; each back end writes its own host code.

use super::{Arg, Check, Dispatch, Program, order};
use std::fmt::Write as _;

/// What a script says about its case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct About {
    /// The case id.
    pub id: String,
    /// The documents' rule with its citation.
    pub cite: String,
    /// The adapter (`opencl:pocl`).
    pub adapter: String,
    /// Environment the script needs (set by the script itself when unset).
    pub env: Vec<(String, String)>,
    /// The profile the case was judged under.
    pub profile: String,
    /// How the case came out in atomcts (`fail`, `pass`).
    pub status: String,
}

/// A Python string literal (repr-like, ASCII only) of `s`.
pub fn py_str(s: &str) -> String {
    let mut out = String::from("\"");
    for ch in s.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (' '..='~').contains(&c) => out.push(c),
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

/// A Python `bytes` expression of `b`: hex, with trailing zeros as `bytes(n)` (a launch's
/// result buffers start zeroed and can be large).
pub fn py_bytes(b: &[u8]) -> String {
    let used = b.iter().rposition(|x| *x != 0).map_or(0, |i| i + 1);
    let zeros = b.len() - used;
    match (used, zeros) {
        (0, n) => format!("bytes({n})"),
        (_, 0) => format!("bytes.fromhex({})", py_str(&hex(b))),
        (_, n) => format!("bytes.fromhex({}) + bytes({n})", py_str(&hex(&b[..used]))),
    }
}

pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Comment lines (`# `) of `text`.
fn comment(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.is_empty() {
                "#\n".to_string()
            } else {
                format!("# {l}\n")
            }
        })
        .collect()
}

/// The whole script: the shared header and tables, the back end's `host` code (which defines
/// `run()` returning the buffers after the launch, a list indexed like the arguments with
/// `None` for non-buffers, or raising `Unavailable`), and the shared comparison.
pub fn script(about: &About, d: &Dispatch, program_comment: &str, host: &str) -> String {
    let mut s = String::from("#!/usr/bin/env python3\n");
    let env: String = about
        .env
        .iter()
        .map(|(k, v)| format!("  {k}={v}\n"))
        .collect();
    let _ = write!(
        s,
        "{}",
        comment(&format!(
            "Standalone reproducer written by `atomcts repro` (no atomcts needed to run it).\n\
             case: {}\nadapter: {} (profile {}; atomcts judged it: {})\n\
             rule: {}\n\n\
             Runs the kernel below exactly as atomcts ran it (one launch of {} work-item(s) in\n\
             work-groups of {}), reads the buffers back, and prints the expected and observed\n\
             words in hex; a word the documents leave partly free is compared on its fixed bits\n\
             only (the mask), and where they allow several values each is listed.\n\
             Exit status: 0 the words match, 1 they differ, 2 it cannot run (driver missing, or it\n\
             does not give the launch what the case requires, such as the sub-group size).\n\
             `python3 <this script> RUNS` launches it RUNS times, judges each, and exits 1 when any\n\
             launch differs (a race may show in some launches only).\n\
             Environment (the script sets it itself when unset):\n{}{}{}\
             {}: python3 <this script>",
            about.id,
            about.adapter,
            about.profile,
            about.status,
            about.cite,
            d.global,
            d.local,
            if env.is_empty() {
                "  (none)\n".to_string()
            } else {
                env
            },
            if d.orders.is_empty() {
                String::new()
            } else {
                format!(
                    "Returned values, judged at {} address(es) (ORDERS): every value each work-item's iterations\n\
                     returned (and a compare-exchange's success flag), with the final value, must fit one total\n\
                     order of all the operations on the address that keeps each work-item's iterations in\n\
                     program order: each returns what memory held just before it (floats bit for bit, or any NaN\n\
                     for any NaN where the profile allows any NaN); a compare-and-swap loop's iteration is one\n\
                     failed attempt where it made more than one, then its update at the value it returned, and\n\
                     with one attempt it returned its compare. A depth-first search of at most {} states\n\
                     (ORDER_BUDGET); past it the script prints \"returned values not judged: budget\" and\n\
                     claims nothing about them.\n",
                    d.orders.len(),
                    order::ORDER_BUDGET
                )
            },
            if d.unjudged.is_empty() {
                String::new()
            } else {
                format!(
                    "Not judged standalone:\n{}",
                    d.unjudged
                        .iter()
                        .map(|u| format!("  - {u}\n"))
                        .collect::<String>()
                )
            },
            match &d.program {
                Program::Shim { modules, .. } if !modules.is_empty() =>
                    format!("Python 3 with {}", modules.join(", ")),
                _ => "Python 3, standard library only".to_string(),
            },
        ))
    );
    s.push_str(program_comment);
    s.push_str("import ctypes, os, sys\n\n");
    let _ = writeln!(s, "CASE = {}", py_str(&about.id));
    let _ = writeln!(s, "RULE = {}", py_str(&about.cite));
    let _ = writeln!(s, "ADAPTER = {}", py_str(&about.adapter));
    s.push_str("ENV = {\n");
    for (k, v) in &about.env {
        let _ = writeln!(s, "    {}: {},", py_str(k), py_str(v));
    }
    s.push_str("}\n");
    let _ = writeln!(s, "GLOBAL_SIZE = {}\nLOCAL_SIZE = {}", d.global, d.local);
    s.push_str("# The kernel's arguments in order: (\"buffer\", name, initial bytes), (\"u32\", value), (\"u64\", value), (\"local\", bytes).\nARGS = [\n");
    for a in &d.args {
        match a {
            Arg::Buffer { name, init } => {
                let _ = writeln!(s, "    (\"buffer\", {}, {}),", py_str(name), py_bytes(init));
            }
            Arg::U32(v) => {
                let _ = writeln!(s, "    (\"u32\", {v:#010x}),");
            }
            Arg::U64(v) => {
                let _ = writeln!(s, "    (\"u64\", {v:#018x}),");
            }
            Arg::Local(n) => {
                let _ = writeln!(s, "    (\"local\", {n}),");
            }
        }
    }
    s.push_str("]\n# The words compared: (label, argument, byte offset, bytes, mask of fixed bits, allowed values,\n# any NaN: (format mask, exponent mask, fraction mask) where any NaN is allowed, else None).\nCHECKS = [\n");
    push_checks(&mut s, d.checks.iter().filter(|c| !c.required));
    s.push_str("]\n# What the launch must have been given (the sub-group size each work-item ran in), as CHECKS:\n# a value outside those allowed means the driver did not run the case as it needs (exit 2).\nREQUIRED = [\n");
    push_checks(&mut s, d.checks.iter().filter(|c| c.required));
    s.push_str("]\nUNJUDGED = [\n");
    for u in &d.unjudged {
        let _ = writeln!(s, "    {},", py_str(u));
    }
    s.push_str("]\n");
    let _ = writeln!(s, "ORDER_BUDGET = {}", order::ORDER_BUDGET);
    s.push_str(&order::py_orders(&d.orders));
    s.push_str("\n\nclass Unavailable(Exception):\n    pass\n\n\n");
    s.push_str(host);
    s.push_str(order::ORDER_CHECK);
    s.push_str(COMPARE);
    s
}

/// One `CHECKS`/`REQUIRED` row per check.
fn push_checks<'a>(s: &mut String, checks: impl Iterator<Item = &'a Check>) {
    for c in checks {
        let digits = 2 * c.bytes;
        let allowed: Vec<String> = c
            .allowed
            .iter()
            .map(|v| format!("0x{v:0digits$x}"))
            .collect();
        let _ = writeln!(
            s,
            "    ({}, {}, {}, {}, 0x{:0digits$x}, [{}], {}),",
            py_str(&c.label),
            c.arg,
            c.offset,
            c.bytes,
            c.mask,
            allowed.join(", "),
            c.any_nan.map_or("None".to_string(), |(m, e, f)| format!(
                "({m:#x}, {e:#x}, {f:#x})"
            ))
        );
    }
}

/// The shared comparison and `main` of every script.
const COMPARE: &str = r#"

class NotAsRequired(Exception):
    pass


def judge(buffers, print):
    """Prints one launch's table through `print`; the number of words and orders that differ."""
    for label, arg, offset, nbytes, mask, allowed, _ in REQUIRED:
        seen = int.from_bytes(buffers[arg][offset:offset + nbytes], "little")
        if not any((seen ^ a) & mask == 0 for a in allowed):
            want = " or ".join(str(a) for a in allowed)
            raise NotAsRequired(f"{label} is {seen} where the kernel requires {want}: the driver did not run the launch the case needs")
    if REQUIRED:
        print(f"launch as required: {len(REQUIRED)} requirement(s) held ({REQUIRED[0][0]}: {REQUIRED[0][5][0]}, ...)")
    differ = 0
    print(f"{'word':<48} {'expected':<24} {'observed':<20}")
    for label, arg, offset, nbytes, mask, allowed, any_nan in CHECKS:
        data = buffers[arg]
        seen = int.from_bytes(data[offset:offset + nbytes], "little")
        ok = any((seen ^ a) & mask == 0 for a in allowed)
        if any_nan is not None:
            m, e, f = any_nan
            ok = ok or ((seen & m & e) == e and (seen & m & f) != 0)
        digits = 2 * nbytes
        if len(allowed) <= 4:
            exp = " or ".join(f"0x{a:0{digits}x}" for a in allowed)
        else:
            exp = f"one of {len(allowed)} values (CHECKS)"
        if any_nan is not None:
            exp += " or any NaN"
        if mask != (1 << (8 * nbytes)) - 1:
            exp += f" (bits 0x{mask:0{digits}x})"
        mark = "" if ok else "   <-- differs"
        print(f"{label:<48} {exp:<24} 0x{seen:0{digits}x}{mark}")
        if not ok:
            differ += 1
    for label, init, (fa, fo, fb), nan, table, threads in ORDERS:
        final = int.from_bytes(buffers[fa][fo:fo + fb], "little")
        seen = []
        shape = None
        for kind, iterations, ret, ok, loop in threads:
            rets = [None] * iterations
            oks = None
            if ret is not None:
                a, first, step, nb = ret
                rets = [int.from_bytes(buffers[a][first + it * step:first + it * step + nb], "little") for it in range(iterations)]
            if ok is not None:
                a, first, step = ok
                oks = [int.from_bytes(buffers[a][first + it * step:first + it * step + 4], "little") for it in range(iterations)]
            if loop is None:
                seen.append([(kind, r, None if oks is None else oks[it] != 0) for it, r in enumerate(rets)])
            else:
                steps, why = loop_steps(table, kind, loop[0], bool(loop[1]), rets, oks)
                shape = shape or why
                seen.append(steps or [])
        ops = sum(len(o) for o in seen)
        if shape is not None:
            verdict, detail = "loop", shape
        else:
            verdict, detail = order_check(init, final, table, seen, nan, ORDER_BUDGET)
        if verdict == "pass":
            print(f"{label}: the returned values of its {ops} operations and its final value fit one order")
        elif verdict == "fail":
            print(f"{label}: no order of its {ops} operations, each work-item's in its own order, gives the returned values and final value observed (longest consistent prefix: {detail})   <-- differs")
            differ += 1
        elif verdict == "loop":
            print(f"{label}: a compare-and-swap loop's attempts cannot be a loop's: {detail}   <-- differs")
            differ += 1
        elif verdict == "budget":
            print(f"returned values not judged: budget ({label}: more than {ORDER_BUDGET} states searched)")
        else:
            print(f"returned values not judged: {label}: memory reached 0x{detail:x}, a value the effect table does not hold")
    for u in UNJUDGED:
        print(f"not judged: {u}")
    return differ


def main(argv):
    for k, v in ENV.items():
        os.environ.setdefault(k, v)
    if len(argv) > 2 or (len(argv) == 2 and not (argv[1].isdigit() and 1 <= int(argv[1]) <= 1000000)):
        print(f"usage: {argv[0]} [RUNS]  (RUNS launches, 1 to 1000000; default 1)", file=sys.stderr)
        return 2
    runs = int(argv[1]) if len(argv) == 2 else 1
    print(f"case: {CASE}")
    print(f"rule: {RULE}")
    print(f"adapter: {ADAPTER}")
    # Every launch is judged; the table printed is the first differing launch's, else the
    # last one's (a race may show in some launches only).
    failed, shown = [], None
    for i in range(runs):
        lines = []
        try:
            buffers = run()
            differ = judge(buffers, lambda *a, **k: lines.append(" ".join(str(x) for x in a)))
        except (Unavailable, RuntimeError, OSError, NotAsRequired) as e:
            print(f"cannot run: {e}" + (f" (launch {i + 1} of {runs})" if runs > 1 else ""), file=sys.stderr)
            return 2
        if differ:
            failed.append((i + 1, differ))
        if shown is None and (differ or i == runs - 1):
            shown = (i + 1, lines, differ)
    n, lines, differ = shown
    if runs > 1:
        print(f"launch {n} of {runs}:")
    for line in lines:
        print(line)
    if runs > 1:
        print(f"launches that differ: {len(failed)} of {runs}" + (" (" + ", ".join(f"launch {i}: {d}" for i, d in failed[:20]) + (", ..." if len(failed) > 20 else "") + ")" if failed else ""))
    if failed:
        print(f"{differ} word(s) differ from what the documents allow: {RULE}")
        return 1
    print("every judged word is what the documents allow" + (f" in all {runs} launches" if runs > 1 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
"#;

/// A case id as a file name: letters, digits, `-`, `_` and `.` kept, anything else `_`.
pub fn sanitise(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}
