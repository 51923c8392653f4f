//! The order check of a concurrent script (issue 30, point 5): per shared address, whether the
//! values every work-item's iterations returned, and the final value, fit one total order of
//! all the operations on the address that keeps each work-item's iterations in program order,
//! as the reference's concurrent checker (`atomcts_reference::concurrent::judge`) asks: each
//! operation returns the value memory held just before it (an effect of `race::OpStep::step`)
//! and leaves the next one; floats compare bit for bit, or any NaN against any NaN where the
//! profile is not NaN-exact (`Equality::NanClass`); a compare-exchange's success flag must be
//! the effect's; a compare-and-swap loop's iterations are the steps the reference's
//! `loop_steps` makes of them (`loop_steps` in [`ORDER_CHECK`]).
//!
//! atomcts computes the effects ([`Order::table`]: every effect of every kind of operation on
//! every value some order of the operations reaches, [`reachable`]) and writes them into the
//! script with a depth-first search in Python ([`ORDER_CHECK`]): over (each work-item's
//! position, the memory value), work-items whose remaining observations are the same taken as
//! one, unobserved operations of one kind pooled, an operation that changes nothing wherever it
//! fits taken as soon as it fits, refuted states remembered, at most [`ORDER_BUDGET`] states
//! explored; past it the script says the returned values are not judged.

use atomcts_reference::race::{OpStep, Step};
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// Most states (a position per work-item and a memory value) the script's order check explores
/// for one address before it says the returned values there are not judged.
pub const ORDER_BUDGET: u64 = 1 << 18;

/// Most (kind of operation, value) entries of the effect table a script holds for one address.
pub const ORDER_TABLE: usize = 1 << 16;

/// Per kind of operation, per value it may meet: its effects (new value, returned value,
/// success).
pub type Table = Vec<Vec<(u64, Vec<(u64, u64, bool)>)>>;

/// One work-item's part in an [`Order`]: its kind of operation and where its iterations'
/// observations lie.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderThread {
    /// Index into [`Order::table`].
    pub kind: usize,
    /// Iterations it runs.
    pub iterations: u32,
    /// Its returned values, if kept: (argument, byte offset of the first, bytes between
    /// iterations, bytes a value).
    pub ret: Option<(usize, usize, usize, usize)>,
    /// Its compare-exchange success flags (32-bit, non-zero for a success), or a loop's
    /// attempts per iteration, if judged: (argument, byte offset of the first, bytes between
    /// iterations).
    pub ok: Option<(usize, usize, usize)>,
    /// A compare-and-swap loop (FORMAT.md, "Compare-and-swap loops"): its first compare and
    /// whether its compare-exchange is weak (may fail spuriously); `kind` is then the update
    /// a successful attempt applies.
    pub cas_loop: Option<(u64, bool)>,
}

/// The order check of one address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Order {
    /// The address, for people (`global 0x00001000`).
    pub label: String,
    /// Memory before the launch.
    pub init: u64,
    /// Where the final value lies: (argument, byte offset, bytes).
    pub final_at: (usize, usize, usize),
    /// Where any NaN equals any NaN: (format mask, exponent mask, fraction mask).
    pub nan: Option<(u64, u64, u64)>,
    /// Per kind of operation, per value it may meet: its effects (new value, returned value,
    /// success), the reference's order.
    pub table: Table,
    /// The work-items.
    pub threads: Vec<OrderThread>,
}

/// Every value memory can hold in some order of `classes` (each operation with how many times
/// it runs) from `init`, and the final values (those after all of them): a breadth-first walk
/// over (operations left per class, value). `Err` with the reason past `max_pairs` pairs.
pub fn reachable(
    init: u64,
    classes: &[(OpStep, u32)],
    max_pairs: usize,
) -> Result<(BTreeSet<u64>, BTreeSet<u64>), String> {
    use std::collections::HashMap;
    let total: u64 = classes.iter().map(|(_, n)| u64::from(*n)).sum();
    let too_many = || {
        format!(
            "the orders of its {total} operations in {} kinds reach more than {max_pairs} (operations left, value) pairs",
            classes.len()
        )
    };
    let combinations = classes.iter().try_fold(1u64, |p, (_, n)| {
        p.checked_mul(u64::from(*n) + 1)
            .filter(|p| *p <= max_pairs as u64)
    });
    if combinations.is_none() {
        return Err(too_many());
    }
    let mut all = BTreeSet::from([init]);
    let mut layer: HashMap<Vec<u32>, BTreeSet<u64>> = HashMap::new();
    layer.insert(
        classes.iter().map(|(_, n)| *n).collect(),
        BTreeSet::from([init]),
    );
    let mut pairs = 1usize;
    for _ in 0..total {
        let mut next: HashMap<Vec<u32>, BTreeSet<u64>> = HashMap::new();
        for (left, values) in &layer {
            for (i, (step, _)) in classes.iter().enumerate() {
                if left[i] == 0 {
                    continue;
                }
                let mut after = left.clone();
                after[i] -= 1;
                let into = next.entry(after).or_default();
                for v in values {
                    for e in step.step(*v).map_err(|e| e.to_string())? {
                        if into.insert(e.new) {
                            pairs += 1;
                            all.insert(e.new);
                        }
                    }
                }
                if pairs > max_pairs {
                    return Err(too_many());
                }
            }
        }
        layer = next;
    }
    Ok((all, layer.into_values().flatten().collect()))
}

/// Every value memory can hold in some order of `classes` from `init` when their operations
/// commute (`crate::repro::order_free`): the value after any prefix of any order is then the
/// value after those operations in any order, so each class in turn is applied 0 to n times to
/// every value so far (a frontier of values, stopped early once it repeats the one or two
/// before it: an idempotent or self-inverse operation). `Err` with the reason past
/// [`SWEEP_STEPS`] operations applied.
pub fn sweep(
    init: u64,
    classes: &[(OpStep, u32)],
    max_steps: usize,
) -> Result<BTreeSet<u64>, String> {
    let mut all = BTreeSet::from([init]);
    let mut work = 0usize;
    for (step, n) in classes {
        if let Some(d) = additive(step) {
            // Plain wrapping arithmetic: every value so far plus 0..=n times the delta.
            let cost = all.len().saturating_mul(*n as usize + 1);
            work = work.saturating_add(cost);
            if work > max_steps {
                return Err(too_many(classes.len(), max_steps));
            }
            let m = crate::repro::width_mask(step.ty.bytes() as usize);
            let mut next = std::collections::HashSet::with_capacity(cost.min(1 << 20));
            for v in &all {
                let mut x = *v;
                for _ in 0..=*n {
                    next.insert(x);
                    x = x.wrapping_add(d) & m;
                }
            }
            all = next.into_iter().collect();
            continue;
        }
        let mut seen = all.clone();
        let mut before: Option<BTreeSet<u64>> = None;
        let mut frontier = all.clone();
        for _ in 0..*n {
            let mut after = BTreeSet::new();
            for x in &frontier {
                for e in step.step(*x).map_err(|e| e.to_string())? {
                    after.insert(e.new);
                }
            }
            work += frontier.len();
            if work > max_steps {
                return Err(too_many(classes.len(), max_steps));
            }
            seen.extend(after.iter().copied());
            if after == frontier || before.as_ref() == Some(&after) {
                break;
            }
            before = Some(std::mem::replace(&mut frontier, after));
        }
        all = seen;
    }
    Ok(all)
}

fn too_many(kinds: usize, max_steps: usize) -> String {
    format!(
        "listing the values its {kinds} kinds of commuting operations reach takes more than {max_steps} steps"
    )
}

/// The delta of an integer add or subtract (what it adds, wrapping), else `None`. Only used
/// to list values: a value the table then lacks makes the script say "not judged", never a
/// verdict.
fn additive(step: &OpStep) -> Option<u64> {
    if step.ty.float_format().is_some() {
        return None;
    }
    match step.op {
        atomcts_reference::ir::AtomicOp::Add => Some(step.src[0]),
        atomcts_reference::ir::AtomicOp::Sub => Some(step.src[0].wrapping_neg()),
        _ => None,
    }
}

/// Most operations [`sweep`] applies for one address (an integer add or subtract counts one
/// per value it is applied to, worked out before it starts).
pub const SWEEP_STEPS: usize = 1 << 24;

/// The effect table of `kinds` on `values` ([`Order::table`]), or why it is not written (more
/// than [`ORDER_TABLE`] entries).
pub fn table(kinds: &[OpStep], values: &BTreeSet<u64>) -> Result<Table, String> {
    let entries = kinds.len().saturating_mul(values.len());
    if entries > ORDER_TABLE {
        return Err(format!(
            "{} kinds of operation on {} values some order reaches: more than the {ORDER_TABLE} effects a script lists",
            kinds.len(),
            values.len()
        ));
    }
    kinds
        .iter()
        .map(|k| {
            values
                .iter()
                .map(|v| {
                    let effects = k.step(*v).map_err(|e| e.to_string())?;
                    Ok((
                        *v,
                        effects.iter().map(|e| (e.new, e.ret, e.success)).collect(),
                    ))
                })
                .collect()
        })
        .collect()
}

/// The `ORDERS` table of a script (Python), one row per [`Order`].
pub fn py_orders(orders: &[Order]) -> String {
    let mut s = String::from(
        "# Per shared address, the order check: (label, initial value, (argument, offset, bytes) of the\n\
         # final value, NaN class (format mask, exponent mask, fraction mask) or None, effect table:\n\
         # per kind of operation {value met: [(new value, returned value, success), ...]}, work-items:\n\
         # (kind, iterations, returned values (argument, first offset, step, bytes) or None,\n\
         # success flags or a loop's attempts (argument, first offset, step) or None,\n\
         # compare-and-swap loop (first compare, weak) or None)).\nORDERS = [\n",
    );
    for o in orders {
        let (fa, fo, fb) = o.final_at;
        let _ = writeln!(
            s,
            "    ({}, {:#x}, ({fa}, {fo}, {fb}), {}, [",
            crate::repro::py_str(&o.label),
            o.init,
            o.nan.map_or("None".to_string(), |(m, e, f)| format!(
                "({m:#x}, {e:#x}, {f:#x})"
            ))
        );
        for kind in &o.table {
            s.push_str("        {");
            for (v, effects) in kind {
                let e: Vec<String> = effects
                    .iter()
                    .map(|(n, r, ok)| format!("({n:#x}, {r:#x}, {})", if *ok { 1 } else { 0 }))
                    .collect();
                let _ = write!(s, "{v:#x}: [{}], ", e.join(", "));
            }
            s.push_str("},\n");
        }
        s.push_str("    ], [\n");
        for t in &o.threads {
            let ret = t.ret.map_or("None".to_string(), |(a, f, st, b)| {
                format!("({a}, {f}, {st}, {b})")
            });
            let ok =
                t.ok.map_or("None".to_string(), |(a, f, st)| format!("({a}, {f}, {st})"));
            let lp = t.cas_loop.map_or("None".to_string(), |(c, weak)| {
                format!("({c:#x}, {})", u8::from(weak))
            });
            let _ = writeln!(
                s,
                "        ({}, {}, {ret}, {ok}, {lp}),",
                t.kind, t.iterations
            );
        }
        s.push_str("    ]),\n");
    }
    s.push_str("]\n");
    s
}

/// The order check in Python: `order_check(init, final, table, threads, nan, budget)` with
/// `threads` a list of work-items, each a list of steps (kind, returned value or None, success
/// or None), kind an index into `table` or `("cas", compare, weak)`: a compare-exchange attempt
/// that failed (it changes nothing and returns what memory held; a strong one only where memory
/// differs from its compare). `loop_steps` makes a compare-and-swap loop's steps from what each
/// iteration returned and how many attempts it made, as the reference's checker does;
/// `("pass", order)`, `("fail", longest consistent prefix)`, `("budget", explored)` or
/// `("unknown", value)` (a value the table does not hold: not judged).
pub const ORDER_CHECK: &str = r#"
def order_check(init, final, table, threads, nan, budget):
    """Whether one total order of every work-item's operations on one address, each work-item's
    in its own order, gives every observed returned value and success flag and ends at final."""
    def is_nan(x):
        m, e, f = nan
        x &= m
        return (x & e) == e and (x & f) != 0

    def same(model, seen):
        return model == seen or (nan is not None and is_nan(model) and is_nan(seen))

    # Work-items with the same kind and the same observations from here on are one (an id).
    # Where nothing more is observed of a work-item, its operations left join one pool per
    # kind (an id counted in operations, not work-items): which of them runs is no matter.
    ids = {}
    free = {}
    free_left = {}
    suffix = []
    for steps in threads:
        row = [0] * (len(steps) + 1)
        for p in range(len(steps) - 1, -1, -1):
            kind, ret, ok = steps[p]
            if isinstance(kind, int) and ret is None and ok is None and row[p + 1] in (0, free.get(kind)):
                if kind not in free:
                    free[kind] = ids.setdefault(("free", kind), len(ids) + 1)
                row[p] = free[kind]
                free_left[row[p]] = free_left.get(row[p], 0) + 1
            else:
                row[p] = ids.setdefault((steps[p], row[p + 1]), len(ids) + 1)
        suffix.append(row)
    pos = [0] * len(threads)
    groups = {}
    for t, row in enumerate(suffix):
        if row[0]:
            groups.setdefault(row[0], []).append(t)
    total = sum(len(steps) for steps in threads)

    def fits(effect, ret, ok):
        _, r, s = effect
        return (ret is None or same(r, ret)) and (ok is None or ok == bool(s))

    # An observation every fitting effect of which, at any value, leaves memory as it was (a
    # compare-exchange that failed, a read): some order takes it as soon as memory holds a
    # value it fits, so the search takes it then without trying anything else.
    quiet = {}
    index = []
    for effects_of in table:
        by, nans = {}, []
        for v, effects in effects_of.items():
            for e in effects:
                by.setdefault(e[1], []).append((v, e))
                if nan is not None and is_nan(e[1]):
                    nans.append((v, e))
        index.append((by, nans))

    def no_op(kind, ob):
        if not isinstance(kind, int):
            return True
        k = (kind, ob)
        if k not in quiet:
            by, nans = index[kind]
            ret = ob[0]
            met = nans if nan is not None and is_nan(ret) else by.get(ret, [])
            quiet[k] = all(e[0] == v for v, e in met if fits(e, *ob))
        return quiet[k]

    def moves(value):
        # Operations whose returned value is known first: they fit few values, and memory
        # that moves past one does not come back to it in most cases.
        out = []
        later = []
        for ts in groups.values():
            t = ts[-1]
            kind, ret, ok = threads[t][pos[t]]
            if isinstance(kind, int):
                effects = table[kind].get(value)
                if effects is None:
                    raise KeyError(value)
            else:
                _, compare, weak = kind
                effects = [(value, value, 0)] if weak or value != compare else []
            fitting = [e[0] for e in effects if fits(e, ret, ok)]
            if fitting and ret is not None and no_op(kind, (ret, ok)):
                return [(t, value)]
            (out if ret is not None else later).extend((t, new) for new in fitting)
        return out + later

    def advance(t):
        i = suffix[t][pos[t]]
        if i in free_left:
            free_left[i] -= 1
        ts = groups[i]
        ts.pop()
        if not ts:
            del groups[i]
        pos[t] += 1
        j = suffix[t][pos[t]]
        if j:
            groups.setdefault(j, []).append(t)

    def retreat(t):
        j = suffix[t][pos[t]]
        if j:
            ts = groups[j]
            ts.pop()
            if not ts:
                del groups[j]
        pos[t] -= 1
        i = suffix[t][pos[t]]
        if i in free_left:
            free_left[i] += 1
        groups.setdefault(i, []).append(t)

    def key(value):
        return (value, frozenset((i, free_left.get(i, len(ts))) for i, ts in groups.items()))

    dead = set()
    explored = 1
    longest = 0
    value = init
    stack = []
    try:
        todo = moves(value) if total else []
    except KeyError as e:
        return ("unknown", e.args[0])
    at = 0
    while True:
        if len(stack) == total and (final is None or same(value, final)):
            return ("pass", [t for t, _, _, _ in stack])
        stepped = False
        while at < len(todo):
            t, new = todo[at]
            at += 1
            advance(t)
            if dead and key(new) in dead:
                retreat(t)
                continue
            explored += 1
            if explored > budget:
                return ("budget", explored)
            stack.append((t, value, todo, at))
            longest = max(longest, len(stack))
            value = new
            try:
                todo = moves(value) if len(stack) < total else []
            except KeyError as e:
                return ("unknown", e.args[0])
            at = 0
            stepped = True
            break
        if stepped:
            continue
        dead.add(key(value))
        if not stack:
            return ("fail", longest)
        t, value, todo, at = stack.pop()
        retreat(t)


def loop_steps(table, success, first, weak, rets, attempts):
    """A compare-and-swap loop's steps: per iteration, where it made two or more attempts and
    its compare is known, a failed attempt with that compare (its returned value known when it
    made exactly two), then its success (the update at the value it returned); its compare is
    the value the previous success stored. (steps, None), or (None, why) where the attempts
    cannot be a loop's."""
    steps = []
    for it, r in enumerate(rets):
        t = attempts[it] if attempts is not None else None
        if t == 0:
            return None, f"iteration {it} made no attempt (an iteration ends with one success)"
        if t == 1 and first is not None:
            if r is not None and r != first:
                return None, f"iteration {it}: its only attempt succeeded with compare 0x{first:x}, so it returned 0x{first:x}, not 0x{r:x}"
            known = first
        elif t is not None and first is not None:
            steps.append((("cas", first, weak), r if t == 2 else None, False))
            known = r
        else:
            known = r
        steps.append((success, known, None))
        effects = table[success].get(known) if known is not None else None
        first = effects[0][0] if effects else None
    return steps, None
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use atomcts_reference::ir::{AtomicOp, Env};
    use atomcts_reference::types::DataType;

    fn step(op: AtomicOp, src: u64) -> OpStep {
        OpStep {
            op,
            ty: DataType::U32,
            env: Env::default(),
            src: [src, 0],
        }
    }

    #[test]
    fn reachable_values_cover_every_order() {
        let classes = [
            (step(AtomicOp::Exch, 0x100), 1),
            (step(AtomicOp::Add, 1), 2),
        ];
        let (all, finals) = reachable(0, &classes, 1 << 10).unwrap();
        assert_eq!(
            all.into_iter().collect::<Vec<_>>(),
            vec![0, 1, 2, 0x100, 0x101, 0x102]
        );
        assert_eq!(
            finals.into_iter().collect::<Vec<_>>(),
            vec![0x100, 0x101, 0x102]
        );
        assert!(
            reachable(0, &classes, 4)
                .unwrap_err()
                .contains("more than 4")
        );
    }

    /// Runs `ORDER_CHECK` with the `ORDERS` of `orders` and `body` in python3; its stdout.
    fn python(orders: &[Order], body: &str) -> String {
        let code = format!(
            "{}\n{}{ORDER_CHECK}\n{body}",
            "ORDER_BUDGET = 1000",
            py_orders(orders)
        );
        let out = std::process::Command::new("python3")
            .arg("-c")
            .arg(&code)
            .output()
            .expect("python3 runs (the scripts need it)");
        assert!(
            out.status.success(),
            "{}\n{code}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// An order of `kinds` from `init` as atomcts writes it (no buffers: the tests give the
    /// observations by hand).
    fn order(init: u64, kinds: &[(OpStep, u32)], nan: Option<(u64, u64, u64)>) -> Order {
        // As `concurrent::order_of`: operations that change nothing reach no value.
        let moving: Vec<(OpStep, u32)> = kinds
            .iter()
            .filter(|(s, _)| !atomcts_reference::concurrent::is_identity(s))
            .cloned()
            .collect();
        let (values, _) = reachable(init, &moving, 1 << 12).unwrap();
        let steps: Vec<OpStep> = kinds.iter().map(|(s, _)| s.clone()).collect();
        Order {
            label: "global 0x00000000".into(),
            init,
            final_at: (0, 0, 4),
            nan,
            table: table(&steps, &values).unwrap(),
            threads: Vec::new(),
        }
    }

    #[test]
    fn the_emitted_checker_accepts_one_order_and_refuses_the_impossible() {
        // Two work-items add 1 twice each from 0 (table over 0..=4); a third exchanges 0x100
        // once, from 0 (values up to 0x104).
        let adds = order(0, &[(step(AtomicOp::Add, 1), 4)], None);
        let mixed = order(
            0,
            &[
                (step(AtomicOp::Add, 1), 4),
                (step(AtomicOp::Exch, 0x100), 1),
            ],
            None,
        );
        let out = python(
            &[adds, mixed],
            r#"
_, init, _, nan, table, _ = ORDERS[0]
def check(obs, final, budget=ORDER_BUDGET, t=table, n=nan):
    return order_check(init, final, t, [[(k, r, None) for r in o] for k, o in obs], n, budget)[0]
print(check([(0, [0, 2]), (0, [1, 3])], 4))      # interleaved: pass
print(check([(0, [0, 1]), (0, [2, 3])], 4))      # one after the other: pass
print(check([(0, [0, 1]), (0, [1, 3])], 4))      # 1 returned twice: fail
print(check([(0, [2, 0]), (0, [1, 3])], 4))      # against program order: fail
print(check([(0, [0, 2]), (0, [1, 3])], 5))      # final value no order gives: fail
print(check([(0, [0, None]), (0, [None, 3])], 4))  # unkept values are free: pass
print(check([(0, [0, 2]), (0, [1, 3])], 4, 2))   # past the budget: budget
_, init, _, nan, table, _ = ORDERS[1]
print(check([(0, [0, 0x100]), (0, [1, 0x101]), (1, [2])], 0x102, t=table))  # exch after 2 adds: pass
print(check([(0, [0, 0x100]), (0, [1, 0x101]), (1, [3])], 0x102, t=table))  # exch saw 3, never held: fail
print(check([(0, [0, 0x100]), (0, [1, 0x101]), (1, [2])], 0x104, t=table))  # wrong final: fail
"#,
        );
        let got: Vec<&str> = out.lines().collect();
        assert_eq!(
            got,
            [
                "pass", "pass", "fail", "fail", "fail", "pass", "budget", "pass", "fail", "fail"
            ],
            "{out}"
        );
    }

    #[test]
    fn a_compare_exchange_that_changes_nothing_is_taken_as_soon_as_it_fits() {
        // sass cas_against_add in small: 64 work-items add 1 four times (returns not kept)
        // from 0; 8 compare-exchanges store what they compare (4 * k), returning what memory
        // held: each fits only the moment memory holds it, and changes nothing.
        let cas = |c: u64| OpStep {
            op: AtomicOp::Cas,
            ty: DataType::U32,
            env: Env::default(),
            src: [c, c],
        };
        let mut kinds = vec![(step(AtomicOp::Add, 1), 256)];
        kinds.extend((0..8).map(|k| (cas(4 * k), 8)));
        let out = python(
            &[order(0, &kinds, None)],
            r#"
_, init, _, nan, table, _ = ORDERS[0]
adds = [[(0, None, None)] * 4 for _ in range(64)]
def cas(k, rets):
    return [(1 + k, r, r == 4 * k) for r in rets]
good = adds + [cas(k, [8 * k + j for j in range(8)]) for k in range(8)]
print(order_check(init, 256, table, good, nan, 1000)[0])
bad = adds + [cas(k, [8 * k + j for j in range(8)]) for k in range(7)] + [cas(7, [200, 100])]
print(order_check(init, 256, table, bad, nan, 100000)[0])
"#,
        );
        assert_eq!(out.lines().collect::<Vec<_>>(), ["pass", "fail"], "{out}");
    }

    #[test]
    fn a_compare_and_swap_loop_is_judged_by_its_attempts() {
        // From 10, a loop adding 7 (twice, first compare 10) against a work-item adding 1
        // (twice, returns kept). One order: loop succeeds at 10 (-> 17), add returns 17
        // (-> 18), the loop's attempt with compare 17 fails reading 18 and its second
        // succeeds (-> 25), add returns 25 (-> 26).
        let out = python(
            &[order(
                10,
                &[(step(AtomicOp::Add, 7), 2), (step(AtomicOp::Add, 1), 2)],
                None,
            )],
            r#"
_, init, _, nan, table, _ = ORDERS[0]
def run(rets, attempts, final=26, weak=False, adds=(17, 25)):
    steps, why = loop_steps(table, 0, 10, weak, rets, attempts)
    if why:
        return "loop"
    adds = [(1, r, None) for r in adds]
    return order_check(init, final, table, [steps, adds], nan, 1000)[0]
print(run([10, 18], [1, 2]))      # as above: pass
print(run([10, 18], None))        # attempts not reported: pass
print(run([10, 18], [1, 1]))      # one attempt with compare 17 cannot return 18: loop
print(run([10, 18], [0, 2]))      # no attempt: loop
print(run([10, 19], [1, 2]))      # 19 is never held while the loop runs: fail
print(run([10, 18], [1, 2], 25))  # final value no order gives: fail
# The second iteration's failed attempt read 17, its compare: only a weak one may (spuriously).
print(run([10, 17], [1, 2], 26, False, (24, 25)))  # strong: fail
print(run([10, 17], [1, 2], 26, True, (24, 25)))   # weak: pass
"#,
        );
        assert_eq!(
            out.lines().collect::<Vec<_>>(),
            [
                "pass", "pass", "loop", "loop", "fail", "fail", "fail", "pass"
            ],
            "{out}"
        );
    }

    #[test]
    fn the_emitted_checker_takes_any_nan_for_any_nan_only_where_told() {
        use atomcts_reference::float::Format;
        // An f32 exchange of a quiet NaN from 1.0: it returns 1.0, memory ends at that NaN.
        let f = Format::F32;
        let x = OpStep {
            op: AtomicOp::Exch,
            ty: DataType::F32,
            env: Env::default(),
            src: [0x7fc0_0000, 0],
        };
        let nan = Some((f.mask(), f.exp_mask(), f.frac_mask()));
        let out = python(
            &[
                order(0x3f80_0000, &[(x.clone(), 1)], nan),
                order(0x3f80_0000, &[(x, 1)], None),
            ],
            r#"
for _, init, _, nan, table, _ in ORDERS:
    for final in (0x7fc00000, 0x7fc00001, 0x7f800000):
        print(order_check(init, final, table, [[(0, 0x3f800000, None)]], nan, 100)[0])
    # a kernel that read a value memory never held
    print(order_check(init, 0x7fc00000, table, [[(0, 0x3f800001, None)]], nan, 100)[0])
"#,
        );
        let got: Vec<&str> = out.lines().collect();
        assert_eq!(
            got,
            [
                "pass", "pass", "fail", "fail", "pass", "fail", "fail", "fail"
            ],
            "{out}"
        );
    }

    #[test]
    fn tables_are_bounded() {
        let values: BTreeSet<u64> = (0..(ORDER_TABLE as u64 / 2 + 1)).collect();
        let kinds = [step(AtomicOp::Add, 1), step(AtomicOp::Exch, 3)];
        assert!(table(&kinds, &values).unwrap_err().contains("more than"));
        let t = table(&kinds, &BTreeSet::from([5])).unwrap();
        assert_eq!(
            t,
            vec![vec![(5, vec![(6, 5, true)])], vec![(5, vec![(3, 5, true)])]]
        );
    }
}
