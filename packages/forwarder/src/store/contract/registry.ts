import type { RateLimit } from './rate-budget';

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
  /** The body this URL gets, reshaped by code (docs/transformations.md); present only when set. */
  readonly transform?: WebhookTransform;
  /** Its calls go together, as one POST of a JSON array (issue 45); present only when set. */
  readonly batch?: WebhookBatch;
}

/**
 * A URL's batching as written (issue 45): at most `maxEvents` calls (1 to 4000) and `maxBytes`
 * bytes (1024 to 1 MB, default 512 KB) in one body, sent `maxWaitMs` (0 to 60 000, default 1000)
 * after its first call at the latest. The optional fields are present only when set.
 */
export interface WebhookBatch {
  readonly maxEvents: number;
  readonly maxBytes?: number;
  readonly maxWaitMs?: number;
}

/** A URL's transformation: `code` defines `function transform(message)`; `timeoutMs` (1 to 1000, default 100) caps each call. */
export interface WebhookTransform {
  readonly code: string;
  /** Present only when set. */
  readonly timeoutMs?: number;
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
