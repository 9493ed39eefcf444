#!/usr/bin/env bash
# The demo's HTML report renders in a browser with its plots drawn.
#
#   bash scripts/check-demo-report.sh
#
# Runs a short `tickwire demo` (DEMO_ARGS, default `--duration 10`, which is long enough for
# every slow-consumer policy to act), then opens its report in headless Chromium twice with a
# fresh profile each time: `--dump-dom` (the page as the browser parsed it) and
# `--screenshot`. Checks, with Python's standard library only:
#   - the demo passed its own checks (exit 0) and wrote the report;
#   - the page has its five charts, each an <svg> the browser parsed, the line charts with a
#     path of at least MIN_POINTS points, the histograms with at least MIN_BARS bars;
#   - the report fetches nothing (no http(s):// src or href, no <script>);
#   - the screenshot is a PNG of the window's size that is not blank: enough non-white
#     pixels, and pixels of the plot's blue.
# The last line printed is `demo-report: N passed, M failed`; the exit status is 0 only when
# every check passed. The screenshot stays at $DEMO_REPORT_DIR/report.png for a person to
# look at.
#
# Installs Debian's chromium when it is missing (apt-get; needs root), as interop/browser.sh
# does, and builds target/release/tickwire when it is missing.
#
# Environment:
#   TICKWIRE_BIN     the binary (default target/release/tickwire)
#   DEMO_ARGS        arguments to `tickwire demo` besides --report (default: --duration 10)
#   DEMO_REPORT_DIR  where the report, DOM and screenshot go (default target/demo-check)
#   CHROMIUM         the browser (default: chromium on PATH, installed if missing)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bin="${TICKWIRE_BIN:-$root/target/release/tickwire}"
dir="${DEMO_REPORT_DIR:-$root/target/demo-check}"
read -r -a demo_args <<<"${DEMO_ARGS:---duration 10}"

give_up() {
  echo "FAIL $*"
  echo "demo-report: 0 passed, 1 failed"
  exit 1
}

command -v python3 >/dev/null || give_up "python3 not found on PATH"

# shellcheck source=scripts/chromium.sh
source "$root/scripts/chromium.sh"
find_chromium demo-report

if [ ! -x "$bin" ]; then
  cargo build --release -q -p tickwire-cli || give_up "cargo build --release -p tickwire-cli"
fi

rm -rf "$dir"
mkdir -p "$dir"
report="$dir/report.html"
echo "demo-report: $bin demo ${demo_args[*]} --report $report"
if ! timeout 180 "$bin" demo "${demo_args[@]}" --report "$report" >"$dir/summary.txt" 2>"$dir/progress.txt"; then
  sed 's/^/note: /' "$dir/summary.txt" "$dir/progress.txt" | tail -n 40
  give_up "tickwire demo failed or did not finish"
fi
[ -s "$report" ] || give_up "no report at $report"

profiles=()
cleanup() {
  for p in "${profiles[@]}"; do rm -rf "$p"; done
}
trap cleanup EXIT

# One headless Chromium run with a fresh profile and nothing reaching out; bounded.
browse() {
  local profile
  profile=$(mktemp -d)
  profiles+=("$profile")
  timeout 60 "$chromium" --headless --no-sandbox --disable-gpu --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$profile" --window-size=1200,1600 "$@" "file://$report"
}

browse --dump-dom >"$dir/dom.html" 2>"$dir/chromium-dom.log" || give_up "chromium --dump-dom"
browse --screenshot="$dir/report.png" >"$dir/chromium-shot.log" 2>&1 || give_up "chromium --screenshot"

python3 - "$report" "$dir/dom.html" "$dir/report.png" <<'PY'
import re, struct, sys, zlib
from html.parser import HTMLParser

report_path, dom_path, png_path = sys.argv[1:4]
MIN_POINTS, MIN_BARS = 5, 5
passed = failed = 0

def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {what}")
    else:
        failed += 1
        print(f"FAIL {what}")

class Charts(HTMLParser):
    """Each <svg data-chart>: its path point counts and its bar count."""
    def __init__(self):
        super().__init__()
        self.charts, self.current, self.scripts, self.remote = {}, None, 0, []
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self.scripts += 1
        for key in ("src", "href"):
            if re.match(r"(?i)\s*(https?:)?//", a.get(key) or ""):
                self.remote.append(a[key])
        if tag == "svg" and "data-chart" in a:
            self.current = self.charts.setdefault(a["data-chart"], {"paths": [], "bars": 0})
        elif self.current is not None and tag == "path" and "series" in (a.get("class") or ""):
            self.current["paths"].append(len(re.findall(r"[ML]", a.get("d") or "")))
        elif self.current is not None and tag == "rect" and "bar" in (a.get("class") or "").split():
            self.current["bars"] += 1
    def handle_endtag(self, tag):
        if tag == "svg":
            self.current = None

source = open(report_path, encoding="utf-8").read()
dom = open(dom_path, encoding="utf-8").read()
check("<svg" in dom and "tickwire demo" in dom, "the browser parsed the report")
page = Charts()
page.feed(dom)
check(page.scripts == 0 and not page.remote and "http://" not in source.replace('xmlns="http://www.w3.org/2000/svg"', ""),
      f"self-contained: no script, nothing fetched (scripts {page.scripts}, remote {page.remote[:3]})")
for name in ("deliveries", "latency-over-time", "percentiles"):
    chart = page.charts.get(name)
    points = max(chart["paths"]) if chart and chart["paths"] else 0
    check(points >= MIN_POINTS, f"line chart {name}: a path of {points} points (at least {MIN_POINTS})")
for name in ("histogram", "drops"):
    chart = page.charts.get(name)
    bars = chart["bars"] if chart else 0
    check(bars >= MIN_BARS, f"bar chart {name}: {bars} bars (at least {MIN_BARS})")

def png_pixels(path):
    """Width, height and RGB rows of an 8-bit RGB or RGBA PNG (what Chromium writes)."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    if depth != 8 or color not in (2, 6):
        raise ValueError(f"bit depth {depth}, colour type {color}")
    bpp = 3 if color == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up, corner = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
                line[i] = (line[i] + pred) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows

try:
    width, height, bpp, rows = png_pixels(png_path)
    check((width, height) == (1200, 1600), f"screenshot is {width}x{height}")
    total = ink = blue = 0
    for row in rows[::4]:
        for x in range(0, width * bpp, bpp * 4):
            r, g, b = row[x], row[x + 1], row[x + 2]
            total += 1
            if r + g + b < 3 * 235:
                ink += 1
            if b > 180 and r < 90 and g < 140:
                blue += 1
    check(ink > total // 50, f"screenshot not blank: {100 * ink / total:.1f}% of pixels drawn")
    check(blue > 20, f"screenshot shows the plots' blue ({blue} sampled pixels)")
except (OSError, ValueError, zlib.error) as e:
    check(False, f"screenshot readable: {e}")

print(f"demo-report: {passed} passed, {failed} failed")
sys.exit(0 if failed == 0 else 1)
PY
