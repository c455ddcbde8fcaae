import { describe, it, afterEach } from 'mocha';
import { expect } from 'chai';
import { createForwarder } from '../../src/service';
import type { Forwarder } from '../../src/service';
import { MemoryStore } from '../../src/store/memory/memory';
import type { AcceptedMessage, AcceptResult } from '../../src/store/contract';
import type { AttemptReport } from '../../src/scheduling/queue';
import { ConfigError, EventRelayError } from '../../../eventrelay/src/errors';
import { FakeClock } from '../../../../test/helpers/fake-clock';
import { basic, post, startReceiver, waitFor } from './helpers';
import type { Receiver } from './helpers';

class FailingStore extends MemoryStore {
  override accept(_messages: readonly AcceptedMessage[]): Promise<AcceptResult> {
    return Promise.reject(new Error('disk full'));
  }
}

describe('Forwarder (in process)', () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  async function setup(receiver: Receiver, store = new MemoryStore()): Promise<{ forwarder: Forwarder; url: string; store: MemoryStore }> {
    const forwarder = createForwarder(
      { sources: [{ name: 'web', writeKey: 'k', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/in` }] } } }] },
      { store },
    );
    cleanup.push(() => forwarder.close());
    const { url } = await forwarder.listen({ port: 0 });
    return { forwarder, url, store };
  }

  it('stats().uptime is 0 until delivery starts, then counts from the start on the clock', async () => {
    const clock = new FakeClock(1_000_000);
    const forwarder = createForwarder({ sources: [{ name: 'web', writeKey: 'k' }] }, { store: new MemoryStore() }, { clock });
    cleanup.push(() => forwarder.close());
    expect((await forwarder.stats()).uptime).to.equal(0);
    await forwarder.start();
    clock.skip(2500);
    expect((await forwarder.stats()).uptime).to.equal(2500);
  });

  it('answers 503 with Retry-After when the store fails, so the client retries', async () => {
    const receiver = await startReceiver();
    cleanup.push(() => receiver.close());
    const { url } = await setup(receiver, new FailingStore());
    const response = await post(`${url}/v1/track`, { userId: 'u', event: 'E' }, { Authorization: basic('k') });
    expect(response.status).to.equal(503);
    expect(response.headers.get('retry-after')).to.equal('1');
    expect(JSON.stringify(response.json)).not.to.contain('disk full');
  });

  it('close() waits for the attempt in flight and records it; then refuses connections', async () => {
    const receiver = await startReceiver(300);
    cleanup.push(() => receiver.close());
    const { forwarder, url, store } = await setup(receiver);
    const reports: AttemptReport[] = [];
    forwarder.on('attempt', (r) => reports.push(r));
    await post(`${url}/v1/track`, { userId: 'u', event: 'Slow', messageId: 'slow-1' }, { Authorization: basic('k') });
    await waitFor(() => receiver.requests.length === 1, 'the attempt to start');
    const closing = forwarder.close();
    expect(forwarder.close()).to.equal(closing);
    await closing;
    expect(receiver.delivered).to.have.length(1);
    expect(await store.counts()).to.deep.include({ delivered: 1, pending: 0 });
    expect(reports.map((r) => [r.messageId, r.kind, r.result.status])).to.deep.equal([['slow-1', 'message', 'delivered']]);
    let refused: unknown;
    try {
      await fetch(`${url}/health`);
    } catch (error) {
      refused = error;
    }
    expect(refused).to.be.instanceOf(Error);
  });

  it('listens once, and not after close', async () => {
    const receiver = await startReceiver();
    cleanup.push(() => receiver.close());
    const { forwarder } = await setup(receiver);
    let again: unknown;
    await forwarder.listen({ port: 0 }).catch((error: unknown) => (again = error));
    expect(again).to.be.instanceOf(EventRelayError).with.property('code', 'ERR_ALREADY_LISTENING');
    await forwarder.close();
    let closed: unknown;
    await forwarder.listen({ port: 0 }).catch((error: unknown) => (closed = error));
    expect(closed).to.be.instanceOf(EventRelayError).with.property('code', 'ERR_FORWARDER_CLOSED');
  });

  it('can listen again after the port was taken', async () => {
    const receiver = await startReceiver();
    cleanup.push(() => receiver.close());
    const { url } = await setup(receiver);
    const second = createForwarder({ storage: { type: 'memory' }, sources: [{ name: 'w', writeKey: 'k2' }] });
    cleanup.push(() => second.close());
    let taken: unknown;
    await second.listen({ port: Number(new URL(url).port) }).catch((error: unknown) => (taken = error));
    expect(taken).to.have.property('code', 'EADDRINUSE');
    const { url: other } = await second.listen({ port: 0 });
    expect((await fetch(`${other}/health`)).status).to.equal(200);
  });

  it('names the source in a destination error found at construction', () => {
    expect(() =>
      createForwarder({
        sources: [{ name: 'web', writeKey: 'k', destinations: { Webhooks: { webhooks: [{ url: 'https://e.test/', headers: { 'X-Signature': 'forged' } }] } } }],
      }),
    )
      .to.throw(ConfigError, /`sources\[0\]\.destinations\.Webhooks\.webhooks\[0\]\.headers`/)
      .with.property('field')
      .that.matches(/^sources\[0\]\.destinations\.Webhooks\.webhooks\[0\]\.headers/);
  });

  it('works without the HTTP server: deletion and audience calls are stored, and sent once start() runs', async () => {
    const receiver = await startReceiver();
    cleanup.push(() => receiver.close());
    const forwarder = createForwarder(
      {
        storage: { type: 'memory' },
        sources: [
          { name: 'a', writeKey: 'ka', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/a` }] } } },
          { name: 'b', writeKey: 'kb', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/b` }] } } },
        ],
      },
    );
    cleanup.push(() => forwarder.close());
    expect(forwarder.sources).to.deep.equal(['a', 'b']);
    expect(await forwarder.requestDeletion({ userId: 'gone' })).to.deep.equal({ userId: 'gone', notified: ['a', 'b'], skipped: [] });
    const sync = await forwarder.syncAudience({ source: 'b', audience: 'Power Users', members: ['p1'] });
    expect(sync).to.deep.include({ trait: 'power_users', firstSync: true, sent: 1 });
    expect(await forwarder.stats()).to.deep.include({ queueDepth: 3, delivered: 0, inFlight: 0 });
    // Nothing is delivered before start(): the promise of packages/forwarder/README.md.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(receiver.requests).to.have.length(0);
    await forwarder.start();
    await waitFor(() => receiver.delivered.length === 3, 'three webhooks');
    expect(receiver.delivered.map((r) => `${r.path} ${r.json.type}`).sort()).to.deep.equal(['/a delete', '/b delete', '/b identify']);
  });

  it('refuses at construction a custom store that lacks a capability of the contract, naming it', () => {
    const config = { sources: [{ name: 'w', writeKey: 'k4' }] };
    class WithoutEndpoints extends MemoryStore {
      override readonly endpoints = undefined as never;
    }
    expect(() => createForwarder(config, { store: new WithoutEndpoints() }))
      .to.throw(ConfigError, /lacks `endpoints` \(endpoint states\)/)
      .with.property('field', 'store');
    // A store written against the queue alone (as a custom store could be before): every missing capability is named.
    const memory = new MemoryStore();
    const queueOnly = {
      accept: memory.accept.bind(memory),
      enqueue: memory.enqueue.bind(memory),
      claim: memory.claim.bind(memory),
      nextDueAfter: memory.nextDueAfter.bind(memory),
      record: memory.record.bind(memory),
      syncAudience: memory.syncAudience.bind(memory),
      counts: memory.counts.bind(memory),
      prune: memory.prune.bind(memory),
      close: memory.close.bind(memory),
    };
    let error: unknown;
    try {
      createForwarder(config, { store: queueOnly as never });
    } catch (caught) {
      error = caught;
    }
    expect(error).to.be.instanceOf(ConfigError);
    for (const member of ['setup', 'rateBudget', 'endpoints', 'usage', 'batches', 'shared', 'cluster', 'openLog']) expect((error as Error).message).to.contain(`\`${member}\``);
    // Every capability present: accepted.
    expect(() => createForwarder(config, { store: new MemoryStore() })).not.to.throw();
  });

  it('a failed start is not kept: start() can be tried again, and close() works after a failure', async () => {
    // A store whose registry cannot be read, as an unreachable database's, until `fail` is off.
    class FlakyStore extends MemoryStore {
      fail = true;
      constructor() {
        super();
        const read = this.setup.read.bind(this.setup);
        this.setup.read = () => (this.fail ? Promise.reject(new Error('database down')) : read());
      }
    }
    const store = new FlakyStore();
    const forwarder = createForwarder({ storage: { type: 'memory' }, sources: [{ name: 'w', writeKey: 'k3' }] }, { store });
    let first: unknown;
    await forwarder.start().catch((error: unknown) => (first = error));
    expect(first).to.be.instanceOf(Error).with.property('message', 'database down');
    store.fail = false;
    await forwarder.start();
    expect(await forwarder.stats()).to.deep.include({ queueDepth: 0 });
    await forwarder.close();

    const never = createForwarder({ storage: { type: 'memory' }, sources: [{ name: 'w', writeKey: 'k4' }] }, { store: new FlakyStore() });
    await never.start().catch(() => {});
    await never.close();
  });

  it('an attempt listener that throws is reported as `error`, and delivery goes on', async () => {
    const receiver = await startReceiver();
    cleanup.push(() => receiver.close());
    const { forwarder, url } = await setup(receiver);
    const errors: Error[] = [];
    forwarder.on('attempt', () => {
      throw new Error('listener bug');
    });
    // Without an `error` listener: logged only, nothing thrown, delivery goes on.
    await post(`${url}/v1/track`, { userId: 'u', event: 'E', messageId: 'quiet' }, { Authorization: basic('k') });
    await waitFor(() => receiver.delivered.length === 1, 'the first delivery');
    await waitFor(async () => (await forwarder.stats()).inFlight === 0, 'the slot to be released');
    forwarder.on('error', (error) => errors.push(error));
    for (let i = 0; i < 3; i++) await post(`${url}/v1/track`, { userId: 'u', event: 'E', messageId: `t${i}` }, { Authorization: basic('k') });
    await waitFor(() => receiver.delivered.length === 4 && errors.length === 3, 'three more deliveries and three errors');
    expect((await forwarder.stats()).delivered).to.equal(4);
  });
});
