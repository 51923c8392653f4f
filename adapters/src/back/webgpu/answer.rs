//! What the page may answer, checked before anything of it is believed (the page runs in a
//! browser this project did not write). A batch's answer is a JSON object
//! `{"type":"answers","results":[...]}` with exactly one result per job, in the jobs' order, each
//! `{"id": <the job's id>, "buffers": [[byte, ...], ...]}` with exactly the job's buffers, each
//! exactly as long as it was sent, every byte an integer 0..=255; or `{"id": ..., "error": "..."}`
//! for a job the browser could not run. Anything else fails the whole batch: no job of it passes.

use serde_json::Value;

/// What a job was sent with: its id and its buffers' lengths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobShape {
    /// The job's id in the batch.
    pub id: String,
    /// Each storage buffer's length in bytes.
    pub lens: Vec<usize>,
}

/// One job's answer: its buffers as read back, or the browser's error.
pub type JobAnswer = Result<Vec<Vec<u8>>, String>;

/// Checks a batch's answer against the jobs sent; `Err` (one line) when its shape is wrong in
/// any way.
pub fn check(jobs: &[JobShape], text: &str) -> Result<Vec<JobAnswer>, String> {
    let v: Value =
        serde_json::from_str(text).map_err(|e| format!("the page's answer is not JSON: {e}"))?;
    if v.get("type").and_then(Value::as_str) != Some("answers") {
        return Err("the page's answer is not of type `answers`".into());
    }
    let results = v
        .get("results")
        .and_then(Value::as_array)
        .ok_or("the page's answer has no `results` list")?;
    if results.len() != jobs.len() {
        return Err(format!(
            "the page answered {} results for {} jobs",
            results.len(),
            jobs.len()
        ));
    }
    jobs.iter()
        .zip(results)
        .enumerate()
        .map(|(i, (job, r))| one(job, r).map_err(|e| format!("result {i} (job {}): {e}", job.id)))
        .collect()
}

fn one(job: &JobShape, r: &Value) -> Result<JobAnswer, String> {
    let id = r.get("id").and_then(Value::as_str).ok_or("no `id`")?;
    if id != job.id {
        return Err(format!("answers job `{id}` (out of order or invented)"));
    }
    if let Some(e) = r.get("error") {
        let e = e.as_str().ok_or("`error` is not text")?;
        return Ok(Err(e.to_string()));
    }
    let buffers = r
        .get("buffers")
        .and_then(Value::as_array)
        .ok_or("no `buffers` list")?;
    if buffers.len() != job.lens.len() {
        return Err(format!(
            "{} buffers where {} were sent",
            buffers.len(),
            job.lens.len()
        ));
    }
    buffers
        .iter()
        .zip(&job.lens)
        .enumerate()
        .map(|(b, (bytes, &len))| {
            let bytes = bytes
                .as_array()
                .ok_or_else(|| format!("buffer {b} is not a list"))?;
            if bytes.len() != len {
                return Err(format!(
                    "buffer {b} has {} bytes where {len} were sent",
                    bytes.len()
                ));
            }
            bytes
                .iter()
                .map(|x| {
                    x.as_u64()
                        .and_then(|x| u8::try_from(x).ok())
                        .ok_or_else(|| format!("buffer {b} holds {x}, not a byte"))
                })
                .collect()
        })
        .collect::<Result<Vec<Vec<u8>>, String>>()
        .map(Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jobs() -> Vec<JobShape> {
        vec![
            JobShape {
                id: "0".into(),
                lens: vec![4, 2],
            },
            JobShape {
                id: "1".into(),
                lens: vec![1],
            },
        ]
    }

    #[test]
    fn a_true_answer_is_read_back_byte_for_byte() {
        let a = check(
            &jobs(),
            r#"{"type":"answers","results":[{"id":"0","buffers":[[1,2,3,255],[0,9]]},{"id":"1","error":"shader-creation error: x"}]}"#,
        )
        .unwrap();
        assert_eq!(a[0], Ok(vec![vec![1, 2, 3, 255], vec![0, 9]]));
        assert_eq!(a[1], Err("shader-creation error: x".to_string()));
    }

    #[test]
    fn every_lie_about_the_shape_fails_the_batch() {
        let good0 = r#"{"id":"0","buffers":[[1,2,3,4],[0,9]]}"#;
        let good1 = r#"{"id":"1","buffers":[[7]]}"#;
        let lies = [
            ("not json", "{not json".to_string()),
            ("wrong type", format!(r#"{{"type":"hello","results":[{good0},{good1}]}}"#)),
            ("no results", r#"{"type":"answers"}"#.to_string()),
            ("short", format!(r#"{{"type":"answers","results":[{good0}]}}"#)),
            ("extra", format!(r#"{{"type":"answers","results":[{good0},{good1},{good1}]}}"#)),
            ("reordered", format!(r#"{{"type":"answers","results":[{good1},{good0}]}}"#)),
            ("no id", r#"{"type":"answers","results":[{"buffers":[[1,2,3,4],[0,9]]},{"id":"1","buffers":[[7]]}]}"#.to_string()),
            ("short buffer", format!(r#"{{"type":"answers","results":[{{"id":"0","buffers":[[1,2,3],[0,9]]}},{good1}]}}"#)),
            ("long buffer", format!(r#"{{"type":"answers","results":[{{"id":"0","buffers":[[1,2,3,4,5],[0,9]]}},{good1}]}}"#)),
            ("missing buffer", format!(r#"{{"type":"answers","results":[{{"id":"0","buffers":[[1,2,3,4]]}},{good1}]}}"#)),
            ("over-wide byte", format!(r#"{{"type":"answers","results":[{{"id":"0","buffers":[[1,2,3,256],[0,9]]}},{good1}]}}"#)),
            ("negative byte", format!(r#"{{"type":"answers","results":[{{"id":"0","buffers":[[1,2,3,-1],[0,9]]}},{good1}]}}"#)),
            ("float byte", format!(r#"{{"type":"answers","results":[{{"id":"0","buffers":[[1,2,3,1.5],[0,9]]}},{good1}]}}"#)),
            ("text byte", format!(r#"{{"type":"answers","results":[{{"id":"0","buffers":[[1,2,3,"4"],[0,9]]}},{good1}]}}"#)),
            ("error not text", format!(r#"{{"type":"answers","results":[{good0},{{"id":"1","error":7}}]}}"#)),
            ("no buffers", format!(r#"{{"type":"answers","results":[{good0},{{"id":"1"}}]}}"#)),
        ];
        for (what, text) in lies {
            let e = check(&jobs(), &text).err();
            assert!(e.is_some(), "{what}: accepted");
            assert_eq!(e.unwrap().lines().count(), 1, "{what}");
        }
    }
}
