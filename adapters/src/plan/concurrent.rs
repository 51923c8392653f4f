//! Concurrent cases' shared plan ([`ConcurrentPlan`]): several lowered instructions laid out as
//! groups of work-items over one memory, and what a launch of them observed.

use super::{Layout, NotApplicable, Plan, Returned};
use atomcts_reference::ir::{Instr, Lowered};
use atomcts_reference::state::State;
use atomcts_reference::types::Space;

/// Concurrent cases (issue 12): several lowered instructions that run at the same time on one
/// memory, each its own group of work-items, each repeated `iterations` times in a loop. The
/// shared plan every back end builds them from (OpenCL now; the Vulkan back end maps it the
/// same way: one work-group per instruction for global memory, all in one dispatch, a loop per
/// work-item for the iterations, device-scope atomics; PTX: one CTA per instruction).
///
/// Memory shared across work-groups is global memory only: work-group local memory (vISA
/// SLM, MSL `threadgroup`) is one work-group's, so [`ConcurrentPlan::new`] says an instruction
/// on it is not applicable. A back end that opts in uses [`ConcurrentPlan::new_local`] (or
/// [`ConcurrentPlan::new_or_local`]): the instructions are then disjoint ranges of work-items of
/// ONE work-group ([`ConcurrentPlan::first_item`]), sharing the work-group's local memory, which
/// starts as the shared memory of the states and is copied out after a barrier (FORMAT.md:
/// "one threadgroup whose SIMD-groups run the instructions").
#[derive(Clone, Debug, PartialEq)]
pub struct ConcurrentPlan {
    /// One plan per instruction: its work-items (items) and operands.
    pub groups: Vec<Plan>,
    /// Iterations of each instruction.
    pub iterations: Vec<u32>,
    /// Global memory layout (the same in every group's plan).
    pub global: Layout,
    /// Shared (work-group local) memory layout (the same in every group's plan).
    pub shared: Layout,
    /// Whether all instructions run in one work-group ([`ConcurrentPlan::new_local`]) rather
    /// than one work-group each.
    pub local: bool,
    /// With several work-groups: whether they wait for each other at a start line before their
    /// operations (so that they overlap on drivers that start work-groups one after another;
    /// FORMAT.md, "Concurrent cases"). On by default; `ATOMCTS_START_LINE=0` turns it off
    /// ([`start_line_from_env`]).
    pub start_line: bool,
    /// Each instruction's compare-and-swap loop, if any (FORMAT.md, "Compare-and-swap
    /// loops"): [`ConcurrentPlan::for_request`] fills them; a back end that cannot emit one
    /// calls [`ConcurrentPlan::require_no_loops`].
    pub loops: Vec<Option<atomcts_reference::concurrent::CasLoop>>,
    /// Each instruction as lowered ([`Plan::finish`] of its group).
    lowered: Vec<Lowered>,
}

/// How many loop iterations the start line of a concurrent launch spins at most before its
/// work-group starts anyway (a device that cannot hold every work-group at once must not hang;
/// FORMAT.md, "Concurrent cases"). Far below the 65,535 loop iterations llvmpipe allows one
/// kernel invocation in all (Mesa's `LP_MAX_TGSI_LOOP_ITERATIONS`, llvmpipe-1 in
/// docs/findings.md): the spin takes at most 1,024 of them, leaving 64,511 to the case's own
/// loops, where 65,536 spins left none when the other work-group started late (issue 30).
pub const START_SPINS: u32 = 1 << 10;

/// How many times each spin of the start line reads the arrival counter ([`START_SPINS`] times
/// this: the 65,536 reads the start line waited for before issue 30, so that it waits as long
/// while taking 64 times fewer loop iterations). Straight-line reads, not a loop.
pub const START_READS: u32 = 1 << 6;

/// `ATOMCTS_START_LINE`: `0` or `off` turns the start line of concurrent launches off (the
/// work-groups then start as the driver starts them); anything else, or unset, keeps it on.
pub fn start_line_from_env() -> bool {
    !matches!(
        std::env::var("ATOMCTS_START_LINE").as_deref(),
        Ok("0" | "off")
    )
}

impl ConcurrentPlan {
    /// Plans the instructions `lowered[k]` on `states[k]` (each holding the shared memory).
    pub fn new(
        lowered: &[Lowered],
        states: &[State],
        iterations: &[u32],
    ) -> Result<ConcurrentPlan, NotApplicable> {
        ConcurrentPlan::assemble(lowered, states, iterations, false)
    }

    /// Plans the instructions `lowered[k]` on `states[k]` as disjoint ranges of work-items of
    /// one work-group (instruction `k` from [`ConcurrentPlan::first_item`]), so that they can
    /// share work-group local memory (vISA SLM, MSL `threadgroup`) as well as global memory.
    /// Opt-in: a back end that uses it initialises local memory from [`ConcurrentPlan::shared`]
    /// before a barrier and copies it out after one.
    pub fn new_local(
        lowered: &[Lowered],
        states: &[State],
        iterations: &[u32],
    ) -> Result<ConcurrentPlan, NotApplicable> {
        ConcurrentPlan::assemble(lowered, states, iterations, true)
    }

    /// [`ConcurrentPlan::new_local`] when some instruction works on work-group local memory,
    /// else [`ConcurrentPlan::new`] (one work-group per instruction).
    pub fn new_or_local(
        lowered: &[Lowered],
        states: &[State],
        iterations: &[u32],
    ) -> Result<ConcurrentPlan, NotApplicable> {
        let on_local = lowered
            .iter()
            .any(|l| matches!(&l.instr, Instr::Mem(m) if m.space == Space::Shared));
        if on_local {
            ConcurrentPlan::new_local(lowered, states, iterations)
        } else {
            ConcurrentPlan::new(lowered, states, iterations)
        }
    }

    /// One plan per instruction, in one work-group (`local`) or one work-group each (global
    /// memory only: local memory is one work-group's).
    fn assemble(
        lowered: &[Lowered],
        states: &[State],
        iterations: &[u32],
        local: bool,
    ) -> Result<ConcurrentPlan, NotApplicable> {
        let mut groups = Vec::new();
        for (k, (l, s)) in lowered.iter().zip(states).enumerate() {
            let p = Plan::new(l, s).map_err(|e| NotApplicable(format!("instruction {k}: {e}")))?;
            if !local && p.space != Space::Global {
                return Err(NotApplicable(format!(
                    "instruction {k} works on work-group local memory ({}): concurrent instructions on it would be sub-groups of one work-group, which this plan does not lay out",
                    p.space.name()
                )));
            }
            if p.items.is_empty() {
                return Err(NotApplicable(format!(
                    "instruction {k} has no enabled access: nothing to dispatch"
                )));
            }
            groups.push(p);
        }
        let Some(first) = groups.first() else {
            return Err(NotApplicable("no instructions".into()));
        };
        let (global, shared) = (first.global.clone(), first.shared.clone());
        if groups
            .iter()
            .any(|g| g.global != global || g.shared != shared)
        {
            return Err(NotApplicable(
                "the instructions' states lay out memory differently".into(),
            ));
        }
        Ok(ConcurrentPlan {
            lowered: lowered.to_vec(),
            loops: vec![None; groups.len()],
            groups,
            iterations: iterations.to_vec(),
            global,
            shared,
            local,
            start_line: true,
        })
    }

    /// The first work-item (local invocation index) of instruction `k` in its work-group: 0
    /// with one work-group per instruction; the items of the instructions before it in one
    /// work-group ([`ConcurrentPlan::new_local`]).
    pub fn first_item(&self, k: usize) -> usize {
        if self.local {
            self.groups.iter().take(k).map(|g| g.items.len()).sum()
        } else {
            0
        }
    }

    /// Work-items per work-group: the largest instruction's (one work-group each), or all of
    /// them (one work-group).
    pub fn local_size(&self) -> usize {
        if self.local {
            self.groups.iter().map(|g| g.items.len()).sum()
        } else {
            self.groups.iter().map(|g| g.items.len()).max().unwrap_or(1)
        }
    }

    /// How many work-groups one launch has.
    pub fn work_groups(&self) -> usize {
        if self.local { 1 } else { self.groups.len() }
    }

    /// Whether the launch has a start line (several work-groups, [`ConcurrentPlan::start_line`]).
    pub fn has_start_line(&self) -> bool {
        self.start_line && self.work_groups() > 1
    }

    /// Whether some instruction works on work-group local memory.
    pub fn uses_shared(&self) -> bool {
        self.groups.iter().any(|g| g.space == Space::Shared)
    }

    /// Whether the launch keeps an image of work-group local memory in its buffer (one
    /// work-group, some instruction on local memory).
    pub fn has_local_image(&self) -> bool {
        self.local && self.uses_shared()
    }

    /// Byte offset of the local-memory image in the launch's one buffer (after global memory;
    /// a multiple of 8).
    pub fn shared_base(&self) -> u64 {
        self.global.size
    }

    /// The one buffer a launch works on: global memory laid out as [`ConcurrentPlan::global`],
    /// then, where [`ConcurrentPlan::has_local_image`], the initial work-group local memory at
    /// [`ConcurrentPlan::shared_base`] (the kernel copies it into local memory before a barrier
    /// and back after one).
    pub fn image(&self, state: &State) -> Vec<u8> {
        let mut out = self.global.bytes(state, Space::Global);
        if self.has_local_image() {
            out.extend(self.shared.bytes(state, Space::Shared));
        }
        out
    }

    /// The length of [`ConcurrentPlan::image`] (a multiple of 8): where a back end may append
    /// words of its own (the OpenCL start line).
    pub fn image_len(&self) -> u64 {
        self.global.size
            + if self.has_local_image() {
                self.shared.size
            } else {
                0
            }
    }

    /// [`ConcurrentPlan::finish`] from the launch's buffer after the run
    /// ([`ConcurrentPlan::image`]'s layout).
    #[allow(clippy::type_complexity)]
    pub fn finish_image(
        &self,
        states: &[State],
        image: &[u8],
        old: &[u64],
        ok: &[bool],
    ) -> Result<(Vec<State>, Vec<Vec<Returned>>), String> {
        let g = (self.global.size as usize).min(image.len());
        let end = (self.image_len() as usize).min(image.len());
        let shared = self.has_local_image().then(|| &image[g..end]);
        self.finish_with(states, &image[..g], shared, old, ok)
    }

    /// The observation of a launch from what the device left: its buffer `image`
    /// ([`ConcurrentPlan::image`]'s layout) and the flat `old`/`ok` arrays
    /// (`[group][iteration][item]`). Every iteration's returned value (and a compare-and-swap's
    /// success) is reported; a compare-and-swap loop's registers are those its last successful
    /// attempt leaves ([`crate::concurrent::finish_loops`]). `counts`, where the launch reports
    /// them, are each slot's attempts: a loop's count, 1 for any other instruction.
    /// `executed`, where the launch reports them, are the iterations each work-item executed to
    /// the end (`[group][item]`, [`ConcurrentPlan::thread_base`]; issue 30).
    #[allow(clippy::too_many_arguments)]
    pub fn observe(
        &self,
        lowered: &[Lowered],
        states: &[State],
        image: &[u8],
        old: &[u64],
        ok: &[bool],
        counts: Option<&[u32]>,
        executed: Option<&[u32]>,
    ) -> Result<crate::concurrent::ConcurrentObservation, String> {
        if let Some(e) = executed
            && e.len() != self.threads()
        {
            return Err(format!(
                "{} iteration counts for {} work-items",
                e.len(),
                self.threads()
            ));
        }
        let (mut finals, per) = self.finish_image(states, image, old, ok)?;
        let mut attempts = Vec::new();
        for (k, g) in self.groups.iter().enumerate() {
            let n = g.items.len();
            let base = self.ret_base(k);
            let looped = self.loops.get(k).copied().flatten().is_some();
            attempts.push(
                (0..self.iterations[k] as usize)
                    .map(|it| {
                        (0..n)
                            .map(|i| match counts {
                                Some(c) if looped => c.get(base + it * n + i).copied().unwrap_or(0),
                                _ => 1,
                            })
                            .collect()
                    })
                    .collect(),
            );
            if looped && let Some(last) = per[k].last() {
                crate::concurrent::finish_loops(&lowered[k], &mut finals[k], &last.old)?;
            }
        }
        let returned = per
            .iter()
            .zip(lowered)
            .map(|(its, l)| {
                its.iter()
                    .map(|x| crate::concurrent::observed_of(l, &x.old, &x.ok))
                    .collect()
            })
            .collect();
        Ok(crate::concurrent::ConcurrentObservation {
            states: finals,
            returned: Some(returned),
            attempts: counts.map(|_| attempts),
            executed: executed.map(|e| {
                (0..self.groups.len())
                    .map(|k| e[self.thread_base(k)..self.thread_base(k + 1)].to_vec())
                    .collect()
            }),
        })
    }

    /// Where group `k`'s work-items start in one flat array laid out `[group][item]` (the
    /// iterations each work-item executed, issue 30).
    pub fn thread_base(&self, k: usize) -> usize {
        self.groups.iter().take(k).map(|g| g.items.len()).sum()
    }

    /// How many work-items run an instruction (the length of the flat `[group][item]` array).
    pub fn threads(&self) -> usize {
        self.thread_base(self.groups.len())
    }

    /// Plans a concurrent request whose instructions the reference lowered to `lowered`:
    /// [`ConcurrentPlan::new_or_local`] over the request's states and iterations, with its
    /// compare-and-swap loops and the start line as `ATOMCTS_START_LINE` says.
    pub fn for_request(
        r: &crate::concurrent::ConcurrentRequest<'_>,
        lowered: &[Lowered],
    ) -> Result<ConcurrentPlan, NotApplicable> {
        let states = r.states();
        let iterations = r.iterations();
        let mut cp = ConcurrentPlan::new_or_local(lowered, &states, &iterations)?;
        cp.loops = r.instrs.iter().map(|i| i.cas_loop).collect();
        cp.start_line = start_line_from_env();
        Ok(cp)
    }

    /// The guard of a back end that emits no compare-and-swap loops: not applicable, with
    /// the reason, when an instruction has one (its emitted compare-and-swap would run once
    /// per iteration, which is another program).
    pub fn require_no_loops(&self) -> Result<(), NotApplicable> {
        match self.loops.iter().position(Option::is_some) {
            None => Ok(()),
            Some(k) => Err(NotApplicable(format!(
                "instruction {k} is a compare-and-swap loop (cas_loop), which this back end does not emit"
            ))),
        }
    }

    /// Where group `k`'s returned values start in one flat array laid out
    /// `[group][iteration][item]`, and the array's length.
    pub fn ret_base(&self, k: usize) -> usize {
        self.groups
            .iter()
            .zip(&self.iterations)
            .take(k)
            .map(|(g, n)| g.items.len() * *n as usize)
            .sum()
    }

    /// The length of the flat returned-value array.
    pub fn ret_len(&self) -> usize {
        self.ret_base(self.groups.len())
    }

    /// Each instruction's final state and the per-iteration returned values, from the global
    /// buffer after the run and the flat `old`/`ok` arrays (`[group][iteration][item]`).
    #[allow(clippy::type_complexity)]
    pub fn finish(
        &self,
        states: &[State],
        global: &[u8],
        old: &[u64],
        ok: &[bool],
    ) -> Result<(Vec<State>, Vec<Vec<Returned>>), String> {
        self.finish_with(states, global, None, old, ok)
    }

    /// [`ConcurrentPlan::finish`] with the work-group local memory the run left (`shared`, laid
    /// out as [`ConcurrentPlan::shared`]); `None` keeps the states' own.
    #[allow(clippy::type_complexity)]
    pub fn finish_with(
        &self,
        states: &[State],
        global: &[u8],
        shared: Option<&[u8]>,
        old: &[u64],
        ok: &[bool],
    ) -> Result<(Vec<State>, Vec<Vec<Returned>>), String> {
        let mut out = Vec::new();
        let mut all = Vec::new();
        for (k, ((g, s), l)) in self
            .groups
            .iter()
            .zip(states)
            .zip(&self.lowered)
            .enumerate()
        {
            let n = g.items.len();
            let base = self.ret_base(k);
            let per: Vec<Returned> = (0..self.iterations[k] as usize)
                .map(|it| {
                    let r = base + it * n..base + (it + 1) * n;
                    Returned {
                        old: old.get(r.clone()).map(<[u64]>::to_vec).unwrap_or_default(),
                        ok: ok.get(r).map(<[bool]>::to_vec).unwrap_or_default(),
                    }
                })
                .collect();
            let last = per.last().cloned().unwrap_or_default();
            let own;
            let shared = match shared {
                Some(b) => b,
                None => {
                    own = g.shared.bytes(s, Space::Shared);
                    &own
                }
            };
            out.push(g.finish(l, s, global, shared, &last)?);
            all.push(per);
        }
        Ok((out, all))
    }
}
