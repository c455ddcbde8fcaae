import type { ResolvedWebhooks } from '../config';
import type { WebhookDestination } from '../delivery/destination';
import { AllowedOrigins } from '../routing/origins';
import type { RouteSource } from '../routing/router';
import type { DeliveryTarget, DeliveryTargets } from '../delivery/target';
import { keyValid, writeKeyDigest } from './keys';
import { compileRules } from '../schema-rules';
import type { SetupSnapshot, SourceRecord, WriteKeyRecord } from '../store/contract';

interface Entry {
  readonly record: SourceRecord;
  readonly route: RouteSource;
  /** Built from the settings, on or off (the test route sends through it either way). */
  readonly destination: WebhookDestination | undefined;
  /** The settings as JSON (secrets included; kept in memory only): a change makes a new destination. */
  readonly fingerprint: string | undefined;
}

/** A route's origins and ingestion limit from its record; the previous route's origins when they did not change. */
function webSettings(record: SourceRecord, old: Entry | undefined): Pick<RouteSource, 'origins' | 'ingestRateLimit'> {
  const list = record.settings?.allowedOrigins;
  const same = old !== undefined && JSON.stringify(old.record.settings?.allowedOrigins) === JSON.stringify(list);
  const origins = list === undefined ? undefined : same && old.route.origins !== undefined ? old.route.origins : new AllowedOrigins(list);
  const limit = record.settings?.ingestRateLimit;
  return { ...(origins === undefined ? {} : { origins }), ...(limit === undefined ? {} : { ingestRateLimit: limit }) };
}

/** The `SourceRecord.id` of the config file's sources before the store opens: not stored yet. */
export const UNSTORED = '';

/** Makes the destination of a source's settings; throws ConfigError for settings it cannot use. */
export type DestinationFactory = (name: string, settings: ResolvedWebhooks) => WebhookDestination;

/**
 * The sources this instance serves now, built from the store's setup: write key digests to
 * sources, routes, and a `WebhookDestination` per source with settings. `apply` replaces it with a
 * newer snapshot; a source whose settings did not change keeps its destination (and its sockets),
 * a changed one gets a new destination and the old one is handed back to be closed once its
 * attempts in flight finish. It is also the scheduler's list of delivering sources.
 */
export class SourceTable implements DeliveryTargets {
  private entries = new Map<string, Entry>();
  private keys = new Map<string, WriteKeyRecord>();
  private delivering: readonly string[] = [];
  /** Source names and whether their destination is on, made once per snapshot (read per call and attempt). */
  private onByName: ReadonlyMap<string, boolean> = new Map();
  /** The union of every source's allowed origins: what preflights, which name no source, are answered for. */
  preflightOrigins: AllowedOrigins = AllowedOrigins.NONE;
  /** The revision of the snapshot applied last; -1 before the first. */
  revision = -1;

  constructor(
    private readonly makeDestination: DestinationFactory,
    /** Called with a source whose stored settings cannot make a destination (it is then off). */
    private readonly onBadSettings: (name: string, error: Error) => void,
    /** Test seam: targets by source name, used instead of the destinations. */
    private readonly override?: ReadonlyMap<string, DeliveryTarget>,
    /** Names in the order they are listed: the config file's first, as written; then by creation. */
    private readonly fileOrder: readonly string[] = [],
  ) {}

  private ordered(sources: readonly SourceRecord[]): SourceRecord[] {
    const rank = (name: string) => {
      const i = this.fileOrder.indexOf(name);
      return i < 0 ? this.fileOrder.length : i;
    };
    return [...sources].sort((a, b) => rank(a.name) - rank(b.name) || a.createdAt - b.createdAt || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /**
   * Replaces the sources with those of `snapshot` (unless it is older than the one applied).
   * Returns the destinations no longer used, for the caller to close.
   */
  apply(snapshot: SetupSnapshot): WebhookDestination[] {
    if (snapshot.revision < this.revision) return [];
    const retired: WebhookDestination[] = [];
    const next = new Map<string, Entry>();
    for (const record of this.ordered(snapshot.sources)) {
      const old = this.entries.get(record.name);
      const settings = record.webhooks === undefined ? undefined : { ...record.webhooks, enabled: record.enabled };
      const fingerprint = record.webhooks === undefined ? undefined : JSON.stringify(record.webhooks);
      let destination: WebhookDestination | undefined;
      if (old !== undefined && old.fingerprint === fingerprint) destination = old.destination;
      else {
        if (old?.destination !== undefined) retired.push(old.destination);
        if (settings !== undefined) {
          try {
            destination = this.makeDestination(record.name, settings);
          } catch (error) {
            this.onBadSettings(record.name, error as Error);
          }
        }
      }
      const webhooksOn = record.enabled && destination !== undefined;
      const ordered = record.webhooks?.ordering === 'user';
      const web = webSettings(record, old);
      // The schema controls and the URLs' filters, compiled once per snapshot (asked per call).
      const rules = compileRules(record.schema, record.webhooks);
      const base = { name: record.name, webhooksOn, ordered, rules, ...web };
      const route = record.id === UNSTORED ? base : { ...base, id: record.id };
      next.set(record.name, { record, destination, fingerprint, route });
    }
    for (const [name, old] of this.entries) if (!next.has(name) && old.destination !== undefined) retired.push(old.destination);
    this.entries = next;
    this.keys = new Map(snapshot.keys.map((k) => [k.digest, k]));
    this.delivering = [...next.values()].filter((e) => e.route.webhooksOn && this.get(e.record.name) !== undefined).map((e) => e.record.name);
    this.onByName = new Map([...next.values()].map((e) => [e.record.name, e.route.webhooksOn]));
    this.preflightOrigins = AllowedOrigins.union([...next.values()].flatMap((e) => (e.route.origins === undefined ? [] : [e.route.origins])));
    this.revision = snapshot.revision;
    return retired;
  }

  /** The source a presented write key belongs to, if the key is valid at `now`. */
  sourceForKey(key: string, now: number): RouteSource | undefined {
    const found = this.keys.get(writeKeyDigest(key));
    if (found === undefined || !keyValid(found, now)) return undefined;
    return this.entries.get(found.source)?.route;
  }

  /** Every source, by name. */
  get routes(): RouteSource[] {
    return [...this.entries.values()].map((e) => e.route);
  }

  get names(): string[] {
    return [...this.entries.keys()];
  }

  /** Source names, each with whether its Webhooks destination is on. */
  get webhooksOn(): ReadonlyMap<string, boolean> {
    return this.onByName;
  }

  record(name: string): SourceRecord | undefined {
    return this.entries.get(name)?.record;
  }

  /** Whether the source delivers in order per user (`ordering: "user"`). */
  deliversInOrder(name: string): boolean {
    return this.entries.get(name)?.record.webhooks?.ordering === 'user';
  }

  /** The source's keys, oldest first (expired ones included). */
  keysOf(name: string): WriteKeyRecord[] {
    return [...this.keys.values()].filter((k) => k.source === name).sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
  }

  /** The destination of a source's settings, on or off. */
  destination(name: string): WebhookDestination | undefined {
    return this.entries.get(name)?.destination;
  }

  /** Sources whose Webhooks destination is on: the scheduler claims for these only. */
  get sources(): readonly string[] {
    return this.delivering;
  }

  /** The id of the source served under `source` now (see `SourceRecord.id`); undefined for none. */
  incarnation(source: string): string | undefined {
    return this.entries.get(source)?.record.id;
  }

  get(source: string): DeliveryTarget | undefined {
    const entry = this.entries.get(source);
    if (entry === undefined || !entry.route.webhooksOn) return undefined;
    return this.override !== undefined ? this.override.get(source) : entry.destination;
  }

  /** Every destination, for closing at shutdown. */
  destinations(): WebhookDestination[] {
    return [...this.entries.values()].flatMap((e) => (e.destination === undefined ? [] : [e.destination]));
  }
}
