//! The standalone reproducer of a semantic-level shim's case (PROTOCOL.md, "Standalone
//! reproducers"): the shim's body (Python in its implementation's own API, defining
//! `observe()`, which runs the case and returns the memory bytes of each range and each
//! access's returned value in the protocol's terms) inside atomcts's own script: the shared
//! header, expected table, comparison and exit codes of [`super::script`], and host code of
//! atomcts's that lays the observation out by address ([`HOST`]). The body only observes; the
//! judging is atomcts's.

use super::{Arg, Check, Dispatch, Order, Program, py_str};
use crate::plan::{ConcurrentPlan, Plan};
use atomcts_reference::state::State;
use atomcts_reference::types::Space;
use std::fmt::Write as _;

/// A shim's answer to a `repro` request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Body {
    /// The Python source; defines `observe()`.
    pub source: String,
    /// The modules it imports beyond the standard library (the script checks them first).
    pub modules: Vec<String>,
    /// Environment the body needs before it imports them (the script sets it when unset).
    pub env: Vec<(String, String)>,
}

/// Names of atomcts's script a body may not define at its top level (the judging is
/// atomcts's), and calls it may not make.
const RESERVED: &[&str] = &[
    "_observed",
    "CASE",
    "RULE",
    "ADAPTER",
    "ENV",
    "GLOBAL_SIZE",
    "LOCAL_SIZE",
    "ARGS",
    "CHECKS",
    "REQUIRED",
    "UNJUDGED",
    "MODULES",
    "SPACE",
    "LAYOUT",
    "ACCESSES",
    "SPACES",
    "SHAPE",
    "THREADS",
    "EXECUTED",
    "ORDERS",
    "ORDER_BUDGET",
    "Unavailable",
];

/// Whether `source` is a body atomcts wraps: it defines `observe()` at its top level, and
/// neither defines `run`, `main` or a name of [`RESERVED`] there nor exits the interpreter.
pub fn check_body(source: &str) -> Result<(), String> {
    if source.contains('\0') {
        return Err("has a body with a NUL character".into());
    }
    if !source.lines().any(|l| l.starts_with("def observe(")) {
        return Err("has a body that defines no top-level `def observe():`".into());
    }
    for l in source.lines() {
        let name: String = l
            .strip_prefix("def ")
            .or_else(|| l.strip_prefix("class "))
            .unwrap_or(l)
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let rest = l[l.find(&name).map_or(0, |i| i + name.len())..].trim_start();
        let defines = l.starts_with("def ")
            || l.starts_with("class ")
            || (rest.starts_with('=') && !rest.starts_with("=="));
        if defines && (name == "run" || name == "main" || RESERVED.contains(&name.as_str())) {
            return Err(format!(
                "has a body that defines `{name}`, a name of atomcts's own script"
            ));
        }
    }
    if let Some(call) = ["sys.exit", "os._exit", "os.kill", "SystemExit"]
        .iter()
        .find(|c| source.contains(*c))
    {
        return Err(format!(
            "has a body that calls `{call}` (the script's exit status is atomcts's verdict)"
        ));
    }
    Ok(())
}

/// The whole script of a shim's single-instruction case: `plan` on `state` (its memory space
/// laid out as [`Plan::layout`], the checks' argument 0; each access's returned value 8 bytes
/// an access, argument 1), `checks` and `unjudged` from [`super::single_checks`] with
/// `(0, 1, 8)`, and the shim's `body`.
pub fn script(
    about: &super::About,
    plan: &Plan,
    state: &State,
    body: &Body,
    checks: Vec<Check>,
    unjudged: Vec<String>,
) -> String {
    let layout = plan.layout();
    let n = plan.items.len();
    let d = Dispatch {
        program: Program::Shim {
            body: body.source.clone(),
            modules: body.modules.clone(),
        },
        args: vec![
            Arg::Buffer {
                name: format!("{} memory, laid out as LAYOUT", plan.space.name()),
                init: layout.bytes(state, plan.space),
            },
            Arg::Buffer {
                name: "returned value of each access (8 bytes each)".into(),
                init: vec![0; 8 * n.max(1)],
            },
        ],
        global: n,
        local: n,
        checks,
        unjudged,
        orders: Vec::new(),
    };
    let mut layout_rows = String::new();
    for r in &layout.ranges {
        let _ = writeln!(layout_rows, "    ({:#x}, {}, {}),", r.base, r.len, r.offset);
    }
    let host = prelude(body)
        + &HOST
            .replace("@SPACE@", &py_str(plan.space.name()))
            .replace("@LAYOUT@", &layout_rows)
            .replace("@ACCESSES@", &n.to_string());
    super::script(about, &d, &comment(about), &host)
}

/// The script's note on whose the body is.
fn comment(about: &super::About) -> String {
    format!(
        "#\n# The body between the marked lines below is the shim's ({}), in its implementation's\n\
         # own API: it runs the case and returns what it observed (memory bytes per range and\n\
         # the value each access returned). Everything else, the expected values and the\n\
         # judging included, is atomcts's.\n\n",
        about.adapter
    )
}

/// The environment and modules checked, then the shim's body ([`PRELUDE`]).
fn prelude(body: &Body) -> String {
    let modules: Vec<String> = body.modules.iter().map(|m| py_str(m)).collect();
    PRELUDE
        .replace("@MODULES@", &modules.join(", "))
        .replace("@BODY@", body.source.trim_end())
}

/// How a concurrent case ran, for its script: its plan ([`ConcurrentPlan::image`] is the
/// script's memory buffer, [`ConcurrentPlan::ret_base`] its slots), its memory before the
/// launch, and whether the shim reports the iterations each work-item executed.
pub struct Launch<'a> {
    /// The plan.
    pub cp: &'a ConcurrentPlan,
    /// The first instruction's state (the memory every instruction shares).
    pub initial: &'a State,
    /// Whether the body's observation has `executed`.
    pub executed: bool,
}

/// The whole script of a shim's concurrent case (PROTOCOL.md, "Standalone reproducers"): the
/// body's observation laid out as atomcts's concurrent scripts lay out a launch's buffers
/// (argument 0 the memory image, 1 every iteration's returned value, 8 bytes a slot `[instruction]
/// [iteration][access]`, 2 the success flags or a loop's attempts, 4 bytes a slot, 3 where the
/// shim reports them the iterations each work-item executed), judged by `checks`, `unjudged`
/// and `orders` of [`super::concurrent_checks`] with mem 0, counts `(3, 0)`, rets `(1, 8)`
/// and `(2, 4)`.
pub fn concurrent_script(
    about: &super::About,
    launch: &Launch<'_>,
    body: &Body,
    checks: Vec<Check>,
    mut unjudged: Vec<String>,
    orders: Vec<Order>,
) -> String {
    let cp = launch.cp;
    let slots = cp.ret_len().max(1);
    let mut args = vec![
        Arg::Buffer {
            name: "memory, laid out as LAYOUT".into(),
            init: cp.image(launch.initial),
        },
        Arg::Buffer {
            name: "returned value of each iteration of each access (8 bytes each)".into(),
            init: vec![0; 8 * slots],
        },
        Arg::Buffer {
            name: "success flag of a compare-exchange, or a loop's attempts (4 bytes each)".into(),
            init: vec![0; 4 * slots],
        },
    ];
    if launch.executed {
        args.push(Arg::Buffer {
            name: "iterations each access's thread executed (4 bytes each)".into(),
            init: vec![0; 4 * cp.threads().max(1)],
        });
    } else {
        unjudged.push(
            "the iterations each work-item executed: the shim does not report them (`executed`)"
                .into(),
        );
    }
    let d = Dispatch {
        program: Program::Shim {
            body: body.source.clone(),
            modules: body.modules.clone(),
        },
        args,
        global: cp.threads(),
        local: cp.threads(),
        checks,
        unjudged,
        orders,
    };
    let mut spaces = Vec::new();
    let mut rows = String::new();
    for space in [Space::Global, Space::Shared] {
        if !cp.groups.iter().any(|g| g.space == space) {
            continue;
        }
        spaces.push(py_str(space.name()));
        let (layout, base) = match space {
            Space::Global => (&cp.global, 0),
            Space::Shared => (&cp.shared, cp.shared_base()),
        };
        for r in &layout.ranges {
            let _ = writeln!(
                rows,
                "    ({}, {:#x}, {}, {}),",
                py_str(space.name()),
                r.base,
                r.len,
                base + r.offset
            );
        }
    }
    let mut shape = String::new();
    for (k, g) in cp.groups.iter().enumerate() {
        let kind = if cp.loops.get(k).copied().flatten().is_some() {
            "\"loop\""
        } else if g.op == atomcts_reference::ir::AtomicOp::Cas {
            "\"cas\""
        } else {
            "None"
        };
        let _ = writeln!(
            shape,
            "    ({}, {}, {}, {kind}),",
            cp.iterations[k],
            g.items.len(),
            cp.ret_base(k)
        );
    }
    let host = prelude(body)
        + &CONCURRENT_HOST
            .replace("@SPACES@", &spaces.join(", "))
            .replace("@LAYOUT@", &rows)
            .replace("@SHAPE@", &shape)
            .replace("@THREADS@", &cp.threads().to_string())
            .replace("@EXECUTED@", if launch.executed { "True" } else { "False" });
    super::script(about, &d, &comment(about), &host)
}

/// atomcts's host code before the shim's body: the environment and modules checked before the
/// body runs, then the body.
const PRELUDE: &str = r#"import importlib.util

MODULES = [@MODULES@]
for _name, _value in ENV.items():
    os.environ.setdefault(_name, _value)
_missing = [m for m in MODULES if importlib.util.find_spec(m.split(".")[0]) is None]
if _missing and __name__ == "__main__":
    print(f"cannot run: Python module(s) not installed: {', '.join(_missing)}", file=sys.stderr)
    sys.exit(2)

# ---------------- the shim's body (it observes; atomcts judges) ----------------
@BODY@


# ---------------- end of the shim's body ----------------


def _observed():
    """The body's observation: a missing module cannot run (exit 2); any other failure of the
    implementation is the script's error."""
    try:
        return observe()
    except ImportError as e:
        raise Unavailable(f"an import failed: {e}")
    except Exception as e:
        raise RuntimeError(f"the implementation failed: {type(e).__name__}: {e}")
"#;

/// atomcts's host code after the body of a single-instruction case: `run()`, which calls the
/// body's `observe()` and lays its observation out by address for the shared comparison (a
/// malformed observation cannot run: exit 2).
const HOST: &str = r#"
# The memory space the case addresses, where each of its ranges lies in the buffer the checks
# read (base address, length, byte offset), and how many accesses return a value.
SPACE = @SPACE@
LAYOUT = [
@LAYOUT@]
ACCESSES = @ACCESSES@


def run():
    seen = _observed()
    try:
        ranges = {int(r["base"], 16): bytes.fromhex(r["bytes"]) for r in seen["memory"][SPACE]}
        mem = bytearray(len(ARGS[0][2]))
        for base, length, offset in LAYOUT:
            data = ranges.get(base)
            if data is None or len(data) != length:
                raise ValueError(f"no range of {length} bytes at {base:#x}")
            mem[offset:offset + length] = data
        returned = seen["returned"]
        if len(returned) != ACCESSES:
            raise ValueError(f"{len(returned)} returned values for {ACCESSES} accesses")
        ret = b"".join(int(v, 16).to_bytes(8, "little") for v in returned)
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as e:
        raise RuntimeError(f"the body's observation is malformed: {type(e).__name__}: {e}")
    return [bytes(mem), ret + bytes(len(ARGS[1][2]) - len(ret))]
"#;

/// atomcts's host code after the body of a concurrent case: `run()`, which calls the body's
/// `observe()` and lays its observation out as [`concurrent_script`] says (the memory of the
/// spaces the instructions address by address, the rest as it was before; every iteration's
/// returned value, success flag or attempts by slot; the iterations executed by work-item);
/// a malformed observation cannot run: exit 2.
const CONCURRENT_HOST: &str = r#"
# The memory spaces the instructions address, where each of their ranges lies in the memory
# buffer (space, base address, length, byte offset), per instruction (iterations, accesses,
# first slot of its returned values, "cas" for a compare-exchange, "loop" for a
# compare-and-swap loop), the work-items, whether the body reports the iterations executed.
SPACES = [@SPACES@]
LAYOUT = [
@LAYOUT@]
SHAPE = [
@SHAPE@]
THREADS = @THREADS@
EXECUTED = @EXECUTED@


def _rows(what, rows, iterations, n):
    if not isinstance(rows, list) or len(rows) != iterations or any(not isinstance(r, list) or len(r) != n for r in rows):
        raise ValueError(f"{what} is not {iterations} rows of {n} values")
    return rows


def run():
    seen = _observed()
    try:
        mem = bytearray(ARGS[0][2])
        for space in SPACES:
            ranges = {int(r["base"], 16): bytes.fromhex(r["bytes"]) for r in seen["memory"][space]}
            for sp, base, length, offset in LAYOUT:
                if sp != space:
                    continue
                data = ranges.get(base)
                if data is None or len(data) != length:
                    raise ValueError(f"no {space} range of {length} bytes at {base:#x}")
                mem[offset:offset + length] = data
        returned, oks, attempts = seen["returned"], seen.get("ok"), seen.get("attempts")
        if len(returned) != len(SHAPE):
            raise ValueError(f"returned values of {len(returned)} instructions for {len(SHAPE)}")
        ret, ok = bytearray(len(ARGS[1][2])), bytearray(len(ARGS[2][2]))
        for k, (iterations, n, first, kind) in enumerate(SHAPE):
            rows = _rows(f"returned[{k}]", returned[k], iterations, n)
            flags = None
            if kind == "loop":
                flags = _rows(f"attempts[{k}]", (attempts or [None] * len(SHAPE))[k], iterations, n)
            elif kind == "cas":
                flags = _rows(f"ok[{k}]", (oks or [None] * len(SHAPE))[k], iterations, n)
            for it in range(iterations):
                for i in range(n):
                    slot = first + it * n + i
                    ret[8 * slot:8 * slot + 8] = int(rows[it][i], 16).to_bytes(8, "little")
                    if flags is not None:
                        ok[4 * slot:4 * slot + 4] = int(flags[it][i]).to_bytes(4, "little")
        buffers = [bytes(mem), bytes(ret), bytes(ok)]
        if EXECUTED:
            counts, t = bytearray(len(ARGS[3][2])), 0
            for k, (iterations, n, _, _) in enumerate(SHAPE):
                row = seen["executed"][k]
                if len(row) != n:
                    raise ValueError(f"executed[{k}] has {len(row)} counts for {n} accesses")
                for i in range(n):
                    counts[4 * (t + i):4 * (t + i) + 4] = int(row[i]).to_bytes(4, "little")
                t += n
            buffers.append(bytes(counts))
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError, IndexError) as e:
        raise RuntimeError(f"the body's observation is malformed: {type(e).__name__}: {e}")
    return buffers
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_must_define_observe_and_nothing_of_the_script() {
        assert!(check_body("def observe():\n    return {}\n").is_ok());
        assert!(check_body("x = 1\n").unwrap_err().contains("observe"));
        let clobbers = "def observe():\n    pass\nCHECKS = []\n";
        assert!(check_body(clobbers).unwrap_err().contains("`CHECKS`"));
        // The concurrent script's names too.
        let shape = "def observe():\n    pass\nSHAPE = []\n";
        assert!(check_body(shape).unwrap_err().contains("`SHAPE`"));
        let main = "def observe():\n    pass\ndef main():\n    pass\n";
        assert!(check_body(main).unwrap_err().contains("`main`"));
        let exits = "import sys\ndef observe():\n    sys.exit(0)\n";
        assert!(check_body(exits).unwrap_err().contains("sys.exit"));
        // Comparisons and names that merely start like a reserved one are fine.
        assert!(
            check_body("def observe():\n    pass\nCHECKSUM = 1\nif ENV == 2:\n    pass\n").is_ok()
        );
    }
}
