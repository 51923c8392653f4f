//! The block schedules (the checker's fourth stage, after the walks, FORMAT.md "Concurrent cases"): the orders a
//! GPU produces when each SIMD-group's atomic instruction is serialized by the memory as one
//! block (iteration `j` of every lane of one instruction in one SIMD-group, the lanes ascending or
//! descending), the blocks of different instructions and SIMD-groups interleaved in any order.
//! Searched depth first over states (memory value, how many blocks of each SIMD-group ran), each
//! state visited once, for at most [`BLOCK_STATES`] states: such an answer is decided whatever
//! it reports (every return, or only the registers after the last iteration), where the thread
//! level search may not be.

use super::history::{Equality, History, fits};
use crate::error::ModelError;
use crate::race::Step;
use std::collections::HashSet;

/// The most states the block search visits (each a memory value and a count per block of
/// threads), and the most counts all of them hold together.
pub const BLOCK_STATES: usize = 16_384;

/// Counts (states times blocks) the visited states hold at most: 4 MiB.
const BLOCK_COUNTS: usize = 1 << 20;

/// A thread order (a thread index per step) that runs the history in blocks and produces every
/// observation, if one exists within [`BLOCK_STATES`] states; `None` where there is none, the
/// history names no blocks, or the bound is reached.
pub(super) fn block_order(h: &History<'_>, eq: Equality) -> Result<Option<Vec<usize>>, ModelError> {
    if h.blocks.len() != h.threads.len() || h.threads.is_empty() {
        return Ok(None);
    }
    let mut ids: Vec<usize> = h.blocks.to_vec();
    ids.sort_unstable();
    ids.dedup();
    let members: Vec<Vec<usize>> = ids
        .iter()
        .map(|&b| (0..h.threads.len()).filter(|&t| h.blocks[t] == b).collect())
        .collect();
    let states = BLOCK_STATES.min(BLOCK_COUNTS / members.len());
    if states == 0 {
        return Ok(None);
    }
    let steps: Vec<u32> = members
        .iter()
        .map(|m| {
            m.iter()
                .map(|&t| h.threads[t].len() as u32)
                .max()
                .unwrap_or(0)
        })
        .collect();
    // Every state reached, with the block and direction that reached it from its parent.
    let mut nodes: Vec<(usize, usize, bool)> = vec![(usize::MAX, 0, false)];
    let mut seen: HashSet<(u64, Vec<u32>)> = HashSet::new();
    let start = vec![0u32; members.len()];
    seen.insert((h.init, start.clone()));
    let mut stack = vec![(0usize, h.init, start)];
    while let Some((node, value, progress)) = stack.pop() {
        if progress == steps {
            if h.final_value.is_none_or(|f| eq.eq(value, f)) {
                return Ok(Some(unfold(h, &members, &nodes, node)));
            }
            continue;
        }
        for b in 0..members.len() {
            if progress[b] == steps[b] {
                continue;
            }
            for descending in [false, true] {
                if descending && members[b].len() == 1 {
                    continue;
                }
                let Some(next) = run_block(h, &members[b], progress[b], descending, value, eq)?
                else {
                    continue;
                };
                let mut after = progress.clone();
                after[b] += 1;
                if seen.len() >= states {
                    return Ok(None);
                }
                if seen.insert((next, after.clone())) {
                    nodes.push((node, b, descending));
                    stack.push((nodes.len() - 1, next, after));
                }
            }
        }
    }
    Ok(None)
}

/// The value after step `j` of each thread of a block (those that have one), lanes in turn,
/// each taking the first effect that fits what was observed of it; `None` where one fits none.
fn run_block(
    h: &History<'_>,
    members: &[usize],
    j: u32,
    descending: bool,
    mut value: u64,
    eq: Equality,
) -> Result<Option<u64>, ModelError> {
    let lanes: Vec<usize> = if descending {
        members.iter().rev().copied().collect()
    } else {
        members.to_vec()
    };
    for t in lanes {
        let Some((op, obs)) = h.threads[t].get(j as usize) else {
            continue;
        };
        match op.step(value)?.into_iter().find(|e| fits(obs, e, eq)) {
            Some(e) => value = e.new,
            None => return Ok(None),
        }
    }
    Ok(Some(value))
}

/// The thread order of the blocks that reached `node`.
fn unfold(
    h: &History<'_>,
    members: &[Vec<usize>],
    nodes: &[(usize, usize, bool)],
    mut node: usize,
) -> Vec<usize> {
    let mut blocks = Vec::new();
    while node != 0 {
        let (parent, b, descending) = nodes[node];
        blocks.push((b, descending));
        node = parent;
    }
    let mut progress = vec![0usize; members.len()];
    let mut order = Vec::new();
    for (b, descending) in blocks.into_iter().rev() {
        let j = progress[b];
        progress[b] += 1;
        let lanes: Vec<usize> = if descending {
            members[b].iter().rev().copied().collect()
        } else {
            members[b].clone()
        };
        order.extend(lanes.into_iter().filter(|&t| j < h.threads[t].len()));
    }
    order
}
