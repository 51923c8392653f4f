//! What a case's result says about the case: its labels (`op_label`, `case_label`), the
//! result records of a case ([`complete`]) and its reproduce line ([`repro_line`]).

use crate::corpus::case::{Case, Item};
use crate::run::results::{CaseResult, FindingOut, Options, Status};
use atomcts_reference::Outcome;
use atomcts_reference::program::Dialect;
use atomcts_reference::visa::dword_atomic::Op;
use atomcts_reference::visa::intel;

/// A short op label from the instruction text.
pub fn op_label(dialect: Dialect, asm: &str) -> String {
    let asm = asm.trim();
    match dialect {
        Dialect::Sass => {
            let body = asm
                .split_whitespace()
                .find(|t| t.starts_with("ATOM"))
                .unwrap_or("ATOM");
            match body.split('.').filter(|p| *p != "E").nth(1) {
                Some(op) => format!("ATOM.{op}"),
                None => "ATOM".into(),
            }
        }
        Dialect::Visa => {
            // Intel's concrete form (FORMAT.md X2, X3) is labelled with the documents' names.
            let intel = |t: &str| {
                let (base, rest) = t.split_once('.').unwrap_or((t, ""));
                // Only these two are labelled so: other words need not look up an op.
                if base != intel::DWORD_ATOMIC && base != intel::SCATTER4 {
                    return None;
                }
                let (op, tail) = rest.split_once('.').map_or((rest, ""), |(o, r)| (o, r));
                let op = Op::ALL
                    .iter()
                    .find(|&&o| intel::op_name(o) == Some(op))
                    .map_or(op, |o| o.name());
                let tail = if tail.is_empty() {
                    String::new()
                } else {
                    format!(".{tail}")
                };
                match base {
                    intel::DWORD_ATOMIC => Some(format!("DWORD_ATOMIC.{op}{tail}")),
                    intel::SCATTER4 => Some(format!("SVM_SCATTER4_SCALED.{rest}")),
                    _ => None,
                }
            };
            let written = asm.split_whitespace().find_map(intel);
            let body = written.as_deref().unwrap_or_else(|| {
                asm.split_whitespace()
                    .find(|t| t.contains("DWORD_ATOMIC") || t.contains("SVM_"))
                    .unwrap_or("?")
            });
            match body.split_once('.') {
                Some(("DWORD_ATOMIC", rest)) => {
                    let op = rest.split('.').next().unwrap_or("").to_lowercase();
                    let w16 = if rest.contains(".16") { ".16" } else { "" };
                    format!("DWORD_ATOMIC.{op}{w16}")
                }
                Some((m, _)) => m.to_string(),
                None => body.to_string(),
            }
        }
        Dialect::Msl => {
            let call = asm.split_once('=').map_or(asm, |(_, r)| r).trim();
            call.split('(').next().unwrap_or("?").trim().to_string()
        }
    }
}

/// The label of a case that expects its instruction to be rejected: `illegal form: <reason>`
/// (the case format's `invalid = "<reason>"`), so that the summaries and the conformance matrix
/// group illegal forms per dialect and reason instead of naming them after their text (`%%
/// atomic !!` is no operation).
pub fn rejection_label(item: Item<'_>) -> Option<String> {
    // A generated case's expectation is a rejection exactly where its reference's outcome is
    // (`generated_outcomes_say_what_their_expectations_say`): that expectation need not be
    // built for the label.
    if let Some(g) = item.generated() {
        return match &g.reference().outcome {
            Outcome::Invalid(rej) => Some(format!("illegal form: {}", rej.reason.code())),
            _ => None,
        };
    }
    let (entries, _) = item.case().expect.as_ref()?;
    let (_, reason, _) = entries.iter().find(|(k, _, _)| k == "invalid")?;
    Some(format!("illegal form: {}", reason.as_str()?))
}

/// The op label of a case: [`rejection_label`] for a case that expects a rejection, else
/// `concurrent:` and the labels of its instructions for a concurrent case, else [`op_label`]
/// of its instruction.
pub fn case_label(item: Item<'_>) -> String {
    let case = item.case();
    if let Some(label) = rejection_label(item) {
        label
    } else if case.is_concurrent() {
        let ops: Vec<String> = case
            .concurrent
            .iter()
            .map(|i| op_label(case.dialect, &i.asm))
            .collect();
        format!("concurrent:{}", ops.join("+"))
    } else {
        op_label(case.dialect, &case.asm)
    }
}

pub(crate) fn error_result(item: Item<'_>, opts: &Options, message: String) -> CaseResult {
    let mut r = base_result(item, opts);
    r.status = Status::Error;
    r.findings.push(FindingOut {
        location: "case".into(),
        expected: String::new(),
        observed: String::new(),
        note: message,
    });
    r
}

/// A case's result record without the fields only a kept or written result needs (its
/// instruction, position, citation and reproduce line: see [`complete`]); `id`, `dialect` and
/// `op` are there, which a counted result needs (issue 9).
pub(crate) fn base_result(item: Item<'_>, _opts: &Options) -> CaseResult {
    let case = item.case();
    CaseResult {
        id: case.id.clone(),
        dialect: case.dialect.name().into(),
        op: case_label(item),
        asm: String::new(),
        at: String::new(),
        cite: String::new(),
        status: Status::Pass,
        findings: vec![],
        probe: None,
        knob: case.probe.clone(),
        repro: String::new(),
        program: None,
        runs: None,
        flaky: false,
    }
}

/// Fills in the fields of `case`'s result that [`crate::run::run_cases_lean`] leaves empty: the
/// instruction, the position, the citation and the reproduce line (a no-op on a complete one).
pub fn complete(r: &mut CaseResult, case: &Case, opts: &Options) {
    if r.repro.is_empty() {
        r.asm = case.asm.clone();
        r.at = case.pos.to_string();
        r.cite = case.cite.clone();
        r.repro = repro_line(case, opts);
    }
}

pub(crate) fn not_applicable(mut r: CaseResult, location: &str, why: String) -> CaseResult {
    r.status = Status::NotApplicable;
    r.findings.push(FindingOut {
        location: location.into(),
        expected: String::new(),
        observed: String::new(),
        note: why,
    });
    r
}

/// Whether every character of `s` is safe in a shell word unquoted.
pub(crate) fn shell_safe(s: &str) -> bool {
    s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "_./:=+@%,-".contains(c))
}

/// A string as one shell word: as is when it holds only safe characters, else single-quoted.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty() && shell_safe(s) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The command that reruns exactly this case with the same settings (issue 7, D15): the
/// source (`--cases <path>`, or the generator's seed and count for a generated case), the
/// exact id, the profile, and `opts.adapter_arg` (the adapter, knob overrides, timeout and race
/// budget, already quoted), every word shell-quoted.
pub fn repro_line(case: &Case, opts: &Options) -> String {
    let generated = case
        .id
        .split_once("::gen_")
        .filter(|(file, _)| file.starts_with("generated/seed"))
        .and_then(|(_, rest)| rest.split_once('_'))
        .and_then(|(seed, k)| Some((seed.parse::<u64>().ok()?, k.parse::<u64>().ok()?)));
    // One string written in place (issue 9: this runs for every case).
    use std::fmt::Write as _;
    let mut s = String::with_capacity(160 + opts.adapter_arg.len());
    s.push_str("atomcts run ");
    let _ = match generated {
        Some((seed, k)) => write!(s, "--generated-only --generated {} --seed {seed}", k + 1),
        None => write!(s, "--cases {}", shell_quote(&opts.cases_arg)),
    };
    s.push_str(" --filter ");
    if shell_safe(&case.id) {
        s.push_str("id:");
        s.push_str(&case.id);
    } else {
        s.push_str(&shell_quote(&format!("id:{}", case.id)));
    }
    let profile = opts.profile.name.split('+').next().unwrap_or("default");
    s.push_str(" --profile ");
    s.push_str(&shell_quote(profile));
    s.push_str(&opts.adapter_arg);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intel_lines_are_labelled_with_the_documents_names() {
        let l = |asm: &str| op_label(Dialect::Visa, asm);
        assert_eq!(
            l("(P1) dword_atomic.minsint.16 (M1, 4) %slm V0010.0 V0011.0 %null.0 V0013.0"),
            "DWORD_ATOMIC.imin.16"
        );
        assert_eq!(
            l("dword_atomic.maxsint (M1, 4) %slm V10.0 V11.0 V0.0 V13.0"),
            "DWORD_ATOMIC.imax"
        );
        assert_eq!(
            l("dword_atomic.add (4) %scratch V10.0 V11.0 V0.0 V13.0"),
            "DWORD_ATOMIC.add"
        );
        assert_eq!(
            l("svm_scatter4scaled.RB (M1, 16) V0020(0,0)<0;1,0> V0021.0 V0022.0"),
            "SVM_SCATTER4_SCALED"
        );
        assert_eq!(
            l("DWORD_ATOMIC.IMIN (1) T0 V10 V11 V0 V13"),
            "DWORD_ATOMIC.imin"
        );
    }
}
