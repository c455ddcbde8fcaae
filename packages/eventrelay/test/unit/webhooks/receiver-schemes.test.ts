import { expect } from 'chai';
import fc from 'fast-check';
import { ConfigError, SignatureVerificationError, TimeoutError, WebhookTimestampError } from '../../../src/errors';
import { createFetchHandler } from '../../../src/webhooks/adapters/fetch';
import type { WebhookReceiverOptions } from '../../../src/webhooks/options';
import { createWebhookReceiver } from '../../../src/webhooks/receiver';
import type { WebhookMessage } from '../../../src/webhooks/message-types';
import { signStandardWebhook } from '../../../src/webhooks/schemes/standard-webhooks';
import { FakeClock, flushMicrotasks } from '../../../../../test/helpers/fake-clock';
import { body, SECRET, signatureOf } from '../../fixtures/webhooks/load';

const NAME = 'track-compact.json';
const RAW = body(NAME);
const X_SIGNATURE = { 'x-signature': signatureOf(NAME) };

function setup(overrides: Partial<WebhookReceiverOptions<object>> = {}, webCrypto = false) {
  const clock = new FakeClock();
  const messages: WebhookMessage[] = [];
  const errors: [unknown, number][] = [];
  const receiver = createWebhookReceiver<object>(
    { secret: SECRET, handler: (m) => void messages.push(m), onError: (e, s) => void errors.push([e, s]), ...overrides },
    { clock, webCrypto },
  );
  const standard = (at = clock.now(), secret: string | string[] = SECRET) => signStandardWebhook(RAW, secret, { id: 'msg_1', timestamp: new Date(at) });
  const receive = (headers: object) => receiver.receive({ body: RAW, headers: headers as never, context: {} });
  return { clock, messages, errors, receiver, standard, receive };
}

describe('createWebhookReceiver: signature schemes', () => {
  for (const webCrypto of [false, true]) {
    describe(webCrypto ? 'with Web Crypto' : "with Node's crypto", () => {
      it('scheme "standard-webhooks": 204 for a Standard Webhooks signature, 401 for X-Signature alone', async () => {
        const { receive, standard, messages, errors } = setup({ scheme: 'standard-webhooks' }, webCrypto);
        expect((await receive(standard())).status).to.equal(204);
        expect(messages).to.have.length(1);
        const refused = await receive(X_SIGNATURE);
        expect(refused.status).to.equal(401);
        expect(JSON.parse(refused.body!)).to.deep.equal({ error: 'Invalid or missing signature.' });
        expect(errors[0]![0]).to.be.instanceOf(SignatureVerificationError);
        expect((errors[0]![0] as Error).message).to.match(/webhook-id, webhook-timestamp, webhook-signature/);
      });

      it('refuses a replay outside timestampTolerance with 401 and a WebhookTimestampError', async () => {
        const { receive, standard, clock, messages, errors } = setup({ scheme: 'standard-webhooks', timestampTolerance: 60_000 }, webCrypto);
        const captured = standard();
        await clock.tick(60_000);
        expect((await receive(captured)).status).to.equal(204);
        await clock.tick(1_000);
        const replay = await receive(captured);
        expect(replay.status).to.equal(401);
        expect(JSON.parse(replay.body!)).to.deep.equal({ error: 'The webhook-timestamp is outside the tolerance.' });
        expect(messages).to.have.length(1);
        expect(errors).to.have.length(1);
        expect(errors[0]![0]).to.be.instanceOf(WebhookTimestampError);
        expect(errors[0]![0]).to.include({ code: 'ERR_WEBHOOK_TIMESTAMP', tolerance: 60_000 });
      });

      it('scheme "either": passes Standard Webhooks, X-Signature or both; refuses neither', async () => {
        const { receive, standard, messages, errors } = setup({ scheme: 'either' }, webCrypto);
        expect((await receive(standard())).status).to.equal(204);
        expect((await receive(X_SIGNATURE)).status).to.equal(204);
        expect((await receive({ ...standard(), ...X_SIGNATURE })).status).to.equal(204);
        expect(messages).to.have.length(3);
        expect((await receive({})).status).to.equal(401);
        expect((await receive(standard(Date.now(), 'another-secret'))).status).to.equal(401);
        expect(errors.map(([, status]) => status)).to.deep.equal([401, 401]);
      });
    });
  }

  it('the default stays the spec\'s X-Signature: Standard Webhooks headers alone get 401', async () => {
    const { receive, standard } = setup();
    expect((await receive(X_SIGNATURE)).status).to.equal(204);
    const answer = await receive(standard());
    expect(answer.status).to.equal(401);
    expect(JSON.parse(answer.body!)).to.deep.equal({ error: 'Invalid or missing X-Signature.' });
  });

  it('accepts a whsec_ secret for Standard Webhooks, decoded from base64', async () => {
    const secret = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`;
    const { receive, clock } = setup({ secret, scheme: 'standard-webhooks' });
    const headers = signStandardWebhook(RAW, secret, { id: 'msg_2', timestamp: new Date(clock.now()) });
    expect((await receive(headers)).status).to.equal(204);
  });

  it('checks scheme, timestampTolerance and a whsec_ secret at setup with ConfigError', () => {
    const make = (options: object) => () => createWebhookReceiver({ secret: SECRET, handler: () => {}, ...options });
    expect(make({ scheme: 'svix' })).to.throw(ConfigError, /`scheme` to be one of "x-signature", "standard-webhooks", "either", got `"svix"`/);
    expect(make({ timestampTolerance: -1 })).to.throw(ConfigError, /`timestampTolerance`/);
    expect(make({ timestampTolerance: '5m' })).to.throw(ConfigError, /`timestampTolerance`/);
    expect(make({ scheme: 'standard-webhooks', secret: 'whsec_***' })).to.throw(ConfigError, /base64/);
    // X-Signature keys with the text as it is, whatever its prefix.
    expect(make({ secret: 'whsec_***' })).not.to.throw();
  });
});

describe('createWebhookReceiver: a body that arrives after the timeout (issue 9.4)', () => {
  it('answers 503 once, never calls the handler, and calls onError exactly once', async () => {
    const { clock, messages, errors, receiver } = setup({ timeout: 100 });
    let release!: (value: Buffer) => void;
    const late = new Promise<Buffer>((resolve) => (release = resolve));
    const answer = receiver.receive({ body: () => late, headers: X_SIGNATURE, context: {} });
    await clock.tick(100);
    expect((await answer).status).to.equal(503);
    release(RAW);
    await flushMicrotasks();
    expect(messages).to.deep.equal([]);
    expect(errors).to.have.length(1);
    expect(errors[0]![0]).to.be.instanceOf(TimeoutError);
  });

  it('reports only the timeout when the late body then fails its check', async () => {
    const { clock, errors, receiver } = setup({ timeout: 100 });
    let release!: (value: Buffer) => void;
    const answer = receiver.receive({ body: () => new Promise<Buffer>((resolve) => (release = resolve)), headers: {}, context: {} });
    await clock.tick(100);
    await answer;
    release(RAW); // unsigned: would be a 401
    await flushMicrotasks();
    expect(errors.map(([error, status]) => [(error as Error).name, status])).to.deep.equal([['TimeoutError', 503]]);
  });

  it('the Fetch adapter: a stream that ends after the timeout gets 503 and the handler never runs', async () => {
    const handled: WebhookMessage[] = [];
    const errors: unknown[] = [];
    const handle = createFetchHandler({ secret: SECRET, timeout: 50, handler: (m) => void handled.push(m), onError: (e) => void errors.push(e) });
    let finish!: () => void;
    const stream = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(RAW.subarray(0, 10));
        await new Promise<void>((resolve) => (finish = resolve));
        controller.enqueue(RAW.subarray(10));
        controller.close();
      },
    });
    const request = new Request('http://127.0.0.1/hook', { method: 'POST', body: stream, headers: X_SIGNATURE, duplex: 'half' } as RequestInit);
    const response = await handle(request);
    expect(response.status).to.equal(503);
    finish();
    await flushMicrotasks();
    expect(handled).to.deep.equal([]);
    expect(errors).to.have.length(1);
    expect(errors[0]).to.be.instanceOf(TimeoutError);
  });
});

describe('createWebhookReceiver: receive() never rejects (issue 9.12)', () => {
  const throwing = Object.defineProperty({}, 'x-signature', { enumerable: true, get: () => { throw new Error('getter'); } });
  const shapes: Record<string, unknown> = {
    'a null-prototype object': Object.assign(Object.create(null) as object, X_SIGNATURE),
    'a getter that throws': throwing,
    'a get() that throws': { get: () => { throw new Error('get'); } },
    'an array': [X_SIGNATURE],
    'a number': 42,
    'a string': 'x-signature: abc',
    null: null,
    undefined,
    'a revoked Proxy': (() => {
      const { proxy, revoke } = Proxy.revocable({}, {});
      revoke();
      return proxy;
    })(),
  };
  for (const scheme of ['x-signature', 'standard-webhooks', 'either'] as const) {
    for (const [label, headers] of Object.entries(shapes)) {
      it(`${scheme}: headers as ${label}`, async () => {
        const { receiver } = setup({ scheme });
        const answer = await receiver.receive({ body: RAW, headers: headers as never, context: {} });
        // The null-prototype map holds a valid X-Signature; everything else cannot be read as one.
        const expected = label === 'a null-prototype object' && scheme !== 'standard-webhooks' ? 204 : 401;
        expect(answer.status).to.equal(expected);
      });
    }
  }

  it('for any value at all as headers, resolves with 401 (property test)', async () => {
    const { receiver } = setup({ scheme: 'either' });
    await fc.assert(
      fc.asyncProperty(fc.anything({ withNullPrototype: true, withMap: true, withSet: true, withBigInt: true, withDate: true }), async (headers) => {
        const answer = await receiver.receive({ body: RAW, headers: headers as never, context: {} });
        expect(answer.status).to.equal(401);
      }),
      { numRuns: 300 },
    );
  });

  it('an incoming object whose getters throw, or no object at all, gets a 500', async () => {
    const { receiver, errors } = setup();
    const hostile = Object.defineProperty({}, 'headers', { get: () => { throw new Error('headers'); } });
    expect((await receiver.receive(hostile as never)).status).to.equal(500);
    expect((await receiver.receive(null as never)).status).to.equal(500);
    expect(errors.map(([, status]) => status)).to.deep.equal([500, 500]);
  });
});
