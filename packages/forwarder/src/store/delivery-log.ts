import type { DeliveryKind } from './contract';
import type { AttemptRecord, DeliveryDetail, DeliveryLog, DeliveryLogOptions, DeliveryState, LogCall, LoggedAttempt, LoggedMessage, MessageQuery, ReplayedLine } from './contract';

/**
 * The delivery log: what became of every call a source sent, for operators (the admin API, the
 * debugger page). It sits beside the queue, not in it: the queue decides what is sent, the log
 * only remembers what happened. Writes are buffered and never slow the ingestion answer; reads
 * see every write made before them.
 */

export const DELIVERY_STATES: readonly DeliveryState[] = ['pending', 'retrying', 'delivered', 'failed', 'filtered', 'duplicate', 'refused'];

/** States after which nothing more happens (until a replay). */
export const FINAL_STATES: ReadonlySet<DeliveryState> = new Set(['delivered', 'failed', 'filtered', 'duplicate', 'refused']);

/** Why a call is logged `duplicate`. */
export const DUPLICATE_REASON = 'The source sent this messageId before; not forwarded again';

/** States a replay starts from (with a body still stored). */
export const REPLAYABLE_STATES: ReadonlySet<DeliveryState> = new Set(['failed', 'delivered']);

/** Most bytes of a receiver's answer an attempt keeps (`LoggedAttempt.responseBody`). */
export const RESPONSE_BYTES = 2048;

/** The text of an answer's first bytes (UTF-8, a cut character as U+FFFD); null when there are none. */
export function responseText(bytes: Uint8Array | undefined): string | null {
  if (bytes === undefined || bytes.byteLength === 0) return null;
  const kept = bytes.byteLength > RESPONSE_BYTES ? bytes.subarray(0, RESPONSE_BYTES) : bytes;
  return Buffer.from(kept.buffer, kept.byteOffset, kept.byteLength).toString('utf8');
}

/** An attempt as the memory log keeps it: the answer's bytes, decoded when shown. */
type KeptAttempt = Omit<LoggedAttempt, 'responseBody'> & { response: Uint8Array | undefined };

/** Most calls the in-memory log keeps; the oldest go first. */
export const MEMORY_LOG_LIMIT = 100_000;

interface Entry {
  id: number;
  source: string;
  sourceId: string | null;
  kind: DeliveryKind;
  messageId: string;
  type: string | null;
  event: string | null;
  userId: string | null;
  receivedAt: number;
  state: DeliveryState;
  attempts: number;
  series: number;
  updatedAt: number;
  finishedAt: number | null;
  reason: string | null;
  body: string | undefined;
  attemptLog: KeptAttempt[];
  /** Failed by its source's deletion: only a delivered attempt (one in flight then) changes it. */
  abandoned: boolean;
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
    (query.event === undefined || entry.event === query.event) &&
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
      sourceId: call.sourceId ?? null,
      kind: call.kind,
      messageId: call.messageId,
      type: call.type ?? null,
      event: call.event ?? null,
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
      abandoned: false,
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
    if (entry === undefined || (entry.abandoned && record.outcome !== 'delivered')) return;
    entry.abandoned = false;
    for (const u of record.urls) {
      const nextAttemptAt = record.nextAttemptAt ?? null;
      const { url, status, error, durationMs, response } = u;
      const { series } = entry;
      const { attempt, at, outcome } = record;
      entry.attemptLog.push({ series, attempt, at, url, status, error, durationMs, outcome, nextAttemptAt, response });
    }
    applyAttempt(entry, record);
    if (entry.state === 'delivered' && this.options.keepDelivered === 0) erase(entry);
  }

  async replay(ids: readonly number[], at: number): Promise<ReplayedLine[]> {
    const changed: ReplayedLine[] = [];
    for (const id of ids) {
      const entry = this.find(id);
      if (entry === undefined || !REPLAYABLE_STATES.has(entry.state) || entry.body === undefined) continue;
      const before = { state: entry.state, updatedAt: entry.updatedAt, finishedAt: entry.finishedAt, reason: entry.reason };
      entry.series++;
      entry.abandoned = false;
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

  async abandon(source: string, at: number, reason: string, sourceId?: string): Promise<void> {
    for (const entry of this.entries) {
      if (entry.source !== source || (entry.state !== 'pending' && entry.state !== 'retrying') || !sameSource(entry.sourceId, sourceId)) continue;
      // Still reachable by its key: an attempt in flight at the deletion may yet deliver it.
      Object.assign(entry, { state: 'failed', finishedAt: at, updatedAt: at, reason, abandoned: true });
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

  async failed(source: string, since: number, until: number, sourceId?: string): Promise<DeliveryDetail[]> {
    return this.entries
      .filter((e) => e.source === source && sameSource(e.sourceId, sourceId) && e.state === 'failed' && e.body !== undefined && e.receivedAt >= since && e.receivedAt < until)
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
      if (entry.state === 'delivered' && entry.finishedAt !== null && entry.finishedAt < keptSince && entry.body !== undefined) erase(entry);
      kept.push(entry);
    }
    this.entries = kept;
    return removed;
  }

  async close(): Promise<void> {}
}

/** Whether a line of source id `line` (null: written before ids) belongs to the source `wanted` (undefined: any). */
export function sameSource(line: string | null, wanted: string | undefined): boolean {
  return wanted === undefined || line === null || line === wanted;
}

/** Erases a line's body and, with it, the receivers' answers. */
function erase(entry: Entry): void {
  entry.body = undefined;
  for (const a of entry.attemptLog) a.response = undefined;
}

function summary(entry: Entry): LoggedMessage {
  return {
    id: entry.id,
    source: entry.source,
    sourceId: entry.sourceId,
    kind: entry.kind,
    messageId: entry.messageId,
    type: entry.type,
    event: entry.event,
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
  const attemptLog: LoggedAttempt[] = [];
  for (const { response, ...a } of entry.attemptLog) attemptLog.push({ ...a, responseBody: responseText(response) });
  return { ...summary(entry), body: entry.body ?? null, attemptLog };
}
