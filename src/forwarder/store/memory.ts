import { audienceChange } from './store';
import type {
  AcceptedMessage,
  AcceptResult,
  AudienceChange,
  DeliveryOutcome,
  ForwarderStore,
  NewDelivery,
  PendingDelivery,
  StoreCounts,
} from './store';

/**
 * A ForwarderStore in process memory: the semantics of the SQLite store, but nothing survives a
 * restart. For tests and for the benchmark that shows what durability costs. Finished
 * deliveries are counted and dropped at once (there is nothing to look at after a restart anyway).
 */
export class MemoryStore implements ForwarderStore {
  private nextId = 1;
  /** Pending deliveries by id; a heap per source orders them by due time. */
  private readonly pending = new Map<number, PendingDelivery>();
  private readonly heaps = new Map<string, DueHeap>();
  /** Deliveries handed out by `due()` and not recorded yet, per source (out of the heaps). */
  private readonly parked = new Map<string, Map<number, PendingDelivery>>();
  private retrying = 0;
  /** `source \0 messageId` → receipt time, for duplicate detection. Insertion order = time order. */
  private readonly seen = new Map<string, number>();
  private readonly audiences = new Map<string, Set<string>>();
  private readonly totals = { accepted: 0, duplicates: 0, delivered: 0, failed: 0 };

  async accept(messages: readonly AcceptedMessage[]): Promise<AcceptResult> {
    let stored = 0;
    for (const message of messages) {
      const key = `${message.source}\u0000${message.messageId}`;
      if (this.seen.has(key)) continue;
      this.seen.set(key, message.receivedAt);
      stored++;
      this.insert(message.deliveries);
    }
    this.totals.accepted += messages.length;
    this.totals.duplicates += messages.length - stored;
    return { stored, duplicates: messages.length - stored };
  }

  async enqueue(deliveries: readonly NewDelivery[]): Promise<void> {
    this.insert(deliveries);
  }

  private insert(deliveries: readonly NewDelivery[]): void {
    for (const d of deliveries) {
      const delivery: PendingDelivery = { ...d, id: this.nextId++, attempts: 0, firstAttemptAt: undefined, nextAttemptAt: d.createdAt };
      this.pending.set(delivery.id, delivery);
      this.heap(delivery.source).push(delivery);
    }
  }

  private heap(source: string): DueHeap {
    let heap = this.heaps.get(source);
    if (heap === undefined) this.heaps.set(source, (heap = new DueHeap()));
    return heap;
  }

  private parkedOf(source: string): Map<number, PendingDelivery> {
    let parked = this.parked.get(source);
    if (parked === undefined) this.parked.set(source, (parked = new Map()));
    return parked;
  }

  /** A heap entry is stale once its delivery finished or was rescheduled (a newer entry exists). */
  private readonly isCurrent = (item: PendingDelivery): boolean => this.pending.get(item.id) === item;

  async due(source: string, now: number, limit: number, exclude: ReadonlySet<number>): Promise<PendingDelivery[]> {
    const heap = this.heap(source);
    const parked = this.parkedOf(source);
    // Handed out earlier but no longer in flight for the caller, without an outcome: due again.
    for (const [id, item] of parked) {
      if (exclude.has(id)) continue;
      parked.delete(id);
      if (this.isCurrent(item)) heap.push(item);
    }
    const out: PendingDelivery[] = [];
    while (out.length < limit) {
      const top = heap.peek();
      if (top === undefined) break;
      if (!this.isCurrent(top)) {
        heap.pop();
        continue;
      }
      if (!exclude.has(top.id) && top.nextAttemptAt > now) break;
      heap.pop();
      // In flight from here until its outcome comes back: out of the heap, so that the next
      // calls do not wade through the attempts in flight at its top.
      parked.set(top.id, top);
      if (!exclude.has(top.id)) out.push(top);
    }
    return out;
  }

  async nextDueAfter(source: string, now: number): Promise<number | undefined> {
    const heap = this.heap(source);
    const aside: PendingDelivery[] = [];
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

  async record(outcomes: readonly DeliveryOutcome[]): Promise<void> {
    for (const outcome of outcomes) {
      const current = this.pending.get(outcome.id);
      if (current === undefined) continue;
      this.parked.get(current.source)?.delete(current.id);
      if (current.attempts > 0) this.retrying--;
      if (outcome.status === 'retry') {
        const next = { ...current, attempts: outcome.attempts, firstAttemptAt: outcome.firstAttemptAt, nextAttemptAt: outcome.nextAttemptAt };
        if (next.attempts > 0) this.retrying++;
        this.pending.set(next.id, next);
        this.heap(next.source).push(next);
      } else {
        this.pending.delete(outcome.id);
        this.totals[outcome.status]++;
      }
    }
  }

  async syncAudience(
    source: string,
    audience: string,
    members: readonly string[],
    plan: (change: AudienceChange) => readonly NewDelivery[],
  ): Promise<AudienceChange> {
    const key = `${source}\u0000${audience}`;
    const change = audienceChange(this.audiences.get(key), members);
    const deliveries = plan(change);
    this.audiences.set(key, new Set(members));
    this.insert(deliveries);
    return change;
  }

  async counts(): Promise<StoreCounts> {
    let oldestPendingAt: number | undefined;
    for (const d of this.pending.values()) {
      if (oldestPendingAt === undefined || d.createdAt < oldestPendingAt) oldestPendingAt = d.createdAt;
    }
    return { ...this.totals, pending: this.pending.size, retrying: this.retrying, oldestPendingAt };
  }

  async prune(before: number): Promise<number> {
    let removed = 0;
    for (const [key, at] of this.seen) {
      if (at >= before) break;
      this.seen.delete(key);
      removed++;
    }
    return removed;
  }

  async close(): Promise<void> {}
}

/** Binary min-heap of pending deliveries by (nextAttemptAt, id). */
class DueHeap {
  private readonly items: PendingDelivery[] = [];

  push(item: PendingDelivery): void {
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

  peek(): PendingDelivery | undefined {
    return this.items[0];
  }

  pop(): PendingDelivery | undefined {
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

function before(a: PendingDelivery, b: PendingDelivery): boolean {
  return a.nextAttemptAt < b.nextAttemptAt || (a.nextAttemptAt === b.nextAttemptAt && a.id < b.id);
}
