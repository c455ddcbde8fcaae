// The compatibility layers against a real forwarder and a verifying receiver on 127.0.0.1: the
// same code as test/integration/third-party/senders.test.ts runs with Segment's SDKs, only the
// import changed, and every call arrives as the spec's webhook.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { Analytics as SegmentLayer } from '../../packages/eventrelay/src/compat/segment';
import { Analytics as ClassicLayer } from '../../packages/eventrelay/src/compat/analytics-node';
import { createForwarder, type Forwarder } from '../../packages/forwarder/src/service';
import { createWebhookHandler, type WebhookMessage } from '../../packages/eventrelay/src/webhooks';
import { waitFor } from '../../packages/forwarder/test/integration/helpers';

const SECRET = 'compat-secret';
const HISTORICAL = '2024-05-01T10:00:00.000Z';

function calls(prefix: string) {
  const id = (name: string) => `${prefix}-${name}`;
  return [
    {
      method: 'identify',
      params: { messageId: id('identify'), userId: 'u-1', traits: { plan: 'pro' } },
      expected: { type: 'identify', version: 1, userId: 'u-1', traits: { plan: 'pro' } },
    },
    {
      method: 'track',
      params: { messageId: id('track'), userId: 'u-1', event: 'Order Completed', properties: { total: 19.99 } },
      expected: { type: 'track', version: 1, userId: 'u-1', event: 'Order Completed', properties: { total: 19.99 } },
    },
    {
      method: 'track',
      params: { messageId: id('historical'), userId: 'u-1', event: 'Imported', timestamp: new Date(HISTORICAL) },
      expected: { type: 'track', version: 1, userId: 'u-1', event: 'Imported', timestamp: HISTORICAL },
    },
    {
      method: 'page',
      params: { messageId: id('page'), userId: 'u-1', name: 'Pricing', properties: { path: '/pricing' } },
      expected: { type: 'page', version: 1, userId: 'u-1' },
    },
    {
      method: 'screen',
      params: { messageId: id('screen'), userId: 'u-1', name: 'Home' },
      expected: { type: 'screen', version: 1, userId: 'u-1', name: 'Home' },
    },
    {
      method: 'group',
      params: { messageId: id('group'), userId: 'u-1', groupId: 'g-1', traits: { name: 'Acme' } },
      expected: { type: 'group', version: 1, userId: 'u-1', groupId: 'g-1', traits: { name: 'Acme' } },
    },
    {
      method: 'alias',
      params: { messageId: id('alias'), userId: 'u-2', previousId: 'u-1' },
      expected: { type: 'alias', version: 1, 'Previous ID': 'u-1', 'User ID': 'u-2' },
    },
  ] as const;
}

describe('compatibility layers → real forwarder → verifying receiver', function () {
  this.timeout(30_000);
  const received = new Map<string, WebhookMessage>();
  const refused: number[] = [];
  let receiver: Server;
  let forwarder: Forwarder;
  let url: string;

  before(async () => {
    const handle = createWebhookHandler({
      secret: SECRET,
      handler: (message) => {
        const id = (message as { messageId?: string }).messageId;
        if (id !== undefined) received.set(id, message);
      },
      onError: (_error, status) => refused.push(status),
    });
    receiver = createServer((req, res) => void handle(req, res));
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    forwarder = createForwarder({
      storage: { type: 'memory' },
      sources: [{ name: 'backend', writeKey: 'compat-write-key', destinations: { Webhooks: { sharedSecret: SECRET, webhooks: [{ url: hook }] } } }],
    });
    ({ url } = await forwarder.listen({ port: 0 }));
  });

  after(async () => {
    await forwarder.close();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  });

  function expectDelivered(prefix: string): void {
    for (const call of calls(prefix)) {
      const message = received.get(call.params.messageId) as unknown as Record<string, unknown> | undefined;
      expect(message, `${call.params.messageId} arrived`).to.not.equal(undefined);
      expect(message).to.deep.include(call.expected);
      if (call.method === 'alias') expect(message).to.not.have.property('userId');
    }
    expect(refused).to.deep.equal([]);
  }

  it('eventrelay/segment: every call arrives, each callback gets (undefined, ctx)', async () => {
    const analytics = new SegmentLayer({ writeKey: 'compat-write-key', host: url, flushAt: 3, flushInterval: 100, maxRetries: 1 });
    const outcomes: [unknown, string | undefined][] = [];
    for (const call of calls('segment')) {
      (analytics[call.method] as (params: object, cb: (err?: unknown, ctx?: { event: { messageId: string } }) => void) => void)(
        call.params,
        (err, ctx) => outcomes.push([err, ctx?.event.messageId]),
      );
    }
    await analytics.closeAndFlush({ timeout: 10_000 });
    await waitFor(() => calls('segment').every((c) => received.has(c.params.messageId)), 'eventrelay/segment calls to arrive');
    expect(outcomes.map(([err]) => err)).to.deep.equal(calls('segment').map(() => undefined));
    expect(outcomes.map(([, id]) => id).sort()).to.deep.equal(calls('segment').map((c) => c.params.messageId).sort());
    expectDelivered('segment');
  });

  it('eventrelay/analytics-node: every call arrives, flush() resolves with them', async () => {
    const analytics = new ClassicLayer('compat-write-key', { host: url, flushAt: 20, flushInterval: 60_000 });
    analytics.flushed = true;
    for (const call of calls('classic')) (analytics[call.method] as (params: object) => unknown)(call.params);
    const data = await analytics.flush();
    await waitFor(() => calls('classic').every((c) => received.has(c.params.messageId)), 'eventrelay/analytics-node calls to arrive');
    expect(data!.batch.map((m) => m.messageId)).to.deep.equal(calls('classic').map((c) => c.params.messageId));
    expectDelivered('classic');
  });

  it('with enable: false, the classic layer sends nothing to the forwarder', async () => {
    const analytics = new ClassicLayer('compat-write-key', { host: url, enable: false });
    for (const call of calls('disabled')) (analytics[call.method] as (params: object) => unknown)(call.params);
    await analytics.flush();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(calls('disabled').some((c) => received.has(c.params.messageId))).to.equal(false);
  });
});
