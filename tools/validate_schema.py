#!/usr/bin/env python3
"""Validates every corpus file (TOML converted to JSON) against spec-cases/schema.json.

Usage: python3 tools/validate_schema.py [spec-cases]   (needs the `jsonschema` package)
Exit 0 when every file validates, 1 otherwise (each error with its file and JSON path).
"""
import json
import pathlib
import sys
import tomllib

import jsonschema

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "spec-cases")
schema = json.loads((root / "schema.json").read_text())
validator = jsonschema.Draft202012Validator(schema)
bad = 0
files = sorted(root.rglob("*.toml"))
for f in files:
    doc = tomllib.loads(f.read_text())
    for e in validator.iter_errors(doc):
        bad += 1
        path = "/".join(str(p) for p in e.absolute_path)
        print(f"{f}: {path}: {e.message[:300]}")
print(f"{len(files)} files, {bad} schema errors")
sys.exit(1 if bad else 0)
