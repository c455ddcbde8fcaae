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

interface Row {
  delivery: PendingDelivery;
  status: 'pending' | 'delivered' | 'failed';
  finishedAt?: number;
}

/**
 * A ForwarderStore in process memory: same semantics as the SQLite store, nothing survives a
 * restart. For tests and for the benchmark that shows what durability costs.
 */
export class MemoryStore implements ForwarderStore {
  private nextId = 1;
  private readonly rows = new Map<number, Row>();
  /** Pending ids ordered by (nextAttemptAt, id). */
  private readonly heap = new DueHeap();
  private readonly seen = new Map<string, number>();
  private readonly audiences = new Map<string, Set<string>>();
  private readonly totals = { accepted: 0, duplicates: 0, delivered: 0, failed: 0 };

  async accept(messages: readonly AcceptedMessage[]): Promise<AcceptResult> {
    let stored = 0;
    let duplicates = 0;
    for (const message of messages) {
      const key = `${message.source}\u0000${message.messageId}`;
      if (this.seen.has(key)) {
        duplicates++;
        continue;
      }
      this.seen.set(key, message.receivedAt);
      stored++;
      this.insert(message.deliveries);
    }
    this.totals.accepted += messages.length;
    this.totals.duplicates += duplicates;
    return { stored, duplicates };
  }

  async enqueue(deliveries: readonly NewDelivery[]): Promise<void> {
    this.insert(deliveries);
  }

  private insert(deliveries: readonly NewDelivery[]): void {
    for (const d of deliveries) {
      const id = this.nextId++;
      const delivery: PendingDelivery = { ...d, id, attempts: 0, firstAttemptAt: undefined, nextAttemptAt: d.createdAt };
      this.rows.set(id, { delivery, status: 'pending' });
      this.heap.push(delivery);
    }
  }

  async due(now: number, limit: number, exclude: ReadonlySet<number>): Promise<PendingDelivery[]> {
    return this.heap.peekDue(now, limit, exclude, (item) => this.isCurrent(item));
  }

  /** A heap entry is stale once its row was finished or rescheduled (a newer entry exists). */
  private isCurrent(item: PendingDelivery): boolean {
    const row = this.rows.get(item.id);
    return row !== undefined && row.status === 'pending' && row.delivery === item;
  }

  async nextDueAfter(now: number): Promise<number | undefined> {
    let best: number | undefined;
    for (const row of this.rows.values()) {
      const at = row.delivery.nextAttemptAt;
      if (row.status === 'pending' && at > now && (best === undefined || at < best)) best = at;
    }
    return best;
  }

  async record(outcomes: readonly DeliveryOutcome[]): Promise<void> {
    for (const outcome of outcomes) {
      const row = this.rows.get(outcome.id);
      if (row === undefined || row.status !== 'pending') continue;
      if (outcome.status === 'retry') {
        row.delivery = { ...row.delivery, attempts: outcome.attempts, firstAttemptAt: outcome.firstAttemptAt, nextAttemptAt: outcome.nextAttemptAt };
        this.heap.push(row.delivery);
      } else {
        row.delivery = { ...row.delivery, attempts: outcome.attempts, firstAttemptAt: outcome.firstAttemptAt };
        row.status = outcome.status;
        row.finishedAt = outcome.at;
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
    let pending = 0;
    let retrying = 0;
    let oldestPendingAt: number | undefined;
    for (const row of this.rows.values()) {
      if (row.status !== 'pending') continue;
      pending++;
      if (row.delivery.attempts > 0) retrying++;
      if (oldestPendingAt === undefined || row.delivery.createdAt < oldestPendingAt) oldestPendingAt = row.delivery.createdAt;
    }
    return { ...this.totals, pending, retrying, oldestPendingAt };
  }

  async prune(before: number): Promise<number> {
    let removed = 0;
    for (const [id, row] of this.rows) {
      if (row.status !== 'pending' && (row.finishedAt ?? 0) < before) {
        this.rows.delete(id);
        removed++;
      }
    }
    for (const [key, at] of this.seen) {
      if (at < before) {
        this.seen.delete(key);
        removed++;
      }
    }
    return removed;
  }

  async close(): Promise<void> {}
}

/** Binary min-heap of pending deliveries by (nextAttemptAt, id); stale entries are dropped when met. */
class DueHeap {
  private items: PendingDelivery[] = [];

  push(item: PendingDelivery): void {
    this.items.push(item);
    let i = this.items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(this.items[i]!, this.items[parent]!)) break;
      [this.items[i], this.items[parent]] = [this.items[parent]!, this.items[i]!];
      i = parent;
    }
  }

  /** Due items in order without taking them out: pops into a scratch list, then pushes back. */
  peekDue(now: number, limit: number, exclude: ReadonlySet<number>, current: (item: PendingDelivery) => boolean): PendingDelivery[] {
    const out: PendingDelivery[] = [];
    const skipped: PendingDelivery[] = [];
    while (out.length < limit && this.items.length > 0) {
      const top = this.items[0]!;
      if (!current(top)) {
        this.pop();
        continue;
      }
      if (top.nextAttemptAt > now) break;
      this.pop();
      (exclude.has(top.id) ? skipped : out).push(top);
    }
    for (const item of [...skipped, ...out]) this.push(item);
    return out;
  }

  private pop(): void {
    const last = this.items.pop()!;
    if (this.items.length === 0) return;
    this.items[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < this.items.length && before(this.items[l]!, this.items[m]!)) m = l;
      if (r < this.items.length && before(this.items[r]!, this.items[m]!)) m = r;
      if (m === i) break;
      [this.items[i], this.items[m]] = [this.items[m]!, this.items[i]!];
      i = m;
    }
  }
}

function before(a: PendingDelivery, b: PendingDelivery): boolean {
  return a.nextAttemptAt < b.nextAttemptAt || (a.nextAttemptAt === b.nextAttemptAt && a.id < b.id);
}
