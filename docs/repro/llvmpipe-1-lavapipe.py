#!/usr/bin/env python3
# Standalone reproducer written by `atomcts repro` (no atomcts needed to run it).
# case: llvmpipe-1-loop-limit::one_thread_65536_fetch_adds
# adapter: vulkan:lavapipe (profile spirv; atomcts judged it: fail)
# rule: atomic_fetch_add_explicit (modulo 2^32): one thread's 65,536 fetch-adds of 1 from 0 end at 65,536
#
# Runs the kernel below exactly as atomcts ran it (one launch of 1 work-item(s) in
# work-groups of 1), reads the buffers back, and prints the expected and observed
# words in hex; a word the documents leave partly free is compared on its fixed bits
# only (the mask), and where they allow several values each is listed.
# Exit status: 0 the words match, 1 they differ, 2 it cannot run (driver missing, or it
# does not give the launch what the case requires, such as the sub-group size).
# Environment (the script sets it itself when unset):
#   VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json
# Not judged standalone:
#   - the values each iteration returned: they need atomcts's order checker; this script judges the final memory and the iteration counts only
# Python 3, standard library only: python3 <this script>
#
# The SPIR-V module (entry point `main`) as it ran, disassembled:
#   ; SPIR-V
#   ; Version: 1.3
#   ; Generator: rspirv
#   ; Bound: 92
#   OpCapability Shader
#   OpMemoryModel Logical GLSL450
#   OpEntryPoint GLCompute %35 "main" %18 %21
#   OpExecutionMode %35 LocalSize 1 1 1
#   OpDecorate %4 ArrayStride 4
#   OpDecorate %5 Block
#   OpMemberDecorate %5 0 Offset 0
#   OpDecorate %7 DescriptorSet 0
#   OpDecorate %7 Binding 0
#   OpDecorate %8 Block
#   OpMemberDecorate %8 0 Offset 0
#   OpDecorate %10 DescriptorSet 0
#   OpDecorate %10 Binding 1
#   OpDecorate %11 Block
#   OpMemberDecorate %11 0 Offset 0
#   OpDecorate %13 DescriptorSet 0
#   OpDecorate %13 Binding 2
#   OpDecorate %14 Block
#   OpMemberDecorate %14 0 Offset 0
#   OpDecorate %16 DescriptorSet 0
#   OpDecorate %16 Binding 3
#   OpDecorate %18 BuiltIn LocalInvocationIndex
#   OpDecorate %21 BuiltIn WorkgroupId
#   %1 = OpTypeVoid
#   %2 = OpTypeBool
#   %3 = OpTypeInt 32 0
#   %4 = OpTypeRuntimeArray %3
#   %5 = OpTypeStruct %4
#   %6 = OpTypePointer StorageBuffer %5
#   %7 = OpVariable  %6  StorageBuffer
#   %8 = OpTypeStruct %4
#   %9 = OpTypePointer StorageBuffer %8
#   %10 = OpVariable  %9  StorageBuffer
#   %11 = OpTypeStruct %4
#   %12 = OpTypePointer StorageBuffer %11
#   %13 = OpVariable  %12  StorageBuffer
#   %14 = OpTypeStruct %4
#   %15 = OpTypePointer StorageBuffer %14
#   %16 = OpVariable  %15  StorageBuffer
#   %17 = OpTypePointer Input %3
#   %18 = OpVariable  %17  Input
#   %19 = OpTypeVector %3 3
#   %20 = OpTypePointer Input %19
#   %21 = OpVariable  %20  Input
#   %22 = OpConstant  %3  1
#   %23 = OpTypeArray %3 %22
#   %24 = OpConstant  %3  0
#   %25 = OpConstantComposite  %23  %24
#   %26 = OpTypePointer Private %23
#   %27 = OpVariable  %26  Private %25
#   %28 = OpConstant  %3  1
#   %29 = OpTypeArray %3 %28
#   %30 = OpConstant  %3  1
#   %31 = OpConstantComposite  %29  %30
#   %32 = OpTypePointer Private %29
#   %33 = OpVariable  %32  Private %31
#   %34 = OpTypeFunction %1
#   %37 = OpTypePointer Function %3
#   %44 = OpConstant  %3  2
#   %45 = OpConstant  %3  264
#   %46 = OpConstant  %3  0
#   %47 = OpConstant  %3  1
#   %48 = OpConstant  %3  0
#   %54 = OpConstant  %3  0
#   %55 = OpConstant  %3  65536
#   %63 = OpTypePointer Private %3
#   %66 = OpTypePointer StorageBuffer %3
#   %67 = OpConstant  %3  0
#   %71 = OpConstant  %3  1
#   %72 = OpConstant  %3  0
#   %74 = OpConstant  %3  1
#   %75 = OpConstant  %3  0
#   %79 = OpConstant  %3  0
#   %81 = OpConstant  %3  1
#   %82 = OpConstant  %3  0
#   %83 = OpConstant  %3  0
#   %85 = OpConstant  %3  0
#   %88 = OpConstant  %3  0
#   %90 = OpConstant  %3  1
#   %35 = OpFunction  %1  None %34
#   %36 = OpLabel
#   %38 = OpVariable  %37  Function
#   %39 = OpVariable  %37  Function
#   %40 = OpVariable  %37  Function
#   %41 = OpLoad  %3  %18
#   %42 = OpLoad  %19  %21
#   %43 = OpCompositeExtract  %3  %42 0
#   %49 = OpIEqual  %2  %43 %48
#   %50 = OpULessThan  %2  %41 %47
#   %51 = OpLogicalAnd  %2  %49 %50
#   OpSelectionMerge %53 None
#   OpBranchConditional %51 %52 %53
#   %52 = OpLabel
#   OpStore %38 %54
#   OpBranch %56
#   %56 = OpLabel
#   OpLoopMerge %60 %59 None
#   OpBranch %57
#   %57 = OpLabel
#   %61 = OpLoad  %3  %38
#   %62 = OpULessThan  %2  %61 %55
#   OpBranchConditional %62 %58 %60
#   %58 = OpLabel
#   %64 = OpAccessChain  %63  %27 %41
#   %65 = OpLoad  %3  %64
#   %68 = OpAccessChain  %66  %7 %67 %65
#   %69 = OpAccessChain  %63  %33 %41
#   %70 = OpLoad  %3  %69
#   %73 = OpAtomicIAdd  %3  %68 %71 %72 %70
#   %76 = OpIMul  %3  %61 %74
#   %77 = OpIAdd  %3  %75 %76
#   %78 = OpIAdd  %3  %77 %41
#   %80 = OpAccessChain  %66  %10 %79 %78
#   OpStore %80 %73
#   %84 = OpAccessChain  %66  %13 %83 %78
#   OpStore %84 %81
#   %86 = OpIAdd  %3  %85 %41
#   %87 = OpIAdd  %3  %61 %81
#   %89 = OpAccessChain  %66  %16 %88 %86
#   OpStore %89 %87
#   OpBranch %59
#   %59 = OpLabel
#   %91 = OpIAdd  %3  %61 %90
#   OpStore %38 %91
#   OpBranch %56
#   %60 = OpLabel
#   OpBranch %53
#   %53 = OpLabel
#   OpReturn
#   OpFunctionEnd

import ctypes, os, sys

CASE = "llvmpipe-1-loop-limit::one_thread_65536_fetch_adds"
RULE = "atomic_fetch_add_explicit (modulo 2^32): one thread's 65,536 fetch-adds of 1 from 0 end at 65,536"
ADAPTER = "vulkan:lavapipe"
ENV = {
    "VK_DRIVER_FILES": "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json",
}
GLOBAL_SIZE = 1
LOCAL_SIZE = 1
# The kernel's arguments in order: ("buffer", name, initial bytes), ("u32", value), ("u64", value), ("local", bytes).
ARGS = [
    ("buffer", "memory", bytes(8)),
    ("buffer", "returned values", bytes(262144)),
    ("buffer", "compare-exchange success", bytes(262144)),
    ("buffer", "iterations executed", bytes(4)),
]
# The words compared: (label, argument, byte offset, bytes, mask of fixed bits, allowed values).
CHECKS = [
    ("global 0x10000000", 0, 0, 4, 0xffffffff, [0x00010000]),
    ("iterations executed, instruction 0 work-item 0", 3, 0, 4, 0xffffffff, [0x00010000]),
]
# What the launch must have been given (the sub-group size each work-item ran in), as CHECKS:
# a value outside those allowed means the driver did not run the case as it needs (exit 2).
REQUIRED = [
]
UNJUDGED = [
    "the values each iteration returned: they need atomcts's order checker; this script judges the final memory and the iteration counts only",
]


class Unavailable(Exception):
    pass


PATTERN = "llvmpipe"
ENTRY = "main"
WGSL = None
# The sub-group size the pipeline requires, with full sub-groups (VK_EXT_subgroup_size_control,
# core in Vulkan 1.3), or None.
SUBGROUP_SIZE = None
WORDS = [
    0x07230203, 0x00010300, 0x000f0000, 0x0000005c, 0x00000000, 0x00020011, 0x00000001, 0x0003000e,
    0x00000000, 0x00000001, 0x0007000f, 0x00000005, 0x00000023, 0x6e69616d, 0x00000000, 0x00000012,
    0x00000015, 0x00060010, 0x00000023, 0x00000011, 0x00000001, 0x00000001, 0x00000001, 0x00040047,
    0x00000004, 0x00000006, 0x00000004, 0x00030047, 0x00000005, 0x00000002, 0x00050048, 0x00000005,
    0x00000000, 0x00000023, 0x00000000, 0x00040047, 0x00000007, 0x00000022, 0x00000000, 0x00040047,
    0x00000007, 0x00000021, 0x00000000, 0x00030047, 0x00000008, 0x00000002, 0x00050048, 0x00000008,
    0x00000000, 0x00000023, 0x00000000, 0x00040047, 0x0000000a, 0x00000022, 0x00000000, 0x00040047,
    0x0000000a, 0x00000021, 0x00000001, 0x00030047, 0x0000000b, 0x00000002, 0x00050048, 0x0000000b,
    0x00000000, 0x00000023, 0x00000000, 0x00040047, 0x0000000d, 0x00000022, 0x00000000, 0x00040047,
    0x0000000d, 0x00000021, 0x00000002, 0x00030047, 0x0000000e, 0x00000002, 0x00050048, 0x0000000e,
    0x00000000, 0x00000023, 0x00000000, 0x00040047, 0x00000010, 0x00000022, 0x00000000, 0x00040047,
    0x00000010, 0x00000021, 0x00000003, 0x00040047, 0x00000012, 0x0000000b, 0x0000001d, 0x00040047,
    0x00000015, 0x0000000b, 0x0000001a, 0x00020013, 0x00000001, 0x00020014, 0x00000002, 0x00040015,
    0x00000003, 0x00000020, 0x00000000, 0x0003001d, 0x00000004, 0x00000003, 0x0003001e, 0x00000005,
    0x00000004, 0x00040020, 0x00000006, 0x0000000c, 0x00000005, 0x0004003b, 0x00000006, 0x00000007,
    0x0000000c, 0x0003001e, 0x00000008, 0x00000004, 0x00040020, 0x00000009, 0x0000000c, 0x00000008,
    0x0004003b, 0x00000009, 0x0000000a, 0x0000000c, 0x0003001e, 0x0000000b, 0x00000004, 0x00040020,
    0x0000000c, 0x0000000c, 0x0000000b, 0x0004003b, 0x0000000c, 0x0000000d, 0x0000000c, 0x0003001e,
    0x0000000e, 0x00000004, 0x00040020, 0x0000000f, 0x0000000c, 0x0000000e, 0x0004003b, 0x0000000f,
    0x00000010, 0x0000000c, 0x00040020, 0x00000011, 0x00000001, 0x00000003, 0x0004003b, 0x00000011,
    0x00000012, 0x00000001, 0x00040017, 0x00000013, 0x00000003, 0x00000003, 0x00040020, 0x00000014,
    0x00000001, 0x00000013, 0x0004003b, 0x00000014, 0x00000015, 0x00000001, 0x0004002b, 0x00000003,
    0x00000016, 0x00000001, 0x0004001c, 0x00000017, 0x00000003, 0x00000016, 0x0004002b, 0x00000003,
    0x00000018, 0x00000000, 0x0004002c, 0x00000017, 0x00000019, 0x00000018, 0x00040020, 0x0000001a,
    0x00000006, 0x00000017, 0x0005003b, 0x0000001a, 0x0000001b, 0x00000006, 0x00000019, 0x0004002b,
    0x00000003, 0x0000001c, 0x00000001, 0x0004001c, 0x0000001d, 0x00000003, 0x0000001c, 0x0004002b,
    0x00000003, 0x0000001e, 0x00000001, 0x0004002c, 0x0000001d, 0x0000001f, 0x0000001e, 0x00040020,
    0x00000020, 0x00000006, 0x0000001d, 0x0005003b, 0x00000020, 0x00000021, 0x00000006, 0x0000001f,
    0x00030021, 0x00000022, 0x00000001, 0x00040020, 0x00000025, 0x00000007, 0x00000003, 0x0004002b,
    0x00000003, 0x0000002c, 0x00000002, 0x0004002b, 0x00000003, 0x0000002d, 0x00000108, 0x0004002b,
    0x00000003, 0x0000002e, 0x00000000, 0x0004002b, 0x00000003, 0x0000002f, 0x00000001, 0x0004002b,
    0x00000003, 0x00000030, 0x00000000, 0x0004002b, 0x00000003, 0x00000036, 0x00000000, 0x0004002b,
    0x00000003, 0x00000037, 0x00010000, 0x00040020, 0x0000003f, 0x00000006, 0x00000003, 0x00040020,
    0x00000042, 0x0000000c, 0x00000003, 0x0004002b, 0x00000003, 0x00000043, 0x00000000, 0x0004002b,
    0x00000003, 0x00000047, 0x00000001, 0x0004002b, 0x00000003, 0x00000048, 0x00000000, 0x0004002b,
    0x00000003, 0x0000004a, 0x00000001, 0x0004002b, 0x00000003, 0x0000004b, 0x00000000, 0x0004002b,
    0x00000003, 0x0000004f, 0x00000000, 0x0004002b, 0x00000003, 0x00000051, 0x00000001, 0x0004002b,
    0x00000003, 0x00000052, 0x00000000, 0x0004002b, 0x00000003, 0x00000053, 0x00000000, 0x0004002b,
    0x00000003, 0x00000055, 0x00000000, 0x0004002b, 0x00000003, 0x00000058, 0x00000000, 0x0004002b,
    0x00000003, 0x0000005a, 0x00000001, 0x00050036, 0x00000001, 0x00000023, 0x00000000, 0x00000022,
    0x000200f8, 0x00000024, 0x0004003b, 0x00000025, 0x00000026, 0x00000007, 0x0004003b, 0x00000025,
    0x00000027, 0x00000007, 0x0004003b, 0x00000025, 0x00000028, 0x00000007, 0x0004003d, 0x00000003,
    0x00000029, 0x00000012, 0x0004003d, 0x00000013, 0x0000002a, 0x00000015, 0x00050051, 0x00000003,
    0x0000002b, 0x0000002a, 0x00000000, 0x000500aa, 0x00000002, 0x00000031, 0x0000002b, 0x00000030,
    0x000500b0, 0x00000002, 0x00000032, 0x00000029, 0x0000002f, 0x000500a7, 0x00000002, 0x00000033,
    0x00000031, 0x00000032, 0x000300f7, 0x00000035, 0x00000000, 0x000400fa, 0x00000033, 0x00000034,
    0x00000035, 0x000200f8, 0x00000034, 0x0003003e, 0x00000026, 0x00000036, 0x000200f9, 0x00000038,
    0x000200f8, 0x00000038, 0x000400f6, 0x0000003c, 0x0000003b, 0x00000000, 0x000200f9, 0x00000039,
    0x000200f8, 0x00000039, 0x0004003d, 0x00000003, 0x0000003d, 0x00000026, 0x000500b0, 0x00000002,
    0x0000003e, 0x0000003d, 0x00000037, 0x000400fa, 0x0000003e, 0x0000003a, 0x0000003c, 0x000200f8,
    0x0000003a, 0x00050041, 0x0000003f, 0x00000040, 0x0000001b, 0x00000029, 0x0004003d, 0x00000003,
    0x00000041, 0x00000040, 0x00060041, 0x00000042, 0x00000044, 0x00000007, 0x00000043, 0x00000041,
    0x00050041, 0x0000003f, 0x00000045, 0x00000021, 0x00000029, 0x0004003d, 0x00000003, 0x00000046,
    0x00000045, 0x000700ea, 0x00000003, 0x00000049, 0x00000044, 0x00000047, 0x00000048, 0x00000046,
    0x00050084, 0x00000003, 0x0000004c, 0x0000003d, 0x0000004a, 0x00050080, 0x00000003, 0x0000004d,
    0x0000004b, 0x0000004c, 0x00050080, 0x00000003, 0x0000004e, 0x0000004d, 0x00000029, 0x00060041,
    0x00000042, 0x00000050, 0x0000000a, 0x0000004f, 0x0000004e, 0x0003003e, 0x00000050, 0x00000049,
    0x00060041, 0x00000042, 0x00000054, 0x0000000d, 0x00000053, 0x0000004e, 0x0003003e, 0x00000054,
    0x00000051, 0x00050080, 0x00000003, 0x00000056, 0x00000055, 0x00000029, 0x00050080, 0x00000003,
    0x00000057, 0x0000003d, 0x00000051, 0x00060041, 0x00000042, 0x00000059, 0x00000010, 0x00000058,
    0x00000056, 0x0003003e, 0x00000059, 0x00000057, 0x000200f9, 0x0000003b, 0x000200f8, 0x0000003b,
    0x00050080, 0x00000003, 0x0000005b, 0x0000003d, 0x0000005a, 0x0003003e, 0x00000026, 0x0000005b,
    0x000200f9, 0x00000038, 0x000200f8, 0x0000003c, 0x000200f9, 0x00000035, 0x000200f8, 0x00000035,
    0x000100fd, 0x00010038,
]

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


def main():
    for k, v in ENV.items():
        os.environ.setdefault(k, v)
    print(f"case: {CASE}")
    print(f"rule: {RULE}")
    print(f"adapter: {ADAPTER}")
    try:
        buffers = run()
    except (Unavailable, RuntimeError, OSError) as e:
        print(f"cannot run: {e}", file=sys.stderr)
        return 2
    for label, arg, offset, nbytes, mask, allowed in REQUIRED:
        seen = int.from_bytes(buffers[arg][offset:offset + nbytes], "little")
        if not any((seen ^ a) & mask == 0 for a in allowed):
            want = " or ".join(str(a) for a in allowed)
            print(f"cannot run: {label} is {seen} where the kernel requires {want}: the driver did not run the launch the case needs", file=sys.stderr)
            return 2
    if REQUIRED:
        print(f"launch as required: {len(REQUIRED)} requirement(s) held ({REQUIRED[0][0]}: {REQUIRED[0][5][0]}, ...)")
    differ = 0
    print(f"{'word':<48} {'expected':<24} {'observed':<20}")
    for label, arg, offset, nbytes, mask, allowed in CHECKS:
        data = buffers[arg]
        seen = int.from_bytes(data[offset:offset + nbytes], "little")
        ok = any((seen ^ a) & mask == 0 for a in allowed)
        digits = 2 * nbytes
        if len(allowed) <= 4:
            exp = " or ".join(f"0x{a:0{digits}x}" for a in allowed)
        else:
            exp = f"one of {len(allowed)} values (CHECKS)"
        if mask != (1 << (8 * nbytes)) - 1:
            exp += f" (bits 0x{mask:0{digits}x})"
        mark = "" if ok else "   <-- differs"
        print(f"{label:<48} {exp:<24} 0x{seen:0{digits}x}{mark}")
        if not ok:
            differ += 1
    for u in UNJUDGED:
        print(f"not judged: {u}")
    if differ:
        print(f"{differ} word(s) differ from what the documents allow: {RULE}")
        return 1
    print("every judged word is what the documents allow")
    return 0


if __name__ == "__main__":
    sys.exit(main())
