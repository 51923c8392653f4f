//! `atomcts run --jobs N`: cases spread over N threads, each with its own instance of an
//! adapter that can give one ([`Adapter::fork`]: the built-in model), and every result given
//! in the cases' order, as one thread gives them. A case runs exactly as it does on one
//! thread ([`run_case_repeated`] for repeated cases, [`run_case_lean`] for the others); only
//! which thread runs it changes.

use crate::corpus::case::{Case, Item};
use crate::run::results::{CaseResult, Options};
use crate::run::{run_case_lean, run_case_repeated, stopped};
use atomcts_adapters::Adapter;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

/// Most threads `--jobs` takes.
pub const MAX_JOBS: usize = 64;

/// Cases a thread takes at a time: few enough that the threads finish together, enough that
/// taking them costs nothing beside running them.
const BLOCK: usize = 16;

/// One case run `times` times, as [`crate::report::session`]'s one thread runs it:
/// [`run_case_repeated`] for a repeated case, [`run_case_lean`] for the others.
pub fn run_one(
    item: Item<'_>,
    adapter: &mut dyn Adapter,
    opts: &Options,
    times: u32,
) -> CaseResult {
    if times > 1 {
        run_case_repeated(item, adapter, opts, times)
    } else {
        run_case_lean(item, adapter, opts)
    }
}

/// Runs `cases` on `forks` (one thread each), `times(case)` runs per case, giving each result
/// to `out` in the cases' order as soon as it and every earlier one are known. Stops taking
/// cases once [`stopped`]; a result after the stop is not given (as [`crate::run::run_cases`]).
pub fn run_cases_parallel(
    cases: &[Item<'_>],
    forks: Vec<Box<dyn Adapter + Send>>,
    opts: &Options,
    times: &(dyn Fn(&Case) -> u32 + Sync),
    out: &mut dyn FnMut(&Case, CaseResult),
) {
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel::<(usize, Vec<CaseResult>)>();
    std::thread::scope(|s| {
        for mut adapter in forks {
            let (tx, next) = (tx.clone(), &next);
            s.spawn(move || {
                loop {
                    let start = next.fetch_add(BLOCK, Ordering::Relaxed);
                    if start >= cases.len() {
                        return;
                    }
                    let mut block = Vec::with_capacity(BLOCK);
                    for &item in &cases[start..(start + BLOCK).min(cases.len())] {
                        if stopped() {
                            break;
                        }
                        block.push(run_one(item, adapter.as_mut(), opts, times(item.case())));
                    }
                    let short = start + block.len() < (start + BLOCK).min(cases.len());
                    if tx.send((start, block)).is_err() || short {
                        return;
                    }
                }
            });
        }
        drop(tx);
        // In order: a block is given once every block before it has been.
        let mut waiting: BTreeMap<usize, Vec<CaseResult>> = BTreeMap::new();
        let mut given = 0;
        for (start, block) in rx {
            waiting.insert(start, block);
            while let Some(block) = waiting.remove(&given) {
                let full = block.len() == BLOCK.min(cases.len() - given);
                for r in block {
                    if stopped() {
                        return;
                    }
                    out(cases[given].case(), r);
                    given += 1;
                }
                if !full {
                    // A thread stopped inside this block: nothing after it is given.
                    return;
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::case::parse_file;
    use atomcts_adapters::ReferenceAdapter;

    fn cases(n: usize) -> Vec<Case> {
        let mut text = String::from("dialect = \"sass\"\ncite = \"x\"\n");
        for i in 0..n {
            // Every seventh expectation is wrong: those cases fail, in their places.
            let sum = 3 + i + usize::from(i % 7 == 3);
            text.push_str(&format!(
                "[[case]]\nname = \"c{i}\"\nasm = \"ATOM.ADD.U32 R0, [R2], R4\"\ngiven = {{ R2 = 0x1000, R4 = {i}, mem = {{ 0x1000 = \"u32:3\" }} }}\nexpect = {{ R0 = 3, mem = {{ 0x1000 = \"u32:{sum}\" }} }}\n"
            ));
        }
        let loaded = parse_file(
            std::path::Path::new("spec-cases"),
            std::path::Path::new("spec-cases/sass/x.toml"),
            text,
        );
        assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
        loaded.cases
    }

    fn opts() -> Options {
        Options {
            profile: atomcts_reference::knobs::Profile::default(),
            race_budget: 1_000_000,
            cases_arg: "x".into(),
            adapter_arg: String::new(),
        }
    }

    /// Every case once, in order, with the verdict one thread gives (some cases fail: a
    /// reordering or a result given to the wrong case shows).
    #[test]
    fn results_come_in_order_with_one_threads_verdicts() {
        let cases = cases(101);
        let items: Vec<Item<'_>> = cases.iter().map(Item::from).collect();
        let opts = opts();
        let mut one = Vec::new();
        let mut adapter = ReferenceAdapter;
        for &item in &items {
            one.push((
                item.case().id.clone(),
                run_case_lean(item, &mut adapter, &opts).status,
            ));
        }
        assert!(
            one.iter().any(|(_, s)| s.is_failure()),
            "no case fails: {one:?}"
        );
        assert!(one.iter().any(|(_, s)| !s.is_failure()), "no case passes");
        for jobs in [1, 2, 3, 8] {
            let forks = (0..jobs)
                .map(|_| ReferenceAdapter.fork().unwrap())
                .collect();
            let mut got = Vec::new();
            run_cases_parallel(&items, forks, &opts, &|_| 1, &mut |c, r| {
                got.push((c.id.clone(), r.status))
            });
            assert_eq!(got, one, "--jobs {jobs}");
        }
    }
}
