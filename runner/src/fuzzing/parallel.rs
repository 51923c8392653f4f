//! `atomcts run --generated N --jobs J`: generated cases made and run on J threads that live
//! for the whole run, each with its own instance of the adapter ([`Adapter::fork`]: the
//! built-in model). This thread draws every case from the random stream, in order, and takes
//! every result in that order, so the cases and the results are the ones one thread gives
//! (`runner/tests/cli.rs` compares the JSON lines); only the making (state, reference) and the
//! running and judging are spread. The threads live as long as the run: a thread started per
//! chunk would start a fresh allocator heap each time, which cost more than it saved.

use crate::corpus::case::GeneratedCase;
use crate::fuzzing::generate::{Drawn, GenError, Generator};
use crate::report::session::Session;
use crate::run::parallel::run_one;
use crate::run::results::{CaseResult, Options};
use crate::run::stopped;
use atomcts_adapters::Adapter;
use std::collections::BTreeMap;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};

/// Generated cases a thread takes at a time.
const BLOCK: usize = 64;

/// One block's cases (shared with the thread that made them, which frees them once this thread
/// has taken them: memory is freed where it was allocated) and each one's result where this
/// shard ran it (else `None`: not selected, another shard's, or after a stop); or the error
/// that stopped the making.
type Made = Result<(Arc<Vec<GeneratedCase>>, Vec<Option<CaseResult>>), GenError>;

/// Makes and runs every remaining case of `g` on `forks` (a thread each), giving each to
/// `session` in the generator's order, `progress` after each result taken. Stops drawing once
/// [`stopped`]; a generator error stops the run and is returned once every earlier case has
/// been given.
pub fn run_generated(
    session: &mut Session<'_>,
    g: &mut Generator,
    forks: Vec<Box<dyn Adapter + Send>>,
    opts: &Options,
    progress: &mut dyn FnMut(),
) -> Result<(), GenError> {
    let plan = session.plan();
    let maker = g.maker();
    let jobs = forks.len();
    // Two blocks waiting per thread keep every thread busy while this one takes results.
    let (work_tx, work_rx) = mpsc::sync_channel::<(usize, Vec<Drawn>)>(2 * jobs);
    let work_rx = Mutex::new(work_rx);
    let (done_tx, done_rx) = mpsc::channel::<(usize, Made)>();
    // Blocks taken so far: each thread frees the ones it made below this.
    let taken = &AtomicUsize::new(0);
    std::thread::scope(|s| {
        for mut adapter in forks {
            let (work_rx, done_tx, maker) = (&work_rx, done_tx.clone(), &maker);
            s.spawn(move || {
                // Blocks this thread made, kept until this thread's results are taken.
                let mut kept: VecDeque<(usize, Arc<Vec<GeneratedCase>>)> = VecDeque::new();
                loop {
                    let next = match work_rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => return,
                    };
                    let Ok((seq, block)) = next else { return };
                    let given = taken.load(Ordering::Acquire);
                    while kept.front().is_some_and(|(k, _)| *k < given) {
                        kept.pop_front();
                    }
                    let made: Made = block
                        .into_iter()
                        .map(|d| maker.make(d))
                        .collect::<Result<Vec<_>, _>>()
                        .map(|cases| {
                            let results = cases
                                .iter()
                                .map(|gc| {
                                    let c = gc.item().case();
                                    (plan.selects(c) && plan.in_shard(c) && !stopped()).then(|| {
                                        run_one(gc.item(), adapter.as_mut(), opts, plan.times(c))
                                    })
                                })
                                .collect();
                            let cases = Arc::new(cases);
                            kept.push_back((seq, cases.clone()));
                            (cases, results)
                        });
                    if done_tx.send((seq, made)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(done_tx);
        // Draw and send blocks while taking the results in order.
        let (mut sent, mut given) = (0usize, 0usize);
        let mut waiting: BTreeMap<usize, Made> = BTreeMap::new();
        let mut drawing = true;
        let mut outcome = Ok(());
        let mut work_tx = Some(work_tx);
        let in_flight = 3 * jobs;
        loop {
            while drawing && sent - given < in_flight {
                let block = if stopped() {
                    Vec::new()
                } else {
                    g.draw_block(BLOCK)
                };
                if block.is_empty() {
                    drawing = false;
                    work_tx = None;
                    break;
                }
                let Some(tx) = &work_tx else { break };
                if tx.send((sent, block)).is_err() {
                    drawing = false;
                    break;
                }
                sent += 1;
            }
            if given == sent {
                break;
            }
            let Ok((seq, made)) = done_rx.recv() else {
                break;
            };
            waiting.insert(seq, made);
            while let Some(made) = waiting.remove(&given) {
                given += 1;
                match made {
                    Ok((cases, results)) => {
                        session.made_generated(cases.len() as u64);
                        for (gc, r) in cases.iter().zip(results) {
                            let item = gc.item();
                            let runs = session.take(item);
                            if let (true, Some(r)) = (runs, r)
                                && session.give(item.case(), r, opts)
                            {
                                progress();
                            }
                        }
                        drop(cases);
                        taken.store(given, Ordering::Release);
                    }
                    Err(e) => {
                        // Nothing after the error is taken.
                        outcome = Err(e);
                        drawing = false;
                        work_tx = None;
                        waiting.clear();
                        given = sent;
                    }
                }
            }
        }
        drop(work_tx);
        outcome
    })
}
