import { createHash } from 'node:crypto';
import type { Clock } from 'eventrelay/internal';
import type { Admission } from '../http/server';
import type { RouteSource } from '../routing/router';
import type { IngestRateLimit, RateBudget } from '../store/contract';

/**
 * The sources' ingestion limits (`ingestRateLimit: { perSecond, burst }`), taken from the same
 * budget as the webhook URLs' rate limits: process memory with the memory and SQLite stores, a row
 * per source on PostgreSQL, so that the limit holds over every instance together (a load balancer
 * in front of them does not multiply it). One request is one slot of a GCRA with `burst` slots of
 * room; past it the answer says when a slot is free again. Once the budget said "not before T", the
 * instance answers 429 itself until T: a flood past the limit costs no round trip to the store.
 */
export class IngestLimits {
  /** By budget key: until when the budget has no room (epoch ms on this clock). */
  private readonly blockedUntil = new Map<string, number>();

  constructor(
    private readonly budget: () => RateBudget,
    private readonly clock: Clock,
  ) {}

  async admit(source: RouteSource): Promise<Admission> {
    const limit = source.ingestRateLimit;
    if (limit === undefined) return { ok: true };
    const key = ingestKey(source, limit);
    const now = this.clock.now();
    const blocked = this.blockedUntil.get(key);
    if (blocked !== undefined && blocked > now) return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((blocked - now) / 1000)) };
    const interval = 1000 / limit.perSecond;
    const horizon = (limit.burst - 1) * interval;
    const grant = await this.budget().claim(key, 1, interval, horizon);
    if (grant.count > 0) {
      this.blockedUntil.delete(key);
      return { ok: true };
    }
    // The first free slot is `delay` ms away; a request fits once it is within the burst's room.
    const wait = Math.max(1, grant.delay - horizon);
    this.blockedUntil.set(key, now + wait);
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil(wait / 1000)) };
  }
}

/**
 * The budget key of a source's limit: its name, id and limit, hashed. A source made again, or given
 * another limit, starts afresh rather than waiting out what the old limit spaced.
 */
function ingestKey(source: RouteSource, limit: IngestRateLimit): string {
  return `ingest:${createHash('sha256').update(`${source.name}\n${source.id ?? ''}\n${limit.perSecond}\n${limit.burst}`).digest('base64url')}`;
}
