"""The WebSocket client side of the soak scripts, by hand: the upgrade and the frames.

Owns building the upgrade request and checking the 101, masking and framing client frames
(RFC 6455 section 5.2), and reading the server's frames from an asyncio StreamReader. Does not
own timeouts, retries or what a behaviour checks: callers bound every await themselves.
Python 3 standard library only.
"""

import asyncio
import base64
import hashlib
import os
import socket
import struct

# RFC 6455 section 1.3: appended to Sec-WebSocket-Key before hashing.
ACCEPT_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

# RFC 6455 section 5.2 opcodes.
OP_CONTINUATION = 0x0
OP_TEXT = 0x1
OP_BINARY = 0x2
OP_CLOSE = 0x8
OP_PING = 0x9
OP_PONG = 0xA

# Linux: pick the source port at connect(), so one source address serves many destinations.
IP_BIND_ADDRESS_NO_PORT = getattr(socket, "IP_BIND_ADDRESS_NO_PORT", 24)


class ProtocolFailure(Exception):
    """The server sent something a correct server would not have."""


def mask_payload(payload: bytes, key: bytes) -> bytes:
    """XORs `payload` with the 4-byte `key` repeated (RFC 6455 section 5.3), as one big int."""
    n = len(payload)
    if n == 0:
        return b""
    stream = (key * (n // 4 + 1))[:n]
    value = int.from_bytes(payload, "little") ^ int.from_bytes(stream, "little")
    return value.to_bytes(n, "little")


def frame(opcode, payload=b"", fin=True, masked=True, rsv=0, length=None) -> bytes:
    """One frame; `length` overrides the header's payload length (for a frame over a limit)."""
    first = (0x80 if fin else 0) | (rsv << 4) | opcode
    n = len(payload) if length is None else length
    mask_bit = 0x80 if masked else 0
    if n < 126:
        header = struct.pack("!BB", first, mask_bit | n)
    elif n < 0x10000:
        header = struct.pack("!BBH", first, mask_bit | 126, n)
    else:
        header = struct.pack("!BBQ", first, mask_bit | 127, n)
    if not masked:
        return header + payload
    key = os.urandom(4)
    return header + key + mask_payload(payload, key)


def close_frame(code: int, reason: bytes = b"") -> bytes:
    return frame(OP_CLOSE, struct.pack("!H", code) + reason)


def upgrade_request(host: str, path: str = "/"):
    """The request bytes and the key they carry."""
    key = base64.b64encode(os.urandom(16))
    request = (
        f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key.decode()}\r\n"
        "Sec-WebSocket-Version: 13\r\n\r\n"
    ).encode()
    return request, key


def expected_accept(key: bytes) -> bytes:
    return base64.b64encode(hashlib.sha1(key + ACCEPT_GUID).digest())


async def read_response_head(reader):
    """(status, headers) of an HTTP response; raises IncompleteReadError on EOF."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise ProtocolFailure(f"bad status line {lines[0]!r}")
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers


def new_socket(source_ip=None) -> socket.socket:
    """A non-blocking TCP socket, bound to `source_ip` (port chosen at connect) if given."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if source_ip is not None:
        sock.setsockopt(socket.IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, 1)
        sock.bind((source_ip, 0))
    return sock


async def connect(host, port, source_ip=None, limit=1 << 16):
    """A TCP connection as asyncio streams; `limit` bounds what the reader buffers."""
    sock = new_socket(source_ip)
    try:
        await asyncio.get_running_loop().sock_connect(sock, (host, port))
    except BaseException:
        sock.close()
        raise
    return await asyncio.open_connection(sock=sock, limit=limit)


async def open_websocket(host, port, source_ip=None, limit=1 << 16):
    """Connects and upgrades; raises ProtocolFailure unless the server answers a correct 101."""
    reader, writer = await connect(host, port, source_ip, limit)
    try:
        request, key = upgrade_request(f"{host}:{port}")
        writer.write(request)
        await writer.drain()
        status, headers = await read_response_head(reader)
        if status != 101:
            raise ProtocolFailure(f"upgrade answered {status}")
        if headers.get("sec-websocket-accept", "").encode() != expected_accept(key):
            raise ProtocolFailure("wrong Sec-WebSocket-Accept")
    except BaseException:
        writer.transport.abort()
        raise
    return reader, writer


def reset_on_close(writer):
    """SO_LINGER 0: closing the socket sends RST instead of FIN."""
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


async def read_frame(reader):
    """(fin, rsv, opcode, payload) of one server frame; a server frame is never masked."""
    first, second = await reader.readexactly(2)
    if second & 0x80:
        raise ProtocolFailure("the server masked a frame")
    n = second & 0x7F
    if n == 126:
        (n,) = struct.unpack("!H", await reader.readexactly(2))
    elif n == 127:
        (n,) = struct.unpack("!Q", await reader.readexactly(8))
    payload = await reader.readexactly(n) if n else b""
    return bool(first & 0x80), (first >> 4) & 0x7, first & 0xF, payload


async def read_message(reader, pongs=None):
    """(opcode, payload) of the next data message, reassembled, or (OP_CLOSE, payload).

    Pongs met on the way are appended to `pongs` (an error when it is None); the echo
    server never pings, never sets RSV bits and never fragments out of order.
    """
    opcode, parts = None, []
    while True:
        fin, rsv, op, payload = await read_frame(reader)
        if rsv:
            raise ProtocolFailure(f"RSV bits {rsv:#x} without an extension")
        if op == OP_PONG and pongs is not None:
            pongs.append(payload)
            continue
        if op == OP_CLOSE:
            return OP_CLOSE, payload
        if op in (OP_TEXT, OP_BINARY) and opcode is None:
            opcode = op
        elif not (op == OP_CONTINUATION and opcode is not None):
            raise ProtocolFailure(f"unexpected opcode {op:#x}")
        parts.append(payload)
        if fin:
            return opcode, b"".join(parts)


def close_code(payload: bytes):
    """The status code of a close frame's payload, or None when it carries none."""
    return struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
