//! The fast path as an adapter: the reference's front ends parse and lower the instruction
//! (`atomcts_reference::program::Program`), and `atomcts_fast::execute` runs the lowered IR.
//! Its observations equal the reference's on every case; it exists to run the suite fast and
//! to keep the fast path honest against the cases.

use crate::{Adapter, AdapterError, AdapterErrorKind, CAPABILITIES, Observation, Request};
use atomcts_reference::error::ModelError;
use atomcts_reference::ir::Lowering;
use atomcts_reference::program::Program;

/// The fast path (`atomcts-fast`) as an adapter: it supports everything the reference does.
#[derive(Clone, Debug, Default)]
pub struct FastAdapter;

impl FastAdapter {
    fn model_error(e: ModelError) -> AdapterError {
        AdapterError {
            adapter: "fast".into(),
            kind: AdapterErrorKind::Model(e.to_string()),
        }
    }
}

impl Adapter for FastAdapter {
    fn name(&self) -> &str {
        "fast"
    }

    fn describe(&self) -> Option<String> {
        Some(format!("atomcts {} fast path", env!("CARGO_PKG_VERSION")))
    }

    fn claimed_profile(&self) -> Option<String> {
        Some("default".into())
    }

    fn supports(&self, capability: &str) -> bool {
        CAPABILITIES.contains(&capability)
    }

    fn locates_rejections(&self) -> bool {
        true
    }

    fn is_builtin_model(&self) -> bool {
        true
    }

    fn fork(&self) -> Option<Box<dyn Adapter + Send>> {
        Some(Box::new(FastAdapter))
    }

    fn run(&mut self, r: &Request<'_>) -> Result<Observation, AdapterError> {
        // The runner's lowering by the same front end, of the same text, state and profile.
        if let Some(lowered) = r.lowered {
            return atomcts_fast::execute(lowered, r.state)
                .map(|outcome| Observation::from_outcome(&outcome))
                .map_err(Self::model_error);
        }
        let program = match Program::parse(r.dialect, r.asm) {
            Ok(p) => p,
            Err(rejection) => return Ok(Observation::rejection(&rejection)),
        };
        match program
            .lower(r.state, r.profile)
            .map_err(Self::model_error)?
        {
            Lowering::Invalid(rejection) => Ok(Observation::rejection(&rejection)),
            Lowering::Unspecified(why) => Ok(Observation::Unspecified(why)),
            Lowering::Run(lowered) => atomcts_fast::execute(&lowered, r.state)
                .map(|outcome| Observation::from_outcome(&outcome))
                .map_err(Self::model_error),
        }
    }

    fn concurrent(&self) -> Option<&dyn crate::Concurrent> {
        Some(self)
    }

    fn concurrent_mut(&mut self) -> Option<&mut dyn crate::Concurrent> {
        Some(self)
    }
}

impl crate::Concurrent for FastAdapter {
    fn run_concurrent(
        &mut self,
        r: &crate::concurrent::ConcurrentRequest<'_>,
    ) -> Result<crate::concurrent::ConcurrentObservation, AdapterError> {
        crate::concurrent::serial("fast", r, &atomcts_fast::execute)
    }

    fn runs_cas_loops(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ReferenceAdapter;
    use atomcts_reference::program::Dialect;
    use atomcts_reference::state::Reg;
    use atomcts_reference::types::ElemType;
    use atomcts_reference::{Profile, State};

    fn sass_state() -> State {
        let mut s = State::new(2);
        s.global.alloc(0x1000, 16).unwrap();
        s.global.write(0x1000, 4, 0x3f80_0000); // 1.0f
        for (name, v) in [
            ("R2", [0x1000u64, 0x1000]),
            ("R4", [0x3f80_0000, 0x4000_0000]),
        ] {
            s.regs.insert(
                name.into(),
                Reg {
                    ty: ElemType::B32,
                    elems: v.to_vec(),
                },
            );
        }
        s
    }

    // SASS ATOM.E.ADD.F32.FTZ.RN: two lanes add 1.0 and 2.0 to 1.0 in program order: memory
    // ends at 4.0 (0x40800000); lane 0 gets 1.0, lane 1 gets 2.0 (0x40000000).
    #[test]
    fn runs_a_sass_float_add_like_the_reference() {
        let state = sass_state();
        let profile = Profile::default();
        let req = Request {
            id: "t",
            dialect: Dialect::Sass,
            asm: "ATOM.E.ADD.F32.FTZ.RN R0, [R2], R4 ;",
            state: &state,
            profile: &profile,
            lowered: None,
        };
        let fast = FastAdapter.run(&req).unwrap();
        let reference = ReferenceAdapter.run(&req).unwrap();
        assert_eq!(fast, reference);
        let Observation::Completed(end) = fast else {
            panic!("{fast:?}")
        };
        assert_eq!(end.global.read(0x1000, 4), Some(0x4080_0000));
        assert_eq!(end.elem("R0", 0), Some(0x3f80_0000));
        assert_eq!(end.elem("R0", 1), Some(0x4000_0000));
        // Illegal text is a rejection, not an error.
        let bad = Request {
            asm: "ATOM.E.FROB R0, [R2], R4 ;",
            ..req
        };
        assert!(matches!(
            FastAdapter.run(&bad).unwrap(),
            Observation::Invalid { .. }
        ));
        assert_eq!(FastAdapter.name(), "fast");
        assert!(FastAdapter.supports("f16x2_atomics"));
    }

    // Issue 9: given the runner's lowering (the reference front end's, of the same text, state
    // and profile), the fast path executes it instead of parsing again: same observation.
    // It executes what it is given: the lowering of another instruction gives that one's.
    #[test]
    fn executes_the_lowering_it_is_given() {
        let state = sass_state();
        let profile = Profile::default();
        let lower = |asm: &str| match Program::parse(Dialect::Sass, asm)
            .unwrap()
            .lower(&state, &profile)
            .unwrap()
        {
            Lowering::Run(l) => l,
            other => panic!("{other:?}"),
        };
        let asm = "ATOM.E.ADD.F32.FTZ.RN R0, [R2], R4 ;";
        let add = lower(asm);
        let plain = Request {
            id: "t",
            dialect: Dialect::Sass,
            asm,
            state: &state,
            profile: &profile,
            lowered: None,
        };
        let given = Request {
            lowered: Some(&add),
            ..plain
        };
        let reference = ReferenceAdapter.run(&plain).unwrap();
        assert_eq!(FastAdapter.run(&given).unwrap(), reference);
        assert_eq!(FastAdapter.run(&plain).unwrap(), reference);
        let exch = lower("ATOM.E.EXCH R0, [R2], R4 ;");
        let other = FastAdapter
            .run(&Request {
                lowered: Some(&exch),
                ..plain
            })
            .unwrap();
        assert_ne!(other, reference);
        let Observation::Completed(end) = other else {
            panic!("{other:?}")
        };
        // One of the two exchanged values stays (0x40000000 is 2.0, lane 1's).
        let last = end.global.read(0x1000, 4).unwrap();
        assert!(last == 0x3f80_0000 || last == 0x4000_0000, "{last:#010x}");
    }
}
