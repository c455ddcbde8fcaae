import { isTimestamp } from './timestamp';

/**
 * Event time, one policy for the client and the forwarder: a timestamp is a `Date` (client
 * calls) or an RFC 3339 date-time with a time zone (`2026-03-01T12:34:56.789Z`), naming an
 * instant from year 0000 to 9999 in UTC, so that its webhook form is always
 * `YYYY-MM-DDTHH:mm:ss.sssZ` and the receiver's parser accepts it. `new Date('+010000-01-01')`
 * or `9999-12-31T23:30:00-01:00` (year 10000 in UTC) are refused up front.
 */

/** 0000-01-01T00:00:00.000Z, in epoch milliseconds. */
export const MIN_TIMESTAMP_MS = -62_167_219_200_000;
/** 9999-12-31T23:59:59.999Z, in epoch milliseconds. */
export const MAX_TIMESTAMP_MS = 253_402_300_799_999;

// The intrinsic, captured once: a Date whose own methods were replaced (or throw) is read the same.
const getTime = Date.prototype.getTime;

/** What a timestamp must look like, for error messages. */
export const TIMESTAMP_EXPECTED = 'a Date or an ISO 8601 date-time with a time zone, like 2026-03-01T12:34:56.789Z, from year 0000 to 9999';

/**
 * Epoch milliseconds of a timestamp the rules accept; undefined for anything else (an invalid
 * or out-of-range Date, a string that is not an RFC 3339 date-time, a number, a Proxy).
 */
export function timestampMs(value: unknown): number | undefined {
  if (typeof value === 'string') {
    // The rules check a message's timestamp and its event time reads it next: parsed once.
    if (value === lastText) return lastMs;
    const parsed = isTimestamp(value) ? inRange(parseRfc3339(value)) : undefined;
    lastText = value;
    lastMs = parsed;
    return parsed;
  }
  if (value instanceof Date) {
    let ms: number;
    try {
      ms = getTime.call(value);
    } catch {
      return undefined; // a Proxy around a Date, say
    }
    return inRange(ms);
  }
  return undefined;
}

/** The last string `timestampMs` read, and what it made of it (a pure function of the text). */
let lastText: string | undefined;
let lastMs: number | undefined;

function inRange(ms: number): number | undefined {
  return ms >= MIN_TIMESTAMP_MS && ms <= MAX_TIMESTAMP_MS ? ms : undefined;
}

/** `000Z` to `999Z`: the end of an ISO date-time, by its milliseconds. */
const MILLIS_Z = Array.from({ length: 1000 }, (_, ms) => `${String(ms).padStart(3, '0')}Z`);
/** The second `isoTimestamp` formatted last (epoch seconds), and its text up to the milliseconds. */
let isoSecond = Number.NaN;
let isoPrefix = '';

/**
 * The webhook form of an accepted timestamp: `YYYY-MM-DDTHH:mm:ss.sssZ`, what `toISOString`
 * gives. The text up to the second is kept from the last call, so that the calls of one second
 * (a client stamping each message with now) format a date once, not once per message.
 */
export function isoTimestamp(ms: number): string {
  // Whole milliseconds only: a Date truncates a fraction, and throws on NaN, as it does here.
  if (!Number.isInteger(ms)) return new Date(ms).toISOString();
  const second = Math.floor(ms / 1000);
  if (second !== isoSecond) {
    isoPrefix = new Date(second * 1000).toISOString().slice(0, -4);
    isoSecond = second;
  }
  return isoPrefix + MILLIS_Z[ms - second * 1000]!;
}

/** Epoch ms of an RFC 3339 string `isTimestamp` accepted (lowercase t/z, a leap second). */
function parseRfc3339(value: string): number {
  if (isCanonical(value)) return Date.parse(value);
  const upper = value.toUpperCase();
  const ms = Date.parse(upper);
  if (!Number.isNaN(ms)) return ms;
  // A leap second (23:59:60) is the last instant of that minute, as POSIX clocks count it.
  const leap = Date.parse(upper.replace(/:60(?=[.Z+-])/, ':59'));
  return Number.isNaN(leap) ? Number.NaN : Math.floor(leap / 1000) * 1000 + 999;
}

export interface EventTimeInput {
  readonly timestamp?: unknown;
  readonly originalTimestamp?: unknown;
}

export interface EventTimeOptions {
  /** Time of receipt, epoch ms. */
  readonly receivedAt: number;
  /** The batch's `sentAt`, when the sender put one (used to correct the sender's clock skew). */
  readonly sentAt?: unknown;
}

/**
 * The event time of a valid message, as Segment-compatible collectors derive it:
 * - its `timestamp` when it has one (historical import, spec 4.4);
 * - else its `originalTimestamp` corrected for the sender's clock skew,
 *   `receivedAt - (sentAt - originalTimestamp)`, when the batch carries a valid `sentAt`
 *   (and the result stays in range), else `originalTimestamp` as it is;
 * - else the time of receipt.
 */
export function eventTimeMs(message: EventTimeInput, options: EventTimeOptions): number {
  const timestamp = present(message.timestamp) ? timestampMs(message.timestamp) : undefined;
  if (timestamp !== undefined) return timestamp;
  const original = present(message.originalTimestamp) ? timestampMs(message.originalTimestamp) : undefined;
  if (original === undefined) return options.receivedAt;
  const sentAt = present(options.sentAt) ? timestampMs(options.sentAt) : undefined;
  if (sentAt === undefined) return original;
  const corrected = options.receivedAt - (sentAt - original);
  return corrected >= MIN_TIMESTAMP_MS && corrected <= MAX_TIMESTAMP_MS ? corrected : original;
}

function present(value: unknown): boolean {
  return value !== undefined && value !== null;
}

/**
 * Whether an RFC 3339 string `isTimestamp` accepted is already in the webhook form
 * `YYYY-MM-DDTHH:mm:ss.sssZ` (what `toISOString` and every eventrelay client send), second 60
 * aside: then it is its own `isoTimestamp`, and `Date.parse` reads it as it is.
 */
function isCanonical(value: string): boolean {
  return (
    value.length === 24 &&
    value.charCodeAt(10) === 84 &&
    value.charCodeAt(19) === 46 &&
    value.charCodeAt(23) === 90 &&
    !(value.charCodeAt(17) === 54 && value.charCodeAt(18) === 48)
  );
}

/**
 * `isoTimestamp(eventTimeMs(message, options))`: the event time in the webhook form. A valid
 * `timestamp` already in that form is returned as it is, without a round trip through a Date.
 */
export function eventTimestamp(message: EventTimeInput, options: EventTimeOptions): string {
  const timestamp = message.timestamp;
  if (typeof timestamp === 'string' && isCanonical(timestamp) && timestampMs(timestamp) !== undefined) return timestamp;
  return isoTimestamp(eventTimeMs(message, options));
}
