import { describe, it, afterEach } from 'mocha';
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import type { ServerResponse } from 'node:http';
import { createForwarder } from '../../src/service';
import type { Forwarder } from '../../src/service';
import { startSink } from '../../../../test/helpers/sink';
import { useTempDirs } from '../../../../test/helpers/temp-dir';
import { basic, freshStorage, killAll, post, waitFor } from './helpers';
import type { StoreKind } from './helpers';

/**
 * Deliveries in order per user (`ordering: "user"`): a user's calls reach the receiver in the
 * order the forwarder accepted them, through retries, across instances and a kill -9; a user whose
 * calls fail holds back only itself.
 */

const KEY = 'ordering-write-key';
type Kind = StoreKind;

interface Arrival {
  readonly messageId: string;
  readonly type: string;
  readonly user: string;
  readonly status: number;
}

/**
 * A receiver that answers with `answer(message, attempt)` (the attempt counted per messageId)
 * after `delayMs`, records every request, and the most requests of one user in flight at once.
 */
async function receiver(answer: (m: { type: string; messageId: string; user: string }, attempt: number) => number, delayMs = 2) {
  const arrivals: Arrival[] = [];
  const attempts = new Map<string, number>();
  const inFlight = new Map<string, number>();
  let mostInFlight = 0;
  const sink = await startSink((request, res: ServerResponse) => {
    const body = JSON.parse(request.body) as Record<string, unknown>;
    const user = String(body.type === 'alias' ? body['Previous ID'] : body.userId);
    const m = { type: String(body.type), messageId: String(body.messageId), user };
    const attempt = (attempts.get(m.messageId) ?? 0) + 1;
    attempts.set(m.messageId, attempt);
    const now = (inFlight.get(user) ?? 0) + 1;
    inFlight.set(user, now);
    mostInFlight = Math.max(mostInFlight, now);
    const done = () => inFlight.set(user, (inFlight.get(user) ?? 1) - 1);
    let finished = false;
    res.once('close', () => {
      if (!finished) done();
      finished = true;
    });
    setTimeout(() => {
      const status = answer(m, attempt);
      arrivals.push({ ...m, status });
      if (!finished) done();
      finished = true;
      res.writeHead(status).end();
    }, delayMs);
  });
  return {
    url: sink.url,
    arrivals,
    get mostInFlight() {
      return mostInFlight;
    },
    /** messageIds answered 2xx, each once, in the order of their first 2xx. */
    deliveredOf(user: string): string[] {
      const seen = new Set<string>();
      for (const a of arrivals) if (a.user === user && a.status < 300) seen.add(a.messageId);
      return [...seen];
    },
    close: () => sink.close(),
  };
}

/** 50 users, each an identify then three tracks, the calls of a user in consecutive requests. */
function userCalls(users: number): { messageId: string; type: string; userId: string; event?: string; traits?: object }[][] {
  const rounds: ReturnType<typeof userCalls> = [[], [], [], []];
  for (let u = 0; u < users; u++) {
    rounds[0]!.push({ type: 'identify', userId: `user-${u}`, messageId: `i-${u}`, traits: { plan: 'pro' } });
    for (let t = 1; t <= 3; t++) rounds[t]!.push({ type: 'track', userId: `user-${u}`, event: `Step ${t}`, messageId: `t${t}-${u}` });
  }
  return rounds;
}

describe('deliveries in order per user', function () {
  this.timeout(120_000);
  const tempDir = useTempDirs('eventrelay-ordering-');
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
  });

  const storage = (kind: Kind, skip: () => never) => freshStorage(kind, tempDir, cleanups, skip);

  /** One forwarder (two on PostgreSQL, on one database), the source `web` sending to `url`. */
  async function forwarders(kind: Kind, url: string, ordering: 'user' | 'none', skip: () => never, delivery: object = {}): Promise<string[]> {
    const config = {
      storage: await storage(kind, skip),
      delivery: { minRetryDelay: 50, maxRetryDelay: 100, concurrency: 8, ...delivery },
      sources: [{ name: 'web', writeKey: KEY, destinations: { Webhooks: { webhooks: [{ url }], ordering } } }],
    };
    const all: Forwarder[] = [];
    const urls: string[] = [];
    for (let i = 0; i < (kind === 'postgres' ? 2 : 1); i++) {
      const forwarder = createForwarder(config as never);
      all.push(forwarder);
      cleanups.push(() => forwarder.close());
      urls.push((await forwarder.listen({ port: 0, host: '127.0.0.1' })).url);
    }
    return urls;
  }

  async function send(url: string, batch: readonly object[]): Promise<void> {
    const response = await post(`${url}/v1/batch`, { batch }, { Authorization: basic(KEY) });
    expect(response.status, JSON.stringify(response.json)).to.equal(200);
  }

  for (const kind of ['memory', 'sqlite', 'postgres'] as const) {
    for (const ordering of ['user', 'none'] as const) {
      it(`${kind}, ordering ${ordering}: each identify fails twice; ${ordering === 'user' ? 'no track of a user arrives before its identify' : 'some track arrives first'}`, async function () {
        const USERS = 50;
        const hooks = await receiver((m, attempt) => (m.type === 'identify' && attempt <= 2 ? 503 : 200));
        cleanups.push(() => hooks.close());
        const urls = await forwarders(kind, `${hooks.url}/hook`, ordering, () => this.skip());
        // A user's calls in consecutive requests, through the instances in turn (two on PostgreSQL).
        const rounds = userCalls(USERS);
        for (let r = 0; r < rounds.length; r++) await send(urls[r % urls.length]!, rounds[r]!);
        await waitFor(() => new Set(hooks.arrivals.filter((a) => a.status === 200).map((a) => a.messageId)).size === USERS * 4, 'every call delivered', 60_000);
        const outOfOrder: string[] = [];
        for (let u = 0; u < USERS; u++) {
          const order = hooks.deliveredOf(`user-${u}`);
          if (order.join(',') !== [`i-${u}`, `t1-${u}`, `t2-${u}`, `t3-${u}`].join(',')) outOfOrder.push(`user-${u}: ${order.join(',')}`);
        }
        if (ordering === 'user') {
          expect(outOfOrder, outOfOrder.slice(0, 3).join('; ')).to.deep.equal([]);
          // One call of a user in flight at a time, over every instance.
          expect(hooks.mostInFlight).to.equal(1);
        } else {
          expect(outOfOrder.length, 'calls out of order without ordering').to.be.above(0);
        }
      });
    }
  }

  for (const kind of ['memory', 'postgres'] as const) {
    it(`${kind}: a user whose call keeps failing holds back only that user, for less than one retry interval of the others`, async function () {
      // The failing user's retries wait a minute: the healthy user's calls go meanwhile.
      const hooks = await receiver((m) => (m.user === 'bad' ? 503 : 200));
      cleanups.push(() => hooks.close());
      const urls = await forwarders(kind, `${hooks.url}/hook`, 'user', () => this.skip(), { minRetryDelay: 60_000, maxRetryDelay: 60_000 });
      await send(urls[0]!, [
        { type: 'identify', userId: 'bad', messageId: 'bad-1', traits: {} },
        { type: 'track', userId: 'bad', event: 'After', messageId: 'bad-2' },
      ]);
      await waitFor(() => hooks.arrivals.some((a) => a.messageId === 'bad-1'), 'the failing call\'s first attempt');
      const healthy = Array.from({ length: 20 }, (_, i) => ({ type: 'track', userId: 'good', event: 'E', messageId: `good-${i}` }));
      await send(urls[urls.length - 1]!, healthy);
      await waitFor(() => hooks.deliveredOf('good').length === 20, 'the healthy user\'s calls');
      expect(hooks.deliveredOf('good')).to.deep.equal(healthy.map((m) => m.messageId));
      // Still within the failing call's first retry interval: it was tried once, and the call behind it not at all.
      expect(hooks.arrivals.filter((a) => a.user === 'bad').map((a) => a.messageId)).to.deep.equal(['bad-1']);
    });
  }

  it('is set through the admin API, shown with the settings, and the delivery log tells which call one waits behind', async function () {
    const hooks = await receiver((m) => (m.messageId === 'first' ? 503 : 200));
    cleanups.push(() => hooks.close());
    const forwarder = createForwarder({ adminToken: 't', storage: { type: 'memory' }, delivery: { minRetryDelay: 60_000, maxRetryDelay: 60_000 } } as never);
    cleanups.push(() => forwarder.close());
    const { url } = await forwarder.listen({ port: 0, host: '127.0.0.1' });
    const admin = async (path: string, method: string, body?: unknown) => {
      const response = await fetch(`${url}${path}`, { method, headers: { Authorization: 'Bearer t', 'Content-Type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: response.status, json: (await response.json()) as any };
    };
    const { json: created } = await admin('/admin/sources', 'POST', { name: 'app' });
    // A value it does not know is refused, naming the field.
    const bad = await admin('/admin/sources/app/destinations/Webhooks', 'PUT', { webhooks: [{ url: `${hooks.url}/hook` }], ordering: 'session' });
    expect(bad.status).to.equal(400);
    expect(bad.json.error.field).to.equal('ordering');
    const put = await admin('/admin/sources/app/destinations/Webhooks', 'PUT', { webhooks: [{ url: `${hooks.url}/hook` }], ordering: 'user' });
    expect(put.status, JSON.stringify(put.json)).to.equal(200);
    expect(put.json.ordering).to.equal('user');
    expect((await admin('/admin/sources/app', 'GET')).json.destinations.Webhooks.ordering).to.equal('user');
    const sent = await post(`${url}/v1/batch`, { batch: [
      { type: 'identify', userId: 'u', messageId: 'first', traits: {} },
      { type: 'track', userId: 'u', event: 'E', messageId: 'second' },
      { type: 'alias', userId: 'u2', previousId: 'u', messageId: 'third' },
    ] }, { Authorization: basic(created.writeKey) });
    expect(sent.status).to.equal(200);
    await waitFor(() => hooks.arrivals.some((a) => a.messageId === 'first'), 'the first attempt');
    const lines = (await admin('/admin/messages?source=app', 'GET')).json.items as { id: number; messageId: string }[];
    const idOf = (messageId: string) => lines.find((l) => l.messageId === messageId)!.id;
    const second = await admin(`/admin/deliveries/${idOf('second')}`, 'GET');
    expect(second.json.status).to.equal('pending');
    expect(second.json.waitingBehind).to.deep.equal({ id: idOf('first'), messageId: 'first' });
    // An alias follows the calls of its previousId.
    expect((await admin(`/admin/deliveries/${idOf('third')}`, 'GET')).json.waitingBehind.messageId).to.equal('first');
    const first = await admin(`/admin/deliveries/${idOf('first')}`, 'GET');
    expect(first.json.status).to.equal('retrying');
    expect(first.json.waitingBehind).to.equal(null);
    expect(hooks.arrivals.map((a) => a.messageId)).to.deep.equal(['first']);
  });

  it('postgres: two instances as processes, one killed with SIGKILL mid-run: the order holds for every user and nothing acknowledged is lost', async function () {
    const USERS = 30;
    const CALLS = 8;
    const hooks = await receiver(() => 200, 15);
    cleanups.push(() => hooks.close());
    const db = await storage('postgres', () => this.skip());
    const config = {
      storage: { ...db, lease: 3000 },
      delivery: { concurrency: 4, timeout: 2000, minRetryDelay: 50, maxRetryDelay: 100 },
      sources: [{ name: 'web', writeKey: KEY, destinations: { Webhooks: { webhooks: [{ url: `${hooks.url}/hook` }], ordering: 'user' } } }],
    };
    const children: ChildProcess[] = [];
    cleanups.push(async () => {
      killAll(children);
    });
    const start = async (): Promise<{ child: ChildProcess; url: string }> => {
      const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=eventrelay-source', 'packages/forwarder/test/fixtures/serve-in-child.ts', JSON.stringify(config)], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.push(child);
      let out = '';
      child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
      child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
      await waitFor(() => child.exitCode !== null || /listening on (http:\/\/\S+)/.test(out), 'a forwarder to listen', 60_000);
      const url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
      if (url === undefined) throw new Error(`the forwarder did not start:\n${out}`);
      return { child, url };
    };
    const [a, b] = await Promise.all([start(), start()]);
    // Each round a call of every user, through the instances in turn; the victim dies after round 3.
    const acknowledged: string[] = [];
    for (let round = 0; round < CALLS; round++) {
      const target = round >= 3 ? b! : round % 2 === 0 ? a! : b!;
      const batch = Array.from({ length: USERS }, (_, u) => ({ type: 'track', userId: `user-${u}`, event: `Step ${round}`, messageId: `r${round}-${u}` }));
      await send(target.url, batch);
      acknowledged.push(...batch.map((m) => m.messageId));
      if (round === 2) {
        await waitFor(() => hooks.arrivals.length >= USERS, 'deliveries under way');
        a!.child.kill('SIGKILL');
      }
    }
    await waitFor(() => new Set(hooks.arrivals.map((x) => x.messageId)).size === acknowledged.length, 'every acknowledged call delivered', 60_000);
    for (let u = 0; u < USERS; u++) {
      expect(hooks.deliveredOf(`user-${u}`), `user-${u}`).to.deep.equal(Array.from({ length: CALLS }, (_, r) => `r${r}-${u}`));
    }
    expect(hooks.mostInFlight).to.equal(1);
  });
});
