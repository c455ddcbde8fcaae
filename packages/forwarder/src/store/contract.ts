import { EventRelayError } from 'eventrelay/internal';

/**
 * The storage contract: everything the forwarder keeps, in one place. A store is one object with
 * every capability below as a member: the queue (accept, claim, record, ...), the registry of
 * sources, the endpoint states, the rate budgets, the delivery log and, for a store shared by
 * several processes, the instances' views. Each backend folder (memory/, sqlite/, postgres/) offers
 * one `open` function that returns it; `checkStore` refuses, at construction, a custom store that
 * lacks a capability, naming it.
 */

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
  /**
   * Its user key when its destination delivers in order per user (`ordering: "user"`), else
   * undefined. Of the pending deliveries of a source with the same key, only the oldest (the first
   * stored) is claimed, and only while no other is in flight: the others wait until it is
   * delivered or failed for good. At acceptance one is leased (`accept`'s `lease`) only when it
   * is the first of its key in the commit and no other of its key is pending in the store: then
   * nothing of its user is ahead of it, and nothing of its user can be stored ahead of it since
   * (PostgreSQL takes a lock per key in the commit, so two instances never both lease one).
   */
  readonly orderKey?: string | undefined;
}

/** A call accepted by the ingestion API, with the deliveries routed from it. */
export interface AcceptedMessage {
  readonly source: string;
  readonly messageId: string;
  /** Receipt time, epoch ms. */
  readonly receivedAt: number;
  /** Empty when the message's `integrations` or the source's config turn every destination off. */
  readonly deliveries: readonly NewDelivery[];
  /** Why `deliveries` is empty (the rule that stopped the call), for the delivery log and the counts; stores ignore it. */
  readonly filtered?: FilteredBy;
}

/** Why an accepted call was not forwarded: a metric label and the reason the delivery log shows. */
export interface FilteredBy {
  /** `blocked_type`, `blocked_event`, `tracking_plan`, `url_filter`, `integrations` or `no_destination`. */
  readonly rule: string;
  readonly reason: string;
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
 * `accept` stored nothing: the source its `sourceId` names was deleted (perhaps made again under
 * the name) after the request's write key was checked. The ingestion API answers 401: the key
 * is no longer valid, and sending again cannot help.
 */
export class SourceDeletedError extends EventRelayError {
  constructor(readonly source: string) {
    super(`The source ${JSON.stringify(source)} was deleted while the request was read; nothing was stored`, 'ERR_SOURCE_DELETED');
  }
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
  /**
   * The source of each written outcome that finished an ordered delivery (delivered, or failed
   * for good) with another of its key pending behind it: that one may be claimed now. A source
   * may repeat. Every store answers with this key present.
   */
  readonly released: readonly string[];
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

export interface ForwarderStore {
  /**
   * The registry of sources: sources, their settings and write keys, so that every instance on
   * the store serves the same ones (see "The registry of sources" below).
   */
  readonly setup: SetupStore;
  /** The send slots of rate-limited URLs (see "Rate budgets"): shared when the store is. */
  readonly rateBudget: RateBudget;
  /** The state of each webhook URL, for automatic disable (see "Endpoint states"). */
  readonly endpoints: EndpointStore;
  /** What each source sends (its schema's counts) and its usage per day (see "What sources send"). */
  readonly usage: UsageStore;
  /**
   * Whether other processes share the store (PostgreSQL): endpoint states are then read from it
   * at start and its changes followed, rather than this process's alone.
   */
  readonly shared: boolean;
  /**
   * The instances' views and the live stream's relay (see "Instances"), or null for a store only
   * one process uses: the overview and the live stream are then this process's.
   */
  readonly cluster: ClusterStore | null;
  /** Opens the delivery log beside the queue (see "The delivery log"); called once, at start. */
  openLog(options: DeliveryLogOptions): DeliveryLog;
  /**
   * Stores accepted messages and their deliveries in one transaction; resolves only when they
   * are durable, so the ingestion API may answer 2xx. With `lease`, the deliveries it stores are
   * leased to `lease.owner` by that same commit and returned in `leased` (a store may ignore it
   * and lease nothing: the deliveries are then claimed as usual).
   *
   * With `sourceId` (the `SourceRecord.id` the request's write key led to; every message of one
   * request has the same source), the commit first checks that the source still exists with that
   * id, and stores nothing, rejecting with `SourceDeletedError`, when it does not. The check and
   * the source's deletion exclude each other (on PostgreSQL a row lock on the source): a call is
   * either stored before the deletion, which then fails it, or refused. Never stranded, and never
   * taken by a source made again under the name.
   */
  accept(messages: readonly AcceptedMessage[], lease?: AcceptLease, sourceId?: string): Promise<AcceptResult>;
  /** Stores deliveries that come from no ingested message (deletion notices), in one transaction. */
  enqueue(deliveries: readonly NewDelivery[]): Promise<void>;
  /**
   * Claims pending deliveries of one source due at `now` and not leased by anyone, oldest due
   * first, at most `limit`; an ordered one (`orderKey`) only when no older one of its key is
   * pending (see `NewDelivery.orderKey`): each gets a new lease token and stays reserved for `lease.ms`. Per
   * source, so that the scheduler can share attempts fairly and one slow receiver cannot hold
   * them all. Safe to call from several processes at once: no delivery is handed to two live leases.
   */
  claim(source: string, now: number, limit: number, lease: LeaseRequest): Promise<PendingDelivery[]>;
  /**
   * For the pending ordered delivery (`orderKey`) of `source` with `messageId`: the messageId of
   * the older one of its key it waits for (to be attempted, in flight, or waiting for a retry);
   * undefined when it waits for none, or is not such a delivery.
   */
  waitingFor(source: string, messageId: string): Promise<string | undefined>;
  /**
   * The earliest time after `now` at which a delivery of the source becomes due (a retry time,
   * or the end of a lease), if any. A store may leave out the end of a claim's lease when finding
   * it costs a read of every due delivery (PostgreSQL): the scheduler claims at least once a
   * second while attempts are in flight and every `idleWait` (5 s) when idle, and that claim finds it.
   */
  nextDueAfter(source: string, now: number): Promise<number | undefined>;
  /**
   * Writes attempt outcomes in one transaction, each only if its lease still holds (see
   * RecordResult). A `delivered` outcome is also written for a delivery its source's deletion gave
   * up while that same lease was out (an attempt in flight at the deletion): it counts as
   * delivered, no longer as failed.
   */
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

// ---- The delivery log ----

/**
 * What became of every call a source sent, for operators. It sits beside the queue, not in it: the
 * queue decides what is sent, the log only remembers what happened.
 */

/** Where a logged call stands. `filtered`: no destination wanted it (`integrations`, or none on). */
export type DeliveryState = 'pending' | 'retrying' | 'delivered' | 'failed' | 'filtered' | 'duplicate' | 'refused';

/** A call to log: accepted (with or without a delivery) or refused. */
export interface LogCall {
  readonly source: string;
  /** The source's `SourceRecord.id` when known: `abandon` finishes the lines of one source, not of a later one of the same name. */
  readonly sourceId?: string;
  readonly kind: DeliveryKind;
  readonly messageId: string;
  /** Call type (`track`, ...), `delete` for deletion notices; undefined when a refused call had none. */
  readonly type: string | undefined;
  /** The track call's event name; undefined for the other types (and where unknown). */
  readonly event?: string | undefined;
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
  /** The answer's first 2,048 bytes as text (a cut character as U+FFFD); null without one, and once the body is erased. */
  readonly responseBody: string | null;
}

/** One URL of an attempt; `response`: the answer's first bytes (RESPONSE_BYTES), undecoded: the log decodes them as it writes. */
export interface AttemptUrl {
  readonly url: string;
  readonly status: number | null;
  readonly error: string | null;
  readonly durationMs: number;
  readonly response?: Uint8Array | undefined;
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
  readonly urls: readonly AttemptUrl[];
}

/** A row of `GET /admin/messages`; its `id` is the delivery id of `GET /admin/deliveries/{id}`. */
export interface LoggedMessage {
  readonly id: number;
  readonly source: string;
  /** The `SourceRecord.id` of the source that sent it; null when unknown (a line written before ids). */
  readonly sourceId: string | null;
  readonly kind: DeliveryKind;
  readonly messageId: string;
  readonly type: string | null;
  /** The track call's event name; null for the other types. */
  readonly event: string | null;
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
  readonly event?: string;
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
   * the source was deleted and its queued deliveries given up. With `sourceId`, only the lines of
   * that source (and those without an id), never those of a source made again under the name.
   * Sees every write made before it. Attempts that come later change such a line only when they
   * delivered (an attempt that was in flight at the deletion).
   */
  abandon(source: string, at: number, reason: string, sourceId?: string): Promise<void>;
  /** Newest first. */
  list(query: MessageQuery): Promise<LoggedMessage[]>;
  get(id: number): Promise<DeliveryDetail | undefined>;
  /**
   * Failed deliveries of a source received in [since, until), oldest first, with a body to send
   * again; with `sourceId`, only those of that source (and lines without an id).
   */
  failed(source: string, since: number, until: number, sourceId?: string): Promise<DeliveryDetail[]>;
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

// ---- The registry of sources ----

/**
 * Sources and their Webhooks settings, kept in the store so that every instance on it serves the
 * same ones and applies a change within 2 s: the shapes the stores keep and the one write
 * operation they implement (`SetupStore`).
 */

/** A secret replaced by a rotation, and when its grace ends. */
export interface PreviousSecret {
  readonly secret: string;
  /** Epoch ms after which it signs nothing. */
  readonly until: number;
}

/** How a destination signs its requests. */
export type SigningScheme = 'x-signature' | 'standard-webhooks' | 'both';

export interface ResolvedWebhookEntry {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  /** Present only when the entry sets one. */
  readonly rateLimit?: RateLimit;
  /** Which calls this URL gets; present only when the entry sets one (absent: every call). */
  readonly filter?: WebhookFilter;
}

/** Which calls a webhook URL gets (docs/source-schema.md). Each list is present only when set. */
export interface WebhookFilter {
  /** The call types it gets (`delete`: deletion notices); absent: every type. */
  readonly types?: readonly string[];
  /** The track events it gets, by name; calls of other types are not narrowed by it. Absent: every event. */
  readonly events?: readonly string[];
}

/** A source's schema controls (docs/source-schema.md): what of what it sends is never forwarded. */
export interface SourceSchema {
  /** Track event names that are not forwarded. */
  readonly blockedEvents: readonly string[];
  /** A tracking plan: when set, track events not in it are not forwarded; null: no plan. */
  readonly allowedEvents: readonly string[] | null;
  /** Call types (`track`, `identify`, ...) that are not forwarded. */
  readonly blockedTypes: readonly string[];
}

/** The settings of a Webhooks destination as stored, without `enabled` (a column of its own). */
export interface StoredWebhooks {
  readonly webhooks: readonly ResolvedWebhookEntry[];
  readonly sharedSecret: string | readonly string[] | undefined;
  readonly signing: SigningScheme;
  /** `user`: deliveries in order per user (see `NewDelivery.orderKey`); absent: none. */
  readonly ordering?: 'user';
  /**
   * Secrets replaced by a rotation through the admin API, each signed with (Standard Webhooks)
   * until its grace ends. Never set by the config file; absent when there are none.
   */
  readonly previousSecrets?: readonly PreviousSecret[];
}

/** A source's ingestion limit for a public write key: `burst` calls at once, then `perSecond`. */
export interface IngestRateLimit {
  /** Requests a second, over all instances on the store: 0.01 to 100 000. */
  readonly perSecond: number;
  /** Requests allowed at once after a quiet spell: 1 to 100 000. */
  readonly burst: number;
}

/**
 * How a source takes calls from browsers and public keys: what the config file, the admin API
 * (`PUT /admin/sources/{name}/settings`) and the debugger page set. Absent fields: not set.
 */
export interface SourceSettings {
  /**
   * Origins browser requests may come from (`https://shop.example`, or `*` for any), exactly as
   * browsers send `Origin`. Not set: a request that carries an `Origin` is refused (403).
   */
  readonly allowedOrigins?: readonly string[];
  /** Past it the ingestion API answers 429 with `Retry-After`. Not set: no limit. */
  readonly ingestRateLimit?: IngestRateLimit;
}

/** A source as the store keeps it. */
export interface SourceRecord {
  readonly name: string;
  /**
   * The source's own id, random, made with it: a source made again under a deleted one's name has
   * another. Accepted calls are checked against it (`accept`'s `sourceId`), and the delivery log
   * tells the lines of the two apart by it.
   */
  readonly id: string;
  /** Whether its Webhooks destination is switched on; false when it has none. */
  readonly enabled: boolean;
  /** Undefined when the source has no Webhooks destination. Holds secrets: never shown. */
  readonly webhooks: StoredWebhooks | undefined;
  /** The source's schema controls; absent when it has none (everything it sends may be forwarded). */
  readonly schema?: SourceSchema;
  /**
   * Digest of the config file's entry for this source when the file last set it; undefined for a
   * source made through the admin API. A start applies the file's entry only when it changed.
   */
  readonly applied: string | undefined;
  /** Browser origins and ingestion limit; absent when none is set. */
  readonly settings?: SourceSettings;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** Where a write key came from: generated by the admin API, or the config file's `writeKey`. */
export type KeyOrigin = 'api' | 'config';

/** A write key as the store keeps it: its digest only, never the key. */
export interface WriteKeyRecord {
  /** Short random id, for listing and operators. */
  readonly id: string;
  readonly source: string;
  /** SHA-256 of the key (base64url); what a presented key is looked up by. */
  readonly digest: string;
  /** The key's last four characters, to tell keys apart. */
  readonly last4: string;
  readonly origin: KeyOrigin;
  readonly createdAt: number;
  /** After this (epoch ms) the key is refused; undefined: no end. */
  readonly expiresAt: number | undefined;
}

/** Everything the store holds of the setup, and its revision (bumped by every write). */
export interface SetupSnapshot {
  readonly revision: number;
  readonly sources: readonly SourceRecord[];
  readonly keys: readonly WriteKeyRecord[];
}

/** One step of a setup write. A write's steps are applied in one transaction, all or none. */
export type SetupOp =
  /** Fails with `exists` when the name is taken. */
  | { readonly op: 'create'; readonly source: SourceRecord }
  /** Changes the named fields; `webhooks: null` removes the destination. Fails with `missing`. */
  | {
    readonly op: 'update';
    readonly name: string;
    readonly at: number;
    readonly enabled?: boolean;
    readonly webhooks?: StoredWebhooks | null;
    readonly applied?: string | null;
    /** Replaces the source's settings; null clears them. */
    readonly settings?: SourceSettings | null;
    /** The schema controls; null removes them. */
    readonly schema?: SourceSchema | null;
  }
  /**
   * Removes the source and its keys and audiences; its pending deliveries are failed with
   * `reason` (their bodies kept for `storage.retention`, as other failures), those in flight
   * included: an attempt that then succeeds is recorded delivered (see `record`). Waits for
   * accepts that checked the source to commit (see `accept`). Fails with `missing`.
   */
  | { readonly op: 'delete'; readonly name: string; readonly at: number; readonly reason: string }
  /**
   * Adds a key. A key with the same digest on the same source is kept and made valid again
   * (no end); on another source the write fails with `key-taken`.
   */
  | { readonly op: 'add-key'; readonly key: WriteKeyRecord }
  /**
   * Ends the source's keys (of `origin`, when given) other than `except` at `at`, or keeps an
   * earlier end they already have.
   */
  | { readonly op: 'expire-keys'; readonly source: string; readonly at: number; readonly except: readonly string[]; readonly origin?: KeyOrigin };

/**
 * Runtime setup: the sources and their Webhooks settings, kept in the store so that every
 * forwarder instance on it serves the same ones and applies a change within 2 s. This file holds
 * the shapes the stores keep and the one write operation they implement (`SetupStore`).
 */

export type SetupWriteResult =
  | {
    readonly ok: true;
    readonly revision: number;
    /** Pending deliveries failed by `delete` steps. */
    readonly failedDeliveries: number;
  }
  | { readonly ok: false; readonly reason: 'exists' | 'missing' | 'key-taken'; readonly name: string };

/**
 * What a store implements to hold the runtime setup. Every write bumps the revision; instances
 * sharing the store see a change through `watch` (when the store can notify) and by polling
 * `revision()`.
 */
export interface SetupStore {
  read(): Promise<SetupSnapshot>;
  /** The current revision: cheap, for polling. */
  revision(): Promise<number>;
  /** Applies the steps in one transaction; nothing is written when one fails. */
  write(ops: readonly SetupOp[]): Promise<SetupWriteResult>;
  /**
   * Calls `onChange` soon after another process wrote (PostgreSQL: LISTEN/NOTIFY). Absent when
   * no other process can write (memory, SQLite): the forwarder then learns of its own writes
   * directly. Returns a function that stops watching.
   */
  watch?(onChange: () => void): () => void;
  /** True when other processes may share the store: the forwarder then also polls `revision()`. */
  readonly shared: boolean;
}

// ---- Endpoint states ----

/**
 * Automatic disable of a webhook URL that only fails: the state kept per source and URL. The rule
 * is pure, once, in store/endpoint-rows.ts: each store only reads and writes rows in a transaction.
 */

/** What is kept of one URL of one source. */
export interface EndpointState {
  readonly source: string;
  /** Digest of the source and the full URL (`rateKey`): the URL itself may hold a token. */
  readonly key: string;
  /** The URL as shown: no credentials, no query. */
  readonly url: string;
  /** Failed attempts since the last success (or since it was enabled). */
  readonly failures: number;
  /** When the current run of failures began (epoch ms); undefined after a success. */
  readonly failingSince: number | undefined;
  readonly lastFailureAt: number | undefined;
  /** The last failure's error, as the delivery log shows it (status or error code, and text). */
  readonly lastError: string | undefined;
  /** When it was disabled; undefined while it is enabled. */
  readonly disabledAt: number | undefined;
  /** Why, in words; undefined while it is enabled. */
  readonly disabledReason: string | undefined;
}

/** What happened to one URL since the last report: attempts are folded in order. */
export interface EndpointReport {
  readonly source: string;
  readonly key: string;
  readonly url: string;
  /** A success came after what was reported before: the run of failures ended. */
  readonly reset: boolean;
  /** Failed attempts after that success (all of them, without one). */
  readonly failures: number;
  readonly firstFailureAt?: number;
  readonly lastFailureAt?: number;
  readonly lastError?: string;
  /** The URL answered 410 Gone after the last success reported: it is disabled at once. */
  readonly gone?: boolean;
}

/** `delivery.disableAfter` (0: never by time; a 410 disables all the same) and the attempts needed. */
export interface DisableRule {
  readonly after: number;
  readonly minAttempts: number;
}

export interface EndpointReportResult {
  /** The states the report wrote. */
  readonly states: readonly EndpointState[];
  /** URLs this report disabled (the transition happens once, in one call, whichever instance makes it). */
  readonly disabled: readonly EndpointState[];
}

/**
 * Where the states live: in memory, or in the SQLite or PostgreSQL store so that they survive a
 * restart and every instance sees them.
 */
export interface EndpointStore {
  list(): Promise<EndpointState[]>;
  /** Folds the reports into the states, in one transaction, and disables the URLs the rule says. */
  report(reports: readonly EndpointReport[], rule: DisableRule): Promise<EndpointReportResult>;
  /** Enables a disabled URL and clears its run of failures; its state when it was disabled, else undefined. */
  enable(source: string, key: string, at: number): Promise<EndpointState | undefined>;
}

// ---- What sources send, and their usage ----

/**
 * Counts the forwarder gathers in memory on the ingestion and delivery paths and adds to the store
 * in the background (about once a second): per source, each call type and track event name with
 * its count and its first and last time, and per UTC day the calls received, filtered, rejected,
 * delivered and failed. Rows are kept by the source's id (`SourceRecord.id`), so that a source made
 * again under a deleted one's name shares none; on a shared store they add up over every instance.
 */

/** A call type, or a track event name, one source sent. */
export interface SchemaCount {
  readonly sourceId: string;
  /** The source's name when it was counted. */
  readonly source: string;
  readonly type: string;
  /**
   * The track event's name; '' for the other types. A `track` row with '' counts the track calls
   * whose name is not listed: past the names kept per source, or longer than a kept name may be.
   */
  readonly event: string;
  readonly count: number;
  /** Epoch ms. */
  readonly firstSeen: number;
  readonly lastSeen: number;
}

/** A source's usage on one UTC day. */
export interface UsageDay {
  readonly sourceId: string;
  readonly source: string;
  /** Days since the epoch (UTC). */
  readonly day: number;
  /** Calls the ingestion API accepted (filtered ones included; a messageId sent again is not counted again). */
  readonly received: number;
  /** Accepted calls that were not forwarded (a schema control, a URL filter, `integrations`, no destination on). */
  readonly filtered: number;
  /** Calls the ingestion API refused (listed in an answer's `rejected`). */
  readonly rejected: number;
  /** Deliveries of calls a webhook URL accepted (a replay counts again). */
  readonly delivered: number;
  /** Deliveries of calls given up. */
  readonly failed: number;
}

/** What one background write adds. */
export interface UsageBatch {
  readonly events: readonly SchemaCount[];
  readonly days: readonly UsageDay[];
}

export interface UsageStore {
  /**
   * Adds the counts in one transaction. A name new to a source that already has `MAX_SCHEMA_NAMES`
   * (store/usage.ts) is counted in its `track` row with the event ''.
   */
  add(batch: UsageBatch): Promise<void>;
  /** The counts of a source (by id), as every instance added them. */
  events(sourceId: string): Promise<SchemaCount[]>;
  /** The usage of the sources (by id) on the days `fromDay` to `toDay`, both included. */
  days(sourceIds: readonly string[], fromDay: number, toDay: number): Promise<UsageDay[]>;
  /** Removes the rows of sources the store no longer has, and usage days before `beforeDay`. Returns rows removed. */
  prune(beforeDay: number): Promise<number>;
}

// ---- Rate budgets ----

/** A webhook entry's `rateLimit`. */
export interface RateLimit {
  /** Requests a second to this URL, over all forwarder instances; 0.01 (one every 100 s) to 100 000 (0.5: one every 2 s). */
  readonly perSecond: number;
}

/** What a budget granted. */
export interface SlotGrant {
  /** Ms from now to the first slot; with `count` 0, ms from now until the budget has slots within the horizon again. */
  readonly delay: number;
  /** Slots granted, `interval` ms apart from the first. */
  readonly count: number;
}

/**
 * Where send slots come from. `claim` hands out up to `count` consecutive slots of `key`, none
 * more than `horizon` ms ahead of now, and the same slot to nobody else.
 */
export interface RateBudget {
  claim(key: string, count: number, interval: number, horizon: number): Promise<SlotGrant>;
}

// ---- Instances ----

/**
 * What a store shared by several forwarder instances (PostgreSQL) offers for one picture of them
 * all: a view per instance (its endpoint health and timeline, as text the metrics code writes and
 * reads; the store keeps it without looking inside), and a channel for the live stream's events.
 */

/** One minute of an instance's view. */
export interface StoredMinute {
  /** Minutes since the epoch. */
  readonly minute: number;
  readonly health: string;
  readonly timeline: string;
}

/** Another instance's view, as it last wrote it. */
export interface StoredView {
  readonly owner: string;
  readonly updatedAt: number;
  /** The latest state of each URL it sent to. */
  readonly endpoints: string;
  readonly minutes: readonly StoredMinute[];
}

/** What an instance writes of its view: its row, and the minutes that changed. */
export interface ViewWrite {
  /** The version of the text form. */
  readonly format: number;
  readonly endpoints: string;
  readonly minutes: readonly StoredMinute[];
  /** Until when this instance has a live-stream subscriber, epoch ms; 0 for none. */
  readonly watchingUntil: number;
}

/**
 * What a store shared by several forwarder instances (PostgreSQL) offers for one picture of them
 * all: a view per instance (its endpoint health and timeline, as text the metrics code writes and
 * reads; the store keeps it without looking inside), and a channel for the live stream's events.
 */

export interface ClusterStore {
  /**
   * Writes this instance's view when `write` is given (its row's time is `now`), and answers the
   * other instances that have a live-stream subscriber, with until when (epoch ms).
   */
  exchange(owner: string, now: number, write: ViewWrite | undefined): Promise<Map<string, number>>;
  /** The other instances' views written at `since` or later, in `format`, with their minutes from `fromMinute`. */
  read(owner: string, since: number, fromMinute: number, format: number): Promise<StoredView[]>;
  /** Removes the views not written since `before`, and every minute before `beforeMinute`; returns the views removed. */
  prune(before: number, beforeMinute: number): Promise<number>;
  /** Sets until when this instance has a live-stream subscriber (0: none) and tells every instance at once. */
  announce(owner: string, now: number, until: number): Promise<void>;
  /** Calls `handler` with each announcement (this instance's own included). */
  onAnnounce(handler: (owner: string, until: number) => void): { stop(): void };
  /** Sends live-stream events to the instances that receive them (one statement). */
  relay(payloads: readonly string[]): Promise<void>;
  /** Receives the events relayed while it is on (each instance's own included); `ready` once it is. */
  onRelay(handler: (payload: string) => void): { readonly ready: Promise<void>; stop(): void };
}
