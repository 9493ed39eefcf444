"""Interop through real proxies: `tickwire connect` and `tickwire http` to real servers behind
each proxy the connect path speaks, on the runtime under test (run by
test_websockets_interop.py after the TLS groups, whose certificates it uses).

The proxies (scripts/proxies.sh installs them from Debian packages), each on 127.0.0.1:
tinyproxy (HTTP CONNECT) and microsocks (SOCKS5, `socks5h://`), each with and without
credentials, and stunnel in front of tinyproxy (an `https://` proxy: TLS to the proxy, its
certificate trusted through `--proxy-cacert`). The servers behind them: the Python
`websockets` library over ws:// and wss://, and httpbin under gunicorn
(interop/http/setup.sh's venv) over http:// and https://. Every case checks what came back
(the echoes, httpbin's JSON naming the URL asked for); wrong credentials are a failure of one
stderr line naming the proxy, in bounded time.

The proxies and the two httpbin servers live for the whole script (started on first use with
`subprocess`, stopped at exit), so each test runs only the tickwire commands.
"""

import asyncio
import atexit
import json
import socket
import subprocess
import tempfile
import time
from asyncio.subprocess import DEVNULL, PIPE
from pathlib import Path

from harness import CLIENT_ROLE, HOST, ROOT, STEP, Group, PeerServer, check, finish, spawn
from test_tls_interop import CA, SERVER, check_echoes, check_one_error_line, messages, server_context

USER, PASSWORD = "alice", "s3cret"
HTTPBIN_VENV = ROOT / "target" / "http-interop-venv"
STATE = Path(tempfile.mkdtemp(prefix="tickwire-proxy-interop-"))
# Every long-lived peer this script starts, stopped at exit.
PEERS = []


def stop_peers():
    for process in PEERS:
        if process.poll() is None:
            process.kill()
            process.wait()


atexit.register(stop_peers)


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def wait_listening(port, process, what):
    deadline = time.monotonic() + STEP * 2
    while True:
        try:
            socket.create_connection((HOST, port), timeout=1).close()
            return
        except OSError:
            check(process.poll() is None, f"{what} exited at start with {process.returncode}")
            check(time.monotonic() < deadline, f"{what} did not listen on {port}")
            time.sleep(0.02)


def start(what, port, *command):
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    PEERS.append(process)
    wait_listening(port, process, what)
    return process


_binaries = {}


def binary(name):
    if not _binaries:
        out = subprocess.run(["bash", str(ROOT / "scripts" / "proxies.sh")], check=True,
                             stdout=subprocess.PIPE, text=True).stdout
        _binaries.update(line.split(" ", 1) for line in out.splitlines() if " " in line)
    return _binaries[name]


def tinyproxy(credentials):
    port = free_port()
    config = STATE / f"tinyproxy-{port}.conf"
    text = f"Port {port}\nListen {HOST}\nTimeout 30\nLogLevel Critical\nMaxClients 50\n"
    if credentials:
        text += f"BasicAuth {USER} {PASSWORD}\n"
    config.write_text(text)
    start("tinyproxy", port, binary("tinyproxy"), "-d", "-c", str(config))
    return port


def microsocks(credentials):
    port = free_port()
    args = ["-i", HOST, "-p", str(port)] + (["-u", USER, "-P", PASSWORD] if credentials else [])
    start("microsocks", port, binary("microsocks"), *args)
    return port


def stunnel(target_port):
    """stunnel on a free port with SERVER's certificate, forwarding to `target_port`."""
    port = free_port()
    config = STATE / f"stunnel-{port}.conf"
    config.write_text(f"foreground = yes\npid =\ndebug = 0\n[proxy]\naccept = {HOST}:{port}\n"
                      f"connect = {HOST}:{target_port}\ncert = {SERVER.cert}\nkey = {SERVER.key}\n")
    start("stunnel", port, binary("stunnel"), str(config))
    return port


_proxies = {}


def proxies():
    """Each proxy's URL (with the credentials it asks for), started once."""
    if not _proxies:
        auth = f"{USER}:{PASSWORD}@"
        _proxies["tinyproxy"] = f"http://{HOST}:{tinyproxy(False)}"
        _proxies["tinyproxy with credentials"] = f"http://{auth}{HOST}:{tinyproxy(True)}"
        _proxies["microsocks"] = f"socks5h://{HOST}:{microsocks(False)}"
        _proxies["microsocks with credentials"] = f"socks5h://{auth}{HOST}:{microsocks(True)}"
        _proxies["stunnel+tinyproxy"] = f"https://{HOST}:{stunnel(tinyproxy(False))}"
        _proxies["stunnel+tinyproxy with credentials"] = f"https://{auth}{HOST}:{stunnel(tinyproxy(True))}"
    return _proxies


_httpbin = {}


def httpbin():
    """httpbin's base URLs over http:// and https:// (SERVER's certificate), started once."""
    if not _httpbin:
        gunicorn = HTTPBIN_VENV / "bin" / "gunicorn"
        check(gunicorn.is_file(), f"{gunicorn} missing: interop/run.sh runs interop/http/setup.sh")
        for scheme, tls in (("http", []), ("https", ["--certfile", SERVER.cert, "--keyfile", SERVER.key])):
            port = free_port()
            start(f"httpbin ({scheme})", port, str(gunicorn), "--bind", f"{HOST}:{port}", "--workers", "1",
                  "--worker-class", "gthread", "--threads", "4", "--chdir", str(STATE), *tls, "httpbin:app")
            _httpbin[scheme] = f"{scheme}://{HOST}:{port}"
    return _httpbin


def proxy_args(url):
    return ["--proxy", url, "--proxy-cacert", CA.cert]


def echo_checker(items):
    """A peer handler: checks every echo, closes with 1000, returns the close code it got."""
    async def handler(ws):
        await check_echoes(ws, items)
        await asyncio.wait_for(ws.close(1000), STEP)
        return {"close": ws.close_code}
    return handler


async def echo_through(proxy_url, secure):
    """`tickwire connect --echo` to a `websockets` server (wss:// with `secure`) through the
    proxy; the server checks every echo and closes with 1000."""
    context = server_context() if secure else None
    async with PeerServer(echo_checker(messages(large=False)), ssl=context) as peer:
        scheme, tls = ("wss", ["--ca", CA.cert]) if secure else ("ws", [])
        process = await spawn("connect", f"{scheme}://{HOST}:{peer.port}/", "--echo", *tls,
                              *proxy_args(proxy_url), stdin=DEVNULL, stdout=PIPE, stderr=PIPE)
        seen = await peer.outcome(process)
        code, _, stderr = await asyncio.wait_for(finish(process), STEP * 2)
    check(seen["close"] == 1000, f"{scheme} via {proxy_url}: close {seen['close']}, expected 1000")
    check(code == 0, f"{scheme} via {proxy_url}: tickwire connect exited {code}: {stderr.strip()!r}")


async def get_through(proxy_url, scheme, name):
    """`tickwire http GET` of httpbin's /get through the proxy: its JSON names the URL."""
    base = httpbin()[scheme]
    url = f"{base}/get?via={name.replace(' ', '-').replace('+', '-')}"
    tls = ["--ca", CA.cert] if scheme == "https" else []
    process = await spawn("http", "GET", url, *tls, *proxy_args(proxy_url), "--max-time", "10",
                          stdin=DEVNULL, stdout=PIPE, stderr=PIPE)
    code, stdout, stderr = await asyncio.wait_for(finish(process), STEP * 3)
    check(code == 0, f"{scheme} via {proxy_url}: tickwire http exited {code}: {stderr.strip()!r}")
    body = json.loads(stdout)
    check(body.get("url") == url, f"{scheme} via {proxy_url}: httpbin saw {body.get('url')!r}, asked {url!r}")


def through(name):
    """The test of one proxy: ws://, wss://, http:// and https:// through it."""
    async def test():
        url = proxies()[name]
        await echo_through(url, secure=False)
        await echo_through(url, secure=True)
        await get_through(url, "http", name)
        await get_through(url, "https", name)
    test.__name__ = f"test_ws_wss_http_https_through_{name.replace(' ', '_').replace('+', '_')}"
    return test


async def test_wrong_credentials_are_one_line_naming_the_proxy():
    for name in ("tinyproxy with credentials", "microsocks with credentials",
                 "stunnel+tinyproxy with credentials"):
        wrong = proxies()[name].replace(f"{USER}:{PASSWORD}@", "mallory:nope@")
        async with PeerServer(echo_checker([])) as peer:
            started = time.monotonic()
            process = await spawn("connect", f"ws://{HOST}:{peer.port}/", "--echo", *proxy_args(wrong),
                                  stdin=DEVNULL, stdout=PIPE, stderr=PIPE)
            code, _, stderr = await asyncio.wait_for(finish(process), STEP * 2)
        check(code not in (0, None), f"{name}: tickwire connect exited {code} with wrong credentials")
        check(time.monotonic() - started < STEP * 2, f"{name}: the refusal took too long")
        check_one_error_line(stderr, ["proxy"])


# After test_tls_interop.GROUPS, whose setup group makes the certificates used here.
GROUPS = [
    Group("proxy client", None, [
        *(through(name) for name in (
            "tinyproxy", "tinyproxy with credentials", "microsocks", "microsocks with credentials",
            "stunnel+tinyproxy", "stunnel+tinyproxy with credentials")),
        test_wrong_credentials_are_one_line_naming_the_proxy,
    ], CLIENT_ROLE),
]
