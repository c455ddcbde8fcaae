// The sink: an HTTP collector in its own process (forked by ../run.mjs) that counts what each
// client delivered. It accepts any path and the body shapes of every client in the run:
// `{ batch: [...] }` (Segment, classic analytics-node, RudderStack, eventrelay, the floor),
// `{ api_key, batch: [...] }` (PostHog), a bare array or a single event, gzip or not.
// Messages are counted by `properties.bench_run` and `properties.seq`, which the benchmark
// puts in every call, so losses and duplicates are measured the same way for every client.
// Only bodies answered 200 count; during an outage every request is answered 503.
//
// IPC: parent -> { type: 'reset', run, expected, outageMs } -> { type: 'reset-ok' }
//      parent -> { type: 'stats' } -> { type: 'stats', ...counters }
//      sink   -> { type: 'complete', at } once every expected message has arrived
import http from 'node:http';
import { gunzipSync, inflateSync, brotliDecompressSync } from 'node:zlib';

let state = fresh('', 0, 0);

function fresh(run, expected, outageMs) {
  return {
    run,
    expected,
    outageMs,
    outageUntil: undefined,
    seen: new Uint8Array(expected),
    unique: 0,
    occurrences: 0,
    duplicates: 0,
    requests: 0,
    accepted: 0,
    rejected: 0,
    malformed: 0,
    stray: 0,
    paths: {},
    completeAt: undefined,
    lastProgressAt: Date.now(),
  };
}

function decode(buffer, encoding) {
  if (encoding === 'gzip') return gunzipSync(buffer);
  if (encoding === 'deflate') return inflateSync(buffer);
  if (encoding === 'br') return brotliDecompressSync(buffer);
  return buffer;
}

function messagesOf(body) {
  if (Array.isArray(body)) return body;
  if (body && Array.isArray(body.batch)) return body.batch;
  return [body];
}

function count(body) {
  for (const message of messagesOf(body)) {
    const props = message?.properties;
    const seq = props?.seq;
    if (props?.bench_run !== state.run || !Number.isInteger(seq) || seq < 0 || seq >= state.expected) {
      state.stray++;
      continue;
    }
    state.occurrences++;
    if (state.seen[seq] === 1) {
      state.duplicates++;
      continue;
    }
    state.seen[seq] = 1;
    state.unique++;
    state.lastProgressAt = Date.now();
  }
  if (state.unique === state.expected && state.completeAt === undefined && state.expected > 0) {
    state.completeAt = Date.now();
    process.send({ type: 'complete', at: state.completeAt });
  }
}

function handle(req, res, chunks) {
  const current = state;
  current.requests++;
  const path = req.url.split('?')[0];
  current.paths[path] = (current.paths[path] ?? 0) + 1;
  const now = Date.now();
  if (current.outageMs > 0 && current.outageUntil === undefined) current.outageUntil = now + current.outageMs;
  if (current.outageUntil !== undefined && now < current.outageUntil) {
    current.rejected++;
    res.writeHead(503, { 'content-type': 'application/json' });
    res.end('{"error":"service unavailable"}');
    return;
  }
  let body;
  try {
    body = JSON.parse(decode(Buffer.concat(chunks), req.headers['content-encoding']).toString('utf8'));
  } catch {
    current.malformed++;
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end('{"error":"malformed body"}');
    return;
  }
  current.accepted++;
  if (current === state) count(body);
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{"status":1}');
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => handle(req, res, chunks));
});
server.keepAliveTimeout = 30_000;

process.on('message', (message) => {
  if (message.type === 'reset') {
    state = fresh(message.run, message.expected, message.outageMs);
    process.send({ type: 'reset-ok' });
  } else if (message.type === 'stats') {
    const { seen: _seen, ...counters } = state;
    process.send({ type: 'stats', ...counters });
  }
});
process.on('disconnect', () => process.exit(0));

server.listen(0, '127.0.0.1', () => {
  process.send({ type: 'listening', port: server.address().port });
});
