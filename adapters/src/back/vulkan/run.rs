//! Run: a [`Dispatch`] on one Vulkan device through `ash`, with the Vulkan loader
//! (`libvulkan.so.1`) loaded at run time, so nothing here is needed to build or test.
//!
//! The calls are foreign functions; this module allows `unsafe` for them. Every call's result
//! is checked; buffers are host-visible and coherent, read only after a pipeline barrier to the
//! host and the fence; every object is destroyed on every path (with the device, or on a
//! failed run or creation). Pipelines are built once per module and kept, and a run reuses
//! the command buffer, fence, descriptor pool and buffers of the last (issue 9). With validation
//! on (`ATOMCTS_VULKAN_VALIDATION=1`), the Khronos validation layer is enabled and each of its
//! warnings and errors during a case makes that case an infrastructure error.
#![allow(unsafe_code)]

use super::emit::{Dispatch, Features};
use ash::{Entry, Instance, vk};
use std::ffi::{CStr, CString, c_void};
use std::sync::Mutex;

pub mod batch;
mod pipelines;
mod resources;

use pipelines::{Cached, MAX_BINDINGS, MAX_PIPELINES, PipelineKey, Pipelines, build_pipeline};
use resources::{HostBuffer, Reused};

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
    /// Built pipelines by module.
    pipelines: Pipelines,
    /// The driver's pipeline cache (shared by every pipeline built here).
    pipeline_cache: vk::PipelineCache,
    /// What runs reuse (`None` before the first run and after a failed one).
    reused: Option<Reused>,
    /// `minStorageBufferOffsetAlignment` (where a batched case's region may start).
    offset_align: u64,
    /// `vkCmdDispatch` commands recorded since the open.
    dispatches: u64,
    /// What it reports.
    pub info: DeviceInfo,
}

impl Drop for Device {
    fn drop(&mut self) {
        unsafe {
            let _ = self.device.device_wait_idle();
            if let Some(mut r) = self.reused.take() {
                r.destroy(&self.device);
            }
            self.pipelines.clear(&self.device);
            if self.pipeline_cache != vk::PipelineCache::null() {
                self.device
                    .destroy_pipeline_cache(self.pipeline_cache, None);
            }
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

/// Whether the loader's driver-selection variables (`VK_DRIVER_FILES`, or the older
/// `VK_ICD_FILENAMES`) name `manifest`.
fn loader_names(manifest: &std::path::Path) -> bool {
    ["VK_DRIVER_FILES", "VK_ICD_FILENAMES"].iter().any(|v| {
        std::env::var_os(v).is_some_and(|list| std::env::split_paths(&list).any(|p| p == manifest))
    })
}

/// The driver library an ICD manifest names (`ICD.library_path`, relative to the manifest's
/// folder unless absolute), loaded in place of the loader: the driver alone, without layers.
pub fn direct_driver(manifest: &std::path::Path) -> Result<Entry, String> {
    let text =
        std::fs::read_to_string(manifest).map_err(|e| format!("{}: {e}", manifest.display()))?;
    let json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not an ICD manifest: {e}", manifest.display()))?;
    let library = json["ICD"]["library_path"]
        .as_str()
        .ok_or_else(|| format!("{}: no ICD.library_path", manifest.display()))?;
    let path = manifest
        .parent()
        .unwrap_or(std::path::Path::new("."))
        .join(library);
    // SAFETY: loading the driver runs its initialisers; it is the implementation under test,
    // loaded as the loader would load it, and `Entry` keeps the library loaded while it lives.
    unsafe { Entry::load_from(&path) }.map_err(|e| format!("{}: {e}", path.display()))
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
    /// `direct`: an ICD manifest whose driver is loaded directly ([`direct_driver`]), without
    /// the loader and so without the validation layer.
    pub fn open(
        pattern: &str,
        direct: Option<&std::path::Path>,
        validation: bool,
    ) -> Result<Device, String> {
        // A manifest the loader was pointed at (VK_DRIVER_FILES / VK_ICD_FILENAMES) goes
        // through it, layers included; otherwise the driver is loaded directly.
        let direct = direct.filter(|m| !loader_names(m));
        let entry = match direct {
            Some(manifest) if validation => {
                return Err(format!(
                    "validation needs the Vulkan loader: set VK_DRIVER_FILES={} so that it loads this driver",
                    manifest.display()
                ));
            }
            Some(manifest) => direct_driver(manifest)?,
            None => loader()?,
        };
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
        let pipeline_cache =
            unsafe { device.create_pipeline_cache(&vk::PipelineCacheCreateInfo::default(), None) };
        let startup = take_messages();
        let mut dev = Device {
            _entry: entry,
            instance,
            debug,
            device,
            queue,
            family,
            memory,
            pipelines: Pipelines::default(),
            pipeline_cache: vk::PipelineCache::null(),
            reused: None,
            offset_align: limits.min_storage_buffer_offset_alignment.max(1),
            dispatches: 0,
            info: DeviceInfo {
                name,
                api_version: version(props.api_version),
                driver,
                features,
            },
        };
        dev.pipeline_cache = pipeline_cache.map_err(|e| format!("vkCreatePipelineCache: {e}"))?;
        if !startup.is_empty() {
            return Err(format!(
                "validation layer at device creation: {}",
                startup.join(" | ")
            ));
        }
        Ok(dev)
    }

    /// Runs `d` (`d.groups` work-groups) and reads every buffer back into `d.buffers`.
    ///
    /// The pipeline of `d`'s module is built once and kept ([`Pipelines`]: issue 9, lavapipe
    /// compiles every pipeline with LLVM); the command buffer, fence, descriptor pool and
    /// host-visible buffers are created once and reused ([`Reused`]). After a failed run the
    /// reused objects are destroyed (the device waited idle) and made again by the next run.
    pub fn run(&mut self, d: &mut Dispatch) -> Result<(), String> {
        take_messages();
        let r = self.run_inner(d);
        if r.is_err() {
            self.drop_reused();
        }
        let msgs = take_messages();
        match r {
            Ok(()) if msgs.is_empty() => Ok(()),
            Ok(()) => Err(format!("validation layer: {}", msgs.join(" | "))),
            Err(e) if msgs.is_empty() => Err(e),
            Err(e) => Err(format!("{e}; validation layer: {}", msgs.join(" | "))),
        }
    }

    /// Pipelines built (each was kept in the cache) and runs that reused one, since the open.
    pub fn pipeline_counts(&self) -> (u64, u64) {
        (self.pipelines.built, self.pipelines.hits)
    }

    /// `vkCmdDispatch` commands recorded since the open (a batch of one shape is one).
    pub fn dispatch_count(&self) -> u64 {
        self.dispatches
    }

    /// The cached pipeline for `d`, built on a miss.
    fn pipeline(&mut self, d: &Dispatch) -> Result<Cached, String> {
        self.pipeline_of(PipelineKey {
            words: d.words.clone(),
            subgroup_size: d.subgroup_size,
            bindings: d.buffers.len() as u32,
        })
    }

    /// The cached pipeline of `key`, built on a miss.
    fn pipeline_of(&mut self, key: PipelineKey) -> Result<Cached, String> {
        if let Some(c) = self.pipelines.map.get(&key) {
            self.pipelines.hits += 1;
            return Ok(*c);
        }
        if self.pipelines.map.len() >= MAX_PIPELINES {
            self.pipelines.clear(&self.device);
        }
        let c = build_pipeline(&self.device, self.pipeline_cache, &key)?;
        self.pipelines.built += 1;
        self.pipelines.map.insert(key, c);
        Ok(c)
    }

    /// The reused objects, made on first use (or after a failed run).
    fn reused(&mut self) -> Result<(), String> {
        if self.reused.is_some() {
            return Ok(());
        }
        let dev = &self.device;
        let mut r = Reused::null();
        let made = (|| -> Result<(), String> {
            let cpci = vk::CommandPoolCreateInfo::default().queue_family_index(self.family);
            r.command_pool = unsafe { dev.create_command_pool(&cpci, None) }
                .map_err(|e| format!("vkCreateCommandPool: {e}"))?;
            let cbai = vk::CommandBufferAllocateInfo::default()
                .command_pool(r.command_pool)
                .level(vk::CommandBufferLevel::PRIMARY)
                .command_buffer_count(1);
            r.command_buffer = unsafe { dev.allocate_command_buffers(&cbai) }
                .map_err(|e| format!("vkAllocateCommandBuffers: {e}"))?[0];
            r.fence = unsafe { dev.create_fence(&vk::FenceCreateInfo::default(), None) }
                .map_err(|e| format!("vkCreateFence: {e}"))?;
            let sizes = [vk::DescriptorPoolSize::default()
                .ty(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(MAX_BINDINGS)];
            let dpci = vk::DescriptorPoolCreateInfo::default()
                .max_sets(1)
                .pool_sizes(&sizes);
            r.pool = unsafe { dev.create_descriptor_pool(&dpci, None) }
                .map_err(|e| format!("vkCreateDescriptorPool: {e}"))?;
            // A batch's sets, one per case ([`batch`]).
            let window = batch::VULKAN_WINDOW as u32;
            let sizes = [vk::DescriptorPoolSize::default()
                .ty(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(MAX_BINDINGS * window)];
            let dpci = vk::DescriptorPoolCreateInfo::default()
                .max_sets(window)
                .pool_sizes(&sizes);
            r.batch_pool = unsafe { dev.create_descriptor_pool(&dpci, None) }
                .map_err(|e| format!("vkCreateDescriptorPool (batch): {e}"))?;
            Ok(())
        })();
        match made {
            Ok(()) => {
                self.reused = Some(r);
                Ok(())
            }
            Err(e) => {
                r.destroy(dev);
                Err(e)
            }
        }
    }

    /// Destroys the reused objects after waiting for the device.
    fn drop_reused(&mut self) {
        if let Some(mut r) = self.reused.take() {
            unsafe {
                let _ = self.device.device_wait_idle();
            }
            r.destroy(&self.device);
        }
    }

    /// Reused host-visible buffer `i`, at least `size` bytes (grown by powers of two).
    fn host_buffer(&mut self, i: usize, size: u64) -> Result<HostBuffer, String> {
        let Some(r) = self.reused.as_mut() else {
            return Err("no reused objects (a back-end bug)".into());
        };
        if let Some(b) = r.buffers.get(i)
            && b.size >= size
        {
            return Ok(*b);
        }
        let dev = &self.device;
        let want = size.next_power_of_two().max(256);
        let bci = vk::BufferCreateInfo::default()
            .size(want)
            .usage(vk::BufferUsageFlags::STORAGE_BUFFER)
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        let buffer = unsafe { dev.create_buffer(&bci, None) }
            .map_err(|e| format!("vkCreateBuffer (binding {i}): {e}"))?;
        let mut hb = HostBuffer {
            buffer,
            memory: vk::DeviceMemory::null(),
            ptr: std::ptr::null_mut(),
            size: want,
        };
        let bound = (|| -> Result<(), String> {
            let req = unsafe { dev.get_buffer_memory_requirements(buffer) };
            let want_flags =
                vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
            let ty = (0..self.memory.memory_type_count)
                .find(|t| {
                    req.memory_type_bits & (1 << t) != 0
                        && self.memory.memory_types[*t as usize]
                            .property_flags
                            .contains(want_flags)
                })
                .ok_or("no host-visible coherent memory type")?;
            let mai = vk::MemoryAllocateInfo::default()
                .allocation_size(req.size)
                .memory_type_index(ty);
            hb.memory = unsafe { dev.allocate_memory(&mai, None) }
                .map_err(|e| format!("vkAllocateMemory: {e}"))?;
            unsafe { dev.bind_buffer_memory(buffer, hb.memory, 0) }
                .map_err(|e| format!("vkBindBufferMemory: {e}"))?;
            hb.ptr = unsafe { dev.map_memory(hb.memory, 0, want, vk::MemoryMapFlags::empty()) }
                .map_err(|e| format!("vkMapMemory: {e}"))?
                .cast::<u8>();
            Ok(())
        })();
        if let Err(e) = bound {
            hb.destroy(dev);
            return Err(e);
        }
        if let Some(old) = r.buffers.get_mut(i) {
            // The fence of the last run was waited for: the old buffer is idle.
            old.destroy(dev);
            *old = hb;
        } else {
            r.buffers.push(hb);
        }
        Ok(hb)
    }

    fn run_inner(&mut self, d: &mut Dispatch) -> Result<(), String> {
        if d.buffers.len() > MAX_BINDINGS as usize {
            return Err(format!(
                "{} storage buffers (this back end binds at most {MAX_BINDINGS})",
                d.buffers.len()
            ));
        }
        let p = self.pipeline(d)?;
        self.reused()?;
        // Buffers: each binding's range is the case's size (as a buffer of its own would be).
        let mut mapped = Vec::with_capacity(d.buffers.len());
        for (i, b) in d.buffers.iter().enumerate() {
            let size = (b.bytes.len().max(8) as u64).div_ceil(8) * 8;
            let hb = self.host_buffer(i, size)?;
            unsafe {
                std::ptr::write_bytes(hb.ptr, 0, size as usize);
                std::ptr::copy_nonoverlapping(b.bytes.as_ptr(), hb.ptr, b.bytes.len());
            }
            mapped.push((hb, size));
        }
        let dev = &self.device;
        let Some(r) = self.reused.as_ref() else {
            return Err("no reused objects (a back-end bug)".into());
        };
        unsafe { dev.reset_descriptor_pool(r.pool, vk::DescriptorPoolResetFlags::empty()) }
            .map_err(|e| format!("vkResetDescriptorPool: {e}"))?;
        let layouts = [p.set_layout];
        let dsai = vk::DescriptorSetAllocateInfo::default()
            .descriptor_pool(r.pool)
            .set_layouts(&layouts);
        let set = unsafe { dev.allocate_descriptor_sets(&dsai) }
            .map_err(|e| format!("vkAllocateDescriptorSets: {e}"))?[0];
        let infos: Vec<[vk::DescriptorBufferInfo; 1]> = mapped
            .iter()
            .map(|(hb, size)| {
                [vk::DescriptorBufferInfo::default()
                    .buffer(hb.buffer)
                    .offset(0)
                    .range(*size)]
            })
            .collect();
        let writes: Vec<_> = infos
            .iter()
            .enumerate()
            .map(|(i, info)| (set, i, info))
            .collect();
        let dispatch = |dev: &ash::Device, cb: vk::CommandBuffer| unsafe {
            dev.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, p.pipeline);
            dev.cmd_bind_descriptor_sets(
                cb,
                vk::PipelineBindPoint::COMPUTE,
                p.pipeline_layout,
                0,
                &[set],
                &[],
            );
            dev.cmd_dispatch(cb, d.groups.max(1), 1, 1);
        };
        self.record_and_wait(
            r,
            &writes,
            dispatch,
            "the dispatch, which on a CPU driver includes compiling the shader,",
        )?;
        self.dispatches += 1;
        for (b, (hb, _)) in d.buffers.iter_mut().zip(&mapped) {
            unsafe { std::ptr::copy_nonoverlapping(hb.ptr, b.bytes.as_mut_ptr(), b.bytes.len()) };
        }
        Ok(())
    }
}

impl Device {
    /// Writes the descriptors `writes` (set, binding, buffer range), records one command buffer
    /// (`record`'s binds and dispatches, then a barrier making the shaders' writes visible to
    /// the host), submits it and waits for it ([`Device::submit_and_wait`]; `what` names it in
    /// the timeout's message). Shared by single and batched runs.
    fn record_and_wait(
        &self,
        r: &Reused,
        writes: &[(vk::DescriptorSet, usize, &[vk::DescriptorBufferInfo; 1])],
        record: impl FnOnce(&ash::Device, vk::CommandBuffer),
        what: &str,
    ) -> Result<(), String> {
        let dev = &self.device;
        let writes: Vec<_> = writes
            .iter()
            .map(|(set, i, info)| {
                vk::WriteDescriptorSet::default()
                    .dst_set(*set)
                    .dst_binding(*i as u32)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(*info)
            })
            .collect();
        unsafe { dev.update_descriptor_sets(&writes, &[]) };
        let cb = r.command_buffer;
        let begin = vk::CommandBufferBeginInfo::default()
            .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
        let to_host = [vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::SHADER_WRITE)
            .dst_access_mask(vk::AccessFlags::HOST_READ)];
        unsafe {
            dev.reset_command_pool(r.command_pool, vk::CommandPoolResetFlags::empty())
                .map_err(|e| format!("vkResetCommandPool: {e}"))?;
            dev.begin_command_buffer(cb, &begin)
                .map_err(|e| format!("vkBeginCommandBuffer: {e}"))?;
        }
        record(dev, cb);
        unsafe {
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
        self.submit_and_wait(cb, r.fence, what)
    }

    /// Submits the recorded command buffer `cb` and waits for `fence` at most
    /// [`fence_timeout_ns`]; `what` names what did not finish in the timeout's message.
    fn submit_and_wait(
        &self,
        cb: vk::CommandBuffer,
        fence: vk::Fence,
        what: &str,
    ) -> Result<(), String> {
        let dev = &self.device;
        let cbs = [cb];
        let submit = [vk::SubmitInfo::default().command_buffers(&cbs)];
        unsafe {
            dev.reset_fences(&[fence])
                .map_err(|e| format!("vkResetFences: {e}"))?;
            dev.queue_submit(self.queue, &submit, fence)
                .map_err(|e| format!("vkQueueSubmit: {e}"))?;
            dev.wait_for_fences(&[fence], true, fence_timeout_ns())
                .map_err(|e| {
                    format!(
                        "vkWaitForFences: {e} ({what} did not finish within {} s; ATOMCTS_VULKAN_TIMEOUT_S sets the limit)",
                        fence_timeout_ns() / 1_000_000_000
                    )
                })?;
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

#[cfg(test)]
mod tests {
    use super::direct_driver;

    /// A manifest in a fresh folder under the system's temporary directory.
    fn manifest(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("atomcts-icd-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("icd.json");
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn a_bad_manifest_is_one_line_naming_the_file() {
        let missing = std::path::Path::new("/nonexistent/atomcts/icd.json");
        let e = direct_driver(missing).err().unwrap();
        assert!(e.starts_with("/nonexistent/atomcts/icd.json: "), "{e}");
        for (name, text, says) in [
            ("garbage", "{ICD: nope", "not an ICD manifest"),
            (
                "nolib",
                r#"{"ICD": {"api_version": "1.0.5"}}"#,
                "no ICD.library_path",
            ),
            (
                "notstring",
                r#"{"ICD": {"library_path": 7}}"#,
                "no ICD.library_path",
            ),
        ] {
            let p = manifest(name, text);
            let e = direct_driver(&p).err().unwrap();
            assert!(e.starts_with(&p.display().to_string()), "{e}");
            assert!(e.contains(says), "{e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
        // A library that is not there: the joined path is named.
        let p = manifest("absent", r#"{"ICD": {"library_path": "./libnothere.so"}}"#);
        let e = direct_driver(&p).err().unwrap();
        assert!(e.contains("libnothere.so"), "{e}");
        // A library that is no Vulkan driver (no vkGetInstanceProcAddr; an absolute path is
        // taken as it is).
        let libm = "/lib/x86_64-linux-gnu/libm.so.6";
        let p = manifest(
            "notvulkan",
            &format!(r#"{{"ICD": {{"library_path": "{libm}"}}}}"#),
        );
        let e = direct_driver(&p).err().unwrap();
        assert!(e.starts_with(libm), "{e}");
    }
}
