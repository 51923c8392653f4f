//! Implementation-defined behaviour as data: every ambiguity of the documents that touches the
//! modelled ops is a named knob with options, each option citing its source, and named
//! [`Profile`]s pick one option per knob.
//!
//! A-numbers refer to the numbered ambiguities of the project's research notes
//! (`research/semantics.md` §3); N-numbers are ambiguities this project found in the seed
//! documents themselves, listed in `spec-cases/FORMAT.md` ("Ambiguities").

/// Static description of a knob, for listings and reports.
#[derive(Clone, Copy, Debug)]
pub struct KnobInfo {
    /// Stable id, `<area>.<name>`, as used in `probe = ...` and `where = { ... }`.
    pub id: &'static str,
    /// The ambiguity it models (`A1`..`A30`, `N1`..).
    pub ambiguity: &'static str,
    /// One line on what it decides.
    pub summary: &'static str,
    /// The options: name and source.
    pub options: &'static [OptionInfo],
    /// The option of the default profile.
    pub default: &'static str,
}

/// One option of a knob.
#[derive(Clone, Copy, Debug)]
pub struct OptionInfo {
    /// Stable option name.
    pub name: &'static str,
    /// Where the option comes from.
    pub cite: &'static str,
}

/// An unknown knob id or option name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KnobError {
    /// No knob has this id.
    #[error("unknown knob `{0}`")]
    UnknownKnob(String),
    /// The knob has no such option.
    #[error("knob `{knob}` has no option `{option}` (options: {options})")]
    UnknownOption {
        /// The knob id.
        knob: String,
        /// The option asked for.
        option: String,
        /// The options it has, comma-separated.
        options: String,
    },
    /// No profile has this name.
    #[error("unknown profile `{0}` (profiles: {1})")]
    UnknownProfile(String, String),
}

macro_rules! knobs {
    ($(
        $(#[$doc:meta])*
        $field:ident : $Enum:ident = $id:literal, $amb:literal, $summary:literal {
            $( $(#[$odoc:meta])* $Var:ident = $oname:literal => $cite:literal ),+ $(,)?
        } default $Default:ident;
    )*) => {
        $(
            $(#[$doc])*
            #[doc = concat!("\n\nKnob `", $id, "` (", $amb, "): ", $summary)]
            #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
            pub enum $Enum {
                $( $(#[$odoc])* #[doc = concat!("`", $oname, "`: ", $cite)] $Var, )+
            }

            impl $Enum {
                /// The stable option name.
                pub const fn name(self) -> &'static str {
                    match self { $( $Enum::$Var => $oname, )+ }
                }
                fn from_name(name: &str) -> Option<Self> {
                    match name { $( $oname => Some($Enum::$Var), )+ _ => None }
                }
            }
        )*

        /// One option for every knob. Build one with [`Profile::named`] or start from
        /// [`Profile::default`] and [`Profile::set`] options.
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub struct Profile {
            /// The profile's name (`default`, `nvidia-ptx`, ..., or a derived name).
            pub name: String,
            $( $(#[$doc])* pub $field: $Enum, )*
        }

        impl Default for Profile {
            fn default() -> Profile {
                Profile { name: "default".to_string(), $( $field: $Enum::$Default, )* }
            }
        }

        /// Every knob, in declaration order.
        pub const KNOBS: &[KnobInfo] = &[
            $( KnobInfo {
                id: $id,
                ambiguity: $amb,
                summary: $summary,
                options: &[ $( OptionInfo { name: $oname, cite: $cite }, )+ ],
                default: $Enum::$Default.name(),
            }, )*
        ];

        impl Profile {
            /// Sets knob `id` to option `option`.
            pub fn set(&mut self, id: &str, option: &str) -> Result<(), KnobError> {
                match id {
                    $( $id => {
                        self.$field = $Enum::from_name(option).ok_or_else(|| KnobError::UnknownOption {
                            knob: id.to_string(),
                            option: option.to_string(),
                            options: [$($oname),+].join(", "),
                        })?;
                        Ok(())
                    } )*
                    _ => Err(KnobError::UnknownKnob(id.to_string())),
                }
            }

            /// The option this profile picks for knob `id`.
            pub fn get(&self, id: &str) -> Result<&'static str, KnobError> {
                match id {
                    $( $id => Ok(self.$field.name()), )*
                    _ => Err(KnobError::UnknownKnob(id.to_string())),
                }
            }
        }
    };
}

knobs! {
    /// SASS ATOM header versus table for F16x2 add: `.F16x2.FTZ.RN` (header) or `.F16x2.RN` (table).
    sass_f16x2_add_subnormals: F16x2AddSubnormals = "sass.f16x2_add_subnormals", "A1",
        "whether ATOM.ADD.F16x2 flushes subnormal halves" {
        Preserve = "preserve" => "SASS ATOM table row `.F16x2.RN`; PTX ISA 9.0 atom: `.noftz` preserves subnormal inputs and results",
        Flush = "flush" => "SASS ATOM header `.sz` list: `.F16x2.FTZ.RN` (inputs and results flushed)",
        FlushResults = "flush_results" => "A1 option (c): only results flushed",
    } default Preserve;

    /// F32 add FTZ: the SASS table encodes `.F32.FTZ.RN`; PTX/CUDA say shared-memory f32 atomics keep subnormals.
    sass_f32_add_ftz: F32AddFtz = "sass.f32_add_ftz", "A2",
        "whether ATOM.ADD.F32 flushes subnormal inputs and results" {
        Flush = "flush" => "SASS ATOM table `.F32.FTZ.RN`; CUDA Programming Guide, Floating-Point Standard: global atomic adds behave as FADD.F32.FTZ.RN",
        Preserve = "preserve" => "PTX ISA 9.0 atom: atom.add.f32 on shared memory supports subnormal inputs and results",
    } default Flush;

    /// What a flushing float add returns: the raw old value or its flushed form.
    float_ftz_return: FtzReturn = "float.ftz_return", "A3",
        "whether the value an FTZ add returns is the raw or the flushed old value" {
        Raw = "raw" => "SASS ATOM: `Rd = M` is the prior memory value, read before the operation",
        Flushed = "flushed" => "A3 option: the flush of inputs also covers the returned value",
    } default Raw;

    /// The bit pattern of a NaN produced by a float atomic.
    float_nan_result: NanResult = "float.nan_result", "A4",
        "which NaN bits a float add/min/max produces" {
        Canonical = "canonical" => "CUDA Programming Guide, Floating-Point Standard: NaN results are the quiet NaN 0x7fffffff (extended to other widths as sign 0, all-ones exponent and fraction)",
        Propagate = "propagate" => "IEEE 754-2019 6.2: the result is a quieted input NaN (first NaN operand)",
        Any = "any" => "SPV_EXT_shader_atomic_float_min_max / Metal §8.1: any NaN may be generated; only the NaN class is checked",
        CanonicalSingle = "canonical_single" => "CUDA Programming Guide, Floating-Point Standard: the canonical quiet NaN is stated for single precision (0x7fffffff; 16-bit halves as sign 0, all-ones exponent and fraction); no NVIDIA document fixes a 64-bit NaN result, so any NaN there (an H100 gave 0xfff8000000000000 for inf + -inf and returned a signaling NaN operand unquieted: docs/findings.md)",
    } default Any;

    /// Float min/max with NaN operands.
    float_minmax_nan: MinMaxNan = "float.minmax_nan", "A5",
        "how float min/max treat quiet and signaling NaN operands" {
        MinimumNumber = "minimum_number" => "PTX min/max (min_num): a NaN operand is ignored, two NaNs give NaN; sNaN handled as quiet",
        IntelSnanWins = "intel_snan_wins" => "Mesa INTEL_shader_atomic_float_minmax rev 4, issue 4: qNaN ignored, an sNaN operand is stored",
        SpirvEither = "spirv_either" => "SPV_EXT_shader_atomic_float_min_max: qNaN ignored; min(x, sNaN) is NaN or x",
    } default MinimumNumber;

    /// Float min/max of -0 and +0.
    float_minmax_signed_zero: MinMaxZero = "float.minmax_signed_zero", "A6",
        "which zero float min/max of -0 and +0 give" {
        Ordered = "ordered" => "PTX min/max: -0.0 < +0.0; Intel intent (INTEL_shader_atomic_float_minmax issue 4)",
        Either = "either" => "SPV_EXT_shader_atomic_float_min_max: min(-0,+0) = +0 or -0",
        Skylake = "skylake" => "INTEL_shader_atomic_float_minmax issue 4: shipping Skylake GPUs store the incorrectly signed zero",
    } default Ordered;

    /// Subnormal operands of float min/max and of FCMPWR's compare.
    float_minmax_denormals: MinMaxDenormals = "float.minmax_denormals", "A7",
        "whether float min/max and FCMPWR compare subnormals as they are or flushed" {
        CompareRaw = "compare_raw" => "IEEE 754 comparison of the operands as given",
        FlushBeforeCompare = "flush_before_compare" => "D3D min/max: denormals flushed before the comparison (result flushed)",
        Either = "either" => "Metal fmin: with no denormal support either value may be returned",
    } default CompareRaw;

    /// vISA FCMPWR compare: IEEE equality or bit equality.
    visa_fcmpwr_compare: FcmpwrCompare = "visa.fcmpwr_compare", "A9",
        "whether FCMPWR compares with IEEE == (NaN never equal, -0 == +0) or bitwise" {
        Numeric = "numeric" => "vISA DWORD_ATOMIC table: FCMPWR `(src0 == old)` on type F; INTEL_shader_atomic_float_minmax issue 3: floating-point ==",
        Bitwise = "bitwise" => "A9: every other CAS (PTX .b*, SASS CAS, SPIR-V, Metal) compares bits",
    } default Numeric;

    /// vISA PREDEC: returned value.
    visa_predec_return: PredecReturn = "visa.predec_return", "A11",
        "whether PREDEC returns the new (decremented) or the old value" {
        New = "new" => "vISA DWORD_ATOMIC table, PREDEC: Return Value `New value`",
        Old = "old" => "IGC CISABuilder LSC mapping EATOMIC_PREDEC -> LSC_ATOMIC_IDEC (returns the prior value) on XeHP+",
    } default New;

    /// vISA PREDEC: operand type.
    visa_predec_operand_type: PredecOperandType = "visa.predec_operand_type", "A11",
        "which operand type PREDEC requires: UD (Notes) or W/D/Q (table)" {
        Ud = "ud" => "vISA DWORD_ATOMIC Notes: other operations take type UD; vISA verifier",
        D = "d" => "vISA DWORD_ATOMIC table, PREDEC: Data Type W, D, Q",
        Either = "either" => "accept both readings",
    } default Ud;

    /// vISA PREDEC: whether Src0 must be V0.
    visa_predec_src0: PredecSrc0 = "visa.predec_src0", "A29",
        "whether PREDEC's Src0 must be V0 like INC/DEC" {
        MustBeV0 = "must_be_v0" => "vISA verifier (IsaVerification.cpp): src0 must be V0 for INC/DEC/PREDEC",
        Unchecked = "unchecked" => "vISA DWORD_ATOMIC Src0 text names only INC and DEC",
    } default MustBeV0;

    /// vISA `.16`: bits 31..16 of each returned dword.
    visa_w16_writeback_upper: W16WritebackUpper = "visa.w16_writeback_upper", "A12",
        "what bits 31..16 of a `.16` writeback dword hold" {
        Any = "any" => "vISA DWORD_ATOMIC Op bit 5: only `the same unpacked layout`; upper half unspecified",
        Zero = "zero" => "A12 option: zero-extended",
        SignExtend = "sign_extend" => "A12 option: sign-extended",
        Preserve = "preserve" => "A12 option: the previous contents of Dst",
    } default Any;

    /// vISA out-of-bounds accesses.
    visa_out_of_bounds: VisaOutOfBounds = "visa.out_of_bounds", "A14",
        "what a DWORD_ATOMIC outside the surface (SLM size, unallocated stateless memory) does" {
        ReadZeroDropWrite = "read_zero_drop_write" => "vISA DWORD_ATOMIC Properties: on read zeros are returned, on write data is dropped",
        Fault = "fault" => "A14: an NVIDIA-style fault model",
    } default ReadZeroDropWrite;

    /// vISA misaligned addresses.
    visa_misaligned: VisaMisaligned = "visa.misaligned", "A15",
        "what a misaligned DWORD_ATOMIC or SVM_SCATTER4_SCALED address does" {
        Undefined = "undefined" => "vISA DWORD_ATOMIC Notes (`must be word-aligned`) and SVM_SCATTER4_SCALED (`must be dword-aligned`) state no consequence",
        MaskLowBits = "mask_low_bits" => "A15 option: the low address bits are ignored",
        Fault = "fault" => "A15 option: a misaligned-address fault",
    } default Undefined;

    /// vISA exec size 32.
    visa_exec_size_32: ExecSize32 = "visa.exec_size_32", "N1",
        "whether DWORD_ATOMIC accepts exec size 32" {
        Reject = "reject" => "vISA DWORD_ATOMIC (2020-2022 copy): Exec_size encodings 1..16 only",
        Allow = "allow" => "vISA DWORD_ATOMIC (IGC 1.0.12504 copy): 0b101 = 32 elements",
    } default Reject;

    /// vISA: channel offset of execution-mask controls M1..M8.
    visa_emask_group: EmaskGroup = "visa.emask_group", "N2",
        "how many channels each step of M1..M8 moves the execution-mask offset" {
        Four = "4" => "vISA execution-mask control: Mn selects the mask from channel 4*(n-1)",
        Eight = "8" => "Gen EU mask control in SIMD8 quarters: Mn selects the mask from channel 8*(n-1)",
    } default Four;

    /// vISA FADD/FSUB (0x13/0x14): not in the document's table.
    visa_fadd_fsub: VisaFaddFsub = "visa.fadd_fsub", "A29",
        "whether DWORD_ATOMIC accepts the fadd/fsub ops the verifier knows" {
        Reject = "reject" => "vISA DWORD_ATOMIC op table lists no FADD/FSUB",
        Accept = "accept" => "vISA header ATOMIC_FADD = 0x13, ATOMIC_FSUB = 0x14; verifier accepts them (Xe_HPSDV+)",
    } default Reject;

    /// vISA GRF size for SVM_SCATTER4_SCALED's source layout.
    visa_grf_size: GrfSize = "visa.grf_size", "A28",
        "the GRF size in bytes, which sets SCATTER4's per-channel source stride" {
        B32 = "32" => "SVM_SCATTER4_SCALED: ch_start = ch_pos * max(exec_size, GRF_SIZE/4), 32-byte GRF (Gen9..Xe-HPG)",
        B64 = "64" => "SVM_SCATTER4_SCALED with a 64-byte GRF (Xe-HPC and later)",
    } default B32;

    /// vISA SCATTER4: several lanes or channels writing one address.
    visa_scatter_same_address: ScatterSameAddress = "visa.scatter_same_address", "A28",
        "which write wins when SCATTER4 lanes or channels hit one address" {
        AnyOrder = "any_order" => "A28: write order unspecified; any writer may win",
        ProgramOrder = "program_order" => "SVM_SCATTER4_SCALED pseudo-code loop order: channel-major, then lane; last write wins",
    } default AnyOrder;

    /// vISA SCATTER4: unallocated destination.
    visa_svm_unallocated: SvmUnallocated = "visa.svm_unallocated", "A14",
        "what SVM_SCATTER4_SCALED does with an address in no allocated range" {
        Undefined = "undefined" => "SVM_SCATTER4_SCALED states no out-of-bounds rule",
        DropWrite = "drop_write" => "as DWORD_ATOMIC's out-of-bound rule: the write is dropped",
        Fault = "fault" => "A14 option: an address fault",
    } default Undefined;

    /// vISA SCATTER4: channel letters written out of RGBA order.
    visa_channel_order: ChannelOrder = "visa.channel_order", "N5",
        "whether SVM_SCATTER4_SCALED's `.<channels>` may name its channels out of RGBA order (`.GR`)" {
        Rgba = "rgba" => "IGC vISA assembler lexer (visa/CISA.l, CHANNEL MASK token): channel letters only in RGBA order, each at most once; `.GR` is no channel mask (a syntax error)",
        AnyOrder = "any_order" => "vISA SVM_SCATTER4_SCALED Channels(ub): a set of bits, R bit 0 .. A bit 3, and Text `.<channels>` states no order; Src is read in RGBA order whatever the text's order",
    } default Rgba;

    /// SASS address arithmetic of `[Ra + ImmS20]`.
    sass_address_arithmetic: AddressArithmetic = "sass.address_arithmetic", "A16",
        "where `Ra + ImmS20` wraps: in 32 bits before zero-extension, or in 40 bits" {
        Wrap32 = "wrap32" => "SASS ATOM: `32-bit addition of register Ra plus the 32-bit sign-extended immediate offset ImmS20, which is then zero-extended to 40-bits`",
        Add40 = "add40" => "A16 option (b): the sum is formed in 40 bits",
    } default Wrap32;

    /// SASS `.E` immediate width.
    sass_e_immediate: EImmediate = "sass.e_immediate", "N3",
        "the immediate field of `.E` forms: ImmS20 (syntax lines) or ImmS32 (description)" {
        S20 = "s20" => "SASS ATOM syntax lines: `[Ra + ImmS20]` for every form; SPA 5.0 ATOM.E words have a 20-bit offset field (nvdisasm 11.8, reference/tests/data/nvidia)",
        S32 = "s32" => "SASS ATOM description: with .E, `the sign-extended immediate offset ImmS32` (no SPA 5.0 word can hold it: the ATOM.E offset field has 20 bits, and ptxas forms larger offsets with IADD32I; reference/tests/data/nvidia)",
    } default S20;

    /// SASS CAS register constraints.
    sass_cas_register_pairing: CasPairing = "sass.cas_register_pairing", "A17",
        "whether ATOM.CAS register pairs that break the rule are rejected" {
        Reject = "reject" => "SASS ATOM.CAS: Rb must be R2n (R4n for .64) and Rc must be Rb+1 (Rb+2) or RZ",
        Accept = "accept" => "A17 option: accept any registers, Rb = compare, Rc = new value",
        Sm50Encoding = "sm50_encoding" => "SPA 5.0 ATOM.CAS words (nvdisasm 11.8, reference/tests/data/nvidia/probe_sm_50.sass): one register field; Rc is not encoded but implied as Rb+1 (Rb+2 for .64) or RZ (bit 50), or Rb is RZ (bit 51) and the field names Rc; Rb alignment is not encoded (nvdisasm prints `R9, R10`); ptxas always picks Rb = R2n (R4n) with Rc = Rb+1 (Rb+2)",
    } default Reject;

    /// SASS misaligned addresses.
    sass_misaligned: SassMisaligned = "sass.misaligned", "A15",
        "what a misaligned ATOM address does" {
        Fault = "fault" => "SASS ATOM: misaligned addresses cause a misaligned address error",
        MaskLowBits = "mask_low_bits" => "PTX Addresses as Operands: the access may proceed by silently masking off low-order address bits",
        Undefined = "undefined" => "PTX Addresses as Operands: the behaviour is undefined",
    } default Fault;

    /// MSL float atomic add/sub rounding.
    msl_float_rounding: MslRounding = "msl.float_rounding", "A24",
        "the rounding of MSL atomic_float add/sub" {
        NearestEven = "nearest_even" => "MSL §8.2: round ties to even may be supported",
        TowardZero = "toward_zero" => "MSL §8.2: round toward zero may be supported",
    } default NearestEven;

    /// MSL float atomic add/sub subnormals.
    msl_float_denormals: MslDenormals = "msl.float_denormals", "A24",
        "whether MSL atomic_float add/sub flush subnormals" {
        Preserve = "preserve" => "MSL §8.1: subnormals are supported unless flushed",
        Flush = "flush" => "MSL §8.1: subnormal inputs and outputs may be flushed to zero",
    } default Preserve;

    /// MSL memory orders.
    msl_memory_order: MslMemoryOrder = "msl.memory_order", "N4",
        "which memory_order values the atomic functions accept" {
        RelaxedOnly = "relaxed_only" => "MSL: for all versions of Metal, memory_order_relaxed is supported",
        Any = "any" => "MSL: for ios-metal2.0 all memory_order values are available",
    } default RelaxedOnly;

    /// MSL shuffle deltas at or beyond the SIMD-group size.
    msl_shuffle_delta_out_of_range: ShuffleDelta = "msl.shuffle_delta_out_of_range", "A22",
        "what simd_shuffle_up/down/rotate do with delta >= the SIMD-group size" {
        Formula = "formula" => "MSL Table 34 formulas: the computed lane is out of range, so up/down keep their own value",
        MaskToWidth = "mask_to_width" => "PTX shfl analogue: the delta is truncated to log2(size) bits",
        Undefined = "undefined" => "A22: behaviour unspecified",
    } default Formula;

    /// MSL partial last SIMD-group.
    msl_partial_simd_group: PartialGroup = "msl.partial_simd_group", "A22",
        "whether N in the shuffle formulas is the SIMD width or the actual group size" {
        SimdWidth = "simd_width" => "MSL: N is the SIMD-group size (threads_per_simdgroup)",
        GroupSize = "group_size" => "MSL §4.4.1: the last SIMD-group may be smaller; N is its actual size",
    } default SimdWidth;

    /// MSL simd_shuffle_and_fill_down boundary (`>` in the text, `>=` in the examples).
    msl_fill_down_boundary: FillDownBoundary = "msl.fill_down_boundary", "A23",
        "whether fill_down takes the fill value when k + delta >= modulo or only when >" {
        Ge = "ge" => "MSL simd_shuffle_and_fill_down example tables",
        Gt = "gt" => "MSL simd_shuffle_and_fill_down text: `If the sum is greater than the SIMD-group size`",
    } default Ge;
}

/// A named profile: name, description, and `(knob id, option)` picks over the defaults.
pub type ProfileDef = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

/// Named profiles, applied on top of the defaults.
pub const PROFILES: &[ProfileDef] = &[
    ("default", "every knob at its documented default", &[]),
    (
        "nvidia-ptx",
        "NVIDIA as PTX ISA 9.0 and the CUDA Programming Guide describe it",
        &[
            ("float.nan_result", "canonical_single"),
            ("float.minmax_nan", "minimum_number"),
            ("float.minmax_signed_zero", "ordered"),
            ("sass.f16x2_add_subnormals", "preserve"),
            ("sass.f32_add_ftz", "flush"),
            ("sass.misaligned", "fault"),
        ],
    ),
    (
        "intel-xe",
        "Intel Xe-HPC and later (64-byte GRF, FADD/FSUB, LSC-era PREDEC emulation returning new)",
        &[
            ("float.minmax_nan", "intel_snan_wins"),
            ("float.minmax_signed_zero", "ordered"),
            ("visa.fcmpwr_compare", "numeric"),
            ("visa.grf_size", "64"),
            ("visa.fadd_fsub", "accept"),
            ("visa.predec_return", "new"),
        ],
    ),
    (
        "intel-skylake",
        "Intel Gen9 (Skylake): 32-byte GRF, the wrong-signed zero of float min/max",
        &[
            ("float.minmax_nan", "intel_snan_wins"),
            ("float.minmax_signed_zero", "skylake"),
            ("visa.fcmpwr_compare", "numeric"),
            ("visa.grf_size", "32"),
            ("visa.exec_size_32", "reject"),
        ],
    ),
    (
        "spirv",
        "what SPIR-V and its atomic-float extensions allow",
        &[
            ("float.nan_result", "any"),
            ("float.minmax_nan", "spirv_either"),
            ("float.minmax_signed_zero", "either"),
            ("float.minmax_denormals", "either"),
            ("visa.fcmpwr_compare", "bitwise"),
            ("sass.misaligned", "undefined"),
        ],
    ),
    (
        "metal",
        "Apple GPUs as the MSL specification allows: round toward zero, subnormals flushed",
        &[
            ("float.nan_result", "any"),
            ("msl.float_rounding", "toward_zero"),
            ("msl.float_denormals", "flush"),
            ("msl.memory_order", "relaxed_only"),
        ],
    ),
];

impl Profile {
    /// A named profile from [`PROFILES`].
    pub fn named(name: &str) -> Result<Profile, KnobError> {
        let (_, _, picks) = PROFILES
            .iter()
            .find(|(n, _, _)| *n == name)
            .ok_or_else(|| {
                KnobError::UnknownProfile(
                    name.to_string(),
                    PROFILES.iter().map(|p| p.0).collect::<Vec<_>>().join(", "),
                )
            })?;
        let mut p = Profile {
            name: name.to_string(),
            ..Profile::default()
        };
        for (id, option) in picks.iter() {
            p.set(id, option)?;
        }
        Ok(p)
    }

    /// The names of all profiles.
    pub fn names() -> impl Iterator<Item = &'static str> {
        PROFILES.iter().map(|p| p.0)
    }
}

/// Looks a knob up by id.
pub fn knob(id: &str) -> Option<&'static KnobInfo> {
    KNOBS.iter().find(|k| k.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_names_real_knobs_and_options() {
        for name in Profile::names() {
            let p = Profile::named(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(p.name, name);
        }
    }

    #[test]
    fn set_and_get_round_trip_for_every_option() {
        for k in KNOBS {
            let mut p = Profile::default();
            assert_eq!(p.get(k.id).unwrap(), k.default, "{}", k.id);
            for o in k.options {
                p.set(k.id, o.name).unwrap();
                assert_eq!(p.get(k.id).unwrap(), o.name);
            }
        }
    }

    #[test]
    fn unknown_names_are_errors() {
        let mut p = Profile::default();
        assert!(matches!(
            p.set("no.such", "x"),
            Err(KnobError::UnknownKnob(_))
        ));
        assert!(matches!(
            p.set("sass.misaligned", "explode"),
            Err(KnobError::UnknownOption { .. })
        ));
        assert!(matches!(
            Profile::named("amd"),
            Err(KnobError::UnknownProfile(..))
        ));
    }

    #[test]
    fn knob_ids_are_unique_and_cite_an_ambiguity() {
        let mut ids: Vec<_> = KNOBS.iter().map(|k| k.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), KNOBS.len());
        for k in KNOBS {
            assert!(
                k.ambiguity.starts_with('A') || k.ambiguity.starts_with('N'),
                "{}",
                k.id
            );
            assert!(k.options.len() >= 2, "{} needs at least two options", k.id);
        }
    }

    #[test]
    fn profiles_differ_where_documents_differ() {
        let nv = Profile::named("nvidia-ptx").unwrap();
        let sky = Profile::named("intel-skylake").unwrap();
        let metal = Profile::named("metal").unwrap();
        assert_eq!(nv.float_nan_result, NanResult::CanonicalSingle);
        assert_eq!(sky.float_minmax_signed_zero, MinMaxZero::Skylake);
        assert_eq!(metal.msl_float_rounding, MslRounding::TowardZero);
    }
}
