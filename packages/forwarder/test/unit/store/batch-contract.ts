import { describe, it } from 'mocha';
import { expect } from 'chai';
import { PARKED_AT } from '../../../src/store/contract';
import type { DeliveryOutcome, ForwarderStore, LeaseRequest, MemberLease, NewBatch, NewDelivery, PendingDelivery } from '../../../src/store/contract';
import { T0 } from './contract';
import { useFreshStore } from './fresh-store';

const A: LeaseRequest = { owner: 'instance-a', ms: 30_000 };
const B: LeaseRequest = { owner: 'instance-b', ms: 30_000 };
/** When the batches are sealed: after the members' claim at T0. */
const SEALED = T0 + 10;
/** When a batch sealed at SEALED under A's lease is due again, no outcome having come. */
const LAPSED = SEALED + A.ms;

/** A call of source `web`; `user` makes it ordered per user. */
function call(messageId: string, user?: string) {
  const d: NewDelivery = { source: 'web', destination: 'Webhooks', kind: 'message', messageId, body: JSON.stringify({ messageId }), createdAt: T0, orderKey: user };
  return { source: 'web', messageId, receivedAt: T0, deliveries: [d] };
}

/** A body of `members` to the URL at `url` of the destination's webhooks. */
function batchOf(members: readonly PendingDelivery[], url = 0): NewBatch {
  return {
    source: 'web',
    destination: `Webhooks#${url}`,
    messageId: `batch-${url}-${members.map((m) => m.messageId).join('-')}`,
    body: `[${members.map((m) => m.body).join(',')}]`,
    members: members.map((m) => m.id),
  };
}

const leases = (list: readonly PendingDelivery[]): MemberLease[] => list.map((d) => ({ id: d.id, lease: d.lease }));
const ids = (list: readonly { messageId: string }[]) => list.map((d) => d.messageId).sort();
const byId = <T extends { id: number }>(list: readonly T[]) => list.slice().sort((x, y) => x.id - y.id);

function delivered(d: PendingDelivery, at = SEALED + 5): DeliveryOutcome {
  return { id: d.id, lease: d.lease, status: 'delivered', attempts: d.attempts + 1, firstAttemptAt: SEALED + 1, at };
}

function failed(d: PendingDelivery, reason = 'HTTP 410', at = SEALED + 5): DeliveryOutcome {
  return { id: d.id, lease: d.lease, status: 'failed', attempts: d.attempts + 1, firstAttemptAt: SEALED + 1, at, reason };
}

/**
 * Batched delivery's storage (`ForwarderStore.batches`, contract/batches.ts), run against every
 * store: claimed calls sealed into batch deliveries wait parked until a batch holding them ends
 * them; the batch deliveries are claimed, retried and leased like any other.
 */
export function batchContract(name: string, create: () => Promise<ForwarderStore>): void {
  describe(`${name} (batches)`, function () {
    this.timeout(20_000);
    const store = useFreshStore(create);

    /** Accepts `messageIds` (unordered) and claims them under A's lease at T0. */
    async function claimed(...messageIds: string[]): Promise<PendingDelivery[]> {
      await store.accept(messageIds.map((id) => call(id)));
      return store.claim('web', T0, 100, A);
    }

    it('seals claimed calls into leased batch deliveries and parks them, counting the calls, not the batches', async () => {
      const [a, b, c] = await claimed('a', 'b', 'c');
      const sealed = await store.batches.seal(leases([a!, b!, c!]), [batchOf([a!, b!]), batchOf([a!, b!], 1)], SEALED, A);
      expect(sealed).to.have.length(2);
      const [first, second] = sealed!;
      expect(first).to.deep.include({
        kind: 'batch',
        source: 'web',
        destination: 'Webhooks#0',
        messageId: 'batch-0-a-b',
        body: `[${a!.body},${b!.body}]`,
        createdAt: SEALED,
        attempts: 0,
        firstAttemptAt: undefined,
        nextAttemptAt: LAPSED,
        orderKey: undefined,
      });
      expect(first!.lease).to.be.above(0);
      expect(second!.destination).to.equal('Webhooks#1');
      expect(second!.id).to.be.above(first!.id);
      // The parked calls are pending (not delivered yet); the batch deliveries are no calls.
      expect(await store.counts()).to.deep.include({ pending: 3, retrying: 0, oldestPendingAt: T0, delivered: 0, failed: 0 });
      // The claim that handed a parked call out holds it no more; c, not in a batch, is untouched.
      const result = await store.record([
        { id: a!.id, lease: a!.lease, status: 'retry', attempts: 1, firstAttemptAt: T0, nextAttemptAt: T0 + 1 },
        { id: c!.id, lease: c!.lease, status: 'retry', attempts: 1, firstAttemptAt: T0, nextAttemptAt: T0 + 1 },
      ]);
      expect(result.stale).to.deep.equal([a!.id]);
      expect(ids(await store.claim('web', T0 + 1, 100, B))).to.deep.equal(['c']);
    });

    it('stores nothing when a member\'s lease no longer holds, and the calls are claimed again', async () => {
      await store.accept([call('a'), call('b')]);
      const old = await store.claim('web', T0, 10, { owner: A.owner, ms: 5 });
      // A's lease lapsed; B claimed them again.
      const current = await store.claim('web', T0 + 5, 10, B);
      expect(ids(current)).to.deep.equal(['a', 'b']);
      expect(await store.batches.seal(leases(old), [batchOf(old)], T0 + 6, A)).to.equal(null);
      // One stale lease among current ones is enough.
      const mixed = leases(byId(current)).map((m, i) => (i === 0 ? m : { ...m, lease: m.lease - 1 }));
      expect(await store.batches.seal(mixed, [batchOf(byId(current))], T0 + 6, A)).to.equal(null);
      expect(await store.counts()).to.deep.include({ pending: 2 });
      // Nothing was parked or stored: after B's lease the calls themselves are due, and no batch.
      const again = await store.claim('web', T0 + 5 + B.ms, 10, A);
      expect(again.map((d) => d.kind)).to.deep.equal(['message', 'message']);
      // B's lease lapsed too, and A claimed them: B's seal is refused, A's stored.
      expect(await store.batches.seal(leases(current), [batchOf(byId(current))], T0 + 6, B)).to.equal(null);
      expect(await store.batches.seal(leases(again), [batchOf(byId(again))], T0 + 5 + B.ms, A)).to.have.length(1);
    });

    it('refuses a batch holding a call it was not made for, storing nothing', async () => {
      const [a, b] = await claimed('a', 'b');
      const refused = await store.batches.seal(leases([a!]), [batchOf([a!]), batchOf([a!, b!], 1)], SEALED, A).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).to.be.instanceOf(TypeError);
      // Nothing parked: both are due again at the end of their claim.
      expect((await store.claim('web', T0 + A.ms, 10, B)).map((d) => d.kind)).to.deep.equal(['message', 'message']);
      const [batch] = (await store.batches.seal(leases([a!, b!]).map((m) => ({ ...m, lease: m.lease + 1 })), [batchOf([a!, b!])], T0 + A.ms, B))!;
      const parts = [batchOf([a!]), { ...batchOf([b!]), members: [b!.id + 100] }];
      const wrong = await store.batches.split({ id: batch!.id, lease: batch!.lease }, parts, T0 + A.ms + 1, B).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(wrong).to.be.instanceOf(TypeError);
      expect((await store.batches.members(batch!.id)).map((m) => m.messageId)).to.deep.equal(['a', 'b']);
    });

    it('hands a batch delivery out again once its lease lapses, and never a parked call', async () => {
      const members = await claimed('a', 'b');
      const [batch] = (await store.batches.seal(leases(members), [batchOf(members)], SEALED, A))!;
      expect(await store.claim('web', LAPSED - 1, 10, B)).to.deep.equal([]);
      const later = await store.claim('web', LAPSED, 10, B);
      expect(later).to.have.length(1);
      expect(later[0]).to.deep.include({ id: batch!.id, kind: 'batch', body: batch!.body, attempts: 0, messageId: batch!.messageId });
      expect(later[0]!.lease).to.be.above(batch!.lease);
      // Long after: only the batch again (B's lease lapsed), never its members.
      const much = await store.claim('web', LAPSED + 10 * B.ms, 10, A);
      expect(much.map((d) => d.id)).to.deep.equal([batch!.id]);
      // Parked calls are never due: no time to wake for.
      const next = await store.nextDueAfter('web', LAPSED + 10 * B.ms);
      expect(next === undefined || next < PARKED_AT, String(next)).to.equal(true);
    });

    it('keeps the members in the order of the body', async () => {
      const [a, b, c] = await claimed('a', 'b', 'c');
      const [batch] = (await store.batches.seal(leases([a!, b!, c!]), [batchOf([c!, a!, b!])], SEALED, A))!;
      const members = await store.batches.members(batch!.id);
      expect(members.map((m) => m.messageId)).to.deep.equal(['c', 'a', 'b']);
      expect(members[0]).to.deep.equal({ id: c!.id, source: 'web', messageId: 'c', orderKey: undefined, createdAt: T0, pending: true });
      expect(await store.batches.members(batch!.id + 1000)).to.deep.equal([]);
    });

    it('delivers every member of a delivered batch, counts them, and releases the next call of an ordered one', async () => {
      await store.accept([call('a1', 'u1'), call('a2', 'u1'), call('x')]);
      const members = await store.claim('web', T0, 10, A);
      expect(ids(members)).to.deep.equal(['a1', 'x']);
      const [batch] = (await store.batches.seal(leases(members), [batchOf(byId(members))], SEALED, A))!;
      const result = await store.batches.recordBatches([delivered(batch!)]);
      expect(result).to.deep.include({ recorded: 1, stale: [], released: ['web'] });
      expect(byId(result.members)).to.deep.equal(byId(members).map((m) => ({ id: m.id, source: 'web', messageId: m.messageId, orderKey: m.orderKey, createdAt: T0, pending: false, status: 'delivered', batchId: batch!.id })));
      expect(await store.counts()).to.deep.include({ delivered: 2, failed: 0, pending: 1 });
      // members() tells the loop which calls its outcome finished: none is pending now.
      expect((await store.batches.members(batch!.id)).map((m) => m.pending)).to.deep.equal([false, false]);
      expect(ids(await store.claim('web', SEALED + 6, 10, A))).to.deep.equal(['a2']);
      // Written once.
      expect((await store.batches.recordBatches([delivered(batch!)])).stale).to.deep.equal([batch!.id]);
      expect(await store.counts()).to.deep.include({ delivered: 2 });
    });

    it('fails a member only once every batch holding it failed', async () => {
      const [a, b] = await claimed('a', 'b');
      const [one, two] = (await store.batches.seal(leases([a!, b!]), [batchOf([a!, b!]), batchOf([a!], 1)], SEALED, A))!;
      // a is still in `two`, pending: only b ends.
      const first = await store.batches.recordBatches([failed(one!, 'HTTP 410 from the first URL')]);
      expect(first).to.deep.include({ recorded: 1, stale: [], released: [] });
      expect(first.members.map((m) => [m.messageId, m.status, m.batchId])).to.deep.equal([['b', 'failed', one!.id]]);
      expect(await store.counts()).to.deep.include({ failed: 1, pending: 1 });
      const second = await store.batches.recordBatches([failed(two!)]);
      expect(second.members.map((m) => [m.messageId, m.status, m.batchId])).to.deep.equal([['a', 'failed', two!.id]]);
      expect(await store.counts()).to.deep.include({ failed: 2, delivered: 0, pending: 0 });
    });

    it('delivers a member whose other batch failed when its last batch is delivered', async () => {
      const [a] = await claimed('a');
      const [one, two] = (await store.batches.seal(leases([a!]), [batchOf([a!]), batchOf([a!], 1)], SEALED, A))!;
      expect((await store.batches.recordBatches([failed(one!)])).members).to.deep.equal([]);
      const result = await store.batches.recordBatches([delivered(two!)]);
      expect(result.members.map((m) => [m.messageId, m.status, m.batchId])).to.deep.equal([['a', 'delivered', two!.id]]);
      expect(await store.counts()).to.deep.include({ delivered: 1, failed: 0, pending: 0 });
      // A member delivered by one batch is not failed by the other's failure.
      const [b] = await claimed('b');
      const [three, four] = (await store.batches.seal(leases([b!]), [batchOf([b!]), batchOf([b!], 1)], SEALED, A))!;
      expect((await store.batches.recordBatches([delivered(three!)])).members.map((m) => m.messageId)).to.deep.equal(['b']);
      expect((await store.batches.recordBatches([failed(four!)])).members).to.deep.equal([]);
      expect(await store.counts()).to.deep.include({ delivered: 2, failed: 0, pending: 0 });
    });

    it('retries a batch delivery with its members still parked, and refuses outcomes of a lease that no longer holds', async () => {
      const members = await claimed('a', 'b');
      const [batch] = (await store.batches.seal(leases(members), [batchOf(members)], SEALED, A))!;
      const retry: DeliveryOutcome = { id: batch!.id, lease: batch!.lease, status: 'retry', attempts: 1, firstAttemptAt: SEALED + 1, nextAttemptAt: SEALED + 500, error: 'HTTP 503' };
      expect(await store.batches.recordBatches([retry])).to.deep.equal({ recorded: 1, stale: [], released: [], members: [] });
      // The batch's attempts are no call's: nothing counts retrying.
      expect(await store.counts()).to.deep.include({ pending: 2, retrying: 0, delivered: 0, failed: 0 });
      expect(await store.claim('web', SEALED + 499, 10, B)).to.deep.equal([]);
      const [again] = await store.claim('web', SEALED + 500, 10, B);
      expect(again).to.deep.include({ id: batch!.id, attempts: 1, firstAttemptAt: SEALED + 1, body: batch!.body });
      // A's outcomes are stale now (B holds it), except a delivery: the receiver has the body.
      const stale = await store.batches.recordBatches([{ ...retry, nextAttemptAt: SEALED + 900 }, failed(batch!)]);
      expect(stale).to.deep.equal({ recorded: 0, stale: [batch!.id, batch!.id], released: [], members: [] });
      expect(await store.counts()).to.deep.include({ pending: 2, failed: 0 });
      const late = await store.batches.recordBatches([delivered(batch!, SEALED + 600)]);
      expect(late.recorded).to.equal(1);
      expect(ids(late.members)).to.deep.equal(['a', 'b']);
      expect(await store.counts()).to.deep.include({ pending: 0, delivered: 2 });
      // B's outcome comes after: stale.
      expect((await store.batches.recordBatches([failed(again!)])).stale).to.deep.equal([batch!.id]);
    });

    it('splits a batch delivery into parts over the same parked members, while its lease holds', async () => {
      const [a, b, c] = await claimed('a', 'b', 'c');
      const [batch] = (await store.batches.seal(leases([a!, b!, c!]), [batchOf([a!, b!, c!])], SEALED, A))!;
      const parts = await store.batches.split({ id: batch!.id, lease: batch!.lease }, [batchOf([a!]), batchOf([b!, c!])], SEALED + 1, B);
      expect(parts).to.have.length(2);
      expect(parts![1]).to.deep.include({ kind: 'batch', destination: 'Webhooks#0', body: `[${b!.body},${c!.body}]`, createdAt: SEALED + 1, nextAttemptAt: SEALED + 1 + B.ms, attempts: 0 });
      expect((await store.batches.members(parts![1]!.id)).map((m) => m.messageId)).to.deep.equal(['b', 'c']);
      expect(await store.batches.members(batch!.id)).to.deep.equal([]);
      // The batch is gone: its lease is no lease, its outcomes stale.
      expect(await store.batches.split({ id: batch!.id, lease: batch!.lease }, [batchOf([a!])], SEALED + 2, A)).to.equal(null);
      expect((await store.batches.recordBatches([failed(batch!)])).stale).to.deep.equal([batch!.id]);
      // A part whose lease lapsed and was claimed again is not split under the old lease.
      const claimedAgain = await store.claim('web', SEALED + 1 + B.ms, 10, A);
      expect(claimedAgain.map((d) => d.id).sort((x, y) => x - y)).to.deep.equal(parts!.map((p) => p.id));
      expect(await store.batches.split({ id: parts![0]!.id, lease: parts![0]!.lease }, [batchOf([a!])], SEALED + 2 + B.ms, B)).to.equal(null);
      expect(await store.counts()).to.deep.include({ pending: 3 });
      // The members ended by the parts.
      const result = await store.batches.recordBatches(claimedAgain.map((p) => delivered(p, SEALED + 3 + B.ms)));
      expect(ids(result.members)).to.deep.equal(['a', 'b', 'c']);
      expect(await store.counts()).to.deep.include({ pending: 0, delivered: 3 });
    });

    it('keeps a parked ordered call first in its user\'s line until its batch ends it', async () => {
      await store.accept([call('u1-1', 'u1'), call('u1-2', 'u1')]);
      const [first] = await store.claim('web', T0, 10, A);
      expect(first!.messageId).to.equal('u1-1');
      const [batch] = (await store.batches.seal(leases([first!]), [batchOf([first!])], SEALED, A))!;
      // Long after every lease: the batch is due again, the user's next call still waits.
      const due = await store.claim('web', LAPSED + 60_000, 10, B);
      expect(due.map((d) => d.id)).to.deep.equal([batch!.id]);
      expect(await store.waitingFor('web', 'u1-2')).to.equal('u1-1');
      const result = await store.batches.recordBatches([failed(due[0]!)]);
      expect(result.released).to.deep.equal(['web']);
      expect(ids(await store.claim('web', LAPSED + 60_001, 10, B))).to.deep.equal(['u1-2']);
    });

    it('forgets finished batch deliveries and their links when pruned', async () => {
      const members = await claimed('a', 'b');
      const [one, two] = (await store.batches.seal(leases(members), [batchOf(members), batchOf(members, 1)], SEALED, A))!;
      await store.batches.recordBatches([delivered(one!, SEALED + 5)]);
      expect(ids(await store.batches.members(one!.id))).to.deep.equal(['a', 'b']);
      await store.prune(SEALED + 6);
      expect(await store.batches.members(one!.id)).to.deep.equal([]);
      expect(await store.counts()).to.deep.include({ delivered: 2, pending: 0 });
      // `two`, pending, stays: due at its lease's end.
      expect((await store.claim('web', LAPSED, 10, B)).map((d) => d.id)).to.deep.equal([two!.id]);
    });

    it('gives up the batches and parked calls of a deleted source, counting the calls only, and counts them delivered if their batch was', async () => {
      await store.setup.write([{ op: 'create', source: { name: 'web', id: 'id-web', enabled: true, webhooks: undefined, applied: undefined, createdAt: T0, updatedAt: T0 } }]);
      const members = await claimed('a', 'b');
      const [one, two] = (await store.batches.seal(leases(members), [batchOf(members), batchOf(members, 1)], SEALED, A))!;
      const deleted = await store.setup.write([{ op: 'delete', name: 'web', at: SEALED + 1, reason: 'The source was deleted' }]);
      expect(deleted).to.include({ ok: true, failedDeliveries: 2 });
      expect(await store.counts()).to.deep.include({ failed: 2, delivered: 0, pending: 0 });
      expect(await store.claim('web', LAPSED + 1, 10, B)).to.deep.equal([]);
      // A failure of a given-up batch is stale; a delivery under the lease out then counts its calls delivered.
      expect((await store.batches.recordBatches([failed(two!)])).stale).to.deep.equal([two!.id]);
      const result = await store.batches.recordBatches([delivered(one!)]);
      expect(result.recorded).to.equal(1);
      expect(ids(result.members)).to.deep.equal(['a', 'b']);
      expect(await store.counts()).to.deep.include({ failed: 0, delivered: 2, pending: 0 });
    });
  });
}
