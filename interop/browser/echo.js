// Browser interop checks: Chromium's own WebSocket against `tickwire serve` (interop/browser.sh).
//
// Query string: `?port=PORT&deflate=1` (expect permessage-deflate) or `&deflate=0` (expect no
// extension), and `&scheme=wss` to connect over TLS (default ws). Every check becomes one entry {name, ok, detail} of the result, which is POSTed
// once as JSON to /result on the server that served this page, whatever happens: each wait
// has its own bound and the whole run has one, so the script that started Chromium always
// hears back. Checks after a failed one still run (and fail fast once the connection is gone),
// so one report names everything that broke.
'use strict';

const STEP_MS = 10000; // the open, one echo, the close
const RUN_MS = 40000; // the whole run; browser.sh waits a little longer than this
const KIB = 1024;
const MIB = 1024 * 1024;

const query = new URLSearchParams(location.search);
const scheme = query.get('scheme') === 'wss' ? 'wss' : 'ws';
const wsUrl = `${scheme}://127.0.0.1:${query.get('port')}/`;
const expectDeflate = query.get('deflate') === '1';

const checks = [];
let extensions = null;
let reported = false;

function record(name, ok, detail = '') {
  checks.push({ name, ok, detail });
}

async function report(fatal = null) {
  if (reported) return;
  reported = true;
  const body = JSON.stringify({ userAgent: navigator.userAgent, wsUrl, expectDeflate, extensions, checks, fatal });
  await fetch('/result', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
}

// ---------------------------------------------------------------------------------------------
// The run

async function run() {
  const ws = new WebSocket(wsUrl);
  ws.binaryType = 'arraybuffer';
  const inbox = new Inbox(ws);

  try {
    await inbox.opened();
    record('open', true);
  } catch (error) {
    record('open', false, error.message);
    return;
  }

  extensions = ws.extensions;
  if (expectDeflate) {
    const names = extensions.split(',').map((offer) => offer.split(';')[0].trim());
    record('negotiated permessage-deflate', names.includes('permessage-deflate'), `extensions ${JSON.stringify(extensions)}`);
  } else {
    record('no extension negotiated', extensions === '', `extensions ${JSON.stringify(extensions)}`);
  }

  const cases = messageCases();
  for (const [name, message] of cases) {
    await check(`echo ${name}`, async () => {
      ws.send(message);
      return mismatch(message, await inbox.next(name));
    });
  }

  const small = Array.from({ length: 100 }, (_, index) => jsonText(60 + (index % 7) * 13, index));
  await check('100 small JSON messages in order', async () => {
    small.forEach((message) => ws.send(message));
    return await expectInOrder(inbox, small);
  });

  // Everything at once, so compressed frames of every size queue up behind each other.
  const burst = cases.map(([, message]) => message).concat(small);
  await check(`burst of ${burst.length} mixed messages in order`, async () => {
    burst.forEach((message) => ws.send(message));
    return await expectInOrder(inbox, burst);
  });

  await check('close 1000', async () => {
    ws.close(1000, 'done');
    const event = await inbox.closed();
    if (event.code !== 1000) return `close event code ${event.code} (reason ${JSON.stringify(event.reason)}), expected 1000`;
    if (!event.wasClean) return 'close event code 1000 but wasClean is false';
    return null;
  });
}

// Runs one check: `body` returns null when it held, or what went wrong.
async function check(name, body) {
  try {
    const problem = await body();
    record(name, problem === null, problem || '');
  } catch (error) {
    record(name, false, error.message);
  }
}

async function expectInOrder(inbox, messages) {
  for (let index = 0; index < messages.length; index += 1) {
    const problem = mismatch(messages[index], await inbox.next(`reply ${index} of ${messages.length}`));
    if (problem !== null) return `reply ${index}: ${problem}`;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Messages

function messageCases() {
  return [
    ['text "hello"', 'hello'],
    ['empty text', ''],
    ['empty binary', new Uint8Array(0)],
    ['multi-byte UTF-8 text', 'héllo wörld ✓ 日本語 🦀'],
    ['JSON text 200 B', jsonText(200, 1)],
    ['JSON text 64 KiB', jsonText(64 * KIB, 2)],
    ['JSON text 1 MiB', jsonText(MIB, 3)],
    ['empty text after a compressed one', ''],
    ['multi-byte UTF-8 text 64 KiB', multiByteText(64 * KIB)],
    ['multi-byte UTF-8 text 1 MiB', multiByteText(MIB)],
    ['random binary 1 B', randomBytes(1, 11)],
    ['random binary 125 B', randomBytes(125, 12)],
    ['random binary 126 B', randomBytes(126, 13)],
    ['random binary 64 KiB - 1', randomBytes(64 * KIB - 1, 14)],
    ['random binary 64 KiB', randomBytes(64 * KIB, 15)],
    ['random binary 1 MiB', randomBytes(MIB, 16)],
    ['zero binary 1 MiB', new Uint8Array(MIB)],
    ['empty binary after a compressed one', new Uint8Array(0)],
  ];
}

// ASCII market-data-like JSON lines, exactly `length` bytes: compresses several times over.
function jsonText(length, seed) {
  const parts = [];
  let size = 0;
  for (let seq = seed * 1000; size < length; seq += 1) {
    const line = `{"seq":${seq},"sym":"BTC-USD","bid":"4312${seq % 10}.50","ask":"4312${(seq + 3) % 10}.75",`
      + `"qty":${(seq % 97) / 8},"ts":${1700000000000 + seq * 37}}\n`;
    parts.push(line);
    size += line.length;
  }
  return parts.join('').slice(0, length);
}

// Exactly `length` UTF-8 bytes mixing 1-, 2-, 3- and 4-byte sequences, so frame and inflate
// boundaries land inside code points.
function multiByteText(length) {
  const pattern = 'a é ✓ 🦀 '; // 14 bytes
  return pattern.repeat(Math.floor(length / 14)) + 'z'.repeat(length % 14);
}

// Deterministic incompressible bytes (xorshift32), so a failure reproduces.
function randomBytes(length, seed) {
  const bytes = new Uint8Array(length);
  let state = seed * 2654435761 >>> 0 || 1;
  for (let index = 0; index < length; index += 1) {
    state ^= state << 13; state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5; state >>>= 0;
    bytes[index] = state & 0xff;
  }
  return bytes;
}

// null when `received` is exactly `sent` with the same kind (text or binary), else why not.
function mismatch(sent, received) {
  if (typeof sent === 'string') {
    if (typeof received !== 'string') return `sent text, received ${kind(received)}`;
    if (received === sent) return null;
    const encoder = new TextEncoder();
    return `text differs: sent ${encoder.encode(sent).length} bytes, received ${encoder.encode(received).length}, `
      + `first difference at UTF-16 index ${firstDifference(sent, received)}`;
  }
  if (!(received instanceof ArrayBuffer)) return `sent binary, received ${kind(received)}`;
  const bytes = new Uint8Array(received);
  if (bytes.length !== sent.length) return `binary of ${bytes.length} bytes, expected ${sent.length}`;
  const index = firstDifference(sent, bytes);
  return index === -1 ? null : `binary differs first at byte ${index}`;
}

function firstDifference(a, b) {
  const length = Math.min(a.length, b.length);
  for (let index = 0; index < length; index += 1) {
    if (a[index] !== b[index]) return index;
  }
  return a.length === b.length ? -1 : length;
}

function kind(value) {
  return value instanceof ArrayBuffer ? `binary (${value.byteLength} bytes)` : `text (${value.length} UTF-16 units)`;
}

// ---------------------------------------------------------------------------------------------
// Inbox: the socket's events as bounded waits

class Inbox {
  constructor(ws) {
    this.queue = [];
    this.openEvent = null;
    this.closeEvent = null;
    this.wake = null;
    const notify = () => { if (this.wake) this.wake(); };
    ws.addEventListener('open', (event) => { this.openEvent = event; notify(); });
    ws.addEventListener('message', (event) => { this.queue.push(event.data); notify(); });
    ws.addEventListener('close', (event) => { this.closeEvent = event; notify(); });
  }

  opened() {
    return this.until(() => this.openEvent !== null, 'the open event', true);
  }

  async next(what) {
    await this.until(() => this.queue.length > 0, what, true);
    return this.queue.shift();
  }

  async closed() {
    await this.until(() => this.closeEvent !== null, 'the close event', false);
    return this.closeEvent;
  }

  // Waits until `ready()` holds, at most STEP_MS; a close first fails the wait when
  // `closeFails` is set.
  async until(ready, what, closeFails) {
    const deadline = Date.now() + STEP_MS;
    while (!ready()) {
      if (closeFails && this.closeEvent !== null) {
        const { code, reason } = this.closeEvent;
        throw new Error(`connection closed (code ${code}, reason ${JSON.stringify(reason)}) while waiting for ${what}`);
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`nothing within ${STEP_MS} ms while waiting for ${what}`);
      await new Promise((resolve) => {
        this.wake = resolve;
        setTimeout(resolve, left);
      });
      this.wake = null;
    }
  }
}

// ---------------------------------------------------------------------------------------------

setTimeout(() => {
  record(`whole run within ${RUN_MS / 1000} s`, false, 'the run did not finish in time');
  report();
}, RUN_MS);

run().then(() => report(), (error) => report(`${error.name}: ${error.message}`));
