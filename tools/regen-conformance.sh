#!/usr/bin/env bash
# Regenerates the committed conformance report from scratch: runs the whole corpus (probes
# included) on every implementation available on this machine (`atomcts list adapters`), each
# under the profile it claims, and writes docs/conformance/conformance.{json,md,html} and the
# summary block of README.md. The run reports and logs go to target/conformance-runs/.
#   tools/regen-conformance.sh                 every available implementation
#   tools/regen-conformance.sh --adapter A ... only these (passed on to `atomcts report`)
# Install the implementations first: tools/install-implementations.sh (PoCL's first run compiles
# every kernel: minutes; later runs use its cache). CI checks the committed report against its
# own gate runs (`atomcts report --from ... --check`, .ci/run) and fails when it is stale.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p atomcts
evidence=()
for f in docs/evidence/*.toml; do evidence+=(--evidence "$f"); done
target/release/atomcts report --out docs/conformance --runs target/conformance-runs \
  --readme README.md "${evidence[@]}" "$@"
# The GPU columns: the committed runs of tools/nvidia/gpu-run.sh (docs/conformance/gpu/; no GPU
# here or in CI), added to the runs just made.
if compgen -G "docs/conformance/gpu/*.json" >/dev/null; then
  from=()
  for f in target/conformance-runs/*.json docs/conformance/gpu/*.json; do from+=(--from "$f"); done
  target/release/atomcts report --out docs/conformance --readme README.md "${from[@]}" "${evidence[@]}"
fi
if command -v chromium >/dev/null 2>&1; then
  tools/check-report-html.sh docs/conformance/conformance.html
else
  echo "regen-conformance: chromium not installed; page not checked (tools/install-implementations.sh browser)" >&2
fi
