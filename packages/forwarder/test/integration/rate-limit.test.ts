import { describe, it, after, afterEach } from 'mocha';
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createForwarder } from '../../src/service';
import type { Forwarder } from '../../src/service';
import { ConfigError } from '../../../eventrelay/src/errors';
import { basic, killAll, post, requireBuiltCli, waitFor } from './helpers';
import { startSink } from '../../../../test/helpers/sink';
import type { Sink } from '../../../../test/helpers/sink';
import { usePostgres } from '../../../../test/helpers/postgres';
import { useTempDirs } from '../../../../test/helpers/temp-dir';

const TOKEN = 'rate-limit-admin-token';
const LIMIT = 20;
/**
 * What docs/operating-the-forwarder.md promises: in any one second, at most perSecond × 1.1 + 1
 * requests to the URL over all instances (the + 1: a second's window holds one slot more than its
 * length when it starts on one).
 */
const ALLOWANCE = Math.floor(LIMIT * 1.1) + 1;
/** Three seconds of traffic at the limit; without it, they arrive in a fraction of a second. */
const MESSAGES = 60;

/** A receiver on 127.0.0.1 that notes when each request arrived, on the wall clock. */
async function countingReceiver(): Promise<{ sink: Sink; arrivals: { at: number; messageId: string }[] }> {
  const arrivals: { at: number; messageId: string }[] = [];
  const sink = await startSink((request, res) => {
    arrivals.push({ at: Date.now(), messageId: (JSON.parse(request.body) as { messageId: string }).messageId });
    res.writeHead(200).end('ok');
  });
  return { sink, arrivals };
}

/** Arrivals per whole second of the wall clock. */
function perSecond(arrivals: readonly { at: number }[]): number[] {
  const windows = new Map<number, number>();
  for (const { at } of arrivals) windows.set(Math.floor(at / 1000), (windows.get(Math.floor(at / 1000)) ?? 0) + 1);
  return [...windows.entries()].sort((a, b) => a[0] - b[0]).map(([, count]) => count);
}

function batch(prefix: string, count: number) {
  return { batch: Array.from({ length: count }, (_, i) => ({ type: 'track', userId: 'u', event: 'Rate', messageId: `${prefix}-${i}` })) };
}

async function admin(url: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const response = await fetch(`${url}${path}`, { method, headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return { status: response.status, json: await response.json() };
}

describe('per-URL rate limits', function () {
  this.timeout(60_000);
  const tempDir = useTempDirs('eventrelay-rate-');
  const cleanup: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  it('refuses a bad rateLimit in the config file and in a PUT of the Webhooks destination, with the same field paths', async () => {
    const config = (rateLimit: unknown) => ({
      sources: [{ name: 'web', writeKey: 'k', destinations: { Webhooks: { webhooks: [{ url: 'https://hooks.example.com/in', rateLimit }] } } }],
    });
    const bad: [unknown, string][] = [
      [{ perSecond: 0 }, 'rateLimit.perSecond'],
      [{ perSecond: 'fast' }, 'rateLimit.perSecond'],
      [{ perSecond: 5, per: 'minute' }, 'rateLimit.per'],
      [[5], 'rateLimit'],
    ];
    for (const [rateLimit, field] of bad) {
      expect(() => createForwarder(config(rateLimit) as never, { dataDir: tempDir() }))
        .to.throw(ConfigError)
        .with.property('field', `sources[0].destinations.Webhooks.webhooks[0].${field}`);
    }
    const forwarder = createForwarder({ adminToken: TOKEN, storage: { type: 'memory' } });
    cleanup.push(() => forwarder.close());
    const { url } = await forwarder.listen({ port: 0 });
    expect((await admin(url, 'POST', '/admin/sources', { name: 'web' })).status).to.equal(201);
    for (const [rateLimit, field] of bad) {
      const answer = await admin(url, 'PUT', '/admin/sources/web/destinations/Webhooks', { webhooks: [{ url: 'https://hooks.example.com/in', rateLimit }] });
      expect(answer.status).to.equal(400);
      expect(answer.json.error.field).to.equal(`webhooks[0].${field}`);
    }
  });

  it(`one forwarder sends no more than ${ALLOWANCE} requests in any second at perSecond ${LIMIT} (set through the admin API); waiting is no attempt`, async () => {
    const { sink, arrivals } = await countingReceiver();
    cleanup.push(() => sink.close());
    const forwarder: Forwarder = createForwarder({ adminToken: TOKEN }, { dataDir: tempDir() });
    cleanup.push(() => forwarder.close());
    const { url } = await forwarder.listen({ port: 0 });
    const writeKey = (await admin(url, 'POST', '/admin/sources', { name: 'web' })).json.writeKey as string;
    const put = await admin(url, 'PUT', '/admin/sources/web/destinations/Webhooks', { webhooks: [{ url: `${sink.url}/in`, rateLimit: { perSecond: LIMIT } }] });
    expect(put.status).to.equal(200);
    // The limit is shown as set, in the answer and in the list of sources.
    expect(put.json.webhooks[0].rateLimit).to.deep.equal({ perSecond: LIMIT });
    const listed = await admin(url, 'GET', '/admin/sources', undefined);
    expect(listed.json.sources[0].destinations.Webhooks.webhooks[0].rateLimit).to.deep.equal({ perSecond: LIMIT });
    expect((await post(`${url}/v1/batch`, batch('one', MESSAGES), { Authorization: basic(writeKey) })).status).to.equal(200);
    await waitFor(() => arrivals.length >= MESSAGES, 'every message to arrive', 30_000);
    const counts = perSecond(arrivals);
    expect(Math.max(...counts), `arrivals per second: ${counts.join(', ')}`).to.be.at.most(ALLOWANCE);
    expect(new Set(arrivals.map((a) => a.messageId)).size).to.equal(MESSAGES);
    // Each went out on its first attempt: the wait for a slot is not one. (An attempt is logged once
    // its outcome is stored, a little after the receiver answered.)
    let lines: [string, number][] = [];
    await waitFor(async () => {
      const log = await admin(url, 'GET', '/admin/messages?source=web&limit=100', undefined);
      lines = log.json.items.map((m: { attempts: number; status: string }) => [m.status, m.attempts]);
      return lines.every(([status]) => status !== 'pending');
    }, 'every line to be finished');
    expect(lines).to.deep.equal(Array.from({ length: MESSAGES }, () => ['delivered', 1]));
  });

  it('a test event takes its turn under the rate limit: sent once a slot comes, else each URL says rate_limited and nothing is sent', async () => {
    const { sink, arrivals } = await countingReceiver();
    cleanup.push(() => sink.close());
    const webhooks = (perSecond: number) => ({ webhooks: [{ url: `${sink.url}/in`, rateLimit: { perSecond } }, { url: `${sink.url}/free` }] });
    const test = (url: string) => admin(url, 'POST', '/admin/sources/web/destinations/Webhooks/test', { type: 'track' });
    // 2 a second: the second test event waits about 500 ms for its slot, then goes.
    const patient = createForwarder({ adminToken: TOKEN, storage: { type: 'memory' } });
    cleanup.push(() => patient.close());
    const first = await patient.listen({ port: 0 });
    await admin(first.url, 'POST', '/admin/sources', { name: 'web' });
    expect((await admin(first.url, 'PUT', '/admin/sources/web/destinations/Webhooks', webhooks(2))).status).to.equal(200);
    for (let i = 0; i < 2; i++) {
      const answer = await test(first.url);
      expect(answer.status).to.equal(200);
      expect(answer.json.results.map((r: { status: number }) => r.status)).to.deep.equal([200, 200]);
    }
    expect(arrivals).to.have.length(4);
    // One every 20 s, and a test that waits 100 ms at most: the second gets no slot and sends nothing.
    const hurried = createForwarder({ adminToken: TOKEN, storage: { type: 'memory' } }, {}, { testWait: 100 });
    cleanup.push(() => hurried.close());
    const second = await hurried.listen({ port: 0 });
    await admin(second.url, 'POST', '/admin/sources', { name: 'web' });
    expect((await admin(second.url, 'PUT', '/admin/sources/web/destinations/Webhooks', webhooks(0.05))).status).to.equal(200);
    expect((await test(second.url)).json.delivered).to.equal(true);
    const refused = await test(second.url);
    expect(refused.status).to.equal(200);
    expect(refused.json.delivered).to.equal(false);
    expect(refused.json.results).to.deep.equal([
      { url: `${sink.url}/in`, status: null, durationMs: 0, error: 'rate_limited' },
      { url: `${sink.url}/free`, status: null, durationMs: 0, error: 'rate_limited' },
    ]);
    expect(arrivals).to.have.length(6);
  });
});

describe('per-URL rate limits with two `eventrelay serve` processes on one PostgreSQL database', function () {
  this.timeout(90_000);
  const CLI = resolve('packages/forwarder/dist/cli.js');
  const db = usePostgres();
  const children: ChildProcess[] = [];
  let dir: string | undefined;

  after(async () => {
    killAll(children);
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  async function serve(configPath: string): Promise<{ url: string; stop: () => Promise<number | null> }> {
    const child = spawn(process.execPath, [CLI, 'serve', '--config', configPath, '--port', '0'], {
      env: { PATH: process.env.PATH ?? '', DATABASE_URL: db.url, ADMIN_TOKEN: TOKEN },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((done) => child.once('exit', done));
    await waitFor(() => child.exitCode !== null || /listening on (http:\/\/\S+)/.test(out), 'the forwarder to listen', 20_000);
    const url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
    if (url === undefined) throw new Error(`the forwarder did not start:\n${out}`);
    return {
      url,
      stop: () => {
        child.kill('SIGTERM');
        return exited;
      },
    };
  }

  it(`sends no more than ${ALLOWANCE} requests in any second together at perSecond ${LIMIT} (set in the config file), both instances sending`, async () => {
    requireBuiltCli();
    const { sink, arrivals } = await countingReceiver();
    try {
      dir = mkdtempSync(join(tmpdir(), 'eventrelay-rate-pg-'));
      const configPath = join(dir, 'eventrelay.config.json');
      writeFileSync(
        configPath,
        JSON.stringify({
          adminToken: { env: 'ADMIN_TOKEN' },
          storage: { type: 'postgres', url: { env: 'DATABASE_URL' }, poolSize: 3 },
          sources: [{ name: 'web', writeKey: 'rate-key', destinations: { Webhooks: { webhooks: [{ url: `${sink.url}/in`, rateLimit: { perSecond: LIMIT } }] } } }],
        }),
      );
      const [a, b] = await Promise.all([serve(configPath), serve(configPath)]);
      const sent = await Promise.all([
        post(`${a.url}/v1/batch`, batch('a', MESSAGES / 2), { Authorization: basic('rate-key') }),
        post(`${b.url}/v1/batch`, batch('b', MESSAGES / 2), { Authorization: basic('rate-key') }),
      ]);
      expect(sent.map((s) => s.status)).to.deep.equal([200, 200]);
      await waitFor(() => arrivals.length >= MESSAGES, 'every message to arrive', 30_000);
      const counts = perSecond(arrivals);
      expect(Math.max(...counts), `arrivals per second: ${counts.join(', ')}`).to.be.at.most(ALLOWANCE);
      expect(new Set(arrivals.map((x) => x.messageId)).size).to.equal(MESSAGES);
      // Both sent (each instance's own endpoint health counts its attempts): the budget was shared, not one instance's.
      // An attempt is counted once its outcome is stored, a little after the receiver saw the request.
      const attemptsOf = () =>
        Promise.all(
          [a, b].map(async (i) => ((await (await fetch(`${i.url}/stats`)).json()) as { endpoints: { attempts: number }[] }).endpoints.reduce((n, e) => n + e.attempts, 0)),
        );
      let attempts: number[] = [];
      await waitFor(async () => {
        attempts = await attemptsOf();
        return attempts[0]! + attempts[1]! >= MESSAGES;
      }, 'every attempt to be counted', 10_000);
      expect(attempts.every((n) => n > 0), `attempts per instance: ${attempts.join(', ')}`).to.equal(true);
      expect(attempts[0]! + attempts[1]!).to.equal(MESSAGES);
      // Each instance's overview is the picture of both: their attempts summed (each writes its view every second).
      for (const i of [a, b]) {
        let overview: { instances: number; stats: { endpoints: { attempts: number }[] } } | undefined;
        await waitFor(async () => {
          overview = (await admin(i.url, 'GET', '/admin/overview')).json;
          return overview!.stats.endpoints.reduce((n, e) => n + e.attempts, 0) === MESSAGES;
        }, 'the overview to sum both instances', 10_000);
        expect(overview!.instances).to.equal(2);
      }
      expect(await Promise.all([a.stop(), b.stop()])).to.deep.equal([0, 0]);
    } finally {
      await sink.close();
    }
  });
});
