import { describe, it } from 'mocha';
import { expect } from 'chai';
import type { Forwarder } from '../../src/service';
import { basic, post, useReceiver, useTwoOnPostgres, waitFor } from './helpers';

/** What the forwarder promises: every instance applies a change within 2 s. */
const APPLIED_WITHIN = 2000;

describe('a source\'s schema with two forwarders on one PostgreSQL database', function () {
  this.timeout(60_000);
  const two = useTwoOnPostgres();
  const receiver = useReceiver();
  let a: Forwarder;
  let b: Forwarder;
  let urlA: string;
  let urlB: string;
  let key: string;
  let source: string;

  /** Both instances, and a source made on A with `webhooks` (paths on the receiver), served by both. */
  async function startBoth(
    webhooks: { path: string; filter?: { types?: string[]; events?: string[] } }[],
    probe: (messageId: string) => Record<string, unknown> = (messageId) => ({ type: 'identify', userId: 'u', messageId }),
  ): Promise<void> {
    ({ a, b, urlA, urlB } = await two.start({ adminToken: 't', delivery: { minRetryDelay: 20, maxRetryDelay: 50 } }));
    source = `two-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
    ({ writeKey: key } = await a.createSource(source));
    await a.setWebhooks(source, { webhooks: webhooks.map((w) => ({ url: `${receiver.url}/${source}${w.path}`, ...(w.filter === undefined ? {} : { filter: w.filter }) })) });
    await waitFor(async () => (await b.listSources()).some((s) => s.name === source && s.destinations.Webhooks !== null) && b.sources.includes(source), 'B to serve the source');
    // B routes with the settings A wrote once a call of it reaches the receiver.
    const probes = new Set<string>();
    await waitFor(async () => {
      if (receiver.delivered.some((r) => r.path.startsWith(`/${source}/`) && probes.has(r.json.messageId as string))) return true;
      const id = `warm-${probes.size}`;
      probes.add(id);
      await send(urlB, [probe(id)]);
      return false;
    }, 'B to deliver with the settings A wrote', 10_000);
  }

  const send = (url: string, batch: Record<string, unknown>[]) => post(`${url}/v1/batch`, { batch }, { Authorization: basic(key) });
  const track = (messageId: string, event: string) => ({ type: 'track', userId: 'u', event, messageId });
  const at = (path: string) => receiver.delivered.filter((r) => r.path === `/${source}${path}`).map((r) => r.json.messageId as string);
  const state = async (forwarder: Forwarder, messageId: string) => {
    const url = forwarder === a ? urlA : urlB;
    const answer = await fetch(`${url}/admin/messages?source=${encodeURIComponent(source)}&messageId=${messageId}`, { headers: { Authorization: 'Bearer t' } });
    return ((await answer.json()) as { items: { status: string; reason: string | null }[] }).items[0];
  };
  const drained = () => waitFor(async () => (await a.stats()).queueDepth === 0, 'the shared queue to drain');

  it('a block set through one instance stops forwarding on both within 2 s, and blocked calls never reach a receiver', async () => {
    await startBoth([{ path: '/all' }]);
    await send(urlA, [track('before-a', 'Spam')]);
    await send(urlB, [track('before-b', 'Spam')]);
    await waitFor(() => at('/all').includes('before-a') && at('/all').includes('before-b'), 'Spam forwarded before the block');

    await a.setSourceSchema(source, { blockedEvents: ['Spam'] });
    // A applies its own write at once; B within 2 s (LISTEN, or its poll of the revision).
    expect((await send(urlA, [track('a-now', 'Spam')])).status).to.equal(200);
    expect(await state(a, 'a-now')).to.include({ status: 'filtered' });
    let n = 0;
    await waitFor(async () => {
      const id = `b-probe-${n++}`;
      expect((await send(urlB, [track(id, 'Spam')])).status).to.equal(200);
      return (await state(b, id))?.status === 'filtered';
    }, 'B to block Spam', APPLIED_WITHIN);

    // From now on no Spam call reaches the receiver, through either instance.
    const blocked: string[] = [];
    for (let i = 0; i < 10; i++) {
      blocked.push(`spam-a-${i}`, `spam-b-${i}`);
      await send(urlA, [track(`spam-a-${i}`, 'Spam'), track(`ok-a-${i}`, 'Fine')]);
      await send(urlB, [track(`spam-b-${i}`, 'Spam'), track(`ok-b-${i}`, 'Fine')]);
    }
    await waitFor(() => ['a', 'b'].every((side) => Array.from({ length: 10 }, (_, i) => `ok-${side}-${i}`).every((id) => at('/all').includes(id))), 'the allowed calls');
    await drained();
    expect(at('/all').filter((id) => blocked.includes(id) || id === 'a-now')).to.deep.equal([]);
    // Each instance logs the calls it accepted (the other reads them once that one's log buffer is written).
    const reason = 'The source\'s schema blocks the event "Spam" (`blockedEvents`)';
    expect(await state(a, 'spam-a-3')).to.include({ status: 'filtered', reason });
    expect(await state(b, 'spam-b-7')).to.include({ status: 'filtered', reason });
  });

  it('counts what both instances received in one picture, and their usage adds up', async () => {
    await startBoth([{ path: '/all', filter: { types: ['track'] } }], (id) => track(id, 'Warm-up'));
    const fromA = Array.from({ length: 30 }, (_, i) => track(`ca-${i}`, i % 3 === 0 ? 'Shared' : 'Only A'));
    const fromB = Array.from({ length: 20 }, (_, i) => track(`cb-${i}`, i % 2 === 0 ? 'Shared' : 'Only B'));
    await send(urlA, fromA);
    await send(urlB, [...fromB, { type: 'page', userId: 'u', messageId: 'cb-page' }, { type: 'track', userId: 'u', messageId: 'cb-bad' }]);
    await drained();
    const expected = { Shared: 20, 'Only A': 20, 'Only B': 10 };
    // Each instance writes its counts within about a second; either one reads them all.
    for (const reader of [a, b]) {
      await waitFor(async () => {
        const counted = Object.fromEntries((await reader.sourceSchema(source)).events.filter((e) => e.type === 'track' && e.event !== 'Warm-up').map((e) => [e.event, e.count]));
        return Object.entries(expected).every(([event, count]) => counted[event] === count) && Object.keys(counted).length === 3;
      }, 'the counts of both instances', 10_000);
    }
    const events = (await b.sourceSchema(source)).events;
    expect(events.find((e) => e.type === 'page')).to.deep.include({ count: 1 });
    // The warm-up calls (as many as it took B to deliver one) are counted as well; their count and
    // the usage are each written within about a second, so both are read again until they agree.
    // A warm-up call B took before it applied the source's URL was filtered (no URL then), not
    // delivered: the receiver tells how many were delivered.
    let warm = 0;
    let warmDelivered = 0;
    let seen = '';
    const agree = async (reader: typeof a) => {
      warm = (await b.sourceSchema(source)).events.find((e) => e.event === 'Warm-up')?.count ?? 0;
      warmDelivered = new Set(receiver.delivered.filter((r) => r.path.startsWith(`/${source}/`) && String(r.json.messageId).startsWith('warm-')).map((r) => r.json.messageId)).size;
      const usage = (await reader.usage({ source })).sources[0];
      seen = `warm-up ${warm} (${warmDelivered} delivered), usage ${JSON.stringify(usage)}`;
      return usage !== undefined && usage.delivered === 50 + warmDelivered && usage.received === 51 + warm && usage.filtered === 1 + warm - warmDelivered;
    };
    // What was read last is in the message should it never agree.
    await waitFor(() => agree(a), 'every delivery counted, as A reads it', 20_000).catch((error: Error) => expect.fail(`${error.message}; last read: ${seen}`));
    await waitFor(() => agree(b), 'every delivery counted, as B reads it', 20_000).catch((error: Error) => expect.fail(`${error.message}; last read: ${seen}`));
    expect(warmDelivered).to.be.at.least(1);
    const usage = (await b.usage({ source })).sources[0]!;
    expect(usage).to.include({ received: 51 + warm, filtered: 1 + warm - warmDelivered, rejected: 1, delivered: 50 + warmDelivered, failed: 0 });
  });

  it('routes each call to exactly the URLs whose filter takes it, whichever instance accepted it', async () => {
    await startBoth([
      { path: '/orders', filter: { types: ['track'], events: ['Order Completed'] } },
      { path: '/people', filter: { types: ['identify'] } },
    ]);
    const orders: string[] = [];
    const people: string[] = [];
    for (const [side, url] of [['a', urlA], ['b', urlB]] as const) {
      for (let i = 0; i < 10; i++) {
        orders.push(`${side}-order-${i}`);
        people.push(`${side}-id-${i}`);
        await send(url, [track(`${side}-order-${i}`, 'Order Completed'), track(`${side}-other-${i}`, 'Viewed'), { type: 'identify', userId: 'u', messageId: `${side}-id-${i}` }]);
      }
    }
    await waitFor(() => orders.every((id) => at('/orders').includes(id)) && people.every((id) => at('/people').includes(id)), 'the routed calls');
    await drained();
    expect([...at('/orders')].sort()).to.deep.equal([...orders].sort());
    expect(at('/people').filter((id) => !id.startsWith('warm-')).sort()).to.deep.equal([...people].sort());
    expect(await state(a, 'a-other-4')).to.include({ status: 'filtered', reason: 'No webhook URL of the source has a filter that takes this call' });
  });
});
