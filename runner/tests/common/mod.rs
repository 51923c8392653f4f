//! Helpers shared by the CLI-level integration tests (each test file includes this module and
//! uses what it needs).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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
