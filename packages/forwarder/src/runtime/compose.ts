import type { EventEmitter } from 'node:events';
import { createOperationsRoutes } from '../admin/api';
import { SchemaAdmin } from '../admin/schema';
import type { ResolvedConfig } from '../config';
import { createRequestHandler } from '../http/server';
import { ForwarderMetrics } from '../observability/metrics';
import { Context } from './context';
import type { StoreAccess } from './context';
import { Deliveries } from './deliveries';
import { IngestLimits } from './ingest-limits';
import { Intake } from './intake';
import { Lifecycle } from './lifecycle';
import type { Managed } from './lifecycle';
import { Sources } from './sources';
import type { ForwarderEvents, ForwarderInternals, ForwarderOptions, ForwarderStats } from './types';
import { Work } from './work';

/** The parts `build` makes, which the lifecycle opens, starts and closes. */
interface Built extends Managed {
  readonly intake: Intake;
  /** Sources' schema controls, what they send and their usage. */
  readonly schema: SchemaAdmin;
}

/** The parts of one forwarder, as `compose` builds them. */
export interface Parts extends Built {
  readonly ctx: Context;
  readonly lifecycle: Lifecycle<Built>;
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
  const lifecycle = new Lifecycle(ctx, (access) => build(ctx, access));
  return { ctx, lifecycle, ...lifecycle.parts };
}

/** The parts made before the store opens, each with the `StoreAccess` the lifecycle hands them. */
function build(ctx: Context, access: StoreAccess): Built {
  const { config } = ctx;
  const deliveries = new Deliveries(ctx, access);
  const sources = new Sources(ctx, access, deliveries);
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
  const intake = new Intake(ctx, access, table, new IngestLimits(() => deliveries.rateBudget, ctx.clock), deliveries, metrics);
  const work = new Work(ctx, access, sources, deliveries, intake);
  const schema = new SchemaAdmin(sources.manager, async () => (await access.open()).ops.usage, () => ctx.clock.now());
  const admin = createOperationsRoutes({
    access,
    work,
    metrics,
    metricsPath: config.metricsPath,
    debuggerOn: config.debugger,
    adminToken: config.adminToken,
    sources: sources.manager,
    setup: sources,
    endpoints: sources.endpointAdmin,
    secrets: sources.secrets,
    schema,
  });
  const handle = createRequestHandler(intake, { http: config.http, operations: admin, stats: () => work.stats() });
  return { deliveries, sources, intake, work, metrics, schema, handle };
}
