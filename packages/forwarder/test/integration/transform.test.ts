import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'mocha';
import { expect } from 'chai';
import { verifySignature, verifyStandardWebhook } from '../../../eventrelay/src/webhooks';
import { createForwarder } from '../../src/service';
import type { Forwarder } from '../../src/service';
import { adminAs, basic, post, useInstances, useReceiver, waitFor, withForwarder } from './helpers';
import type { ReceivedRequest, StoreKind } from './helpers';

const TOKEN = 'transform-admin-token';
const SECRET = 'transform-shared-secret';
const admin = adminAs(TOKEN);

const TO_CHAT = 'function transform(message) {\n  return { text: message.event + " by " + message.userId };\n}';
const RENAME = 'function transform(m) {\n  return { user: m.userId, name: m.event, props: m.properties };\n}';

/** The webhook requests of `path` whose body parses, as JSON. */
const bodiesAt = (requests: readonly ReceivedRequest[], path: string) => requests.filter((r) => r.path === path).map((r) => JSON.parse(r.body) as unknown);

function verified(request: ReceivedRequest): boolean {
  const headers = request.headers as Record<string, string>;
  return verifySignature(request.body, headers['x-signature']!, SECRET) && verifyStandardWebhook(request.body, headers, SECRET);
}

for (const kind of ['sqlite', 'postgres'] as const satisfies readonly StoreKind[]) {
  describe(`per-URL transforms, end to end (${kind}${kind === 'postgres' ? ', two instances' : ''})`, function () {
    this.timeout(60_000);
    const receiver = useReceiver();
    const instances = useInstances(kind, 'eventrelay-transform-');
    let a: Forwarder;
    let urlA: string;
    let urlB: string;

    /** A (and B on PostgreSQL: the second instance, which only learns the settings through the store) serving one store. */
    async function start(context: Mocha.Context): Promise<void> {
      ({ a, urlA, urlB } = await instances.start(context, { adminToken: TOKEN, delivery: { minRetryDelay: 20, maxRetryDelay: 50 } }));
    }

    /** Sets the source's destination on A, and waits for B to send with it (a call that reaches `probe`). */
    async function setWebhooks(source: string, writeKey: string, destination: object, probe: string): Promise<void> {
      const put = await admin(urlA, 'PUT', `/admin/sources/${source}/destinations/Webhooks`, destination);
      expect(put.status, JSON.stringify(put.json)).to.equal(200);
      let n = 0;
      await waitFor(async () => {
        await track(urlB, writeKey, { event: 'Probe', messageId: `probe-${source}-${n++}` });
        return receiver.requests.some((r) => r.path === probe && JSON.stringify(r.json).includes('Probe'));
      }, `instance B to send with the transforms of ${source}`, 10_000);
    }

    const track = (url: string, writeKey: string, fields: object) => post(`${url}/v1/track`, { userId: 'u1', event: 'Order Completed', ...fields }, { Authorization: basic(writeKey) });

    type Logged = { status: string; reason: string | null; attemptLog: { url: string; error: string | null }[] };
    async function logged(source: string, messageId: string): Promise<Logged> {
      let row: { id: number; status: string } | undefined;
      await waitFor(async () => {
        row = (await admin(urlA, 'GET', `/admin/messages?source=${source}&messageId=${messageId}`)).json.items?.[0];
        return row !== undefined && row.status !== 'pending' && row.status !== 'retrying';
      }, `the log line of ${messageId}`, 15_000);
      return (await admin(urlA, 'GET', `/admin/deliveries/${row!.id}`)).json;
    }

    it('each URL gets what its transform made, signed over those bytes with both schemes; a URL without one gets the message', async function () {
      await start(this);
      const { writeKey } = await a.createSource('shop');
      await setWebhooks(
        'shop',
        writeKey,
        {
          sharedSecret: SECRET,
          signing: 'both',
          webhooks: [
            { url: `${receiver.url}/chat`, transform: { code: TO_CHAT } },
            { url: `${receiver.url}/crm`, transform: { code: RENAME, timeoutMs: 250 } },
            { url: `${receiver.url}/raw` },
          ],
        },
        '/chat',
      );
      expect((await track(urlB, writeKey, { messageId: 'order-1', properties: { total: 42 } })).status).to.equal(200);
      const got = (path: string, text: string) => receiver.requests.some((r) => r.path === path && r.body.includes(text));
      await waitFor(() => got('/chat', 'Order Completed by u1') && got('/crm', '42') && got('/raw', 'order-1'), 'the three URLs');
      expect(bodiesAt(receiver.requests, '/chat')).to.deep.include({ text: 'Order Completed by u1' });
      expect(bodiesAt(receiver.requests, '/crm')).to.deep.include({ user: 'u1', name: 'Order Completed', props: { total: 42 } });
      const raw = receiver.requests.find((r) => r.path === '/raw' && r.json.messageId === 'order-1')!;
      expect(raw.json).to.include({ type: 'track', event: 'Order Completed' });
      for (const request of receiver.requests.filter((r) => ['/chat', '/crm', '/raw'].includes(r.path))) expect(verified(request), `${request.path} ${request.body}`).to.equal(true);
      // The admin API shows each URL's transform as set.
      const shown = (await admin(urlA, 'GET', '/admin/sources/shop')).json.destinations.Webhooks.webhooks;
      expect(shown.map((w: { transform: unknown }) => w.transform)).to.deep.equal([{ code: TO_CHAT, timeoutMs: 100 }, { code: RENAME, timeoutMs: 250 }, null]);
    });

    it('null skips a URL; a throw fails it for that call, final, transform_failed in the log; recover runs it again once the code is fixed', async function () {
      await start(this);
      const { writeKey } = await a.createSource('crm');
      const strict = 'function transform(m) {\n  if (m.event === "Probe") return m;\n  if (m.properties.email === undefined) throw new Error("no email");\n  return { email: m.properties.email };\n}';
      await setWebhooks(
        'crm',
        writeKey,
        { webhooks: [{ url: `${receiver.url}/strict`, transform: { code: strict } }, { url: `${receiver.url}/orders-only`, transform: { code: 'function transform(m) { return m.event === "Order Completed" ? { order: true } : null; }' } }] },
        '/strict',
      );
      const since = new Date(Date.now() - 1000).toISOString();
      // Skipped by /orders-only, failed by /strict: nothing is sent, the call fails for good.
      await track(urlB, writeKey, { event: 'Signed Up', messageId: 'signup-1', properties: {} });
      const failed = await logged('crm', 'signup-1');
      expect(failed.status).to.equal('failed');
      expect(failed.reason).to.contain('transform_failed: Error: no email (line 3');
      expect(failed.attemptLog.map((t) => [t.url, t.error])).to.deep.equal([[`${receiver.url}/strict`, 'ERR_TRANSFORM']]);
      expect(receiver.requests.filter((r) => r.json.messageId === 'signup-1' || JSON.stringify(r.json).includes('signup-1'))).to.deep.equal([]);
      // /orders-only takes it, /strict fails: delivered through the one that took it.
      await track(urlB, writeKey, { messageId: 'order-2', properties: {} });
      const partly = await logged('crm', 'order-2');
      expect(partly.status).to.equal('delivered');
      expect(partly.attemptLog.map((t) => t.error).sort()).to.deep.equal(['ERR_TRANSFORM', null].sort());

      // The code fixed (PATCH from: 0), then recover: the failed call goes again, through the new code.
      const fixed = 'function transform(m) { return { email: m.properties.email ?? null, event: m.event }; }';
      const patched = await admin(urlA, 'PATCH', '/admin/sources/crm/destinations/Webhooks', { webhooks: [{ from: 0, transform: { code: fixed } }, { from: 1 }] });
      expect(patched.status, JSON.stringify(patched.json)).to.equal(200);
      await waitFor(async () => {
        await track(urlB, writeKey, { event: 'Probe Fixed', messageId: `fixed-${Date.now()}-${Math.random()}`, properties: {} });
        return bodiesAt(receiver.requests, '/strict').some((b) => JSON.stringify(b) === JSON.stringify({ email: null, event: 'Probe Fixed' }));
      }, 'the fixed code on every instance', 10_000);
      const recovered = await admin(urlA, 'POST', '/admin/recover', { source: 'crm', since });
      expect(recovered.status).to.equal(202);
      expect(recovered.json.queued).to.be.at.least(1);
      await waitFor(() => bodiesAt(receiver.requests, '/strict').some((b) => JSON.stringify(b) === JSON.stringify({ email: null, event: 'Signed Up' })), 'the recovered call, through the fixed code');
    });

    it('refuses code that does not compile, on PUT and PATCH, naming the field with line and column; nothing is stored', async function () {
      await start(this);
      const { writeKey } = await a.createSource('bad');
      void writeKey;
      const put = await admin(urlA, 'PUT', '/admin/sources/bad/destinations/Webhooks', { webhooks: [{ url: `${receiver.url}/x`, transform: { code: 'function transform(m) {\n  return m.;\n}' } }] });
      expect(put.status).to.equal(400);
      expect(put.json.error).to.include({ code: 'invalid_request', field: 'webhooks[0].transform.code' });
      expect(put.json.error.message).to.match(/SyntaxError.*\(line 2, column \d+\)/);
      const noFunction = await admin(urlA, 'PUT', '/admin/sources/bad/destinations/Webhooks', { webhooks: [{ url: `${receiver.url}/x`, transform: { code: 'const x = 1;' } }] });
      expect(noFunction.json.error.message).to.contain('found none');
      const throwsAtTop = await admin(urlA, 'PUT', '/admin/sources/bad/destinations/Webhooks', { webhooks: [{ url: `${receiver.url}/x`, transform: { code: 'throw new Error("top");\nfunction transform(m) { return m; }' } }] });
      expect(throwsAtTop.status).to.equal(400);
      expect(throwsAtTop.json.error.message).to.contain('failed at its top level, Error: top');
      expect((await admin(urlA, 'GET', '/admin/sources/bad')).json.destinations.Webhooks).to.equal(null);
      const tooSlow = await admin(urlA, 'PUT', '/admin/sources/bad/destinations/Webhooks', { webhooks: [{ url: `${receiver.url}/x`, transform: { code: 'function transform(m) { return m; }', timeoutMs: 5000 } }] });
      expect(tooSlow.json.error.field).to.equal('webhooks[0].transform.timeoutMs');
    });
  });
}

describe('a transform in the config file', function () {
  this.timeout(30_000);
  const receiver = useReceiver();

  it('is applied at start: the URL gets the reshaped body, signed over it; eventrelay check\'s rules refuse what does not parse', async () => {
    const config = {
      storage: { type: 'memory' as const },
      sources: [{ name: 'cfg', writeKey: 'cfg-key', destinations: { Webhooks: { sharedSecret: SECRET, webhooks: [{ url: `${receiver.url}/cfg`, transform: { code: TO_CHAT } }] } } }],
    };
    await withForwarder(config, async (url) => {
      expect((await post(`${url}/v1/track`, { userId: 'u9', event: 'Configured' }, { Authorization: basic('cfg-key') })).status).to.equal(200);
      await waitFor(() => receiver.delivered.some((r) => r.path === '/cfg'), 'the reshaped call');
      const got = receiver.delivered.find((r) => r.path === '/cfg')!;
      expect(got.json).to.deep.equal({ text: 'Configured by u9' });
      expect(verifySignature(got.body, got.headers['x-signature'] as string, SECRET)).to.equal(true);
    });
    expect(() => createForwarder({ storage: { type: 'memory' }, sources: [{ name: 'bad', writeKey: 'bad-key', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/bad`, transform: { code: 'function transform( {' } }] } } }] })).to.throw(
      /sources\[0\]\.destinations\.Webhooks\.webhooks\[0\]\.transform\.code|line 1/,
    );
  });
});

describe('hostile transforms, end to end (SQLite)', function () {
  this.timeout(150_000);
  const receiver = useReceiver();
  let forwarder: Forwarder;
  let url: string;
  let dir: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'eventrelay-transform-hostile-'));
    forwarder = createForwarder({ adminToken: TOKEN, storage: { type: 'sqlite', dataDir: dir }, delivery: { minRetryDelay: 20, maxRetryDelay: 50 } });
    url = (await forwarder.listen({ port: 0 })).url;
  });
  after(async () => {
    await forwarder.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const track = (writeKey: string, messageId: string) => post(`${url}/v1/track`, { userId: 'u1', event: 'E', messageId }, { Authorization: basic(writeKey) });

  it('a looping transform on one URL costs its limit per call: meanwhile /health answers and another source keeps delivering', async () => {
    const loops = await forwarder.createSource('loops');
    const calm = await forwarder.createSource('calm');
    await forwarder.setWebhooks('loops', { webhooks: [{ url: `${receiver.url}/loop`, transform: { code: 'function transform(m) { for (;;) {} }', timeoutMs: 100 } }] });
    await forwarder.setWebhooks('calm', { webhooks: [{ url: `${receiver.url}/calm` }] });
    // 60 calls of 100 ms of CPU each, accepted at once: six seconds of looping, one call at most per
    // turn of the event loop. What the calm source needs (three requests, three attempts) waits at
    // most one call (100 ms) per step, so it is done long before the loops, however busy the machine.
    const batch = Array.from({ length: 60 }, (_, i) => ({ type: 'track', userId: 'u1', event: 'E', messageId: `loop-${i}` }));
    expect((await post(`${url}/v1/batch`, { batch }, { Authorization: basic(loops.writeKey) })).status).to.equal(200);
    const open = async () => (await admin(url, 'GET', '/admin/messages?source=loops&status=pending')).json.items.length + (await admin(url, 'GET', '/admin/messages?source=loops&status=retrying')).json.items.length;
    // While the looping calls are still open, the other source delivers and /health answers.
    const health = await fetch(`${url}/health`);
    expect(health.status).to.equal(200);
    for (let i = 0; i < 3; i++) expect((await track(calm.writeKey, `calm-${i}`)).status).to.equal(200);
    await waitFor(() => receiver.delivered.filter((r) => r.path === '/calm').length === 3, 'the calm source to deliver', 20_000);
    expect(await open(), 'looping calls still open when the calm source had delivered').to.be.above(0);
    // Each looping call fails for its URL with the time limit, final.
    await waitFor(async () => (await open()) === 0, 'every looping call to end', 100_000);
    const failed = (await admin(url, 'GET', '/admin/messages?source=loops&status=failed&limit=100')).json.items;
    expect(failed).to.have.length(60);
    expect(failed[0].reason).to.contain('transform_failed: timed out after 100 ms');
    expect(receiver.requests.filter((r) => r.path === '/loop')).to.deep.equal([]);
  });

  it('prototype pollution does not leak between calls, nor between URLs', async () => {
    const source = await forwarder.createSource('polluter');
    const polluter = [
      'function transform(m) {',
      '  const before = typeof ({}).polluted + "," + typeof [].evil;',
      '  try { Object.prototype.polluted = "yes"; } catch (e) {}',
      '  try { Array.prototype.evil = function () {}; } catch (e) {}',
      '  try { JSON.stringify = function () { return "hijacked"; }; } catch (e) {}',
      '  try { Object.defineProperty(Object.prototype, "toJSON", { value: function () { return "owned"; } }); } catch (e) {}',
      '  return { before: before, after: typeof ({}).polluted };',
      '}',
    ].join('\n');
    const observer = 'function transform(m) { return { seen: typeof ({}).polluted + "," + typeof [].evil + "," + typeof ({}).toJSON, id: m.messageId }; }';
    await forwarder.setWebhooks('polluter', { webhooks: [{ url: `${receiver.url}/polluter`, transform: { code: polluter } }, { url: `${receiver.url}/observer`, transform: { code: observer } }] });
    for (let i = 0; i < 3; i++) expect((await track(source.writeKey, `pollute-${i}`)).status).to.equal(200);
    await waitFor(() => receiver.requests.filter((r) => r.path === '/observer').length === 3 && receiver.requests.filter((r) => r.path === '/polluter').length === 3, 'three calls to both URLs', 20_000);
    for (const r of receiver.requests.filter((x) => x.path === '/polluter')) expect(r.json).to.deep.equal({ before: 'undefined,undefined', after: 'undefined' });
    for (const r of receiver.requests.filter((x) => x.path === '/observer')) expect(r.json.seen).to.equal('undefined,undefined,undefined');
  });
});

describe('POST /admin/transform/test', function () {
  this.timeout(30_000);
  let forwarder: Forwarder;
  let url: string;
  const message = { type: 'track', event: 'Order Completed', userId: 'u1', properties: { total: 42 } };

  before(async () => {
    forwarder = createForwarder({ adminToken: TOKEN, storage: { type: 'memory' } });
    url = (await forwarder.listen({ port: 0 })).url;
  });
  after(() => forwarder.close());

  it('answers what the transform returned and how long it took; null when it skips', async () => {
    const ok = await admin(url, 'POST', '/admin/transform/test', { code: TO_CHAT, message });
    expect(ok.status).to.equal(200);
    expect(ok.json.output).to.deep.equal({ text: 'Order Completed by u1' });
    expect(ok.json.durationMs).to.be.a('number').and.at.least(0);
    const skip = await admin(url, 'POST', '/admin/transform/test', { code: 'function transform() { return undefined; }', message });
    expect(skip.json).to.deep.include({ output: null });
  });

  it('422 transform_failed when the call fails (a throw, a timeout, output not JSON); 400 naming `code` with line and column when it does not compile', async () => {
    const threw = await admin(url, 'POST', '/admin/transform/test', { code: 'function transform(m) {\n  return m.nope.deeper;\n}', message });
    expect(threw.status).to.equal(422);
    expect(threw.json.error.code).to.equal('transform_failed');
    expect(threw.json.error.message).to.match(/^transform_failed: TypeError: .*\(line 2, column \d+\)/);
    const loops = await admin(url, 'POST', '/admin/transform/test', { code: 'function transform() { for (;;) {} }', message, timeoutMs: 20 });
    expect(loops.json.error.message).to.equal('transform_failed: timed out after 20 ms');
    const cycle = await admin(url, 'POST', '/admin/transform/test', { code: 'function transform(m) { m.self = m; return m; }', message });
    expect(cycle.json.error.message).to.contain('output is not JSON: output.self refers back');
    const broken = await admin(url, 'POST', '/admin/transform/test', { code: 'function transform(m) {\n  return {;\n}', message });
    expect(broken.status).to.equal(400);
    expect(broken.json.error).to.include({ code: 'invalid_request', field: 'code', line: 2 });
    expect(broken.json.error.column).to.be.a('number');
    const badTimeout = await admin(url, 'POST', '/admin/transform/test', { code: TO_CHAT, message, timeoutMs: 0 });
    expect(badTimeout.status).to.equal(400);
    expect(badTimeout.json.error.field).to.equal('timeoutMs');
  });
});
