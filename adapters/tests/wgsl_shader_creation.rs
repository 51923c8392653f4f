//! WGSL shader-creation rules for the subgroup built-ins (adapters/wgsl-cases/shader_creation.toml)
//! against naga, the translator of the `wgsl-naga:` route: each case is a shader the WGSL
//! specification accepts or rejects; naga's answers must differ from it in exactly the cases of
//! adapters/wgsl-cases/naga.baseline (each with its reason), so a naga that starts or stops
//! enforcing a rule fails this test. Needs no driver.

use atomcts_adapters::back::wgsl::{CompileError, compile};
use std::collections::BTreeSet;
use std::path::Path;

#[derive(serde::Deserialize)]
struct File {
    case: Vec<Case>,
}

#[derive(serde::Deserialize)]
struct Case {
    name: String,
    expect: String,
    cite: String,
    wgsl: String,
    #[serde(default)]
    keep_directive: bool,
}

#[test]
fn naga_differs_from_the_wgsl_rules_only_where_baselined() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("wgsl-cases");
    let text = std::fs::read_to_string(dir.join("shader_creation.toml")).unwrap();
    let file: File = toml::from_str(&text).expect("shader_creation.toml");
    let mut differs = BTreeSet::new();
    let mut agree = [0usize; 2];
    for c in &file.case {
        assert!(!c.cite.is_empty(), "{}: no cite", c.name);
        let src: String = if c.keep_directive {
            c.wgsl.clone()
        } else {
            assert!(
                c.wgsl.contains("enable subgroups;"),
                "{}: not valid WGSL",
                c.name
            );
            c.wgsl.replace("enable subgroups;\n", "")
        };
        let accepted = match compile(&src) {
            Ok(words) => {
                assert!(words.len() > 5, "{}: empty module", c.name);
                true
            }
            Err(CompileError::Rejected(_)) => false,
            Err(CompileError::Writer(e)) => panic!("{}: naga's SPIR-V writer failed: {e}", c.name),
        };
        let want = match c.expect.as_str() {
            "accept" => true,
            "reject" => false,
            other => panic!("{}: expect = `{other}` (accept or reject)", c.name),
        };
        if accepted == want {
            agree[usize::from(want)] += 1;
        } else {
            differs.insert(c.name.clone());
        }
    }
    let baseline = std::fs::read_to_string(dir.join("naga.baseline")).unwrap();
    let mut known = BTreeSet::new();
    for line in baseline
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        let (id, reason) = line.split_once('#').unwrap_or((line, ""));
        assert!(
            !reason.trim().is_empty(),
            "naga.baseline: `{line}` has no reason"
        );
        known.insert(id.trim().to_string());
    }
    let new: Vec<_> = differs.difference(&known).collect();
    let fixed: Vec<_> = known.difference(&differs).collect();
    assert!(
        new.is_empty() && fixed.is_empty(),
        "naga differs from WGSL where not baselined: {new:?}; baselined but now as WGSL says: {fixed:?}"
    );
    // Both verdicts are exercised and met somewhere.
    assert!(agree[0] > 0 && agree[1] > 0, "{agree:?}");
}

/// The same cases against Tint, the WGSL compiler of Chromium's WebGPU (`webgpu:chromium`):
/// every shader as written (with `enable subgroups;`), created by the browser; Tint's answers
/// must differ from the specification in exactly the cases of adapters/wgsl-cases/tint.baseline.
#[cfg(feature = "webgpu")]
#[test]
#[ignore = "needs chromium (tools/install-implementations.sh vulkan); CI runs it"]
fn tint_differs_from_the_wgsl_rules_only_where_baselined() {
    use atomcts_adapters::back::webgpu::WebGpuAdapter;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("wgsl-cases");
    let text = std::fs::read_to_string(dir.join("shader_creation.toml")).unwrap();
    let file: File = toml::from_str(&text).expect("shader_creation.toml");
    let sources: Vec<String> = file.case.iter().map(|c| c.wgsl.clone()).collect();
    let mut a = WebGpuAdapter::open("chromium", std::time::Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{e}"));
    let answers = a.create_shaders(&sources).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(answers.len(), file.case.len());
    let mut differs = BTreeSet::new();
    for (c, got) in file.case.iter().zip(&answers) {
        let want = match c.expect.as_str() {
            "accept" => true,
            "reject" => false,
            other => panic!("{}: expect = `{other}`", c.name),
        };
        if got.is_ok() != want {
            differs.insert(c.name.clone());
        }
    }
    let baseline = std::fs::read_to_string(dir.join("tint.baseline")).unwrap();
    let listed: BTreeSet<String> = baseline
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect();
    assert_eq!(
        differs, listed,
        "Tint's differences: {differs:?}; answers: {answers:?}"
    );
}
