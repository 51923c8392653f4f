//! Throughput of the `diff_fast_reference` oracle (issue 9, point 5) without libFuzzer:
//! `N` seeded pseudo-random inputs of up to 256 bytes through `check_diff`, and the cost of
//! building their states directly from the generator's typed values (what the oracle does
//! now) against the loader's route from TOML values (`load_state`) and the oldest route through
//! the TOML text (`file_text` + `parse_file` + `build_state`).
//!
//! `cargo run --release --example oracle_bench -- 100000`

use atomcts::fuzzing::draft::GenCase;
use atomcts::fuzzing::expect::load_state;
use atomcts::fuzzing::generate::file_text;
use atomcts::fuzzing::oracles::{check_diff, decode_diff_input};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use std::path::Path;
use std::time::Instant;

/// The state as the oracle built it before issue 9: through the case's text.
fn state_via_text(gc: &GenCase) -> Option<atomcts_reference::state::State> {
    let mut t = toml::Table::new();
    t.insert("name".into(), "probe".into());
    t.insert("asm".into(), gc.asm.clone().into());
    t.insert("cite".into(), "generated".into());
    if gc.lanes != 1 {
        t.insert("lanes".into(), i64::from(gc.lanes).into());
    }
    t.insert("given".into(), toml::Value::Table(gc.given.clone()));
    let mut e = toml::Table::new();
    e.insert("unspecified".into(), true.into());
    t.insert("expect".into(), toml::Value::Table(e));
    let text = file_text(gc.dialect, "", &[t]).ok()?;
    let loaded = atomcts::corpus::case::parse_file(Path::new(""), Path::new("<generated>"), text);
    atomcts::corpus::state::build_state(loaded.cases.first()?).ok()
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000);
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let inputs: Vec<Vec<u8>> = (0..n)
        .map(|_| {
            let len = (rng.next_u64() % 256) as usize;
            (0..len).map(|_| rng.next_u64() as u8).collect()
        })
        .collect();
    if std::env::args().nth(2).as_deref() == Some("fuzz-target") {
        // What the fuzz target does per input: decode and check (for profiling).
        let t = Instant::now();
        for d in &inputs {
            atomcts::fuzzing::oracles::diff_fast_reference(d);
        }
        println!(
            "{n} inputs through diff_fast_reference: {:.0}/s",
            n as f64 / t.elapsed().as_secs_f64()
        );
        return;
    }
    let decoded: Vec<_> = inputs.iter().map(|d| decode_diff_input(d)).collect();
    let t = Instant::now();
    let mut failures = 0;
    for i in &decoded {
        failures += usize::from(check_diff(i).is_err());
    }
    let oracle = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let direct = decoded.iter().filter(|i| i.draft.state().is_ok()).count();
    let direct_s = t.elapsed().as_secs_f64();
    let cases: Vec<GenCase> = decoded.iter().map(|i| i.case()).collect();
    let t = Instant::now();
    let values = cases.iter().filter(|c| load_state(c).is_ok()).count();
    let values_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let via_text = cases.iter().filter(|c| state_via_text(c).is_some()).count();
    let text_s = t.elapsed().as_secs_f64();
    assert_eq!(direct, via_text, "the routes load the same cases");
    assert_eq!(direct, values, "the routes load the same cases");
    println!(
        "{n} inputs: check_diff {:.0}/s ({failures} differences); states built directly {:.0}/s, from TOML values {:.0}/s, through the text {:.0}/s; the oracle through the text would run at about {:.0}/s",
        n as f64 / oracle,
        n as f64 / direct_s,
        n as f64 / values_s,
        n as f64 / text_s,
        n as f64 / (oracle - direct_s + text_s)
    );
}
