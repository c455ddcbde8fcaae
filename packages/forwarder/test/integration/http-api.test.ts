import { describe, it, before, after } from 'mocha';
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { createForwarder } from '../../src/service';
import type { Forwarder } from '../../src/service';
import type { ForwarderConfig } from '../../src/config';
import { verifySignature } from '../../../eventrelay/src/webhooks';
import { basic, post, useReceiver, waitFor } from './helpers';

const ADMIN = 'admin-token-for-tests';

describe('forwarder HTTP API (integration, 127.0.0.1)', () => {
  const receiver = useReceiver();
  let forwarder: Forwarder;
  let url: string;
  let dataDir: string;

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'eventrelay-http-'));
    const config: ForwarderConfig = {
      adminToken: ADMIN,
      delivery: { minRetryDelay: 20, maxRetryDelay: 100 },
      sources: [
        { name: 'web', writeKey: 'key-web', destinations: { Webhooks: { sharedSecret: 'secret-web', webhooks: [{ url: `${receiver.url}/web` }] } } },
        { name: 'ios', writeKey: 'key-ios', destinations: { Webhooks: { sharedSecret: 'secret-ios', webhooks: [{ url: `${receiver.url}/ios`, headers: { 'X-Team': 'mobile' } }] } } },
        { name: 'paused', writeKey: 'key-paused', destinations: { Webhooks: { enabled: false, webhooks: [{ url: `${receiver.url}/paused` }] } } },
        { name: 'bare', writeKey: 'key-bare' },
      ],
    };
    forwarder = createForwarder(config, { dataDir });
    ({ url } = await forwarder.listen({ port: 0 }));
  });

  after(async () => {
    await forwarder.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const track = (event: string, extra: object = {}) => ({ type: 'track', userId: 'u1', event, messageId: `${event}-${Math.random()}`, ...extra });
  const deliveredTo = (path: string, predicate: (json: any) => boolean) => receiver.delivered.filter((r) => r.path === path && predicate(r.json));

  describe('ingestion', () => {
    it('accepts a batch with Basic auth and delivers each message, signed', async () => {
      const messages = [track('Batch One'), track('Batch Two')];
      const response = await post(`${url}/v1/batch`, { batch: messages, sentAt: new Date().toISOString() }, { Authorization: basic('key-web') });
      expect(response.status).to.equal(200);
      expect(response.json).to.deep.equal({ success: true });
      await waitFor(() => deliveredTo('/web', (j) => j.event === 'Batch Two').length === 1, 'delivery');
      const one = deliveredTo('/web', (j) => j.event === 'Batch One')[0]!;
      expect(one.json).to.include({ version: 1, type: 'track', userId: 'u1', messageId: messages[0]!.messageId });
      expect(verifySignature(one.body, one.headers['x-signature'] as string, 'secret-web')).to.equal(true);
    });

    it('stores a message before answering 2xx', async () => {
      const before = (await forwarder.stats()).accepted;
      const response = await post(`${url}/v1/track`, track('Stored First'), { Authorization: basic('key-web') });
      expect(response.status).to.equal(200);
      expect((await forwarder.stats()).accepted).to.equal(before + 1);
    });

    it('accepts the write key in the body and the single-call endpoints', async () => {
      for (const [type, body] of [
        ['identify', { userId: 'u9', traits: { plan: 'pro' } }],
        ['page', { userId: 'u9', properties: { path: '/p' } }],
        ['screen', { userId: 'u9', name: 'Home' }],
        ['group', { userId: 'u9', groupId: 'g9' }],
        ['alias', { userId: 'u9', previousId: 'a9' }],
        ['track', { userId: 'u9', event: 'Body Key' }],
      ] as const) {
        const response = await post(`${url}/v1/${type}`, { ...body, writeKey: 'key-ios' });
        expect(response.status, type).to.equal(200);
      }
      await waitFor(() => deliveredTo('/ios', (j) => j.userId === 'u9' || j['User ID'] === 'u9').length === 6, 'six ios deliveries');
      const types = deliveredTo('/ios', (j) => j.userId === 'u9' || j['User ID'] === 'u9').map((r) => r.json.type);
      expect(types.sort()).to.deep.equal(['alias', 'group', 'identify', 'page', 'screen', 'track']);
      const trackRequest = deliveredTo('/ios', (j) => j.event === 'Body Key')[0]!;
      expect(trackRequest.headers['x-team']).to.equal('mobile');
      expect(trackRequest.body).not.to.contain('key-ios');
    });

    it('answers 401 for an unknown or missing write key', async () => {
      const unknown = await post(`${url}/v1/batch`, { batch: [track('x')] }, { Authorization: basic('nope') });
      expect(unknown.status).to.equal(401);
      expect(unknown.json.error.code).to.equal('unauthorized');
      expect(unknown.headers.get('www-authenticate')).to.match(/^Basic/);
      expect((await post(`${url}/v1/batch`, { batch: [track('x')] })).status).to.equal(401);
      expect((await post(`${url}/v1/batch`, { batch: [track('x')], writeKey: 'nope' })).status).to.equal(401);
    });

    it('answers 400 for a body that is not JSON', async () => {
      const response = await post(`${url}/v1/batch`, '{"batch": [', { Authorization: basic('key-web') });
      expect(response.status).to.equal(400);
      expect(response.json.error.code).to.equal('invalid_json');
    });

    it('stores the valid messages of a batch and lists the invalid one in `rejected` (200)', async () => {
      const good = track('Delivered Beside A Bad One');
      const response = await post(`${url}/v1/batch`, { batch: [good, { type: 'track', userId: 'u1' }] }, { Authorization: basic('key-web') });
      expect(response.status).to.equal(200);
      expect(response.json).to.deep.equal({
        success: true,
        rejected: [{ index: 1, code: 'invalid_message', field: 'event', message: 'A track message needs `event` as a non-empty string, got nothing' }],
      });
      await waitFor(() => deliveredTo('/web', (j) => j.event === 'Delivered Beside A Bad One').length === 1, 'the valid message');
    });

    it('answers 413 for a body over 500 KB, declared or streamed', async () => {
      const big = JSON.stringify({ batch: [track('big', { properties: { s: 'x'.repeat(520 * 1024) } })] });
      const declared = await post(`${url}/v1/batch`, big, { Authorization: basic('key-web') });
      expect(declared.status).to.equal(413);
      expect(declared.json.error.code).to.equal('body_too_large');

      // Chunked upload, no Content-Length: the cap applies while streaming.
      const status = await new Promise<number>((resolve, reject) => {
        const req = request(`${url}/v1/batch`, { method: 'POST', headers: { Authorization: basic('key-web'), 'Content-Type': 'application/json' } }, (res) => {
          res.resume();
          resolve(res.statusCode!);
        });
        req.on('error', reject);
        for (let i = 0; i < 11; i++) req.write('x'.repeat(50 * 1024));
        req.end();
      });
      expect(status).to.equal(413);
    });

    it('refuses a message over 32 KB as a `rejected` entry, storing the others', async () => {
      const response = await post(
        `${url}/v1/batch`,
        { batch: [track('small'), track('huge', { properties: { s: 'x'.repeat(33 * 1024) } })] },
        { Authorization: basic('key-web') },
      );
      expect(response.status).to.equal(200);
      expect(response.json.rejected).to.have.length(1);
      expect(response.json.rejected[0]).to.include({ index: 1, code: 'message_too_large', limit: 32 * 1024 });
      expect(response.json.rejected[0].size).to.be.greaterThan(33 * 1024);
      await waitFor(() => deliveredTo('/web', (j) => j.event === 'small').length === 1, 'the small message');
    });

    it('accepts a gzip body and refuses one that decompresses past 500 KB', async () => {
      const body = gzipSync(JSON.stringify({ batch: [track('Zipped')] }));
      const ok = await post(`${url}/v1/batch`, body, { Authorization: basic('key-web'), 'Content-Encoding': 'gzip' });
      expect(ok.status).to.equal(200);
      await waitFor(() => deliveredTo('/web', (j) => j.event === 'Zipped').length === 1, 'the gzip delivery');
      const bomb = gzipSync(JSON.stringify({ batch: [track('bomb', { properties: { s: ' '.repeat(600 * 1024) } })] }));
      expect(bomb.length).to.be.below(500 * 1024);
      const refused = await post(`${url}/v1/batch`, bomb, { Authorization: basic('key-web'), 'Content-Encoding': 'gzip' });
      expect(refused.status).to.equal(413);
    });

    it('answers 404 and 405 for other paths and methods', async () => {
      expect((await post(`${url}/v2/batch`, {})).status).to.equal(404);
      const get = await fetch(`${url}/v1/batch`);
      expect(get.status).to.equal(405);
      // The methods the path takes: POST, and OPTIONS (a browser's preflight).
      expect(get.headers.get('allow')).to.equal('POST, OPTIONS');
    });

    it('acknowledges a repeated messageId without delivering it twice', async () => {
      const message = track('Retried Batch');
      expect((await post(`${url}/v1/batch`, { batch: [message] }, { Authorization: basic('key-web') })).status).to.equal(200);
      expect((await post(`${url}/v1/batch`, { batch: [message] }, { Authorization: basic('key-web') })).status).to.equal(200);
      await post(`${url}/v1/track`, track('Marker'), { Authorization: basic('key-web') });
      await waitFor(() => deliveredTo('/web', (j) => j.event === 'Marker').length === 1, 'the marker');
      await waitFor(async () => (await forwarder.stats()).queueDepth === 0, 'an empty queue');
      expect(deliveredTo('/web', (j) => j.event === 'Retried Batch')).to.have.length(1);
      expect((await forwarder.stats()).duplicates).to.be.at.least(1);
    });
  });

  describe('routing', () => {
    it('follows integrations: All:false off, Webhooks:true on, keys case sensitive', async () => {
      const batch = [
        track('All Off', { integrations: { All: false } }),
        track('Webhooks Off', { integrations: { Webhooks: false } }),
        track('Forced On', { integrations: { All: false, Webhooks: true } }),
        track('Lowercase Key', { integrations: { webhooks: false } }),
        track('Options Object', { integrations: { All: false, Webhooks: { any: 'option' } } }),
      ];
      expect((await post(`${url}/v1/batch`, { batch }, { Authorization: basic('key-web') })).status).to.equal(200);
      await waitFor(async () => (await forwarder.stats()).queueDepth === 0, 'an empty queue');
      await waitFor(() => deliveredTo('/web', (j) => j.event === 'Options Object').length === 1, 'the last routed one');
      const events = receiver.delivered.filter((r) => r.path === '/web').map((r) => r.json.event);
      expect(events).to.include.members(['Forced On', 'Lowercase Key', 'Options Object']);
      expect(events).not.to.include('All Off');
      expect(events).not.to.include('Webhooks Off');
    });

    it('keeps the message of a source whose destination is off, and sends nothing', async () => {
      const before = (await forwarder.stats()).accepted;
      expect((await post(`${url}/v1/track`, track('Paused'), { Authorization: basic('key-paused') })).status).to.equal(200);
      expect((await post(`${url}/v1/track`, track('Bare'), { Authorization: basic('key-bare') })).status).to.equal(200);
      expect((await forwarder.stats()).accepted).to.equal(before + 2);
      expect(receiver.requests.filter((r) => r.path === '/paused')).to.have.length(0);
    });

    it('retries a receiver that answers 503 and delivers the same bytes', async () => {
      receiver.failFirst('/ios', 2);
      const message = track('Flaky Receiver');
      await post(`${url}/v1/track`, message, { Authorization: basic('key-ios') });
      await waitFor(() => deliveredTo('/ios', (j) => j.event === 'Flaky Receiver').length === 1, 'delivery after retries');
      const attempts = receiver.requests.filter((r) => r.path === '/ios' && r.json.event === 'Flaky Receiver');
      expect(attempts).to.have.length(3);
      expect(new Set(attempts.map((a) => a.body)).size).to.equal(1);
      expect(new Set(attempts.map((a) => a.headers['x-signature'])).size).to.equal(1);
    });
  });

  describe('admin endpoints', () => {
    const auth = { Authorization: `Bearer ${ADMIN}` };

    it('refuses a missing or wrong token', async () => {
      expect((await post(`${url}/admin/deletions`, { userId: 'u1' })).status).to.equal(401);
      expect((await post(`${url}/admin/deletions`, { userId: 'u1' }, { Authorization: 'Bearer wrong' })).status).to.equal(401);
      expect((await post(`${url}/admin/audiences/sync`, {}, { Authorization: basic(ADMIN) })).status).to.equal(401);
    });

    it('fans a deletion out to every source whose destination is on', async () => {
      const response = await post(`${url}/admin/deletions`, { userId: 'deleted-user' }, auth);
      expect(response.status).to.equal(202);
      expect(response.json).to.deep.equal({ userId: 'deleted-user', notified: ['web', 'ios'], skipped: ['paused', 'bare'] });
      await waitFor(() => receiver.delivered.filter((r) => r.json.type === 'delete').length === 2, 'two delete notices');
      const notices = receiver.delivered.filter((r) => r.json.type === 'delete');
      expect(notices.map((n) => n.path).sort()).to.deep.equal(['/ios', '/web']);
      for (const notice of notices) {
        expect(Object.keys(notice.json).sort()).to.deep.equal(['timestamp', 'type', 'userId']);
        expect(notice.json.userId).to.equal('deleted-user');
        const secret = notice.path === '/web' ? 'secret-web' : 'secret-ios';
        expect(verifySignature(notice.body, notice.headers['x-signature'] as string, secret)).to.equal(true);
      }
    });

    it('limits a deletion to the named sources and refuses unknown ones', async () => {
      const response = await post(`${url}/admin/deletions`, { userId: 'only-ios', sources: ['ios'] }, auth);
      expect(response.json.notified).to.deep.equal(['ios']);
      const unknown = await post(`${url}/admin/deletions`, { userId: 'x', sources: ['android'] }, auth);
      expect(unknown.status).to.equal(400);
      expect(unknown.json.error.field).to.equal('sources');
      await waitFor(() => deliveredTo('/ios', (j) => j.type === 'delete' && j.userId === 'only-ios').length === 1, 'the ios notice');
      expect(deliveredTo('/web', (j) => j.type === 'delete' && j.userId === 'only-ios')).to.have.length(0);
    });

    it('sends audience changes across three syncs: everyone, then only the differences', async () => {
      const identifies = () => deliveredTo('/web', (j) => j.type === 'identify' && 'churn_risk' in (j.traits as object));
      const sync = (members: string[]) => post(`${url}/admin/audiences/sync`, { source: 'web', audience: 'Churn Risk', members }, auth);

      const first = await sync(['a', 'b', 'c']);
      expect(first.status).to.equal(200);
      expect(first.json).to.deep.equal({ source: 'web', audience: 'Churn Risk', trait: 'churn_risk', firstSync: true, added: 3, removed: 0, sent: 3 });
      await waitFor(() => identifies().length === 3, 'three identifies');

      const second = await sync(['b', 'c', 'd']);
      expect(second.json).to.include({ firstSync: false, added: 1, removed: 1, sent: 2 });
      await waitFor(() => identifies().length === 5, 'two more identifies');

      const third = await sync(['d']);
      expect(third.json).to.include({ added: 0, removed: 2, sent: 2 });
      await waitFor(() => identifies().length === 7, 'two more identifies');

      const seen = identifies().map((r) => `${r.json.userId}=${(r.json.traits as Record<string, boolean>).churn_risk}`);
      expect(seen.slice(0, 3).sort()).to.deep.equal(['a=true', 'b=true', 'c=true']);
      expect(seen.slice(3, 5).sort()).to.deep.equal(['a=false', 'd=true']);
      expect(seen.slice(5).sort()).to.deep.equal(['b=false', 'c=false']);
    });

    it('answers 400 with the field of a bad audience request', async () => {
      const response = await post(`${url}/admin/audiences/sync`, { source: 'web', audience: 'X', members: [1] }, auth);
      expect(response.status).to.equal(400);
      expect(response.json.error.field).to.equal('members[0]');
    });
  });

  describe('operations', () => {
    it('GET /health and GET /stats', async () => {
      const health = await fetch(`${url}/health`);
      expect(health.status).to.equal(200);
      expect(await health.json()).to.deep.equal({ status: 'ok' });
      const stats = (await (await fetch(`${url}/stats`)).json()) as Record<string, number>;
      expect(stats).to.have.all.keys('accepted', 'duplicates', 'refused', 'delivered', 'retrying', 'failed', 'queueDepth', 'oldestPendingAge', 'inFlight', 'uptime', 'endpoints');
      expect(stats.accepted).to.be.above(0);
      expect(stats.delivered).to.be.above(0);
    });
  });
});

describe('forwarder admin endpoints without a token', () => {
  let forwarder: Forwarder;
  let url: string;

  before(async () => {
    forwarder = createForwarder({ storage: { type: 'memory' }, sources: [{ name: 'web', writeKey: 'k' }] });
    ({ url } = await forwarder.listen({ port: 0 }));
  });

  after(async () => {
    await forwarder.close();
  });

  it('answers 403: admin is off', async () => {
    const response = await post(`${url}/admin/deletions`, { userId: 'u' }, { Authorization: 'Bearer anything' });
    expect(response.status).to.equal(403);
    expect(response.json.error.code).to.equal('admin_disabled');
  });
});
