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
