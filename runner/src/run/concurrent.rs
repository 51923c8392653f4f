//! Concurrent cases (FORMAT.md, "Concurrent cases"; issue 12): builds each instruction's state
//! (its own registers over the shared memory), runs the case on an adapter, checks what the
//! case names, and judges the whole observation with the reference's checker across
//! instructions ([`atomcts_reference::concurrent`]).

use crate::corpus::build::build_expectation;
use crate::corpus::case::Case;
use crate::corpus::expectation::{Check, Expectation, Target};
use crate::corpus::pos::Pos;
use crate::corpus::state::{BuildError, build_state};
use crate::corpus::verify::{self, Finding};
use crate::run::results::{CaseResult, Options, Status, verdict};
use atomcts_adapters::concurrent::{ConcurrentInstr, ConcurrentRequest};
use atomcts_adapters::{Adapter, AdapterErrorKind, Observation};
use atomcts_reference::check::Judgement;
use atomcts_reference::concurrent::{self, Part};
use atomcts_reference::program::{Dialect, Program};
use atomcts_reference::state::State;
use toml::Value;

/// How many times `atomcts run` runs each concurrent case by default (`--concurrent-repeat`):
/// with the corpus's lanes and iterations, a race that loses one update in a thousand
/// operations is caught in practically every run (FORMAT.md, "Concurrent cases", measured).
pub const DEFAULT_REPEAT: u32 = 3;

/// Keys of a concurrent case's own `given`: the memory all instructions share.
fn is_shared_key(dialect: Dialect, key: &str, v: &Value) -> bool {
    matches!(
        key,
        "mem" | "alloc" | "slm" | "shared_window" | "local_window"
    ) || (dialect == Dialect::Msl && matches!(v, Value::Table(t) if t.contains_key("space")))
}

/// The case each instruction amounts to on its own: the shared `given` then its own.
fn instr_case(case: &Case, k: usize) -> Case {
    let i = &case.concurrent[k];
    let mut c = case.clone();
    c.asm = i.asm.clone();
    c.asm_pos = i.asm_pos.clone();
    c.pos = i.pos.clone();
    c.lanes = i.lanes;
    c.given = case.given.iter().chain(&i.given).cloned().collect();
    c.concurrent = Vec::new();
    c
}

fn bad(pos: &Pos, message: String) -> BuildError {
    BuildError {
        pos: pos.clone(),
        message,
    }
}

/// Each instruction's initial state.
pub fn build_states(case: &Case) -> Result<Vec<State>, BuildError> {
    if let Some((k, _, pos)) = case
        .given
        .iter()
        .find(|(k, v, _)| !is_shared_key(case.dialect, k, v))
    {
        return Err(bad(
            pos,
            format!(
                "`{k}` in a concurrent case's given: that given holds the shared memory only; registers and operands go in each [[case.concurrent]]"
            ),
        ));
    }
    let mut out = Vec::new();
    for (k, i) in case.concurrent.iter().enumerate() {
        if let Some((key, _, pos)) = i
            .given
            .iter()
            .find(|(key, v, _)| is_shared_key(case.dialect, key, v))
        {
            return Err(bad(
                pos,
                format!(
                    "`{key}` in instruction {k}'s given: shared memory goes in the case's given"
                ),
            ));
        }
        out.push(build_state(&instr_case(case, k))?);
    }
    Ok(out)
}

/// The checks the case names: the final shared memory (the case's `expect`) and each
/// instruction's registers after its last iteration. Locations not named are left to the
/// reference's judgement.
pub fn build_checks(
    case: &Case,
    states: &[State],
) -> Result<(Vec<Check>, Vec<Vec<Check>>), BuildError> {
    let values = |e: Expectation, at: &Pos| match e {
        Expectation::Values(c) => Ok(c),
        other => Err(bad(
            at,
            format!(
                "a concurrent case expects values, not {} (its instructions must complete)",
                other.kind()
            ),
        )),
    };
    let shared = match &case.expect {
        Some((entries, at)) => {
            let mut first = instr_case(case, 0);
            first.given = case.given.clone();
            let checks = values(build_expectation(&first, &states[0], entries, at)?, at)?;
            if let Some(c) = checks
                .iter()
                .find(|c| !matches!(c.target, Target::Mem { .. }))
            {
                return Err(bad(
                    &c.pos,
                    format!(
                        "`{}` in a concurrent case's expect: it names the final shared memory only; registers go in each [[case.concurrent]]'s expect",
                        c.key
                    ),
                ));
            }
            checks
        }
        None => Vec::new(),
    };
    let mut per = Vec::new();
    for (k, i) in case.concurrent.iter().enumerate() {
        per.push(match &i.expect {
            Some((entries, at)) => {
                let checks = values(
                    build_expectation(&instr_case(case, k), &states[k], entries, at)?,
                    at,
                )?;
                if let Some(c) = checks.iter().find(|c| matches!(c.target, Target::Mem { .. })) {
                    return Err(bad(
                        &c.pos,
                        format!("`{}` in instruction {k}'s expect: the final memory goes in the case's expect", c.key),
                    ));
                }
                checks
            }
            None => Vec::new(),
        });
    }
    Ok((shared, per))
}

/// `initial` with the locations `checks` name taken from `observed`: checking it against the
/// checks compares exactly the named locations.
fn project(checks: &[Check], initial: &State, observed: &State) -> State {
    let mut out = initial.clone();
    let copy_reg = |out: &mut State, name: &str| {
        if let Some(r) = observed.regs.get(name) {
            out.regs.insert(name.to_string(), r.clone());
        }
    };
    for c in checks {
        match &c.target {
            Target::Reg { name, .. } => copy_reg(&mut out, name),
            Target::Multiset { name, width, .. } => {
                copy_reg(&mut out, name);
                if *width > 32
                    && let Some(n) = name.strip_prefix('R').and_then(|n| n.parse::<u32>().ok())
                {
                    copy_reg(&mut out, &format!("R{}", n + 1));
                }
            }
            Target::Mem { space, addr, bytes } => {
                for b in 0..u64::from(*bytes) {
                    if let Some(v) = observed.memory(*space).read(addr + b, 1) {
                        out.memory_mut(*space).write(addr + b, 1, v);
                    }
                }
            }
        }
    }
    out
}

/// The case's instructions as the reference's concurrent model takes them: each parsed
/// instruction with its initial state, iterations and compare-and-swap loop.
pub fn parts<'a>(case: &'a Case, programs: &'a [Program], states: &'a [State]) -> Vec<Part<'a>> {
    programs
        .iter()
        .zip(states)
        .zip(&case.concurrent)
        .map(|((program, state), i)| Part {
            program,
            state,
            iterations: i.iterations,
            cas_loop: i.cas_loop.as_ref().map(|l| l.0),
        })
        .collect()
}

fn finding(location: &str, note: String) -> Finding {
    Finding {
        location: location.into(),
        expected: String::new(),
        observed: String::new(),
        note,
    }
}

/// The iterations each thread executed, where the adapter reports them (issue 30): a finding
/// per thread that executed fewer than its instruction's `iterations` ("loop cut short", told
/// apart from a lost update), or the adapter's error when the counts do not fit the request
/// (a list per instruction, a count per access, none above `iterations`).
fn shortfalls(
    case: &Case,
    lowered: &[atomcts_reference::ir::Lowered],
    executed: &[Vec<u32>],
) -> Result<Vec<Finding>, String> {
    if executed.len() != case.concurrent.len() {
        return Err(format!(
            "the adapter reported iterations executed for {} instructions, the case has {}",
            executed.len(),
            case.concurrent.len()
        ));
    }
    let mut out = Vec::new();
    for (k, ((i, l), counts)) in case
        .concurrent
        .iter()
        .zip(lowered)
        .zip(executed)
        .enumerate()
    {
        let lanes: Vec<u32> = match &l.instr {
            atomcts_reference::ir::Instr::Mem(m) => m.accesses.iter().map(|a| a.lane).collect(),
            _ => Vec::new(),
        };
        if counts.len() != lanes.len() {
            return Err(format!(
                "the adapter reported iterations executed for {} threads of instruction {k}, which has {}",
                counts.len(),
                lanes.len()
            ));
        }
        for (j, (n, lane)) in counts.iter().zip(&lanes).enumerate() {
            if *n > i.iterations {
                return Err(format!(
                    "the adapter reported {n} iterations executed by thread {j} of instruction {k}, which asks for {}",
                    i.iterations
                ));
            }
            if *n < i.iterations {
                out.push(Finding {
                    location: format!("instruction {k}: thread {j} (lane {lane})"),
                    expected: format!("{} iterations", i.iterations),
                    observed: format!("{n} iterations"),
                    note: format!(
                        "loop cut short: thread {j} executed {n} of {} iterations (not a lost update: its missing iterations never ran)",
                        i.iterations
                    ),
                });
            }
        }
    }
    Ok(out)
}

/// The case's instructions as an adapter takes them, each over its own state.
fn instrs<'a>(case: &'a Case, states: &'a [State]) -> Vec<ConcurrentInstr<'a>> {
    case.concurrent
        .iter()
        .zip(states)
        .map(|(i, state)| ConcurrentInstr {
            asm: &i.asm,
            state,
            iterations: i.iterations,
            cas_loop: i.cas_loop.as_ref().map(|l| l.0),
        })
        .collect()
}

fn no_loops(adapter: &dyn Adapter) -> String {
    format!(
        "adapter {} does not run compare-and-swap loops (cas_loop)",
        adapter.name()
    )
}

/// Why `adapter` would answer the concurrent `case` not applicable, decided without running
/// it ([`crate::run::prepare::screen`]): it runs no concurrent cases, no CAS loops, or its
/// [`atomcts_adapters::Concurrent::screen_concurrent`] says why. `None` when the case would
/// run (or ends in an error, which the run reports).
pub fn screen(case: &Case, adapter: &mut dyn Adapter, opts: &Options) -> Option<String> {
    if adapter.concurrent().is_none() {
        return Some(format!(
            "adapter {} does not run concurrent cases",
            adapter.name()
        ));
    }
    let states = build_states(case).ok()?;
    let instrs = instrs(case, &states);
    let request = ConcurrentRequest {
        id: &case.id,
        dialect: case.dialect,
        instrs: &instrs,
        profile: &opts.profile,
    };
    if request.has_loops() && !adapter.runs_cas_loops() {
        return Some(no_loops(adapter));
    }
    adapter.concurrent_mut()?.screen_concurrent(&request)
}

/// Runs one concurrent case (after the runner's `where` and `requires` checks).
pub fn run_case(
    case: &Case,
    adapter: &mut dyn Adapter,
    opts: &Options,
    mut r: CaseResult,
) -> CaseResult {
    let error = |mut r: CaseResult, message: String| {
        r.status = Status::Error;
        r.findings.push(finding("case", message).into());
        r
    };
    let states = match build_states(case) {
        Ok(s) => s,
        Err(e) => return error(r, e.to_string()),
    };
    let (shared, per) = match build_checks(case, &states) {
        Ok(c) => c,
        Err(e) => return error(r, e.to_string()),
    };
    let mut programs = Vec::new();
    for i in &case.concurrent {
        match Program::parse(case.dialect, &i.asm) {
            Ok(p) => programs.push(p),
            Err(rej) => {
                let col = i.asm_pos.col + 1 + rej.column.unwrap_or(0);
                return error(
                    r,
                    format!(
                        "{}:{}:{col}: asm does not parse: {rej}",
                        i.asm_pos.file.display(),
                        i.asm_pos.line
                    ),
                );
            }
        }
    }
    let parts = parts(case, &programs, &states);
    let profile = &opts.profile;
    // A loop on an instruction that cannot run one is the case's error, where it is written.
    let unlooped: Vec<Part<'_>> = parts
        .iter()
        .map(|p| Part {
            cas_loop: None,
            ..p.clone()
        })
        .collect();
    let lowered = match concurrent::lower_all(&unlooped, profile) {
        Ok(l) => l,
        Err(e) => return error(r, format!("reference model: {e}")),
    };
    for (k, (i, l)) in case.concurrent.iter().zip(&lowered).enumerate() {
        if let (Some((lp, at)), atomcts_reference::ir::Instr::Mem(m)) = (&i.cas_loop, &l.instr)
            && let Err(e) = concurrent::check_loop(k, m, *lp)
        {
            return error(
                r,
                format!("{}:{}:{}: {e}", at.file.display(), at.line, at.col),
            );
        }
    }
    let reference = match concurrent::execute_serial(
        &parts,
        profile,
        &atomcts_reference::exec::execute,
    ) {
        Ok(Ok(s)) => s,
        Ok(Err(o)) => {
            return error(
                r,
                format!(
                    "reference model: an instruction does not complete ({}); concurrent instructions must",
                    o.kind()
                ),
            );
        }
        Err(e) => return error(r, format!("reference model: {e}")),
    };
    let instrs = instrs(case, &states);
    let request = ConcurrentRequest {
        id: &case.id,
        dialect: case.dialect,
        instrs: &instrs,
        profile,
    };
    if request.has_loops() && !adapter.runs_cas_loops() {
        r.status = Status::NotApplicable;
        r.findings
            .push(finding("adapter", no_loops(adapter)).into());
        return r;
    }
    let observation = match adapter.run_concurrent(&request) {
        Ok(o) => o,
        Err(e) => {
            let note = e.to_string();
            r.status = match e.kind {
                AdapterErrorKind::NotApplicable(_) => Status::NotApplicable,
                AdapterErrorKind::Unsupported(_) => Status::Skip,
                _ => Status::Error,
            };
            r.findings.push(finding("adapter", note).into());
            r.program = adapter.last_program();
            return r;
        }
    };
    let cut = match observation.executed.as_deref() {
        Some(e) => match shortfalls(case, &lowered, e) {
            Ok(f) => Some(f),
            Err(why) => {
                r.program = adapter.last_program();
                return error(r, why);
            }
        },
        None => None,
    };
    let mut findings = cut.clone().unwrap_or_default();
    if observation.states.len() != states.len() {
        findings.push(finding(
            "adapter",
            format!(
                "{} final states for {} instructions",
                observation.states.len(),
                states.len()
            ),
        ));
    } else {
        let lanes_are_lanes = case.dialect != Dialect::Visa;
        let fin = &observation.states[0];
        findings.extend(verify::check(
            &Expectation::Values(shared.clone()),
            &states[0],
            &Observation::Completed(project(&shared, &states[0], fin)),
            lanes_are_lanes,
        ));
        for (k, checks) in per.iter().enumerate() {
            let seen = project(checks, &states[k], &observation.states[k]);
            findings.extend(
                verify::check(
                    &Expectation::Values(checks.clone()),
                    &states[k],
                    &Observation::Completed(seen),
                    lanes_are_lanes,
                )
                .into_iter()
                .map(|mut f| {
                    f.location = format!("instruction {k}: {}", f.location);
                    f
                }),
            );
        }
    }
    let mut undecided = None;
    // A loop cut short is judged by its counts alone: the model's histories assume every
    // iteration ran.
    if findings.is_empty() {
        match concurrent::judge(
            &parts,
            &lowered,
            &reference,
            &observation.states,
            observation.returned.as_deref(),
            observation.attempts.as_deref(),
            opts.race_budget,
        ) {
            Ok(Judgement::Pass) => {}
            Ok(Judgement::Fail(ms)) => findings.extend(ms.into_iter().map(|m| {
                Finding {
                    location: m.loc.to_string(),
                    expected: m
                        .expected
                        .map_or("(see note)".into(), |v| format!("{v:#x}")),
                    observed: m.observed.map_or("-".into(), |v| format!("{v:#x}")),
                    note: format!("reference model: {}", m.why),
                }
            })),
            Ok(Judgement::Undecided(why)) => undecided = Some(why),
            Err(e) => return error(r, format!("reference model: {e}")),
        }
    }
    if let Some(cut) = &cut
        && cut.is_empty()
        && !findings.is_empty()
    {
        // First, so that the cap on findings never drops it.
        findings.insert(
            0,
            finding(
            "iterations",
            format!(
                "every thread executed the iterations the case asks for ({}): the values are not from a loop cut short",
                case.concurrent
                    .iter()
                    .map(|i| i.iterations.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
        );
    }
    verdict(r, findings, undecided, &*adapter)
}
