//! Every corpus file is one test: it must load, and every case in it must agree with the
//! reference model under every profile it applies to.

use atomcts::corpus::build::build_expectation;
use atomcts::corpus::case::parse_file;
use atomcts::corpus::expectation::Expectation;
use atomcts::corpus::files::corpus_root;
use atomcts::corpus::state::build_state;
use atomcts::run::results::{Options, Status};
use atomcts::run::run_case;
use atomcts_adapters::ReferenceAdapter;
use atomcts_adapters::plan::Layout;
use atomcts_adapters::protocol::{state_from_json, state_to_json};
use atomcts_reference::Profile;
use atomcts_reference::float;
use atomcts_reference::ir::{AtomicOp, Instr};
use atomcts_reference::outcome::{Allowed, Outcome};
use atomcts_reference::program::{Dialect, Program, run};
use atomcts_reference::state::{AtomicType, Loc};
use atomcts_reference::types::{DataType, ElemType, Kind, Space, mask};
use atomcts_reference::visa::{self, Instruction, dword_atomic::Op, intel};
use std::collections::BTreeSet;
use std::path::Path;

/// The profiles a case is checked under: every option of a probe's knob; otherwise every named
/// profile, plus the default with the case's `where` options when it has some.
fn profiles_for(case: &atomcts::corpus::case::Case) -> datatest_stable::Result<Vec<Profile>> {
    let mut out = Vec::new();
    if let Some(knob) = &case.probe {
        for (option, _, _) in &case.expect_if {
            let mut p = Profile::default();
            p.set(knob, option)?;
            p.name = format!("default+{knob}={option}");
            out.push(p);
        }
        return Ok(out);
    }
    for name in Profile::names() {
        out.push(Profile::named(name)?);
    }
    if !case.where_.is_empty() {
        let mut p = Profile::default();
        for (k, o) in &case.where_ {
            p.set(k, o)?;
        }
        p.name = "default+where".into();
        out.push(p);
    }
    Ok(out)
}

/// A case that expects `unspecified = true` records that the documents leave the outcome
/// undefined, and that the model refuses to guess (FORMAT.md): the reference's outcome must be
/// unspecified too, not some computed state (which any observation would pass anyway).
fn refuses_to_guess(case: &atomcts::corpus::case::Case, profile: &Profile) -> Option<String> {
    let (entries, at) = match &case.probe {
        Some(knob) => {
            let picked = profile.get(knob).ok()?;
            let (_, e, p) = case.expect_if.iter().find(|(o, _, _)| o == picked)?;
            (e, p)
        }
        None => {
            let (e, p) = case.expect.as_ref()?;
            (e, p)
        }
    };
    if case
        .where_
        .iter()
        .any(|(k, o)| profile.get(k).ok() != Some(o.as_str()))
    {
        return None;
    }
    let state = build_state(case).ok()?;
    let Ok(Expectation::Unspecified) = build_expectation(case, &state, entries, at) else {
        return None;
    };
    // `because`: what the documents leave undefined, which the model's reason must name.
    let because = entries
        .iter()
        .find(|(k, _, _)| k == "because")
        .and_then(|(_, v, _)| v.as_str());
    match run(case.dialect, &case.asm, &state, profile) {
        Ok(r) => match (&r.outcome, because) {
            (Outcome::Unspecified(why), Some(b))
                if !why
                    .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .any(|w| w == b) =>
            {
                Some(format!(
                    "{} under {}: unspecified because of `{b}`, the reference model says {why:?}",
                    case.id, profile.name
                ))
            }
            (Outcome::Unspecified(_), _) => None,
            _ => Some(format!(
                "{} under {}: expects unspecified, the reference model gives {}",
                case.id,
                profile.name,
                r.outcome.kind()
            )),
        },
        Err(e) => Some(format!("{} under {}: {e}", case.id, profile.name)),
    }
}

fn corpus_file(path: &Path, contents: String) -> datatest_stable::Result<()> {
    let root = corpus_root(path.parent().unwrap_or(Path::new(".")));
    let loaded = parse_file(&root, path, contents);
    let mut problems: Vec<String> = loaded.errors.iter().map(|e| e.to_string()).collect();
    if loaded.cases.is_empty() && problems.is_empty() {
        problems.push(format!("{}: no cases", path.display()));
    }
    for case in &loaded.cases {
        if case.is_concurrent() {
            problems.extend(concurrent_limits(case));
        }
        let state = build_state(case).ok();
        // The dialect's name is what a shim's request states (PROTOCOL.md `dialect`) and what
        // `atomcts fuzz` matches knob areas with: it must name the case's dialect.
        if Dialect::from_name(case.dialect.name()) != Some(case.dialect)
            || case.dialect.to_string() != case.dialect.name()
        {
            problems.push(format!(
                "{}: dialect {:?} is named `{}` and shown as `{}`",
                case.id,
                case.dialect,
                case.dialect.name(),
                case.dialect
            ));
        }
        // A buffer's type name is what a shim's request states (PROTOCOL.md `buffers`, `type`
        // = `atomic_int` | `atomic_uint` | `atomic_float`): it must name the buffer's type.
        if let Some(state) = &state {
            for (name, b) in &state.buffers {
                if AtomicType::from_name(b.ty.name()) != Some(b.ty) {
                    problems.push(format!(
                        "{}: buffer {name} of type {:?} is named `{}` in a request",
                        case.id,
                        b.ty,
                        b.ty.name()
                    ));
                }
            }
        }
        // A register's type name is what a shim's request and answer state (PROTOCOL.md,
        // `state.regs`, `type`: the vISA names, `bool`, `b32`): it must name the register's type.
        if let Some(state) = &state {
            for (name, reg) in &state.regs {
                let t = reg.ty;
                let named = match t.kind {
                    Kind::Bool => t.visa_name() == "bool",
                    Kind::Bits => t.visa_name() == "b32" && t.bits == 32,
                    _ => ElemType::from_visa_name(t.visa_name()) == Some(t),
                };
                if !named {
                    problems.push(format!(
                        "{}: register {name} of type {t:?} is named `{}` in a request",
                        case.id,
                        t.visa_name()
                    ));
                }
            }
        }
        // The initial state as a shim receives it (PROTOCOL.md `state`) reads back as the
        // case's state, and the flat buffers a GPU back end fills (`plan::Layout`) hold every
        // allocated byte of it where the layout says.
        if let Some(state) = &state {
            if state_from_json(&state_to_json(state)).as_ref() != Ok(state) {
                problems.push(format!(
                    "{}: the request's state does not read back as the case's",
                    case.id
                ));
            }
            for space in [Space::Global, Space::Shared] {
                // The byte count the 64 MiB limit is kept with (FORMAT.md, Limits) is the
                // allocated bytes: a wrong count would refuse or admit cases wrongly.
                let mem = state.memory(space);
                let counted: u64 = mem.ranges().map(|(_, len)| len).sum();
                if mem.allocated_bytes() != counted {
                    problems.push(format!(
                        "{}: {} memory counts {} allocated bytes, its ranges hold {counted}",
                        case.id,
                        space.name(),
                        mem.allocated_bytes()
                    ));
                }
                let layout = Layout::of(state, space);
                let buffer = layout.bytes(state, space);
                for (base, data) in mem.regions() {
                    for (i, byte) in data.iter().enumerate() {
                        let addr = base + i as u64;
                        let held = layout.offset(addr).and_then(|o| buffer.get(o as usize));
                        if held != Some(byte) {
                            problems.push(format!(
                                "{}: {} byte {addr:#x} ({byte:#04x}) is {held:?} in the back ends' buffer",
                                case.id,
                                space.name()
                            ));
                            break;
                        }
                    }
                }
            }
        }
        // The model's printer states the instruction it parsed: parsing the printed text gives
        // the same instruction (reports and repro commands print it).
        if let Ok(p) = Program::parse(case.dialect, &case.asm) {
            let printed = p.to_string();
            if Program::parse(case.dialect, &printed).as_ref() != Ok(&p) {
                problems.push(format!(
                    "{}: `{}` prints as `{printed}`, which does not parse back to it",
                    case.id, case.asm
                ));
            }
        }
        if case.dialect == Dialect::Visa {
            problems.extend(intel_round_trip(&case.id, &case.asm));
        }
        for profile in profiles_for(case)? {
            let name = profile.name.clone();
            // The reference's run of the case under this profile, for the checks below.
            let reference = state
                .as_ref()
                .and_then(|st| run(case.dialect, &case.asm, st, &profile).ok());
            // The lowered IR's op, type and space names are what a protocol-2 shim receives
            // (PROTOCOL.md, `lowered`: `op`, `type`, `space`): they must name the instruction's.
            if let Some(r) = &reference
                && let Some(lowered) = &r.lowered
                && let Instr::Mem(m) = &lowered.instr
                && (DataType::from_name(m.ty.name()) != Some(m.ty)
                    || m.ty.to_string() != m.ty.name()
                    || AtomicOp::from_name(m.op.name()) != Some(m.op)
                    || !matches!(
                        (m.space, m.space.name()),
                        (Space::Global, "global") | (Space::Shared, "shared")
                    ))
            {
                problems.push(format!(
                    "{} under {name}: the lowered IR names {:?} `{}`, {:?} `{}` and {:?} `{}`",
                    case.id,
                    m.ty,
                    m.ty.name(),
                    m.op,
                    m.op.name(),
                    m.space,
                    m.space.name()
                ));
            }
            // A rejection explained to people (`atomcts explain`, encoding findings) states its
            // reason code first.
            if let Some(r) = &reference
                && let Outcome::Invalid(rej) = &r.outcome
                && !rej
                    .to_string()
                    .starts_with(&format!("{}: ", rej.reason.code()))
            {
                problems.push(format!(
                    "{} under {name}: the rejection reads `{rej}`, not `{}: ...`",
                    case.id,
                    rej.reason.code()
                ));
            }
            // `atomcts exec` prints each open location (`open: V4[0] bits 16..32`): it must
            // name the register element or the memory address.
            if let Some(r) = &reference
                && let Outcome::Completed(c) = &r.outcome
            {
                for (loc, _) in &c.open {
                    let shown = loc.to_string();
                    let names = match loc {
                        Loc::Reg { name, idx } => {
                            shown.starts_with(name.as_str()) && shown.contains(&format!("[{idx}]"))
                        }
                        Loc::Mem { space, addr, .. } => {
                            shown.starts_with(space.name()) && shown.contains(&format!("{addr:#x}"))
                        }
                    };
                    if !names {
                        problems.push(format!(
                            "{} under {name}: open location {loc:?} is shown as `{shown}`",
                            case.id
                        ));
                    }
                }
            }
            // A4: where the instruction's NaN bits are not exact (`float.nan_result = any`, or
            // `canonical_single` beyond f32) each NaN result in memory (each half of an F16x2)
            // is open, checked by class only (generated cases' expectations say `nan` there,
            // `generate.rs`); where they are exact, nothing in memory is open.
            if let Some(r) = &reference
                && let (Outcome::Completed(c), Some(lowered)) = (&r.outcome, &r.lowered)
                && let Instr::Mem(m) = &lowered.instr
                && let Some(f) = m.ty.float_format()
            {
                let bytes = m.ty.bytes();
                let width = f.bits();
                let parts = if m.ty == DataType::F16x2 { 2 } else { 1 };
                let any = !m.env.nan_exact;
                let addrs: BTreeSet<u64> = m
                    .accesses
                    .iter()
                    .filter(|a| a.fault.is_none() && a.addr % bytes == 0)
                    .map(|a| a.addr)
                    .collect();
                let mut want = BTreeSet::new();
                for &addr in &addrs {
                    let Some(v) = c.state.memory(m.space).read(addr, bytes) else {
                        continue;
                    };
                    for p in 0..parts {
                        if any && float::is_nan(f, (v >> (p * width)) & mask(width)) {
                            want.insert((addr, p * width));
                        }
                    }
                }
                let got: BTreeSet<(u64, u32)> = c
                    .open
                    .iter()
                    .filter_map(|(l, fl)| match (l, &fl.allowed) {
                        (Loc::Mem { addr, .. }, Allowed::AnyNan(_)) if addrs.contains(addr) => {
                            Some((*addr, fl.lo))
                        }
                        _ => None,
                    })
                    .collect();
                if want != got {
                    problems.push(format!(
                        "{} under {name}: NaN results open by class {got:?}, want {want:?} (A4, NaN bits exact: {})",
                        case.id, m.env.nan_exact
                    ));
                }
            }
            let opts = Options {
                profile,
                race_budget: atomcts_reference::race::DEFAULT_BUDGET,
                cases_arg: path.display().to_string(),
                adapter_arg: " --adapter reference".into(),
            };
            if let Some(problem) = refuses_to_guess(case, &opts.profile) {
                problems.push(problem);
            }
            let r = run_case(case, &mut ReferenceAdapter, &opts);
            let bad = match r.status {
                Status::Pass | Status::NotApplicable => false,
                // The reference supports everything; nothing may be skipped or undecided.
                _ => true,
            };
            if bad {
                let details: Vec<String> = r
                    .findings
                    .iter()
                    .map(|f| {
                        format!(
                            "      {}: expected {}, observed {} [{}]",
                            f.location, f.expected, f.observed, f.note
                        )
                    })
                    .collect();
                problems.push(format!(
                    "{:?} {} under {name} ({})\n{}",
                    r.status,
                    r.id,
                    r.at,
                    details.join("\n")
                ));
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        // Printed as text (the error itself is shown escaped by the harness).
        eprintln!("{}", problems.join("\n"));
        Err(format!("{} problem(s) in {}", problems.len(), path.display()).into())
    }
}

/// FORMAT.md X2-X7, Intel's text: the visa-asm adapter hands Intel's tools each vISA case's
/// instruction printed by `intel::to_intel_text` (under IGC's names and its harness's `X<n>`),
/// so the printed line must read back as the same instruction; only PREDEC, which has no Intel
/// name (X3), may be refused. A case written in Intel's form prints back as itself, byte offsets
/// and Address region included (X6, X7), so what the adapter sends is what the case says.
fn intel_round_trip(id: &str, asm: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for naming in [intel::Naming::igc(), intel::Naming::new("X", 0)] {
        if let Ok(i) = visa::parse(asm) {
            let predec = matches!(&i, Instruction::DwordAtomic(d) if d.op == Op::Predec);
            match (intel::to_intel_text(&i, &naming), predec) {
                (Ok(t), false) => {
                    let back = intel::parse_with(&t, &naming).map(|l| l.instr);
                    if back.as_ref() != Ok(&i) {
                        problems.push(format!(
                            "{id}: `{asm}` prints in Intel's text as `{t}`, which reads back as {back:?}"
                        ));
                    }
                }
                (Err(_), true) => {}
                (t, _) => problems.push(format!(
                    "{id}: `{asm}` printed in Intel's text gives {t:?} (only PREDEC has no Intel name)"
                )),
            }
        }
    }
    if let Ok(l) = intel::parse(asm) {
        let t = l.to_intel_text(&intel::Naming::igc());
        if t.as_ref().map(|t| intel::parse(t)) != Ok(Ok(l.clone())) {
            problems.push(format!(
                "{id}: Intel's line `{asm}` prints back as {t:?}, which does not read as it"
            ));
        }
    }
    problems
}

/// FORMAT.md, "Limits" of concurrent cases, kept exactly around one case: `iterations` in
/// 1..=65536; at most 2^22 read-modify-writes in all (accesses per iteration times iterations,
/// summed over the instructions); at most 2^30 bytes copied by one serialization (iterations
/// times the allocated memory plus 4 KiB, summed). The case's instructions are repeated and their
/// memory enlarged to land on each limit and one step past it; the reference must accept the
/// one and refuse the other as a limit. A `cas_loop` is refused on a float or F16x2 type, with a
/// numeric compare, with an update outside the list, or an operand wider than the type; an
/// instruction that writes its own operands cannot be repeated.
fn concurrent_limits(case: &atomcts::corpus::case::Case) -> Vec<String> {
    use atomcts_reference::ModelError;
    use atomcts_reference::concurrent::{
        CasLoop, LOOP_UPDATES, MAX_COPIED, MAX_ITERATIONS, MAX_OPERATIONS, Part, check_loop,
        execute_serial, lower_all,
    };
    use atomcts_reference::ir::Lowering;
    let mut problems = Vec::new();
    let profile = Profile::default();
    let Ok(states) = atomcts::run::concurrent::build_states(case) else {
        return vec![format!("{}: its states do not build", case.id)];
    };
    let programs: Vec<Program> = match case
        .concurrent
        .iter()
        .map(|i| Program::parse(case.dialect, &i.asm))
        .collect()
    {
        Ok(p) => p,
        Err(e) => return vec![format!("{}: {e:?}", case.id)],
    };
    let parts = atomcts::run::concurrent::parts(case, &programs, &states);
    let lowered = match lower_all(&parts, &profile) {
        Ok(l) => l,
        Err(e) => return vec![format!("{}: {e}", case.id)],
    };
    let mems: Vec<&atomcts_reference::ir::MemInstr> = lowered
        .iter()
        .filter_map(|l| match &l.instr {
            Instr::Mem(m) => Some(m),
            _ => None,
        })
        .collect();
    if mems.len() != parts.len() {
        return vec![format!(
            "{}: an instruction lowers to no memory access",
            case.id
        )];
    }
    let accesses: Vec<u64> = mems.iter().map(|m| m.accesses.len() as u64).collect();
    // What FORMAT.md admits, counted here from the parts themselves.
    let admitted = |ps: &[Part<'_>], acc: &[u64]| {
        let mut ops = 0u64;
        let mut copied = 0u64;
        for (p, a) in ps.iter().zip(acc) {
            let bytes = p.state.global.allocated_bytes() + p.state.shared.allocated_bytes() + 4096;
            ops += a * u64::from(p.iterations);
            copied += bytes * u64::from(p.iterations);
            if !(1..=MAX_ITERATIONS).contains(&p.iterations)
                || ops > MAX_OPERATIONS
                || copied > MAX_COPIED
            {
                return false;
            }
        }
        true
    };
    let try_parts = |what: &str, ps: &[Part<'_>], acc: &[u64]| {
        let want = admitted(ps, acc);
        match (want, lower_all(ps, &profile)) {
            (true, Ok(_)) | (false, Err(ModelError::Limit(_))) => None,
            (_, got) => Some(format!(
                "{}: {what}: FORMAT.md {} it, the reference answers {:?}",
                case.id,
                if want { "admits" } else { "refuses" },
                got.map(|l| l.len())
            )),
        }
    };
    let with = |k: usize, iterations: u32| {
        let mut v = parts.clone();
        v[k].iterations = iterations;
        v
    };
    for n in [0, 1, MAX_ITERATIONS, MAX_ITERATIONS + 1] {
        problems.extend(try_parts(
            &format!("iterations = {n}"),
            &with(0, n),
            &accesses,
        ));
    }
    // The operation limit: copies of the first instruction, `n` iterations each, exactly 2^22
    // operations, then one iteration more.
    let a = accesses[0];
    if a > 0 && MAX_OPERATIONS.is_multiple_of(a) {
        let per = MAX_OPERATIONS / a;
        let n = per.min(u64::from(MAX_ITERATIONS));
        if per.is_multiple_of(n) {
            let copies = (per / n) as usize;
            let mut ps = vec![
                Part {
                    iterations: n as u32,
                    ..parts[0].clone()
                };
                copies
            ];
            let acc = vec![a; copies + 1];
            problems.extend(try_parts("operations = 2^22", &ps, &acc));
            ps.push(Part {
                iterations: 1,
                ..parts[0].clone()
            });
            problems.extend(try_parts("operations = 2^22 + one iteration", &ps, &acc));
        }
    }
    // The copy limit: the first instruction's memory enlarged so that 65536 iterations copy
    // exactly 2^30 bytes, then one byte more memory.
    let st = parts[0].state;
    let held = st.global.allocated_bytes() + st.shared.allocated_bytes() + 4096;
    let per_iteration = MAX_COPIED / u64::from(MAX_ITERATIONS);
    if held < per_iteration {
        for extra in [per_iteration - held, per_iteration - held + 1] {
            let mut bigger = st.clone();
            let top = st.global.ranges().map(|(b, l)| b + l).max().unwrap_or(0);
            if bigger
                .global
                .alloc(top.next_multiple_of(4096) + 4096, extra)
                .is_err()
            {
                problems.push(format!("{}: cannot add {extra} bytes", case.id));
                continue;
            }
            let ps = [Part {
                state: &bigger,
                iterations: MAX_ITERATIONS,
                ..parts[0].clone()
            }];
            problems.extend(try_parts(
                &format!("the first instruction alone, {extra} more bytes, 65536 iterations"),
                &ps,
                &accesses,
            ));
        }
    }
    // A compare-and-swap loop only where FORMAT.md allows one.
    for (k, (p, m)) in parts.iter().zip(&mems).enumerate() {
        let Some(lp) = p.cas_loop else { continue };
        let mut refuse = |what: &str, m: &atomcts_reference::ir::MemInstr, lp: CasLoop| {
            if check_loop(k, m, lp).is_ok() {
                problems.push(format!(
                    "{}: instruction {k}: a loop {what} is accepted",
                    case.id
                ));
            }
        };
        for ty in [DataType::F32, DataType::F16x2] {
            let mut f = (*m).clone();
            f.ty = ty;
            f.env.compare = atomcts_reference::ir::Compare::Bitwise;
            refuse(&format!("on {}", ty.name()), &f, lp);
        }
        let mut numeric = (*m).clone();
        numeric.env.compare = atomcts_reference::ir::Compare::Numeric { daz: false };
        refuse("with a numeric compare", &numeric, lp);
        for update in [AtomicOp::Cas, AtomicOp::Exch, AtomicOp::Inc] {
            if !LOOP_UPDATES.contains(&update) {
                refuse(
                    &format!("updating by {}", update.name()),
                    m,
                    CasLoop { update, ..lp },
                );
            }
        }
        if m.ty.bits() < 64 {
            let operand = lp.operand | (1u64 << m.ty.bits());
            refuse(
                "with an operand wider than its type",
                m,
                CasLoop { operand, ..lp },
            );
        }
    }
    // A loop whose address is its own destination moves between attempts: refused as a loop
    // (accepted as one compare-and-swap). SASS: the CAS's Rd becomes its address register;
    // MSL: the buffer index becomes the `expected` variable, set to 0 in every lane.
    for (k, (p, m)) in parts.iter().zip(&mems).enumerate() {
        if p.cas_loop.is_none() {
            continue;
        }
        let asm = &case.concurrent[k].asm;
        let mut state = p.state.clone();
        let variant = match case.dialect {
            Dialect::Sass => {
                let (op, rest) = asm.split_once(' ').unwrap();
                let (_, rest) = rest.split_once(',').unwrap();
                let addr = rest.split(['[', ']']).nth(1).unwrap().trim();
                format!("{op} {addr},{rest}")
            }
            Dialect::Msl => {
                let mut expected = None;
                for a in &m.accesses {
                    if let atomcts_reference::ir::Dest::CasWeak { expected: e, .. } = &a.dst {
                        state.set_field(&e.name, e.idx, e.lo, e.bits, 0).unwrap();
                        expected = Some(e.name.clone());
                    }
                }
                let (head, tail) = asm.split_once('[').unwrap();
                let (_, tail) = tail.split_once(']').unwrap();
                format!("{head}[{}]{tail}", expected.unwrap())
            }
            Dialect::Visa => continue,
        };
        let Ok(program) = Program::parse(case.dialect, &variant) else {
            problems.push(format!("{}: `{variant}` does not parse", case.id));
            continue;
        };
        let moving = Part {
            program: &program,
            state: &state,
            iterations: 1,
            cas_loop: p.cas_loop,
        };
        let once = Part {
            cas_loop: None,
            ..moving.clone()
        };
        match (lower_all(&[moving], &profile), lower_all(&[once], &profile)) {
            (Err(ModelError::BadState(why)), Ok(_)) if why.contains("cas_loop's address") => {}
            (looped, single) => problems.push(format!(
                "{}: `{variant}` as a loop: {:?}; once: {:?}",
                case.id,
                looped.map(|l| l.len()),
                single.map(|l| l.len())
            )),
        }
    }
    // Repeating an instruction that writes its own operands: after one iteration of each (in
    // the serial order), an instruction that lowers to other accesses than at first cannot run
    // a second (a loop: other addresses).
    let every = |iterations: u32| -> Vec<Part<'_>> {
        parts
            .iter()
            .map(|p| Part {
                iterations,
                ..p.clone()
            })
            .collect()
    };
    let once = every(1);
    let Ok(Ok(after)) = execute_serial(&once, &profile, &atomcts_reference::exec::execute) else {
        problems.push(format!(
            "{}: one iteration of each does not complete",
            case.id
        ));
        return problems;
    };
    // A lane reports a returned value exactly where its destination keeps one (FORMAT.md:
    // a discarded result is not observed), loops included.
    for (k, m) in mems.iter().enumerate() {
        for (i, a) in m.accesses.iter().enumerate() {
            let kept = !matches!(a.dst, atomcts_reference::ir::Dest::None);
            if after.returned[k][0][i].ret.is_some() != kept {
                problems.push(format!(
                    "{}: instruction {k} lane {}: {} destination, the serial run reports {:?}",
                    case.id,
                    a.lane,
                    if kept { "a kept" } else { "a discarded" },
                    after.returned[k][0][i].ret
                ));
            }
        }
    }
    // Every final state carries the final memory.
    let differs = once.iter().enumerate().any(|(k, p)| {
        let same = match p.program.lower(&after.states[k], &profile) {
            Ok(Lowering::Run(l)) => match (&l.instr, mems[k]) {
                (Instr::Mem(now), first) if p.cas_loop.is_some() => now
                    .accesses
                    .iter()
                    .map(|x| x.addr)
                    .eq(first.accesses.iter().map(|x| x.addr)),
                (Instr::Mem(now), first) => now.accesses == first.accesses,
                _ => false,
            },
            _ => false,
        };
        !same
    });
    let twice = every(2);
    match (
        differs,
        execute_serial(&twice, &profile, &atomcts_reference::exec::execute),
    ) {
        (true, Err(ModelError::BadState(_))) | (false, Ok(Ok(_))) => {}
        (_, got) => problems.push(format!(
            "{}: two iterations of each (an instruction {} its own operands): {:?}",
            case.id,
            if differs { "writes" } else { "does not write" },
            got.map(|r| r.is_ok())
        )),
    }
    problems
}

datatest_stable::harness! {
    { test = corpus_file, root = "../spec-cases", pattern = r"\.toml$" },
}
