import { checkAudienceRequest, checkMembers, planAudienceNotices } from '../routing/audiences';
import type { AudienceSyncRequest, AudienceSyncResult } from '../routing/audiences';
import { planDeletion } from '../routing/deletion';
import type { DeletionRequest } from '../routing/deletion';
import type { RejectedMessage, ValidMessage } from '../routing/ingest';
import type { RouteSource } from '../routing/router';
import type { AcceptedMessage, AcceptResult, NewDelivery } from '../store/contract';
import { log } from './context';
import type { Context } from './context';
import type { Deliveries } from './deliveries';
import type { Sources } from './sources';
import type { DeletionResult, ForwarderStats } from './types';

/**
 * What comes into the queue and what it holds: accepted calls (from the HTTP handler), replays,
 * deletion notices and audience syncs, each stored and then handed to the delivery loop; and the
 * counts of `stats()`.
 */
export class Work {
  /** Messages refused by the ingestion API since start (not stored, so counted here). */
  private refusedCount = 0;
  /** When delivery started, epoch ms; 0 before. */
  startedAt = 0;

  constructor(
    private readonly ctx: Context,
    private readonly sources: Sources,
    private readonly deliveries: Deliveries,
  ) {}

  /**
   * Stores the accepted calls of one request (one source, `route`: the one its write key led to).
   * Leased to this instance as they are stored when its delivery loop takes them: attempted then
   * without a claim. Rejects with SourceDeletedError, storing nothing, when that source was
   * deleted meanwhile.
   */
  accept(messages: readonly AcceptedMessage[], calls?: readonly ValidMessage[], route?: RouteSource): Promise<AcceptResult> {
    return this.ctx.withStore(async (store) => {
      const loop = this.deliveries.loop;
      const first = messages[0];
      // A source of the config file checked before the store opened: the one stored under its name now.
      const sourceId = route === undefined ? undefined : (route.id ?? this.sources.table.incarnation(route.name));
      // The store leases an ordered delivery only when nothing of its user is ahead (see NewDelivery.orderKey).
      const lease = first === undefined ? undefined : loop?.handOff(first.source, first.receivedAt);
      const result = await store.accept(messages, lease, sourceId);
      this.ctx.ops?.accepted(messages, calls, result, sourceId);
      if (lease !== undefined && result.leased !== undefined) loop?.adopt(result.leased, lease, sourceId);
      else if (result.stored > 0) loop?.stored(first!.source);
      return result;
    });
  }

  /** The messages of a batch the ingestion API refused (the others were stored): counted and logged. */
  refused(source: string, rejected: readonly RejectedMessage[], receivedAt: number, body: unknown): void {
    this.refusedCount += rejected.length;
    this.ctx.ops?.refused(source, rejected, receivedAt, body);
    const byCode = new Map<string, number>();
    for (const r of rejected) byCode.set(r.code, (byCode.get(r.code) ?? 0) + 1);
    for (const [code, count] of byCode) this.ctx.oplog.refused(`message ${code}`, 200, source, count);
  }

  /** Stores deliveries made by no ingested call (replays) and wakes the delivery loop. */
  enqueue(deliveries: readonly NewDelivery[]): Promise<void> {
    return this.ctx.withStore(async (store) => {
      await store.enqueue(deliveries);
      this.deliveries.wake();
    });
  }

  /** A `delete` notice (spec 2.3) to every affected source whose Webhooks destination is on. */
  requestDeletion(request: DeletionRequest): Promise<DeletionResult> {
    const plan = planDeletion(request, this.sources.table.routes, this.ctx.clock.now());
    return this.ctx.withStore(async (store) => {
      await store.enqueue(plan.deliveries);
      this.ctx.ops?.enqueued(plan.deliveries);
      this.deliveries.wake();
      log('deletion request: %d sources notified', plan.notified.length);
      return { userId: plan.userId, notified: plan.notified, skipped: plan.skipped };
    });
  }

  /** Replaces an audience's membership (spec 6), an identify per member added or removed. */
  async syncAudience(request: AudienceSyncRequest): Promise<AudienceSyncResult> {
    const { source, trait, members } = checkAudienceRequest(request, this.sources.table.routes);
    await checkMembers(members);
    const now = this.ctx.clock.now();
    return this.ctx.withStore(async (store) => {
      // Chunk by chunk (the store calls `plan` per chunk of 5,000 users and stores what it
      // returns), never the whole audience at once: memory stays bounded and the event loop free.
      // A chunk's notices are logged once it is stored, which the next call (or the end) tells.
      let sent = 0;
      let unlogged: readonly NewDelivery[] = [];
      const change = await store.syncAudience(source.name, trait, members, (c) => {
        this.ctx.ops?.enqueued(unlogged);
        if (unlogged.length > 0) this.deliveries.wake();
        const notices = planAudienceNotices(source, trait, c, now);
        sent += notices.length;
        unlogged = notices;
        return notices;
      });
      this.ctx.ops?.enqueued(unlogged);
      this.deliveries.wake();
      log('audience sync on source %s: +%d -%d', source.name, change.added.length, change.removed.length);
      return {
        source: source.name,
        audience: request.audience,
        trait,
        firstSync: change.firstSync,
        added: change.added.length,
        removed: change.removed.length,
        sent,
      };
    });
  }

  stats(): Promise<ForwarderStats> {
    return this.ctx.withStore(async (store) => {
      const counts = await store.counts();
      const now = this.ctx.clock.now();
      return {
        accepted: counts.accepted,
        duplicates: counts.duplicates,
        refused: this.refusedCount,
        delivered: counts.delivered,
        retrying: counts.retrying,
        failed: counts.failed,
        queueDepth: counts.pending,
        oldestPendingAge: counts.oldestPendingAt === undefined ? null : Math.max(0, now - counts.oldestPendingAt),
        inFlight: this.deliveries.active,
        uptime: this.startedAt === 0 ? 0 : now - this.startedAt,
        endpoints: this.ctx.ops?.endpoints() ?? [],
      };
    });
  }
}
