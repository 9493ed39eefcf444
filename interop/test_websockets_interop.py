"""Interop tests: tickwire against the Python `websockets` library, in both directions.

Part A drives `tickwire serve` with a `websockets` client (and with raw sockets where the test
must send bytes a well-behaved client never would). Part B drives `tickwire connect` against a
`websockets` server. Plain python3, no pytest: run it with the venv that interop/setup.sh makes,
or through interop/run.sh. The last line printed is `interop: N passed, M failed`; the exit
status is 1 when any test failed.

Rules every test keeps: traffic stays on 127.0.0.1, every wait is bounded by
`asyncio.wait_for`, and every subprocess started here is killed before the script exits.
"""

import asyncio
import os
import random
import sys
import tempfile
import traceback
from pathlib import Path

from websockets.asyncio.client import connect as ws_connect
from websockets.asyncio.server import serve as ws_serve

HOST = "127.0.0.1"
ROOT = Path(__file__).resolve().parent.parent
TICKWIRE = Path(os.environ.get("TICKWIRE_BIN", ROOT / "target" / "release" / "tickwire"))

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
    process = await asyncio.create_subprocess_exec(
        str(TICKWIRE), *args, stdin=stdin, stdout=stdout, stderr=stderr
    )
    PROCESSES.append(process)
    return process


async def kill_all(keep=None):
    """Kills every process this script started and that still runs, except `keep`."""
    for process in PROCESSES:
        if process is not keep and process.returncode is None:
            process.kill()
            try:
                await asyncio.wait_for(process.wait(), STEP)
            except asyncio.TimeoutError:
                pass


class EchoServer:
    """`tickwire serve --port 0`, with its stderr kept in a file for failure messages."""

    def __init__(self):
        self.process = None
        self.port = None
        self.stderr_file = tempfile.TemporaryFile()

    async def start(self):
        self.process = await spawn(
            "serve", "--bind", HOST, "--port", "0",
            stdout=asyncio.subprocess.PIPE, stderr=self.stderr_file,
        )
        line = await asyncio.wait_for(self.process.stdout.readline(), STEP)
        prefix = "tickwire: echo server listening on ws://"
        text = line.decode(errors="replace").strip()
        check(text.startswith(prefix), f"unexpected first line from tickwire serve: {text!r}")
        host, _, port = text[len(prefix):].rpartition(":")
        check(host == HOST, f"server bound to {host!r}, expected {HOST}")
        self.port = int(port)

    @property
    def url(self):
        self.ensure_alive()
        return f"ws://{HOST}:{self.port}/"

    def ensure_alive(self):
        if self.process.returncode is not None:
            raise TestFailure(f"tickwire serve exited with {self.process.returncode}: {self.stderr()}")

    def stderr(self):
        self.stderr_file.seek(0)
        return self.stderr_file.read().decode(errors="replace").strip()


# ---------------------------------------------------------------------------------------------
# Part A: a `websockets` client (and raw sockets) against `tickwire serve`


def client(server):
    # Default options otherwise: the client offers permessage-deflate, which tickwire must decline.
    return ws_connect(server.url, open_timeout=STEP, close_timeout=STEP, ping_interval=None, max_size=4 * MIB)


async def roundtrip(ws, message):
    await asyncio.wait_for(ws.send(message), STEP)
    return await asyncio.wait_for(ws.recv(), STEP)


async def test_text_roundtrip(server):
    async with client(server) as ws:
        for message in ["hello", "", "héllo wörld ✓ 日本語 🦀", "x" * 200]:
            echoed = await roundtrip(ws, message)
            check(isinstance(echoed, str), f"sent text {short(message)}, got {type(echoed).__name__}")
            check(echoed == message, f"sent {short(message)}, got {short(echoed)}")


async def test_binary_roundtrip(server):
    async with client(server) as ws:
        for message in [bytes(range(256)), b"", b"\x00" * 126, bytes(range(256)) * 300]:
            echoed = await roundtrip(ws, message)
            check(isinstance(echoed, bytes), f"sent binary, got {type(echoed).__name__}")
            check(echoed == message, f"sent {short(message)}, got {short(echoed)}")


async def test_large_text(server):
    # 1 MiB of UTF-8 mixing 1-, 2-, 3- and 4-byte sequences, so frame and chunk boundaries land
    # inside code points.
    pattern = "a é ✓ 🦀 "
    text = pattern * (MIB // len(pattern.encode()) + 1)
    text = text.encode()[:MIB].decode(errors="ignore")
    text += "z" * (MIB - len(text.encode()))
    check(len(text.encode()) == MIB, "test bug: text is not 1 MiB")
    async with client(server) as ws:
        echoed = await roundtrip(ws, text)
        check(isinstance(echoed, str), f"sent 1 MiB text, got {type(echoed).__name__}")
        check(echoed == text, f"1 MiB text came back different ({len(echoed.encode())} bytes)")


async def test_large_binary(server):
    data = random.Random(6455).randbytes(MIB)
    async with client(server) as ws:
        echoed = await roundtrip(ws, data)
        check(isinstance(echoed, bytes), f"sent 1 MiB binary, got {type(echoed).__name__}")
        check(echoed == data, f"1 MiB binary came back different ({len(echoed)} bytes)")


async def test_ping_pong(server):
    async with client(server) as ws:
        for payload in [None, b"tickwire", b"\xff" * 125]:
            pong = await asyncio.wait_for(ws.ping(payload), STEP)
            await asyncio.wait_for(pong, STEP)
        # The connection still carries data after the pings.
        check(await roundtrip(ws, "after ping") == "after ping", "echo after ping failed")


async def test_pipelined_in_order(server):
    messages = [f"message {i} ✓" if i % 2 else f"binary {i}".encode() for i in range(100)]
    async with client(server) as ws:
        for message in messages:
            await asyncio.wait_for(ws.send(message), STEP)
        for index, message in enumerate(messages):
            echoed = await asyncio.wait_for(ws.recv(), STEP)
            check(echoed == message, f"reply {index}: expected {short(message)}, got {short(echoed)}")


async def test_client_close_1000(server):
    async with client(server) as ws:
        check(await roundtrip(ws, "bye") == "bye", "echo before close failed")
        await asyncio.wait_for(ws.close(), STEP)
        check(ws.close_code == 1000, f"server's close reply carried {ws.close_code}, expected 1000")


async def test_client_close_4001_with_reason(server):
    reason = "going away ✓"
    async with client(server) as ws:
        await asyncio.wait_for(ws.close(4001, reason), STEP)
        check(ws.close_code == 4001, f"server's close reply carried {ws.close_code}, expected 4001")
        # §5.5.1 asks only for the code to be echoed; the reason may be echoed or left empty.
        check(ws.close_reason in ("", reason), f"close reply reason {ws.close_reason!r}")


def upgrade_request(port, key=SAMPLE_KEY, version="13"):
    lines = [
        "GET / HTTP/1.1",
        f"Host: {HOST}:{port}",
        "Upgrade: websocket",
        "Connection: Upgrade",
    ]
    if key is not None:
        lines.append(f"Sec-WebSocket-Key: {key}")
    lines.append(f"Sec-WebSocket-Version: {version}")
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


async def test_unmasked_frame_gets_1002(server):
    status, headers, reader, writer = await raw_exchange(server, upgrade_request(server.port))
    try:
        check(status == 101, f"upgrade answered {status}")
        check(headers.get("sec-websocket-accept") == SAMPLE_ACCEPT,
              f"Sec-WebSocket-Accept {headers.get('sec-websocket-accept')!r}, expected {SAMPLE_ACCEPT}")
        # A text frame "hi" without the mask bit: §5.1 says the server must fail the connection.
        writer.write(b"\x81\x02hi")
        await asyncio.wait_for(writer.drain(), STEP)
        head = await asyncio.wait_for(reader.readexactly(2), STEP)
        check(head[0] == 0x88, f"expected a close frame (0x88), got first byte {head[0]:#04x}")
        check(head[1] & 0x80 == 0, "server's close frame is masked")
        length = head[1] & 0x7F
        check(2 <= length <= 125, f"close frame payload length {length}")
        payload = await asyncio.wait_for(reader.readexactly(length), STEP)
        code = int.from_bytes(payload[:2], "big")
        check(code == 1002, f"close code {code}, expected 1002 (frame {(head + payload).hex()})")
        await expect_eof(reader, "the 1002 close frame")
    finally:
        writer.close()


async def test_missing_key_gets_400(server):
    status, _, reader, writer = await raw_exchange(server, upgrade_request(server.port, key=None))
    try:
        check(status == 400, f"handshake without Sec-WebSocket-Key answered {status}, expected 400")
    finally:
        writer.close()


async def test_version_8_gets_426(server):
    status, headers, reader, writer = await raw_exchange(server, upgrade_request(server.port, version="8"))
    try:
        check(status == 426, f"Sec-WebSocket-Version: 8 answered {status}, expected 426")
        offered = [v.strip() for v in headers.get("sec-websocket-version", "").split(",")]
        check("13" in offered, f"426 response Sec-WebSocket-Version {headers.get('sec-websocket-version')!r}")
    finally:
        writer.close()


# ---------------------------------------------------------------------------------------------
# Part B: `tickwire connect` against a `websockets` server


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
    def url(self):
        port = self.server.sockets[0].getsockname()[1]
        return f"ws://{HOST}:{port}/"

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


async def test_connect_echo_mode():
    large = random.Random(1).randbytes(MIB)

    async def handler(ws):
        for message in ["héllo ✓ 🦀", bytes(range(256)), large, "after large"]:
            echoed = await roundtrip(ws, message)
            check(type(echoed) is type(message), f"sent {type(message).__name__}, echo was {type(echoed).__name__}")
            check(echoed == message, f"sent {short(message)}, echo was {short(echoed)}")
        pong = await asyncio.wait_for(ws.ping(b"are you there"), STEP)
        await asyncio.wait_for(pong, STEP)
        await asyncio.wait_for(ws.close(1000), STEP)
        return ws.close_code

    async with PeerServer(handler) as peer:
        process = await spawn("connect", peer.url, "--echo",
                              stdin=asyncio.subprocess.DEVNULL,
                              stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        close_code = await peer.outcome(process)
        code, _, stderr = await asyncio.wait_for(finish(process), STEP * 2)
    check(close_code == 1000, f"tickwire's close reply carried {close_code}, expected 1000")
    check(code == 0, f"tickwire connect --echo exited {code} after a 1000 close: {stderr.strip()!r}")


async def test_connect_stdin_mode():
    lines = ["alpha", "héllo wörld ✓", "gamma"]
    blob = b"\x00\x01\xfe\xff"

    async def handler(ws):
        received = []
        for _ in lines:
            message = await asyncio.wait_for(ws.recv(), STEP)
            check(isinstance(message, str), f"stdin line arrived as {type(message).__name__}")
            received.append(message)
            await asyncio.wait_for(ws.send(message.upper()), STEP)
        await asyncio.wait_for(ws.send(blob), STEP)
        await asyncio.wait_for(ws.wait_closed(), STEP * 2)
        return received, ws.close_code

    async with PeerServer(handler) as peer:
        process = await spawn("connect", peer.url,
                              stdin=asyncio.subprocess.PIPE,
                              stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        # Keep stdin open until the replies are printed: at EOF tickwire starts the close.
        process.stdin.write("".join(f"{line}\n" for line in lines).encode())
        await asyncio.wait_for(process.stdin.drain(), STEP)
        printed = []
        for _ in range(len(lines) + 1):
            line = await asyncio.wait_for(process.stdout.readline(), STEP)
            printed.append(line.decode(errors="replace").rstrip("\n"))
        process.stdin.close()
        received, close_code = await peer.outcome(process)
        code, rest, stderr = await asyncio.wait_for(finish(process), STEP * 2)
    check(received == lines, f"server received {received}, expected {lines}")
    expected = [line.upper() for line in lines] + [f"[binary {len(blob)} bytes] {blob.hex()}"]
    check(printed == expected, f"tickwire printed {printed}, expected {expected}")
    check(rest == "", f"unexpected extra output {rest!r}")
    check(close_code == 1000, f"tickwire closed with {close_code} at stdin EOF, expected 1000")
    check(code == 0, f"tickwire connect exited {code}: {stderr.strip()!r}")


async def server_closes_with_1011(mode_args):
    async def handler(ws):
        await asyncio.wait_for(ws.close(1011, "server broke"), STEP)
        return ws.close_code

    async with PeerServer(handler) as peer:
        process = await spawn("connect", peer.url, *mode_args,
                              stdin=asyncio.subprocess.PIPE,
                              stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        close_code = await peer.outcome(process)
        # stdin stays open (not at EOF): the exit must come from the server's close alone.
        code, _, stderr = await asyncio.wait_for(finish(process), STEP * 2)
        process.stdin.close()
    check(close_code == 1011, f"tickwire's close reply carried {close_code}, expected 1011")
    check(code not in (0, None), f"tickwire exited {code} after a 1011 close, expected non-zero")
    stderr_lines = stderr.strip().splitlines()
    check(len(stderr_lines) == 1, f"expected one stderr line, got {stderr_lines}")
    check("1011" in stderr_lines[0], f"stderr does not name the close code: {stderr_lines[0]!r}")


async def test_connect_echo_server_close_1011():
    await server_closes_with_1011(["--echo"])


async def test_connect_stdin_server_close_1011():
    await server_closes_with_1011([])


async def test_connect_header_and_subprotocol():
    async def handler(ws):
        seen = (
            ws.request.headers.get("Authorization"),
            ws.request.headers.get("Sec-WebSocket-Protocol"),
            ws.subprotocol,
        )
        await asyncio.wait_for(ws.close(1000), STEP)
        return seen

    async with PeerServer(handler, subprotocols=["chat"]) as peer:
        process = await spawn("connect", peer.url, "--echo",
                              "--header", "Authorization: Bearer x", "--subprotocol", "chat",
                              stdin=asyncio.subprocess.DEVNULL,
                              stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        authorization, offered, selected = await peer.outcome(process)
        code, _, stderr = await asyncio.wait_for(finish(process), STEP * 2)
    check(authorization == "Bearer x", f"server saw Authorization {authorization!r}, expected 'Bearer x'")
    check(offered == "chat", f"server saw Sec-WebSocket-Protocol {offered!r}, expected 'chat'")
    check(selected == "chat", f"server selected subprotocol {selected!r}, expected 'chat'")
    check(code == 0, f"tickwire connect exited {code}: {stderr.strip()!r}")


# ---------------------------------------------------------------------------------------------
# Runner

SERVER_TESTS = [
    test_text_roundtrip,
    test_binary_roundtrip,
    test_large_text,
    test_large_binary,
    test_ping_pong,
    test_pipelined_in_order,
    test_client_close_1000,
    test_client_close_4001_with_reason,
    test_unmasked_frame_gets_1002,
    test_missing_key_gets_400,
    test_version_8_gets_426,
]

CLIENT_TESTS = [
    test_connect_echo_mode,
    test_connect_stdin_mode,
    test_connect_echo_server_close_1011,
    test_connect_stdin_server_close_1011,
    test_connect_header_and_subprotocol,
]


def describe(error):
    if isinstance(error, TestFailure):
        return str(error)
    if isinstance(error, asyncio.TimeoutError):
        # Name the wait that ran out: the innermost frame of this script in the traceback.
        frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == __file__]
        where = f" at line {frames[-1].lineno}: {frames[-1].line}" if frames else ""
        return f"timed out{where}"
    return f"{type(error).__name__}: {error}".strip()


async def run_one(name, coroutine, keep=None):
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


async def main():
    if not TICKWIRE.is_file():
        print(f"interop: tickwire binary not found at {TICKWIRE}", file=sys.stderr)
        print("interop: 0 passed, 1 failed")
        return 1
    results = []
    server = EchoServer()
    try:
        try:
            await server.start()
        except Exception as error:  # noqa: BLE001
            print(f"FAIL start tickwire serve: {describe(error)}", flush=True)
            results += [False] * len(SERVER_TESTS)
        else:
            for test in SERVER_TESTS:
                name = "server: " + test.__name__.removeprefix("test_")
                results.append(await run_one(name, test(server), keep=server.process))
        for test in CLIENT_TESTS:
            name = "client: " + test.__name__.removeprefix("test_connect_")
            results.append(await run_one(name, test(), keep=server.process))
        if server.process is not None and server.process.returncode is not None:
            print(f"note: tickwire serve exited early with {server.process.returncode}", flush=True)
        if not all(results) and server.stderr():
            # The echo server logs why each failed connection ended: the other half of a failure.
            for line in server.stderr().splitlines():
                print(f"note: tickwire serve stderr: {line}", flush=True)
    finally:
        await kill_all()
    passed = results.count(True)
    failed = results.count(False)
    print(f"interop: {passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
