import { afterEach, describe, it } from 'mocha';
import { expect } from 'chai';
import { ConfigError } from '../../../../eventrelay/src/errors';
import { WebhookDestination } from '../../../src/delivery/destination';
import type { WebhookDestinationOptions } from '../../../src/delivery/destination';
import { toWebhookMessage } from '../../../../eventrelay/src/messages/webhook';
import { verifyStandardWebhook } from '../../../../eventrelay/src/webhooks/schemes/standard-webhooks';
import { verifySignature } from '../../../../eventrelay/src/webhooks/schemes/signature';
import type { HttpRequest } from '../../../../eventrelay/src/transport/transport';
import { OperatorLog } from '../../../src/observability/logs';
import type { OperatorLogger } from '../../../src/observability/logs';
import { FakeClock } from '../../../../../test/helpers/fake-clock';
import { FakeTransport } from '../../../../../test/helpers/fake-transport';
import type { Answer } from '../../../../../test/helpers/fake-transport';

const CHAT = 'https://chat.example.com/hook';
const CRM = 'https://crm.example.com/hook';
const RAW = 'https://raw.example.com/hook';
const SECRET = 'transform-secret';

const body = (message: Parameters<typeof toWebhookMessage>[0]) => WebhookDestination.serialize(toWebhookMessage({ userId: 'u1', ...message }, { receivedAt: 0 }));
const order = body({ type: 'track', event: 'Order Completed', properties: { total: 42, email: 'a@example.com' }, messageId: 'm-order' });

const TO_CHAT = 'function transform(m) { return { text: m.event + " by " + m.userId }; }';
const RENAME = 'function transform(m) { return { user: m.userId, name: m.event, at: m.timestamp }; }';

const open: WebhookDestination[] = [];

function setup(webhooks: WebhookDestinationOptions['webhooks'], answer: (url: string) => Answer = () => 200, more: Partial<WebhookDestinationOptions> = {}) {
  const clock = new FakeClock();
  const transport = new FakeTransport((request) => answer(request.url.href));
  const destination = new WebhookDestination({ webhooks, transport, sharedSecret: SECRET, signing: 'both', ...more }, { clock, random: () => 0.5 });
  open.push(destination);
  return { clock, transport, destination };
}

const text = (request: HttpRequest) => Buffer.from(request.body).toString('utf8');
const headersOf = (request: HttpRequest) => request.headers as Record<string, string>;

afterEach(async () => {
  await Promise.all(open.splice(0).map((d) => d.close()));
});

describe('WebhookDestination per-URL transforms', function () {
  this.timeout(20_000);

  it('sends each URL what its transform made, signed over those bytes (both schemes), and the message as it is to a URL without one', async () => {
    const { clock, transport, destination } = setup([{ url: CHAT, transform: { code: TO_CHAT } }, { url: CRM, transform: { code: RENAME } }, { url: RAW }]);
    const result = await destination.attempt(order, { attempt: 1, firstAttemptAt: 0, id: 'm-order' });
    expect(result.status).to.equal('delivered');
    const [chat] = transport.to(CHAT);
    const [crm] = transport.to(CRM);
    const [raw] = transport.to(RAW);
    expect(JSON.parse(text(chat!))).to.deep.equal({ text: 'Order Completed by u1' });
    expect(JSON.parse(text(crm!))).to.deep.equal({ user: 'u1', name: 'Order Completed', at: JSON.parse(order).timestamp });
    expect(text(raw!)).to.equal(order);
    for (const request of [chat!, crm!, raw!]) {
      const headers = headersOf(request);
      expect(headers['Content-Length']).to.equal(String(Buffer.byteLength(text(request))));
      expect(verifySignature(text(request), headers['X-Signature'], SECRET), request.url.href).to.equal(true);
      expect(verifyStandardWebhook(text(request), headers, SECRET, { now: clock.now() }), request.url.href).to.equal(true);
      expect(headers['webhook-id']).to.equal('m-order');
    }
    // A signature of another URL's bytes does not verify this one's.
    expect(verifySignature(text(chat!), headersOf(crm!)['X-Signature'], SECRET)).to.equal(false);
  });

  it('a transform that returns null or undefined skips its URL for that call; when every URL skips, nothing is sent and the reason says Filtered', async () => {
    const dropTracks = 'function transform(m) { if (m.type === "track") return null; return m; }';
    const { transport, destination } = setup([{ url: CHAT, transform: { code: dropTracks } }, { url: CRM, transform: { code: 'function transform(m) { return m.type === "identify" ? m : undefined; }' } }, { url: RAW }]);
    expect((await destination.attempt(order, { attempt: 1, firstAttemptAt: 0 })).status).to.equal('delivered');
    expect(transport.requests.map((r) => r.url.href)).to.deep.equal([RAW]);

    const only = setup([{ url: CHAT, transform: { code: dropTracks } }]);
    const result = await only.destination.attempt(order, { attempt: 1, firstAttemptAt: 0 });
    expect(result).to.deep.include({ status: 'failed', outcomes: [] });
    expect((result as { reason: string }).reason).to.match(/^Filtered: /);
    expect(only.transport.requests).to.have.length(0);
  });

  it('a throw fails its URL for that call, final, with transform_failed and the reason; the other URLs decide the call', async () => {
    const throws = 'function transform(m) { if (!m.properties.plan) throw new Error("no plan"); return m; }';
    const { clock, transport, destination } = setup([{ url: CHAT, transform: { code: throws } }, { url: CRM }], () => 503);
    const result = await destination.attempt(order, { attempt: 1, firstAttemptAt: clock.now() });
    expect(result.status).to.equal('retry');
    const failed = result.outcomes.find((o) => o.url === CHAT)!;
    expect(failed).to.include({ retryable: false, index: 0 });
    expect(failed.error?.code).to.equal('ERR_TRANSFORM');
    expect(failed.error?.message).to.match(/^transform_failed: Error: no plan \(line 1, column \d+\)/);
    expect(transport.to(CHAT)).to.have.length(0);

    const alone = setup([{ url: CHAT, transform: { code: throws } }]);
    const final = await alone.destination.attempt(order, { attempt: 1, firstAttemptAt: 0 });
    expect(final.status).to.equal('failed');
    expect((final as { reason: string }).reason).to.contain('transform_failed: Error: no plan');
    expect(alone.transport.requests).to.have.length(0);
  });

  it('a failed transform is an endpoint.failing line of the operator log, with error ERR_TRANSFORM and nothing of the message', async () => {
    const { clock, destination } = setup([{ url: CHAT, transform: { code: 'function transform(m) { throw new Error("bad " + typeof m); }' } }]);
    const result = await destination.attempt(order, { attempt: 1, firstAttemptAt: clock.now() });
    const lines: { fields: Record<string, unknown>; msg: string }[] = [];
    const write = (fields: object, msg: string) => lines.push({ fields: fields as Record<string, unknown>, msg });
    const logger: OperatorLogger = { info: write, warn: write, error: write };
    new OperatorLog(logger, clock).attempt({ id: 1, source: 'shop', kind: 'message', messageId: 'm-order', createdAt: 0, orderKey: undefined, result });
    const failing = lines.find((l) => l.fields.event === 'endpoint.failing');
    expect(failing?.fields).to.deep.include({ source: 'shop', url: CHAT, error: 'ERR_TRANSFORM' });
    expect(JSON.stringify(lines)).not.to.contain('a@example.com');
  });

  it('a timeout and an output that is not JSON fail the URL with a clear reason', async () => {
    const loops = setup([{ url: CHAT, transform: { code: 'function transform(m) { for (;;) {} }', timeoutMs: 5 } }]);
    const timedOut = await loops.destination.attempt(order, { attempt: 1, firstAttemptAt: 0 });
    expect((timedOut as { reason: string }).reason).to.contain('transform_failed: timed out after 5 ms');
    const bigint = setup([{ url: CHAT, transform: { code: 'function transform(m) { return { n: 1n }; }' } }]);
    const notJson = await bigint.destination.attempt(order, { attempt: 1, firstAttemptAt: 0 });
    expect((notJson as { reason: string }).reason).to.contain('transform_failed: output is not JSON: output.n is a BigInt');
  });

  it('deliver() transforms once: a retry sends the same bytes to the URL that failed, and no more to one whose transform failed', async () => {
    let calls = 0;
    const { clock, transport, destination } = setup(
      [{ url: CHAT, transform: { code: 'let n = 0; function transform(m) { n++; return { n: n }; }' } }, { url: CRM, transform: { code: 'function transform() { throw "bad"; }' } }],
      (url) => (url === CHAT && ++calls === 1 ? 503 : 200),
      { minRetryDelay: 10, maxRetryDelay: 10 },
    );
    const pending = destination.deliver(order);
    while (transport.to(CHAT).length < 1 || clock.pending < 2) await new Promise((resolve) => setImmediate(resolve));
    await clock.tick(20);
    const result = await pending;
    expect(result.status).to.equal('delivered');
    expect(transport.to(CHAT).map(text)).to.deep.equal(['{"n":1}', '{"n":1}']);
    expect(transport.to(CRM)).to.have.length(0);
  });

  it('checks `transform` when the destination is made: the code a string of at most 64 KB, timeoutMs from 1 to 1000', () => {
    expect(() => setup([{ url: CHAT, transform: { code: 'function transform(m) { return m; }', timeoutMs: 0 } }])).to.throw(ConfigError, /webhooks\[0\]\.transform\.timeoutMs/);
    expect(() => setup([{ url: CHAT, transform: { code: 'x'.repeat(64 * 1024 + 1) } }])).to.throw(ConfigError, /at most 65536 bytes/);
    expect(() => setup([{ url: CHAT, transform: { code: '' } }])).to.throw(ConfigError, /transform\.code/);
    expect(() => setup([{ url: CHAT, transform: { code: 'function transform() {}', extra: 1 } as never }])).to.throw(ConfigError, /transform\.extra/);
  });
});
