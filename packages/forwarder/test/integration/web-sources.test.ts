import { describe, it, before, after } from 'mocha';
import { expect } from 'chai';
import { createForwarder } from '../../src/service';
import type { Forwarder } from '../../src/service';
import { MemoryStore } from '../../src/store/memory/memory';
import type { ForwarderConfig } from '../../src/config';
import { PREFLIGHT_MAX_AGE } from '../../src/http/browser';
import { basic, flood, send, startReceiver, waitFor } from './helpers';
import type { Receiver } from './helpers';

const ADMIN = 'admin-token-for-web-tests';
const SHOP = 'https://shop.example';
const EVIL = 'https://evil.example';

describe('sources of every type: browsers and apps (memory store, 127.0.0.1)', function () {
  this.timeout(60_000);
  let receiver: Receiver;
  let forwarder: Forwarder;
  let url: string;

  before(async () => {
    receiver = await startReceiver();
    const config: ForwarderConfig = {
      adminToken: ADMIN,
      storage: { type: 'memory' },
      delivery: { minRetryDelay: 20, maxRetryDelay: 100 },
      sources: [
        {
          name: 'web',
          writeKey: 'key-web',
          allowedOrigins: [SHOP, 'http://localhost:3000'],
          destinations: { Webhooks: { sharedSecret: 'secret-web', webhooks: [{ url: `${receiver.url}/web` }] } },
        },
        { name: 'server', writeKey: 'key-server', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/server` }] } } },
        { name: 'anywhere', writeKey: 'key-anywhere', allowedOrigins: ['*'], destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/anywhere` }] } } },
      ],
    };
    forwarder = createForwarder(config, { store: new MemoryStore() });
    ({ url } = await forwarder.listen({ port: 0 }));
  });

  after(async () => {
    await forwarder?.close();
    await receiver?.close();
  });

  const delivered = (path: string, messageId: string) => receiver.delivered.filter((r) => r.path === path && r.json.messageId === messageId);
  const id = (label: string) => `${label}-${Math.random().toString(36).slice(2)}`;

  describe('the paths and bodies Segment\'s libraries send', () => {
    const letters = { i: 'identify', t: 'track', p: 'page', s: 'screen', g: 'group', a: 'alias' } as const;
    const calls: Record<string, Record<string, unknown>> = {
      identify: { userId: 'u1', traits: { plan: 'pro' } },
      track: { userId: 'u1', event: 'Clicked' },
      page: { userId: 'u1', name: 'Home', properties: { path: '/' } },
      screen: { userId: 'u1', name: 'Home' },
      group: { userId: 'u1', groupId: 'g1' },
      alias: { userId: 'u2', previousId: 'u1' },
    };

    for (const [letter, type] of Object.entries(letters)) {
      it(`/v1/${letter} takes a ${type} as analytics.js sends it: text/plain JSON with writeKey, sentAt and _metadata, none of them forwarded`, async () => {
        const messageId = id(letter);
        const body = { ...calls[type], type, messageId, writeKey: 'key-web', sentAt: new Date().toISOString(), _metadata: { bundled: ['Segment.io'], unbundled: [] } };
        const answer = await send(`${url}/v1/${letter}`, { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: JSON.stringify(body) });
        expect(answer.status, answer.text).to.equal(200);
        await waitFor(() => delivered('/web', messageId).length === 1, `the ${type} to arrive`);
        const received = delivered('/web', messageId)[0]!;
        expect(received.json.type).to.equal(type);
        expect(received.body).to.not.contain('writeKey').and.not.contain('key-web').and.not.contain('_metadata').and.not.contain('sentAt');
      });
    }

    it('/v1/b takes a batch with the key in the body (React Native, Swift, Kotlin), and with Basic auth', async () => {
      const inBody = id('b-body');
      const withAuth = id('b-auth');
      const a = await send(`${url}/v1/b`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json; charset=utf-8' },
        body: JSON.stringify({ batch: [{ type: 'track', userId: 'u1', event: 'Opened', messageId: inBody }], sentAt: new Date().toISOString(), writeKey: 'key-server' }),
      });
      const b = await send(`${url}/v1/b`, {
        method: 'POST',
        headers: { 'Content-Type': 'text/plain', Authorization: basic('key-server') },
        body: JSON.stringify({ batch: [{ type: 'track', userId: 'u1', event: 'Opened', messageId: withAuth }] }),
      });
      expect([a.status, b.status]).to.deep.equal([200, 200]);
      await waitFor(() => delivered('/server', inBody).length === 1 && delivered('/server', withAuth).length === 1, 'both batches');
    });

    it('delivers an anonymous call (anonymousId only) with the anonymousId as userId, and adds context.ip from the connection', async () => {
      const messageId = id('anon');
      const answer = await send(`${url}/v1/t`, {
        method: 'POST',
        headers: { 'Content-Type': 'text/plain' },
        body: JSON.stringify({ type: 'track', anonymousId: 'anon-7f3a', event: 'Viewed Pricing', messageId, writeKey: 'key-server', context: { locale: 'en-US' } }),
      });
      expect(answer.status).to.equal(200);
      await waitFor(() => delivered('/server', messageId).length === 1, 'the anonymous call');
      const json = delivered('/server', messageId)[0]!.json;
      expect(json.userId).to.equal('anon-7f3a');
      expect(json.context).to.deep.equal({ locale: 'en-US', ip: '127.0.0.1' });
    });

    it('keeps a context.ip the call carries, and ignores X-Forwarded-For when no proxy is trusted', async () => {
      const own = id('own-ip');
      const spoofed = id('spoofed');
      await send(`${url}/v1/track`, { method: 'POST', headers: { Authorization: basic('key-server') }, body: JSON.stringify({ userId: 'u', event: 'E', messageId: own, context: { ip: '203.0.113.9' } }) });
      await send(`${url}/v1/track`, { method: 'POST', headers: { Authorization: basic('key-server'), 'X-Forwarded-For': '198.51.100.1' }, body: JSON.stringify({ userId: 'u', event: 'E', messageId: spoofed }) });
      await waitFor(() => delivered('/server', own).length === 1 && delivered('/server', spoofed).length === 1, 'both calls');
      expect((delivered('/server', own)[0]!.json.context as { ip: string }).ip).to.equal('203.0.113.9');
      expect((delivered('/server', spoofed)[0]!.json.context as { ip: string }).ip).to.equal('127.0.0.1');
    });

    it('gives every new path the same typed 4xx as /v1/batch, and stores nothing of a refused request', async () => {
      for (const path of ['/v1/b', '/v1/t', '/v1/batch', '/v1/track']) {
        const notJson = await send(`${url}${path}`, { method: 'POST', headers: { Authorization: basic('key-server'), 'Content-Type': 'text/plain' }, body: '{"batch": [' });
        expect(notJson.status, path).to.equal(400);
        expect(notJson.json.error.code, path).to.equal('invalid_json');
        const unknown = await send(`${url}${path}`, { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: JSON.stringify({ writeKey: 'nope', batch: [] }) });
        expect(unknown.status, path).to.equal(401);
        expect(unknown.json.error.code, path).to.equal('unauthorized');
        const large = await send(`${url}${path}`, { method: 'POST', headers: { Authorization: basic('key-server') }, body: Buffer.alloc(600 * 1024, 32) });
        expect(large.status, path).to.equal(413);
        expect(large.json.error.code, path).to.equal('body_too_large');
      }
      const wrongType = await send(`${url}/v1/t`, { method: 'POST', headers: { Authorization: basic('key-server') }, body: JSON.stringify({ type: 'identify', userId: 'u' }) });
      expect(wrongType.status).to.equal(400);
      expect(wrongType.json.error.code).to.equal('invalid_body');
      const noKeyWithOrigin = await send(`${url}/v1/t`, { method: 'POST', headers: { Origin: SHOP, 'Content-Type': 'text/plain' }, body: JSON.stringify({ userId: 'u', event: 'E' }) });
      expect(noKeyWithOrigin.status).to.equal(401);
    });
  });

  describe('browser origins', () => {
    it('answers a preflight of each ingestion path for an origin a source lists: methods, headers, a max-age', async () => {
      for (const path of ['/v1/t', '/v1/b', '/v1/batch', '/v1/identify']) {
        const answer = await send(`${url}${path}`, {
          method: 'OPTIONS',
          headers: { Origin: SHOP, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization,content-type' },
        });
        expect(answer.status, path).to.equal(204);
        expect(answer.headers['access-control-allow-origin']).to.equal(SHOP);
        expect(answer.headers['access-control-allow-methods']).to.contain('POST');
        expect(answer.headers['access-control-allow-headers']).to.contain('authorization').and.contain('content-type').and.contain('x-retry-count');
        expect(answer.headers['access-control-max-age']).to.equal(String(PREFLIGHT_MAX_AGE));
        expect(answer.headers.vary).to.contain('Origin');
      }
    });

    it('answers the preflight of any origin when a source lists "*", and an OPTIONS without Origin with Allow', async () => {
      const answer = await send(`${url}/v1/t`, { method: 'OPTIONS', headers: { Origin: EVIL, 'Access-Control-Request-Method': 'POST' } });
      // The "*" source allows it: a forwarder without one refuses (see the next suite).
      expect(answer.status).to.equal(204);
      const plain = await send(`${url}/v1/t`, { method: 'OPTIONS' });
      expect(plain.status).to.equal(204);
      expect(plain.headers.allow).to.equal('POST, OPTIONS');
      expect(plain.headers['access-control-allow-origin']).to.equal(undefined);
    });

    it('takes a call from a listed origin and lets the page read the answer, Retry-After included', async () => {
      const messageId = id('listed');
      const answer = await send(`${url}/v1/t`, { method: 'POST', headers: { Origin: SHOP, Authorization: basic('key-web'), 'Content-Type': 'text/plain' }, body: JSON.stringify({ userId: 'u', event: 'E', messageId }) });
      expect(answer.status).to.equal(200);
      expect(answer.headers['access-control-allow-origin']).to.equal(SHOP);
      expect(answer.headers['access-control-expose-headers']).to.contain('Retry-After');
      await waitFor(() => delivered('/web', messageId).length === 1, 'the call from a listed origin');
    });

    it('refuses (403) and counts a text/plain request that skipped the preflight from an origin its source does not list; nothing is forwarded', async () => {
      const before = receiver.requests.length;
      const messageId = id('unlisted');
      const beacon = await send(`${url}/v1/t`, { method: 'POST', headers: { Origin: EVIL, 'Content-Type': 'text/plain;charset=UTF-8' }, body: JSON.stringify({ userId: 'u', event: 'E', messageId, writeKey: 'key-web' }) });
      expect(beacon.status).to.equal(403);
      expect(beacon.json.error.code).to.equal('origin_not_allowed');
      expect(beacon.json.error.message).to.contain(EVIL).and.contain('allowedOrigins');
      // A server-side source lists no origin: a browser request is refused there too.
      const server = await send(`${url}/v1/t`, { method: 'POST', headers: { Origin: SHOP, Authorization: basic('key-server') }, body: JSON.stringify({ userId: 'u', event: 'E', messageId }) });
      expect(server.status).to.equal(403);
      const metrics = await send(`${url}/metrics`);
      expect(metrics.text).to.match(/eventrelay_requests_refused_total\{source="web",reason="origin"\} [1-9]/);
      expect(metrics.text).to.match(/eventrelay_requests_refused_total\{source="server",reason="origin"\} [1-9]/);
      // A later call of the same source is delivered; the refused one never is.
      const later = id('after');
      await send(`${url}/v1/t`, { method: 'POST', headers: { Authorization: basic('key-web') }, body: JSON.stringify({ userId: 'u', event: 'E', messageId: later }) });
      await waitFor(() => delivered('/web', later).length === 1, 'the later call');
      expect(receiver.requests.slice(before).filter((r) => r.json.messageId === messageId)).to.deep.equal([]);
    });

    it('"*" takes any origin', async () => {
      const messageId = id('any');
      const answer = await send(`${url}/v1/t`, { method: 'POST', headers: { Origin: 'https://anything.example:8443', 'Content-Type': 'text/plain' }, body: JSON.stringify({ userId: 'u', event: 'E', messageId, writeKey: 'key-anywhere' }) });
      expect(answer.status).to.equal(200);
      expect(answer.headers['access-control-allow-origin']).to.equal('https://anything.example:8443');
      await waitFor(() => delivered('/anywhere', messageId).length === 1, 'the call');
    });

    it('answers a huge Origin with a clear 403 that does not echo it, and one past the header limit with 431', async () => {
      const huge = `https://${'a'.repeat(8000)}.example`;
      const answer = await send(`${url}/v1/t`, { method: 'POST', headers: { Origin: huge, Authorization: basic('key-web') }, body: '{}' });
      expect(answer.status).to.equal(403);
      expect(answer.json.error.code).to.equal('origin_not_allowed');
      expect(answer.text.length).to.be.below(500);
      const preflight = await send(`${url}/v1/t`, { method: 'OPTIONS', headers: { Origin: huge } });
      // The "*" source allows any origin, so the preflight passes; the source of the key decides.
      expect(preflight.status).to.equal(204);
      const tooBig = await send(`${url}/v1/t`, { method: 'POST', headers: { Origin: `https://${'a'.repeat(20_000)}.example` }, body: '{}' }).catch((error: Error) => ({ status: 0, error }));
      expect(tooBig.status).to.equal(431);
    });
  });

  describe('the settings route', () => {
    it('answers what analytics.js and the mobile libraries load, pointing at this forwarder, with cache headers and no secret', async () => {
      const answer = await send(`${url}/v1/projects/key-web/settings`);
      expect(answer.status).to.equal(200);
      const host = new URL(url).host;
      expect(answer.json.integrations['Segment.io']).to.include({ apiKey: 'key-web', apiHost: `${host}/v1`, protocol: 'http' });
      expect(Object.keys(answer.json.integrations)).to.deep.equal(['Segment.io']);
      expect(answer.json.metrics).to.deep.equal({ sampleRate: 0 });
      expect(answer.headers['cache-control']).to.match(/max-age=\d+/);
      expect(answer.text).to.not.contain('secret-web').and.not.contain(receiver.url.replace('http://', ''));
      const head = await send(`${url}/v1/projects/key-web/settings`, { method: 'HEAD' });
      expect(head.status).to.equal(200);
      expect(head.text).to.equal('');
    });

    it('404 for an unknown key, never cached; CORS for a listed origin, 403 for another', async () => {
      const unknown = await send(`${url}/v1/projects/nope/settings`);
      expect(unknown.status).to.equal(404);
      expect(unknown.json.error.code).to.equal('not_found');
      expect(unknown.headers['cache-control']).to.equal('no-store');
      const listed = await send(`${url}/v1/projects/key-web/settings`, { headers: { Origin: SHOP } });
      expect(listed.status).to.equal(200);
      expect(listed.headers['access-control-allow-origin']).to.equal(SHOP);
      const other = await send(`${url}/v1/projects/key-web/settings`, { headers: { Origin: EVIL } });
      expect(other.status).to.equal(403);
      const preflight = await send(`${url}/v1/projects/key-web/settings`, { method: 'OPTIONS', headers: { Origin: SHOP, 'Access-Control-Request-Method': 'GET' } });
      expect(preflight.status).to.equal(204);
      expect(preflight.headers['access-control-allow-origin']).to.equal(SHOP);
    });

    it('refuses a Host that is not a host and port (it would be handed back), naming http.publicUrl', async () => {
      const answer = await send(`${url}/v1/projects/key-web/settings`, { headers: { Host: 'evil.example/<script>' } });
      expect(answer.status).to.equal(400);
      expect(answer.json.error.code).to.equal('invalid_host');
      expect(answer.json.error.message).to.contain('http.publicUrl');
    });
  });

  describe('bad input that must not block ingestion', () => {
    it('answers settings requests for 10,000 unknown keys with 404 while a batch goes through', async () => {
      const messageId = id('during-keys');
      const during = (async () => {
        await new Promise((resolve) => setImmediate(resolve));
        return send(`${url}/v1/b`, { method: 'POST', headers: { Authorization: basic('key-server') }, body: JSON.stringify({ batch: [{ type: 'track', userId: 'u', event: 'E', messageId }] }) });
      })();
      const answers = await flood(10_000, 50, (i) => send(`${url}/v1/projects/unknown-key-${i}/settings`).then((a) => a.status));
      expect(new Set(answers)).to.deep.equal(new Set([404]));
      expect((await during).status).to.equal(200);
      await waitFor(() => delivered('/server', messageId).length === 1, 'the batch sent during the flood');
    });
  });
});

describe('origins and the public address set per forwarder (memory store)', function () {
  this.timeout(20_000);
  let receiver: Receiver;
  let forwarder: Forwarder;
  let url: string;

  before(async () => {
    receiver = await startReceiver();
    forwarder = createForwarder(
      {
        storage: { type: 'memory' },
        http: { trustProxy: 1, publicUrl: 'https://events.example.com/relay/' },
        sources: [{ name: 'web', writeKey: 'key-web', allowedOrigins: [SHOP], destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/web` }] } } }],
      },
      { store: new MemoryStore() },
    );
    ({ url } = await forwarder.listen({ port: 0 }));
  });
  after(async () => {
    await forwarder?.close();
    await receiver?.close();
  });

  it('refuses the preflight of an origin no source lists: 403 without CORS headers, counted', async () => {
    const answer = await send(`${url}/v1/t`, { method: 'OPTIONS', headers: { Origin: EVIL, 'Access-Control-Request-Method': 'POST' } });
    expect(answer.status).to.equal(403);
    expect(answer.json.error.code).to.equal('origin_not_allowed');
    expect(answer.headers['access-control-allow-origin']).to.equal(undefined);
    const metrics = await send(`${url}/metrics`);
    expect(metrics.text).to.match(/eventrelay_requests_refused_total\{source="",reason="origin"\} [1-9]/);
  });

  it('answers a flood of preflights, allowed and refused, while a batch goes through', async () => {
    const messageId = `during-preflights-${Math.random()}`;
    const during = send(`${url}/v1/b`, { method: 'POST', headers: { Authorization: basic('key-web') }, body: JSON.stringify({ batch: [{ type: 'track', userId: 'u', event: 'E', messageId }] }) });
    const answers = await flood(4000, 50, (i) => send(`${url}/v1/t`, { method: 'OPTIONS', headers: { Origin: i % 2 === 0 ? SHOP : 'null', 'Access-Control-Request-Method': 'POST' } }).then((a) => a.status));
    expect(answers.filter((status, i) => status !== (i % 2 === 0 ? 204 : 403))).to.deep.equal([]);
    expect((await during).status).to.equal(200);
    await waitFor(() => receiver.delivered.some((r) => r.json.messageId === messageId), 'the batch sent during the flood');
  });

  it('names http.publicUrl in the settings, whatever the Host', async () => {
    const answer = await send(`${url}/v1/projects/key-web/settings`, { headers: { Host: 'internal:8787' } });
    expect(answer.json.integrations['Segment.io']).to.include({ apiHost: 'events.example.com/relay/v1', protocol: 'https' });
  });

  it('with trustProxy 1 takes context.ip from the last X-Forwarded-For entry (the one the proxy added)', async () => {
    const messageId = `xff-${Math.random()}`;
    await send(`${url}/v1/t`, { method: 'POST', headers: { Authorization: basic('key-web'), 'X-Forwarded-For': '10.9.9.9, 198.51.100.7' }, body: JSON.stringify({ userId: 'u', event: 'E', messageId }) });
    await waitFor(() => receiver.delivered.some((r) => r.json.messageId === messageId), 'the call');
    expect((receiver.delivered.find((r) => r.json.messageId === messageId)!.json.context as { ip: string }).ip).to.equal('198.51.100.7');
  });
});
