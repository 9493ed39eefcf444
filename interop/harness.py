"""Shared plumbing for the interop tests (test_websockets_interop.py, test_deflate_interop.py,
test_tls_interop.py).

Owns what every test leans on: the bounds on every wait, the checks and their one-line failure
messages, the subprocesses (tickwire through `spawn`, other programs such as openssl through
`spawn_program`, so all of them are killed at the end), the `tickwire serve` echo server (ws://
or wss://), the `websockets` peer server for `tickwire connect` (ws://, or wss:// given `ssl`),
raw-socket handshakes, the groups of tests and the role each puts tickwire in, and the runner
that prints `ok`/`FAIL` per test and the closing line `interop: N passed, M failed`. It holds no
tests.

Rules every test keeps: traffic stays on 127.0.0.1, every wait is bounded by
`asyncio.wait_for`, and every subprocess started here is killed before the script exits.
"""

import asyncio
import os
import sys
import tempfile
import traceback
from pathlib import Path
from typing import NamedTuple, Optional

from websockets.asyncio.server import serve as ws_serve

HOST = "127.0.0.1"
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TICKWIRE = Path(os.environ.get("TICKWIRE_BIN", ROOT / "target" / "release" / "tickwire"))
# blocking (default), tokio or reactor: the transports every tickwire command runs on
# (`--runtime`). The reactor (tickwire-server) only serves: `connect` refuses it.
RUNTIME = os.environ.get("TICKWIRE_RUNTIME", "blocking")
RUNTIMES = ("blocking", "tokio", "reactor")
# The runtimes with no client: the runner skips the client-role groups on them.
SERVER_ONLY_RUNTIMES = ("reactor",)

# Bounds on every wait, in seconds.
STEP = 5.0  # one read, one reply, one process exit
TEST = 30.0  # one whole test

MIB = 1 << 20
# RFC 6455 §1.3: the sample key and the accept value it must produce.
SAMPLE_KEY = "dGhlIHNhbXBsZSBub25jZQ=="
SAMPLE_ACCEPT = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

# Every subprocess this script starts, so the runner can kill whatever a failing test left.
PROCESSES = []


class TestFailure(Exception):
    """A check that did not hold: the message says what was expected and what came."""


def check(condition, message):
    if not condition:
        raise TestFailure(message)


def short(value, limit=80):
    """A repr short enough for a one-line failure message."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(value)} long)"


# ---------------------------------------------------------------------------------------------
# Processes


async def spawn(*args, stdin=None, stdout=None, stderr=None):
    """Starts the tickwire binary under test with `args`, on the transports of RUNTIME."""
    return await spawn_program(
        str(TICKWIRE), "--runtime", RUNTIME, *args, stdin=stdin, stdout=stdout, stderr=stderr
    )


async def spawn_program(program, *args, stdin=None, stdout=None, stderr=None, cwd=None):
    """Starts any program (a peer such as openssl); it is killed with the rest at the end."""
    process = await asyncio.create_subprocess_exec(
        program, *args, stdin=stdin, stdout=stdout, stderr=stderr, cwd=cwd
    )
    PROCESSES.append(process)
    return process


async def kill_all(keep=()):
    """Kills every process this script started and that still runs, except those in `keep`."""
    for process in PROCESSES:
        if process not in keep and process.returncode is None:
            process.kill()
            try:
                await asyncio.wait_for(process.wait(), STEP)
            except asyncio.TimeoutError:
                pass


class EchoServer:
    """`tickwire serve --port 0 [ARGS]`, with its stderr kept in a file for failure messages.

    `scheme` is what the server announced: "wss" when ARGS give it a certificate, else "ws".
    """

    def __init__(self, *args):
        self.args = args
        self.process = None
        self.port = None
        self.scheme = None
        self.stderr_file = tempfile.TemporaryFile()

    async def start(self):
        self.process = await spawn(
            "serve", "--bind", HOST, "--port", "0", *self.args,
            stdout=asyncio.subprocess.PIPE, stderr=self.stderr_file,
        )
        line = await asyncio.wait_for(self.process.stdout.readline(), STEP)
        prefix = "tickwire: echo server listening on "
        text = line.decode(errors="replace").strip()
        if not text:
            # Nothing announced: say why, from the exit status and stderr.
            await asyncio.wait_for(self.process.wait(), STEP)
            raise TestFailure(f"tickwire serve exited {self.process.returncode} before announcing "
                              f"itself: {self.stderr()!r}")
        self.scheme, _, address = text.removeprefix(prefix).partition("://")
        check(text.startswith(prefix) and self.scheme in ("ws", "wss"),
              f"unexpected first line from tickwire serve: {text!r}")
        host, _, port = address.rpartition(":")
        check(host == HOST, f"server bound to {host!r}, expected {HOST}")
        self.port = int(port)

    @property
    def url(self):
        self.ensure_alive()
        return f"{self.scheme}://{HOST}:{self.port}/"

    def ensure_alive(self):
        if self.process.returncode is not None:
            raise TestFailure(f"tickwire serve exited with {self.process.returncode}: {self.stderr()}")

    def stderr(self):
        self.stderr_file.seek(0)
        return self.stderr_file.read().decode(errors="replace").strip()


# ---------------------------------------------------------------------------------------------
# Talking to a peer


async def roundtrip(ws, message):
    await asyncio.wait_for(ws.send(message), STEP)
    return await asyncio.wait_for(ws.recv(), STEP)


def upgrade_request(port, key=SAMPLE_KEY, version="13", extra_headers=()):
    lines = [
        "GET / HTTP/1.1",
        f"Host: {HOST}:{port}",
        "Upgrade: websocket",
        "Connection: Upgrade",
    ]
    if key is not None:
        lines.append(f"Sec-WebSocket-Key: {key}")
    lines.append(f"Sec-WebSocket-Version: {version}")
    lines.extend(extra_headers)
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def raw_exchange(server, request):
    """Sends `request` on a raw TCP connection; returns (status code, headers dict, reader, writer)."""
    server.ensure_alive()
    reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, server.port), STEP)
    writer.write(request)
    await asyncio.wait_for(writer.drain(), STEP)
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), STEP)
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parts = status_line.split(" ", 2)
    check(len(parts) >= 2 and parts[0] == "HTTP/1.1" and parts[1].isdigit(), f"bad status line {status_line!r}")
    headers = {}
    for line in header_lines:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers, reader, writer


async def expect_eof(reader, what):
    try:
        rest = await asyncio.wait_for(reader.read(65536), STEP)
    except ConnectionResetError:
        return
    except asyncio.TimeoutError:
        raise TestFailure(f"server kept the connection open after {what}")
    check(rest == b"", f"after {what}, expected the connection to close, got {short(rest)}")


def masked_frame(first_byte, payload):
    """A client frame: FIN/RSV/opcode byte as given, masked with a fixed key."""
    key = b"\x37\xfa\x21\x3d"
    length = len(payload)
    if length < 126:
        head = bytes([first_byte, 0x80 | length])
    elif length < 1 << 16:
        head = bytes([first_byte, 0x80 | 126]) + length.to_bytes(2, "big")
    else:
        head = bytes([first_byte, 0x80 | 127]) + length.to_bytes(8, "big")
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


async def read_frame(reader):
    """Reads one unmasked server frame; returns (first byte, payload)."""
    head = await asyncio.wait_for(reader.readexactly(2), STEP)
    check(head[1] & 0x80 == 0, "server frame is masked")
    length = head[1] & 0x7F
    if length >= 126:
        size = 2 if length == 126 else 8
        length = int.from_bytes(await asyncio.wait_for(reader.readexactly(size), STEP), "big")
    return head[0], await asyncio.wait_for(reader.readexactly(length), STEP)


# ---------------------------------------------------------------------------------------------
# `tickwire connect`'s peer


class PeerServer:
    """A `websockets` server on a free port running `handler` for the one connection expected.

    `result` resolves to what the handler returned, or to the exception it raised, so a failed
    check on the server side fails the test with its own message.
    """

    def __init__(self, handler, **options):
        self.handler = handler
        self.options = dict(ping_interval=None, close_timeout=STEP, max_size=4 * MIB, **options)
        self.result = None
        self.server = None

    async def __aenter__(self):
        self.result = asyncio.get_running_loop().create_future()

        async def run(ws):
            try:
                value = await self.handler(ws)
                if not self.result.done():
                    self.result.set_result(value)
            except Exception as error:  # noqa: BLE001 - handed to the test, which reports it
                if not self.result.done():
                    self.result.set_exception(error)

        self.server = await ws_serve(run, HOST, 0, **self.options).__aenter__()
        return self

    async def __aexit__(self, *exc):
        self.server.close()
        await asyncio.wait_for(self.server.wait_closed(), STEP)

    @property
    def port(self):
        return self.server.sockets[0].getsockname()[1]

    @property
    def url(self):
        scheme = "wss" if self.options.get("ssl") else "ws"
        return f"{scheme}://{HOST}:{self.port}/"

    async def outcome(self, process):
        """The handler's result; fails early, with tickwire's stderr, if `process` exits first."""
        exited = asyncio.ensure_future(process.wait())
        try:
            await asyncio.wait_for(
                asyncio.wait({self.result, exited}, return_when=asyncio.FIRST_COMPLETED), TEST / 2
            )
            if not self.result.done():
                # tickwire exited first; the handler may still be finishing its last step.
                try:
                    await asyncio.wait_for(asyncio.shield(self.result), 1.0)
                except asyncio.TimeoutError:
                    stderr = await asyncio.wait_for(process.stderr.read(), STEP)
                    raise TestFailure(
                        f"tickwire exited {process.returncode} before the server side finished: "
                        f"{stderr.decode(errors='replace').strip()!r}"
                    ) from None
            return self.result.result()
        finally:
            exited.cancel()


async def finish(process):
    """Reads `process`'s output to the end and waits for it to exit; stdin is left as it is.

    Returns (exit code, stdout text, stderr text). Bounded by the caller's `wait_for`.
    """
    stdout, stderr = await asyncio.gather(process.stdout.read(), process.stderr.read())
    await process.wait()
    return process.returncode, stdout.decode(errors="replace"), stderr.decode(errors="replace")


# ---------------------------------------------------------------------------------------------
# Groups and runner

SERVER_ROLE = "server"  # tickwire serve is under test (or the group prepares such tests)
CLIENT_ROLE = "client"  # tickwire connect is under test


class Group(NamedTuple):
    """One group of tests, in the order `run_groups` runs them.

    With `serve_args` a list, the group gets its own `tickwire serve --port 0 *serve_args`,
    started once and handed to each test; with None its tests take no argument (they start what
    they need). `role` says which side tickwire plays: a CLIENT_ROLE group is not run on the
    server-only runtimes (SERVER_ONLY_RUNTIMES), where `tickwire connect` does not exist.
    """

    label: str
    serve_args: Optional[list]
    tests: list
    role: str = SERVER_ROLE


def describe(error):
    if isinstance(error, TestFailure):
        return str(error)
    if isinstance(error, asyncio.TimeoutError):
        # Name the wait that ran out: the innermost frame of a test script in the traceback.
        frames = [f for f in traceback.extract_tb(error.__traceback__) if Path(f.filename).parent == HERE]
        where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}: {frames[-1].line}" if frames else ""
        return f"timed out{where}"
    return f"{type(error).__name__}: {error}".strip()


async def run_one(name, coroutine, keep=()):
    """Runs one test; whatever processes it left running (other than `keep`) are killed."""
    try:
        await asyncio.wait_for(coroutine, TEST)
    except Exception as error:  # noqa: BLE001 - every failure is reported, none stops the run
        print(f"FAIL {name}: {describe(error)}", flush=True)
        return False
    finally:
        await kill_all(keep=keep)
    print(f"ok   {name}", flush=True)
    return True


async def run_groups(groups):
    """Runs every `Group` and prints the closing line; returns the exit status.

    On a server-only runtime the client-role groups are left out, with one line saying so
    before the first test; they count neither as passed nor as failed.
    """
    if RUNTIME not in RUNTIMES:
        print(f"interop: TICKWIRE_RUNTIME must be one of {', '.join(RUNTIMES)}, not {RUNTIME!r}")
        print("interop: 0 passed, 1 failed")
        return 1
    if not TICKWIRE.is_file():
        print(f"interop: tickwire binary not found at {TICKWIRE}", file=sys.stderr)
        print("interop: 0 passed, 1 failed")
        return 1
    print(f"interop: tickwire {TICKWIRE} with --runtime {RUNTIME}", flush=True)
    skipped = []
    if RUNTIME in SERVER_ONLY_RUNTIMES:
        skipped = [group for group in groups if group.role == CLIENT_ROLE]
        groups = [group for group in groups if group.role != CLIENT_ROLE]
    skipped_tests = sum(len(group.tests) for group in skipped)
    if skipped:
        labels = ", ".join(f"{group.label!r} ({len(group.tests)})" for group in skipped)
        print(f"interop: skipping {skipped_tests} client-role tests (groups {labels}): they test "
              f"`tickwire connect`, and the {RUNTIME} runtime is a server with no client, so it "
              f"has no part in them (not a failure)", flush=True)
    results = []
    try:
        for label, serve_args, tests, _role in groups:
            if serve_args is None:
                for test in tests:
                    results.append(await run_one(f"{label}: {test_name(test)}", test()))
            else:
                results.extend(await run_server_group(label, serve_args, tests))
    finally:
        await kill_all()
    passed = results.count(True)
    failed = results.count(False)
    note = f" ({skipped_tests} client-role tests skipped on --runtime {RUNTIME})" if skipped else ""
    print(f"interop: {passed} passed, {failed} failed{note}", flush=True)
    return 1 if failed else 0


async def run_server_group(label, serve_args, tests):
    server = EchoServer(*serve_args)
    flags = " ".join(["serve", *serve_args])
    try:
        await server.start()
    except Exception as error:  # noqa: BLE001
        print(f"FAIL {label}: start tickwire {flags}: {describe(error)}", flush=True)
        return [False] * len(tests)
    results = []
    for test in tests:
        results.append(await run_one(f"{label}: {test_name(test)}", test(server), keep={server.process}))
    if server.process.returncode is not None:
        print(f"note: tickwire {flags} exited early with {server.process.returncode}", flush=True)
    if not all(results) and server.stderr():
        # The echo server logs why each failed connection ended: the other half of a failure.
        for line in server.stderr().splitlines():
            print(f"note: tickwire {flags} stderr: {line}", flush=True)
    server.process.kill()
    await asyncio.wait_for(server.process.wait(), STEP)
    return results


def test_name(test):
    return test.__name__.removeprefix("test_").removeprefix("connect_")
