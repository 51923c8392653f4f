#!/usr/bin/env bash
# Opens the conformance page in a real browser (headless Chromium from Debian's `chromium`
# package; tools/install-implementations.sh browser) and checks what a person would see:
#   tools/check-report-html.sh [PAGE.html] [OUTDIR]
# (defaults: docs/conformance/conformance.html, target/report-html-check). It
#   1. takes a screenshot (OUTDIR/conformance.png) and checks it is not blank: many colours, and
#      the matrix's colour codes (pass green #b7e4b0, and #f4a6a6 red where the page has a
#      failing cell) cover a visible area;
#   2. dumps the DOM Chromium built (OUTDIR/dom.html) and checks it holds the matrix and the
#      ambiguity table, with cells linking to evidence anchors that exist in the page.
# No network: the page is a local file with no script and no external resource; Chromium runs
# with its background networking, sync and component updates off, in a new empty profile.
set -euo pipefail
cd "$(dirname "$0")/.."
page=${1:-docs/conformance/conformance.html}
out=${2:-target/report-html-check}
[ -f "$page" ] || { echo "check-report-html: no page $page" >&2; exit 2; }
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "check-report-html: no chromium (tools/install-implementations.sh browser)" >&2; exit 2; }
mkdir -p "$out"
abs=$(realpath "$page")
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
  --disable-background-networking --disable-component-update --disable-sync
  --disable-dev-shm-usage --hide-scrollbars --user-data-dir="$profile")
rm -f "$out/conformance.png"
timeout 120 "$browser" "${flags[@]}" --screenshot="$out/conformance.png" --window-size=1400,1400 \
  "file://$abs" >"$out/chromium.log" 2>&1 || true
timeout 120 "$browser" "${flags[@]}" --dump-dom "file://$abs" >"$out/dom.html" 2>>"$out/chromium.log" || true
python3 - "$out/conformance.png" "$out/dom.html" "$page" <<'EOF'
import re, struct, sys, zlib

png, dom_path, page = sys.argv[1:4]

def pixels(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit("check-report-html: %s is not a PNG" % path)
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            if depth != 8 or ctype not in (2, 6):
                sys.exit("check-report-html: unexpected PNG type %d/%d" % (depth, ctype))
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, prev, out = zlib.decompress(idat), w * bpp, bytearray(w * bpp), []
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out.extend(tuple(line[i:i + 3]) for i in range(0, stride, bpp))
        prev = line
    return w, h, out

try:
    w, h, px = pixels(png)
except FileNotFoundError:
    sys.exit("check-report-html: Chromium wrote no screenshot (see chromium.log)")
colours = {}
for p in px:
    colours[p] = colours.get(p, 0) + 1
green = colours.get((0xb7, 0xe4, 0xb0), 0)
red = colours.get((0xf4, 0xa6, 0xa6), 0)
html = open(page, encoding="utf-8").read()
problems = []
if len(colours) < 16:
    problems.append("the screenshot is blank or nearly so (%d colours)" % len(colours))
if green < 500:
    problems.append("the matrix's pass colour covers %d pixels (expected a visible area)" % green)
first_screen_fail = 'class="fail"' in html.split('id="ambiguity"')[0]
if first_screen_fail and red < 100:
    problems.append("the page has failing cells but the fail colour covers %d pixels" % red)
dom = open(dom_path, encoding="utf-8", errors="replace").read()
for needle in ('id="matrix-table"', 'id="ambiguity-table"', 'id="implementations-table"'):
    if needle not in dom:
        problems.append("Chromium's DOM has no %s" % needle)
links = set(re.findall(r'href="#([^"]+)"', dom))
ids = set(re.findall(r'id="([^"]+)"', dom))
if not links:
    problems.append("no cell links to evidence")
missing = sorted(links - ids)
if missing:
    problems.append("%d links to missing anchors, e.g. #%s" % (len(missing), missing[0]))
if re.search(r"<script|https?://", html):
    problems.append("the page has a script or a network address")
print("check-report-html: %dx%d screenshot, %d colours, pass colour %d px, fail colour %d px; "
      "DOM %d bytes, %d links, all anchors present: %s"
      % (w, h, len(colours), green, red, len(dom), len(links), not missing))
if problems:
    sys.exit("check-report-html: " + "; ".join(problems))
EOF
