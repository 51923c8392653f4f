//! Batched runs (issue 31, point 1): many single-instruction cases in one command buffer, one
//! submission, one fence wait, one upload and one readback, each case in its own region of each
//! shared buffer ([`crate::back::regions`]: guarded, checked after the run). The cases
//! of one batched module ([`Dispatch::batched`]: the same shape) are one `vkCmdDispatch`, a
//! work-group per case, which binds the whole shared buffers and a bases buffer telling each
//! work-group where its case's regions start; a case without a batched form (where naga does
//! not compile the WGSL route's batched shader) is its own dispatch with its own pipeline and a
//! descriptor set binding its own regions (each range the case's size rounded up to 8 bytes, as
//! a run alone binds it).
#![allow(unsafe_code)]

use super::pipelines::PipelineKey;
use super::{Cached, Device, HostBuffer, MAX_PIPELINES, take_messages};
use crate::back::regions::{REGION_ALIGN, Region, cross_case_errors, image, layout};
use crate::back::vulkan::emit::{BATCH_BASES_STRIDE, Dispatch, bases_words};
use ash::vk;
use std::sync::Arc;

/// Cases one batch holds at most (the adapter's window, [`crate::Pipelined::window`]).
pub const VULKAN_WINDOW: usize = 256;

/// Bytes of one binding's shared buffer a batch fills at most (more cases wait for the next).
pub const VULKAN_MAX_BATCH_BYTES: u64 = 16 << 20;

/// One `vkCmdDispatch` of a batch.
enum Run {
    /// The cases (indices into the batch) of one batched module ([`Dispatch::batched`]), a
    /// work-group each.
    Shape {
        words: Arc<[u32]>,
        cases: Vec<usize>,
    },
    /// A case without a batched form, as its own dispatch.
    Alone(usize),
}

/// The batch's dispatches, in the order of each's first case: the cases of one batched module
/// (the same words and bindings) together.
fn runs(ds: &[&mut Dispatch]) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    for (c, d) in ds.iter().enumerate() {
        let Some(words) = &d.batched else {
            runs.push(Run::Alone(c));
            continue;
        };
        let same = runs.iter_mut().find_map(|r| match r {
            Run::Shape { words: w, cases }
                if Arc::ptr_eq(w, words) && ds[cases[0]].buffers.len() == d.buffers.len() =>
            {
                Some(cases)
            }
            _ => None,
        });
        match same {
            Some(cases) => cases.push(c),
            None => runs.push(Run::Shape {
                words: words.clone(),
                cases: vec![c],
            }),
        }
    }
    runs
}

/// The bases buffer's words and, per run, where its part starts (bytes, a multiple of
/// `align`): for each case of a batched run, [`BATCH_BASES_STRIDE`] words, word `b` the byte
/// offset of the case's region in binding `b`.
fn bases(
    runs: &[Run],
    shared: &[(Vec<Region>, Vec<u8>, HostBuffer)],
    align: u64,
) -> (Vec<u32>, Vec<u64>) {
    let regions: Vec<&[Region]> = shared.iter().map(|(r, ..)| &r[..]).collect();
    let mut words: Vec<u32> = Vec::new();
    let mut starts = Vec::with_capacity(runs.len());
    for run in runs {
        let at = (words.len() as u64 * 4).div_ceil(align) * align;
        words.resize((at / 4) as usize, 0);
        starts.push(at);
        if let Run::Shape { cases, .. } = run {
            words.extend(bases_words(cases, &regions));
        }
    }
    (words, starts)
}

impl Device {
    /// Runs `ds` (single-instruction dispatches, one work-group each) as one batch and reads
    /// every buffer back into each dispatch. `Err`: the batch did not run (every case's error);
    /// `Ok`: per case, `Err` when a guard beside it changed (naming the write and `names` of
    /// the cases on both sides). `widen`: bytes added to each case's memory range (the
    /// `cross_case_write` plant, so that the planted write stays inside the bound range).
    pub fn run_many(
        &mut self,
        ds: &mut [&mut Dispatch],
        names: &[String],
        widen: u64,
    ) -> Result<Vec<Result<(), String>>, String> {
        take_messages();
        let r = self.run_many_inner(ds, names, widen);
        if r.is_err() {
            self.drop_reused();
        }
        let msgs = take_messages();
        match r {
            Ok(v) if msgs.is_empty() => Ok(v),
            Ok(_) => Err(format!("validation layer: {}", msgs.join(" | "))),
            Err(e) if msgs.is_empty() => Err(e),
            Err(e) => Err(format!("{e}; validation layer: {}", msgs.join(" | "))),
        }
    }

    fn run_many_inner(
        &mut self,
        ds: &mut [&mut Dispatch],
        names: &[String],
        widen: u64,
    ) -> Result<Vec<Result<(), String>>, String> {
        if ds.len() > VULKAN_WINDOW {
            return Err(format!(
                "{} cases in one batch (at most {VULKAN_WINDOW}; a back-end bug)",
                ds.len()
            ));
        }
        let bindings = ds.iter().map(|d| d.buffers.len()).max().unwrap_or(0);
        if bindings > super::MAX_BINDINGS as usize {
            return Err(format!(
                "{bindings} storage buffers (this back end binds at most {})",
                super::MAX_BINDINGS
            ));
        }
        // The dispatches: each batched module's cases together (a work-group each), the rest
        // alone. Every pipeline first (a full cache is emptied before, never during, a batch).
        let runs = runs(ds);
        if self.pipelines.map.len() + runs.len() > MAX_PIPELINES {
            self.pipelines.clear(&self.device);
        }
        let pipelines: Vec<Cached> = runs
            .iter()
            .map(|run| match run {
                Run::Shape { words, cases } => self.pipeline_of(PipelineKey {
                    words: words.to_vec(),
                    subgroup_size: None,
                    bindings: ds[cases[0]].buffers.len() as u32 + 1,
                }),
                Run::Alone(c) => self.pipeline(ds[*c]),
            })
            .collect::<Result<_, _>>()?;
        self.reused()?;
        let align = REGION_ALIGN.max(self.offset_align);
        // Each binding: its layout, uploaded image and host buffer.
        let mut shared = Vec::with_capacity(bindings);
        for i in 0..bindings {
            let lens: Vec<u64> = ds
                .iter()
                .map(|d| d.buffers.get(i).map_or(0, |b| b.bytes.len() as u64))
                .collect();
            let (regions, total) = layout(&lens, align);
            let bytes: Vec<&[u8]> = ds
                .iter()
                .map(|d| d.buffers.get(i).map_or(&[][..], |b| &b.bytes[..]))
                .collect();
            let before = image(&regions, total, &bytes);
            let hb = self.host_buffer(i, total)?;
            unsafe { std::ptr::copy_nonoverlapping(before.as_ptr(), hb.ptr, before.len()) };
            shared.push((regions, before, hb));
        }
        // The bases buffer (after the shared ones): per batched run, from an aligned start,
        // each case's byte offset in every binding ([`Dispatch::batched`]).
        let (bases, starts) = bases(&runs, &shared, align);
        let bases_hb = self.host_buffer(bindings, (bases.len() as u64 * 4).max(8))?;
        unsafe {
            std::ptr::copy_nonoverlapping(
                bases.as_ptr().cast::<u8>(),
                bases_hb.ptr,
                bases.len() * 4,
            )
        };
        let dev = &self.device;
        let Some(r) = self.reused.as_ref() else {
            return Err("no reused objects (a back-end bug)".into());
        };
        unsafe { dev.reset_descriptor_pool(r.batch_pool, vk::DescriptorPoolResetFlags::empty()) }
            .map_err(|e| format!("vkResetDescriptorPool: {e}"))?;
        let layouts: Vec<vk::DescriptorSetLayout> =
            pipelines.iter().map(|p| p.set_layout).collect();
        let dsai = vk::DescriptorSetAllocateInfo::default()
            .descriptor_pool(r.batch_pool)
            .set_layouts(&layouts);
        let sets = unsafe { dev.allocate_descriptor_sets(&dsai) }
            .map_err(|e| format!("vkAllocateDescriptorSets (batch): {e}"))?;
        let mut infos = Vec::new();
        for (k, run) in runs.iter().enumerate() {
            let info = |buffer: vk::Buffer, offset: u64, range: u64| {
                [vk::DescriptorBufferInfo::default()
                    .buffer(buffer)
                    .offset(offset)
                    .range(range)]
            };
            match run {
                // A batched module indexes the whole buffers from its case's bases.
                Run::Shape { cases, .. } => {
                    let n = ds[cases[0]].buffers.len();
                    for (i, (_, before, hb)) in shared.iter().enumerate().take(n) {
                        infos.push((k, i, info(hb.buffer, 0, before.len() as u64)));
                    }
                    let range = cases.len() as u64 * u64::from(BATCH_BASES_STRIDE) * 4;
                    infos.push((k, n, info(bases_hb.buffer, starts[k], range)));
                }
                // A case alone binds its own regions, as a run alone would.
                Run::Alone(c) => {
                    for (i, (regions, _, hb)) in
                        shared.iter().enumerate().take(ds[*c].buffers.len())
                    {
                        let g = regions[*c];
                        let range = g.range + if i == 0 { widen } else { 0 };
                        infos.push((k, i, info(hb.buffer, g.start, range)));
                    }
                }
            }
        }
        let writes: Vec<_> = infos
            .iter()
            .map(|(k, i, info)| (sets[*k], *i, info))
            .collect();
        let record = |dev: &ash::Device, cb: vk::CommandBuffer| {
            for ((run, p), set) in runs.iter().zip(&pipelines).zip(&sets) {
                let groups = match run {
                    Run::Shape { cases, .. } => cases.len() as u32,
                    Run::Alone(c) => ds[*c].groups.max(1),
                };
                unsafe {
                    dev.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, p.pipeline);
                    dev.cmd_bind_descriptor_sets(
                        cb,
                        vk::PipelineBindPoint::COMPUTE,
                        p.pipeline_layout,
                        0,
                        &[*set],
                        &[],
                    );
                    dev.cmd_dispatch(cb, groups, 1, 1);
                }
            }
        };
        self.record_and_wait(
            r,
            &writes,
            record,
            &format!("a batch of {} cases", ds.len()),
        )?;
        self.dispatches += runs.len() as u64;
        let mut verdicts: Vec<Result<(), String>> = vec![Ok(()); ds.len()];
        for (i, (regions, before, hb)) in shared.iter().enumerate() {
            let after = unsafe { std::slice::from_raw_parts(hb.ptr, before.len()) };
            for (c, d) in ds.iter_mut().enumerate() {
                if let Some(b) = d.buffers.get_mut(i) {
                    let (s, n) = (regions[c].start as usize, b.bytes.len());
                    b.bytes.copy_from_slice(&after[s..s + n]);
                }
            }
            let role = ds
                .iter()
                .find_map(|d| d.buffers.get(i).map(|b| b.role))
                .unwrap_or("");
            let alone = "ATOMCTS_VULKAN_BATCH=1 runs each case alone";
            for (k, why) in cross_case_errors(regions, (before, after), names, (i, role), alone) {
                if verdicts[k].is_ok() {
                    verdicts[k] = Err(why);
                }
            }
        }
        Ok(verdicts)
    }
}
