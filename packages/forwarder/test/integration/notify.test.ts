import { describe, it } from 'mocha';
import { expect } from 'chai';
import { createForwarder } from '../../src/service';
import type { Forwarder } from '../../src/service';
import type { Notice } from '../../src/delivery/notify';
import { verifySignature } from '../../../eventrelay/src/webhooks';
import { basic, post, startReceiver, useStoreKind, waitFor } from './helpers';
import type { ReceivedRequest, Receiver } from './helpers';

const TOKEN = 'notify-admin-token';
const NOTIFY_SECRET = 'notify-secret-5e1f';

for (const kind of ['memory', 'sqlite', 'postgres'] as const) {
  describe(`notices to notify.url (${kind} store)`, function () {
    this.timeout(60_000);
    const { cleanup, fresh } = useStoreKind(kind, 'eventrelay-notify-', ['deliveries', 'messages', 'counters', 'sources', 'source_keys', 'endpoint_states']);

    async function start(receiver: Receiver): Promise<{ forwarder: Forwarder; url: string; events: Notice[] }> {
      const storage = await fresh();
      const forwarder = createForwarder({
        adminToken: TOKEN,
        storage,
        // 10 failed attempts over at least 1 ms disable a URL: the rule of 24 h, shortened.
        delivery: { minRetryDelay: 20, maxRetryDelay: 20, disableAfter: 1 },
        notify: { url: `${receiver.url}/notify`, sharedSecret: NOTIFY_SECRET },
        sources: [{ name: 'web', writeKey: 'k-web', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/hook?token=t0ken` }] } } }],
      });
      cleanup.push(() => forwarder.close());
      const events: Notice[] = [];
      forwarder.on('endpoint', (n) => events.push(n));
      const { url } = await forwarder.listen({ port: 0 });
      return { forwarder, url, events };
    }

    const notices = (receiver: Receiver): ReceivedRequest[] => receiver.delivered.filter((r) => r.path === '/notify');

    /** A notice as its receiver checks it: the X-Signature of the exact body, with the shared secret. */
    function verified(request: ReceivedRequest): Notice {
      expect(verifySignature(request.body, request.headers['x-signature'] as string, NOTIFY_SECRET)).to.equal(true);
      expect(verifySignature(request.body, request.headers['x-signature'] as string, 'another-secret')).to.equal(false);
      expect(request.headers['content-type']).to.equal('application/json');
      return JSON.parse(request.body) as Notice;
    }

    it('sends a signed delivery.exhausted notice for a delivery given up, retried like any delivery, and emits it as `endpoint`', async () => {
      const receiver = await startReceiver();
      cleanup.push(() => receiver.close());
      receiver.failFirst('/hook?token=t0ken', 1, 410);
      // The notify URL is down at first: the notice is retried.
      receiver.failFirst('/notify', 2, 503);
      const { url, events } = await start(receiver);
      expect((await post(`${url}/v1/batch`, { batch: [{ type: 'track', userId: 'u', event: 'E', messageId: 'lost-1' }] }, { Authorization: basic('k-web') })).status).to.equal(200);
      const ofType = (type: string) => notices(receiver).filter((n) => (JSON.parse(n.body) as Notice).type === type);
      // A 410 is final: the delivery is given up at its first attempt, and the URL disabled (a notice each).
      await waitFor(() => ofType('delivery.exhausted').length === 1 && ofType('endpoint.disabled').length === 1, 'the notices');
      expect(receiver.requests.filter((r) => r.path === '/notify')).to.have.length(4);
      const notice = verified(ofType('delivery.exhausted')[0]!);
      expect(notice).to.deep.include({ type: 'delivery.exhausted', source: 'web', url: `${receiver.url}/hook?[redacted]`, messageId: 'lost-1', attempts: 1 });
      expect(notice.lastError).to.match(/^No webhook accepted the message and none may be retried: .*answered HTTP 410 \(Gone: final for this URL, not retried\)$/);
      expect(new Date(notice.at).toISOString()).to.equal(notice.at);
      expect(ofType('delivery.exhausted')[0]!.body).not.to.contain('t0ken');
      expect(events.filter((e) => e.type === 'delivery.exhausted')).to.deep.equal([notice]);
      // Notices are not calls of a source: the delivery log has the message only.
      const log = await fetch(`${url}/admin/messages`, { headers: { Authorization: `Bearer ${TOKEN}` } });
      expect(((await log.json()) as { items: { messageId: string }[] }).items.map((m) => m.messageId)).to.deep.equal(['lost-1']);
    });

    it('makes no notice of a notice that fails', async () => {
      const receiver = await startReceiver();
      cleanup.push(() => receiver.close());
      receiver.failFirst('/hook?token=t0ken', 1, 410);
      receiver.failFirst('/notify', 1_000_000, 410);
      const { forwarder, url, events } = await start(receiver);
      expect((await post(`${url}/v1/batch`, { batch: [{ type: 'track', userId: 'u', event: 'E', messageId: 'lost-2' }] }, { Authorization: basic('k-web') })).status).to.equal(200);
      // The message, and its two notices (given up, URL disabled), each refused for good by notify.url.
      await waitFor(async () => (await forwarder.stats()).failed === 3, 'the message and its notices to fail');
      await waitFor(async () => (await forwarder.stats()).queueDepth === 0, 'the queue to drain');
      expect(events.map((e) => e.type).sort()).to.deep.equal(['delivery.exhausted', 'endpoint.disabled']);
      expect(receiver.requests.filter((r) => r.path === '/notify')).to.have.length(2);
    });

    it('sends signed endpoint.disabled and endpoint.enabled notices; a 400 is retried until the URL is disabled, and the message waits, not lost', async () => {
      const receiver = await startReceiver();
      cleanup.push(() => receiver.close());
      receiver.failFirst('/hook?token=t0ken', 1_000_000, 400);
      const { forwarder, url } = await start(receiver);
      expect((await post(`${url}/v1/batch`, { batch: [{ type: 'track', userId: 'u', event: 'E', messageId: 'm0' }] }, { Authorization: basic('k-web') })).status).to.equal(200);
      const ofType = (type: string) => notices(receiver).map(verified).filter((n) => n.type === type);
      await waitFor(() => ofType('endpoint.disabled').length === 1, 'the endpoint.disabled notice');
      expect(ofType('delivery.exhausted')).to.have.length(0);
      const disabled = ofType('endpoint.disabled')[0]!;
      expect(disabled).to.deep.include({ source: 'web', url: `${receiver.url}/hook?[redacted]` });
      expect(disabled.lastError).to.equal(`HTTP 400: ${receiver.url}/hook?[redacted] answered HTTP 400`);
      expect(disabled.reason).to.match(/^Every attempt failed for \d+ s \(\d+ attempts since /);
      expect(receiver.requests.filter((r) => r.path.startsWith('/hook')).length).to.be.at.least(10);
      receiver.failFirst('/hook?token=t0ken', 0);
      await forwarder.enableEndpoint('web', `${receiver.url}/hook?token=t0ken`);
      await waitFor(() => ofType('endpoint.enabled').length === 1, 'the endpoint.enabled notice');
      expect(ofType('endpoint.enabled')[0]).to.deep.include({ source: 'web', url: `${receiver.url}/hook?[redacted]`, lastError: disabled.lastError });
      await waitFor(() => receiver.delivered.some((r) => r.json.messageId === 'm0'), 'the message that waited');
      // Notices count as deliveries in /stats: the message and 2 notices delivered, nothing failed.
      await waitFor(async () => (await forwarder.stats()).queueDepth === 0, 'the queue to drain');
      expect(await forwarder.stats()).to.deep.include({ failed: 0, delivered: 3 });
    });
  });
}
