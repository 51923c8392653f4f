#!/usr/bin/env python3
"""Corpus quality by mutation: how many single-point mutations of the reference model make some
corpus case fail.

cargo-mutants generates the mutants (`cargo install cargo-mutants`), but it runs the mutated
package's own tests, and the corpus tests live in the runner crate. This driver applies each
mutant's diff to a scratch git worktree, runs the corpus tests there (every corpus file under
every profile and probe option, plus the test of spec-allowed variations), and reverts.

Usage:
  python3 tools/mutants.py [--worktree DIR] FILE...        e.g. reference/src/semantics.rs
Writes one line per mutant (CAUGHT / MISSED / UNVIABLE / TIMEOUT) to stdout and a summary.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

TESTS = ["cargo", "test", "-q", "-p", "atomcts", "--test", "spec_cases", "--test", "perturb", "--test", "planted"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worktree", default="target/mutants-worktree")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    repo = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=True).stdout.strip()
    wt = os.path.abspath(a.worktree)
    if not os.path.isdir(wt):
        subprocess.run(["git", "worktree", "add", "--detach", wt, "HEAD"], cwd=repo, check=True)
    listing = ["cargo", "mutants", "--package", "atomcts-reference", "--list", "--json"]
    for f in a.files:
        listing += ["--file", f]
    muts = json.loads(subprocess.run(listing, cwd=wt, capture_output=True, text=True, check=True).stdout)
    counts = {}
    for m in muts:
        lines = m["diff"].split("\n")
        lines[0], lines[1] = f"--- a/{m['file']}", f"+++ b/{m['file']}"
        if subprocess.run(["patch", "-p1", "--quiet"], input="\n".join(lines) + "\n", text=True, cwd=wt).returncode:
            verdict = "UNAPPLIED"
        elif subprocess.run(TESTS + ["--no-run"], cwd=wt, capture_output=True).returncode:
            verdict = "UNVIABLE"
        else:
            # Its own process group, so a timeout stops the test binaries too, not only cargo.
            p = subprocess.Popen(TESTS, cwd=wt, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            try:
                verdict = "CAUGHT" if p.wait(timeout=300) else "MISSED"
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                verdict = "TIMEOUT"
        subprocess.run(["git", "checkout", "--", m["file"]], cwd=wt, check=True)
        for leftover in (m["file"] + ".orig", m["file"] + ".rej"):
            if os.path.exists(os.path.join(wt, leftover)):
                os.remove(os.path.join(wt, leftover))
        counts[verdict] = counts.get(verdict, 0) + 1
        print(f"{verdict}\t{m['name']}", flush=True)
    viable = counts.get("CAUGHT", 0) + counts.get("MISSED", 0) + counts.get("TIMEOUT", 0)
    print(f"{counts}; caught {counts.get('CAUGHT', 0)} of {viable} viable mutants")
    return 0


if __name__ == "__main__":
    sys.exit(main())
