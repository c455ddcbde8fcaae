import type { ServerResponse } from 'node:http';
import { showValue, ValidationError } from 'eventrelay/internal';
import { fail, send } from '../http/server';
import type { AdminHandlers } from './sources';
import type { UsageTally } from '../observability/usage';
import type { SetupResult, SourceManager } from '../registry/manager';
import { compileRules, shownSchema } from '../schema-rules';
import { dayOf, dayText, USAGE_DAYS_KEPT } from '../store/usage';
import type { SchemaCount, SourceSchema, UsageDay } from '../store/contract';

/** Days `GET /admin/usage` covers when `since` is not given: today and the 29 before. */
export const DEFAULT_USAGE_DAYS = 30;

/** A call type or track event a source sent, as the API shows it. */
export interface ShownEvent {
  readonly type: string;
  /** The track event's name; absent for the other types. */
  readonly event?: string;
  readonly count: number;
  readonly firstSeen: string;
  readonly lastSeen: string;
  /** Whether the source's schema controls block it now. */
  readonly blocked: boolean;
}

/** `GET /admin/sources/{name}/schema`: the controls, and what the source sent. */
export interface ShownSchema extends SourceSchema {
  readonly source: string;
  /** Most sent first. */
  readonly events: readonly ShownEvent[];
  /** Track calls whose name is not listed (past the 2,000 names kept per source, or over 500 characters); null: none. */
  readonly otherEvents: { readonly count: number; readonly firstSeen: string; readonly lastSeen: string } | null;
}

/** Counts of a source's usage. */
export interface UsageCounts {
  readonly received: number;
  readonly filtered: number;
  readonly rejected: number;
  readonly delivered: number;
  readonly failed: number;
}

export interface SourceUsage extends UsageCounts {
  readonly source: string;
  /** The days with counts, oldest first. */
  readonly days: readonly (UsageCounts & { readonly day: string })[];
}

/** `GET /admin/usage`: each source's counts over the days `since` to `until` (UTC dates, both included). */
export interface UsageReport {
  readonly since: string;
  readonly until: string;
  readonly sources: readonly SourceUsage[];
}

export interface UsageQuery {
  /** One source; default every source. */
  readonly source?: string;
  /** ISO 8601 or epoch ms: the first day is this instant's UTC date. Default: 29 days before `until`. */
  readonly since?: string | number;
  /** The last day. Default: now. */
  readonly until?: string | number;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** An instant as ISO 8601 or epoch milliseconds. */
function instant(value: string | number, field: string): number {
  const ms = typeof value === 'number' ? value : /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(ms)) throw new ValidationError(`Expected \`${field}\` to be an ISO 8601 time or epoch milliseconds, got ${showValue(value)}`, field);
  return ms;
}

const ZERO: UsageCounts = { received: 0, filtered: 0, rejected: 0, delivered: 0, failed: 0 };

function add(a: UsageCounts, d: UsageDay): UsageCounts {
  return {
    received: a.received + d.received,
    filtered: a.filtered + d.filtered,
    rejected: a.rejected + d.rejected,
    delivered: a.delivered + d.delivered,
    failed: a.failed + d.failed,
  };
}

/**
 * The schema and usage of sources, for the admin API, the page and the `Forwarder` methods: the
 * controls from the registry of sources, the counts from the store (every instance's, this one's
 * written first).
 */
export class SchemaAdmin {
  constructor(
    private readonly sources: SourceManager,
    private readonly tally: () => Promise<UsageTally>,
    private readonly now: () => number,
  ) {}

  async get(name: string): Promise<SetupResult<ShownSchema>> {
    const found = await this.sources.controls(name);
    if (!found.ok) return found;
    const { id, schema } = found.value;
    const rules = compileRules(schema, undefined);
    const counts = await (await this.tally()).events(id);
    const listed = counts.filter((c) => !(c.type === 'track' && c.event === ''));
    const other = counts.find((c) => c.type === 'track' && c.event === '');
    const show = (c: SchemaCount): ShownEvent => {
      const event = c.type === 'track' ? c.event : undefined;
      const blocked = rules?.blocked(c.type, event) !== undefined;
      const times = { count: c.count, firstSeen: iso(c.firstSeen), lastSeen: iso(c.lastSeen), blocked };
      return event === undefined ? { type: c.type, ...times } : { type: c.type, event, ...times };
    };
    const events = listed
      .sort((a, b) => b.count - a.count || (a.type < b.type ? -1 : a.type > b.type ? 1 : 0) || (a.event < b.event ? -1 : a.event > b.event ? 1 : 0))
      .map(show);
    return {
      ok: true,
      value: {
        source: name,
        ...shownSchema(schema),
        events,
        otherEvents: other === undefined ? null : { count: other.count, firstSeen: iso(other.firstSeen), lastSeen: iso(other.lastSeen) },
      },
    };
  }

  put(name: string, body: unknown): Promise<SetupResult<SourceSchema>> {
    return this.sources.putSchema(name, body);
  }

  async usage(query: UsageQuery): Promise<UsageReport> {
    const until = query.until === undefined ? this.now() : instant(query.until, 'until');
    const since = query.since === undefined ? until - (DEFAULT_USAGE_DAYS - 1) * 86_400_000 : instant(query.since, 'since');
    const [fromDay, toDay] = [dayOf(since), dayOf(until)];
    if (toDay < fromDay) throw new ValidationError('Expected `until` to be on or after `since`', 'until');
    if (toDay - fromDay > USAGE_DAYS_KEPT) {
      throw new ValidationError(`Expected \`since\` and \`until\` to be at most ${USAGE_DAYS_KEPT} days apart: usage is kept that long`, 'since');
    }
    let all = await this.sources.controlsAll();
    if (query.source !== undefined) {
      all = all.filter((s) => s.name === query.source);
      if (all.length === 0) throw new ValidationError(`Unknown source ${showValue(query.source)}`, 'source');
    }
    const rows = await (await this.tally()).days(all.map((s) => s.id), fromDay, toDay);
    const sources = all.map((s): SourceUsage => {
      const mine = rows.filter((d) => d.sourceId === s.id).sort((a, b) => a.day - b.day);
      const total = mine.reduce(add, ZERO);
      const days = mine.map((d) => ({
        day: dayText(d.day),
        received: d.received,
        filtered: d.filtered,
        rejected: d.rejected,
        delivered: d.delivered,
        failed: d.failed,
      }));
      return { source: s.name, ...total, days };
    });
    return { since: dayText(fromDay), until: dayText(toDay), sources };
  }
}

/** What the schema routes need. */
export interface SchemaRoutesOptions {
  readonly schema: SchemaAdmin;
}

const NO_STORE = { 'Cache-Control': 'no-store' };

function answer<T>(res: ServerResponse, result: SetupResult<T>): void {
  if (result.ok) send(res, 200, result.value, NO_STORE);
  else fail(res, result.status, result.code, result.message, result.field === undefined ? {} : { field: result.field }, NO_STORE);
}

/** The handlers of `/admin/sources/{name}/schema` (GET, PUT) and `/admin/usage` (http/routes/schema.ts). */
export const SCHEMA_HANDLERS = {
  getSourceSchema: async (o, { params }, _req, res) => answer(res, await o.schema.get(params.name)),
  putSourceSchema: async (o, { params, body }, _req, res) => answer(res, await o.schema.put(params.name, body)),
  // The route's schema refused unknown parameters.
  usage: async (o, { query }, _req, res) => send(res, 200, await o.schema.usage(query), NO_STORE),
} satisfies AdminHandlers<SchemaRoutesOptions>;
