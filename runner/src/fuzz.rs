//! `atomcts fuzz` (issue 9): differential fuzzing of an implementation nobody here wrote. An
//! endless (or `--cases N` / `--time S`) stream of edge-biased generated cases under one
//! profile, each judged against the reference model (or, with `--against`, compared with a
//! second adapter, both judged against the reference). Every new kind of failure is shrunk to
//! a minimal case (fewer lanes or channels, fewer state entries, simpler operands, smallest
//! values that still fail the same way) and written as a corpus case with the command that
//! reproduces it; the run ends with a summary of the distinct failure signatures.

use crate::case::Case;
use crate::generate::{GenCase, expect_table, gen_case};
use crate::run::{CaseResult, Options, Status, run_case, shell_quote};
use atomcts_adapters::Adapter;
use atomcts_reference::knobs::KNOBS;
use atomcts_reference::program::Dialect;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use toml::{Table, Value};

/// The most candidate cases one shrink runs (each is a reference run plus an adapter run).
pub const SHRINK_BUDGET: u32 = 2_000;

/// What to fuzz and for how long.
#[derive(Clone, Debug)]
pub struct FuzzOptions {
    /// Seed of the case stream.
    pub seed: u64,
    /// Stop after this many cases.
    pub cases: Option<u64>,
    /// Stop after this long.
    pub time: Option<Duration>,
    /// Where regression cases are written.
    pub out: PathBuf,
    /// The `atomcts run` options after `--cases FILE` that reproduce a finding (profile,
    /// adapter, knob overrides), already shell-quoted, starting with a space.
    pub repro_args: String,
    /// The `atomcts fuzz` command itself, for the files' headers.
    pub command: String,
}

/// One distinct kind of failure.
#[derive(Clone, Debug)]
pub struct Signature {
    /// `dialect op status location-kind` (see [`signature`]).
    pub key: String,
    /// Cases that failed this way.
    pub count: u64,
    /// The first one: its number in the stream.
    pub first: u64,
    /// The shrunk case's file.
    pub file: Option<PathBuf>,
    /// The shrunk case's instruction and the first finding, for the summary.
    pub example: String,
    /// Candidate cases the shrink ran.
    pub shrink_runs: u32,
}

/// A fuzzing run's totals.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Cases generated.
    pub cases: u64,
    /// Cases judged (passed or failed, on both adapters with `--against`).
    pub judged: u64,
    /// Cases skipped, not applicable, or undecided by the race checker.
    pub not_judged: u64,
    /// Failing cases (every signature's count).
    pub failing: u64,
    /// Distinct signatures, in the order found.
    pub signatures: Vec<Signature>,
    /// Problems of the fuzzer itself (a generated case the reference cannot run, a file that
    /// cannot be written).
    pub errors: Vec<String>,
    /// Time spent.
    pub elapsed: Duration,
}

/// The kind of a finding's location: `global`, `shared`, `R`, `V`, `P`, `outcome`, `case`...
/// (addresses, lanes and register numbers dropped, so one bug is one signature).
fn location_kind(loc: &str) -> String {
    let k: String = loc
        .chars()
        .take_while(|c| c.is_ascii_alphabetic() || *c == '_')
        .collect();
    if k.is_empty() { "?".into() } else { k }
}

/// A failure's signature: dialect, op, status and the kinds of the locations that differ.
/// `None` when the result is not a failure (pass, skip, not applicable, undecided).
pub fn signature(r: &CaseResult) -> Option<String> {
    let status = match r.status {
        Status::Fail | Status::BaselinePasses | Status::KnownFailure => "fail",
        Status::Error => "error",
        Status::Pass | Status::Skip | Status::NotApplicable | Status::Undecided => return None,
    };
    let mut kinds: Vec<String> = r
        .findings
        .iter()
        .map(|f| location_kind(&f.location))
        .collect();
    kinds.sort();
    kinds.dedup();
    Some(format!(
        "{} {} {status} {}",
        r.dialect,
        r.op,
        kinds.join(",")
    ))
}

/// The verdict on one case: a signature when it fails (against the reference, or, with a
/// second adapter, when the two disagree), whether it was judged, and A's result.
struct Verdict {
    signature: Option<String>,
    judged: bool,
    result: CaseResult,
}

/// A shorter borrow of the optional second adapter (the trait object's lifetime shortened
/// with it).
fn reborrow<'s>(b: &'s mut Option<&mut dyn Adapter>) -> Option<&'s mut dyn Adapter> {
    match b {
        Some(x) => Some(&mut **x),
        None => None,
    }
}

/// Builds the case of `gc` with the reference's expectation.
fn case_of(gc: &GenCase, id: &str, opts: &Options) -> Result<Case, String> {
    let expect = expect_table(gc, &opts.profile)?;
    Ok(gc.to_case(
        id.to_string(),
        Path::new("fuzz"),
        format!(
            "atomcts fuzz; expectation from the reference model, profile {}",
            opts.profile.name
        ),
        Some(expect),
    ))
}

fn judge_case(
    gc: &GenCase,
    id: &str,
    a: &mut dyn Adapter,
    b: Option<&mut dyn Adapter>,
    opts: &Options,
) -> Result<Verdict, String> {
    let case = case_of(gc, id, opts)?;
    let ra = run_case(&case, a, opts);
    let rb = b.map(|b| run_case(&case, b, opts));
    Ok(verdict(ra, rb))
}

/// The verdict on A's result (and B's, for the differential).
fn verdict(ra: CaseResult, rb: Option<CaseResult>) -> Verdict {
    let Some(rb) = rb else {
        let judged = matches!(ra.status, Status::Pass | Status::Fail);
        return Verdict {
            signature: signature(&ra),
            judged,
            result: ra,
        };
    };
    let comparable = |s: Status| matches!(s, Status::Pass | Status::Fail | Status::Error);
    if !comparable(ra.status) || !comparable(rb.status) {
        return Verdict {
            signature: None,
            judged: false,
            result: ra,
        };
    }
    // The differential: the two implementations are judged the same way by the reference,
    // or this is a finding about one of them.
    let key = |r: &CaseResult| {
        let mut v: Vec<(String, String)> = r
            .findings
            .iter()
            .map(|f| (f.location.clone(), f.observed.clone()))
            .collect();
        v.sort();
        (r.status, v)
    };
    let signature = (key(&ra) != key(&rb)).then(|| {
        let side = |r: &CaseResult| signature(r).unwrap_or_else(|| "pass".into());
        format!(
            "{} {}: A {} / B {}",
            ra.dialect,
            ra.op,
            side(&ra),
            side(&rb)
        )
    });
    Verdict {
        signature,
        judged: true,
        result: ra,
    }
}

/// Runs `cases` on `a`, pipelined when it has a window; one result per case, in order.
fn run_all(cases: &[Case], a: &mut dyn Adapter, opts: &Options) -> Vec<CaseResult> {
    let refs: Vec<&Case> = cases.iter().collect();
    let mut out = Vec::with_capacity(cases.len());
    crate::run::run_cases(&refs, a, opts, &mut |r| out.push(r));
    out
}

/// Fuzzes `a` (against `b` if given) under `run_opts`; `progress` is called after every case
/// with the totals so far.
pub fn fuzz(
    a: &mut dyn Adapter,
    mut b: Option<&mut dyn Adapter>,
    run_opts: &Options,
    opts: &FuzzOptions,
    progress: &mut dyn FnMut(&Summary),
) -> Summary {
    let t0 = Instant::now();
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
    let mut s = Summary::default();
    let mut by_key: BTreeMap<String, usize> = BTreeMap::new();
    // Cases go to the adapters 4 windows at a time (pipelined shims keep their window full
    // through a batch); findings are shrunk one case at a time.
    let window = |x: &dyn Adapter| x.window().max(1) as u64;
    let batch = 4 * window(&*a).max(reborrow(&mut b).map_or(1, |b| window(&*b)));
    loop {
        if opts.cases.is_some_and(|n| s.cases >= n) || opts.time.is_some_and(|t| t0.elapsed() >= t)
        {
            break;
        }
        let n = opts.cases.map_or(batch, |c| batch.min(c - s.cases));
        let mut gcs = Vec::new();
        let mut cases = Vec::new();
        for _ in 0..n {
            let k = s.cases;
            s.cases += 1;
            let gc = gen_case(&mut rng);
            let id = format!("fuzz/seed{}::case_{k}", opts.seed);
            match case_of(&gc, &id, run_opts) {
                Ok(c) => {
                    cases.push(c);
                    gcs.push((k, gc, id));
                }
                Err(e) => s.errors.push(format!("case {k} ({}): {e}", gc.asm)),
            }
        }
        let ra = run_all(&cases, a, run_opts);
        let mut rb = reborrow(&mut b).map(|b| run_all(&cases, b, run_opts).into_iter());
        for ((k, gc, id), ra) in gcs.into_iter().zip(ra) {
            let v = verdict(ra, rb.as_mut().and_then(Iterator::next));
            self::record(
                &mut s,
                &mut by_key,
                v,
                k,
                &gc,
                &id,
                a,
                reborrow(&mut b),
                run_opts,
                opts,
            );
            s.elapsed = t0.elapsed();
            progress(&s);
        }
    }
    s.elapsed = t0.elapsed();
    s
}

/// Counts one verdict; the first case of a new signature is shrunk and written.
#[allow(clippy::too_many_arguments)]
fn record(
    s: &mut Summary,
    by_key: &mut BTreeMap<String, usize>,
    v: Verdict,
    k: u64,
    gc: &GenCase,
    id: &str,
    a: &mut dyn Adapter,
    mut b: Option<&mut dyn Adapter>,
    run_opts: &Options,
    opts: &FuzzOptions,
) {
    if v.judged {
        s.judged += 1;
    } else {
        s.not_judged += 1;
    }
    if let Some(key) = v.signature {
        s.failing += 1;
        match by_key.get(&key) {
            Some(&i) => s.signatures[i].count += 1,
            None => {
                let (small, runs) = shrink(gc, &key, id, a, reborrow(&mut b), run_opts);
                let written = write_finding(&small, &key, k, opts, run_opts);
                let mut example = small.asm.clone();
                if let Ok(Verdict { result, .. }) =
                    judge_case(&small, id, a, reborrow(&mut b), run_opts)
                    && let Some(f) = result.findings.first()
                {
                    let _ = write!(
                        example,
                        "  [{}: expected {}, observed {} {}]",
                        f.location, f.expected, f.observed, f.note
                    );
                }
                let file = match written {
                    Ok(p) => Some(p),
                    Err(e) => {
                        s.errors.push(e);
                        None
                    }
                };
                by_key.insert(key.clone(), s.signatures.len());
                s.signatures.push(Signature {
                    key,
                    count: 1,
                    first: k,
                    file,
                    example,
                    shrink_runs: runs,
                });
            }
        }
    }
}

// ---- shrinking -----------------------------------------------------------------------------

/// The vISA execution size in `asm` (`(16)`, `(M1, 8)`), with the byte range of the number.
fn visa_exec(asm: &str) -> Option<(u32, std::ops::Range<usize>)> {
    let open = asm.find(" (")? + 2;
    let close = open + asm[open..].find(')')?;
    let inner = &asm[open..close];
    let start = open
        + inner
            .rfind(|c: char| !c.is_ascii_digit())
            .map_or(0, |i| i + 1);
    let n = asm[start..close].parse().ok()?;
    Some((n, start..close))
}

/// The per-lane width of the case: SASS/MSL lanes, vISA execution size.
fn width(gc: &GenCase) -> u32 {
    match gc.dialect {
        Dialect::Visa => visa_exec(&gc.asm).map_or(1, |(n, _)| n),
        _ => gc.lanes,
    }
}

/// Applies `f` to every array of exactly `n` elements in `v` (per-lane lists, also inside
/// typed tables such as `{ ud = [...] }`).
fn map_lane_arrays(v: &mut Value, n: usize, f: &dyn Fn(&mut Vec<Value>)) {
    match v {
        Value::Array(a) if a.len() == n => f(a),
        Value::Table(t) => {
            for (_, x) in t.iter_mut() {
                map_lane_arrays(x, n, f);
            }
        }
        _ => {}
    }
}

/// The case with only the lanes (channels) in `keep`, in order.
fn keep_lanes(gc: &GenCase, keep: &[usize]) -> Option<GenCase> {
    let w = width(gc) as usize;
    if keep.is_empty() || keep.len() >= w {
        return None;
    }
    let mut out = gc.clone();
    let pick = |a: &mut Vec<Value>| {
        let kept: Vec<Value> = keep.iter().map(|&i| a[i].clone()).collect();
        *a = kept;
    };
    for (k, v) in out.given.iter_mut() {
        // vISA predicates and masks are bit masks, not lists: left as they are.
        if k != "emask" {
            map_lane_arrays(v, w, &pick);
        }
    }
    match gc.dialect {
        Dialect::Visa => {
            let (_, range) = visa_exec(&gc.asm)?;
            out.asm.replace_range(range, &keep.len().to_string());
        }
        _ => out.lanes = keep.len() as u32,
    }
    Some(out)
}

/// Smaller versions of a value: 0, 1, half, the lowest set bit cleared (each strictly
/// smaller as an unsigned number).
fn smaller(v: u64) -> Vec<u64> {
    let mut c = vec![0, 1, v >> 1, v & v.wrapping_sub(1), v - v.min(1)];
    c.retain(|x| *x < v);
    c.sort_unstable();
    c.dedup();
    c
}

/// Every leaf of `v` replaced by each of its simpler forms, one at a time.
fn simpler_leaves(v: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    match v {
        Value::Integer(i) => {
            out.extend(
                smaller(*i as u64)
                    .into_iter()
                    .map(|x| Value::Integer(x as i64)),
            );
        }
        Value::Boolean(true) => out.push(Value::Boolean(false)),
        Value::String(s) => {
            if let Some((ty, hex)) = s.split_once(':')
                && let Some(x) = hex
                    .strip_prefix("0x")
                    .and_then(|h| u64::from_str_radix(h, 16).ok())
            {
                out.extend(
                    smaller(x)
                        .into_iter()
                        .map(|y| Value::String(format!("{ty}:{y:#x}"))),
                );
            }
        }
        Value::Array(a) => {
            // A list of one repeated value first becomes that value (fewer operands).
            if a.len() > 1 && a.windows(2).all(|w| w[0] == w[1]) {
                out.push(a[0].clone());
            }
            for (i, x) in a.iter().enumerate() {
                for y in simpler_leaves(x) {
                    let mut b = a.clone();
                    b[i] = y;
                    out.push(Value::Array(b));
                }
            }
        }
        Value::Table(t) => {
            for (k, x) in t {
                for y in simpler_leaves(x) {
                    let mut u = t.clone();
                    u.insert(k.clone(), y);
                    out.push(Value::Table(u));
                }
            }
        }
        _ => {}
    }
    out
}

/// Candidate simplifications of `gc`, biggest steps first.
fn candidates(gc: &GenCase) -> Vec<GenCase> {
    let mut out = Vec::new();
    let w = width(gc) as usize;
    // Fewer lanes: one, half, then each single lane dropped.
    if w > 1 {
        for i in 0..w {
            out.extend(keep_lanes(gc, &[i]));
        }
        out.extend(keep_lanes(gc, &(0..w / 2).collect::<Vec<_>>()));
        for i in 0..w {
            let keep: Vec<usize> = (0..w).filter(|&j| j != i).collect();
            out.extend(keep_lanes(gc, &keep));
        }
    }
    // No guard.
    for g in ["@P0 ", "@!P0 ", "(P1) ", "(!P1) "] {
        if let Some(rest) = gc.asm.strip_prefix(g) {
            let mut c = gc.clone();
            c.asm = rest.to_string();
            out.push(c);
        }
    }
    // Fewer state entries: a whole key, then single memory words.
    for k in gc.given.keys() {
        let mut c = gc.clone();
        c.given.remove(k);
        out.push(c);
    }
    for (k, v) in &gc.given {
        if let Value::Table(t) = v {
            for mk in t.keys() {
                let mut c = gc.clone();
                if let Some(Value::Table(u)) = c.given.get_mut(k) {
                    u.remove(mk);
                }
                out.push(c);
            }
        }
    }
    // Simpler values.
    for (k, v) in &gc.given {
        for y in simpler_leaves(v) {
            let mut c = gc.clone();
            c.given.insert(k.clone(), y);
            out.push(c);
        }
    }
    out
}

/// Shrinks `gc`, which fails with `key`, greedily: the first candidate that still fails with
/// the same signature replaces it, until none does or [`SHRINK_BUDGET`] runs are spent.
/// Returns the smallest case and the runs spent.
pub fn shrink(
    gc: &GenCase,
    key: &str,
    id: &str,
    a: &mut dyn Adapter,
    mut b: Option<&mut dyn Adapter>,
    opts: &Options,
) -> (GenCase, u32) {
    let mut best = gc.clone();
    let mut runs = 0u32;
    'outer: loop {
        for c in candidates(&best) {
            if runs >= SHRINK_BUDGET {
                break 'outer;
            }
            runs += 1;
            let same = judge_case(&c, id, a, reborrow(&mut b), opts)
                .is_ok_and(|v| v.signature.as_deref() == Some(key));
            if same {
                best = c;
                continue 'outer;
            }
        }
        break;
    }
    (best, runs)
}

// ---- findings as corpus cases ------------------------------------------------------------

/// `where` pins for a case whose expectation holds under `profile`: every knob of the dialect
/// and the float knobs, at the profile's options.
pub fn where_pins(dialect: Dialect, profile: &atomcts_reference::Profile) -> Table {
    let mut pins = Table::new();
    for k in KNOBS {
        let applies = k.id.starts_with("float.") || k.id.starts_with(&format!("{dialect}."));
        if let (true, Ok(o)) = (applies, profile.get(k.id)) {
            pins.insert(k.id.into(), Value::String(o.into()));
        }
    }
    pins
}

/// Writes the shrunk case as `<out>/fuzz-<hash>.toml` with its reproduce command.
fn write_finding(
    gc: &GenCase,
    key: &str,
    k: u64,
    opts: &FuzzOptions,
    run_opts: &Options,
) -> Result<PathBuf, String> {
    let hash = format!("{:08x}", crate::run::stable_hash(key) >> 32);
    let name = format!("fuzz_{hash}");
    let cite = format!(
        "atomcts fuzz --seed {} case {k}, shrunk; expectation from the reference model, profile {}",
        opts.seed, run_opts.profile.name
    );
    let mut t = crate::generate::case_table(&name, &cite, gc, &run_opts.profile)?;
    t.insert(
        "where".into(),
        Value::Table(where_pins(gc.dialect, &run_opts.profile)),
    );
    t.insert(
        "tags".into(),
        Value::Array(vec![Value::String("fuzz_regression".into())]),
    );
    std::fs::create_dir_all(&opts.out)
        .map_err(|e| format!("creating {}: {e}", opts.out.display()))?;
    let path = opts.out.join(format!("fuzz-{hash}.toml"));
    let header = format!(
        "Found by `{}` (case {k}), shrunk.\nSignature: {key}\nReproduce: atomcts run --cases {}{}\nThe expectation is the reference model's outcome (profile {}), not the documents'.",
        opts.command,
        shell_quote(&path.display().to_string()),
        opts.repro_args,
        run_opts.profile.name
    );
    let text = crate::generate::file_text(gc.dialect, &header, &[t])?;
    std::fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(path)
}

/// The summary for people.
pub fn summary_text(s: &Summary) -> String {
    let mut out = String::new();
    let rate = s.cases as f64 / s.elapsed.as_secs_f64().max(1e-9);
    let _ = writeln!(
        out,
        "\n{} cases in {:.1} s ({rate:.0}/s): {} judged, {} skipped, not applicable or undecided, {} failing, {} distinct signature(s)",
        s.cases,
        s.elapsed.as_secs_f64(),
        s.judged,
        s.not_judged,
        s.failing,
        s.signatures.len()
    );
    for sig in &s.signatures {
        let _ = writeln!(
            out,
            "  {} x{} (first: case {}, shrunk in {} runs)",
            crate::report::safe(&sig.key),
            sig.count,
            sig.first,
            sig.shrink_runs
        );
        let _ = writeln!(out, "    {}", crate::report::safe(&sig.example));
        if let Some(f) = &sig.file {
            let _ = writeln!(out, "    written to {}", f.display());
        }
    }
    for e in &s.errors {
        let _ = writeln!(out, "error: {}", crate::report::safe(e));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smaller_values_strictly_decrease() {
        assert_eq!(smaller(0), Vec::<u64>::new());
        assert_eq!(smaller(1), vec![0]);
        assert_eq!(smaller(6), vec![0, 1, 3, 4, 5]);
        for v in [2u64, 7, u64::MAX] {
            assert!(smaller(v).iter().all(|x| *x < v));
        }
    }

    #[test]
    fn lanes_shrink_in_every_per_lane_list() {
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let mut seen = 0;
        for _ in 0..300 {
            let gc = gen_case(&mut rng);
            let w = width(&gc) as usize;
            if w < 2 {
                continue;
            }
            let one = keep_lanes(&gc, &[w - 1]).unwrap();
            assert_eq!(width(&one), 1, "{} -> {}", gc.asm, one.asm);
            // The smaller case still loads: every per-lane list shrank with it.
            crate::generate::load_state(&one).unwrap_or_else(|e| panic!("{}: {e}", one.asm));
            seen += 1;
        }
        assert!(seen > 50);
    }

    #[test]
    fn signatures_drop_addresses_and_lanes() {
        assert_eq!(location_kind("global[0x1000]"), "global");
        assert_eq!(location_kind("R0[3]"), "R");
        assert_eq!(location_kind("outcome"), "outcome");
    }
}
