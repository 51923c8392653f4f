//! The Vulkan back end's standalone reproducer (issue 30, point 5), both routes: the storage
//! buffers of a [`Dispatch`] (bindings 0..., as [`super::run::Device::run`] binds them) and the
//! Python host code that makes the same dispatch through `libvulkan.so.1` with ctypes
//! ([`script`]): the SPIR-V words as they ran (naga's for the WGSL route, with the WGSL text).

use super::emit::{Dispatch as VkDispatch, ENTRY};
use crate::repro::{About, Arg, Dispatch, Program, py_str, script as shared_script};
use crate::shuffle::ShufflePlan;

/// The buffers of `d` before the run, one argument per binding.
pub fn args(d: &VkDispatch) -> Vec<Arg> {
    d.buffers
        .iter()
        .map(|b| Arg::Buffer {
            name: b.role.to_string(),
            init: b.bytes.clone(),
        })
        .collect()
}

/// The program of `d` (its words compiled already), with the WGSL it came from.
pub fn program(d: &VkDispatch, wgsl: Option<&str>) -> Program {
    Program::SpirV {
        words: d.words.clone(),
        entry: ENTRY.into(),
        disassembly: d.disassemble(),
        wgsl: wgsl.map(str::to_string),
        subgroup_size: d.subgroup_size,
    }
}

/// The [`Dispatch`] of the SIMD-group function `plan` as the back end ran `d` (`args`: its
/// buffers before the run): each thread's result in binding 0 (`d.ret_bytes` a thread) against
/// the reference's; the pipeline requires the case's SIMD width as its sub-group size, with
/// full sub-groups, and the script checks the device offers that before it runs.
pub fn shuffle_dispatch(
    r: &crate::Request<'_>,
    plan: &ShufflePlan,
    d: &VkDispatch,
    wgsl: Option<&str>,
    args: Vec<Arg>,
) -> Result<Dispatch, String> {
    let lowered = crate::back::lower(r).map_err(|e| format!("{e:?}"))?;
    let (checks, unjudged) =
        crate::repro::shuffle_checks(plan, &lowered, r.state, (0, d.ret_bytes as usize), None)?;
    Ok(Dispatch {
        program: program(d, wgsl),
        args,
        global: (d.groups.max(1) * d.local_size) as usize,
        local: d.local_size as usize,
        checks,
        unjudged,
        orders: Vec::new(),
    })
}

/// The whole script for a dispatch on the Vulkan device whose name contains `pattern`
/// (case-insensitive, as atomcts chooses it); `Err` for a program of another back end.
pub fn script(about: &About, d: &Dispatch, pattern: &str) -> Result<String, String> {
    let Program::SpirV {
        words,
        entry,
        disassembly,
        wgsl,
        subgroup_size,
    } = &d.program
    else {
        return Err("not a SPIR-V program (a back-end bug)".into());
    };
    let lines = |t: &str| -> String {
        t.lines()
            .map(|l| format!("#   {l}\n").replace("#   \n", "#\n"))
            .collect()
    };
    let mut comment = String::new();
    if let Some(w) = wgsl {
        comment.push_str(&format!(
            "#\n# The WGSL shader atomcts wrote (naga compiled it to the SPIR-V below, which is what ran):\n{}",
            lines(w)
        ));
    }
    comment.push_str(&format!(
        "#\n# The SPIR-V module (entry point `{entry}`) as it ran, disassembled:\n{}\n",
        lines(disassembly)
    ));
    let mut w = String::from("[\n");
    for chunk in words.chunks(8) {
        let row: Vec<String> = chunk.iter().map(|x| format!("0x{x:08x}")).collect();
        w.push_str(&format!("    {},\n", row.join(", ")));
    }
    w.push(']');
    let host = HOST
        .replace("@PATTERN@", &py_str(&pattern.to_lowercase()))
        .replace("@WORDS@", &w)
        .replace("@ENTRY@", &py_str(entry))
        .replace(
            "@WGSL@",
            &wgsl.as_deref().map_or("None".to_string(), py_str),
        )
        .replace(
            "@SUBGROUP_SIZE@",
            &subgroup_size.map_or("None".to_string(), |n| n.to_string()),
        );
    Ok(shared_script(about, d, &comment, &host))
}

/// The host code: instance, the device by name (every feature it reports enabled but robust
/// buffer access; atomcts enables only what its shaders use), host-visible coherent buffers,
/// one compute pipeline, one dispatch, a barrier to the host and a fence. Every call's result
/// is checked.
const HOST: &str = r#"PATTERN = @PATTERN@
ENTRY = @ENTRY@
WGSL = @WGSL@
# The sub-group size the pipeline requires, with full sub-groups (VK_EXT_subgroup_size_control,
# core in Vulkan 1.3), or None.
SUBGROUP_SIZE = @SUBGROUP_SIZE@
WORDS = @WORDS@

vp = ctypes.c_void_p
u32 = ctypes.c_uint32
u64 = ctypes.c_uint64


def struct(name, fields):
    return type(name, (ctypes.Structure,), {"_fields_": fields})


AppInfo = struct("AppInfo", [("sType", u32), ("pNext", vp), ("pApplicationName", ctypes.c_char_p), ("applicationVersion", u32), ("pEngineName", ctypes.c_char_p), ("engineVersion", u32), ("apiVersion", u32)])
InstanceCI = struct("InstanceCI", [("sType", u32), ("pNext", vp), ("flags", u32), ("pApplicationInfo", vp), ("enabledLayerCount", u32), ("ppEnabledLayerNames", vp), ("enabledExtensionCount", u32), ("ppEnabledExtensionNames", vp)])
QueueCI = struct("QueueCI", [("sType", u32), ("pNext", vp), ("flags", u32), ("queueFamilyIndex", u32), ("queueCount", u32), ("pQueuePriorities", vp)])
DeviceCI = struct("DeviceCI", [("sType", u32), ("pNext", vp), ("flags", u32), ("queueCreateInfoCount", u32), ("pQueueCreateInfos", vp), ("enabledLayerCount", u32), ("ppEnabledLayerNames", vp), ("enabledExtensionCount", u32), ("ppEnabledExtensionNames", vp), ("pEnabledFeatures", vp)])
BufferCI = struct("BufferCI", [("sType", u32), ("pNext", vp), ("flags", u32), ("size", u64), ("usage", u32), ("sharingMode", u32), ("queueFamilyIndexCount", u32), ("pQueueFamilyIndices", vp)])
MemReqs = struct("MemReqs", [("size", u64), ("alignment", u64), ("memoryTypeBits", u32)])
MemoryAI = struct("MemoryAI", [("sType", u32), ("pNext", vp), ("allocationSize", u64), ("memoryTypeIndex", u32)])
ShaderCI = struct("ShaderCI", [("sType", u32), ("pNext", vp), ("flags", u32), ("codeSize", ctypes.c_size_t), ("pCode", vp)])
Binding = struct("Binding", [("binding", u32), ("descriptorType", u32), ("descriptorCount", u32), ("stageFlags", u32), ("pImmutableSamplers", vp)])
SetLayoutCI = struct("SetLayoutCI", [("sType", u32), ("pNext", vp), ("flags", u32), ("bindingCount", u32), ("pBindings", vp)])
PipelineLayoutCI = struct("PipelineLayoutCI", [("sType", u32), ("pNext", vp), ("flags", u32), ("setLayoutCount", u32), ("pSetLayouts", vp), ("pushConstantRangeCount", u32), ("pPushConstantRanges", vp)])
RequiredSubgroupSizeCI = struct("RequiredSubgroupSizeCI", [("sType", u32), ("pNext", vp), ("requiredSubgroupSize", u32)])
StageCI = struct("StageCI", [("sType", u32), ("pNext", vp), ("flags", u32), ("stage", u32), ("module", u64), ("pName", ctypes.c_char_p), ("pSpecializationInfo", vp)])
ComputeCI = struct("ComputeCI", [("sType", u32), ("pNext", vp), ("flags", u32), ("stage", StageCI), ("layout", u64), ("basePipelineHandle", u64), ("basePipelineIndex", ctypes.c_int32)])
PoolSize = struct("PoolSize", [("type", u32), ("descriptorCount", u32)])
PoolCI = struct("PoolCI", [("sType", u32), ("pNext", vp), ("flags", u32), ("maxSets", u32), ("poolSizeCount", u32), ("pPoolSizes", vp)])
SetAI = struct("SetAI", [("sType", u32), ("pNext", vp), ("descriptorPool", u64), ("descriptorSetCount", u32), ("pSetLayouts", vp)])
BufferInfo = struct("BufferInfo", [("buffer", u64), ("offset", u64), ("range", u64)])
Write = struct("Write", [("sType", u32), ("pNext", vp), ("dstSet", u64), ("dstBinding", u32), ("dstArrayElement", u32), ("descriptorCount", u32), ("descriptorType", u32), ("pImageInfo", vp), ("pBufferInfo", vp), ("pTexelBufferView", vp)])
CommandPoolCI = struct("CommandPoolCI", [("sType", u32), ("pNext", vp), ("flags", u32), ("queueFamilyIndex", u32)])
CommandBufferAI = struct("CommandBufferAI", [("sType", u32), ("pNext", vp), ("commandPool", u64), ("level", u32), ("commandBufferCount", u32)])
BeginInfo = struct("BeginInfo", [("sType", u32), ("pNext", vp), ("flags", u32), ("pInheritanceInfo", vp)])
MemoryBarrier = struct("MemoryBarrier", [("sType", u32), ("pNext", vp), ("srcAccessMask", u32), ("dstAccessMask", u32)])
FenceCI = struct("FenceCI", [("sType", u32), ("pNext", vp), ("flags", u32)])
SubmitInfo = struct("SubmitInfo", [("sType", u32), ("pNext", vp), ("waitSemaphoreCount", u32), ("pWaitSemaphores", vp), ("pWaitDstStageMask", vp), ("commandBufferCount", u32), ("pCommandBuffers", vp), ("signalSemaphoreCount", u32), ("pSignalSemaphores", vp)])

ref = ctypes.byref


def require_subgroup_size(vk, pd, features13):
    """Raises Unavailable unless the device can run a compute pipeline with sub-groups of
    exactly SUBGROUP_SIZE, all full: Vulkan 1.3, the features subgroupSizeControl and
    computeFullSubgroups (VkPhysicalDeviceVulkan13Features, filled in by the caller), and
    minSubgroupSize <= SUBGROUP_SIZE <= maxSubgroupSize with compute in
    requiredSubgroupSizeStages (VkPhysicalDeviceVulkan13Properties)."""
    props = ctypes.create_string_buffer(4096)
    vk.vkGetPhysicalDeviceProperties(pd, props)
    api = int.from_bytes(props.raw[0:4], "little")
    if api < (1 << 22) | (3 << 12):
        raise Unavailable(f"the device reports Vulkan {api >> 22}.{(api >> 12) & 0x3ff}; a required sub-group size needs 1.3")
    feats = features13.raw
    size_control = int.from_bytes(feats[44:48], "little")
    full = int.from_bytes(feats[48:52], "little")
    if not (size_control and full):
        raise Unavailable(f"the device does not report subgroupSizeControl ({size_control}) and computeFullSubgroups ({full})")
    p13 = ctypes.create_string_buffer(256)
    ctypes.memmove(p13, (54).to_bytes(4, "little"), 4)
    p2 = ctypes.create_string_buffer(4096)
    ctypes.memmove(p2, (1000059001).to_bytes(4, "little"), 4)
    ctypes.memmove(ctypes.addressof(p2) + 8, ctypes.addressof(p13).to_bytes(8, "little"), 8)
    vk.vkGetPhysicalDeviceProperties2(pd, p2)
    lo, hi, _, stages = (int.from_bytes(p13.raw[16 + 4 * i:20 + 4 * i], "little") for i in range(4))
    print(f"sub-group sizes: {lo}..{hi}, required size for compute: {'yes' if stages & 0x20 else 'no'}")
    if not (lo <= SUBGROUP_SIZE <= hi and stages & 0x20):
        raise Unavailable(f"the device cannot require sub-groups of {SUBGROUP_SIZE} in a compute shader (sizes {lo}..{hi}, requiredSubgroupSizeStages {stages:#x})")


def run():
    try:
        vk = ctypes.CDLL("libvulkan.so.1")
    except OSError as e:
        raise Unavailable(f"no Vulkan loader (libvulkan.so.1): {e}")

    def check(result, what):
        if result != 0:
            raise RuntimeError(f"{what}: VkResult {result}")

    app = AppInfo(0, None, b"atomcts-repro", 0, None, 0, (1 << 22) | (3 << 12))
    instance = vp()
    r = vk.vkCreateInstance(ref(InstanceCI(1, None, 0, ctypes.addressof(app), 0, None, 0, None)), None, ref(instance))
    if r != 0:
        raise Unavailable(f"vkCreateInstance: VkResult {r} (no Vulkan driver? see the environment in the header)")
    n = u32(0)
    check(vk.vkEnumeratePhysicalDevices(instance, ref(n), None), "vkEnumeratePhysicalDevices")
    pds = (vp * n.value)()
    check(vk.vkEnumeratePhysicalDevices(instance, ref(n), pds), "vkEnumeratePhysicalDevices")
    pd, seen = None, []
    for d in pds:
        props = ctypes.create_string_buffer(4096)
        vk.vkGetPhysicalDeviceProperties(vp(d), props)
        name = props.raw[20:276].split(b"\0")[0].decode(errors="replace")
        if PATTERN in name.lower():
            pd = vp(d)
            print(f"device: {name}")
            break
        seen.append(name)
    if pd is None:
        raise Unavailable(f"no Vulkan device matches {PATTERN!r} (have: {'; '.join(seen) or 'none'})")
    nq = u32(0)
    vk.vkGetPhysicalDeviceQueueFamilyProperties(pd, ref(nq), None)
    qprops = ctypes.create_string_buffer(24 * nq.value)
    vk.vkGetPhysicalDeviceQueueFamilyProperties(pd, ref(nq), qprops)
    family = next((i for i in range(nq.value) if int.from_bytes(qprops.raw[24 * i:24 * i + 4], "little") & 2), None)
    if family is None:
        raise Unavailable("the device has no compute queue")
    # Extensions atomcts enables where the device has them.
    ne = u32(0)
    vk.vkEnumerateDeviceExtensionProperties(pd, None, ref(ne), None)
    eprops = ctypes.create_string_buffer(260 * ne.value)
    vk.vkEnumerateDeviceExtensionProperties(pd, None, ref(ne), eprops)
    have = {eprops.raw[260 * i:260 * i + 256].split(b"\0")[0] for i in range(ne.value)}
    wanted = [e for e in (b"VK_EXT_shader_atomic_float", b"VK_EXT_shader_atomic_float2") if e in have]
    # Every feature the device reports (Vulkan 1.0 to 1.3, atomic float), robust buffer access
    # off (atomcts enables only the features its shaders use: int64, int64 atomics, atomic float,
    # sub-group extended types and size control).
    chain = [(1000059000, None), (49, None), (51, None), (53, None)]
    if b"VK_EXT_shader_atomic_float" in have:
        chain.append((1000260000, None))
    if b"VK_EXT_shader_atomic_float2" in have:
        chain.append((1000273000, None))
    blocks = [ctypes.create_string_buffer(1024) for _ in chain]
    for i, (stype, _) in enumerate(chain):
        ctypes.memmove(blocks[i], stype.to_bytes(4, "little"), 4)
        nxt = ctypes.addressof(blocks[i + 1]) if i + 1 < len(blocks) else 0
        ctypes.memmove(ctypes.addressof(blocks[i]) + 8, nxt.to_bytes(8, "little"), 8)
    vk.vkGetPhysicalDeviceFeatures2(pd, blocks[0])
    if SUBGROUP_SIZE is not None:
        require_subgroup_size(vk, pd, blocks[3])
    ctypes.memmove(ctypes.addressof(blocks[0]) + 16, (0).to_bytes(4, "little"), 4)
    prio = ctypes.c_float(1.0)
    qci = QueueCI(2, None, 0, family, 1, ctypes.addressof(prio))
    names = (ctypes.c_char_p * max(1, len(wanted)))(*wanted)
    dci = DeviceCI(3, ctypes.addressof(blocks[0]), 0, 1, ctypes.addressof(qci), 0, None, len(wanted), ctypes.addressof(names), None)
    device = vp()
    check(vk.vkCreateDevice(pd, ref(dci), None, ref(device)), "vkCreateDevice")
    queue = vp()
    vk.vkGetDeviceQueue(device, u32(family), u32(0), ref(queue))
    mprops = ctypes.create_string_buffer(1024)
    vk.vkGetPhysicalDeviceMemoryProperties(pd, mprops)
    ntypes = int.from_bytes(mprops.raw[0:4], "little")
    flags = [int.from_bytes(mprops.raw[4 + 8 * i:8 + 8 * i], "little") for i in range(ntypes)]
    buffers, maps, sizes = [], [], []
    for arg in ARGS:
        data = arg[2]
        size = (max(len(data), 8) + 7) // 8 * 8
        buf = u64(0)
        check(vk.vkCreateBuffer(device, ref(BufferCI(12, None, 0, size, 0x20, 0, 0, None)), None, ref(buf)), "vkCreateBuffer")
        reqs = MemReqs()
        vk.vkGetBufferMemoryRequirements(device, buf, ref(reqs))
        kind = next((i for i in range(ntypes) if reqs.memoryTypeBits >> i & 1 and flags[i] & 6 == 6), None)
        if kind is None:
            raise RuntimeError("no host-visible coherent memory for a storage buffer")
        mem = u64(0)
        check(vk.vkAllocateMemory(device, ref(MemoryAI(5, None, reqs.size, kind)), None, ref(mem)), "vkAllocateMemory")
        check(vk.vkBindBufferMemory(device, buf, mem, u64(0)), "vkBindBufferMemory")
        ptr = vp()
        check(vk.vkMapMemory(device, mem, u64(0), u64(size), u32(0), ref(ptr)), "vkMapMemory")
        ctypes.memset(ptr, 0, size)
        ctypes.memmove(ptr, data, len(data))
        buffers.append(buf)
        maps.append(ptr)
        sizes.append(size)
    code = (u32 * len(WORDS))(*WORDS)
    module = u64(0)
    check(vk.vkCreateShaderModule(device, ref(ShaderCI(16, None, 0, 4 * len(WORDS), ctypes.addressof(code))), None, ref(module)), "vkCreateShaderModule")
    binds = (Binding * len(ARGS))(*[Binding(i, 7, 1, 0x20, None) for i in range(len(ARGS))])
    set_layout = u64(0)
    check(vk.vkCreateDescriptorSetLayout(device, ref(SetLayoutCI(32, None, 0, len(ARGS), ctypes.addressof(binds))), None, ref(set_layout)), "vkCreateDescriptorSetLayout")
    layout = u64(0)
    check(vk.vkCreatePipelineLayout(device, ref(PipelineLayoutCI(30, None, 0, 1, ctypes.addressof(set_layout), 0, None)), None, ref(layout)), "vkCreatePipelineLayout")
    if SUBGROUP_SIZE is None:
        stage = StageCI(18, None, 0, 0x20, module.value, ENTRY.encode(), None)
    else:
        # VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT, the required size chained.
        required = RequiredSubgroupSizeCI(1000225001, None, SUBGROUP_SIZE)
        stage = StageCI(18, ctypes.addressof(required), 0x2, 0x20, module.value, ENTRY.encode(), None)
    pipeline = u64(0)
    check(vk.vkCreateComputePipelines(device, u64(0), u32(1), ref(ComputeCI(29, None, 0, stage, layout.value, 0, -1)), None, ref(pipeline)), "vkCreateComputePipelines")
    size = PoolSize(7, len(ARGS))
    pool = u64(0)
    check(vk.vkCreateDescriptorPool(device, ref(PoolCI(33, None, 0, 1, 1, ctypes.addressof(size))), None, ref(pool)), "vkCreateDescriptorPool")
    dset = u64(0)
    check(vk.vkAllocateDescriptorSets(device, ref(SetAI(34, None, pool.value, 1, ctypes.addressof(set_layout))), ref(dset)), "vkAllocateDescriptorSets")
    infos = [BufferInfo(b.value, 0, s) for b, s in zip(buffers, sizes)]
    writes = (Write * len(ARGS))(*[Write(35, None, dset.value, i, 0, 1, 7, None, ctypes.addressof(infos[i]), None) for i in range(len(ARGS))])
    vk.vkUpdateDescriptorSets(device, u32(len(ARGS)), writes, u32(0), None)
    cpool = u64(0)
    check(vk.vkCreateCommandPool(device, ref(CommandPoolCI(39, None, 0, family)), None, ref(cpool)), "vkCreateCommandPool")
    cb = vp()
    check(vk.vkAllocateCommandBuffers(device, ref(CommandBufferAI(40, None, cpool.value, 0, 1)), ref(cb)), "vkAllocateCommandBuffers")
    check(vk.vkBeginCommandBuffer(cb, ref(BeginInfo(42, None, 1, None))), "vkBeginCommandBuffer")
    vk.vkCmdBindPipeline(cb, u32(1), pipeline)
    vk.vkCmdBindDescriptorSets(cb, u32(1), layout, u32(0), u32(1), ref(dset), u32(0), None)
    vk.vkCmdDispatch(cb, u32(GLOBAL_SIZE // LOCAL_SIZE), u32(1), u32(1))
    barrier = MemoryBarrier(46, None, 0x40, 0x2000)
    vk.vkCmdPipelineBarrier(cb, u32(0x800), u32(0x4000), u32(0), u32(1), ref(barrier), u32(0), None, u32(0), None)
    check(vk.vkEndCommandBuffer(cb), "vkEndCommandBuffer")
    fence = u64(0)
    check(vk.vkCreateFence(device, ref(FenceCI(8, None, 0)), None, ref(fence)), "vkCreateFence")
    cbs = (vp * 1)(cb)
    check(vk.vkQueueSubmit(queue, u32(1), ref(SubmitInfo(4, None, 0, None, None, 1, ctypes.addressof(cbs), 0, None)), fence), "vkQueueSubmit")
    check(vk.vkWaitForFences(device, u32(1), ref(fence), u32(1), u64(600 * 10**9)), "vkWaitForFences")
    out = [ctypes.string_at(p, len(a[2])) for p, a in zip(maps, ARGS)]
    vk.vkDeviceWaitIdle(device)
    return out
"#;
