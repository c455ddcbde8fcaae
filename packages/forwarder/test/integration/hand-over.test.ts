import { describe, it, after } from 'mocha';
import { expect } from 'chai';
import { createForwarder } from '../../src/service';
import { MemoryStore } from '../../src/store/memory/memory';
import type { LeaseRequest, PendingDelivery } from '../../src/store/contract';
import { basic, post, startReceiver, waitFor } from './helpers';
import type { Receiver } from './helpers';

/** A memory store that counts the deliveries its claims hand out. */
class CountingStore extends MemoryStore {
  claimed = 0;
  override async claim(source: string, now: number, limit: number, lease: LeaseRequest): Promise<PendingDelivery[]> {
    const due = await super.claim(source, now, limit, lease);
    this.claimed += due.length;
    return due;
  }
}

/**
 * The whole forwarder, not the scheduler alone: what an instance accepts while its delivery loop
 * has room is leased to it by the commit that stores it and attempted without a claim (the
 * targets the loop is given must say which source is served under a name, or every such call
 * would go back to the store and be claimed again).
 */
describe('a forwarder attempts what it accepted without claiming it (hand-over)', function () {
  this.timeout(30_000);
  let receiver: Receiver | undefined;
  after(async () => receiver?.close());

  it('delivers 30 calls of a stored source with no delivery handed out by a claim', async () => {
    receiver = await startReceiver();
    const store = new CountingStore();
    const forwarder = createForwarder(
      { sources: [{ name: 'web', writeKey: 'hand-over-key', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/h` }] } } }] },
      { store },
    );
    try {
      const { url } = await forwarder.listen({ port: 0 });
      // A first call, until delivered: the loop has looked at the store once (what it accepts
      // before that is stored for a claim, so that it passes nothing older).
      const warm = [{ type: 'track', userId: 'u', event: 'E', messageId: 'warm' }];
      expect((await post(`${url}/v1/batch`, { batch: warm }, { Authorization: basic('hand-over-key') })).status).to.equal(200);
      await waitFor(() => receiver!.delivered.length === 1, 'the first call');
      store.claimed = 0;
      for (let i = 0; i < 3; i++) {
        const batch = Array.from({ length: 10 }, (_, j) => ({ type: 'track', userId: 'u', event: 'E', messageId: `h-${i}-${j}` }));
        expect((await post(`${url}/v1/batch`, { batch }, { Authorization: basic('hand-over-key') })).status).to.equal(200);
      }
      await waitFor(() => receiver!.delivered.length === 31, 'the 30 deliveries');
      expect(store.claimed).to.equal(0);
    } finally {
      await forwarder.close();
    }
  });
});
