import { describe, it, after, afterEach } from 'mocha';
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createForwarder } from '../../src/service';
import type { Forwarder } from '../../src/service';
import type { ForwarderConfig } from '../../src/config';
import { MemoryStore } from '../../src/store/memory/memory';
import { basic, send, useReceiver, startTwo, waitFor } from './helpers';
import { usePostgres } from '../../../../test/helpers/postgres';

const ADMIN = 'admin-token-for-limits';
const SHOP = 'https://shop.example';
/** What the forwarder promises: every instance applies a change within 2 s. */
const APPLIED_WITHIN = 2000;

/** Two forwarders on one store (PostgreSQL), or one forwarder seen twice (memory, SQLite: one process each). */
interface Pair {
  readonly a: string;
  readonly b: string;
  readonly forwarders: readonly Forwarder[];
}

const admin = (url: string, method: string, path: string, body?: unknown) =>
  send(`${url}${path}`, { method, headers: { Authorization: `Bearer ${ADMIN}`, 'Content-Type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });

/**
 * The preflight and rate-limit answers of one kind of store: settings PUT on one instance are
 * applied by the other within 2 s, and one budget holds over both.
 */
function behaves(start: (receiverUrl: string) => Promise<Pair>): void {
  const receiver = useReceiver();
  let pair: Pair | undefined;
  afterEach(async () => {
    await Promise.all((pair?.forwarders ?? []).map((f) => f.close()));
    pair = undefined;
  });

  const track = (url: string, key: string, messageId: string, origin?: string) =>
    send(`${url}/v1/t`, {
      method: 'POST',
      headers: { 'Content-Type': 'text/plain', ...(origin === undefined ? {} : { Origin: origin }) },
      body: JSON.stringify({ type: 'track', userId: 'u', event: 'E', messageId, writeKey: key }),
    });

  it('answers preflights for origins set through the admin API, on every instance within 2 s; refuses the others', async () => {
    pair = await start(receiver.url);
    const name = `web-${Date.now()}`;
    const created = await admin(pair.a, 'POST', '/admin/sources', { name });
    expect(created.status).to.equal(201);
    const preflight = (url: string, origin: string) => send(`${url}/v1/t`, { method: 'OPTIONS', headers: { Origin: origin, 'Access-Control-Request-Method': 'POST' } });
    expect((await preflight(pair.b, SHOP)).status).to.equal(403);
    const put = await admin(pair.a, 'PUT', `/admin/sources/${name}/settings`, { allowedOrigins: [SHOP] });
    expect(put.status, put.text).to.equal(200);
    expect(put.json).to.deep.equal({ allowedOrigins: [SHOP], ingestRateLimit: null });
    expect((await preflight(pair.a, SHOP)).status).to.equal(204);
    const { b } = pair;
    await waitFor(async () => (await preflight(b, SHOP)).status === 204, 'the other instance to answer the preflight', APPLIED_WITHIN);
    const answer = await preflight(b, SHOP);
    expect(answer.headers['access-control-allow-origin']).to.equal(SHOP);
    expect((await preflight(b, 'https://other.example')).status).to.equal(403);
    // The key's source decides the request itself, on either instance.
    expect((await track(b, created.json.writeKey, `ok-${Date.now()}`, SHOP)).status).to.equal(200);
    expect((await track(b, created.json.writeKey, `no-${Date.now()}`, 'https://other.example')).status).to.equal(403);
    const shown = await admin(pair.b, 'GET', `/admin/sources/${name}`);
    expect(shown.json.allowedOrigins).to.deep.equal([SHOP]);
  });

  it('holds an ingestRateLimit over the instances together: 429 with Retry-After past the burst, nothing of it stored; a new limit starts afresh', async () => {
    pair = await start(receiver.url);
    const name = `limited-${Date.now()}`;
    const created = await admin(pair.a, 'POST', '/admin/sources', { name, ingestRateLimit: { perSecond: 0.01, burst: 3 } });
    expect(created.status, created.text).to.equal(201);
    await admin(pair.a, 'PUT', `/admin/sources/${name}/destinations/Webhooks`, { webhooks: [{ url: `${receiver.url}/${name}` }] });
    const key = created.json.writeKey as string;
    const { a, b } = pair;
    await waitFor(async () => (await send(`${b}/v1/projects/${key}/settings`)).status === 200, 'the other instance to know the source', APPLIED_WITHIN);
    await waitFor(async () => (await admin(b, 'GET', `/admin/sources/${name}/settings`)).json.ingestRateLimit !== null, 'the other instance to know the limit', APPLIED_WITHIN);
    // Three in all, alternating between the instances; the fourth is refused on each.
    const statuses: number[] = [];
    for (const [i, url] of [a, b, a].entries()) statuses.push((await track(url, key, `${name}-${i}`)).status);
    expect(statuses).to.deep.equal([200, 200, 200]);
    for (const url of [b, a]) {
      const refused = await track(url, key, `${name}-refused`);
      expect(refused.status).to.equal(429);
      expect(refused.json.error.code).to.equal('rate_limited');
      expect(Number(refused.headers['retry-after'])).to.be.within(1, 200);
      expect(refused.json.error.retryAfter).to.equal(Number(refused.headers['retry-after']));
    }
    await waitFor(() => receiver.delivered.filter((r) => r.path === `/${name}`).length === 3, 'the three accepted calls');
    expect(receiver.requests.filter((r) => r.json.messageId === `${name}-refused`)).to.deep.equal([]);
    const metrics = await send(`${a}/metrics`);
    expect(metrics.text).to.match(new RegExp(`eventrelay_requests_refused_total\\{source="${name}",reason="rate_limit"\\} [1-9]`));
    // A new limit is a new budget: taken at once, on the other instance too.
    await admin(a, 'PUT', `/admin/sources/${name}/settings`, { ingestRateLimit: { perSecond: 1000, burst: 1000 } });
    await waitFor(async () => (await track(b, key, `${name}-after-${Date.now()}-${Math.random()}`)).status === 200, 'the new limit on the other instance', APPLIED_WITHIN);
  });
}

describe('browser origins and ingestion limits on the memory store', function () {
  this.timeout(30_000);
  behaves(async () => {
    const forwarder = createForwarder({ adminToken: ADMIN, storage: { type: 'memory' } }, { store: new MemoryStore() });
    const { url } = await forwarder.listen({ port: 0 });
    return { a: url, b: url, forwarders: [forwarder] };
  });
});

describe('browser origins and ingestion limits on the SQLite store', function () {
  this.timeout(30_000);
  const dirs: string[] = [];
  after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  behaves(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'eventrelay-web-'));
    dirs.push(dataDir);
    const forwarder = createForwarder({ adminToken: ADMIN }, { dataDir });
    const { url } = await forwarder.listen({ port: 0 });
    return { a: url, b: url, forwarders: [forwarder] };
  });

  it('keeps the settings across a restart, and the config file\'s settings are applied at start', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'eventrelay-web-'));
    dirs.push(dataDir);
    const config: ForwarderConfig = { adminToken: ADMIN, sources: [{ name: 'file', writeKey: 'key-file', allowedOrigins: [SHOP], ingestRateLimit: { perSecond: 5 } }] };
    const first = createForwarder(config, { dataDir });
    const { url } = await first.listen({ port: 0 });
    expect((await admin(url, 'GET', '/admin/sources/file/settings')).json).to.deep.equal({ allowedOrigins: [SHOP], ingestRateLimit: { perSecond: 5, burst: 5 } });
    expect((await admin(url, 'POST', '/admin/sources', { name: 'api', allowedOrigins: ['http://localhost:3000'] })).status).to.equal(201);
    await first.close();
    const second = createForwarder(config, { dataDir });
    const { url: again } = await second.listen({ port: 0 });
    try {
      expect((await admin(again, 'GET', '/admin/sources/api/settings')).json).to.deep.equal({ allowedOrigins: ['http://localhost:3000'], ingestRateLimit: null });
      const preflight = await send(`${again}/v1/b`, { method: 'OPTIONS', headers: { Origin: 'http://localhost:3000' } });
      expect(preflight.status).to.equal(204);
    } finally {
      await second.close();
    }
  });
});

describe('browser origins and ingestion limits on PostgreSQL, two instances', function () {
  this.timeout(30_000);
  const db = usePostgres();
  behaves(async () => {
    const config: ForwarderConfig = { adminToken: ADMIN, storage: { type: 'postgres', url: db.url, poolSize: 3 }, delivery: { minRetryDelay: 20, maxRetryDelay: 50 } };
    const { a, b, urlA, urlB } = await startTwo(config);
    return { a: urlA, b: urlB, forwarders: [a, b] };
  });
});

describe('ingestion limits with the key in the header: refused before the body is read', function () {
  this.timeout(20_000);
  it('answers 429 to a Basic-auth request past the limit and the next request on the connection still works', async () => {
    const forwarder = createForwarder({ storage: { type: 'memory' }, sources: [{ name: 'app', writeKey: 'key-app', ingestRateLimit: { perSecond: 0.01, burst: 1 } }] }, { store: new MemoryStore() });
    const { url } = await forwarder.listen({ port: 0 });
    try {
      const post = () => send(`${url}/v1/b`, { method: 'POST', headers: { Authorization: basic('key-app') }, body: JSON.stringify({ batch: [{ type: 'track', userId: 'u', event: 'E' }] }) });
      expect((await post()).status).to.equal(200);
      const refused = await post();
      expect(refused.status).to.equal(429);
      expect(refused.headers['retry-after']).to.match(/^\d+$/);
      expect((await send(`${url}/health`)).status).to.equal(200);
    } finally {
      await forwarder.close();
    }
  });
});
