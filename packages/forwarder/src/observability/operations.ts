import createDebug from 'debug';
import type { Clock } from 'eventrelay/internal';
import { NotReplayableError, ValidationError } from 'eventrelay/internal';
import type { RejectedMessage, ValidMessage } from '../routing/ingest';
import { eventOf, INTEGRATIONS_OFF, NO_DESTINATION } from '../routing/router';
import { isPlainObject } from 'eventrelay/internal';
import { HealthTracker } from './health';
import type { EndpointHealth } from './health';
import type { ForwarderMetrics } from './metrics';
import { Timeline } from './timeline';
import type { AttemptReport } from '../scheduling/queue';
import { DUPLICATE_REASON, sameSource } from '../store/delivery-log';
import { orderKeyOf } from '../routing/router';
import type { AcceptedMessage, AcceptResult, DeliveryKind, ForwarderStore, NewDelivery } from '../store/contract';
import { LiveStream } from './stream';
import { ClusterView } from './cluster';
import type { ClusterOverview } from './cluster';
import { UsageTally } from './usage';
import type { ClusterStore, AttemptRecord, AttemptUrl, DeliveryDetail, DeliveryLog, LogCall, LoggedMessage, MessageQuery, ReplayedLine } from '../store/contract';

const log = createDebug('eventrelay:forwarder');

/** How often the queue depth is sampled for the chart, in ms. */
const SAMPLE_INTERVAL = 15_000;

/** The queue, as the operations layer uses it (`runtime/work.ts`). */
export interface QueueAccess {
  /** Stores deliveries and wakes the delivery loop. */
  enqueue(deliveries: readonly NewDelivery[]): Promise<void>;
  stats(): Promise<{ readonly queueDepth: number }>;
}

/** The sources served now, as the operations layer reads them (`registry/table.ts`'s `SourceTable`). */
export interface ServedSources {
  /** Source names, with whether their Webhooks destination is on. */
  readonly webhooksOn: ReadonlyMap<string, boolean>;
  /** The id of the source served under a name now (`SourceRecord.id`); undefined: ids are not kept. */
  incarnation(name: string): string | undefined;
  /** Whether the source delivers in order per user (`ordering: "user"`). */
  deliversInOrder(name: string): boolean;
}

/** The URLs of a source's destination that are disabled (`admin/endpoints.ts`'s `EndpointAdmin`). */
export interface DisabledUrls {
  /** The URLs (as shown: no password, no query) when every one is disabled; else undefined. */
  allDisabled(source: string): readonly string[] | undefined;
}

/** Where a failure in the background goes (the forwarder's `Context`). */
export interface BackgroundErrors {
  backgroundError(error: Error): void;
}

/** The parts the operations layer works with, each built before it, handed over at construction. */
export interface OperationsParts {
  readonly queue: QueueAccess;
  readonly sources: ServedSources;
  readonly endpoints: DisabledUrls;
  /** The open store: the calls an ordered one waits for, the counts of what sources send. */
  readonly store: Pick<ForwarderStore, 'waitingFor' | 'usage'>;
  readonly clock: Clock;
  /** How long a delivered body is kept, in ms (0: erased when delivered). */
  readonly keepDelivered: number;
  readonly errors: BackgroundErrors;
}

/**
 * A replay refused because every URL it would go to is disabled: queued, it would wait there
 * unseen. `urls` as the API shows them (no credentials, no query).
 */
export class EndpointsDisabledError extends NotReplayableError {
  constructor(
    message: string,
    readonly urls: readonly string[],
  ) {
    super(message);
    this.name = 'EndpointsDisabledError';
  }
}

/** The store shared with other instances (PostgreSQL), and this instance's id among them. */
export interface SharedWith {
  readonly store: ClusterStore;
  readonly owner: string;
}

export interface ReplayResult {
  readonly id: number;
  /** The new attempt series. */
  readonly series: number;
  readonly state: 'pending';
}

export interface RecoverResult {
  readonly source: string;
  readonly since: number;
  readonly until: number;
  /** Failed deliveries queued again. */
  readonly queued: number;
}

function userIdOf(message: ValidMessage): string | undefined {
  const webhook = message.webhook as unknown as Record<string, unknown>;
  const id = webhook.userId ?? webhook['User ID'];
  return typeof id === 'string' ? id : undefined;
}

/**
 * Operating the forwarder: the delivery log, the live stream, endpoint health, the per-minute
 * timeline and the Prometheus metrics, fed by the ingestion path and the delivery loop; replay and
 * recovery through the queue. Every hook is cheap when nobody looks: the live stream builds
 * nothing without subscribers (here, or on another instance sharing the store), and the log
 * buffers its writes.
 */
export class Operations {
  /** Relayed through `cluster` (built in the constructor, after it) when there is one. */
  readonly live = new LiveStream(() => this.cluster);
  readonly health = new HealthTracker();
  readonly timeline = new Timeline();
  /** What each source sends and its usage per day, counted here and written in the background. */
  readonly usage: UsageTally;
  /** The other instances' part of the overview and the live stream; undefined on a store of one instance. */
  readonly cluster: ClusterView | undefined;
  private sampler: NodeJS.Timeout | undefined;
  /**
   * Sources deleted while this instance ran, by id: calls of theirs it logs afterwards (accepted
   * before the deletion, logged after this instance applied it) are finished at once.
   */
  private readonly gone = new Map<string, { readonly source: string; readonly reason: string }>();

  private readonly parts: OperationsParts;

  constructor(
    parts: OperationsParts,
    /** Undefined when the log is off (`storage.deliveryLog: false`). */
    readonly log: DeliveryLog | undefined,
    readonly metrics: ForwarderMetrics | undefined,
    shared?: SharedWith,
  ) {
    this.parts = parts;
    const { store, clock, errors } = parts;
    this.usage = new UsageTally({
      store: () => store.usage,
      now: () => clock.now(),
      onError: (error) => errors.backgroundError(error),
      onCount: (source, count, n, rule) => metrics?.usage(source, count, n, rule),
    });
    if (shared !== undefined) {
      this.cluster = new ClusterView(shared.store, shared.owner, this.health, this.timeline, this.live, () => clock.now());
    }
  }

  start(): void {
    this.sampler = setInterval(() => void this.sample(), SAMPLE_INTERVAL);
    this.sampler.unref();
    this.cluster?.start();
  }

  private async sample(): Promise<void> {
    try {
      const { queueDepth } = await this.parts.queue.stats();
      this.timeline.queueDepth(this.parts.clock.now(), queueDepth);
    } catch (error) {
      log('queue depth sample failed: %s', (error as Error).message);
    }
  }

  /**
   * Calls one ingestion request stored; `calls[i]` is the parsed form of `accepted[i]` when known;
   * `sourceId`: the id of the source they were stored for.
   */
  accepted(accepted: readonly AcceptedMessage[], calls: readonly ValidMessage[] | undefined, result: AcceptResult, sourceId?: string): void {
    if (accepted.length === 0) return;
    const source = accepted[0]!.source;
    const at = accepted[0]!.receivedAt;
    this.metrics?.accepted(source, accepted.length, result.duplicates);
    this.timeline.accepted(at, accepted.length);
    this.usage.accepted(sourceId ?? this.parts.sources.incarnation(source), accepted, calls, result.repeated);
    if (this.log === undefined && !this.live.active) return;
    const webhooksOn = this.parts.sources.webhooksOn.get(source) === true;
    // Which messages were repeats: the store says (a log could not always tell: the first call
    // may be on another instance, not written yet).
    const { repeated } = result;
    // One literal per state, every field in it: no spread of a shared part per call.
    const entries: LogCall[] = [];
    for (let i = 0; i < accepted.length; i++) {
      const m = accepted[i]!;
      const call = calls?.[i];
      const type = call?.type;
      const event = call === undefined ? undefined : eventOf(call);
      const userId = call === undefined ? undefined : userIdOf(call);
      if (repeated[i] === true) {
        entries.push({ source: m.source, sourceId, kind: 'message', messageId: m.messageId, type, event, userId, receivedAt: m.receivedAt, body: undefined, state: 'duplicate', reason: DUPLICATE_REASON });
        continue;
      }
      const body = m.deliveries[0]?.body;
      if (body === undefined) {
        // The rule routing named; a caller that names none (an embedding's own accept) gets the older guess.
        const reason = m.filtered?.reason ?? (webhooksOn ? INTEGRATIONS_OFF.reason : NO_DESTINATION.reason);
        entries.push({ source: m.source, sourceId, kind: 'message', messageId: m.messageId, type, event, userId, receivedAt: m.receivedAt, body, state: 'filtered', reason });
        continue;
      }
      entries.push({ source: m.source, sourceId, kind: 'message', messageId: m.messageId, type, event, userId, receivedAt: m.receivedAt, body, state: 'pending' });
    }
    this.log?.add(entries);
    const given = sourceId === undefined || this.gone.size === 0 ? undefined : this.gone.get(sourceId);
    if (given !== undefined) void this.abandoned(given.source, this.parts.clock.now(), given.reason, sourceId);
    if (this.live.active) {
      for (const e of entries) {
        this.live.publish('accepted', source, {
          source,
          messageId: e.messageId,
          type: e.type ?? null,
          event: e.event ?? null,
          userId: e.userId ?? null,
          receivedAt: new Date(e.receivedAt).toISOString(),
          state: e.state,
          body: e.body ?? null,
        });
      }
    }
  }

  /** Calls the ingestion API refused, with why; `body` is the request body they came in. */
  refused(source: string, rejected: readonly RejectedMessage[], receivedAt: number, body?: unknown): void {
    if (rejected.length === 0) return;
    this.metrics?.refused(source, rejected.length);
    this.usage.refused(this.parts.sources.incarnation(source), source, rejected.length, receivedAt);
    if (this.log === undefined && !this.live.active) return;
    const entries: LogCall[] = rejected.map((r) => {
      // What the refused message says of itself, when it is there and plain: for finding it later.
      const raw = isPlainObject(body) && Array.isArray(body.batch) ? body.batch[r.index] : body;
      const own = (field: string) => {
        const value = isPlainObject(raw) ? raw[field] : undefined;
        return typeof value === 'string' && value !== '' && value.length <= 200 ? value : undefined;
      };
      return {
        source,
        kind: 'message',
        messageId: own('messageId') ?? `refused:${receivedAt}:${r.index}`,
        type: own('type'),
        event: own('type') === 'track' ? own('event') : undefined,
        userId: own('userId') ?? own('anonymousId'),
        receivedAt,
        body: undefined,
        state: 'refused',
        reason: `${r.code}${r.field === undefined ? '' : ` (${r.field})`}: ${r.message}`,
      };
    });
    this.log?.add(entries);
    for (const e of entries) {
      this.live.publish('refused', source, { source, messageId: e.messageId, type: e.type ?? null, receivedAt: new Date(receivedAt).toISOString(), reason: e.reason });
    }
  }

  /** Deliveries made by no ingested call: deletion notices and audience identifies. */
  enqueued(deliveries: readonly NewDelivery[]): void {
    if (this.log === undefined || deliveries.length === 0) return;
    this.log.add(
      deliveries.map((d) => {
        let userId: string | undefined;
        try {
          const parsed = JSON.parse(d.body) as { userId?: unknown };
          if (typeof parsed.userId === 'string') userId = parsed.userId;
        } catch {
          // our own serialization: always JSON
        }
        return {
          source: d.source,
          kind: d.kind,
          messageId: d.messageId,
          type: d.kind === 'delete' ? 'delete' : 'identify',
          userId,
          receivedAt: d.createdAt,
          body: d.body,
          state: 'pending' as const,
        };
      }),
    );
  }

  /**
   * A deleted source (`sourceId`: which one of the name): its open log lines are finished as
   * failed (its queued deliveries were given up). A failure is logged; the deletion stands.
   */
  async abandoned(source: string, at: number, reason: string, sourceId?: string): Promise<void> {
    if (sourceId !== undefined) this.gone.set(sourceId, { source, reason });
    await this.log?.abandon(source, at, reason, sourceId).catch((error: Error) => log('could not finish the log lines of deleted source %s: %s', source, error.message));
  }

  /** One finished attempt from the delivery loop. */
  attempt(report: AttemptReport & { readonly createdAt?: number }): void {
    const { result } = report;
    // Nothing was sent (the destination was closing, a rate limit's slot): not an attempt. A
    // delivery given up without a request (no URL's filter takes it any more) is its last one.
    if (result.outcomes.length === 0 && result.status !== 'failed') return;
    const at = this.parts.clock.now();
    const urls = result.outcomes.map((o) => ({
      url: o.url,
      status: o.status ?? null,
      error: o.status === undefined ? (o.error?.code ?? 'error') : null,
      durationMs: o.durationMs,
      // The answer's first bytes, as read: the log decodes them when it writes them.
      response: o.response,
    }));
    if (report.kind === 'batch') {
      // A batch's request: its URL's answer counts here, once; each call in it has a report of its own.
      this.recordHealth(report.source, urls, at);
      this.metrics?.requests(report.source, urls);
      return;
    }
    if (result.status !== 'retry' && report.kind === 'message' && report.stale !== true) {
      this.usage.finished(this.parts.sources.incarnation(report.source), report.source, result.status, at);
    }
    // A literal per outcome, with exactly its fields: no spread per attempt.
    const { source, messageId } = report;
    const record: AttemptRecord =
      result.status === 'delivered'
        ? { source, messageId, attempt: result.attempt, at, outcome: 'delivered', urls }
        : result.status === 'failed'
          ? { source, messageId, attempt: result.attempt, at, outcome: 'failed', reason: result.reason, urls }
          : { source, messageId, attempt: result.attempt, at, outcome: 'retry', nextAttemptAt: result.nextAttemptAt, urls };
    // An outcome the store refused (the delivery was given up with its deleted source, or finished
    // through another claim) must not reopen or rewrite a line that is already finished. One it
    // wrote for a deleted source (delivered by an attempt in flight at the deletion) is logged.
    if (report.stale !== true) this.log?.attempt(record);
    // A call sent in a batch: its batch's report counted the request (see above).
    const inBatch = report.batch !== undefined;
    if (!inBatch) this.recordHealth(report.source, urls, at);
    this.metrics?.attempt(report.source, result.status, inBatch ? [] : urls, report.createdAt, at);
    if (result.status !== 'retry') this.timeline.finished(at, result.status);
    if (this.live.active) {
      this.live.publish('attempt', report.source, {
        source: report.source,
        messageId: report.messageId,
        kind: report.kind,
        attempt: result.attempt,
        outcome: result.status,
        at: new Date(at).toISOString(),
        urls: urls.map(({ url, status, error, durationMs }) => ({ url, status, error, durationMs })),
        ...(result.status === 'failed' ? { reason: result.reason } : {}),
        ...(result.status === 'retry' ? { nextAttemptAt: new Date(result.nextAttemptAt).toISOString() } : {}),
      });
    }
  }

  /** Each URL's answer in one request, for its health. */
  private recordHealth(source: string, urls: readonly Pick<AttemptUrl, 'url' | 'status' | 'error' | 'durationMs'>[], at: number): void {
    for (const u of urls) this.health.record(source, u.url, at, u.status !== null && u.status >= 200 && u.status < 300, u.status, u.error, u.durationMs);
  }

  private requireLog(): DeliveryLog {
    if (this.log === undefined) {
      throw new NotReplayableError('The delivery log is off (`storage.deliveryLog: false`): there is nothing to look up or replay');
    }
    return this.log;
  }

  async messages(query: MessageQuery): Promise<LoggedMessage[]> {
    const rows = await this.requireLog().list(query);
    return rows.map((row) => this.visible(row));
  }

  async delivery(id: number): Promise<DeliveryDetail | undefined> {
    const entry = await this.requireLog().get(id);
    return entry === undefined ? undefined : this.visible(entry);
  }

  /**
   * For a pending or retrying call of a source in order per user: the older call of the same user
   * it waits for (its log line id, null when the log no longer has it), or null.
   */
  async waitingBehind(entry: LoggedMessage): Promise<{ id: number | null; messageId: string } | null> {
    if (entry.state !== 'pending' && entry.state !== 'retrying') return null;
    const messageId = await this.parts.store.waitingFor(entry.source, entry.messageId);
    if (messageId === undefined) return null;
    const [line] = await this.requireLog().list({ source: entry.source, messageId, limit: 1 });
    return { id: line?.id ?? null, messageId };
  }

  /** The user key of a call of `source` queued again (replay, recover), when the source is in order per user. */
  private orderKey(source: string, kind: DeliveryKind, body: string): string | undefined {
    if (kind !== 'message' || !this.parts.sources.deliversInOrder(source)) return undefined;
    try {
      return orderKeyOf(JSON.parse(body) as Record<string, unknown>);
    } catch {
      return undefined;
    }
  }

  /** A delivered body past `keepDelivered` is no longer shown, even before the next prune erases it. */
  private visible<T extends LoggedMessage>(entry: T): T {
    if (entry.state !== 'delivered' || !entry.hasBody || entry.finishedAt === null) return entry;
    if (entry.finishedAt >= this.parts.clock.now() - this.parts.keepDelivered) return entry;
    return 'body' in entry ? { ...entry, hasBody: false, body: null } : { ...entry, hasBody: false };
  }

  /**
   * Queues a delivery again: failed, or delivered while its body is kept. A new attempt series
   * with a new retry window, the same messageId (receivers that deduplicate drop a delivered one).
   */
  async replay(id: number): Promise<ReplayResult | undefined> {
    const entry = await this.delivery(id);
    if (entry === undefined) return undefined;
    this.checkReplayable(entry);
    const now = this.parts.clock.now();
    // Marked first, atomically: of several replays at once (on any instance) one goes on.
    const [line] = await this.requireLog().replay([id], now);
    if (line === undefined) throw new NotReplayableError(`Delivery ${id} cannot be replayed: it was replayed a moment ago and is pending again`);
    const body = entry.body!;
    const delivery: NewDelivery = { source: entry.source, destination: 'Webhooks', kind: entry.kind, messageId: entry.messageId, body, createdAt: now, orderKey: this.orderKey(entry.source, entry.kind, body) };
    await this.queueAgain([line], [delivery]);
    this.live.publish('replayed', entry.source, { source: entry.source, messageId: entry.messageId, id, series: line.series });
    log('delivery %d of source %s replayed', id, entry.source);
    return { id, series: line.series, state: 'pending' };
  }

  /** Queues the deliveries of lines just marked replayed; if that fails, the lines are put back and the error thrown. */
  private async queueAgain(lines: readonly ReplayedLine[], deliveries: readonly NewDelivery[]): Promise<void> {
    try {
      await this.parts.queue.enqueue(deliveries);
    } catch (error) {
      await this.log!.unreplay(lines).catch((undo: Error) => log('could not put back %d replayed log lines: %s', lines.length, undo.message));
      throw error;
    }
  }

  private checkReplayable(entry: DeliveryDetail): void {
    const why = (text: string) => new NotReplayableError(`Delivery ${entry.id} cannot be replayed: ${text}`);
    switch (entry.state) {
      case 'pending':
      case 'retrying':
        throw why(`it is ${entry.state} (queued already)`);
      case 'filtered':
      case 'duplicate':
      case 'refused':
        throw why(`it was ${entry.state}, nothing was to be delivered`);
      case 'delivered':
        if (entry.body === null) throw why('it was delivered and its body erased; set `storage.keepDelivered` to keep delivered bodies for a while');
        break;
      case 'failed':
        if (entry.body === null) throw why('its body is no longer stored');
        break;
    }
    if (this.parts.sources.webhooksOn.get(entry.source) !== true) throw why(`the source ${JSON.stringify(entry.source)} has no Webhooks destination switched on now`);
    if (!sameSource(entry.sourceId, this.parts.sources.incarnation(entry.source))) {
      throw why(`the source that sent it was deleted; the source named ${JSON.stringify(entry.source)} now is another one`);
    }
    const disabled = this.parts.endpoints.allDisabled(entry.source);
    if (disabled !== undefined) {
      const source = JSON.stringify(entry.source);
      throw new EndpointsDisabledError(
        `Delivery ${entry.id} cannot be replayed: every URL of the source ${source} is disabled (${disabled.join(', ')}); ` +
        `enable one first: \`eventrelay endpoints --source ${entry.source} --enable <URL>\`, or POST /admin/sources/{name}/destinations/Webhooks/endpoints/enable { "url" }`,
        disabled,
      );
    }
  }

  /** Queues again every failed delivery of `source` received in [since, until). */
  async recover(source: string, since: number, until: number): Promise<RecoverResult> {
    if (!this.parts.sources.webhooksOn.has(source)) throw new ValidationError(`Unknown source ${JSON.stringify(source)}`, 'source');
    if (this.parts.sources.webhooksOn.get(source) !== true) throw new NotReplayableError(`The source ${JSON.stringify(source)} has no Webhooks destination switched on`);
    // Those of the source served under the name now: not of a deleted one of the same name.
    const failed = await this.requireLog().failed(source, since, until, this.parts.sources.incarnation(source));
    if (failed.length === 0) return { source, since, until, queued: 0 };
    const now = this.parts.clock.now();
    // Marked first, atomically: a line another recovery or replay took at the same time is left out.
    const lines = await this.requireLog().replay(failed.map((d) => d.id), now);
    const taken = new Set(lines.map((l) => l.id));
    const deliveries = failed
      .filter((d) => taken.has(d.id))
      .map((d): NewDelivery => ({ source, destination: 'Webhooks', kind: d.kind, messageId: d.messageId, body: d.body!, createdAt: now, orderKey: this.orderKey(source, d.kind, d.body!) }));
    if (deliveries.length > 0) await this.queueAgain(lines, deliveries);
    log('recovered %d failed deliveries of source %s', deliveries.length, source);
    return { source, since, until, queued: deliveries.length };
  }

  hasSource(name: string): boolean {
    return this.parts.sources.webhooksOn.has(name);
  }

  /** This instance's endpoint health (`/stats`). */
  endpoints(): EndpointHealth[] {
    return this.health.snapshot(this.parts.clock.now());
  }

  /** Endpoint health and the chart over every instance sharing the store (this one alone on others). */
  async overview(): Promise<ClusterOverview> {
    await this.sample();
    if (this.cluster !== undefined) return this.cluster.overview();
    const now = this.parts.clock.now();
    return { instances: 1, endpoints: this.health.snapshot(now), chart: this.timeline.points(now) };
  }

  async prune(before: number): Promise<number> {
    return this.log === undefined ? 0 : this.log.prune(before, this.parts.clock.now());
  }

  async close(): Promise<void> {
    clearInterval(this.sampler);
    await this.usage.close();
    await this.cluster?.close();
    this.live.close();
    await this.log?.close();
  }
}
