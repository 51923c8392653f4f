//! The PTX back end against NVIDIA's assembler (issue 11): every kernel the emitter makes for
//! the corpus (every case, every named profile and probe option) is assembled by `ptxas` for
//! sm_50, sm_70 and sm_90, and for sm_50 the ATOM word ptxas made of each global-memory
//! kernel is decoded (`sass::encoding`) and must be the op and size the IR asks for. Planted
//! emitter bugs are caught: a malformed `atom` by ptxas, a well-formed wrong one by the decode.
//! Each kernel's batched form (`emit::emit_batched`, issue 31: a CTA per case) is assembled and
//! decoded the same way, and kernels of one shape have one batched form.
//!
//! The concurrent cases (issue 12) likewise: every concurrent case's kernel (`concurrent.rs`:
//! one CTA per instruction) under every named profile is assembled for the three targets,
//! and for sm_50 the ATOM words ptxas made are exactly the instructions' ops and sizes plus the
//! kernel's one 64-bit CAS of its start time; a planted split read-modify-write
//! (`Plant::SplitRmw`: a load and a store) loses its ATOM words and is caught.
//!
//! `ptxas` comes from `$PTXAS`, else `target/venv` (PyPI `nvidia-cuda-nvcc-cu12`, installed by
//! `tools/install-implementations.sh nvidia`, which `.ci/run` runs first), else `PATH`. Without it the tests fail under `CI=true` and otherwise print why
//! they did not run.

use atomcts::corpus::case::{Case, load};
use atomcts::corpus::state::build_state;
use atomcts::run::concurrent::build_states;
use atomcts_adapters::back::ptx::concurrent as ptx_concurrent;
use atomcts_adapters::back::ptx::emit::{self, Plant};
use atomcts_adapters::plan::{ConcurrentPlan, Plan};
use atomcts_reference::Profile;
use atomcts_reference::concurrent::{Part, lower_all};
use atomcts_reference::ir::{AtomicOp, Lowering};
use atomcts_reference::program::Program;
use atomcts_reference::sass::atom::{Op, Size};
use atomcts_reference::sass::encoding;
use atomcts_reference::types::{DataType, Space};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// The ptxas to use, or why there is none.
fn ptxas() -> Result<PathBuf, String> {
    let works = |p: &Path| {
        Command::new(p)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if let Some(p) = std::env::var_os("PTXAS") {
        let p = PathBuf::from(p);
        return if works(&p) {
            Ok(p)
        } else {
            Err(format!("PTXAS={} does not run", p.display()))
        };
    }
    let lib = workspace().join("target/venv/lib");
    if let Ok(dirs) = std::fs::read_dir(&lib) {
        for d in dirs.flatten() {
            let p = d.path().join("site-packages/nvidia/cuda_nvcc/bin/ptxas");
            if works(&p) {
                return Ok(p);
            }
        }
    }
    let p = PathBuf::from("ptxas");
    if works(&p) {
        return Ok(p);
    }
    Err(
        "ptxas not found: set PTXAS, or `tools/install-implementations.sh nvidia` (.ci/run does)"
            .into(),
    )
}

/// The ptxas to use; `None` (with the reason printed) only outside CI.
fn ptxas_or_skip(test: &str) -> Option<PathBuf> {
    match ptxas() {
        Ok(p) => Some(p),
        Err(why) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("{test}: {why} (CI=true: ptxas must be installed)")
        }
        Err(why) => {
            eprintln!("{test}: NOT RUN: {why}");
            None
        }
    }
}

/// Every plan the corpus gives: each case under every named profile and each of its probe
/// options (as the corpus tests check it). Cases that do not lower to a plan are counted.
fn corpus_plans() -> (Vec<(String, Plan)>, BTreeMap<String, usize>) {
    let loaded = load(&workspace().join("spec-cases"));
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let mut plans = Vec::new();
    let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
    for case in &loaded.cases {
        for profile in profiles(case) {
            let Ok(state) = build_state(case) else {
                *skipped.entry("state does not build".into()).or_default() += 1;
                continue;
            };
            let Ok(program) = Program::parse(case.dialect, &case.asm) else {
                *skipped.entry("illegal form".into()).or_default() += 1;
                continue;
            };
            match program.lower(&state, &profile) {
                Ok(Lowering::Run(l)) => match Plan::new(&l, &state) {
                    Ok(p) => plans.push((format!("{} [{}]", case.id, profile.name), p)),
                    Err(_) => *skipped.entry("no plan (fault, UB)".into()).or_default() += 1,
                },
                _ => *skipped.entry("invalid/unspecified".into()).or_default() += 1,
            }
        }
    }
    (plans, skipped)
}

fn profiles(case: &Case) -> Vec<Profile> {
    if let Some(knob) = &case.probe {
        return case
            .expect_if
            .iter()
            .filter_map(|(option, _, _)| {
                let mut p = Profile::default();
                p.set(knob, option).ok()?;
                p.name = format!("{knob}={option}");
                Some(p)
            })
            .collect();
    }
    Profile::names()
        .filter_map(|n| Profile::named(n).ok())
        .collect()
}

/// The ATOM op and size an sm_50 word must have for an IR op and type on global memory.
fn expected_sass(op: AtomicOp, ty: DataType) -> Option<(Op, Size)> {
    let wide = ty.bits() == 64;
    let int = |w: bool| if w { Size::U64 } else { Size::U32 };
    Some(match op {
        AtomicOp::Add => (
            Op::Add,
            match ty {
                DataType::U32 => Size::U32,
                DataType::S32 => Size::S32,
                DataType::U64 | DataType::S64 => Size::U64,
                DataType::F32 => Size::F32FtzRn,
                _ => return None,
            },
        ),
        AtomicOp::Min | AtomicOp::Max => (
            if op == AtomicOp::Min {
                Op::Min
            } else {
                Op::Max
            },
            match ty {
                DataType::U32 => Size::U32,
                DataType::S32 => Size::S32,
                DataType::U64 => Size::U64,
                DataType::S64 => Size::S64,
                _ => return None,
            },
        ),
        AtomicOp::IncBounded => (Op::Inc, Size::U32),
        AtomicOp::DecBounded => (Op::Dec, Size::U32),
        AtomicOp::And => (Op::And, int(wide)),
        AtomicOp::Or => (Op::Or, int(wide)),
        AtomicOp::Xor => (Op::Xor, int(wide)),
        AtomicOp::Exch => (Op::Exch, int(wide)),
        AtomicOp::Cas => (Op::Cas, int(wide)),
        _ => return None,
    })
}

/// The instruction words of the `.text.<kernel>` section of a cubin (ELF64, little-endian).
fn text_words(elf: &[u8]) -> Vec<u64> {
    let u16_at = |o: usize| u16::from_le_bytes([elf[o], elf[o + 1]]) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(elf[o..o + 4].try_into().unwrap()) as usize;
    let u64_at = |o: usize| u64::from_le_bytes(elf[o..o + 8].try_into().unwrap()) as usize;
    let (shoff, shentsize, shnum, shstrndx) =
        (u64_at(0x28), u16_at(0x3a), u16_at(0x3c), u16_at(0x3e));
    let section = |i: usize| {
        let h = shoff + i * shentsize;
        (u32_at(h), u64_at(h + 24), u64_at(h + 32))
    };
    let (_, stroff, _) = section(shstrndx);
    let name = |n: usize| {
        let s = &elf[stroff + n..];
        String::from_utf8_lossy(&s[..s.iter().position(|b| *b == 0).unwrap()]).into_owned()
    };
    let want = format!(".text.{}", emit::KERNEL_NAME);
    (0..shnum)
        .map(section)
        .find(|(n, _, _)| name(*n) == want)
        .map(|(_, off, size)| {
            elf[off..off + size]
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
                .collect()
        })
        .unwrap_or_default()
}

/// What assembling the corpus's kernels found.
#[derive(Default, Debug)]
struct Report {
    /// Distinct kernels assembled, per target.
    assembled: BTreeMap<u32, usize>,
    /// Distinct batched kernels (issue 31) among those assembled, all targets.
    batched: usize,
    /// Kernels ptxas refused: target, case, atom, message.
    refused: Vec<String>,
    /// sm_50 global kernels whose ATOM word is not the IR's op and size.
    mismatched: Vec<String>,
    /// sm_50 global kernels whose word was decoded and matched.
    decoded: usize,
    /// Plans the emitter declined, by reason (target numbers stripped).
    declined: BTreeMap<String, usize>,
    /// IR (op, type, space) rows that produced a kernel.
    rows: BTreeSet<(AtomicOp, DataType, Space)>,
}

fn assemble_corpus(ptxas: &Path, targets: &[u32], plant: Plant) -> Report {
    let (plans, _) = corpus_plans();
    let dir = std::env::temp_dir().join(format!("atomcts-ptx-{}-{:?}", std::process::id(), plant));
    std::fs::create_dir_all(&dir).unwrap();
    let mut report = Report::default();
    for &sm in targets {
        // One run of ptxas per distinct kernel text.
        let mut distinct: BTreeMap<String, (String, &Plan, String)> = BTreeMap::new();
        // Each single kernel's batched form (issue 31): one per shape too.
        let mut batched_of: BTreeMap<String, String> = BTreeMap::new();
        for (id, plan) in &plans {
            match emit::emit(plan, sm, plant) {
                Ok(k) => {
                    report.rows.insert((plan.op, plan.ty, plan.space));
                    let b = emit::emit_batched(plan, sm, plant)
                        .unwrap_or_else(|e| panic!("{id}: no batched form: {e}"));
                    assert_eq!(b.atom, k.atom, "{id}");
                    let same = batched_of
                        .entry(k.source.clone())
                        .or_insert(b.source.clone());
                    assert_eq!(*same, b.source, "{id}: one shape, two batched kernels");
                    report.batched += usize::from(!distinct.contains_key(&b.source));
                    distinct
                        .entry(b.source)
                        .or_insert_with(|| (id.clone(), plan, k.atom.clone()));
                    distinct
                        .entry(k.source)
                        .or_insert_with(|| (id.clone(), plan, k.atom));
                }
                Err(why) => {
                    let reason = why.0.replace(&format!("sm_{sm}"), "sm_<target>");
                    *report.declined.entry(reason).or_default() += 1;
                }
            }
        }
        for (n, (source, (id, plan, atom))) in distinct.iter().enumerate() {
            let ptx = dir.join(format!("k{sm}_{n}.ptx"));
            let cubin = dir.join(format!("k{sm}_{n}.cubin"));
            std::fs::write(&ptx, source).unwrap();
            let out = Command::new(ptxas)
                .arg(format!("-arch=sm_{sm}"))
                .arg(&ptx)
                .arg("-o")
                .arg(&cubin)
                .output()
                .expect("ptxas runs");
            if !out.status.success() {
                report.refused.push(format!(
                    "sm_{sm} {id}: `{atom}`: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
                continue;
            }
            *report.assembled.entry(sm).or_default() += 1;
            if sm != 50 || plan.space != Space::Global {
                continue;
            }
            let Some(want) = expected_sass(plan.op, plan.ty) else {
                continue;
            };
            let elf = std::fs::read(&cubin).unwrap();
            // Maxwell: a control word, then three instructions.
            let atoms: Vec<_> = text_words(&elf)
                .iter()
                .enumerate()
                .filter(|(i, _)| i % 4 != 0)
                .filter_map(|(_, w)| encoding::decode(*w).ok())
                .collect();
            match atoms.as_slice() {
                [i] if i.extended && (i.op, i.size) == want => report.decoded += 1,
                other => report.mismatched.push(format!(
                    "{id}: `{atom}` should be ATOM.E.{}.{}, ptxas made {:?}",
                    want.0.name(),
                    want.1.spelling(),
                    other.iter().map(|i| i.nvdisasm()).collect::<Vec<_>>()
                )),
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    report
}

#[test]
fn ptxas_accepts_every_corpus_kernel_and_sm50_words_are_the_ir_ops() {
    let Some(ptxas) = ptxas_or_skip("ptx_backend") else {
        return;
    };
    let r = assemble_corpus(&ptxas, &[50, 70, 90], Plant::None);
    eprintln!("assembled per target: {:?}", r.assembled);
    eprintln!("sm_50 ATOM words decoded and matched: {}", r.decoded);
    eprintln!("batched kernels among them: {}", r.batched);
    // Every shape's batched form (issue 31) is assembled (and decoded for sm_50) as well.
    assert!(r.batched > 0, "no batched kernel reached ptxas");
    for (why, n) in &r.declined {
        eprintln!("not applicable ({n}): {why}");
    }
    assert!(
        r.refused.is_empty(),
        "ptxas refused:\n{}",
        r.refused.join("\n")
    );
    assert!(
        r.mismatched.is_empty(),
        "wrong ATOM:\n{}",
        r.mismatched.join("\n")
    );
    // Every op of the SASS table that PTX has, and the float adds, reach ptxas.
    for (op, ty) in [
        (AtomicOp::Add, DataType::U32),
        (AtomicOp::Add, DataType::S32),
        (AtomicOp::Add, DataType::U64),
        (AtomicOp::Add, DataType::F32),
        (AtomicOp::Add, DataType::F64),
        (AtomicOp::Add, DataType::F16x2),
        (AtomicOp::Min, DataType::S64),
        (AtomicOp::Max, DataType::U64),
        (AtomicOp::Min, DataType::F16x2),
        (AtomicOp::IncBounded, DataType::U32),
        (AtomicOp::DecBounded, DataType::U32),
        (AtomicOp::Exch, DataType::U64),
        (AtomicOp::Cas, DataType::U32),
        (AtomicOp::Cas, DataType::U64),
        (AtomicOp::Xor, DataType::U64),
    ] {
        assert!(
            r.rows.contains(&(op, ty, Space::Global)),
            "{} {} on global memory never reached ptxas",
            op.name(),
            ty.name()
        );
    }
    assert!(
        r.rows.iter().any(|(_, _, s)| *s == Space::Shared),
        "no shared-memory kernel"
    );
    // The sm_60/sm_90 instructions are declined for older targets, and only there.
    assert!(r.declined.keys().any(|k| k.contains("needs sm_60")));
    assert!(r.declined.keys().any(|k| k.contains("needs sm_90")));
    assert!(r.decoded >= 15, "{}", r.decoded);
    for sm in [50, 70, 90] {
        assert!(
            r.assembled.get(&sm).copied().unwrap_or(0) >= 20,
            "{:?}",
            r.assembled
        );
    }
}

#[test]
fn a_planted_wrong_but_valid_atom_is_caught_by_the_sm50_decode() {
    let Some(ptxas) = ptxas_or_skip("ptx_backend planted min_as_max") else {
        return;
    };
    let r = assemble_corpus(&ptxas, &[50], Plant::MinAsMax);
    assert!(r.refused.is_empty(), "{:?}", r.refused);
    assert!(
        r.mismatched.iter().any(|m| m.contains("ATOM.E.MIN")),
        "atom.max for atom.min went unnoticed: {:?}",
        r.mismatched
    );
}

#[test]
fn a_planted_cross_case_write_is_valid_ptx_in_the_batched_form_only() {
    let Some(ptxas) = ptxas_or_skip("ptx_backend planted cross_case_write") else {
        return;
    };
    // ptxas takes it (so only the guard check, on a GPU, can catch it: tools/nvidia/gpu-run.sh).
    let r = assemble_corpus(&ptxas, &[50, 90], Plant::CrossCaseWrite);
    assert!(r.refused.is_empty(), "{:?}", r.refused);
    assert!(r.mismatched.is_empty(), "{:?}", r.mismatched);
    let (plans, _) = corpus_plans();
    let (mut alone, mut batched) = (0, 0);
    for (id, plan) in &plans {
        let (Ok(k), Ok(p)) = (
            emit::emit(plan, 90, Plant::None),
            emit::emit(plan, 90, Plant::CrossCaseWrite),
        ) else {
            continue;
        };
        assert_eq!(k, p, "{id}: the plant changed a single kernel");
        alone += 1;
        let b = emit::emit_batched(plan, 90, Plant::CrossCaseWrite).unwrap();
        assert!(b.source.contains("st.global.u8 [%rd17]"), "{id}");
        assert!(
            !emit::emit_batched(plan, 90, Plant::None)
                .unwrap()
                .source
                .contains("%rd17"),
            "{id}"
        );
        batched += 1;
    }
    assert!(alone > 0 && batched == alone);
}

#[test]
fn a_planted_malformed_atom_is_refused_by_ptxas() {
    let Some(ptxas) = ptxas_or_skip("ptx_backend planted inc_as_u64") else {
        return;
    };
    let r = assemble_corpus(&ptxas, &[70], Plant::IncAsU64);
    assert!(
        r.refused.iter().any(|m| m.contains("atom.global.inc.u64")),
        "atom.inc.u64 went through ptxas: {:?}",
        r.refused
    );
}

/// Found on a real H100 (2026-11-22): the 32-bit `atom` wrote its result into `%r2`, the
/// register holding the `bytes` parameter, so the shared-memory kernels' copy-out loop ran past
/// the buffer and faulted (CUDA_ERROR_ILLEGAL_ADDRESS). ptxas accepts such a kernel, so this is
/// checked here for every corpus kernel: the registers loaded from parameters are written by
/// their `ld.param` (and the pointers' `cvta`) only.
#[test]
fn parameter_registers_are_never_overwritten() {
    let (plans, _) = corpus_plans();
    let mut checked = 0;
    for (id, plan) in &plans {
        for sm in [50, 70, 90] {
            let Ok(k) = emit::emit(plan, sm, Plant::None) else {
                continue;
            };
            let mut params = Vec::new();
            for line in k.source.lines().map(str::trim) {
                let Some((opcode, rest)) = line.split_once(char::is_whitespace) else {
                    continue;
                };
                let dst = rest.split(',').next().unwrap_or("").trim();
                if opcode.starts_with("ld.param") {
                    params.push(dst.to_string());
                } else if !opcode.starts_with("cvta") && !opcode.starts_with("st.") {
                    assert!(
                        !params.iter().any(|p| p == dst),
                        "{id} sm_{sm}: `{line}` overwrites the parameter register {dst}\n{}",
                        k.source
                    );
                }
            }
            assert!(params.len() >= 3, "{id}: no parameters read");
            // The batched form: what its prologue sets from the CTA's row of `cases` (the
            // pointers moved to the case's, `n` and `bytes`) is never overwritten after it.
            let b = emit::emit_batched(plan, sm, Plant::None).unwrap();
            let (_, body) = b
                .source
                .split_once("ld.global.u32 %r2, [%rd13+20];")
                .unwrap_or_else(|| panic!("{id}: no batch prologue\n{}", b.source));
            for line in body.lines().map(str::trim) {
                let Some((opcode, rest)) = line.split_once(char::is_whitespace) else {
                    continue;
                };
                let dst = rest.split(',').next().unwrap_or("").trim();
                assert!(
                    opcode.starts_with("st.")
                        || !["%rd1", "%rd2", "%rd3", "%r1", "%r2"].contains(&dst),
                    "{id} sm_{sm}: `{line}` overwrites what the batch prologue set\n{}",
                    b.source
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 1000, "only {checked} kernels checked");
}

/// Every concurrent plan the corpus gives: each concurrent case under every named profile.
/// Cases that give no plan are counted by reason.
fn corpus_concurrent_plans() -> (Vec<(String, ConcurrentPlan)>, BTreeMap<String, usize>) {
    let loaded = load(&workspace().join("spec-cases"));
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let mut plans = Vec::new();
    let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
    for case in loaded.cases.iter().filter(|c| c.is_concurrent()) {
        let states = build_states(case).expect("a corpus case's states build");
        let programs: Vec<Program> = case
            .concurrent
            .iter()
            .map(|i| Program::parse(case.dialect, &i.asm).expect("a corpus case parses"))
            .collect();
        let iterations: Vec<u32> = case.concurrent.iter().map(|i| i.iterations).collect();
        let parts: Vec<Part<'_>> = programs
            .iter()
            .zip(&states)
            .zip(&iterations)
            .map(|((program, state), &iterations)| Part {
                program,
                state,
                iterations,
                cas_loop: None,
            })
            .collect();
        for profile in Profile::names().filter_map(|n| Profile::named(n).ok()) {
            let lowered = lower_all(&parts, &profile).expect("a corpus case lowers");
            match ConcurrentPlan::new(&lowered, &states, &iterations) {
                Ok(mut p) => {
                    // The case's compare-and-swap loops, as the adapter plans them.
                    p.loops = case
                        .concurrent
                        .iter()
                        .map(|i| i.cas_loop.as_ref().map(|(l, _)| *l))
                        .collect();
                    plans.push((format!("{} [{}]", case.id, profile.name), p))
                }
                Err(why) => {
                    // The instruction number and space name vary; the reason's kind does not.
                    let kind = why.0.split(':').nth(1).unwrap_or(&why.0).trim().to_string();
                    *skipped.entry(kind).or_default() += 1;
                }
            }
        }
    }
    (plans, skipped)
}

/// What assembling the corpus's concurrent kernels found.
#[derive(Default, Debug)]
struct ConcurrentReport {
    /// Distinct kernels assembled, per target.
    assembled: BTreeMap<u32, usize>,
    /// Kernels ptxas refused.
    refused: Vec<String>,
    /// sm_50 kernels whose ATOM words are not the instructions' ops.
    mismatched: Vec<String>,
    /// sm_50 kernels whose words were decoded and matched.
    decoded: usize,
    /// Plans the emitter declined, by reason.
    declined: BTreeMap<String, usize>,
    /// Case ids (with profile) that produced a kernel for sm_90.
    emitted: BTreeSet<String>,
}

fn assemble_concurrent_corpus(ptxas: &Path, targets: &[u32], plant: Plant) -> ConcurrentReport {
    let (plans, _) = corpus_concurrent_plans();
    let dir = std::env::temp_dir().join(format!(
        "atomcts-ptx-concurrent-{}-{:?}",
        std::process::id(),
        plant
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let mut report = ConcurrentReport::default();
    for &sm in targets {
        let mut distinct: BTreeMap<String, (String, &ConcurrentPlan, Vec<String>)> =
            BTreeMap::new();
        for (id, cp) in &plans {
            match ptx_concurrent::emit(cp, sm, plant, id) {
                Ok(k) => {
                    // The launch's arguments are the kernel's parameters (run.rs checks the
                    // same before launching).
                    assert_eq!(
                        ptx_concurrent::entry_params(&k.source),
                        ptx_concurrent::PARAMS
                            .iter()
                            .map(|p| (".u64".to_string(), p.to_string()))
                            .collect::<Vec<_>>(),
                        "{id}"
                    );
                    assert_eq!(k.grid as usize, cp.groups.len(), "{id}");
                    assert_eq!(
                        k.block as usize,
                        cp.groups.iter().map(|g| g.items.len()).max().unwrap(),
                        "{id}"
                    );
                    if sm == 90 {
                        report.emitted.insert(id.clone());
                    }
                    // The title (case id) is a comment: one kernel text per shape.
                    let text: String = k
                        .source
                        .lines()
                        .filter(|l| !l.starts_with("//"))
                        .collect::<Vec<_>>()
                        .join("\n");
                    distinct
                        .entry(text)
                        .or_insert_with(|| (id.clone(), cp, k.atoms));
                }
                Err(why) => {
                    let reason = why.0.replace(&format!("sm_{sm}"), "sm_<target>");
                    *report.declined.entry(reason).or_default() += 1;
                }
            }
        }
        for (n, (source, (id, cp, atoms))) in distinct.iter().enumerate() {
            let ptx = dir.join(format!("c{sm}_{n}.ptx"));
            let cubin = dir.join(format!("c{sm}_{n}.cubin"));
            std::fs::write(&ptx, source).unwrap();
            let out = Command::new(ptxas)
                .arg(format!("-arch=sm_{sm}"))
                .arg(&ptx)
                .arg("-o")
                .arg(&cubin)
                .output()
                .expect("ptxas runs");
            if !out.status.success() {
                report.refused.push(format!(
                    "sm_{sm} {id}: {atoms:?}: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
                continue;
            }
            *report.assembled.entry(sm).or_default() += 1;
            if sm != 50 {
                continue;
            }
            let Some(mut want) = cp
                .groups
                .iter()
                .map(|g| expected_sass(g.op, g.ty))
                .collect::<Option<BTreeSet<_>>>()
            else {
                continue;
            };
            // The start time's compare-and-swap.
            want.insert((Op::Cas, Size::U64));
            let elf = std::fs::read(&cubin).unwrap();
            let words: Vec<_> = text_words(&elf)
                .iter()
                .enumerate()
                .filter(|(i, _)| i % 4 != 0)
                .filter_map(|(_, w)| encoding::decode(*w).ok())
                .collect();
            let got: BTreeSet<_> = words.iter().map(|i| (i.op, i.size)).collect();
            if words.iter().all(|i| i.extended) && got == want {
                report.decoded += 1;
            } else {
                report.mismatched.push(format!(
                    "{id}: {atoms:?} should give {:?}, ptxas made {:?}",
                    want.iter()
                        .map(|(o, s)| format!("ATOM.E.{}.{}", o.name(), s.spelling()))
                        .collect::<Vec<_>>(),
                    words.iter().map(|i| i.nvdisasm()).collect::<Vec<_>>()
                ));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    report
}

#[test]
fn ptxas_accepts_every_concurrent_kernel_and_sm50_words_are_its_ops() {
    let Some(ptxas) = ptxas_or_skip("ptx_backend concurrent") else {
        return;
    };
    let (plans, skipped) = corpus_concurrent_plans();
    for (why, n) in &skipped {
        eprintln!("no concurrent plan ({n}): {why}");
    }
    let r = assemble_concurrent_corpus(&ptxas, &[50, 70, 90], Plant::None);
    eprintln!(
        "concurrent plans: {}; emitted for sm_90: {}; distinct kernels assembled per target: {:?}; sm_50 decoded and matched: {}",
        plans.len(),
        r.emitted.len(),
        r.assembled,
        r.decoded
    );
    for (why, n) in &r.declined {
        eprintln!("concurrent, not applicable ({n}): {why}");
    }
    assert!(
        r.refused.is_empty(),
        "ptxas refused:\n{}",
        r.refused.join("\n")
    );
    assert!(
        r.mismatched.is_empty(),
        "wrong ATOM:\n{}",
        r.mismatched.join("\n")
    );
    // Every SASS concurrent case runs on the PTX back end under the default profile: they
    // are all ops PTX has exactly.
    let loaded = load(&workspace().join("spec-cases"));
    let sass: Vec<&Case> = loaded
        .cases
        .iter()
        .filter(|c| c.is_concurrent() && c.dialect == atomcts_reference::program::Dialect::Sass)
        .collect();
    assert!(sass.len() >= 7, "{}", sass.len());
    for c in sass {
        let id = format!("{} [default]", c.id);
        assert!(r.emitted.contains(&id), "{id} gave no kernel");
    }
    for sm in [50, 70, 90] {
        assert!(
            r.assembled.get(&sm).copied().unwrap_or(0) >= 5,
            "{:?}",
            r.assembled
        );
    }
    assert!(r.decoded >= 5, "{}", r.decoded);
}

#[test]
fn a_planted_split_read_modify_write_loses_its_atom_words() {
    let Some(ptxas) = ptxas_or_skip("ptx_backend concurrent planted split_rmw") else {
        return;
    };
    let r = assemble_concurrent_corpus(&ptxas, &[50], Plant::SplitRmw);
    assert!(r.refused.is_empty(), "{:?}", r.refused);
    assert!(
        r.mismatched
            .iter()
            .any(|m| m.contains("add_against_negative_add")),
        "a load and a store for atom.add went unnoticed: {:?}",
        r.mismatched
    );
    // Every integer kernel loses its words (the corpus's concurrent cases are integer ones).
    assert!(r.mismatched.len() >= 5, "{r:?}");
}
