import { expect } from 'chai';
import { Analytics } from '../../../src/client/analytics';
import { NodeTransport } from '../../../src/transport/node';
import { PayloadTooLargeError, type EventRelayError } from '../../../src/errors';
import { startSink } from '../../../../../test/helpers/sink';

describe('Analytics behind a proxy that takes smaller bodies (a real server answering 413)', () => {
  it('splits until each request passes: everything but the one message too large alone is delivered, each callback once', async () => {
    const limit = 4000;
    const sink = await startSink((request, res) => {
      if (request.bytes.length > limit) res.writeHead(413, { 'content-type': 'text/html' }).end('<h1>413 Request Entity Too Large</h1>');
      else res.writeHead(200).end('{}');
    });
    const analytics = new Analytics({ writeKey: 'k', endpoint: sink.url, transport: new NodeTransport(), flushAt: 40, flushInterval: 50 });
    try {
      const outcomes = new Map<string, (EventRelayError | undefined)[]>();
      for (let i = 0; i < 40; i++) {
        const pad = i === 27 ? 'z'.repeat(5000) : 'x'.repeat(20 + ((i * 37) % 200));
        analytics.track({ userId: `u${i}`, event: 'Behind Proxy', messageId: `p${i}`, properties: { pad } }, (error, id) => {
          outcomes.set(id!, [...(outcomes.get(id!) ?? []), error]);
        });
      }
      await analytics.flush();
      const delivered = sink.requests.filter((r) => r.bytes.length <= limit).flatMap((r) => (JSON.parse(r.body) as { batch: { messageId: string }[] }).batch);
      expect(delivered.map((m) => m.messageId).sort()).to.deep.equal(Array.from({ length: 40 }, (_, i) => `p${i}`).filter((id) => id !== 'p27').sort());
      expect(outcomes.size).to.equal(40);
      for (const [id, calls] of outcomes) {
        expect(calls, id).to.have.length(1);
        if (id === 'p27') expect(calls[0]).to.be.instanceOf(PayloadTooLargeError);
        else expect(calls[0], id).to.equal(undefined);
      }
      expect(sink.requests.filter((r) => r.bytes.length > limit).length).to.be.above(1);
    } finally {
      await analytics.closeAndFlush();
      await sink.close();
    }
  });
});
