import type { BatchStore } from './contract/batches';
import type { ClusterStore } from './contract/cluster';
import type { DeliveryLog, DeliveryLogOptions } from './contract/delivery-log';
import type { EndpointStore } from './contract/endpoints';
import type { AcceptLease, AcceptResult, AcceptedMessage, AudienceChange, DeliveryOutcome, LeaseRequest, NewDelivery, PendingDelivery, RecordResult, StoreCounts } from './contract/queue';
import type { RateBudget } from './contract/rate-budget';
import type { SetupStore } from './contract/registry';
import type { UsageStore } from './contract/usage';

/**
 * The storage contract: everything the forwarder keeps. A store is one object with every
 * capability as a member: the queue (accept, claim, record, ...), the registry of sources, the
 * endpoint states, the rate budgets, the delivery log and, for a store shared by several processes,
 * the instances' views. Each capability's shapes live in a file of their own under contract/; this
 * file composes them into `ForwarderStore` and re-exports them all, so `store/contract` stays the
 * one import for the whole contract. Each backend folder (memory/, sqlite/, postgres/) offers
 * one `open` function that returns it; `checkStore` refuses, at construction, a custom store that
 * lacks a capability, naming it.
 */

export * from './contract/errors';
export * from './contract/queue';
export * from './contract/registry';
export * from './contract/endpoints';
export * from './contract/rate-budget';
export * from './contract/usage';
export * from './contract/delivery-log';
export * from './contract/cluster';
export * from './contract/batches';

export interface ForwarderStore {
  /**
   * The registry of sources: sources, their settings and write keys, so that every instance on
   * the store serves the same ones (contract/registry.ts).
   */
  readonly setup: SetupStore;
  /** The queue's batches, for URLs with `batch` set (contract/batches.ts). */
  readonly batches: BatchStore;
  /** The send slots of rate-limited URLs (contract/rate-budget.ts): shared when the store is. */
  readonly rateBudget: RateBudget;
  /** The state of each webhook URL, for automatic disable (contract/endpoints.ts). */
  readonly endpoints: EndpointStore;
  /** What each source sends (its schema's counts) and its usage per day (contract/usage.ts). */
  readonly usage: UsageStore;
  /**
   * Whether other processes share the store (PostgreSQL): endpoint states are then read from it
   * at start and its changes followed, rather than this process's alone.
   */
  readonly shared: boolean;
  /**
   * The instances' views and the live stream's relay (contract/cluster.ts), or null for a store only
   * one process uses: the overview and the live stream are then this process's.
   */
  readonly cluster: ClusterStore | null;
  /** Opens the delivery log beside the queue (contract/delivery-log.ts); called once, at start. */
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
