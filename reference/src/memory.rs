//! Sparse byte-addressed memory: a set of allocated ranges. An access outside every allocated
//! range is out of range. Multi-byte values are little-endian (SASS ATOM: "the effective address
//! specifies the least-significant data bits"; Intel and Apple GPUs are little-endian too).

use crate::error::ModelError;
use std::collections::BTreeMap;

/// The most bytes one [`Memory`] may allocate in all: a guard against absurd sizes in case
/// files. Allocation beyond it is a [`ModelError::Limit`], never an attempt.
pub const MAX_BYTES: u64 = 64 << 20;

/// Sparse memory: disjoint allocated ranges, each with its bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Memory {
    /// Base address to bytes; ranges never overlap or touch (adjacent ranges are merged).
    regions: BTreeMap<u64, Vec<u8>>,
}

impl Memory {
    /// An empty memory (nothing allocated).
    pub fn new() -> Memory {
        Memory::default()
    }

    /// Total allocated bytes.
    pub fn allocated_bytes(&self) -> u64 {
        self.regions.values().map(|r| r.len() as u64).sum()
    }

    /// The allocated ranges as `(base, len)`, ascending.
    pub fn ranges(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.regions.iter().map(|(b, r)| (*b, r.len() as u64))
    }

    /// Allocates `[base, base+len)` zero-filled; already allocated bytes keep their contents.
    pub fn alloc(&mut self, base: u64, len: u64) -> Result<(), ModelError> {
        if len == 0 {
            return Ok(());
        }
        let end = base.checked_add(len).ok_or_else(|| {
            ModelError::Limit(format!("range {base:#x}+{len:#x} wraps past 2^64"))
        })?;
        // Merge with every region that overlaps or touches [base, end).
        let mut lo = base;
        let mut hi = end;
        let touching: Vec<u64> = self
            .regions
            .range(..=end)
            .filter(|(b, r)| **b + r.len() as u64 >= base)
            .map(|(b, _)| *b)
            .collect();
        for b in &touching {
            let r = &self.regions[b];
            lo = lo.min(*b);
            hi = hi.max(*b + r.len() as u64);
        }
        let existing: u64 = touching.iter().map(|b| self.regions[b].len() as u64).sum();
        let grow = (hi - lo) - existing;
        if self.allocated_bytes() + grow > MAX_BYTES {
            return Err(ModelError::Limit(format!(
                "allocating {len:#x} bytes at {base:#x} exceeds the {MAX_BYTES:#x}-byte memory limit"
            )));
        }
        let mut bytes = vec![0u8; (hi - lo) as usize];
        for b in touching {
            let r = self.regions.remove(&b).unwrap_or_default();
            let off = (b - lo) as usize;
            bytes[off..off + r.len()].copy_from_slice(&r);
        }
        self.regions.insert(lo, bytes);
        Ok(())
    }

    /// Whether `[addr, addr+len)` lies inside one allocated range.
    pub fn contains(&self, addr: u64, len: u64) -> bool {
        self.locate(addr, len).is_some()
    }

    fn locate(&self, addr: u64, len: u64) -> Option<(u64, usize)> {
        let end = addr.checked_add(len)?;
        let (base, r) = self.regions.range(..=addr).next_back()?;
        if end <= base + r.len() as u64 {
            Some((*base, (addr - base) as usize))
        } else {
            None
        }
    }

    /// Reads `len` (1..=8) bytes little-endian, or `None` if any byte is unallocated.
    pub fn read(&self, addr: u64, len: u64) -> Option<u64> {
        if !(1..=8).contains(&len) {
            return None;
        }
        let (base, off) = self.locate(addr, len)?;
        let r = &self.regions[&base];
        let mut v = 0u64;
        for i in (0..len as usize).rev() {
            v = (v << 8) | u64::from(r[off + i]);
        }
        Some(v)
    }

    /// Writes the low `len` (1..=8) bytes of `value` little-endian; `false` (and nothing
    /// written) if any byte is unallocated.
    pub fn write(&mut self, addr: u64, len: u64, value: u64) -> bool {
        if !(1..=8).contains(&len) {
            return false;
        }
        let Some((base, off)) = self.locate(addr, len) else {
            return false;
        };
        let Some(r) = self.regions.get_mut(&base) else {
            return false;
        };
        for i in 0..len as usize {
            r[off + i] = (value >> (8 * i)) as u8;
        }
        true
    }

    /// Every allocated byte as `(address, byte)`, ascending (for comparisons and reports).
    pub fn bytes(&self) -> impl Iterator<Item = (u64, u8)> + '_ {
        self.regions
            .iter()
            .flat_map(|(b, r)| r.iter().enumerate().map(move |(i, v)| (b + i as u64, *v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn little_endian_round_trip() {
        let mut m = Memory::new();
        m.alloc(0x1000, 16).unwrap();
        assert!(m.write(0x1004, 4, 0x1122_3344));
        assert_eq!(m.read(0x1004, 1), Some(0x44));
        assert_eq!(m.read(0x1007, 1), Some(0x11));
        assert_eq!(m.read(0x1004, 4), Some(0x1122_3344));
        assert_eq!(m.read(0x1000, 8), Some(0x1122_3344_0000_0000));
    }

    #[test]
    fn out_of_range_reads_and_writes_fail_without_effect() {
        let mut m = Memory::new();
        m.alloc(0x1000, 8).unwrap();
        assert_eq!(m.read(0x0fff, 1), None);
        assert_eq!(m.read(0x1006, 4), None);
        assert!(!m.write(0x1006, 4, u64::MAX));
        assert_eq!(m.read(0x1000, 8), Some(0));
    }

    #[test]
    fn alloc_merges_and_keeps_contents() {
        let mut m = Memory::new();
        m.alloc(0x10, 4).unwrap();
        m.write(0x10, 4, 0xdead_beef);
        m.alloc(0x14, 4).unwrap();
        m.alloc(0x0c, 6).unwrap();
        assert_eq!(m.ranges().collect::<Vec<_>>(), vec![(0x0c, 12)]);
        assert_eq!(m.read(0x10, 4), Some(0xdead_beef));
        assert!(m.contains(0x0c, 12));
    }

    #[test]
    fn absurd_allocations_are_limits_not_attempts() {
        let mut m = Memory::new();
        assert!(matches!(m.alloc(0, u64::MAX), Err(ModelError::Limit(_))));
        assert!(matches!(
            m.alloc(u64::MAX - 1, 4),
            Err(ModelError::Limit(_))
        ));
        assert!(matches!(
            m.alloc(0, MAX_BYTES + 1),
            Err(ModelError::Limit(_))
        ));
        assert_eq!(m.allocated_bytes(), 0);
    }

    #[test]
    fn top_of_address_space_is_usable() {
        let mut m = Memory::new();
        m.alloc(u64::MAX - 7, 7).unwrap();
        assert!(m.write(u64::MAX - 7, 4, 7));
        assert_eq!(m.read(u64::MAX - 7, 4), Some(7));
        assert_eq!(m.read(u64::MAX - 3, 4), None);
    }
}
