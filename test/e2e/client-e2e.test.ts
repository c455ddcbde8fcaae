import { describe, it, before, after } from 'mocha';
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Analytics, HttpError } from '../../packages/eventrelay/src/index';
import { createWebhookHandler } from '../../packages/eventrelay/src/webhooks';
import type { WebhookMessage } from '../../packages/eventrelay/src/webhooks';
import { createForwarder } from '../../packages/forwarder/src/service';
import type { Forwarder } from '../../packages/forwarder/src/service';
import { waitFor } from '../../packages/forwarder/test/integration/helpers';

const SECRET = 'e2e-shared-secret';

describe('client → forwarder → receiver (Analytics, createForwarder, createWebhookHandler)', () => {
  const verified: WebhookMessage[] = [];
  const refused: number[] = [];
  let receiver: Server;
  let forwarder: Forwarder;
  let url: string;
  let dataDir: string;

  before(async () => {
    const handle = createWebhookHandler({
      secret: SECRET,
      handler: (message) => {
        verified.push(message);
      },
      onError: (_error, status) => refused.push(status),
    });
    receiver = createServer((req, res) => void handle(req, res));
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    dataDir = mkdtempSync(join(tmpdir(), 'eventrelay-e2e-'));
    forwarder = createForwarder(
      { sources: [{ name: 'backend', writeKey: 'e2e-write-key', destinations: { Webhooks: { sharedSecret: SECRET, webhooks: [{ url: receiverUrl }] } } }] },
      { dataDir },
    );
    ({ url } = await forwarder.listen({ port: 0 }));
  });

  after(async () => {
    await forwarder.close();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('delivers every call type, verified, and not the one with All:false', async () => {
    const analytics = new Analytics({ writeKey: 'e2e-write-key', endpoint: url, flushAt: 4, flushInterval: 50 });
    const errors: unknown[] = [];
    const cb = (error?: unknown) => error && errors.push(error);
    analytics.identify({ userId: 'e2e-user', traits: { email: 'e2e@example.com' } }, cb);
    analytics.track({ userId: 'e2e-user', event: 'E2E Purchased', properties: { amount: 12 } }, cb);
    analytics.page({ userId: 'e2e-user', properties: { path: '/checkout' } }, cb);
    analytics.screen({ userId: 'e2e-user', name: 'Cart' }, cb);
    analytics.group({ userId: 'e2e-user', groupId: 'e2e-team' }, cb);
    analytics.alias({ userId: 'e2e-user', previousId: 'e2e-anon' }, cb);
    analytics.track({ userId: 'e2e-user', event: 'E2E Hidden', integrations: { All: false } }, cb);
    await analytics.closeAndFlush({ timeout: 10_000 });
    expect(errors).to.deep.equal([]);

    await waitFor(() => verified.length >= 6, 'six verified webhooks');
    await waitFor(async () => (await forwarder.stats()).queueDepth === 0, 'an empty queue');
    expect(verified.map((m) => m.type).sort()).to.deep.equal(['alias', 'group', 'identify', 'page', 'screen', 'track']);
    expect(verified.some((m) => m.type === 'track' && m.event === 'E2E Hidden')).to.equal(false);
    expect(refused).to.deep.equal([]);
    const track = verified.find((m) => m.type === 'track');
    expect(track).to.deep.include({ userId: 'e2e-user', event: 'E2E Purchased', properties: { amount: 12 } });
  });

  it('sends gzip bodies the forwarder accepts', async () => {
    const analytics = new Analytics({ writeKey: 'e2e-write-key', endpoint: url, flushAt: 1, gzip: true });
    const errors: unknown[] = [];
    analytics.track({ userId: 'e2e-user', event: 'E2E Gzipped' }, (error) => error && errors.push(error));
    await analytics.closeAndFlush({ timeout: 10_000 });
    expect(errors).to.deep.equal([]);
    await waitFor(() => verified.some((m) => m.type === 'track' && m.event === 'E2E Gzipped'), 'the gzip call');
  });

  it('reports a wrong write key to the callback as a final 401', async () => {
    const analytics = new Analytics({ writeKey: 'not-a-key', endpoint: url, flushAt: 1, maxRetries: 3, minRetryDelay: 10 });
    const failure = await new Promise<unknown>((resolve) => analytics.track({ userId: 'u', event: 'Nope' }, resolve));
    await analytics.closeAndFlush({ timeout: 5000 });
    expect(failure).to.be.instanceOf(HttpError);
    expect(failure).to.include({ status: 401, retryable: false });
  });
});
