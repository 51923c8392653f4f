//! The subprocess adapter against the example shim (adapters/shims/mini_sass.py, an independent
//! Python implementation of SASS integer ATOM): conformance, a planted bug caught, and crash,
//! hang and garbage isolation. Needs `python3` (CI installs it).

mod common;
use common::text;
use std::process::{Command, Output};

fn run(bug: &str, cases: &str, extra: &[&str]) -> Output {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let shim = format!("cmd:python3 {root}/adapters/shims/mini_sass.py");
    let cases = format!("{root}/spec-cases/sass/atom/{cases}.toml");
    let mut args = vec![
        "run",
        "--no-progress",
        "--cases",
        &cases,
        "--adapter",
        &shim,
    ];
    args.extend_from_slice(extra);
    Command::new(env!("CARGO_BIN_EXE_atomcts"))
        .args(&args)
        .env("MINI_SASS_BUG", bug)
        .output()
        .expect("run atomcts")
}

#[test]
fn the_example_shim_conforms_on_bounded_inc_dec() {
    let o = run("", "inc_dec", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("33 passed, 0 failed"), "{}", text(&o));
}

#[test]
fn unsupported_cases_are_skipped_and_said() {
    let o = run("", "cas", &["--verbose"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("SKIP sass/atom/cas::"), "{t}");
    assert!(
        t.contains("unsupported: mini_sass knows only plain integer ATOM lines"),
        "{t}"
    );
}

#[test]
fn an_off_by_one_in_the_shim_is_caught() {
    let o = run("inc", "inc_dec", &[]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("FAIL sass/atom/inc_dec::inc_resets_to_zero_at_bound"),
        "{t}"
    );
}

#[test]
fn a_crashing_shim_costs_only_the_case_in_flight() {
    let o = run("crash", "inc_dec", &[]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("crashed: the shim exited"), "{t}");
    assert!(t.contains("33 errors"), "{t}");
}

#[test]
fn a_hanging_shim_times_out_per_case() {
    let o = run("hang", "exch", &["--adapter-timeout-ms", "200"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("timed out after 200 ms"), "{t}");
}

#[test]
fn garbage_answers_are_protocol_errors_with_the_line_quoted() {
    let o = run("garbage", "exch", &[]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("protocol error: answer is not JSON"), "{t}");
    assert!(t.contains("`this is not json`"), "{t}");
}

#[test]
fn a_shim_that_cannot_start_is_an_infrastructure_error() {
    let o = Command::new(env!("CARGO_BIN_EXE_atomcts"))
        .args(["run", "--adapter", "cmd:/no/such/shim"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}
