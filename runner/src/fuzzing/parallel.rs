//! `atomcts run --generated N --jobs J`: generated cases made on threads that live for the
//! whole run. With an adapter that gives an instance per thread ([`Adapter::fork`]: the
//! built-in model) J threads make and run them, each with its own instance; with any other
//! adapter (a driver, a shim: one instance) J - 1 threads make them (state, the reference's
//! run) while this thread runs them on the adapter, a chunk at a time
//! ([`Workers::Makers`], issue 31: the making is about half of a generated case's host time
//! on a CPU driver). The threads draw the cases from the random stream in turn, a block at a
//! time numbered as it is drawn, and this thread takes every block in its number's order, so
//! the cases and the results are the ones one thread gives (`runner/tests/jobs.rs` compares
//! the JSON lines). At most `3 * J` blocks are drawn and not yet taken. The threads live as
//! long as the run: a thread started per chunk would start a fresh allocator heap each time,
//! which cost more than it saved.

use crate::corpus::case::GeneratedCase;
use crate::fuzzing::generate::{GenError, Generator};
use crate::report::session::{Session, Turned};
use crate::run::parallel::run_one;
use crate::run::results::{CaseResult, Options, Status};
use crate::run::stopped;
use atomcts_adapters::Adapter;
use std::collections::BTreeMap;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::time::Duration;

/// Who runs the generated cases of [`run_generated`].
pub enum Workers<'a> {
    /// An adapter's instances, a thread each: they make and run the cases.
    Forks(Vec<Box<dyn Adapter + Send>>),
    /// Threads that make the cases; the adapter runs them on this thread.
    Makers {
        /// How many threads make cases.
        count: usize,
        /// Cases a thread makes at a time (and this thread runs at a time: enough to keep a
        /// pipelined adapter's window full, [`crate::fuzzing::generate::RUN_CHUNK`]).
        chunk: usize,
        /// The one instance of the adapter.
        adapter: &'a mut dyn Adapter,
    },
}

/// Generated cases a thread takes at a time.
const BLOCK: usize = 64;

/// One block's cases (shared with the thread that made them, which frees them once this thread
/// has taken them: memory is freed where it was allocated) and, with forks, each one's result
/// where this shard ran it (else `None`: not selected, another shard's, or after a stop);
/// without forks (`None`), this thread runs them. Or the error that stopped the making.
type Made = Result<(Arc<Vec<GeneratedCase>>, Option<Vec<Option<CaseResult>>>), GenError>;

/// Makes and runs every remaining case of `g` with `workers`, giving each to `session` in the
/// generator's order, `progress` after each result taken. Stops drawing once [`stopped`]; a
/// generator error stops the run and is returned once every earlier case has been given.
///
/// Each worker draws its next block from `g` under a lock (the random stream is read in one
/// order whichever thread reads it, and a block's number is taken with it), makes it, and
/// sends it; this thread takes the blocks in their numbers' order.
pub fn run_generated(
    session: &mut Session<'_>,
    g: &mut Generator,
    workers: Workers<'_>,
    opts: &Options,
    progress: &mut dyn FnMut(),
) -> Result<(), GenError> {
    let plan = session.plan();
    let maker = g.maker();
    let (forks, mut here, block_len): (Vec<Option<Box<dyn Adapter + Send>>>, _, _) = match workers {
        Workers::Forks(f) => (f.into_iter().map(Some).collect(), None, BLOCK),
        Workers::Makers {
            count,
            chunk,
            adapter,
        } => (
            (0..count.max(1)).map(|_| None).collect(),
            Some(adapter),
            chunk.max(1),
        ),
    };
    let jobs = forks.len();
    // The next block's number and the stream it is drawn from; the condition variable wakes a
    // thread waiting for blocks to be taken.
    let (source, taken_more) = (&Mutex::new((0usize, g)), &Condvar::new());
    let in_flight = 3 * jobs;
    // Set when this thread takes no more blocks (a generator error): the workers stop drawing.
    let halt = &AtomicBool::new(false);
    // Made blocks, not yet taken (at most `in_flight`: the workers wait before drawing more).
    let (done_tx, done_rx) = mpsc::channel::<(usize, Made)>();
    // Blocks taken so far: each thread frees the ones it made below this.
    let taken = &AtomicUsize::new(0);
    std::thread::scope(|s| {
        for mut adapter in forks {
            let (done_tx, maker) = (done_tx.clone(), &maker);
            s.spawn(move || {
                // Blocks this thread made, kept until this thread's results are taken.
                let mut kept: VecDeque<(usize, Arc<Vec<GeneratedCase>>)> = VecDeque::new();
                loop {
                    let (seq, block) = {
                        let Ok(mut src) = source.lock() else { return };
                        loop {
                            if halt.load(Ordering::Acquire) || stopped() {
                                return;
                            }
                            // A learning stream's next draft may wait for the results
                            // of cases this thread has not taken yet.
                            if src.0 < taken.load(Ordering::Acquire) + in_flight && src.1.ready() {
                                break;
                            }
                            src = match taken_more.wait_timeout(src, Duration::from_millis(100)) {
                                Ok((src, _)) => src,
                                Err(_) => return,
                            };
                        }
                        let block = src.1.draw_block(block_len);
                        if block.is_empty() {
                            if src.1.remaining() == 0 {
                                return;
                            }
                            // Every draft up to one that waits was passed over.
                            continue;
                        }
                        src.0 += 1;
                        (src.0 - 1, block)
                    };
                    let given = taken.load(Ordering::Acquire);
                    while kept.front().is_some_and(|(k, _)| *k < given) {
                        kept.pop_front();
                    }
                    let made: Made = block
                        .into_iter()
                        .map(|d| maker.make(d))
                        .collect::<Result<Vec<_>, _>>()
                        .map(|cases| {
                            // Without a fork this thread runs nothing; the judge's
                            // expectation is made only for a case whose answer is not the
                            // reference's own (most are), where it is judged.
                            let results = adapter
                                .as_mut()
                                .map(|a| run_block(&cases, a.as_mut(), plan, opts));
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
        // Take the blocks in order.
        let mut given = 0usize;
        // Drafts a learning stream passed over so far, shown as progress.
        let mut passed_over = 0u64;
        let mut waiting: BTreeMap<usize, Made> = BTreeMap::new();
        let mut outcome = Ok(());
        for (seq, made) in done_rx.iter() {
            if outcome.is_err() {
                continue;
            }
            waiting.insert(seq, made);
            while let Some(made) = waiting.remove(&given) {
                given += 1;
                // What each case's result says to a learning stream.
                let mut turned: Vec<Turned> = Vec::new();
                match made {
                    Ok((cases, Some(results))) => {
                        session.made_generated(cases.len() as u64);
                        for (gc, r) in cases.iter().zip(results) {
                            let item = gc.item();
                            let runs = session.take(item);
                            let r = r.filter(|_| runs);
                            turned.push(
                                r.as_ref().map(|r| {
                                    matches!(r.status, Status::NotApplicable | Status::Skip)
                                }),
                            );
                            if let Some(r) = r
                                && session.give(item.case(), r, opts)
                            {
                                progress();
                            }
                        }
                    }
                    Ok((cases, None)) => {
                        if let Some(adapter) = here.as_deref_mut() {
                            turned = session.run_made(&cases, adapter, opts, progress);
                        }
                    }
                    Err(e) => {
                        // Nothing after the error is taken.
                        outcome = Err(e);
                        halt.store(true, Ordering::Release);
                        waiting.clear();
                        break;
                    }
                }
                // Under the lock, so that a thread between its check and its wait is woken.
                let mut passed = passed_over;
                if let Ok(mut src) = source.lock() {
                    src.1.give(std::mem::take(&mut turned));
                    passed = src.1.passed_over().map_or(0, |p| p.0);
                }
                taken.store(given, Ordering::Release);
                taken_more.notify_all();
                // Drafts passed over count as progress: they are accounted for.
                for _ in passed_over..passed {
                    progress();
                }
                passed_over = passed;
            }
        }
        outcome
    })
}

/// Runs a block's cases on a fork, each where this shard runs it (`None`: not selected,
/// another shard's, or after a stop).
fn run_block(
    cases: &[GeneratedCase],
    adapter: &mut dyn Adapter,
    plan: &crate::report::session::Plan,
    opts: &Options,
) -> Vec<Option<CaseResult>> {
    cases
        .iter()
        .map(|gc| {
            let c = gc.item().case();
            (plan.selects(c) && plan.in_shard(c) && !stopped())
                .then(|| run_one(gc.item(), adapter, opts, plan.times(c)))
        })
        .collect()
}
