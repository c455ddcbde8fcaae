import type { BatchMember, DeliveryKind, NewBatch, NewDelivery, PendingDelivery } from './contract';
import { PENDING } from './statuses';
import type { SchemaCount, UsageDay } from './contract';
import { responseText } from './delivery-log';
import type { AttemptRecord, DeliveryDetail, DeliveryState, LoggedAttempt, LoggedMessage, KeyOrigin, SourceRecord, SourceSchema, SourceSettings, StoredWebhooks, WriteKeyRecord } from './contract';

/** Rows as the SQL stores (SQLite, PostgreSQL) read them, and their mapping to the contract's types. */

/** A `log_messages` row as the SQL delivery logs read it (SQLite gives `has_body` as 0/1, PostgreSQL as a boolean). */
export interface LogRow {
  id: number;
  source: string;
  /** Null in lines of earlier releases. */
  source_id: string | null;
  kind: DeliveryKind;
  message_id: string;
  type: string | null;
  /** The track event name (SQLite step 9, PostgreSQL step 15); null for other types and in lines written before. */
  event?: string | null;
  user_id: string | null;
  received_at: number;
  state: DeliveryState;
  attempts: number;
  series: number;
  updated_at: number;
  finished_at: number | null;
  reason: string | null;
  has_body: number | boolean;
  body?: string | null;
  /** The attempts kept in the line (see `attemptChunk`); null until one is, and in lines of earlier releases. */
  attempt_log?: string | null;
  /** The receivers' answers to those attempts (see `responseEntries`); erased with the body. */
  responses?: string | null;
}

/** A `log_messages` row as the admin API shows it. */
export function toLoggedMessage(row: LogRow): LoggedMessage {
  return {
    id: row.id,
    source: row.source,
    sourceId: row.source_id,
    kind: row.kind,
    messageId: row.message_id,
    type: row.type,
    event: row.event ?? null,
    userId: row.user_id,
    receivedAt: row.received_at,
    state: row.state,
    attempts: row.attempts,
    series: row.series,
    updatedAt: row.updated_at,
    finishedAt: row.finished_at,
    reason: row.reason,
    hasBody: row.has_body === true || row.has_body === 1,
  };
}

/** A claimed `deliveries` row (the due time's column differs per store, so it is passed apart). */
export interface ClaimedRow {
  id: number;
  source: string;
  destination: string;
  kind: DeliveryKind;
  message_id: string;
  body: string;
  created_at: number;
  attempts: number;
  first_attempt_at: number | null;
  /** Null for a delivery not in order per user (and in rows of earlier releases). */
  order_key?: string | null;
}

/** A claimed row as the scheduler gets it: `lease` is the token its outcome must carry. */
export function toPendingDelivery(row: ClaimedRow, lease: number, dueAt: number): PendingDelivery {
  return {
    id: row.id,
    lease,
    source: row.source,
    destination: row.destination,
    kind: row.kind,
    messageId: row.message_id,
    body: row.body,
    createdAt: row.created_at,
    attempts: row.attempts,
    firstAttemptAt: row.first_attempt_at ?? undefined,
    nextAttemptAt: dueAt,
    orderKey: row.order_key ?? undefined,
  };
}

/** A delivery an accept leased as it stored it (token 1, never attempted): what a claim would have handed out. */
export function leasedDelivery(d: NewDelivery, id: number): PendingDelivery {
  return {
    id,
    lease: 1,
    source: d.source,
    destination: d.destination,
    kind: d.kind,
    messageId: d.messageId,
    body: d.body,
    createdAt: d.createdAt,
    attempts: 0,
    firstAttemptAt: undefined,
    nextAttemptAt: d.createdAt,
    orderKey: d.orderKey,
  };
}

/** A `log_attempts` row. */
export interface AttemptRow {
  series: number;
  attempt: number;
  at: number;
  url: string;
  status: number | null;
  error: string | null;
  duration_ms: number;
  outcome: LoggedAttempt['outcome'];
  next_attempt_at: number | null;
}

/** One URL of an attempt as a line keeps it: `[attempt, at, outcome, url, status, error, durationMs, nextAttemptAt]`. */
type AttemptEntry = [number, number, LoggedAttempt['outcome'], string, number | null, string | null, number, number | null];

/** A call of a batch as the SQL stores' statements return it (numbers may come as strings from PostgreSQL). */
export interface MemberRow {
  id: number;
  source: string;
  message_id: string;
  order_key: string | null;
  created_at: number;
  /** Read by `members` only: whether it is pending. */
  status?: number;
}

/** A call of a batch, from its row. */
export function toMember(row: MemberRow): BatchMember {
  const pending = row.status !== undefined && Number(row.status) === PENDING;
  const orderKey = row.order_key ?? undefined;
  return { id: Number(row.id), source: row.source, messageId: row.message_id, orderKey, createdAt: Number(row.created_at), pending };
}

/** A batch delivery as `seal` and `split` hand it out (SQL stores): leased from `now` as a claim leases (token 1). */
export function leasedBatch(batch: NewBatch, id: number, now: number, until: number): PendingDelivery {
  return {
    id,
    lease: 1,
    source: batch.source,
    destination: batch.destination,
    kind: 'batch',
    messageId: batch.messageId,
    body: batch.body,
    createdAt: now,
    attempts: 0,
    firstAttemptAt: undefined,
    nextAttemptAt: until,
    orderKey: undefined,
  };
}

/**
 * Attempts kept in their line (`attempt_log`, PostgreSQL schema step 9): JSON arrays joined by
 * commas, one per write, each `[series, [entry, ...]]` with an entry per URL of each attempt. A
 * write appends its chunk to the line it updates anyway, so an attempt costs no row and no index
 * entry of its own. This is a chunk's second element, the entries' JSON array.
 */
export function attemptEntries(records: readonly AttemptRecord[]): string {
  const entries: AttemptEntry[] = [];
  for (const r of records) {
    for (const u of r.urls) entries.push([r.attempt, r.at, r.outcome, u.url, u.status, u.error, u.durationMs, r.nextAttemptAt ?? null]);
  }
  return JSON.stringify(entries);
}

/** A receiver's answer as a line keeps it: `[attempt, at, url, text]`, the attempt entry it belongs to and the answer. */
type ResponseEntry = [number, number, string, string];

/**
 * The answers to attempts (`responses`, SQLite schema step 9, PostgreSQL step 15), beside
 * `attempt_log` so that erasing them with the body is setting a column to null: chunks joined by
 * commas, written by the same statement as the attempts' chunk, each `[series, [entry, ...]]` with
 * an entry per URL that answered with a body, named by its attempt, time and URL. This is a chunk's
 * second element, or null when no URL of `records` answered with a body. The bytes are decoded
 * here, when the log writes them, not on the delivery path.
 */
export function responseEntries(records: readonly AttemptRecord[]): string | null {
  let entries: ResponseEntry[] | undefined;
  for (const r of records) {
    for (const u of r.urls) {
      const text = responseText(u.response);
      if (text !== null) (entries ??= []).push([r.attempt, r.at, u.url, text]);
    }
  }
  return entries === undefined ? null : JSON.stringify(entries);
}

function responseKey(series: number, attempt: number, at: number, url: string): string {
  return `${series}\u0000${attempt}\u0000${at}\u0000${url}`;
}

/** The answers of a `responses` column, by the attempt entry they belong to. */
function parseResponses(text: string | null | undefined): Map<string, string> | undefined {
  if (text === null || text === undefined || text === '') return undefined;
  const out = new Map<string, string>();
  for (const [series, entries] of JSON.parse(`[${text}]`) as [number, ResponseEntry[]][]) {
    for (const [attempt, at, url, body] of entries) out.set(responseKey(series, attempt, at, url), body);
  }
  return out;
}

/** The attempts of an `attempt_log`, oldest first, with their answers from `responses`. */
export function parseAttemptLog(text: string | null | undefined, responses?: string | null): LoggedAttempt[] {
  if (text === null || text === undefined || text === '') return [];
  const answers = parseResponses(responses);
  const out: LoggedAttempt[] = [];
  for (const [series, entries] of JSON.parse(`[${text}]`) as [number, AttemptEntry[]][]) {
    for (const [attempt, at, outcome, url, status, error, durationMs, nextAttemptAt] of entries) {
      const responseBody = answers?.get(responseKey(series, attempt, at, url)) ?? null;
      out.push({ series, attempt, at, url, status, error, durationMs, outcome, nextAttemptAt, responseBody });
    }
  }
  return out;
}

function fromAttemptRow(a: AttemptRow): LoggedAttempt {
  return {
    series: a.series,
    attempt: a.attempt,
    at: a.at,
    url: a.url,
    status: a.status,
    error: a.error,
    durationMs: a.duration_ms,
    outcome: a.outcome,
    nextAttemptAt: a.next_attempt_at === null || a.next_attempt_at === undefined ? null : Number(a.next_attempt_at),
    // Rows of earlier releases, which kept no answers.
    responseBody: null,
  };
}

/**
 * Attempts from two lists each in its own order, by series and time: rows of `log_attempts`
 * (earlier releases) and those the line keeps. During an upgrade instances of both releases may
 * attempt one delivery; a tie keeps the rows first.
 */
function mergeAttempts(rows: readonly LoggedAttempt[], kept: readonly LoggedAttempt[]): LoggedAttempt[] {
  if (kept.length === 0) return [...rows];
  if (rows.length === 0) return [...kept];
  const out: LoggedAttempt[] = [];
  let i = 0;
  let j = 0;
  while (i < rows.length && j < kept.length) {
    const a = rows[i]!;
    const b = kept[j]!;
    if (b.series < a.series || (b.series === a.series && b.at < a.at)) out.push(kept[j++]!);
    else out.push(rows[i++]!);
  }
  return out.concat(rows.slice(i), kept.slice(j));
}

/**
 * A logged call with its attempts and, while kept, its body: what `GET /admin/deliveries/{id}`
 * shows. `attempts`: its rows of `log_attempts`, oldest first; the line's own `attempt_log` joins them.
 */
export function toDeliveryDetail(row: LogRow, attempts: readonly AttemptRow[]): DeliveryDetail {
  return {
    ...toLoggedMessage(row),
    body: row.body ?? null,
    attemptLog: mergeAttempts(attempts.map(fromAttemptRow), parseAttemptLog(row.attempt_log, row.responses)),
  };
}

/** A `sources` row (SQLite gives `enabled` as 0/1, PostgreSQL as a boolean). */
export interface SourceRow {
  name: string;
  id: string;
  enabled: number | boolean;
  webhooks: string | null;
  applied: string | null;
  /** The settings as JSON text; null when none is set (and in rows of releases before them). */
  settings?: string | null;
  created_at: number;
  updated_at: number;
  /** The schema controls as JSON; null without (and absent before the column was added). */
  schema?: string | null;
}

export function toSourceRecord(row: SourceRow): SourceRecord {
  const settings = row.settings == null ? undefined : (JSON.parse(row.settings) as SourceSettings);
  const record: SourceRecord = {
    name: row.name,
    id: row.id,
    enabled: row.enabled === true || row.enabled === 1,
    webhooks: row.webhooks === null ? undefined : (JSON.parse(row.webhooks) as StoredWebhooks),
    applied: row.applied ?? undefined,
    ...(settings === undefined ? {} : { settings }),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
  return row.schema === null || row.schema === undefined ? record : { ...record, schema: JSON.parse(row.schema) as SourceSchema };
}

/** A `source_keys` row. */
export interface KeyRow {
  id: string;
  source: string;
  digest: string;
  last4: string;
  origin: KeyOrigin;
  created_at: number;
  expires_at: number | null;
}

export function toKeyRecord(row: KeyRow): WriteKeyRecord {
  return {
    id: row.id,
    source: row.source,
    digest: row.digest,
    last4: row.last4,
    origin: row.origin,
    createdAt: row.created_at,
    expiresAt: row.expires_at ?? undefined,
  };
}

/** A `source_events` row (what a source sends: a call type and event name, counted). */
export interface EventRow {
  source_id: string;
  source: string;
  type: string;
  event: string;
  count: number;
  first_seen: number;
  last_seen: number;
}

/** A `source_usage` row (a source's counts of one day). */
export interface DayRow {
  source_id: string;
  source: string;
  day: number;
  received: number;
  filtered: number;
  rejected: number;
  delivered: number;
  failed: number;
}

export function toSchemaCount(r: EventRow): SchemaCount {
  return { sourceId: r.source_id, source: r.source, type: r.type, event: r.event, count: r.count, firstSeen: r.first_seen, lastSeen: r.last_seen };
}

export function toUsageDay(r: DayRow): UsageDay {
  const { received, filtered, rejected, delivered, failed } = r;
  return { sourceId: r.source_id, source: r.source, day: r.day, received, filtered, rejected, delivered, failed };
}
