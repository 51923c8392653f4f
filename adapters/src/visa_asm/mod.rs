//! `visa-asm:<platform>`: Intel's vISA assembler `GenX_IR` (IGC 1.0.12504.6, Debian
//! `libigc-tools`) as a text-level implementation under test (issue 29, point 2;
//! docs/visa-asm.md).
//!
//! For each single-instruction vISA case it writes the instruction in Intel's concrete text
//! inside a minimal kernel ([`kernel`]), runs `GenX_IR t.visaasm -platform <P> -output`
//! ([`genx`]) and reads what it said ([`messages`]):
//!
//! - accepted: [`Observation::Accepted`], with the lowered `send` line(s) and IGA's decoding
//!   as detail, and whether that message is the one the case's instruction means (op,
//!   surface, channels: [`messages::check_lowering`]; another message fails the case, never
//!   passes it);
//! - rejected: [`Observation::Invalid`] with the reason Intel's message maps to
//!   ([`messages::REASONS`]), else `unmapped: <message>`.
//!
//! The runner judges acceptance only: a case that expects a rejection fails when Intel
//! accepts, and is judged on its reason when Intel rejects; on a case the documents call
//! valid a rejection fails, and the values are not applicable ("assembler only: no
//! execution"). Not applicable, with the reason: concurrent cases, other dialects, and
//! instructions Intel's text cannot write ([`kernel::NoForm`]).

pub mod genx;
pub mod kernel;
pub mod messages;

use crate::{Adapter, AdapterError, AdapterErrorKind, Observation, Request};
use atomcts_reference::program::Dialect;
use kernel::Plant;
use messages::Answer;
use std::path::PathBuf;
use std::time::Duration;

/// The platforms `GenX_IR -platform` takes in this release.
pub const PLATFORMS: &[&str] = &["SKL", "ICLLP", "TGLLP", "DG2", "MTL", "PVC"];

/// The platforms this project lists as implementations (`atomcts list adapters`, the
/// conformance report) and gates in CI, each with its baseline
/// `adapters/baselines/visa-asm-<platform>.baseline`: one per GEN generation the seed documents
/// mark (Gen9, Gen12, Xe-HPG). The others open all the same.
pub const GATED: &[&str] = &["SKL", "TGLLP", "DG2"];

/// The profile the assembler claims: `default`, every knob at the documents' default. It
/// executes nothing, so only the knobs that decide whether a form is legal matter
/// (`visa.exec_size_32`, `visa.fadd_fsub`, `visa.channel_order`), and there it is judged
/// against the documents; where Intel's assembler takes another option the case's probe
/// says so.
pub const PROFILE: &str = "default";

/// The canonical spelling of a platform argument (case-insensitive), or why it is none.
pub fn platform(selector: &str) -> Result<&'static str, String> {
    PLATFORMS
        .iter()
        .copied()
        .find(|p| p.eq_ignore_ascii_case(selector))
        .ok_or_else(|| {
            format!(
                "`{selector}` is not a GenX_IR platform ({})",
                PLATFORMS.join(", ")
            )
        })
}

/// Plants a wrong translation (`wrong_op`, `wrong_surface`: [`Plant`]) for the tests that show
/// a wrong kernel never passes (runner/tests/visa_asm.rs); never set in normal runs.
pub const PLANT_VAR: &str = "ATOMCTS_VISA_ASM_PLANT";

/// Whether the adapter can run here: `GenX_IR` found.
pub fn availability() -> Result<(), String> {
    genx::locate().map(|_| ())
}

/// Intel's vISA assembler for one platform.
#[derive(Clone, Debug)]
pub struct VisaAsmAdapter {
    name: String,
    platform: &'static str,
    exe: PathBuf,
    timeout: Duration,
    plant: Plant,
    last: Option<String>,
}

impl VisaAsmAdapter {
    /// `visa-asm:<platform>`, with `GenX_IR` from [`genx::locate`]; each run waits at most
    /// `timeout`.
    pub fn open(selector: &str, timeout: Duration) -> Result<VisaAsmAdapter, AdapterError> {
        let name = format!("visa-asm:{selector}");
        let err = |kind| AdapterError {
            adapter: name.clone(),
            kind,
        };
        let platform = platform(selector).map_err(|e| err(AdapterErrorKind::Unavailable(e)))?;
        let exe = genx::locate().map_err(|e| err(AdapterErrorKind::Unavailable(e)))?;
        let plant = match std::env::var(PLANT_VAR).unwrap_or_default().as_str() {
            "" => Plant::None,
            "wrong_op" => Plant::WrongOp,
            "wrong_surface" => Plant::WrongSurface,
            other => {
                return Err(err(AdapterErrorKind::Unavailable(format!(
                    "{PLANT_VAR}=`{other}` (expected wrong_op or wrong_surface)"
                ))));
            }
        };
        Ok(VisaAsmAdapter {
            name: format!("visa-asm:{platform}"),
            platform,
            exe,
            timeout,
            plant,
            last: None,
        })
    }

    /// The same adapter with a deliberately wrong translation (tests only show with it that
    /// a wrong kernel never passes).
    pub fn with_plant(mut self, plant: Plant) -> VisaAsmAdapter {
        self.plant = plant;
        self
    }

    fn error(&self, kind: AdapterErrorKind) -> AdapterError {
        AdapterError {
            adapter: self.name.clone(),
            kind,
        }
    }
}

impl Adapter for VisaAsmAdapter {
    fn name(&self) -> &str {
        &self.name
    }

    /// The vISA capabilities: it reads every vISA form (`.16`, SVM_SCATTER4_SCALED); nothing
    /// else.
    fn supports(&self, capability: &str) -> bool {
        matches!(capability, "visa_16bit_atomics" | "visa_scatter4")
    }

    /// `GenX_IR -platform <P>`: no path (the report does not depend on where it is installed);
    /// this GenX_IR prints no version.
    fn describe(&self) -> Option<String> {
        Some(format!(
            "Intel's vISA assembler GenX_IR -platform {}",
            self.platform
        ))
    }

    fn claimed_profile(&self) -> Option<String> {
        Some(PROFILE.into())
    }

    fn last_program(&self) -> Option<String> {
        self.last.clone()
    }

    fn run(&mut self, r: &Request<'_>) -> Result<Observation, AdapterError> {
        self.last = None;
        if r.dialect != Dialect::Visa {
            return Err(self.error(AdapterErrorKind::NotApplicable(format!(
                "a {} case: Intel's vISA assembler reads vISA only",
                r.dialect.name()
            ))));
        }
        let k = kernel::build(r.asm, r.state, self.plant).map_err(|why| {
            self.error(AdapterErrorKind::NotApplicable(format!(
                "no form in Intel's vISA text: {}",
                why.0
            )))
        })?;
        self.last = Some(k.text.clone());
        let assembled =
            genx::assemble(&self.exe, &k.text, self.platform, self.timeout).map_err(|e| {
                self.error(match e {
                    genx::RunError::Timeout(t) => AdapterErrorKind::Timeout(t.as_millis() as u64),
                    genx::RunError::Io(m) => AdapterErrorKind::Unavailable(m),
                })
            })?;
        match messages::classify(&assembled) {
            Answer::Crashed(why) => Err(self.error(AdapterErrorKind::Crashed(why))),
            Answer::OutOfRegisters(why) => Err(self.error(AdapterErrorKind::NotApplicable(format!(
                "the case's variables do not fit {}'s registers (GenX_IR: {why}); the adapter declares the whole state as registers",
                self.platform
            )))),
            Answer::Rejected(ms) => Ok(Observation::Invalid {
                reason: messages::reason(&ms),
                column: None,
            }),
            Answer::Accepted(sends) => Ok(Observation::Accepted {
                lowered: format!("`{}` -> {}", k.line, sends.join(" | ")),
                differs: k
                    .instr
                    .as_ref()
                    .and_then(|i| messages::check_lowering(i, &sends).err()),
            }),
        }
    }
}
