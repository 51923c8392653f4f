//! Batched launches on an NVIDIA GPU (issue 31, point 1): with `ATOMCTS_CUDA_BATCH=N` (N > 1)
//! the adapter is [`crate::Pipelined`] with a window of N cases. [`crate::Pipelined::send`]
//! lowers, plans and emits a case (answering at once what does not apply); the first
//! [`crate::Pipelined::receive`] with no answer ready runs every case sent so far, the cases of
//! one kernel text (one shape) as one launch: the kernel's [`emit::Form::Batched`] form, one
//! CTA per case, one upload and one readback per launch through the worker process. Each
//! case's flat buffer is its own region of one shared buffer, laid out and guarded as Vulkan's
//! ([`crate::back::regions`]); a changed guard makes the cases on both sides errors naming the
//! cross-case write, never a pass. Each case is then judged exactly as one run alone
//! (`ptx::finish`).
//!
//! Batching is off unless asked for (every case its own launch, the path the H100 runs of
//! BENCHMARKS.md took): the batched kernel is assembled by ptxas in the tests like every other,
//! but no GPU has run it yet. `tools/nvidia/gpu-run.sh` runs the corpus and a generated stream
//! both ways and compares the verdicts; batching becomes the default once a device has shown
//! them equal. Capturing dispatches for `atomcts repro` turns it off too (a reproducer is the
//! case alone).

use super::emit::{self, CASE_ROW_BYTES, KERNEL_NAME, Kernel};
use super::run::{Arg, Launch};
use super::{CudaAdapter, finish};
use crate::back::Backend;
use crate::back::regions::{GUARD_BYTES, REGION_ALIGN, Region, cross_case_errors, image, layout};
use crate::plan::Plan;
use crate::{AdapterError, AdapterErrorKind, Observation, Request};
use std::sync::Arc;

/// The most cases one batched launch holds (`ATOMCTS_CUDA_BATCH`'s largest window).
pub const CUDA_WINDOW: usize = 1024;

/// The most bytes of cases' memory (regions and guards) one batched launch uploads; more cases
/// of the shape wait for the next launch.
pub const CUDA_MAX_BATCH_BYTES: u64 = 16 << 20;

/// The environment variable that sets the window: unset, empty or `1`, every case alone; `N`
/// up to [`CUDA_WINDOW`], batches of up to N cases.
pub const BATCH_VAR: &str = "ATOMCTS_CUDA_BATCH";

/// The window `ATOMCTS_CUDA_BATCH` asks for (1, no batching, when unset), or why it is not one.
pub fn window_from_env() -> Result<usize, String> {
    crate::back::window_from_env(BATCH_VAR, 1, CUDA_WINDOW)
}

/// What a case's launch left: its flat buffer after it and each thread's returned value.
pub type Ran = (Vec<u8>, Vec<u64>);

/// A case's answer from its launch, and the program printed for it.
type CaseAnswer = (Result<Ran, AdapterErrorKind>, Last);

/// One case of a batched launch: its items (offset, src0, src1 per thread, [`emit::items`]) and
/// its flat buffer's bytes before the launch.
#[derive(Clone, Copy, Debug)]
pub struct BatchCase<'a> {
    /// Three u64 per thread.
    pub items: &'a [u64],
    /// The flat buffer of the plan's space.
    pub mem: &'a [u8],
}

/// A batched launch and what its answer is checked against: each case's region of `mem` and
/// the bytes uploaded there.
#[derive(Clone, Debug)]
pub struct Batch {
    /// The launch: `mem` (the guarded shared buffer), `items`, `old`, `cases` (a row of
    /// [`CASE_ROW_BYTES`] per CTA).
    pub launch: Launch,
    /// Each case's region of `mem`.
    pub regions: Vec<Region>,
    /// `mem` as uploaded.
    pub before: Vec<u8>,
    /// Each case's threads.
    pub threads: Vec<usize>,
}

/// The launch of `kernel` (its [`emit::Form::Batched`] form) over `cases`, one CTA each, as
/// many threads per CTA as the largest case has.
pub fn launch(kernel: &Kernel, cases: &[BatchCase<'_>]) -> Batch {
    let lens: Vec<u64> = cases.iter().map(|c| c.mem.len() as u64).collect();
    let (regions, total) = layout(&lens, REGION_ALIGN);
    let bytes: Vec<&[u8]> = cases.iter().map(|c| c.mem).collect();
    let before = image(&regions, total, &bytes);
    let threads: Vec<usize> = cases.iter().map(|c| c.items.len() / 3).collect();
    let all: usize = threads.iter().sum();
    let mut items = Vec::with_capacity(24 * all);
    let mut rows = Vec::with_capacity(CASE_ROW_BYTES as usize * cases.len());
    let mut first = 0u64;
    for ((c, r), n) in cases.iter().zip(&regions).zip(&threads) {
        items.extend(c.items.iter().flat_map(|v| v.to_le_bytes()));
        rows.extend(r.start.to_le_bytes());
        rows.extend(first.to_le_bytes());
        // A case has at most a thread block of threads and a few KiB of memory (`emit`).
        rows.extend((*n as u32).to_le_bytes());
        rows.extend((c.mem.len() as u32).to_le_bytes());
        first += *n as u64;
    }
    let block = threads.iter().copied().max().unwrap_or(1).max(1);
    let launch = Launch {
        ptx: kernel.source.clone(),
        entry: KERNEL_NAME.into(),
        grid: cases.len() as u32,
        block: block as u32,
        args: vec![
            Arg::Buffer(before.clone()),
            Arg::Buffer(items),
            Arg::Buffer(vec![0; 8 * all.max(1)]),
            Arg::Buffer(rows),
        ],
    };
    Batch {
        launch,
        regions,
        before,
        threads,
    }
}

/// Each case's flat buffer and returned values from the worker's answer to `batch`'s launch,
/// or why the answer is not one (every case's error). A guard that changed makes the cases on
/// both sides of it errors naming the write (`names`: the cases' ids).
pub fn answers(
    batch: &Batch,
    names: &[String],
    buffers: Vec<Vec<u8>>,
) -> Result<Vec<Result<Ran, String>>, String> {
    let [mem, _items, old, _rows]: [Vec<u8>; 4] = buffers
        .try_into()
        .map_err(|b: Vec<Vec<u8>>| format!("the worker answered {} buffers, not 4", b.len()))?;
    if mem.len() != batch.before.len() {
        return Err(format!(
            "the worker answered {} bytes of the batch's memory, not {}",
            mem.len(),
            batch.before.len()
        ));
    }
    let all: usize = batch.threads.iter().sum();
    if old.len() < 8 * all {
        return Err(format!(
            "the worker answered {} bytes of returned values for {all} threads",
            old.len()
        ));
    }
    let mut crossed: Vec<Option<String>> = vec![None; batch.regions.len()];
    let alone = format!("{BATCH_VAR}=1 runs each case alone");
    for (k, why) in cross_case_errors(
        &batch.regions,
        (&batch.before, &mem),
        names,
        (0, "mem"),
        &alone,
    ) {
        crossed[k].get_or_insert(why);
    }
    let mut first = 0;
    Ok(batch
        .regions
        .iter()
        .zip(&batch.threads)
        .zip(crossed)
        .map(|((r, &n), crossed)| {
            let at = first;
            first += n;
            match crossed {
                Some(why) => Err(why),
                None => Ok((
                    mem[r.start as usize..(r.start + r.len) as usize].to_vec(),
                    old[8 * at..8 * (at + n)]
                        .chunks_exact(8)
                        .map(|c| {
                            u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])
                        })
                        .collect(),
                )),
            }
        })
        .collect())
}

/// What a batched launch of a case's memory costs of the shared buffer, at most.
fn cost(mem: &[u8]) -> u64 {
    (mem.len() as u64).max(8).div_ceil(8) * 8 + GUARD_BYTES + REGION_ALIGN
}

/// The program printed for a failing case ([`crate::Adapter::last_program`]), written only
/// when asked for.
#[derive(Clone, Debug)]
pub enum Last {
    /// Already written out (a case run alone).
    Text(String),
    /// A case of a batched launch: the batched kernel, the case's CTA and its items.
    Batched {
        /// The batched kernel's text, shared by the launch's cases.
        source: Arc<str>,
        /// The case's CTA, of how many.
        cta: usize,
        /// CTAs in the launch.
        of: usize,
        /// The case's items.
        items: Vec<u64>,
    },
}

impl Last {
    /// The text printed.
    pub fn text(&self) -> String {
        match self {
            Last::Text(t) => t.clone(),
            Last::Batched {
                source,
                cta,
                of,
                items,
            } => format!(
                "// ran batched: CTA {cta} of a launch of {of} cases of this shape (its row of `cases` moves mem, items and old to the case's; {BATCH_VAR}=1 runs it alone)\n{source}// items (offset, src0, src1 per thread): {items:x?}\n"
            ),
        }
    }
}

/// A case sent, waiting for its launch.
pub struct Queued {
    plan: Plan,
    kernel: Kernel,
    items: Vec<u64>,
    mem: Vec<u8>,
    id: String,
}

/// A case run, waiting to be received.
pub struct Answered {
    plan: Plan,
    answer: Result<Ran, AdapterErrorKind>,
    last: Last,
}

impl CudaAdapter {
    /// Runs every queued case, the cases of one kernel text together (up to the window and
    /// [`CUDA_MAX_BATCH_BYTES`] a launch), and files the answers in the order sent.
    fn flush(&mut self) {
        let queued: Vec<Queued> = std::mem::take(&mut self.queued);
        let mut launches: Vec<(Vec<usize>, u64)> = Vec::new();
        for (k, q) in queued.iter().enumerate() {
            let c = cost(&q.mem);
            let open = launches.iter_mut().rev().find(|(cases, bytes)| {
                queued[cases[0]].kernel.source == q.kernel.source
                    && cases.len() < self.window
                    && bytes + c <= CUDA_MAX_BATCH_BYTES
            });
            match open {
                Some((cases, bytes)) => {
                    cases.push(k);
                    *bytes += c;
                }
                None => launches.push((vec![k], c)),
            }
        }
        let mut answers: Vec<Option<CaseAnswer>> = (0..queued.len()).map(|_| None).collect();
        for (cases, _) in launches {
            for (k, answer) in self.run_launch(&queued, &cases) {
                answers[k] = Some(answer);
            }
        }
        for (q, a) in queued.into_iter().zip(answers) {
            let (answer, last) = a.unwrap_or_else(|| {
                (
                    Err(AdapterErrorKind::Model(
                        "the case was not run (a back-end bug)".into(),
                    )),
                    Last::Text(String::new()),
                )
            });
            self.answered.push_back(Answered {
                plan: q.plan,
                answer,
                last,
            });
        }
    }

    /// One batched launch of `cases` (indices into `queued`, one kernel text): each case's
    /// answer and printed program.
    fn run_launch(&mut self, queued: &[Queued], cases: &[usize]) -> Vec<(usize, CaseAnswer)> {
        let first = &queued[cases[0]];
        let kernel = match emit::emit_batched(&first.plan, self.sm, self.plant) {
            Ok(k) => k,
            Err(why) => {
                return cases
                    .iter()
                    .map(|&k| {
                        let last = Last::Text(queued[k].kernel.source.clone());
                        (
                            k,
                            (Err(AdapterErrorKind::NotApplicable(why.0.clone())), last),
                        )
                    })
                    .collect();
            }
        };
        let batch_cases: Vec<BatchCase<'_>> = cases
            .iter()
            .map(|&k| BatchCase {
                items: &queued[k].items,
                mem: &queued[k].mem,
            })
            .collect();
        let batch = launch(&kernel, &batch_cases);
        let names: Vec<String> = cases.iter().map(|&k| queued[k].id.clone()).collect();
        let source: Arc<str> = Arc::from(kernel.source.as_str());
        let answered = self
            .worker
            .launch(&batch.launch)
            .and_then(|b| answers(&batch, &names, b))
            .map_err(|why| {
                format!(
                    "{why} (a batched launch of {} cases; {BATCH_VAR}=1 runs each case alone)",
                    cases.len()
                )
            });
        cases
            .iter()
            .enumerate()
            .map(|(cta, &k)| {
                let answer = match &answered {
                    Ok(each) => each[cta].clone().map_err(AdapterErrorKind::Crashed),
                    Err(why) => Err(AdapterErrorKind::Crashed(why.clone())),
                };
                let last = Last::Batched {
                    source: source.clone(),
                    cta,
                    of: cases.len(),
                    items: queued[k].items.clone(),
                };
                (k, (answer, last))
            })
            .collect()
    }
}

impl crate::Pipelined for CudaAdapter {
    fn window(&self) -> usize {
        self.window
    }

    fn send(&mut self, r: &Request<'_>) -> Result<(), AdapterError> {
        self.last = None;
        self.dispatch = None;
        let lowered = crate::back::lower(r).map_err(|k| self.err(k))?;
        let (plan, kernel, items) = Backend::emit(self, r, &lowered).map_err(|k| self.err(k))?;
        let mem = plan.layout().bytes(r.state, plan.space);
        self.queued.push(Queued {
            plan,
            kernel,
            items,
            mem,
            id: r.id.to_string(),
        });
        Ok(())
    }

    fn receive(&mut self, r: &Request<'_>) -> Result<Observation, AdapterError> {
        if self.answered.is_empty() {
            self.flush();
        }
        let Some(a) = self.answered.pop_front() else {
            return Err(self.err(AdapterErrorKind::Protocol(
                "an answer was asked for a case that was never sent".into(),
            )));
        };
        self.dispatch = None;
        self.last = Some(a.last);
        a.answer
            .and_then(|(mem, old)| finish(&a.plan, r, mem, old))
            .map(Observation::Completed)
            .map_err(|k| self.err(k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::back::ptx::concurrent::entry_params;
    use crate::back::ptx::emit::Plant;
    use crate::back::ptx::run;
    use atomcts_reference::Profile;
    use atomcts_reference::ir::Lowering;
    use atomcts_reference::program::{Dialect, Program};
    use atomcts_reference::state::{Reg, State};
    use atomcts_reference::types::ElemType;

    /// A SASS `ATOM.E.ADD` of `lanes` lanes on global memory: lane `l` adds `l + add` to the
    /// word at `0x1000 + 4 * (l % 3)`, which starts as `init + l`.
    fn case(lanes: u32, add: u64, init: u64) -> (Plan, Vec<u8>) {
        let s = state(lanes, add, init);
        let p = Program::parse(Dialect::Sass, "ATOM.E.ADD R0, [R2], R4").unwrap();
        let plan = match p.lower(&s, &Profile::default()).unwrap() {
            Lowering::Run(l) => Plan::new(&l, &s).unwrap(),
            other => panic!("{other:?}"),
        };
        let mem = plan.layout().bytes(&s, plan.space);
        (plan, mem)
    }

    /// [`case`]'s state.
    fn state(lanes: u32, add: u64, init: u64) -> State {
        let mut s = State::new(lanes);
        s.global.alloc(0x1000, 16).unwrap();
        for w in 0..4 {
            s.global.write(0x1000 + 4 * w, 4, init + w);
        }
        let per_lane = |f: &dyn Fn(u64) -> u64| Reg {
            ty: ElemType::B32,
            elems: (0..u64::from(lanes)).map(f).collect(),
        };
        s.regs
            .insert("R2".into(), per_lane(&|l| 0x1000 + 4 * (l % 3)));
        s.regs.insert("R3".into(), per_lane(&|_| 0));
        s.regs.insert("R4".into(), per_lane(&|l| l + add));
        s
    }

    /// Plays the GPU for a u32-add kernel's launch, alone ([`run::single`]) or batched
    /// ([`launch`]): each CTA takes its row of `cases` (batched) or the parameters `n`
    /// (alone), and each of its threads adds its src0 at its offset and returns the old word;
    /// the buffers as the worker answers them.
    fn play(l: &Launch) -> Vec<Vec<u8>> {
        let mut bufs: Vec<Vec<u8>> = l
            .args
            .iter()
            .filter_map(|a| match a {
                Arg::Buffer(b) => Some(b.clone()),
                _ => None,
            })
            .collect();
        let u64_at = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        let ctas: Vec<(usize, usize, usize)> = if bufs.len() == 4 {
            (0..l.grid as usize)
                .map(|c| {
                    let row = &bufs[3][24 * c..24 * c + 24];
                    let n = u32::from_le_bytes(row[16..20].try_into().unwrap());
                    (u64_at(row, 0) as usize, u64_at(row, 8) as usize, n as usize)
                })
                .collect()
        } else {
            let Arg::U32(n) = l.args[3] else { panic!() };
            vec![(0, 0, n as usize)]
        };
        for (base, first, n) in ctas {
            for t in first..first + n {
                let (off, src) = (u64_at(&bufs[1], 24 * t), u64_at(&bufs[1], 24 * t + 8));
                let at = base + off as usize;
                let m = u32::from_le_bytes(bufs[0][at..at + 4].try_into().unwrap());
                bufs[0][at..at + 4].copy_from_slice(&m.wrapping_add(src as u32).to_le_bytes());
                bufs[2][8 * t..8 * t + 8].copy_from_slice(&u64::from(m).to_le_bytes());
            }
        }
        bufs
    }

    fn three() -> Vec<(Plan, Vec<u8>)> {
        vec![case(2, 1, 10), case(5, 100, 7), case(1, 0xffff_fff0, 3)]
    }

    fn batch_of(cases: &[(Plan, Vec<u8>)]) -> (Batch, Vec<Vec<u64>>) {
        let items: Vec<Vec<u64>> = cases.iter().map(|(p, _)| emit::items(p)).collect();
        let kernel = emit::emit_batched(&cases[0].0, 70, Plant::None).unwrap();
        let bc: Vec<BatchCase<'_>> = cases
            .iter()
            .zip(&items)
            .map(|((_, mem), items)| BatchCase { items, mem })
            .collect();
        (launch(&kernel, &bc), items)
    }

    fn names() -> Vec<String> {
        ["a", "b", "c"].map(String::from).to_vec()
    }

    #[test]
    fn a_batched_launch_answers_each_case_as_its_launch_alone_does() {
        let cases = three();
        let (batch, items) = batch_of(&cases);
        let l = &batch.launch;
        assert_eq!((l.grid, l.block), (3, 5));
        assert_eq!(
            entry_params(&l.ptx),
            [
                (".u64", "mem"),
                (".u64", "items"),
                (".u64", "old"),
                (".u64", "cases")
            ]
            .map(|(t, n)| (t.to_string(), n.to_string()))
        );
        let each = answers(&batch, &names(), play(l)).unwrap();
        for (((plan, mem), items), got) in cases.iter().zip(&items).zip(each) {
            let single = emit::emit(plan, 70, Plant::None).unwrap();
            let alone =
                run::single_answer(plan.items.len(), play(&run::single(&single, items, mem)))
                    .unwrap();
            assert_eq!(got.unwrap(), alone);
        }
    }

    #[test]
    fn a_write_into_a_guard_is_an_error_of_both_neighbours_never_a_pass() {
        let (batch, _) = batch_of(&three());
        let mut bufs = play(&batch.launch);
        // One byte past case `a`'s memory, in the guard before case `b`.
        let r = batch.regions[0];
        bufs[0][(r.start + r.range) as usize] ^= 0x10;
        let each = answers(&batch, &names(), bufs).unwrap();
        for (k, why) in each.iter().enumerate().take(2) {
            let why = why.as_ref().unwrap_err();
            assert!(
                why.contains("cross-case write") && why.contains("`a`") && why.contains("`b`"),
                "{k}: {why}"
            );
            assert!(why.contains(BATCH_VAR), "{why}");
        }
        assert!(each[2].is_ok());
    }

    #[test]
    fn a_short_missing_or_over_wide_answer_is_every_cases_error() {
        let (batch, _) = batch_of(&three());
        let good = play(&batch.launch);
        let mut lies: Vec<(&str, Vec<Vec<u8>>)> = vec![];
        lies.push(("three buffers", good[..3].to_vec()));
        let mut five = good.clone();
        five.push(vec![0; 8]);
        lies.push(("five buffers", five));
        let mut short = good.clone();
        short[0].pop();
        lies.push(("memory short by a byte", short));
        let mut wide = good.clone();
        wide[0].push(0);
        lies.push(("memory a byte too long", wide));
        let mut old = good.clone();
        old[2].truncate(8 * 7);
        lies.push(("returned values for 7 of 8 threads", old));
        for (what, bufs) in lies {
            assert!(
                answers(&batch, &names(), bufs).is_err(),
                "{what} was accepted"
            );
        }
        assert!(
            answers(&batch, &names(), good)
                .unwrap()
                .iter()
                .all(Result::is_ok)
        );
    }

    #[test]
    fn the_batched_kernel_is_the_single_kernels_code_after_its_prologue() {
        for (plan, _) in three() {
            let alone = emit::emit(&plan, 70, Plant::None).unwrap().source;
            let batched = emit::emit_batched(&plan, 70, Plant::None).unwrap().source;
            let body = |s: &str| -> Vec<String> {
                s.lines()
                    .filter(|l| !l.starts_with("//") && !l.contains(".entry"))
                    .map(str::to_string)
                    .collect()
            };
            let (a, b) = (body(&alone), body(&batched));
            // The single kernel reads `n` and `bytes` from its parameters; the batched one
            // from its row, after moving its pointers: every other line is the same, in order.
            let strip = |v: &[String], skip: &[&str]| -> Vec<String> {
                v.iter()
                    .filter(|l| !skip.iter().any(|s| l.contains(s)))
                    .cloned()
                    .collect()
            };
            let a = strip(&a, &["[n];", "[bytes];"]);
            let b = strip(
                &b,
                &["%rd13", "%rd14", "%rd15", "%rd16", "%r15", "[cases];"],
            );
            assert_eq!(a, b);
        }
    }

    /// A stand-in device for the worker process (`Worker::with_program`): it speaks the worker's
    /// protocol and runs what a u32-add kernel does, alone (`n` a parameter) or batched (a row
    /// of `cases` per CTA), answering `Failed` for any other kernel; it logs each launch's CTAs.
    const FAKE_DEVICE: &str = r#"#!/usr/bin/env python3
import json, os, sys
log = open(os.path.join(os.path.dirname(sys.argv[0]), "launches"), "a")
for line in sys.stdin:
    l = json.loads(line)
    log.write(f"{l['grid']}\n"); log.flush()
    if "atom.global.add.u32" not in l["ptx"]:
        print(json.dumps({"Failed": "the stand-in device runs u32 adds on global memory only"}))
        sys.exit(3)
    bufs = [bytearray.fromhex(a["Buffer"]) for a in l["args"] if "Buffer" in a]
    word = lambda b, o, n=8: int.from_bytes(b[o:o + n], "little")
    if len(bufs) == 4:
        rows = [(word(bufs[3], 24 * c), word(bufs[3], 24 * c + 8), word(bufs[3], 24 * c + 16, 4))
                for c in range(l["grid"])]
    else:
        rows = [(0, 0, [a["U32"] for a in l["args"] if "U32" in a][0])]
    for base, first, n in rows:
        for t in range(first, first + n):
            at = base + word(bufs[1], 24 * t)
            m = word(bufs[0], at, 4)
            bufs[0][at:at + 4] = ((m + word(bufs[1], 24 * t + 8)) & 0xFFFFFFFF).to_bytes(4, "little")
            bufs[2][8 * t:8 * t + 8] = m.to_bytes(8, "little")
    print(json.dumps({"Done": [b.hex() for b in bufs]}), flush=True)
"#;

    /// A `cuda` adapter whose worker is [`FAKE_DEVICE`] in `dir`, with this window.
    fn stand_in(dir: &std::path::Path, window: usize) -> CudaAdapter {
        use std::os::unix::fs::PermissionsExt;
        let program = dir.join("fake-device.py");
        std::fs::write(&program, FAKE_DEVICE).unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let _ = std::fs::remove_file(dir.join("launches"));
        CudaAdapter {
            info: run::DeviceInfo::default(),
            sm: 70,
            plant: Plant::None,
            last: None,
            capture: false,
            dispatch: None,
            timeout: super::super::DEFAULT_TIMEOUT,
            worker: super::super::worker::Worker::with_program(
                std::time::Duration::from_secs(60),
                program,
            ),
            window,
            queued: Vec::new(),
            answered: std::collections::VecDeque::new(),
        }
    }

    #[test]
    fn batched_and_alone_the_adapter_answers_what_the_reference_does_one_launch_per_shape() {
        use crate::Adapter;
        let dir = std::env::temp_dir().join(format!("atomcts-ptx-batch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let profile = Profile::default();
        // Adds (one shape) around exchanges (another, which the stand-in cannot run).
        let cases = [
            ("add-a", "ATOM.E.ADD R0, [R2], R4", state(2, 1, 10)),
            ("add-b", "ATOM.E.ADD R0, [R2], R4", state(5, 100, 7)),
            ("exch-a", "ATOM.E.EXCH R0, [R2], R4", state(3, 9, 1)),
            ("add-c", "ATOM.E.ADD R0, [R2], R4", state(1, 0xffff_fff0, 3)),
            ("exch-b", "ATOM.E.EXCH R0, [R2], R4", state(2, 4, 2)),
        ];
        let requests: Vec<Request<'_>> = cases
            .iter()
            .map(|(id, asm, s)| Request {
                id,
                dialect: Dialect::Sass,
                asm,
                state: s,
                profile: &profile,
                lowered: None,
            })
            .collect();
        let launches = || std::fs::read_to_string(dir.join("launches")).unwrap_or_default();
        for window in [8, 1] {
            let mut a = stand_in(&dir, window);
            let answers: Vec<_> = if window > 1 {
                assert!(a.pipelined().is_some());
                for r in &requests {
                    crate::Pipelined::send(&mut a, r).unwrap();
                }
                requests
                    .iter()
                    .map(|r| crate::Pipelined::receive(&mut a, r))
                    .collect()
            } else {
                assert!(a.pipelined().is_none());
                requests.iter().map(|r| Adapter::run(&mut a, r)).collect()
            };
            for (r, got) in requests.iter().zip(answers) {
                if r.asm.contains("EXCH") {
                    let why = got.unwrap_err().to_string();
                    assert!(why.contains("stand-in device"), "{}: {why}", r.id);
                    if window > 1 {
                        assert!(why.contains("batched launch of 2 cases"), "{why}");
                    }
                } else {
                    let want = Adapter::run(&mut crate::ReferenceAdapter, r).unwrap();
                    assert_eq!(got.unwrap(), want, "{} (window {window})", r.id);
                }
            }
            // Batched: one launch of the three adds' CTAs, one of the two exchanges'; alone,
            // a launch per case.
            let want = if window > 1 {
                "3\n2\n"
            } else {
                "1\n1\n1\n1\n1\n"
            };
            assert_eq!(launches(), want, "window {window}");
        }
        // An answer asked for with nothing sent is an error, never a pass.
        let mut a = stand_in(&dir, 8);
        assert!(crate::Pipelined::receive(&mut a, &requests[0]).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_window_is_one_unless_asked_for() {
        // The variable is read at open; its parsing is the shared one.
        assert_eq!(
            crate::back::window_from_env("ATOMCTS_TEST_UNSET_WINDOW", 1, CUDA_WINDOW),
            Ok(1)
        );
    }
}
