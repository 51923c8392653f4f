//! Batched runs' shared buffers (issue 31, point 1), for the Vulkan device, the browser's
//! WebGPU and the PTX back end alike: a shared buffer is laid out `guard | case 0 | guard | case 1 | ... | guard`,
//! every region starting at a multiple of [`REGION_ALIGN`] bytes (or more) with at least
//! [`GUARD_BYTES`] bytes of a fixed pattern between two regions. After the run every
//! byte outside the cases' own bytes is compared with what was uploaded (the pattern, or the
//! zeros that pad a region to 8 bytes): a changed byte makes the cases on both sides of it
//! errors that name the cross-case write, never a pass.

/// Bytes of guard pattern between two cases' regions of a buffer (at least).
pub const GUARD_BYTES: u64 = 64;

/// Alignment of a case's region in a shared buffer, in bytes (at least; the device's
/// `minStorageBufferOffsetAlignment` where larger).
pub const REGION_ALIGN: u64 = 64;

/// The guard pattern: byte `o` of a buffer outside every region is `GUARD[o % 4]`.
pub const GUARD: [u8; 4] = [0xa5, 0x5a, 0xc3, 0x3c];

/// Where one case's buffer lies in a shared buffer.
#[derive(Clone, Copy, Debug)]
pub struct Region {
    /// Where it starts (bytes).
    pub start: u64,
    /// The case's bytes.
    pub len: u64,
    /// The bound range (`len` rounded up to 8, at least 8).
    pub range: u64,
}

/// A binding's layout: the cases' regions and the buffer's size.
pub fn layout(lens: &[u64], align: u64) -> (Vec<Region>, u64) {
    let mut pos = GUARD_BYTES;
    let regions = lens
        .iter()
        .map(|&len| {
            let start = pos.div_ceil(align) * align;
            let range = len.max(8).div_ceil(8) * 8;
            pos = start + range + GUARD_BYTES;
            Region { start, len, range }
        })
        .collect();
    (regions, pos.div_ceil(8) * 8)
}

/// The bytes a binding's buffer holds before the run: the pattern, the cases' bytes, zeros
/// from a case's end to its range's.
pub fn image(regions: &[Region], total: u64, bytes: &[&[u8]]) -> Vec<u8> {
    let mut v = vec![0u8; total as usize];
    let mut words = v.chunks_exact_mut(4);
    words.by_ref().for_each(|w| w.copy_from_slice(&GUARD));
    let tail = words.into_remainder();
    let n = tail.len();
    tail.copy_from_slice(&GUARD[..n]);
    for (r, b) in regions.iter().zip(bytes) {
        let s = r.start as usize;
        v[s..s + r.range as usize].fill(0);
        v[s..s + b.len()].copy_from_slice(b);
    }
    v
}

/// In each gap between the cases' own bytes, the first byte that differs between `before`
/// and `after`: its offset, what it was and what it is.
pub fn changed_guards(regions: &[Region], before: &[u8], after: &[u8]) -> Vec<(u64, u8, u8)> {
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
pub fn neighbours(regions: &[Region], at: u64) -> (Option<usize>, Option<usize>) {
    let after = regions.iter().position(|r| r.start > at);
    let before = match after {
        Some(0) => None,
        Some(k) => Some(k - 1),
        None => regions.len().checked_sub(1),
    };
    (before, after)
}

/// Per case beside a changed guard of one binding's buffer (`regions`, `before` and `after`
/// the run): its index and the error naming the write (`names`: the cases' ids; `binding` and
/// `role`: the buffer; `alone`: how to run each case alone instead).
pub fn cross_case_errors(
    regions: &[Region],
    (before, after): (&[u8], &[u8]),
    names: &[String],
    (binding, role): (usize, &str),
    alone: &str,
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (at, was, now) in changed_guards(regions, before, after) {
        let (a, b) = neighbours(regions, at);
        let name = |k: Option<usize>| {
            k.and_then(|k| names.get(k))
                .map_or("(none: the buffer's edge)".to_string(), |n| {
                    format!("`{n}`")
                })
        };
        let why = format!(
            "cross-case write: byte {at:#010x} of shared buffer {binding} ({role}), in the guard between case {} and case {}, changed from {was:#04x} to {now:#04x} (batched run; {alone})",
            name(a),
            name(b)
        );
        out.extend([a, b].into_iter().flatten().map(|k| (k, why.clone())));
    }
    out
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
            assert!(r.start >= end + GUARD_BYTES, "{rs:?}");
            assert_eq!(r.range % 8, 0);
            assert!(r.range >= r.len.max(8));
            end = r.start + r.range;
        }
        assert!(total >= end + GUARD_BYTES);
        let (rs, _) = layout(&[4, 4], 256);
        assert_eq!((rs[0].start, rs[1].start), (256, 512));
    }

    #[test]
    fn the_image_is_the_pattern_around_each_cases_bytes_and_zeros() {
        let (rs, total) = layout(&[3, 12], 64);
        let (a, b) = ([7u8, 8, 9], [1u8; 12]);
        for total in [total, total + 3] {
            let v = image(&rs, total, &[&a, &b]);
            assert_eq!(v.len() as u64, total);
            for (o, &byte) in v.iter().enumerate() {
                let o = o as u64;
                let want = match rs
                    .iter()
                    .zip([&a[..], &b[..]])
                    .find(|(r, _)| (r.start..r.start + r.range).contains(&o))
                {
                    Some((r, bytes)) => bytes.get((o - r.start) as usize).copied().unwrap_or(0),
                    None => GUARD[(o % 4) as usize],
                };
                assert_eq!(byte, want, "byte {o} of {total}");
            }
        }
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
