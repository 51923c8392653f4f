//! The shared plan of the semantic-level back ends (OpenCL now; PTX and Vulkan build on it): how
//! one lowered IR instruction on one state maps onto a single work-group of a GPU API.
//!
//! - One work-item per IR access ([`Item`]), in program order; `Item::lane` is the case's lane
//!   (SASS/MSL lane, vISA channel) for reports.
//! - Each allocated range of each address space lives at a fixed byte offset of one flat buffer
//!   per space ([`Layout`]): global memory becomes a global buffer, shared memory (vISA SLM,
//!   MSL `threadgroup`, the SASS shared window) becomes work-group local memory initialised
//!   from and copied back to a global buffer. Offsets keep each base's residue modulo 8, so an
//!   aligned address stays aligned.
//! - Operands are per-item constants (`src`); every item returns the old value (and, for a
//!   compare-exchange, whether it succeeded), and [`Plan::finish`] writes those into the
//!   destination registers with the reference's own writeback (the data placement of the
//!   IR, not the op's semantics, which are the implementation's).
//!
//! A case the plan cannot express faithfully is [`NotApplicable`] with the reason: faults (an
//! API cannot observe them), accesses whose outcome the documents leave unspecified or that
//! land outside allocated memory or misaligned (undefined behaviour in OpenCL C, SPIR-V and
//! CUDA, and able to corrupt a CPU driver's host process).
//!
//! Which ops and types a device can run is the back end's question ([`Needs`] says what a
//! case needs, derived from the IR alone).

use atomcts_reference::exec::{self, Resolved};
use atomcts_reference::ir::{AtomicOp, Compare, Dest, Env, Instr, Lowered};
use atomcts_reference::outcome::{FaultClass, Outcome};
use atomcts_reference::state::State;
use atomcts_reference::types::{DataType, Space};
use std::fmt;

mod concurrent;
pub use concurrent::{ConcurrentPlan, START_READS, START_SPINS, start_line_from_env};

/// Why a case does not apply to a semantic-level implementation (counted, never a failure).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotApplicable(pub String);

impl fmt::Display for NotApplicable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a lowered instruction needs from an implementation, derived from the IR (case authors
/// do not tag cases with it).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Needs {
    /// An atomic read-modify-write (or store) of `op` on `ty` in `space`.
    Atomic {
        /// The op.
        op: AtomicOp,
        /// The datum type (integer width, float format).
        ty: DataType,
        /// Global or shared (work-group local) memory.
        space: Space,
        /// A compare-exchange comparing numerically rather than bitwise (A9).
        numeric_compare: bool,
    },
    /// A SIMD-group (sub-group) data exchange of `lanes` lanes.
    Shuffle {
        /// The SIMD-group width of the case.
        lanes: u32,
    },
}

impl Needs {
    /// What `lowered` needs.
    pub fn of(lowered: &Lowered, state: &State) -> Needs {
        match &lowered.instr {
            Instr::Mem(m) => Needs::Atomic {
                op: m.op,
                ty: m.ty,
                space: m.space,
                numeric_compare: m.op == AtomicOp::Cas
                    && matches!(m.env.compare, Compare::Numeric { .. }),
            },
            Instr::Shuffle(_) => Needs::Shuffle {
                lanes: state.simd_width.max(state.lanes),
            },
        }
    }

    /// Capability names of the case format (`requires`) implied by these needs.
    pub fn capabilities(&self) -> Vec<&'static str> {
        match self {
            Needs::Atomic { op, ty, .. } => {
                let mut c = Vec::new();
                match ty {
                    DataType::U64 | DataType::S64 => c.push("u64_atomics"),
                    DataType::F16x2 => c.push("f16x2_atomics"),
                    DataType::U16 | DataType::S16 => c.push("visa_16bit_atomics"),
                    DataType::F32 if *op == AtomicOp::Add => c.push("f32_atomic_add"),
                    DataType::F64 if *op == AtomicOp::Add => c.push("f64_atomic_add"),
                    _ => {}
                }
                c
            }
            Needs::Shuffle { .. } => vec![],
        }
    }
}

impl fmt::Display for Needs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Needs::Atomic {
                op,
                ty,
                space,
                numeric_compare,
            } => write!(
                f,
                "{} {} on {} memory{}",
                op.name(),
                ty.name(),
                space.name(),
                if *numeric_compare {
                    " (numeric compare)"
                } else {
                    ""
                }
            ),
            Needs::Shuffle { lanes } => write!(f, "sub-group shuffle over {lanes} lanes"),
        }
    }
}

/// One allocated range of one space, placed in that space's flat buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    /// Case address of the first byte.
    pub base: u64,
    /// Length in bytes.
    pub len: u64,
    /// Byte offset in the flat buffer.
    pub offset: u64,
}

/// Where every allocated range of one space lives in a flat buffer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// The ranges, ascending by base.
    pub ranges: Vec<Range>,
    /// Buffer size in bytes (a multiple of 8, at least 8).
    pub size: u64,
}

impl Layout {
    /// Lays out the allocated ranges of `space` in `state`.
    pub fn of(state: &State, space: Space) -> Layout {
        let mut ranges = Vec::new();
        let mut cursor = 0u64;
        for (base, len) in state.memory(space).ranges() {
            // Keep the base's residue modulo 8 so alignment carries over.
            let offset = cursor.div_ceil(8) * 8 + base % 8;
            ranges.push(Range { base, len, offset });
            cursor = offset + len;
        }
        Layout {
            ranges,
            size: (cursor.div_ceil(8) * 8).max(8),
        }
    }

    /// The buffer offset of case address `addr`, if allocated.
    pub fn offset(&self, addr: u64) -> Option<u64> {
        self.ranges
            .iter()
            .find(|r| addr >= r.base && addr - r.base < r.len)
            .map(|r| r.offset + (addr - r.base))
    }

    /// The buffer's initial bytes from `state`.
    pub fn bytes(&self, state: &State, space: Space) -> Vec<u8> {
        let mut out = vec![0u8; self.size as usize];
        let mem = state.memory(space);
        for r in &self.ranges {
            let at = r.offset as usize;
            match mem.slice(r.base, r.len as usize) {
                Some(s) => out[at..at + s.len()].copy_from_slice(s),
                None => {
                    for i in 0..r.len {
                        out[at + i as usize] = mem.read(r.base + i, 1).unwrap_or(0) as u8;
                    }
                }
            }
        }
        out
    }

    /// Copies the buffer's bytes back into `state`'s memory of `space`.
    pub fn store(&self, bytes: &[u8], state: &mut State, space: Space) {
        let mem = state.memory_mut(space);
        for r in &self.ranges {
            let at = r.offset as usize;
            if let Some(s) = bytes.get(at..at + r.len as usize)
                && mem.write_slice(r.base, s)
            {
                continue;
            }
            for i in 0..r.len {
                let b = bytes.get((r.offset + i) as usize).copied().unwrap_or(0);
                mem.write(r.base + i, 1, u64::from(b));
            }
        }
    }
}

/// One work-item: one IR access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Item {
    /// The case's lane or channel (for reports and kernel comments).
    pub lane: u32,
    /// Byte offset of the datum in its space's flat buffer (aligned to the datum's size).
    pub offset: u64,
    /// Operands in canonical order (unused ones zero), masked to the datum's width.
    pub src: [u64; 2],
    /// Whether the returned value is used (a destination exists).
    pub returns: bool,
}

/// What each work-item observed, in item order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Returned {
    /// The value each item's op returned (bit pattern, datum width).
    pub old: Vec<u64>,
    /// For a compare-exchange: whether each item's exchange succeeded (as the API reported).
    pub ok: Vec<bool>,
}

/// A lowered memory instruction laid out for one work-group.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The op.
    pub op: AtomicOp,
    /// The datum type.
    pub ty: DataType,
    /// The space the accesses address.
    pub space: Space,
    /// Float and compare environment.
    pub env: Env,
    /// One work-item per access, program order.
    pub items: Vec<Item>,
    /// Global memory layout.
    pub global: Layout,
    /// Shared (work-group local) memory layout.
    pub shared: Layout,
}

impl Plan {
    /// Plans `lowered` on `state`, or says why it cannot be run faithfully on an API.
    pub fn new(lowered: &Lowered, state: &State) -> Result<Plan, NotApplicable> {
        let m = match &lowered.instr {
            Instr::Mem(m) => m,
            Instr::Shuffle(_) => {
                return Err(NotApplicable(
                    "a SIMD-group shuffle, not a memory instruction; this back end plans memory instructions only"
                        .into(),
                ));
            }
        };
        let resolved = match exec::resolve(m, state) {
            Ok(r) => r,
            Err(outcome) => {
                return Err(NotApplicable(match *outcome {
                    Outcome::Fault(f) => format!(
                        "the case faults ({}); faults are not observable through the API (out-of-range and misaligned atomics are undefined behaviour there)",
                        f.lanes
                            .iter()
                            .map(|(l, c)| format!("lane {l}: {}", fault_name(*c)))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    Outcome::Unspecified(why) => {
                        format!(
                            "the outcome is unspecified ({why}); undefined behaviour on the API"
                        )
                    }
                    other => format!("the case does not run ({})", other.kind()),
                }));
            }
        };
        let global = Layout::of(state, Space::Global);
        let shared = Layout::of(state, Space::Shared);
        let layout = match m.space {
            Space::Global => &global,
            Space::Shared => &shared,
        };
        let mask = m.ty.mask();
        let mut items = Vec::with_capacity(m.accesses.len());
        for (a, r) in m.accesses.iter().zip(&resolved) {
            let addr = match *r {
                Resolved::Dropped => {
                    return Err(NotApplicable(format!(
                        "lane {} address {:#x} is outside allocated memory (reads zero, write dropped): undefined behaviour on the API",
                        a.lane, a.addr
                    )));
                }
                Resolved::Mem(addr) if addr != a.addr => {
                    return Err(NotApplicable(format!(
                        "lane {} address {:#x} is misaligned (low bits ignored): undefined behaviour on the API",
                        a.lane, a.addr
                    )));
                }
                Resolved::Mem(addr) => addr,
            };
            let offset = layout.offset(addr).ok_or_else(|| {
                NotApplicable(format!("lane {} address {addr:#x} not laid out", a.lane))
            })?;
            items.push(Item {
                lane: a.lane,
                offset,
                src: [a.src[0] & mask, a.src[1] & mask],
                returns: !matches!(a.dst, Dest::None),
            });
        }
        Ok(Plan {
            op: m.op,
            ty: m.ty,
            space: m.space,
            env: m.env,
            items,
            global,
            shared,
        })
    }

    /// The layout of the space the accesses address.
    pub fn layout(&self) -> &Layout {
        match self.space {
            Space::Global => &self.global,
            Space::Shared => &self.shared,
        }
    }

    /// Whether two items address the same datum (a race the implementation serializes).
    pub fn has_shared_addresses(&self) -> bool {
        let mut offs: Vec<u64> = self.items.iter().map(|i| i.offset).collect();
        offs.sort_unstable();
        offs.windows(2).any(|w| w[0] == w[1])
    }

    /// The final state: `state` with the declared registers, the memory an implementation left
    /// (`global`, `shared`: the flat buffers after the run), the returned values written to the
    /// destinations, and the static register writes. `lowered` is the instruction the plan was
    /// made of: the plan keeps no copy of it, so that planning a case copies none of its
    /// register names (issue 31).
    pub fn finish(
        &self,
        lowered: &Lowered,
        state: &State,
        global: &[u8],
        shared: &[u8],
        returned: &Returned,
    ) -> Result<State, String> {
        let mut with_memory = state.clone();
        self.global.store(global, &mut with_memory, Space::Global);
        self.shared.store(shared, &mut with_memory, Space::Shared);
        complete(lowered, with_memory, returned)
    }
}

/// The final state of a memory instruction from what an implementation left: `state` already
/// holds the final memory; this adds the declared registers, writes each access's returned
/// value to its destination (the reference's writeback: the IR's data placement, not the op's
/// semantics), and the static register writes.
pub fn complete(lowered: &Lowered, state: State, returned: &Returned) -> Result<State, String> {
    let Instr::Mem(m) = &lowered.instr else {
        return Err("not a memory instruction".into());
    };
    if returned.old.len() != m.accesses.len() {
        return Err(format!(
            "{} returned values for {} accesses",
            returned.old.len(),
            m.accesses.len()
        ));
    }
    let mut next = state;
    for (name, reg) in &lowered.declare {
        next.regs.entry(name.clone()).or_insert_with(|| reg.clone());
    }
    let mut open = Vec::new();
    for (i, a) in m.accesses.iter().enumerate() {
        let old = returned.old[i] & m.ty.mask();
        let ok = returned.ok.get(i).copied().unwrap_or(true);
        exec::writeback(a, m.ty, old, ok, &mut next, &mut open).map_err(|e| e.to_string())?;
    }
    for w in &lowered.writes {
        let bits = next
            .regs
            .get(&w.name)
            .map(|r| u32::from(r.ty.bits))
            .unwrap_or(32);
        next.set_field(&w.name, w.idx, 0, bits, w.value)
            .map_err(|e| e.to_string())?;
    }
    next.validate().map_err(|e| e.to_string())?;
    Ok(next)
}

fn fault_name(c: FaultClass) -> &'static str {
    c.name()
}

#[cfg(test)]
mod tests {
    use super::*;
    use atomcts_reference::Profile;
    use atomcts_reference::ir::Lowering;
    use atomcts_reference::program::{Dialect, Program};
    use atomcts_reference::state::Reg;
    use atomcts_reference::types::ElemType;

    fn lower(dialect: Dialect, asm: &str, s: &State) -> Lowered {
        let p = Program::parse(dialect, asm).unwrap();
        match p.lower(s, &Profile::default()).unwrap() {
            Lowering::Run(l) => l,
            other => panic!("{other:?}"),
        }
    }

    fn sass_state() -> State {
        let mut s = State::new(4);
        s.regs.insert(
            "R2".into(),
            Reg {
                ty: ElemType::B32,
                elems: vec![0x1000, 0x1004, 0x1000, 0x1008],
            },
        );
        s.regs.insert(
            "R4".into(),
            Reg {
                ty: ElemType::B32,
                elems: vec![1, 2, 3, 4],
            },
        );
        s.global.alloc(0x1000, 12).unwrap();
        s.global.alloc(0x2003, 5).unwrap();
        s
    }

    #[test]
    fn layout_keeps_alignment_and_round_trips() {
        let mut s = sass_state();
        s.global.write(0x1004, 4, 0xdead_beef);
        s.global.write(0x2003, 1, 0x5a);
        let l = Layout::of(&s, Space::Global);
        assert_eq!(l.ranges.len(), 2);
        for r in &l.ranges {
            assert_eq!(r.offset % 8, r.base % 8);
        }
        assert_eq!(l.offset(0x1004), Some(4));
        assert_eq!(l.offset(0x100c), None);
        let bytes = l.bytes(&s, Space::Global);
        let mut t = s.clone();
        t.global = atomcts_reference::memory::Memory::new();
        t.global.alloc(0x1000, 12).unwrap();
        t.global.alloc(0x2003, 5).unwrap();
        l.store(&bytes, &mut t, Space::Global);
        assert_eq!(t, s);
    }

    #[test]
    fn plan_maps_lanes_and_writes_back_like_the_reference() {
        let s = sass_state();
        let lowered = lower(Dialect::Sass, "ATOM.E.ADD.U32 R0, [R2], R4", &s);
        let plan = Plan::new(&lowered, &s).unwrap();
        assert_eq!(plan.op, AtomicOp::Add);
        assert_eq!(
            plan.items.iter().map(|i| i.offset).collect::<Vec<_>>(),
            [0, 4, 0, 8]
        );
        assert!(plan.has_shared_addresses());
        // Play the implementation: program order, as the reference does.
        let mut g = plan.global.bytes(&s, Space::Global);
        let mut old = vec![];
        for it in &plan.items {
            let o = it.offset as usize;
            let v = u32::from_le_bytes(g[o..o + 4].try_into().unwrap());
            old.push(u64::from(v));
            g[o..o + 4].copy_from_slice(&(v.wrapping_add(it.src[0] as u32)).to_le_bytes());
        }
        let sh = plan.shared.bytes(&s, Space::Shared);
        let done = plan
            .finish(&lowered, &s, &g, &sh, &Returned { old, ok: vec![] })
            .unwrap();
        let reference = atomcts_reference::program::run(
            Dialect::Sass,
            "ATOM.E.ADD.U32 R0, [R2], R4",
            &s,
            &Profile::default(),
        )
        .unwrap();
        match reference.outcome {
            Outcome::Completed(c) => assert_eq!(done, c.state),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn faults_and_undefined_accesses_are_not_applicable() {
        let mut s = sass_state();
        s.regs.get_mut("R2").unwrap().elems[1] = 0x1002; // misaligned
        let lowered = lower(Dialect::Sass, "ATOM.E.ADD.U32 R0, [R2], R4", &s);
        let why = Plan::new(&lowered, &s).unwrap_err();
        assert!(why.0.contains("faults"), "{why}");
        s.regs.get_mut("R2").unwrap().elems[1] = 0x3000; // outside memory
        let lowered = lower(Dialect::Sass, "ATOM.E.ADD.U32 R0, [R2], R4", &s);
        assert!(Plan::new(&lowered, &s).is_err());
    }

    fn slm_state(src: u64) -> State {
        let mut s = State::default();
        s.shared.alloc(0, 16).unwrap();
        s.slm_size = Some(16);
        s.shared.write(0, 4, 100);
        s.shared.write(4, 4, 0x77);
        s.global.alloc(0x1000, 4).unwrap();
        for (r, v) in [("V10", [0u64, 0]), ("V11", [src, src]), ("V13", [0, 0])] {
            s.regs.insert(
                r.into(),
                Reg {
                    ty: ElemType::UD,
                    elems: v.to_vec(),
                },
            );
        }
        s
    }

    #[test]
    fn local_memory_instructions_share_one_work_group_only_by_opting_in() {
        let (a, b) = (slm_state(3), slm_state(2));
        let la = lower(Dialect::Visa, "DWORD_ATOMIC.add (2) T0 V10 V11 V0 V13", &a);
        let lb = lower(Dialect::Visa, "DWORD_ATOMIC.sub (2) T0 V10 V11 V0 V13", &b);
        let (lowered, states) = ([la, lb], [a.clone(), b]);
        // The default plan keeps saying not applicable.
        let why = ConcurrentPlan::new(&lowered, &states, &[2, 3]).unwrap_err();
        assert!(why.0.contains("work-group local memory"), "{why}");
        let cp = ConcurrentPlan::new_or_local(&lowered, &states, &[2, 3]).unwrap();
        assert!(cp.local && cp.has_local_image());
        assert_eq!((cp.first_item(0), cp.first_item(1)), (0, 2));
        assert_eq!((cp.local_size(), cp.work_groups()), (4, 1));
        assert_eq!((cp.ret_base(1), cp.ret_len()), (4, 10));
        // The buffer: global memory, then the image of local memory.
        let image = cp.image(&a);
        assert_eq!(cp.shared_base(), 8);
        assert_eq!(image.len(), 8 + 16);
        assert_eq!(&image[8..12], &100u32.to_le_bytes());
        // Play the implementation: the final local memory comes from the buffer.
        let mut after = image.clone();
        after[8..12].copy_from_slice(&98u32.to_le_bytes());
        let old = vec![100, 103, 106, 109, 112, 110, 108, 106, 104, 102];
        let (finals, per) = cp.finish_image(&states, &after, &old, &[]).unwrap();
        for f in &finals {
            assert_eq!(f.shared.read(0, 4), Some(98));
            assert_eq!(f.shared.read(4, 4), Some(0x77));
        }
        assert_eq!(per[1].len(), 3);
        assert_eq!(per[1][2].old, vec![104, 102]);
        // The last iteration's returned values land in Dst.
        assert_eq!(finals[1].regs["V13"].elems, vec![104, 102]);
        // Global instructions alone keep one work-group each.
        let g = sass_state();
        let lg = lower(Dialect::Sass, "ATOM.E.ADD.U32 R0, [R2], R4", &g);
        let cp = ConcurrentPlan::new_or_local(&[lg.clone(), lg], &[g.clone(), g], &[1, 1]).unwrap();
        assert!(!cp.local && !cp.has_local_image());
        assert_eq!(
            (cp.first_item(1), cp.work_groups(), cp.local_size()),
            (0, 2, 4)
        );
    }

    #[test]
    fn needs_come_from_the_ir() {
        let s = sass_state();
        let l = lower(Dialect::Sass, "ATOM.E.INC R0, [R2], R4", &s);
        let n = Needs::of(&l, &s);
        assert_eq!(
            n,
            Needs::Atomic {
                op: AtomicOp::IncBounded,
                ty: DataType::U32,
                space: Space::Global,
                numeric_compare: false
            }
        );
        assert!(n.capabilities().is_empty());
        assert_eq!(n.to_string(), "inc_bounded u32 on global memory");
    }
}
