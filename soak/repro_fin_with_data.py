#!/usr/bin/env python3
"""Reproduces the reactor's descriptor leak found by the soak: a FIN that arrives in the same
segment as a partial frame is never seen, and the server holds the socket in CLOSE-WAIT.

Usage: python3 soak/repro_fin_with_data.py PORT PID [COUNT]
Each of COUNT clients upgrades, then sends the first half of a frame and its FIN as one
segment (TCP_CORK, then shutdown). Prints the server's descriptors and CLOSE-WAIT sockets
before and 3 s after; exits 1 when any were left open.
"""

import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from wsclient import OP_BINARY, expected_accept, frame, upgrade_request  # noqa: E402


def close_wait(port):
    out = subprocess.run(["ss", "-tanH", "state", "close-wait", f"( sport = :{port} )"],
                         capture_output=True, text=True).stdout
    return len(out.splitlines())


def one(port):
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    request, key = upgrade_request(f"127.0.0.1:{port}")
    sock.sendall(request)
    response = b""
    while b"\r\n\r\n" not in response:
        response += sock.recv(1024)
    assert response.startswith(b"HTTP/1.1 101") and expected_accept(key) in response
    partial = frame(OP_BINARY, b"x" * 100)[:50]
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
    sock.send(partial)
    sock.shutdown(socket.SHUT_WR)     # uncorks: the data and the FIN leave as one segment
    return sock


def main():
    port, pid = int(sys.argv[1]), int(sys.argv[2])
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    fds_before = len(os.listdir(f"/proc/{pid}/fd"))
    socks = [one(port) for _ in range(count)]
    time.sleep(3)
    fds_after = len(os.listdir(f"/proc/{pid}/fd"))
    print(f"server descriptors: {fds_before} before, {fds_after} 3 s after {count} clients sent "
          f"half a frame and FIN; CLOSE-WAIT sockets on the server: {close_wait(port)}")
    for sock in socks:
        sock.close()
    return 1 if fds_after > fds_before else 0


if __name__ == "__main__":
    sys.exit(main())
