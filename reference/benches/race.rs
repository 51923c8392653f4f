//! Race-checker timings: 32 lanes of CAS with equal operands, 1024 lanes of add, 32 lanes of
//! exchange. Run: `cargo bench -p atomcts-reference --bench race`.

use atomcts_reference::ir::{AtomicOp, Env};
use atomcts_reference::race::OpStep;
use atomcts_reference::race::{DEFAULT_BUDGET, Observed, Problem, Verdict, check};
use atomcts_reference::types::DataType;
use std::hint::black_box;
use std::time::Instant;

fn op(o: AtomicOp, s0: u64, s1: u64) -> OpStep {
    OpStep {
        op: o,
        ty: DataType::U32,
        env: Env::default(),
        src: [s0, s1],
    }
}

fn obs(r: u64) -> Observed {
    Observed::ret(r)
}

fn time(name: &str, reps: u32, ops: &[(OpStep, Observed)], init: u64, fin: u64, want_pass: bool) {
    let eq = |a: u64, b: u64| a == b;
    let problem = Problem {
        init,
        ops,
        final_value: Some(fin),
    };
    let v = check(&problem, &eq, DEFAULT_BUDGET).unwrap();
    assert_eq!(
        matches!(v, atomcts_reference::race::Verdict::Pass { .. }),
        want_pass,
        "{name}: {v:?}"
    );
    assert!(!matches!(v, Verdict::Undecided { .. }), "{name}: undecided");
    let t = Instant::now();
    for _ in 0..reps {
        black_box(check(black_box(&problem), &eq, DEFAULT_BUDGET).unwrap());
    }
    let per = t.elapsed() / reps;
    println!("{name:<58} {:>10.3} ms per check", per.as_secs_f64() * 1e3);
}

fn main() {
    // 32 lanes CAS(0 -> 4): lane 7 wins, every other lane sees 4.
    let cas: Vec<_> = (0..32u64)
        .map(|l| (op(AtomicOp::Cas, 0, 4), obs(if l == 7 { 0 } else { 4 })))
        .collect();
    time("32 lanes CAS, equal operands, pass", 200, &cas, 0, 4, true);
    // The same with a return no order gives: must explore and fail.
    let mut bad = cas.clone();
    bad[3].1 = obs(9);
    time("32 lanes CAS, equal operands, fail", 200, &bad, 0, 4, false);
    // 16 lanes CAS(0->1) and 16 lanes CAS(1->0), returns alternating: many orders.
    let flip: Vec<_> = (0..32u64)
        .map(|l| {
            let (c, n) = if l < 16 { (0, 1) } else { (1, 0) };
            (op(AtomicOp::Cas, c, n), obs(l % 2))
        })
        .collect();
    time(
        "32 lanes CAS 0->1 / 1->0, alternating returns",
        200,
        &flip,
        0,
        0,
        true,
    );
    // 1024 lanes of add with distinct addends, serialized in a scrambled order.
    let n = 1024u64;
    let mut value = 5u64;
    let mut rets = vec![0u64; n as usize];
    for k in 0..n {
        let lane = (k * 389) % n;
        rets[lane as usize] = value;
        value = (value + lane + 1) & 0xFFFF_FFFF;
    }
    let adds: Vec<_> = (0..n)
        .map(|l| (op(AtomicOp::Add, l + 1, 0), obs(rets[l as usize])))
        .collect();
    time(
        "1024 lanes add, distinct addends, pass",
        20,
        &adds,
        5,
        value,
        true,
    );
    time(
        "1024 lanes add, distinct addends, wrong final, fail",
        20,
        &adds,
        5,
        value + 1,
        false,
    );
    let ones: Vec<_> = (0..n).map(|l| (op(AtomicOp::Add, 1, 0), obs(l))).collect();
    time(
        "1024 lanes add 1 (all equal operands), pass",
        20,
        &ones,
        0,
        n,
        true,
    );
    // 32 lanes of exchange with distinct values.
    let xs: Vec<_> = (0..32u64)
        .map(|l| (op(AtomicOp::Exch, l + 1, 0), obs(l)))
        .collect();
    time("32 lanes exchange, a chain, pass", 200, &xs, 0, 32, true);
}
