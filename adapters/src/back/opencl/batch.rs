//! Batched launches (issue 31, point 1): many independent single-instruction cases of one
//! kernel shape run in one NDRange dispatch, one work-group per case
//! ([`super::single::emit_batched`]), with one upload and one readback per batch.
//!
//! The batch's memory is one buffer laid out guard | case 0 | guard | case 1 | ... | guard:
//! every case's region starts on a [`OPENCL_REGION_ALIGN`]-byte boundary after [`OPENCL_GUARD_BYTES`] of a
//! fixed pattern ([`GUARD_WORD`]), and the padding after a region holds the pattern too. After
//! the readback every byte outside the regions is checked: a changed one makes the cases on
//! both sides errors that name the cross-case write, never a pass. Each case is then judged
//! exactly as one run alone ([`super::OpenClAdapter`]'s [`crate::Pipelined`]).
//!
//! Not batched (run alone, as without batching): SIMD-group functions (their sub-groups are
//! the dispatch's), concurrent cases (the runner runs those alone), and anything run while
//! reproducers are captured (`atomcts repro` writes the unbatched kernel). `ATOMCTS_OPENCL_BATCH=1`
//! turns batching off.

use super::emit::Kernel;
use super::run::BatchCase;
use super::single;
use super::{Emitted, OpenClAdapter};
use crate::plan::{NotApplicable, Plan};
use crate::shuffle::ShufflePlan;
use crate::{AdapterError, AdapterErrorKind, Observation, Request};
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

/// Cases in flight at once through [`crate::Pipelined`], and the most cases in one dispatch.
pub const OPENCL_WINDOW: usize = 1024;

/// Bytes of guard pattern before the first case's region, between regions and after the last.
pub const OPENCL_GUARD_BYTES: usize = 64;

/// Each case's region starts on a multiple of this many bytes of the batch's memory.
pub const OPENCL_REGION_ALIGN: usize = 64;

/// The most bytes of memory one batched dispatch uploads (regions and guards); a batch that
/// would be larger is split.
pub const OPENCL_MAX_BATCH_BYTES: usize = 16 << 20;

/// The guard pattern, as little-endian words from the start of the batch's memory.
pub const GUARD_WORD: u32 = 0xa5c3_3c5a;

/// The environment variable that sets the window (`1`: no batching, every case run alone; unset or empty: [`OPENCL_WINDOW`]).
pub const BATCH_VAR: &str = "ATOMCTS_OPENCL_BATCH";

/// The window `ATOMCTS_OPENCL_BATCH` asks for ([`OPENCL_WINDOW`] when unset), or why it is
/// not one.
pub fn window_from_env() -> Result<usize, String> {
    crate::back::window_from_env(BATCH_VAR, OPENCL_WINDOW, OPENCL_WINDOW)
}

/// The guard byte at `offset` of the batch's memory.
pub fn guard_byte(offset: usize) -> u8 {
    GUARD_WORD.to_le_bytes()[offset % 4]
}

/// Where each region of `sizes` bytes starts in the batch's memory, and the memory's length.
pub fn layout(sizes: &[usize]) -> (Vec<usize>, usize) {
    let mut bases = Vec::with_capacity(sizes.len());
    let mut at = OPENCL_GUARD_BYTES;
    for s in sizes {
        bases.push(at);
        at = (at + s).next_multiple_of(OPENCL_REGION_ALIGN) + OPENCL_GUARD_BYTES;
    }
    (bases, at)
}

/// The batch's memory: every region's bytes at its base, the guard pattern everywhere else.
pub fn fill(regions: &[&[u8]], bases: &[usize], len: usize) -> Vec<u8> {
    let mut mem: Vec<u8> = (0..len).map(guard_byte).collect();
    for (r, b) in regions.iter().zip(bases) {
        mem[*b..b + r.len()].copy_from_slice(r);
    }
    mem
}

/// A changed guard byte: its offset in the batch's memory, what it holds, and the gap it is in
/// (gap `i` lies before region `i`; gap `regions` after the last).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Broken {
    /// The gap.
    pub gap: usize,
    /// Byte offset in the batch's memory.
    pub offset: usize,
    /// The byte found.
    pub found: u8,
}

/// The first changed byte of each gap between regions (of `sizes` bytes at `bases`) that has
/// one.
pub fn check(mem: &[u8], bases: &[usize], sizes: &[usize]) -> Vec<Broken> {
    let mut out = Vec::new();
    for gap in 0..=bases.len() {
        let from = if gap == 0 {
            0
        } else {
            bases[gap - 1] + sizes[gap - 1]
        };
        let to = bases.get(gap).copied().unwrap_or(mem.len());
        if let Some(offset) = (from..to).find(|o| mem[*o] != guard_byte(*o)) {
            out.push(Broken {
                gap,
                offset,
                found: mem[offset],
            });
        }
    }
    out
}

/// The error of a case next to a changed guard.
fn cross_case_message(b: &Broken, ids: &[&str]) -> String {
    let side = |i: Option<usize>| {
        i.and_then(|i| ids.get(i))
            .map_or("(none: the batch's edge)".to_string(), |id| {
                format!("`{id}`")
            })
    };
    format!(
        "cross-case write in a batched dispatch: the guard byte at {:#x} of the batch's memory, between case {} and case {}, holds {:#04x} where the pattern {:#04x} was written (a write outside a case's memory region; rerun with {BATCH_VAR}=1 to run each case alone)",
        b.offset,
        side(b.gap.checked_sub(1)),
        side(Some(b.gap)),
        b.found,
        guard_byte(b.offset)
    )
}

/// What a dispatch gave one case: its memory region, `ret` and `ok`.
type Raw = Result<(Vec<u8>, Vec<u64>, Vec<i32>), String>;

/// A case sent, waiting for its answer.
pub(super) enum Pending {
    /// A memory instruction: batched with its neighbours of the same shape.
    Atomic {
        id: String,
        plan: Box<Plan>,
        /// The unbatched kernel (its arguments, and the listing printed beside the case).
        kernel: Kernel,
        batched: Rc<Kernel>,
        mem: Vec<u8>,
        local: usize,
        answer: Option<Raw>,
    },
    /// A SIMD-group function: run alone when its answer is asked for.
    Shuffle(Box<ShufflePlan>, Kernel),
    /// A failure other than not applicable, answered in its turn (so that the program
    /// reported beside it is its own: none).
    Failed(AdapterErrorKind),
}

/// The batching state of an [`OpenClAdapter`].
#[derive(Default)]
pub(super) struct Batching {
    pub(super) window: usize,
    pub(super) queue: VecDeque<Pending>,
    /// Batched kernels by their unbatched kernel's (source, options): the source by its
    /// address, which the adapter's kept texts share between the cases of a shape
    /// ([`single::Texts`]; the source is kept here too, so that no other text takes its place).
    kernels: HashMap<(usize, String), (std::sync::Arc<str>, Rc<Kernel>)>,
}

impl Batching {
    pub(super) fn new(window: usize) -> Batching {
        Batching {
            window,
            ..Batching::default()
        }
    }
}

impl OpenClAdapter {
    /// The batched kernel of `plan`'s shape, emitted once per shape.
    fn batched_kernel(
        &mut self,
        plan: &Plan,
        kernel: &Kernel,
    ) -> Result<Rc<Kernel>, NotApplicable> {
        let key = (
            std::sync::Arc::as_ptr(&kernel.source) as *const u8 as usize,
            kernel.options.clone(),
        );
        if let Some((_, k)) = self.batching.kernels.get(&key) {
            return Ok(k.clone());
        }
        let k = Rc::new(single::emit_batched(
            plan,
            &self.features,
            self.plant,
            "batch",
        )?);
        self.batching
            .kernels
            .insert(key, (kernel.source.clone(), k.clone()));
        Ok(k)
    }

    /// Runs every queued memory instruction not yet run, those of one shape in one dispatch
    /// each (the cases are independent, so a case's group need not be its neighbours': the
    /// answers are still given in the order the cases were sent), and files their answers.
    /// The work-group size of a dispatch is its largest case's (work-items past a case's own
    /// only copy memory, as in a case run alone with its power-of-two work-group).
    fn flush(&mut self) {
        let mut groups: Vec<(Rc<Kernel>, Vec<usize>)> = Vec::new();
        let mut sizes: Vec<usize> = Vec::new();
        for (i, p) in self.batching.queue.iter().enumerate() {
            let Pending::Atomic {
                batched,
                mem,
                answer: None,
                ..
            } = p
            else {
                continue;
            };
            let more = mem.len().next_multiple_of(OPENCL_REGION_ALIGN) + OPENCL_GUARD_BYTES;
            let open = groups.iter().rposition(|(k, _)| Rc::ptr_eq(k, batched));
            match open {
                Some(g)
                    if groups[g].1.len() < OPENCL_WINDOW
                        && sizes[g] + more <= OPENCL_MAX_BATCH_BYTES =>
                {
                    groups[g].1.push(i);
                    sizes[g] += more;
                }
                _ => {
                    groups.push((batched.clone(), vec![i]));
                    sizes.push(OPENCL_GUARD_BYTES + more);
                }
            }
        }
        for (_, members) in groups {
            self.run_group(&members);
        }
    }

    /// Runs the queued cases at `members` (one shape) in one dispatch.
    fn run_group(&mut self, members: &[usize]) {
        let mut ids = Vec::new();
        let mut regions: Vec<&[u8]> = Vec::new();
        let mut cases = Vec::new();
        let mut kernel = None;
        let mut local = 1;
        for p in members.iter().filter_map(|i| self.batching.queue.get(*i)) {
            if let Pending::Atomic {
                id,
                kernel: k,
                batched,
                mem,
                local: l,
                ..
            } = p
            {
                let Some(args) = k.args.as_ref() else {
                    continue;
                };
                ids.push(id.as_str());
                regions.push(mem);
                cases.push(BatchCase {
                    args,
                    n: args.idx.len(),
                    mem_bytes: mem.len(),
                });
                kernel = Some(batched.clone());
                local = local.max(*l);
            }
        }
        let sizes: Vec<usize> = regions.iter().map(|r| r.len()).collect();
        let (bases, len) = layout(&sizes);
        let mut mem = fill(&regions, &bases, len);
        let result = match &kernel {
            Some(k) if cases.len() == members.len() => {
                self.device.run_batch(k, local, &cases, &bases, &mut mem)
            }
            _ => Err("a batch of cases without shape-kernel arguments".to_string()),
        };
        let mut answers: Vec<Raw> = match result {
            Err(e) => vec![Err(e); members.len()],
            Ok((ret, ok)) => {
                let mut at = 0;
                let mut out = Vec::with_capacity(cases.len());
                for (c, (b, s)) in cases.iter().zip(bases.iter().zip(&sizes)) {
                    out.push(Ok((
                        mem[*b..b + s].to_vec(),
                        ret[at..at + c.n].to_vec(),
                        ok[at..at + c.n].to_vec(),
                    )));
                    at += c.n;
                }
                for b in check(&mem, &bases, &sizes) {
                    let msg = cross_case_message(&b, &ids);
                    for i in [b.gap.checked_sub(1), Some(b.gap)].into_iter().flatten() {
                        if let Some(a) = out.get_mut(i) {
                            *a = Err(msg.clone());
                        }
                    }
                }
                out
            }
        };
        for (i, a) in members.iter().zip(answers.drain(..)) {
            if let Some(Pending::Atomic { answer, .. }) = self.batching.queue.get_mut(*i) {
                *answer = Some(a);
            }
        }
    }
}

impl crate::Pipelined for OpenClAdapter {
    fn window(&self) -> usize {
        if self.capture {
            1
        } else {
            self.batching.window
        }
    }

    fn send(&mut self, r: &Request<'_>) -> Result<(), AdapterError> {
        let emitted = crate::back::lower(r).and_then(|l| crate::back::Backend::emit(self, r, &l));
        let pending = match emitted {
            Err(AdapterErrorKind::NotApplicable(why)) => {
                return Err(self.err(AdapterErrorKind::NotApplicable(why)));
            }
            Err(k) => Pending::Failed(k),
            Ok(Emitted::Shuffle(plan, kernel)) => Pending::Shuffle(Box::new(plan), kernel),
            Ok(Emitted::Atomic(plan, kernel)) => {
                let batched = self
                    .batched_kernel(&plan, &kernel)
                    .map_err(|e| self.err(AdapterErrorKind::NotApplicable(e.0)))?;
                let mem = plan.layout().bytes(r.state, plan.space);
                let local = self.local_size(plan.items.len());
                Pending::Atomic {
                    id: r.id.to_string(),
                    plan: Box::new(plan),
                    kernel,
                    batched,
                    mem,
                    local,
                    answer: None,
                }
            }
        };
        self.batching.queue.push_back(pending);
        Ok(())
    }

    fn receive(&mut self, r: &Request<'_>) -> Result<Observation, AdapterError> {
        self.last = None;
        self.dispatch = None;
        if let Some(Pending::Atomic { answer: None, .. }) = self.batching.queue.front() {
            self.flush();
        }
        let Some(p) = self.batching.queue.pop_front() else {
            return Err(self.err(AdapterErrorKind::Protocol(
                "an answer was asked for a case that was never sent".into(),
            )));
        };
        let state = match p {
            Pending::Failed(k) => Err(k),
            Pending::Shuffle(plan, kernel) => self.run_shuffle(r, &plan, &kernel),
            Pending::Atomic {
                plan,
                kernel,
                local,
                answer,
                ..
            } => {
                self.last = Some(super::Last::Listing {
                    kernel: Box::new(kernel),
                    title: r.id.to_string(),
                    local,
                });
                match answer {
                    Some(Ok((mem, old, ok))) => self.finish_atomic(r, &plan, mem, old, &ok),
                    Some(Err(e)) => Err(AdapterErrorKind::Crashed(e)),
                    None => Err(AdapterErrorKind::Protocol(
                        "the case's batch never ran".into(),
                    )),
                }
            }
        };
        state.map(Observation::Completed).map_err(|k| self.err(k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_are_aligned_and_guarded() {
        let (bases, len) = layout(&[4, 64, 0, 100]);
        assert_eq!(bases, [64, 192, 320, 384]);
        assert_eq!(len, 384 + 128 + 64);
        assert!(bases.iter().all(|b| b % OPENCL_REGION_ALIGN == 0));
    }

    #[test]
    fn a_changed_guard_byte_names_both_neighbours() {
        let sizes = [4, 8];
        let (bases, len) = layout(&sizes);
        let mut mem = fill(&[&[1, 2, 3, 4], &[0; 8]], &bases, len);
        assert_eq!(&mem[64..68], &[1, 2, 3, 4]);
        assert!(check(&mem, &bases, &sizes).is_empty());
        // Region bytes may change; padding and guards may not.
        mem[64] = 9;
        assert!(check(&mem, &bases, &sizes).is_empty());
        mem[68] ^= 1;
        let b = check(&mem, &bases, &sizes);
        assert_eq!(b.len(), 1);
        assert_eq!((b[0].gap, b[0].offset), (1, 68));
        let msg = cross_case_message(&b[0], &["a", "b"]);
        assert!(
            msg.contains("cross-case write") && msg.contains("`a`") && msg.contains("`b`"),
            "{msg}"
        );
        mem[len - 1] ^= 1;
        mem[0] ^= 1;
        let gaps: Vec<usize> = check(&mem, &bases, &sizes).iter().map(|b| b.gap).collect();
        assert_eq!(gaps, [0, 1, 2]);
        assert!(cross_case_message(&check(&mem, &bases, &sizes)[0], &["a", "b"]).contains("edge"));
    }
}
