import type { Intake as HttpIntake, RefusedAt } from '../http/server';
import type { ForwarderMetrics } from '../observability/metrics';
import type { SourceTable } from '../registry/table';
import type { RejectedMessage, ValidMessage } from '../routing/ingest';
import type { AllowedOrigins } from '../routing/origins';
import type { RouteSource } from '../routing/router';
import type { AcceptedMessage, AcceptResult } from '../store/contract';
import type { Context, StoreAccess } from './context';
import type { Deliveries } from './deliveries';
import type { IngestLimits } from './ingest-limits';

/**
 * The first step of a batch's path, behind the socket (`http/server.ts` reads, checks and routes
 * the request): whose write key it carries, whether its source's ingestion limit admits it, and
 * its accepted calls stored, leased to this instance's delivery loop when it has room (the
 * queue's hand-over, `scheduling/hand-over.ts`); the refusals counted and logged.
 */
export class Intake implements HttpIntake {
  /** Messages refused by the ingestion API since start (not stored, so counted here). */
  private refusedCount = 0;

  constructor(
    private readonly ctx: Context,
    private readonly access: StoreAccess,
    private readonly table: SourceTable,
    private readonly limits: IngestLimits,
    private readonly deliveries: Deliveries,
    private readonly metrics: ForwarderMetrics | undefined,
  ) {}

  /** Messages the ingestion API refused (listed in an answer's `rejected`) since start. */
  get refusedMessages(): number {
    return this.refusedCount;
  }

  get closing(): boolean {
    return this.access.closing;
  }

  now(): number {
    return this.ctx.clock.now();
  }

  sourceForKey(writeKey: string): RouteSource | undefined {
    return this.table.sourceForKey(writeKey, this.ctx.clock.now());
  }

  preflightOrigins(): AllowedOrigins {
    return this.table.preflightOrigins;
  }

  admit(source: RouteSource): ReturnType<HttpIntake['admit']> {
    return this.limits.admit(source);
  }

  refused(code: string, status: number, source: string | undefined, at?: RefusedAt): void {
    this.metrics?.refusedRequest(source ?? '', code);
    this.ctx.oplog.refused(code, status, source, 1, at);
  }

  failed(error: Error): void {
    this.ctx.oplog.fault('ingestion: a request could not be stored (answered 503)', error);
  }

  /**
   * Stores the accepted calls of one request (one source, `route`: the one its write key led to).
   * Leased to this instance as they are stored when its delivery loop takes them: attempted then
   * without a claim. Rejects with SourceDeletedError, storing nothing, when that source was
   * deleted meanwhile.
   */
  async accept(messages: readonly AcceptedMessage[], calls?: readonly ValidMessage[], route?: RouteSource): Promise<AcceptResult> {
    const { store, ops } = await this.access.open();
    const loop = this.deliveries.loop;
    const first = messages[0];
    // A source of the config file checked before the store opened: the one stored under its name now.
    const sourceId = route === undefined ? undefined : (route.id ?? this.table.incarnation(route.name));
    // The store leases an ordered delivery only when nothing of its user is ahead (see NewDelivery.orderKey).
    const lease = first === undefined ? undefined : loop?.handOff(first.source, first.receivedAt);
    const result = await store.accept(messages, lease, sourceId);
    ops.accepted(messages, calls, result, sourceId);
    if (lease !== undefined && result.leased !== undefined) loop?.adopt(result.leased, lease, sourceId);
    else if (result.stored > 0) loop?.stored(first!.source);
    return result;
  }

  /** The messages of a batch the ingestion API refused (the others were stored): counted and logged. */
  rejected(source: string, rejected: readonly RejectedMessage[], receivedAt: number, body: unknown): void {
    this.refusedCount += rejected.length;
    this.access.ops?.refused(source, rejected, receivedAt, body);
    const byCode = new Map<string, number>();
    for (const r of rejected) byCode.set(r.code, (byCode.get(r.code) ?? 0) + 1);
    for (const [code, count] of byCode) this.ctx.oplog.refused(`message ${code}`, 200, source, count);
  }
}
