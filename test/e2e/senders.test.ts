import { createRequire } from 'node:module';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it, before, after, beforeEach } from 'mocha';
import { expect } from 'chai';
import { Analytics as SegmentAnalytics } from '@segment/analytics-node';
import { createWebhookHandler } from '../../packages/eventrelay/src/webhooks';
import type { WebhookMessage } from '../../packages/eventrelay/src/webhooks';
import { createForwarder } from '../../packages/forwarder/src/service';
import type { Forwarder } from '../../packages/forwarder/src/service';
import { waitFor } from '../../packages/forwarder/test/integration/helpers';

const require = createRequire(import.meta.url);
// CommonJS packages without types of their own.
const ClassicAnalytics = require('analytics-node') as new (writeKey: string, options: Record<string, unknown>) => ClassicClient;
type ClassicConstructor = new (writeKey: string, options: Record<string, unknown>) => ClassicClient;
const rudder = require('@rudderstack/rudder-sdk-node') as ClassicConstructor & { default?: ClassicConstructor };
const RudderAnalytics = rudder.default ?? rudder;

interface ClassicClient {
  identify(message: object, callback?: (error?: unknown) => void): unknown;
  track(message: object, callback?: (error?: unknown) => void): unknown;
  page(message: object, callback?: (error?: unknown) => void): unknown;
  screen?(message: object, callback?: (error?: unknown) => void): unknown;
  group(message: object, callback?: (error?: unknown) => void): unknown;
  alias(message: object, callback?: (error?: unknown) => void): unknown;
  flush(callback?: (error?: unknown) => void): Promise<unknown>;
}

const SECRET = 'third-party-secret';
const HISTORICAL = '2024-05-01T10:00:00.000Z';

/** The calls every sender makes, each with its own messageId, and the webhook each must become (spec 2.3). */
function calls(prefix: string) {
  const id = (name: string) => `${prefix}-${name}`;
  return [
    {
      method: 'identify',
      params: { messageId: id('identify'), userId: 'u-1', traits: { plan: 'pro', seats: 3 } },
      expected: { type: 'identify', version: 1, userId: 'u-1', traits: { plan: 'pro', seats: 3 } },
    },
    {
      method: 'track',
      params: { messageId: id('track'), userId: 'u-1', event: 'Order Completed', properties: { total: 19.99 } },
      expected: { type: 'track', version: 1, userId: 'u-1', event: 'Order Completed', properties: { total: 19.99 } },
    },
    {
      method: 'track',
      params: { messageId: id('historical'), userId: 'u-1', event: 'Imported', properties: {}, timestamp: new Date(HISTORICAL) },
      expected: { type: 'track', version: 1, userId: 'u-1', event: 'Imported', timestamp: HISTORICAL },
    },
    {
      method: 'page',
      params: { messageId: id('page'), userId: 'u-1', name: 'Pricing', properties: { path: '/pricing', url: 'https://example.com/pricing' } },
      expected: { type: 'page', version: 1, userId: 'u-1' },
      properties: { path: '/pricing', url: 'https://example.com/pricing' },
    },
    {
      method: 'group',
      params: { messageId: id('group'), userId: 'u-1', groupId: 'g-1', traits: { name: 'Acme', 'number of employees': 12 } },
      expected: { type: 'group', version: 1, userId: 'u-1', groupId: 'g-1', traits: { name: 'Acme', 'number of employees': 12 } },
    },
    {
      method: 'alias',
      params: { messageId: id('alias'), userId: 'u-2', previousId: 'u-1' },
      expected: { type: 'alias', version: 1, 'Previous ID': 'u-1', 'User ID': 'u-2' },
    },
  ] as const;
}

describe('real third-party senders → forwarder → verifying receiver', function () {
  this.timeout(30_000);
  const received = new Map<string, WebhookMessage>();
  const refusedByReceiver: number[] = [];
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
      onError: (_error, status) => refusedByReceiver.push(status),
    });
    receiver = createServer((req, res) => void handle(req, res));
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    forwarder = createForwarder(
      {
        storage: { type: 'memory' },
        sources: [{ name: 'backend', writeKey: 'tp-write-key', destinations: { Webhooks: { sharedSecret: SECRET, webhooks: [{ url: hook }] } } }],
      },
    );
    ({ url } = await forwarder.listen({ port: 0 }));
  });

  after(async () => {
    await forwarder.close();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  });

  beforeEach(() => refusedByReceiver.splice(0));

  function expectDelivered(prefix: string) {
    for (const call of calls(prefix)) {
      const message = received.get(call.params.messageId) as unknown as Record<string, unknown> | undefined;
      expect(message, `${call.params.messageId} arrived`).to.not.equal(undefined);
      expect(message).to.deep.include(call.expected);
      expect(message!.timestamp).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      if (call.method === 'alias') expect(message).to.not.have.property('userId');
      if ('properties' in call) expect(message!.properties).to.deep.include(call.properties);
    }
    expect(refusedByReceiver).to.deep.equal([]);
  }

  it('@segment/analytics-node 3: every call arrives as the spec webhook, historical time kept', async () => {
    const analytics = new SegmentAnalytics({ writeKey: 'tp-write-key', host: url, flushAt: 3, flushInterval: 100, maxRetries: 1 });
    const errors: unknown[] = [];
    for (const call of calls('segment')) {
      (analytics[call.method] as (params: object, cb: (err?: unknown) => void) => void)(call.params, (err) => err && errors.push(err));
    }
    await analytics.closeAndFlush({ timeout: 10_000 });
    await waitFor(() => calls('segment').every((c) => received.has(c.params.messageId)), 'Segment calls to arrive');
    expect(errors).to.deep.equal([]);
    expectDelivered('segment');
  });

  it('classic analytics-node 6: every call arrives as the spec webhook, historical time kept', async () => {
    const analytics = new ClassicAnalytics('tp-write-key', { host: url, flushAt: 3, flushInterval: 100, errorHandler: () => {} });
    for (const call of calls('classic')) {
      (analytics as unknown as Record<string, (params: object) => void>)[call.method]!(call.params);
    }
    await analytics.flush();
    await waitFor(() => calls('classic').every((c) => received.has(c.params.messageId)), 'classic calls to arrive');
    expectDelivered('classic');
  });

  it('@rudderstack/rudder-sdk-node 3: every call arrives; its originalTimestamp becomes the webhook time', async () => {
    const analytics = new RudderAnalytics('tp-write-key', { dataPlaneUrl: url, flushAt: 3, flushInterval: 100, logLevel: 'error' });
    for (const call of calls('rudder')) {
      const params: Record<string, unknown> = { ...call.params };
      // Rudder sends the event time as originalTimestamp and no timestamp.
      if (params.timestamp !== undefined) {
        params.originalTimestamp = params.timestamp;
        delete params.timestamp;
      }
      (analytics as unknown as Record<string, (params: object) => void>)[call.method]!(params);
    }
    await analytics.flush();
    await waitFor(() => calls('rudder').every((c) => received.has(c.params.messageId)), 'Rudder calls to arrive');
    for (const call of calls('rudder')) {
      const message = received.get(call.params.messageId) as unknown as Record<string, unknown>;
      const { timestamp, ...rest } = call.expected as Record<string, unknown>;
      expect(message).to.deep.include(rest);
      if (timestamp !== undefined) {
        // Corrected for the clock skew between the sender's sentAt and the receipt: within a minute of the event time.
        expect(Math.abs(Date.parse(message.timestamp as string) - Date.parse(timestamp as string))).to.be.below(60_000);
      }
    }
    expect(refusedByReceiver).to.deep.equal([]);
  });
});
