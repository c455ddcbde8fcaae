import { describe, it, before, after, afterEach } from 'mocha';
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { format } from 'node:util';
import createDebug from 'debug';
import pg from 'pg';
import { createForwarder } from '../../src/service';
import type { Forwarder } from '../../src/service';
import type { ForwarderConfig } from '../../src/config';
import { verifySignature } from '../../../eventrelay/src/webhooks';
import { basic, post, readAnswer, useReceiver, waitFor } from './helpers';
import { usePostgres } from '../../../../test/helpers/postgres';
import { useTempDirs } from '../../../../test/helpers/temp-dir';
import { startSink } from '../../../../test/helpers/sink';
import type { ServerResponse } from 'node:http';

const TOKEN = 'admin-token-for-sources-3f9c';
const SECRET = 'shared-secret-for-sources-77ab';
const HEADER_VALUE = 'Bearer header-credential-51de';

interface Answer {
  status: number;
  json: any;
  text: string;
  headers: Headers;
}

/** Everything the tests saw: every answer body and every debug line, scanned for secrets at the end. */
const seen: string[] = [];

/**
 * One admin request. `token` null sends none. Answers that carry a new write key by design (its
 * creation, a rotation) are the only ones left out of the scan (`showsKey`).
 */
async function call(url: string, method: string, body?: unknown, token: string | null = TOKEN, raw?: string | Uint8Array, showsKey = false): Promise<Answer> {
  const headers: Record<string, string> = { 'Content-Type': 'application/json' };
  if (token !== null) headers.Authorization = `Bearer ${token}`;
  const response = await fetch(url, { method, headers, body: raw ?? (body === undefined ? undefined : JSON.stringify(body)) });
  const answer = await readAnswer(response);
  if (!showsKey) seen.push(answer.text);
  return answer;
}

/** A webhook URL as the admin API shows it: `settings` set, the others null. */
function shownUrl(url: string, headerNames: string[], settings: object = {}) {
  return { url, headerNames, rateLimit: null, filter: null, transform: null, batch: null, ...settings };
}

/** A Webhooks destination as the admin API shows it: enabled, signed (X-Signature) with a shared secret, its URLs in order. */
function shownWebhooks(ordering: string, webhooks: object[]) {
  return { enabled: true, signing: 'x-signature', ordering, hasSharedSecret: true, webhooks };
}

function track(messageId: string, extra: Record<string, unknown> = {}) {
  return { type: 'track', userId: 'u1', event: 'Sources Test', messageId, ...extra };
}

type Kind = 'memory' | 'sqlite' | 'postgres';

for (const kind of ['memory', 'sqlite', 'postgres'] as const satisfies readonly Kind[]) {
  describe(`runtime setup of sources through the admin API (${kind} store)`, function () {
    this.timeout(30_000);
    const db = kind === 'postgres' ? usePostgres() : undefined;
    const tempDir = useTempDirs('eventrelay-sources-');
    const receiver = useReceiver();
    let forwarder: Forwarder;
    let url: string;
    let dataDir: string;
    const keys = new Set<string>();
    let restoreLog: (() => void) | undefined;

    before(async () => {
      // Every debug line of the forwarder, to check that no secret is ever logged.
      const previous = createDebug.log;
      createDebug.enable('eventrelay:*');
      createDebug.log = (...args: unknown[]) => {
        seen.push(format(...args));
      };
      restoreLog = () => {
        createDebug.log = previous;
        createDebug.disable();
      };
    });

    after(async () => {
      restoreLog?.();
    });

    async function start(config: Partial<ForwarderConfig> = {}): Promise<void> {
      dataDir = tempDir();
      const storage = kind === 'postgres' ? { type: 'postgres' as const, url: db!.url, poolSize: 4 } : { type: kind };
      forwarder = createForwarder(
        { adminToken: TOKEN, storage, delivery: { minRetryDelay: 20, maxRetryDelay: 50 }, ...config },
        { dataDir },
      );
      ({ url } = await forwarder.listen({ port: 0 }));
    }

    afterEach(async () => {
      await forwarder?.close();
      // Nothing secret in any answer or log line; no write key in the database either.
      const secrets = [TOKEN, SECRET, HEADER_VALUE, 'header-credential-51de', ...keys];
      for (const text of seen.splice(0)) for (const secret of secrets) expect(text, 'an answer or log line').not.to.contain(secret);
      if (kind === 'sqlite') {
        for (const file of readdirSync(dataDir)) {
          const bytes = readFileSync(join(dataDir, file));
          for (const key of keys) expect(bytes.includes(key), `${file} holds a write key`).to.equal(false);
        }
      }
      if (kind === 'postgres') {
        const client = new pg.Client({ connectionString: db!.url });
        await client.connect();
        try {
          const dump = JSON.stringify((await client.query('SELECT * FROM source_keys')).rows);
          for (const key of keys) expect(dump).not.to.contain(key);
          await client.query('TRUNCATE messages, deliveries, audiences, audience_members, counters, sources, source_keys, log_messages, log_attempts');
        } finally {
          await client.end();
        }
      }
    });

    const ingest = (key: string, batch: unknown[]) => post(`${url}/v1/batch`, { batch }, { Authorization: basic(key) });
    const at = (path: string) => receiver.delivered.filter((r) => r.path === path);

    async function createSource(name: string): Promise<string> {
      const created = await call(`${url}/admin/sources`, 'POST', { name }, TOKEN, undefined, true);
      expect(created.status, created.text).to.equal(201);
      keys.add(created.json.writeKey);
      return created.json.writeKey as string;
    }

    async function putWebhooks(name: string, path: string, extra: object = {}): Promise<Answer> {
      return call(`${url}/admin/sources/${encodeURIComponent(name)}/destinations/Webhooks`, 'PUT', {
        enabled: true,
        sharedSecret: SECRET,
        webhooks: [{ url: `${receiver.url}${path}?token=q`, headers: { Authorization: HEADER_VALUE } }],
        ...extra,
      });
    }

    it('creates a source whose generated key (32 random bytes, shown once) is accepted at once, and lists it without the key', async () => {
      await start();
      const key = await createSource('web');
      // wk_ and base64url of 32 bytes.
      expect(key).to.match(/^wk_[A-Za-z0-9_-]{43}$/);
      expect(Buffer.from(key.slice(3), 'base64url')).to.have.length(32);
      const other = await createSource('other');
      expect(other).not.to.equal(key);

      expect((await ingest(key, [track('c1')])).status).to.equal(200);
      expect((await ingest('wk_not-a-key', [track('c2')])).status).to.equal(401);

      const list = await call(`${url}/admin/sources`, 'GET');
      expect(list.status).to.equal(200);
      expect(list.headers.get('cache-control')).to.equal('no-store');
      const web = list.json.sources.find((s: { name: string }) => s.name === 'web');
      expect(web.destinations).to.deep.equal({ Webhooks: null });
      expect(web.writeKeys).to.have.length(1);
      expect(web.writeKeys[0]).to.include({ last4: key.slice(-4), origin: 'api', expiresAt: null });
      expect(list.text).not.to.contain(key);

      const again = await call(`${url}/admin/sources`, 'POST', { name: 'web' });
      expect(again.status).to.equal(409);
      expect(again.json.error).to.include({ code: 'conflict', field: 'name' });
      expect((await call(`${url}/admin/sources/nope`, 'GET')).status).to.equal(404);
      const one = await call(`${url}/admin/sources/web`, 'GET');
      expect(one.status).to.equal(200);
      expect(one.json).to.deep.equal(web);
      // The log is being read (so that the scan after each test means something).
      expect(seen.some((line) => line.includes('source web created'))).to.equal(true);
    });

    it('forwards once Webhooks are PUT: signed, with the static headers; the answer shows no secret, header value or query', async () => {
      await start();
      const key = await createSource('web');
      const put = await putWebhooks('web', '/put');
      expect(put.status, put.text).to.equal(200);
      expect(put.json).to.deep.equal(shownWebhooks('none', [shownUrl(`${receiver.url}/put?[redacted]`, ['Authorization'])]));
      expect((await ingest(key, [track('p1')])).status).to.equal(200);
      await waitFor(() => at('/put?token=q').length === 1, 'the delivery');
      const [delivered] = at('/put?token=q');
      expect(delivered!.json).to.include({ type: 'track', event: 'Sources Test', messageId: 'p1' });
      expect(delivered!.headers.authorization).to.equal(HEADER_VALUE);
      expect(verifySignature(delivered!.body, delivered!.headers['x-signature'] as string, SECRET)).to.equal(true);
    });

    it('PATCH changes only the fields given: URLs by index keep their query, headers and limits; the secret stays unless named', async () => {
      await start();
      const key = await createSource('partial');
      const webhooks = `${url}/admin/sources/partial/destinations/Webhooks`;
      const put = await call(webhooks, 'PUT', {
        sharedSecret: SECRET,
        webhooks: [
          { url: `${receiver.url}/pa?token=q`, headers: { Authorization: HEADER_VALUE, 'X-Drop': 'soon' } },
          { url: `${receiver.url}/pb?token=q`, rateLimit: { perSecond: 100 }, filter: { types: ['track'] } },
        ],
      });
      expect(put.status, put.text).to.equal(200);
      // The second URL first with a header more, the first with one header less, and a new URL.
      const patched = await call(webhooks, 'PATCH', {
        ordering: 'user',
        webhooks: [{ from: 1, headers: { 'X-New': 'new' } }, { from: 0, headers: { 'x-drop': null } }, { url: `${receiver.url}/pc` }],
      });
      expect(patched.status, patched.text).to.equal(200);
      expect(patched.json).to.deep.equal(
        shownWebhooks('user', [
          shownUrl(`${receiver.url}/pb?[redacted]`, ['X-New'], { rateLimit: { perSecond: 100 }, filter: { types: ['track'] } }),
          shownUrl(`${receiver.url}/pa?[redacted]`, ['Authorization']),
          shownUrl(`${receiver.url}/pc`, []),
        ]),
      );
      expect((await call(`${url}/admin/sources/partial`, 'GET')).json.destinations.Webhooks).to.deep.equal(patched.json);
      expect((await ingest(key, [track('pp1')])).status).to.equal(200);
      await waitFor(() => ['/pa?token=q', '/pb?token=q', '/pc'].every((path) => at(path).length === 1), 'a delivery to each URL');
      for (const path of ['/pa?token=q', '/pb?token=q', '/pc']) {
        expect(verifySignature(at(path)[0]!.body, at(path)[0]!.headers['x-signature'] as string, SECRET), path).to.equal(true);
      }
      expect(at('/pa?token=q')[0]!.headers.authorization).to.equal(HEADER_VALUE);
      expect(at('/pa?token=q')[0]!.headers['x-drop']).to.equal(undefined);
      expect(at('/pb?token=q')[0]!.headers['x-new']).to.equal('new');

      // A URL's limit and filter removed with null; the secret removed with null.
      const cleared = await call(webhooks, 'PATCH', { sharedSecret: null, webhooks: [{ from: 0, rateLimit: null, filter: null, transform: null, batch: null }] });
      expect(cleared.status, cleared.text).to.equal(200);
      expect(cleared.json.hasSharedSecret).to.equal(false);
      expect(cleared.json.ordering).to.equal('user');
      expect(cleared.json.webhooks).to.deep.equal([shownUrl(`${receiver.url}/pb?[redacted]`, ['X-New'])]);

      // Refused as a PUT of the whole would be, naming the field; nothing changes.
      const refusedWith = async (answer: Promise<Answer>, status: number, field: string) => {
        const got = await answer;
        expect(got.status, got.text).to.equal(status);
        expect(got.json.error.field, got.text).to.equal(field);
      };
      await refusedWith(call(webhooks, 'PATCH', { webhooks: [{ from: 1 }] }), 400, 'webhooks[0].from');
      await refusedWith(call(webhooks, 'PATCH', { webhooks: [{ from: 0, colour: 'red' }] }), 400, 'webhooks[0].colour');
      await refusedWith(call(webhooks, 'PATCH', { webhooks: [{ from: 0, url: 'ftp://x.test/' }] }), 400, 'webhooks[0].url');
      await refusedWith(call(webhooks, 'PATCH', { signing: 'standard-webhooks' }), 400, 'sharedSecret');
      await refusedWith(call(webhooks, 'PATCH', { colour: 'red' }), 400, 'colour');
      expect((await call(`${url}/admin/sources/partial`, 'GET')).json.destinations.Webhooks).to.deep.equal(cleared.json);
    });

    it('switched off: new calls are not routed, queued deliveries wait (not failed) and go on, their attempts counted on, when switched on', async () => {
      await start();
      const key = await createSource('paused');
      const probeKey = await createSource('probe');
      await putWebhooks('paused', '/paused');
      await putWebhooks('probe', '/probe');
      // Queued and retrying: the receiver is down.
      receiver.failFirst('/paused?token=q', 1_000_000);
      expect((await ingest(key, [track('w1'), track('w2')])).status).to.equal(200);
      await waitFor(() => receiver.requests.filter((r) => r.path === '/paused?token=q').length >= 4, 'a few failed attempts');

      const off = await call(`${url}/admin/sources/paused/destinations/Webhooks`, 'PATCH', { enabled: false });
      expect(off.status, off.text).to.equal(200);
      expect(off.json.enabled).to.equal(false);
      await waitFor(async () => (await forwarder.stats()).inFlight === 0, 'attempts in flight to finish');
      const before = receiver.requests.filter((r) => r.path === '/paused?token=q').length;
      receiver.failFirst('/paused?token=q', 0);
      // A call while off: accepted, logged as filtered, never queued.
      expect((await ingest(key, [track('w3')])).status).to.equal(200);
      // Rounds of the delivery loop go by (another source delivers, one message at a time), and
      // nothing goes to the switched-off destination.
      for (const id of ['x1', 'x2', 'x3']) {
        expect((await ingest(probeKey, [track(id)])).status).to.equal(200);
        await waitFor(() => at('/probe?token=q').some((r) => r.json.messageId === id), `probe ${id}`);
      }
      expect(receiver.requests.filter((r) => r.path === '/paused?token=q')).to.have.length(before);
      // The two waiting deliveries, and no third for the call made while off (probes finish being recorded).
      await waitFor(async () => (await forwarder.stats()).queueDepth === 2, 'the queue to hold the two waiting deliveries');
      expect((await forwarder.stats()).failed).to.equal(0);

      const on = await call(`${url}/admin/sources/paused/destinations/Webhooks`, 'PATCH', { enabled: true });
      expect(on.status).to.equal(200);
      await waitFor(() => at('/paused?token=q').length === 2, 'the waiting deliveries');
      expect(at('/paused?token=q').map((r) => r.json.messageId).sort()).to.deep.equal(['w1', 'w2']);
      await waitFor(async () => (await call(`${url}/admin/messages?source=paused&status=delivered`, 'GET')).json.items.length === 2, 'the log lines');
      const lines = await call(`${url}/admin/messages?source=paused`, 'GET');
      const byId = Object.fromEntries(lines.json.items.map((i: { messageId: string }) => [i.messageId, i]));
      expect(byId.w3.status).to.equal('filtered');
      // The attempts made before the pause still count: the retry window was not started again.
      expect(byId.w1.attempts).to.be.above(2);
      expect(byId.w1.series).to.equal(1);
    });

    it('deletes a source: its key is refused and its queued deliveries are failed, not sent', async () => {
      await start();
      const key = await createSource('doomed');
      await putWebhooks('doomed', '/doomed');
      receiver.failFirst('/doomed?token=q', 1_000_000);
      expect((await ingest(key, [track('d1'), track('d2'), track('d3')])).status).to.equal(200);
      await waitFor(() => receiver.requests.some((r) => r.path === '/doomed?token=q'), 'an attempt');
      const removed = await call(`${url}/admin/sources/doomed`, 'DELETE');
      expect(removed.status, removed.text).to.equal(200);
      expect(removed.json.name).to.equal('doomed');
      expect(removed.json.failedDeliveries).to.be.within(2, 3);
      expect((await ingest(key, [track('d4')])).status).to.equal(401);
      expect((await call(`${url}/admin/sources/doomed`, 'GET')).status).to.equal(404);
      await waitFor(async () => (await forwarder.stats()).inFlight === 0, 'attempts in flight to finish');
      const stats = await forwarder.stats();
      expect(stats.queueDepth).to.equal(0);
      expect(stats.failed).to.equal(3);
      receiver.failFirst('/doomed?token=q', 0);
      expect(at('/doomed?token=q')).to.have.length(0);
      // The delivery log says so: each line failed with why, none left open.
      const lines = await call(`${url}/admin/messages?source=doomed`, 'GET');
      expect(lines.json.items.map((i: { status: string; reason: string }) => [i.status, i.reason])).to.deep.equal(
        Array.from({ length: 3 }, () => ['failed', 'The source was deleted before this delivery was made']),
      );
      // A source made again under the name is another source: neither recover nor replay sends it the old one's calls.
      await createSource('doomed');
      expect((await call(`${url}/admin/sources/doomed/destinations/Webhooks`, 'PATCH', { enabled: true })).status).to.equal(404);
      await putWebhooks('doomed', '/doomed');
      const recovered = await call(`${url}/admin/recover`, 'POST', { source: 'doomed', since: 0 });
      expect(recovered.status, recovered.text).to.equal(202);
      expect(recovered.json.queued).to.equal(0);
      const replayed = await call(`${url}/admin/deliveries/${lines.json.items[0].id}/replay`, 'POST');
      expect(replayed.status, replayed.text).to.equal(409);
      expect(replayed.json.error.message).to.contain('the source that sent it was deleted');
      expect((await forwarder.stats()).queueDepth).to.equal(0);
      expect(at('/doomed?token=q')).to.have.length(0);
    });

    it('an attempt in flight when its source is deleted leaves its line failed, even once the name is made again', async () => {
      // The receiver holds the request until the source is gone and made again, then answers 500.
      const held: ServerResponse[] = [];
      const sink = await startSink((_request, res) => void held.push(res));
      try {
        await start();
        const key = await createSource('gone');
        const put = await call(`${url}/admin/sources/gone/destinations/Webhooks`, 'PUT', { webhooks: [{ url: `${sink.url}/held` }] });
        expect(put.status, put.text).to.equal(200);
        expect((await ingest(key, [track('g1')])).status).to.equal(200);
        await waitFor(() => held.length === 1, 'the attempt to reach the receiver');
        expect((await call(`${url}/admin/sources/gone`, 'DELETE')).json.failedDeliveries).to.equal(1);
        await createSource('gone');
        expect((await call(`${url}/admin/sources/gone/destinations/Webhooks`, 'PUT', { webhooks: [{ url: `${sink.url}/held` }] })).status).to.equal(200);
        held[0]!.writeHead(500).end();
        // The attempt is counted once its outcome has been through the store and the log.
        await waitFor(async () => (await forwarder.stats()).endpoints.some((e) => e.attempts === 1), 'the attempt to be counted');
        const lines = await call(`${url}/admin/messages?source=gone`, 'GET');
        expect(lines.json.items.map((i: { status: string; reason: string }) => [i.status, i.reason])).to.deep.equal([
          ['failed', 'The source was deleted before this delivery was made'],
        ]);
        expect((await forwarder.stats()).queueDepth).to.equal(0);
      } finally {
        for (const res of held) if (!res.writableEnded) res.destroy();
        await forwarder.close();
        await sink.close();
      }
    });

    it('rotates a key: the new one works at once, the old one for graceSeconds, then never', async () => {
      await start();
      const first = await createSource('rot');
      const rotated = await call(`${url}/admin/sources/rot/write-keys`, 'POST', { graceSeconds: 3600 }, TOKEN, undefined, true);
      expect(rotated.status, rotated.text).to.equal(201);
      keys.add(rotated.json.writeKey);
      expect(rotated.json.writeKey).to.match(/^wk_/).and.not.equal(first);
      expect((await ingest(rotated.json.writeKey, [track('r1')])).status).to.equal(200);
      expect((await ingest(first, [track('r2')])).status).to.equal(200);
      const listed = await call(`${url}/admin/sources/rot/write-keys`, 'GET');
      expect(listed.json.keys.map((k: { last4: string }) => k.last4)).to.deep.equal([first.slice(-4), rotated.json.writeKey.slice(-4)]);
      expect(listed.json.keys[0].expiresAt).to.equal(rotated.json.previousKeysExpireAt);
      expect(listed.text).not.to.contain(first);

      // A tiny grace: the older keys stop once it ends.
      const again = await call(`${url}/admin/sources/rot/write-keys`, 'POST', { graceSeconds: 1 }, TOKEN, undefined, true);
      keys.add(again.json.writeKey);
      await waitFor(async () => (await ingest(rotated.json.writeKey, [track(`r-${Date.now()}`)])).status === 401, 'the old key to be refused', 10_000);
      expect((await ingest(first, [track('r3')])).status).to.equal(401);
      expect((await ingest(again.json.writeKey, [track('r4')])).status).to.equal(200);
      // The default grace is a day.
      const daily = await call(`${url}/admin/sources/rot/write-keys`, 'POST', undefined, TOKEN, undefined, true);
      keys.add(daily.json.writeKey);
      expect(Date.parse(daily.json.previousKeysExpireAt) - Date.now()).to.be.within(86_390_000, 86_400_000);
    });

    it('sends a signed test event to every URL and answers each one\'s status and time, queueing nothing', async () => {
      await start();
      await createSource('tested');
      receiver.failFirst('/down', 1, 503);
      const put = await call(`${url}/admin/sources/tested/destinations/Webhooks`, 'PUT', {
        enabled: false,
        sharedSecret: SECRET,
        webhooks: [{ url: `${receiver.url}/up` }, { url: `${receiver.url}/down` }],
      });
      expect(put.status).to.equal(200);
      const accepted = (await forwarder.stats()).accepted;
      const test = await call(`${url}/admin/sources/tested/destinations/Webhooks/test`, 'POST', { type: 'identify' });
      expect(test.status, test.text).to.equal(200);
      expect(test.json).to.include({ type: 'identify', delivered: true });
      expect(test.json.results.map((r: { url: string; status: number }) => [r.url, r.status])).to.deep.equal([
        [`${receiver.url}/up`, 200],
        [`${receiver.url}/down`, 503],
      ]);
      for (const r of test.json.results) expect(r.durationMs).to.be.a('number').and.at.least(0);
      const sample = receiver.requests.find((r) => r.path === '/up' && r.json.messageId === test.json.messageId)!;
      expect(sample.json).to.include({ type: 'identify', userId: 'test-user' });
      expect(verifySignature(sample.body, sample.headers['x-signature'] as string, SECRET)).to.equal(true);
      expect((await forwarder.stats()).accepted).to.equal(accepted);
      const bad = await call(`${url}/admin/sources/tested/destinations/Webhooks/test`, 'POST', { type: 'bogus' });
      expect(bad.status).to.equal(400);
      expect(bad.json.error.field).to.equal('type');
    });

    it('refuses bad input with a 4xx naming the field, and loses nothing', async () => {
      await start();
      const key = await createSource('keep');
      await putWebhooks('keep', '/keep');
      const refusedWith = async (answer: Promise<Answer>, status: number, field?: string) => {
        const got = await answer;
        expect(got.status, got.text).to.equal(status);
        if (field !== undefined) expect(got.json.error.field, got.text).to.equal(field);
      };
      const webhooks = `${url}/admin/sources/keep/destinations/Webhooks`;
      await refusedWith(call(`${url}/admin/sources`, 'POST', { name: 5 }), 400, 'name');
      await refusedWith(call(`${url}/admin/sources`, 'POST', { name: 'x'.repeat(10_000) }), 400, 'name');
      await refusedWith(call(`${url}/admin/sources`, 'POST', { name: 'a\nb' }), 400, 'name');
      await refusedWith(call(`${url}/admin/sources`, 'POST', { name: 'ok', writeKey: 'mine' }), 400, 'writeKey');
      await refusedWith(call(`${url}/admin/sources/${'y'.repeat(10_000)}`, 'GET'), 400, 'name');
      await refusedWith(call(`${url}/admin/sources/%E0%A4%A`, 'GET'), 400, 'name');
      await refusedWith(call(webhooks, 'PUT', { webhooks: 'https://x.test' }), 400, 'webhooks');
      await refusedWith(call(webhooks, 'PUT', { webhooks: Array.from({ length: 6 }, (_, i) => ({ url: `https://h${i}.test/` })) }), 400, 'webhooks');
      await refusedWith(call(webhooks, 'PUT', { webhooks: [{ url: 'ftp://x.test/' }] }), 400, 'webhooks[0].url');
      await refusedWith(call(webhooks, 'PUT', { webhooks: [{ url: 'https://x.test/', headers: { Host: 'y' } }] }), 400, 'webhooks[0].headers["Host"]');
      await refusedWith(call(webhooks, 'PUT', { webhooks: [{ url: 'https://x.test/' }], enabled: 'yes' }), 400, 'enabled');
      await refusedWith(call(webhooks, 'PUT', { webhooks: [{ url: 'https://x.test/' }], colour: 'red' }), 400, 'colour');
      await refusedWith(call(webhooks, 'PUT', { webhooks: [{ url: 'https://x.test/' }], sharedSecret: { env: 'HOME' } }), 400, 'sharedSecret');
      await refusedWith(call(webhooks, 'PUT', { webhooks: [{ url: 'https://x.test/' }], signing: 'standard-webhooks' }), 400, 'sharedSecret');
      await refusedWith(call(webhooks, 'PATCH', { enabled: 'no' }), 400, 'enabled');
      await refusedWith(call(webhooks, 'PATCH', { enabled: false, webhooks: [] }), 400, 'webhooks');
      await refusedWith(call(`${url}/admin/sources/keep/write-keys`, 'POST', { graceSeconds: -1 }), 400, 'graceSeconds');
      await refusedWith(call(`${url}/admin/sources/keep/write-keys`, 'POST', { graceSeconds: '60' }), 400, 'graceSeconds');
      await refusedWith(call(webhooks, 'PUT', undefined, TOKEN, 'not json'), 400);
      await refusedWith(call(webhooks, 'PUT', [1, 2]), 400);
      await refusedWith(call(webhooks, 'DELETE'), 405);
      await refusedWith(call(`${url}/admin/sources`, 'GET', undefined, 'wrong-token'), 401);
      await refusedWith(call(`${url}/admin/sources`, 'GET', undefined, null), 401);
      // 20 MB: refused with 413, the connection closed after it.
      const huge = await call(webhooks, 'PUT', undefined, TOKEN, new Uint8Array(20 * 1024 * 1024).fill(0x20));
      expect(huge.status).to.equal(413);

      // Nothing was lost: the source, its key and its destination work as before.
      const list = await call(`${url}/admin/sources`, 'GET');
      expect(list.json.sources.map((s: { name: string }) => s.name)).to.deep.equal(['keep']);
      expect(list.json.sources[0].destinations.Webhooks.webhooks).to.deep.equal([shownUrl(`${receiver.url}/keep?[redacted]`, ['Authorization'])]);
      expect((await ingest(key, [track('k1')])).status).to.equal(200);
      await waitFor(() => at('/keep?token=q').length === 1, 'the delivery after bad input');
    });

    it('checks a key rotation, a test event, a new source and settings by their routes\' schemas: every problem at once, each naming its field', async () => {
      await start();
      await createSource('schemed');
      const problemsOf = async (answer: Promise<Answer>): Promise<string[]> => {
        const got = await answer;
        expect(got.status, got.text).to.equal(400);
        expect(got.json.error.code).to.equal('invalid_request');
        return got.json.error.problems.map((p: { field: string }) => p.field).sort();
      };
      // Past 30 days: the route's schema says the bound, and names the field beside any other problem.
      const tooLong = await call(`${url}/admin/sources/schemed/write-keys`, 'POST', { graceSeconds: 31 * 86_400 });
      expect(tooLong.status, tooLong.text).to.equal(400);
      expect(tooLong.json.error.field).to.equal('graceSeconds');
      expect(tooLong.json.error.problems).to.deep.equal([{ field: 'graceSeconds', message: 'Expected `graceSeconds` to be an integer from 0 to 2592000, got `2678400` (number)' }]);
      expect(await problemsOf(call(`${url}/admin/sources/schemed/write-keys`, 'POST', { graceSeconds: 31 * 86_400, colour: 'red' }))).to.deep.equal(['colour', 'graceSeconds']);
      expect(await problemsOf(call(`${url}/admin/sources/schemed/destinations/Webhooks/test`, 'POST', { type: 'bogus', colour: 'red' }))).to.deep.equal(['colour', 'type']);
      expect(await problemsOf(call(`${url}/admin/sources`, 'POST', { name: 5, colour: 'red' }))).to.deep.equal(['colour', 'name']);
      expect(await problemsOf(call(`${url}/admin/sources/schemed/settings`, 'PUT', { allowedOrigins: 'x', colour: 'red' }))).to.deep.equal(['allowedOrigins', 'colour']);
      // Exactly 30 days is taken; the programmatic facade, which no route checks, refuses past it as before.
      const thirty = await call(`${url}/admin/sources/schemed/write-keys`, 'POST', { graceSeconds: 30 * 86_400 }, TOKEN, undefined, true);
      expect(thirty.status, thirty.text).to.equal(201);
      keys.add(thirty.json.writeKey);
      let error: unknown;
      await forwarder.rotateWriteKey('schemed', { graceSeconds: 31 * 86_400 }).catch((e: unknown) => (error = e));
      expect(error).to.have.property('field', 'graceSeconds');
      // Nothing refused was made.
      expect((await call(`${url}/admin/sources`, 'GET')).json.sources.map((s: { name: string }) => s.name)).to.deep.equal(['schemed']);
    });

    it('answers 403 on every setup route when no adminToken is set', async () => {
      await start({ adminToken: undefined });
      expect((await call(`${url}/admin/sources`, 'GET')).status).to.equal(403);
      expect((await call(`${url}/admin/sources`, 'POST', { name: 'x' })).status).to.equal(403);
    });
  });
}
