import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { Analytics } from '../../../src/client/analytics';
import { HttpError, NetworkError, TimeoutError, ValidationError } from '../../../src/errors';
import { FetchTransport } from '../../../src/transport/fetch';
import { GotTransport } from '../../../src/transport/got';
import { NodeTransport } from '../../../src/transport/node';
import type { Transport } from '../../../src/transport/transport';
import { makeCertificates } from '../../../../../test/helpers/certificates';
import { startSink } from '../../../../../test/helpers/sink';

const transports: [string, () => Transport][] = [
  ['NodeTransport', () => new NodeTransport()],
  ['GotTransport', () => new GotTransport()],
  ['FetchTransport', () => new FetchTransport()],
];

for (const [name, makeTransport] of transports) {
  describe(`Analytics over ${name} (real server on 127.0.0.1)`, () => {
    let sink: Awaited<ReturnType<typeof startSink>> | undefined;
    let transport: Transport;

    beforeEach(() => {
      transport = makeTransport();
    });

    afterEach(async () => {
      transport.close?.();
      await sink?.close();
      sink = undefined;
    });

    it('sends batches as POST /v1/batch with Basic auth (on one kept-alive socket, but over fetch)', async () => {
      sink = await startSink();
      const analytics = new Analytics({ writeKey: 'wk_live', endpoint: sink.url, flushAt: 2, concurrency: 1, transport });
      for (let i = 0; i < 4; i++) {
        analytics.track({ userId: 'u1', event: 'E', properties: { i } });
        if (i % 2 === 1) await analytics.flush();
      }
      expect(sink.requests).to.have.length(2);
      for (const request of sink.requests) {
        expect(request.method).to.equal('POST');
        expect(request.url).to.equal('/v1/batch');
        expect(request.headers.authorization).to.equal(`Basic ${Buffer.from('wk_live:').toString('base64')}`);
        expect(request.headers['content-type']).to.equal('application/json');
        expect(request.headers['user-agent']).to.match(/^eventrelay-node\//);
      }
      expect(sink.messages().map((m) => (m.properties as { i: number }).i)).to.deep.equal([0, 1, 2, 3]);
      // Node's fetch (undici) keeps its own pool, which may open a second socket for the next request.
      if (name !== 'FetchTransport') expect(sink.requests[0]?.remotePort).to.equal(sink.requests[1]?.remotePort);
    });

    it('reads the answer body: the message listed in `rejected` fails, the other is delivered', async () => {
      const answer = JSON.stringify({ success: true, rejected: [{ index: 0, code: 'invalid_message', field: 'event', message: 'refused here' }] });
      sink = await startSink((_request, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(answer));
      const analytics = new Analytics({ writeKey: 'k', endpoint: sink.url, flushAt: 2, transport });
      const results = await Promise.all(
        ['First', 'Second'].map((event) => new Promise<unknown>((resolve) => analytics.track({ userId: 'u1', event }, resolve))),
      );
      expect(results[0]).to.be.instanceOf(ValidationError);
      expect(results[0]).to.include({ field: 'event' });
      expect(results[1]).to.equal(undefined);
    });

    it('sends gzip bodies the server can read', async () => {
      sink = await startSink();
      const analytics = new Analytics({ writeKey: 'k', endpoint: sink.url, gzip: true, transport });
      analytics.track({ userId: 'u1', event: 'Zipped' });
      await analytics.flush();
      expect(sink.requests[0]?.headers['content-encoding']).to.equal('gzip');
      expect(sink.messages()[0]?.event).to.equal('Zipped');
    });

    it('retries a 503 and a stalled request (timeout), then delivers once', async () => {
      sink = await startSink((_req, res, index) => {
        if (index === 0) res.writeHead(503).end();
        else if (index === 1) setTimeout(() => res.destroyed || res.end('{}'), 1500).unref();
        else res.end('{}');
      });
      const analytics = new Analytics(
        { writeKey: 'k', endpoint: sink.url, timeout: 200, minRetryDelay: 10, maxRetryDelay: 20 },
      );
      const errors: unknown[] = [];
      analytics.track({ userId: 'u', event: 'E' }, (error) => errors.push(error));
      await analytics.flush();
      expect(errors).to.deep.equal([undefined]);
      expect(sink.requests.length).to.equal(3);
    });

    it('reports a TimeoutError after the last retry', async () => {
      sink = await startSink(() => {});
      const analytics = new Analytics({ writeKey: 'k', endpoint: sink.url, timeout: 100, maxRetries: 1, minRetryDelay: 1, transport });
      const results: unknown[] = [];
      analytics.track({ userId: 'u', event: 'E' }, (error) => results.push(error));
      await analytics.flush();
      expect(results[0]).to.be.instanceOf(TimeoutError);
      expect(sink.requests).to.have.length(2);
    });

    it('does not follow a redirect and does not retry it', async () => {
      sink = await startSink((_req, res) => res.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere' }).end());
      const analytics = new Analytics({ writeKey: 'k', endpoint: sink.url, transport });
      const results: unknown[] = [];
      analytics.track({ userId: 'u', event: 'E' }, (error) => results.push(error));
      await analytics.flush();
      expect(results[0]).to.be.instanceOf(HttpError);
      expect((results[0] as HttpError).status).to.equal(302);
      expect(sink.requests).to.have.length(1);
    });

    it('retries a refused connection, then fails with a NetworkError that names no credentials', async () => {
      const closed = await startSink();
      const url = closed.url.replace('http://', 'http://user:pw@');
      await closed.close();
      const analytics = new Analytics({ writeKey: 'k', endpoint: url, maxRetries: 2, minRetryDelay: 1, transport });
      const results: unknown[] = [];
      analytics.track({ userId: 'u', event: 'E' }, (error) => results.push(error));
      await analytics.flush();
      expect(results[0]).to.be.instanceOf(NetworkError);
      expect((results[0] as NetworkError).retryable).to.equal(true);
      expect((results[0] as Error).message).to.match(/ECONNREFUSED/);
      expect((results[0] as Error).message).not.to.contain('pw');
    });

    it('refuses a self-signed certificate without retrying', async function () {
      const { selfSigned } = makeCertificates();
      let received = 0;
      const server = https.createServer(selfSigned, (req, res) => {
        received++;
        res.end('{}');
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const { port } = server.address() as AddressInfo;
        const analytics = new Analytics({ writeKey: 'k', endpoint: `https://127.0.0.1:${port}`, minRetryDelay: 1, transport });
        const results: unknown[] = [];
        analytics.track({ userId: 'u', event: 'E' }, (error) => results.push(error));
        await analytics.flush();
        expect(results[0]).to.be.instanceOf(NetworkError);
        expect((results[0] as NetworkError).code).to.equal('ERR_TLS_CERTIFICATE');
        expect((results[0] as NetworkError).retryable).to.equal(false);
        expect(received).to.equal(0);
      } finally {
        server.closeAllConnections();
        server.close();
      }
    });
  });
}

for (const [name, makeTransport] of [transports[0]!, transports[2]!]) {
  describe(`${name} and a receiver that drips its answer`, () => {
    it('takes the status line as the answer and does not wait for the dripping body', async () => {
      const sink = await startSink((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        const drip = setInterval(() => (res.destroyed ? clearInterval(drip) : res.write(' ')), 30);
        res.on('close', () => clearInterval(drip));
      });
      const transport = makeTransport();
      try {
        const analytics = new Analytics({ writeKey: 'k', endpoint: sink.url, timeout: 300, maxRetries: 0, transport });
        const results: unknown[] = [];
        analytics.track({ userId: 'u', event: 'E' }, (error) => results.push(error));
        await analytics.flush();
        expect(results).to.deep.equal([undefined]);
      } finally {
        transport.close?.();
        await sink.close();
      }
    });
  });
}
