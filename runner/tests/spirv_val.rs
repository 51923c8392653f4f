//! Every SPIR-V module the Vulkan back end emits for the corpus, on both routes (SPIR-V built
//! from the IR, and WGSL compiled by naga), and for every concurrent case it runs (issue 12),
//! passes `spirv-val --target-env vulkan1.3`
//! (Debian `spirv-tools`). Emitting needs no driver: the device features are "everything the
//! emitters can use". Without spirv-val the test fails under `CI=true` and says so otherwise.

use atomcts::corpus::case::load;
use atomcts::corpus::state::build_state;
use atomcts_adapters::Request;
use atomcts_adapters::back::vulkan::emit::{Features, Plant};
use atomcts_adapters::back::vulkan::{Route, prepare, prepare_concurrent};
use atomcts_adapters::back::wgsl;
use atomcts_adapters::concurrent::{ConcurrentInstr, ConcurrentRequest};
use atomcts_reference::Profile;
use std::path::Path;
use std::process::Command;

fn spirv_val() -> Option<&'static str> {
    Command::new("spirv-val")
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| "spirv-val")
}

#[test]
fn every_emitted_module_passes_spirv_val() {
    let Some(val) = spirv_val() else {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("spirv-val is not installed (Debian spirv-tools); CI must have it");
        }
        eprintln!("NOTE: spirv-val not installed (Debian spirv-tools): modules not validated");
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../spec-cases");
    let loaded = load(&root);
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let dir = std::env::temp_dir().join(format!("atomcts-spirv-val-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let profile = Profile::default();
    // Both float-controls modes reported, so that the modules that declare them are checked too.
    let f = Features {
        denorm_ftz_f32: true,
        denorm_preserve_f32: true,
        ..Features::all()
    };
    let mut checked = [0usize; 3];
    let mut failures = Vec::new();
    let validate = |id: &str, what: &str, words: &[u32], failures: &mut Vec<String>| {
        let file = dir.join("m.spv");
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        std::fs::write(&file, bytes).unwrap();
        let out = Command::new(val)
            .args(["--target-env", "vulkan1.3"])
            .arg(&file)
            .output()
            .unwrap();
        if !out.status.success() {
            failures.push(format!(
                "{id} ({what}): {}{}",
                String::from_utf8_lossy(&out.stderr),
                String::from_utf8_lossy(&out.stdout)
            ));
        }
    };
    // Concurrent cases: one module per case (one work-group per instruction, or one
    // work-group on local memory).
    let (mut concurrent, mut local) = (0usize, 0usize);
    for case in loaded.cases.iter().filter(|c| !c.concurrent.is_empty()) {
        let states = atomcts::run::concurrent::build_states(case).unwrap();
        let instrs: Vec<ConcurrentInstr<'_>> = case
            .concurrent
            .iter()
            .zip(&states)
            .map(|(i, state)| ConcurrentInstr {
                asm: &i.asm,
                state,
                iterations: i.iterations,
                cas_loop: i.cas_loop.as_ref().map(|(l, _)| *l),
            })
            .collect();
        let r = ConcurrentRequest {
            id: &case.id,
            dialect: case.dialect,
            instrs: &instrs,
            profile: &profile,
        };
        let Ok(p) = prepare_concurrent(&r, &f, Plant::None) else {
            continue;
        };
        concurrent += 1;
        local += usize::from(p.plan.local);
        validate(&case.id, "concurrent", &p.dispatch.words, &mut failures);
    }
    for case in &loaded.cases {
        let Ok(state) = build_state(case) else {
            continue;
        };
        let r = Request {
            id: &case.id,
            dialect: case.dialect,
            asm: &case.asm,
            state: &state,
            profile: &profile,
            lowered: None,
        };
        for (k, route) in [Route::Spirv, Route::WgslNaga].into_iter().enumerate() {
            let Ok(p) = prepare(route, &r, &f, Plant::None) else {
                continue;
            };
            // The batched form too (issue 31: a batch's cases of one shape in one dispatch).
            let batched = match &p.wgsl_batched {
                Some(src) => Some(wgsl::compile(src).map_err(|e| format!("{e:?}"))),
                None => p.dispatch.batched.as_ref().map(|w| Ok(w.to_vec())),
            };
            let words = match &p.wgsl {
                Some(src) => match wgsl::compile(src) {
                    Ok(w) => w,
                    // A shader-creation error is naga's answer, judged by the corpus run.
                    Err(wgsl::CompileError::Rejected(_)) => continue,
                    Err(e) => {
                        failures.push(format!("{} ({route:?}): {e:?}", case.id));
                        continue;
                    }
                },
                None => p.dispatch.words.clone(),
            };
            checked[k] += 1;
            validate(&case.id, &format!("{route:?}"), &words, &mut failures);
            match batched {
                Some(Ok(words)) => {
                    checked[2] += 1;
                    validate(
                        &case.id,
                        &format!("{route:?} batched"),
                        &words,
                        &mut failures,
                    );
                }
                // naga accepted the case's shader: its batched form must compile too.
                Some(Err(e)) => failures.push(format!("{} ({route:?} batched): {e}", case.id)),
                None => {}
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "spirv-val: {} modules of the SPIR-V route, {} of the WGSL route, {} batched forms of both, {concurrent} concurrent ({local} on one work-group's local memory)",
        checked[0], checked[1], checked[2]
    );
    assert!(
        failures.is_empty(),
        "{} modules fail spirv-val:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // Both routes really emitted: atomics and shuffles of the corpus.
    assert!(
        checked[0] > 500 && checked[1] > 100 && checked[2] > 600,
        "{checked:?}"
    );
    // Concurrent cases on global and on local memory were emitted.
    assert!(concurrent > local && local >= 3, "{concurrent} {local}");
}
