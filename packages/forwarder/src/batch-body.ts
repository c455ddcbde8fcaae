/**
 * Batched delivery (issue 45): which calls go together to a URL with `batch` set, and the bytes
 * of the array body they make. Pure: it decides and assembles; waiting (`maxWaitMs`), sending,
 * signing and recording are the delivery loop's.
 *
 * The body is `[` + the calls' message texts joined with `,` + `]`: each text exactly as the URL
 * would have got it alone (filtered, transformed, serialized once). Nothing is re-serialized, so
 * the same calls in the same order always make the same bytes, and so the same signature: a
 * failed batch is retried byte for byte, and the halves of a batch answered 413 are the bodies
 * that planning those calls alone would make.
 */

/** Bounds of a URL's `batch` settings: `maxEvents` 1 to 4000; `maxBytes` up to 1 MB (1,048,576 bytes). */
export const BATCH_BOUNDS = { maxEvents: 4000, maxBytes: 1024 * 1024 } as const;

/** Defaults of a URL's `batch` settings: `maxBytes` 512 KB (524,288 bytes), `maxWaitMs` 1000 ms. */
export const BATCH_DEFAULTS = { maxBytes: 512 * 1024, maxWaitMs: 1000 } as const;

/** The limits one batch keeps to. */
export interface BatchLimits {
  /** Most calls in one body, 1 to 4000. */
  readonly maxEvents: number;
  /**
   * Most bytes in one body, brackets and commas included, at least 2 and up to 1 MB. A single
   * call larger than this goes alone, as an array of one.
   */
  readonly maxBytes: number;
}

/**
 * The ranges a URL's `batch` setting takes in the config file and the admin API, `[min, max]`:
 * `maxEvents` 1 to 4000, `maxBytes` 1 KB to 1 MB, `maxWaitMs` 0 to 60 000 (one minute).
 */
export const BATCH_SETTING_RANGES = {
  maxEvents: [1, BATCH_BOUNDS.maxEvents],
  maxBytes: [1024, BATCH_BOUNDS.maxBytes],
  maxWaitMs: [0, 60_000],
} as const;

/** A URL's `batch` setting with its defaults filled: the limits of each body, and how long its first call waits for others. */
export interface BatchSettings extends BatchLimits {
  /** Longest wait after a batch's first call before it is sent, full or not, in ms (default 1000; 0: send what is there at once). */
  readonly maxWaitMs: number;
}

/** One call's part of a batch. */
export interface BatchEntry<Id> {
  /** Whatever the delivery loop tracks the call by (its delivery id, say). */
  readonly id: Id;
  /** The message as the URL would get it alone: JSON text, serialized once. */
  readonly text: string;
  /** UTF-8 length of `text`. */
  readonly bytes: number;
}

/** Calls that go as one body, in order; never empty. */
export interface Batch<Id> {
  readonly entries: readonly BatchEntry<Id>[];
  /** UTF-8 length of the body they make (`batchBody(batch).length`). */
  readonly bytes: number;
}

/** What `BatchBuilder#tryAdd` did: `added`, or `full` (not added: send what is there, then add it to the next batch). */
export type AddResult = 'added' | 'full';

/** A call's entry; its size is measured here, once. Throws `TypeError` for a text that is not a non-empty string. */
export function batchEntry<Id>(id: Id, text: string): BatchEntry<Id> {
  if (typeof text !== 'string' || text.length === 0) {
    throw new TypeError(`Expected a call's message text to be non-empty JSON text, got ${typeof text === 'string' ? 'an empty string' : typeof text}`);
  }
  return { id, text, bytes: Buffer.byteLength(text, 'utf8') };
}

/** Throws `RangeError` naming the field when `limits` are out of `BATCH_BOUNDS` (the config checks them first). */
export function checkBatchLimits(limits: BatchLimits): BatchLimits {
  const { maxEvents, maxBytes } = limits;
  if (!Number.isInteger(maxEvents) || maxEvents < 1 || maxEvents > BATCH_BOUNDS.maxEvents) {
    throw new RangeError(`Expected \`batch.maxEvents\` to be an integer from 1 to ${BATCH_BOUNDS.maxEvents}, got ${String(maxEvents)}`);
  }
  if (!Number.isInteger(maxBytes) || maxBytes < 2 || maxBytes > BATCH_BOUNDS.maxBytes) {
    throw new RangeError(`Expected \`batch.maxBytes\` to be an integer from 2 to ${BATCH_BOUNDS.maxBytes} (1 MB), got ${String(maxBytes)}`);
  }
  return limits;
}

/**
 * Collects calls for one URL, in the order added, until the next would pass `maxEvents` or
 * `maxBytes`. An empty builder takes any call, so one larger than `maxBytes` goes alone.
 */
export class BatchBuilder<Id> {
  readonly #limits: BatchLimits;
  #entries: BatchEntry<Id>[] = [];
  /** Body size of the entries so far: 2 for the brackets, plus the texts and the commas between them. */
  #bytes = 2;

  constructor(limits: BatchLimits) {
    this.#limits = checkBatchLimits(limits);
  }

  /** Calls held. */
  get length(): number {
    return this.#entries.length;
  }

  /** Size of the body the held calls would make, in bytes (2 when empty). */
  get bytes(): number {
    return this.#bytes;
  }

  /** True when no further call can be added (`maxEvents` reached, or no byte left for one): send now rather than wait. */
  get full(): boolean {
    return this.#entries.length >= this.#limits.maxEvents || this.#bytes + 2 > this.#limits.maxBytes;
  }

  /** Adds `entry` after those held, or answers `full` and leaves the batch as it was. */
  tryAdd(entry: BatchEntry<Id>): AddResult {
    const count = this.#entries.length;
    if (count === 0) {
      this.#entries.push(entry);
      this.#bytes = 2 + entry.bytes;
      return 'added';
    }
    const next = this.#bytes + 1 + entry.bytes;
    if (count >= this.#limits.maxEvents || next > this.#limits.maxBytes) return 'full';
    this.#entries.push(entry);
    this.#bytes = next;
    return 'added';
  }

  /** The calls held, as a batch, and an empty builder again; undefined when empty. */
  take(): Batch<Id> | undefined {
    if (this.#entries.length === 0) return undefined;
    const batch: Batch<Id> = { entries: this.#entries, bytes: this.#bytes };
    this.#entries = [];
    this.#bytes = 2;
    return batch;
  }
}

/** Cuts `entries`, in order, into the batches a builder makes of them one by one. */
export function planBatches<Id>(entries: readonly BatchEntry<Id>[], limits: BatchLimits): Batch<Id>[] {
  const builder = new BatchBuilder<Id>(limits);
  const batches: Batch<Id>[] = [];
  for (const entry of entries) {
    if (builder.tryAdd(entry) === 'added') continue;
    batches.push(builder.take()!);
    builder.tryAdd(entry);
  }
  const last = builder.take();
  if (last !== undefined) batches.push(last);
  return batches;
}

/** A batch of `entries` as they are (no limits applied): a retry of the same calls, say. Throws `RangeError` when empty. */
export function batchOf<Id>(entries: readonly BatchEntry<Id>[]): Batch<Id> {
  if (entries.length === 0) throw new RangeError('Expected a batch to hold at least one call, got none');
  let bytes = 1 + entries.length; // the brackets and the commas
  for (const entry of entries) bytes += entry.bytes;
  return { entries: [...entries], bytes };
}

/**
 * What is sent instead of a batch answered 413: its first half (the larger when the count is
 * odd), then the rest, in order. Undefined for a batch of one call: it cannot be split.
 */
export function splitBatch<Id>(batch: Batch<Id>): [Batch<Id>, Batch<Id>] | undefined {
  const { entries } = batch;
  if (entries.length < 2) return undefined;
  const middle = Math.ceil(entries.length / 2);
  return [batchOf(entries.slice(0, middle)), batchOf(entries.slice(middle))];
}

/** The body: `[` + the texts joined with `,` + `]`, as UTF-8 bytes. The same batch always gives the same bytes. */
export function batchBody<Id>(batch: Batch<Id>): Buffer {
  const body = Buffer.allocUnsafe(batch.bytes);
  let offset = 0;
  body[offset++] = 0x5b; // [
  batch.entries.forEach((entry, index) => {
    if (index > 0) body[offset++] = 0x2c; // ,
    offset += body.write(entry.text, offset, 'utf8');
  });
  body[offset++] = 0x5d; // ]
  if (offset !== body.length) throw new RangeError(`A batch's entry sizes do not match their texts (${offset} bytes written, ${body.length} counted)`);
  return body;
}

/**
 * The body as text, for a sender that takes a string (`WebhookDestination#attempt`): its UTF-8
 * encoding is `batchBody(batch)`, byte for byte.
 */
export function batchText<Id>(batch: Batch<Id>): string {
  return `[${batch.entries.map((entry) => entry.text).join(',')}]`;
}

/**
 * The texts of a stored batch body's elements, exactly as they were joined (`batchText`'s
 * inverse): cut at the commas between top-level values, strings and nesting skipped. Undefined
 * for a body that is not a JSON array (a call sent alone to a URL without `batch`).
 */
export function batchTexts(body: string): string[] | undefined {
  if (body.charCodeAt(0) !== 0x5b || body.charCodeAt(body.length - 1) !== 0x5d) return undefined;
  const texts: string[] = [];
  let depth = 0;
  let inString = false;
  let start = 1;
  for (let i = 1; i < body.length - 1; i++) {
    const c = body.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // \\: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b || c === 0x5b) {
      depth++;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    } else if (c === 0x2c && depth === 0) {
      texts.push(body.slice(start, i));
      start = i + 1;
    }
  }
  if (inString || depth !== 0) return undefined;
  const last = body.slice(start, body.length - 1);
  if (last.length > 0) texts.push(last);
  return texts;
}
