import { describe, it } from 'mocha';
import { expect } from 'chai';
import pg from 'pg';
import { createForwarder } from '../../src/service';
import type { Forwarder } from '../../src/service';
import type { ForwarderConfig, StorageConfig } from '../../src/config';
import type { Notice } from '../../src/delivery/notify';
import { adminAs, basic, post, startReceiver, useStoreKind, waitFor } from './helpers';
import type { Receiver } from './helpers';
import { FakeClock } from '../../../../test/helpers/fake-clock';

const HOUR = 3_600_000;
const TOKEN = 'endpoint-admin-token';

const admin = adminAs(TOKEN);

for (const kind of ['memory', 'sqlite', 'postgres'] as const) {
  describe(`automatic disable of a failing webhook URL (${kind} store, fake clock)`, function () {
    this.timeout(60_000);
    const { db, cleanup, fresh } = useStoreKind(kind, 'eventrelay-disable-', ['deliveries', 'messages', 'counters', 'sources', 'source_keys', 'endpoint_states']);

    /** A forwarder on an empty store. */
    async function start(receiver: Receiver, clock: FakeClock, extra: Partial<ForwarderConfig> = {}) {
      return open(receiver, clock, await fresh(), extra);
    }

    /** A forwarder on `storage` (another instance, or a restart, on the store of one `start` made). */
    async function open(receiver: Receiver, clock: FakeClock, storage: StorageConfig, extra: Partial<ForwarderConfig> = {}) {
      const forwarder: Forwarder = createForwarder(
        {
          adminToken: TOKEN,
          storage,
          delivery: { minRetryDelay: 10, maxRetryDelay: 10 },
          sources: [
            // Two URLs: `dead` answers 503 to everything, `live` takes each message.
            { name: 'web', writeKey: 'k-web', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/dead?token=t0ken` }, { url: `${receiver.url}/live` }] } } },
            // One URL, for the 410 (final, disables it) and the other 4xx (retried).
            { name: 'solo', writeKey: 'k-solo', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/solo` }] } } },
          ],
          ...extra,
        },
        {},
        { clock },
      );
      const notices: Notice[] = [];
      forwarder.on('endpoint', (n) => notices.push(n));
      // A listener that throws stops nothing: its error is the forwarder's `error` event.
      const errors: Error[] = [];
      forwarder.on('endpoint', () => {
        throw new Error('listener bug');
      });
      forwarder.on('error', (e) => errors.push(e));
      const attempts: string[] = [];
      forwarder.on('attempt', (r) => attempts.push(r.messageId));
      const { url } = await forwarder.listen({ port: 0 });
      return { forwarder, url, notices, attempts, errors, storage };
    }

    /** Sends one call and waits until its attempt is made. */
    async function send(f: { url: string; attempts: string[] }, key: string, messageId: string): Promise<void> {
      expect((await post(`${f.url}/v1/batch`, { batch: [{ type: 'track', userId: 'u', event: 'E', messageId }] }, { Authorization: basic(key) })).status).to.equal(200);
      await waitFor(() => f.attempts.includes(messageId), `the attempt of ${messageId}`);
    }

    it('disables a URL whose every attempt failed for 24 h with 10 attempts; deliveries skip it, the others still deliver', async () => {
      const receiver = await startReceiver();
      cleanup.push(() => receiver.close());
      receiver.failFirst('/dead?token=t0ken', 1_000_000);
      const clock = new FakeClock(Date.parse('2026-03-01T00:00:00.000Z'));
      const f = await start(receiver, clock);
      cleanup.push(() => f.forwarder.close());
      const dead = () => receiver.requests.filter((r) => r.path.startsWith('/dead')).length;
      // Ten messages, three hours apart: each delivered by `live` (any 2xx is enough), each a failure of `dead`.
      for (let i = 0; i < 10; i++) {
        await send(f, 'k-web', `m${i}`);
        if (i < 9) clock.skip(3 * HOUR);
      }
      await waitFor(() => f.notices.length === 1, 'the endpoint event');
      expect(f.notices[0]).to.deep.equal({
        type: 'endpoint.disabled',
        source: 'web',
        url: `${receiver.url}/dead?[redacted]`,
        at: '2026-03-02T03:00:00.000Z',
        lastError: `HTTP 503: ${receiver.url}/dead?[redacted] answered HTTP 503`,
        reason: `Every attempt failed for 27 h (10 attempts since 2026-03-01T00:00:00.000Z); last error: HTTP 503: ${receiver.url}/dead?[redacted] answered HTTP 503`,
      });
      expect(f.errors.map((e) => e.message)).to.deep.equal(['listener bug']);
      expect(receiver.delivered.filter((r) => r.path === '/live')).to.have.length(10);
      expect(dead()).to.equal(10);
      // Skipped from now on; the other URL still delivers.
      await send(f, 'k-web', 'after');
      expect(receiver.delivered.filter((r) => r.path === '/live').map((r) => r.json.messageId)).to.include('after');
      expect(dead()).to.equal(10);
      const shown = await admin(f.url, 'GET', '/admin/sources/web/destinations/Webhooks/endpoints');
      expect(shown.status).to.equal(200);
      expect(shown.json.endpoints.map((e: { url: string; disabled: boolean }) => [e.url, e.disabled])).to.deep.equal([
        [`${receiver.url}/dead?[redacted]`, true],
        [`${receiver.url}/live`, false],
      ]);
      expect(shown.json.endpoints[0].reason).to.match(/^Every attempt failed for 27 h/);
      expect(JSON.stringify(shown.json)).not.to.contain('t0ken');
      const metrics = await (await fetch(`${f.url}/metrics`)).text();
      expect(metrics).to.match(/^eventrelay_endpoints_disabled\{source="web"\} 1$/m);
      expect(metrics).to.match(/^eventrelay_endpoints_disabled\{source="solo"\} 0$/m);

      // Kept in the store: a restart (SQLite) or another instance (PostgreSQL) sees it disabled.
      if (kind !== 'memory') {
        if (kind === 'sqlite') await f.forwarder.close();
        const other = await open(receiver, clock, f.storage);
        cleanup.push(() => other.forwarder.close());
        await waitFor(async () => (await other.forwarder.endpoints('web'))[0]!.disabled, 'the other instance to see it disabled', 3000);
        if (db !== undefined) {
          const client = new pg.Client({ connectionString: db.url });
          await client.connect();
          const { rows } = await client.query('SELECT url, url_key FROM endpoint_states');
          await client.end();
          expect(JSON.stringify(rows)).not.to.contain('t0ken');
        }
      }
    });

    it('a 410 Gone disables the URL at once, with the notice; with every URL disabled, deliveries wait (not failed) until one is enabled through the admin API', async () => {
      const receiver = await startReceiver();
      cleanup.push(() => receiver.close());
      receiver.failFirst('/solo', 1_000_000, 410);
      const clock = new FakeClock(Date.parse('2026-03-01T00:00:00.000Z'));
      const f = await start(receiver, clock);
      cleanup.push(() => f.forwarder.close());
      await send(f, 'k-solo', 's0');
      await waitFor(() => f.notices.some((n) => n.type === 'endpoint.disabled' && n.source === 'solo'), 'solo to be disabled');
      const lastError = `HTTP 410: ${receiver.url}/solo answered HTTP 410 (Gone: final for this URL, not retried)`;
      // The message that got the 410 is given up (its notice), and the URL disabled (its notice).
      expect(f.notices.filter((n) => n.type === 'delivery.exhausted')).to.have.length(1);
      expect(f.notices.filter((n) => n.type !== 'delivery.exhausted')).to.deep.equal([
        {
          type: 'endpoint.disabled',
          source: 'solo',
          url: `${receiver.url}/solo`,
          at: '2026-03-01T00:00:00.000Z',
          lastError,
          reason: `The receiver answered 410 Gone at 2026-03-01T00:00:00.000Z: it takes no more deliveries at this URL; last error: ${lastError}`,
        },
      ]);
      // The message that got the 410 failed for good, at its first attempt.
      await waitFor(async () => (await f.forwarder.stats()).failed === 1, 'the 410 to fail its message');
      expect(await f.forwarder.stats()).to.deep.include({ failed: 1, queueDepth: 0 });
      expect((await post(`${f.url}/v1/batch`, { batch: [{ type: 'track', userId: 'u', event: 'E', messageId: 'waits' }] }, { Authorization: basic('k-solo') })).status).to.equal(200);
      // Rounds of the delivery loop go by (another source delivers) without an attempt at `solo`.
      for (let i = 0; i < 3; i++) await send(f, 'k-web', `probe${i}`);
      expect(receiver.requests.filter((r) => r.path === '/solo')).to.have.length(1);
      const waiting = await f.forwarder.stats();
      expect(waiting).to.deep.include({ queueDepth: 1, failed: 1 });
      const shown = await admin(f.url, 'GET', '/admin/sources/solo/destinations/Webhooks/endpoints');
      expect(shown.json.endpoints[0]).to.deep.include({ disabled: true, failures: 1, lastError });

      receiver.failFirst('/solo', 0);
      const wrong = await admin(f.url, 'POST', '/admin/sources/solo/destinations/Webhooks/endpoints/enable', { url: 'https://elsewhere.example.com/' });
      expect(wrong.status).to.equal(404);
      expect(wrong.json.error.field).to.equal('url');
      const enabled = await admin(f.url, 'POST', '/admin/sources/solo/destinations/Webhooks/endpoints/enable', { url: `${receiver.url}/solo` });
      expect(enabled).to.deep.equal({ status: 200, json: { source: 'solo', url: `${receiver.url}/solo`, wasDisabled: true } });
      await waitFor(() => receiver.delivered.some((r) => r.path === '/solo' && r.json.messageId === 'waits'), 'what waited to be delivered');
      expect(f.notices.at(-1)).to.deep.include({ type: 'endpoint.enabled', source: 'solo', url: `${receiver.url}/solo` });
      const again = await admin(f.url, 'POST', '/admin/sources/solo/destinations/Webhooks/endpoints/enable', { url: `${receiver.url}/solo` });
      expect(again.json.wasDisabled).to.equal(false);
      expect((await f.forwarder.stats()).failed).to.equal(1);
    });

    it('retries a 401, a 400 and a 404 (a receiver without the secret yet, one that deploys) and delivers once it answers 2xx; none disables the URL', async () => {
      const receiver = await startReceiver();
      cleanup.push(() => receiver.close());
      const clock = new FakeClock(Date.parse('2026-03-01T00:00:00.000Z'));
      const f = await start(receiver, clock);
      cleanup.push(() => f.forwarder.close());
      for (const status of [401, 400, 404]) {
        const id = `after-${status}`;
        receiver.failFirst('/solo', 2, status);
        await send(f, 'k-solo', id);
        // Each retry is due 10 ms later (delivery.minRetryDelay and maxRetryDelay 10 ms).
        await waitFor(async () => {
          await clock.tick(10);
          return receiver.delivered.some((r) => r.path === '/solo' && r.json.messageId === id);
        }, `the message after two ${status} answers to be delivered`);
        expect(receiver.requests.filter((r) => r.path === '/solo' && (r.json as { messageId?: string }).messageId === id)).to.have.length(3);
      }
      expect(await f.forwarder.stats()).to.deep.include({ failed: 0 });
      expect(f.notices).to.deep.equal([]);
      const shown = await admin(f.url, 'GET', '/admin/sources/solo/destinations/Webhooks/endpoints');
      expect(shown.json.endpoints[0]).to.deep.include({ disabled: false });
    });
  });
}
