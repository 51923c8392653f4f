//! The search (the checker's fourth stage): depth first over states on an explicit stack, a
//! bounded memo of refuted states, Luby restarts, the backward search over walks, and the
//! float reach bound.

use super::fold::monotone_field;
use super::history::{Checked, Equality, History, RESTART_STATES, Reason, Thread, fits};
use super::walk::{Connected, Walk, WalkStep, read_told, walk_step};
use crate::error::ModelError;
use crate::float::Format;
use crate::ir::AtomicOp;
use crate::race::OpStep;
use crate::race::{DeadStates, Observed, Step, Verdict};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;

/// What a search step needs beyond [`Step`].
trait Searched: Step {
    /// The value it read, told by its observed return `r` ([`read_told`]).
    fn read_told(&self, r: u64) -> Option<u64>;
    /// Whether it is a compare-exchange.
    fn is_cas(&self) -> bool;
    /// Its float add: the format and the signed operand, where it is an add or subtract of
    /// one.
    fn float_add(&self) -> Option<(Format, f64)>;
}

impl Searched for OpStep {
    fn read_told(&self, r: u64) -> Option<u64> {
        read_told(self, r)
    }
    fn is_cas(&self) -> bool {
        self.op == AtomicOp::Cas
    }
    fn float_add(&self) -> Option<(Format, f64)> {
        let f = self.ty.float_format()?;
        let x = to_f64(f, self.src[0])?;
        match self.op {
            AtomicOp::Add => Some((f, x)),
            AtomicOp::Sub => Some((f, -x)),
            _ => None,
        }
    }
}

impl Searched for WalkStep {
    fn read_told(&self, r: u64) -> Option<u64> {
        match self {
            // A walk's edge returns its `from` (its observation was made so).
            WalkStep::Edge { .. } => Some(r),
            WalkStep::Read(s) => read_told(s, r),
        }
    }
    fn is_cas(&self) -> bool {
        matches!(self, WalkStep::Read(_))
    }
    fn float_add(&self) -> Option<(Format, f64)> {
        None
    }
}

/// A finite float's value (every format here fits an f64 exactly); `None` for infinities and
/// NaNs.
pub fn to_f64(f: Format, x: u64) -> Option<f64> {
    let exp = (x & f.exp_mask()) >> f.frac_bits();
    if exp == f.exp_mask() >> f.frac_bits() {
        return None;
    }
    let frac = (x & f.frac_mask()) as f64;
    let bias = (1i32 << (f.exp_bits() - 1)) - 1;
    let scale = |e: i32| 2f64.powi(e - f.frac_bits() as i32);
    let magnitude = if exp == 0 {
        frac * scale(1 - bias)
    } else {
        (frac + 2f64.powi(f.frac_bits() as i32)) * scale(exp as i32 - bias)
    };
    Some(if x & f.sign_mask() != 0 {
        -magnitude
    } else {
        magnitude
    })
}

/// Where float adds of one format, their returns not observed, can still end: within
/// `slack` of the exact sum of the value and the remaining operands. Each add rounds (in any
/// mode) by at most one unit in the last place of its result, which stays below twice the sum
/// of the magnitudes; flushing a denormal input or result moves a value by less than the
/// smallest normal.
#[derive(Clone, Copy, Debug)]
struct FloatReach {
    format: Format,
    target: f64,
}

impl FloatReach {
    /// Whether `value` plus the remaining operands (`sum`, their magnitudes `magnitude`, `n` of
    /// them) can still end at the target; `true` where the bound says nothing (an overflow, or
    /// too many steps for it to be tight).
    fn reachable(self, value: u64, sum: f64, magnitude: f64, n: u64) -> bool {
        let f = self.format;
        let Some(v) = to_f64(f, value) else {
            return true;
        };
        let p = f.frac_bits() as i32;
        let bias = (1i32 << (f.exp_bits() - 1)) - 1;
        let largest = 2f64.powi(bias + 1);
        let size = 2.0 * (v.abs() + magnitude);
        let steps = n as f64 + 1.0;
        if size >= largest || steps * 4.0 * 2f64.powi(-p) >= 0.5 {
            return true;
        }
        let ulp = 2f64.powi((size.log2().ceil() as i32).max(-2000) - p);
        let min_normal = 2f64.powi(1 - bias);
        let slack = steps * (4.0 * ulp + 2.0 * min_normal);
        ((v + sum) - self.target).abs() <= slack
    }
}

/// Luby's restart sequence, from 1: 1, 1, 2, 1, 1, 2, 4, 1, ...
fn luby(mut i: u64) -> u64 {
    loop {
        let mut k = 1u32;
        while (1u64 << k) - 1 < i {
            k += 1;
        }
        if i == (1u64 << k) - 1 {
            return 1 << (k - 1);
        }
        i -= (1u64 << (k - 1)) - 1;
    }
}

/// A search run's end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Found {
    Yes,
    No,
    OutOfBudget,
    Restart,
}

/// The threads' steps after the reductions, with the pass order mapped back to the history's
/// threads. Over walks, the backward search alternates with the forward one.
pub(super) fn search(
    h: &History<'_>,
    split: &[Thread],
    origin: &[usize],
    walk: Option<Walk>,
    eq: Equality,
    budget: u64,
    memo: usize,
) -> Result<Checked, ModelError> {
    let monotone = monotone_field(h.init, split);
    let memo = if walk.is_some() { memo / 2 } else { memo };
    let mut forward = Engine::new(split, h.init, h.final_value, eq, memo);
    forward.monotone = monotone.map(|low| (low, BTreeMap::new()));
    forward.float = float_reach(split, h.final_value);
    let reversed: Option<Walk> = walk.map(|w| {
        w.into_iter()
            .map(|t| {
                t.into_iter()
                    .rev()
                    .map(|(s, o)| match s {
                        WalkStep::Edge { from, to } => {
                            (WalkStep::Edge { from: to, to: from }, Observed::ret(to))
                        }
                        read => (read, o),
                    })
                    .collect()
            })
            .collect()
    });
    let mut backward = match (&reversed, h.final_value) {
        (Some(r), Some(f)) => {
            let mut b = Engine::new(r, f, Some(h.init), eq, memo);
            b.connect = Connected::new(&b.steps, |s, _| s.edge(), [f, h.init]);
            forward.connect = Connected::new(
                &forward.steps,
                |s, o| walk_step(s, o, eq).and_then(|w| w.edge()),
                [h.init, f],
            );
            Some(b)
        }
        _ => None,
    };
    let mut explored = 0u64;
    let mut run = 0u64;
    // A run's unit: enough for one descent through every step, and some backtracking.
    let unit = RESTART_STATES + split.iter().map(|t| t.len() as u64).sum::<u64>();
    loop {
        run += 1;
        let limit = explored.saturating_add(unit * luby(run));
        let mut found = forward.run(run, limit, &mut explored, budget)?;
        let mut back = false;
        if found == Found::Restart
            && let Some(b) = &mut backward
        {
            let limit = explored.saturating_add(unit * luby(run));
            found = b.run(run, limit, &mut explored, budget)?;
            back = true;
        }
        let done = |verdict: Verdict, f: &Engine<'_, OpStep>, b: Option<&Engine<'_, WalkStep>>| {
            Ok(Checked {
                verdict,
                reason: Reason::Search,
                remembered: f.memo.peak + b.map_or(0, |b| b.memo.peak),
                forgotten: f.memo.emptied + b.map_or(0, |b| b.memo.emptied),
            })
        };
        match found {
            Found::Restart => {}
            Found::Yes => {
                let taken = match (&backward, back) {
                    (Some(b), true) => &b.order,
                    _ => &forward.order,
                };
                let mut order: Vec<usize> = taken.iter().map(|&t| origin[t as usize]).collect();
                if back {
                    order.reverse();
                }
                return done(Verdict::Pass { order }, &forward, backward.as_ref());
            }
            Found::No => {
                forward.flush_longest();
                let longest_prefix = forward
                    .longest
                    .iter()
                    .map(|&t| origin[t as usize])
                    .collect();
                return done(
                    Verdict::Fail {
                        explored,
                        longest_prefix,
                    },
                    &forward,
                    backward.as_ref(),
                );
            }
            Found::OutOfBudget => {
                return done(Verdict::Undecided { explored }, &forward, backward.as_ref());
            }
        }
    }
}

/// The float bound of [`FloatReach`], when every step is an unobserved add or subtract of one
/// float format on a finite operand, each a single step, and the final value is finite.
fn float_reach(split: &[Thread], final_value: Option<u64>) -> Option<FloatReach> {
    let mut format = None;
    for t in split {
        let [(s, o)] = t.as_slice() else {
            return None;
        };
        let (f, _) = s.float_add()?;
        if o.ret.is_some() || o.success.is_some() || format.is_some_and(|g| g != f) {
            return None;
        }
        format = Some(f);
    }
    let format = format?;
    Some(FloatReach {
        format,
        target: to_f64(format, final_value?)?,
    })
}

/// Identical threads as classes: each class's steps and its threads.
#[allow(clippy::type_complexity)]
fn classes<S: Step>(threads: &[Vec<(S, Observed)>]) -> (Vec<&[(S, Observed)]>, Vec<Vec<u32>>) {
    let mut index: HashMap<&[(S, Observed)], usize> = HashMap::new();
    let mut steps: Vec<&[(S, Observed)]> = Vec::new();
    let mut members: Vec<Vec<u32>> = Vec::new();
    for (t, s) in threads.iter().enumerate() {
        if s.is_empty() {
            continue;
        }
        let k = *index.entry(s.as_slice()).or_insert_with(|| {
            steps.push(s.as_slice());
            members.push(Vec::new());
            steps.len() - 1
        });
        members[k].push(t as u32);
    }
    (steps, members)
}

/// A state on the search's stack.
#[derive(Clone, Copy, Debug)]
struct Frame {
    /// The memory value.
    value: u64,
    /// Steps the stutter reduction ran on entering, undone on leaving.
    stutters: u32,
    /// The next candidate to try: how many indexed steps were tried (rotated by `rot`), the
    /// last other ready step tried (from class `rot` on, wrapping) and whether the order
    /// wrapped; and the next effect of the step at the cursor.
    cursor: u32,
    other: Option<(u32, u32)>,
    wrapped: bool,
    effect: u32,
    rot: u32,
    /// The step this state's child took, undone when the child returns.
    taken: Option<(u32, u32)>,
}

/// The memo of refuted states, keyed by a hash of the state kept up to date step by step and
/// holding each state whole (its value and every count), so that a hash collision never
/// refutes a live state. Bounded as [`DeadStates`]: emptied when one more state would pass
/// the bound (it only prunes: forgetting is sound).
struct Memo {
    states: HashMap<u64, Vec<Box<[u32]>>>,
    held: usize,
    bytes: usize,
    limit: usize,
    peak: usize,
    emptied: u32,
}

impl Memo {
    fn new(limit: usize) -> Memo {
        Memo {
            states: HashMap::new(),
            held: 0,
            bytes: 0,
            limit,
            peak: 0,
            emptied: 0,
        }
    }

    /// Counted as [`DeadStates::entry_bytes`] counts a state, and 8 bytes for its hash.
    fn insert(&mut self, hash: u64, state: Box<[u32]>) {
        let bytes = DeadStates::entry_bytes(state.len()) + 8;
        if self.bytes + bytes > self.limit {
            self.states.clear();
            self.states.shrink_to_fit();
            self.bytes = 0;
            self.held = 0;
            self.emptied += 1;
        }
        self.states.entry(hash).or_default().push(state);
        self.bytes += bytes;
        self.held += 1;
        self.peak = self.peak.max(self.held);
    }
}

/// One direction's search over classes of identical threads.
struct Engine<'a, S> {
    steps: Vec<&'a [(S, Observed)]>,
    members: Vec<Vec<u32>>,
    /// Per class and level, the threads standing there (a level is the steps run).
    at: Vec<Vec<Vec<u32>>>,
    /// Steps that run only where memory holds their observed return, by that value.
    by_value: HashMap<u64, Vec<(u32, u32)>>,
    /// Per class and level, whether its step is not indexed by a value.
    wild: Vec<Vec<bool>>,
    /// The steps not indexed by a value with some thread ready to run them.
    wild_ready: BTreeSet<(u32, u32)>,
    init: u64,
    final_value: Option<u64>,
    eq: Equality,
    value: u64,
    remaining: u64,
    hash: u64,
    order: Vec<u32>,
    longest: Vec<u32>,
    /// Whether `order` is longer than `longest` (copied when it shrinks).
    fresh: bool,
    frames: Vec<Frame>,
    /// The stutter steps taken, latest last.
    stuttered: Vec<(u32, u32)>,
    /// The length of a memo key.
    key_len: usize,
    memo: Memo,
    rng: u64,
    randomize: bool,
    /// [`monotone_field`]'s low bits, with the low bits of every ready step's observed return
    /// (a count per value).
    monotone: Option<(u64, BTreeMap<u64, u32>)>,
    connect: Option<Connected>,
    float: Option<FloatReach>,
}

/// A step's hash word, for class `k` at level `l` (SplitMix64).
fn zobrist(k: u32, l: u32) -> u64 {
    mix(u64::from(k) << 32 | u64::from(l))
}

fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl<'a, S: Searched> Engine<'a, S> {
    fn new(
        threads: &'a [Vec<(S, Observed)>],
        init: u64,
        final_value: Option<u64>,
        eq: Equality,
        memo: usize,
    ) -> Self {
        let (steps, members) = classes(threads);
        let mut by_value: HashMap<u64, Vec<(u32, u32)>> = HashMap::new();
        let mut wild = Vec::new();
        for (k, c) in steps.iter().enumerate() {
            let mut w = vec![false; c.len() + 1];
            for (l, (s, o)) in c.iter().enumerate() {
                let read = o
                    .ret
                    .filter(|r| o.kept == u64::MAX && eq.exact(*r))
                    .and_then(|r| s.read_told(r));
                match read {
                    Some(v) => by_value.entry(v).or_default().push((k as u32, l as u32)),
                    None => w[l] = true,
                }
            }
            wild.push(w);
        }
        let mut e = Engine {
            at: Vec::new(),
            steps,
            members,
            by_value,
            wild,
            wild_ready: BTreeSet::new(),
            init,
            final_value,
            eq,
            value: init,
            remaining: 0,
            hash: 0,
            order: Vec::new(),
            longest: Vec::new(),
            fresh: false,
            frames: Vec::new(),
            stuttered: Vec::new(),
            key_len: 0,
            memo: Memo::new(memo),
            rng: 0,
            randomize: false,
            monotone: None,
            connect: None,
            float: None,
        };
        e.reset();
        e
    }

    /// Back to the initial state, every thread at level 0.
    fn reset(&mut self) {
        self.flush_longest();
        self.at = self
            .steps
            .iter()
            .zip(&self.members)
            .map(|(c, m)| {
                let mut lv = vec![Vec::new(); c.len() + 1];
                lv[0] = m.clone();
                lv
            })
            .collect();
        self.remaining = self
            .steps
            .iter()
            .zip(&self.members)
            .map(|(c, m)| (c.len() * m.len()) as u64)
            .sum();
        self.hash = (0..self.steps.len())
            .map(|k| zobrist(k as u32, 0).wrapping_mul(self.members[k].len() as u64))
            .fold(0, u64::wrapping_add);
        self.value = self.init;
        self.order.clear();
        self.frames.clear();
        self.stuttered.clear();
        self.key_len = 2 + self.at.iter().map(Vec::len).sum::<usize>();
        if let Some((_, ready)) = &mut self.monotone {
            ready.clear();
        }
        self.wild_ready.clear();
        for k in 0..self.steps.len() {
            for _ in 0..self.members[k].len() {
                self.ready_low(k, 0, true);
            }
            if self.wild[k][0] {
                self.wild_ready.insert((k as u32, 0));
            }
        }
    }

    /// Counts step `l` of class `k` in (or out of) the ready steps' observed returns.
    fn ready_low(&mut self, k: usize, l: usize, add: bool) {
        let Some((low, ready)) = &mut self.monotone else {
            return;
        };
        let Some((_, o)) = self.steps[k].get(l) else {
            return;
        };
        let Some(r) = o.ret.filter(|_| o.kept & *low == *low) else {
            return;
        };
        let n = ready.entry(r & *low).or_insert(0);
        if add {
            *n += 1;
        } else {
            *n -= 1;
            if *n == 0 {
                ready.remove(&(r & *low));
            }
        }
    }

    fn flush_longest(&mut self) {
        if self.fresh {
            self.longest = self.order.clone();
            self.fresh = false;
        }
    }

    /// Runs one thread of class `k` from level `l` to `l + 1` (or back, `undo`).
    fn advance(&mut self, k: u32, l: u32, undo: bool) -> Result<(), ModelError> {
        let (k, l) = (k as usize, l as usize);
        let (from, to) = if undo { (l + 1, l) } else { (l, l + 1) };
        let Some(t) = self.at[k][from].pop() else {
            return Err(crate::internal!("concurrent checker level out of step"));
        };
        self.at[k][to].push(t);
        let (kk, f, tt) = (k as u32, from as u32, to as u32);
        self.hash = self
            .hash
            .wrapping_sub(zobrist(kk, f))
            .wrapping_add(zobrist(kk, tt));
        self.ready_low(k, from, false);
        self.ready_low(k, to, true);
        if self.wild[k][from] && self.at[k][from].is_empty() {
            self.wild_ready.remove(&(kk, f));
        }
        if self.wild[k][to] && self.at[k][to].len() == 1 {
            self.wild_ready.insert((kk, tt));
        }
        if undo {
            self.remaining += 1;
            self.flush_longest();
            self.order.pop();
        } else {
            self.remaining -= 1;
            self.order.push(t);
            if self.order.len() > self.longest.len() {
                self.fresh = true;
            }
        }
        Ok(())
    }

    /// The steps that run only where memory holds `value`.
    fn indexed(&self, value: u64) -> &[(u32, u32)] {
        self.by_value.get(&value).map_or(&[][..], Vec::as_slice)
    }

    /// The next ready step not indexed by a value after `last` (from `start` on, wrapping
    /// around to it), and whether the order has wrapped.
    fn next_other(
        &self,
        start: (u32, u32),
        last: Option<(u32, u32)>,
        wrapped: bool,
    ) -> Option<((u32, u32), bool)> {
        let from = last.map_or(Bound::Included(start), Bound::Excluded);
        if !wrapped {
            if let Some(&x) = self.wild_ready.range((from, Bound::Unbounded)).next() {
                return Some((x, false));
            }
            return self.wild_ready.range(..start).next().map(|&x| (x, true));
        }
        let from = last.map_or(Bound::Unbounded, Bound::Excluded);
        self.wild_ready
            .range((from, Bound::Excluded(start)))
            .next()
            .map(|&x| (x, true))
    }

    /// The stutter reduction: a ready step observed to return exactly the value held whose
    /// every fitting effect leaves it there (or a compare-exchange observed to fail, its
    /// return not kept: a read wherever it can fail) runs at once; doing so changes nothing
    /// another step sees and only lets its own thread go on sooner. How many ran.
    fn stutter(&mut self) -> Result<u32, ModelError> {
        let mut ran = 0;
        'again: loop {
            let indexed = self.indexed(self.value).iter();
            let others = self.wild_ready.iter();
            for &(k, l) in indexed.chain(others) {
                if self.at[k as usize][l as usize].is_empty() {
                    continue;
                }
                let (op, obs) = &self.steps[k as usize][l as usize];
                let failed = op.is_cas() && obs.success == Some(false);
                match obs.ret {
                    Some(r) if r == self.value => {}
                    None if failed => {}
                    _ => continue,
                }
                let effects = op.step(self.value)?;
                let mut fitting = effects
                    .iter()
                    .filter(|e| {
                        obs.ret_fits(e.ret, &|a, b| a == b)
                            && obs.success.is_none_or(|s| s == e.success)
                    })
                    .peekable();
                if fitting.peek().is_some() && fitting.all(|e| e.new == self.value) {
                    self.advance(k, l, false)?;
                    self.stuttered.push((k, l));
                    ran += 1;
                    continue 'again;
                }
            }
            return Ok(ran);
        }
    }

    /// The state whole, for the memo: its value, then every count.
    fn key(&self) -> Box<[u32]> {
        let mut key = vec![self.value as u32, (self.value >> 32) as u32];
        key.extend(self.at.iter().flatten().map(|t| t.len() as u32));
        key.into_boxed_slice()
    }

    fn dead(&self) -> bool {
        let hash = self.hash ^ mix(self.value);
        let Some(list) = self.memo.states.get(&hash) else {
            return false;
        };
        list.iter().any(|s| {
            s[0] == self.value as u32
                && s[1] == (self.value >> 32) as u32
                && s.len() == self.key_len
                && s[2..]
                    .iter()
                    .zip(self.at.iter().flatten())
                    .all(|(c, t)| *c as usize == t.len())
        })
    }

    fn refute(&mut self) {
        let hash = self.hash ^ mix(self.value);
        let key = self.key();
        self.memo.insert(hash, key);
    }

    /// Whether the state can be refuted without expanding it: a ready step must read a value
    /// the monotone bits have passed, the remaining edges of a walk fall apart, or the float
    /// adds can no longer reach the final value.
    fn pruned(&mut self) -> bool {
        if let Some((low, ready)) = &self.monotone
            && ready
                .first_key_value()
                .is_some_and(|(r, _)| *r < self.value & *low)
        {
            return true;
        }
        if let Some(c) = &mut self.connect
            && !c.holds(self.value, &self.at)
        {
            return true;
        }
        if let Some(fr) = self.float {
            let (mut sum, mut magnitude) = (0f64, 0f64);
            for (k, c) in self.steps.iter().enumerate() {
                if let Some((_, x)) = c[0].0.float_add() {
                    let n = self.at[k][0].len() as f64;
                    sum += n * x;
                    magnitude += n * x.abs();
                }
            }
            if !fr.reachable(self.value, sum, magnitude, self.remaining) {
                return true;
            }
        }
        false
    }

    /// Enters the state where memory holds `value` (after a step, or at the start): `Some`
    /// with the run's end where it ends here, `None` where the search goes on (a frame pushed,
    /// or the state refuted and left).
    fn enter(
        &mut self,
        value: u64,
        limit: u64,
        explored: &mut u64,
        budget: u64,
    ) -> Result<Option<Found>, ModelError> {
        self.value = value;
        let stutters = self.stutter()?;
        if self.remaining == 0 {
            if self.final_value.is_none_or(|f| self.eq.eq(self.value, f)) {
                return Ok(Some(Found::Yes));
            }
            self.leave(stutters)?;
            return Ok(None);
        }
        if self.dead() {
            self.leave(stutters)?;
            return Ok(None);
        }
        *explored += 1;
        if *explored > budget {
            return Ok(Some(Found::OutOfBudget));
        }
        if *explored > limit {
            return Ok(Some(Found::Restart));
        }
        if self.pruned() {
            self.refute();
            self.leave(stutters)?;
            return Ok(None);
        }
        let rot = if self.randomize {
            self.rng = mix(self.rng);
            self.rng as u32
        } else {
            0
        };
        self.frames.push(Frame {
            value,
            stutters,
            cursor: 0,
            other: None,
            wrapped: false,
            effect: 0,
            rot,
            taken: None,
        });
        Ok(None)
    }

    /// Undoes the stutter steps of a state being left.
    fn leave(&mut self, stutters: u32) -> Result<(), ModelError> {
        for _ in 0..stutters {
            let Some((k, l)) = self.stuttered.pop() else {
                return Err(crate::internal!("concurrent checker stutters out of step"));
            };
            self.advance(k, l, true)?;
        }
        Ok(())
    }

    /// The next step from the top frame's state, with the value it leaves: the indexed steps
    /// first (rotated by the frame's `rot`), then the other ready ones (from class `rot` on).
    fn next_move(&mut self) -> Result<Option<(u32, u32, u64)>, ModelError> {
        let Some(mut f) = self.frames.last().copied() else {
            return Ok(None);
        };
        let n = self.indexed(f.value).len() as u32;
        let start = (f.rot % self.steps.len().max(1) as u32, 0);
        let found = loop {
            let at = if f.cursor < n {
                Some((
                    self.indexed(f.value)[((f.cursor + f.rot % n) % n) as usize],
                    false,
                ))
            } else if f.cursor == n {
                self.next_other(start, f.other, f.wrapped)
            } else {
                None
            };
            let Some(((k, l), wrapped)) = at else {
                break None;
            };
            if !self.at[k as usize][l as usize].is_empty() {
                let (op, obs) = &self.steps[k as usize][l as usize];
                let effects = op.step(f.value)?;
                if let Some(e) = effects
                    .iter()
                    .skip(f.effect as usize)
                    .position(|e| fits(obs, e, self.eq))
                {
                    f.effect += e as u32 + 1;
                    break Some((k, l, effects[f.effect as usize - 1].new));
                }
            }
            f.effect = 0;
            if f.cursor < n {
                f.cursor += 1;
            } else {
                f.other = Some((k, l));
                f.wrapped = wrapped;
            }
        };
        if found.is_none() {
            f.cursor = n + 1;
        }
        if let Some(top) = self.frames.last_mut() {
            *top = f;
        }
        Ok(found)
    }

    /// One run from the initial state: until a pass, a refutation of every order, the budget,
    /// or `limit` states explored in all (then a restart). Run 1 tries candidates in their
    /// natural order; later runs in a seeded rotation per state.
    fn run(
        &mut self,
        run: u64,
        limit: u64,
        explored: &mut u64,
        budget: u64,
    ) -> Result<Found, ModelError> {
        self.reset();
        self.randomize = run > 1;
        self.rng = mix(run);
        if let Some(end) = self.enter(self.init, limit, explored, budget)? {
            return Ok(end);
        }
        while let Some(top) = self.frames.last_mut() {
            if let Some((k, l)) = top.taken.take() {
                self.advance(k, l, true)?;
            }
            match self.next_move()? {
                Some((k, l, new)) => {
                    self.advance(k, l, false)?;
                    if let Some(f) = self.frames.last_mut() {
                        f.taken = Some((k, l));
                    }
                    if let Some(end) = self.enter(new, limit, explored, budget)? {
                        return Ok(end);
                    }
                }
                None => {
                    let Some(f) = self.frames.pop() else {
                        break;
                    };
                    self.value = f.value;
                    self.refute();
                    self.leave(f.stutters)?;
                }
            }
        }
        Ok(Found::No)
    }
}
