//! The runner's layers (issue 28): the library is a stack of folders, each importing only
//! from the folders below it, and no file imports another that (directly or not) imports it.
//!
//! From the top: the command line (`src/main.rs`, `src/cli.rs`, `src/cli/`, `src/bin/`: the
//! binaries), `fuzzing`, `report`, `run`, `corpus`. A file may name its own folder's files and
//! any folder below. Leaves (`adversary`, `exit` (the exit codes), and the crate root `lib.rs` with
//! `default_corpus`) import nothing of the layered library and may be named from anywhere.
//!
//! What counts as an import: every path in code (comments are dropped) that starts with
//! `crate::`, `super::`, `self::`, a child module the file declares (`mod x;` then `x::`) or,
//! in the binaries, `atomcts::`; each resolves to the longest module prefix that is a file.
//! The layer rule covers unit-test modules too; the cycle rule covers code outside them (a
//! file's `#[cfg(test)] mod tests` may use a sibling that uses the file).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The library's folders, bottom first.
const LAYERS: [&str; 4] = ["corpus", "run", "report", "fuzzing"];
/// Library modules outside the layers that import nothing of the library.
const LEAVES: [&str; 2] = ["adversary", "exit"];

type Module = Vec<String>;

/// One source file: its module, and which crate it belongs to.
struct File {
    path: PathBuf,
    module: Module,
    /// In a binary (`main.rs`, `cli`, `bin/`), not the library.
    binary: bool,
    code: String,
    test_code: String,
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module of `rel` (a path under `src/`): `corpus/case.rs` is `corpus::case`,
/// `run/mod.rs` is `run`, `lib.rs` the root; binaries get their own names (`main`, `cli::x`,
/// `bin::name`).
fn module_of(rel: &Path) -> (Module, bool) {
    let mut segs: Vec<String> = rel
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    let last = segs.pop().unwrap();
    let stem = last.trim_end_matches(".rs").to_string();
    if stem != "mod" && !(segs.is_empty() && stem == "lib") {
        segs.push(stem);
    }
    let binary = matches!(
        segs.first().map(String::as_str),
        Some("main" | "cli" | "bin")
    );
    (segs, binary)
}

/// Code without comments (a `//` to the end of its line).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut in_str = false;
        let mut cut = line.len();
        let b = line.as_bytes();
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'\\' if in_str => i += 1,
                b'"' => in_str = !in_str,
                b'/' if !in_str && b.get(i + 1) == Some(&b'/') => {
                    cut = i;
                    break;
                }
                _ => {}
            }
            i += 1;
        }
        out.push_str(&line[..cut]);
        out.push('\n');
    }
    out
}

/// Splits a file's code at its unit-test module (`#[cfg(test)]` then `mod <name> {`).
fn split_tests(code: &str) -> (String, String) {
    let lines: Vec<&str> = code.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        if l.trim() == "#[cfg(test)]"
            && lines
                .get(i + 1)
                .is_some_and(|n| n.trim_start().starts_with("mod ") && n.trim_end().ends_with('{'))
        {
            return (lines[..i].join("\n"), lines[i..].join("\n"));
        }
    }
    (code.to_string(), String::new())
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The paths after `start` (which ends in `::`): `a::b::C`, or each item of a `{...}` group,
/// as segments.
fn paths_at(b: &[u8], start: usize, prefix: &[String], out: &mut Vec<Module>) {
    let mut segs: Vec<String> = prefix.to_vec();
    let mut i = start;
    loop {
        if b.get(i) == Some(&b'{') {
            group(b, i, &segs, out);
            return;
        }
        let s = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        if i > s {
            segs.push(String::from_utf8_lossy(&b[s..i]).into_owned());
        }
        if b[i..].starts_with(b"::") {
            i += 2;
            continue;
        }
        break;
    }
    out.push(segs);
}

/// The items of the group at `b[i]` (`{`), each after `{` or a `,` at depth 1.
fn group(b: &[u8], i: usize, segs: &[String], out: &mut Vec<Module>) {
    out.push(segs.to_vec());
    let mut depth = 0;
    for j in i..b.len() {
        match b[j] {
            b'{' => {
                depth += 1;
                if depth == 1 {
                    paths_at(b, skip_ws(b, j + 1), segs, out);
                }
            }
            b',' if depth == 1 => paths_at(b, skip_ws(b, j + 1), segs, out),
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return;
                }
            }
            _ => {}
        }
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// Every path `code` names from `root::` (`crate`, `super`, a child module...), as the
/// segments after the base that `root` stands for.
fn paths_from(code: &str, root: &str, base: &[String], out: &mut Vec<Module>) {
    let b = code.as_bytes();
    let pat = format!("{root}::");
    let mut from = 0;
    while let Some(k) = code[from..].find(&pat) {
        let at = from + k;
        from = at + pat.len();
        if at > 0 && (is_ident(b[at - 1]) || b[at - 1] == b':' || b[at - 1] == b'$') {
            continue;
        }
        paths_at(b, at + pat.len(), base, out);
    }
}

/// The modules the code of `f` names (`test`: its unit-test module).
fn imports(f: &File, test: bool, children: &[String]) -> Vec<(Module, bool)> {
    let code = if test { &f.test_code } else { &f.code };
    let mut out = Vec::new();
    let here = &f.module;
    let parent: Module = here[..here.len().saturating_sub(1)].to_vec();
    // In a test module, `super` is the file itself.
    let sup = if test { here.clone() } else { parent };
    let mut lib = Vec::new();
    if f.binary {
        paths_from(code, "atomcts", &[], &mut lib);
        let mut own = Vec::new();
        paths_from(code, "crate", &[], &mut own);
        paths_from(code, "super", &sup, &mut own);
        out.extend(own.into_iter().map(|m| (m, true)));
    } else {
        paths_from(code, "crate", &[], &mut lib);
        paths_from(code, "super", &sup, &mut lib);
        paths_from(code, "self", here, &mut lib);
        for c in children {
            let mut base = here.clone();
            base.push(c.clone());
            paths_from(code, c, &base, &mut lib);
        }
    }
    out.extend(lib.into_iter().map(|m| (m, false)));
    out
}

/// The longest prefix of `path` that is a module of `modules`.
fn resolve<'m>(path: &[String], modules: &'m BTreeSet<Module>) -> Option<&'m Module> {
    (0..=path.len())
        .rev()
        .find_map(|k| modules.get(&path[..k].to_vec()))
}

/// The layer of a library module: its folder's place in [`LAYERS`], `None` for a leaf.
fn layer(m: &Module) -> Option<usize> {
    let top = m.first()?;
    if LEAVES.contains(&top.as_str()) {
        return None;
    }
    Some(
        LAYERS
            .iter()
            .position(|l| l == top)
            .unwrap_or_else(|| panic!("`{}` is in no layer: add it to LAYERS or LEAVES", top)),
    )
}

fn name(m: &Module) -> String {
    if m.is_empty() {
        "crate".into()
    } else {
        m.join("::")
    }
}

/// Loads `src/`.
fn load(src: &Path) -> Vec<File> {
    let mut paths = Vec::new();
    rs_files(src, &mut paths);
    paths
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(src).unwrap();
            let (module, binary) = module_of(rel);
            let text = std::fs::read_to_string(&p).unwrap();
            let (code, test_code) = split_tests(&strip_comments(&text));
            File {
                path: rel.to_path_buf(),
                module,
                binary,
                code,
                test_code,
            }
        })
        .collect()
}

/// The child modules `f` declares (`mod x;`).
fn children(f: &File) -> Vec<String> {
    f.code
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let l = l
                .strip_prefix("pub(crate) ")
                .or_else(|| l.strip_prefix("pub "))
                .unwrap_or(l);
            l.strip_prefix("mod ")?
                .strip_suffix(';')
                .map(|s| s.trim().to_string())
        })
        .collect()
}

/// Every violation of the layer rule, and the import graph (outside unit tests) of the
/// library's files.
fn check(files: &[File]) -> (Vec<String>, BTreeMap<Module, BTreeSet<Module>>) {
    let lib: BTreeSet<Module> = files
        .iter()
        .filter(|f| !f.binary)
        .map(|f| f.module.clone())
        .collect();
    let bin: BTreeSet<Module> = files
        .iter()
        .filter(|f| f.binary)
        .map(|f| f.module.clone())
        .collect();
    let mut bad = Vec::new();
    let mut graph: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for f in files {
        let kids = children(f);
        let from = if f.binary {
            None
        } else {
            Some(layer(&f.module))
        };
        for test in [false, true] {
            for (path, own) in imports(f, test, &kids) {
                let to = if own {
                    resolve(&path, &bin)
                } else {
                    resolve(&path, &lib)
                };
                let Some(to) = to else { continue };
                if *to == f.module || own {
                    continue;
                }
                if let Some(from) = from {
                    let ok = match (from, layer(to)) {
                        // A leaf names no layered module.
                        (None, Some(_)) => false,
                        (Some(a), Some(b)) => b <= a,
                        (_, None) => true,
                    };
                    if !ok {
                        bad.push(format!(
                            "{} ({}) imports {} from a layer above its own{}",
                            f.path.display(),
                            name(&f.module),
                            name(to),
                            if test { " (in its unit tests)" } else { "" }
                        ));
                    }
                    if !test {
                        graph
                            .entry(f.module.clone())
                            .or_default()
                            .insert(to.clone());
                    }
                }
            }
        }
    }
    (bad, graph)
}

/// A cycle of `graph`, if it has one.
fn cycle(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Option<Vec<Module>> {
    fn visit(
        m: &Module,
        graph: &BTreeMap<Module, BTreeSet<Module>>,
        state: &mut BTreeMap<Module, u8>,
        stack: &mut Vec<Module>,
    ) -> Option<Vec<Module>> {
        match state.get(m) {
            Some(2) => return None,
            Some(1) => {
                let at = stack.iter().position(|s| s == m).unwrap();
                let mut c = stack[at..].to_vec();
                c.push(m.clone());
                return Some(c);
            }
            _ => {}
        }
        state.insert(m.clone(), 1);
        stack.push(m.clone());
        for n in graph.get(m).into_iter().flatten() {
            if let Some(c) = visit(n, graph, state, stack) {
                return Some(c);
            }
        }
        stack.pop();
        state.insert(m.clone(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for m in graph.keys() {
        if let Some(c) = visit(m, graph, &mut state, &mut Vec::new()) {
            return Some(c);
        }
    }
    None
}

fn src() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/src"))
}

#[test]
fn every_file_imports_only_its_own_folder_and_the_folders_below() {
    let files = load(&src());
    // Not vacuous: every layer is there, with files that import.
    for l in LAYERS {
        assert!(
            files
                .iter()
                .any(|f| f.module.first().is_some_and(|m| m == l)),
            "no file in the `{l}` layer (src/{l}/): did the layout change?"
        );
    }
    let (bad, graph) = check(&files);
    let edges: usize = graph.values().map(BTreeSet::len).sum();
    assert!(
        files.len() > 30 && edges > 40,
        "{} files, {edges} imports",
        files.len()
    );
    assert!(bad.is_empty(), "upward imports:\n{}", bad.join("\n"));
}

#[test]
fn the_file_import_graph_has_no_cycle() {
    let (_, graph) = check(&load(&src()));
    if let Some(c) = cycle(&graph) {
        let c: Vec<String> = c.iter().map(name).collect();
        panic!("import cycle: {}", c.join(" -> "));
    }
}

/// The checker itself: an upward import, one through a group and one through `super`, and a
/// cycle are each caught.
#[test]
fn the_checker_catches_upward_imports_and_cycles() {
    let file = |path: &str, code: &str| {
        let (module, binary) = module_of(Path::new(path));
        let (code, test_code) = split_tests(&strip_comments(code));
        File {
            path: path.into(),
            module,
            binary,
            code,
            test_code,
        }
    };
    let base = || {
        vec![
            file("corpus/mod.rs", "pub mod case;"),
            file("corpus/case.rs", "use crate::corpus::pos::Pos;"),
            file("corpus/pos.rs", ""),
            file("run/mod.rs", "use crate::corpus::case::Case;"),
            file("report/mod.rs", "use crate::run::X;"),
            file("fuzzing/mod.rs", ""),
            file("fuzzing/generate.rs", "use crate::{report::A, run::B};"),
        ]
    };
    assert!(check(&base()).0.is_empty());
    assert!(cycle(&check(&base()).1).is_none());
    for bad in [
        "use crate::run::Status;",
        "fn f() { crate::fuzzing::generate::g() }",
        "use crate::{corpus::pos::Pos, report::Report};",
        "// a comment is no import: crate::run::X\nuse crate::run::X;",
    ] {
        let mut fs = base();
        fs.push(file("corpus/given.rs", bad));
        assert_eq!(check(&fs).0.len(), 1, "{bad}");
    }
    let mut fs = base();
    fs.push(file(
        "corpus/given.rs",
        "// crate::run::X\nconst S: &str = \"//\";",
    ));
    assert!(check(&fs).0.is_empty());
    let mut fs = base();
    fs.push(file("fuzzing/fuzz.rs", "mod judge;\nuse judge::X;"));
    fs.push(file("fuzzing/fuzz/judge.rs", "use super::Y;"));
    let c = cycle(&check(&fs).1).expect("a cycle");
    assert_eq!(name(&c[0]), "fuzzing::fuzz");
    // A unit test may use a sibling that uses the file.
    let mut fs = base();
    fs.push(file("corpus/given.rs", "use crate::corpus::pos::P;"));
    fs[2] = file(
        "corpus/pos.rs",
        "pub struct P;\n#[cfg(test)]\nmod tests {\n    use crate::corpus::given::G;\n}",
    );
    assert!(cycle(&check(&fs).1).is_none());
}
