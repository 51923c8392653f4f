//! Throughput of the adapter protocol alone (issue 9): `N` generated cases' requests, built
//! beforehand, through a shim with `run_batch` (pipelined when the shim offers a window).
//!
//! `cargo run --release --example pipe_bench -- 'target/release/examples/echo_shim' 100000`

use atomcts_adapters::{Adapter, Request, SubprocessAdapter};
use atomcts_reference::Profile;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(cmd), Some(n)) = (args.get(1), args.get(2).and_then(|n| n.parse::<u64>().ok()))
    else {
        eprintln!("usage: pipe_bench <shim command> <cases>");
        std::process::exit(2);
    };
    let profile = Profile::default();
    let cases = atomcts::generate::generate(1, n, &profile).expect("generated cases");
    let states: Vec<_> = cases
        .iter()
        .map(|c| atomcts::build::build_state(c).expect("state"))
        .collect();
    let requests: Vec<Request<'_>> = cases
        .iter()
        .zip(&states)
        .map(|(c, s)| Request {
            id: &c.id,
            dialect: c.dialect,
            asm: &c.asm,
            state: s,
            profile: &profile,
        })
        .collect();
    let mut a = SubprocessAdapter::start(cmd, Duration::from_secs(10)).expect("shim starts");
    let t = Instant::now();
    let answers = a.run_batch(&requests);
    let dt = t.elapsed().as_secs_f64();
    let errors = answers.iter().filter(|a| a.is_err()).count();
    println!(
        "{n} requests through `{cmd}` (window {}): {dt:.3} s, {:.0} cases/s, {errors} adapter errors",
        a.window(),
        n as f64 / dt
    );
}
