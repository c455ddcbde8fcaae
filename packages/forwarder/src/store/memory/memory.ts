import { systemClock } from 'eventrelay/internal';
import type { Clock } from 'eventrelay/internal';
import { MemorySetup } from './memory-setup';
import { MemoryDeliveryLog } from '../delivery-log';
import { MemoryEndpointStore } from '../endpoint-state';
import { MemoryRateBudget } from '../rate-budget';
import { dayOf, MemoryUsageStore, USAGE_DAYS_KEPT } from '../usage';
import type { DeliveryLog, DeliveryLogOptions } from '../contract';
import { SourceDeletedError } from '../contract';
import type { AcceptedMessage, AcceptLease, AcceptResult, AudienceChange, DeliveryOutcome, ForwarderStore, LeaseRequest, NewDelivery, PendingDelivery, RecordResult, StoreCounts } from '../contract';
import { PARKED_AT } from '../contract';
import { audienceChange, audienceChunks, KeyedTurns, yieldToEventLoop } from '../audience-change';
import { MemoryBatches } from './memory-batches';
import type { MemoryQueue } from './memory-batches';

/** A pending delivery as kept here: `nextAttemptAt` is the lease's end while claimed, `dueAt` the time it was due. */
interface Pending extends PendingDelivery {
  readonly dueAt: number;
  readonly owner: string | undefined;
}

function publicView(item: Pending): PendingDelivery {
  const { dueAt, owner: _owner, ...rest } = item;
  return { ...rest, nextAttemptAt: dueAt };
}

/**
 * A ForwarderStore in process memory: the semantics of the SQLite store, but nothing survives a
 * restart and nothing is shared between processes. For tests and for the benchmark that shows
 * what durability costs. Finished deliveries are counted and dropped at once (there is nothing
 * to look at after a restart anyway).
 */
export class MemoryStore implements ForwarderStore {
  private nextId = 1;
  /** Pending deliveries by id; a heap per source orders them by due time (lease end while claimed). */
  private readonly pending = new Map<number, Pending>();
  private readonly heaps = new Map<string, DueHeap>();
  /**
   * Pending ordered deliveries (`orderKey`) by source and key, oldest first: only the first of each
   * is in its source's heap (claimable); the next goes in once it is finished.
   */
  private readonly lines = new Map<string, Pending[]>();
  private retrying = 0;
  /** `source \0 messageId` → receipt time, for duplicate detection. Insertion order = time order. */
  private readonly seen = new Map<string, number>();
  private readonly audiences = new Map<string, Set<string>>();
  /** Syncs of one audience run one after the other. */
  private readonly audienceTurns = new KeyedTurns();
  private readonly totals = { accepted: 0, duplicates: 0, delivered: 0, failed: 0 };
  /**
   * Deliveries given up by their source's deletion, with the lease out then and when: an attempt
   * in flight at the deletion may still record them delivered (see `record`). Pruned with the rest.
   */
  private readonly abandoned = new Map<number, { readonly lease: number; readonly at: number }>();
  /** The sources and their settings (runtime setup), in memory too. */
  readonly setup = new MemorySetup((source, at) => this.failSource(source, at));
  readonly endpoints = new MemoryEndpointStore();
  /** What each source sends and its usage, kept by source id; a deleted source's rows go at the next prune. */
  readonly usage = new MemoryUsageStore(() => this.setup.ids());
  readonly rateBudget: MemoryRateBudget;
  /** The queue's batches: their deliveries are in this queue, their members kept beside it. */
  readonly batches = new MemoryBatches(this.batchQueue());
  readonly shared = false;
  readonly cluster = null;

  /** `clock`: the time the rate budgets count in (the forwarder's clock). */
  constructor(options: { readonly clock?: Clock } = {}) {
    this.rateBudget = new MemoryRateBudget(options.clock ?? systemClock);
  }

  openLog(options: DeliveryLogOptions): DeliveryLog {
    return new MemoryDeliveryLog(options);
  }

  /**
   * A deleted source: its audiences go, its pending deliveries are given up (gone at once:
   * nothing is kept here); returns how many.
   */
  private failSource(source: string, at: number): number {
    for (const key of this.audiences.keys()) if (key.startsWith(`${source}\u0000`)) this.audiences.delete(key);
    let failed = 0;
    for (const [id, delivery] of this.pending) {
      if (delivery.source !== source) continue;
      this.pending.delete(id);
      this.abandoned.set(id, { lease: delivery.lease, at });
      // A batch delivery is no call: its members count.
      if (delivery.kind === 'batch') continue;
      if (delivery.attempts > 0) this.retrying--;
      failed++;
    }
    this.heaps.delete(source);
    for (const key of this.lines.keys()) if (key.startsWith(`${source}\u0000`)) this.lines.delete(key);
    this.totals.failed += failed;
    return failed;
  }

  async accept(messages: readonly AcceptedMessage[], lease?: AcceptLease, sourceId?: string): Promise<AcceptResult> {
    const first = messages[0];
    if (sourceId !== undefined && first !== undefined && !this.setup.holds(first.source, sourceId)) throw new SourceDeletedError(first.source);
    let stored = 0;
    const leased: PendingDelivery[] = [];
    const repeated = messages.map((message) => {
      const key = `${message.source}\u0000${message.messageId}`;
      if (this.seen.has(key)) return true;
      this.seen.set(key, message.receivedAt);
      stored++;
      const items = this.insert(message.deliveries, lease);
      if (lease !== undefined) for (const item of items) if (item.owner !== undefined) leased.push(publicView(item));
      return false;
    });
    this.totals.accepted += messages.length;
    this.totals.duplicates += messages.length - stored;
    // One shape, leased or not (AcceptResult.leased).
    return { stored, duplicates: messages.length - stored, repeated, leased: lease === undefined ? undefined : leased };
  }

  async enqueue(deliveries: readonly NewDelivery[]): Promise<void> {
    this.insert(deliveries);
  }

  /**
   * Stores deliveries, leased as a claim at `lease.now` would lease them when `lease` is given
   * (an ordered one only when none of its key is pending: the others are claimed in their turn).
   */
  private insert(deliveries: readonly NewDelivery[], offered?: AcceptLease): Pending[] {
    return deliveries.map((d) => {
      const lease = d.orderKey === undefined || !this.lines.has(`${d.source}\u0000${d.orderKey}`) ? offered : undefined;
      const delivery: Pending = {
        ...d,
        id: this.nextId++,
        lease: lease === undefined ? 0 : 1,
        attempts: 0,
        firstAttemptAt: undefined,
        nextAttemptAt: lease === undefined ? d.createdAt : lease.now + lease.ms,
        dueAt: d.createdAt,
        owner: lease?.owner,
      };
      this.pending.set(delivery.id, delivery);
      if (!this.waits(delivery)) this.heap(delivery.source).push(delivery);
      return delivery;
    });
  }

  /** Queues an ordered delivery behind its key's others; true when one is ahead of it (it waits). */
  private waits(delivery: Pending): boolean {
    if (delivery.orderKey === undefined) return false;
    const key = `${delivery.source}\u0000${delivery.orderKey}`;
    const line = this.lines.get(key);
    if (line === undefined) {
      this.lines.set(key, [delivery]);
      return false;
    }
    line.push(delivery);
    return true;
  }

  /** A delivery finished: the next of its key, if any, becomes claimable (true then). */
  private finished(delivery: Pending): boolean {
    if (delivery.orderKey === undefined) return false;
    const key = `${delivery.source}\u0000${delivery.orderKey}`;
    const line = this.lines.get(key);
    if (line === undefined || line[0]?.id !== delivery.id) return false;
    line.shift();
    const next = line[0];
    if (next === undefined) {
      this.lines.delete(key);
      return false;
    }
    this.heap(next.source).push(this.pending.get(next.id) ?? next);
    return true;
  }

  private heap(source: string): DueHeap {
    let heap = this.heaps.get(source);
    if (heap === undefined) this.heaps.set(source, (heap = new DueHeap()));
    return heap;
  }

  /** A heap entry is stale once its delivery finished, was claimed or rescheduled (a newer entry exists). */
  private readonly isCurrent = (item: Pending): boolean => this.pending.get(item.id) === item;

  async claim(source: string, now: number, limit: number, lease: LeaseRequest): Promise<PendingDelivery[]> {
    const heap = this.heap(source);
    const out: PendingDelivery[] = [];
    while (out.length < limit) {
      const top = heap.peek();
      if (top === undefined) break;
      if (!this.isCurrent(top)) {
        heap.pop();
        continue;
      }
      if (top.nextAttemptAt > now) break;
      heap.pop();
      // Leased: due again when the lease runs out without an outcome.
      const claimed: Pending = { ...top, lease: top.lease + 1, owner: lease.owner, nextAttemptAt: now + lease.ms, dueAt: top.dueAt };
      this.pending.set(claimed.id, claimed);
      heap.push(claimed);
      out.push(publicView(claimed));
    }
    return out;
  }

  async waitingFor(source: string, messageId: string): Promise<string | undefined> {
    for (const d of this.pending.values()) {
      if (d.source !== source || d.messageId !== messageId || d.orderKey === undefined) continue;
      const first = this.lines.get(`${source}\u0000${d.orderKey}`)?.[0];
      return first === undefined || first.id === d.id ? undefined : first.messageId;
    }
    return undefined;
  }

  async nextDueAfter(source: string, now: number): Promise<number | undefined> {
    const heap = this.heap(source);
    const aside: Pending[] = [];
    let next: number | undefined;
    for (let top = heap.peek(); top !== undefined; top = heap.peek()) {
      if (!this.isCurrent(top)) {
        heap.pop();
        continue;
      }
      if (top.nextAttemptAt > now) {
        next = top.nextAttemptAt;
        break;
      }
      // Due but not taken (the scheduler had no room): not "after now"; step over it.
      aside.push(heap.pop()!);
    }
    for (const item of aside) heap.push(item);
    return next;
  }

  async record(outcomes: readonly DeliveryOutcome[]): Promise<RecordResult> {
    const stale: number[] = [];
    const released: string[] = [];
    let recorded = 0;
    for (const outcome of outcomes) {
      const current = this.pending.get(outcome.id);
      if (current === undefined && outcome.status === 'delivered' && this.abandoned.get(outcome.id)?.lease === outcome.lease) {
        // In flight when its source was deleted, and delivered: counted so, no longer as failed.
        this.abandoned.delete(outcome.id);
        this.totals.failed--;
        this.totals.delivered++;
        recorded++;
        continue;
      }
      if (current === undefined || (current.lease !== outcome.lease && outcome.status !== 'delivered')) {
        stale.push(outcome.id);
        continue;
      }
      recorded++;
      if (current.attempts > 0) this.retrying--;
      if (outcome.status === 'retry') {
        const next: Pending = {
          ...current,
          attempts: outcome.attempts,
          firstAttemptAt: outcome.firstAttemptAt,
          nextAttemptAt: outcome.nextAttemptAt,
          dueAt: outcome.nextAttemptAt,
          owner: undefined,
        };
        if (next.attempts > 0) this.retrying++;
        this.pending.set(next.id, next);
        this.heap(next.source).push(next);
      } else {
        this.pending.delete(outcome.id);
        this.totals[outcome.status]++;
        if (this.finished(current)) released.push(current.source);
      }
    }
    return { recorded, stale, released };
  }

  async syncAudience(
    source: string,
    audience: string,
    members: readonly string[],
    plan: (change: AudienceChange) => readonly NewDelivery[],
  ): Promise<AudienceChange> {
    const key = `${source}\u0000${audience}`;
    return this.audienceTurns.run(key, async () => {
      const change = await audienceChange(this.audiences.get(key), members);
      let current = this.audiences.get(key);
      if (current === undefined) this.audiences.set(key, (current = new Set()));
      for (const chunk of audienceChunks(change)) {
        const deliveries = plan(chunk);
        for (const id of chunk.added) current.add(id);
        for (const id of chunk.removed) current.delete(id);
        this.insert(deliveries);
        await yieldToEventLoop();
      }
      return change;
    });
  }

  async counts(): Promise<StoreCounts> {
    let oldestPendingAt: number | undefined;
    let pending = 0;
    for (const d of this.pending.values()) {
      // Calls not yet delivered: a batch delivery is not one (its members, parked, are).
      if (d.kind === 'batch') continue;
      pending++;
      if (oldestPendingAt === undefined || d.createdAt < oldestPendingAt) oldestPendingAt = d.createdAt;
    }
    return { ...this.totals, pending, retrying: this.retrying, oldestPendingAt };
  }

  async prune(before: number): Promise<number> {
    let removed = this.setup.prune(before);
    removed += await this.usage.prune(dayOf(before) - USAGE_DAYS_KEPT);
    for (const [id, given] of this.abandoned) if (given.at < before) this.abandoned.delete(id);
    this.batches.prune();
    for (const [key, at] of this.seen) {
      if (at >= before) break;
      this.seen.delete(key);
      removed++;
    }
    return removed;
  }

  async close(): Promise<void> {}

  /**
   * The queue as its batches reach it (MemoryQueue, memory-batches.ts): an object of its own, so
   * that these steps are no part of the store's public interface.
   */
  private batchQueue(): MemoryQueue {
    return {
      pendingDelivery: (id) => this.pending.get(id),
      isAbandoned: (id) => this.abandoned.has(id),
      insertBatch: (batch, now, lease) => {
        const until = now + lease.ms;
        const { members: _members, ...fields } = batch;
        // Due at the lease's end, as the SQL stores have it.
        const item: Pending = {
          ...fields,
          kind: 'batch',
          createdAt: now,
          orderKey: undefined,
          id: this.nextId++,
          lease: 1,
          attempts: 0,
          firstAttemptAt: undefined,
          nextAttemptAt: until,
          dueAt: until,
          owner: lease.owner,
        };
        this.pending.set(item.id, item);
        this.heap(item.source).push(item);
        return publicView(item);
      },
      park: (id) => {
        const d = this.pending.get(id);
        // Out of the heap for good (its entry is stale now); still first in its key's line.
        if (d !== undefined) this.pending.set(id, { ...d, lease: d.lease + 1, owner: undefined, nextAttemptAt: PARKED_AT, dueAt: PARKED_AT });
      },
      removeBatch: (id) => {
        if (this.pending.get(id)?.kind === 'batch') this.pending.delete(id);
      },
      retryBatch: (o) => {
        const current = this.pending.get(o.id);
        if (current?.kind !== 'batch' || current.lease !== o.lease) return false;
        const { attempts, firstAttemptAt, nextAttemptAt } = o;
        const next: Pending = { ...current, attempts, firstAttemptAt, nextAttemptAt, dueAt: nextAttemptAt, owner: undefined };
        this.pending.set(next.id, next);
        this.heap(next.source).push(next);
        return true;
      },
      endBatch: (o) => {
        const current = this.pending.get(o.id);
        if (current === undefined) {
          if (o.status !== 'delivered' || this.abandoned.get(o.id)?.lease !== o.lease) return undefined;
          this.abandoned.delete(o.id);
          return 'revived';
        }
        if (current.kind !== 'batch' || (o.status !== 'delivered' && current.lease !== o.lease)) return undefined;
        this.pending.delete(o.id);
        return 'ended';
      },
      endMember: (id, status) => {
        const current = this.pending.get(id);
        if (current === undefined) return undefined;
        this.pending.delete(id);
        if (current.attempts > 0) this.retrying--;
        this.totals[status]++;
        return { released: this.finished(current) };
      },
      reviveMember: (id) => {
        if (!this.abandoned.delete(id)) return false;
        this.totals.failed--;
        this.totals.delivered++;
        return true;
      },
    };
  }
}

/** Binary min-heap of pending deliveries by (nextAttemptAt, id). */
class DueHeap {
  private readonly items: Pending[] = [];

  push(item: Pending): void {
    const items = this.items;
    items.push(item);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(items[i]!, items[parent]!)) break;
      [items[i], items[parent]] = [items[parent]!, items[i]!];
      i = parent;
    }
  }

  peek(): Pending | undefined {
    return this.items[0];
  }

  pop(): Pending | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (last === undefined) return undefined;
    if (items.length > 0) {
      items[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < items.length && before(items[l]!, items[m]!)) m = l;
        if (r < items.length && before(items[r]!, items[m]!)) m = r;
        if (m === i) break;
        [items[i], items[m]] = [items[m]!, items[i]!];
        i = m;
      }
    }
    return top;
  }
}

function before(a: Pending, b: Pending): boolean {
  return a.nextAttemptAt < b.nextAttemptAt || (a.nextAttemptAt === b.nextAttemptAt && a.id < b.id);
}

/** Opens a store in process memory: nothing survives a restart, nothing is shared. */
export function openMemoryStore(options: { readonly clock?: Clock | undefined } = {}): MemoryStore {
  return new MemoryStore(options.clock === undefined ? {} : { clock: options.clock });
}
