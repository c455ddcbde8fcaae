import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, it } from 'mocha';
import { expect } from 'chai';
import { HttpError, NetworkError, TimeoutError } from '../../../../eventrelay/src/errors';
import { WebhookDestination } from '../../../src/delivery/destination';
import type { DeliveryResult, DestinationInternals, WebhookDestinationOptions } from '../../../src/delivery/destination';
import { toWebhookMessage } from '../../../../eventrelay/src/messages/webhook';
import { FakeClock } from '../../../../../test/helpers/fake-clock';
import { answer, startSink } from '../../../../../test/helpers/sink';
import type { Sink, SinkHandler } from '../../../../../test/helpers/sink';
import { waitFor } from '../../../../../test/helpers/wait';

const message = toWebhookMessage({
  type: 'track',
  userId: 'u-42',
  event: 'Order Completed',
  properties: { revenue: 19.99, note: 'ünïcödé ✓' },
  timestamp: '2026-02-03T04:05:06.789Z',
  messageId: 'm-1',
});
const body = JSON.stringify(message);

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function receiver(handler: SinkHandler): Promise<Sink> {
  const r = await startSink(handler, { path: '/hook' });
  cleanups.push(() => r.close());
  return r;
}

function destination(options: Partial<WebhookDestinationOptions> & Pick<WebhookDestinationOptions, 'webhooks'>, internals: DestinationInternals = {}): WebhookDestination {
  const d = new WebhookDestination({ minRetryDelay: 5, maxRetryDelay: 20, timeout: 2000, ...options }, internals);
  cleanups.push(() => d.close());
  return d;
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('WebhookDestination over HTTP (real receivers on 127.0.0.1)', () => {
  it('one of five URLs answers 2xx: delivered via that URL, nothing retried', async () => {
    const failing = await Promise.all([
      receiver(answer(500)),
      receiver(answer(404)),
      receiver((_r, res) => res.socket?.destroy()),
      receiver(answer(503)),
    ]);
    const ok = await receiver(answer(200));
    const refusedUrl = `http://127.0.0.1:${await closedPort()}/hook`;
    const clock = new FakeClock();
    const d = destination({ webhooks: [...failing.slice(0, 2), ok, ...failing.slice(2)].map((r) => ({ url: r.url })) }, { clock });
    const result = await d.deliver(message);
    expect(result).to.include({ status: 'delivered', url: ok.url, attempt: 1 });
    expect(ok.requests).to.have.length(1);
    for (const r of failing) expect(r.requests).to.have.length(1);
    expect(clock.pending).to.equal(0);
    // A refused connection next to a 2xx changes nothing either.
    const d2 = destination({ webhooks: [{ url: refusedUrl }, { url: ok.url }] }, { clock });
    expect(await d2.deliver(message)).to.include({ status: 'delivered', url: ok.url });
  });

  it('all 5xx, then success: retried until a URL accepts', async () => {
    const first = await receiver((_r, res, i) => res.writeHead(i < 2 ? 500 : 200).end());
    const second = await receiver(answer(502));
    const result = await destination({ webhooks: [{ url: first.url }, { url: second.url }] }).deliver(message);
    expect(result).to.include({ status: 'delivered', attempt: 3, url: first.url });
    expect(first.requests).to.have.length(3);
    expect(second.requests).to.have.length(3);
  });

  it('a 4xx is retried (a 401 until the receiver has the secret), then delivered; 410 alone is final', async () => {
    const unauthorized = await receiver((_r, res, i) => res.writeHead(i < 2 ? 401 : 200).end());
    const gone = await receiver(answer(410));
    const result = await destination({ webhooks: [{ url: unauthorized.url }, { url: gone.url }] }).deliver(message);
    expect(result).to.include({ status: 'delivered', attempt: 3, url: unauthorized.url });
    // The 410 URL was asked again with the others (the destination keeps no state; the forwarder disables it).
    expect(unauthorized.requests).to.have.length(3);

    const onlyGone = await receiver(answer(410));
    const clock = new FakeClock();
    const final = await destination({ webhooks: [{ url: onlyGone.url }] }, { clock }).deliver(message);
    expect(final).to.include({ status: 'failed', attempt: 1 });
    expect(final.outcomes.map((o) => [o.status, o.retryable])).to.deep.equal([[410, false]]);
    expect(clock.pending).to.equal(0);
    expect(onlyGone.requests).to.have.length(1);
  });

  it('a 303 redirect is not followed: retried at the same URL, the target never asked', async () => {
    const target = await receiver(answer(200));
    const redirecting = await receiver((_r, res, i) => (i < 1 ? res.writeHead(303, { location: target.url }).end() : res.writeHead(204).end()));
    const d = destination({ webhooks: [{ url: redirecting.url }] });
    const first = await d.attempt(body, { attempt: 1, firstAttemptAt: Date.now() });
    expect(first.status).to.equal('retry');
    expect(first.outcomes[0]?.error).to.be.instanceOf(HttpError).with.property('status', 303);
    expect(first.outcomes[0]?.error?.message).to.include('redirects are not followed');
    const result = await d.deliver(message);
    expect(result).to.include({ status: 'delivered', attempt: 1 });
    expect(target.requests).to.have.length(0);
  });

  it('a receiver that stalls past the timeout: timeout error, retried, then delivered', async () => {
    // The first request is answered only after 6 s (over the spec's 5 s); the test passes a
    // 300 ms timeout so it stays fast. The second is answered at once.
    const stalling = await receiver((_r, res, i) => {
      if (i > 0) res.writeHead(200).end();
      else setTimeout(() => res.writeHead(200).end(), 6000).unref();
    });
    const d = destination({ webhooks: [{ url: stalling.url }], timeout: 300 });
    const first = await d.attempt(body, { attempt: 1, firstAttemptAt: Date.now() });
    expect(first.status).to.equal('retry');
    expect(first.outcomes[0]?.error).to.be.instanceOf(TimeoutError);
    expect(first.outcomes[0]?.retryable).to.equal(true);
    const result = await d.deliver(message);
    expect(result).to.include({ status: 'delivered', attempt: 1 });
    expect(stalling.requests).to.have.length(2);
  });

  it('a slow-drip response body does not hold the delivery; the socket is dropped at the deadline', async () => {
    let serverSawClose = false;
    const dripping = await receiver((_r, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const timer = setInterval(() => res.write('.'), 20);
      res.on('close', () => {
        clearInterval(timer);
        serverSawClose = true;
      });
    });
    const result = await destination({ webhooks: [{ url: dripping.url }], timeout: 300 }).attempt(body, { attempt: 1, firstAttemptAt: Date.now() });
    expect(result.status).to.equal('delivered');
    await waitFor(() => serverSawClose, 'the client to drop the dripping response');
  });

  it('reads at most a small amount of a large response body, then drops the socket', async function () {
    this.timeout(10_000);
    let written = 0;
    let serverSawClose = false;
    const flooding = await receiver((_r, res) => {
      res.writeHead(200);
      const chunk = Buffer.alloc(64 * 1024, 120);
      const pump = (): void => {
        while (!serverSawClose && written < 512 * 1024 * 1024 && res.write(chunk)) written += chunk.length;
      };
      res.on('drain', pump);
      res.on('close', () => (serverSawClose = true));
      pump();
    });
    // A long timeout, so only the byte cap can end this response in time.
    const result = await destination({ webhooks: [{ url: flooding.url }], timeout: 60_000 }).attempt(body, { attempt: 1, firstAttemptAt: Date.now() });
    expect(result.status).to.equal('delivered');
    await waitFor(() => serverSawClose, 'the client to drop the flooding response', 8000);
    expect(written).to.be.below(64 * 1024 * 1024);
  });

  it('a connection reset is retried', async () => {
    const resetting = await receiver((_r, res, i) => (i === 0 ? res.socket?.destroy() : res.writeHead(200).end()));
    const d = destination({ webhooks: [{ url: resetting.url }] });
    const result = await d.deliver(message);
    expect(result).to.include({ status: 'delivered', attempt: 2 });
    expect(resetting.requests).to.have.length(2);
  });

  it('a refused connection is a retryable NetworkError naming the URL without credentials', async () => {
    const port = await closedPort();
    const d = destination({ webhooks: [{ url: `http://admin:pa55word@127.0.0.1:${port}/in?key=abc` }] });
    const result = await d.attempt(body, { attempt: 1, firstAttemptAt: Date.now() });
    expect(result.status).to.equal('retry');
    const error = result.outcomes[0]?.error;
    expect(error).to.be.instanceOf(NetworkError);
    expect(error?.message).to.match(/connection refused/);
    expect(result.outcomes[0]?.url).to.equal(`http://127.0.0.1:${port}/in?[redacted]`);
    expect(error?.message).not.to.include('pa55word');
    expect(error?.message).not.to.include('key=abc');
  });

  it('sends POST, the headers of the spec and an X-Signature that an independent HMAC confirms', async () => {
    const r = await receiver(answer(200));
    await destination({ webhooks: [{ url: `${r.url}?token=t1` }], sharedSecret: 'the-shared-secret' }).deliver(message);
    const [received] = r.requests;
    expect(received?.method).to.equal('POST');
    expect(received?.path).to.equal('/hook?token=t1');
    expect(received?.headers['content-type']).to.equal('application/json');
    expect(received?.headers['user-agent']).to.equal('EventRelay-Webhooks/1.0');
    expect(received?.rawHeaderNames).to.include.members(['Content-Type', 'User-Agent', 'X-Signature']);
    expect(received?.body).to.equal(body);
    const expected = createHmac('sha1', 'the-shared-secret').update(received!.bytes).digest('hex');
    expect(received?.headers['x-signature']).to.equal(expected);
    expect(JSON.parse(received!.body)).to.deep.equal(message);
  });

  it('sends no X-Signature without a shared secret, and Basic auth from URL credentials', async () => {
    const r = await receiver(answer(200));
    const url = new URL(r.url);
    url.username = 'hook';
    url.password = 'pw';
    await destination({ webhooks: [{ url: url.href }] }).deliver(message);
    expect(r.requests[0]?.headers).not.to.have.property('x-signature');
    expect(r.requests[0]?.headers.authorization).to.equal(`Basic ${Buffer.from('hook:pw').toString('base64')}`);
  });

  it('static headers reach every URL on every retry, with the same body and signature', async () => {
    const a = await receiver((_r, res, i) => res.writeHead(i < 2 ? 500 : 200).end());
    const b = await receiver(answer(503));
    const result = await destination({
      sharedSecret: 's',
      webhooks: [
        { url: a.url, headers: { Authorization: 'Bearer token-a', 'X-Tenant': 'alpha' } },
        { url: b.url, headers: { 'X-Api-Key': 'key-b' } },
      ],
    }).deliver(message);
    expect(result).to.include({ status: 'delivered', attempt: 3 });
    const all = [...a.requests, ...b.requests];
    expect(all).to.have.length(6);
    for (const req of a.requests) expect(req.headers).to.include({ authorization: 'Bearer token-a', 'x-tenant': 'alpha' });
    for (const req of b.requests) {
      expect(req.headers).to.include({ 'x-api-key': 'key-b' });
      expect(req.headers).not.to.have.property('authorization');
    }
    const signature = a.requests[0]?.headers['x-signature'];
    for (const req of all) {
      expect(req.bytes.equals(a.requests[0]!.bytes)).to.equal(true);
      expect(req.headers['x-signature']).to.equal(signature);
    }
  });

  it('gives up when the 4-hour window ends (fake clock, real receiver answering 503)', async () => {
    const down = await receiver(answer(503));
    const clock = new FakeClock();
    const d = destination({ webhooks: [{ url: down.url }], minRetryDelay: 1000, maxRetryDelay: 600_000 }, { clock, random: () => 0.5 });
    const started = clock.now();
    let result: DeliveryResult | undefined;
    const pending = d.deliver(message).then((r) => (result = r));
    while (result === undefined) {
      // Each attempt is real I/O; once it has failed, its retry timer is pending on the fake clock.
      await waitFor(() => result !== undefined || clock.pending > 0, 'the next retry to be scheduled');
      if (result === undefined) await clock.tick(600_000);
    }
    await pending;
    expect(result).to.include({ status: 'failed' });
    expect(result.attempt).to.equal(down.requests.length);
    expect(clock.now() - started).to.be.within(4 * 3_600_000 - 600_000, 4 * 3_600_000 + 600_000);
    expect(clock.pending).to.equal(0);
  });
});
