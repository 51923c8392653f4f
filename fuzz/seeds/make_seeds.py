#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets from generated cases.

    cargo run -q -p atomcts -- gen --seed 1 --count 90 --out /tmp/seedgen
    python3 fuzz/seeds/make_seeds.py /tmp/seedgen

parse_<dialect>/: one instruction text per file (the generated asm, deduplicated).
load_case/: one case per file (the generated file's header and one [[case]] block).
diff_fast_reference needs no seeds: every byte string decodes to a case.
"""
import hashlib
import pathlib
import sys
import tomllib

src = pathlib.Path(sys.argv[1])
out = pathlib.Path(__file__).resolve().parent
for d in ("sass", "visa", "msl"):
    text = (src / f"{d}.toml").read_text()
    doc = tomllib.loads(text)
    asm_dir = out / f"parse_{d}"
    asm_dir.mkdir(exist_ok=True)
    for asm in sorted({c["asm"] for c in doc["case"]}):
        name = hashlib.sha1(asm.encode()).hexdigest()[:12]
        (asm_dir / name).write_text(asm)
    head, *blocks = text.split("[[case]]\n")
    header = "".join(l + "\n" for l in head.splitlines() if not l.startswith("#"))
    case_dir = out / "load_case"
    case_dir.mkdir(exist_ok=True)
    for i, b in enumerate(blocks[:12]):
        (case_dir / f"{d}-{i:02}.toml").write_text(header + "[[case]]\n" + b)
