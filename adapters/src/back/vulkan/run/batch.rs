//! Batched runs (issue 31, point 1): many single-instruction cases in one command buffer, one
//! submission, one fence wait, one upload and one readback. Each case keeps its own module and
//! pipeline (unchanged: the words a case runs alone), its own descriptor set and its own region
//! of each shared buffer; the command buffer binds and dispatches case after case. It is one
//! submission, not one dispatch: each case is still its own `vkCmdDispatch`.
//!
//! A binding's buffer is laid out `guard | case 0 | guard | case 1 | ... | guard`: every region
//! starts at a multiple of [`VULKAN_REGION_ALIGN`] bytes (or the device's
//! `minStorageBufferOffsetAlignment`, the larger), and at least [`VULKAN_GUARD_BYTES`] bytes of
//! a fixed pattern lie between two regions. A descriptor's range is the case's own size
//! (rounded up to 8 bytes, as a run alone binds it). After the run every byte outside the cases'
//! own bytes is compared with what was uploaded (the pattern, or the zeros that pad a region to
//! 8 bytes): a changed byte makes the cases on both sides of it errors that name the
//! cross-case write, never a pass.
#![allow(unsafe_code)]

use super::pipelines::PipelineKey;
use super::{Cached, Device, HostBuffer, MAX_PIPELINES, take_messages};
use crate::back::vulkan::emit::{BATCH_BASES_STRIDE, Dispatch};
use ash::vk;
use std::sync::Arc;

/// Cases one batch holds at most (the adapter's window, [`crate::Pipelined::window`]).
pub const VULKAN_WINDOW: usize = 256;

/// Bytes of guard pattern between two cases' regions of a buffer (at least).
pub const VULKAN_GUARD_BYTES: u64 = 64;

/// Alignment of a case's region in a shared buffer, in bytes (at least; the device's
/// `minStorageBufferOffsetAlignment` where larger).
pub const VULKAN_REGION_ALIGN: u64 = 64;

/// Bytes of one binding's shared buffer a batch fills at most (more cases wait for the next).
pub const VULKAN_MAX_BATCH_BYTES: u64 = 16 << 20;

/// The guard pattern: byte `o` of a buffer outside every region is `GUARD[o % 4]`.
const GUARD: [u8; 4] = [0xa5, 0x5a, 0xc3, 0x3c];

/// Where one case's buffer lies in a shared buffer.
#[derive(Clone, Copy, Debug)]
struct Region {
    start: u64,
    /// The case's bytes.
    len: u64,
    /// The bound range (`len` rounded up to 8, at least 8).
    range: u64,
}

/// A binding's layout: the cases' regions and the buffer's size.
fn layout(lens: &[u64], align: u64) -> (Vec<Region>, u64) {
    let mut pos = VULKAN_GUARD_BYTES;
    let regions = lens
        .iter()
        .map(|&len| {
            let start = pos.div_ceil(align) * align;
            let range = len.max(8).div_ceil(8) * 8;
            pos = start + range + VULKAN_GUARD_BYTES;
            Region { start, len, range }
        })
        .collect();
    (regions, pos.div_ceil(8) * 8)
}

/// The bytes a binding's buffer holds before the run: the pattern, the cases' bytes, zeros
/// from a case's end to its range's.
fn image(regions: &[Region], total: u64, bytes: &[&[u8]]) -> Vec<u8> {
    let mut v: Vec<u8> = (0..total).map(|o| GUARD[(o % 4) as usize]).collect();
    for (r, b) in regions.iter().zip(bytes) {
        let s = r.start as usize;
        v[s..s + r.range as usize].fill(0);
        v[s..s + b.len()].copy_from_slice(b);
    }
    v
}

/// In each gap between the cases' own bytes, the first byte that differs between `before`
/// and `after`: its offset, what it was and what it is.
fn changed_guards(regions: &[Region], before: &[u8], after: &[u8]) -> Vec<(u64, u8, u8)> {
    let end = Region {
        start: before.len() as u64,
        len: 0,
        range: 0,
    };
    let mut from = 0u64;
    let mut changed = Vec::new();
    for r in regions.iter().chain(std::iter::once(&end)) {
        let (a, b) = (from as usize, r.start as usize);
        if before[a..b] != after[a..b]
            && let Some(i) = (a..b).find(|&i| before[i] != after[i])
        {
            changed.push((i as u64, before[i], after[i]));
        }
        from = r.start + r.len;
    }
    changed
}

/// Which cases lie on either side of byte `at` (a byte of a case's padding: that case and the
/// next).
fn neighbours(regions: &[Region], at: u64) -> (Option<usize>, Option<usize>) {
    let after = regions.iter().position(|r| r.start > at);
    let before = match after {
        Some(0) => None,
        Some(k) => Some(k - 1),
        None => regions.len().checked_sub(1),
    };
    (before, after)
}

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
    let mut words: Vec<u32> = Vec::new();
    let mut starts = Vec::with_capacity(runs.len());
    for run in runs {
        let at = (words.len() as u64 * 4).div_ceil(align) * align;
        words.resize((at / 4) as usize, 0);
        starts.push(at);
        if let Run::Shape { cases, .. } = run {
            for &c in cases {
                let mut w = [0u32; BATCH_BASES_STRIDE as usize];
                for (b, (regions, ..)) in shared.iter().enumerate().take(w.len()) {
                    // A binding's buffer is at most VULKAN_MAX_BATCH_BYTES plus guards.
                    w[b] = regions[c].start as u32;
                }
                words.extend_from_slice(&w);
            }
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
        let align = VULKAN_REGION_ALIGN.max(self.offset_align);
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
            for (at, was, now) in changed_guards(regions, before, after) {
                let (a, b) = neighbours(regions, at);
                let name = |k: Option<usize>| {
                    k.and_then(|k| names.get(k))
                        .map_or("(none: the buffer's edge)".to_string(), |n| {
                            format!("`{n}`")
                        })
                };
                let role = ds
                    .iter()
                    .find_map(|d| d.buffers.get(i).map(|b| b.role))
                    .unwrap_or("");
                let why = format!(
                    "cross-case write: byte {at:#010x} of shared binding {i} ({role}), in the guard between case {} and case {}, changed from {was:#04x} to {now:#04x} (batched run; ATOMCTS_VULKAN_BATCH=1 runs each case alone)",
                    name(a),
                    name(b)
                );
                for k in [a, b].into_iter().flatten() {
                    if verdicts[k].is_ok() {
                        verdicts[k] = Err(why.clone());
                    }
                }
            }
        }
        Ok(verdicts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_are_aligned_and_guarded() {
        let (rs, total) = layout(&[4, 100, 0, 8], 64);
        let mut end = 0;
        for r in &rs {
            assert_eq!(r.start % 64, 0);
            assert!(r.start >= end + VULKAN_GUARD_BYTES, "{rs:?}");
            assert_eq!(r.range % 8, 0);
            assert!(r.range >= r.len.max(8));
            end = r.start + r.range;
        }
        assert!(total >= end + VULKAN_GUARD_BYTES);
        let (rs, _) = layout(&[4, 4], 256);
        assert_eq!((rs[0].start, rs[1].start), (256, 512));
    }

    #[test]
    fn a_changed_guard_names_both_neighbours() {
        let (rs, total) = layout(&[4, 4, 4], 64);
        let case = [1u8, 2, 3, 4];
        let before = image(&rs, total, &[&case, &case, &case]);
        let mut after = before.clone();
        // Each case's own bytes may change.
        after[rs[1].start as usize] = 9;
        assert_eq!(changed_guards(&rs, &before, &after), vec![]);
        // Padding past a case's bytes is checked too.
        after[(rs[1].start + 4) as usize] = 1;
        let (at, was, now) = changed_guards(&rs, &before, &after)[0];
        assert_eq!((at, was, now), (rs[1].start + 4, 0, 1));
        assert_eq!(neighbours(&rs, at), (Some(1), Some(2)));
        let mut after = before.clone();
        after[0] ^= 0xff;
        let (at, ..) = changed_guards(&rs, &before, &after)[0];
        assert_eq!(neighbours(&rs, at), (None, Some(0)));
        let mut after = before.clone();
        let last = after.len() - 1;
        after[last] ^= 1;
        let (at, ..) = changed_guards(&rs, &before, &after)[0];
        assert_eq!(neighbours(&rs, at), (Some(2), None));
        // Every changed gap is reported, not only the first.
        after[(rs[0].start + 4) as usize] ^= 1;
        let gaps: Vec<_> = changed_guards(&rs, &before, &after)
            .iter()
            .map(|c| neighbours(&rs, c.0))
            .collect();
        assert_eq!(gaps, [(Some(0), Some(1)), (Some(2), None)]);
    }
}
