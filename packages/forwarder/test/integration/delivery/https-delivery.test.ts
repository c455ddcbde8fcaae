import { createHmac } from 'node:crypto';
import { afterEach, before, describe, it } from 'mocha';
import { expect } from 'chai';
import { NetworkError } from '../../../../eventrelay/src/errors';
import { WebhookDestination } from '../../../src/delivery/destination';
import type { WebhookDestinationOptions } from '../../../src/delivery/destination';
import { toWebhookMessage } from '../../../../eventrelay/src/messages/webhook';
import { FakeClock } from '../../../../../test/helpers/fake-clock';
import { makeCertificates } from '../../../../../test/helpers/certificates';
import type { TestCertificates } from '../../../../../test/helpers/certificates';
import { answer, startSink } from '../../../../../test/helpers/sink';
import type { Sink } from '../../../../../test/helpers/sink';

const message = toWebhookMessage({ type: 'identify', userId: 'u-7', traits: { plan: 'pro' }, timestamp: '2026-02-03T04:05:06.789Z' });

describe('WebhookDestination over HTTPS (certificates made with openssl at test time)', () => {
  let certs: TestCertificates;
  const cleanups: (() => Promise<void>)[] = [];

  before(function () {
    this.timeout(30_000);
    certs = makeCertificates();
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function receiver(tls: { key: string; cert: string }): Promise<Sink> {
    const r = await startSink(answer(200), { tls, path: '/hook' });
    cleanups.push(() => r.close());
    return r;
  }

  function destination(url: string, options: Partial<WebhookDestinationOptions> = {}): WebhookDestination {
    const d = new WebhookDestination({ webhooks: [{ url }], sharedSecret: 'tls-secret', timeout: 2000, ...options }, { clock: new FakeClock() });
    cleanups.push(() => d.close());
    return d;
  }

  async function expectRefused(r: Sink, d: WebhookDestination): Promise<NetworkError> {
    const result = await d.deliver(message);
    expect(result).to.include({ status: 'failed', attempt: 1 });
    const error = result.outcomes[0]?.error;
    expect(error).to.be.instanceOf(NetworkError);
    expect(error).to.have.property('retryable', false);
    expect(error?.code).to.equal('ERR_TLS_CERTIFICATE');
    expect(r.requests, 'the receiver must get no request').to.have.length(0);
    return error as NetworkError;
  }

  it('refuses a self-signed leaf: final error, the receiver gets no request', async () => {
    const r = await receiver(certs.selfSigned);
    const error = await expectRefused(r, destination(r.url));
    expect(error.message).to.match(/self-signed/);
  });

  it('refuses a chain that ends in an untrusted self-signed CA', async () => {
    const r = await receiver({ key: certs.leaf.key, cert: certs.leaf.chain });
    const error = await expectRefused(r, destination(r.url));
    expect(error.message).to.match(/self-signed certificate in the chain/);
  });

  it('delivers to a leaf signed by a CA the test seam adds to the trusted roots', async () => {
    const r = await receiver({ key: certs.leaf.key, cert: certs.leaf.chain });
    const result = await destination(r.url, { ca: certs.ca }).deliver(message);
    expect(result).to.include({ status: 'delivered', url: r.url });
    const received = r.requests[0]!;
    expect(received.headers['x-signature']).to.equal(createHmac('sha1', 'tls-secret').update(received.bytes).digest('hex'));
  });

  it('still refuses a self-signed leaf even when that very certificate is added as trusted', async () => {
    const r = await receiver(certs.selfSigned);
    await expectRefused(r, destination(r.url, { ca: certs.selfSigned.cert }));
  });

  it('NODE_TLS_REJECT_UNAUTHORIZED=0 in the environment does not turn verification off', async () => {
    const previous = process.env.NODE_TLS_REJECT_UNAUTHORIZED;
    const warnings = process.listeners('warning');
    process.removeAllListeners('warning');
    process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
    try {
      const r = await receiver(certs.selfSigned);
      await expectRefused(r, destination(r.url));
    } finally {
      if (previous === undefined) delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
      else process.env.NODE_TLS_REJECT_UNAUTHORIZED = previous;
      for (const listener of warnings) process.on('warning', listener);
    }
  });
});
