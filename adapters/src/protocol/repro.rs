//! Standalone reproducers of a semantic-level shim's cases (issue 30, point 5; PROTOCOL.md
//! "Standalone reproducers", capability [`REPRO`]): the runner sends the last case again as a
//! `repro` request, the shim answers a Python body in its implementation's own API that only
//! observes (the memory bytes of each range and each access's returned value, in the protocol's
//! terms), and atomcts wraps it in its own script ([`crate::repro::shim`]): the header, the
//! expected values from the reference, and the judging. Any answer other than a well-formed body
//! for this case (garbage, a crash, a stall, a body too large or for another case) refuses the
//! case in one line; nothing is written then. A concurrent case (PROTOCOL.md, "Concurrent
//! cases") is sent again with the fields of its `run_concurrent` request ([`LastConcurrent`]);
//! atomcts judges its body's observation as the OpenCL and Vulkan concurrent scripts are judged
//! ([`crate::repro::concurrent_checks`]).

use super::{SubprocessAdapter, quote};
use crate::concurrent::{ConcurrentInstr, ConcurrentRequest};
use crate::plan::{ConcurrentPlan, Plan};
use crate::repro::shim::Body;
use crate::{Adapter as _, Level, Request};
use atomcts_reference::Profile;
use atomcts_reference::concurrent::CasLoop;
use atomcts_reference::ir::Lowered;
use atomcts_reference::program::Dialect;
use atomcts_reference::state::State;
use serde::Deserialize;
use std::collections::BTreeMap;

/// The capability a shim announces when it answers `repro` requests.
pub const REPRO: &str = "repro";

/// The largest body a shim may answer (bytes of Python source); a larger one refuses the case.
pub const MAX_REPRO_BODY: usize = 1 << 20;

/// The most modules and environment variables a body may name.
const MAX_NAMES: usize = 32;

/// The last case a semantic-level shim answered, kept while capturing.
pub(crate) enum Last {
    /// A single-instruction case.
    Single(Box<LastCase>),
    /// A concurrent case.
    Concurrent(LastConcurrent),
}

/// A concurrent case a shim answered: its `run_concurrent` request, made a `repro` one, and
/// what atomcts judges it from (judged only when its script is written, [`LastConcurrent::judge`]).
pub(crate) struct LastConcurrent {
    id: String,
    request: serde_json::Value,
    dialect: Dialect,
    profile: Profile,
    /// Each instruction's text, state, iterations and compare-and-swap loop.
    instrs: Vec<(String, State, u32, Option<CasLoop>)>,
    lowered: Vec<Lowered>,
    /// Whether the shim's answer reported the iterations each work-item executed.
    executed: bool,
}

/// atomcts's judging of a concurrent case: its plan (the layout of the script's buffers), its
/// memory before the launch, and the checks of [`crate::repro::concurrent_checks`].
struct Judged {
    cp: ConcurrentPlan,
    initial: State,
    checks: crate::repro::ConcurrentChecks,
}

impl LastConcurrent {
    /// Keeps `request` (the `run_concurrent` line sent for `r`, whose instructions the
    /// reference lowered to `lowered`); `executed`: whether the shim's answer reported the
    /// iterations each work-item executed (then the script judges them too).
    pub(crate) fn of(
        r: &ConcurrentRequest<'_>,
        lowered: &[Lowered],
        mut request: serde_json::Value,
        executed: bool,
    ) -> LastConcurrent {
        request["type"] = "repro".into();
        LastConcurrent {
            id: r.id.to_string(),
            request,
            dialect: r.dialect,
            profile: r.profile.clone(),
            instrs: r
                .instrs
                .iter()
                .map(|i| (i.asm.to_string(), i.state.clone(), i.iterations, i.cas_loop))
                .collect(),
            lowered: lowered.to_vec(),
            executed,
        }
    }

    /// The checks of the case: the reference's serial run gives the final memory where the
    /// order does not matter; the rest as the OpenCL back end's concurrent scripts
    /// ([`crate::repro::concurrent_checks`]); `Err` with why it is not judged standalone.
    fn judge(&self, adapter: &str) -> Result<Judged, String> {
        let instrs: Vec<ConcurrentInstr<'_>> = self
            .instrs
            .iter()
            .map(|(asm, state, iterations, cas_loop)| ConcurrentInstr {
                asm,
                state,
                iterations: *iterations,
                cas_loop: *cas_loop,
            })
            .collect();
        let r = ConcurrentRequest {
            id: &self.id,
            dialect: self.dialect,
            instrs: &instrs,
            profile: &self.profile,
        };
        let cp = ConcurrentPlan::for_request(&r, &self.lowered).map_err(|e| e.0)?;
        let serial = crate::concurrent::serial(adapter, &r, &atomcts_reference::exec::execute)
            .map_err(|e| e.to_string())?;
        let initial = r.instrs.first().ok_or("no instructions")?.state.clone();
        let final_state = serial.states.first().ok_or("no serial final state")?;
        let checks = crate::repro::concurrent_checks(
            &cp,
            &initial,
            final_state,
            0,
            self.executed.then_some((3, 0)),
            Some(crate::repro::Rets {
                ret: (1, 8),
                ok: (2, 4),
            }),
        )?;
        Ok(Judged {
            cp,
            initial,
            checks,
        })
    }
}

/// What a semantic-level shim was asked, and what it answered, for the last case.
pub(crate) struct LastCase {
    id: String,
    dialect: Dialect,
    asm: String,
    state: State,
    profile: Profile,
    lowered: Lowered,
    /// The final state its `accesses` answer gave.
    seen: State,
}

impl LastCase {
    pub(crate) fn of(r: &Request<'_>, lowered: Lowered, seen: State) -> LastCase {
        LastCase {
            id: r.id.to_string(),
            dialect: r.dialect,
            asm: r.asm.to_string(),
            state: r.state.clone(),
            profile: r.profile.clone(),
            lowered,
            seen,
        }
    }

    fn request(&self) -> Request<'_> {
        Request {
            id: &self.id,
            dialect: self.dialect,
            asm: &self.asm,
            state: &self.state,
            profile: &self.profile,
            lowered: Some(&self.lowered),
        }
    }
}

/// A `repro` answer, read strictly: wrong types and keys given twice are malformed.
#[derive(Deserialize)]
struct ReproIn {
    id: String,
    outcome: String,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    why: Option<String>,
    #[serde(default)]
    modules: Option<Vec<String>>,
    #[serde(default)]
    env: Option<BTreeMap<String, String>>,
}

impl SubprocessAdapter {
    /// The reproducer of the last case ([`crate::Adapter::reproducer`]), or why there is none.
    pub(super) fn write_reproducer(
        &mut self,
        about: &crate::repro::About,
    ) -> Result<String, String> {
        if self.level != Level::Semantic {
            return Err(format!(
                "adapter {} is a text-level shim: reproducers are written for semantic-level shims (protocol version 2) only",
                self.name
            ));
        }
        if !self.supports(REPRO) {
            return Err(format!(
                "the shim does not announce the `{REPRO}` capability (adapters/PROTOCOL.md, \"Standalone reproducers\"): it writes no reproducer body"
            ));
        }
        let last = match self.last.take() {
            Some(Last::Single(l)) if l.id == about.id => *l,
            Some(Last::Concurrent(c)) if c.id == about.id => {
                return self.write_concurrent_reproducer(about, c);
            }
            _ => return Err("the case ran nothing on the shim (not run)".into()),
        };
        let plan = Plan::new(&last.lowered, &last.state).map_err(|e| e.0)?;
        let fail = |e: crate::AdapterError| format!("the shim gave no reproducer body: {e}");
        self.ensure_running().map_err(fail)?;
        let mut line = Vec::new();
        self.message(&last.request(), &mut line, "repro")
            .map_err(fail)?;
        let body = self.ask_body(&last.id, line)?;
        let observed = plan.layout().bytes(&last.seen, plan.space);
        let (checks, unjudged) = crate::repro::single_checks(
            &plan,
            &last.lowered,
            &last.state,
            &observed,
            (0, 1, 8),
            crate::repro::JUDGE_BUDGET,
        )?;
        let mut about = about.clone();
        about.env = body.env.clone();
        Ok(crate::repro::shim::script(
            &about,
            &plan,
            &last.state,
            &body,
            checks,
            unjudged,
        ))
    }

    /// The reproducer of a concurrent case: its `repro` request (the fields of its
    /// `run_concurrent`), the shim's body, atomcts's checks.
    fn write_concurrent_reproducer(
        &mut self,
        about: &crate::repro::About,
        last: LastConcurrent,
    ) -> Result<String, String> {
        let j = last
            .judge(&self.name)
            .map_err(|why| format!("the concurrent case is not judged standalone: {why}"))?;
        let mut line = last.request.to_string().into_bytes();
        line.push(b'\n');
        let body = self.ask_body(&last.id, line)?;
        let mut about = about.clone();
        about.env = body.env.clone();
        let (checks, unjudged, orders) = j.checks;
        Ok(crate::repro::shim::concurrent_script(
            &about,
            &crate::repro::shim::Launch {
                cp: &j.cp,
                initial: &j.initial,
                executed: last.executed,
            },
            &body,
            checks,
            unjudged,
            orders,
        ))
    }

    /// Sends the `repro` request `line` of the case `id` and reads its answer; any failure is
    /// one line, and a shim that answered garbage, crashed or stalled is stopped (restarted
    /// for the next case).
    fn ask_body(&mut self, id: &str, line: Vec<u8>) -> Result<Body, String> {
        let fail = |e: crate::AdapterError| format!("the shim gave no reproducer body: {e}");
        self.ensure_running().map_err(fail)?;
        let timeout = self.timeout;
        let bytes = self.exchange_line(line, timeout, true).map_err(fail)?;
        self.retry = None;
        self.answer_start = None;
        let refuse = |what: String| format!("the shim's `repro` answer {what}");
        let a = match serde_json::from_slice::<ReproIn>(&bytes) {
            Ok(a) => a,
            Err(e) => {
                // Garbage: the shim is out of step with the protocol; a fresh one next case.
                self.running = None;
                return Err(refuse(format!(
                    "is malformed ({e}): `{}`",
                    quote(&bytes, 200)
                )));
            }
        };
        if a.id != id {
            self.running = None;
            return Err(refuse(format!(
                "is for another case id (`{}`)",
                crate::escape_controls(&super::shorten(&a.id, 100))
            )));
        }
        id.clone_into(&mut self.answered);
        match a.outcome.as_str() {
            "repro" => {}
            "not_applicable" | "unsupported" | "error" => {
                return Err(format!(
                    "the shim writes no reproducer body for it ({}: {})",
                    a.outcome,
                    crate::escape_controls(&super::shorten(a.why.as_deref().unwrap_or(""), 300))
                ));
            }
            other => {
                return Err(refuse(format!(
                    "has an unknown outcome `{}`",
                    crate::escape_controls(&super::shorten(other, 40))
                )));
            }
        }
        let Some(source) = a.body else {
            return Err(refuse("has no `body`".into()));
        };
        if source.len() > MAX_REPRO_BODY {
            return Err(refuse(format!(
                "has a body of {} bytes (at most {MAX_REPRO_BODY}, MAX_REPRO_BODY)",
                source.len()
            )));
        }
        let modules = a.modules.unwrap_or_default();
        let env: Vec<(String, String)> = a.env.unwrap_or_default().into_iter().collect();
        if modules.len() > MAX_NAMES || env.len() > MAX_NAMES {
            return Err(refuse(format!(
                "names more than {MAX_NAMES} modules or environment variables"
            )));
        }
        if let Some(m) = modules.iter().find(|m| !is_module(m)) {
            return Err(refuse(format!(
                "names a module that is no Python module name: `{}`",
                crate::escape_controls(&super::shorten(m, 60))
            )));
        }
        if let Some((k, _)) = env.iter().find(|(k, v)| !is_env_name(k) || v.len() > 1000) {
            return Err(refuse(format!(
                "sets an environment variable that is no plain name, or too long a value: `{}`",
                crate::escape_controls(&super::shorten(k, 60))
            )));
        }
        crate::repro::shim::check_body(&source).map_err(refuse)?;
        Ok(Body {
            source,
            modules,
            env,
        })
    }
}

/// A dotted Python module name (`numba`, `triton.language`).
fn is_module(m: &str) -> bool {
    !m.is_empty()
        && m.len() <= 100
        && m.split('.').all(|p| {
            p.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

/// An environment variable name: upper-case letters, digits and `_`, not starting with a digit.
fn is_env_name(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 100
        && !k.starts_with(|c: char| c.is_ascii_digit())
        && k.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}
