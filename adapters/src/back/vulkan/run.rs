//! Run: a [`Dispatch`] on one Vulkan device through `ash`, with the Vulkan loader
//! (`libvulkan.so.1`) loaded at run time, so nothing here is needed to build or test.
//!
//! The calls are foreign functions; this module allows `unsafe` for them. Every call's result
//! is checked; buffers are host-visible and coherent, read only after a pipeline barrier to the
//! host and the fence; every object is destroyed on every path ([`Guard`]). With validation
//! on (`ATOMCTS_VULKAN_VALIDATION=1`), the Khronos validation layer is enabled and each of its
//! warnings and errors during a case makes that case an infrastructure error.
#![allow(unsafe_code)]

use super::emit::{Dispatch, ENTRY, Features};
use ash::{Entry, Instance, vk};
use std::ffi::{CStr, CString, c_void};
use std::sync::Mutex;

/// The Khronos validation layer.
pub const VALIDATION_LAYER: &str = "VK_LAYER_KHRONOS_validation";

/// What the device reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceInfo {
    /// `deviceName`.
    pub name: String,
    /// `apiVersion`, major.minor.patch.
    pub api_version: String,
    /// `driverName` / `driverInfo` (Vulkan 1.2).
    pub driver: String,
    /// The features the emitters use.
    pub features: Features,
}

/// Validation-layer messages of the running case.
static MESSAGES: Mutex<Vec<String>> = Mutex::new(Vec::new());

unsafe extern "system" fn on_message(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    _user: *mut c_void,
) -> vk::Bool32 {
    if severity.intersects(
        vk::DebugUtilsMessageSeverityFlagsEXT::WARNING
            | vk::DebugUtilsMessageSeverityFlagsEXT::ERROR,
    ) {
        let text = unsafe {
            data.as_ref()
                .and_then(|d| d.message_as_c_str())
                .map(|m| m.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        if let Ok(mut m) = MESSAGES.lock() {
            m.push(text);
        }
    }
    vk::FALSE
}

fn take_messages() -> Vec<String> {
    MESSAGES
        .lock()
        .map(|mut m| std::mem::take(&mut *m))
        .unwrap_or_default()
}

/// An open device with one compute queue.
pub struct Device {
    _entry: Entry,
    instance: Instance,
    debug: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    device: ash::Device,
    queue: vk::Queue,
    family: u32,
    memory: vk::PhysicalDeviceMemoryProperties,
    /// What it reports.
    pub info: DeviceInfo,
}

impl Drop for Device {
    fn drop(&mut self) {
        unsafe {
            let _ = self.device.device_wait_idle();
            self.device.destroy_device(None);
            if let Some((d, m)) = self.debug.take() {
                d.destroy_debug_utils_messenger(m, None);
            }
            self.instance.destroy_instance(None);
        }
    }
}

fn cstr(bytes: &[std::ffi::c_char]) -> String {
    // SAFETY-free: the arrays are NUL-terminated fixed-size strings from the driver.
    let bytes: Vec<u8> = bytes
        .iter()
        .take_while(|c| **c != 0)
        .map(|c| *c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn version(v: u32) -> String {
    format!(
        "{}.{}.{}",
        vk::api_version_major(v),
        vk::api_version_minor(v),
        vk::api_version_patch(v)
    )
}

/// Whether the Vulkan loader can be loaded here; `Err` says why not, in one line.
pub fn loader() -> Result<Entry, String> {
    unsafe { Entry::load() }.map_err(|e| format!("no Vulkan loader (libvulkan.so.1): {e}"))
}

/// Names of the physical devices the loader offers (for `list adapters`).
pub fn device_names() -> Result<Vec<String>, String> {
    let entry = loader()?;
    let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
    let ci = vk::InstanceCreateInfo::default().application_info(&app);
    let instance = unsafe { entry.create_instance(&ci, None) }
        .map_err(|e| format!("vkCreateInstance: {e}"))?;
    let names = unsafe { instance.enumerate_physical_devices() }
        .map(|pds| {
            pds.iter()
                .map(|pd| {
                    let p = unsafe { instance.get_physical_device_properties(*pd) };
                    cstr(&p.device_name)
                })
                .collect()
        })
        .map_err(|e| format!("vkEnumeratePhysicalDevices: {e}"));
    unsafe { instance.destroy_instance(None) };
    names
}

impl Device {
    /// Opens the first physical device whose name contains `pattern` (case-insensitive), with
    /// the validation layer when `validation`.
    pub fn open(pattern: &str, validation: bool) -> Result<Device, String> {
        let entry = loader()?;
        let app_name = CString::new("atomcts").map_err(|e| e.to_string())?;
        let app = vk::ApplicationInfo::default()
            .application_name(&app_name)
            .api_version(vk::API_VERSION_1_3);
        let layer = CString::new(VALIDATION_LAYER).map_err(|e| e.to_string())?;
        let layers = if validation {
            let have = unsafe { entry.enumerate_instance_layer_properties() }
                .map_err(|e| format!("vkEnumerateInstanceLayerProperties: {e}"))?;
            if !have.iter().any(|l| cstr(&l.layer_name) == VALIDATION_LAYER) {
                return Err(format!(
                    "validation requested but {VALIDATION_LAYER} is not installed (install vulkan-validationlayers)"
                ));
            }
            vec![layer.as_ptr()]
        } else {
            vec![]
        };
        let exts = if validation {
            vec![ash::ext::debug_utils::NAME.as_ptr()]
        } else {
            vec![]
        };
        let ci = vk::InstanceCreateInfo::default()
            .application_info(&app)
            .enabled_layer_names(&layers)
            .enabled_extension_names(&exts);
        let instance = unsafe { entry.create_instance(&ci, None) }
            .map_err(|e| format!("vkCreateInstance: {e}"))?;
        let mut opened = OpenGuard {
            instance: Some(instance.clone()),
            debug: None,
        };
        if validation {
            let du = ash::ext::debug_utils::Instance::new(&entry, &instance);
            let mci = vk::DebugUtilsMessengerCreateInfoEXT::default()
                .message_severity(
                    vk::DebugUtilsMessageSeverityFlagsEXT::WARNING
                        | vk::DebugUtilsMessageSeverityFlagsEXT::ERROR,
                )
                .message_type(
                    vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
                        | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
                        | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE,
                )
                .pfn_user_callback(Some(on_message));
            let m = unsafe { du.create_debug_utils_messenger(&mci, None) }
                .map_err(|e| format!("vkCreateDebugUtilsMessengerEXT: {e}"))?;
            opened.debug = Some((du, m));
        }
        let pds = unsafe { instance.enumerate_physical_devices() }
            .map_err(|e| format!("vkEnumeratePhysicalDevices: {e}"))?;
        let pat = pattern.to_lowercase();
        let mut seen = Vec::new();
        let mut chosen = None;
        for pd in pds {
            let p = unsafe { instance.get_physical_device_properties(pd) };
            let name = cstr(&p.device_name);
            if name.to_lowercase().contains(&pat) {
                chosen = Some((pd, p, name));
                break;
            }
            seen.push(name);
        }
        let Some((pd, props, name)) = chosen else {
            return Err(if seen.is_empty() {
                "the Vulkan loader offers no device".into()
            } else {
                format!(
                    "no Vulkan device matches `{pattern}` (have: {})",
                    seen.join("; ")
                )
            });
        };
        if props.api_version < vk::API_VERSION_1_3 {
            return Err(format!(
                "{name} reports Vulkan {}; this back end needs 1.3 (subgroup size control)",
                version(props.api_version)
            ));
        }
        // What the device reports.
        let ext_names: Vec<String> = unsafe { instance.enumerate_device_extension_properties(pd) }
            .map_err(|e| format!("vkEnumerateDeviceExtensionProperties: {e}"))?
            .iter()
            .map(|e| cstr(&e.extension_name))
            .collect();
        let has_ext = |n: &CStr| ext_names.iter().any(|e| e.as_bytes() == n.to_bytes());
        let float1 = has_ext(ash::ext::shader_atomic_float::NAME);
        let float2 = has_ext(ash::ext::shader_atomic_float2::NAME);
        let mut p11 = vk::PhysicalDeviceVulkan11Properties::default();
        let mut p12 = vk::PhysicalDeviceVulkan12Properties::default();
        let mut p13 = vk::PhysicalDeviceVulkan13Properties::default();
        let mut p2 = vk::PhysicalDeviceProperties2::default()
            .push_next(&mut p11)
            .push_next(&mut p12)
            .push_next(&mut p13);
        unsafe { instance.get_physical_device_properties2(pd, &mut p2) };
        let limits = p2.properties.limits;
        let (sg_stages, sg_ops) = (
            p11.subgroup_supported_stages,
            p11.subgroup_supported_operations,
        );
        let (min_sg, max_sg, req_stages) = (
            p13.min_subgroup_size,
            p13.max_subgroup_size,
            p13.required_subgroup_size_stages,
        );
        let (ftz32, preserve32) = (
            p12.shader_denorm_flush_to_zero_float32 == vk::TRUE,
            p12.shader_denorm_preserve_float32 == vk::TRUE,
        );
        let driver = format!("{} {}", cstr(&p12.driver_name), cstr(&p12.driver_info));
        let mut f11 = vk::PhysicalDeviceVulkan11Features::default();
        let mut f12 = vk::PhysicalDeviceVulkan12Features::default();
        let mut f13 = vk::PhysicalDeviceVulkan13Features::default();
        let mut fa1 = vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT::default();
        let mut fa2 = vk::PhysicalDeviceShaderAtomicFloat2FeaturesEXT::default();
        {
            let mut f2 = vk::PhysicalDeviceFeatures2::default()
                .push_next(&mut f11)
                .push_next(&mut f12)
                .push_next(&mut f13);
            if float1 {
                f2 = f2.push_next(&mut fa1);
            }
            if float2 {
                f2 = f2.push_next(&mut fa2);
            }
            unsafe { instance.get_physical_device_features2(pd, &mut f2) };
        }
        let base = unsafe { instance.get_physical_device_features(pd) };
        let on = |b: vk::Bool32| b == vk::TRUE;
        let compute = |s: vk::ShaderStageFlags| s.contains(vk::ShaderStageFlags::COMPUTE);
        let features = Features {
            int64: on(base.shader_int64),
            buffer_int64_atomics: on(f12.shader_buffer_int64_atomics),
            shared_int64_atomics: on(f12.shader_shared_int64_atomics),
            buffer_f32_add: float1 && on(fa1.shader_buffer_float32_atomic_add),
            shared_f32_add: float1 && on(fa1.shader_shared_float32_atomic_add),
            buffer_f32_minmax: float2 && on(fa2.shader_buffer_float32_atomic_min_max),
            shared_f32_minmax: float2 && on(fa2.shader_shared_float32_atomic_min_max),
            denorm_ftz_f32: ftz32,
            denorm_preserve_f32: preserve32,
            subgroup_basic: compute(sg_stages) && sg_ops.contains(vk::SubgroupFeatureFlags::BASIC),
            subgroup_shuffle: compute(sg_stages)
                && sg_ops.contains(vk::SubgroupFeatureFlags::SHUFFLE),
            subgroup_shuffle_relative: compute(sg_stages)
                && sg_ops.contains(vk::SubgroupFeatureFlags::SHUFFLE_RELATIVE),
            subgroup_ballot: compute(sg_stages)
                && sg_ops.contains(vk::SubgroupFeatureFlags::BALLOT),
            subgroup_extended_types: on(f12.shader_subgroup_extended_types),
            subgroup_size_control: on(f13.subgroup_size_control)
                && on(f13.compute_full_subgroups)
                && compute(req_stages),
            min_subgroup_size: min_sg,
            max_subgroup_size: max_sg,
            max_shared_bytes: limits.max_compute_shared_memory_size,
            max_invocations: limits.max_compute_work_group_size[0]
                .min(limits.max_compute_work_group_invocations),
        };
        // One queue family with compute.
        let families = unsafe { instance.get_physical_device_queue_family_properties(pd) };
        let family = families
            .iter()
            .position(|q| q.queue_flags.contains(vk::QueueFlags::COMPUTE))
            .ok_or_else(|| format!("{name} has no compute queue"))? as u32;
        // Enable exactly what the emitters may use, as reported.
        let enabled_base = vk::PhysicalDeviceFeatures::default().shader_int64(features.int64);
        let mut e12 = vk::PhysicalDeviceVulkan12Features::default()
            .shader_buffer_int64_atomics(features.buffer_int64_atomics)
            .shader_shared_int64_atomics(features.shared_int64_atomics)
            .shader_subgroup_extended_types(features.subgroup_extended_types);
        let mut e13 = vk::PhysicalDeviceVulkan13Features::default()
            .subgroup_size_control(features.subgroup_size_control)
            .compute_full_subgroups(features.subgroup_size_control);
        let mut ea1 = vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT::default()
            .shader_buffer_float32_atomic_add(features.buffer_f32_add)
            .shader_shared_float32_atomic_add(features.shared_f32_add)
            .shader_buffer_float32_atomics(float1 && on(fa1.shader_buffer_float32_atomics))
            .shader_shared_float32_atomics(float1 && on(fa1.shader_shared_float32_atomics));
        let mut ea2 = vk::PhysicalDeviceShaderAtomicFloat2FeaturesEXT::default()
            .shader_buffer_float32_atomic_min_max(features.buffer_f32_minmax)
            .shader_shared_float32_atomic_min_max(features.shared_f32_minmax);
        let mut dev_exts = Vec::new();
        if float1 {
            dev_exts.push(ash::ext::shader_atomic_float::NAME.as_ptr());
        }
        if float2 {
            dev_exts.push(ash::ext::shader_atomic_float2::NAME.as_ptr());
        }
        let prio = [1.0f32];
        let qci = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(family)
            .queue_priorities(&prio)];
        let mut dci = vk::DeviceCreateInfo::default()
            .queue_create_infos(&qci)
            .enabled_extension_names(&dev_exts)
            .enabled_features(&enabled_base)
            .push_next(&mut e12)
            .push_next(&mut e13);
        if float1 {
            dci = dci.push_next(&mut ea1);
        }
        if float2 {
            dci = dci.push_next(&mut ea2);
        }
        let device = unsafe { instance.create_device(pd, &dci, None) }
            .map_err(|e| format!("vkCreateDevice: {e}"))?;
        let queue = unsafe { device.get_device_queue(family, 0) };
        let memory = unsafe { instance.get_physical_device_memory_properties(pd) };
        let debug = opened.debug.take();
        opened.instance = None;
        let startup = take_messages();
        let dev = Device {
            _entry: entry,
            instance,
            debug,
            device,
            queue,
            family,
            memory,
            info: DeviceInfo {
                name,
                api_version: version(props.api_version),
                driver,
                features,
            },
        };
        if !startup.is_empty() {
            return Err(format!(
                "validation layer at device creation: {}",
                startup.join(" | ")
            ));
        }
        Ok(dev)
    }

    fn memory_type(&self, bits: u32) -> Option<u32> {
        let want = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
        (0..self.memory.memory_type_count).find(|i| {
            bits & (1 << i) != 0
                && self.memory.memory_types[*i as usize]
                    .property_flags
                    .contains(want)
        })
    }

    /// Runs `d` (`d.groups` work-groups) and reads every buffer back into `d.buffers`.
    pub fn run(&self, d: &mut Dispatch) -> Result<(), String> {
        take_messages();
        let r = self.run_inner(d);
        let msgs = take_messages();
        match r {
            Ok(()) if msgs.is_empty() => Ok(()),
            Ok(()) => Err(format!("validation layer: {}", msgs.join(" | "))),
            Err(e) if msgs.is_empty() => Err(e),
            Err(e) => Err(format!("{e}; validation layer: {}", msgs.join(" | "))),
        }
    }

    fn run_inner(&self, d: &mut Dispatch) -> Result<(), String> {
        let dev = &self.device;
        let mut g = Guard::default_for(dev);
        let smci = vk::ShaderModuleCreateInfo::default().code(&d.words);
        let module = unsafe { dev.create_shader_module(&smci, None) }
            .map_err(|e| format!("vkCreateShaderModule: {e}"))?;
        g.module = module;
        // Buffers.
        let mut mapped = Vec::new();
        for b in &d.buffers {
            let size = (b.bytes.len().max(8) as u64).div_ceil(8) * 8;
            let bci = vk::BufferCreateInfo::default()
                .size(size)
                .usage(vk::BufferUsageFlags::STORAGE_BUFFER)
                .sharing_mode(vk::SharingMode::EXCLUSIVE);
            let buf = unsafe { dev.create_buffer(&bci, None) }
                .map_err(|e| format!("vkCreateBuffer ({}): {e}", b.role))?;
            g.buffers.push(buf);
            let req = unsafe { dev.get_buffer_memory_requirements(buf) };
            let ty = self
                .memory_type(req.memory_type_bits)
                .ok_or("no host-visible coherent memory type")?;
            let mai = vk::MemoryAllocateInfo::default()
                .allocation_size(req.size)
                .memory_type_index(ty);
            let mem = unsafe { dev.allocate_memory(&mai, None) }
                .map_err(|e| format!("vkAllocateMemory: {e}"))?;
            g.memories.push(mem);
            unsafe { dev.bind_buffer_memory(buf, mem, 0) }
                .map_err(|e| format!("vkBindBufferMemory: {e}"))?;
            let p = unsafe { dev.map_memory(mem, 0, size, vk::MemoryMapFlags::empty()) }
                .map_err(|e| format!("vkMapMemory: {e}"))?
                .cast::<u8>();
            unsafe {
                std::ptr::write_bytes(p, 0, size as usize);
                std::ptr::copy_nonoverlapping(b.bytes.as_ptr(), p, b.bytes.len());
            }
            mapped.push((p, size));
        }
        let bindings: Vec<_> = (0..d.buffers.len() as u32)
            .map(|i| {
                vk::DescriptorSetLayoutBinding::default()
                    .binding(i)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE)
            })
            .collect();
        let dslci = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
        g.set_layout = unsafe { dev.create_descriptor_set_layout(&dslci, None) }
            .map_err(|e| format!("vkCreateDescriptorSetLayout: {e}"))?;
        let layouts = [g.set_layout];
        let plci = vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts);
        g.pipeline_layout = unsafe { dev.create_pipeline_layout(&plci, None) }
            .map_err(|e| format!("vkCreatePipelineLayout: {e}"))?;
        let entry = CString::new(ENTRY).map_err(|e| e.to_string())?;
        let mut required = vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo::default()
            .required_subgroup_size(d.subgroup_size.unwrap_or(0));
        let mut stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(&entry);
        if d.subgroup_size.is_some() {
            stage = stage
                .flags(vk::PipelineShaderStageCreateFlags::REQUIRE_FULL_SUBGROUPS)
                .push_next(&mut required);
        }
        let cpci = [vk::ComputePipelineCreateInfo::default()
            .stage(stage)
            .layout(g.pipeline_layout)];
        let pipelines =
            unsafe { dev.create_compute_pipelines(vk::PipelineCache::null(), &cpci, None) }
                .map_err(|(_, e)| format!("vkCreateComputePipelines: {e}"))?;
        g.pipeline = pipelines[0];
        let sizes = [vk::DescriptorPoolSize::default()
            .ty(vk::DescriptorType::STORAGE_BUFFER)
            .descriptor_count(d.buffers.len().max(1) as u32)];
        let dpci = vk::DescriptorPoolCreateInfo::default()
            .max_sets(1)
            .pool_sizes(&sizes);
        g.pool = unsafe { dev.create_descriptor_pool(&dpci, None) }
            .map_err(|e| format!("vkCreateDescriptorPool: {e}"))?;
        let dsai = vk::DescriptorSetAllocateInfo::default()
            .descriptor_pool(g.pool)
            .set_layouts(&layouts);
        let set = unsafe { dev.allocate_descriptor_sets(&dsai) }
            .map_err(|e| format!("vkAllocateDescriptorSets: {e}"))?[0];
        let infos: Vec<[vk::DescriptorBufferInfo; 1]> = g
            .buffers
            .iter()
            .map(|b| {
                [vk::DescriptorBufferInfo::default()
                    .buffer(*b)
                    .offset(0)
                    .range(vk::WHOLE_SIZE)]
            })
            .collect();
        let writes: Vec<_> = infos
            .iter()
            .enumerate()
            .map(|(i, info)| {
                vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(i as u32)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(info)
            })
            .collect();
        unsafe { dev.update_descriptor_sets(&writes, &[]) };
        let cpci = vk::CommandPoolCreateInfo::default().queue_family_index(self.family);
        g.command_pool = unsafe { dev.create_command_pool(&cpci, None) }
            .map_err(|e| format!("vkCreateCommandPool: {e}"))?;
        let cbai = vk::CommandBufferAllocateInfo::default()
            .command_pool(g.command_pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        let cb = unsafe { dev.allocate_command_buffers(&cbai) }
            .map_err(|e| format!("vkAllocateCommandBuffers: {e}"))?[0];
        let begin = vk::CommandBufferBeginInfo::default()
            .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
        let to_host = [vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::SHADER_WRITE)
            .dst_access_mask(vk::AccessFlags::HOST_READ)];
        unsafe {
            dev.begin_command_buffer(cb, &begin)
                .map_err(|e| format!("vkBeginCommandBuffer: {e}"))?;
            dev.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, g.pipeline);
            dev.cmd_bind_descriptor_sets(
                cb,
                vk::PipelineBindPoint::COMPUTE,
                g.pipeline_layout,
                0,
                &[set],
                &[],
            );
            dev.cmd_dispatch(cb, d.groups.max(1), 1, 1);
            dev.cmd_pipeline_barrier(
                cb,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::PipelineStageFlags::HOST,
                vk::DependencyFlags::empty(),
                &to_host,
                &[],
                &[],
            );
            dev.end_command_buffer(cb)
                .map_err(|e| format!("vkEndCommandBuffer: {e}"))?;
        }
        g.fence = unsafe { dev.create_fence(&vk::FenceCreateInfo::default(), None) }
            .map_err(|e| format!("vkCreateFence: {e}"))?;
        let cbs = [cb];
        let submit = [vk::SubmitInfo::default().command_buffers(&cbs)];
        unsafe {
            dev.queue_submit(self.queue, &submit, g.fence)
                .map_err(|e| format!("vkQueueSubmit: {e}"))?;
            dev.wait_for_fences(&[g.fence], true, fence_timeout_ns())
                .map_err(|e| {
                    format!(
                        "vkWaitForFences: {e} (the dispatch, which on a CPU driver includes compiling the shader, did not finish within {} s; ATOMCTS_VULKAN_TIMEOUT_S sets the limit)",
                        fence_timeout_ns() / 1_000_000_000
                    )
                })?;
        }
        for (b, (p, _)) in d.buffers.iter_mut().zip(&mapped) {
            unsafe { std::ptr::copy_nonoverlapping(*p, b.bytes.as_mut_ptr(), b.bytes.len()) };
        }
        Ok(())
    }
}

/// How long a dispatch may take: `ATOMCTS_VULKAN_TIMEOUT_S` seconds, default 300 (lavapipe
/// compiles a shader on its first dispatch; a 1024-invocation work-group with barriers took two
/// minutes of wall time on a loaded 2-core machine).
fn fence_timeout_ns() -> u64 {
    std::env::var("ATOMCTS_VULKAN_TIMEOUT_S")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(300)
        .saturating_mul(1_000_000_000)
}

/// Destroys what `Device::open` created when it fails half-way.
struct OpenGuard {
    instance: Option<Instance>,
    debug: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        unsafe {
            if let Some((d, m)) = self.debug.take() {
                d.destroy_debug_utils_messenger(m, None);
            }
            if let Some(i) = self.instance.take() {
                i.destroy_instance(None);
            }
        }
    }
}

/// Destroys what a run created, on every path.
struct Guard<'a> {
    device: &'a ash::Device,
    module: vk::ShaderModule,
    buffers: Vec<vk::Buffer>,
    memories: Vec<vk::DeviceMemory>,
    set_layout: vk::DescriptorSetLayout,
    pipeline_layout: vk::PipelineLayout,
    pipeline: vk::Pipeline,
    pool: vk::DescriptorPool,
    command_pool: vk::CommandPool,
    fence: vk::Fence,
}

impl<'a> Guard<'a> {
    fn default_for(device: &'a ash::Device) -> Guard<'a> {
        Guard {
            device,
            module: vk::ShaderModule::null(),
            buffers: Vec::new(),
            memories: Vec::new(),
            set_layout: vk::DescriptorSetLayout::null(),
            pipeline_layout: vk::PipelineLayout::null(),
            pipeline: vk::Pipeline::null(),
            pool: vk::DescriptorPool::null(),
            command_pool: vk::CommandPool::null(),
            fence: vk::Fence::null(),
        }
    }
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        let d = self.device;
        unsafe {
            let _ = d.device_wait_idle();
            if self.fence != vk::Fence::null() {
                d.destroy_fence(self.fence, None);
            }
            if self.command_pool != vk::CommandPool::null() {
                d.destroy_command_pool(self.command_pool, None);
            }
            if self.pool != vk::DescriptorPool::null() {
                d.destroy_descriptor_pool(self.pool, None);
            }
            if self.pipeline != vk::Pipeline::null() {
                d.destroy_pipeline(self.pipeline, None);
            }
            if self.pipeline_layout != vk::PipelineLayout::null() {
                d.destroy_pipeline_layout(self.pipeline_layout, None);
            }
            if self.set_layout != vk::DescriptorSetLayout::null() {
                d.destroy_descriptor_set_layout(self.set_layout, None);
            }
            for b in self.buffers.drain(..) {
                d.destroy_buffer(b, None);
            }
            for m in self.memories.drain(..) {
                d.free_memory(m, None);
            }
            if self.module != vk::ShaderModule::null() {
                d.destroy_shader_module(self.module, None);
            }
        }
    }
}
