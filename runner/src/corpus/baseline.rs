//! The baseline file format (`atomcts run --baseline`, D22): one entry per line, `#` starts a
//! comment. An entry is a case id (a known failure: asserted to still fail) or `flaky <id>` (a
//! case whose failures are reported as flaky).

use std::collections::BTreeSet;
use std::path::Path;

/// A baseline: its entries with their line numbers (1-based), as written.
#[derive(Clone, Debug, Default)]
pub struct Baseline {
    /// `(line number, entry)`, comments and blank lines dropped.
    pub entries: Vec<(usize, String)>,
}

impl Baseline {
    /// Parses a baseline's text.
    pub fn parse(text: &str) -> Baseline {
        Baseline {
            entries: text
                .lines()
                .enumerate()
                .map(|(i, l)| (i + 1, l.split('#').next().unwrap_or("").trim().to_string()))
                .filter(|(_, l)| !l.is_empty())
                .collect(),
        }
    }

    /// The known failures: the case ids of the entries that are not `flaky`.
    pub fn known(&self) -> BTreeSet<String> {
        self.entries
            .iter()
            .filter(|(_, id)| !id.starts_with("flaky "))
            .map(|(_, id)| id.clone())
            .collect()
    }

    /// The case ids of the `flaky <id>` entries.
    pub fn flaky(&self) -> BTreeSet<String> {
        self.entries
            .iter()
            .filter_map(|(_, id)| id.strip_prefix("flaky ").map(|s| s.trim().to_string()))
            .collect()
    }

    /// One error per entry that names none of `hits` (the ids of every loaded case the
    /// baseline names): stale or misspelt, never ignored. `file` names the baseline.
    pub fn unmatched(&self, file: &Path, hits: &BTreeSet<String>) -> Vec<String> {
        let mut out = Vec::new();
        for (line, id) in &self.entries {
            let id = id.strip_prefix("flaky ").map_or(id.as_str(), str::trim);
            if !hits.contains(id) {
                out.push(format!(
                    "{}:{line}: baseline entry `{id}` matches no case",
                    file.display()
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_known_flaky_and_unmatched() {
        let b = Baseline::parse("# known\na::x\n\n  flaky  b::y # why\nc::z#\n");
        assert_eq!(
            b.entries,
            vec![
                (2, "a::x".to_string()),
                (4, "flaky  b::y".to_string()),
                (5, "c::z".to_string())
            ]
        );
        assert_eq!(b.known(), ["a::x", "c::z"].map(String::from).into());
        assert_eq!(b.flaky(), ["b::y"].map(String::from).into());
        let hits = ["a::x", "b::y"].map(String::from).into();
        assert_eq!(
            b.unmatched(Path::new("bl"), &hits),
            vec!["bl:5: baseline entry `c::z` matches no case"]
        );
    }
}
