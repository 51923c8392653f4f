//! What every run of [`super::Device`] reuses: host-visible buffers mapped for their lifetime,
//! one command pool and buffer, one fence and the descriptor pools.

use ash::vk;

/// A host-visible, coherent storage buffer, mapped for its lifetime.
#[derive(Clone, Copy, Debug)]
pub(super) struct HostBuffer {
    pub(super) buffer: vk::Buffer,
    pub(super) memory: vk::DeviceMemory,
    pub(super) ptr: *mut u8,
    pub(super) size: u64,
}

impl HostBuffer {
    pub(super) fn destroy(&self, d: &ash::Device) {
        unsafe {
            if self.buffer != vk::Buffer::null() {
                d.destroy_buffer(self.buffer, None);
            }
            if self.memory != vk::DeviceMemory::null() {
                // Freeing unmaps it.
                d.free_memory(self.memory, None);
            }
        }
    }
}

/// What every run reuses: one command pool and buffer, one fence, one descriptor pool (one
/// set, reset per run) and the buffers by binding.
pub(super) struct Reused {
    pub(super) command_pool: vk::CommandPool,
    pub(super) command_buffer: vk::CommandBuffer,
    pub(super) fence: vk::Fence,
    pub(super) pool: vk::DescriptorPool,
    /// One set per case of a batch ([`batch`]), reset per batch.
    pub(super) batch_pool: vk::DescriptorPool,
    pub(super) buffers: Vec<HostBuffer>,
}

impl Reused {
    pub(super) fn null() -> Reused {
        Reused {
            command_pool: vk::CommandPool::null(),
            command_buffer: vk::CommandBuffer::null(),
            fence: vk::Fence::null(),
            pool: vk::DescriptorPool::null(),
            batch_pool: vk::DescriptorPool::null(),
            buffers: Vec::new(),
        }
    }

    /// Destroys everything (the device must be idle).
    pub(super) fn destroy(&mut self, d: &ash::Device) {
        unsafe {
            if self.fence != vk::Fence::null() {
                d.destroy_fence(self.fence, None);
            }
            if self.command_pool != vk::CommandPool::null() {
                d.destroy_command_pool(self.command_pool, None);
            }
            for pool in [self.pool, self.batch_pool] {
                if pool != vk::DescriptorPool::null() {
                    d.destroy_descriptor_pool(pool, None);
                }
            }
        }
        for b in self.buffers.drain(..) {
            b.destroy(d);
        }
        *self = Reused::null();
    }
}
