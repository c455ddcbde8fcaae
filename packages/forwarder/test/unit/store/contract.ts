import { describe, it } from 'mocha';
import { expect } from 'chai';
import type { AudienceChange, ForwarderStore, LeaseRequest, NewDelivery } from '../../../src/store/contract';
import { AUDIENCE_CHUNK } from '../../../src/store/audience-change';
import { useFreshStore } from './fresh-store';

export const T0 = 1_700_000_000_000;
const LEASE: LeaseRequest = { owner: 'instance-a', ms: 30_000 };
const OTHER: LeaseRequest = { owner: 'instance-b', ms: 30_000 };

export function delivery(messageId: string, createdAt = T0, source = 'web'): NewDelivery {
  return { source, destination: 'Webhooks', kind: 'message', messageId, body: JSON.stringify({ messageId }), createdAt };
}

export function accepted(messageId: string, routed = true, source = 'web') {
  return { source, messageId, receivedAt: T0, deliveries: routed ? [delivery(messageId, T0, source)] : [] };
}

const ids = (list: readonly { messageId: string }[]) => list.map((d) => d.messageId);

/**
 * The ForwarderStore contract, run against every store: `create` returns a new, empty store
 * (the suite closes it). Stores shared by processes are tested for claims from two "instances".
 */
export interface StoreContractOptions {
  /** Whether nextDueAfter tells the end of a claim's lease (PostgreSQL leaves it to the next claim). */
  readonly claimLeaseEnds?: boolean;
}

export function storeContract(name: string, create: () => Promise<ForwarderStore>, options: StoreContractOptions = {}): void {
  const claimLeaseEnds = options.claimLeaseEnds ?? true;
  describe(`${name} (ForwarderStore contract)`, function () {
    this.timeout(20_000);
    const store = useFreshStore(create);

    it('hands out accepted deliveries in order, with a lease, and counts them', async () => {
      const result = await store.accept([accepted('a'), accepted('b'), accepted('c', false)]);
      expect(result).to.deep.equal({ stored: 3, duplicates: 0, repeated: [false, false, false], leased: undefined });
      const due = await store.claim('web', T0, 10, LEASE);
      expect(ids(due)).to.deep.equal(['a', 'b']);
      expect(due[0]).to.include({ attempts: 0, firstAttemptAt: undefined, nextAttemptAt: T0, body: '{"messageId":"a"}', source: 'web', kind: 'message' });
      expect(due[0]!.lease).to.be.above(0);
      const counts = await store.counts();
      expect(counts).to.deep.include({ accepted: 3, duplicates: 0, pending: 2, retrying: 0, oldestPendingAt: T0 });
    });

    it('acknowledges a repeated messageId of the same source without routing it again', async () => {
      await store.accept([accepted('a')]);
      expect(await store.accept([accepted('a'), accepted('b')])).to.deep.equal({ stored: 1, duplicates: 1, repeated: [true, false], leased: undefined });
      await store.accept([accepted('a', true, 'ios')]);
      expect(ids(await store.claim('web', T0, 10, LEASE))).to.deep.equal(['a', 'b']);
      expect(ids(await store.claim('ios', T0, 10, LEASE))).to.deep.equal(['a']);
      expect((await store.counts()).duplicates).to.equal(1);
    });

    it('stores hostile messageIds (U+0000, a lone surrogate) beside others in one commit, and knows them when sent again', async () => {
      const hostile = ['nul\u0000id', 'lone\ud800surrogate', 'low\udc00first'];
      // The first request commits alone; the next two share a commit in stores that group them.
      const [, first, other] = await Promise.all([
        store.accept([accepted('warm', false)]),
        store.accept(hostile.map((id) => accepted(id))),
        store.accept([accepted('plain')]),
      ]);
      expect(first).to.deep.equal({ stored: 3, duplicates: 0, repeated: [false, false, false], leased: undefined });
      expect(other).to.deep.equal({ stored: 1, duplicates: 0, repeated: [false], leased: undefined });
      const again = await store.accept(hostile.map((id) => accepted(id)));
      expect(again).to.deep.equal({ stored: 0, duplicates: 3, repeated: [true, true, true], leased: undefined });
      const due = await store.claim('web', T0, 10, LEASE);
      expect(due).to.have.length(4);
      // The body is the exact bytes to send, whatever the store does with the id.
      expect(due.map((d) => JSON.parse(d.body).messageId).sort()).to.deep.equal([...hostile, 'plain'].sort());
    });

    it('answers each of several concurrent requests with its own result (group commit)', async () => {
      const [first, second, third] = await Promise.all([
        store.accept([accepted('g1')]),
        store.accept([accepted('g1'), accepted('g2')]),
        store.accept([]),
      ]);
      expect(first).to.deep.equal({ stored: 1, duplicates: 0, repeated: [false], leased: undefined });
      // The repeat is the request's first message: the one an earlier request of the same commit carried.
      expect(second).to.deep.equal({ stored: 1, duplicates: 1, repeated: [true, false], leased: undefined });
      expect(third).to.deep.equal({ stored: 0, duplicates: 0, repeated: [], leased: undefined });
      expect(ids(await store.claim('web', T0, 10, LEASE))).to.deep.equal(['g1', 'g2']);
      expect(await store.counts()).to.deep.include({ accepted: 3, duplicates: 1 });
    });

    it('respects the limit and the due time; claimed deliveries are not handed out again while leased', async () => {
      await store.enqueue([delivery('a', T0), delivery('b', T0 + 10), delivery('c', T0 + 20), delivery('later', T0 + 1000)]);
      expect(ids(await store.claim('web', T0 + 20, 2, LEASE))).to.deep.equal(['a', 'b']);
      expect(ids(await store.claim('web', T0 + 20, 2, OTHER))).to.deep.equal(['c']);
      expect(await store.claim('web', T0 + 20, 2, LEASE)).to.deep.equal([]);
      expect(await store.nextDueAfter('web', T0 + 20)).to.equal(T0 + 1000);
      expect(await store.nextDueAfter('nobody', T0 + 20)).to.equal(undefined);
    });

    it('keeps a queue per source', async () => {
      await store.enqueue([delivery('w1', T0, 'web'), delivery('i1', T0, 'ios'), delivery('i2', T0 + 50, 'ios')]);
      expect(await store.nextDueAfter('ios', T0)).to.equal(T0 + 50);
      expect(await store.nextDueAfter('web', T0)).to.equal(undefined);
      expect(ids(await store.claim('ios', T0 + 100, 10, LEASE))).to.deep.equal(['i1', 'i2']);
      expect(ids(await store.claim('web', T0 + 100, 10, LEASE))).to.deep.equal(['w1']);
      expect(await store.claim('nobody', T0 + 100, 10, LEASE)).to.deep.equal([]);
    });

    it('hands a delivery out again when its lease runs out without an outcome, with a new token', async () => {
      await store.enqueue([delivery('a'), delivery('b')]);
      const [a] = await store.claim('web', T0, 1, LEASE);
      expect(ids(await store.claim('web', T0 + 1, 5, LEASE))).to.deep.equal(['b']);
      // The holder died: at the end of the lease the delivery is due again.
      expect(await store.nextDueAfter('web', T0 + 1)).to.equal(claimLeaseEnds ? T0 + LEASE.ms : undefined);
      expect(await store.claim('web', T0 + LEASE.ms - 1, 5, OTHER)).to.deep.equal([]);
      const [again] = await store.claim('web', T0 + LEASE.ms, 5, OTHER);
      expect(again).to.include({ id: a!.id, messageId: 'a', attempts: 0 });
      expect(again!.lease).to.not.equal(a!.lease);
      expect((await store.counts()).pending).to.equal(2);
    });

    it('reschedules a retry and finishes delivered and failed deliveries', async () => {
      await store.enqueue([delivery('a'), delivery('b'), delivery('c')]);
      const [a, b, c] = await store.claim('web', T0, 10, LEASE);
      const result = await store.record([
        { id: a!.id, lease: a!.lease, status: 'retry', attempts: 1, firstAttemptAt: T0, nextAttemptAt: T0 + 500, error: 'HTTP 503' },
        { id: b!.id, lease: b!.lease, status: 'delivered', attempts: 1, firstAttemptAt: T0, at: T0 + 5 },
        { id: c!.id, lease: c!.lease, status: 'failed', attempts: 1, firstAttemptAt: T0, at: T0 + 5, reason: 'HTTP 404' },
      ]);
      expect(result).to.deep.equal({ recorded: 3, stale: [], released: [] });
      expect(await store.claim('web', T0 + 499, 10, LEASE)).to.deep.equal([]);
      expect(await store.nextDueAfter('web', T0)).to.equal(T0 + 500);
      const again = await store.claim('web', T0 + 500, 10, LEASE);
      expect(again).to.have.length(1);
      expect(again[0]).to.include({ messageId: 'a', attempts: 1, firstAttemptAt: T0, nextAttemptAt: T0 + 500 });
      expect(await store.counts()).to.deep.include({ delivered: 1, failed: 1, pending: 1, retrying: 1, oldestPendingAt: T0 });
      // An outcome for a finished delivery changes nothing (a late duplicate write).
      const late = await store.record([{ id: b!.id, lease: b!.lease, status: 'failed', attempts: 2, firstAttemptAt: T0, at: T0 + 9, reason: 'late' }]);
      expect(late).to.deep.equal({ recorded: 0, stale: [b!.id], released: [] });
      expect(await store.counts()).to.deep.include({ delivered: 1, failed: 1 });
    });

    it('a slow holder whose lease ran out records once: its retry or failure yields to the new claim', async () => {
      await store.enqueue([delivery('a'), delivery('b')]);
      const [a, b] = await store.claim('web', T0, 2, LEASE);
      const [a2, b2] = await store.claim('web', T0 + LEASE.ms, 2, OTHER);
      expect([a2!.id, b2!.id]).to.deep.equal([a!.id, b!.id]);
      // The first holder comes back late: its outcomes no longer count...
      const late = await store.record([
        { id: a!.id, lease: a!.lease, status: 'retry', attempts: 1, firstAttemptAt: T0, nextAttemptAt: T0 + 1, error: 'HTTP 503' },
        { id: b!.id, lease: b!.lease, status: 'failed', attempts: 1, firstAttemptAt: T0, at: T0 + 1, reason: 'HTTP 410' },
      ]);
      expect(late).to.deep.equal({ recorded: 0, stale: [a!.id, b!.id], released: [] });
      expect(await store.counts()).to.deep.include({ pending: 2, failed: 0, retrying: 0 });
      // ...the new holder's do, once.
      await store.record([
        { id: a2!.id, lease: a2!.lease, status: 'delivered', attempts: 1, firstAttemptAt: T0 + LEASE.ms, at: T0 + LEASE.ms + 1 },
        { id: b2!.id, lease: b2!.lease, status: 'delivered', attempts: 1, firstAttemptAt: T0 + LEASE.ms, at: T0 + LEASE.ms + 1 },
      ]);
      expect(await store.counts()).to.deep.include({ delivered: 2, failed: 0, pending: 0 });
    });

    it('a delivered outcome from an expired lease still counts, once: the receiver has the message', async () => {
      await store.enqueue([delivery('a'), delivery('b')]);
      const [a, b] = await store.claim('web', T0, 2, LEASE);
      const [a2] = await store.claim('web', T0 + LEASE.ms, 1, OTHER);
      // `a` was taken over, yet its delivery counts; `b` was not: its token still holds.
      const first = await store.record([
        { id: a!.id, lease: a!.lease, status: 'delivered', attempts: 1, firstAttemptAt: T0, at: T0 + LEASE.ms + 5 },
        { id: b!.id, lease: b!.lease, status: 'retry', attempts: 1, firstAttemptAt: T0, nextAttemptAt: T0 + LEASE.ms + 10 },
      ]);
      expect(first).to.deep.equal({ recorded: 2, stale: [], released: [] });
      // The new holder of `a` finishes later: nothing changes, nothing is counted twice.
      const second = await store.record([{ id: a2!.id, lease: a2!.lease, status: 'delivered', attempts: 1, firstAttemptAt: T0 + LEASE.ms, at: T0 + LEASE.ms + 9 }]);
      expect(second).to.deep.equal({ recorded: 0, stale: [a!.id], released: [] });
      expect(await store.counts()).to.deep.include({ delivered: 1, pending: 1, retrying: 1 });
    });

    it('leases what it stores when the accept asks (hand-over): no claim takes it until the lease ends, and its token records', async () => {
      const result = await store.accept([accepted('a'), accepted('b'), accepted('f', false)], { ...LEASE, now: T0 });
      expect(result).to.deep.include({ stored: 3, duplicates: 0, repeated: [false, false, false] });
      // The keys of an answer without a lease (above, `leased: undefined`): the ingestion path's optimized code sees one object shape.
      expect(Object.keys(result)).to.deep.equal(['stored', 'duplicates', 'repeated', 'leased']);
      expect(ids(result.leased!)).to.deep.equal(['a', 'b']);
      const [a, b] = result.leased!;
      expect(a).to.include({ lease: 1, attempts: 0, firstAttemptAt: undefined, nextAttemptAt: T0, createdAt: T0, body: '{"messageId":"a"}', kind: 'message' });
      expect(await store.claim('web', T0 + LEASE.ms - 1, 10, OTHER)).to.deep.equal([]);
      // A hand-over's lease end is a due time every store tells.
      expect(await store.nextDueAfter('web', T0)).to.equal(T0 + LEASE.ms);
      expect(await store.record([{ id: a!.id, lease: a!.lease, status: 'retry', attempts: 1, firstAttemptAt: T0, nextAttemptAt: T0 + 100 }])).to.deep.equal({
        recorded: 1,
        stale: [],
        released: [],
      });
      // The holder of b died: b is due when the lease ends, and the next claim gets a new token.
      const later = await store.claim('web', T0 + LEASE.ms, 10, OTHER);
      expect(ids(later)).to.deep.equal(['a', 'b']);
      expect(later[1]!.lease).to.not.equal(b!.lease);
      expect((await store.record([{ id: b!.id, lease: b!.lease, status: 'failed', attempts: 1, firstAttemptAt: T0, at: T0 + 1, reason: 'late' }])).stale).to.deep.equal([b!.id]);
      // A repeated messageId is acknowledged, not stored, not leased.
      expect(await store.accept([accepted('a')], { ...LEASE, now: T0 })).to.deep.equal({ stored: 0, duplicates: 1, repeated: [true], leased: [] });
      expect(await store.counts()).to.deep.include({ accepted: 4, duplicates: 1, pending: 2 });
    });

    it('takes back a handed-over delivery that was not attempted: due at its time, unleased, no attempt counted', async () => {
      const { leased } = await store.accept([accepted('a')], { ...LEASE, now: T0 });
      const [a] = leased!;
      await store.record([{ id: a!.id, lease: a!.lease, status: 'retry', attempts: 0, firstAttemptAt: undefined, nextAttemptAt: a!.nextAttemptAt }]);
      const due = await store.claim('web', T0, 10, OTHER);
      expect(ids(due)).to.deep.equal(['a']);
      expect(due[0]).to.include({ attempts: 0, firstAttemptAt: undefined, nextAttemptAt: T0 });
      expect(await store.counts()).to.deep.include({ pending: 1, retrying: 0 });
    });

    it('never hands one delivery to two claims made at the same time', async () => {
      await store.enqueue(Array.from({ length: 60 }, (_, i) => delivery(`m${i}`)));
      const claims = await Promise.all(Array.from({ length: 6 }, (_, i) => store.claim('web', T0, 15, { owner: `instance-${i}`, ms: 30_000 })));
      const all = claims.flat().map((d) => d.id);
      expect(new Set(all).size).to.equal(all.length);
      expect(all).to.have.length(60);
    });

    it('keeps audience membership and plans notices from the change', async () => {
      const plan = (change: AudienceChange) => [...change.added.map((id) => delivery(`+${id}`)), ...change.removed.map((id) => delivery(`-${id}`))];
      const first = await store.syncAudience('web', 'vip', ['u1', 'u2', 'u2'], plan);
      expect(first).to.deep.equal({ firstSync: true, added: ['u1', 'u2'], removed: [] });
      const second = await store.syncAudience('web', 'vip', ['u2', 'u3'], plan);
      expect(second).to.deep.equal({ firstSync: false, added: ['u3'], removed: ['u1'] });
      const same = await store.syncAudience('web', 'vip', ['u3', 'u2'], plan);
      expect(same).to.deep.equal({ firstSync: false, added: [], removed: [] });
      // Another source has its own audience of the same name.
      expect((await store.syncAudience('ios', 'vip', ['u9'], plan)).firstSync).to.equal(true);
      expect(ids(await store.claim('web', T0, 100, LEASE))).to.deep.equal(['+u1', '+u2', '+u3', '-u1', '+u9']);
    });

    it('an empty first sync still counts as the first one', async () => {
      expect((await store.syncAudience('web', 'vip', [], () => [])).firstSync).to.equal(true);
      expect(await store.syncAudience('web', 'vip', ['u1'], () => [])).to.deep.equal({ firstSync: false, added: ['u1'], removed: [] });
    });

    it('plans a large audience in chunks and serializes syncs of one audience', async () => {
      const size = 2 * AUDIENCE_CHUNK + 10;
      const members = Array.from({ length: size }, (_, i) => `user-${i}`);
      const chunks: number[] = [];
      const plan = (change: AudienceChange) => {
        chunks.push(change.added.length + change.removed.length);
        return [];
      };
      // Started together: the second sees the first's membership, as if they ran one after the other.
      const [first, second] = await Promise.all([
        store.syncAudience('web', 'big', members, plan),
        store.syncAudience('web', 'big', members.slice(10).concat(['new-user']), plan),
      ]);
      expect(first.added).to.have.length(size);
      expect(chunks.slice(0, 3)).to.deep.equal([AUDIENCE_CHUNK, AUDIENCE_CHUNK, 10]);
      expect(second).to.deep.equal({ firstSync: false, added: ['new-user'], removed: members.slice(0, 10) });
      const third = await store.syncAudience('web', 'big', [], () => []);
      expect(third.removed).to.have.length(size - 10 + 1);
    });

    it('prunes finished deliveries and old messageIds, never pending ones', async () => {
      await store.accept([accepted('a'), accepted('b')]);
      const [a] = await store.claim('web', T0, 1, LEASE);
      await store.record([{ id: a!.id, lease: a!.lease, status: 'delivered', attempts: 1, firstAttemptAt: T0, at: T0 + 1 }]);
      expect(await store.prune(T0 + 2)).to.be.at.least(2); // the two remembered ids, and the finished delivery where kept
      expect(ids(await store.claim('web', T0, 10, LEASE))).to.deep.equal(['b']);
      // Once forgotten, a messageId is accepted as new.
      expect(await store.accept([accepted('a')])).to.deep.equal({ stored: 1, duplicates: 0, repeated: [false], leased: undefined });
    });
  });
}
