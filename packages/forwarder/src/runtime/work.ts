import { checkAudienceRequest, checkMembers, planAudienceNotices } from '../routing/audiences';
import type { AudienceSyncRequest, AudienceSyncResult } from '../routing/audiences';
import { planDeletion } from '../routing/deletion';
import type { DeletionRequest } from '../routing/deletion';
import type { NewDelivery } from '../store/contract';
import { log } from './context';
import type { Context, StoreAccess } from './context';
import type { Deliveries } from './deliveries';
import type { Intake } from './intake';
import type { Sources } from './sources';
import type { DeletionResult, ForwarderStats } from './types';

/**
 * The queue's other inputs and what it holds: replays, deletion notices and audience syncs, each
 * stored and then handed to the delivery loop (ingested calls come through `Intake`); and the
 * counts of `stats()`.
 */
export class Work {
  constructor(
    private readonly ctx: Context,
    private readonly access: StoreAccess,
    private readonly sources: Sources,
    private readonly deliveries: Deliveries,
    private readonly intake: Intake,
  ) {}

  /** Stores deliveries made by no ingested call (replays) and wakes the delivery loop. */
  async enqueue(deliveries: readonly NewDelivery[]): Promise<void> {
    const { store } = await this.access.open();
    await store.enqueue(deliveries);
    this.deliveries.wake();
  }

  /** A `delete` notice (spec 2.3) to every affected source whose Webhooks destination is on. */
  async requestDeletion(request: DeletionRequest): Promise<DeletionResult> {
    const plan = planDeletion(request, this.sources.table.routes, this.ctx.clock.now());
    const { store, ops } = await this.access.open();
    await store.enqueue(plan.deliveries);
    ops.enqueued(plan.deliveries);
    this.deliveries.wake();
    log('deletion request: %d sources notified', plan.notified.length);
    return { userId: plan.userId, notified: plan.notified, skipped: plan.skipped };
  }

  /** Replaces an audience's membership (spec 6), an identify per member added or removed. */
  async syncAudience(request: AudienceSyncRequest): Promise<AudienceSyncResult> {
    const { source, trait, members } = checkAudienceRequest(request, this.sources.table.routes);
    await checkMembers(members);
    const now = this.ctx.clock.now();
    const { store, ops } = await this.access.open();
    // Chunk by chunk (the store calls `plan` per chunk of 5,000 users and stores what it
    // returns), never the whole audience at once: memory stays bounded and the event loop free.
    // A chunk's notices are logged once it is stored, which the next call (or the end) tells.
    let sent = 0;
    let unlogged: readonly NewDelivery[] = [];
    const change = await store.syncAudience(source.name, trait, members, (c) => {
      ops.enqueued(unlogged);
      if (unlogged.length > 0) this.deliveries.wake();
      const notices = planAudienceNotices(source, trait, c, now);
      sent += notices.length;
      unlogged = notices;
      return notices;
    });
    ops.enqueued(unlogged);
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
  }

  /** `/stats` of this instance, with endpoint health and the chart over every instance on the store: the page's overview. */
  async overview(): Promise<object> {
    const [stats, cluster] = await Promise.all([this.stats(), this.access.open().then(({ ops }) => ops.overview())]);
    const { table, endpointAdmin } = this.sources;
    return {
      sources: table.names,
      instances: cluster.instances,
      stats: { ...stats, endpoints: cluster.endpoints },
      chart: cluster.chart,
      // The disabled URLs of every source's destination, without credentials or query.
      disabled: table.names.flatMap((source) => {
        const listed = endpointAdmin.list(source);
        return listed.ok ? listed.value.filter((e) => e.disabled).map((e) => ({ source, url: e.url, disabledAt: e.disabledAt, reason: e.reason })) : [];
      }),
    };
  }

  async stats(): Promise<ForwarderStats> {
    const { store, ops } = await this.access.open();
    const counts = await store.counts();
    const now = this.ctx.clock.now();
    return {
      accepted: counts.accepted,
      duplicates: counts.duplicates,
      refused: this.intake.refusedMessages,
      delivered: counts.delivered,
      retrying: counts.retrying,
      failed: counts.failed,
      queueDepth: counts.pending,
      oldestPendingAge: counts.oldestPendingAt === undefined ? null : Math.max(0, now - counts.oldestPendingAt),
      inFlight: this.deliveries.active,
      uptime: this.deliveries.startedAt === 0 ? 0 : now - this.deliveries.startedAt,
      endpoints: ops.endpoints(),
    };
  }
}
