//! The expectation of a generated case (issue 9): the table `atomcts gen` writes from the
//! reference's outcome ([`expect_table`]), the same expectation built directly
//! (`direct_expectation`), and what the generator hands the runner for each case
//! ([`Prebuilt`], the [`crate::corpus::case::Generated`] of a generated case).

use crate::corpus::case::{Case, entries_of};
use crate::corpus::expectation::Expectation;
use crate::corpus::pos::Pos;
use crate::corpus::state::msl_type_name;
use crate::fuzzing::draft::{Draft, GenCase};
use atomcts_reference::Profile;
use atomcts_reference::exec::{Resolved, resolve};
use atomcts_reference::ir::{Instr, Lowered};
use atomcts_reference::outcome::{Allowed, Completed, Outcome};
use atomcts_reference::program::{self, Dialect};
use atomcts_reference::semantics::apply;
use atomcts_reference::state::{Loc, State};
use atomcts_reference::types::{ElemType, Kind, Space, mask};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use toml::{Table, Value};

pub(crate) fn int(v: u64) -> Value {
    Value::Integer(v as i64)
}

pub(crate) fn typed(ty: &str, v: u64) -> Value {
    Value::String(format!("{ty}:{v:#x}"))
}

/// The expectation table of `gc`: the reference's outcome under `profile`.
///
/// A concurrent case expects nothing of its own (`expect = {}`, FORMAT.md "Concurrent cases"):
/// the reference's checker across instructions judges the whole observation, as for the
/// corpus's concurrent cases whose final value no document determines.
pub fn expect_table(gc: &GenCase, profile: &Profile) -> Result<Table, String> {
    if !gc.concurrent.is_empty() {
        return Ok(Table::new());
    }
    let (state, run) = reference_run(gc, profile)?;
    Ok(expectation(
        gc.dialect,
        &state,
        &run.outcome,
        run.lowered.as_ref(),
    ))
}

/// The initial state of `gc` and the reference's run of it under `profile`.
pub(crate) fn reference_run(
    gc: &GenCase,
    profile: &Profile,
) -> Result<(State, program::Run), String> {
    let state = load_state(gc)?;
    let run = program::run(gc.dialect, &gc.asm, &state, profile).map_err(|e| e.to_string())?;
    Ok((state, run))
}

/// The bits of `loc` the completed outcome leaves open (the union of its open fields there).
pub(crate) fn open_mask(c: &Completed, loc: &Loc) -> u64 {
    c.open
        .iter()
        .filter(|(l, _)| l == loc)
        .fold(0, |m, (_, f)| m | f.mask())
}

/// What the generator already made for a generated case (issue 9): its typed state (the
/// case's `given` stays empty: [`crate::corpus::state::build_state`] builds from this draft), the
/// initial state, the reference's run under the generator's profile, and the expectation
/// built from the case's `expect` entries: exactly what [`crate::run::prepare::prepare`] would build
/// from the case's text. A run under another profile uses only the draft.
#[derive(Clone, Debug)]
pub struct Prebuilt {
    /// The case as the generator drew it.
    pub draft: Draft,
    /// The profile the reference ran under.
    pub profile: std::sync::Arc<Profile>,
    /// The initial state.
    pub state: State,
    /// The reference's run.
    pub reference: program::Run,
    /// `build_expectation` of the case's `expect`, unless that is an error (which the run
    /// then reports as for any case): built on first use
    /// ([`crate::corpus::case::Item::generated_expectation`]).
    pub(crate) expectation: std::sync::OnceLock<Option<Expectation>>,
}

impl crate::corpus::case::Generated for Prebuilt {
    fn build_state(&self) -> Result<State, String> {
        self.draft.state()
    }

    fn profile(&self) -> &Profile {
        &self.profile
    }

    fn state(&self) -> &State {
        &self.state
    }

    fn reference(&self) -> &program::Run {
        &self.reference
    }

    /// Issue 9: `direct_expectation`.
    fn expectation(&self, case: &Case) -> Option<&Expectation> {
        self.expectation
            .get_or_init(|| {
                direct_expectation(
                    case,
                    &self.state,
                    &self.reference.outcome,
                    self.reference.lowered.as_ref(),
                )
            })
            .as_ref()
    }

    fn expect_table(&self, dialect: Dialect) -> Table {
        expectation(
            dialect,
            &self.state,
            &self.reference.outcome,
            self.reference.lowered.as_ref(),
        )
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl GenCase {
    /// The case the loader makes from this case's text (issue 9: generated cases go to the
    /// state builder without a round trip through TOML text): the same entries in the same
    /// (sorted) order. There is no text, so every position is `file:0:0`; a message about a
    /// generated case names its id, and its reproduce line regenerates it.
    pub fn to_case(&self, id: String, file: &Path, cite: String, expect: Option<Table>) -> Case {
        self.clone().into_case(id, file, cite, expect)
    }

    /// [`GenCase::to_case`], without copying the state.
    pub fn into_case(self, id: String, file: &Path, cite: String, expect: Option<Table>) -> Case {
        self.into_case_at(id, file.to_path_buf(), file.into(), cite, expect)
    }

    /// [`GenCase::into_case`] with the file's path already made, both ways.
    pub(crate) fn into_case_at(
        self,
        id: String,
        file: std::path::PathBuf,
        at: std::sync::Arc<Path>,
        cite: String,
        expect: Option<Table>,
    ) -> Case {
        let pos = Pos {
            file: at,
            line: 0,
            col: 0,
        };
        Case {
            id,
            file,
            dialect: self.dialect,
            asm: self.asm,
            asm_pos: pos.clone(),
            cite,
            lanes: self.lanes,
            given: entries_of(self.given, &pos),
            expect: expect.map(|t| (entries_of(t, &pos), pos.clone())),
            requires: vec![],
            where_: BTreeMap::new(),
            tags: vec![],
            probe: None,
            expect_if: vec![],
            encoding: None,
            concurrent: self
                .concurrent
                .into_iter()
                .map(|i| crate::corpus::case::ConcurrentInstr {
                    asm: i.asm,
                    asm_pos: pos.clone(),
                    pos: pos.clone(),
                    lanes: i.lanes,
                    iterations: i.iterations,
                    given: entries_of(i.given, &pos),
                    expect: None,
                    cas_loop: i.cas_loop.map(|l| (l, pos.clone())),
                })
                .collect(),
            pos,
        }
    }
}

/// The initial state of `gc`, built exactly as the case loader builds it from the case's
/// text (the same entries, without the text: see [`GenCase::to_case`]).
pub fn load_state(gc: &GenCase) -> Result<State, String> {
    let case = gc.to_case(
        "generated::probe".into(),
        Path::new("<generated>"),
        String::new(),
        None,
    );
    crate::corpus::state::build_state(&case).map_err(|e| e.message)
}

pub(crate) fn unspecified() -> Table {
    let mut t = Table::new();
    t.insert("unspecified".into(), Value::Boolean(true));
    t
}

/// Memory locations and register elements.
type OpenSets = (BTreeSet<(Space, u64)>, BTreeSet<(String, u32)>);

/// Locations whose final value depends on an order or choice the documents leave open: every
/// address several accesses race on (or whose op allows alternatives), and the destinations of
/// those accesses.
pub(crate) fn open_locations(lowered: Option<&Lowered>, initial: &State) -> OpenSets {
    let mut mem = BTreeSet::new();
    let mut regs = BTreeSet::new();
    let Some(Lowered {
        instr: Instr::Mem(m),
        ..
    }) = lowered
    else {
        return (mem, regs);
    };
    let Ok(resolved) = resolve(m, initial) else {
        return (mem, regs);
    };
    let mut by_addr: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (i, r) in resolved.iter().enumerate() {
        if let Resolved::Mem(a) = r {
            by_addr.entry(*a).or_default().push(i);
        }
    }
    let bytes = m.ty.bytes();
    for (addr, members) in by_addr {
        let old = initial.memory(m.space).read(addr, bytes).unwrap_or(0);
        let choices = members.iter().any(|&i| {
            apply(m.op, m.ty, &m.env, old, m.accesses[i].src).map_or(true, |e| e.len() > 1)
        });
        if members.len() > 1 || choices {
            mem.insert((m.space, addr));
            for &i in &members {
                match &m.accesses[i].dst {
                    atomcts_reference::ir::Dest::None => {}
                    atomcts_reference::ir::Dest::Fields(fs) => {
                        for f in fs {
                            regs.insert((f.name.clone(), f.idx));
                        }
                    }
                    atomcts_reference::ir::Dest::CasWeak { ok, expected } => {
                        regs.insert((expected.name.clone(), expected.idx));
                        if let Some(ok) = ok {
                            regs.insert((ok.name.clone(), ok.idx));
                        }
                    }
                }
            }
        }
    }
    (mem, regs)
}

/// The expectation table for a reference outcome.
pub(crate) fn expectation(
    dialect: Dialect,
    initial: &State,
    outcome: &Outcome,
    lowered: Option<&Lowered>,
) -> Table {
    let mut t = Table::new();
    match outcome {
        Outcome::Invalid(r) => {
            t.insert("invalid".into(), Value::String(r.reason.code().into()));
        }
        Outcome::Unspecified(_) => return unspecified(),
        Outcome::Fault(f) => {
            let class = f
                .lanes
                .first()
                .map_or("address_out_of_range", |l| l.1.name());
            t.insert("fault".into(), Value::String(class.into()));
            let lanes: Vec<Value> = f.lanes.iter().map(|(l, _)| int(u64::from(*l))).collect();
            t.insert("fault_lanes".into(), Value::Array(lanes));
        }
        Outcome::Completed(c) => {
            let (racy_mem, racy_regs) = open_locations(lowered, initial);
            let fin = &c.state;
            // Register bits the documents leave open (checked under a mask).
            let open_bits = |loc: &Loc| open_mask(c, loc);
            // Registers that changed (or were declared) get their full value list.
            for (name, reg, opened, racy) in stated_regs(initial, c, &racy_regs) {
                let value = reg_value(dialect, name, reg, opened, racy, &racy_regs, &open_bits);
                t.insert(name.clone(), value);
            }
            // Memory: the accessed locations that changed, or race.
            let mut mem_g = Table::new();
            let mut mem_s = Table::new();
            let mut bufs: BTreeMap<String, Vec<Value>> = BTreeMap::new();
            for (space, addr, bytes, v) in mem_values(initial, c, lowered, &racy_mem) {
                let v = match v {
                    MemV::Exact(x) => typed(&format!("u{}", bytes * 8), x),
                    MemV::Text(v) => v,
                };
                // MSL buffers are written as their final contents.
                if let Some((bname, b)) = buffer_at(initial, space, addr) {
                    let list = bufs.entry(bname.clone()).or_insert_with(|| {
                        (0..b.len)
                            .map(|i| int(fin.memory(b.space).read(b.base + 4 * i, 4).unwrap_or(0)))
                            .collect()
                    });
                    let i = ((addr - b.base) / 4) as usize;
                    if let Some(slot) = list.get_mut(i) {
                        *slot = if let Value::String(s) = &v {
                            if s.ends_with(":any") {
                                Value::String("any".into())
                            } else {
                                v.clone()
                            }
                        } else {
                            v.clone()
                        };
                    }
                    continue;
                }
                let key = format!("{addr:#x}");
                match space {
                    Space::Global => mem_g.insert(key, v),
                    Space::Shared => mem_s.insert(key, v),
                };
            }
            if !mem_g.is_empty() {
                t.insert("mem".into(), Value::Table(mem_g));
            }
            if !mem_s.is_empty() {
                let mut s = Table::new();
                s.insert("mem".into(), Value::Table(mem_s));
                t.insert("slm".into(), Value::Table(s));
            }
            for (b, vals) in bufs {
                t.insert(b, Value::Array(vals));
            }
        }
    }
    t
}

/// The registers an expectation states (every one that changed, holds open bits or races),
/// with whether it holds open bits and whether it races.
pub(crate) fn stated_regs<'a>(
    initial: &State,
    c: &'a atomcts_reference::outcome::Completed,
    racy_regs: &BTreeSet<(String, u32)>,
) -> Vec<(&'a String, &'a atomcts_reference::state::Reg, bool, bool)> {
    let mut out = Vec::new();
    for (name, reg) in &c.state.regs {
        // `initial.elem(name, i).unwrap_or(0) != reg.elems[i]` for some `i`, looked up once.
        let before = initial.regs.get(name).map_or(&[][..], |r| &r.elems[..]);
        let changed = reg
            .elems
            .iter()
            .enumerate()
            .any(|(i, v)| before.get(i).copied().unwrap_or(0) != *v);
        let opened = c
            .open
            .iter()
            .any(|(l, _)| matches!(l, Loc::Reg { name: n, .. } if n == name));
        let racy = racy_regs.iter().any(|(n, _)| n == name);
        if changed || opened || racy {
            out.push((name, reg, opened, racy));
        }
    }
    out
}

/// The expectation of a generated case built straight from the reference's outcome (issue 9):
/// the same [`Expectation`] as [`crate::corpus::build::build_expectation`] of
/// [`expectation`]'s table (checked on seeded cases by
/// `direct_expectation_is_the_tables`), without writing the table and parsing it back.
/// Forms other than plain values (races, open bits, NaNs, faults, rejections) go through
/// the table route for their entry. `None` where that route gives an error.
pub(crate) fn direct_expectation(
    case: &Case,
    initial: &State,
    outcome: &Outcome,
    lowered: Option<&Lowered>,
) -> Option<Expectation> {
    use crate::corpus::build::expect_entry;
    use crate::corpus::expectation::{Check, Target};
    use crate::corpus::state::{buffer_slot, mem_pat, msl_type, reg_index, slot};
    use crate::corpus::value::{Bits, Human, Pat};
    let table_route = || {
        let entries = entries_of(
            expectation(case.dialect, initial, outcome, lowered),
            &case.pos,
        );
        crate::corpus::build::build_expectation(case, initial, &entries, &case.pos).ok()
    };
    let Outcome::Completed(c) = outcome else {
        return table_route();
    };
    let pos = &case.pos;
    let lanes = initial.lanes as usize;
    let dialect = case.dialect;
    let (racy_mem, racy_regs) = open_locations(lowered, initial);
    let fin = &c.state;
    let open_bits = |loc: &Loc| open_mask(c, loc);
    let check = |key: &str, target: Target, pat: Pat| Check {
        pos: pos.clone(),
        key: key.to_string(),
        target,
        pat,
        multiset: vec![],
    };
    // An integer element as `parse_pat` reads it for a location of `width` bits shown as `human`.
    let int_pat = |v: u64, width: u32, human: Human| -> Option<Pat> {
        (width >= 64 || v < (1u64 << width))
            .then(|| Pat::exact(Bits { value: v, width }).shown_as(human))
    };
    // Entries by key, as the table orders them; `None`: the table route gives an error.
    let mut entries: BTreeMap<&str, Option<Vec<Check>>> = BTreeMap::new();
    for (name, reg, opened, racy) in stated_regs(initial, c, &racy_regs) {
        let bool_ = reg.ty.kind == Kind::Bool;
        // A register of plain values, read as `expect_entry` reads them; `None`: another form.
        let direct = (|| -> Option<Vec<Check>> {
            // The location's width and how its values are shown, as `expect_entry` reads it.
            let (w, human) = match dialect {
                Dialect::Sass => {
                    if reg.elems.len() != lanes {
                        return None;
                    }
                    match (reg_index(name, 'R', 254), reg_index(name, 'P', 6)) {
                        (Some(_), _) if !bool_ => (32, Human::Int),
                        (None, Some(_)) if bool_ => (1, Human::Int),
                        _ => return None,
                    }
                }
                Dialect::Visa => {
                    if reg_index(name, 'V', u32::MAX - 1).is_none_or(|n| n == 0)
                        || reg.elems.len() > atomcts_reference::state::MAX_ELEMS
                    {
                        return None;
                    }
                    let et =
                        ElemType::from_visa_name(reg.ty.visa_name()).filter(|et| *et == reg.ty)?;
                    if initial.regs.get(name.as_str()).is_some_and(|d| d.ty != et) {
                        return None;
                    }
                    let sl = slot(et);
                    (sl.width, sl.human)
                }
                Dialect::Msl => {
                    if initial.buffers.contains_key(name.as_str())
                        || name.is_empty()
                        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                        || reg.elems.len() != lanes
                        || reg.elems.len() > atomcts_reference::state::MAX_ELEMS
                    {
                        return None;
                    }
                    let sl = slot(msl_type(msl_type_name(reg.ty))?);
                    (sl.width, sl.human)
                }
            };
            let mut out = Vec::with_capacity(reg.elems.len());
            for (i, v) in reg.elems.iter().enumerate() {
                let i = i as u32;
                // `reg_value`'s element, read as `parse_pat` reads it.
                let p = if racy && racy_regs.iter().any(|(n, k)| n == name && *k == i) {
                    Pat::Any
                } else {
                    let any = if opened {
                        open_bits(&Loc::Reg {
                            name: name.clone(),
                            idx: i,
                        })
                    } else {
                        0
                    };
                    let v = if bool_ { v & 1 } else { *v };
                    if any != 0 {
                        let care = reg.ty.mask() & !any;
                        if (v | care) & !mask(w) != 0 {
                            return None;
                        }
                        Pat::Bits {
                            human,
                            value: v,
                            care,
                            nan: vec![],
                            width: w,
                        }
                    } else if bool_ {
                        Pat::exact(Bits {
                            value: v,
                            width: w.max(1),
                        })
                    } else {
                        int_pat(v, w, human)?
                    }
                };
                let t = Target::Reg {
                    name: name.clone(),
                    idx: i,
                };
                out.push(check(name, t, p));
            }
            Some(out)
        })();
        let checks = direct.or_else(|| {
            let v = reg_value(dialect, name, reg, opened, racy, &racy_regs, &open_bits);
            let mut out = Vec::new();
            expect_entry(dialect, initial, name, &v, pos, &mut out).ok()?;
            Some(out)
        });
        entries.insert(name.as_str(), checks);
    }
    // Memory, ordered by address as written (`0x..` text), and MSL buffers' final contents.
    let mut mem: [Vec<(String, Check)>; 2] = [Vec::new(), Vec::new()];
    let mut mem_ok = [true, true];
    let mut bufs: BTreeMap<&str, Vec<Check>> = BTreeMap::new();
    for (space, addr, bytes, v) in mem_values(initial, c, lowered, &racy_mem) {
        if let Some((bname, b)) = buffer_at(initial, space, addr) {
            let human = buffer_slot(b.ty).human;
            let list = bufs.entry(bname.as_str()).or_insert_with(|| {
                (0..b.len)
                    .map(|i| {
                        let addr = b.base + 4 * i;
                        let x = fin.memory(b.space).read(addr, 4).unwrap_or(0);
                        let p = Pat::exact(Bits {
                            value: x,
                            width: 32,
                        })
                        .shown_as(human);
                        let t = Target::Mem {
                            space: b.space,
                            addr,
                            bytes: 4,
                        };
                        check(bname, t, p)
                    })
                    .collect()
            });
            let i = ((addr - b.base) / 4) as usize;
            if let Some(slot) = list.get_mut(i) {
                slot.pat = match v {
                    MemV::Exact(x) => Pat::exact(Bits {
                        value: x,
                        width: 8 * bytes as u32,
                    }),
                    MemV::Text(Value::String(s)) if s.ends_with(":any") => Pat::Any,
                    MemV::Text(v) => match crate::corpus::value::parse_pat(&v, buffer_slot(b.ty)) {
                        Ok(p) => p,
                        Err(_) => return table_route(),
                    },
                };
            }
            continue;
        }
        let (k, key) = match space {
            Space::Global => (0, "mem"),
            Space::Shared => (1, "slm"),
        };
        let p = match v {
            MemV::Exact(x) => Pat::exact(Bits {
                value: x,
                width: 8 * bytes as u32,
            }),
            MemV::Text(v) => match mem_pat(&v, pos, key) {
                Ok(p) => p,
                Err(_) => {
                    mem_ok[k] = false;
                    continue;
                }
            },
        };
        let Some(w) = p.width() else {
            mem_ok[k] = false;
            continue;
        };
        if !initial.memory(space).contains(addr, u64::from(w / 8)) {
            mem_ok[k] = false;
            continue;
        }
        let t = Target::Mem {
            space,
            addr,
            bytes: w / 8,
        };
        mem[k].push((format!("{addr:#x}"), check(key, t, p)));
    }
    for (k, key) in [(0, "mem"), (1, "slm")] {
        if mem[k].is_empty() && mem_ok[k] {
            continue;
        }
        let mut list = std::mem::take(&mut mem[k]);
        list.sort_by(|a, b| a.0.cmp(&b.0));
        entries.insert(
            key,
            mem_ok[k].then(|| list.into_iter().map(|(_, c)| c).collect()),
        );
    }
    for (b, checks) in bufs {
        entries.insert(b, Some(checks));
    }
    if entries
        .keys()
        .any(|k| matches!(*k, "fault" | "fault_lanes" | "invalid" | "unspecified"))
        || (dialect != Dialect::Visa && entries.contains_key("slm"))
    {
        return table_route();
    }
    let mut checks = Vec::new();
    for (_, e) in entries {
        checks.extend(e?);
    }
    Some(Expectation::Values(checks))
}

/// A memory value an expectation states: exact bits (written `u<bits>:<hex>`) or another form.
pub(crate) enum MemV {
    Exact(u64),
    Text(Value),
}

/// The MSL buffer (name and layout) holding `addr` of `space`, if any.
pub(crate) fn buffer_at(
    initial: &State,
    space: Space,
    addr: u64,
) -> Option<(&String, &atomcts_reference::state::Buffer)> {
    initial
        .buffers
        .iter()
        .find(|(_, b)| b.space == space && addr >= b.base && addr < b.base + 4 * b.len)
}

/// The memory locations an expectation states, in access order: every accessed location that
/// changed, or races, or holds bits the documents leave open (space, address, bytes, value).
pub(crate) fn mem_values(
    initial: &State,
    c: &atomcts_reference::outcome::Completed,
    lowered: Option<&Lowered>,
    racy_mem: &BTreeSet<(Space, u64)>,
) -> Vec<(Space, u64, u64, MemV)> {
    let mut out = Vec::new();
    let fin = &c.state;
    let Some(Lowered {
        instr: Instr::Mem(m),
        ..
    }) = lowered
    else {
        return out;
    };
    let bytes = m.ty.bytes();
    let mut seen = BTreeSet::new();
    for a in &m.accesses {
        let addr = a.addr & !(bytes - 1);
        for addr in [a.addr, addr] {
            if !seen.insert(addr) {
                continue;
            }
            let (Some(before), Some(after)) = (
                initial.memory(m.space).read(addr, bytes),
                fin.memory(m.space).read(addr, bytes),
            ) else {
                continue;
            };
            let ty = || format!("u{}", bytes * 8);
            let racy = racy_mem.contains(&(m.space, addr));
            let loc = Loc::Mem {
                space: m.space,
                addr,
                bytes: bytes as u8,
            };
            let fields: Vec<_> = c
                .open
                .iter()
                .filter(|(l, _)| l == &loc)
                .map(|(_, f)| f)
                .collect();
            let nan_at = |lo: u32, bits: u32| {
                fields.iter().find_map(|f| match f.allowed {
                    Allowed::AnyNan(fm) if f.lo == lo && f.bits == bits => Some(fm),
                    _ => None,
                })
            };
            let v = if racy {
                MemV::Text(Value::String(format!("{}:any", ty())))
            } else if m.ty == atomcts_reference::types::DataType::F16x2 && !fields.is_empty() {
                let half = |i: u32| match nan_at(16 * i, 16) {
                    Some(_) => "nan".to_string(),
                    None => format!("{:#06x}", (after >> (16 * i)) & 0xFFFF),
                };
                MemV::Text(Value::String(format!("f16x2:{},{}", half(0), half(1))))
            } else if let Some(f) = nan_at(0, 8 * bytes as u32) {
                MemV::Text(Value::String(format!("{}:nan", f.name())))
            } else if !fields.is_empty() {
                MemV::Text(Value::String(format!("{}:any", ty())))
            } else if before != after {
                MemV::Exact(after)
            } else {
                continue;
            };
            out.push((m.space, addr, bytes, v));
        }
    }
    out
}

/// The expectation table's value of a register (`expectation`): its final elements, `any`
/// where they race, `{ bits, mask }` where the documents leave bits open.
pub(crate) fn reg_value(
    dialect: Dialect,
    name: &str,
    reg: &atomcts_reference::state::Reg,
    opened: bool,
    racy: bool,
    racy_regs: &BTreeSet<(String, u32)>,
    open_bits: &dyn Fn(&Loc) -> u64,
) -> Value {
    let vals: Vec<Value> = reg
        .elems
        .iter()
        .enumerate()
        .map(|(i, v)| {
            if racy && racy_regs.iter().any(|(n, k)| n == name && *k == i as u32) {
                return Value::String("any".into());
            }
            // Open bits of this element (no location made unless some are open).
            let any = if opened {
                open_bits(&Loc::Reg {
                    name: name.to_string(),
                    idx: i as u32,
                })
            } else {
                0
            };
            let v = if reg.ty.kind == Kind::Bool {
                *v & 1
            } else {
                *v
            };
            if any != 0 {
                let mut m = Table::new();
                m.insert("bits".into(), Value::String(format!("{v:#x}")));
                m.insert(
                    "mask".into(),
                    Value::String(format!("{:#x}", reg.ty.mask() & !any)),
                );
                Value::Table(m)
            } else if reg.ty.kind == Kind::Bool {
                Value::Boolean(v != 0)
            } else {
                int(v)
            }
        })
        .collect();
    match dialect {
        Dialect::Sass => Value::Array(vals),
        Dialect::Visa => {
            let mut tb = Table::new();
            tb.insert(reg.ty.visa_name().into(), Value::Array(vals));
            Value::Table(tb)
        }
        Dialect::Msl => {
            let mut tb = Table::new();
            tb.insert(msl_type_name(reg.ty).into(), Value::Array(vals));
            Value::Table(tb)
        }
    }
}
