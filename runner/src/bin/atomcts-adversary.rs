//! `atomcts-adversary <lie>`: the project's own lying shim (issue 27; `atomcts::adversary`).
//! `atomcts-adversary --list` prints every lie, what it does and what the runner must make
//! of it. `atomcts-adversary --planted <bug>` answers honestly except where one planted bug
//! touches the answer (`atomcts::adversary::planted`: lost-update, stale-minmax,
//! round-toward-zero).

use std::io::{BufReader, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    let arg = std::env::args().nth(1).unwrap_or_default();
    if arg == "--list" {
        let mut out = std::io::stdout().lock();
        for l in atomcts::adversary::LIES {
            let _ = writeln!(out, "{}\t{:?}\t{:?}\t{}", l.name, l.hello, l.expect, l.what);
        }
        return ExitCode::SUCCESS;
    }
    if arg == "--planted" {
        let name = std::env::args().nth(2).unwrap_or_default();
        let Some(bug) = atomcts::adversary::find_bug(&name) else {
            let names: Vec<&str> = atomcts::adversary::BUGS.iter().map(|b| b.0).collect();
            eprintln!(
                "usage: atomcts-adversary --planted <bug> (unknown bug `{name}`; one of {})",
                names.join(", ")
            );
            return ExitCode::from(atomcts::exit::EXIT_ERROR);
        };
        let mut input = BufReader::new(std::io::stdin().lock());
        let mut output = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
        return match atomcts::adversary::serve_planted(bug, &mut input, &mut output) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("atomcts-adversary: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let Some(lie) = atomcts::adversary::find(&arg) else {
        eprintln!("usage: atomcts-adversary <lie> | --list (unknown lie `{arg}`)");
        return ExitCode::from(atomcts::exit::EXIT_ERROR);
    };
    let mut input = BufReader::new(std::io::stdin().lock());
    // One write per batch (the adversary flushes after each): an answer and a line after it
    // reach the runner together, as from a shim that prints both at once.
    let mut output = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
    match atomcts::adversary::serve(lie, &mut input, &mut output) {
        Ok(()) => ExitCode::SUCCESS,
        // The runner closed the pipe (it stopped the shim): nothing more to say.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("atomcts-adversary: {e}");
            ExitCode::FAILURE
        }
    }
}
