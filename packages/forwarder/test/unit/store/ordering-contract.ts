import { describe, it } from 'mocha';
import { expect } from 'chai';
import type { DeliveryOutcome, ForwarderStore, LeaseRequest, NewDelivery, PendingDelivery } from '../../../src/store/contract';
import { T0 } from './contract';
import { useFreshStore } from './fresh-store';

const A: LeaseRequest = { owner: 'instance-a', ms: 30_000 };
const B: LeaseRequest = { owner: 'instance-b', ms: 30_000 };

/** A delivery of source `web` in order per user, for `user`. */
function ordered(messageId: string, user: string, createdAt = T0): NewDelivery {
  return { source: 'web', destination: 'Webhooks', kind: 'message', messageId, body: JSON.stringify({ messageId }), createdAt, orderKey: user };
}

function call(d: NewDelivery) {
  return { source: d.source, messageId: d.messageId, receivedAt: d.createdAt, deliveries: [d] };
}

const ids = (list: readonly { messageId: string }[]) => list.map((d) => d.messageId).sort();

function delivered(d: PendingDelivery, at = T0 + 10): DeliveryOutcome {
  return { id: d.id, lease: d.lease, status: 'delivered', attempts: d.attempts + 1, firstAttemptAt: T0, at, orderKey: d.orderKey };
}

/**
 * Deliveries in order per user (`NewDelivery.orderKey`), run against every store: of a user's
 * pending deliveries only the oldest is claimed, by one claimant at a time, and the next once it
 * is delivered or failed for good.
 */
export function orderingContract(name: string, create: () => Promise<ForwarderStore>): void {
  describe(`${name} (deliveries in order per user)`, function () {
    this.timeout(20_000);
    const store = useFreshStore(create);

    it('hands out only the oldest pending delivery of each user, in the order the calls came, not the order of their ids', async () => {
      // messageIds sorted backwards against the order they came in: the order is the arrival's.
      await store.accept([call(ordered('z1', 'u1')), call(ordered('y2', 'u2')), call(ordered('x3', 'u1')), call(ordered('w4', 'u1'))]);
      await store.accept([call({ ...ordered('v5', 'u1'), orderKey: undefined })]);
      const first = await store.claim('web', T0, 10, A);
      // Unordered deliveries go as before.
      expect(ids(first)).to.deep.equal(['v5', 'y2', 'z1']);
      expect(await store.claim('web', T0 + 1, 10, B)).to.deep.equal([]);
      const z1 = first.find((d) => d.messageId === 'z1')!;
      expect(z1.orderKey).to.equal('u1');
      expect(await store.waitingFor('web', 'x3')).to.equal('z1');
      expect(await store.waitingFor('web', 'w4')).to.equal('z1');
      expect(await store.waitingFor('web', 'z1')).to.equal(undefined);
      await store.record([delivered(z1)]);
      const second = await store.claim('web', T0 + 2, 10, B);
      expect(ids(second)).to.deep.equal(['x3']);
      expect(await store.waitingFor('web', 'w4')).to.equal('x3');
      // Retried: it stays first; the one behind it waits through the retry.
      const x3 = second[0]!;
      const retry: DeliveryOutcome = { id: x3.id, lease: x3.lease, status: 'retry', attempts: 1, firstAttemptAt: T0 + 2, nextAttemptAt: T0 + 1000, error: 'HTTP 503' };
      expect((await store.record([retry])).recorded).to.equal(1);
      expect(await store.claim('web', T0 + 500, 10, A)).to.deep.equal([]);
      const again = await store.claim('web', T0 + 1000, 10, A);
      expect(ids(again)).to.deep.equal(['x3']);
      // Failed for good: the next goes.
      const failed: DeliveryOutcome = { id: again[0]!.id, lease: again[0]!.lease, status: 'failed', attempts: 2, firstAttemptAt: T0 + 2, at: T0 + 1001, reason: 'HTTP 410', orderKey: again[0]!.orderKey };
      await store.record([failed]);
      expect(ids(await store.claim('web', T0 + 1002, 10, A))).to.deep.equal(['w4']);
      expect(await store.waitingFor('web', 'w4')).to.equal(undefined);
    });

    it('leases at acceptance only the first call of a user with none of its calls pending, and lets the next go when it finishes', async () => {
      const lease = { owner: A.owner, ms: A.ms, now: T0 };
      const result = await store.accept([call(ordered('a1', 'u1')), call(ordered('a2', 'u1')), call(ordered('b1', 'u2'))], lease);
      expect(result.stored).to.equal(3);
      expect(ids(result.leased ?? [])).to.deep.equal(['a1', 'b1']);
      expect(result.leased!.find((d) => d.messageId === 'a1')!.orderKey).to.equal('u1');
      // a1 is out with A; a2 waits for it, b1 is out too: another claimant gets nothing.
      expect(await store.claim('web', T0, 10, B)).to.deep.equal([]);
      expect(await store.waitingFor('web', 'a2')).to.equal('a1');
      // A later commit: u1 has a call pending (a2), u3 none.
      const later = await store.accept([call(ordered('a3', 'u1', T0 + 1)), call(ordered('c1', 'u3', T0 + 1))], { ...lease, now: T0 + 1 });
      expect(ids(later.leased ?? [])).to.deep.equal(['c1']);
      const [a1, b1] = ['a1', 'b1'].map((id) => result.leased!.find((d) => d.messageId === id)!);
      // b1 had nothing behind it; a1 had a2: its source is released, and a2 is the one to claim.
      expect((await store.record([delivered(b1!)])).released).to.deep.equal([]);
      expect((await store.record([delivered(a1!)])).released).to.deep.equal(['web']);
      expect(ids(await store.claim('web', T0 + 20, 10, B))).to.deep.equal(['a2']);
      // A user whose calls all finished is leased at acceptance again.
      const c1 = later.leased!.find((d) => d.messageId === 'c1')!;
      await store.record([delivered(c1)]);
      expect(ids((await store.accept([call(ordered('c2', 'u3', T0 + 30))], { ...lease, now: T0 + 30 })).leased ?? [])).to.deep.equal(['c2']);
    });

    it('gives the first of a user again once its lease runs out, not the next', async () => {
      const result = await store.accept([call(ordered('a1', 'u1')), call(ordered('a2', 'u1'))], { owner: A.owner, ms: 100, now: T0 });
      expect(ids(result.leased ?? [])).to.deep.equal(['a1']);
      // Instance A died holding a1: after its lease, B gets a1, still not a2.
      expect(ids(await store.claim('web', T0 + 50, 10, B))).to.deep.equal([]);
      expect(ids(await store.claim('web', T0 + 200, 10, B))).to.deep.equal(['a1']);
    });

    it('releases the next of a user when the one ahead fails for good, not when it is to be retried', async () => {
      await store.accept([call(ordered('f1', 'u1')), call(ordered('f2', 'u1'))]);
      const [f1] = await store.claim('web', T0, 10, A);
      const retry: DeliveryOutcome = { id: f1!.id, lease: f1!.lease, status: 'retry', attempts: 1, firstAttemptAt: T0, nextAttemptAt: T0 + 100, error: 'HTTP 503' };
      expect((await store.record([retry])).released).to.deep.equal([]);
      const [again] = await store.claim('web', T0 + 100, 10, A);
      expect(again!.messageId).to.equal('f1');
      const failed: DeliveryOutcome = { id: again!.id, lease: again!.lease, status: 'failed', attempts: 2, firstAttemptAt: T0, at: T0 + 101, reason: 'HTTP 410', orderKey: again!.orderKey };
      expect((await store.record([failed])).released).to.deep.equal(['web']);
      expect(ids(await store.claim('web', T0 + 102, 10, A))).to.deep.equal(['f2']);
    });

    it('ends an ordered delivery whose outcome does not carry its key, and the next of the key is claimed', async () => {
      await store.accept([call(ordered('k1', 'u9')), call(ordered('k2', 'u9'))]);
      const [k1] = await store.claim('web', T0, 10, A);
      const { orderKey, ...bare } = delivered(k1!) as Extract<DeliveryOutcome, { status: 'delivered' }>;
      expect(orderKey).to.equal('u9');
      expect((await store.record([bare])).recorded).to.equal(1);
      expect(ids(await store.claim('web', T0 + 20, 10, A))).to.deep.equal(['k2']);
    });

    it('queues a delivery stored later (a replay) behind the user\'s waiting ones', async () => {
      await store.accept([call(ordered('b1', 'u1')), call(ordered('b2', 'u1'))]);
      await store.enqueue([ordered('b0-replayed', 'u1', T0 + 5)]);
      const order: string[] = [];
      for (let now = T0 + 10; order.length < 3 && now < T0 + 100; now++) {
        const claimed = await store.claim('web', now, 10, A);
        expect(claimed.length).to.be.at.most(1);
        for (const d of claimed) {
          order.push(d.messageId);
          await store.record([delivered(d, now)]);
        }
      }
      expect(order).to.deep.equal(['b1', 'b2', 'b0-replayed']);
    });

    it('gives two claimants at once at most one delivery of each user', async () => {
      const calls: NewDelivery[] = [];
      for (let i = 0; i < 30; i++) calls.push(ordered(`m${String(i).padStart(2, '0')}`, `u${i % 5}`));
      await store.accept(calls.map(call));
      const [one, two] = await Promise.all([store.claim('web', T0, 30, A), store.claim('web', T0, 30, B)]);
      const users = [...one, ...two].map((d) => d.orderKey);
      expect(new Set(users).size).to.equal(users.length);
      expect(users.length).to.be.at.most(5);
    });
  });
}
