//! Walks (the checker's third stage, [`crate::concurrent`]'s search module): where every
//! observed return fixes its step's effect, the steps are edges that must form a walk from the
//! initial value to the final one; and the connectivity of a walk's remaining edges, which
//! prunes the search.

use super::history::{CONNECTED_EDGES, Equality, Thread, fits};
use crate::error::ModelError;
use crate::ir::AtomicOp;
use crate::race::OpStep;
use crate::race::{Observed, Step};
use crate::semantics::{Effect, Effects};
use std::collections::{BTreeMap, HashMap};

/// A step of a walk: an edge from the value its observed return says it read to the one value
/// it then left, or a read (a compare-exchange observed to fail, its return not kept) that may
/// run wherever it can fail and changes nothing.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum WalkStep {
    Edge { from: u64, to: u64 },
    Read(OpStep),
}

impl Step for WalkStep {
    fn step(&self, old: u64) -> Result<Effects, ModelError> {
        match self {
            WalkStep::Edge { from, to } => {
                let mut e = Effects::new();
                if old == *from {
                    e.push(Effect {
                        new: *to,
                        ret: *from,
                        success: true,
                    });
                }
                Ok(e)
            }
            WalkStep::Read(s) => s.step(old),
        }
    }
}

/// The steps of a walk, threads as given. An edge runs only where memory holds its `from`.
pub(super) type Walk = Vec<Vec<(WalkStep, Observed)>>;

/// The history as a walk, when every step is one ([`walk_step`]); `None` otherwise.
pub(super) fn walk(threads: &[Thread], eq: Equality) -> Option<Walk> {
    threads
        .iter()
        .map(|t| {
            t.iter()
                .map(|(s, o)| {
                    let w = walk_step(s, o, eq)?;
                    let o = match &w {
                        WalkStep::Edge { from, .. } => Observed::ret(*from),
                        WalkStep::Read(_) => *o,
                    };
                    Some((w, o))
                })
                .collect()
        })
        .collect()
}

/// A step as a walk's: an edge where its return is observed (every bit, compared exactly) and
/// tells the value it read ([`read_told`]), and every effect that fits the observation there
/// leaves one value; a read where it is a compare-exchange observed to fail, its return not
/// kept.
pub(super) fn walk_step(s: &OpStep, o: &Observed, eq: Equality) -> Option<WalkStep> {
    if o.ret.is_none() && s.op == AtomicOp::Cas && o.success == Some(false) {
        return Some(WalkStep::Read(s.clone()));
    }
    let from = o
        .ret
        .filter(|r| o.kept == u64::MAX && eq.exact(*r))
        .and_then(|r| read_told(s, r))?;
    let mut news = s.step(from).ok()?.into_iter().filter(|e| fits(o, e, eq));
    let to = news.next()?.new;
    news.all(|e| e.new == to)
        .then_some(WalkStep::Edge { from, to })
}

impl WalkStep {
    pub(super) fn edge(&self) -> Option<(u64, u64)> {
        match self {
            WalkStep::Edge { from, to } => Some((*from, *to)),
            WalkStep::Read(_) => None,
        }
    }
}

/// The value a step read, told by its return `r` (observed, every bit): `r` itself for every
/// atomic but two; for a pre-decrement, which returns the value it left (vISA DWORD_ATOMIC
/// PREDEC, "Return Value": the new value, `old - 1`; A11), `r + 1` in its width; none for a
/// float operation whose profile flushes a denormal return (the return does not tell).
pub(super) fn read_told(s: &OpStep, r: u64) -> Option<u64> {
    if s.op == AtomicOp::PreDec {
        return Some(r.wrapping_add(1) & s.ty.mask());
    }
    (!(s.ty.float_format().is_some() && s.env.ftz.inputs && s.env.ftz_return)).then_some(r)
}

/// Why the edges of a walk can form no walk from `init` to `fin` in any order (program order
/// aside): a value held (initially, or left by an edge) a different number of times than it is
/// read (by an edge, or as the final value), or edges no walk from `init` reaches.
pub(super) fn walk_defect(
    init: u64,
    fin: u64,
    walk: &[Vec<(WalkStep, Observed)>],
) -> Option<String> {
    let edges: Vec<(u64, u64)> = walk
        .iter()
        .flatten()
        .filter_map(|(s, _)| s.edge())
        .collect();
    // held minus read, per value.
    let mut balance: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    balance.entry(init).or_default().0 += 1;
    balance.entry(fin).or_default().1 += 1;
    for &(from, to) in &edges {
        balance.entry(to).or_default().0 += 1;
        balance.entry(from).or_default().1 += 1;
    }
    if let Some((v, (held, read))) = balance.iter().find(|(_, (h, r))| h != r) {
        return Some(format!(
            "memory holds {v:#x} {held} times ({}) but {read} operations and the final value read it there",
            if *v == init {
                "initially and after operations that store it"
            } else {
                "after operations that store it"
            }
        ));
    }
    let mut sets = Components::new(edges.iter().flat_map(|&(a, b)| [a, b]).chain([init]));
    for &(a, b) in &edges {
        sets.join(a, b);
    }
    edges
        .iter()
        .find(|(a, _)| !sets.same(*a, init))
        .map(|(a, b)| {
            format!(
                "the operations that read {a:#x} and leave {b:#x} are never reached: no order of the others leaves {a:#x} on the way from {init:#x}"
            )
        })
}

/// Union-find over values.
struct Components {
    index: HashMap<u64, usize>,
    parent: Vec<usize>,
}

impl Components {
    fn new(values: impl Iterator<Item = u64>) -> Self {
        let mut index = HashMap::new();
        for v in values {
            let n = index.len();
            index.entry(v).or_insert(n);
        }
        Components {
            parent: (0..index.len()).collect(),
            index,
        }
    }

    fn reset(&mut self) {
        for (i, p) in self.parent.iter_mut().enumerate() {
            *p = i;
        }
    }

    fn root(&mut self, mut i: usize) -> usize {
        while self.parent[i] != i {
            self.parent[i] = self.parent[self.parent[i]];
            i = self.parent[i];
        }
        i
    }

    fn join(&mut self, a: u64, b: u64) {
        let (ra, rb) = (self.root(self.index[&a]), self.root(self.index[&b]));
        self.parent[ra] = rb;
    }

    fn same(&mut self, a: u64, b: u64) -> bool {
        self.root(self.index[&a]) == self.root(self.index[&b])
    }
}

/// The connectivity of a walk's remaining edges: the values every edge touches, indexed, and
/// per class of the search and step its edge (`None` for a read).
pub(super) struct Connected {
    sets: Components,
    edges: Vec<Vec<Option<(u64, u64)>>>,
}

impl Connected {
    /// For walks of at most [`CONNECTED_EDGES`] edges: `edge` gives each step's edge.
    pub(super) fn new<S>(
        steps: &[&[(S, Observed)]],
        edge: impl Fn(&S, &Observed) -> Option<(u64, u64)>,
        ends: [u64; 2],
    ) -> Option<Connected> {
        let edges: Vec<Vec<Option<(u64, u64)>>> = steps
            .iter()
            .map(|c| c.iter().map(|(s, o)| edge(s, o)).collect())
            .collect();
        if edges.iter().map(Vec::len).sum::<usize>() > CONNECTED_EDGES {
            return None;
        }
        let values = edges.iter().flatten().flatten().flat_map(|&(a, b)| [a, b]);
        Some(Connected {
            sets: Components::new(values.chain(ends)),
            edges,
        })
    }

    /// Whether every remaining edge (step `j` of class `k` where some thread stands at a level
    /// up to `j`) is reachable from `value`, ignoring direction: with the degrees balanced (as
    /// [`walk_defect`] checked), exactly when some walk takes them all, program order aside.
    pub(super) fn holds(&mut self, value: u64, at: &[Vec<Vec<u32>>]) -> bool {
        let Some(&v) = self.sets.index.get(&value) else {
            return true;
        };
        let (sets, edges) = (&mut self.sets, &self.edges);
        sets.reset();
        for (lv, es) in at.iter().zip(edges) {
            if let Some(m) = first_occupied(lv) {
                for &(a, b) in es[m..].iter().flatten() {
                    sets.join(a, b);
                }
            }
        }
        let root = sets.root(v);
        at.iter().zip(edges).all(|(lv, es)| {
            first_occupied(lv).is_none_or(|m| {
                es[m..]
                    .iter()
                    .flatten()
                    .all(|&(a, _)| sets.root(sets.index[&a]) == root)
            })
        })
    }
}

/// The lowest level some thread of a class stands at, unless all have finished.
pub(super) fn first_occupied(levels: &[Vec<u32>]) -> Option<usize> {
    levels[..levels.len() - 1]
        .iter()
        .position(|t| !t.is_empty())
}
