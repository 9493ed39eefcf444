"""The HTTP side of interop/browser.sh: serves the test page and reports what it found.

    python3 page_server.py serve RESULT_FILE LIFETIME_SECONDS
    python3 page_server.py report RESULT_FILE [PROBLEM ...]

`serve` listens on 127.0.0.1 on a free port, prints `page server listening on
http://127.0.0.1:PORT/` as its first line, serves echo.html and echo.js from this directory
(nothing else), and takes the one JSON result the page POSTs to /result: it writes it to
RESULT_FILE (whole, by rename, so a reader never sees half of it) and exits 0. It exits 1
on its own after LIFETIME_SECONDS so it never outlives a script that died without its trap.

`report` prints one line per check of the result (`ok   NAME` or `FAIL NAME: DETAIL`), one
`FAIL` line per PROBLEM the caller saw (Chromium exited, nothing came in time, ...), and last
`browser: N passed, M failed`. A missing result or one without checks counts as a failure.
Exit status 0 when nothing failed, 1 otherwise.

Plain python3 standard library: nothing to install.
"""

import http.server
import json
import os
import sys
import threading
from pathlib import Path

HOST = "127.0.0.1"
HERE = Path(__file__).resolve().parent
PAGES = {
    "/echo.html": "text/html; charset=utf-8",
    "/echo.js": "text/javascript; charset=utf-8",
}
MAX_RESULT_BYTES = 1 << 20


def serve(result_file, lifetime):
    received = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            path = self.path.split("?", 1)[0]
            if path not in PAGES:
                self.send_error(404)
                return
            body = (HERE / path.lstrip("/")).read_bytes()
            self.answer(200, PAGES[path], body)

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            if self.path != "/result" or not 0 < length <= MAX_RESULT_BYTES:
                self.send_error(400)
                return
            body = self.rfile.read(length)
            try:
                json.loads(body)
            except ValueError:
                self.send_error(400)
                return
            if not received.is_set():
                partial = Path(f"{result_file}.partial")
                partial.write_bytes(body)
                os.replace(partial, result_file)
                received.set()
            self.answer(204, None, b"")

        def answer(self, status, content_type, body):
            self.send_response(status)
            if content_type:
                self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass  # The page's requests are not news; failures show up in the report.

    server = http.server.ThreadingHTTPServer((HOST, 0), Handler)
    server.daemon_threads = True
    print(f"page server listening on http://{HOST}:{server.server_address[1]}/", flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    got_result = received.wait(lifetime)
    server.shutdown()
    return 0 if got_result else 1


def report(result_file, problems):
    lines = []
    passed = failed = 0
    try:
        result = json.loads(Path(result_file).read_text())
    except FileNotFoundError:
        result = None
    except ValueError as error:
        result = None
        problems = [*problems, f"the result is not JSON: {error}"]
    if result is not None:
        print(f"browser: {result.get('userAgent')}")
        print(f"browser: {result.get('wsUrl')} extensions {json.dumps(result.get('extensions'))}")
        checks = result.get("checks") or []
        for check in checks:
            if check.get("ok"):
                passed += 1
                lines.append(f"ok   {check['name']}")
            else:
                failed += 1
                lines.append(f"FAIL {check['name']}: {check.get('detail')}")
        if result.get("fatal"):
            problems = [*problems, f"the page's run threw: {result['fatal']}"]
        if not checks:
            problems = [*problems, "the page reported no checks"]
    elif not problems:
        problems = ["no result from the page"]
    for problem in problems:
        failed += 1
        lines.append(f"FAIL {problem}")
    for line in lines:
        print(line)
    print(f"browser: {passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


def main(argv):
    if len(argv) == 4 and argv[1] == "serve":
        return serve(argv[2], float(argv[3]))
    if len(argv) >= 3 and argv[1] == "report":
        return report(argv[2], argv[3:])
    print("\n".join(__doc__.strip().splitlines()[2:4]), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
