import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, it } from 'mocha';
import { expect } from 'chai';
import { verifySignature, verifyStandardWebhook } from '../../../eventrelay/src/webhooks';
import { createForwarder } from '../../src/service';
import type { Forwarder } from '../../src/service';
import type { ForwarderConfig } from '../../src/config';
import { adminAs, basic, post, useInstances, useReceiver, waitFor, withForwarder } from './helpers';
import type { ReceivedRequest, StoreKind } from './helpers';

const TOKEN = 'batch-admin-token';
const SECRET = 'batch-shared-secret';
const admin = adminAs(TOKEN);

/** The calls of a request to a batched URL: its body's array (a request whose body is not one gives none). */
function callsOf(request: ReceivedRequest): { messageId: string; userId?: string; event?: string }[] {
  const value = JSON.parse(request.body) as unknown;
  return Array.isArray(value) ? (value as { messageId: string }[]) : [];
}

for (const kind of ['sqlite', 'postgres'] as const satisfies readonly StoreKind[]) {
  describe(`batched delivery, end to end (${kind}${kind === 'postgres' ? ', two instances' : ''})`, function () {
    this.timeout(60_000);
    const receiver = useReceiver();
    const instances = useInstances(kind, 'eventrelay-batch-');
    let a: Forwarder;
    let urlA: string;
    let urlB: string;

    /** `keep`: extra storage settings (keepDelivered, for a replay of a delivered call). */
    async function start(context: Mocha.Context, keep: object = {}): Promise<void> {
      // On PostgreSQL a short lease: a call whose batch was not stored (a lease lost to the other
      // instance) is claimed again within seconds, not the default 30 s a test would wait out.
      const lease = kind === 'postgres' ? { lease: 6000 } : {};
      ({ a, urlA, urlB } = await instances.start(context, { adminToken: TOKEN, delivery: { minRetryDelay: 20, maxRetryDelay: 50 } }, { ...lease, ...keep }));
    }

    const send = (url: string, writeKey: string, batch: object[]) => post(`${url}/v1/batch`, { batch }, { Authorization: basic(writeKey) });
    const tracks = (prefix: string, n: number, userId = (i: number) => `u${i}`) =>
      Array.from({ length: n }, (_, i) => ({ type: 'track', userId: userId(i), event: `E${i}`, messageId: `${prefix}-${i}` }));

    /** Sets the destination on A and waits until B sends with it (a probe call reaches `probe`), and every probe sent has arrived. */
    async function setWebhooks(source: string, writeKey: string, destination: object, probe: string): Promise<void> {
      const put = await admin(urlA, 'PUT', `/admin/sources/${source}/destinations/Webhooks`, destination);
      expect(put.status, JSON.stringify(put.json)).to.equal(200);
      const probes: string[] = [];
      const arrived = () => new Set(receiver.delivered.filter((r) => r.path === probe).flatMap((r) => (r.body.startsWith('[') ? callsOf(r) : [r.json as { messageId: string }]).map((c) => c.messageId)));
      // A probe every 250 ms at most, not one per poll: a URL batching for 2 s would otherwise get a
      // hundred probes in many batches, each a chance for the two instances to race for their leases.
      let sentAt = 0;
      await waitFor(async () => {
        if (Date.now() - sentAt >= 250) {
          sentAt = Date.now();
          const messageId = `probe-${source}-${probes.length}`;
          probes.push(messageId);
          await send(urlB, writeKey, [{ type: 'track', userId: 'probe', event: 'Probe', messageId }]);
        }
        return probes.some((id) => arrived().has(id));
      }, `instance B to send with the settings of ${source}`, 15_000);
      // Every probe done: none is left to share a batch, or take an answer, with what a test sends
      // next. One B took before it knew the URLs had none to go to: it is logged filtered, never sent.
      await waitFor(async () => {
        const here = arrived();
        if (probes.every((id) => here.has(id))) return true;
        const rows = (await admin(urlA, 'GET', `/admin/messages?source=${source}&limit=100`)).json.items as { messageId: string; status: string }[];
        const filtered = new Set(rows.filter((row) => row.status === 'filtered').map((row) => row.messageId));
        return probes.every((id) => here.has(id) || filtered.has(id));
      }, `the probes of ${source} to arrive or be filtered`, 30_000).catch(async (error: Error) => {
        const here = arrived();
        const rows = (await admin(urlA, 'GET', `/admin/messages?source=${source}&limit=100`)).json.items as { messageId: string; status: string }[];
        const stuck = probes.filter((id) => !here.has(id)).map((id) => `${id}: ${rows.find((r) => r.messageId === id)?.status ?? 'no line'}`);
        throw new Error(`${error.message}; ${probes.length} probes, not arrived: ${stuck.join(', ')}`);
      });
    }

    /** Requests to `path` holding any call whose messageId starts with `prefix`. */
    const requestsOf = (path: string, prefix: string) =>
      receiver.requests.filter((r) => r.path === path && callsOf(r).some((c) => c.messageId.startsWith(prefix)));
    const deliveredIds = (path: string, prefix: string) =>
      receiver.delivered.filter((r) => r.path === path).flatMap((r) => callsOf(r).map((c) => c.messageId)).filter((id) => id.startsWith(prefix));

    it('sends a URL\'s calls as JSON arrays, each in the order accepted and signed over the whole body with both schemes; every call is logged delivered', async function () {
      await start(this, { keepDelivered: 600_000 });
      const { writeKey } = await a.createSource('shop');
      await setWebhooks('shop', writeKey, { sharedSecret: SECRET, signing: 'both', webhooks: [{ url: `${receiver.url}/batch`, batch: { maxEvents: 10, maxWaitMs: 300 } }] }, '/batch');
      expect((await send(urlB, writeKey, tracks('shape', 25))).status).to.equal(200);
      await waitFor(() => deliveredIds('/batch', 'shape-').length === 25, 'the 25 calls');
      const requests = requestsOf('/batch', 'shape-');
      // Fewer requests than calls, none over maxEvents, and the calls in the order they were accepted.
      expect(requests.length).to.be.at.most(13);
      for (const r of requests) expect(callsOf(r).length).to.be.within(1, 10);
      // Every call once; inside each body, in the order accepted (bodies sent at once may arrive in any order).
      expect([...deliveredIds('/batch', 'shape-')].sort()).to.deep.equal(tracks('shape', 25).map((t) => t.messageId).sort());
      for (const r of requests) {
        const indexes = callsOf(r).map((c) => Number(c.messageId.slice('shape-'.length)));
        expect(indexes).to.deep.equal([...indexes].sort((x, y) => x - y));
      }
      for (const r of requests) {
        const headers = r.headers as Record<string, string>;
        expect(headers['content-type']).to.equal('application/json');
        expect(verifySignature(r.body, headers['x-signature']!, SECRET), 'X-Signature over the whole array').to.equal(true);
        expect(verifyStandardWebhook(r.body, headers, SECRET), 'Standard Webhooks over the whole array').to.equal(true);
        expect(headers['webhook-id']).to.match(/^batch_/);
        // Each element is the webhook message the URL would have got alone.
        for (const call of callsOf(r)) expect(call).to.include({ type: 'track', version: 1 });
      }
      await waitFor(async () => {
        const rows = (await admin(urlA, 'GET', '/admin/messages?source=shop&limit=100')).json.items as { messageId: string; status: string }[];
        return rows.filter((row) => row.messageId.startsWith('shape-') && row.status === 'delivered').length === 25;
      }, 'the 25 log lines delivered');
      const row = ((await admin(urlA, 'GET', '/admin/messages?source=shop&messageId=shape-3')).json.items as { id: number }[])[0]!;
      const detail = (await admin(urlA, 'GET', `/admin/deliveries/${row.id}`)).json;
      expect(detail.attemptLog.map((t: { url: string; status: number; outcome: string }) => [t.url, t.status, t.outcome])).to.deep.equal([[`${receiver.url}/batch`, 200, 'delivered']]);
      // A replay queues the call again: it goes in a batch again, and its line shows a second series.
      const replay = await admin(urlA, 'POST', `/admin/deliveries/${row.id}/replay`, {});
      expect(replay.status).to.equal(202);
      await waitFor(() => deliveredIds('/batch', 'shape-3').length === 2, 'the replayed call in a batch');
      await waitFor(async () => {
        const again = (await admin(urlA, 'GET', `/admin/deliveries/${row.id}`)).json;
        return again.status === 'delivered' && again.attemptLog.length === 2 && again.attemptLog[1].series === 2;
      }, 'the replay logged delivered');
    });

    it('retries a failed batch with exactly the same bytes and webhook-id', async function () {
      // Delivered bodies kept a while: the answers are kept and erased with them.
      await start(this, { keepDelivered: 600_000 });
      const { writeKey } = await a.createSource('retry');
      await setWebhooks('retry', writeKey, { sharedSecret: SECRET, signing: 'both', webhooks: [{ url: `${receiver.url}/retry`, batch: { maxEvents: 50, maxWaitMs: 200 } }] }, '/retry');
      receiver.failFirst('/retry', 2, 503, 'queue full, try later');
      expect((await send(urlB, writeKey, tracks('same', 6))).status).to.equal(200);
      await waitFor(() => deliveredIds('/retry', 'same-').length === 6, 'the 6 calls');
      // Per batch (two instances may share the six calls between two batches): every request of it
      // carries the same bytes and signature; the first batch was refused at least once, then taken.
      const requests = requestsOf('/retry', 'same-');
      const first = requests[0]!;
      for (const r of requests.filter((q) => q.headers['webhook-id'] === first.headers['webhook-id'])) {
        expect(r.body).to.equal(first.body);
        expect(r.headers['x-signature']).to.equal(first.headers['x-signature']);
      }
      const again = requests.filter((r) => r.headers['webhook-id'] === first.headers['webhook-id']);
      expect(again.length).to.be.at.least(2);
      expect(receiver.delivered).to.include(again[again.length - 1]);
      expect(requests.length, 'two refusals and a 2xx per batch').to.equal(2 + new Set(requests.map((r) => r.headers['webhook-id'])).size);
      // No call reached the receiver twice in a request that was answered 2xx.
      expect(new Set(deliveredIds('/retry', 'same-')).size).to.equal(deliveredIds('/retry', 'same-').length);
      // Each call's log line shows its batch's attempts, with the receiver's answers (kept with the body).
      // A call of the first batch, the one refused at least once.
      const call = (JSON.parse(first.body) as { messageId: string }[])[0]!.messageId;
      const row = ((await admin(urlA, 'GET', `/admin/messages?source=retry&messageId=${call}`)).json.items as { id: number }[])[0]!;
      let attempts: { status: number; outcome: string; responseBody: string | null }[] = [];
      await waitFor(async () => {
        attempts = (await admin(urlA, 'GET', `/admin/deliveries/${row.id}`)).json.attemptLog;
        return attempts.at(-1)?.outcome === 'delivered';
      }, `the delivered attempt in the log line of ${call}`);
      const refusals = attempts.slice(0, -1);
      expect(refusals.length).to.be.at.least(1);
      expect([...refusals, attempts.at(-1)!].map((t) => [t.status, t.outcome, t.responseBody])).to.deep.equal([
        ...refusals.map(() => [503, 'retry', 'queue full, try later']),
        [200, 'delivered', 'ok'],
      ]);
    });

    it('splits a batch answered 413 into its two halves, same calls in the same order, until it fits', async function () {
      await start(this);
      const { writeKey } = await a.createSource('big');
      await setWebhooks('big', writeKey, { sharedSecret: SECRET, webhooks: [{ url: `${receiver.url}/big`, batch: { maxEvents: 8, maxWaitMs: 2000 } }] }, '/big');
      receiver.failFirst('/big', 2, 413);
      expect((await send(urlB, writeKey, tracks('split', 8))).status).to.equal(200);
      await waitFor(() => deliveredIds('/big', 'split-').length === 8, 'the 8 calls');
      const all = receiver.requests.filter((r) => r.path === '/big');
      const refused = all.filter((r) => !receiver.delivered.includes(r));
      expect(refused.length).to.equal(2);
      // Each refused body of n calls came back as its first ceil(n/2) calls and the rest, byte for byte.
      const bodies = all.map((r) => r.body);
      for (const r of refused) {
        const calls = JSON.parse(r.body) as unknown[];
        if (calls.length < 2) continue;
        const middle = Math.ceil(calls.length / 2);
        const texts = calls.map((c) => JSON.stringify(c));
        expect(bodies).to.include(`[${texts.slice(0, middle).join(',')}]`);
        expect(bodies).to.include(`[${texts.slice(middle).join(',')}]`);
      }
      expect([...deliveredIds('/big', 'split-')].sort()).to.deep.equal(tracks('split', 8).map((t) => t.messageId).sort());
    });

    it('with ordering "user", a user\'s next call waits for the batch holding the earlier one, through a retry', async function () {
      await start(this);
      const { writeKey } = await a.createSource('line');
      await setWebhooks('line', writeKey, { ordering: 'user', webhooks: [{ url: `${receiver.url}/line`, batch: { maxEvents: 20, maxWaitMs: 50 } }] }, '/line');
      receiver.failFirst('/line', 1, 503);
      // Three users, four calls each, in one request: each user's calls in order.
      const calls = Array.from({ length: 12 }, (_, i) => ({ type: 'track', userId: `user-${i % 3}`, event: `Step ${Math.floor(i / 3)}`, messageId: `line-${i}` }));
      expect((await send(urlB, writeKey, calls)).status).to.equal(200);
      await waitFor(() => deliveredIds('/line', 'line-').length === 12, 'the 12 calls');
      for (let user = 0; user < 3; user++) {
        const seen = receiver.delivered.filter((r) => r.path === '/line').flatMap((r) => callsOf(r)).filter((c) => c.userId === `user-${user}` && c.messageId.startsWith('line-'));
        expect(seen.map((c) => c.event), `user-${user}`).to.deep.equal(['Step 0', 'Step 1', 'Step 2', 'Step 3']);
      }
      // Never two calls of one user in one body: the next waits for the batch of the one before.
      for (const r of requestsOf('/line', 'line-')) {
        const users = callsOf(r).map((c) => c.userId);
        expect(new Set(users).size).to.equal(users.length);
      }
    });

    it('mixed with a URL without batch: that URL gets each call alone; a call delivered by either is delivered (any one 2xx)', async function () {
      await start(this);
      const { writeKey } = await a.createSource('mixed');
      await setWebhooks('mixed', writeKey, { webhooks: [{ url: `${receiver.url}/arrays`, batch: { maxEvents: 5, maxWaitMs: 100 } }, { url: `${receiver.url}/single` }] }, '/single');
      receiver.failFirst('/arrays', 1_000, 500);
      expect((await send(urlB, writeKey, tracks('mix', 5))).status).to.equal(200);
      await waitFor(() => receiver.delivered.filter((r) => r.path === '/single' && String(r.json.messageId).startsWith('mix-')).length === 5, 'the 5 single calls');
      for (const r of receiver.requests.filter((q) => q.path === '/single' && String(q.json.messageId).startsWith('mix-'))) expect(r.body.startsWith('{')).to.equal(true);
      await waitFor(async () => {
        const rows = (await admin(urlA, 'GET', '/admin/messages?source=mixed&limit=100')).json.items as { messageId: string; status: string }[];
        return rows.filter((row) => row.messageId.startsWith('mix-') && row.status === 'delivered').length === 5;
      }, 'the 5 calls logged delivered though /arrays fails');
      expect(requestsOf('/arrays', 'mix-').length).to.be.at.least(1);
    });
  });
}

describe('batched delivery from the config file', function () {
  this.timeout(30_000);
  const receiver = useReceiver();

  it('takes `batch` per URL and refuses one out of range, naming the field', async () => {
    const config = {
      storage: { type: 'memory' },
      sources: [{ name: 'cfg', writeKey: 'cfg-key', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/cfg`, batch: { maxEvents: 3, maxWaitMs: 100 } }] } } }],
    } as ForwarderConfig;
    await withForwarder(config, async (url) => {
      const batch = Array.from({ length: 3 }, (_, i) => ({ type: 'track', userId: 'u', event: 'Configured', messageId: `cfg-${i}` }));
      expect((await post(`${url}/v1/batch`, { batch }, { Authorization: basic('cfg-key') })).status).to.equal(200);
      await waitFor(() => receiver.delivered.filter((r) => r.path === '/cfg').flatMap(callsOf).length === 3, 'the 3 calls');
      expect(receiver.delivered.filter((r) => r.path === '/cfg').map((r) => callsOf(r).length)).to.deep.equal([3]);
    });
    expect(() =>
      createForwarder({ storage: { type: 'memory' }, sources: [{ name: 'bad', writeKey: 'bad-key', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/bad`, batch: { maxEvents: 4001 } }] } } }] } as ForwarderConfig),
    ).to.throw(/webhooks\[0\]\.batch\.maxEvents/);
  });
});

describe('batched delivery: health, metrics and recovery (sqlite)', function () {
  this.timeout(30_000);
  const receiver = useReceiver();
  const dirs: string[] = [];

  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('counts a batch as one request in its URL\'s health, request durations and automatic disable; each call counts delivered or failed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'eventrelay-batch-'));
    dirs.push(dir);
    const batched = (path: string) => ({ Webhooks: { webhooks: [{ url: `${receiver.url}${path}`, batch: { maxEvents: 10, maxWaitMs: 5000 } }] } });
    const config = {
      adminToken: TOKEN,
      storage: { type: 'sqlite', dataDir: dir },
      sources: [
        { name: 'one', writeKey: 'one-key', destinations: batched('/one') },
        { name: 'gone', writeKey: 'gone-key', destinations: batched('/gone') },
      ],
    } as ForwarderConfig;
    await withForwarder(config, async (url) => {
      const calls = (prefix: string) => Array.from({ length: 10 }, (_, i) => ({ type: 'track', userId: `u${i}`, event: 'Counted', messageId: `${prefix}-${i}` }));
      receiver.failFirst('/gone', 1, 410);
      expect((await post(`${url}/v1/batch`, { batch: calls('one') }, { Authorization: basic('one-key') })).status).to.equal(200);
      expect((await post(`${url}/v1/batch`, { batch: calls('gone') }, { Authorization: basic('gone-key') })).status).to.equal(200);
      await waitFor(() => receiver.delivered.filter((r) => r.path === '/one').flatMap(callsOf).length === 10, 'the 10 calls to /one');
      await waitFor(async () => (await admin(url, 'GET', '/admin/sources/gone/destinations/Webhooks/endpoints')).json.endpoints[0].disabled === true, '/gone to be disabled');
      // Ten calls, one full batch, one request each.
      expect(receiver.requests.filter((r) => r.path === '/one').map((r) => callsOf(r).length)).to.deep.equal([10]);
      expect(receiver.requests.filter((r) => r.path === '/gone').map((r) => callsOf(r).length)).to.deep.equal([10]);
      let endpoints: { source: string; attempts: number; lastStatus: number; consecutiveFailures: number; successRate: number }[] = [];
      await waitFor(async () => {
        endpoints = (await admin(url, 'GET', '/stats')).json.endpoints;
        return endpoints.length === 2;
      }, 'the health of both URLs');
      const health = (source: string) => endpoints.find((e) => e.source === source)!;
      expect(health('one')).to.include({ attempts: 1, lastStatus: 200, consecutiveFailures: 0, successRate: 1 });
      expect(health('gone')).to.include({ attempts: 1, lastStatus: 410, consecutiveFailures: 1, successRate: 0 });
      const metrics = await (await fetch(`${url}/metrics`, { headers: { Authorization: `Bearer ${TOKEN}` } })).text();
      const value = (line: string) => Number(new RegExp(`^${line.replace(/[{}]/g, '\\$&')} (\\d+(?:\\.\\d+)?)$`, 'm').exec(metrics)?.[1]);
      // Request durations count requests; deliveries and failures count calls.
      expect(value('eventrelay_attempt_duration_seconds_count{source="one"}')).to.equal(1);
      expect(value('eventrelay_attempt_duration_seconds_count{source="gone"}')).to.equal(1);
      expect(value('eventrelay_delivered_total{source="one"}')).to.equal(10);
      expect(value('eventrelay_failed_total{source="gone"}')).to.equal(10);
      expect(value('eventrelay_endpoints_disabled{source="gone"}')).to.equal(1);
    });
  });

  it('recovers the calls of a batch that failed: they go again, in a new batch', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'eventrelay-batch-'));
    dirs.push(dir);
    const config = {
      adminToken: TOKEN,
      storage: { type: 'sqlite', dataDir: dir },
      // No retry: the first failed attempt is final.
      delivery: { retryWindow: 0 },
      sources: [
        {
          name: 'rec',
          writeKey: 'rec-key',
          destinations: { Webhooks: { sharedSecret: SECRET, signing: 'both', webhooks: [{ url: `${receiver.url}/rec`, batch: { maxEvents: 5, maxWaitMs: 5000 } }] } },
        },
      ],
    } as ForwarderConfig;
    await withForwarder(config, async (url) => {
      const since = new Date(Date.now() - 1000).toISOString();
      // The batch fails for good, and with it each of its calls.
      receiver.failFirst('/rec', 1, 503);
      const batch = Array.from({ length: 5 }, (_, i) => ({ type: 'track', userId: `u${i}`, event: 'Recovered', messageId: `rec-${i}` }));
      expect((await post(`${url}/v1/batch`, { batch }, { Authorization: basic('rec-key') })).status).to.equal(200);
      const states = async () => ((await admin(url, 'GET', '/admin/messages?source=rec&limit=10')).json.items as { status: string }[]).map((r) => r.status);
      await waitFor(async () => (await states()).filter((st) => st === 'failed').length === 5, 'the 5 calls failed');
      const recovered = await admin(url, 'POST', '/admin/recover', { source: 'rec', since });
      expect(recovered.status).to.equal(202);
      expect(recovered.json).to.include({ queued: 5 });
      await waitFor(() => receiver.delivered.filter((r) => r.path === '/rec').flatMap(callsOf).length === 5, 'the 5 calls delivered');
      const [failed, again] = receiver.requests.filter((r) => r.path === '/rec');
      expect(callsOf(failed!).map((c) => c.messageId)).to.deep.equal(batch.map((c) => c.messageId));
      expect(callsOf(again!).map((c) => c.messageId)).to.deep.equal(batch.map((c) => c.messageId));
      expect(again!.headers['webhook-id']).to.match(/^batch_/).and.not.equal(failed!.headers['webhook-id']);
      await waitFor(async () => (await states()).every((st) => st === 'delivered'), 'the 5 log lines delivered');
    });
  });
});
