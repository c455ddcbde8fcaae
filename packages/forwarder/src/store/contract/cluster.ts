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
