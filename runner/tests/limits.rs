//! README "Limits" states each limit once, beside the constant that sets it: every row's value
//! must be the constant's value in the source (found by name, defined exactly once in the
//! workspace), and the help texts that name a limit must say the same (issue 28).

use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
/// Where the constants live.
const SOURCES: [&str; 3] = ["reference/src", "runner/src", "adapters/src"];

/// README's table rows between the markers: (what, value as written, constant name).
fn readme_rows() -> Vec<(String, String, String)> {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let start = readme
        .find("<!-- limits:start -->")
        .expect("README has no limits:start marker");
    let end = readme
        .find("<!-- limits:end -->")
        .expect("README has no limits:end marker");
    readme[start..end]
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| limit ") && !l.starts_with("| ---"))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split(" | ").map(str::trim).collect();
            assert_eq!(
                cells.len(),
                3,
                "README limits row is not `| what | value | constant |`: {l}"
            );
            let name = cells[2].trim_matches('`');
            let name = name.rsplit("::").next().unwrap().to_string();
            (cells[0].to_string(), cells[1].to_string(), name)
        })
        .collect()
}

/// A value as README writes it: `8 MiB`, `1,048,576`, `64`.
fn readme_value(v: &str) -> u64 {
    let (num, unit) = match v.split_once(' ') {
        Some((n, u)) => (n, u),
        None => (v, ""),
    };
    let n: u64 = num
        .replace(',', "")
        .parse()
        .unwrap_or_else(|_| panic!("README value `{v}`"));
    match unit {
        "" => n,
        "KiB" => n << 10,
        "MiB" => n << 20,
        "GiB" => n << 30,
        _ => panic!("README value `{v}`: unknown unit"),
    }
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The integer expression of a constant: literals (with `_`), `<<` and `*`.
fn eval(expr: &str) -> u64 {
    let expr = expr.trim();
    if let Some((a, b)) = expr.split_once("<<") {
        return eval(a) << eval(b);
    }
    if let Some((a, b)) = expr.split_once('*') {
        return eval(a) * eval(b);
    }
    expr.replace('_', "")
        .parse()
        .unwrap_or_else(|_| panic!("cannot evaluate `{expr}`"))
}

/// The value of `const NAME: <ty> = <expr>;`, defined exactly once in the sources.
fn constant(name: &str) -> u64 {
    let mut files = Vec::new();
    for s in SOURCES {
        rs_files(&Path::new(ROOT).join(s), &mut files);
    }
    let needle = format!("const {name}: ");
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for line in text.lines() {
            if let Some(at) = line.find(&needle) {
                let rest = &line[at + needle.len()..];
                let (_, expr) = rest.split_once('=').expect("a constant with a value");
                found.push((f.clone(), eval(expr.trim_end_matches(';'))));
            }
        }
    }
    assert_eq!(
        found.len(),
        1,
        "constant {name}: defined {} times ({found:?})",
        found.len()
    );
    found[0].1
}

fn with_commas(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn every_readme_limit_is_the_constant_it_names() {
    let rows = readme_rows();
    assert!(
        rows.len() >= 20,
        "README's limits table has {} rows",
        rows.len()
    );
    let mut wrong = Vec::new();
    for (what, value, name) in &rows {
        let (said, is) = (readme_value(value), constant(name));
        if said != is {
            wrong.push(format!("{what}: README says {value}, {name} is {is}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "README limits disagree with the code:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_checker_reads_values_and_refuses_a_wrong_one() {
    assert_eq!(readme_value("8 MiB"), 8 << 20);
    assert_eq!(readme_value("1,048,576"), 1 << 20);
    assert_eq!(eval("256 << 20"), 256 << 20);
    assert_eq!(eval("1_000_000_000"), 1_000_000_000);
    assert_eq!(with_commas(20_000), "20,000");
    assert_eq!(with_commas(1_000_000_000), "1,000,000,000");
    // A constant that does not exist is no pass.
    assert!(std::panic::catch_unwind(|| constant("NO_SUCH_LIMIT_ANYWHERE")).is_err());
}

/// `atomcts <sub> --help`: as printed, and with its whitespace folded to single spaces.
fn help_text(sub: &str) -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_atomcts"))
        .args([sub, "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
    (help, flat)
}

#[test]
fn help_texts_name_the_same_limits() {
    let (help, flat) = help_text("run");
    let keep = with_commas(constant("KEEP_PASSES_UP_TO"));
    let kept = with_commas(constant("MAX_KEPT"));
    assert!(
        flat.contains(&format!(
            "a run of at most {keep} cases, else at most {kept} results"
        )),
        "--jsonl's help does not say {keep} / {kept}:\n{help}"
    );
    for (flag, name) in [
        ("--adapter-timeout-ms", "DEFAULT_ADAPTER_TIMEOUT_MS"),
        ("--race-budget", "DEFAULT_BUDGET"),
    ] {
        let at = flat
            .find(flag)
            .unwrap_or_else(|| panic!("no {flag} in run --help"));
        let next = flat[at + flag.len()..]
            .find(" --")
            .map_or(flat.len(), |i| at + flag.len() + i);
        let want = format!("[default: {}]", constant(name));
        assert!(
            flat[at..next].contains(&want),
            "{flag}: help lacks {want}: {}",
            &flat[at..next]
        );
    }
}

/// `command`'s help says `sentence(LEARN_AFTER, EXPLORE_EVERY)`, in the option `flag`.
fn help_names_the_learning_limits(command: &str, flag: &str, sentence: fn(u64, u64) -> String) {
    let (help, flat) = help_text(command);
    let (after, every) = (constant("LEARN_AFTER"), constant("EXPLORE_EVERY"));
    assert!(
        flat.contains(&sentence(after, every)),
        "{flag}'s help does not say {after} / {every}:\n{help}"
    );
}

#[test]
fn run_help_names_the_learning_limits() {
    help_names_the_learning_limits("run", "--learn", |after, every| {
        format!(
            "answered not applicable {after} times and never run is passed over, one draft in {every} still made"
        )
    });
}

#[test]
fn fuzz_help_names_the_learning_limits() {
    help_names_the_learning_limits("fuzz", "--no-learn", |after, every| {
        format!(
            "turned away {after} times and never let through is passed over, one draft in {every}"
        )
    });
}
