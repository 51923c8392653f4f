//! What the fuzz stream makes (issue 31 point 3): the share of generated cases in which lanes
//! race on one address with their returns kept, per op family (float min, max and add apart),
//! and its concurrent cases (several instructions at once, mixed ops and widths, compare-and-swap
//! loops). The numbers are printed (`cargo test -p atomcts --test contention -- --nocapture`,
//! recorded in BENCHMARKS.md, "Fuzzing finds planted bugs") and the shares the generator promises
//! are asserted.
//!
//! With `ATOMCTS_CONTENTION_DIR=DIR` it measures the single-instruction cases of the files
//! `atomcts gen --seed 1 --count 20000 --out DIR` wrote instead (prints only): `gen`'s stream of
//! a seed is the fuzz stream's single instructions, so an older build's `gen` measures an older
//! generator (the "before" of BENCHMARKS.md).

use atomcts::corpus::case::parse_file;
use atomcts::corpus::state::build_state;
use atomcts::fuzzing::contend::gen_fuzz_case;
use atomcts::fuzzing::draft::GenCase;
use atomcts::fuzzing::expect::load_state;
use atomcts_reference::Profile;
use atomcts_reference::State;
use atomcts_reference::ir::{Dest, Instr};
use atomcts_reference::outcome::Outcome;
use atomcts_reference::program::{Dialect, run};
use atomcts_reference::types::DataType;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Cases measured (the fuzz stream of seed 1, as `atomcts fuzz` draws it).
const N: u64 = 20_000;

#[derive(Default, Debug)]
struct Family {
    /// Completed single-instruction cases of the family.
    cases: u64,
    /// Of those, with at least 2 accesses on one address, their returns kept.
    racing: u64,
    /// With at least 8.
    many: u64,
}

#[derive(Default, Debug)]
struct Concurrent {
    cases: u64,
    /// With two different ops on one word.
    mixed_ops: u64,
    /// With instructions on words of different widths.
    mixed_widths: u64,
    /// With a compare-and-swap loop.
    cas_loops: u64,
    /// With a compare-and-swap loop of at least 4 iterations.
    long_cas_loops: u64,
    /// With returns kept on some instruction.
    returns_kept: u64,
    /// With two kinds of op on one word and at least 256 read-modify-writes of each
    /// instruction (lost updates of real implementations show only under such load).
    stress: u64,
}

fn is_float(t: DataType) -> bool {
    matches!(
        t,
        DataType::F16 | DataType::BF16 | DataType::F32 | DataType::F64 | DataType::F16x2
    )
}

/// The concurrent shape of `gc`, if it is a concurrent case.
fn concurrent(gc: &GenCase, c: &mut Concurrent) -> bool {
    if gc.concurrent.is_empty() {
        return false;
    }
    c.cases += 1;
    let mut ops: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut widths = BTreeSet::new();
    for i in &gc.concurrent {
        let word = i.given.get("R2").map(|v| v.to_string()).unwrap_or_default();
        let op: String = i.asm.split_whitespace().next().unwrap_or("").to_string();
        widths.insert(op.rsplit('.').next().unwrap_or("").to_string());
        ops.entry(word).or_default().insert(op);
    }
    c.mixed_ops += u64::from(ops.values().any(|s| s.len() > 1));
    c.mixed_widths += u64::from(widths.len() > 1);
    let loops: Vec<u32> = gc
        .concurrent
        .iter()
        .filter(|i| i.cas_loop.is_some())
        .map(|i| i.iterations)
        .collect();
    c.cas_loops += u64::from(!loops.is_empty());
    c.long_cas_loops += u64::from(loops.iter().any(|&n| n >= 4));
    c.returns_kept += u64::from(gc.concurrent.iter().any(|i| !i.asm.contains(" RZ,")));
    c.stress += u64::from(
        ops.values().any(|s| s.len() > 1)
            && gc.concurrent.iter().all(|i| i.lanes * i.iterations >= 256),
    );
    true
}

/// The single-instruction cases to measure: the files of `ATOMCTS_CONTENTION_DIR`, else the
/// fuzz stream's (its concurrent cases counted in `conc`).
fn cases(conc: &mut Concurrent) -> (Vec<(Dialect, String, State)>, bool) {
    let mut out = Vec::new();
    if let Some(dir) = std::env::var_os("ATOMCTS_CONTENTION_DIR") {
        let dir = Path::new(&dir);
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            for c in parse_file(dir, &f, text).cases {
                if let Ok(st) = build_state(&c) {
                    out.push((c.dialect, c.asm.clone(), st));
                }
            }
        }
        return (out, true);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for _ in 0..N {
        let gc = gen_fuzz_case(&mut rng);
        if concurrent(&gc, conc) {
            continue;
        }
        if let Ok(state) = load_state(&gc) {
            out.push((gc.dialect, gc.asm, state));
        }
    }
    (out, false)
}

#[test]
fn the_fuzz_stream_races_many_lanes_on_few_addresses() {
    let p = Profile::default();
    let mut fams: BTreeMap<String, Family> = BTreeMap::new();
    let mut conc = Concurrent::default();
    let (mut single, mut racing) = (0u64, 0u64);
    let (cases, from_files) = cases(&mut conc);
    for (dialect, asm, state) in cases {
        let Ok(r) = run(dialect, &asm, &state, &p) else {
            continue;
        };
        let (Outcome::Completed(_), Some(l)) = (&r.outcome, &r.lowered) else {
            continue;
        };
        let Instr::Mem(m) = &l.instr else { continue };
        single += 1;
        let mut per: BTreeMap<u64, u32> = BTreeMap::new();
        for a in &m.accesses {
            if !matches!(a.dst, Dest::None) {
                *per.entry(a.addr).or_insert(0) += 1;
            }
        }
        let most = per.values().copied().max().unwrap_or(0);
        let fam = format!(
            "{}{}",
            m.op.name(),
            if is_float(m.ty) { ".float" } else { "" }
        );
        let f = fams.entry(fam).or_default();
        f.cases += 1;
        f.racing += u64::from(most >= 2);
        f.many += u64::from(most >= 8);
        racing += u64::from(most >= 2);
    }
    let pct = |a: u64, b: u64| 100.0 * a as f64 / b.max(1) as f64;
    println!(
        "{N} cases of the fuzz stream (seed 1){}: {single} completed single instructions, {racing} ({:.1}%) with >= 2 lanes on one address, returns kept",
        if from_files { ", from the files" } else { "" },
        pct(racing, single)
    );
    println!("family        completed  racing(>=2)      many(>=8)");
    for (k, f) in &fams {
        println!(
            "{k:<13} {:>9}  {:>6} {:>5.1}%  {:>6} {:>5.1}%",
            f.cases,
            f.racing,
            pct(f.racing, f.cases),
            f.many,
            pct(f.many, f.cases)
        );
    }
    println!(
        "concurrent cases: {} ({:.1}% of the stream); mixed ops on one word {}, mixed widths {}, CAS loops {}, CAS loops of >= 4 iterations {}, returns kept {}, stress (two kinds on one word, >= 256 operations per instruction) {}",
        conc.cases,
        pct(conc.cases, N),
        conc.mixed_ops,
        conc.mixed_widths,
        conc.cas_loops,
        conc.long_cas_loops,
        conc.returns_kept,
        conc.stress
    );
    if from_files {
        return;
    }
    // What the generator promises: a good share of racing cases with returns kept, for every
    // float family too, and concurrent cases of every shape.
    assert!(pct(racing, single) >= 30.0, "{racing} of {single}");
    for fam in ["min.float", "max.float", "add.float"] {
        let f = &fams[fam];
        assert!(
            pct(f.racing, f.cases) >= 30.0 && f.many >= 50,
            "{fam}: {f:?}"
        );
    }
    assert!(pct(conc.cases, N) >= 10.0, "{conc:?}");
    for (what, n) in [
        ("mixed ops", conc.mixed_ops),
        ("mixed widths", conc.mixed_widths),
        ("long CAS loops", conc.long_cas_loops),
        ("returns kept", conc.returns_kept),
        ("stress", conc.stress),
    ] {
        assert!(n >= conc.cases / 20, "{what}: {n} of {}", conc.cases);
    }
}
