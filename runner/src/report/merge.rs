//! Merging the JSON reports of one run's shards (`atomcts merge`, `report --from`), and the
//! check both share (issue 7, D13; issue 27, H12, H14): the reports must be one whole run.

use crate::report::Report;

/// How many missing shards a message lists (the count is always given).
const MISSING_SAMPLE: usize = 8;

/// Reads `hash:K/N` with `1 <= K <= N`.
pub fn parse_partition(s: &str) -> Option<(u64, u64)> {
    let (k, n) = s.strip_prefix("hash:")?.split_once('/')?;
    let (k, n) = (k.parse::<u64>().ok()?, n.parse::<u64>().ok()?);
    (k >= 1 && k <= n).then_some((k, n))
}

/// Checks that the partitions `hash:K/N` of `shards` (each with the file it came from) cover
/// `1..=N` exactly once: the problems, or an error if they cannot be combined at all. Works
/// for any `N` up to 2^64 - 1: missing shards are counted, and a few of them named.
fn shard_coverage(shards: &[(&str, Option<&str>)]) -> Result<Vec<String>, String> {
    if shards.iter().all(|(_, p)| p.is_none()) {
        return Ok(if shards.len() > 1 {
            let files: Vec<&str> = shards.iter().map(|(f, _)| *f).collect();
            vec![format!(
                "{} unpartitioned reports of one selection ({}): each case is in every one",
                shards.len(),
                files.join(", ")
            )]
        } else {
            vec![]
        });
    }
    let mut ks: Vec<(u64, &str)> = Vec::new();
    let mut total: Option<(u64, &str)> = None;
    for (file, s) in shards {
        let Some(s) = s else {
            return Err(format!(
                "{file}: a report without a partition cannot merge with shards"
            ));
        };
        let (k, n) =
            parse_partition(s).ok_or_else(|| format!("{file}: unreadable partition `{s}`"))?;
        if let Some((t, other)) = total
            && t != n
        {
            return Err(format!(
                "shards of different partitions: {other} has N = {t}, {file} has N = {n}"
            ));
        }
        total = Some((n, file));
        ks.push((k, file));
    }
    let n = total.map_or(0, |(n, _)| n);
    ks.sort_unstable();
    let mut out = Vec::new();
    let mut distinct: Vec<u64> = ks.iter().map(|(k, _)| *k).collect();
    distinct.dedup();
    let missing = n - distinct.len() as u64;
    if missing > 0 {
        // The first few missing shards: walking up from 1 skips at most every present one.
        let mut sample = Vec::new();
        let mut present = distinct.iter().peekable();
        let mut k = 1u64;
        while sample.len() < MISSING_SAMPLE && k <= n {
            if present.peek() == Some(&&k) {
                present.next();
            } else {
                sample.push(format!("hash:{k}/{n}"));
            }
            if k == n {
                break;
            }
            k += 1;
        }
        let more = missing - sample.len() as u64;
        out.push(format!(
            "missing shard(s): {}{} ({missing} of {n} missing)",
            sample.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
    }
    let mut dup: Vec<String> = Vec::new();
    for w in ks.chunk_by(|a, b| a.0 == b.0).filter(|g| g.len() > 1) {
        let files: Vec<&str> = w.iter().map(|(_, f)| *f).collect();
        dup.push(format!("hash:{}/{n} ({})", w[0].0, files.join(", ")));
    }
    if !dup.is_empty() {
        out.push(format!("shard(s) given more than once: {}", dup.join("; ")));
    }
    Ok(out)
}

impl Report {
    /// Merges shard reports: same adapter, profile and corpus selection; with partitions, every
    /// shard `1..=N` exactly once (issue 7, D13). Load errors every shard saw are kept once.
    /// The problems [`Report::merge_named`] finds are load errors of the merged report.
    pub fn merge(reports: Vec<Report>) -> Result<Report, String> {
        let named = reports
            .into_iter()
            .enumerate()
            .map(|(i, r)| (format!("report {}", i + 1), r))
            .collect();
        let (mut merged, problems) = Report::merge_named(named)?;
        merged
            .load_errors
            .extend(problems.into_iter().map(|e| format!("merge: {e}")));
        Ok(merged)
    }

    /// Merges the reports of one run, each named by the file it came from, and says what keeps
    /// them from being the whole run (issue 27, H14; the one check `merge` and `report --from`
    /// share): a run that was interrupted or did not write every result, shards missing or
    /// given twice, unpartitioned reports given twice, a case in more than one report, fewer
    /// or more results than the selection has cases. Each problem names the files. `Err`: the
    /// reports cannot be merged at all (different adapters, profiles, selections or
    /// partitions).
    pub fn merge_named(reports: Vec<(String, Report)>) -> Result<(Report, Vec<String>), String> {
        let files: Vec<String> = reports.iter().map(|(f, _)| f.clone()).collect();
        let mut problems = Vec::new();
        for (f, r) in &reports {
            if let Some(i) = &r.interrupted {
                problems.push(format!("{f}: the run was {}", i.summary()));
            }
        }
        let shards: Vec<(&str, Option<&str>)> = reports
            .iter()
            .map(|(f, r)| (f.as_str(), r.partition.as_deref()))
            .collect();
        problems.extend(shard_coverage(&shards)?);
        let mut it = reports.into_iter();
        let (first_file, mut first) = it.next().ok_or("nothing to merge")?;
        let mut seen_errors: std::collections::BTreeSet<String> =
            first.load_errors.iter().cloned().collect();
        // Which file each kept result came from, to name both files of a repeated case.
        let mut origin: Vec<usize> = vec![0; first.results.len()];
        for (i, (f, r)) in it.enumerate() {
            if r.adapter != first.adapter || r.profile != first.profile {
                return Err(format!(
                    "cannot merge {f} ({}/{}) with {first_file} ({}/{})",
                    r.adapter, r.profile, first.adapter, first.profile
                ));
            }
            if r.corpus != first.corpus {
                return Err(format!(
                    "cannot merge shards of different selections: {first_file} has {} cases (digest {}), {f} has {} cases (digest {})",
                    first.corpus.selected, first.corpus.digest, r.corpus.selected, r.corpus.digest
                ));
            }
            for e in r.load_errors {
                if seen_errors.insert(e.clone()) {
                    first.load_errors.push(e);
                }
            }
            origin.extend(std::iter::repeat_n(i + 1, r.results.len()));
            first.results.extend(r.results);
            for (k, c) in r.omitted {
                first.omitted.entry(k).or_default().merge(&c);
            }
        }
        let mut order: Vec<usize> = (0..first.results.len()).collect();
        order.sort_by(|a, b| first.results[*a].id.cmp(&first.results[*b].id));
        let mut repeated: Vec<String> = Vec::new();
        let mut count = 0usize;
        for w in order.windows(2) {
            let (a, b) = (&first.results[w[0]], &first.results[w[1]]);
            if a.id == b.id {
                count += 1;
                if repeated.len() < MISSING_SAMPLE {
                    repeated.push(format!(
                        "{} ({} and {})",
                        a.id, files[origin[w[0]]], files[origin[w[1]]]
                    ));
                }
            }
        }
        if count > 0 {
            problems.push(format!(
                "{count} case(s) appeared in more than one report: {}{}",
                repeated.join(", "),
                if count > repeated.len() { ", ..." } else { "" }
            ));
        }
        let mut results = std::mem::take(&mut first.results);
        results.sort_by(|a, b| a.id.cmp(&b.id));
        results.dedup_by(|a, b| a.id == b.id);
        first.results = results;
        let selected = first.corpus.selected;
        let total = first.total();
        if total != selected {
            problems.push(format!(
                "{} of the {selected} selected cases are {} ({})",
                total.abs_diff(selected),
                if total < selected {
                    "missing from the merged reports"
                } else {
                    "results beyond the selection"
                },
                files.join(", ")
            ));
        }
        first.partition = None;
        first.jsonl = None;
        first.interrupted = None;
        Ok((first, problems))
    }

    /// [`Report::merge_named`] of each run among `reports` (the reports of one adapter and
    /// profile are the shards of one run): the merged runs in the order they first appear, and
    /// the problems of them all.
    pub fn merge_runs(
        reports: Vec<(String, Report)>,
    ) -> Result<(Vec<Report>, Vec<String>), String> {
        let mut runs: Vec<Vec<(String, Report)>> = Vec::new();
        for (f, r) in reports {
            match runs
                .iter_mut()
                .find(|g| g[0].1.adapter == r.adapter && g[0].1.profile == r.profile)
            {
                Some(g) => g.push((f, r)),
                None => runs.push(vec![(f, r)]),
            }
        }
        let mut merged = Vec::new();
        let mut problems = Vec::new();
        for run in runs {
            let (m, p) = Report::merge_named(run)?;
            merged.push(m);
            problems.extend(p);
        }
        Ok((merged, problems))
    }
}
