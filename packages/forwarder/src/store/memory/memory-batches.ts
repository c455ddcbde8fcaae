import type { BatchMember, BatchRecordResult, BatchStore, DeliveryOutcome, FinishedMember, LeaseRequest, MemberLease, NewBatch, PendingDelivery } from '../contract';

type EndOutcome = Extract<DeliveryOutcome, { status: 'delivered' | 'failed' }>;
type RetryOutcome = Extract<DeliveryOutcome, { status: 'retry' }>;

/** The queue of the memory store as its batches reach it (`MemoryStore` implements it). */
export interface MemoryQueue {
  /** The pending delivery `id` as stored (`lease`: its current token), or undefined when it is not pending. */
  pendingDelivery(id: number): PendingDelivery | undefined;
  /** Whether `id` was given up by its source's deletion (and not delivered since). */
  isAbandoned(id: number): boolean;
  /** Stores a batch delivery leased to `lease.owner` from `now`, as a claim leases; returns it as handed out. */
  insertBatch(batch: NewBatch, now: number, lease: LeaseRequest): PendingDelivery;
  /** Parks pending delivery `id`: never due, its token bumped, held by no one. */
  park(id: number): void;
  /** Removes a pending batch delivery (replaced by its parts). */
  removeBatch(id: number): void;
  /** Writes a retry of a batch delivery when its lease holds; true when written. */
  retryBatch(outcome: RetryOutcome): boolean;
  /**
   * Ends a batch delivery as `record` would (delivered from any lease while pending, failed with
   * its lease): `ended`; `revived` for a delivered one its source's deletion gave up under that
   * lease; undefined when not written (stale). Counts nothing.
   */
  endBatch(outcome: EndOutcome): 'ended' | 'revived' | undefined;
  /** Ends pending member `id`, counted; `released`: the next of its key may be claimed now. Undefined when it is not pending. */
  endMember(id: number, status: FinishedMember['status']): { readonly released: boolean } | undefined;
  /** Counts a member given up by its source's deletion delivered instead of failed; false when it was not given up. */
  reviveMember(id: number): boolean;
}

/** A batch delivery's members, and how it ended (while pending: undefined). */
interface BatchRecord {
  readonly members: readonly BatchMember[];
  ended: FinishedMember['status'] | undefined;
}

/**
 * The memory store's batches (contract/batches.ts): the batch deliveries are in its queue like
 * any other; here are their members, and each member's batches, kept while a batch or one of its
 * members is pending (a failed batch fails a member only once every batch of it has failed).
 */
export class MemoryBatches implements BatchStore {
  private readonly records = new Map<number, BatchRecord>();
  /** Member id → the batch deliveries holding it. */
  private readonly holders = new Map<number, number[]>();

  constructor(private readonly queue: MemoryQueue) {}

  async seal(members: readonly MemberLease[], batches: readonly NewBatch[], now: number, lease: LeaseRequest): Promise<PendingDelivery[] | null> {
    const known = new Map<number, BatchMember>();
    for (const m of members) {
      const d = this.queue.pendingDelivery(m.id);
      if (d === undefined || d.lease !== m.lease) return null;
      known.set(m.id, { id: d.id, source: d.source, messageId: d.messageId, orderKey: d.orderKey, createdAt: d.createdAt, pending: true });
    }
    const stored = this.insert(batches, heldBy(batches, known), now, lease);
    for (const id of new Set(batches.flatMap((b) => b.members))) this.queue.park(id);
    return stored;
  }

  async members(batchId: number): Promise<BatchMember[]> {
    return (this.records.get(batchId)?.members ?? []).map((m) => ({ ...m, pending: this.queue.pendingDelivery(m.id) !== undefined }));
  }

  async split(batch: MemberLease, parts: readonly NewBatch[], now: number, lease: LeaseRequest): Promise<PendingDelivery[] | null> {
    const record = this.records.get(batch.id);
    const current = this.queue.pendingDelivery(batch.id);
    if (record === undefined || current === undefined || current.lease !== batch.lease) return null;
    const known = new Map(record.members.map((m) => [m.id, m]));
    const held = heldBy(parts, known);
    this.queue.removeBatch(batch.id);
    this.forget(batch.id, record);
    return this.insert(parts, held, now, lease);
  }

  async recordBatches(outcomes: readonly DeliveryOutcome[]): Promise<BatchRecordResult> {
    const stale: number[] = [];
    const released: string[] = [];
    const ended: FinishedMember[] = [];
    let recorded = 0;
    for (const o of outcomes) {
      const record = this.records.get(o.id);
      const done = record === undefined ? undefined : o.status === 'retry' ? (this.queue.retryBatch(o) ? 'retried' : undefined) : this.queue.endBatch(o);
      if (record === undefined || done === undefined) {
        stale.push(o.id);
        continue;
      }
      recorded++;
      if (o.status === 'retry') continue;
      record.ended = o.status;
      for (const member of record.members) {
        let outcome: { readonly released: boolean } | undefined;
        if (done === 'revived') outcome = this.queue.reviveMember(member.id) ? { released: false } : undefined;
        else if (o.status === 'delivered' || !this.heldElsewhere(member.id, o.id)) outcome = this.queue.endMember(member.id, o.status);
        if (outcome === undefined) continue;
        ended.push({ ...member, pending: false, status: o.status, batchId: o.id });
        if (outcome.released) released.push(member.source);
      }
    }
    return { recorded, stale, released, members: ended };
  }

  /** Forgets the batches whose delivery and members are all finished (a prune). */
  prune(): void {
    for (const [id, record] of this.records) {
      if (this.queue.pendingDelivery(id) !== undefined || this.queue.isAbandoned(id)) continue;
      if (record.members.some((m) => this.queue.pendingDelivery(m.id) !== undefined)) continue;
      this.forget(id, record);
    }
  }

  /** Whether a batch other than `batchId` holding member `id` is pending or delivered. */
  private heldElsewhere(id: number, batchId: number): boolean {
    return (this.holders.get(id) ?? []).some((b) => b !== batchId && (this.queue.pendingDelivery(b) !== undefined || this.records.get(b)?.ended === 'delivered'));
  }

  /** Stores batch deliveries with their members (`held`, by batch). */
  private insert(batches: readonly NewBatch[], held: readonly (readonly BatchMember[])[], now: number, lease: LeaseRequest): PendingDelivery[] {
    return batches.map((b, i) => {
      const members = held[i]!;
      const d = this.queue.insertBatch(b, now, lease);
      this.records.set(d.id, { members, ended: undefined });
      for (const m of members) this.holders.set(m.id, [...(this.holders.get(m.id) ?? []), d.id]);
      return d;
    });
  }

  private forget(batchId: number, record: BatchRecord): void {
    this.records.delete(batchId);
    for (const m of record.members) {
      const rest = (this.holders.get(m.id) ?? []).filter((b) => b !== batchId);
      if (rest.length === 0) this.holders.delete(m.id);
      else this.holders.set(m.id, rest);
    }
  }
}

/** The members of each batch, every one checked before anything is stored (a caller's mistake throws). */
function heldBy(batches: readonly NewBatch[], known: ReadonlyMap<number, BatchMember>): BatchMember[][] {
  return batches.map((b) =>
    b.members.map((id) => {
      const member = known.get(id);
      if (member === undefined) throw new TypeError(`Batch member ${id} is not one of the calls the batch was made for`);
      return member;
    }),
  );
}
