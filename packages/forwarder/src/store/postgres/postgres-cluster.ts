import type { Pool } from 'pg';
import { numberArray, textArray } from './pg-driver';
import type { PostgresListener } from './postgres-listen';
import type { ClusterStore, StoredView, ViewWrite } from '../contract';
import { CLUSTER, WATCHERS } from './sql';

/** Live-stream events relayed between instances. */
export const LIVE_CHANNEL = 'eventrelay_live';
/** Announcements of live-stream subscribers: `[owner, until]`. */
export const WATCH_CHANNEL = 'eventrelay_watch';

/**
 * The instances' views (`instance_views`, `instance_minutes`) and the live stream's relay on
 * PostgreSQL. Views go through the pool that commits without waiting for a WAL flush (losing the
 * last second of a view to a server crash costs nothing that matters); notifications go through
 * the instance's one LISTEN connection, except an announcement, which is sent with its row.
 */
export class PostgresCluster implements ClusterStore {
  constructor(
    private readonly pool: Pool,
    private readonly listener: PostgresListener,
  ) {}

  async exchange(owner: string, now: number, write: ViewWrite | undefined): Promise<Map<string, number>> {
    type Row = { owner: string; watching_until: number };
    if (write === undefined) {
      const { rows } = await this.pool.query<Row>({ name: 'eventrelay-views-watchers', text: WATCHERS, values: [owner, now] });
      return new Map(rows.map((r) => [r.owner, r.watching_until]));
    }
    const { rows } = await this.pool.query<Row>({
      name: 'eventrelay-views-write',
      // One round trip: the row, the minutes that changed, and who watches (read before this
      // statement's own writes, which concern this instance only).
      text: CLUSTER.exchange,
      values: [
        owner,
        now,
        write.format,
        write.watchingUntil,
        write.endpoints,
        numberArray(write.minutes.map((m) => m.minute)),
        textArray(write.minutes.map((m) => m.health)),
        textArray(write.minutes.map((m) => m.timeline)),
      ],
    });
    return new Map(rows.map((r) => [r.owner, r.watching_until]));
  }

  async read(owner: string, since: number, fromMinute: number, format: number): Promise<StoredView[]> {
    const { rows } = await this.pool.query<{ owner: string; updated_at: number; endpoints: string; minutes: [number, string, string][] }>({
      name: 'eventrelay-views-read',
      text: CLUSTER.read,
      values: [owner, since, fromMinute, format],
    });
    return rows.map((r) => ({
      owner: r.owner,
      updatedAt: r.updated_at,
      endpoints: r.endpoints,
      minutes: r.minutes.map(([minute, health, timeline]) => ({ minute, health, timeline })),
    }));
  }

  async prune(before: number, beforeMinute: number): Promise<number> {
    const { rows } = await this.pool.query<{ removed: number }>({
      name: 'eventrelay-views-prune',
      text: CLUSTER.prune,
      values: [before, beforeMinute],
    });
    return rows[0]!.removed;
  }

  async announce(owner: string, now: number, until: number): Promise<void> {
    // Made here, without a view (format 0, which nobody reads), when the instance has not written one yet.
    await this.pool.query({
      name: 'eventrelay-views-announce',
      text: CLUSTER.announce,
      values: [owner, now, until, WATCH_CHANNEL, JSON.stringify([owner, until])],
    });
  }

  onAnnounce(handler: (owner: string, until: number) => void): { stop(): void } {
    return this.listener.listen(WATCH_CHANNEL, (payload) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(payload);
      } catch {
        return;
      }
      if (!Array.isArray(parsed) || typeof parsed[0] !== 'string' || typeof parsed[1] !== 'number') return;
      handler(parsed[0], parsed[1]);
    });
  }

  relay(payloads: readonly string[]): Promise<void> {
    return this.listener.notify(LIVE_CHANNEL, payloads);
  }

  onRelay(handler: (payload: string) => void): { readonly ready: Promise<void>; stop(): void } {
    return this.listener.listen(LIVE_CHANNEL, handler);
  }
}
