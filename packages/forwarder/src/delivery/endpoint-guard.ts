import createDebug from 'debug';
import { redactUrl } from 'eventrelay/internal';
import type { Clock } from 'eventrelay/internal';
import { GONE } from './destination';
import type { AttemptResult, AttemptState, CallParts } from './destination';
import type { BatchSettings } from '../batch-body';
import type { DeliveryTarget, DeliveryTargets } from './target';
import { rateKey } from './rate-limit';
import type { DisableRule, EndpointReport, EndpointState, EndpointStore } from '../store/contract';

const log = createDebug('eventrelay:forwarder');

/** How long attempts' outcomes are gathered before they are written, in ms. */
const REPORT_DELAY = 200;
/** How often an instance on a shared store reads the states others wrote, in ms. */
const POLL_INTERVAL = 1000;

/** A URL of a source's destination: its key in the states and how it is shown. */
export interface EndpointUrl {
  readonly key: string;
  readonly url: string;
}

/** A URL disabled or enabled (by this instance). */
export interface EndpointChange {
  readonly type: 'endpoint.disabled' | 'endpoint.enabled';
  readonly state: EndpointState;
  /** When it happened, epoch ms. */
  readonly at: number;
}

/** The URLs of a source's settings, in order; `webhooks` is the stored settings object (cached by identity). */
export type WebhooksOf = (source: string) => { readonly webhooks: readonly { readonly url: string }[] } | undefined;

interface Pending {
  source: string;
  key: string;
  url: string;
  reset: boolean;
  failures: number;
  firstFailureAt?: number;
  lastFailureAt?: number;
  lastError?: string;
  gone?: boolean;
}

const NONE: readonly number[] = Object.freeze([]);

function showUrl(url: string): string {
  try {
    return redactUrl(new URL(url));
  } catch {
    return '(a URL that does not parse)';
  }
}

/**
 * Which URLs are disabled, for every instance: a cache of the store's endpoint states, fed by the
 * outcomes of attempts (gathered for 200 ms, then written in one transaction; a success costs
 * nothing unless it ends a run of failures) and, on a shared store, read again every second. A
 * URL the rule disables is reported once, by the instance whose write disabled it.
 */
export class EndpointGuard {
  private states = new Map<string, EndpointState>();
  private pending = new Map<string, Pending>();
  private timer: NodeJS.Timeout | undefined;
  private poller: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  private readonly urlCache = new WeakMap<object, readonly EndpointUrl[]>();
  /** Bumped whenever a URL is disabled or enabled: cached views are made again. */
  version = 0;
  private closed = false;

  constructor(
    private readonly store: () => EndpointStore,
    private readonly rule: DisableRule,
    private readonly clock: Clock,
    /** A URL this instance disabled or enabled. */
    private readonly onChange: (change: EndpointChange) => void,
    /** The disabled URLs changed (here or, read from a shared store, elsewhere): the scheduler looks again. */
    private readonly onStates: () => void = () => {},
  ) {}

  private id(source: string, key: string): string {
    return `${source}\n${key}`;
  }

  /** Reads the states from the store; on a shared store, again every second. */
  async load(shared: boolean): Promise<void> {
    await this.read();
    if (shared && this.poller === undefined && !this.closed) {
      this.poller = setInterval(() => {
        this.read().catch((error: Error) => log('endpoint states: read failed: %s', error.message));
      }, POLL_INTERVAL);
      this.poller.unref();
    }
  }

  private async read(): Promise<void> {
    const list = await this.store().list();
    const next = new Map(list.map((s) => [this.id(s.source, s.key), s]));
    let changed = next.size !== this.states.size;
    for (const [id, state] of next) if (this.states.get(id)?.disabledAt !== state.disabledAt) changed = true;
    this.states = next;
    if (changed) {
      this.version++;
      this.onStates();
    }
  }

  /** The URLs of a source's settings, with their keys (computed once per settings object). */
  urlsOf(source: string, webhooks: { readonly webhooks: readonly { readonly url: string }[] }): readonly EndpointUrl[] {
    let urls = this.urlCache.get(webhooks);
    if (urls === undefined) {
      urls = webhooks.webhooks.map((w) => ({ key: rateKey(source, w.url), url: showUrl(w.url) }));
      this.urlCache.set(webhooks, urls);
    }
    return urls;
  }

  state(source: string, key: string): EndpointState | undefined {
    return this.states.get(this.id(source, key));
  }

  isDisabled(source: string, key: string): boolean {
    return this.states.get(this.id(source, key))?.disabledAt !== undefined;
  }

  /** Positions of the disabled URLs among `urls` (the same empty list while none is known). */
  disabledIndexes(source: string, urls: readonly EndpointUrl[]): readonly number[] {
    if (this.states.size === 0) return NONE;
    const out: number[] = [];
    urls.forEach((u, i) => {
      if (this.isDisabled(source, u.key)) out.push(i);
    });
    return out;
  }

  /** Disabled URLs per source, for the metric. */
  disabledCounts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const s of this.states.values()) if (s.disabledAt !== undefined) counts.set(s.source, (counts.get(s.source) ?? 0) + 1);
    return counts;
  }

  /** Notes the outcome of each URL of an attempt; written within 200 ms. */
  record(source: string, urls: readonly EndpointUrl[], result: AttemptResult): void {
    if (this.closed || result.outcomes.length === 0) return;
    // Delivered with no failure anywhere on record: nothing to write (the usual case, every attempt).
    if (result.status === 'delivered' && this.pending.size === 0 && this.states.size === 0 && result.outcomes.length === 1) return;
    const at = this.clock.now();
    for (const outcome of result.outcomes) {
      const url = urls[outcome.index];
      if (url === undefined) continue;
      const id = this.id(source, url.key);
      let p = this.pending.get(id);
      if (outcome.error === undefined) {
        // A success only matters when it ends a run of failures.
        if (p === undefined && this.states.get(id)?.failingSince === undefined) continue;
        p ??= { source, key: url.key, url: url.url, reset: false, failures: 0 };
        p.reset = true;
        p.failures = 0;
        p.firstFailureAt = undefined;
        p.lastFailureAt = undefined;
        p.lastError = undefined;
        p.gone = undefined;
      } else {
        p ??= { source, key: url.key, url: url.url, reset: false, failures: 0 };
        p.failures++;
        p.firstFailureAt ??= at;
        p.lastFailureAt = at;
        p.lastError = outcome.status !== undefined ? `HTTP ${outcome.status}: ${outcome.error.message}` : `${outcome.error.code}: ${outcome.error.message}`;
        // 410 Gone: the URL is disabled at once, with the notice of any disabled URL.
        if (outcome.status === GONE) p.gone = true;
      }
      this.pending.set(id, p);
    }
    if (this.pending.size > 0 && this.timer === undefined) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.flush();
      }, REPORT_DELAY);
      this.timer.unref();
    }
  }

  /** Writes what was gathered; resolves once written (failures are logged, never thrown). */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const reports: EndpointReport[] = [...this.pending.values()].map((p) => ({ ...p }));
    this.pending.clear();
    if (reports.length === 0) return this.writing;
    this.writing = this.writing.then(async () => {
      try {
        const { states, disabled } = await this.store().report(reports, this.rule);
        for (const s of states) this.states.set(this.id(s.source, s.key), s);
        if (disabled.length === 0) return;
        this.version++;
        for (const s of disabled) {
          log('endpoint %s of source %s disabled: %s', s.url, s.source, s.disabledReason);
          this.onChange({ type: 'endpoint.disabled', state: s, at: s.disabledAt ?? this.clock.now() });
        }
        this.onStates();
      } catch (error) {
        log('endpoint states: could not write %d reports: %s', reports.length, (error as Error).message);
      }
    });
    return this.writing;
  }

  /** Enables a URL; its state before, when it was disabled (undefined: it was not). */
  async enable(source: string, url: EndpointUrl): Promise<EndpointState | undefined> {
    await this.flush();
    const at = this.clock.now();
    const before = await this.store().enable(source, url.key, at);
    const id = this.id(source, url.key);
    const current = this.states.get(id);
    if (current !== undefined) this.states.set(id, { ...current, failures: 0, failingSince: undefined, disabledAt: undefined, disabledReason: undefined });
    if (before === undefined) return undefined;
    this.version++;
    log('endpoint %s of source %s enabled', url.url, source);
    this.onChange({ type: 'endpoint.enabled', state: before, at });
    this.onStates();
    return before;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.poller);
    await this.flush();
  }
}

/** A delivery target whose disabled URLs are skipped, and whose outcomes feed the guard. */
class GuardedTarget implements DeliveryTarget {
  constructor(
    private readonly source: string,
    private readonly target: DeliveryTarget,
    private readonly urls: () => readonly EndpointUrl[],
    private readonly guard: EndpointGuard,
    private readonly clock: Clock,
  ) {}

  async attempt(body: string, state: AttemptState): Promise<AttemptResult> {
    const urls = this.urls();
    const skip = this.guard.disabledIndexes(this.source, urls);
    // Every URL disabled since the claim: nothing sent, not an attempt; it waits as when switched off.
    if (skip.length > 0 && skip.length >= urls.length) return { status: 'retry', attempt: state.attempt, nextAttemptAt: this.clock.now(), outcomes: [] };
    const result = await this.target.attempt(body, skip.length === 0 ? state : { ...state, skip });
    this.guard.record(this.source, urls, result);
    return result;
  }

  get batches(): readonly (BatchSettings | undefined)[] | undefined {
    return this.target.batches;
  }

  /** A call's parts, its disabled URLs left out (each part goes to a URL that is on). */
  parts(body: string, state: AttemptState): Promise<CallParts> {
    const skip = this.guard.disabledIndexes(this.source, this.urls());
    return this.target.parts!(body, skip.length === 0 ? state : { ...state, skip });
  }

  /** A batch's attempt: nothing sent while its URL is disabled (it waits); its answer feeds the guard. */
  async attemptBatch(index: number, body: string, state: AttemptState): Promise<AttemptResult> {
    const urls = this.urls();
    const skip = this.guard.disabledIndexes(this.source, urls);
    const result = await this.target.attemptBatch!(index, body, skip.length === 0 ? state : { ...state, skip });
    this.guard.record(this.source, urls, result);
    return result;
  }

  room(now: number, wanted: number): { readonly count: number; readonly readyAt?: number } {
    if (this.target.room === undefined) return { count: wanted };
    const skip = this.guard.disabledIndexes(this.source, this.urls());
    return this.target.room(now, wanted, skip.length === 0 ? undefined : skip);
  }
}

/**
 * The scheduler's targets with endpoint protection: a source whose every URL is disabled is left
 * out (its deliveries wait, as when its destination is switched off), the others skip their
 * disabled URLs; `extra` adds a target of the forwarder's own (the notices).
 */
export class GuardedTargets implements DeliveryTargets {
  private readonly wrapped = new Map<string, { readonly target: DeliveryTarget; readonly guarded: GuardedTarget }>();
  private cached: { inner: readonly string[]; version: number; extra: boolean; sources: readonly string[] } | undefined;

  constructor(
    private readonly inner: DeliveryTargets,
    private readonly webhooksOf: WebhooksOf,
    private readonly guard: EndpointGuard,
    private readonly clock: Clock,
    private readonly extra?: { readonly name: string; readonly target: () => DeliveryTarget | undefined },
  ) {}

  private urls(source: string): readonly EndpointUrl[] {
    const webhooks = this.webhooksOf(source);
    return webhooks === undefined ? [] : this.guard.urlsOf(source, webhooks);
  }

  /** The inner targets' (the source served under the name now); the notice source has none. */
  incarnation(source: string): string | undefined {
    return this.inner.incarnation?.(source);
  }

  /** Read on every round of the scheduler: made again only when the sources or the disabled URLs changed. */
  get sources(): readonly string[] {
    const inner = this.inner.sources;
    const extra = this.extra !== undefined && this.extra.target() !== undefined;
    const cached = this.cached;
    if (cached !== undefined && cached.inner === inner && cached.version === this.guard.version && cached.extra === extra) return cached.sources;
    const open = inner.filter((source) => {
      const urls = this.urls(source);
      return urls.length === 0 || this.guard.disabledIndexes(source, urls).length < urls.length;
    });
    const sources = extra ? [...open, this.extra!.name] : open;
    this.cached = { inner, version: this.guard.version, extra, sources };
    return sources;
  }

  get(source: string): DeliveryTarget | undefined {
    if (this.extra !== undefined && source === this.extra.name) return this.extra.target();
    const target = this.inner.get(source);
    if (target === undefined) return undefined;
    const known = this.wrapped.get(source);
    if (known !== undefined && known.target === target) return known.guarded;
    const guarded = new GuardedTarget(source, target, () => this.urls(source), this.guard, this.clock);
    this.wrapped.set(source, { target, guarded });
    return guarded;
  }
}
