"""Interop tests for wss:// (TLS through rustls): tickwire against Python's `ssl` (OpenSSL) under
`websockets`, and against the openssl CLI.

The certificates are made at test time with the `openssl` CLI in a temporary directory (the
first test): a root CA, server leaves for DNS:localhost and IP:127.0.0.1 signed by it (EC P-256
in PKCS#8, RSA in PKCS#1, EC in SEC1 after an EC PARAMETERS block, and one behind an
intermediate CA), a client leaf for mutual TLS, a leaf from another CA, a leaf for another host
name and an expired leaf (`openssl ca -startdate/-enddate`, which OpenSSL 3.0 has; its
`x509 -not_before` came only in 3.4). No leaf is its own CA: webpki rejects a CA certificate
used as an end-entity certificate.

Part A drives `tickwire serve --tls-cert/--tls-key [--deflate] [--tls-client-ca]` with a
`websockets` client over `ssl.SSLContext`, with `openssl s_client`, and with plain TCP. Part B
drives `tickwire connect wss://...` against a `websockets` server over `ssl`, and once against
`openssl s_server`. Each failure case checks what a user sees: the exception a Python peer
raises, tickwire's exit status and its one `tickwire: ...` line on stderr.

test_websockets_interop.py runs these after the deflate tests (GROUPS); run alone, this file
prints its own `interop: N passed, M failed`. Every connection stays on 127.0.0.1 (the name
`localhost` is only used for certificate checks and SNI, and /etc/hosts maps it there).
"""

import asyncio
import atexit
import random
import shutil
import ssl
import subprocess
import sys
import tempfile
from pathlib import Path

from websockets.asyncio.client import connect as ws_connect

from harness import (
    CLIENT_ROLE, HOST, MIB, SAMPLE_ACCEPT, STEP, EchoServer, Group, PeerServer, TestFailure,
    check, finish, masked_frame, raw_exchange, roundtrip, run_groups, short, spawn,
    spawn_program, upgrade_request,
)

KIB = 1 << 10
DEVNULL = asyncio.subprocess.DEVNULL
PIPE = asyncio.subprocess.PIPE

# ---------------------------------------------------------------------------------------------
# Certificates (made by test_generate_certificates, the first test; the paths are fixed now so
# the server groups below can name them)

CERT_DIR = Path(tempfile.mkdtemp(prefix="tickwire-tls-interop-"))
atexit.register(shutil.rmtree, CERT_DIR, True)


class Identity:
    """A certificate (PEM, leaf first, then any intermediate) and its private key (PEM)."""

    def __init__(self, name):
        self.name = name
        self.cert = str(CERT_DIR / f"{name}.pem")
        self.key = str(CERT_DIR / f"{name}.key")


CA = Identity("ca")  # the root every trusting peer is given
SERVER = Identity("server")  # localhost + 127.0.0.1, from CA, EC P-256, PKCS#8 key
CLIENT = Identity("client")  # clientAuth leaf from CA, for mutual TLS
OTHER_CA = Identity("other-ca")
OTHER = Identity("other")  # localhost + 127.0.0.1 from OTHER_CA: untrusted
WRONG_NAME = Identity("wrong-name")  # from CA, valid for wrong.example only
EXPIRED = Identity("expired")  # localhost + 127.0.0.1 from CA, valid in January 2020 only
INTERMEDIATE = Identity("intermediate")  # a CA signed by CA
CHAINED = Identity("chained")  # localhost + 127.0.0.1 from INTERMEDIATE; file = leaf + INTERMEDIATE
RSA_PKCS1 = Identity("rsa")  # RSA 2048 key as "BEGIN RSA PRIVATE KEY"
EC_SEC1 = Identity("sec1")  # `openssl ecparam -genkey`: EC PARAMETERS, then "BEGIN EC PRIVATE KEY"

CLIENT_CN = "tickwire interop client"
SERVER_NAMES = "DNS:localhost,IP:127.0.0.1"
NEW_EC_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
CA_EXTENSIONS = "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n"
# `openssl ca` needs a database and a policy even to sign one certificate.
CA_CONFIG = """[ca]
default_ca = interop
[interop]
database = index.txt
new_certs_dir = .
serial = serial.txt
default_md = sha256
policy = any_name
unique_subject = no
[any_name]
commonName = supplied
"""


def openssl(*args):
    """Runs `openssl ARGS` in CERT_DIR; fails the test with openssl's last stderr line."""
    try:
        result = subprocess.run(["openssl", *args], cwd=CERT_DIR, capture_output=True, text=True,
                                timeout=STEP * 2)
    except FileNotFoundError:
        raise TestFailure("openssl not found on PATH (on Debian: apt-get install openssl)") from None
    lines = result.stderr.strip().splitlines()
    check(result.returncode == 0, f"openssl {' '.join(args[:2])} exited {result.returncode}: "
                                  f"{lines[-1] if lines else ''}")
    return result.stdout


def leaf_extensions(names=SERVER_NAMES, usage="serverAuth"):
    text = "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n"
    text += f"extendedKeyUsage={usage}\n"
    return text + (f"subjectAltName={names}\n" if names else "")


def request(identity, subject, existing_key=False):
    """A CSR for `identity`, with a new EC P-256 key unless its key file was made already."""
    key = ["-key", identity.key] if existing_key else [*NEW_EC_KEY, "-keyout", identity.key]
    openssl("req", "-new", *key, "-subj", f"/CN={subject}", "-out", f"{identity.name}.csr")


def sign(identity, issuer, extensions):
    Path(CERT_DIR / f"{identity.name}.ext").write_text(extensions)
    openssl("x509", "-req", "-in", f"{identity.name}.csr", "-CA", issuer.cert, "-CAkey", issuer.key,
            "-CAcreateserial", "-days", "30", "-extfile", f"{identity.name}.ext", "-out", identity.cert)


def root_ca(identity, subject):
    openssl("req", "-x509", *NEW_EC_KEY, "-keyout", identity.key, "-out", identity.cert,
            "-days", "30", "-subj", f"/CN={subject}",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")


def leaf(identity, issuer, subject="localhost", existing_key=False, **extensions):
    request(identity, subject, existing_key)
    sign(identity, issuer, leaf_extensions(**extensions))


async def test_generate_certificates():
    version = openssl("version").strip()
    check(version.startswith("OpenSSL 3"), f"this file was written for OpenSSL 3, found {version!r}")
    root_ca(CA, "tickwire interop CA")
    root_ca(OTHER_CA, "tickwire interop other CA")
    leaf(SERVER, CA)
    leaf(CLIENT, CA, subject=CLIENT_CN, names=None, usage="clientAuth")
    leaf(OTHER, OTHER_CA, usage="serverAuth,clientAuth")
    leaf(WRONG_NAME, CA, subject="wrong.example", names="DNS:wrong.example")
    openssl("genrsa", "-traditional", "-out", RSA_PKCS1.key, "2048")
    leaf(RSA_PKCS1, CA, existing_key=True)
    openssl("ecparam", "-name", "prime256v1", "-genkey", "-out", EC_SEC1.key)
    leaf(EC_SEC1, CA, existing_key=True)
    # CA -> INTERMEDIATE -> CHAINED; the chain file a server loads is the leaf, then INTERMEDIATE.
    request(INTERMEDIATE, "tickwire interop intermediate CA")
    sign(INTERMEDIATE, CA, CA_EXTENSIONS.replace("CA:TRUE", "CA:TRUE,pathlen:0"))
    leaf(CHAINED, INTERMEDIATE)
    Path(CHAINED.cert).write_text(Path(CHAINED.cert).read_text() + Path(INTERMEDIATE.cert).read_text())
    # Expired: `openssl ca` sets both dates; the CA is newer than the leaf, which no verifier minds.
    Path(CERT_DIR / "ca.cnf").write_text(CA_CONFIG)
    Path(CERT_DIR / "index.txt").write_text("")
    Path(CERT_DIR / "serial.txt").write_text("1000\n")
    request(EXPIRED, "localhost")
    Path(CERT_DIR / "expired.ext").write_text(leaf_extensions())
    openssl("ca", "-batch", "-config", "ca.cnf", "-cert", CA.cert, "-keyfile", CA.key,
            "-in", "expired.csr", "-out", EXPIRED.cert, "-notext", "-extfile", "expired.ext",
            "-startdate", "20200101000000Z", "-enddate", "20200201000000Z")
    for identity in (RSA_PKCS1, EC_SEC1):
        first = Path(identity.key).read_text().splitlines()[0]
        check(first in ("-----BEGIN RSA PRIVATE KEY-----", "-----BEGIN EC PARAMETERS-----"),
              f"{identity.key} starts with {first!r}: not the key format this test is for")


# ---------------------------------------------------------------------------------------------
# Python `ssl` peers and their messages


def client_context(version=None, trust=CA, identity=None):
    """A client context trusting `trust` only (the system roots when None), at `version` only."""
    context = ssl.create_default_context(cafile=trust.cert if trust else None)
    if version:
        context.minimum_version = context.maximum_version = version
    if identity:
        context.load_cert_chain(identity.cert, identity.key)
    return context


def server_context(identity=SERVER, version=None, client_ca=None):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(identity.cert, identity.key)
    if version:
        context.minimum_version = context.maximum_version = version
    if client_ca:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(client_ca.cert)
    return context


def wss_client(server, context=None, **options):
    return ws_connect(server.url, ssl=context or client_context(), open_timeout=STEP,
                      close_timeout=STEP, ping_interval=None, max_size=4 * MIB, **options)


def tls_version(ws):
    return ws.transport.get_extra_info("ssl_object").version()


def json_text(length):
    """Compressible market-data-like text, exactly `length` bytes."""
    line = '{"sym":"BTC-USD","bid":"43120.50","ask":"43121.75","qty":0.125,"ts":1700000000000}\n'
    return (line * (length // len(line) + 1))[:length]


def messages(large=True):
    """Text and binary, empty, around the TLS record size (16 KiB) and, with `large`, 1 MiB."""
    result = ["hello", "", "héllo wörld ✓ 日本語 🦀", b"", bytes(range(256)),
              json_text(16 * KIB - 1), random.Random(16).randbytes(16 * KIB + 1)]
    if large:
        result += [json_text(MIB), random.Random(1).randbytes(MIB), "after large"]
    return result


async def check_echoes(ws, items):
    for item in items:
        echoed = await roundtrip(ws, item)
        check(type(echoed) is type(item), f"sent {type(item).__name__}, echo was {type(echoed).__name__}")
        check(echoed == item, f"sent {short(item)}, echo was {short(echoed)}")


async def expect_refused(server, context, what, **options):
    """Opens a connection that must fail; returns the exception. A hang is a failure too."""
    try:
        async with wss_client(server, context, **options) as ws:
            # TLS 1.3 finishes the client's side of the handshake before the server has checked
            # the client's certificate: a refusal may only show on the first read.
            await roundtrip(ws, "must not echo")
    except (TestFailure, asyncio.TimeoutError):
        raise
    except Exception as error:  # noqa: BLE001 - any failure is the expected outcome
        return error
    raise TestFailure(f"{what}: the connection worked, expected it to be refused")


def check_one_error_line(stderr, mentions):
    """What a failed tickwire command must print: one `tickwire: ...` line naming `mentions`."""
    lines = stderr.strip().splitlines()
    check(len(lines) == 1 and lines[0].startswith("tickwire: "),
          f"expected one stderr line 'tickwire: ...', got {lines}")
    for word in mentions:
        check(word.lower() in lines[0].lower(), f"stderr does not mention {word!r}: {lines[0]!r}")


async def server_logged(server, mark, text):
    """Waits (bounded) for `text` in what `server` wrote to stderr after `mark` characters."""
    for _ in range(int(STEP / 0.05)):
        if text.lower() in server.stderr()[mark:].lower():
            return
        await asyncio.sleep(0.05)
    raise TestFailure(f"tickwire serve stderr does not mention {text!r}: {server.stderr()[mark:]!r}")


# ---------------------------------------------------------------------------------------------
# Part A: `tickwire serve --tls-cert/--tls-key` against Python ssl, openssl s_client, plain TCP

SERVE_TLS = ["--tls-cert", SERVER.cert, "--tls-key", SERVER.key]


async def test_default_negotiates_tls13_and_echoes(server):
    async with wss_client(server) as ws:
        check(tls_version(ws) == "TLSv1.3", f"negotiated {tls_version(ws)}, expected TLSv1.3")
        await check_echoes(ws, messages())


async def test_tls12_only_client(server):
    async with wss_client(server, client_context(ssl.TLSVersion.TLSv1_2)) as ws:
        check(tls_version(ws) == "TLSv1.2", f"negotiated {tls_version(ws)}, expected TLSv1.2")
        cipher = ws.transport.get_extra_info("cipher")[0]
        check(cipher.startswith("ECDHE-"), f"TLS 1.2 cipher {cipher} has no forward secrecy")
        await check_echoes(ws, messages())


async def test_tls13_only_client(server):
    async with wss_client(server, client_context(ssl.TLSVersion.TLSv1_3)) as ws:
        check(tls_version(ws) == "TLSv1.3", f"negotiated {tls_version(ws)}, expected TLSv1.3")
        await check_echoes(ws, messages())


async def test_dns_name_checked_by_client(server):
    # The URL names 127.0.0.1 (the IP SAN is checked above); here the client checks DNS:localhost.
    async with wss_client(server, server_hostname="localhost") as ws:
        await check_echoes(ws, messages(large=False))


async def test_pipelined_small_messages_in_order(server):
    # Many echoes queued behind one TLS read: all must come back without the client waiting.
    items = [f"tick {i}" if i % 3 else f"bin {i}".encode() for i in range(500)]
    async with wss_client(server) as ws:
        for item in items:
            await asyncio.wait_for(ws.send(item), STEP)
        for index, item in enumerate(items):
            echoed = await asyncio.wait_for(ws.recv(), STEP)
            check(echoed == item, f"reply {index}: expected {short(item)}, got {short(echoed)}")


async def test_concurrent_connections(server):
    async def one(seed):
        async with wss_client(server) as ws:
            await check_echoes(ws, [f"conn {seed} msg {i}" for i in range(20)]
                               + [random.Random(seed).randbytes(256 * KIB)])
            await asyncio.wait_for(ws.close(), STEP)
            check(ws.close_code == 1000, f"connection {seed}: close reply {ws.close_code}")

    await asyncio.gather(*(one(seed) for seed in range(8)))


async def test_ping_and_close_1000(server):
    async with wss_client(server) as ws:
        pong = await asyncio.wait_for(ws.ping(b"over tls"), STEP)
        await asyncio.wait_for(pong, STEP)
        await asyncio.wait_for(ws.close(), STEP)
        check(ws.close_code == 1000, f"server's close reply carried {ws.close_code}, expected 1000")


async def test_client_without_our_ca_fails_then_server_still_serves(server):
    error = await expect_refused(server, client_context(trust=None), "client trusting system roots")
    check(isinstance(error, ssl.SSLCertVerificationError),
          f"expected ssl.SSLCertVerificationError, got {type(error).__name__}: {error}")
    # asyncio drops the connection without sending OpenSSL's alert; s_client sends it, and the
    # server's log names it.
    mark = len(server.stderr())
    process = await s_client(server.port, "-brief", trust=False)
    code, _, stderr = await asyncio.wait_for(finish(process), STEP * 2)
    check(code != 0 and "verify" in stderr, f"s_client without our CA exited {code}: {stderr.strip()!r}")
    await server_logged(server, mark, "alert UnknownCA")
    async with wss_client(server) as ws:
        await check_echoes(ws, ["still serving"])


async def test_plain_http_gets_400(server):
    status, headers, reader, writer = await raw_exchange(server, upgrade_request(server.port))
    try:
        check(status == 400, f"plain-text upgrade on the TLS port answered {status}, expected 400")
        body = await asyncio.wait_for(reader.read(4096), STEP)
        check(b"TLS" in body, f"400 body does not say the port speaks TLS: {short(body)}")
    finally:
        writer.close()


async def s_client(port, *args, stdin=DEVNULL, trust=True):
    """`openssl s_client` to 127.0.0.1:`port` for localhost, trusting CA (or the system roots)."""
    trusted = ["-CAfile", CA.cert] if trust else []
    return await spawn_program(
        "openssl", "s_client", "-connect", f"{HOST}:{port}", "-servername", "localhost",
        *trusted, "-verify_return_error", *args, stdin=stdin, stdout=PIPE, stderr=PIPE)


async def s_client_negotiates(server, flag, version):
    process = await s_client(server.port, flag, "-brief")
    code, stdout, stderr = await asyncio.wait_for(finish(process), STEP * 2)
    output = stdout + stderr
    check(code == 0, f"openssl s_client {flag} exited {code}: {output.strip()[-300:]!r}")
    check(f"Protocol version: {version}" in output, f"s_client {flag} shows no {version}: {output!r}")
    check("Verification: OK" in output, f"s_client {flag} did not verify the chain: {output!r}")


async def test_openssl_s_client_tls12(server):
    await s_client_negotiates(server, "-tls1_2", "TLSv1.2")


async def test_openssl_s_client_tls13(server):
    await s_client_negotiates(server, "-tls1_3", "TLSv1.3")


async def test_openssl_s_client_upgrade_and_raw_frames(server):
    # The handshake and frames typed through s_client: its stdin goes into the TLS stream as is.
    process = await s_client(server.port, "-quiet", "-nocommands", stdin=PIPE)
    process.stdin.write(upgrade_request(server.port))
    head = await asyncio.wait_for(process.stdout.readuntil(b"\r\n\r\n"), STEP)
    text = head.decode("latin-1")
    check(text.startswith("HTTP/1.1 101"), f"upgrade through s_client answered {short(text)}")
    check(f"Sec-WebSocket-Accept: {SAMPLE_ACCEPT}".lower() in text.lower(), f"no matching accept in {text!r}")
    process.stdin.write(masked_frame(0x81, "through openssl ✓".encode()))
    process.stdin.write(masked_frame(0x88, (1000).to_bytes(2, "big")))
    await asyncio.wait_for(process.stdin.drain(), STEP)
    expected = b"\x81" + bytes([len("through openssl ✓".encode())]) + "through openssl ✓".encode()
    echo = await asyncio.wait_for(process.stdout.readexactly(len(expected)), STEP)
    check(echo == expected, f"echo frame {echo.hex()}, expected {expected.hex()}")
    close = await asyncio.wait_for(process.stdout.readexactly(4), STEP)
    check(close == b"\x88\x02\x03\xe8", f"close reply {close.hex()}, expected 880203e8")
    process.stdin.close()
    code, rest, _ = await asyncio.wait_for(finish(process), STEP * 2)
    check(rest == "", f"bytes after the close frame: {rest!r}")


async def test_deflate_negotiated_over_tls(server):
    async with wss_client(server) as ws:  # `websockets` offers permessage-deflate by default
        answer = ws.response.headers.get("Sec-WebSocket-Extensions", "")
        check(answer.startswith("permessage-deflate"), f"server answered extensions {answer!r}")
        check(tls_version(ws) == "TLSv1.3", f"negotiated {tls_version(ws)}, expected TLSv1.3")
        await check_echoes(ws, messages())


async def test_deflate_tls12_only_client(server):
    async with wss_client(server, client_context(ssl.TLSVersion.TLSv1_2)) as ws:
        check(ws.protocol.extensions, "permessage-deflate not in force")
        check(tls_version(ws) == "TLSv1.2", f"negotiated {tls_version(ws)}, expected TLSv1.2")
        await check_echoes(ws, messages())


async def test_deflate_concurrent_connections(server):
    await test_concurrent_connections(server)


async def test_client_certificate_accepted(server):
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        async with wss_client(server, client_context(version, identity=CLIENT)) as ws:
            await check_echoes(ws, messages(large=False))


async def test_no_client_certificate_refused(server):
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        mark = len(server.stderr())
        await expect_refused(server, client_context(version), f"{version.name} without a client certificate")
        await server_logged(server, mark, "client certificate required")


async def test_client_certificate_from_other_ca_refused(server):
    mark = len(server.stderr())
    await expect_refused(server, client_context(identity=OTHER), "client certificate from another CA")
    await server_logged(server, mark, "certificate")


async def test_openssl_s_client_with_client_certificate(server):
    process = await s_client(server.port, "-brief", "-cert", CLIENT.cert, "-key", CLIENT.key)
    code, stdout, stderr = await asyncio.wait_for(finish(process), STEP * 2)
    check(code == 0 and "Verification: OK" in stdout + stderr,
          f"s_client with a client certificate exited {code}: {(stdout + stderr).strip()[-300:]!r}")


# Servers of their own: other certificates and keys, and startup errors.


async def serve_and_echo(identity, *contexts):
    server = EchoServer("--tls-cert", identity.cert, "--tls-key", identity.key)
    await server.start()
    for context in contexts or (client_context(),):
        async with wss_client(server, context, server_hostname="localhost") as ws:
            await check_echoes(ws, messages(large=False))
    return server


async def test_serve_chain_with_intermediate():
    await serve_and_echo(CHAINED)  # the client trusts the root only: the intermediate must be sent


async def test_serve_rsa_pkcs1_key():
    await serve_and_echo(RSA_PKCS1, client_context(ssl.TLSVersion.TLSv1_2),
                         client_context(ssl.TLSVersion.TLSv1_3))


async def test_serve_ec_sec1_key_after_parameters():
    await serve_and_echo(EC_SEC1, client_context(ssl.TLSVersion.TLSv1_2),
                         client_context(ssl.TLSVersion.TLSv1_3))


async def test_serve_expired_certificate_refused_by_client():
    server = EchoServer("--tls-cert", EXPIRED.cert, "--tls-key", EXPIRED.key)
    await server.start()
    error = await expect_refused(server, client_context(), "expired server certificate")
    check(isinstance(error, ssl.SSLCertVerificationError) and "expired" in str(error),
          f"expected ssl.SSLCertVerificationError naming the expiry, got {type(error).__name__}: {error}")


async def serve_fails_to_start(args, mentions):
    process = await spawn("serve", "--bind", HOST, "--port", "0", *args, stdout=PIPE, stderr=PIPE)
    code, stdout, stderr = await asyncio.wait_for(finish(process), STEP * 2)
    check(code not in (0, None), f"tickwire serve exited {code}, expected a startup failure")
    check(stdout == "", f"tickwire serve announced itself before failing: {stdout!r}")
    check_one_error_line(stderr, mentions)


async def test_serve_key_not_matching_certificate():
    await serve_fails_to_start(["--tls-cert", SERVER.cert, "--tls-key", OTHER.key], ["key"])


async def test_serve_missing_certificate_file():
    missing = str(CERT_DIR / "missing.pem")
    await serve_fails_to_start(["--tls-cert", missing, "--tls-key", SERVER.key], [missing])


# ---------------------------------------------------------------------------------------------
# Part B: `tickwire connect wss://...` against a Python ssl `websockets` server, openssl s_server


async def connect(url, *args, stdin=DEVNULL):
    return await spawn("connect", url, *args, stdin=stdin, stdout=PIPE, stderr=PIPE)


def echo_handler(items):
    """A peer handler: checks every echo, closes with 1000, returns what the server saw."""
    async def handler(ws):
        await check_echoes(ws, items)
        await asyncio.wait_for(ws.close(1000), STEP)
        return {"version": tls_version(ws), "close": ws.close_code,
                "peercert": ws.transport.get_extra_info("peercert"),
                "extensions": ws.protocol.extensions}
    return handler


async def connect_echo(context, *args, host="localhost", items=None):
    """`tickwire connect wss://HOST:PORT/ --echo ARGS` against a server over `context`."""
    async with PeerServer(echo_handler(messages() if items is None else items), ssl=context) as peer:
        process = await connect(f"wss://{host}:{peer.port}/", "--echo", *args)
        seen = await peer.outcome(process)
        code, _, stderr = await asyncio.wait_for(finish(process), STEP * 2)
    check(seen["close"] == 1000, f"tickwire's close reply carried {seen['close']}, expected 1000")
    check(code == 0, f"tickwire connect exited {code}: {stderr.strip()!r}")
    return seen


async def connect_fails(context, *args, mentions, port=None, path="/"):
    """`tickwire connect --echo` that must fail: non-zero exit, one stderr line naming `mentions`.

    The server is a `websockets` one over `context`, or whatever already listens on `port`.
    """
    async def handler(ws):
        raise TestFailure("the WebSocket handshake completed, expected TLS to fail first")

    if port is not None:
        process = await connect(f"wss://localhost:{port}{path}", "--echo", *args)
        code, _, stderr = await asyncio.wait_for(finish(process), STEP * 2)
    else:
        async with PeerServer(handler, ssl=context) as peer:
            process = await connect(f"wss://localhost:{peer.port}{path}", "--echo", *args)
            code, _, stderr = await asyncio.wait_for(finish(process), STEP * 2)
            if peer.result.done() and peer.result.exception():
                raise peer.result.exception()
    check(code not in (0, None), f"tickwire connect exited {code}, expected a failure")
    check_one_error_line(stderr, mentions)


async def s_server(*args):
    """`openssl s_server` on a free port of 127.0.0.1 with SERVER's certificate, for one accept;
    returns (process, port). Wait for it to exit before the test ends: killing a process that
    exits on its own races asyncio's child watcher, which then warns on stderr."""
    process = await spawn_program(
        "openssl", "s_server", "-accept", f"{HOST}:0", "-naccept", "1", "-cert", SERVER.cert,
        "-key", SERVER.key, *args, cwd=CERT_DIR, stdin=DEVNULL, stdout=PIPE, stderr=PIPE)
    line = b""
    while not line.startswith(b"ACCEPT"):
        line = await asyncio.wait_for(process.stdout.readline(), STEP)
        check(line, "openssl s_server exited before accepting")
    return process, int(line.decode().strip().rpartition(":")[2])


async def test_connect_echo_mode():
    seen = await connect_echo(server_context(), "--ca", CA.cert)
    check(seen["version"] == "TLSv1.3", f"negotiated {seen['version']}, expected TLSv1.3")


async def test_connect_tls12_only_server():
    seen = await connect_echo(server_context(version=ssl.TLSVersion.TLSv1_2), "--ca", CA.cert)
    check(seen["version"] == "TLSv1.2", f"negotiated {seen['version']}, expected TLSv1.2")


async def test_connect_tls13_only_server():
    seen = await connect_echo(server_context(version=ssl.TLSVersion.TLSv1_3), "--ca", CA.cert)
    check(seen["version"] == "TLSv1.3", f"negotiated {seen['version']}, expected TLSv1.3")


async def test_connect_stdin_mode():
    lines = ["alpha", "héllo wörld ✓", "x" * (20 * KIB)]

    async def handler(ws):
        received = []
        for _ in lines:
            received.append(await asyncio.wait_for(ws.recv(), STEP))
            await asyncio.wait_for(ws.send(received[-1].upper()), STEP)
        await asyncio.wait_for(ws.wait_closed(), STEP * 2)
        return received, ws.close_code

    async with PeerServer(handler, ssl=server_context()) as peer:
        process = await connect(f"wss://localhost:{peer.port}/", "--ca", CA.cert, stdin=PIPE)
        process.stdin.write("".join(f"{line}\n" for line in lines).encode())
        await asyncio.wait_for(process.stdin.drain(), STEP)
        printed = []
        for _ in lines:
            line = await asyncio.wait_for(process.stdout.readline(), STEP)
            printed.append(line.decode(errors="replace").rstrip("\n"))
        process.stdin.close()  # EOF: tickwire closes with 1000
        received, close_code = await peer.outcome(process)
        code, rest, stderr = await asyncio.wait_for(finish(process), STEP * 2)
    check(received == lines, f"server received {short(received)}, expected {short(lines)}")
    check(printed == [line.upper() for line in lines], f"tickwire printed {short(printed)}")
    check(rest == "" and close_code == 1000, f"extra output {rest!r}, close {close_code}")
    check(code == 0, f"tickwire connect exited {code}: {stderr.strip()!r}")


async def test_connect_deflate():
    seen = await connect_echo(server_context(), "--ca", CA.cert, "--deflate")
    check(seen["extensions"], "permessage-deflate not in force on the server side")


async def test_connect_sends_sni_for_names_only():
    names = []
    context = server_context()
    context.sni_callback = lambda _ssl_object, name, _context: names.append(name)
    await connect_echo(context, "--ca", CA.cert, items=["by name"])
    await connect_echo(context, "--ca", CA.cert, host=HOST, items=["by address"])
    # RFC 6066 §3: a literal IP address is not sent as a server name; the IP SAN is checked.
    check(names == ["localhost", None], f"server saw SNI {names}, expected ['localhost', None]")


async def test_connect_chain_with_intermediate():
    await connect_echo(server_context(CHAINED), "--ca", CA.cert, items=["chained"])


async def test_connect_client_certificate():
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        context = server_context(version=version, client_ca=CA)
        seen = await connect_echo(context, "--ca", CA.cert, "--cert", CLIENT.cert, "--key", CLIENT.key,
                                  items=["mutual"])
        subject = dict(pair[0] for pair in (seen["peercert"] or {}).get("subject", ()))
        check(subject.get("commonName") == CLIENT_CN,
              f"{version.name}: server saw client certificate {seen['peercert']}")


async def test_connect_without_client_certificate_refused():
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        # asyncio closes without sending its alert: the failure is all tickwire can report.
        await connect_fails(server_context(version=version, client_ca=CA), "--ca", CA.cert, mentions=[])
    # openssl s_server sends the alert (RFC 8446 §4.4.2.4: certificate_required in TLS 1.3).
    for flag, alert in (("-tls1_2", "HandshakeFailure"), ("-tls1_3", "CertificateRequired")):
        server, port = await s_server(flag, "-Verify", "1", "-CAfile", CA.cert, "-www")
        await connect_fails(None, "--ca", CA.cert, mentions=[f"alert {alert}"], port=port)
        await asyncio.wait_for(server.wait(), STEP)


async def test_connect_untrusted_certificate_fails():
    await connect_fails(server_context(OTHER), "--ca", CA.cert, mentions=["certificate"])
    await connect_fails(server_context(SERVER), mentions=["certificate"])  # system roots only


async def test_connect_insecure_accepts_untrusted_certificate():
    await connect_echo(server_context(OTHER), "--insecure", items=["insecure"])
    await connect_echo(server_context(WRONG_NAME), "--insecure", items=["insecure"])


async def test_connect_hostname_mismatch_names_the_name():
    await connect_fails(server_context(WRONG_NAME), "--ca", CA.cert, mentions=["host name", "localhost"])


async def test_connect_expired_certificate_fails():
    await connect_fails(server_context(EXPIRED), "--ca", CA.cert, mentions=["expired"])


async def test_connect_wss_to_plain_http_server_fails():
    # A plain HTTP server answers the ClientHello with a 400 page, as nginx's port 80 does.
    async def answer(reader, writer):
        await asyncio.wait_for(reader.read(4096), STEP)
        writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        await asyncio.wait_for(writer.drain(), STEP)
        writer.close()

    plain = await asyncio.start_server(answer, HOST, 0)
    try:
        port = plain.sockets[0].getsockname()[1]
        await connect_fails(None, "--ca", CA.cert, mentions=["not TLS"], port=port)
    finally:
        plain.close()


async def test_connect_openssl_s_server_non_101_names_status():
    # openssl s_server -HTTP sends the file named by the path as the whole response.
    page = CERT_DIR / "forbidden"
    page.write_bytes(b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: 9\r\n"
                     b"Connection: close\r\n\r\nforbidden")
    server, port = await s_server("-tls1_2", "-HTTP")
    await connect_fails(None, "--ca", CA.cert, mentions=["403"], port=port, path="/forbidden")
    await asyncio.wait_for(server.wait(), STEP)


# ---------------------------------------------------------------------------------------------
# The lists the runner takes

GROUPS = [
    Group("tls setup", None, [test_generate_certificates]),
    Group("tls server", SERVE_TLS, [
        test_default_negotiates_tls13_and_echoes,
        test_tls12_only_client,
        test_tls13_only_client,
        test_dns_name_checked_by_client,
        test_pipelined_small_messages_in_order,
        test_concurrent_connections,
        test_ping_and_close_1000,
        test_client_without_our_ca_fails_then_server_still_serves,
        test_plain_http_gets_400,
        test_openssl_s_client_tls12,
        test_openssl_s_client_tls13,
        test_openssl_s_client_upgrade_and_raw_frames,
    ]),
    Group("tls deflate server", [*SERVE_TLS, "--deflate"], [
        test_deflate_negotiated_over_tls,
        test_deflate_tls12_only_client,
        test_deflate_concurrent_connections,
    ]),
    Group("tls mutual server", [*SERVE_TLS, "--tls-client-ca", CA.cert], [
        test_client_certificate_accepted,
        test_no_client_certificate_refused,
        test_client_certificate_from_other_ca_refused,
        test_openssl_s_client_with_client_certificate,
    ]),
    Group("tls serve", None, [
        test_serve_chain_with_intermediate,
        test_serve_rsa_pkcs1_key,
        test_serve_ec_sec1_key_after_parameters,
        test_serve_expired_certificate_refused_by_client,
        test_serve_key_not_matching_certificate,
        test_serve_missing_certificate_file,
    ]),
    Group("tls client", None, [
        test_connect_echo_mode,
        test_connect_tls12_only_server,
        test_connect_tls13_only_server,
        test_connect_stdin_mode,
        test_connect_deflate,
        test_connect_sends_sni_for_names_only,
        test_connect_chain_with_intermediate,
        test_connect_client_certificate,
        test_connect_without_client_certificate_refused,
        test_connect_untrusted_certificate_fails,
        test_connect_insecure_accepts_untrusted_certificate,
        test_connect_hostname_mismatch_names_the_name,
        test_connect_expired_certificate_fails,
        test_connect_wss_to_plain_http_server_fails,
        test_connect_openssl_s_server_non_101_names_status,
    ], CLIENT_ROLE),
]


if __name__ == "__main__":
    sys.exit(asyncio.run(run_groups(GROUPS)))
