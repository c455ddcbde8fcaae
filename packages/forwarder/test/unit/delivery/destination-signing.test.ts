import { createHmac, randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { ConfigError } from '../../../../eventrelay/src/errors';
import { WebhookDestination } from '../../../src/delivery/destination';
import type { DeliveryResult, WebhookDestinationOptions } from '../../../src/delivery/destination';
import { toWebhookMessage } from '../../../../eventrelay/src/messages/webhook';
import type { HttpRequest } from '../../../../eventrelay/src/transport/transport';
import { verifyStandardWebhook } from '../../../../eventrelay/src/webhooks/schemes/standard-webhooks';
import { verifySignature } from '../../../../eventrelay/src/webhooks/schemes/signature';
import { FakeClock } from '../../../../../test/helpers/fake-clock';
import { FakeTransport } from '../../../../../test/helpers/fake-transport';
import type { Answer } from '../../../../../test/helpers/fake-transport';

const A = 'https://a.example.com/hook';
const B = 'https://b.example.com/hook';
const WHSEC = `whsec_${randomBytes(24).toString('base64')}`;
const message = toWebhookMessage({ type: 'track', userId: 'u1', event: 'Paid', properties: { note: 'é\u2028' }, messageId: 'm-42' });

const open: WebhookDestination[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((d) => d.close()));
});

/** The clock starts at the real time so that the `standardwebhooks` package's own clock agrees. */
function setup(options: Partial<WebhookDestinationOptions>, answer: (call: number) => Answer = () => 200) {
  const clock = new FakeClock(Date.now());
  const transport = new FakeTransport((_request, _index, call) => answer(call));
  const destination = new WebhookDestination({ webhooks: [{ url: A }], transport, ...options }, { clock, random: () => 0.5 });
  open.push(destination);
  return { clock, transport, destination };
}

async function deliverWithClock(destination: WebhookDestination, clock: FakeClock): Promise<DeliveryResult> {
  let result: DeliveryResult | undefined;
  const pending = destination.deliver(message).then((r) => (result = r));
  for (let i = 0; i < 1000 && result === undefined; i++) await clock.tick(1_000);
  await pending;
  return result!;
}

const text = (request: HttpRequest) => Buffer.from(request.body).toString('utf8');

describe('WebhookDestination signing', () => {
  it('"x-signature" is the default: X-Signature only, no webhook-* headers', async () => {
    const { transport, destination } = setup({ sharedSecret: 'shh' });
    await destination.deliver(message);
    const headers = transport.requests[0]!.headers;
    expect(headers).to.have.property('X-Signature');
    expect(Object.keys(headers).filter((name) => name.startsWith('webhook-'))).to.deep.equal([]);
  });

  it('"standard-webhooks": webhook-id is the messageId, webhook-timestamp the attempt\'s second, and the standardwebhooks package verifies it', async () => {
    const { clock, transport, destination } = setup({ sharedSecret: WHSEC, signing: 'standard-webhooks' });
    await destination.deliver(message);
    const request = transport.requests[0]!;
    expect(request.headers).not.to.have.property('X-Signature');
    expect(request.headers['webhook-id']).to.equal('m-42');
    expect(request.headers['webhook-timestamp']).to.equal(String(Math.floor(clock.now() / 1000)));
    expect(new Webhook(WHSEC).verify(text(request), request.headers as Record<string, string>)).to.deep.equal(JSON.parse(text(request)));
  });

  it('"both": X-Signature of the body and a Standard Webhooks signature, each verifiable on its own', async () => {
    const { clock, transport, destination } = setup({ sharedSecret: 'plain-secret', signing: 'both' });
    await destination.deliver(message);
    const { headers, body } = transport.requests[0]!;
    expect(headers['X-Signature']).to.equal(createHmac('sha1', 'plain-secret').update(body).digest('hex'));
    expect(verifySignature(body, headers['X-Signature'], 'plain-secret')).to.equal(true);
    expect(verifyStandardWebhook(body, headers, 'plain-secret', { now: clock.now() })).to.equal(true);
    // A plain secret is used as its UTF-8 bytes: the package reads it that way with format "raw".
    expect(() => new Webhook('plain-secret', { format: 'raw' }).verify(text(transport.requests[0]!), headers as Record<string, string>)).not.to.throw();
  });

  it('retries carry the same bytes and webhook-id, with a new timestamp and signature per attempt', async () => {
    const { clock, transport, destination } = setup(
      { sharedSecret: WHSEC, signing: 'both', webhooks: [{ url: A }, { url: B }], minRetryDelay: 5_000 },
      (call) => (call < 3 ? 503 : 200),
    );
    const result = await deliverWithClock(destination, clock);
    expect(result.status).to.equal('delivered');
    const requests = transport.requests;
    expect(requests).to.have.length(6);
    const bodies = new Set(requests.map(text));
    expect(bodies.size).to.equal(1);
    expect(new Set(requests.map((r) => r.headers['webhook-id']))).to.deep.equal(new Set(['m-42']));
    expect(new Set(requests.map((r) => r.headers['X-Signature'])).size).to.equal(1);
    const stamps = requests.map((r) => Number(r.headers['webhook-timestamp']));
    // Both URLs of one attempt share its timestamp; each later attempt is later.
    expect(stamps[0]).to.equal(stamps[1]);
    expect(stamps[2]).to.be.greaterThan(stamps[0]!);
    expect(stamps[4]).to.be.greaterThan(stamps[2]!);
    expect(new Set(requests.map((r) => r.headers['webhook-signature'])).size).to.equal(3);
    for (const request of requests) {
      expect(verifyStandardWebhook(request.body, request.headers, WHSEC, { now: Number(request.headers['webhook-timestamp']) * 1000 })).to.equal(true);
    }
  });

  it('rotation: a list of secrets sends one webhook-signature per secret, X-Signature with the first', async () => {
    const { clock, transport, destination } = setup({ sharedSecret: ['new-secret', 'old-secret'], signing: 'both' });
    await destination.deliver(message);
    const { headers, body } = transport.requests[0]!;
    expect(headers['webhook-signature']!.split(' ')).to.have.length(2);
    for (const secret of ['new-secret', 'old-secret']) {
      expect(verifyStandardWebhook(body, headers, secret, { now: clock.now() }), secret).to.equal(true);
    }
    expect(verifySignature(body, headers['X-Signature'], 'new-secret')).to.equal(true);
    expect(verifySignature(body, headers['X-Signature'], 'old-secret')).to.equal(false);
  });

  it('attempt(): webhook-id from the state (the forwarder passes the messageId), else derived from the body and stable', async () => {
    const { transport, destination } = setup({ sharedSecret: WHSEC, signing: 'standard-webhooks' });
    const body = WebhookDestination.serialize(toWebhookMessage({ type: 'delete', userId: 'u1' }));
    await destination.attempt(body, { attempt: 1, firstAttemptAt: 0, id: 'delivery-7' });
    await destination.attempt(body, { attempt: 1, firstAttemptAt: 0 });
    await destination.attempt(body, { attempt: 2, firstAttemptAt: 0 });
    await destination.attempt(body, { attempt: 1, firstAttemptAt: 0, id: 'has a space' });
    await destination.attempt(body, { attempt: 1, firstAttemptAt: 0, id: 'café' });
    await destination.attempt(body, { attempt: 1, firstAttemptAt: 0, id: 'x'.repeat(257) });
    await destination.attempt(body, { attempt: 1, firstAttemptAt: 0, id: 'x'.repeat(256) });
    const ids = transport.requests.map((r) => r.headers['webhook-id']);
    expect(ids[0]).to.equal('delivery-7');
    expect(ids[1]).to.match(/^msg_[A-Za-z0-9_-]{24}$/);
    expect(ids[2]).to.equal(ids[1]);
    // Not header-safe as they are (a space, non-ASCII, over 256 characters): the body's id instead.
    expect(ids.slice(3, 6)).to.deep.equal([ids[1], ids[1], ids[1]]);
    expect(ids[6]).to.equal('x'.repeat(256));
  });

  it('refuses bad signing settings with ConfigError, never showing the secret', () => {
    const make = (options: object) => () => new WebhookDestination({ webhooks: [{ url: A }], ...options } as WebhookDestinationOptions);
    expect(make({ signing: 'svix' })).to.throw(ConfigError, /`signing` to be one of "x-signature", "standard-webhooks", "both"/);
    expect(make({ signing: 'standard-webhooks' })).to.throw(ConfigError, /needs a `sharedSecret`/);
    expect(make({ signing: 'both', sharedSecret: '' })).to.throw(ConfigError, /needs a `sharedSecret`/);
    expect(make({ sharedSecret: [] })).to.throw(ConfigError, /`sharedSecret`/);
    expect(make({ sharedSecret: ['ok', ''] })).to.throw(ConfigError, /`sharedSecret\[1\]`/);
    let error: ConfigError | undefined;
    try {
      make({ signing: 'standard-webhooks', sharedSecret: 'whsec_n0t-base64!' })();
    } catch (caught) {
      error = caught as ConfigError;
    }
    expect(error).to.be.instanceOf(ConfigError);
    expect(error!.field).to.equal('sharedSecret');
    expect(error!.message).not.to.include('n0t-base64');
    for (const name of ['webhook-id', 'Webhook-Timestamp', 'WEBHOOK-SIGNATURE']) {
      expect(make({ webhooks: [{ url: A, headers: { [name]: 'x' } }] }), name).to.throw(ConfigError, /not allowed/);
    }
  });
});
