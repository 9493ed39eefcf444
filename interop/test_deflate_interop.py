"""Interop tests for permessage-deflate (RFC 7692): tickwire against Python `websockets`.

`websockets` offers and accepts permessage-deflate by default, so its client and server are a
second, independent implementation to check tickwire's against. Part A drives
`tickwire serve --deflate` with a `websockets` client (and one raw socket that speaks exactly
Chromium's offer); Part B drives `tickwire connect --deflate` against a `websockets` server.
Each side checks what was negotiated, that every echo comes back byte-exact and in order, and,
through `WireLog`, that large compressible messages really travel compressed.

test_websockets_interop.py runs these after its own tests (GROUPS); run alone, this file
prints its own `interop: N passed, M failed`. The tests that tickwire declines the extension
without the flag are in test_websockets_interop.py, against the server started without it.
"""

import asyncio
import random
import sys
import zlib

from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed
from websockets.extensions.permessage_deflate import (
    ClientPerMessageDeflateFactory, PerMessageDeflate, ServerPerMessageDeflateFactory,
)
from websockets.frames import DATA_OPCODES

from harness import (
    CLIENT_ROLE, MIB, STEP, EchoServer, Group, PeerServer, TestFailure, check, finish,
    masked_frame, raw_exchange, read_frame, roundtrip, run_groups, short, spawn, upgrade_request,
)

KIB = 1 << 10
# `--max-message-size` for the limit tests: small, so a tiny compressed frame can exceed it.
LIMIT = 64 * KIB
# The offer Chromium sends, byte for byte.
CHROMIUM_OFFER = "permessage-deflate; client_max_window_bits"
# RFC 7692 §7.2.1: the tail a sender strips from each compressed message.
SYNC_TAIL = b"\x00\x00\xff\xff"
# First frame bytes (RFC 6455 §5.2): FIN + RSV1 (RFC 7692 §6: compressed) + text; FIN + close.
FIN_RSV1_TEXT = 0xC1
FIN_CLOSE = 0x88


# ---------------------------------------------------------------------------------------------
# Messages and what travelled


def json_text(length, seed=0):
    """ASCII market-data-like JSON lines, exactly `length` bytes: compresses several times over."""
    lines, size, seq = [], 0, seed * 1000
    while size < length:
        line = (f'{{"seq":{seq},"sym":"BTC-USD","bid":"4312{seq % 10}.50","ask":"4312{(seq + 3) % 10}.75",'
                f'"qty":{(seq % 97) / 8},"ts":{1700000000000 + seq * 37}}}\n')
        lines.append(line)
        size += len(line)
        seq += 1
    return "".join(lines)[:length]


def multi_byte_text(length):
    """Exactly `length` UTF-8 bytes mixing 1- to 4-byte code points."""
    pattern = "a é ✓ 🦀 "  # 14 bytes
    return pattern * (length // 14) + "z" * (length % 14)


def random_bytes(length, seed):
    return random.Random(seed).randbytes(length)


def echo_cases():
    """Text and binary messages of several sizes up to 1 MiB, compressible and not; empty ones
    also right after compressed ones, whose inflater state they must not trip over."""
    return [
        "", "hello", "héllo wörld ✓ 日本語 🦀", json_text(200, 1), json_text(64 * KIB, 2),
        json_text(MIB, 3), "", multi_byte_text(64 * KIB), multi_byte_text(MIB),
        b"", random_bytes(1, 4), random_bytes(125, 5), random_bytes(126, 6),
        random_bytes(64 * KIB - 1, 7), random_bytes(64 * KIB, 8), random_bytes(MIB, 9),
        bytes(MIB), b"", bytes(range(256)) * 4096, "",
    ]


def deflate_in_force(ws):
    """The PerMessageDeflate instance a `websockets` connection negotiated, or None."""
    found = [e for e in ws.protocol.extensions if isinstance(e, PerMessageDeflate)]
    return found[0] if found else None


def check_negotiated(ws):
    answer = ws.response.headers.get("Sec-WebSocket-Extensions")
    check(deflate_in_force(ws) is not None, f"permessage-deflate not in force (answer {answer!r})")


class WireLog:
    """The data frames a `websockets` connection receives, as they were on the wire.

    Wraps the negotiated extension's `decode`, which sees each frame before inflating it, as
    soon as it arrives (possibly before `recv` hands out an earlier message). `take()` returns
    the frames since the last call, [(opcode, rsv1, fin, payload length)]; `take_messages()`
    the same grouped into messages.
    """

    def __init__(self, ws):
        self.frames = []
        extension = deflate_in_force(ws)
        check(extension is not None, "WireLog needs permessage-deflate in force")
        decode = extension.decode

        def recording(frame, **options):
            if frame.opcode in DATA_OPCODES:
                self.frames.append((frame.opcode, frame.rsv1, frame.fin, len(frame.data)))
            return decode(frame, **options)

        extension.decode = recording

    def take(self):
        frames, self.frames = self.frames, []
        return frames

    def take_messages(self):
        messages, current = [], []
        for frame in self.take():
            current.append(frame)
            if frame[2]:
                messages.append(current)
                current = []
        return messages


def check_compressed(frames, size, what):
    """`frames` carried one message of `size` bytes compressed to under a quarter of that."""
    check(frames and frames[0][1], f"{what}: first frame not compressed (RSV1 clear): {frames[:3]}")
    wire = sum(frame[3] for frame in frames)
    check(wire < size // 4, f"{what}: {wire} bytes on the wire for {size}: compression did not shrink it")


async def check_echoes(ws, messages, what=""):
    for message in messages:
        echoed = await roundtrip(ws, message)
        check(type(echoed) is type(message), f"{what}sent {type(message).__name__}, echo was {type(echoed).__name__}")
        check(echoed == message, f"{what}sent {short(message)}, echo was {short(echoed)}")


async def check_pipelined(ws, messages):
    for message in messages:
        await asyncio.wait_for(ws.send(message), STEP)
    for index, message in enumerate(messages):
        echoed = await asyncio.wait_for(ws.recv(), STEP)
        check(echoed == message, f"reply {index}: expected {short(message)}, got {short(echoed)}")


def small_json_messages():
    """100 small JSON messages, every fifth one binary."""
    return [json_text(60 + i % 7 * 13, i).encode() if i % 5 == 4 else json_text(60 + i % 7 * 13, i)
            for i in range(100)]


# ---------------------------------------------------------------------------------------------
# Part A: a `websockets` client against `tickwire serve --deflate`


def client(url, **options):
    options = dict(open_timeout=STEP, close_timeout=STEP, ping_interval=None, max_size=4 * MIB, **options)
    return ws_connect(url, **options)


async def test_negotiated(server):
    async with client(server.url) as ws:
        answer = ws.response.headers.get("Sec-WebSocket-Extensions", "")
        check(answer.split(";")[0].strip() == "permessage-deflate",
              f"Sec-WebSocket-Extensions answer {answer!r}, expected permessage-deflate")
        check(deflate_in_force(ws) is not None, f"extensions in force: {ws.protocol.extensions}")
        await check_echoes(ws, ["hello"])


async def test_echo_text_and_binary_up_to_1_mib(server):
    async with client(server.url) as ws:
        check_negotiated(ws)
        await check_echoes(ws, echo_cases())


async def test_echo_travels_compressed(server):
    text = json_text(MIB, 10)
    small = [json_text(200, i) for i in range(100)]
    async with client(server.url) as ws:
        wire = WireLog(ws)
        await check_echoes(ws, [text])
        check_compressed(wire.take(), MIB, "1 MiB JSON echo")
        await check_echoes(ws, small)
        frames = wire.take()
        check(len(frames) == len(small), f"{len(frames)} frames for {len(small)} small echoes")
        on_wire = sum(frame[3] for frame in frames)
        check(on_wire < 200 * len(small) // 2, f"100 echoes of 200 B JSON took {on_wire} bytes on the wire")


async def test_pipelined_json_in_order(server):
    async with client(server.url) as ws:
        check_negotiated(ws)
        await check_pipelined(ws, small_json_messages())
        pong = await asyncio.wait_for(ws.ping(b"between compressed messages"), STEP)
        await asyncio.wait_for(pong, STEP)
        await check_echoes(ws, [json_text(4 * KIB, 11)])


async def test_fragmented_compressed_messages(server):
    text_fragments = [json_text(16 * KIB, i) + "日本語 🦀" for i in range(20)]
    binary_fragments = [random_bytes(16 * KIB, i) for i in range(64)]
    async with client(server.url) as ws:
        check_negotiated(ws)
        for fragments, whole in [(text_fragments, "".join(text_fragments)),
                                 (binary_fragments, b"".join(binary_fragments))]:
            await asyncio.wait_for(ws.send(fragments), STEP)
            echoed = await asyncio.wait_for(ws.recv(), STEP)
            check(echoed == whole, f"fragmented {type(whole).__name__} of {len(fragments)} frames came back "
                                   f"as {short(echoed)}")


async def test_concurrent_connections(server):
    # Eight connections at once, half without context takeover, their messages interleaved:
    # no compressor or inflater state may leak from one connection into another.
    async def one(index):
        offer = dict(server_no_context_takeover=True, client_no_context_takeover=True) if index % 2 else {}
        factory = ClientPerMessageDeflateFactory(**offer)
        messages = [json_text(100 + (index * 7 + n) % 900, index * 100 + n) for n in range(50)]
        async with client(server.url, extensions=[factory], compression=None) as ws:
            check_negotiated(ws)
            try:
                await check_pipelined(ws, messages)
            except TestFailure as error:
                raise TestFailure(f"connection {index} ({offer or 'context takeover'}): {error}") from None

    await asyncio.gather(*(one(index) for index in range(8)))


async def test_offer_parameters(server):
    # (offer, the parameters websockets must end up with after the answer)
    variants = [
        (dict(server_no_context_takeover=True, client_no_context_takeover=True),
         dict(remote_no_context_takeover=True, local_no_context_takeover=True)),
        (dict(server_max_window_bits=10, client_max_window_bits=9),
         dict(remote_max_window_bits=10, local_max_window_bits=9)),
        (dict(server_max_window_bits=8), dict(remote_max_window_bits=8)),
        (dict(client_max_window_bits=None), dict(local_max_window_bits=15)),
        (dict(client_no_context_takeover=True, client_max_window_bits=15),
         dict(local_no_context_takeover=True)),
    ]
    messages = [json_text(64 * KIB, 12), json_text(64 * KIB, 12), json_text(64 * KIB, 13),
                random_bytes(64 * KIB, 14), "", multi_byte_text(64 * KIB)]
    for offer, expected in variants:
        factory = ClientPerMessageDeflateFactory(**offer)
        async with client(server.url, extensions=[factory], compression=None) as ws:
            answer = ws.response.headers.get("Sec-WebSocket-Extensions")
            extension = deflate_in_force(ws)
            check(extension is not None, f"offer {offer}: not negotiated (answer {answer!r})")
            for name, value in expected.items():
                check(getattr(extension, name) == value,
                      f"offer {offer}: answer {answer!r} gave {name}={getattr(extension, name)}, expected {value}")
            await check_echoes(ws, messages, f"offer {offer}: ")


async def test_uncompressed_client(server):
    async with client(server.url, compression=None) as ws:
        check(ws.request.headers.get("Sec-WebSocket-Extensions") is None, "test bug: the client offered something")
        answer = ws.response.headers.get("Sec-WebSocket-Extensions")
        check(answer is None, f"no offer, yet the server answered Sec-WebSocket-Extensions: {answer}")
        await check_echoes(ws, ["", "héllo ✓", json_text(MIB, 15), random_bytes(MIB, 16)])


async def test_chromium_offer_on_the_wire(server):
    # What Chromium sends, checked at the byte level rather than through a tolerant library.
    request = upgrade_request(server.port, extra_headers=[f"Sec-WebSocket-Extensions: {CHROMIUM_OFFER}"])
    status, headers, reader, writer = await raw_exchange(server, request)
    try:
        check(status == 101, f"upgrade with Chromium's offer answered {status}")
        answer = headers.get("sec-websocket-extensions", "")
        params = [p.strip() for p in answer.split(";")]
        check(params[0] == "permessage-deflate", f"answer {answer!r}")
        for param in params[1:]:
            name, _, value = param.partition("=")
            check(name in ("server_no_context_takeover", "client_no_context_takeover",
                           "server_max_window_bits", "client_max_window_bits"), f"answer parameter {param!r}")
            check(name != "server_max_window_bits" or value.isdigit() and 8 <= int(value) <= 15,
                  f"answer parameter {param!r}")
        payload = json_text(4 * KIB, 17).encode()
        compressor = zlib.compressobj(wbits=-15)
        compressed = compressor.compress(payload) + compressor.flush(zlib.Z_SYNC_FLUSH)
        writer.write(masked_frame(FIN_RSV1_TEXT, compressed[: -len(SYNC_TAIL)]))
        await asyncio.wait_for(writer.drain(), STEP)
        first, body = await read_frame(reader)
        check(first == FIN_RSV1_TEXT, f"echo's first byte {first:#04x}, expected 0xc1 (FIN, RSV1, text)")
        window = next((int(p.partition("=")[2]) for p in params if p.startswith("server_max_window_bits=")), 15)
        inflated = zlib.decompressobj(wbits=-window).decompress(body + SYNC_TAIL)
        check(inflated == payload, f"echo inflated to {short(inflated)}")
        writer.write(masked_frame(FIN_CLOSE, (1000).to_bytes(2, "big")))
        await asyncio.wait_for(writer.drain(), STEP)
        first, body = await read_frame(reader)
        check(first == FIN_CLOSE and body[:2] == (1000).to_bytes(2, "big"), f"close reply {first:#04x} {body.hex()}")
    finally:
        writer.close()


async def test_inflated_size_limit_gives_1009(_server):
    # Not the group's server: this test needs one with a small limit.
    limited = EchoServer("--deflate", "--max-message-size", str(LIMIT))
    await limited.start()
    bomb = "a" * MIB
    check(len(zlib.compress(bomb.encode())) < 4 * KIB, "test bug: the 1 MiB message should compress to under 4 KiB")
    cases = [
        ("a compressed message exactly at the limit", dict(), "b" * LIMIT, None),
        ("a 1 MiB message compressed to ~1 KiB", dict(), bomb, 1009),
        ("a compressed message one byte over the limit", dict(), "c" * (LIMIT + 1), 1009),
        ("an uncompressed message over the limit", dict(compression=None), json_text(LIMIT + 1), 1009),
    ]
    for what, options, message, expected_close in cases:
        async with client(limited.url, **options) as ws:
            check((deflate_in_force(ws) is None) == ("compression" in options),
                  f"{what}: extensions in force {ws.protocol.extensions}")
            if expected_close is None:
                await check_echoes(ws, [message], f"{what}: ")
                continue
            await asyncio.wait_for(ws.send(message), STEP)
            try:
                echoed = await asyncio.wait_for(ws.recv(), STEP)
            except ConnectionClosed:
                pass
            else:
                raise TestFailure(f"{what}: echoed {short(echoed)} instead of closing with 1009")
            check(ws.close_code == expected_close, f"{what}: closed with {ws.close_code}, expected 1009")
    async with client(limited.url) as ws:
        await check_echoes(ws, ["still serving"])


# ---------------------------------------------------------------------------------------------
# Part B: `tickwire connect --deflate` against a `websockets` server


def spawn_connect(url, *args, stdin=asyncio.subprocess.DEVNULL):
    return spawn("connect", url, "--deflate", *args, stdin=stdin,
                 stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


def check_offer_and_answer(ws):
    offered = ws.request.headers.get("Sec-WebSocket-Extensions", "")
    check("permessage-deflate" in offered, f"tickwire connect --deflate offered {offered!r}")
    check(deflate_in_force(ws) is not None, f"not negotiated: offer {offered!r}, "
                                            f"answer {ws.response.headers.get('Sec-WebSocket-Extensions')!r}")


async def test_connect_echo():
    async def handler(ws):
        check_offer_and_answer(ws)
        wire = WireLog(ws)
        await check_echoes(ws, echo_cases())
        wire.take()
        await check_echoes(ws, [json_text(MIB, 18)])
        check_compressed(wire.take(), MIB, "tickwire's 1 MiB JSON echo")
        await check_pipelined(ws, small_json_messages())
        pong = await asyncio.wait_for(ws.ping(b"are you there"), STEP)
        await asyncio.wait_for(pong, STEP)
        await asyncio.wait_for(ws.close(1000), STEP)
        return ws.close_code

    async with PeerServer(handler) as peer:
        process = await spawn_connect(peer.url, "--echo")
        close_code = await peer.outcome(process)
        code, _, stderr = await asyncio.wait_for(finish(process), STEP * 2)
    check(close_code == 1000, f"tickwire's close reply carried {close_code}, expected 1000")
    check(code == 0, f"tickwire connect --deflate --echo exited {code}: {stderr.strip()!r}")


async def test_connect_stdin_mode():
    lines = ["alpha", "héllo wörld ✓", json_text(64 * KIB, 19).replace("\n", " ")]
    blob = bytes(300)

    async def handler(ws):
        check_offer_and_answer(ws)
        wire = WireLog(ws)
        received = []
        for _ in lines:
            received.append(await asyncio.wait_for(ws.recv(), STEP))
            await asyncio.wait_for(ws.send(received[-1].upper()), STEP)
        frames = wire.take_messages()[-1]  # the 64 KiB line's
        await asyncio.wait_for(ws.send(blob), STEP)
        await asyncio.wait_for(ws.wait_closed(), STEP * 2)
        return received, frames, ws.close_code

    async with PeerServer(handler) as peer:
        process = await spawn_connect(peer.url, stdin=asyncio.subprocess.PIPE)
        process.stdin.write("".join(f"{line}\n" for line in lines).encode())
        await asyncio.wait_for(process.stdin.drain(), STEP)
        printed = []
        for _ in range(len(lines) + 1):
            line = await asyncio.wait_for(process.stdout.readline(), STEP)
            printed.append(line.decode(errors="replace").rstrip("\n"))
        process.stdin.close()
        received, frames, close_code = await peer.outcome(process)
        code, rest, stderr = await asyncio.wait_for(finish(process), STEP * 2)
    check(received == lines, f"server received {short(received)}, expected {short(lines)}")
    check_compressed(frames, 64 * KIB, "the 64 KiB stdin line")
    expected = [line.upper() for line in lines] + [f"[binary {len(blob)} bytes] {blob.hex()}"]
    check(printed == expected, f"tickwire printed {short(printed)}, expected {short(expected)}")
    check(rest == "", f"unexpected extra output {short(rest)}")
    check(close_code == 1000, f"tickwire closed with {close_code} at stdin EOF, expected 1000")
    check(code == 0, f"tickwire connect --deflate exited {code}: {stderr.strip()!r}")


async def test_connect_server_declines():
    async def handler(ws):
        offered = ws.request.headers.get("Sec-WebSocket-Extensions", "")
        check("permessage-deflate" in offered, f"tickwire connect --deflate offered {offered!r}")
        check(ws.protocol.extensions == [], f"extensions in force: {ws.protocol.extensions}")
        await check_echoes(ws, ["", "héllo ✓", json_text(MIB, 20), random_bytes(MIB, 21)])
        await asyncio.wait_for(ws.close(1000), STEP)
        return ws.close_code

    async with PeerServer(handler, compression=None) as peer:
        process = await spawn_connect(peer.url, "--echo")
        close_code = await peer.outcome(process)
        code, _, stderr = await asyncio.wait_for(finish(process), STEP * 2)
    check(close_code == 1000, f"tickwire's close reply carried {close_code}, expected 1000")
    check(code == 0, f"tickwire connect --deflate exited {code} with the offer declined: {stderr.strip()!r}")


async def test_connect_server_parameters():
    # (what the server imposes, the parameters the server side must end up with)
    variants = [
        (dict(server_no_context_takeover=True, client_no_context_takeover=True),
         dict(local_no_context_takeover=True, remote_no_context_takeover=True)),
        (dict(server_max_window_bits=10, client_max_window_bits=9),
         dict(local_max_window_bits=10, remote_max_window_bits=9)),
        (dict(client_max_window_bits=8), dict(remote_max_window_bits=8)),
    ]
    messages = [json_text(64 * KIB, 22), json_text(64 * KIB, 22), random_bytes(64 * KIB, 23),
                "", multi_byte_text(64 * KIB)]
    for imposed, expected in variants:
        async def handler(ws):
            check_offer_and_answer(ws)
            extension = deflate_in_force(ws)
            for name, value in expected.items():
                check(getattr(extension, name) == value, f"{name}={getattr(extension, name)}, expected {value}")
            await check_echoes(ws, messages)
            await asyncio.wait_for(ws.close(1000), STEP)
            return ws.close_code

        factory = ServerPerMessageDeflateFactory(**imposed)
        async with PeerServer(handler, extensions=[factory]) as peer:
            process = await spawn_connect(peer.url, "--echo")
            try:
                close_code = await peer.outcome(process)
            except TestFailure as error:
                raise TestFailure(f"server imposing {imposed}: {error}") from None
            code, _, stderr = await asyncio.wait_for(finish(process), STEP * 2)
        check(close_code == 1000 and code == 0,
              f"server imposing {imposed}: close {close_code}, exit {code}: {stderr.strip()!r}")


async def test_connect_inflated_size_limit_gives_1009():
    async def handler(ws):
        check_offer_and_answer(ws)
        await check_echoes(ws, ["b" * LIMIT])
        await asyncio.wait_for(ws.send("a" * MIB), STEP)
        try:
            echoed = await asyncio.wait_for(ws.recv(), STEP)
        except ConnectionClosed:
            return ws.close_code
        raise TestFailure(f"tickwire echoed {short(echoed)} instead of closing with 1009")

    async with PeerServer(handler) as peer:
        process = await spawn_connect(peer.url, "--echo", "--max-message-size", str(LIMIT))
        close_code = await peer.outcome(process)
        code, _, stderr = await asyncio.wait_for(finish(process), STEP * 2)
    check(close_code == 1009, f"tickwire closed with {close_code}, expected 1009")
    check(code not in (0, None), f"tickwire exited {code} after failing the connection, expected non-zero")
    check("1009" in stderr, f"stderr does not name the close code: {stderr.strip()!r}")


# ---------------------------------------------------------------------------------------------
# The lists the runner takes

GROUPS = [
    Group("deflate server", ["--deflate"], [
        test_negotiated,
        test_echo_text_and_binary_up_to_1_mib,
        test_echo_travels_compressed,
        test_pipelined_json_in_order,
        test_fragmented_compressed_messages,
        test_concurrent_connections,
        test_offer_parameters,
        test_uncompressed_client,
        test_chromium_offer_on_the_wire,
        test_inflated_size_limit_gives_1009,
    ]),
    Group("deflate client", None, [
        test_connect_echo,
        test_connect_stdin_mode,
        test_connect_server_declines,
        test_connect_server_parameters,
        test_connect_inflated_size_limit_gives_1009,
    ], CLIENT_ROLE),
]


if __name__ == "__main__":
    sys.exit(asyncio.run(run_groups(GROUPS)))
