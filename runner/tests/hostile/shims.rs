//! Hostile shims (part of `hostile.rs`): write deadlines, process groups, the circuit breaker,
//! `sh -c`, exits and invalid UTF-8 (D4, D5, D6, D16, D19), and escaping and size caps in the
//! terminal and JUnit (D20, D21).

use super::*;

// ---- Subprocess adapter: D4 write deadlines, D5 process groups, D6 circuit breaker, D16
// ---- `sh -c`, D19 exits and invalid UTF-8 ------------------------------------------------

#[test]
fn d4_a_shim_that_stops_reading_cannot_block_a_large_request() {
    let d = tmp("d4");
    // 1 MiB of memory: the request line is over 2 MiB, far beyond a pipe's buffer.
    write(
        &d,
        "spec-cases/sass/big.toml",
        &one_case(
            "{ R2 = 0x0, R4 = 1, alloc = [\"0x0+0x100000\"] }",
            "{ R0 = 0, mem = { 0x0 = \"u32:1\" } }",
        ),
    );
    let p = write(
        &d,
        "deaf.py",
        "import sys, time\nsys.stdin.readline()\nprint('{\"type\":\"hello\",\"protocol\":\"atomcts-adapter\",\"version\":1}', flush=True)\ntime.sleep(3600)\n",
    );
    let cmd = format!("cmd:python3 {}", p.display());
    let o = atomcts_guarded(
        &[
            "run",
            "--no-progress",
            "--cases",
            d.join("spec-cases").to_str().unwrap(),
            "--adapter",
            &cmd,
            "--adapter-timeout-ms",
            "500",
        ],
        Duration::from_secs(60),
    )
    .expect("writing to a shim that stops reading hung the run");
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("timed out after 500 ms"), "{t}");
}

#[test]
fn d5_timed_out_shims_leave_no_process_behind() {
    let d = tmp("d5");
    let pids = d.join("pids");
    let hang = write(
        &d,
        "hang.py",
        &format!(
            "import sys, os, time\nif os.fork() == 0:\n    open({:?}, 'a').write(str(os.getpid()) + '\\n')\n    time.sleep(3600)\nopen({:?}, 'a').write(str(os.getpid()) + '\\n')\nsys.stdin.readline()\nprint('{{\"type\":\"hello\",\"protocol\":\"atomcts-adapter\",\"version\":1}}', flush=True)\ntime.sleep(3600)\n",
            pids.display().to_string(),
            pids.display().to_string()
        ),
    );
    for (i, cmd) in [
        format!("cmd:python3 {} | cat", hang.display()),
        format!("cmd:bash -c 'python3 {}; true'", hang.display()),
    ]
    .iter()
    .enumerate()
    {
        let _ = std::fs::remove_file(&pids);
        let cases = corpus("sass/atom/exch.toml");
        let o = atomcts_guarded(
            &[
                "run",
                "--no-progress",
                "--cases",
                &cases,
                "--adapter",
                cmd,
                "--adapter-timeout-ms",
                "300",
                "--filter",
                "exch::",
            ],
            Duration::from_secs(120),
        )
        .expect("hung");
        assert_eq!(o.status.code(), Some(2), "{i}: {}", text(&o));
        std::thread::sleep(Duration::from_millis(300));
        let list = std::fs::read_to_string(&pids).unwrap_or_default();
        let started: Vec<u32> = list.lines().filter_map(|l| l.parse().ok()).collect();
        assert!(started.len() >= 2, "{i}: {list}");
        let alive: Vec<u32> = started.into_iter().filter(|p| pid_alive(*p)).collect();
        assert!(alive.is_empty(), "{i}: left behind: {alive:?}");
    }
}

#[test]
fn d6_a_shim_that_hangs_its_handshake_after_a_restart_trips_the_breaker() {
    let d = tmp("d6");
    let marker = d.join("started");
    let p = write(
        &d,
        "flaky.py",
        &format!(
            "import sys, os, time\nm = {:?}\nif os.path.exists(m):\n    time.sleep(3600)\nopen(m, 'w').write('x')\nsys.stdin.readline()\nprint('{{\"type\":\"hello\",\"protocol\":\"atomcts-adapter\",\"version\":1}}', flush=True)\nsys.stdin.readline()\nsys.exit(7)\n",
            marker.display().to_string()
        ),
    );
    let cmd = format!("cmd:python3 {}", p.display());
    let cases = corpus("sass/atom/inc_dec.toml");
    let o = atomcts_guarded(
        &[
            "run",
            "--no-progress",
            "--cases",
            &cases,
            "--adapter",
            &cmd,
            "--adapter-timeout-ms",
            "200",
        ],
        Duration::from_secs(120),
    )
    .expect("restarts were not bounded");
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("exit status 7"), "{t}");
    assert!(t.contains("circuit breaker"), "{t}");
    assert!(t.contains("33 errors"), "{t}");
}

#[test]
fn d16_cmd_is_plain_sh_c() {
    let d = tmp("d16");
    let sub = d.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    write(
        &sub,
        "envshim.py",
        "import sys, os, json\nfor line in sys.stdin:\n    req = json.loads(line)\n    if req['type'] == 'hello':\n        print(json.dumps({'type':'hello','protocol':'atomcts-adapter','version':1,'name':os.environ.get('SHIM_NAME','unset')}), flush=True)\n    else:\n        print(json.dumps({'id':req['id'],'outcome':'unsupported','why':'test'}), flush=True)\n",
    );
    let faults = corpus("sass/atom/faults.toml");
    let cmd = format!(
        "cmd:cd {} && SHIM_NAME=from_env python3 envshim.py",
        sub.display()
    );
    let o = atomcts(&[
        "run",
        "--no-progress",
        "--cases",
        &faults,
        "--adapter",
        &cmd,
        "--verbose",
    ]);
    let t = text(&o);
    assert!(t.contains("cmd:from_env adapter"), "{t}");
    assert!(t.contains("unsupported: test"), "{t}");
}

#[test]
fn d19_a_shim_exiting_after_each_answer_costs_no_case_and_keeps_its_status() {
    let d = tmp("d19");
    let answer = "def answer(req):\n    return {\"id\": req[\"id\"], \"outcome\": \"fault\", \"lanes\": [[0, \"misaligned_address\"]]}\n";
    let steady = shim(&d, "steady", answer);
    let quitter = shim(
        &d,
        "quitter",
        &format!(
            "{answer}_answer = answer\ndef answer(req):\n    sys.stdout.write(json.dumps(_answer(req)) + '\\n')\n    sys.stdout.flush()\n    sys.exit(3)\n"
        ),
    );
    let faults = corpus("sass/atom/faults.toml");
    let summary = |o: &Output| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .last()
            .unwrap_or("")
            .to_string()
    };
    let a = atomcts(&[
        "run",
        "--no-progress",
        "--cases",
        &faults,
        "--adapter",
        &steady,
    ]);
    let b = atomcts(&[
        "run",
        "--no-progress",
        "--cases",
        &faults,
        "--adapter",
        &quitter,
    ]);
    assert!(summary(&a).contains(" passed, "), "{}", text(&a));
    assert_eq!(summary(&a), summary(&b), "{}", text(&b));
    let notes = String::from_utf8_lossy(&b.stderr);
    assert!(
        notes.contains("exited (exit status 3) after its last answer"),
        "{notes}"
    );
    assert!(!text(&b).contains("ERROR"), "{}", text(&b));
}

#[test]
fn d19_invalid_utf8_in_an_answer_is_a_protocol_error() {
    let d = tmp("d19-utf8");
    let cmd = shim(
        &d,
        "latin1",
        "def answer(req):\n    return b'{\"id\": \"' + req['id'].encode() + b'\", \"outcome\": \"invalid\", \"reason\": \"r\\xe9jected\"}\\n'\n",
    );
    let faults = corpus("sass/atom/faults.toml");
    let o = atomcts(&[
        "run",
        "--no-progress",
        "--cases",
        &faults,
        "--adapter",
        &cmd,
        "--filter",
        "u32_at_offset_2_misaligned",
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("answer is not UTF-8"), "{t}");
}

// ---- D20/D21: escaping and size caps in terminal output and JUnit -----------------------

#[test]
fn d20_d21_control_characters_are_escaped_visibly_everywhere() {
    let d = tmp("d20");
    write(
        &d,
        "spec-cases/sass/e.toml",
        "dialect = \"sass\"\ncite = \"evil \\u001b[2J cite\\nFAIL forged\"\n[[case]]\nname = \"c\"\nasm = \"ATOM.ADD.U32 R0, [R2], R4\"\ngiven = { R2 = 0x1000, R4 = 1, mem = { 0x1000 = \"u32:1\" } }\nexpect = { R0 = 1, mem = { 0x1000 = \"u32:3\" } }\n",
    );
    let cmd = shim(
        &d,
        "evil",
        "def answer(req):\n    return {\"id\": req[\"id\"], \"outcome\": \"error\", \"why\": \"bad\\u001b[31m\\nPASS all\"}\n",
    );
    let body = std::fs::read_to_string(d.join("evil.py")).unwrap().replace(
        "\"name\": \"evil\"",
        "\"name\": \"ev\\u001b]0;x\\u0007il\\n0 passed, 0 failed\"",
    );
    std::fs::write(d.join("evil.py"), body).unwrap();
    let junit = d.join("j.xml");
    let o = run_dir(
        &d,
        &[
            "--adapter",
            &cmd,
            "--junit",
            junit.to_str().unwrap(),
            "--verbose",
        ],
    );
    let t = text(&o);
    assert!(!t.contains('\u{1b}') && !t.contains('\u{7}'), "{t:?}");
    assert!(t.contains("evil \\e[2J cite\\nFAIL forged"), "{t}");
    assert!(t.contains("ev\\e]0;x\\u{7}il\\n0 passed, 0 failed"), "{t}");
    assert!(t.contains("bad\\e[31m\\nPASS all"), "{t}");
    let x = std::fs::read_to_string(&junit).unwrap();
    assert!(x.contains("bad\\e[31m\\nPASS all"), "{x}");
    assert!(!x.contains("expected , observed"), "{x}");
}
