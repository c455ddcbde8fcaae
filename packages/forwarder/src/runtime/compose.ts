import type { EventEmitter } from 'node:events';
import { createOperationsRoutes } from '../admin/api';
import { SchemaAdmin } from '../admin/schema';
import type { ResolvedConfig } from '../config';
import { createRequestHandler } from '../http/server';
import { ForwarderMetrics } from '../observability/metrics';
import { Context } from './context';
import { Deliveries } from './deliveries';
import { IngestLimits } from './ingest-limits';
import { Intake } from './intake';
import { Lifecycle } from './lifecycle';
import { Sources } from './sources';
import type { ForwarderEvents, ForwarderInternals, ForwarderOptions, ForwarderStats } from './types';
import { Work } from './work';

/** The parts of one forwarder, as `compose` builds them. */
export interface Parts {
  readonly ctx: Context;
  readonly deliveries: Deliveries;
  readonly sources: Sources;
  readonly intake: Intake;
  readonly work: Work;
  readonly lifecycle: Lifecycle;
  /** Sources' schema controls, what they send and their usage. */
  readonly schema: SchemaAdmin;
}

/**
 * Builds a forwarder's parts and wires them: the delivery side, the sources it serves, the queue's
 * inputs, observability, the admin API and the HTTP handler, and the lifecycle that opens, starts
 * and closes them in order. A batch's path (docs/architecture.md draws it): `http/server.ts`
 * (read, check, route) → `runtime/intake.ts` (store, hand to the loop) → `scheduling/` (claim,
 * attempt through `delivery/`) → `scheduling/outcome.ts` (the outcome told).
 */
export function compose(config: ResolvedConfig, options: ForwarderOptions, internals: ForwarderInternals, events: EventEmitter<ForwarderEvents>): Parts {
  const ctx = new Context(config, options, internals, events);
  const deliveries = new Deliveries(ctx);
  const sources = new Sources(ctx, deliveries);
  const table = sources.table;
  const metrics: ForwarderMetrics | undefined =
    config.metricsPath === undefined
      ? undefined
      : new ForwarderMetrics({
        queueDepth: async (): Promise<Pick<ForwarderStats, 'queueDepth' | 'oldestPendingAge' | 'inFlight'>> => {
          const { queueDepth, oldestPendingAge, inFlight } = await work.stats();
          return { queueDepth, oldestPendingAge, inFlight };
        },
        disabledEndpoints: () => {
          const counts = deliveries.guard.disabledCounts();
          return new Map(table.names.map((name) => [name, counts.get(name) ?? 0]));
        },
      });
  const intake = new Intake(ctx, table, new IngestLimits(() => deliveries.rateBudget, ctx.clock), deliveries, metrics);
  const work = new Work(ctx, sources, deliveries, intake);
  const opsOf = async () => (await ctx.open(), ctx.ops!);
  const schema = new SchemaAdmin(sources.manager, async () => (await opsOf()).usage, () => ctx.clock.now());
  const admin = createOperationsRoutes({
    ops: opsOf,
    metrics,
    metricsPath: config.metricsPath,
    debuggerOn: config.debugger,
    adminToken: config.adminToken,
    closing: () => ctx.closing,
    overview: async () => {
      // `/stats` of this instance, but endpoint health and the chart over every instance on the store.
      const [stats, cluster] = await Promise.all([work.stats(), opsOf().then((ops) => ops.overview())]);
      return {
        sources: table.names,
        instances: cluster.instances,
        stats: { ...stats, endpoints: cluster.endpoints },
        chart: cluster.chart,
        disabled: disabledEndpoints(sources),
      };
    },
    requestDeletion: (request) => work.requestDeletion(request),
    syncAudience: (request) => work.syncAudience(request),
    sources: sources.manager,
    applySources: (list, dryRun) => sources.apply(list, dryRun),
    endpoints: sources.endpointAdmin,
    secrets: sources.secrets,
    schema,
  });
  const handle = createRequestHandler(intake, { http: config.http, operations: admin, stats: () => work.stats() });
  const lifecycle = new Lifecycle(ctx, { sources, deliveries, work, metrics }, handle);
  return { ctx, deliveries, sources, intake, work, lifecycle, schema };
}

/** The disabled URLs of every source's destination (what the debugger page lists), without credentials or query. */
function disabledEndpoints(sources: Sources): { source: string; url: string; disabledAt: string | null; reason: string | null }[] {
  return sources.table.names.flatMap((source) => {
    const listed = sources.endpointAdmin.list(source);
    return listed.ok ? listed.value.filter((e) => e.disabled).map((e) => ({ source, url: e.url, disabledAt: e.disabledAt, reason: e.reason })) : [];
  });
}
