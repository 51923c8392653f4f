//! Sparse byte-addressed memory: a set of allocated ranges. An access outside every allocated
//! range is out of range. Multi-byte values are little-endian (SASS ATOM: "the effective address
//! specifies the least-significant data bits"; Intel and Apple GPUs are little-endian too).

use crate::error::ModelError;
use std::collections::BTreeMap;

/// The most bytes one [`Memory`] may allocate in all: a guard against absurd sizes in case
/// files. Allocation beyond it is a [`ModelError::Limit`], never an attempt.
pub const MAX_BYTES: u64 = 64 << 20;

/// Sparse memory: disjoint allocated ranges, each with its bytes.
///
/// Costs (issue 7, D2/D3): allocating k ranges in ascending order is O(k log k) in all (a range
/// that extends the last one grows it in place); comparing two memories walks their ranges and
/// compares whole slices, so equal memories cost a `memcmp`, never a per-byte map.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Memory {
    /// Base address to bytes; ranges never overlap or touch (adjacent ranges are merged).
    regions: BTreeMap<u64, Vec<u8>>,
    /// Sum of the regions' lengths (kept, so a limit check is not a walk over every region).
    total: u64,
}

/// The exclusive end of `[base, base+len)` as a 129-bit-safe number (a range may end exactly
/// at 2^64).
fn end_of(base: u64, len: usize) -> u128 {
    u128::from(base) + len as u128
}

/// One stretch where two memories differ: `a` and `b` are the bytes of each side over the
/// stretch, `None` where that side has nothing allocated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiffSpan<'a> {
    /// First address.
    pub addr: u64,
    /// The first memory's bytes, if allocated there.
    pub a: Option<&'a [u8]>,
    /// The second memory's bytes, if allocated there.
    pub b: Option<&'a [u8]>,
}

impl DiffSpan<'_> {
    /// Length in bytes.
    fn len(&self) -> usize {
        self.a.or(self.b).map_or(0, <[u8]>::len)
    }

    /// The bytes that differ, as `(address, first, second)`.
    pub fn bytes(&self) -> impl Iterator<Item = (u64, Option<u8>, Option<u8>)> + '_ {
        (0..self.len()).filter_map(move |i| {
            let (x, y) = (self.a.map(|s| s[i]), self.b.map(|s| s[i]));
            (x != y).then_some((self.addr + i as u64, x, y))
        })
    }
}

impl Memory {
    /// An empty memory (nothing allocated).
    pub fn new() -> Memory {
        Memory::default()
    }

    /// Total allocated bytes.
    pub fn allocated_bytes(&self) -> u64 {
        self.total
    }

    /// The allocated ranges as `(base, len)`, ascending.
    pub fn ranges(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.regions.iter().map(|(b, r)| (*b, r.len() as u64))
    }

    /// The allocated ranges with their bytes, ascending.
    pub fn regions(&self) -> impl Iterator<Item = (u64, &[u8])> + '_ {
        self.regions.iter().map(|(b, r)| (*b, r.as_slice()))
    }

    /// Allocates `[base, base+len)` zero-filled; already allocated bytes keep their contents.
    /// A range may end exactly at 2^64; one that goes past it is a [`ModelError::Limit`].
    pub fn alloc(&mut self, base: u64, len: u64) -> Result<(), ModelError> {
        if len == 0 {
            return Ok(());
        }
        let end = u128::from(base) + u128::from(len);
        if end > 1u128 << 64 {
            return Err(ModelError::Limit(format!(
                "range {base:#x}+{len:#x} goes past 2^64"
            )));
        }
        // The regions that overlap or touch [base, end) are consecutive: walk back from the
        // last one starting at or before `end`.
        let last_start = u64::try_from(end).unwrap_or(u64::MAX);
        let mut touching = Vec::new();
        for (b, r) in self.regions.range(..=last_start).rev() {
            if end_of(*b, r.len()) < u128::from(base) {
                break;
            }
            if u128::from(*b) <= end {
                touching.push(*b);
            }
        }
        touching.reverse();
        let mut lo = base;
        let mut hi = end;
        let mut existing = 0u64;
        for b in &touching {
            let r = &self.regions[b];
            lo = lo.min(*b);
            hi = hi.max(end_of(*b, r.len()));
            existing += r.len() as u64;
        }
        let grow = (hi - u128::from(lo)) as u64 - existing;
        if self.total + grow > MAX_BYTES {
            return Err(ModelError::Limit(format!(
                "allocating {len:#x} bytes at {base:#x} exceeds the {MAX_BYTES:#x}-byte memory limit"
            )));
        }
        let size = (hi - u128::from(lo)) as usize;
        // Grow the first touching region in place when it starts the merged range (the common
        // ascending case), else start a fresh buffer.
        let mut bytes = match touching.first() {
            Some(b) if *b == lo => self.regions.remove(b).unwrap_or_default(),
            _ => Vec::new(),
        };
        let first_kept = if bytes.is_empty() { 0 } else { 1 };
        if bytes.is_empty() {
            bytes = vec![0u8; size];
        } else {
            bytes.resize(size, 0);
        }
        for b in touching.iter().skip(first_kept) {
            let r = self.regions.remove(b).unwrap_or_default();
            let off = (b - lo) as usize;
            bytes[off..off + r.len()].copy_from_slice(&r);
        }
        self.regions.insert(lo, bytes);
        self.total += grow;
        Ok(())
    }

    /// Whether `[addr, addr+len)` lies inside one allocated range.
    pub fn contains(&self, addr: u64, len: u64) -> bool {
        self.locate(addr, len).is_some()
    }

    fn locate(&self, addr: u64, len: u64) -> Option<(u64, usize)> {
        let end = u128::from(addr) + u128::from(len);
        let (base, r) = self.regions.range(..=addr).next_back()?;
        if end <= end_of(*base, r.len()) {
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

    /// Copies `data` to `[addr, addr+data.len())`; `false` (and nothing written) unless it lies
    /// inside one allocated range.
    pub fn write_slice(&mut self, addr: u64, data: &[u8]) -> bool {
        let Some((base, off)) = self.locate(addr, data.len() as u64) else {
            return false;
        };
        match self.regions.get_mut(&base) {
            Some(r) => {
                r[off..off + data.len()].copy_from_slice(data);
                true
            }
            None => false,
        }
    }

    /// The stretches where `self` and `other` differ (in contents or in what is allocated),
    /// ascending. Cost: linear in the number of ranges plus a slice comparison of the bytes
    /// both have; nothing is allocated per byte.
    pub fn diff<'a>(&'a self, other: &'a Memory) -> Vec<DiffSpan<'a>> {
        let mut cuts: Vec<u128> = Vec::new();
        for m in [self, other] {
            for (b, r) in &m.regions {
                cuts.push(u128::from(*b));
                cuts.push(end_of(*b, r.len()));
            }
        }
        cuts.sort_unstable();
        cuts.dedup();
        let mut out = Vec::new();
        for w in cuts.windows(2) {
            let (x, y) = (w[0], w[1]);
            let Ok(addr) = u64::try_from(x) else { break };
            let len = (y - x) as usize;
            let (a, b) = (self.slice(addr, len), other.slice(addr, len));
            if a == b {
                continue;
            }
            out.push(DiffSpan { addr, a, b });
        }
        out
    }

    /// The bytes of `[addr, addr+len)` if they lie inside one range.
    pub fn slice(&self, addr: u64, len: usize) -> Option<&[u8]> {
        let (base, off) = self.locate(addr, len as u64)?;
        self.regions.get(&base).map(|r| &r[off..off + len])
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
        // Ending exactly at 2^64 is legal; one byte further is not.
        m.alloc(u64::MAX - 3, 4).unwrap();
        assert!(m.write(u64::MAX - 3, 4, 0x0102_0304));
        assert_eq!(m.read(u64::MAX - 3, 4), Some(0x0102_0304));
        assert_eq!(m.allocated_bytes(), 4);
        assert!(matches!(
            m.alloc(0, MAX_BYTES + 1),
            Err(ModelError::Limit(_))
        ));
        // Only the legal 4 bytes at the top were allocated.
        assert_eq!(m.allocated_bytes(), 4);
        // The bound itself: exactly MAX_BYTES fits, one byte more (in one range or in two) not.
        let mut m = Memory::new();
        assert!(matches!(
            m.alloc(0x1000, MAX_BYTES + 1),
            Err(ModelError::Limit(_))
        ));
        m.alloc(0x1000, MAX_BYTES).unwrap();
        assert_eq!(m.allocated_bytes(), MAX_BYTES);
        assert!(matches!(
            m.alloc(0x1000 + MAX_BYTES, 1),
            Err(ModelError::Limit(_))
        ));
    }

    #[test]
    fn many_ranges_allocate_in_any_order_and_diff_by_spans() {
        let mut a = Memory::new();
        let mut b = Memory::new();
        for i in 0..20_000u64 {
            a.alloc(0x1000 + 8 * i, 4).unwrap();
            b.alloc(0x1000 + 8 * (19_999 - i), 4).unwrap();
        }
        assert_eq!(a, b);
        assert_eq!(a.allocated_bytes(), 80_000);
        assert!(a.diff(&b).is_empty());
        // Adjacent ranges in descending order merge into one.
        let mut c = Memory::new();
        for i in (0..1000u64).rev() {
            c.alloc(4 * i, 4).unwrap();
        }
        assert_eq!(c.ranges().collect::<Vec<_>>(), vec![(0, 4000)]);
        b.write(0x1000 + 8 * 7, 1, 9);
        let d = a.diff(&b);
        assert_eq!(d.len(), 1);
        assert_eq!(
            d[0].bytes().collect::<Vec<_>>(),
            vec![(0x1000 + 56, Some(0), Some(9))]
        );
        let e = Memory::new();
        assert_eq!(a.diff(&e).len(), 20_000);
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
