//! What a fuzzing campaign learns from its screen (issue 31 point 2: the fuzzer generates what
//! the implementation under test can run). A drawn case's *shape* is what the draw chose apart
//! from its values, at several levels ([`shape_keys`]): its dialect and kind (one instruction,
//! or concurrent instructions, each plain or a compare-and-swap loop); then each instruction's
//! mnemonic, the words of its state (memory space, type) and whether the draw gave some lane an
//! edge address (misaligned or outside the memory, `GenCase::edge`); then its whole instruction
//! text (registers and offsets included); and apart, the dialect's edge addresses and each
//! instruction of a concurrent case alone. A draft is passed over when any of its shapes is. Whether an adapter can run a case is mostly its shape's
//! doing (a route without concurrent cases or loops, an op or type the device lacks, an illegal
//! form); what depends on the values (an address outside the buffer, a misaligned one) is what
//! the shape leaves open.
//!
//! [`Learned`] counts, per shape at each level, the cases made of it that the screen turned away
//! and those sent. A shape turned away [`LEARN_AFTER`] times and never sent is *passed over*:
//! its later drafts are dropped before their state is built and the reference run (which is
//! what a screened case costs), but for one in [`EXPLORE_EVERY`], made and screened as before,
//! so a shape whose first cases were turned away for their values (or a kind of which only some
//! instructions run) is sent again once one of them runs. Deterministic: the same seed on the
//! same adapter draws, makes and sends the same cases; a case's number is still its place in
//! the draw.

use crate::fuzzing::draft::{Draft, G, GenCase};
use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use toml::{Table, Value};

/// Cases of one shape turned away by the screen, none sent, after which its drafts are passed
/// over.
pub const LEARN_AFTER: u32 = 4;

/// Of a passed-over shape's drafts, one in this many is still made and screened.
pub const EXPLORE_EVERY: u32 = 64;

/// A drawn case's shape at each level, coarsest first: dialect and kind; then mnemonics, the
/// string words of its state and whether the draw gave it an edge address; then its instruction
/// texts; then, for a concurrent case, each instruction alone (its mnemonic, loop or plain, its
/// words), so that an instruction that no case sent holds is learnt whatever it is run beside.
/// Never its numbers.
pub fn shape_keys(gc: &GenCase) -> Vec<String> {
    let mut kind = String::from(gc.dialect.name());
    if gc.concurrent.is_empty() {
        kind.push_str("|single");
    } else {
        kind.push_str("|concurrent");
        for i in &gc.concurrent {
            kind.push_str(if i.cas_loop.is_some() {
                ":loop"
            } else {
                ":plain"
            });
        }
    }
    let mut instr = kind.clone();
    instr.push('|');
    if gc.concurrent.is_empty() {
        instr.push_str(mnemonic(&gc.asm));
    } else {
        for (n, i) in gc.concurrent.iter().enumerate() {
            if n > 0 {
                instr.push('+');
            }
            instr.push_str(mnemonic(&i.asm));
        }
    }
    words(&mut instr, &gc.given);
    for i in &gc.concurrent {
        words(&mut instr, &i.given);
    }
    if gc.edge {
        instr.push_str("|edge");
    }
    let mut text = instr.clone();
    text.push('|');
    text.push_str(&gc.asm);
    let mut keys = vec![kind, instr, text];
    if gc.edge {
        keys.push(format!("{}|edge", gc.dialect.name()));
    }
    for i in &gc.concurrent {
        let mut one = format!(
            "{}|in-concurrent|{}|{}",
            gc.dialect.name(),
            mnemonic(&i.asm),
            if i.cas_loop.is_some() {
                "loop"
            } else {
                "plain"
            }
        );
        words(&mut one, &i.given);
        keys.push(one);
    }
    keys
}

/// An instruction's mnemonic: its first word that starts with a letter and is at least four
/// characters long, up to any `(` (`ATOM.ADD.F64.RN` after a `@P0` predicate,
/// `DWORD_ATOMIC.add` after `(!P1)`, `atomic_fetch_add_explicit` after `r =`).
fn mnemonic(asm: &str) -> &str {
    asm.split_whitespace()
        .map(|w| w.split('(').next().unwrap_or(w))
        .find(|w| w.len() >= 4 && w.starts_with(|c: char| c.is_ascii_alphabetic()))
        .unwrap_or(asm)
}

/// The words of `t`'s strings as `|key=word`, nested tables included: memory spaces and
/// types, which the shape is made of, never numbers. A typed value (`u32:0x2`) gives its type;
/// entries keyed by an address (`0x1000`) give the set of their types, not one per address.
fn words(k: &mut String, t: &Table) {
    let mut at_addresses: Vec<&str> = Vec::new();
    for (name, v) in t {
        match v {
            Value::String(s) => {
                let word = s.split(':').next().unwrap_or(s);
                if name.starts_with(|c: char| c.is_ascii_digit()) {
                    at_addresses.push(word);
                } else {
                    let _ = write!(k, "|{name}={word}");
                }
            }
            Value::Table(inner) => {
                let _ = write!(k, "|{name}{{");
                words(k, inner);
                k.push('}');
            }
            _ => {}
        }
    }
    at_addresses.sort_unstable();
    at_addresses.dedup();
    for w in at_addresses {
        let _ = write!(k, "|@{w}");
    }
}

/// What the screen said of each shape so far.
#[derive(Debug, Default)]
struct Seen {
    /// Cases of it the screen turned away.
    screened: u32,
    /// Cases of it sent.
    sent: u32,
    /// Drafts of it met since it was passed over.
    met: u32,
}

/// A campaign's shapes ([`shape_keys`], every level) and what the screen said of each; a
/// shape is its key text, or the key's hash ([`DraftShape`]).
#[derive(Debug)]
pub struct Learned<K = String> {
    seen: HashMap<K, Seen>,
}

impl<K> Default for Learned<K> {
    fn default() -> Self {
        Learned {
            seen: HashMap::new(),
        }
    }
}

impl Seen {
    /// Turned away [`LEARN_AFTER`] times, never sent.
    fn condemned(&self) -> bool {
        self.sent == 0 && self.screened >= LEARN_AFTER
    }
}

impl<K: std::hash::Hash + Eq> Learned<K> {
    /// Whether a draft of shape `keys` is passed over (not made): at some level its shape was
    /// turned away [`LEARN_AFTER`] times and never sent, and this is not the one in
    /// [`EXPLORE_EVERY`] of that shape's drafts still made.
    pub fn pass_over(&mut self, keys: &[K]) -> bool {
        let Some(k) = keys
            .iter()
            .find(|k| self.seen.get(*k).is_some_and(Seen::condemned))
        else {
            return false;
        };
        let Some(s) = self.seen.get_mut(k) else {
            return false;
        };
        s.met += 1;
        s.met % EXPLORE_EVERY != 0
    }

    /// Counts a made case of shape `keys` at every level: turned away by the screen, or sent.
    pub fn record(&mut self, keys: impl IntoIterator<Item = K>, screened: bool) {
        for k in keys {
            let s = self.seen.entry(k).or_default();
            if screened {
                s.screened = s.screened.saturating_add(1);
            } else {
                s.sent = s.sent.saturating_add(1);
            }
        }
    }

    /// Shapes (of any level) now passed over.
    pub fn passed_over_shapes(&self) -> usize {
        self.seen.values().filter(|s| s.condemned()).count()
    }
}

/// The words of a generated draft's state, as [`words`] writes a case table's: memory spaces,
/// types and names, never numbers (nor an address range's bounds). Written without allocating
/// (it runs for every draft of a learning stream, [`Lagged`]).
fn draft_words(k: &mut String, given: &[(&'static str, G)]) {
    let unsigned = |w: u32| match w {
        8 => "u8",
        16 => "u16",
        32 => "u32",
        64 => "u64",
        _ => "u?",
    };
    // The types and names of the memory cells, each once, in order.
    let mut at_addresses: Vec<&'static str> = Vec::new();
    for (name, v) in given {
        match v {
            G::Str(s) => {
                for w in ["|", name, "=", s] {
                    k.push_str(w);
                }
            }
            G::Typed(w, _) => {
                for w in ["|", name, "=", unsigned(*w)] {
                    k.push_str(w);
                }
            }
            G::Table(inner) => {
                k.push('|');
                k.push_str(name);
                k.push('{');
                draft_words(k, inner);
                k.push('}');
            }
            G::Mem(cells) => {
                for (_, c) in cells {
                    let w = match c {
                        G::Typed(w, _) => unsigned(*w),
                        G::Str(s) => s,
                        _ => continue,
                    };
                    if !at_addresses.contains(&w) {
                        at_addresses.push(w);
                    }
                }
            }
            G::Int(_) | G::Bool(_) | G::Range(..) | G::List(_) => {}
        }
    }
    at_addresses.sort_unstable();
    for w in at_addresses {
        k.push_str("|@");
        k.push_str(w);
    }
}

/// Writes a draft of the reproducible stream (`run --generated`, one instruction each) as
/// [`shape_keys`] writes a case, its three levels as prefixes of one text: its dialect and
/// kind; its mnemonic, state words and edge address; its instruction text. Returns the
/// lengths of the first two.
fn write_draft_shape(d: &Draft, k: &mut String) -> (usize, usize) {
    k.clear();
    k.push_str(d.dialect.name());
    k.push_str("|single");
    let kind = k.len();
    k.push('|');
    k.push_str(mnemonic(&d.asm));
    draft_words(k, &d.given);
    if d.edge {
        k.push_str("|edge");
    }
    let instr = k.len();
    k.push('|');
    k.push_str(&d.asm);
    (kind, instr)
}

/// [`shape_keys`] of a draft of the reproducible stream: its dialect and kind; its mnemonic,
/// state words and edge address; its text; and apart, the dialect's edge addresses.
pub fn draft_shape_keys(d: &Draft) -> Vec<String> {
    let mut k = String::new();
    let (kind, instr) = write_draft_shape(d, &mut k);
    let mut keys = vec![k[..kind].to_string(), k[..instr].to_string(), k.clone()];
    if d.edge {
        keys.push(format!("{}|edge", d.dialect.name()));
    }
    keys
}

/// A draft's shape as [`Lagged`] keeps it: the hash of each of [`draft_shape_keys`]' texts
/// (std's SipHash with its fixed keys, so the same in every run; two shapes of a run share a
/// hash about once in 2^64 / shapes^2 runs), made without allocating.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DraftShape {
    hashes: [u64; 4],
    len: usize,
}

impl DraftShape {
    /// The shape of `d`, written in `scratch` (reused across drafts). std's SipHash of a `str`
    /// hashes its bytes, then `0xff`, as one stream: each level's hash is the hasher of the
    /// text up to its end, given `0xff`, so the text is hashed once rather than once per level
    /// (`a_drafts_shape_is_its_instruction_and_words_not_its_values` checks them against the
    /// texts' own hashes).
    pub fn of(d: &Draft, scratch: &mut String) -> DraftShape {
        use std::hash::{Hash, Hasher};
        let (kind, instr) = write_draft_shape(d, scratch);
        let mut hashes = [0; 4];
        let mut h = std::collections::hash_map::DefaultHasher::new();
        let mut from = 0;
        for (slot, end) in hashes.iter_mut().zip([kind, instr, scratch.len()]) {
            h.write(&scratch.as_bytes()[from..end]);
            from = end;
            let mut level = h.clone();
            level.write_u8(0xff);
            *slot = level.finish();
        }
        let mut len = 3;
        if d.edge {
            // The dialect's edge addresses: `<dialect>|edge`.
            scratch.clear();
            scratch.push_str(d.dialect.name());
            scratch.push_str("|edge");
            let mut h = std::collections::hash_map::DefaultHasher::new();
            scratch.as_str().hash(&mut h);
            hashes[3] = h.finish();
            len = 4;
        }
        DraftShape { hashes, len }
    }

    /// Its levels' hashes.
    pub fn keys(&self) -> &[u64] {
        &self.hashes[..self.len]
    }
}

/// Drafts of `run --generated --learn` that share what they are drawn with ([`Lagged`]).
pub const LEARN_STEP: u64 = 512;

/// A draft of `run --generated --learn` is drawn with what was learnt from the cases of the
/// drafts numbered below its [`LEARN_STEP`]'s first less this many: learning waits for no case
/// nearer, so the cases drawn do not depend on how far ahead other threads make them.
pub const LEARN_LAG: u64 = 4096;

/// Learning over the reproducible stream (`atomcts run --generated N --learn`): a draft's
/// shapes ([`draft_shape_keys`]) are passed over as a fuzzing campaign's are ([`Learned`]),
/// learnt from the cases' results (not applicable or skipped: turned away; any other: run) in the
/// stream's order, and only from drafts at least [`LEARN_LAG`] before the draft's [`LEARN_STEP`]; so the
/// stream is the same whether one thread or several make and run it, and whatever the
/// chunks. The drafts keep their numbers (a case's id is its place in the draw).
#[derive(Debug, Default)]
pub struct Lagged {
    learned: Learned<u64>,
    /// Made drafts whose results have not been given yet: number and shape, in order.
    awaiting: VecDeque<(u64, DraftShape)>,
    /// Results given and not yet learnt from: number, shape, turned away.
    given: VecDeque<(u64, DraftShape, bool)>,
    /// Drafts passed over so far.
    passed_over: u64,
    /// Where a draft's shape is written ([`DraftShape::of`]).
    scratch: String,
}

impl Lagged {
    /// The drafts below this number must have their results before draft `k` is drawn.
    fn needs(k: u64) -> u64 {
        (k / LEARN_STEP * LEARN_STEP).saturating_sub(LEARN_LAG)
    }

    /// Whether draft `k`, the next to draw, can be drawn: every made draft below
    /// [`Lagged::needs`] has its result.
    pub fn ready(&self, k: u64) -> bool {
        self.awaiting
            .front()
            .is_none_or(|(a, _)| *a >= Self::needs(k))
    }

    /// Whether draft `k` (ready, [`Lagged::ready`]) is passed over; if not, it is made and
    /// awaits its result.
    pub fn pass_over(&mut self, k: u64, d: &Draft) -> bool {
        let need = Self::needs(k);
        while self.given.front().is_some_and(|(g, ..)| *g < need) {
            if let Some((_, shape, turned_away)) = self.given.pop_front() {
                self.learned
                    .record(shape.keys().iter().copied(), turned_away);
            }
        }
        let shape = DraftShape::of(d, &mut self.scratch);
        if self.learned.pass_over(shape.keys()) {
            self.passed_over += 1;
            return true;
        }
        self.awaiting.push_back((k, shape));
        false
    }

    /// The results of the next made drafts, in the order they were drawn: `Some(true)` not
    /// applicable or skipped, `Some(false)` run, `None` not run (not selected, or after a stop).
    pub fn give(&mut self, results: impl IntoIterator<Item = Option<bool>>) {
        for r in results {
            let Some((k, shape)) = self.awaiting.pop_front() else {
                return;
            };
            if let Some(turned_away) = r {
                self.given.push_back((k, shape, turned_away));
            }
        }
    }

    /// Drafts passed over so far.
    pub fn passed_over(&self) -> u64 {
        self.passed_over
    }

    /// Shapes (of any level) now passed over.
    pub fn passed_over_shapes(&self) -> usize {
        self.learned.passed_over_shapes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzzing::contend::gen_fuzz_case;
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    fn keys(k: &str) -> Vec<String> {
        vec![
            "sass|single".into(),
            format!("sass|single|{k}"),
            format!("sass|single|{k}|t"),
        ]
    }

    #[test]
    fn a_shape_is_passed_over_after_it_was_only_turned_away_and_explored_now_and_then() {
        let mut l = Learned::default();
        let k = keys("ATOM.ADD.F64.RN");
        // Another instruction of the kind runs: the kind is never passed over.
        l.record(keys("ATOM.ADD.U32"), false);
        for _ in 0..LEARN_AFTER - 1 {
            assert!(!l.pass_over(&k));
            l.record(k.clone(), true);
        }
        assert!(!l.pass_over(&k), "7 screens: still made");
        l.record(k.clone(), true);
        // The mnemonic's level and the text's.
        assert_eq!(l.passed_over_shapes(), 2);
        let made: Vec<bool> = (0..2 * EXPLORE_EVERY).map(|_| !l.pass_over(&k)).collect();
        assert_eq!(made.iter().filter(|m| **m).count(), 2, "{made:?}");
        assert!(made[EXPLORE_EVERY as usize - 1] && made[2 * EXPLORE_EVERY as usize - 1]);
        assert!(!l.pass_over(&keys("ATOM.ADD.U32")));
        // An explored case that runs brings the shape back for good.
        l.record(k.clone(), false);
        assert!((0..3 * EXPLORE_EVERY).all(|_| !l.pass_over(&k)));
        assert_eq!(l.passed_over_shapes(), 0);
    }

    #[test]
    fn a_kind_turned_away_whole_is_passed_over_whatever_its_instructions() {
        let mut l = Learned::default();
        for n in 0..LEARN_AFTER {
            l.record(keys(&format!("OP{n}")), true);
        }
        // A mnemonic never seen is passed over with its kind.
        assert!(l.pass_over(&keys("NEW")));
    }

    #[test]
    fn an_instruction_no_sent_case_holds_condemns_the_concurrent_cases_it_is_in() {
        let mut l = Learned::default();
        let case = |a: &str, b: &str| {
            vec![
                "sass|concurrent:plain:plain".to_string(),
                format!("sass|concurrent:plain:plain|{a}+{b}"),
                format!("sass|concurrent:plain:plain|{a}+{b}|text"),
                format!("sass|in-concurrent|{a}|plain"),
                format!("sass|in-concurrent|{b}|plain"),
            ]
        };
        l.record(case("ATOM.ADD.U32", "ATOM.OR.U32"), false);
        let partners = [
            "ATOM.ADD.U32",
            "ATOM.OR.U32",
            "ATOM.XOR.U32",
            "ATOM.MIN.U32",
        ];
        for n in 0..LEARN_AFTER as usize {
            let k = case(partners[n % 4], "ATOM.ADD.F32.FTZ.RN");
            assert!(!l.pass_over(&k));
            l.record(k, true);
        }
        // A pair never seen, but holding the float add: passed over; one without it is not.
        assert!(l.pass_over(&case("ATOM.AND.U32", "ATOM.ADD.F32.FTZ.RN")));
        assert!(!l.pass_over(&case("ATOM.AND.U32", "ATOM.ADD.U32")));
    }

    #[test]
    fn a_shape_ever_sent_is_never_passed_over() {
        let mut l = Learned::default();
        let k = keys("x");
        l.record(k.clone(), false);
        for _ in 0..10 * LEARN_AFTER {
            l.record(k.clone(), true);
        }
        assert!(!l.pass_over(&k));
        assert!(!l.pass_over(&keys("never seen")));
    }

    #[test]
    fn the_shape_holds_mnemonics_text_and_words_but_no_numbers() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let cases: Vec<GenCase> = (0..400).map(|_| gen_fuzz_case(&mut rng)).collect();
        let keys: Vec<Vec<String>> = cases.iter().map(shape_keys).collect();
        for (c, k) in cases.iter().zip(&keys) {
            let (kind, instr, text) = (&k[0], &k[1], &k[2]);
            assert_eq!(k.len(), 3 + usize::from(c.edge) + c.concurrent.len());
            assert!(kind.starts_with(c.dialect.name()), "{kind}");
            assert!(instr.starts_with(kind.as_str()) && text.starts_with(instr.as_str()));
            assert!(text.ends_with(&c.asm), "{text}");
        }
        let instrs: Vec<&String> = keys.iter().map(|k| &k[1]).collect();
        // Mnemonics past predicates and assignments.
        assert!(instrs.iter().any(|k| k.starts_with("sass|single|ATOM.")));
        assert!(
            instrs
                .iter()
                .any(|k| k.starts_with("visa|single|DWORD_ATOMIC."))
        );
        assert!(instrs.iter().any(|k| k.starts_with("msl|single|atomic_")));
        let predicated = instrs
            .iter()
            .find(|k| k.contains("|@P") || k.contains("|@!P") || k.contains("|(!"));
        assert!(predicated.is_none(), "{predicated:?}");
        // MSL's memory type is part of its shape: the same text on atomic_int and atomic_uint
        // (or another space) are two shapes.
        let untyped = instrs
            .iter()
            .find(|k| k.starts_with("msl|single|atomic_") && !k.contains("type=atomic_"));
        assert!(untyped.is_none(), "{untyped:?}");
        // Concurrent cases say loop or plain per instruction, and each instruction is a shape.
        assert!(keys.iter().any(|k| k[0].contains("|concurrent:plain")));
        assert!(
            keys.iter()
                .any(|k| k.len() > 3 && k[3].starts_with("sass|in-concurrent|ATOM."))
        );
        // The draw's edge addresses are in the shape.
        assert!(cases.iter().any(|c| c.edge));
        for (c, k) in cases.iter().zip(&keys) {
            assert_eq!(c.edge, k[1].ends_with("|edge"), "{}", k[1]);
        }
        // Values are not in the shape: far fewer single-instruction shapes than such cases
        // (concurrent ones combine several instructions, so repeat less).
        let single: Vec<&&String> = instrs.iter().filter(|k| k.contains("|single|")).collect();
        let distinct: std::collections::HashSet<&&String> = single.iter().copied().collect();
        assert!(distinct.len() < single.len(), "{}", distinct.len());
        let valued = instrs
            .iter()
            .find(|k| k.contains(":0x") || k.contains("=0x1"));
        assert!(valued.is_none(), "{valued:?}");
        assert!(
            keys.iter().all(|k| !k[2].contains("init")),
            "{}",
            keys[0][2]
        );
    }

    /// A SASS draft of one lane with text `asm` and no state.
    fn draft(asm: &str) -> Draft {
        let mut d = Draft::new(atomcts_reference::program::Dialect::Sass, 1);
        d.asm = asm.into();
        d
    }

    /// Draws `n` drafts `shape(k)` through a [`Lagged`], giving each made draft's result
    /// (`turned(k)`) once `late` more drafts were drawn (or when the next one waits for it);
    /// returns which were made.
    fn lagged_stream(
        n: u64,
        late: usize,
        shape: &dyn Fn(u64) -> Draft,
        turned: &dyn Fn(u64) -> bool,
    ) -> Vec<bool> {
        let mut l = Lagged::default();
        let mut owed: std::collections::VecDeque<u64> = std::collections::VecDeque::new();
        let mut made = Vec::new();
        for k in 0..n {
            while !l.ready(k) || owed.len() > late {
                let Some(m) = owed.pop_front() else {
                    panic!("draft {k} waits with nothing owed")
                };
                l.give([Some(turned(m))]);
            }
            let m = !l.pass_over(k, &shape(k));
            if m {
                owed.push_back(k);
            }
            made.push(m);
        }
        made
    }

    #[test]
    fn the_lagged_stream_learns_the_same_however_late_its_results_come() {
        // Shape `k % 7`; shapes 3 and 5 are always turned away.
        let shape = |k: u64| draft(&format!("ATOM.OP{} R0, [R2], R4", k % 7));
        let turned = |k: u64| matches!(k % 7, 3 | 5);
        let n = 3 * (LEARN_LAG + LEARN_STEP);
        let first = lagged_stream(n, 0, &shape, &turned);
        for late in [1, 100, 5000, usize::MAX] {
            assert_eq!(
                lagged_stream(n, late, &shape, &turned),
                first,
                "late {late}"
            );
        }
        // Nothing is learnt before the lag: every draft below LEARN_LAG + LEARN_STEP is made.
        let lag = (LEARN_LAG + LEARN_STEP) as usize;
        assert!(first[..lag].iter().all(|m| *m));
        // After it the two shapes are passed over but for one in EXPLORE_EVERY; the others are
        // made.
        let tail: Vec<(u64, bool)> = (lag as u64..n).zip(first[lag..].iter().copied()).collect();
        assert!(tail.iter().filter(|(k, _)| !turned(*k)).all(|(_, m)| *m));
        let condemned: Vec<bool> = tail
            .iter()
            .filter(|(k, _)| turned(*k))
            .map(|(_, m)| *m)
            .collect();
        let explored = condemned.iter().filter(|m| **m).count();
        assert!(explored > 0 && explored <= condemned.len() / EXPLORE_EVERY as usize + 2);
    }

    #[test]
    fn a_draft_waits_for_the_results_its_step_learns_from() {
        let mut l = Lagged::default();
        for k in 0..LEARN_LAG + LEARN_STEP {
            assert!(l.ready(k), "{k}");
            assert!(!l.pass_over(k, &draft("ATOM.X")));
        }
        // The first draft of the next step needs the results of the first LEARN_STEP drafts.
        assert!(!l.ready(LEARN_LAG + LEARN_STEP));
        l.give((0..LEARN_STEP - 1).map(|_| Some(true)));
        assert!(!l.ready(LEARN_LAG + LEARN_STEP));
        l.give([None]);
        assert!(l.ready(LEARN_LAG + LEARN_STEP) && !l.ready(LEARN_LAG + 2 * LEARN_STEP));
        // Learnt from those results only: passed over.
        assert!(l.pass_over(LEARN_LAG + LEARN_STEP, &draft("ATOM.X")));
        assert_eq!(l.passed_over(), 1);
        // Its kind, instruction and text: nothing else ran.
        assert_eq!(l.passed_over_shapes(), 3);
    }

    #[test]
    fn a_drafts_shape_is_its_instruction_and_words_not_its_values() {
        use crate::fuzzing::draw::gen_draft;
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let drafts: Vec<Draft> = (0..2000).map(|_| gen_draft(&mut rng)).collect();
        let keys: Vec<Vec<String>> = drafts.iter().map(draft_shape_keys).collect();
        for (d, k) in drafts.iter().zip(&keys) {
            assert_eq!(k.len(), 3 + usize::from(d.edge));
            assert_eq!(k[0], format!("{}|single", d.dialect.name()));
            assert!(k[1].starts_with(&k[0]) && k[2].starts_with(&k[1]) && k[2].ends_with(&d.asm));
            assert_eq!(d.edge, k[1].ends_with("|edge"), "{}", k[1]);
        }
        // The hashes are the texts' (the same text, the same hash; else another).
        let mut scratch = String::new();
        let mut by_hash: HashMap<u64, &String> = HashMap::new();
        let text_hash = |t: &str| {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            t.hash(&mut h);
            h.finish()
        };
        for (d, k) in drafts.iter().zip(&keys) {
            let shape = DraftShape::of(d, &mut scratch);
            assert_eq!(shape.keys().len(), k.len());
            for (h, t) in shape.keys().iter().zip(k) {
                // Each level's hash is its text's.
                assert_eq!(*h, text_hash(t), "{t}");
                assert_eq!(*by_hash.entry(*h).or_insert(t), t);
            }
        }
        let instrs: std::collections::HashSet<&String> = keys.iter().map(|k| &k[1]).collect();
        assert!(instrs.len() < drafts.len() / 4, "{}", instrs.len());
        let valued = instrs.iter().find(|k| k.contains("0x"));
        assert!(valued.is_none(), "{valued:?}");
        // Types and spaces are words of the shape.
        assert!(
            instrs
                .iter()
                .any(|k| k.contains("=u32") || k.contains("|@u32"))
        );
        assert!(
            instrs
                .iter()
                .any(|k| k.starts_with("msl|single|") && k.contains("atomic_"))
        );
    }
}
