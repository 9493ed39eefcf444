#!/usr/bin/env python3
"""Many idle WebSocket connections held at once across several reactor server processes.

Owns both roles. The orchestrator (default) starts ceil(N / 18,000) echo servers (`--workers 1`,
ports picked by the kernel), one client process per server, measures each server's RSS before and
after, the kernel's socket counts, and prints the report; it exits 1 unless every connection
answered its ping. A client (`--client`) opens its share of connections on raw non-blocking
sockets (bind to 127.0.0.x first, bounded concurrency, retries), reports, waits for "ping" on
stdin, pings every connection once, counts the pongs, and closes everything on "close".
Does not own the server's build: soak/idle-100k.sh builds it. Python 3 standard library only.
"""

import argparse
import asyncio
import errno
import json
import math
import os
import subprocess
import sys
import time

from wsclient import OP_PING, OP_PONG, expected_accept, frame, new_socket, upgrade_request

PER_PROCESS = 18_000           # sockets per server and per client (the fd limit is 20,000)
CONCURRENT_CONNECTS = 200      # per client process
RETRIABLE = {errno.ECONNREFUSED, errno.EAGAIN, errno.ETIMEDOUT, errno.ECONNRESET,
             errno.EADDRNOTAVAIL}
MIN_AVAILABLE_KIB = 3 * 1024 * 1024   # stop before the shared machine runs short of memory


# ---- client role ---------------------------------------------------------------------------

async def open_one(loop, port, source_ip, attempts=6):
    """A connected, upgraded socket, or None after `attempts` tries."""
    for attempt in range(attempts):
        sock = new_socket(source_ip)
        try:
            await asyncio.wait_for(loop.sock_connect(sock, ("127.0.0.1", port)), 30)
            request, key = upgrade_request(f"127.0.0.1:{port}")
            await loop.sock_sendall(sock, request)
            response = b""
            while b"\r\n\r\n" not in response:
                chunk = await asyncio.wait_for(loop.sock_recv(sock, 1024), 30)
                if not chunk:
                    raise ConnectionResetError(errno.ECONNRESET, "EOF in the upgrade")
                response += chunk
            if not response.startswith(b"HTTP/1.1 101") or expected_accept(key) not in response:
                raise RuntimeError(f"upgrade refused: {response[:40]!r}")
            return sock
        except (OSError, asyncio.TimeoutError) as error:
            sock.close()
            if isinstance(error, OSError) and error.errno not in RETRIABLE:
                raise
            await asyncio.sleep(0.05 * 2 ** attempt)
    return None


async def ping_one(loop, sock, payload):
    """True when the next frame on `sock` is a pong carrying `payload`."""
    await loop.sock_sendall(sock, frame(OP_PING, payload))
    want = 2 + len(payload)
    answer = b""
    while len(answer) < want:
        chunk = await asyncio.wait_for(loop.sock_recv(sock, want - len(answer)), 60)
        if not chunk:
            return False
        answer += chunk
    return answer == bytes([0x80 | OP_PONG, len(payload)]) + payload


async def bounded(coroutines, limit):
    """Runs the coroutines with at most `limit` at a time; results in order."""
    gate = asyncio.Semaphore(limit)

    async def run(coroutine):
        async with gate:
            return await coroutine
    return await asyncio.gather(*(run(c) for c in coroutines), return_exceptions=True)


async def client(args):
    loop = asyncio.get_running_loop()
    sources = [f"127.0.0.{i}" for i in range(args.first_source, args.first_source + args.sources)]
    started = time.monotonic()
    results = await bounded((open_one(loop, args.port, sources[i % len(sources)])
                             for i in range(args.connections)), CONCURRENT_CONNECTS)
    socks = [r for r in results if r is not None and not isinstance(r, BaseException)]
    errors = [repr(r) for r in results if isinstance(r, BaseException)][:3]
    report({"opened": len(socks), "connect_seconds": time.monotonic() - started,
            "errors": errors})
    await loop.run_in_executor(None, sys.stdin.readline)            # "ping"
    started = time.monotonic()
    answers = await bounded((ping_one(loop, s, i.to_bytes(4, "big")) for i, s in enumerate(socks)),
                            CONCURRENT_CONNECTS * 5)
    report({"pongs": sum(1 for a in answers if a is True),
            "ping_seconds": time.monotonic() - started,
            "errors": [repr(a) for a in answers if isinstance(a, BaseException)][:3]})
    await loop.run_in_executor(None, sys.stdin.readline)            # "close"
    for sock in socks:
        sock.close()


def report(message):
    print(json.dumps(message), flush=True)


# ---- orchestrator role ---------------------------------------------------------------------

def proc_status(pid):
    with open(f"/proc/{pid}/status") as status:
        fields = dict(line.split(":", 1) for line in status)
    return int(fields["VmRSS"].split()[0])


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def mem_available_kib():
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1])
    return 0


def sockstat():
    with open("/proc/net/sockstat") as f:
        return "".join("    " + line for line in f)


def start_server(binary):
    server = subprocess.Popen([binary, "--runtime", "reactor", "serve", "--port", "0",
                               "--workers", "1"], stdout=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    port = int(line.rsplit(":", 1)[1].strip())
    return server, port


def read_reports(clients, key):
    reports = []
    for c in clients:
        line = c.stdout.readline()
        if not line:
            raise RuntimeError(f"a client exited before reporting {key}")
        reports.append(json.loads(line))
    return reports


def orchestrate(args):
    """Start, connect, hold, sample, ping, close, report. One function over ~80 lines: the
    phases share the servers and clients and only make sense in this order."""
    total = args.connections
    count = math.ceil(total / PER_PROCESS)
    shares = [total // count + (1 if i < total % count else 0) for i in range(count)]
    print(f"idle-100k: {total} connections over {count} server processes "
          f"({', '.join(map(str, shares))}), ports {os.popen('cat /proc/sys/net/ipv4/ip_local_port_range').read().split()}")
    servers = [start_server(args.binary) for _ in range(count)]
    clients = []
    failed = True
    try:
        time.sleep(1.0)
        before = [proc_status(s.pid) for s, _ in servers]
        fds_before = [fd_count(s.pid) for s, _ in servers]
        cpu_before = [cpu_seconds(s.pid) for s, _ in servers]
        stat_before = sockstat()
        print(f"  MemAvailable before: {mem_available_kib() // 1024} MiB")
        started = time.monotonic()
        here = os.path.abspath(__file__)
        sources_each = max(1, min(20, 250 // count))
        for i, ((server, port), share) in enumerate(zip(servers, shares)):
            clients.append(subprocess.Popen(
                [sys.executable, here, "--client", "--port", str(port), "--connections",
                 str(share), "--first-source", str(2 + i * sources_each),
                 "--sources", str(sources_each)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
        opened = read_reports(clients, "opened")
        connect_wall = time.monotonic() - started
        cpu_connect = [cpu_seconds(s.pid) - c for (s, _), c in zip(servers, cpu_before)]
        if mem_available_kib() < MIN_AVAILABLE_KIB:
            raise RuntimeError("MemAvailable below 3 GiB: stopping")
        print(f"  all clients connected; holding {args.hold:.0f} s idle")
        time.sleep(args.hold)
        after = [proc_status(s.pid) for s, _ in servers]
        fds_after = [fd_count(s.pid) for s, _ in servers]
        stat_after = sockstat()
        for c in clients:
            c.stdin.write("ping\n")
            c.stdin.flush()
        pinged = read_reports(clients, "pongs")
        for c in clients:
            c.stdin.write("close\n")
            c.stdin.flush()
        for c in clients:
            c.wait(timeout=120)
        time.sleep(2)
        fds_end = [fd_count(s.pid) for s, _ in servers]

        print("\n  server  port   conns  pongs  RSS before  RSS after  per conn  fds before/held/end"
              "  server CPU s  client connect s")
        for i, ((server, port), o, p) in enumerate(zip(servers, opened, pinged)):
            per = (after[i] - before[i]) * 1024 / max(1, o["opened"])
            print(f"  {i:>6}  {port:>5}  {o['opened']:>6}  {p['pongs']:>5}  {before[i]:>7} KiB"
                  f"  {after[i]:>6} KiB  {per:>6.0f} B  {fds_before[i]:>6}/{fds_after[i]}/{fds_end[i]}"
                  f"  {cpu_connect[i]:>12.2f}  {o['connect_seconds']:>16.1f}")
            for e in o["errors"] + p["errors"]:
                print(f"          error: {e}")
        conns = sum(o["opened"] for o in opened)
        pongs = sum(p["pongs"] for p in pinged)
        growth = (sum(after) - sum(before)) * 1024
        print(f"\n  connections open: {conns} of {total}; pongs: {pongs}")
        print(f"  total server RSS: {sum(before) / 1024:.1f} MiB before, {sum(after) / 1024:.1f} MiB"
              f" held; {growth / max(1, conns):.0f} B of RSS per idle connection")
        print(f"  time to connect and upgrade all: {connect_wall:.1f} s wall (clients in parallel);"
              f" server CPU {sum(cpu_connect):.2f} s ({sum(cpu_connect) * 1e6 / max(1, conns):.0f}"
              f" us per connection); ping round {max(p['ping_seconds'] for p in pinged):.1f} s")
        print(f"  /proc/net/sockstat before:\n{stat_before}  /proc/net/sockstat held:\n{stat_after}")
        failed = not (conns == total and pongs == total and fds_end == fds_before)
        if fds_end != fds_before:
            print(f"  descriptors not back to the start after the close: {fds_end} vs {fds_before}")
        print("VERDICT: " + ("FAIL" if failed else "PASS: every connection answered its ping"))
    finally:
        for c in clients:
            if c.poll() is None:
                c.kill()
        for server, _ in servers:
            server.terminate()
            server.wait(timeout=10)
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=100_000)
    parser.add_argument("--hold", type=float, default=10.0)
    parser.add_argument("--binary", default="target/release/tickwire")
    parser.add_argument("--client", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--first-source", type=int, default=2, help=argparse.SUPPRESS)
    parser.add_argument("--sources", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        if args.connections > PER_PROCESS:
            parser.error(f"a client holds at most {PER_PROCESS} sockets")
        asyncio.run(client(args))
        return 0
    return orchestrate(args)


if __name__ == "__main__":
    sys.exit(main())
