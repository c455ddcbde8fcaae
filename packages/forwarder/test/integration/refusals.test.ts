import { describe, it, before, after } from 'mocha';
import { expect } from 'chai';
import { createForwarder } from '../../src/service';
import type { Forwarder } from '../../src/service';
import { MemoryStore } from '../../src/store/memory/memory';
import { ALLOWED_REQUEST_HEADERS, grantedHeaders, MAX_REQUEST_HEADERS_LENGTH } from '../../src/http/browser';
import { basic, send, startReceiver } from './helpers';
import type { Receiver } from './helpers';

const SHOP = 'https://shop.example';
const EVIL = 'https://evil.example';

/** A pino-like logger that keeps its lines. */
type Write = (fields: object, msg: string) => void;
type Recording = { lines: Record<string, unknown>[]; info: Write; warn: Write; error: Write };

function recordingLogger(): Recording {
  const lines: Record<string, unknown>[] = [];
  const write = (level: string) => (fields: object, msg: string) => {
    lines.push({ level, msg, ...fields });
  };
  return { lines, info: write('info'), warn: write('warn'), error: write('error') };
}

describe('refusals a page can read, and preflights that grant what they ask (memory store, 127.0.0.1)', function () {
  this.timeout(30_000);
  let receiver: Receiver;
  let forwarder: Forwarder;
  let url: string;
  const logger = recordingLogger();

  before(async () => {
    receiver = await startReceiver();
    forwarder = createForwarder(
      {
        storage: { type: 'memory' },
        sources: [
          { name: 'web', writeKey: 'key-web', allowedOrigins: [SHOP], destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/web` }] } } },
          { name: 'slow', writeKey: 'key-slow', allowedOrigins: [SHOP], ingestRateLimit: { perSecond: 1, burst: 1 }, destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/slow` }] } } },
        ],
      },
      { store: new MemoryStore(), logger },
    );
    ({ url } = await forwarder.listen({ port: 0, host: '127.0.0.1' }));
  });

  after(async () => {
    await forwarder?.close();
    await receiver?.close();
  });

  const refusedLines = () => logger.lines.filter((l) => l.event === 'ingest.refused');

  it('a 403 for an origin the source does not list carries that origin\'s CORS headers, and the log line names the origin and the path', async () => {
    const answer = await send(`${url}/v1/t`, { method: 'POST', headers: { Origin: EVIL, 'Content-Type': 'text/plain' }, body: JSON.stringify({ writeKey: 'key-web', userId: 'u', event: 'E' }) });
    expect(answer.status).to.equal(403);
    expect(answer.json.error.code).to.equal('origin_not_allowed');
    expect(answer.headers['access-control-allow-origin']).to.equal(EVIL);
    expect(answer.headers.vary).to.contain('Origin');
    const line = refusedLines().find((l) => l.reason === 'origin' && l.source === 'web');
    expect(line).to.include({ status: 403, origin: EVIL, path: '/v1/t', messages: 1 });
    expect(receiver.requests).to.deep.equal([]);
  });

  it('a 401, a 413 and a 429 are readable by the page too, from a listed origin or not; a 2xx only from a listed one', async () => {
    const unknownKey = await send(`${url}/v1/batch`, { method: 'POST', headers: { Origin: EVIL, Authorization: basic('nope') }, body: '{"batch":[]}' });
    expect(unknownKey.status).to.equal(401);
    expect(unknownKey.headers['access-control-allow-origin']).to.equal(EVIL);
    expect(refusedLines().find((l) => l.reason === 'unauthorized')).to.include({ origin: EVIL, path: '/v1/batch', source: null });

    const tooLarge = await send(`${url}/v1/batch`, { method: 'POST', headers: { Origin: SHOP, Authorization: basic('key-web') }, body: 'x'.repeat(600 * 1024) });
    expect(tooLarge.status).to.equal(413);
    expect(tooLarge.headers['access-control-allow-origin']).to.equal(SHOP);
    expect(refusedLines().find((l) => l.reason === 'body_too_large')).to.include({ origin: SHOP, path: '/v1/batch', source: 'web' });

    const body = JSON.stringify({ userId: 'u', event: 'E' });
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await send(`${url}/v1/t`, { method: 'POST', headers: { Origin: SHOP, Authorization: basic('key-slow') }, body }));
    const limited = answers.find((a) => a.status === 429);
    expect(limited, 'a 429 past a burst of 1').to.not.equal(undefined);
    expect(limited!.headers['access-control-allow-origin']).to.equal(SHOP);
    expect(limited!.headers['access-control-expose-headers']).to.contain('Retry-After');
    expect(limited!.json.error.code).to.equal('rate_limited');
    expect(refusedLines().find((l) => l.reason === 'rate_limit')).to.include({ origin: SHOP, path: '/v1/t', source: 'slow', status: 429 });

    // The 2xx of a source goes only to an origin it lists: another origin gets the 403.
    const accepted = await send(`${url}/v1/t`, { method: 'POST', headers: { Origin: SHOP, Authorization: basic('key-web') }, body });
    expect(accepted.status).to.equal(200);
    expect(accepted.headers['access-control-allow-origin']).to.equal(SHOP);
    const other = await send(`${url}/v1/t`, { method: 'POST', headers: { Origin: EVIL, Authorization: basic('key-web') }, body });
    expect(other.status).to.equal(403);
  });

  it('a refused preflight is logged as a refused request with its origin and path, never counted as a message', async () => {
    const answer = await send(`${url}/v1/b`, { method: 'OPTIONS', headers: { Origin: 'https://nobody.example', 'Access-Control-Request-Method': 'POST' } });
    expect(answer.status).to.equal(403);
    const line = refusedLines().find((l) => l.origin === 'https://nobody.example');
    expect(line).to.include({ reason: 'origin', status: 403, path: '/v1/b', source: null, preflight: true, messages: 0 });
    const stats = (await send(`${url}/stats`)).json as { refused: number; accepted: number };
    expect(stats.refused).to.equal(0);
  });

  it('a preflight from a listed origin is granted every header it asks for, as header names; a list that is not one gets the fixed list', async () => {
    const asked = 'Authorization, Content-Type, SentAt, AnonymousId, Rsa-Retry-Attempt, x-amplitude-sent-at';
    const answer = await send(`${url}/v1/batch`, { method: 'OPTIONS', headers: { Origin: SHOP, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': asked } });
    expect(answer.status).to.equal(204);
    const granted = String(answer.headers['access-control-allow-headers']).split(', ');
    for (const name of asked.toLowerCase().split(', ')) expect(granted).to.include(name);
    expect(answer.headers.vary).to.contain('Access-Control-Request-Headers');
    const bad = await send(`${url}/v1/batch`, { method: 'OPTIONS', headers: { Origin: SHOP, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'content-type, x(evil)' } });
    expect(bad.headers['access-control-allow-headers']).to.equal(ALLOWED_REQUEST_HEADERS);
    const long = await send(`${url}/v1/batch`, { method: 'OPTIONS', headers: { Origin: SHOP, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': `x-${'a'.repeat(MAX_REQUEST_HEADERS_LENGTH)}` } });
    expect(long.headers['access-control-allow-headers']).to.equal(ALLOWED_REQUEST_HEADERS);
  });

  it('grantedHeaders: lower-cased, without repeats, the fixed ones first', () => {
    expect(grantedHeaders(undefined)).to.equal(ALLOWED_REQUEST_HEADERS);
    expect(grantedHeaders('')).to.equal(ALLOWED_REQUEST_HEADERS);
    expect(grantedHeaders('X-A,x-a , Authorization')).to.equal(`${ALLOWED_REQUEST_HEADERS}, x-a`);
    expect(grantedHeaders('x-a\r\nx-b')).to.equal(ALLOWED_REQUEST_HEADERS);
    expect(grantedHeaders(['x-a', 'x-b'])).to.equal(`${ALLOWED_REQUEST_HEADERS}, x-a, x-b`);
  });
});
