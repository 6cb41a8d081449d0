#!/bin/sh
# Check a tlbsim trace in a real viewer, offline, and keep a screenshot: the
# speedscope viewer (npm package "speedscope", which imports Chrome trace
# JSON) served on 127.0.0.1 and opened in headless Chromium.  It writes a
# trace of a window of munmap16 on haswell-i7 and screenshots speedscope's
# time-ordered view of CPU 0, where the munmap thread runs (speedscope shows
# one track at a time, and no flows or counters: use ui.perfetto.dev for
# those).  Not part of CI.
#
#   plots/trace-screenshot.sh [TLBSIM] [OUT.png]
#
# Defaults: TLBSIM build/tlbsim, OUT docs/img/munmap16-speedscope.png;
# TRACE_WINDOW (simulated ns, default 2000000:2012000) picks the window.
# Needs node and npm (speedscope is installed once into
# ~/.cache/tlbsim-speedscope), and Debian's chromium (apt-get install
# chromium).  Exits 1 with the reason when one is missing.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
tlbsim=${1:-${TLBSIM:-$root/build/tlbsim}}
out=${2:-$root/docs/img/munmap16-speedscope.png}
window=${TRACE_WINDOW:-2000000:2012000}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/tlbsim-speedscope

fail() {
	echo "trace-screenshot: $*" >&2
	exit 1
}

[ -x "$tlbsim" ] || fail "no tlbsim at $tlbsim (build it, or pass its path)"
command -v node >/dev/null && command -v npm >/dev/null ||
	fail "node and npm are needed (apt-get install nodejs npm)"
browser=""
for b in chromium chromium-browser google-chrome; do
	if command -v "$b" >/dev/null; then
		browser=$b
		break
	fi
done
[ -n "$browser" ] || fail "no Chromium (apt-get install chromium; with sudo when not root)"
release=$cache/node_modules/speedscope/dist/release
if [ ! -f "$release/index.html" ]; then
	mkdir -p "$cache"
	npm install --prefix "$cache" --no-audit --no-fund speedscope@1 >&2 ||
		fail "npm install speedscope failed (no access to the npm registry?)"
fi
[ -f "$release/index.html" ] || fail "speedscope installed without dist/release/index.html"

work=$(mktemp -d)
server=""
cleanup() {
	[ -n "$server" ] && kill "$server" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT INT TERM
cp -R "$release/." "$work/"
"$tlbsim" -T haswell-i7 -w munmap16 -q --trace "$work/munmap16.json" --trace-window "$window" \
	>/dev/null

# A static file server on a free port of 127.0.0.1; it prints the port.
node -e '
const http = require("http"), fs = require("fs"), path = require("path");
const root = process.argv[1];
const types = {".html": "text/html", ".js": "text/javascript", ".css": "text/css",
               ".json": "application/json", ".wasm": "application/wasm"};
const server = http.createServer((req, res) => {
  const file = path.join(root, path.normalize(decodeURIComponent(req.url.split("?")[0])));
  if (!file.startsWith(root)) { res.writeHead(403); res.end(); return; }
  fs.readFile(file, (err, data) => {
    if (err) { res.writeHead(404); res.end(); return; }
    res.writeHead(200, {"Content-Type": types[path.extname(file)] || "application/octet-stream"});
    res.end(data);
  });
});
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
' "$work" >"$work/port" &
server=$!
for _ in 1 2 3 4 5 6 7 8 9 10; do
	[ -s "$work/port" ] && break
	sleep 0.5
done
port=$(cat "$work/port")
[ -n "$port" ] || fail "the local server did not start"

url="http://127.0.0.1:$port/index.html#profileURL=http://127.0.0.1:$port/munmap16.json"
url="$url&title=tlbsim%20munmap16%20haswell-i7%20linux-4.5%20(window%20$window%20ns)"
sandbox=""
[ "$(id -u)" -eq 0 ] && sandbox="--no-sandbox" # Chromium refuses root otherwise
mkdir -p "$(dirname "$out")"
rm -f "$out"
# The virtual time budget lets speedscope fetch and lay out the profile
# before the shot.
"$browser" --headless $sandbox --disable-gpu --hide-scrollbars --window-size=1600,900 \
	--virtual-time-budget=15000 --screenshot="$out" "$url" >"$work/browser.log" 2>&1 ||
	{ tail -5 "$work/browser.log" >&2; fail "$browser failed"; }
[ -s "$out" ] || fail "no screenshot written"
echo "$out"
