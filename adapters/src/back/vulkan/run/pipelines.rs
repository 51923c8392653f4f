//! The pipeline cache of [`super::Device`]: a compute pipeline built once per module and kept
//! (issue 9: one per shape, not one per case), destroyed with the device or when full.

use super::super::emit::ENTRY;
use ash::vk;
use std::ffi::CString;

/// The most storage buffers a dispatch binds (the emitters use at most 6).
pub(super) const MAX_BINDINGS: u32 = 8;

/// The most pipelines kept; when full, the cache is emptied (a module's text depends only on
/// its shape: op, type, space, invocations; the corpus has a few hundred).
pub(super) const MAX_PIPELINES: usize = 1024;

/// What identifies a pipeline: the module, the required sub-group size and the bindings.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct PipelineKey {
    pub(super) words: Vec<u32>,
    pub(super) subgroup_size: Option<u32>,
    pub(super) bindings: u32,
}

/// A built pipeline and what it needs, destroyed with the device (or when the cache is
/// emptied).
#[derive(Clone, Copy, Debug)]
pub(super) struct Cached {
    pub(super) module: vk::ShaderModule,
    pub(super) set_layout: vk::DescriptorSetLayout,
    pub(super) pipeline_layout: vk::PipelineLayout,
    pub(super) pipeline: vk::Pipeline,
}

impl Cached {
    pub(super) fn destroy(&self, d: &ash::Device) {
        unsafe {
            if self.pipeline != vk::Pipeline::null() {
                d.destroy_pipeline(self.pipeline, None);
            }
            if self.pipeline_layout != vk::PipelineLayout::null() {
                d.destroy_pipeline_layout(self.pipeline_layout, None);
            }
            if self.set_layout != vk::DescriptorSetLayout::null() {
                d.destroy_descriptor_set_layout(self.set_layout, None);
            }
            if self.module != vk::ShaderModule::null() {
                d.destroy_shader_module(self.module, None);
            }
        }
    }
}

/// Built pipelines by module (issue 9: one per shape, not one per case).
#[derive(Default)]
pub(super) struct Pipelines {
    pub(super) map: std::collections::HashMap<PipelineKey, Cached>,
    pub(super) built: u64,
    pub(super) hits: u64,
}

impl Pipelines {
    /// Destroys every pipeline (none is in use: each run waits for its fence).
    pub(super) fn clear(&mut self, d: &ash::Device) {
        for (_, c) in self.map.drain() {
            c.destroy(d);
        }
    }
}

/// Builds the shader module, layouts and compute pipeline of `key`; on failure destroys what
/// it made.
pub(super) fn build_pipeline(
    dev: &ash::Device,
    cache: vk::PipelineCache,
    key: &PipelineKey,
) -> Result<Cached, String> {
    let mut c = Cached {
        module: vk::ShaderModule::null(),
        set_layout: vk::DescriptorSetLayout::null(),
        pipeline_layout: vk::PipelineLayout::null(),
        pipeline: vk::Pipeline::null(),
    };
    let made = (|| -> Result<(), String> {
        let smci = vk::ShaderModuleCreateInfo::default().code(&key.words);
        c.module = unsafe { dev.create_shader_module(&smci, None) }
            .map_err(|e| format!("vkCreateShaderModule: {e}"))?;
        let bindings: Vec<_> = (0..key.bindings)
            .map(|i| {
                vk::DescriptorSetLayoutBinding::default()
                    .binding(i)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE)
            })
            .collect();
        let dslci = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
        c.set_layout = unsafe { dev.create_descriptor_set_layout(&dslci, None) }
            .map_err(|e| format!("vkCreateDescriptorSetLayout: {e}"))?;
        let layouts = [c.set_layout];
        let plci = vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts);
        c.pipeline_layout = unsafe { dev.create_pipeline_layout(&plci, None) }
            .map_err(|e| format!("vkCreatePipelineLayout: {e}"))?;
        let entry = CString::new(ENTRY).map_err(|e| e.to_string())?;
        let mut required = vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo::default()
            .required_subgroup_size(key.subgroup_size.unwrap_or(0));
        let mut stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(c.module)
            .name(&entry);
        if key.subgroup_size.is_some() {
            stage = stage
                .flags(vk::PipelineShaderStageCreateFlags::REQUIRE_FULL_SUBGROUPS)
                .push_next(&mut required);
        }
        let cpci = [vk::ComputePipelineCreateInfo::default()
            .stage(stage)
            .layout(c.pipeline_layout)];
        let pipelines = unsafe { dev.create_compute_pipelines(cache, &cpci, None) }
            .map_err(|(_, e)| format!("vkCreateComputePipelines: {e}"))?;
        c.pipeline = pipelines[0];
        Ok(())
    })();
    match made {
        Ok(()) => Ok(c),
        Err(e) => {
            c.destroy(dev);
            Err(e)
        }
    }
}
