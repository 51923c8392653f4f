//! Illegal forms (rejections) and model errors: two channels that are never mixed with
//! spec-defined outcomes ([`crate::outcome`]).

use std::fmt;

/// Declares [`Reason`] once: variant, the stable snake_case code used in case files
/// (`invalid = "<code>"`), and a one-line meaning.
macro_rules! reasons {
    ($( $(#[$doc:meta])* $variant:ident = $code:literal ),* $(,)?) => {
        /// Why an instruction is rejected before it runs (an illegal form). The code is the
        /// stable name used by `invalid = "<code>"` in the case format.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum Reason {
            $( $(#[$doc])* $variant, )*
        }

        impl Reason {
            /// Every reason, in declaration order.
            pub const ALL: &'static [Reason] = &[ $( Reason::$variant, )* ];

            /// The stable snake_case code.
            pub fn code(self) -> &'static str {
                match self { $( Reason::$variant => $code, )* }
            }

            /// Looks a reason up by its code.
            pub fn from_code(code: &str) -> Option<Reason> {
                match code { $( $code => Some(Reason::$variant), )* _ => None }
            }
        }
    };
}

reasons! {
    /// The text does not follow the document's syntax line.
    Syntax = "syntax",
    /// The mnemonic or operation name is not one the document defines.
    UnknownOperation = "unknown_operation",
    /// The operation is defined, but not for this type (the op × type table has no such row).
    UnsupportedType = "unsupported_type",
    /// A size the document names but declares illegal (SASS `.128`).
    IllegalSize = "illegal_size",
    /// SASS ATOM.CAS register pairing: Rb even (CAS.32) or R4n (CAS.64), Rc = Rb+1/Rb+2 or RZ.
    CasRegisterPairing = "cas_register_pairing",
    /// A 64-bit register operand that is not an even register (`even-odd registers for 64-bit ops`).
    RegisterPairAlignment = "register_pair_alignment",
    /// A register or predicate name outside the register file.
    InvalidRegister = "invalid_register",
    /// An immediate outside its field (ImmS20, ImmU20, ImmS32).
    ImmediateOutOfRange = "immediate_out_of_range",
    /// An immediate offset on the sparse-predicate (`Ps`) forms, which do not allow one.
    ImmediateNotAllowed = "immediate_not_allowed",
    /// An execution size the document does not allow for this instruction.
    InvalidExecSize = "invalid_exec_size",
    /// An execution-mask control (M1..M8, `_NM`) that is not allowed with this exec size.
    InvalidMask = "invalid_mask",
    /// A surface other than T0 (SLM) and T255 (stateless).
    InvalidSurface = "invalid_surface",
    /// An operand that must be V0 (the null variable) is not.
    OperandMustBeV0 = "operand_must_be_v0",
    /// An operand that the operation needs is V0 or missing.
    OperandRequired = "operand_required",
    /// An operand's type is not the one the document requires.
    OperandType = "operand_type",
    /// An operand has fewer elements than the instruction reads or writes.
    OperandSize = "operand_size",
    /// An operand names a variable, register or buffer that the state does not declare.
    UnknownOperand = "unknown_operand",
    /// SVM_SCATTER4_SCALED with no channel enabled ("0000" is not allowed).
    EmptyChannelMask = "empty_channel_mask",
    /// A memory order the document does not support.
    UnsupportedMemoryOrder = "unsupported_memory_order",
    /// An atomic type or address space the function does not support (MSL `atomic_float`
    /// outside device memory, for example).
    UnsupportedAddressSpace = "unsupported_address_space",
    /// A field encoding that the document reserves or leaves undefined.
    ReservedEncoding = "reserved_encoding",
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// An illegal form: the instruction is rejected before it runs.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason}: {detail}")]
pub struct Rejection {
    /// The stable reason code.
    pub reason: Reason,
    /// A sentence for people, naming the offending operand.
    pub detail: String,
    /// The byte column (0-based) in the instruction text, where the front end knows it.
    pub column: Option<usize>,
}

impl Rejection {
    /// A rejection with no position.
    pub fn new(reason: Reason, detail: impl Into<String>) -> Rejection {
        Rejection {
            reason,
            detail: detail.into(),
            column: None,
        }
    }

    /// A rejection at a byte column of the instruction text.
    pub fn at(reason: Reason, column: usize, detail: impl Into<String>) -> Rejection {
        Rejection {
            reason,
            detail: detail.into(),
            column: Some(column),
        }
    }
}

/// The model itself cannot answer: never a statement about the documents.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The document defines this, but the model does not implement it (yet).
    #[error("not implemented in the reference model: {0}")]
    NotImplemented(String),
    /// The input is outside what the model accepts (absurd sizes, lane counts, addresses).
    #[error("limit exceeded: {0}")]
    Limit(String),
    /// The state given to the model is inconsistent with the instruction in a way that is not
    /// an illegal form of the document (e.g. a 16-lane state for a 32-lane run).
    #[error("bad state: {0}")]
    BadState(String),
    /// A bug in the model: an invariant did not hold.
    #[error("internal error in the reference model at {file}:{line}: {what}")]
    Internal {
        /// Source file.
        file: &'static str,
        /// Source line.
        line: u32,
        /// What went wrong.
        what: String,
    },
}

/// Builds a [`ModelError::Internal`] at the current source position.
#[macro_export]
macro_rules! internal {
    ($($arg:tt)*) => {
        $crate::error::ModelError::Internal { file: file!(), line: line!(), what: format!($($arg)*) }
    };
}
