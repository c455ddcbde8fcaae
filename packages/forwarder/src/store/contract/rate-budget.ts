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
