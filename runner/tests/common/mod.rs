//! Helpers shared by the CLI-level integration tests (each test file includes this module and
//! uses what it needs).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

/// Standard output then standard error, for assertions and messages.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A fresh scratch folder for this test file and `name`.
pub fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "atomcts-{}-{}-{name}",
        env!("CARGO_CRATE_NAME"),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes `body` to `dir/rel`, creating its folders.
pub fn write(dir: &Path, rel: &str, body: &str) -> PathBuf {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, body).unwrap();
    p
}

/// `atomcts ARGS` with extra environment variables, in the current folder.
pub fn atomcts_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_atomcts"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run atomcts")
}

/// Drains a child's piped output on threads and waits for it, killing it if it has not ended
/// after `limit` (a hang guard far above the expected cost, never a timing assertion): `None`
/// on a hang.
pub fn finish_guarded(mut child: Child, limit: Duration) -> Option<Output> {
    use std::io::Read;
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut v);
            }
            v
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|r| Box::new(r) as Box<dyn Read + Send>),
    );
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Some(Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    })
}

/// Runs atomcts and kills it if it has not finished after `limit` (a hang guard far above the
/// expected cost, never a timing assertion): returns `None` on a hang.
pub fn atomcts_guarded(args: &[&str], limit: Duration) -> Option<Output> {
    let child = Command::new(env!("CARGO_BIN_EXE_atomcts"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run atomcts");
    finish_guarded(child, limit)
}

/// Whether process `pid` is alive (a zombie is not: it holds no resources and its parent will
/// reap it).
pub fn pid_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

/// A SASS state of two lanes: `ATOM.E.<op> R0, [R2], R4` at addresses `addrs` with operands
/// `vals` (R3 zero, every register 32-bit), and 16 bytes of global memory at 0x1000 holding
/// `words` from 0x1000.
pub fn two_lanes(addrs: [u64; 2], vals: [u64; 2], words: [u64; 4]) -> atomcts_reference::State {
    use atomcts_reference::state::Reg;
    use atomcts_reference::types::ElemType;
    let mut s = atomcts_reference::State::new(2);
    for (r, v) in [("R2", addrs), ("R3", [0, 0]), ("R4", vals)] {
        s.regs.insert(
            r.into(),
            Reg {
                ty: ElemType::B32,
                elems: v.to_vec(),
            },
        );
    }
    s.global.alloc(0x1000, 16).unwrap();
    for (a, w) in (0x1000..0x1010).step_by(4).zip(words) {
        s.global.write(a, 4, w);
    }
    s
}
