//! A batch's jobs for the page (issue 31, point 1): the cases of one batched shader (the
//! `wgsl-naga:` route's [`crate::back::vulkan::Prepared::wgsl_batched`], the same shape) are one
//! job, one `dispatchWorkgroups` of a workgroup per case over shared buffers laid out and
//! guarded as on the Vulkan device ([`crate::back::vulkan::regions`]), with the bases buffer
//! bound after them (a batch of one where it is alone in its shape, so that the browser compiles
//! one form of each shape); a case without a batched form, and every case while reproducers
//! are captured or with `ATOMCTS_WEBGPU_BATCH=1`, is a job of its own, its buffers as it runs
//! alone. The page runs every job the same way, and
//! its answer is checked whole first ([`super::answer`]); a batched job's buffers are then split
//! back into its cases', and a changed guard byte makes the cases beside it errors naming the
//! cross-case write, never a pass.

use super::answer::{JobAnswer, JobShape};
use crate::AdapterErrorKind;
use crate::back::regions::{REGION_ALIGN, Region, cross_case_errors, image, layout};
use crate::back::vulkan::emit::bases_words;

/// A case as the page would run it alone.
pub struct Case<'a> {
    /// Its id (named by a cross-case error).
    pub id: &'a str,
    /// Its shader.
    pub source: &'a str,
    /// The batched form of its shader, where it has one.
    pub batched: Option<&'a str>,
    /// Workgroups it dispatches alone.
    pub groups: u32,
    /// Its storage buffers, bindings 0...
    pub buffers: Vec<&'a [u8]>,
    /// Each buffer's role (named by a cross-case error).
    pub roles: Vec<&'static str>,
}

/// One job of the batch.
pub struct Job {
    /// Its id and buffer lengths, as the answer is checked against.
    pub shape: JobShape,
    /// The shader.
    pub source: String,
    /// Workgroups dispatched.
    pub groups: u32,
    /// The buffers sent (a batched job: each binding's shared buffer, then the bases).
    pub buffers: Vec<Vec<u8>>,
    /// The cases it runs (indices into the batch's cases).
    pub cases: Vec<usize>,
    /// A batched job's regions per binding (the cases' places in its shared buffers).
    regions: Option<Vec<Vec<Region>>>,
}

/// The jobs of `cases`, ids from `first`: the cases of one batched shader together (with
/// `batching`), in the order of each job's first case.
pub fn jobs(cases: &[Case<'_>], first: u64, batching: bool) -> Vec<Job> {
    // The cases of each job.
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (c, case) in cases.iter().enumerate() {
        let same = case.batched.filter(|_| batching).and_then(|b| {
            groups.iter().position(|g| {
                let other = &cases[g[0]];
                other.batched == Some(b) && other.buffers.len() == case.buffers.len()
            })
        });
        match same {
            Some(j) => groups[j].push(c),
            None => groups.push(vec![c]),
        }
    }
    groups
        .into_iter()
        .enumerate()
        .map(|(j, g)| {
            let id = (first + j as u64).to_string();
            // A case with a batched form runs batched even alone in its shape, so that the
            // browser compiles one form of each shape.
            if !batching || cases[g[0]].batched.is_none() {
                return alone(&cases[g[0]], id, g);
            }
            let n = cases[g[0]].buffers.len();
            let mut buffers = Vec::with_capacity(n + 1);
            let mut regions = Vec::with_capacity(n);
            for i in 0..n {
                let lens: Vec<u64> = g
                    .iter()
                    .map(|&c| cases[c].buffers[i].len() as u64)
                    .collect();
                let (r, total) = layout(&lens, REGION_ALIGN);
                let bytes: Vec<&[u8]> = g.iter().map(|&c| cases[c].buffers[i]).collect();
                buffers.push(image(&r, total, &bytes));
                regions.push(r);
            }
            let refs: Vec<&[Region]> = regions.iter().map(|r| &r[..]).collect();
            let order: Vec<usize> = (0..g.len()).collect();
            let bases = bases_words(&order, &refs);
            buffers.push(bases.iter().flat_map(|w| w.to_le_bytes()).collect());
            Job {
                shape: JobShape {
                    id,
                    lens: buffers.iter().map(Vec::len).collect(),
                },
                source: cases[g[0]].batched.unwrap_or_default().to_string(),
                groups: g.len() as u32,
                buffers,
                cases: g,
                regions: Some(regions),
            }
        })
        .collect()
}

/// A job of one case, as it runs alone.
fn alone(case: &Case<'_>, id: String, cases: Vec<usize>) -> Job {
    let buffers: Vec<Vec<u8>> = case.buffers.iter().map(|b| b.to_vec()).collect();
    Job {
        shape: JobShape {
            id,
            lens: buffers.iter().map(Vec::len).collect(),
        },
        source: case.source.to_string(),
        groups: case.groups,
        buffers,
        cases,
        regions: None,
    }
}

impl Job {
    /// Whether it is a batched job (its cases' shader's batched form over shared buffers).
    pub fn batched(&self) -> bool {
        self.regions.is_some()
    }

    /// Each of the job's cases' answer from the job's (checked already: as many buffers as
    /// sent, each as long): its buffers, or the browser's error, or the cross-case write beside
    /// it.
    pub fn split(
        &self,
        answer: &JobAnswer,
        cases: &[Case<'_>],
    ) -> Vec<Result<Vec<Vec<u8>>, AdapterErrorKind>> {
        let browser =
            |e: &String| AdapterErrorKind::Crashed(format!("the browser could not run it: {e}"));
        let (regions, after) = match (&self.regions, answer) {
            (_, Err(e)) => return self.cases.iter().map(|_| Err(browser(e))).collect(),
            (None, Ok(b)) => return vec![Ok(b.clone())],
            (Some(r), Ok(b)) => (r, b),
        };
        let names: Vec<String> = self.cases.iter().map(|&c| cases[c].id.into()).collect();
        let mut crossed: Vec<Option<String>> = vec![None; self.cases.len()];
        let alone = "ATOMCTS_WEBGPU_BATCH=1 runs each case alone";
        for (i, r) in regions.iter().enumerate() {
            let role = cases[self.cases[0]].roles.get(i).copied().unwrap_or("");
            let before = (&self.buffers[i][..], &after[i][..]);
            for (k, why) in cross_case_errors(r, before, &names, (i, role), alone) {
                crossed[k].get_or_insert(why);
            }
        }
        crossed
            .into_iter()
            .enumerate()
            .map(|(k, why)| match why {
                Some(why) => Err(AdapterErrorKind::Crashed(why)),
                None => Ok(regions
                    .iter()
                    .zip(after)
                    .map(|(r, b)| {
                        let g = r[k];
                        b[g.start as usize..(g.start + g.len) as usize].to_vec()
                    })
                    .collect()),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::back::vulkan::emit::BATCH_BASES_STRIDE;

    fn case<'a>(id: &'a str, batched: Option<&'a str>, buffers: Vec<&'a [u8]>) -> Case<'a> {
        Case {
            id,
            source: "alone",
            batched,
            groups: 1,
            roles: vec!["memory"; buffers.len()],
            buffers,
        }
    }

    #[test]
    fn one_shape_is_one_job_and_each_case_gets_its_own_buffers_back() {
        let (m0, m1, m2) = ([1u8, 2, 3, 4], [5u8; 8], [9u8; 4]);
        let cases = [
            case("a", Some("S"), vec![&m0, &m0]),
            case("b", Some("T"), vec![&m1]),
            case("c", Some("S"), vec![&m2, &m1]),
        ];
        let js = jobs(&cases, 10, true);
        assert_eq!(js.len(), 2);
        let (s, t) = (&js[0], &js[1]);
        assert_eq!((s.shape.id.as_str(), s.cases.clone()), ("10", vec![0, 2]));
        assert_eq!((s.source.as_str(), s.groups), ("S", 2));
        // A case alone in its shape is a batch of one.
        assert_eq!(
            (t.source.as_str(), t.cases.clone(), t.groups),
            ("T", vec![1], 1)
        );
        assert_eq!(t.buffers.len(), 2);
        // Without a batched form, a case runs as alone.
        let lone = [case("d", None, vec![&m1])];
        let js1 = jobs(&lone, 0, true);
        assert_eq!(
            (js1[0].source.as_str(), &js1[0].buffers),
            ("alone", &vec![m1.to_vec()])
        );
        // Two shared buffers and the bases: each case's region's byte offset per binding.
        assert_eq!(s.buffers.len(), 3);
        let r = s.regions.as_ref().unwrap();
        let word =
            |i: usize| u32::from_le_bytes(s.buffers[2][4 * i..4 * i + 4].try_into().unwrap());
        let stride = BATCH_BASES_STRIDE as usize;
        assert_eq!(
            (word(0), word(1), word(stride), word(stride + 1)),
            (
                r[0][0].start as u32,
                r[1][0].start as u32,
                r[0][1].start as u32,
                r[1][1].start as u32
            )
        );
        // The page writes each case's own bytes: each gets its own back.
        let mut after: Vec<Vec<u8>> = s.buffers.clone();
        after[0][r[0][1].start as usize] = 0xee;
        let got = s.split(&Ok(after.clone()), &cases);
        assert_eq!(got[0].as_ref().unwrap(), &vec![m0.to_vec(), m0.to_vec()]);
        assert_eq!(
            got[1].as_ref().unwrap(),
            &vec![vec![0xee, 9, 9, 9], m1.to_vec()]
        );
        // Without batching, every case is its own job.
        assert_eq!(jobs(&cases, 0, false).len(), 3);
    }

    #[test]
    fn a_write_outside_the_cases_bytes_is_an_error_of_both_neighbours_never_a_pass() {
        let m = [0u8; 4];
        let cases = [
            case("a", Some("S"), vec![&m]),
            case("b", Some("S"), vec![&m]),
            case("c", Some("S"), vec![&m]),
        ];
        let js = jobs(&cases, 0, true);
        let j = &js[0];
        let r = &j.regions.as_ref().unwrap()[0];
        // Just past case b's 4 bytes (its padding): b and c are errors naming the write.
        let mut after = j.buffers.clone();
        after[0][(r[1].start + 4) as usize] ^= 1;
        let got = j.split(&Ok(after), &cases);
        assert!(got[0].is_ok());
        for k in [1, 2] {
            let Err(AdapterErrorKind::Crashed(why)) = &got[k] else {
                panic!("{k}: {:?}", got[k]);
            };
            assert!(
                why.contains("cross-case write") && why.contains("`b`") && why.contains("`c`"),
                "{why}"
            );
        }
        // The browser's error is every case's.
        let got = j.split(&Err("lost".into()), &cases);
        assert!(
            got.iter()
                .all(|a| matches!(a, Err(AdapterErrorKind::Crashed(w)) if w.contains("lost")))
        );
    }
}
