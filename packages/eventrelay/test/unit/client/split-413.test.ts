import { expect } from 'chai';
import { PayloadTooLargeError, type EventRelayError } from '../../../src/errors';
import { createTestClient } from '../../../../../test/helpers/client';
import { FakeTransport, deferred } from '../../../../../test/helpers/fake-transport';
import type { HttpRequest } from '../../../src/transport/transport';

/** A proxy that answers 413 to bodies over `limit` bytes and passes the others. */
const proxyWithLimit = (limit: number) => (request: HttpRequest) => (Buffer.byteLength(request.body) > limit ? 413 : 200);

describe('Analytics and 413 answers', () => {
  it('splits the batch in halves until each part passes, and delivers every message once', async () => {
    const transport = new FakeTransport(proxyWithLimit(1500));
    const { analytics } = createTestClient({ transport, flushAt: 16 });
    const results = new Map<string, (EventRelayError | undefined)[]>();
    for (let i = 0; i < 16; i++) {
      analytics.track({ userId: 'u', event: 'E', messageId: `m${i}`, properties: { pad: 'x'.repeat(100) } }, (error, id) => {
        results.set(id!, [...(results.get(id!) ?? []), error]);
      });
    }
    await analytics.flush();
    const delivered = transport.batches.filter((b) => b.bytes <= 1500).flatMap((b) => b.body.batch.map((m) => m.messageId));
    expect(delivered.sort()).to.deep.equal(Array.from({ length: 16 }, (_, i) => `m${i}`).sort());
    expect([...results.values()].every((calls) => calls.length === 1 && calls[0] === undefined)).to.equal(true);
    expect(results.size).to.equal(16);
    // 16 messages of ~250 bytes: 16 -> 8 -> 4 fits under 1,500 bytes, so 1 + 2 + 4 requests.
    expect(transport.requests.map((r) => JSON.parse(String(r.body)).batch.length)).to.deep.equal([16, 8, 8, 4, 4, 4, 4]);
    expect(analytics.pending).to.equal(0);
  });

  it('fails a message refused on its own with PayloadTooLargeError, through its callback and error; the rest is delivered', async () => {
    const transport = new FakeTransport(proxyWithLimit(2000));
    const { analytics } = createTestClient({ transport, flushAt: 9 });
    const errors: [EventRelayError, string | undefined][] = [];
    analytics.on('error', (error, id) => errors.push([error, id]));
    const outcomes = new Map<string, (EventRelayError | undefined)[]>();
    for (let i = 0; i < 9; i++) {
      const pad = i === 4 ? 'y'.repeat(3000) : 'x'.repeat(50);
      analytics.track({ userId: 'u', event: 'E', messageId: `m${i}`, properties: { pad } }, (error, id) => {
        outcomes.set(id!, [...(outcomes.get(id!) ?? []), error]);
      });
    }
    await analytics.flush();
    expect([...outcomes.keys()].sort()).to.deep.equal(Array.from({ length: 9 }, (_, i) => `m${i}`));
    for (const [id, calls] of outcomes) {
      expect(calls, id).to.have.length(1);
      if (id === 'm4') expect(calls[0]).to.be.instanceOf(PayloadTooLargeError).and.include({ code: 'ERR_PAYLOAD_TOO_LARGE' });
      else expect(calls[0], id).to.equal(undefined);
    }
    const tooLarge = outcomes.get('m4')![0] as PayloadTooLargeError;
    expect(tooLarge.size).to.be.above(3000);
    expect(tooLarge.limit).to.be.below(tooLarge.size);
    expect(tooLarge.message).to.contain('413');
    expect(errors).to.have.length(1);
    expect(errors[0]![1]).to.equal('m4');
    const delivered = transport.batches.filter((b) => b.bytes <= 2000).flatMap((b) => b.body.batch.map((m) => m.messageId));
    expect(delivered.sort()).to.deep.equal(['m0', 'm1', 'm2', 'm3', 'm5', 'm6', 'm7', 'm8']);
  });

  it('flush() resolves once every half is finished', async () => {
    const gate = deferred<void>();
    const transport = new FakeTransport(async (request, index) => {
      if (index > 0) await gate.promise;
      return proxyWithLimit(700)(request);
    });
    const { analytics } = createTestClient({ transport, flushAt: 4 });
    const done: string[] = [];
    for (let i = 0; i < 4; i++) analytics.track({ userId: 'u', event: 'E', messageId: `m${i}`, properties: { pad: 'x'.repeat(100) } }, (_e, id) => done.push(id!));
    let flushed = false;
    const flushing = analytics.flush().then(() => (flushed = true));
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(flushed).to.equal(false);
    gate.resolve();
    await flushing;
    expect(done.sort()).to.deep.equal(['m0', 'm1', 'm2', 'm3']);
  });

  it('at the close timeout, the halves still in flight get CloseTimeoutError, each callback once', async () => {
    const never = deferred<number>();
    const transport = new FakeTransport((request, index) => (index === 0 ? 413 : never.promise));
    const { analytics, clock } = createTestClient({ transport, flushAt: 4 });
    const calls: (string | undefined)[] = [];
    for (let i = 0; i < 4; i++) analytics.track({ userId: 'u', event: 'E' }, (error) => calls.push(error?.code));
    const closing = analytics.closeAndFlush({ timeout: 1000 });
    await clock.tick(1000);
    await closing;
    expect(calls).to.deep.equal(['ERR_CLOSE_TIMEOUT', 'ERR_CLOSE_TIMEOUT', 'ERR_CLOSE_TIMEOUT', 'ERR_CLOSE_TIMEOUT']);
    expect(analytics.pending).to.equal(0);
    never.resolve(200);
  });
});
