import createDebug from 'debug';
import { Analytics as Client } from '../../client/analytics';
import { Emitter } from '../../client/emitter';
import { ClientClosedError, EventRelayError, SpoolError, ValidationError } from '../../errors';
import { isPlainObject } from '../../internal/values';
import { VERSION } from '../../version';
import { Context, ContextCancelation } from './context';
import { EmittingTransport } from './http-client';
import { resolveSettings } from './settings';
import type {
  AliasParams,
  AnalyticsSettings,
  Callback,
  CloseAndFlushParams,
  DeliveryFailure,
  FlushParams,
  GroupParams,
  IdentifyParams,
  PageParams,
  Plugin,
  SegmentEmitterEvents,
  SegmentEvent,
  SegmentEventType,
  TrackParams,
} from './types';

const log = createDebug('analytics');

/** How long an async callback may hold `flush`/`closeAndFlush`, as in Segment's SDK. */
const CALLBACK_WAIT_MS = 1000;

type Params = Record<string, unknown>;

/** The event a call makes, with Segment's defaults (`properties`/`traits` `{}`, `timestamp` now). */
function makeEvent(type: SegmentEventType, p: Params): SegmentEvent {
  const integrations = p.integrations;
  const event: SegmentEvent = {
    type,
    messageId: typeof p.messageId === 'string' && p.messageId !== '' ? p.messageId : globalThis.crypto.randomUUID(),
    timestamp: (p.timestamp as Date | string | undefined) ?? new Date(),
    context: (p.context as Params | undefined) ?? {},
    integrations: isPlainObject(integrations) ? { ...(integrations as SegmentEvent['integrations']) } : {},
    userId: p.userId as string | undefined,
    anonymousId: p.anonymousId as string | undefined,
  };
  // Anything other than what `isPlainObject` accepts is left for the client's validation to refuse.
  if (integrations !== undefined && !isPlainObject(integrations)) event.integrations = integrations as SegmentEvent['integrations'];
  switch (type) {
    case 'track':
      event.event = p.event as string;
      event.properties = (p.properties as Params | undefined) ?? {};
      break;
    case 'page':
    case 'screen': {
      const properties = p.properties;
      event.properties = isPlainObject(properties) ? { ...properties } : properties === undefined ? {} : (properties as Params);
      if (p.name !== undefined && p.name !== null) event.name = p.name as string;
      if (p.category !== undefined && p.category !== null) {
        event.category = p.category as string;
        if (type === 'page' && isPlainObject(event.properties)) event.properties.category = p.category;
      }
      break;
    }
    case 'identify':
      event.traits = (p.traits as Params | undefined) ?? {};
      break;
    case 'group':
      event.groupId = p.groupId as string;
      event.traits = (p.traits as Params | undefined) ?? {};
      break;
    case 'alias':
      event.previousId = p.previousId as string;
      break;
  }
  return event;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/** Runs one plugin hook; resolves with the context it returned, or the error it threw. */
async function runHook(plugin: Plugin, ctx: Context): Promise<Context | Error | ContextCancelation> {
  const hook = plugin[ctx.event.type];
  if (typeof hook !== 'function') return ctx;
  try {
    const result = await hook.call(plugin, ctx);
    return result instanceof Context ? result : ctx;
  } catch (error) {
    ctx.log('error', 'plugin Error', { plugin: plugin.name });
    return error instanceof Error || error instanceof ContextCancelation ? error : new Error(String(error));
  }
}

function cancellationError(plugin: Plugin, outcome: Error | ContextCancelation): Error {
  if (outcome instanceof Error) return outcome;
  return new EventRelayError(`The ${plugin.name} plugin cancelled the event: ${outcome.reason || outcome.type}`, 'ERR_PLUGIN_CANCELLED', {
    cause: outcome,
  });
}

/**
 * The public API of `@segment/analytics-node` 3.x on eventrelay's engine: the same settings,
 * calls, callbacks `(err, ctx)`, events and plugins; eventrelay's batching, 32 KB / 500 KB
 * limits, transport and retry policy underneath. A call never throws: a bad one gets a typed
 * error in its callback and an `error` event.
 *
 * Its events come from the client's own emitter, not `node:events` (which Workers and Vercel
 * Edge lack): Segment's `on`, `once`, `off`, `emit` and `maxListeners`, and Node's other
 * listener methods besides.
 */
export class Analytics extends Emitter<SegmentEmitterEvents> {
  static {
    // The bundle renames the class beside eventrelay's own `Analytics`; users see this name in logs.
    Object.defineProperty(this, 'name', { value: 'Analytics' });
  }

  /**
   * Listeners one event may have before a console warning of a likely leak (once per client),
   * as Segment's emitter warns; 0 never warns. Default 10.
   */
  maxListeners = 10;
  private leakWarned = false;

  /** Resolves when the plugins given so far are loaded (there are none at first). */
  readonly ready: Promise<void> = Promise.resolve();
  private readonly client: Client;
  private readonly closeTimeout: number;
  private plugins: Plugin[] = [];
  /** Registrations under way: events wait for them, as Segment's "critical tasks". */
  private readonly registrations = new Set<Promise<void>>();
  /** Calls that went through plugins and are not finished. */
  private readonly pipelines = new Set<Promise<void>>();
  /** Callbacks that returned a promise, waited for (up to 1 s) by flush and close. */
  private readonly callbackWaits = new Set<Promise<void>>();
  /** Calls accepted and not finished; `drained` is emitted when it falls to 0. */
  private pendingCalls = 0;
  private flushing = 0;
  /** Calls in plugins that have not reached the client yet. */
  private inPlugins = 0;
  private closed = false;
  private closing: Promise<void> | undefined;

  constructor(settings: AnalyticsSettings) {
    super();
    const resolved = resolveSettings(settings, (transport) => new EmittingTransport(transport, this));
    this.client = new Client(resolved.options);
    // The disk spool's own news (eventrelay extras): what it took over, and what it could not do.
    this.client.on('recover', (info) => this.safeEmit('recover', info));
    this.client.on('error', (error) => {
      if (error instanceof SpoolError) this.emitError({ code: 'spool_failure', reason: error });
    });
    this.closeTimeout = resolved.closeTimeout;
    this.emit('initialize', settings);
  }

  /** A listener added for every call or request, and never removed, is a leak worth a word (Segment warns too). */
  protected override listenerAdded(event: string, count: number): void {
    if (this.leakWarned || !(this.maxListeners > 0) || count <= this.maxListeners) return;
    this.leakWarned = true;
    const advice = 'is one added per call or per request and never removed? Raise `maxListeners` if they are all needed.';
    console.warn(`eventrelay/segment: ${count} listeners for "${event}", more than maxListeners (${this.maxListeners}): ${advice}`);
  }

  /** The package version (eventrelay's, which this layer ships in). */
  get VERSION(): string {
    return VERSION;
  }

  alias(params: AliasParams, callback?: Callback): void {
    this.dispatch('alias', params, callback);
  }

  group(params: GroupParams, callback?: Callback): void {
    this.dispatch('group', params, callback);
  }

  identify(params: IdentifyParams, callback?: Callback): void {
    this.dispatch('identify', params, callback);
  }

  page(params: PageParams, callback?: Callback): void {
    this.dispatch('page', params, callback);
  }

  screen(params: PageParams, callback?: Callback): void {
    this.dispatch('screen', params, callback);
  }

  track(params: TrackParams, callback?: Callback): void {
    this.dispatch('track', params, callback);
  }

  /**
   * Sends what is queued and resolves when the calls made so far are finished (callbacks
   * included), or after `timeout` ms. `close: true` is `closeAndFlush`. Never rejects.
   */
  flush({ timeout, close = false }: FlushParams = {}): Promise<void> {
    if (close) return this.closeAndFlush({ timeout });
    this.flushing++;
    const work = (async () => {
      const pipelines = [...this.pipelines];
      await this.client.flush();
      // Calls still in plugins reach the client later; `flushing` makes each send at once.
      await Promise.all(pipelines);
      await Promise.all([...this.callbackWaits]);
    })().finally(() => this.flushing--);
    return timeout === undefined ? work : withDeadline(work, timeout);
  }

  /**
   * Refuses new calls (their callbacks get `ClientClosedError`, `call_after_close` is
   * emitted), sends everything, and resolves when all is finished or after `timeout` ms
   * (default 1.25 × max(60 s, flushInterval)). Calling it again returns the same promise.
   */
  closeAndFlush({ timeout = this.closeTimeout }: CloseAndFlushParams = {}): Promise<void> {
    if (this.closing) return this.closing;
    this.closed = true;
    this.flushing++;
    const started = Date.now();
    const work = (async () => {
      // Calls still in plugins must reach the client before it closes.
      await Promise.all([...this.pipelines]);
      await this.client.closeAndFlush({ timeout: Math.max(0, timeout - (Date.now() - started)) });
      await Promise.all([...this.callbackWaits]);
    })();
    this.closing = withDeadline(work, timeout);
    return this.closing;
  }

  /**
   * Adds plugins (`before`, `enrichment`, `destination`, `after`, `utility`). Calls made
   * while it runs wait for it. A plugin whose `load` fails is left out and reported with an
   * `error` event (`code: 'initialization_failure'`).
   */
  register(...plugins: Plugin[]): Promise<void> {
    const task = this.load(plugins);
    this.registrations.add(task);
    void task.finally(() => this.registrations.delete(task));
    return task;
  }

  /** Removes plugins by name, calling their `unload`. */
  async deregister(...names: string[]): Promise<void> {
    const ctx = Context.system();
    await Promise.all(
      names.map(async (name) => {
        const plugin = this.plugins.find((p) => p.name === name);
        if (!plugin) return log('deregister: no plugin named %s', name);
        try {
          await plugin.unload?.(ctx, this);
          this.plugins = this.plugins.filter((p) => p !== plugin);
        } catch (error) {
          this.emitError({ code: 'initialization_failure', reason: error });
        }
      }),
    );
    this.emit('deregister', names);
  }

  private async load(plugins: Plugin[]): Promise<void> {
    const ctx = Context.system();
    this.plugins.push(...plugins);
    const failed = (plugin: Plugin, error: unknown): void => {
      this.plugins = this.plugins.filter((p) => p !== plugin);
      log('plugin %s failed to load', plugin.name);
      this.emitError({ code: 'initialization_failure', reason: error });
    };
    await Promise.all(
      plugins.map(async (plugin) => {
        try {
          // Destinations load in the background as in Segment; the others are awaited.
          if (plugin.type === 'destination') void Promise.resolve(plugin.load(ctx, this)).catch((error: unknown) => failed(plugin, error));
          else await plugin.load(ctx, this);
        } catch (error) {
          failed(plugin, error);
        }
      }),
    );
    this.emit('register', plugins.map((p) => p.name));
  }

  private dispatch(type: SegmentEventType, params: unknown, callback: Callback | undefined): void {
    if (callback === undefined && this.sendBare(type, params)) return;
    let ctx: Context;
    try {
      ctx = new Context(isPlainObject(params) ? makeEvent(type, params) : makeEvent(type, {}));
    } catch (error) {
      // A throwing getter or a revoked Proxy: refused like any invalid call, never thrown to the caller.
      ctx = new Context(makeEvent(type, {}));
      const reason = new ValidationError(`${type}() could not read its parameters: ${error instanceof Error ? error.message : String(error)}`);
      this.pendingCalls++;
      queueMicrotask(() => this.settle(ctx, callback, reason));
      return;
    }
    if (this.closed) {
      log('%s() after closeAndFlush(): refused', type);
      this.emit('call_after_close', ctx.event);
      if (callback) queueMicrotask(() => this.runCallback(ctx, callback, new ClientClosedError()));
      return;
    }
    this.pendingCalls++;
    if (this.plugins.length === 0 && this.registrations.size === 0) {
      // Fast path, no plugins: straight to the client. The callback closes over the context.
      if (isPlainObject(params)) this.send(ctx, (error) => this.settle(ctx, callback, error));
      else this.client[type](params as never, (error) => this.settle(ctx, callback, error));
      return;
    }
    const run = this.throughPlugins(ctx, isPlainObject(params) ? undefined : params, callback);
    this.pipelines.add(run);
    void run.finally(() => this.pipelines.delete(run));
  }

  /**
   * The common case at full speed: no callback and no plugins. The parameters go to
   * eventrelay's client as they are (it validates and serializes them once). The call's event
   * is kept for its context only while someone listens for the call's type (`track`, ...);
   * otherwise nothing of the call stays in memory, and an `error` for it carries a context
   * whose event holds the type and messageId. Answers false when the call needs the full path.
   */
  private sendBare(type: SegmentEventType, params: unknown): boolean {
    if (this.closed || this.plugins.length > 0 || this.registrations.size > 0) return false;
    try {
      if (!isPlainObject(params)) return false;
      // Segment copies a page's category into its properties: that needs the event built.
      if (type === 'page' && params.category !== undefined && params.category !== null) return false;
      const integrations = params.integrations as Record<string, unknown> | undefined;
      if (integrations !== undefined && (!isPlainObject(integrations) || integrations['Segment.io'] === false)) return false;
      this.pendingCalls++;
      const kept = this.listenerCount(type) > 0;
      const done = kept ? (error: EventRelayError | undefined, id: string | undefined) => this.settleBare(type, params, error, id) : this.unkept[type];
      this.client[type](params as never, done);
      return true;
    } catch {
      // A throwing getter or a Proxy: the full path refuses the call with a typed error.
      return false;
    }
  }

  /** Callbacks of calls whose event is not kept: one per type, shared, so a call costs no closure. */
  private readonly unkept: Record<SegmentEventType, (error: EventRelayError | undefined, id: string | undefined) => void> = {
    track: (error, id) => this.settleBare('track', undefined, error, id),
    identify: (error, id) => this.settleBare('identify', undefined, error, id),
    page: (error, id) => this.settleBare('page', undefined, error, id),
    screen: (error, id) => this.settleBare('screen', undefined, error, id),
    group: (error, id) => this.settleBare('group', undefined, error, id),
    alias: (error, id) => this.settleBare('alias', undefined, error, id),
  };

  private settleBare(type: SegmentEventType, params: Params | undefined, error: EventRelayError | undefined, messageId: string | undefined): void {
    if (error !== undefined || this.listenerCount(type) > 0) {
      let event: SegmentEvent;
      if (params === undefined) {
        // Not kept: only what the client reported is known.
        event = { type, messageId: messageId ?? '', timestamp: new Date(), context: {}, integrations: {} };
      } else {
        try {
          event = makeEvent(type, params);
        } catch {
          event = makeEvent(type, {});
        }
        if (messageId !== undefined) event.messageId = messageId;
      }
      const ctx = new Context(event);
      if (error !== undefined) ctx.setFailedDelivery({ reason: error });
      this.finishCall(ctx, error);
      return;
    }
    if (--this.pendingCalls === 0) this.safeEmit('drained');
  }

  /** Hands the event to eventrelay's client; `'Segment.io': false` in `integrations` sends nothing, as in Segment. */
  private send(ctx: Context, done: (error: EventRelayError | undefined) => void): void {
    if (ctx.event.integrations['Segment.io'] === false) {
      queueMicrotask(() => done(undefined));
      return;
    }
    this.client[ctx.event.type](ctx.event as never, done);
  }

  private async throughPlugins(start: Context, badParams: unknown, callback: Callback | undefined): Promise<void> {
    let ctx = start;
    let failure: unknown;
    let handedOver = false;
    this.inPlugins++;
    try {
      while (this.registrations.size > 0) await Promise.all(this.registrations);
      const enabled = (plugin: Plugin): boolean => {
        if (plugin.type !== 'destination') return true;
        const integrations = ctx.event.integrations ?? {};
        const names = [plugin.name, ...(plugin.alternativeNames ?? [])];
        const own = names.map((n) => integrations[n]).find((v) => v !== undefined);
        return (own ?? integrations.All) !== false;
      };
      for (const plugin of this.plugins.filter((p) => p.type === 'before')) {
        const outcome = await runHook(plugin, ctx);
        if (!(outcome instanceof Context)) throw cancellationError(plugin, outcome);
        ctx = outcome;
      }
      for (const plugin of this.plugins.filter((p) => p.type === 'enrichment')) {
        const outcome = await runHook(plugin, ctx);
        if (outcome instanceof Context) ctx = outcome;
      }
      const destinations = this.plugins.filter((p) => p.type === 'destination' && enabled(p));
      const delivered = new Promise<EventRelayError | undefined>((resolve) => {
        if (badParams !== undefined) this.client[ctx.event.type](badParams as never, resolve);
        else this.send(ctx, resolve);
        handedOver = true;
        // While a flush or close waits, the last event to leave the plugins sends the batch, as Segment does.
        if (--this.inPlugins === 0 && this.flushing > 0) void this.client.flush();
      });
      const [error] = await Promise.all([delivered, ...destinations.map((p) => runHook(p, ctx))]);
      failure = error;
      await Promise.all(this.plugins.filter((p) => p.type === 'after').map((p) => runHook(p, ctx)));
    } catch (error) {
      failure = error;
      if (!handedOver && --this.inPlugins === 0 && this.flushing > 0) void this.client.flush();
    }
    await this.settle(ctx, callback, failure);
  }

  /** Finishes one call: its callback (awaited up to 1 s when it returns a promise), its event, and `drained`. */
  private settle(ctx: Context, callback: Callback | undefined, error: unknown): Promise<void> | undefined {
    if (error !== undefined) ctx.setFailedDelivery({ reason: error });
    const result = callback ? this.runCallback(ctx, callback, error) : undefined;
    if (!isThenable(result)) {
      this.finishCall(ctx, error);
      return undefined;
    }
    const wait = withDeadline(Promise.resolve(result).then(noop, noop), CALLBACK_WAIT_MS).then(() => this.finishCall(ctx, error));
    this.callbackWaits.add(wait);
    void wait.finally(() => this.callbackWaits.delete(wait));
    return wait;
  }

  private runCallback(ctx: Context, callback: Callback, error: unknown): unknown {
    try {
      return callback(error, ctx);
    } catch (thrown) {
      ctx.log('warn', 'Callback Error');
      log('a callback threw: %s', thrown instanceof Error ? thrown.message : String(thrown));
      return undefined;
    }
  }

  private finishCall(ctx: Context, error: unknown): void {
    if (error === undefined) this.safeEmit(ctx.event.type, ctx);
    else this.emitError({ code: 'delivery_failure', reason: error, ctx });
    if (--this.pendingCalls === 0) this.safeEmit('drained');
  }

  /** `error` is emitted only to listeners: with none, Segment's emitter stays silent and so does this one (see the debug log). */
  private emitError(failure: DeliveryFailure): void {
    log('%s: %s', failure.code, failure.reason instanceof Error ? failure.reason.message : String(failure.reason));
    if (this.listenerCount('error') > 0) this.safeEmit('error', failure);
  }

  private safeEmit(name: string, ...args: unknown[]): void {
    try {
      this.emit(name, ...args);
    } catch (thrown) {
      log('a %s listener threw: %s', name, thrown instanceof Error ? thrown.message : String(thrown));
    }
  }
}

function noop(): void {}

/** Resolves when `work` settles or after `ms`, whichever is first; the timer keeps the process open meanwhile. */
function withDeadline(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  return Promise.race([work.then(noop, noop), deadline]).finally(() => clearTimeout(timer));
}
