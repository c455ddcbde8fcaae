import type { SetupStore } from '../registry/model';
import type { RateBudget } from '../delivery/rate-limit';
import type { ClusterStore } from './cluster';

/**
 * The forwarder's queue, behind one interface so the embedded SQLite store (one machine) can be
 * swapped for the shared PostgreSQL one (several forwarder processes) without touching ingestion,
 * routing or the scheduler. Every method is async for that reason, even though the SQLite and
 * memory stores are synchronous underneath.
 *
 * Several processes may share one store: a delivery is handed out by `claim()` with a lease (an
 * owner, a token and an expiry). While the lease runs, no other claim returns the delivery; when
 * it runs out without an outcome (its holder died, or is very slow) the delivery is due again and
 * any instance may claim it. `record()` checks the token, so an outcome is written once.
 */

/**
 * What produced a delivery: an ingested call, a deletion request, an audience sync, or a notice
 * to the operator's `notify` URL.
 */
export type DeliveryKind = 'message' | 'delete' | 'audience' | 'notice';

/** A delivery to create: one webhook body for one destination of one source. */
export interface NewDelivery {
  readonly source: string;
  /** Destination name, `Webhooks`. */
  readonly destination: string;
  readonly kind: DeliveryKind;
  /** The message's id, for logs and for receivers to deduplicate (random for deletions). */
  readonly messageId: string;
  /** The webhook body, serialized once when routed; the exact bytes sent and signed. */
  readonly body: string;
  /** When it was created (epoch ms); it is due at once. */
  readonly createdAt: number;
}

/** A call accepted by the ingestion API, with the deliveries routed from it. */
export interface AcceptedMessage {
  readonly source: string;
  readonly messageId: string;
  /** Receipt time, epoch ms. */
  readonly receivedAt: number;
  /** Empty when the message's `integrations` or the source's config turn every destination off. */
  readonly deliveries: readonly NewDelivery[];
}

export interface AcceptResult {
  /** Messages stored for the first time. */
  readonly stored: number;
  /**
   * Messages whose `messageId` this source sent before (within the retention window), e.g. a
   * client retrying a batch whose answer it never got: acknowledged again, not routed again.
   */
  readonly duplicates: number;
  /**
   * Per message of the request, in order: true for a repeated messageId (one of the `duplicates`),
   * as the store found it; the delivery log logs those `duplicate`.
   */
  readonly repeated: readonly boolean[];
  /**
   * With a `lease` given to `accept()` (and a store that takes it): the deliveries stored, already
   * leased as a claim would have leased them, in the order of the request's messages. The caller
   * attempts them without a claim. Every store answers with this key present (`undefined` when
   * nothing was leased), in this order: one object shape, so that the ingestion path's optimized
   * code is not thrown away when hand-over turns on or off (the store contract checks the keys).
   */
  readonly leased?: readonly PendingDelivery[];
}

/**
 * A lease taken by the commit that stores deliveries (`accept`), so that the instance that
 * accepted a call attempts it without a claim: from `now` for `ms`, like a claim at `now`. Until
 * it ends no claim returns the delivery; it is due at the lease's end if no outcome came.
 */
export interface AcceptLease extends LeaseRequest {
  /** When the lease starts, epoch ms: the call's receipt. */
  readonly now: number;
}

/** A delivery waiting for its next attempt, as `claim()` hands it out. */
export interface PendingDelivery extends NewDelivery {
  readonly id: number;
  /**
   * The token of the claim that handed it out (a per-delivery claim counter): pass it back in the
   * outcome. 0 for a delivery never claimed.
   */
  readonly lease: number;
  /** Attempts made so far (0 before the first). */
  readonly attempts: number;
  /** Start of the first attempt, epoch ms; undefined before it. */
  readonly firstAttemptAt: number | undefined;
  readonly nextAttemptAt: number;
}

/** What became of one attempt, written back to the store; `lease` is the claim's token. */
export type DeliveryOutcome =
  | {
    readonly id: number;
    readonly lease: number;
    readonly status: 'delivered';
    readonly attempts: number;
    readonly firstAttemptAt: number;
    readonly at: number;
  }
  | {
    readonly id: number;
    readonly lease: number;
    readonly status: 'retry';
    readonly attempts: number;
    readonly firstAttemptAt: number | undefined;
    readonly nextAttemptAt: number;
    /** Short reason, for operators; never a body or a secret. */
    readonly error?: string;
  }
  | {
    readonly id: number;
    readonly lease: number;
    readonly status: 'failed';
    readonly attempts: number;
    readonly firstAttemptAt: number | undefined;
    readonly at: number;
    readonly reason: string;
  };

/** A claim: who takes the deliveries, and for how long. */
export interface LeaseRequest {
  /** Who holds the lease: the forwarder instance's id (for operators; tokens decide). */
  readonly owner: string;
  /** How long the deliveries are reserved, in ms from `now`; they are due again after it. */
  readonly ms: number;
}

/** What `record()` did. */
export interface RecordResult {
  /** Outcomes written. */
  readonly recorded: number;
  /**
   * Ids whose outcome was not written: the delivery had finished already, or its lease had
   * expired and another claim took it (that holder's outcome counts). A `delivered` outcome
   * is written even from an expired lease while the delivery is still pending: the receiver
   * has the message, so sending it again would only make a duplicate.
   */
  readonly stale: readonly number[];
}

/** Totals since the store was created (they survive restarts) and the state of the queue. */
export interface StoreCounts {
  readonly accepted: number;
  readonly duplicates: number;
  readonly delivered: number;
  readonly failed: number;
  /** Deliveries waiting (never tried, or waiting for a retry). */
  readonly pending: number;
  /** Pending deliveries that failed at least once. */
  readonly retrying: number;
  /** Creation time of the oldest pending delivery, epoch ms. */
  readonly oldestPendingAt: number | undefined;
}

/**
 * Membership change computed by an audience sync. `plan` callbacks get it in chunks (at most
 * `AUDIENCE_CHUNK` users each), so a sync of 300,000 members never blocks the event loop for long.
 */
export interface AudienceChange {
  /** True when the audience had never been synced: every member counts as added. */
  readonly firstSync: boolean;
  readonly added: readonly string[];
  readonly removed: readonly string[];
}

/** Users per chunk of an audience sync: one transaction and one `plan` call each. */
export const AUDIENCE_CHUNK = 5000;

export interface ForwarderStore {
  /**
   * Where the sources and their settings live (runtime setup). A store without one gets an
   * in-memory setup from the forwarder: its sources are then those of the config file at each
   * start, plus what the admin API adds until a restart.
   */
  readonly setup?: SetupStore;
  /**
   * The send slots of rate-limited URLs, when other processes share the store (PostgreSQL).
   * Absent: the forwarder keeps them in memory, which is exact for one process.
   */
  readonly rateBudget?: RateBudget;
  /**
   * The instances' views and the live stream's relay, when other processes share the store
   * (PostgreSQL). Absent: the overview and the live stream are this process's, its only instance.
   */
  readonly cluster?: ClusterStore;
  /**
   * Stores accepted messages and their deliveries in one transaction; resolves only when they
   * are durable, so the ingestion API may answer 2xx. With `lease`, the deliveries it stores are
   * leased to `lease.owner` by that same commit and returned in `leased` (a store may ignore it
   * and lease nothing: the deliveries are then claimed as usual).
   */
  accept(messages: readonly AcceptedMessage[], lease?: AcceptLease): Promise<AcceptResult>;
  /** Stores deliveries that come from no ingested message (deletion notices), in one transaction. */
  enqueue(deliveries: readonly NewDelivery[]): Promise<void>;
  /**
   * Claims pending deliveries of one source due at `now` and not leased by anyone, oldest due
   * first, at most `limit`: each gets a new lease token and stays reserved for `lease.ms`. Per
   * source, so that the scheduler can share attempts fairly and one slow receiver cannot hold
   * them all. Safe to call from several processes at once: no delivery is handed to two live leases.
   */
  claim(source: string, now: number, limit: number, lease: LeaseRequest): Promise<PendingDelivery[]>;
  /**
   * The earliest time after `now` at which a delivery of the source becomes due (a retry time,
   * or the end of a lease), if any. A store may leave out the end of a claim's lease when finding
   * it costs a read of every due delivery (PostgreSQL): the scheduler claims at least once a
   * second while attempts are in flight and every `idleWait` (5 s) when idle, and that claim finds it.
   */
  nextDueAfter(source: string, now: number): Promise<number | undefined>;
  /** Writes attempt outcomes in one transaction, each only if its lease still holds (see RecordResult). */
  record(outcomes: readonly DeliveryOutcome[]): Promise<RecordResult>;
  /**
   * Replaces the membership of an audience and stores the deliveries `plan` builds from the
   * change. The work goes in chunks of `AUDIENCE_CHUNK` users, each one transaction with its
   * notices (a crash never records a change whose notices were not stored; the next sync sends
   * what a crash cut off). Syncs of one audience are serialized, across processes too.
   */
  syncAudience(
    source: string,
    audience: string,
    members: readonly string[],
    plan: (change: AudienceChange) => readonly NewDelivery[],
  ): Promise<AudienceChange>;
  counts(): Promise<StoreCounts>;
  /** Removes finished deliveries and remembered messageIds older than `before` (epoch ms). Returns rows removed. */
  prune(before: number): Promise<number>;
  close(): Promise<void>;
}

/** Items a long loop of an audience sync handles between two turns of the event loop. */
const LOOP_CHUNK = 20_000;

/**
 * The membership change from `current` to `next`; the first sync adds everyone. Asynchronous:
 * it lets the event loop run every 20,000 members, so that a sync of 300,000 never blocks it.
 */
export async function audienceChange(current: ReadonlySet<string> | undefined, next: readonly string[]): Promise<AudienceChange> {
  const wanted = new Set<string>();
  for (let i = 0; i < next.length; i++) {
    wanted.add(next[i]!);
    if (i % LOOP_CHUNK === LOOP_CHUNK - 1) await yieldToEventLoop();
  }
  if (current === undefined) return { firstSync: true, added: [...wanted], removed: [] };
  const added: string[] = [];
  const removed: string[] = [];
  let i = 0;
  for (const id of wanted) {
    if (!current.has(id)) added.push(id);
    if (++i % LOOP_CHUNK === 0) await yieldToEventLoop();
  }
  for (const id of current) {
    if (!wanted.has(id)) removed.push(id);
    if (++i % LOOP_CHUNK === 0) await yieldToEventLoop();
  }
  return { firstSync: false, added, removed };
}

/** Splits a change into chunks of at most `size` users (added first), each with the same `firstSync`. */
export function audienceChunks(change: AudienceChange, size = AUDIENCE_CHUNK): AudienceChange[] {
  const chunks: AudienceChange[] = [];
  for (let i = 0; i < change.added.length; i += size) {
    chunks.push({ firstSync: change.firstSync, added: change.added.slice(i, i + size), removed: [] });
  }
  for (let i = 0; i < change.removed.length; i += size) {
    chunks.push({ firstSync: change.firstSync, added: [], removed: change.removed.slice(i, i + size) });
  }
  return chunks;
}

/** Lets timers and I/O run between two chunks of long work. */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Runs tasks one after the other per key (an audience), in this process; a failed task does
 * not block the next one.
 */
export class KeyedTurns {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const result = (this.tails.get(key) ?? Promise.resolve()).then(task);
    const tail = result.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }
}
