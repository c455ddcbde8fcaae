import { createHmac } from 'node:crypto';
import { format } from 'node:util';
import createDebug from 'debug';
import { afterEach, describe, it } from 'mocha';
import { expect } from 'chai';
import { HttpError, NetworkError, SerializationError } from '../../../../eventrelay/src/errors';
import { WebhookDestination } from '../../../src/delivery/destination';
import type { DeliveryResult, WebhookDestinationOptions } from '../../../src/delivery/destination';
import { toWebhookMessage } from '../../../../eventrelay/src/messages/webhook';
import type { WebhookMessage } from '../../../../eventrelay/src/messages/webhook';
import { FakeClock, flushMicrotasks } from '../../../../../test/helpers/fake-clock';
import { FakeTransport, deferred, refused } from '../../../../../test/helpers/fake-transport';
import type { Answer } from '../../../../../test/helpers/fake-transport';

const HOUR = 3_600_000;
const A = 'https://a.example.com/hook';
const B = 'https://b.example.com/hook';
const C = 'http://c.example.com/hook';
const message = toWebhookMessage({ type: 'track', userId: 'u1', event: 'Order Completed', properties: { revenue: 9.5 }, timestamp: '2026-01-01T00:00:00.000Z', messageId: 'm1' });

const open: WebhookDestination[] = [];

function setup(options: Partial<WebhookDestinationOptions>, script: (url: string, call: number) => Answer | Promise<Answer>) {
  const clock = new FakeClock();
  const transport = new FakeTransport((request, _index, call) => script(request.url.href, call));
  const destination = new WebhookDestination({ webhooks: [{ url: A }], transport, ...options }, { clock, random: () => 0.5 });
  open.push(destination);
  return { clock, transport, destination };
}

/** Runs deliver() while moving the fake clock until it settles. */
async function deliverWithClock(destination: WebhookDestination, clock: FakeClock, msg: WebhookMessage | string = message): Promise<DeliveryResult> {
  let result: DeliveryResult | undefined;
  const pending = destination.deliver(msg).then((r) => (result = r));
  for (let i = 0; i < 10_000 && result === undefined; i++) await clock.tick(60_000);
  await pending;
  return result!;
}

afterEach(async () => {
  await Promise.all(open.splice(0).map((d) => d.close()));
});

describe('WebhookDestination request', () => {
  it('POSTs JSON with the User-Agent, the static headers of the entry and a Content-Length', async () => {
    const { transport, destination } = setup({ webhooks: [{ url: A, headers: { 'X-Api-Key': 'k-1' } }, { url: B }] }, () => 200);
    await destination.attempt('{"a":"é"}', { attempt: 1, firstAttemptAt: 0 });
    const [toA] = transport.to(A);
    const [toB] = transport.to(B);
    expect(toA?.headers).to.deep.equal({
      'Content-Type': 'application/json',
      'User-Agent': 'EventRelay-Webhooks/1.0',
      'X-Api-Key': 'k-1',
      'Content-Length': '10',
    });
    expect(toB?.headers).not.to.have.property('X-Api-Key');
    expect(Buffer.from(toA?.body ?? '').toString('utf8')).to.equal('{"a":"é"}');
  });

  it('signs the exact body bytes with hex HMAC-SHA1 only when a shared secret is set', async () => {
    const body = WebhookDestination.serialize(message);
    const signed = setup({ sharedSecret: 'shh' }, () => 200);
    await signed.destination.attempt(body, { attempt: 1, firstAttemptAt: 0 });
    const expected = createHmac('sha1', 'shh').update(Buffer.from(body, 'utf8')).digest('hex');
    expect(signed.transport.requests[0]?.headers['X-Signature']).to.equal(expected);

    const unsigned = setup({}, () => 200);
    await unsigned.destination.attempt(body, { attempt: 1, firstAttemptAt: 0 });
    expect(unsigned.transport.requests[0]?.headers).not.to.have.property('X-Signature');

    const empty = setup({ sharedSecret: '' }, () => 200);
    await empty.destination.attempt(body, { attempt: 1, firstAttemptAt: 0 });
    expect(empty.transport.requests[0]?.headers).not.to.have.property('X-Signature');
  });

  it('serializes and signs once: every URL and every retry get the same bytes and header set', async () => {
    const { clock, transport, destination } = setup(
      { sharedSecret: 'shh', webhooks: [{ url: A }, { url: B }, { url: C }] },
      (_url, call) => (call < 3 ? 503 : 200),
    );
    const result = await deliverWithClock(destination, clock);
    expect(result).to.include({ status: 'delivered', attempt: 3 });
    expect(transport.requests).to.have.length(9);
    const body = transport.requests[0]!.body;
    for (const request of transport.requests) expect(request.body).to.equal(body);
    const toA = transport.to(A);
    expect(toA[1]!.headers).to.equal(toA[0]!.headers);
    expect(toA[2]!.headers).to.equal(toA[0]!.headers);
    expect(body.toString()).to.equal(JSON.stringify(message));
  });

  it('sends a string message as it is', async () => {
    const { transport, destination } = setup({}, () => 200);
    await destination.deliver('{"type":"delete","userId":"u1","timestamp":"2026-01-01T00:00:00.000Z"}');
    expect(transport.requests[0]?.body.toString()).to.equal('{"type":"delete","userId":"u1","timestamp":"2026-01-01T00:00:00.000Z"}');
  });
});

describe('WebhookDestination outcome rules', () => {
  it('one 2xx among five URLs delivers the message; nothing is retried', async () => {
    const urls = [1, 2, 3, 4, 5].map((n) => `https://h${n}.example.com/in`);
    const { clock, transport, destination } = setup({ webhooks: urls.map((url) => ({ url })) }, (url) =>
      url === urls[3] ? 204 : url === urls[0] ? refused() : 500,
    );
    const result = await destination.deliver(message);
    expect(result).to.include({ status: 'delivered', url: urls[3], attempt: 1 });
    expect(result.outcomes.map((o) => o.status)).to.deep.equal([undefined, 500, 500, 204, 500]);
    expect(clock.pending).to.equal(0);
    await clock.tick(HOUR);
    expect(transport.requests).to.have.length(5);
  });

  it('all 5xx: retried with backoff, then delivered', async () => {
    const { clock, transport, destination } = setup({ webhooks: [{ url: A }, { url: B }], minRetryDelay: 1000 }, (_url, call) =>
      call === 1 ? 500 : call === 2 ? 502 : 200,
    );
    const pending = destination.deliver(message);
    await flushMicrotasks();
    expect(transport.requests).to.have.length(2);
    await clock.tick(749); // random 0.5 -> 750 ms for the first retry
    expect(transport.requests).to.have.length(2);
    await clock.tick(1);
    expect(transport.requests).to.have.length(4);
    await clock.tick(1500); // second retry: 1500 ms
    const result = await pending;
    expect(result).to.include({ status: 'delivered', attempt: 3, url: A });
  });

  it('every non-2xx answer but 410 is retried within the window: 401, 400, 404, 429, a redirect', async () => {
    for (const status of [401, 400, 404, 429, 303]) {
      const { clock, transport, destination } = setup({ minRetryDelay: 1000 }, (_url, call) => (call === 1 ? status : 200));
      const first = await destination.attempt('{}', { attempt: 1, firstAttemptAt: clock.now() });
      expect(first.status, `HTTP ${status}`).to.equal('retry');
      expect(first.outcomes[0]).to.deep.include({ status, retryable: true });
      expect(first.outcomes[0]!.error).to.be.instanceOf(HttpError);
      expect((first.outcomes[0]!.error as HttpError).retryable).to.equal(true);
      // deliver(): the first answer is the status again, the retry after the backoff is delivered.
      const again = setup({ minRetryDelay: 1000 }, (_url, call) => (call === 1 ? status : 200));
      const result = await deliverWithClock(again.destination, again.clock);
      expect(result, `HTTP ${status}`).to.include({ status: 'delivered', attempt: 2 });
      expect(again.transport.requests).to.have.length(2);
      expect(transport.requests).to.have.length(1);
    }
  });

  it('a 401 that lasts is retried until the 4-hour window ends (fake clock)', async () => {
    const { clock, transport, destination } = setup({}, () => 401);
    const result = await deliverWithClock(destination, clock);
    expect(result.status).to.equal('failed');
    if (result.status === 'failed') expect(result.reason).to.match(/retry window of 4 h/).and.include('answered HTTP 401');
    expect(transport.requests.length).to.be.greaterThan(10);
  });

  it('410 Gone alone is final: failed at once, no retry', async () => {
    const { clock, transport, destination } = setup({}, () => 410);
    const result = await destination.deliver(message);
    expect(result).to.include({ status: 'failed', attempt: 1 });
    expect(result.outcomes[0]).to.deep.include({ status: 410, retryable: false });
    if (result.status === 'failed') expect(result.reason).to.include('answered HTTP 410 (Gone: final for this URL, not retried)');
    expect(clock.pending).to.equal(0);
    expect(transport.requests).to.have.length(1);
  });

  it('3xx: a redirect is not followed (retried, with a hint to configure the final URL)', async () => {
    const { clock, destination } = setup({}, () => 303);
    const result = await destination.attempt('{}', { attempt: 1, firstAttemptAt: clock.now() });
    expect(result.status).to.equal('retry');
    expect(result.outcomes[0]?.error?.message).to.match(/redirects are not followed/);
  });

  it('one retryable failure beside a 410 means retry', async () => {
    const { clock, destination } = setup({ webhooks: [{ url: A }, { url: B }] }, (url) => (url === A ? 410 : refused()));
    const result = await destination.attempt('{}', { attempt: 1, firstAttemptAt: clock.now() });
    expect(result.status).to.equal('retry');
  });

  it('honours Retry-After on a 429', async () => {
    const { clock, destination } = setup({}, () => ({ status: 429, retryAfter: '120' }));
    const result = await destination.attempt('{}', { attempt: 1, firstAttemptAt: clock.now() });
    expect(result.status).to.equal('retry');
    if (result.status === 'retry') expect(result.nextAttemptAt).to.equal(clock.now() + 120_000);
  });

  it('a certificate error is final', async () => {
    const tlsError = new NetworkError('self-signed certificate refused', { code: 'ERR_TLS_CERTIFICATE', retryable: false });
    const { destination } = setup({}, () => tlsError);
    const result = await destination.deliver(message);
    expect(result.status).to.equal('failed');
    expect(result.outcomes[0]?.error).to.equal(tlsError);
  });

  it('honours Retry-After on a 503', async () => {
    const { clock, destination } = setup({}, () => ({ status: 503, retryAfter: '120' }));
    const result = await destination.attempt('{}', { attempt: 1, firstAttemptAt: clock.now() });
    expect(result.status).to.equal('retry');
    if (result.status === 'retry') expect(result.nextAttemptAt).to.equal(clock.now() + 120_000);
  });

  it('attempt() sets no timer: it answers when the next attempt is due', async () => {
    const { clock, destination } = setup({ minRetryDelay: 2000 }, () => 500);
    const result = await destination.attempt('{}', { attempt: 1, firstAttemptAt: clock.now() });
    expect(result).to.deep.include({ status: 'retry', attempt: 1, nextAttemptAt: clock.now() + 1500 });
    expect(clock.pending).to.equal(0);
  });

  it('ends with a final failure when the 4-hour window is over (fake clock)', async () => {
    const { clock, transport, destination } = setup({}, () => 503);
    const started = clock.now();
    const result = await deliverWithClock(destination, clock);
    expect(result.status).to.equal('failed');
    if (result.status === 'failed') expect(result.reason).to.match(/retry window of 4 h/);
    expect(result.attempt).to.equal(transport.requests.length);
    expect(result.attempt).to.be.greaterThan(10);
    expect(clock.now() - started).to.be.at.least(4 * HOUR - 600_000);
    expect(clock.pending).to.equal(0);
  });

  it('attempt() for a message whose window is over answers failed', async () => {
    const { clock, destination } = setup({}, () => 500);
    const result = await destination.attempt('{}', { attempt: 40, firstAttemptAt: clock.now() - 4 * HOUR });
    expect(result.status).to.equal('failed');
  });

  it('attempt() never rejects: a body that is not a string fails, a transport that throws counts as a network error', async () => {
    const { clock, destination } = setup({}, () => {
      throw new TypeError('boom');
    });
    const bad = await destination.attempt(undefined as unknown as string, { attempt: 1, firstAttemptAt: clock.now() });
    expect(bad.status).to.equal('failed');
    const thrown = await destination.attempt('{}', { attempt: 1, firstAttemptAt: clock.now() });
    expect(thrown.status).to.equal('retry');
    expect(thrown.outcomes[0]?.error?.cause).to.be.instanceOf(TypeError);
    expect(thrown.outcomes[0]?.error).to.be.instanceOf(NetworkError).and.include({ code: 'ERR_NETWORK', retryable: true });
  });

  it('deliver() never rejects: a message that cannot be serialized fails', async () => {
    const circular: Record<string, unknown> = { type: 'track' };
    circular.self = circular;
    expect(() => WebhookDestination.serialize(circular as unknown as WebhookMessage)).to.throw(SerializationError);
    const { transport, destination } = setup({}, () => 200);
    const result = await destination.deliver(circular as unknown as WebhookMessage);
    expect(result.status).to.equal('failed');
    expect(transport.requests).to.have.length(0);
  });
});

describe('WebhookDestination concurrency and close', () => {
  it('bounds the attempts in flight', async () => {
    const gate = deferred<number>();
    const { transport, destination } = setup({ concurrency: 2 }, () => gate.promise);
    const all = Promise.all(Array.from({ length: 6 }, () => destination.deliver(message)));
    await flushMicrotasks();
    expect(transport.inFlight).to.equal(2);
    gate.resolve(200);
    const results = await all;
    expect(results.every((r) => r.status === 'delivered')).to.equal(true);
    expect(transport.maxInFlight).to.equal(2);
  });

  it('starts attempts waiting for a slot in the order they came, and close() waits for those too', async () => {
    const gates = [deferred<number>(), deferred<number>(), deferred<number>()];
    const { transport, destination } = setup({ concurrency: 1 }, (_url, call) => gates[call - 1]!.promise);
    const attempts = ['{"n":1}', '{"n":2}', '{"n":3}'].map((body) => destination.attempt(body, { attempt: 1, firstAttemptAt: 0 }));
    let closed = false;
    const closing = destination.close().then(() => (closed = true));
    const sent = () => transport.requests.map((r) => Buffer.from(r.body ?? '').toString('utf8'));
    for (let i = 0; i < 3; i++) {
      await flushMicrotasks();
      expect(transport.inFlight).to.equal(1);
      expect(sent()).to.deep.equal(['{"n":1}', '{"n":2}', '{"n":3}'].slice(0, i + 1));
      expect(closed).to.equal(false);
      gates[i]!.resolve(200);
    }
    expect((await Promise.all(attempts)).map((r) => r.status)).to.deep.equal(['delivered', 'delivered', 'delivered']);
    await closing;
    expect(transport.closed).to.equal(true);
  });

  it('close() stops retry timers: a waiting delivery resolves as failed', async () => {
    const { clock, transport, destination } = setup({}, () => 500);
    const pending = destination.deliver(message);
    await flushMicrotasks();
    expect(clock.pending).to.equal(2); // the retry timer, and the one that holds the process while deliver() is pending
    await destination.close();
    const result = await pending;
    expect(result).to.include({ status: 'failed', attempt: 1 });
    if (result.status === 'failed') expect(result.reason).to.match(/^closed/);
    expect(clock.pending).to.equal(0);
    expect(transport.closed).to.equal(true);
  });

  it('close() waits for attempts in flight, then releases the transport; twice is the same promise', async () => {
    const gate = deferred<number>();
    const { transport, destination } = setup({}, () => gate.promise);
    const delivery = destination.deliver(message);
    await flushMicrotasks();
    let closed = false;
    const closing = destination.close().then(() => (closed = true));
    expect(destination.close()).to.equal(destination.close());
    await flushMicrotasks();
    expect(closed).to.equal(false);
    expect(transport.closed).to.equal(false);
    gate.resolve(200);
    await closing;
    expect(transport.closed).to.equal(true);
    expect((await delivery).status).to.equal('delivered');
  });

  it('after close(), deliver() fails and attempt() sends nothing but keeps the message (retry)', async () => {
    const { clock, transport, destination } = setup({}, () => 200);
    await destination.close();
    expect((await destination.deliver(message)).status).to.equal('failed');
    const result = await destination.attempt('{}', { attempt: 3, firstAttemptAt: 0 });
    expect(result).to.deep.include({ status: 'retry', attempt: 3, nextAttemptAt: clock.now() });
    expect(transport.requests).to.have.length(0);
  });
});

describe('WebhookDestination debug logging', () => {
  it('logs each attempt under eventrelay:delivery with status and URL, never secrets, header values or bodies', async () => {
    const lines: string[] = [];
    const previous = createDebug.log;
    const wasEnabled = createDebug.disable();
    createDebug.log = (...args: unknown[]) => void lines.push(format(...args));
    createDebug.enable('eventrelay*');
    try {
      const { destination } = setup(
        {
          sharedSecret: 'topsecret-key',
          webhooks: [{ url: 'https://user:passw0rd@a.example.com/hook?token=qtoken', headers: { Authorization: 'Bearer hdr-secret' } }, { url: B }],
        },
        (url) => (url.startsWith(B) ? 200 : 503),
      );
      await destination.deliver(toWebhookMessage({ type: 'identify', userId: 'u1', traits: { email: 'private@example.com' } }));
    } finally {
      createDebug.log = previous;
      createDebug.disable();
      if (wasEnabled) createDebug.enable(wasEnabled);
    }
    const text = lines.join('\n');
    expect(text).to.include('eventrelay:delivery');
    expect(text).to.include('https://a.example.com/hook?[redacted] -> 503');
    expect(text).to.include(`${B} -> 200`);
    for (const secret of ['topsecret-key', 'passw0rd', 'qtoken', 'hdr-secret', 'private@example.com', 'user:']) {
      expect(text).not.to.include(secret);
    }
  });
});
