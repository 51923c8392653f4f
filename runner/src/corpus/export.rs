//! The export format (`atomcts export --json`): the whole corpus with its expectations as one
//! JSON document, `{ "format": "atomcts-spec-cases", "version": 1, "errors": [...],
//! "cases": [...] }`, each case its TOML table as written plus `id`, `dialect` and (from its
//! file, unless it has its own) `cite`.

use crate::corpus::{case, files};
use std::path::Path;

/// The export document of the corpus at `p` (a directory or one file), and the load errors it
/// lists (a case that does not load is not exported).
pub fn export(p: &Path) -> serde_json::Result<(serde_json::Value, Vec<String>)> {
    let mut cases = Vec::new();
    let (paths, found_errors) = files::discover(p);
    let mut errors: Vec<String> = found_errors.iter().map(|e| e.to_string()).collect();
    for f in paths {
        let text = match files::read_case_file(&f) {
            Ok(t) => t,
            Err(e) => {
                errors.push(e.to_string());
                continue;
            }
        };
        let root = files::id_root(&f, p);
        let loaded = case::parse_file(&root, &f, text.clone());
        errors.extend(loaded.errors.iter().map(|e| e.to_string()));
        let raw: toml::Table = match toml::from_str(&text) {
            Ok(t) => t,
            Err(_) => continue,
        };
        let raw_cases = raw
            .get("case")
            .and_then(|c| c.as_array())
            .cloned()
            .unwrap_or_default();
        let file_cite = raw.get("cite").cloned();
        for c in loaded.cases {
            let name = c.id.split("::").nth(1).unwrap_or("");
            if let Some(rc) = raw_cases
                .iter()
                .find(|rc| rc.get("name").and_then(|n| n.as_str()) == Some(name))
            {
                let mut obj = serde_json::to_value(rc)?;
                if let Some(m) = obj.as_object_mut() {
                    m.insert("id".into(), c.id.clone().into());
                    m.insert("dialect".into(), c.dialect.name().into());
                    if !m.contains_key("cite")
                        && let Some(fc) = &file_cite
                    {
                        m.insert("cite".into(), serde_json::to_value(fc)?);
                    }
                }
                cases.push(obj);
            }
        }
    }
    let doc = serde_json::json!({ "format": "atomcts-spec-cases", "version": 1, "errors": errors, "cases": cases });
    Ok((doc, errors))
}
