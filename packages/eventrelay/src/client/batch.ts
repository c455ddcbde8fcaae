import type { EventRelayError } from '../errors';
import type { Callback } from '../messages/calls';
import type { SpoolRecord } from './spool/spool';

const PREFIX = '{"batch":[';
// `],"sentAt":"` + 24 characters of ISO date + `"}`
const ENVELOPE_BYTES = PREFIX.length + '],"sentAt":""}'.length + '2026-01-01T00:00:00.000Z'.length;

export type AddResult = 'added' | 'full';

/**
 * Messages waiting to be sent together. Pure: it only decides. A message is kept
 * as the JSON string made when it was accepted; the body is joined from those strings.
 */
export class Batch {
  /** The messages' JSON strings, until `seal()` joins them. */
  private readonly messages: string[] = [];
  /** Set by `seal()`: the messages joined with commas, and each one's length in it. */
  private joined: string | undefined;
  private lengths: number[] | undefined;
  private count = 0;
  /** Callbacks of the messages that have one, with the message's id and its index in the batch. */
  readonly callbacks: { readonly index: number; readonly id: string; readonly callback: Callback }[] = [];
  /** The spool's record of each message, in order, when the client has a spool. */
  readonly records: SpoolRecord[] = [];
  /** Set once the batch's callbacks ran (delivered, failed, or given up at the close timeout). */
  settled = false;
  /** Why its latest attempt failed, while it is retried: named by the close timeout's error. */
  lastError: EventRelayError | undefined;
  private bytes = ENVELOPE_BYTES;

  constructor(
    private readonly maxBytes: number,
    /** Messages the spool sends again (taken over, or failed before): no callbacks, not counted as pending. */
    readonly resent = false,
  ) {}

  get length(): number {
    return this.count;
  }

  /** Size of the body this batch would make, in bytes. */
  get size(): number {
    return this.bytes;
  }

  /**
   * Adds a message of `bytes` UTF-8 bytes, or answers `full` when the body would pass
   * `maxBytes`. An empty batch takes any message that fits a body on its own.
   */
  tryAdd(json: string, bytes: number, id: string, callback: Callback | undefined, record?: SpoolRecord): AddResult {
    if (this.joined !== undefined) throw new Error('Batch.tryAdd after seal()');
    const next = this.bytes + bytes + (this.count > 0 ? 1 : 0);
    if (next > this.maxBytes && this.count > 0) return 'full';
    this.bytes = next;
    if (callback) this.callbacks.push({ index: this.count, id, callback });
    if (record) this.records.push(record);
    this.messages.push(json);
    this.count++;
    return 'added';
  }

  /**
   * Joins the messages into the text of the body, once the batch is closed to new messages: a
   * batch waiting for its turn to be sent then holds one string, not one per message, which
   * the garbage collector copies and visits for as long as it waits.
   */
  seal(): void {
    if (this.joined !== undefined) return;
    const lengths: number[] = [];
    for (const json of this.messages) lengths.push(json.length);
    this.joined = this.messages.join(',');
    this.lengths = lengths;
    // Emptied in place: a field written twice would make V8 drop the code that read it as constant.
    this.messages.length = 0;
  }

  /** The messages' JSON strings, in order. */
  jsonStrings(): string[] {
    if (this.joined === undefined || this.lengths === undefined) return this.messages.slice();
    const strings: string[] = [];
    let at = 0;
    for (const length of this.lengths) {
      strings.push(this.joined.slice(at, at + length));
      at += length + 1;
    }
    return strings;
  }

  /**
   * Two batches holding this one's messages (the first half, then the rest), each with its
   * callbacks and spool records: what is sent instead of a batch answered 413. At least 2 messages.
   */
  halves(byteLength: (json: string) => number): [Batch, Batch] {
    const middle = Math.ceil(this.count / 2);
    const halves: [Batch, Batch] = [new Batch(this.maxBytes, this.resent), new Batch(this.maxBytes, this.resent)];
    const callbacks = new Map(this.callbacks.map((entry) => [entry.index, entry]));
    this.jsonStrings().forEach((json, index) => {
      const entry = callbacks.get(index);
      halves[index < middle ? 0 : 1].tryAdd(json, byteLength(json), entry?.id ?? '', entry?.callback, this.records[index]);
    });
    return halves;
  }

  /** The request body, `{ "batch": [...], "sentAt": ... }`, built from the stored strings. */
  body(sentAt: Date): string {
    return `${PREFIX}${this.joined ?? this.messages.join(',')}],"sentAt":"${sentAt.toISOString()}"}`;
  }
}
