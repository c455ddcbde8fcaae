import { describe, it, before, after, afterEach } from 'mocha';
import { expect } from 'chai';
import pg from 'pg';
import { createForwarder } from '../../src/service';
import type { Forwarder } from '../../src/service';
import { basic, post, readAnswer, startReceiver, waitFor } from './helpers';
import type { Receiver } from './helpers';
import { usePostgres } from '../../../../test/helpers/postgres';
import { useTempDirs } from '../../../../test/helpers/temp-dir';
import { MAX_EVENT_NAME } from '../../src/schema-rules';

const TOKEN = 'schema-admin-token-81c2';

interface Answer {
  status: number;
  json: any;
  text: string;
}

async function call(url: string, method: string, body?: unknown, raw?: string): Promise<Answer> {
  const response = await fetch(url, {
    method,
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${TOKEN}` },
    body: raw ?? (body === undefined ? undefined : JSON.stringify(body)),
  });
  return readAnswer(response);
}

const track = (messageId: string, event: string) => ({ type: 'track', userId: 'u1', event, messageId });

for (const kind of ['memory', 'sqlite', 'postgres'] as const) {
  describe(`a source's schema, usage and per-URL filters (${kind} store)`, function () {
    this.timeout(30_000);
    const db = kind === 'postgres' ? usePostgres() : undefined;
    const tempDir = useTempDirs('eventrelay-schema-');
    let receiver: Receiver;
    let forwarder: Forwarder;
    let url: string;
    let key: string;

    before(async () => {
      receiver = await startReceiver();
    });
    after(async () => {
      await receiver?.close();
    });
    afterEach(async () => {
      await forwarder?.close();
      if (kind === 'postgres') {
        const client = new pg.Client({ connectionString: db!.url });
        await client.connect();
        try {
          await client.query('TRUNCATE messages, deliveries, counters, sources, source_keys, log_messages, source_events, source_usage');
        } finally {
          await client.end();
        }
      }
    });

    /** A forwarder with one source `web` made through the admin API, its Webhooks set to `webhooks` (paths on the receiver). */
    async function start(webhooks: { path: string; filter?: unknown }[]): Promise<void> {
      const storage = kind === 'postgres' ? { type: 'postgres' as const, url: db!.url, poolSize: 4 } : { type: kind };
      forwarder = createForwarder({ adminToken: TOKEN, storage, delivery: { minRetryDelay: 20, maxRetryDelay: 50 } }, { dataDir: tempDir() });
      ({ url } = await forwarder.listen({ port: 0 }));
      const created = await call(`${url}/admin/sources`, 'POST', { name: 'web' });
      key = created.json.writeKey;
      const put = await call(`${url}/admin/sources/web/destinations/Webhooks`, 'PUT', {
        webhooks: webhooks.map((w) => ({ url: `${receiver.url}${w.path}`, ...(w.filter === undefined ? {} : { filter: w.filter }) })),
      });
      expect(put.status, put.text).to.equal(200);
    }

    const ingest = (batch: unknown[]) => post(`${url}/v1/batch`, { batch }, { Authorization: basic(key) });
    const at = (path: string) => receiver.delivered.filter((r) => r.path === path).map((r) => (r.json.messageId ?? `${r.json.type}:${r.json.userId}`) as string);
    const logged = async (messageId: string) => (await call(`${url}/admin/messages?source=web&messageId=${encodeURIComponent(messageId)}`, 'GET')).json.items[0];
    /** Waits until no delivery of the source is pending (each was delivered or failed). */
    const settled = () => waitFor(async () => (await forwarder.stats()).queueDepth === 0, 'the queue to drain');

    it('acknowledges a blocked call (200), never forwards it, logs it filtered with the rule, and counts it', async () => {
      await start([{ path: '/all' }]);
      const set = await call(`${url}/admin/sources/web/schema`, 'PUT', { blockedEvents: ['Spam'], blockedTypes: ['page'] });
      expect(set.json).to.deep.equal({ blockedEvents: ['Spam'], allowedEvents: null, blockedTypes: ['page'] });
      const answer = await ingest([track('b-order', 'Order'), track('b-spam', 'Spam'), { type: 'page', userId: 'u1', name: 'Home', messageId: 'b-page' }]);
      expect(answer.status).to.equal(200);
      expect(answer.json).to.deep.equal({ success: true });
      await waitFor(() => at('/all').includes('b-order'), 'the allowed call');
      await settled();
      expect(at('/all')).to.deep.equal(['b-order']);
      expect(await logged('b-spam')).to.include({ status: 'filtered', reason: 'The source\'s schema blocks the event "Spam" (`blockedEvents`)' });
      expect(await logged('b-page')).to.include({ status: 'filtered', reason: 'The source\'s schema blocks page calls (`blockedTypes`)' });

      // A tracking plan: any track event not in it is blocked too.
      await call(`${url}/admin/sources/web/schema`, 'PUT', { allowedEvents: ['Order'] });
      await ingest([track('p-order', 'Order'), track('p-other', 'Unplanned')]);
      await waitFor(() => at('/all').includes('p-order'), 'the planned call');
      await settled();
      expect(at('/all')).to.deep.equal(['b-order', 'p-order']);
      expect(await logged('p-other')).to.include({ status: 'filtered', reason: 'The event "Unplanned" is not in the source\'s tracking plan (`allowedEvents`)' });

      const schema = (await call(`${url}/admin/sources/web/schema`, 'GET')).json;
      expect(schema).to.deep.include({ source: 'web', blockedEvents: [], allowedEvents: ['Order'], blockedTypes: [], otherEvents: null });
      expect(schema.events.map((e: any) => [e.type, e.event ?? null, e.count, e.blocked])).to.deep.equal([
        ['track', 'Order', 2, false],
        ['page', null, 1, false],
        ['track', 'Spam', 1, true],
        ['track', 'Unplanned', 1, true],
      ]);
      for (const e of schema.events) expect(Date.parse(e.lastSeen)).to.be.at.least(Date.parse(e.firstSeen));

      // The outcomes are counted as their reports come, just after the queue writes them.
      await waitFor(async () => (await call(`${url}/admin/usage?source=web`, 'GET')).json.sources[0].delivered === 2, 'the deliveries counted');
      const usage = (await call(`${url}/admin/usage?source=web`, 'GET')).json;
      const today = new Date().toISOString().slice(0, 10);
      expect(usage).to.have.keys('since', 'until', 'sources');
      expect(usage.until).to.equal(today);
      expect(usage.since).to.match(/^\d{4}-\d{2}-\d{2}$/);
      expect(usage.sources).to.deep.equal([{ source: 'web', received: 5, filtered: 3, rejected: 0, delivered: 2, failed: 0, days: [{ day: today, received: 5, filtered: 3, rejected: 0, delivered: 2, failed: 0 }] }]);
      const metrics = await (await fetch(`${url}/metrics`)).text();
      expect(metrics).to.contain('eventrelay_usage_total{source="web",count="received"} 5');
      expect(metrics).to.contain('eventrelay_usage_total{source="web",count="filtered"} 3');
      expect(metrics).to.contain('eventrelay_filtered_total{source="web",rule="blocked_event"} 1');
      expect(metrics).to.contain('eventrelay_filtered_total{source="web",rule="blocked_type"} 1');
      expect(metrics).to.contain('eventrelay_filtered_total{source="web",rule="tracking_plan"} 1');

      // `{}` removes every control.
      expect((await call(`${url}/admin/sources/web/schema`, 'PUT', {})).json).to.deep.equal({ blockedEvents: [], allowedEvents: null, blockedTypes: [] });
      await ingest([track('r-other', 'Unplanned')]);
      await waitFor(() => at('/all').includes('r-other'), 'the call no control blocks any more');
    });

    it('does not reach back: a call queued before a control blocked its event is delivered', async () => {
      await start([{ path: '/late' }]);
      receiver.failFirst('/late', 1000);
      await ingest([track('q-1', 'Spam')]);
      await waitFor(async () => (await logged('q-1'))?.status === 'retrying', 'the call to wait for a retry');
      await forwarder.setSourceSchema('web', { blockedEvents: ['Spam'] });
      receiver.failFirst('/late', 0);
      await waitFor(() => at('/late').includes('q-1'), 'the queued call delivered');
      // The receiver's answer comes before the outcome is written to the log: read until it is.
      await waitFor(async () => (await logged('q-1'))?.status !== 'retrying', 'the outcome in the delivery log');
      expect((await logged('q-1')).status).to.equal('delivered');
    });

    it('routes each call to exactly the URLs whose filter takes it; a call none takes is filtered; deletions go where `delete` is not left out', async () => {
      await start([
        { path: '/orders', filter: { types: ['track'], events: ['Order Completed'] } },
        { path: '/people', filter: { types: ['identify', 'delete'] } },
        { path: '/tracks', filter: { events: ['Order Completed', 'Signed Up'] } },
      ]);
      await ingest([
        track('f-order', 'Order Completed'),
        track('f-signup', 'Signed Up'),
        track('f-other', 'Viewed'),
        { type: 'identify', userId: 'u1', traits: { plan: 'pro' }, messageId: 'f-identify' },
        { type: 'group', userId: 'u1', groupId: 'g1', messageId: 'f-group' },
      ]);
      await forwarder.requestDeletion({ userId: 'gone-user' });
      await waitFor(() => at('/people').includes('delete:gone-user') && at('/orders').includes('f-order'), 'the deliveries');
      await settled();
      expect(at('/orders')).to.deep.equal(['f-order']);
      expect([...at('/people')].sort()).to.deep.equal(['delete:gone-user', 'f-identify']);
      // `events` narrows track calls alone: identify, group and delete still go to /tracks.
      expect([...at('/tracks')].sort()).to.deep.equal(['delete:gone-user', 'f-group', 'f-identify', 'f-order', 'f-signup']);
      expect(await logged('f-other')).to.include({ status: 'filtered', reason: 'No webhook URL of the source has a filter that takes this call' });
      // Each outcome reaches the delivery log just after the queue wrote it.
      for (const id of ['f-order', 'f-signup', 'f-identify', 'f-group']) await waitFor(async () => (await logged(id))?.status === 'delivered', `${id} delivered in the log`);
      // A test event goes to every URL, whatever its filter.
      const tested = await call(`${url}/admin/sources/web/destinations/Webhooks/test`, 'POST', { type: 'page' });
      expect(tested.json.results.map((r: any) => [r.url, r.status])).to.deep.equal(['/orders', '/people', '/tracks'].map((p) => [`${receiver.url}${p}`, 200]));
      // The filters are shown (they are no secret).
      const shown = (await call(`${url}/admin/sources/web`, 'GET')).json.destinations.Webhooks.webhooks.map((w: any) => w.filter);
      expect(shown).to.deep.equal([{ types: ['track'], events: ['Order Completed'] }, { types: ['identify', 'delete'] }, { events: ['Order Completed', 'Signed Up'] }]);
    });

    it('fails at once, unsent, a queued call no URL takes any more after its filters changed, and logs why', async () => {
      await start([{ path: '/changing', filter: { types: ['track'] } }]);
      receiver.failFirst('/changing', 1000);
      await ingest([track('c-1', 'Order')]);
      await waitFor(async () => (await logged('c-1'))?.status === 'retrying', 'the call to wait for a retry');
      const put = await call(`${url}/admin/sources/web/destinations/Webhooks`, 'PUT', { webhooks: [{ url: `${receiver.url}/changing`, filter: { types: ['identify'] } }] });
      expect(put.status, put.text).to.equal(200);
      await waitFor(async () => (await logged('c-1'))?.status === 'failed', 'the queued call failed');
      expect((await logged('c-1')).reason).to.match(/^Filtered: no webhook URL's filter takes this track message "Order"/);
      await settled();
      expect(at('/changing')).to.deep.equal([]);
      receiver.failFirst('/changing', 0);
    });

    it('holds any-one-2xx over the URLs a call matches: delivered when one of them answers 2xx', async () => {
      await start([
        { path: '/a', filter: { types: ['track'] } },
        { path: '/b', filter: { types: ['track'] } },
        { path: '/c', filter: { types: ['identify'] } },
      ]);
      receiver.failFirst('/a', 1000);
      // /c takes no track call: its answers count for nothing here.
      await ingest([track('o-1', 'Order')]);
      await waitFor(() => at('/b').includes('o-1'), 'the delivery through /b');
      await settled();
      await waitFor(async () => (await logged('o-1'))?.status === 'delivered', 'the outcome in the delivery log');
      expect(receiver.requests.filter((r) => r.path === '/a' && r.json.messageId === 'o-1')).to.have.length(1);
      expect(receiver.requests.filter((r) => r.path === '/c')).to.have.length(0);
      receiver.failFirst('/a', 0);
    });

    it('counts usage: received (filtered included, a repeat not counted again), filtered, rejected, delivered, failed', async () => {
      await start([{ path: '/fails', filter: { types: ['identify'] } }, { path: '/ok', filter: { types: ['track'] } }]);
      // 410 Gone: final for the URL (every other answer is retried), so the call fails at once.
      receiver.failFirst('/fails', 1000, 410);
      const batch = [track('u-1', 'A'), track('u-2', 'A'), { type: 'identify', userId: 'u1', messageId: 'u-3' }, { type: 'page', userId: 'u1', messageId: 'u-4' }, { type: 'track', userId: 'u1', messageId: 'u-bad' }];
      const first = await ingest(batch);
      expect(first.json.rejected).to.have.length(1);
      // The client retries the whole batch: nothing is counted twice but the refused call.
      await ingest(batch);
      await settled();
      await waitFor(async () => {
        const counted = (await forwarder.usage({ source: 'web' })).sources[0]!;
        return counted.delivered + counted.failed === 3;
      }, 'the outcomes counted');
      const usage = (await forwarder.usage({ source: 'web' })).sources[0]!;
      expect(usage).to.include({ source: 'web', received: 4, filtered: 1, rejected: 2, delivered: 2, failed: 1 });
      expect(usage.days).to.have.length(1);
      receiver.failFirst('/fails', 0);
      // A source made again under the name shares none of it.
      await forwarder.deleteSource('web');
      await forwarder.createSource('web');
      expect((await forwarder.usage({ source: 'web' })).sources[0]).to.include({ received: 0, filtered: 0, rejected: 0, delivered: 0, failed: 0 });
      expect((await forwarder.sourceSchema('web')).events).to.deep.equal([]);
    });

    it(`lists names up to ${MAX_EVENT_NAME} characters as sent, script in them included; a longer one is counted apart`, async () => {
      await start([{ path: '/n' }]);
      const script = '<img src=x onerror=alert(1)>';
      await ingest([track('n-1', script), track('n-2', 'Заказ оформлен'), track('n-3', 'x'.repeat(MAX_EVENT_NAME + 1)), track('n-4', 'x'.repeat(10_000))]);
      const schema = await forwarder.sourceSchema('web');
      expect(schema.events.map((e) => e.event).sort()).to.deep.equal([script, 'Заказ оформлен'].sort());
      expect(schema.otherEvents).to.deep.include({ count: 2 });
      // A blocked name of every script, and one with script in it, blocks what it names.
      await forwarder.setSourceSchema('web', { blockedEvents: [script, 'Заказ оформлен'] });
      await ingest([track('n-5', script), track('n-6', 'Заказ оформлен'), track('n-7', 'fine')]);
      await waitFor(() => at('/n').includes('n-7'), 'the allowed call');
      await settled();
      expect(at('/n').filter((id) => ['n-5', 'n-6'].includes(id))).to.deep.equal([]);
    });

    it('refuses bad input with a 4xx naming the field, and loses nothing accepted', async () => {
      await start([{ path: '/keep', filter: { types: ['track'] } }]);
      await call(`${url}/admin/sources/web/schema`, 'PUT', { blockedEvents: ['Spam'] });
      const refused = async (answer: Promise<Answer>, status: number, field?: string) => {
        const got = await answer;
        expect(got.status, got.text).to.equal(status);
        if (field !== undefined) expect(got.json.error.field, got.text).to.equal(field);
      };
      const schema = `${url}/admin/sources/web/schema`;
      const webhooks = `${url}/admin/sources/web/destinations/Webhooks`;
      await refused(call(schema, 'PUT', { allowedEvents: Array.from({ length: 100_000 }, (_, i) => `event-${i}`) }), 400, 'allowedEvents');
      await refused(call(schema, 'PUT', { blockedEvents: ['ok', 'x'.repeat(10_000)] }), 400, 'blockedEvents[1]');
      await refused(call(schema, 'PUT', { blockedTypes: ['delete'] }), 400, 'blockedTypes[0]');
      await refused(call(schema, 'PUT', { blockedEvents: 'Spam' }), 400, 'blockedEvents');
      await refused(call(schema, 'PUT', { blocked: ['Spam'] }), 400, 'blocked');
      await refused(call(schema, 'PUT', undefined, 'not json'), 400);
      await refused(call(schema, 'PATCH', {}), 405);
      await refused(call(`${url}/admin/sources/nope/schema`, 'GET'), 404, 'name');
      await refused(call(`${url}/admin/sources/nope/schema`, 'PUT', {}), 404, 'name');
      await refused(call(webhooks, 'PUT', { webhooks: [{ url: `${receiver.url}/x`, filter: { types: ['purchase'] } }] }), 400, 'webhooks[0].filter.types[0]');
      await refused(call(webhooks, 'PUT', { webhooks: [{ url: `${receiver.url}/x`, filter: { events: ['y'.repeat(10_000)] } }] }), 400, 'webhooks[0].filter.events[0]');
      await refused(call(webhooks, 'PUT', { webhooks: [{ url: `${receiver.url}/x`, filter: { types: ['page'], events: ['A'] } }] }), 400, 'webhooks[0].filter.events');
      await refused(call(`${url}/admin/usage?since=yesterday`, 'GET'), 400, 'since');
      await refused(call(`${url}/admin/usage?source=nope`, 'GET'), 400, 'source');
      await refused(call(`${url}/admin/usage?sources=web`, 'GET'), 400, 'sources');
      await refused(call(`${url}/admin/usage?since=2026-01-02&until=2026-01-01`, 'GET'), 400, 'until');
      await refused(call(`${url}/admin/usage?since=2024-01-01&until=2026-01-01`, 'GET'), 400, 'since');
      // 5 MB: over the 4 MB a schema body may have.
      await refused(call(schema, 'PUT', undefined, JSON.stringify({ blockedEvents: ['x'.repeat(5 * 1024 * 1024)] })), 413);

      // Nothing changed: the controls and the filter hold as before, and calls go as before.
      expect((await call(schema, 'GET')).json).to.deep.include({ blockedEvents: ['Spam'], allowedEvents: null, blockedTypes: [] });
      await ingest([track('k-spam', 'Spam'), track('k-ok', 'Fine'), { type: 'identify', userId: 'u1', messageId: 'k-id' }]);
      await waitFor(() => at('/keep').includes('k-ok'), 'the delivery after bad input');
      await settled();
      expect(at('/keep')).to.deep.equal(['k-ok']);
      expect((await logged('k-id')).status).to.equal('filtered');
    });
  });
}

describe('a source\'s schema and filters in the config file (SQLite, restarts)', function () {
  this.timeout(30_000);
  const tempDir = useTempDirs('eventrelay-schema-config-');
  let receiver: Receiver;
  let forwarder: Forwarder | undefined;
  let url = '';
  let dataDir = '';

  before(async () => {
    receiver = await startReceiver();
  });
  after(async () => {
    await receiver.close();
  });
  afterEach(async () => {
    await forwarder?.close();
    forwarder = undefined;
  });

  async function start(schema: unknown, filter?: unknown): Promise<Forwarder> {
    await forwarder?.close();
    const webhook = { url: `${receiver.url}/file`, ...(filter === undefined ? {} : { filter }) };
    const source = { name: 'web', writeKey: 'file-key', destinations: { Webhooks: { webhooks: [webhook] } }, ...(schema === undefined ? {} : { schema }) };
    forwarder = createForwarder({ adminToken: TOKEN, sources: [source as never], delivery: { minRetryDelay: 20, maxRetryDelay: 50 } }, { dataDir });
    ({ url } = await forwarder.listen({ port: 0 }));
    return forwarder;
  }

  const send = (messageId: string, event: string) => post(`${url}/v1/batch`, { batch: [track(messageId, event)] }, { Authorization: basic('file-key') });
  const arrived = (messageId: string) => waitFor(() => receiver.delivered.some((r) => r.json.messageId === messageId), messageId);

  it('applies the file\'s schema at start, keeps a change made through the API while the file stays the same, and the file\'s once it changes', async () => {
    dataDir = tempDir();
    let f = await start({ blockedEvents: ['From File'] }, { types: ['track'] });
    expect((await f.sourceSchema('web')).blockedEvents).to.deep.equal(['From File']);
    expect((await f.listSources())[0]!.destinations.Webhooks!.webhooks[0]!.filter).to.deep.equal({ types: ['track'] });
    await f.setSourceSchema('web', { blockedEvents: ['From API'] });
    // Same file: the store's version stays.
    f = await start({ blockedEvents: ['From File'] }, { types: ['track'] });
    expect((await f.sourceSchema('web')).blockedEvents).to.deep.equal(['From API']);
    await send('c-1', 'From File');
    await arrived('c-1');
    // The file changed: its entry wins, and the difference says what changed.
    const plan = await f.applySources([{ name: 'web', writeKey: 'file-key', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/file` }] } } }], { dryRun: true });
    expect(plan.text).to.contain('schema removed').and.contain('Webhooks.webhooks[0].filter: types track → none');
    f = await start({ blockedEvents: ['Newer'], blockedTypes: ['identify'] });
    expect(await f.sourceSchema('web')).to.deep.include({ blockedEvents: ['Newer'], allowedEvents: null, blockedTypes: ['identify'] });
    expect((await f.listSources())[0]!.destinations.Webhooks!.webhooks[0]!.filter).to.equal(null);
  });
});
