//! Throughput of the adapter protocol alone (issue 9): `N` generated cases' requests, built
//! beforehand, through a shim with `run_batch` (pipelined when the shim offers a window).
//!
//! `cargo run --release --example pipe_bench -- 'target/release/examples/echo_shim' 100000`
//!
//! At most 10,000 distinct requests are built; larger N cycle through them (memory stays
//! bounded). The runner's CPU is every thread of this process (the reader and writer threads
//! included), from /proc.

use atomcts_adapters::{Pipelined, Request, SubprocessAdapter};
use atomcts_reference::Profile;
use std::time::{Duration, Instant};

/// CPU seconds this process has used (user + system, every thread), from /proc (Linux).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = after
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    // Fields 14 and 15 of stat (utime, stime), in clock ticks of 1/100 s.
    (f.get(11).copied().unwrap_or(0.0) + f.get(12).copied().unwrap_or(0.0)) / 100.0
}

/// Distinct requests built (the N cases cycle through them, so memory stays bounded).
const POOL: u64 = 10_000;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(cmd), Some(n)) = (args.get(1), args.get(2).and_then(|n| n.parse::<u64>().ok()))
    else {
        eprintln!("usage: pipe_bench <shim command> <cases>");
        std::process::exit(2);
    };
    let profile = Profile::default();
    let cases =
        atomcts::fuzzing::generate::generate(1, n.min(POOL), &profile).expect("generated cases");
    let states: Vec<_> = cases
        .iter()
        .map(|c| atomcts::corpus::state::item_state(c.item()).expect("state"))
        .collect();
    let requests: Vec<Request<'_>> = cases
        .iter()
        .zip(&states)
        .map(|(c, s)| Request {
            id: &c.case.id,
            dialect: c.case.dialect,
            asm: &c.case.asm,
            state: s,
            profile: &profile,
            lowered: None,
        })
        .collect();
    let mut a = SubprocessAdapter::start(cmd, Duration::from_secs(10)).expect("shim starts");
    let window = a.window();
    let (t, cpu) = (Instant::now(), cpu_seconds());
    let (mut left, mut errors) = (n, 0);
    while left > 0 {
        let k = left.min(requests.len() as u64) as usize;
        errors += a
            .run_batch(&requests[..k])
            .iter()
            .filter(|a| a.is_err())
            .count();
        left -= k as u64;
    }
    let dt = t.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu;
    println!(
        "{n} requests through `{cmd}` (window {window}): {dt:.3} s, {:.0} cases/s wall; the runner's CPU {cpu:.2} s ({:.1} us per case); {errors} adapter errors",
        n as f64 / dt,
        cpu * 1e6 / n as f64,
    );
}
