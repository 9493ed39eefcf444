#!/usr/bin/env python3
"""Churn against a running echo server for a fixed time, then judge its RSS, fds and errors.

Owns the client behaviours (one asyncio task per client, each a bounded loop until the end of
the run), the 10 s samples of the server process (/proc/PID/status and /proc/PID/fd), the drain
at the end and the verdict. Does not own the server: soak/run.sh builds and starts it and
passes --port and --pid. Python 3 standard library only; traffic to 127.0.0.1 from 127.0.0.x.
Exit status 0 on PASS, 1 on FAIL.
"""

import argparse
import asyncio
import os
import random
import struct
import sys
import time

from wsclient import (OP_BINARY, OP_CLOSE, OP_CONTINUATION, OP_PING, OP_PONG, OP_TEXT,
                      ProtocolFailure, close_code, close_frame, connect, frame, new_socket,
                      open_websocket, read_frame, read_message, read_response_head,
                      reset_on_close, upgrade_request)

HOST = "127.0.0.1"
KIB, MIB = 1024, 1024 * 1024
# The server is started with 1 MiB frame and message limits (run.sh passes them).
LIMIT = 1 * MIB
# Every single wait on the server is bounded by this (seconds); a busy 2-core box needs slack.
WAIT = 20.0
# Set in main(): bytes a non-reader may push before the server has to have paused it.
KERNEL_BUFFER_BOUND = 48 * MIB
# Text made of 1- to 4-byte UTF-8 characters; slices of it are valid text of any size.
TEXT_POOL = "".join(random.choice("abcdefghij é€ж中𝄞✓\n") for _ in range(300 * KIB))


class Stats:
    """Counters shared by all tasks (one thread: no locks)."""

    def __init__(self):
        self.opened = {}        # behaviour -> connections opened
        self.active = {}        # behaviour -> connections open now
        self.expected = {}      # event name -> count (the closes and timeouts we asked for)
        self.messages = 0       # echoed messages checked byte for byte
        self.bytes = 0
        self.pongs = 0
        self.unexpected = []    # (seconds since start, behaviour, description)
        self.half_open_closed_after = []
        self.stall_bytes = []   # bytes the kernel took from a non-reader before it stalled
        self.start = time.monotonic()

    def count(self, event):
        self.expected[event] = self.expected.get(event, 0) + 1

    def fail(self, behaviour, description):
        self.unexpected.append((time.monotonic() - self.start, behaviour, description))
        if len(self.unexpected) <= 20:
            print(f"UNEXPECTED [{behaviour}] {description}", flush=True)


STATS = Stats()


class Tracked:
    """Counts a connection as open for `behaviour` while the block runs."""

    def __init__(self, behaviour):
        self.behaviour = behaviour

    def __enter__(self):
        STATS.opened[self.behaviour] = STATS.opened.get(self.behaviour, 0) + 1
        STATS.active[self.behaviour] = STATS.active.get(self.behaviour, 0) + 1

    def __exit__(self, *exc):
        STATS.active[self.behaviour] -= 1


def source_ip():
    """Client source addresses spread over 127.0.0.2..127.0.0.9 (ephemeral ports x 8)."""
    return f"127.0.0.{random.randint(2, 9)}"


def random_size():
    """Mostly small messages, the length-encoding edges, and some up to 256 KiB."""
    pick = random.random()
    if pick < 0.2:
        return random.choice([0, 1, 125, 126, 127, 0xFFFF, 0x10000])
    if pick < 0.7:
        return random.randint(0, 4 * KIB)
    if pick < 0.95:
        return random.randint(4 * KIB, 64 * KIB)
    return random.randint(64 * KIB, 256 * KIB)


def random_message(size):
    if random.random() < 0.5:
        start = random.randint(0, len(TEXT_POOL) - size // 4 - 1)
        text = TEXT_POOL[start:start + size // 4 + 1].encode()
        return OP_TEXT, text[:size].decode("utf-8", "ignore").encode()
    return OP_BINARY, os.urandom(size)


def message_frames(opcode, payload, ping=None):
    """The message as 1 to 4 frames split at random bytes (inside a UTF-8 character too),
    with an optional ping between two fragments."""
    pieces = 1 if random.random() < 0.6 or len(payload) < 2 else random.randint(2, 4)
    pieces = min(pieces, len(payload))
    cuts = sorted(random.sample(range(1, len(payload)), pieces - 1)) if pieces > 1 else []
    bounds = [0] + cuts + [len(payload)]
    frames = []
    for i in range(len(bounds) - 1):
        op = opcode if i == 0 else OP_CONTINUATION
        frames.append(frame(op, payload[bounds[i]:bounds[i + 1]], fin=i == len(bounds) - 2))
        if ping is not None and i == 0:
            frames.append(frame(OP_PING, ping))
    return b"".join(frames)


async def expect_close(reader, writer, code, behaviour):
    """Reads to the server's close; checks its code; answers it; expects EOF after."""
    while True:
        fin, rsv, op, payload = await asyncio.wait_for(read_frame(reader), WAIT)
        if op == OP_CLOSE:
            break
        if op not in (OP_TEXT, OP_BINARY, OP_CONTINUATION, OP_PONG):
            raise ProtocolFailure(f"opcode {op:#x} before the close")
    got = close_code(payload)
    if got != code:
        STATS.fail(behaviour, f"close code {got}, expected {code}")
        return
    try:
        writer.write(close_frame(code))
    except ConnectionError:
        pass
    await expect_eof(reader, behaviour)


async def expect_eof(reader, behaviour):
    try:
        rest = await asyncio.wait_for(reader.read(), WAIT)
    except ConnectionResetError:
        return
    if rest:
        STATS.fail(behaviour, f"{len(rest)} bytes after the close")


async def close_normally(reader, writer, behaviour):
    writer.write(close_frame(1000, b"bye"))
    await writer.drain()
    await expect_close(reader, writer, 1000, behaviour)
    STATS.count("close 1000 (client initiated)")


async def churner():
    """Connect, upgrade, send a few messages, check each echo, close with 1000."""
    with Tracked("churner"):
        reader, writer = await asyncio.wait_for(open_websocket(HOST, PORT, source_ip()), WAIT)
        try:
            for _ in range(random.randint(1, 5)):
                opcode, payload = random_message(random_size())
                ping = os.urandom(8) if random.random() < 0.1 else None
                writer.write(message_frames(opcode, payload, ping))
                await writer.drain()
                pongs = []
                got = await asyncio.wait_for(read_message(reader, pongs), WAIT)
                if got != (opcode, payload):
                    STATS.fail("churner", f"echo differs: sent {opcode:#x}/{len(payload)} B, "
                                          f"got {got[0]:#x}/{len(got[1])} B")
                    return
                if ping is not None and pongs != [ping]:
                    STATS.fail("churner", f"pong {pongs!r} for ping {ping!r}")
                STATS.messages += 1
                STATS.bytes += len(payload)
            await close_normally(reader, writer, "churner")
        finally:
            writer.transport.abort()


# How an abrupt leaver leaves; --no-mid-frame-drops removes the last (see docs/SOAK.md).
ABRUPT_KINDS = ["after echo", "before echo", "mid frame"]


async def abrupt_leaver():
    """Connect, send, then drop the socket without a close (FIN or RST, sometimes mid-frame)."""
    with Tracked("abrupt"):
        reader, writer = await asyncio.wait_for(open_websocket(HOST, PORT, source_ip()), WAIT)
        how = random.choice(ABRUPT_KINDS)
        opcode, payload = random_message(random.randint(0, 32 * KIB))
        data = frame(opcode, payload)
        if how == "mid frame":
            data = data[:random.randint(1, max(1, len(data) - 1))]
        writer.write(data)
        await writer.drain()
        if how == "after echo":
            got = await asyncio.wait_for(read_message(reader), WAIT)
            if got != (opcode, payload):
                STATS.fail("abrupt", "echo differs")
            STATS.messages += 1
        rst = random.random() < 0.5
        if rst:
            reset_on_close(writer)
        writer.transport.abort()
        STATS.count(f"dropped {how} with {'RST' if rst else 'FIN'}")


class SlowReader:
    """readexactly() in small chunks with a sleep between them."""

    def __init__(self, reader):
        self.reader = reader

    async def readexactly(self, n):
        parts = []
        while n > 0:
            chunk = await self.reader.readexactly(min(n, random.randint(512, 4 * KIB)))
            parts.append(chunk)
            n -= len(chunk)
            await asyncio.sleep(random.uniform(0.001, 0.01))
        return b"".join(parts)


async def slow_reader():
    """Send a burst, read the echoes slowly; every one must arrive, in order."""
    with Tracked("slow reader"):
        reader, writer = await asyncio.wait_for(
            open_websocket(HOST, PORT, source_ip(), limit=1 * KIB), WAIT)
        try:
            sent = []
            for seq in range(random.randint(10, 60)):
                payload = struct.pack("!Q", seq) + os.urandom(random.randint(0, 48 * KIB))
                sent.append(payload)
                writer.write(frame(OP_BINARY, payload))
            await asyncio.wait_for(writer.drain(), 4 * WAIT)
            slow = SlowReader(reader)
            for payload in sent:
                got = await asyncio.wait_for(read_message(slow), WAIT)
                if got != (OP_BINARY, payload):
                    STATS.fail("slow reader", f"message {sent.index(payload)} out of order "
                                              "or different")
                    return
                STATS.messages += 1
                STATS.bytes += len(payload)
            await close_normally(reader, writer, "slow reader")
        finally:
            writer.transport.abort()


def kernel_buffer_bound():
    """What the kernel alone may hold of a one-way flow over loopback: both ends' send and
    receive buffers at their autotuning maximum (tcp_wmem, tcp_rmem), plus 8 MiB for the
    server (its 1 MiB output limit and the message it is assembling, with room to spare)."""
    def maximum(name):
        with open(f"/proc/sys/net/ipv4/{name}") as f:
            return int(f.read().split()[2])
    return 2 * maximum("tcp_rmem") + 2 * maximum("tcp_wmem") + 8 * MIB


async def non_reader():
    """Send 512 KiB messages and never read: the server must stop reading us, so the kernel
    stops taking bytes before kernel_buffer_bound(). Hold a few seconds, then drop or read
    every echo. (The server's own share of what was taken shows in its RSS samples.)"""
    with Tracked("non-reader"):
        reader, writer = await asyncio.wait_for(
            open_websocket(HOST, PORT, source_ip(), limit=1 * KIB), WAIT)
        try:
            payload = os.urandom(512 * KIB)
            data = frame(OP_BINARY, payload)
            written = 0
            stalled = False
            while written < KERNEL_BUFFER_BOUND:
                writer.write(data)
                written += len(data)
                try:
                    await asyncio.wait_for(writer.drain(), 2.0)
                except asyncio.TimeoutError:
                    stalled = True
                    break
            taken = written - writer.transport.get_write_buffer_size()
            if not stalled:
                STATS.fail("non-reader", f"no backpressure: {written // MIB} MiB taken")
                return
            STATS.stall_bytes.append(taken)
            STATS.count("non-reader paused by the server")
            await asyncio.sleep(random.uniform(2, 6))
            if random.random() < 0.5:
                if random.random() < 0.5:
                    reset_on_close(writer)
                STATS.count("non-reader dropped while paused")
                return
            expected = written // len(data)
            for index in range(expected):
                try:
                    got = await asyncio.wait_for(read_message(reader), WAIT)
                except asyncio.TimeoutError:
                    STATS.fail("non-reader", f"stalled after the pause: echo {index} of "
                               f"{expected} not there after {WAIT:.0f} s ({taken / MIB:.1f} MiB "
                               f"taken, {writer.transport.get_write_buffer_size()} B unsent)")
                    return
                if got != (OP_BINARY, payload):
                    STATS.fail("non-reader", "echo differs after the pause")
                    return
                STATS.messages += 1
                STATS.bytes += len(payload)
            STATS.count("non-reader resumed and read every echo")
            await close_normally(reader, writer, "non-reader")
        finally:
            writer.transport.abort()


# After the upgrade: (name, bytes to send, close code the server must send).
MALFORMED_FRAMES = [
    ("unmasked frame", lambda: frame(OP_TEXT, b"hello", masked=False), 1002),
    ("reserved opcode 0x3", lambda: frame(0x3, b"x"), 1002),
    ("reserved opcode 0xB", lambda: frame(0xB, b""), 1002),
    ("RSV1 without an extension", lambda: frame(OP_BINARY, b"x", rsv=0x4), 1002),
    ("fragmented ping", lambda: frame(OP_PING, b"x", fin=False), 1002),
    ("continuation first", lambda: frame(OP_CONTINUATION, b"x"), 1002),
    ("invalid UTF-8 text", lambda: frame(OP_TEXT, b"ok \xff\xfe"), 1007),
    ("surrogate in text", lambda: frame(OP_TEXT, b"\xed\xa0\x80"), 1007),
    ("frame over the limit", lambda: frame(OP_BINARY, os.urandom(4 * KIB), length=LIMIT + 1)
        [:4 * KIB], 1009),
    ("message over the limit", lambda: frame(OP_BINARY, os.urandom(600 * KIB), fin=False)
        + frame(OP_CONTINUATION, os.urandom(600 * KIB)), 1009),
]


def upgrade_with(lines):
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


KEY = "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="
# Upgrade requests the server must answer with a 4xx.
MALFORMED_UPGRADES = [
    ("no Upgrade header", upgrade_with(["GET / HTTP/1.1", "Host: x", "Connection: Upgrade",
                                        KEY, "Sec-WebSocket-Version: 13"])),
    ("no key", upgrade_with(["GET / HTTP/1.1", "Host: x", "Upgrade: websocket",
                             "Connection: Upgrade", "Sec-WebSocket-Version: 13"])),
    ("version 8", upgrade_with(["GET / HTTP/1.1", "Host: x", "Upgrade: websocket",
                                "Connection: Upgrade", KEY, "Sec-WebSocket-Version: 8"])),
    ("POST", upgrade_with(["POST / HTTP/1.1", "Host: x", "Upgrade: websocket",
                           "Connection: Upgrade", KEY, "Sec-WebSocket-Version: 13"])),
    ("garbage request line", b"HELLO\r\n\r\n"),
    ("header without a colon", upgrade_with(["GET / HTTP/1.1", "Host x", "Upgrade: websocket",
                                             "Connection: Upgrade", KEY,
                                             "Sec-WebSocket-Version: 13"])),
]


async def malformed():
    """A protocol error after the upgrade (check the close code and the close of the socket),
    or a malformed upgrade request (check for a 4xx)."""
    if random.random() < 0.7:
        name, build, code = random.choice(MALFORMED_FRAMES)
        with Tracked("malformed"):
            await malformed_frame(name, build(), code)
        return
    name, request = random.choice(MALFORMED_UPGRADES)
    with Tracked("malformed"):
        reader, writer = await asyncio.wait_for(connect(HOST, PORT, source_ip()), WAIT)
        try:
            writer.write(request)
            status, _ = await asyncio.wait_for(read_response_head(reader), WAIT)
            if not 400 <= status < 500:
                STATS.fail("malformed upgrade", f"{name}: status {status}")
                return
            STATS.count(f"{status} for {name}")
        finally:
            writer.transport.abort()


async def malformed_frame(name, data, code):
    """On a raw socket (a stream reader drops what it buffered once a RST arrives): upgrade,
    send `data`, then the server's close must carry `code` and the server must close the
    socket. A RST after the close frame is fine (our input was unread); before it, the code
    was lost."""
    loop = asyncio.get_running_loop()
    sock = new_socket(source_ip())
    try:
        await asyncio.wait_for(loop.sock_connect(sock, (HOST, PORT)), WAIT)
        request, _ = upgrade_request(f"{HOST}:{PORT}")
        await loop.sock_sendall(sock, request)
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = await asyncio.wait_for(loop.sock_recv(sock, 4096), WAIT)
            if not chunk:
                raise ProtocolFailure("EOF during the upgrade")
            received += chunk
        head, _, received = received.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            raise ProtocolFailure(f"upgrade answered {head[:12]!r}")
        try:
            await asyncio.wait_for(loop.sock_sendall(sock, data), WAIT)
        except ConnectionError:
            pass  # the server may close before it took all of an oversized message
        got = None
        while got is None:
            got = parse_close(received)
            if got is not None:
                break
            try:
                chunk = await asyncio.wait_for(loop.sock_recv(sock, 65536), WAIT)
            except ConnectionResetError:
                STATS.fail(f"malformed: {name}", "RST before the close frame: the code is lost")
                return
            if not chunk:
                STATS.fail(f"malformed: {name}", "EOF without a close frame")
                return
            received += chunk
        if got != code:
            STATS.fail(f"malformed: {name}", f"close code {got}, expected {code}")
            return
        STATS.count(f"close {code}: {name}")
        try:
            await loop.sock_sendall(sock, close_frame(code))
            while await asyncio.wait_for(loop.sock_recv(sock, 65536), WAIT):
                pass
        except ConnectionError:
            STATS.count("RST after the close frame (our input was unread)")
    finally:
        sock.close()


def parse_close(data):
    """The code of the first close frame in `data` (server frames), None if not there yet."""
    while len(data) >= 2:
        n, at = data[1] & 0x7F, 2
        if n == 126:
            if len(data) < 4:
                return None
            n, at = struct.unpack("!H", data[2:4])[0], 4
        elif n == 127:
            if len(data) < 10:
                return None
            n, at = struct.unpack("!Q", data[2:10])[0], 10
        if len(data) < at + n:
            return None
        if data[0] & 0xF == OP_CLOSE:
            return close_code(data[at:at + n])
        data = data[at + n:]
    return None


async def half_open():
    """Connect and send nothing or half a request, hold it: the server must drop it at its
    10 s handshake timeout."""
    with Tracked("half-open"):
        reader, writer = await asyncio.wait_for(connect(HOST, PORT, source_ip()), WAIT)
        try:
            if random.random() < 0.5:
                writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: webs")
            opened = time.monotonic()
            try:
                await asyncio.wait_for(reader.read(), 10.0 + WAIT)
            except asyncio.TimeoutError:
                STATS.fail("half-open", f"not dropped after {10 + WAIT:.0f} s")
                return
            except ConnectionResetError:
                pass
            held = time.monotonic() - opened
            if held < 9.5:
                STATS.fail("half-open", f"dropped after {held:.1f} s, before the timeout")
                return
            STATS.half_open_closed_after.append(held)
            STATS.count("half-open dropped at the handshake timeout")
        finally:
            writer.transport.abort()


async def idle_pinger(stop):
    """One idle connection for the whole run, pinged every 2 to 6 s; closes with 1000."""
    with Tracked("idle"):
        reader, writer = await asyncio.wait_for(open_websocket(HOST, PORT, source_ip()), WAIT)
        try:
            while not stop.is_set():
                try:
                    await asyncio.wait_for(stop.wait(), random.uniform(2, 6))
                    break
                except asyncio.TimeoutError:
                    pass
                ping = os.urandom(random.randint(0, 125))
                writer.write(frame(OP_PING, ping))
                fin, rsv, op, payload = await asyncio.wait_for(read_frame(reader), WAIT)
                if (fin, rsv, op, payload) != (True, 0, OP_PONG, ping):
                    STATS.fail("idle", f"answer to a ping: opcode {op:#x}, {len(payload)} B")
                    return
                STATS.pongs += 1
            await close_normally(reader, writer, "idle")
        finally:
            writer.transport.abort()


async def loop_behaviour(name, body, stop, pause):
    """Runs `body` until `stop`; any exception is an unexpected event."""
    while not stop.is_set():
        try:
            await body()
        except Exception as error:  # every failure of a client is an event to report
            STATS.fail(name, f"{type(error).__name__}: {error}")
        await asyncio.sleep(random.uniform(*pause))


def server_sample(pid):
    """(VmRSS KiB, VmHWM KiB, open descriptors) of the server, or None once it is gone."""
    try:
        fields = {}
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                name, _, value = line.partition(":")
                fields[name] = value.strip()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except (FileNotFoundError, ProcessLookupError):
        return None
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0]), fds


class Monitor:
    """A sample of the server and the clients every `period` seconds, printed as it is taken."""

    COLUMNS = ("t(s)", "RSS KiB", "HWM KiB", "fds", "churn", "abrupt", "slow", "nonread",
               "malf", "half", "idle", "msgs", "unexp")

    def __init__(self, pid):
        self.pid = pid
        self.rows = []
        print(" ".join(f"{c:>8}" for c in self.COLUMNS), flush=True)

    def take(self, label=None):
        sample = server_sample(self.pid)
        if sample is None:
            return None
        active = [STATS.active.get(b, 0) for b in ("churner", "abrupt", "slow reader",
                                                    "non-reader", "malformed", "half-open",
                                                    "idle")]
        t = time.monotonic() - STATS.start
        row = (round(t), *sample, *active, STATS.messages, len(STATS.unexpected))
        self.rows.append((t, sample, label))
        text = " ".join(f"{v:>8}" for v in row)
        print(text + (f"  {label}" if label else ""), flush=True)
        return sample

    async def run(self, stop, period):
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), period)
            except asyncio.TimeoutError:
                pass
            if self.take() is None:
                STATS.fail("monitor", "the server process is gone")
                return


async def main(args):
    global PORT, KERNEL_BUFFER_BOUND
    PORT = args.port
    KERNEL_BUFFER_BOUND = kernel_buffer_bound()
    monitor = Monitor(args.pid)
    await asyncio.sleep(0.5)
    baseline = monitor.take("baseline, no connections")
    if baseline is None:
        print("soak: the server process is not running", file=sys.stderr)
        return 1
    stop = asyncio.Event()
    mix = [("churner", churner, args.churners, (0.0, 0.05)),
           ("abrupt", abrupt_leaver, args.abrupt, (0.0, 0.1)),
           ("slow reader", slow_reader, args.slow, (0.0, 0.5)),
           ("non-reader", non_reader, args.non_readers, (0.0, 1.0)),
           ("malformed", malformed, args.malformed, (0.0, 0.1)),
           ("half-open", half_open, args.half_open, (0.0, 0.5))]
    tasks = [asyncio.create_task(loop_behaviour(name, body, stop, pause))
             for name, body, count, pause in mix for _ in range(count)]

    async def one_idle():
        try:
            await idle_pinger(stop)
        except (asyncio.TimeoutError, ConnectionError, ProtocolFailure,
                asyncio.IncompleteReadError, OSError) as error:
            STATS.fail("idle", f"{type(error).__name__}: {error}")

    tasks += [asyncio.create_task(one_idle()) for _ in range(args.idle)]
    monitor_task = asyncio.create_task(monitor.run(stop, args.sample_every))
    await asyncio.sleep(args.seconds)
    stop.set()
    monitor.take("load stopping")
    done, pending = await asyncio.wait(tasks, timeout=10 + 2 * WAIT)
    for task in pending:
        task.cancel()
    if pending:
        STATS.fail("stop", f"{len(pending)} clients still busy {10 + 2 * WAIT:.0f} s after the stop")
    await monitor_task
    # Half-open sockets of other kinds may still be held by the server for up to 10 s.
    settle = time.monotonic()
    while time.monotonic() - settle < 12:
        sample = server_sample(args.pid)
        if sample is None or sample[2] == baseline[2]:
            break
        await asyncio.sleep(1)
    final = monitor.take("after the drain")
    return verdict(monitor, baseline, final, args)


def verdict(monitor, baseline, final, args):
    """Prints the summary; 0 for PASS, 1 for FAIL."""
    warmup = min(120.0, max(30.0, 0.1 * args.seconds))
    steady = [(t, s) for t, s, label in monitor.rows if label is None and t >= warmup]
    failures = []
    print("\n== clients")
    for name in sorted(STATS.opened):
        print(f"  {name:<12} {STATS.opened[name]:>8} connections")
    print(f"  echoed messages checked byte for byte: {STATS.messages} "
          f"({STATS.bytes / MIB:.1f} MiB); pongs checked: {STATS.pongs}")
    print("== expected events")
    for name in sorted(STATS.expected):
        print(f"  {STATS.expected[name]:>8}  {name}")
    if STATS.half_open_closed_after:
        held = STATS.half_open_closed_after
        print(f"  half-open dropped after {min(held):.1f} .. {max(held):.1f} s")
    if STATS.stall_bytes:
        print(f"  a non-reader's bytes taken before the server paused it: "
              f"{min(STATS.stall_bytes) / MIB:.1f} .. {max(STATS.stall_bytes) / MIB:.1f} MiB")
    print(f"== unexpected events: {len(STATS.unexpected)}")
    for t, name, text in STATS.unexpected[:30]:
        print(f"  {t:7.1f}s [{name}] {text}")
    if STATS.unexpected:
        failures.append(f"{len(STATS.unexpected)} unexpected events")
    print("== server")
    if final is None:
        failures.append("the server process died")
    elif final[2] != baseline[2]:
        failures.append(f"descriptor leak: {final[2]} open after the drain, {baseline[2]} "
                        "at the start")
    if len(steady) < 2:
        failures.append("too few samples after the warm-up to judge RSS")
    else:
        # The reference is the highest sample in the second half of the warm-up: a paused
        # non-reader legitimately costs the server up to ~2 MiB at one sample and nothing at
        # the next, so a single sample could catch a trough.
        late_warmup = [s[0] for t, s, label in monitor.rows
                       if label is None and warmup / 2 <= t < warmup] or [steady[0][1][0]]
        at_warmup = max(late_warmup)
        bound = 1.25 * at_warmup + args.rss_slack_mib * KIB
        peak = max(s[0] for _, s in steady)
        print(f"  RSS at the end of the warm-up (max of {warmup / 2:.0f}..{warmup:.0f} s): "
              f"{at_warmup} KiB; max after: {peak} KiB; bound 1.25 x + "
              f"{args.rss_slack_mib:.0f} MiB = {bound:.0f} KiB")
        third = max(1, len(steady) // 3)
        middle = sum(s[0] for _, s in steady[third:2 * third]) / max(1, len(steady[third:2 * third]))
        last = sum(s[0] for _, s in steady[-third:]) / third
        print(f"  mean RSS, middle third {middle:.0f} KiB, last third {last:.0f} KiB")
        if peak > bound:
            failures.append(f"RSS grew: {peak} KiB after the warm-up, bound {bound:.0f} KiB")
    if final is not None:
        print(f"  fds at the start {baseline[2]}, after the drain {final[2]}; "
              f"VmHWM {final[1]} KiB")
    print("VERDICT: " + ("PASS" if not failures else "FAIL: " + "; ".join(failures)))
    return 0 if not failures else 1


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True, help="the server process")
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--sample-every", type=float, default=10.0)
    parser.add_argument("--churners", type=int, default=8)
    parser.add_argument("--abrupt", type=int, default=4)
    parser.add_argument("--slow", type=int, default=2)
    parser.add_argument("--non-readers", type=int, default=2)
    parser.add_argument("--malformed", type=int, default=3)
    parser.add_argument("--half-open", type=int, default=4)
    parser.add_argument("--idle", type=int, default=100)
    parser.add_argument("--rss-slack-mib", type=float, default=8.0)
    parser.add_argument("--no-mid-frame-drops", action="store_true",
                        help="abrupt leavers never drop mid-frame (the known CLOSE-WAIT leak)")
    args = parser.parse_args()
    args.seconds = args.minutes * 60
    if args.no_mid_frame_drops:
        ABRUPT_KINDS.remove("mid frame")
    return args


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse_args())))
