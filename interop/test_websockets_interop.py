"""Interop tests: tickwire against the Python `websockets` library, in both directions.

Part A drives `tickwire serve` with a `websockets` client (and with raw sockets where the test
must send bytes a well-behaved client never would). Part B drives `tickwire connect` against a
`websockets` server. The permessage-deflate tests live in test_deflate_interop.py and the wss://
tests (against Python `ssl` and the openssl CLI) in test_tls_interop.py, the cases through real
proxies in test_proxy_interop.py; all run here too, after these, and count in the same summary; the plumbing they share is interop/harness.py. Plain
python3, no pytest: run it with the venv that interop/setup.sh makes, or through interop/run.sh. The last line printed
is `interop: N passed, M failed`; the exit status is 1 when any test failed.

Rules every test keeps: traffic stays on 127.0.0.1, every wait is bounded by
`asyncio.wait_for`, and every subprocess started here is killed before the script exits.
"""

import asyncio
import random
import sys

from websockets.asyncio.client import connect as ws_connect

import test_deflate_interop
import test_proxy_interop
import test_tls_interop
from harness import (
    CLIENT_ROLE, MIB, SAMPLE_ACCEPT, STEP, Group, PeerServer, check, expect_eof, finish, raw_exchange, roundtrip,
    run_groups, short, spawn, upgrade_request,
)

# ---------------------------------------------------------------------------------------------
# Part A: a `websockets` client (and raw sockets) against `tickwire serve`


def client(server):
    # Default options otherwise: the client offers permessage-deflate, which tickwire must decline.
    return ws_connect(server.url, open_timeout=STEP, close_timeout=STEP, ping_interval=None, max_size=4 * MIB)


async def test_deflate_declined_without_flag(server):
    # This server runs without --deflate: the `websockets` client's default offer must be
    # declined, and the connection then carries plain frames.
    async with client(server) as ws:
        answer = ws.response.headers.get("Sec-WebSocket-Extensions")
        check(answer is None, f"server without --deflate answered Sec-WebSocket-Extensions: {answer}")
        check(ws.protocol.extensions == [], f"extensions in force: {ws.protocol.extensions}")
        check(await roundtrip(ws, "x" * 1000) == "x" * 1000, "echo without the extension failed")


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


async def test_connect_offers_no_deflate_without_flag():
    async def handler(ws):
        offered = ws.request.headers.get("Sec-WebSocket-Extensions")
        in_force = list(ws.protocol.extensions)
        await asyncio.wait_for(ws.close(1000), STEP)
        return offered, in_force

    async with PeerServer(handler) as peer:  # compression on by default: it would accept
        process = await spawn("connect", peer.url, "--echo", stdin=asyncio.subprocess.DEVNULL,
                              stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        offered, in_force = await peer.outcome(process)
        code, _, stderr = await asyncio.wait_for(finish(process), STEP * 2)
    check(offered is None, f"tickwire connect without --deflate offered Sec-WebSocket-Extensions: {offered}")
    check(in_force == [], f"extensions in force: {in_force}")
    check(code == 0, f"tickwire connect exited {code}: {stderr.strip()!r}")


# ---------------------------------------------------------------------------------------------
# The lists the runner takes (test_deflate_interop.GROUPS and test_tls_interop.GROUPS follow them)

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
    test_deflate_declined_without_flag,
]

CLIENT_TESTS = [
    test_connect_echo_mode,
    test_connect_stdin_mode,
    test_connect_echo_server_close_1011,
    test_connect_stdin_server_close_1011,
    test_connect_header_and_subprotocol,
    test_connect_offers_no_deflate_without_flag,
]


async def main():
    return await run_groups([
        Group("server", [], SERVER_TESTS),
        Group("client", None, CLIENT_TESTS, CLIENT_ROLE),
        *test_deflate_interop.GROUPS,
        *test_tls_interop.GROUPS,
        *test_proxy_interop.GROUPS,
    ])


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
