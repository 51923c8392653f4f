//! Hostile corpora and runs (part of `hostile.rs`): corpus discovery (D8, D9, D18), gates that
//! check nothing (D11), outputs, merges and baselines (D12, D13, D22), and reproduce lines (D15).

use super::*;

// ---- D8/D9/D18: corpus discovery ---------------------------------------------------------

#[test]
fn d8_symlink_cycles_are_walked_once() {
    let d = tmp("d8");
    write(&d, "spec-cases/sass/a.toml", GOOD);
    std::os::unix::fs::symlink(".", d.join("spec-cases/loop")).unwrap();
    std::os::unix::fs::symlink("..", d.join("spec-cases/sass/up")).unwrap();
    let o = atomcts_guarded(
        &[
            "run",
            "--no-progress",
            "--cases",
            d.join("spec-cases").to_str().unwrap(),
        ],
        Duration::from_secs(60),
    )
    .expect("two symlink loops hung the loader");
    let t = text(&o);
    assert!(t.contains("\n1 passed, 0 failed"), "{t}");
    assert!(t.contains("a symbolic link loops back"), "{t}");
}

#[test]
fn d9_fifos_devices_and_huge_files_are_errors_not_reads() {
    let d = tmp("d9");
    write(&d, "spec-cases/sass/a.toml", GOOD);
    std::os::unix::fs::symlink("/dev/zero", d.join("spec-cases/sass/zero.toml")).unwrap();
    let fifo = d.join("spec-cases/sass/fifo.toml");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let big = d.join("spec-cases/sass/big.toml");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(20 << 20).unwrap();
    let o = atomcts_guarded(
        &[
            "run",
            "--no-progress",
            "--cases",
            d.join("spec-cases").to_str().unwrap(),
        ],
        Duration::from_secs(60),
    )
    .expect("a FIFO or /dev/zero blocked the loader");
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("zero.toml:0:0: not a regular file"), "{t}");
    assert!(t.contains("fifo.toml:0:0: not a regular file"), "{t}");
    assert!(
        t.contains("big.toml:0:0: 20971520 bytes: larger than"),
        "{t}"
    );
    assert!(t.contains("\n1 passed"), "{t}");
}

#[test]
fn d18_invalid_utf8_and_unreadable_folders_are_reported_where_they_are() {
    let d = tmp("d18");
    write(&d, "spec-cases/sass/a.toml", GOOD);
    std::fs::write(
        d.join("spec-cases/sass/latin1.toml"),
        b"dialect = \"sass\"\ncite = \"caf\xe9\"\n",
    )
    .unwrap();
    let locked = d.join("spec-cases/visa");
    write(&d, "spec-cases/visa/v.toml", GOOD);
    let mut perm = std::fs::metadata(&locked).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o000);
    std::fs::set_permissions(&locked, perm).unwrap();
    let readable_anyway = std::fs::read_dir(&locked).is_ok(); // root reads everything
    let o = run_dir(&d, &[]);
    let mut perm = std::fs::metadata(&locked).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&locked, perm).unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("latin1.toml:2:12: invalid UTF-8 (byte 0xe9)"),
        "{t}"
    );
    if readable_anyway {
        // Running as root: the folder is read regardless.
        assert!(t.contains("\n2 passed"), "{t}");
    } else {
        assert!(
            t.contains("spec-cases/visa:0:0: cannot read directory"),
            "{t}"
        );
        assert!(t.contains("\n1 passed"), "{t}");
    }
}

#[test]
fn d18_messages_name_what_is_wrong() {
    let o = atomcts(&["run", "--partition", "hash:-1/4"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("--partition hash:-1/4: K `-1` is not a positive integer"),
        "{}",
        text(&o)
    );
    let o = atomcts(&["export", "--json", "--out", "/nonexistent/x.json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("/nonexistent/x.json"), "{}", text(&o));
    // --given is a TOML value, never pasted into a case file.
    let o = atomcts(&[
        "exec",
        "--dialect",
        "sass",
        "--asm",
        "ATOM.ADD.U32 R0, [R2], R4",
        "--given",
        "{ R2 = 0x1000 }\nexpect = { R0 = 1 }",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!text(&o).contains("duplicate key"), "{}", text(&o));
    assert!(text(&o).contains("--given"), "{}", text(&o));
}

// ---- D11: a gate never passes on nothing ------------------------------------------------

#[test]
fn d11_runs_that_check_nothing_exit_2() {
    let d = tmp("d11");
    std::fs::create_dir_all(d.join("empty")).unwrap();
    let o = atomcts(&[
        "run",
        "--no-progress",
        "--cases",
        d.join("empty").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "empty: {}", text(&o));
    let o = atomcts(&["run", "--no-progress", "--filter", "sass/atom/incdec"]);
    assert_eq!(o.status.code(), Some(2), "typo filter: {}", text(&o));
    assert!(text(&o).contains("no case was judged"), "{}", text(&o));
    let o = atomcts(&["run", "--no-progress", "--generated-only"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let cmd = shim(
        &d,
        "nothing",
        "def answer(req):\n    return {\"id\": req[\"id\"], \"outcome\": \"unsupported\", \"why\": \"no\"}\n",
    );
    let o = atomcts(&[
        "run",
        "--no-progress",
        "--cases",
        &corpus("sass/atom/faults.toml"),
        "--adapter",
        &cmd,
    ]);
    assert_eq!(o.status.code(), Some(2), "all unsupported: {}", text(&o));
    write(
        &d,
        "spec-cases/sass/cap.toml",
        &GOOD.replace("expect =", "requires = [\"u64_atomic\"]\nexpect ="),
    );
    write(&d, "spec-cases/sass/case.TOML", GOOD);
    write(&d, "spec-cases/sass/case.tml", GOOD);
    let o = run_dir(&d, &[]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("unknown capability `u64_atomic`"), "{t}");
    assert!(
        t.contains("case.TOML:0:0: case files must end in `.toml`"),
        "{t}"
    );
    assert!(
        t.contains("case.tml:0:0: case files must end in `.toml`"),
        "{t}"
    );
}

// ---- D12: outputs validated before running; D13: merge proves coverage; D22: baselines ---

#[test]
fn d12_bad_output_paths_fail_before_running() {
    let o = atomcts(&["run", "--no-progress", "--junit", "/nonexistent/dir/j.xml"]);
    assert_eq!(o.status.code(), Some(2));
    let t = text(&o);
    assert!(
        t.contains("--junit /nonexistent/dir/j.xml: cannot write there"),
        "{t}"
    );
    assert!(!t.contains("passed"), "ran before failing: {t}");
    let o = atomcts(&["run", "--no-progress", "--baseline", "/nonexistent/b.txt"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!text(&o).contains("passed"), "{}", text(&o));
}

#[test]
fn d13_merge_detects_missing_and_duplicated_shards() {
    let d = tmp("d13");
    let json = |k: u32| d.join(format!("s{k}.json")).display().to_string();
    let broken = d.join("spec-cases/sass/broken.toml");
    write(
        &d,
        "spec-cases/sass/broken.toml",
        "dialect = \"sass\"\nbogus = 1\n",
    );
    let atom = root().join("spec-cases/sass/atom");
    // A corpus of the SASS ATOM cases and one broken file.
    let status = Command::new("cp")
        .arg("-r")
        .arg(&atom)
        .arg(d.join("spec-cases/sass/"))
        .status()
        .unwrap();
    assert!(status.success());
    let _ = broken;
    for k in 1..=4 {
        let o = run_dir(
            &d,
            &["--partition", &format!("hash:{k}/4"), "--json", &json(k)],
        );
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    }
    let merge = |ks: &[u32]| {
        let mut args = vec!["merge".to_string()];
        args.extend(ks.iter().map(|k| json(*k)));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        atomcts(&args)
    };
    let all = merge(&[1, 2, 3, 4]);
    let t = text(&all);
    assert_eq!(t.matches("broken.toml:2:1").count(), 1, "{t}");
    assert!(!t.contains("merge:"), "{t}");
    let three = merge(&[1, 2, 3]);
    let t = text(&three);
    assert_eq!(three.status.code(), Some(2), "{t}");
    assert!(t.contains("missing shard(s): hash:4/4"), "{t}");
    assert!(t.contains("selected cases are missing"), "{t}");
    let dup = merge(&[1, 2, 3, 4, 4]);
    assert!(
        text(&dup).contains("given more than once: hash:4/4"),
        "{}",
        text(&dup)
    );
}

#[test]
fn d22_stale_baseline_entries_fail_and_ids_ignore_path_spelling() {
    let d = tmp("d22");
    write(&d, "corpus/sass/atom/a.toml", GOOD);
    let b = write(&d, "baseline.txt", "sass/atom/a::no_such_case  # typo\n");
    let cases = d.join("corpus").display().to_string();
    let o = atomcts(&[
        "run",
        "--no-progress",
        "--cases",
        &cases,
        "--baseline",
        b.to_str().unwrap(),
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("baseline.txt:1: baseline entry `sass/atom/a::no_such_case` matches no case"),
        "{t}"
    );
    // The same case has the same id however the corpus is named.
    let ids = |p: &str| text(&atomcts(&["list", "cases", "--cases", p]));
    let want = "sass/atom/a::add_returns_old\n";
    assert_eq!(ids(&cases), want);
    assert_eq!(ids(&format!("{cases}/sass")), want);
    assert_eq!(ids(&format!("{cases}/./sass/atom/")), want);
    assert_eq!(ids(&format!("{cases}/sass/atom/a.toml")), want);
}

// ---- D15: every reproduce line reproduces ------------------------------------------------

#[test]
fn d15_printed_reproduce_lines_reproduce_the_verdict() {
    let d = tmp("d15 dir with space");
    write(
        &d,
        "spec-cases/sass/atom/a.toml",
        &GOOD.replace("u32:10", "u32:11"),
    );
    let cmd = shim(
        &d,
        "rejecter",
        "def answer(req):\n    return {\"id\": req[\"id\"], \"outcome\": \"invalid\", \"reason\": \"rejected\"}\n",
    );
    let cases = d.join("spec-cases").display().to_string();
    for extra in [
        vec!["--set", "sass.misaligned=fault", "--race-budget", "777"],
        vec![
            "--generated",
            "40",
            "--seed",
            "5",
            "--adapter",
            "reference",
            "--set",
            "sass.misaligned=fault",
        ],
        vec!["--adapter", &cmd, "--adapter-timeout-ms", "1234"],
        vec![
            "--generated",
            "6",
            "--seed",
            "5",
            "--generated-only",
            "--adapter",
            &cmd,
        ],
    ] {
        let mut args = vec!["run", "--no-progress", "--cases", &cases];
        args.extend(extra.iter().copied());
        let o = atomcts(&args);
        let t = text(&o);
        let repros: Vec<&str> = t
            .lines()
            .filter_map(|l| l.trim().strip_prefix("reproduce: "))
            .collect();
        assert!(!repros.is_empty(), "{t}");
        for r in repros {
            for flag in extra
                .iter()
                .filter(|f| f.starts_with("--") && **f != "--generated" && **f != "--seed")
            {
                assert!(r.contains(flag), "{flag} missing from {r}");
            }
            let line = r.replacen("atomcts", env!("CARGO_BIN_EXE_atomcts"), 1);
            let again = Command::new("sh")
                .arg("-c")
                .arg(format!("{line} --no-progress"))
                .output()
                .unwrap();
            let t2 = text(&again);
            assert_eq!(again.status.code(), o.status.code(), "{r}\n{t2}");
            let id = r
                .split("--filter ")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap();
            let id = id.trim_matches('\'').trim_start_matches("id:");
            let verdict = |t: &str| {
                t.lines()
                    .find(|l| l.contains(&format!(" {id}  (")))
                    .map(|l| l.split(' ').next().unwrap().to_string())
            };
            assert_eq!(verdict(&t2), verdict(&t), "{r}\n{t2}");
            assert!(
                t2.contains("\n0 passed") || t2.contains("\n1 passed"),
                "{t2}"
            );
        }
    }
}
