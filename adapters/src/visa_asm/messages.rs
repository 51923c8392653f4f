//! What `GenX_IR` said about a kernel, read: accepted (the `send` lines of the lowered code,
//! with IGA's decoding) or rejected (Intel's messages), Intel's messages mapped to atomcts's
//! rejection reasons ([`REASONS`]), and the check that an accepted kernel was lowered to the
//! message the case's instruction means ([`check_lowering`]).

use super::genx::Assembled;
use atomcts_reference::Reason;
use atomcts_reference::visa::Instruction;
use atomcts_reference::visa::dword_atomic::{Op, Surface};

/// What `GenX_IR` answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// It assembled the kernel without a message: the lowered `send` lines (the end-of-thread
    /// send left out).
    Accepted(Vec<String>),
    /// It printed these messages (syntax errors, the verifier's `Error Message:` lines, the
    /// finalizer's errors), or exited non-zero.
    Rejected(Vec<String>),
    /// It died of a signal (a crash: no answer).
    Crashed(String),
    /// It failed after spilling registers (`Spill memory used = N bytes`): the case's
    /// variables, all declared as registers, do not fit the platform's register file. The
    /// adapter's limit (it keeps the whole state in registers), not a verdict on the
    /// instruction.
    OutOfRegisters(String),
}

/// Lines of `GenX_IR`'s output that are no message about the kernel: its echo of the command
/// line (with the path it was started by), the verifier's pointers to `t.errors.txt` (whose messages are read from the file),
/// and, on MTL, IGA's failure to re-decode the finished binary for the `.asm` listing, which
/// this release prints for every kernel (docs/intel-lowering.md) after a successful compile.
fn is_noise(line: &str) -> bool {
    line.contains("GenX_IR t.visaasm ")
        || line.starts_with("Found a total of")
        || line.starts_with("Please check")
        || line == "t.errors.txt"
        || line == "for the exact error messages"
        || line == "[vISA Finalizer Messages]"
        || line == "vISA asm emission: failed to re-decode binary for asm output"
        || (line.starts_with("ERROR: PC[0x")
            && line.ends_with("invalid encoding mode for platform"))
}

/// Reads one run: accepted when it exited 0 with no message, else rejected with its
/// messages (the finalizer can print an error and still exit 0: issue 29).
pub fn classify(a: &Assembled) -> Answer {
    let Some(status) = a.status else {
        return Answer::Crashed(format!(
            "GenX_IR was killed by a signal: {}",
            last_lines(&a.output)
        ));
    };
    let mut messages: Vec<String> = a
        .output
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !is_noise(l))
        .map(str::to_string)
        .collect();
    if let Some(errors) = &a.errors {
        messages.extend(
            errors
                .lines()
                .filter_map(|l| l.split_once("Error Message:"))
                .map(|(_, m)| m.trim().to_string()),
        );
    }
    if status != 0
        && let Some(spill) = messages.iter().find(|m| m.starts_with("Spill memory used"))
    {
        return Answer::OutOfRegisters(spill.clone());
    }
    if status != 0 && messages.is_empty() {
        messages.push(format!("exit status {status} without a message"));
    }
    if !messages.is_empty() {
        return Answer::Rejected(messages);
    }
    Answer::Accepted(sends(a.asm.as_deref().unwrap_or("")))
}

fn last_lines(s: &str) -> String {
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(3)..].join(" / ")
}

/// The `send` lines of a `.asm` listing, trimmed, without the end-of-thread send and without
/// the trailing `// $<n>` id.
pub fn sends(asm: &str) -> Vec<String> {
    asm.lines()
        .map(str::trim)
        .filter(|l| {
            // Past the `(W)` and `(f0.0)` groups of a predicated or NoMask send.
            let mut op = *l;
            while let Some(rest) = op.strip_prefix('(') {
                op = rest.split_once(')').map_or("", |(_, r)| r).trim_start();
            }
            op.starts_with("send") && !l.contains("EOT")
        })
        .map(|l| match l.rfind("// $") {
            Some(cut) => l[..cut].trim_end().to_string(),
            None => l.to_string(),
        })
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

/// Intel's messages and the rejection reason each stands for, first match wins: a message
/// containing the pattern (case-sensitive) maps to the reason. Established from what
/// `GenX_IR` 1.0.12504.6 prints for the corpus's illegal forms (docs/visa-asm.md); a message
/// none of them matches is `unmapped: <message>`, which no case expects (a difference).
pub const REASONS: &[(&str, Reason)] = &[
    // The verifier (IsaVerification.cpp), t.errors.txt: `Raw Operand V33 has incorrect type d`,
    // `src1 in ISA_DWORD_ATOMIC inst must be V0 for non CMPXCHG operations`.
    ("has incorrect type", Reason::OperandType),
    ("must be V0", Reason::OperandMustBeV0),
    // The reader's semantic actions (CISA.y, CISA_IR_Builder): `near line 10: invalid
    // execution size`, `... invalid execution offset info` (the `M<n>` mask control),
    // `X99: undefined raw operand variable`, `X30: unbound identifier`.
    ("invalid execution size", Reason::InvalidExecSize),
    ("invalid execution offset info", Reason::InvalidMask),
    ("undefined raw operand variable", Reason::UnknownOperand),
    ("unbound identifier", Reason::UnknownOperand),
    // The finalizer, printed with exit status 0: `Invalid emask for SIMD8 inst`.
    ("Invalid emask", Reason::InvalidMask),
    // The grammar (CISA.y): the op name of `dword_atomic.<op>` and the channel mask of
    // `svm_scatter4scaled.<channels>` are tokens of their own; any other syntax error is one.
    ("expecting ATOMIC_SUB_OP", Reason::UnknownOperation),
    // The reader's action for a width suffix of `dword_atomic.<op>.<n>` other than `.16`
    // (`near line 10: only supports 16`, for `dword_atomic.add.32`): the mnemonic's form.
    ("only supports 16", Reason::Syntax),
    (
        "unexpected DOT, expecting SAMPLER_CHANNEL",
        Reason::EmptyChannelMask,
    ),
    ("syntax error", Reason::Syntax),
];

/// The reason code of Intel's rejection: the first message that maps ([`REASONS`]), else
/// `unmapped: <first message>`.
pub fn reason(messages: &[String]) -> String {
    for m in messages {
        if let Some((_, r)) = REASONS.iter().find(|(p, _)| m.contains(p)) {
            return r.code().to_string();
        }
    }
    format!(
        "unmapped: {}",
        messages.first().map_or("(no message)", String::as_str)
    )
}

/// IGA's words for a DWORD_ATOMIC op in the decoding of its message (what GenX_IR 1.0.12504.6
/// lowers each op to, on every platform: docs/intel-lowering-evidence.md); each is preceded by
/// a space in the decoding.
pub fn op_words(op: Op) -> &'static str {
    match op {
        Op::Add => "integer add",
        Op::Sub => "integer subtract",
        Op::Inc => "integer increment",
        Op::Dec => "integer decrement",
        Op::Min => "unsigned-integer min",
        Op::Max => "unsigned-integer max",
        Op::Xchg => "store",
        Op::Cmpxchg => "integer compare and swap",
        Op::And => "logical AND",
        Op::Or => "logical OR",
        Op::Xor => "logical XOR",
        Op::Imin => "signed-integer min",
        Op::Imax => "signed-integer max",
        Op::Predec => "predecrement",
        Op::Fmax => "float atomic max",
        Op::Fmin => "float atomic min",
        Op::Fcmpwr => "fp-compare and swap",
        Op::Fadd => "float atomic add",
        Op::Fsub => "float atomic subtract",
    }
}

/// The message descriptor of a send line: its last 8-digit hex number before the decoding.
fn descriptor(send: &str) -> Option<u32> {
    let code = send.split("//").next()?;
    code.split_whitespace()
        .filter_map(|w| w.strip_prefix("0x"))
        .filter(|h| h.len() == 8)
        .filter_map(|h| u32::from_str_radix(h, 16).ok())
        .next_back()
}

/// Whether the sends an accepted kernel was lowered to are the message `instr` means: for
/// DWORD_ATOMIC, the surface's binding-table index in the descriptor's low byte (`0xFE` SLM for
/// T0, `0xFF` stateless for T255) and, where IGA decodes the message (it prints `?` for the
/// `.16` messages of SKL and ICLLP), the op's words ([`op_words`]); for
/// SVM_SCATTER4_SCALED, an `a64 untyped surface write` of the enabled channels (`xyzw` for
/// RGBA). `Err` says what differs. This is what catches a wrong translation the assembler
/// accepts (a wrong op name or surface: the adapter's own tests plant them).
pub fn check_lowering(instr: &Instruction, sends: &[String]) -> Result<(), String> {
    if sends.is_empty() {
        return Err("the lowered code has no send".into());
    }
    for s in sends {
        let decoding = s.split_once("//").map_or("", |(_, d)| d);
        match instr {
            Instruction::DwordAtomic(d) => {
                let bti = match d.surface {
                    Surface::T0 => 0xFE,
                    Surface::T255 => 0xFF,
                };
                match descriptor(s) {
                    Some(desc) if desc & 0xFF == bti => {}
                    Some(desc) => {
                        return Err(format!(
                            "`{s}`: binding-table index {:#04x}, not {bti:#04x} ({})",
                            desc & 0xFF,
                            d.surface.name()
                        ));
                    }
                    None => return Err(format!("`{s}`: no message descriptor")),
                }
                let words = op_words(d.op);
                let undecoded = decoding.trim_end().ends_with('?');
                if !undecoded && !decoding.contains(&format!(" {words}")) {
                    return Err(format!(
                        "`{s}`: not the message of {} (`{words}`)",
                        d.op.name().to_uppercase()
                    ));
                }
            }
            Instruction::Scatter4(sc) => {
                let letters: String = sc
                    .channels
                    .to_string()
                    .chars()
                    .map(|c| match c.to_ascii_uppercase() {
                        'R' => 'x',
                        'G' => 'y',
                        'B' => 'z',
                        _ => 'w',
                    })
                    .collect();
                let want = format!("a64 untyped surface write with {letters}");
                if !decoding.trim_end().ends_with(&want) {
                    return Err(format!("`{s}`: not `{want}`"));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(status: Option<i32>, output: &str, errors: Option<&str>, asm: &str) -> Assembled {
        Assembled {
            status,
            output: output.into(),
            errors: errors.map(str::to_string),
            asm: Some(asm.into()),
        }
    }

    /// SKL's lowering of `dword_atomic.add (M1, 8) %slm ...` and its end-of-thread send
    /// (GenX_IR 1.0.12504.6, our kernel).
    const SKL_ADD_SLM: &str = "\
        sends (8|M0)             r3:ud    r1      r2      0x4C            0x0210B7FE           // wr:1+1, rd:1; hdc.dc1; untyped atomic int32 integer add // $1
(W)     send (8|M0)              null     r127    0x27            0x02000010           {EOT} // wr:1+0, rd:0; spawner; end of thread // $2
";

    #[test]
    fn a_clean_run_is_accepted_with_its_sends() {
        let a = run(
            Some(0),
            "/usr/bin/GenX_IR t.visaasm -platform SKL -output\n",
            None,
            SKL_ADD_SLM,
        );
        let Answer::Accepted(sends) = classify(&a) else {
            panic!("{:?}", classify(&a))
        };
        assert_eq!(
            sends,
            [
                "sends (8|M0) r3:ud r1 r2 0x4C 0x0210B7FE // wr:1+1, rd:1; hdc.dc1; untyped atomic int32 integer add"
            ]
        );
    }

    #[test]
    fn messages_reject_even_with_exit_status_0() {
        let a = run(
            Some(0),
            "GenX_IR t.visaasm -platform SKL -output\nInvalid emask for SIMD8 inst\n",
            None,
            SKL_ADD_SLM,
        );
        assert_eq!(
            classify(&a),
            Answer::Rejected(vec!["Invalid emask for SIMD8 inst".into()])
        );
        let syntax = run(
            Some(1),
            "near line 11: syntax error, unexpected IDENT, expecting LPAREN\n",
            None,
            "",
        );
        assert_eq!(
            reason(match &classify(&syntax) {
                Answer::Rejected(m) => m,
                o => panic!("{o:?}"),
            }),
            "syntax"
        );
        assert_eq!(
            reason(&[
                "./visa/BinaryEncoding.cpp:2253 src1 for sends/sendsc must be GRF-aligned".into()
            ]),
            "unmapped: ./visa/BinaryEncoding.cpp:2253 src1 for sends/sendsc must be GRF-aligned"
        );
        assert_eq!(
            reason(&["near line 10: syntax error, unexpected DOT, expecting ATOMIC_SUB_OP".into()]),
            "unknown_operation"
        );
        let spill = run(
            Some(1),
            "[vISA Finalizer Messages]\nSpill memory used = 16384 bytes for kernel t\n",
            None,
            "",
        );
        assert!(matches!(classify(&spill), Answer::OutOfRegisters(_)));
        let verifier = run(
            Some(1),
            "Found a total of 1 errors in vISA input.\nPlease check\n\tt.errors.txt\nfor the exact error messages\n",
            Some(
                "Error in CISA routine with name: t\n                  Error Message: Raw Operand V32 has incorrect type d\n",
            ),
            "",
        );
        let Answer::Rejected(ms) = classify(&verifier) else {
            panic!()
        };
        assert_eq!(ms, ["Raw Operand V32 has incorrect type d"]);
        assert_eq!(reason(&ms), "operand_type");
        assert!(matches!(
            classify(&run(None, "", None, "")),
            Answer::Crashed(_)
        ));
        assert_eq!(
            classify(&run(Some(3), "", None, "")),
            Answer::Rejected(vec!["exit status 3 without a message".into()])
        );
    }

    #[test]
    fn mtl_redecode_noise_is_no_message() {
        let out = "GenX_IR t.visaasm -platform MTL -output\nvISA asm emission: failed to re-decode binary for asm output\nERROR: PC[0x0] invalid encoding mode for platform\n";
        assert!(matches!(
            classify(&run(Some(0), out, None, SKL_ADD_SLM)),
            Answer::Accepted(_)
        ));
    }

    fn da(asm: &str) -> Instruction {
        atomcts_reference::visa::parse(asm).unwrap()
    }

    #[test]
    fn the_lowering_must_be_the_instructions_message() {
        let sends = super::sends(SKL_ADD_SLM);
        assert_eq!(
            check_lowering(&da("DWORD_ATOMIC.add (8) T0 V1 V2 V0 V3"), &sends),
            Ok(())
        );
        let sub = check_lowering(&da("DWORD_ATOMIC.sub (8) T0 V1 V2 V0 V3"), &sends);
        assert!(sub.unwrap_err().contains("SUB"));
        let stateless = check_lowering(&da("DWORD_ATOMIC.add (8) T255 V1 V2 V0 V3"), &sends);
        assert!(stateless.unwrap_err().contains("0xfe, not 0xff"));
        let predicated = super::sends(
            "(f0.0)  sends (16|M0)            r5:w     r1      r3      0x8C            0x0420A7FE           // wr:2+2, rd:2; hdc.dc1; untyped atomic int32 integer add // $1",
        );
        assert_eq!(predicated.len(), 1);
        // " signed-integer min" is not found in "unsigned-integer min".
        let min = super::sends(
            "send (8|M0) r3 r1 r2 0x40 0x0210BDFE // wr:1+1, rd:1; untyped atomic int32 unsigned-integer min // $1",
        );
        assert_eq!(
            check_lowering(&da("DWORD_ATOMIC.min (8) T0 V1 V2 V0 V3"), &min),
            Ok(())
        );
        assert!(check_lowering(&da("DWORD_ATOMIC.imin (8) T0 V1 V2 V0 V3"), &min).is_err());
        assert!(check_lowering(&da("DWORD_ATOMIC.add (8) T0 V1 V2 V0 V3"), &[]).is_err());
        let scatter = super::sends(
            "sends (8|M0) null:ud r16 r2 0x8C 0x04066CFF // wr:2+2, rd:0; hdc.dc1; a64 untyped surface write with xy // $3",
        );
        assert_eq!(
            check_lowering(&da("SVM_SCATTER4_SCALED.RG (8) V20 V21 V22"), &scatter),
            Ok(())
        );
        assert!(check_lowering(&da("SVM_SCATTER4_SCALED.RB (8) V20 V21 V22"), &scatter).is_err());
    }
}
