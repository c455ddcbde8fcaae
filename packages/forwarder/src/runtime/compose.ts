import type { EventEmitter } from 'node:events';
import { createOperationsRoutes } from '../admin/api';
import { SchemaAdmin } from '../admin/schema';
import type { ResolvedConfig } from '../config';
import { createRequestHandler } from '../http/server';
import { ForwarderMetrics } from '../observability/metrics';
import { Context } from './context';
import { Deliveries } from './deliveries';
import { IngestLimits } from './ingest-limits';
import { Lifecycle } from './lifecycle';
import { Sources } from './sources';
import type { ForwarderEvents, ForwarderInternals, ForwarderOptions } from './types';
import { Work } from './work';

/** The parts of one forwarder, as `compose` builds them. */
export interface Parts {
  readonly ctx: Context;
  readonly deliveries: Deliveries;
  readonly sources: Sources;
  readonly work: Work;
  readonly lifecycle: Lifecycle;
  /** Sources' schema controls, what they send and their usage. */
  readonly schema: SchemaAdmin;
}

/**
 * Builds a forwarder's parts and wires them: the delivery side, the sources it serves, the queue's
 * inputs, observability, the admin API and the HTTP handler, and the lifecycle that opens, starts
 * and closes them in order. A batch's route: `http/server.ts` (read, check, route) →
 * `Work#accept` (store, hand to the loop) → `scheduling/` (claim, attempt) → `delivery/` (sign,
 * send) → the receiver.
 */
export function compose(config: ResolvedConfig, options: ForwarderOptions, internals: ForwarderInternals, events: EventEmitter<ForwarderEvents>): Parts {
  const ctx = new Context(config, options, internals, events);
  const deliveries = new Deliveries(ctx);
  const sources = new Sources(ctx, deliveries);
  const work = new Work(ctx, sources, deliveries);
  const table = sources.table;
  const metrics =
    config.metricsPath === undefined
      ? undefined
      : new ForwarderMetrics({
        queueDepth: () => work.stats().then(({ queueDepth, oldestPendingAge, inFlight }) => ({ queueDepth, oldestPendingAge, inFlight })),
        disabledEndpoints: () => {
          const counts = deliveries.guard.disabledCounts();
          return new Map(table.names.map((name) => [name, counts.get(name) ?? 0]));
        },
      });
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
  const limits = new IngestLimits(() => deliveries.rateBudget, ctx.clock);
  const handle = createRequestHandler({
    sourceForKey: (key) => table.sourceForKey(key, ctx.clock.now()),
    preflightOrigins: () => table.preflightOrigins,
    admit: (source) => limits.admit(source),
    onRefusedRequest: (source, reason, at) => {
      metrics?.refusedRequest(source, reason);
      ctx.oplog.refused(reason, reason === 'rate_limit' ? 429 : 403, source === '' ? undefined : source, 1, at);
    },
    http: config.http,
    accept: (messages, calls, source) => work.accept(messages, calls, source),
    onRejected: (source, rejected, receivedAt, body) => work.refused(source, rejected, receivedAt, body),
    refusedRequest: (code, status, source, at) => {
      metrics?.refusedRequest(source ?? '', code);
      ctx.oplog.refused(code, status, source, 1, at);
    },
    requestFailed: (error) => ctx.oplog.fault('ingestion: a request could not be stored (answered 503)', error),
    operations: admin,
    stats: () => work.stats(),
    get closing() {
      return ctx.closing;
    },
    now: () => ctx.clock.now(),
  });
  const lifecycle = new Lifecycle(ctx, { sources, deliveries, work, metrics }, handle);
  return { ctx, deliveries, sources, work, lifecycle, schema };
}

/** The disabled URLs of every source's destination (what the debugger page lists), without credentials or query. */
function disabledEndpoints(sources: Sources): { source: string; url: string; disabledAt: string | null; reason: string | null }[] {
  return sources.table.names.flatMap((source) => {
    const listed = sources.endpointAdmin.list(source);
    return listed.ok ? listed.value.filter((e) => e.disabled).map((e) => ({ source, url: e.url, disabledAt: e.disabledAt, reason: e.reason })) : [];
  });
}
