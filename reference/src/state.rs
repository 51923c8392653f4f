//! Machine state an instruction reads and writes: named registers or variables (vectors of
//! bit patterns), two memories, and the dialect's execution controls.

use crate::error::ModelError;
use crate::memory::Memory;
use crate::types::{ElemType, Space};
use std::collections::BTreeMap;
use std::fmt;

/// The most lanes (SASS warp lanes, MSL threads) a state may have.
pub const MAX_LANES: u32 = 1024;
/// The most elements one register or variable may have.
pub const MAX_ELEMS: usize = 4096;

/// A named register or variable: a vector of elements of one type. SASS registers `R<n>` and
/// predicates `P<n>` hold one element per lane; vISA variables `V<n>` hold their declared
/// elements; vISA predicate variables hold one boolean per channel; MSL per-thread operands
/// hold one element per thread.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Reg {
    /// Element type.
    pub ty: ElemType,
    /// Elements, low `ty.bits` bits significant.
    pub elems: Vec<u64>,
}

/// MSL atomic object types (MSL §6.15.4.5, "atomic_int and atomic_uint"; `atomic_float` add and
/// sub in device memory only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicType {
    /// `atomic_int`: signed 32-bit, two's complement wrap-around.
    Int,
    /// `atomic_uint`: unsigned 32-bit.
    Uint,
    /// `atomic_float`: binary32.
    Float,
}

impl AtomicType {
    /// The MSL spelling.
    pub fn name(self) -> &'static str {
        match self {
            AtomicType::Int => "atomic_int",
            AtomicType::Uint => "atomic_uint",
            AtomicType::Float => "atomic_float",
        }
    }

    /// Inverse of [`AtomicType::name`].
    pub fn from_name(s: &str) -> Option<AtomicType> {
        match s {
            "atomic_int" => Some(AtomicType::Int),
            "atomic_uint" => Some(AtomicType::Uint),
            "atomic_float" => Some(AtomicType::Float),
            _ => None,
        }
    }
}

/// An MSL buffer of atomic objects, placed in one memory.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Buffer {
    /// `device` (global) or `threadgroup` (shared).
    pub space: Space,
    /// The element type.
    pub ty: AtomicType,
    /// Byte address of element 0.
    pub base: u64,
    /// Number of 4-byte elements.
    pub len: u64,
}

/// A SASS generic-address window (`shared_window`, `local_window`): addresses inside it do not
/// address global memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Window {
    /// First address.
    pub base: u64,
    /// Length in bytes.
    pub len: u64,
}

impl Window {
    /// Whether `[addr, addr+len)` overlaps the window.
    pub fn overlaps(&self, addr: u64, len: u64) -> bool {
        let end = addr.saturating_add(len);
        addr < self.base.saturating_add(self.len) && self.base < end
    }
}

/// Everything an instruction can read or write.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    /// Lanes (SASS warp lanes 1..=32, MSL threads); vISA uses exec size instead and has 1.
    pub lanes: u32,
    /// Which lanes take part (MSL `active`; SASS lanes outside a divergent branch). One per lane.
    pub active: Vec<bool>,
    /// Registers and variables by name.
    pub regs: BTreeMap<String, Reg>,
    /// Global memory (SASS generic/global, vISA T255 and SVM, MSL `device`).
    pub global: Memory,
    /// Shared memory (vISA T0 SLM at offset 0, MSL `threadgroup`).
    pub shared: Memory,
    /// vISA SLM size in bytes (T0 offsets at or beyond it are out of bounds).
    pub slm_size: Option<u64>,
    /// SASS shared-memory window of the generic address space.
    pub shared_window: Option<Window>,
    /// SASS local-memory window of the generic address space.
    pub local_window: Option<Window>,
    /// MSL buffers by name.
    pub buffers: BTreeMap<String, Buffer>,
    /// vISA thread execution mask (bit i enables channel i); all on by default.
    pub emask: u32,
    /// MSL SIMD-group width (threads_per_simdgroup).
    pub simd_width: u32,
}

impl Default for State {
    fn default() -> State {
        State::new(1)
    }
}

impl State {
    /// An empty state with `lanes` lanes, all active.
    pub fn new(lanes: u32) -> State {
        State {
            lanes,
            active: vec![true; lanes as usize],
            regs: BTreeMap::new(),
            global: Memory::new(),
            shared: Memory::new(),
            slm_size: None,
            shared_window: None,
            local_window: None,
            buffers: BTreeMap::new(),
            emask: u32::MAX,
            simd_width: 32,
        }
    }

    /// Checks the invariants that the model relies on (lane counts, vector sizes).
    pub fn validate(&self) -> Result<(), ModelError> {
        if self.lanes == 0 || self.lanes > MAX_LANES {
            return Err(ModelError::Limit(format!(
                "lanes = {} (1..={MAX_LANES})",
                self.lanes
            )));
        }
        if self.active.len() != self.lanes as usize {
            return Err(ModelError::BadState(format!(
                "active has {} entries for {} lanes",
                self.active.len(),
                self.lanes
            )));
        }
        for (name, r) in &self.regs {
            if r.elems.len() > MAX_ELEMS {
                return Err(ModelError::Limit(format!(
                    "{name} has {} elements (at most {MAX_ELEMS})",
                    r.elems.len()
                )));
            }
            if let Some((i, e)) = r
                .elems
                .iter()
                .enumerate()
                .find(|(_, e)| **e & !r.ty.mask() != 0)
            {
                return Err(ModelError::BadState(format!(
                    "{name}[{i}] = {e:#x} does not fit its {}-bit type",
                    r.ty.bits
                )));
            }
        }
        if self.simd_width == 0 || self.simd_width > 64 {
            return Err(ModelError::Limit(format!(
                "simd_width = {} (1..=64)",
                self.simd_width
            )));
        }
        Ok(())
    }

    /// The memory of a space.
    pub fn memory(&self, space: Space) -> &Memory {
        match space {
            Space::Global => &self.global,
            Space::Shared => &self.shared,
        }
    }

    /// The memory of a space, mutable.
    pub fn memory_mut(&mut self, space: Space) -> &mut Memory {
        match space {
            Space::Global => &mut self.global,
            Space::Shared => &mut self.shared,
        }
    }

    /// Element `idx` of register `name`, if both exist.
    pub fn elem(&self, name: &str, idx: u32) -> Option<u64> {
        self.regs
            .get(name)
            .and_then(|r| r.elems.get(idx as usize).copied())
    }

    /// Sets bits `[lo, lo+bits)` of element `idx` of `name` to the low bits of `value`.
    /// The register must exist and be large enough.
    pub fn set_field(
        &mut self,
        name: &str,
        idx: u32,
        lo: u32,
        bits: u32,
        value: u64,
    ) -> Result<(), ModelError> {
        let r = self
            .regs
            .get_mut(name)
            .ok_or_else(|| crate::internal!("write to undeclared register {name}"))?;
        let e = r
            .elems
            .get_mut(idx as usize)
            .ok_or_else(|| crate::internal!("write to {name}[{idx}] beyond its size"))?;
        if bits == 0 || lo >= 64 || bits > 64 - lo {
            return Err(ModelError::Limit(format!(
                "bits {lo}..{} of {name}[{idx}] lie outside 64 bits",
                u64::from(lo) + u64::from(bits)
            )));
        }
        let m = crate::types::mask(bits) << lo;
        *e = (*e & !m) | ((value << lo) & m);
        Ok(())
    }
}

/// A location whose value an outcome states.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Loc {
    /// Element `idx` of a register or variable.
    Reg {
        /// Register name.
        name: String,
        /// Element index (lane or channel).
        idx: u32,
    },
    /// `bytes` bytes of memory at `addr`.
    Mem {
        /// The memory.
        space: Space,
        /// First byte.
        addr: u64,
        /// Width in bytes (1..=8).
        bytes: u8,
    },
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Loc::Reg { name, idx } => write!(f, "{name}[{idx}]"),
            Loc::Mem { space, addr, .. } => write!(f, "{}[{addr:#x}]", space.name()),
        }
    }
}
