import { HISTOGRAM_BUCKETS } from './health';
import type { EndpointLatest, EndpointMinute } from './health';
import type { TimelineMinute } from './timeline';

/**
 * The text form in which an instance shares its endpoint health and timeline with the others
 * (PostgreSQL rows): compact JSON arrays, a histogram as its non-empty buckets only. Another
 * instance may run another release, so decoding checks every value and answers undefined for what
 * it does not understand (the row is then left out, never trusted half).
 */

/** The version of this form; rows written in another are not read. */
export const VIEW_FORMAT = 1;

type Json = unknown;

const isCount = (v: Json): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isTime = (v: Json): v is number => typeof v === 'number' && Number.isFinite(v);
const isStatus = (v: Json): v is number | null => v === null || (typeof v === 'number' && Number.isInteger(v));
const isText = (v: Json): v is string => typeof v === 'string';
const orNull = <T>(check: (v: Json) => v is T) => (v: Json): v is T | null => v === null || check(v);

function parse(text: string): Json {
  try {
    return JSON.parse(text) as Json;
  } catch {
    return undefined;
  }
}

/** The latest state of each URL: `[[source, url, lastAt, lastStatus, lastError, consecutiveFailures, lastOkAt], ...]`. */
export function encodeLatest(list: readonly EndpointLatest[]): string {
  return JSON.stringify(list.map((l) => [l.source, l.url, l.lastAt, l.lastStatus, l.lastError, l.consecutiveFailures, l.lastOkAt]));
}

export function decodeLatest(text: string): EndpointLatest[] | undefined {
  const rows = parse(text);
  if (!Array.isArray(rows)) return undefined;
  const out: EndpointLatest[] = [];
  for (const r of rows as Json[]) {
    if (!Array.isArray(r) || r.length !== 7) return undefined;
    const [source, url, lastAt, lastStatus, lastError, consecutiveFailures, lastOkAt] = r as Json[];
    if (!isText(source) || !isText(url) || !isTime(lastAt) || !isStatus(lastStatus) || !orNull(isText)(lastError)) return undefined;
    if (!isCount(consecutiveFailures) || !orNull(isTime)(lastOkAt)) return undefined;
    out.push({ source, url, lastAt, lastStatus, lastError, consecutiveFailures, lastOkAt });
  }
  return out;
}

/** One minute's requests per URL: `[[source, url, attempts, ok, [bucket, count, bucket, count, ...]], ...]`. */
export function encodeHealthMinute(list: readonly EndpointMinute[]): string {
  return JSON.stringify(
    list.map((m) => {
      const buckets: number[] = [];
      for (let i = 0; i < m.histogram.length; i++) if (m.histogram[i]! > 0) buckets.push(i, m.histogram[i]!);
      return [m.source, m.url, m.attempts, m.ok, buckets];
    }),
  );
}

export function decodeHealthMinute(text: string, minute: number): EndpointMinute[] | undefined {
  const rows = parse(text);
  if (!Array.isArray(rows)) return undefined;
  const out: EndpointMinute[] = [];
  for (const r of rows as Json[]) {
    if (!Array.isArray(r) || r.length !== 5) return undefined;
    const [source, url, attempts, ok, buckets] = r as Json[];
    if (!isText(source) || !isText(url) || !isCount(attempts) || !isCount(ok) || ok > attempts) return undefined;
    if (!Array.isArray(buckets) || buckets.length % 2 !== 0) return undefined;
    const histogram = new Array<number>(HISTOGRAM_BUCKETS).fill(0);
    let total = 0;
    for (let i = 0; i < buckets.length; i += 2) {
      const bucket = buckets[i] as Json;
      const count = buckets[i + 1] as Json;
      if (!isCount(bucket) || bucket >= HISTOGRAM_BUCKETS || !isCount(count)) return undefined;
      histogram[bucket]! += count;
      total += count;
    }
    // The histogram counts every request of the minute: anything else is not this form.
    if (total !== attempts) return undefined;
    out.push({ source, url, minute, attempts, ok, histogram });
  }
  return out;
}

/** One minute of the timeline: `[accepted, delivered, failed, queueDepth, queueDepthAt]`, or `null` for none. */
export function encodeTimelineMinute(m: TimelineMinute | undefined): string {
  return JSON.stringify(m === undefined ? null : [m.accepted, m.delivered, m.failed, m.queueDepth, m.queueDepthAt]);
}

/** Undefined for a malformed text; null for a minute without timeline. */
export function decodeTimelineMinute(text: string, minute: number): TimelineMinute | null | undefined {
  const row = parse(text);
  if (row === null) return null;
  if (!Array.isArray(row) || row.length !== 5) return undefined;
  const [accepted, delivered, failed, queueDepth, queueDepthAt] = row as Json[];
  if (!isCount(accepted) || !isCount(delivered) || !isCount(failed) || !orNull(isCount)(queueDepth) || !orNull(isTime)(queueDepthAt)) return undefined;
  if ((queueDepth === null) !== (queueDepthAt === null)) return undefined;
  return { minute, accepted, delivered, failed, queueDepth, queueDepthAt };
}
