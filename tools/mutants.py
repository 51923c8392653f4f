#!/usr/bin/env python3
"""Corpus quality by mutation: how many single-point mutations of the reference model make some
corpus test fail.

cargo-mutants generates the mutants (`cargo install --locked cargo-mutants@27.1.0`), but it runs
the mutated package's own tests, and the corpus tests live in the runner crate. This driver
applies each mutant's diff to a scratch git worktree, runs the corpus-only tests there (every
corpus file under every profile and probe option, the test of spec-allowed variations, and the
test of planted wrong answers), and reverts. Unit tests of the reference are not run: a
third-party implementation meets only the corpus and the judge.

Usage:
  python3 tools/mutants.py [--worktree DIR] FILE...        e.g. reference/src/semantics.rs
  python3 tools/mutants.py --sample 4 --seed 7 --fail-on-survivor reference/src/check.rs ...
Writes one line per mutant (CAUGHT / MISSED / EQUIVALENT / UNVIABLE / TIMEOUT) to stdout and a
summary. MISSED mutants listed in tools/mutants-equivalent.txt (keyed by file, mutation and the
mutated line's text and column, so the list survives line shifts) are reported as EQUIVALENT.
MISSED mutants listed in tools/mutants-known.txt (same keys) are known survivors that are not
equivalent: the corpus cannot reach them (a loader check, a diagnostic message) and a unit test
pins each; they stay MISSED in every count and are marked `# known: <reason>`. With
--fail-on-survivor the exit status is 1 when a MISSED mutant remains that is in neither list.

A mutant's test stage that runs longer than five times the unmutated tree's run of the same
stage (at least 60 s; --timeout caps the whole mutant) is stopped and the mutant reported
TIMEOUT, which counts as caught: its tests never pass (cargo-mutants' own rule, five times the
baseline, applied per stage so that a hang in the first, short stage is cut in about a minute).
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time

TESTS = ["cargo", "test", "-q", "-p", "atomcts", "--test", "spec_cases", "--test", "perturb", "--test", "planted"]
# Run in this order, stopping at the first that fails: most mutants are caught by spec_cases alone.
STAGES = [["spec_cases"], ["perturb", "planted"]]
# A build that fails for one of these reasons is the machine's fault, not the mutant's.
ENVIRONMENT_FAILURES = ("No space left on device", "Out of diskspace", "Cannot allocate memory")


def stage_command(names):
    cmd = TESTS[:5]
    for n in names:
        cmd += ["--test", n]
    return cmd
EQUIVALENT = "tools/mutants-equivalent.txt"
KNOWN = "tools/mutants-known.txt"


def mutation_text(m):
    """The mutation with its column but not its line: `29: replace && with || in observe` (the
    column tells apart two mutations of one line; the line number changes with every edit above)."""
    pos, text = m["name"].split(": ", 1)
    return f"{pos.rsplit(':', 1)[1]}: {text}"


def line_text(root, m):
    """The stripped text of the mutated line, in the unmutated source."""
    with open(os.path.join(root, m["file"]), encoding="utf-8") as f:
        lines = f.read().split("\n")
    return lines[m["span"]["start"]["line"] - 1].strip()


def key(root, m):
    return (m["file"], mutation_text(m), line_text(root, m))


def load_equivalent(repo, name=EQUIVALENT):
    """`file | column: mutation | mutated line (stripped) | reason` per line; `#` starts a comment."""
    out = {}
    path = os.path.join(repo, name)
    if not os.path.exists(path):
        return out
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            # The mutation and the mutated line may contain ` | ` themselves (`replace | with ^`):
            # the reason is the last field, the file the first, the key everything before the
            # reason, matched as a whole.
            head, _, reason = line.rpartition(" | ")
            if head.count(" | ") < 2 or not reason.strip():
                sys.exit(f"{name}:{n}: want `file | mutation | line | reason`")
            out[head.strip()] = reason.strip()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worktree", default="target/mutants-worktree")
    ap.add_argument("--sample", type=int, help="judge only this many mutants, drawn at random")
    ap.add_argument("--seed", type=int, help="seed of the sample (default: from the clock; printed)")
    ap.add_argument("--fail-on-survivor", action="store_true", help="exit 1 when a non-equivalent mutant survives")
    ap.add_argument("--timeout", type=int, default=300, help="most seconds per mutant's tests (each stage is also cut at five times its unmutated run, at least 60 s)")
    ap.add_argument("--target-dir", help="cargo target directory for the scratch tree (e.g. the repository's own, to reuse built dependencies)")
    ap.add_argument("--match", action="append", default=[], help="judge only mutants whose name contains this text (repeatable)")
    ap.add_argument("--skip", type=int, default=0, help="leave out the first N mutants of the listing (to resume a run stopped part way)")
    ap.add_argument("--count", type=int, default=0, help="judge at most N mutants after --skip (to split one file's listing between streams)")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    repo = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=True).stdout.strip()
    wt = os.path.abspath(a.worktree)
    if not os.path.isdir(wt):
        subprocess.run(["git", "worktree", "add", "--detach", wt, "HEAD"], cwd=repo, check=True)
    else:
        # A scratch tree left by an earlier run: bring it to this commit.
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()
        subprocess.run(["git", "checkout", "-q", "--detach", "--force", head], cwd=wt, check=True)
    # The working tree's uncommitted changes travel too (so a run measures what is on disk).
    diff = subprocess.run(["git", "diff", "HEAD", "--binary"], cwd=repo, capture_output=True, check=True).stdout
    if diff:
        subprocess.run(["git", "apply", "--whitespace=nowarn"], input=diff, cwd=wt, check=True)
        subprocess.run(["git", "add", "-A"], cwd=wt, check=True)
        subprocess.run(["git", "-c", "user.name=mutants", "-c", "user.email=mutants@localhost", "commit", "-q", "-m", "uncommitted changes"], cwd=wt, check=True)
    for untracked in subprocess.run(["git", "ls-files", "--others", "--exclude-standard"], cwd=repo, capture_output=True, text=True, check=True).stdout.split("\n"):
        if untracked and not os.path.exists(os.path.join(wt, untracked)):
            sys.exit(f"untracked file {untracked}: add it to git first")
    listing = ["cargo", "mutants", "--package", "atomcts-reference", "--list", "--json"]
    for f in a.files:
        listing += ["--file", f]
    muts = json.loads(subprocess.run(listing, cwd=wt, capture_output=True, text=True, check=True).stdout)
    if a.match:
        muts = [m for m in muts if any(t in m["name"] for t in a.match)]
    if a.skip:
        print(f"leaving out the first {a.skip} of {len(muts)} mutants (--skip)", flush=True)
        muts = muts[a.skip:]
    if a.count:
        print(f"judging at most {a.count} of the {len(muts)} left (--count)", flush=True)
        muts = muts[:a.count]
    equivalent = load_equivalent(repo)
    known = load_equivalent(repo, KNOWN)
    env = dict(os.environ)
    if a.target_dir:
        env["CARGO_TARGET_DIR"] = os.path.abspath(a.target_dir)
    if a.sample is not None:
        seed = a.seed if a.seed is not None else int(time.time())
        print(f"sample of {a.sample} of {len(muts)} mutants, seed {seed} (rerun: --sample {a.sample} --seed {seed})", flush=True)
        muts = random.Random(seed).sample(muts, min(a.sample, len(muts)))
    else:
        print(f"{len(muts)} mutants", flush=True)
    # With a shared --target-dir, cargo gives the scratch tree's workspace crates the same
    # artifact names as the repository's (a path package's hash takes its path relative to the
    # workspace) and tells the two builds apart by file times only: one tree then ran the
    # other's build of atomcts-reference (seen 2026-11-29: the repository's tests ran a mutant
    # while a run was under way). Another version of the package in the scratch tree gives it
    # and its dependents hashes of their own; third-party dependencies are still shared.
    manifest = os.path.join(wt, "reference", "Cargo.toml")
    with open(manifest) as f:
        text = f.read()
    if "version.workspace = true" not in text:
        sys.exit(f"{manifest}: expected `version.workspace = true` (the scratch tree's own version goes there)")
    with open(manifest, "w") as f:
        f.write(text.replace("version.workspace = true", 'version = "0.0.0-mutants"', 1))
    # The unmutated tree must build: otherwise every mutant would be reported unviable.
    base = subprocess.run(TESTS + ["--no-run"], cwd=wt, capture_output=True, text=True, env=env)
    if base.returncode:
        print(f"error: the unmutated tree in {wt} does not build:\n{base.stderr[-4000:]}", file=sys.stderr)
        return 2
    # Nor fail its tests: otherwise every mutant would be reported caught.
    baselines = []
    for names in STAGES:
        t0 = time.time()
        run = subprocess.run(stage_command(names), cwd=wt, capture_output=True, text=True, env=env)
        if run.returncode:
            print(f"error: the unmutated tree in {wt} fails {' '.join(names)}:\n{(run.stdout + run.stderr)[-4000:]}", file=sys.stderr)
            return 2
        baselines.append(time.time() - t0)
    limits = [max(60.0, 5 * b) for b in baselines]
    print("unmutated stages: " + ", ".join(f"{' '.join(n)} {b:.0f}s" for n, b in zip(STAGES, baselines))
          + f"; a mutant's stage is cut at five times that (at least 60 s), the whole at {a.timeout}s", flush=True)
    counts = {}
    per_file = {}
    survivors = []
    started = time.time()
    for m in muts:
        k = key(wt, m)
        lines = m["diff"].split("\n")
        lines[0], lines[1] = f"--- a/{m['file']}", f"+++ b/{m['file']}"
        t0 = time.time()
        if subprocess.run(["patch", "-p1", "--quiet"], input="\n".join(lines) + "\n", text=True, cwd=wt).returncode:
            verdict = "UNAPPLIED"
        elif (build := subprocess.run(TESTS + ["--no-run"], cwd=wt, capture_output=True, text=True, env=env)).returncode:
            verdict = "UNVIABLE"
            if any(r in build.stderr for r in ENVIRONMENT_FAILURES):
                print(f"error: building {m['name']} failed for a reason that is not the mutant:\n{build.stderr[-4000:]}", file=sys.stderr)
                return 2
        else:
            verdict = "MISSED"
            deadline = time.time() + a.timeout
            for names, limit in zip(STAGES, limits):
                # Its own process group, so a timeout stops the test binaries too, not only cargo.
                p = subprocess.Popen(stage_command(names), cwd=wt, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, env=env)
                try:
                    failed = p.wait(timeout=max(1, min(deadline - time.time(), limit)))
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
                    verdict = "TIMEOUT"
                    break
                if failed:
                    verdict = "CAUGHT"
                    break
        subprocess.run(["git", "checkout", "--", m["file"]], cwd=wt, check=True)
        for leftover in (m["file"] + ".orig", m["file"] + ".rej"):
            if os.path.exists(os.path.join(wt, leftover)):
                os.remove(os.path.join(wt, leftover))
        if verdict == "MISSED" and " | ".join(k) in equivalent:
            verdict = "EQUIVALENT"
        is_known = verdict == "MISSED" and " | ".join(k) in known
        if verdict == "MISSED" and not is_known:
            survivors.append(m)
        counts[verdict] = counts.get(verdict, 0) + 1
        pf = per_file.setdefault(m["file"], {})
        pf[verdict] = pf.get(verdict, 0) + 1
        note = f"\t# {equivalent[' | '.join(k)]}" if verdict == "EQUIVALENT" else ""
        if is_known:
            note = f"\t# known: {known[' | '.join(k)]}"
        print(f"{verdict}\t{m['name']}\t[{time.time() - t0:.0f}s]{note}", flush=True)
        if verdict == "MISSED" and not is_known:
            print(f"\tequivalent-list key: {' | '.join(k)} | <reason>", flush=True)
    print(f"\n| file | judged | caught | equivalent | missed |\n| --- | --- | --- | --- | --- |")
    for f, c in sorted(per_file.items()):
        judged = c.get("CAUGHT", 0) + c.get("MISSED", 0) + c.get("EQUIVALENT", 0) + c.get("TIMEOUT", 0)
        print(f"| {f} | {judged} | {c.get('CAUGHT', 0) + c.get('TIMEOUT', 0)} | {c.get('EQUIVALENT', 0)} | {c.get('MISSED', 0)} |")
    viable = counts.get("CAUGHT", 0) + counts.get("MISSED", 0) + counts.get("TIMEOUT", 0)
    print(f"{counts}; caught {counts.get('CAUGHT', 0) + counts.get('TIMEOUT', 0)} of {viable} viable non-equivalent mutants in {time.time() - started:.0f}s")
    if a.fail_on_survivor and survivors:
        print(f"{len(survivors)} mutant(s) survived the corpus and are in neither {EQUIVALENT} nor {KNOWN}:")
        for m in survivors:
            print(f"  {m['name']}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
