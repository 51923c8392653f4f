//! Batched launches on Vulkan (issue 31, point 1): the adapter is [`crate::Pipelined`] with a
//! window of [`VULKAN_WINDOW`] cases. [`crate::Pipelined::send`] lowers, plans and emits a case
//! (and, on the WGSL route, has naga compile it), answering what does not apply at once; the
//! first [`crate::Pipelined::receive`] with no answer ready runs every case sent so far:
//! single-instruction memory cases together in batches ([`super::run::batch`]: one command
//! buffer, one submission, one fence wait, one upload and one readback per batch, each case its
//! own work-group, pipeline, descriptor set and guarded region of the shared buffers), SIMD-group
//! exchanges alone as before. Each answer is then judged exactly as a case run alone.
//! Concurrent cases never enter the window (the runner runs them alone). A batch that fails as
//! a whole (a driver error, a validation-layer message with `ATOMCTS_VULKAN_VALIDATION=1`)
//! makes every case of it an error: `ATOMCTS_VULKAN_BATCH=1` then tells which case it was.
//!
//! `ATOMCTS_VULKAN_BATCH=1`, and capturing dispatches for `atomcts repro`, turn batching off:
//! every case runs alone (one submission each), the path before issue 31.

use super::emit::{Dispatch, Operands, Plant};
pub use super::run::batch::{VULKAN_MAX_BATCH_BYTES, VULKAN_WINDOW};
use super::{Planned, Prepared, VulkanAdapter, finish};
use crate::back::Backend;
use crate::back::regions::{GUARD_BYTES, REGION_ALIGN};
use crate::{AdapterError, AdapterErrorKind, Observation, Request};

/// The program printed for a failing case ([`crate::Adapter::last_program`]): the module is
/// disassembled only when asked for.
#[derive(Clone, Debug)]
pub enum Last {
    /// Already written out.
    Text(String),
    /// A single-instruction case's module, its operands and (WGSL route) its WGSL source.
    Program {
        /// [`Dispatch::operands`].
        operands: Operands,
        /// The WGSL source, on the WGSL route.
        wgsl: Option<std::sync::Arc<str>>,
        /// The SPIR-V words (naga's on the WGSL route).
        words: Vec<u32>,
        /// Whether the case ran in its batch's dispatch of the batched form.
        batched: bool,
    },
}

impl Last {
    /// A single-instruction case's program: printed only for a failing case, disassembled
    /// then.
    pub fn program(p: &Prepared) -> Last {
        Last::Program {
            operands: p.dispatch.operands.clone(),
            wgsl: p.wgsl.clone(),
            words: p.dispatch.words.clone(),
            batched: false,
        }
    }

    /// The program as printed: the operands, then the disassembly (the WGSL route: the WGSL
    /// source, then naga's SPIR-V as comments).
    pub fn text(&self) -> String {
        match self {
            Last::Text(t) => t.clone(),
            Last::Program {
                operands,
                wgsl,
                words,
                batched,
            } => {
                // What ran, where it is not what is printed.
                let mut operands = operands.text();
                if *batched {
                    let c = if wgsl.is_some() { "//" } else { ";" };
                    operands.insert_str(
                        0,
                        &format!(
                            "{c} ran batched: one work-group of a dispatch of the batch's cases of this shape, of this program's batched form (its buffers' offsets read from a bases buffer); printed as it runs alone (ATOMCTS_VULKAN_BATCH=1)\n"
                        ),
                    );
                }
                let d = Dispatch {
                    words: words.clone(),
                    local_size: 0,
                    groups: 0,
                    subgroup_size: None,
                    buffers: vec![],
                    ret_bytes: 0,
                    operands: Operands::Text(operands.clone()),
                    batched: None,
                };
                match wgsl {
                    Some(src) => format!(
                        "{operands}{src}\n// naga's SPIR-V:\n{}",
                        d.disassemble()
                            .lines()
                            .map(|l| format!("// {l}\n"))
                            .collect::<String>()
                    ),
                    None => d.listing(),
                }
            }
        }
    }
}

/// A case sent, waiting for its batch.
pub struct Queued {
    prepared: Prepared,
    id: String,
}

/// A case run, waiting to be received.
pub struct Answered {
    prepared: Prepared,
    answer: Result<(), AdapterErrorKind>,
    /// Whether it ran in its batch's dispatch of the batched form.
    batched: bool,
}

/// What a case costs of one binding's shared buffer, at most.
fn cost(d: &Dispatch) -> u64 {
    let largest = d.buffers.iter().map(|b| b.bytes.len() as u64).max();
    largest.unwrap_or(0).max(8).div_ceil(8) * 8 + GUARD_BYTES + 2 * REGION_ALIGN
}

impl VulkanAdapter {
    /// Runs every queued case and files the answers, in the order sent.
    fn flush(&mut self) {
        let mut batch: Vec<Queued> = self.queued.drain(..).collect();
        let mut answers: Vec<Option<Result<(), AdapterErrorKind>>> =
            (0..batch.len()).map(|_| None).collect();
        // Single-instruction memory cases in batches bounded by bytes; the rest alone.
        let mut groups: Vec<Vec<usize>> = vec![];
        let (mut group, mut bytes) = (vec![], 0);
        for (k, q) in batch.iter_mut().enumerate() {
            let c = cost(&q.prepared.dispatch);
            if !matches!(q.prepared.plan, Planned::Mem(_)) || c > VULKAN_MAX_BATCH_BYTES {
                let d = &mut q.prepared.dispatch;
                answers[k] = Some(self.device.run(d).map_err(AdapterErrorKind::Crashed));
                continue;
            }
            if bytes + c > VULKAN_MAX_BATCH_BYTES {
                groups.push(std::mem::take(&mut group));
                bytes = 0;
            }
            group.push(k);
            bytes += c;
        }
        groups.push(group);
        let widen = if self.plant == Plant::CrossCaseWrite {
            8
        } else {
            0
        };
        let mut ran_batched = vec![false; batch.len()];
        for g in groups.into_iter().filter(|g| !g.is_empty()) {
            for &k in &g {
                ran_batched[k] = batch[k].prepared.dispatch.batched.is_some();
            }
            let names: Vec<String> = g.iter().map(|&k| batch[k].id.clone()).collect();
            let mut ds: Vec<&mut Dispatch> = batch
                .iter_mut()
                .enumerate()
                .filter(|(k, _)| g.contains(k))
                .map(|(_, q)| &mut q.prepared.dispatch)
                .collect();
            match self.device.run_many(&mut ds, &names, widen) {
                Ok(verdicts) => {
                    for (&k, v) in g.iter().zip(verdicts) {
                        answers[k] = Some(v.map_err(AdapterErrorKind::Crashed));
                    }
                }
                Err(e) => {
                    for &k in &g {
                        answers[k] = Some(Err(AdapterErrorKind::Crashed(e.clone())));
                    }
                }
            }
        }
        for ((q, answer), batched) in batch.into_iter().zip(answers).zip(ran_batched) {
            self.answered.push_back(Answered {
                batched,
                prepared: q.prepared,
                answer: answer.unwrap_or_else(|| {
                    Err(AdapterErrorKind::Model(
                        "the case was not run (a back-end bug)".into(),
                    ))
                }),
            });
        }
    }
}

impl crate::Pipelined for VulkanAdapter {
    fn window(&self) -> usize {
        VULKAN_WINDOW
    }

    fn send(&mut self, r: &Request<'_>) -> Result<(), AdapterError> {
        self.last = None;
        self.dispatch = None;
        let lowered = crate::back::lower(r).map_err(|k| self.err(k))?;
        let mut prepared = Backend::emit(self, r, &lowered).map_err(|k| self.err(k))?;
        self.ready(&mut prepared).map_err(|k| self.err(k))?;
        self.queued.push_back(Queued {
            prepared,
            id: r.id.to_string(),
        });
        Ok(())
    }

    fn receive(&mut self, r: &Request<'_>) -> Result<Observation, AdapterError> {
        if self.answered.is_empty() {
            self.flush();
        }
        let Some(mut a) = self.answered.pop_front() else {
            return Err(self.err(AdapterErrorKind::Protocol(
                "an answer was asked for a case that was never sent".into(),
            )));
        };
        self.dispatch = None;
        let answer = a
            .answer
            .and_then(|()| finish(&a.prepared.plan, r, &mut a.prepared.dispatch));
        // The program printed for it (a failing case), moved out rather than copied per case.
        let p = a.prepared;
        self.last = Some(Last::Program {
            operands: p.dispatch.operands,
            wgsl: p.wgsl,
            words: p.dispatch.words,
            batched: a.batched,
        });
        answer.map(Observation::Completed).map_err(|k| self.err(k))
    }
}
