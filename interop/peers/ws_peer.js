// A Node `ws` peer for tickwire's interop run (interop/peers.sh).
//
//   node ws_peer.js client URL [--no-deflate] [--ca FILE]
//                                connects, sends the message set, checks every echo, closes 1000;
//                                offers permessage-deflate and requires it, or with --no-deflate
//                                offers nothing and requires no extension; a wss:// URL is
//                                verified against the CA certificate in FILE (PEM)
//   node ws_peer.js server       listens on 127.0.0.1:0, prints `port N`, does the same with the
//                                first connection (a `tickwire connect --echo --deflate`), then
//                                exits
//
// Prints `ok   LABEL` or `FAIL LABEL: reason`; the exit status is 0 only on `ok`. The message
// set is the one interop/peers/gorilla/main.go sends: both peers check the same things.
'use strict';
const fs = require('fs');
const { WebSocket, WebSocketServer } = require('ws');

const LIMIT_MS = 20000;

// Text and binary messages, empty to 1 MiB, then 100 small ones pipelined.
function messageSet() {
  const set = [
    { binary: false, data: Buffer.from('hello from node ws') },
    { binary: false, data: Buffer.from('ünïcode € 🚀') },
    { binary: false, data: Buffer.from('') },
    { binary: false, data: Buffer.from('{"px":"64000.25","qty":"0.5"},'.repeat(2185)) },
    { binary: true, data: Buffer.alloc(1000, 0).map((_, i) => i & 255) },
    { binary: true, data: Buffer.alloc(1 << 20, 0).map((_, i) => (i * 31 + 7) & 255) },
    { binary: true, data: Buffer.alloc(0) },
  ];
  for (let i = 0; i < 100; i++) set.push({ binary: false, data: Buffer.from(`{"seq":${i}}`) });
  return set;
}

// Sends the set, checks the echoes in order, closes with 1000 and waits for the close; then
// checks that permessage-deflate was negotiated exactly when `wantDeflate`.
function exchange(ws, label, wantDeflate = true) {
  return new Promise((resolve, reject) => {
    const set = messageSet();
    let next = 0;
    const timer = setTimeout(() => reject(new Error(`timed out after ${next} echoes`)), LIMIT_MS);
    ws.on('message', (data, isBinary) => {
      const want = set[next];
      if (!want) return reject(new Error('an echo nobody sent'));
      if (isBinary !== want.binary || !Buffer.from(data).equals(want.data)) {
        return reject(new Error(`echo ${next} differs (${data.length} B, expected ${want.data.length} B)`));
      }
      next += 1;
      if (next === set.length) ws.close(1000);
    });
    ws.on('close', (code) => {
      clearTimeout(timer);
      if (next !== set.length) return reject(new Error(`closed with ${code} after ${next} echoes`));
      if (code !== 1000) return reject(new Error(`closed with ${code}, expected 1000`));
      resolve(`${set.length} echoes, deflate ${ws.extensions.includes('permessage-deflate') ? 'on' : 'off'}`);
    });
    ws.on('error', reject);
    for (const m of set) ws.send(m.data, { binary: m.binary });
  }).then((detail) => {
    if (detail.endsWith(' on') !== wantDeflate) {
      throw new Error(`permessage-deflate ${wantDeflate ? 'not negotiated' : 'negotiated unasked'}: ${detail}`);
    }
    console.log(`ok   ${label}: ${detail}`);
  });
}

function fail(label, error) {
  console.log(`FAIL ${label}: ${error.message}`);
  process.exit(1);
}

const [mode, url, ...flags] = process.argv.slice(2);
if (mode === 'client') {
  const deflate = !flags.includes('--no-deflate');
  const caAt = flags.indexOf('--ca');
  const ca = caAt >= 0 ? fs.readFileSync(flags[caAt + 1]) : undefined;
  const label = `node ws client -> tickwire serve${deflate ? ' --deflate' : ''} (${url.split(':')[0]}://)`;
  const ws = new WebSocket(url, { perMessageDeflate: deflate, ca });
  ws.on('open', () => exchange(ws, label, deflate).then(() => process.exit(0), (e) => fail(label, e)));
  ws.on('error', (e) => fail(label, e));
} else if (mode === 'server') {
  const label = 'tickwire connect -> node ws server';
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: { threshold: 0 } });
  server.on('listening', () => console.log(`port ${server.address().port}`));
  server.on('connection', (ws) => exchange(ws, label).then(() => process.exit(0), (e) => fail(label, e)));
} else {
  console.error('usage: node ws_peer.js client URL | server');
  process.exit(2);
}
