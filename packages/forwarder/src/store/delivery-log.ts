import type { DeliveryKind } from './store';

/**
 * The delivery log: what became of every call a source sent, for operators (the admin API, the
 * debugger page). It sits beside the queue, not in it: the queue decides what is sent, the log
 * only remembers what happened. Writes are buffered and never slow the ingestion answer; reads
 * see every write made before them.
 */

/** Where a logged call stands. `filtered`: no destination wanted it (`integrations`, or none on). */
export type DeliveryState = 'pending' | 'retrying' | 'delivered' | 'failed' | 'filtered' | 'duplicate' | 'refused';

export const DELIVERY_STATES: readonly DeliveryState[] = ['pending', 'retrying', 'delivered', 'failed', 'filtered', 'duplicate', 'refused'];

/** States after which nothing more happens (until a replay). */
export const FINAL_STATES: ReadonlySet<DeliveryState> = new Set(['delivered', 'failed', 'filtered', 'duplicate', 'refused']);

/** A call to log: accepted (with or without a delivery) or refused. */
export interface LogCall {
  readonly source: string;
  readonly kind: DeliveryKind;
  readonly messageId: string;
  /** Call type (`track`, ...), `delete` for deletion notices; undefined when a refused call had none. */
  readonly type: string | undefined;
  readonly userId: string | undefined;
  /** Receipt time, epoch ms. */
  readonly receivedAt: number;
  /** The webhook body when a delivery was made; undefined when filtered or refused. */
  readonly body: string | undefined;
  /** Set for refused calls (why) and filtered ones (which rule). */
  readonly reason?: string;
  readonly state: 'pending' | 'filtered' | 'refused' | 'duplicate';
}

/** What one URL did in one attempt. URLs are redacted (no credentials, no query). */
export interface LoggedAttempt {
  /** 1 for the first series; a replay starts the next. */
  readonly series: number;
  /** Attempt number within the series, from 1. */
  readonly attempt: number;
  /** When the attempt finished, epoch ms. */
  readonly at: number;
  readonly url: string;
  /** HTTP status, when the receiver answered. */
  readonly status: number | null;
  /** Error code (`ERR_TIMEOUT`, `ERR_NETWORK`, ...) when it did not answer, or `HTTP` for a non-2xx status. */
  readonly error: string | null;
  readonly durationMs: number;
  /** What the attempt as a whole led to. */
  readonly outcome: 'delivered' | 'retry' | 'failed';
  /** With `retry`: when the next attempt is due (the retry schedule's answer), epoch ms; else null. */
  readonly nextAttemptAt: number | null;
}

/** One attempt of a delivery, as the scheduler reports it. */
export interface AttemptRecord {
  readonly source: string;
  readonly messageId: string;
  readonly attempt: number;
  readonly at: number;
  readonly outcome: 'delivered' | 'retry' | 'failed';
  /** Why it failed for good (`failed` only). */
  readonly reason?: string;
  /** When the next attempt is due (`retry` only), epoch ms. */
  readonly nextAttemptAt?: number;
  readonly urls: readonly { readonly url: string; readonly status: number | null; readonly error: string | null; readonly durationMs: number }[];
}

/** A row of `GET /admin/messages`; its `id` is the delivery id of `GET /admin/deliveries/{id}`. */
export interface LoggedMessage {
  readonly id: number;
  readonly source: string;
  readonly kind: DeliveryKind;
  readonly messageId: string;
  readonly type: string | null;
  readonly userId: string | null;
  readonly receivedAt: number;
  readonly state: DeliveryState;
  /** Attempts made, over every series. */
  readonly attempts: number;
  /** 1, plus one per replay. */
  readonly series: number;
  readonly updatedAt: number;
  /** When it reached a final state, epoch ms; null while pending. */
  readonly finishedAt: number | null;
  /** Refused or filtered: why. Failed: the last reason. Retrying: the last error. */
  readonly reason: string | null;
  /** Whether the body is still stored. */
  readonly hasBody: boolean;
}

export interface DeliveryDetail extends LoggedMessage {
  readonly body: string | null;
  /** Oldest first. */
  readonly attemptLog: readonly LoggedAttempt[];
}

export interface MessageQuery {
  readonly source?: string;
  readonly state?: DeliveryState;
  readonly type?: string;
  readonly messageId?: string;
  readonly userId?: string;
  /** Received at or after, epoch ms. */
  readonly since?: number;
  /** Received before, epoch ms. */
  readonly until?: number;
  /** Only ids below this one (the cursor). */
  readonly beforeId?: number;
  readonly limit: number;
}

export interface DeliveryLogOptions {
  /** How long a delivered body is kept, in ms; 0 erases it when delivered. */
  readonly keepDelivered: number;
}

export interface DeliveryLog {
  /**
   * Calls, in order, each in the state it is logged in: accepted ones `pending` (a later attempt
   * goes to the newest of its key), `filtered` or `duplicate`; refused ones; deletion notices and
   * audience identifies.
   */
  add(calls: readonly LogCall[]): void;
  attempt(record: AttemptRecord): void;
  /**
   * Starts the next attempt series of each line in `ids` that is failed, or delivered with its
   * body kept: pending again at `at`, written at once, and atomically (on PostgreSQL, across
   * instances). Resolves with the lines it changed; a line replayed first by another caller is
   * left out, so that a call is queued again once however many replay it at the same time.
   */
  replay(ids: readonly number[], at: number): Promise<ReplayedLine[]>;
  /** Puts lines back as `replay` found them, when their delivery could not be queued. */
  unreplay(lines: readonly ReplayedLine[]): Promise<void>;
  /**
   * Finishes every open line (pending or retrying) of `source` as failed at `at` with `reason`:
   * the source was deleted and its queued deliveries given up. Sees every write made before it.
   */
  abandon(source: string, at: number, reason: string): Promise<void>;
  /** Newest first. */
  list(query: MessageQuery): Promise<LoggedMessage[]>;
  get(id: number): Promise<DeliveryDetail | undefined>;
  /** Failed deliveries of a source received in [since, until), oldest first, with a body to send again. */
  failed(source: string, since: number, until: number): Promise<DeliveryDetail[]>;
  /**
   * Removes what finished before `before` and erases delivered bodies older than the keep time.
   * Returns rows removed.
   */
  prune(before: number, now: number): Promise<number>;
  close(): Promise<void>;
}

/** A line `replay` changed: the series it started, and what it was before (for `unreplay`). */
export interface ReplayedLine {
  readonly id: number;
  readonly series: number;
  readonly before: { readonly state: DeliveryState; readonly updatedAt: number; readonly finishedAt: number | null; readonly reason: string | null };
}

/** Why a call is logged `duplicate`. */
export const DUPLICATE_REASON = 'The source sent this messageId before; not forwarded again';

/** States a replay starts from (with a body still stored). */
export const REPLAYABLE_STATES: ReadonlySet<DeliveryState> = new Set(['failed', 'delivered']);

/** Most calls the in-memory log keeps; the oldest go first. */
export const MEMORY_LOG_LIMIT = 100_000;

interface Entry {
  id: number;
  source: string;
  kind: DeliveryKind;
  messageId: string;
  type: string | null;
  userId: string | null;
  receivedAt: number;
  state: DeliveryState;
  attempts: number;
  series: number;
  updatedAt: number;
  finishedAt: number | null;
  reason: string | null;
  body: string | undefined;
  attemptLog: LoggedAttempt[];
}

function keyOf(source: string, messageId: string): string {
  return `${source}\u0000${messageId}`;
}

/** Applies an attempt to a logged call: its state, counts and body (shared by every log). */
export function applyAttempt(
  entry: { state: DeliveryState; attempts: number; updatedAt: number; finishedAt: number | null; reason: string | null },
  record: AttemptRecord,
): void {
  entry.attempts++;
  entry.updatedAt = record.at;
  if (record.outcome === 'delivered') {
    entry.state = 'delivered';
    entry.finishedAt = record.at;
    entry.reason = null;
  } else if (record.outcome === 'failed') {
    entry.state = 'failed';
    entry.finishedAt = record.at;
    entry.reason = record.reason ?? null;
  } else {
    entry.state = 'retrying';
    entry.reason = summarizeUrls(record);
  }
}

/** "HTTP 503 from http://host/path; ERR_TIMEOUT from ...": statuses and codes, never bodies. */
export function summarizeUrls(record: AttemptRecord): string {
  return record.urls.map((u) => `${u.status !== null ? `HTTP ${u.status}` : (u.error ?? 'error')} from ${u.url}`).join('; ');
}

/** True when `entry` passes the filters of `query` (cursor and limit aside). */
export function matches(entry: LoggedMessage, query: MessageQuery): boolean {
  return (
    (query.source === undefined || entry.source === query.source) &&
    (query.state === undefined || entry.state === query.state) &&
    (query.type === undefined || entry.type === query.type) &&
    (query.messageId === undefined || entry.messageId === query.messageId) &&
    (query.userId === undefined || entry.userId === query.userId) &&
    (query.since === undefined || entry.receivedAt >= query.since) &&
    (query.until === undefined || entry.receivedAt < query.until)
  );
}

/**
 * The delivery log in process memory, for the memory store and custom stores: the newest
 * `limit` calls (default 100 000), nothing after a restart. Bodies are the queue's own strings,
 * not copies.
 */
export class MemoryDeliveryLog implements DeliveryLog {
  private nextId = 1;
  /** In id order. */
  private entries: Entry[] = [];
  /** The latest entry that can still get attempts, per source and messageId. */
  private readonly live = new Map<string, Entry>();

  constructor(
    private readonly options: DeliveryLogOptions,
    private readonly limit = MEMORY_LOG_LIMIT,
  ) {}

  add(calls: readonly LogCall[]): void {
    for (const call of calls) {
      const entry = this.push(call);
      if (call.state === 'pending') this.live.set(keyOf(call.source, call.messageId), entry);
    }
    this.trim();
  }

  private push(call: LogCall): Entry {
    const pending = call.state === 'pending';
    const entry: Entry = {
      id: this.nextId++,
      source: call.source,
      kind: call.kind,
      messageId: call.messageId,
      type: call.type ?? null,
      userId: call.userId ?? null,
      receivedAt: call.receivedAt,
      state: call.state,
      attempts: 0,
      series: 1,
      updatedAt: call.receivedAt,
      finishedAt: pending ? null : call.receivedAt,
      reason: call.reason ?? null,
      body: pending ? call.body : undefined,
      attemptLog: [],
    };
    this.entries.push(entry);
    return entry;
  }

  private trim(): void {
    // Trimmed in steps of a tenth, so the array is not shifted on every call.
    if (this.entries.length <= this.limit * 1.1) return;
    const dropped = this.entries.splice(0, this.entries.length - this.limit);
    for (const entry of dropped) this.forget(entry);
  }

  private forget(entry: Entry): void {
    const key = keyOf(entry.source, entry.messageId);
    if (this.live.get(key) === entry) this.live.delete(key);
  }

  attempt(record: AttemptRecord): void {
    const entry = this.live.get(keyOf(record.source, record.messageId));
    if (entry === undefined) return;
    for (const u of record.urls) {
      const nextAttemptAt = record.nextAttemptAt ?? null;
      entry.attemptLog.push({ series: entry.series, attempt: record.attempt, at: record.at, ...u, outcome: record.outcome, nextAttemptAt });
    }
    applyAttempt(entry, record);
    if (entry.state === 'delivered' && this.options.keepDelivered === 0) entry.body = undefined;
  }

  async replay(ids: readonly number[], at: number): Promise<ReplayedLine[]> {
    const changed: ReplayedLine[] = [];
    for (const id of ids) {
      const entry = this.find(id);
      if (entry === undefined || !REPLAYABLE_STATES.has(entry.state) || entry.body === undefined) continue;
      const before = { state: entry.state, updatedAt: entry.updatedAt, finishedAt: entry.finishedAt, reason: entry.reason };
      entry.series++;
      entry.state = 'pending';
      entry.finishedAt = null;
      entry.updatedAt = at;
      entry.reason = null;
      this.live.set(keyOf(entry.source, entry.messageId), entry);
      changed.push({ id, series: entry.series, before });
    }
    return changed;
  }

  async unreplay(lines: readonly ReplayedLine[]): Promise<void> {
    for (const line of lines) {
      const entry = this.find(line.id);
      if (entry === undefined || entry.series !== line.series || entry.state !== 'pending') continue;
      entry.series--;
      Object.assign(entry, line.before);
    }
  }

  async abandon(source: string, at: number, reason: string): Promise<void> {
    for (const entry of this.entries) {
      if (entry.source !== source || (entry.state !== 'pending' && entry.state !== 'retrying')) continue;
      Object.assign(entry, { state: 'failed', finishedAt: at, updatedAt: at, reason });
      this.forget(entry);
    }
  }

  private find(id: number): Entry | undefined {
    // Ids increase along the array: binary search.
    let lo = 0;
    let hi = this.entries.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const e = this.entries[mid]!;
      if (e.id === id) return e;
      if (e.id < id) lo = mid + 1;
      else hi = mid - 1;
    }
    return undefined;
  }

  async list(query: MessageQuery): Promise<LoggedMessage[]> {
    const out: LoggedMessage[] = [];
    for (let i = this.entries.length - 1; i >= 0 && out.length < query.limit; i--) {
      const entry = this.entries[i]!;
      if (query.beforeId !== undefined && entry.id >= query.beforeId) continue;
      if (matches(summary(entry), query)) out.push(summary(entry));
    }
    return out;
  }

  async get(id: number): Promise<DeliveryDetail | undefined> {
    const entry = this.find(id);
    return entry === undefined ? undefined : detail(entry);
  }

  async failed(source: string, since: number, until: number): Promise<DeliveryDetail[]> {
    return this.entries
      .filter((e) => e.source === source && e.state === 'failed' && e.body !== undefined && e.receivedAt >= since && e.receivedAt < until)
      .map(detail);
  }

  async prune(before: number, now: number): Promise<number> {
    const keptSince = now - this.options.keepDelivered;
    const kept: Entry[] = [];
    let removed = 0;
    for (const entry of this.entries) {
      if (entry.finishedAt !== null && entry.finishedAt < before) {
        this.forget(entry);
        removed++;
        continue;
      }
      if (entry.state === 'delivered' && entry.finishedAt !== null && entry.finishedAt < keptSince) entry.body = undefined;
      kept.push(entry);
    }
    this.entries = kept;
    return removed;
  }

  async close(): Promise<void> {}
}

function summary(entry: Entry): LoggedMessage {
  return {
    id: entry.id,
    source: entry.source,
    kind: entry.kind,
    messageId: entry.messageId,
    type: entry.type,
    userId: entry.userId,
    receivedAt: entry.receivedAt,
    state: entry.state,
    attempts: entry.attempts,
    series: entry.series,
    updatedAt: entry.updatedAt,
    finishedAt: entry.finishedAt,
    reason: entry.reason,
    hasBody: entry.body !== undefined,
  };
}

function detail(entry: Entry): DeliveryDetail {
  return { ...summary(entry), body: entry.body ?? null, attemptLog: [...entry.attemptLog] };
}
