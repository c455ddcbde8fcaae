import { describe, it, before, after, afterEach } from 'mocha';
import { expect } from 'chai';
import { once } from 'node:events';
import { createForwarder } from '../../src/service';
import type { Forwarder } from '../../src/service';
import type { ForwarderConfig } from '../../src/config';
import type { Notice } from '../../src/delivery/notify';
import { basic, post, useReceiver, waitFor } from './helpers';

const TOKEN = 'admin-token-for-network-policy-8d1e';
const WRITE_KEY = 'write-key-for-network-policy-40aa';

/** The metadata address in every spelling the URL parser reads as it, and its IPv6 forms. */
const METADATA_HOSTS = [
  '169.254.169.254',
  '2852039166',
  '0xa9fea9fe',
  '0251.0376.0251.0376',
  '169.254.43518',
  '0xA9.0xFE.0xA9.0xFE',
  '[::ffff:169.254.169.254]',
  '[::ffff:a9fe:a9fe]',
  '[0:0:0:0:0:ffff:a9fe:a9fe]',
  '[64:ff9b::a9fe:a9fe]',
  '[fd00:ec2::254]',
  'metadata.google.internal',
  'METADATA.GOOGLE.INTERNAL.',
];

async function call(url: string, method: string, body?: unknown): Promise<{ status: number; json: any; text: string }> {
  const response = await fetch(url, {
    method,
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${TOKEN}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, json: text === '' ? undefined : JSON.parse(text), text };
}

describe('the network policy of outbound requests (a receiver on 127.0.0.1 reached as localhost, 127.0.0.0/8 and ::1 denied)', function () {
  this.timeout(30_000);
  const receiver = useReceiver();
  let forwarder: Forwarder | undefined;
  let url: string;

  afterEach(async () => {
    await forwarder?.close();
    forwarder = undefined;
    receiver.requests.length = 0;
  });

  /** `localhost` resolves to 127.0.0.1 (and maybe ::1): both denied, so the name is refused whichever it picks. */
  const viaName = (path: string) => receiver.url.replace('127.0.0.1', 'localhost') + path;

  async function start(config: Partial<ForwarderConfig> = {}): Promise<Forwarder> {
    forwarder = createForwarder({
      adminToken: TOKEN,
      storage: { type: 'memory' },
      delivery: { minRetryDelay: 20, maxRetryDelay: 50, denyNetworks: ['127.0.0.0/8', '::1/128'] },
      ...config,
    });
    ({ url } = await forwarder.listen({ port: 0 }));
    return forwarder;
  }

  it('a delivery to a name that resolves into a denied network fails at once, final, with ERR_NETWORK_POLICY in the delivery log; no request arrives, and the notice is refused too', async () => {
    const f = await start({
      sources: [{ name: 'web', writeKey: WRITE_KEY, destinations: { Webhooks: { webhooks: [{ url: viaName('/hook?token=q') }] } } }],
      notify: { url: viaName('/notice'), sharedSecret: 'notice-secret-for-policy-6c2b' },
    });
    const notice = once(f, 'endpoint') as Promise<[Notice]>;
    const accepted = await post(`${url}/v1/track`, { type: 'track', userId: 'u1', event: 'Policy', messageId: 'm-policy-1' }, { Authorization: basic(WRITE_KEY) });
    expect(accepted.status).to.equal(200);
    const [exhausted] = await notice;
    expect(exhausted).to.include({ type: 'delivery.exhausted', source: 'web', attempts: 1 });
    expect(exhausted.lastError).to.contain('network policy').and.to.contain('127.0.0.0/8');
    // The message and its notice, each failed after one attempt: neither is retried.
    await waitFor(async () => (await f.stats()).failed === 2, 'the delivery and the notice failed');

    const list = await call(`${url}/admin/messages?source=web`, 'GET');
    const item = list.json.items[0];
    expect(item).to.include({ status: 'failed', attempts: 1 });
    expect(item.reason).to.contain('refused by the network policy');
    const detail = await call(`${url}/admin/deliveries/${item.id}`, 'GET');
    expect(detail.json.attemptLog.map((a: { error: string }) => a.error)).to.deep.equal(['ERR_NETWORK_POLICY']);
    expect(detail.text).not.to.contain('token=q');
    expect(receiver.requests).to.deep.equal([]);
  });

  it('a test event to a refused URL answers ERR_NETWORK_POLICY with no status and no time; no request arrives', async () => {
    await start({ delivery: { denyNetworks: ['127.0.0.0/8'] }, sources: [{ name: 'app', writeKey: WRITE_KEY }] });
    const put = await call(`${url}/admin/sources/app/destinations/Webhooks`, 'PUT', {
      webhooks: [{ url: viaName('/refused') }],
    });
    expect(put.status, put.text).to.equal(200);
    const test = await call(`${url}/admin/sources/app/destinations/Webhooks/test`, 'POST', { type: 'track' });
    expect(test.status, test.text).to.equal(200);
    expect(test.json.results).to.deep.equal([{ url: viaName('/refused'), status: null, durationMs: null, error: 'ERR_NETWORK_POLICY' }]);
    expect(receiver.requests).to.deep.equal([]);
  });

  it('refuses the metadata address in every spelling, and the denied networks, when a URL is PUT (400 naming the URL), and keeps the old settings', async () => {
    await start({ sources: [{ name: 'app', writeKey: WRITE_KEY }] });
    const webhooks = `${url}/admin/sources/app/destinations/Webhooks`;
    for (const host of [...METADATA_HOSTS, '127.0.0.1', '127.1', '[::ffff:127.0.0.1]', '[::1]', '0.0.0.0', '[::]', '224.0.0.1', '255.255.255.255', '[ff02::1]', '[fe80::1]']) {
      const got = await call(webhooks, 'PUT', { webhooks: [{ url: 'https://hooks.example.test/ok' }, { url: `http://${host}/latest/meta-data/` }] });
      expect(got.status, `${host}: ${got.text}`).to.equal(400);
      expect(got.json.error.field, host).to.equal('webhooks[1].url');
      expect(got.json.error.message, host).to.contain('network policy');
    }
    const shown = await call(`${url}/admin/sources/app`, 'GET');
    expect(shown.json.destinations.Webhooks).to.equal(null);
  });

  it('POST /admin/apply refuses a literal address the policy denies, naming its path', async () => {
    await start();
    const got = await call(`${url}/admin/apply`, 'POST', {
      sources: [{ name: 'app', writeKey: WRITE_KEY, destinations: { Webhooks: { webhooks: [{ url: 'http://[::ffff:a9fe:a9fe]/' }] } } }],
    });
    expect(got.status, got.text).to.equal(400);
    expect(got.json.error.field).to.equal('sources[0].destinations.Webhooks.webhooks[0].url');
  });

  it('allowNetworks: only the listed networks are reached; a test event elsewhere is refused without a request', async () => {
    await start({ delivery: { allowNetworks: ['10.0.0.0/8'] }, sources: [{ name: 'app', writeKey: WRITE_KEY }] });
    const refused = await call(`${url}/admin/sources/app/destinations/Webhooks`, 'PUT', { webhooks: [{ url: `${receiver.url}/literal` }] });
    expect(refused.status, refused.text).to.equal(400);
    expect(refused.json.error.field).to.equal('webhooks[0].url');
    expect(refused.json.error.message).to.contain('allowNetworks');
    const put = await call(`${url}/admin/sources/app/destinations/Webhooks`, 'PUT', { webhooks: [{ url: viaName('/name') }] });
    expect(put.status, put.text).to.equal(200);
    const test = await call(`${url}/admin/sources/app/destinations/Webhooks/test`, 'POST', {});
    expect(test.json.results[0]).to.include({ status: null, durationMs: null, error: 'ERR_NETWORK_POLICY' });
    expect(receiver.requests).to.deep.equal([]);
  });

  it('by default, loopback is allowed: a test event to localhost is delivered', async () => {
    await start({ delivery: {}, sources: [{ name: 'app', writeKey: WRITE_KEY, destinations: { Webhooks: { webhooks: [{ url: viaName('/local') }] } } }] });
    const test = await call(`${url}/admin/sources/app/destinations/Webhooks/test`, 'POST', {});
    expect(test.json.results[0]).to.include({ status: 200, error: null });
    expect(test.json.results[0].durationMs).to.be.a('number');
    expect(receiver.requests.map((r) => r.path)).to.deep.equal(['/local']);
  });
});

describe('names and URLs that deceive, through the admin API', function () {
  this.timeout(30_000);
  let forwarder: Forwarder;
  let url: string;

  before(async () => {
    forwarder = createForwarder({ adminToken: TOKEN, storage: { type: 'memory' } });
    ({ url } = await forwarder.listen({ port: 0 }));
  });

  after(async () => {
    await forwarder.close();
  });

  it('refuses hostile source names with 400 naming `name`, and takes an NFD name as its NFC spelling', async () => {
    for (const name of ['web\u202egpj', 'we\u200bb', 'we\u2060b', '\ufeffweb', 'web\u2028x', 'web\u200e', 'web ', ' web', 'a\r\nb']) {
      const got = await call(`${url}/admin/sources`, 'POST', { name });
      expect(got.status, JSON.stringify(name)).to.equal(400);
      expect(got.json.error.field).to.equal('name');
    }
    const created = await call(`${url}/admin/sources`, 'POST', { name: 'cafe\u0301' });
    expect(created.status, created.text).to.equal(201);
    expect(created.json.name).to.equal('caf\u00e9');
    const again = await call(`${url}/admin/sources`, 'POST', { name: 'caf\u00e9' });
    expect(again.status).to.equal(409);
    // Either spelling in the path reaches the one source.
    for (const path of ['caf%C3%A9', 'cafe%CC%81']) expect((await call(`${url}/admin/sources/${path}`, 'GET')).json.name).to.equal('caf\u00e9');
  });

  it('refuses a URL with CR, LF or TAB, and a rate limit below 0.01 a second, naming the field', async () => {
    await call(`${url}/admin/sources`, 'POST', { name: 'urls' });
    const webhooks = `${url}/admin/sources/urls/destinations/Webhooks`;
    for (const hook of ['https://example.test/hook\r\nX-Injected: 1', 'https://example.test/ho\nok', 'https://example.test/\thook']) {
      const got = await call(webhooks, 'PUT', { webhooks: [{ url: hook }] });
      expect(got.status, JSON.stringify(hook)).to.equal(400);
      expect(got.json.error.field).to.equal('webhooks[0].url');
    }
    const slow = await call(webhooks, 'PUT', { webhooks: [{ url: 'https://example.test/hook', rateLimit: { perSecond: 1e-9 } }] });
    expect(slow.status).to.equal(400);
    expect(slow.json.error.field).to.equal('webhooks[0].rateLimit.perSecond');
    expect((await call(`${url}/admin/sources/urls`, 'GET')).json.destinations.Webhooks).to.equal(null);
  });
});
