import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { createServer } from 'node:http';
import { hostname } from 'node:os';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import createDebug from 'debug';
import { systemClock } from 'eventrelay/internal';
import type { Clock } from 'eventrelay/internal';
import { ConfigError, EventRelayError } from 'eventrelay/internal';
import { checkAudienceRequest, checkMembers, planAudienceNotices } from './routing/audiences';
import type { AudienceSyncRequest, AudienceSyncResult } from './routing/audiences';
import { parseConfig, parseSources } from './config';
import type { ForwarderConfig, ResolvedConfig, ResolvedSource, SourceConfig, WebhooksDestinationConfig } from './config';
import { planDeletion } from './routing/deletion';
import type { DeletionRequest } from './routing/deletion';
import { WebhookDestination } from './delivery/destination';
import type { DestinationInternals } from './delivery/destination';
import { EndpointGuard, GuardedTargets } from './delivery/endpoint-guard';
import type { EndpointChange } from './delivery/endpoint-guard';
import { MemoryEndpointStore, MIN_FAILED_ATTEMPTS } from './store/endpoint-state';
import { endpointNotice, exhaustedNotice, NOTIFY_SOURCE } from './delivery/notify';
import type { Notice } from './delivery/notify';
import { EndpointAdmin } from './admin/endpoints';
import type { EnabledEndpoint, ShownEndpoint } from './admin/endpoints';
import { rotateSecret } from './admin/secrets';
import type { RotatedSecret, SecretHost } from './admin/secrets';
import { checkStore, openConfiguredStore } from './store/open';
import { Scheduler } from './scheduling/scheduler';
import type { AttemptReport, DeliveryTarget } from './scheduling/scheduler';
import type { ResolvedWebhooks } from './config';
import { SourceTable } from './registry/table';
import { SourceManager } from './registry/manager';
import type { ApplyResult, CreatedSource, DeletedSource, IssuedWriteKey, SetupResult, ShownSource, ShownWebhooks, ShownWriteKey, TestResult } from './registry/manager';
import { keyRecord } from './registry/keys';
import { entryDigest, storedWebhooks } from './registry/reconcile';
import { ValidationError } from 'eventrelay/internal';
import { createRequestHandler } from './http/server';
import type { AcceptedMessage, AcceptResult, ForwarderStore, NewDelivery } from './store/contract';
import { Operations } from './observability/operations';
import { createOperationsRoutes } from './admin/api';
import { ForwarderMetrics } from './observability/metrics';
import type { EndpointHealth } from './observability/health';
import type { RejectedMessage, ValidMessage } from './routing/ingest';
import type { EndpointStore, RateBudget, SetupSnapshot, SetupStore } from './store/contract';
import { MemoryRateBudget } from './store/rate-budget';
import { checkSourceUrls } from './delivery/network-policy';

const log = createDebug('eventrelay:forwarder');

/** How often finished deliveries past the retention are removed, in ms. */
const PRUNE_INTERVAL = 10 * 60_000;
/** Longest wait for requests in progress at shutdown, in ms. */
const DRAIN_TIMEOUT = 10_000;
/**
 * How often an instance on a shared store (PostgreSQL) reads the setup revision, in ms: the
 * fallback when a LISTEN notification is lost, so that a change is applied within 2 s anyway.
 */
const SETUP_POLL = 1000;

export interface ForwarderOptions {
  /** Data directory of the SQLite store; overrides `storage.dataDir` (the CLI's `--data`). */
  readonly dataDir?: string;
  /** A store to use instead of the configured one (e.g. a shared queue). The forwarder closes it. */
  readonly store?: ForwarderStore;
  /** Environment for `{ "env": NAME }` secrets. Default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** Test seams; not for application code. */
export interface ForwarderInternals {
  readonly clock?: Clock;
  readonly destination?: DestinationInternals;
  /** Replaces the destinations (by source name): a fake for scheduler tests. */
  readonly targets?: ReadonlyMap<string, DeliveryTarget>;
  /** How long a test event waits for rate limits, in ms (default 10 s). */
  readonly testWait?: number;
}

export interface ListenOptions {
  /** Default: the config's `port` (8787). 0 picks a free port. */
  readonly port?: number;
  /** Default: the config's `host` (127.0.0.1). */
  readonly host?: string;
}

export interface ForwarderStats {
  /** Messages acknowledged by the ingestion API, duplicates included. */
  readonly accepted: number;
  /** Acknowledged messages whose messageId the source had sent before: not forwarded again. */
  readonly duplicates: number;
  /** Messages the ingestion API refused (listed in an answer's `rejected`) since this process started. */
  readonly refused: number;
  /** Deliveries (messages, deletions, audience identifies) a webhook accepted. */
  readonly delivered: number;
  /** Deliveries waiting for a retry after a failed attempt. */
  readonly retrying: number;
  /** Deliveries given up: a final status, or the retry window ran out. */
  readonly failed: number;
  /** Deliveries not finished yet (never tried, or waiting for a retry). */
  readonly queueDepth: number;
  /** Age of the oldest unfinished delivery, in ms; null when the queue is empty. */
  readonly oldestPendingAge: number | null;
  /** Attempts in flight now. */
  readonly inFlight: number;
  /** Time since start, in ms. */
  readonly uptime: number;
  /** Health of each webhook URL over the last hour, in this process (URLs redacted). */
  readonly endpoints: readonly EndpointHealth[];
}

export interface DeletionResult {
  readonly userId: string;
  /** Sources that will get a `delete` notification. */
  readonly notified: readonly string[];
  /** Affected sources without a Webhooks destination switched on. */
  readonly skipped: readonly string[];
}

export interface ForwarderEvents {
  /** One attempt finished (delivered, retry or failed). */
  attempt: [report: AttemptReport];
  /**
   * A failure in the background that is not a delivery's: an `attempt` listener that threw.
   * Delivery goes on. Without an `error` listener it is only logged (`DEBUG=eventrelay:forwarder`).
   */
  error: [error: Error];
  /**
   * A notice for the operator (the same object `notify.url` receives): a webhook URL this
   * instance disabled (`endpoint.disabled`) or enabled (`endpoint.enabled`), or a delivery it gave
   * up (`delivery.exhausted`).
   */
  endpoint: [notice: Notice];
}

/**
 * The forwarding service: ingestion API, durable queue, routing, delivery, deletions and
 * audiences. Create it with `createForwarder(config)`, then `listen()`; `close()` stops it
 * gracefully. Events: `attempt` (one per finished webhook attempt, without the body).
 */
export class Forwarder extends EventEmitter<ForwarderEvents> {
  /** Request handler for a node:http server of your own (call `start()` first). */
  readonly handler: (req: IncomingMessage, res: ServerResponse) => void;
  private readonly config: ResolvedConfig;
  private readonly options: ForwarderOptions;
  private readonly clock: Clock;
  private readonly internals: ForwarderInternals;
  /** The sources served now: from the config file until the store opens, then from the store's setup. */
  private readonly table: SourceTable;
  /** Runtime setup of sources (the admin API's `/admin/sources` routes). */
  private readonly manager: SourceManager;
  private setupStore: SetupStore | undefined;
  /** Destinations replaced by a change of settings, closing once their attempts in flight finish. */
  private readonly retiring = new Set<Promise<void>>();
  private reloading: Promise<void> | undefined;
  private reloadAgain = false;
  private unwatch: (() => void) | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  /** True while the config file's sources are loaded at construction: a bad one throws. */
  private seeding = false;
  /** This process among the instances sharing a store: host, pid and a random part. */
  readonly instanceId = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  private store: ForwarderStore | undefined;
  private opening: Promise<ForwarderStore> | undefined;
  private scheduler: Scheduler | undefined;
  private server: Server | undefined;
  private pruneTimer: unknown;
  private startedAt = 0;
  /** Messages refused by the ingestion API since start (not stored, so counted here). */
  private refused = 0;
  private starting: Promise<void> | undefined;
  private closing: Promise<void> | undefined;
  private pendingRequests = 0;
  private idle: (() => void) | undefined;
  /** The delivery log, live stream, health and timeline: made when the store opens. */
  private ops: Operations | undefined;
  private readonly metrics: ForwarderMetrics | undefined;
  /**
   * The send slots of rate-limited URLs: the store's when it is shared (PostgreSQL), else this
   * process's. Looked up per claim: destinations made before the store opened use it too.
   */
  private readonly rateBudget: RateBudget;
  /** Which webhook URLs are disabled (delivery.disableAfter), kept in the store once it opens. */
  private readonly guard: EndpointGuard;
  private endpointStore: EndpointStore = new MemoryEndpointStore();
  private readonly endpointAdmin: EndpointAdmin;
  /** Rotations of a destination's shared secret (`POST .../Webhooks/secret`). */
  private readonly secretHost: SecretHost;
  /** Sends the notices to `notify.url`, signed; undefined without `notify`. */
  private readonly notifier: WebhookDestination | undefined;

  constructor(config: ResolvedConfig, options: ForwarderOptions = {}, internals: ForwarderInternals = {}) {
    super();
    this.config = config;
    this.options = options;
    this.clock = internals.clock ?? systemClock;
    this.internals = internals;
    if (options.store !== undefined) checkStore(options.store);
    const localBudget = new MemoryRateBudget(this.clock);
    this.rateBudget = { claim: (...args) => (this.store?.rateBudget ?? localBudget).claim(...args) };
    this.guard = new EndpointGuard(
      () => this.endpointStore,
      { after: config.delivery.disableAfter, minAttempts: MIN_FAILED_ATTEMPTS },
      this.clock,
      (change) => this.endpointChanged(change),
      () => this.scheduler?.wake(),
    );
    this.notifier =
      config.notify === undefined
        ? undefined
        : new WebhookDestination(
          {
            webhooks: [{ url: config.notify.url }],
            sharedSecret: config.notify.sharedSecret,
            timeout: config.delivery.timeout,
            retryWindow: config.delivery.retryWindow,
            minRetryDelay: config.delivery.minRetryDelay,
            maxRetryDelay: config.delivery.maxRetryDelay,
            ...config.delivery.networks,
          },
          { clock: this.clock, ...this.internals.destination },
        );
    const setupOf = async (): Promise<SetupStore> => this.setupStore ?? (await this.openStore(), this.setupStore!);
    this.secretHost = {
      snapshot: async () => (await setupOf()).read(),
      write: async (ops) => {
        const result = await (await setupOf()).write(ops);
        if (result.ok) await this.reload();
        return result;
      },
      checkSettings: (settings) => void this.makeDestination('', settings).close(),
      now: () => this.clock.now(),
    };
    this.endpointAdmin = new EndpointAdmin({
      webhooksOf: (source) => {
        const record = this.table.record(source);
        return record === undefined ? null : record.webhooks;
      },
      guard: this.guard,
    });
    this.table = new SourceTable(
      (name, settings) => this.makeDestination(name, settings),
      (name, error) => {
        if (this.seeding) throw error;
        this.backgroundError(new EventRelayError(`The Webhooks settings of source ${JSON.stringify(name)} cannot be used (${error.message}); it delivers nothing until they are set again`, 'ERR_CONFIG'));
      },
      internals.targets,
      config.sources.map((s) => s.name),
    );
    // The config file's sources, until the store opens: checked at once (ConfigError with the
    // field's path), so that `eventrelay check` refuses what `serve` would.
    this.seeding = true;
    try {
      this.table.apply(configSnapshot(config, this.clock.now()));
    } finally {
      this.seeding = false;
    }
    this.manager = new SourceManager({
      // While the store opens, the setup is set already (the config file's sources are applied then).
      setup: async () => this.setupStore ?? (await this.openStore(), this.setupStore!),
      reload: () => this.reload(),
      destination: (name) => this.table.destination(name),
      checkSettings: (settings) => void this.makeDestination('', settings).close(),
      now: () => this.clock.now(),
      deleted: async (name, at, reason) => this.ops?.abandoned(name, at, reason),
      testWait: internals.testWait,
    });

    this.metrics =
      config.metricsPath === undefined
        ? undefined
        : new ForwarderMetrics({
          queueDepth: () => this.stats().then(({ queueDepth, oldestPendingAge, inFlight }) => ({ queueDepth, oldestPendingAge, inFlight })),
          disabledEndpoints: () => {
            const counts = this.guard.disabledCounts();
            return new Map(this.table.names.map((name) => [name, counts.get(name) ?? 0]));
          },
        });
    const opsOf = async (): Promise<Operations> => {
      await this.openStore();
      return this.ops!;
    };
    const operations = createOperationsRoutes({
      ops: opsOf,
      metrics: this.metrics,
      metricsPath: config.metricsPath,
      debuggerOn: config.debugger,
      adminToken: config.adminToken,
      closing: () => this.closing !== undefined,
      overview: async () => {
        // `/stats` of this instance, but endpoint health and the chart over every instance on the store.
        const [stats, cluster] = await Promise.all([this.stats(), opsOf().then((ops) => ops.overview())]);
        return {
          sources: this.sources,
          instances: cluster.instances,
          stats: { ...stats, endpoints: cluster.endpoints },
          chart: cluster.chart,
          disabled: this.disabledEndpoints(),
        };
      },
      requestDeletion: (request) => this.requestDeletion(request),
      syncAudience: (request) => this.syncAudience(request),
      sources: this.manager,
      applySources: (sources, dryRun) => (this.checkUrls(sources), this.manager.reconcile(sources, 'apply', dryRun)),
      endpoints: this.endpointAdmin,
      secrets: this.secretHost,
    });
    const backend = {
      sourceForKey: (key: string) => this.table.sourceForKey(key, this.clock.now()),
      accept: (messages: readonly AcceptedMessage[], calls?: readonly ValidMessage[]) => this.accept(messages, calls),
      onRejected: (source: string, rejected: readonly RejectedMessage[], receivedAt: number, body: unknown) => {
        this.refused += rejected.length;
        this.ops?.refused(source, rejected, receivedAt, body);
      },
      operations,
      stats: () => this.stats(),
      get closing() {
        return closingFlag();
      },
      now: () => this.clock.now(),
    };
    const closingFlag = () => this.closing !== undefined;
    const handle = createRequestHandler(backend);
    this.handler = (req, res) => {
      this.pendingRequests++;
      res.once('close', () => {
        this.pendingRequests--;
        if (this.pendingRequests === 0) this.idle?.();
      });
      handle(req, res);
    };
  }

  /** Names of the sources served now (the config file's until the store opened, then the store's). */
  get sources(): readonly string[] {
    return this.table.names;
  }

  /**
   * Makes the destination of a source's settings. A ConfigError names the field: in the config
   * file's terms while the file is loaded, else below the destination (as the admin API's body).
   */
  private makeDestination(name: string, settings: ResolvedWebhooks): WebhookDestination {
    const { delivery } = this.config;
    try {
      return new WebhookDestination(
        {
          webhooks: settings.webhooks,
          sharedSecret: settings.sharedSecret,
          ...(settings.previousSecrets === undefined ? {} : { previousSecrets: settings.previousSecrets }),
          signing: settings.signing,
          timeout: delivery.timeout,
          retryWindow: delivery.retryWindow,
          minRetryDelay: delivery.minRetryDelay,
          maxRetryDelay: delivery.maxRetryDelay,
          concurrency: this.config.sourceConcurrencyAuto === true ? delivery.concurrency : delivery.sourceConcurrency,
          ...delivery.networks,
        },
        { clock: this.clock, rateBudget: this.rateBudget, rateScope: name, onRateSlots: () => this.scheduler?.wake(), ...this.internals.destination },
      );
    } catch (error) {
      const index = this.seeding ? this.config.sources.findIndex((s) => s.name === name) : -1;
      if (error instanceof ConfigError && index >= 0) {
        const field = `sources[${index}].destinations.Webhooks`;
        throw new ConfigError(`In \`${field}\`: ${error.message}`, error.field === undefined ? field : `${field}.${error.field}`);
      }
      throw error;
    }
  }

  /**
   * Reads the store's setup and applies it to this instance: sources, keys, destinations. Calls
   * that come while one runs are served by one more run after it.
   */
  private reload(): Promise<void> {
    if (this.reloading !== undefined) {
      this.reloadAgain = true;
      return this.reloading.then(() => this.reloading ?? undefined);
    }
    this.reloading = (async () => {
      try {
        do {
          this.reloadAgain = false;
          const setup = this.setupStore;
          if (setup === undefined) return;
          this.applySnapshot(await setup.read());
        } while (this.reloadAgain);
      } finally {
        this.reloading = undefined;
      }
    })();
    return this.reloading;
  }

  private applySnapshot(snapshot: SetupSnapshot): void {
    const before = this.table.sources.join('\u0000');
    const retired = this.table.apply(snapshot);
    for (const destination of retired) {
      // Attempts in flight on it finish first (close waits for them).
      const closing = destination.close().finally(() => this.retiring.delete(closing));
      this.retiring.add(closing);
    }
    // A source switched on (or a new destination): its waiting deliveries go now.
    if (this.table.sources.join('\u0000') !== before || retired.length > 0) this.scheduler?.wake();
  }

  /** Follows changes other instances make: LISTEN where the store has it, and polling the revision. */
  private watchSetup(setup: SetupStore): void {
    const changed = () => {
      if (this.closing !== undefined) return;
      this.reload().catch((error: Error) => this.backgroundError(new EventRelayError(`Could not read the sources from the store: ${error.message}`, 'ERR_STORE_UNAVAILABLE', { cause: error })));
    };
    this.unwatch = setup.watch?.(changed);
    if (!setup.shared) return;
    this.pollTimer = setInterval(() => {
      setup.revision().then(
        (revision) => revision !== this.table.revision && changed(),
        (error: Error) => log('setup revision poll failed: %s', error.message),
      );
    }, SETUP_POLL);
    this.pollTimer.unref();
  }

  /**
   * Opens the store and starts delivering what it holds. Idempotent; after a failure (the database
   * unreachable, ...) it may be called again, and `close()` still works.
   */
  start(): Promise<void> {
    if (this.closing !== undefined) return Promise.reject(new EventRelayError('The forwarder is closed; create a new one', 'ERR_FORWARDER_CLOSED'));
    this.starting ??= (async () => {
      const store = await this.openStore();
      const { concurrency, sourceConcurrency } = this.config.delivery;
      this.scheduler = new Scheduler(
        store,
        // Disabled URLs are skipped, and a source with none left waits as when switched off.
        // Notices to `notify.url` are queued as a source of their own.
        new GuardedTargets(this.table, (source) => this.table.record(source)?.webhooks, this.guard, this.clock, {
          name: NOTIFY_SOURCE,
          target: () => this.notifier,
        }),
        this.clock,
        {
          concurrency,
          ...(this.config.sourceConcurrencyAuto === true ? {} : { sourceConcurrency }),
          owner: this.instanceId,
          leaseMs: this.config.storage.lease,
          // A handed-over delivery starts its attempt while its lease still outlasts one.
          holdMs: this.config.storage.lease - this.config.delivery.timeout - 1000,
          onError: (error) => this.backgroundError(error),
        },
        (report) => {
          // A notice's own attempts are the operator's business: logged only, never noticed again.
          if (report.source === NOTIFY_SOURCE) {
            log('notice %s: attempt %d %s', report.messageId, report.result.attempt, report.result.status);
            return;
          }
          this.ops?.attempt(report);
          // Nothing sent (waiting for a rate limit's slot, closing): not an attempt.
          if (report.result.outcomes.length === 0) return;
          this.emit('attempt', report);
          if (report.result.status === 'failed') this.notice(exhaustedNotice(report.source, report.messageId, report.result, this.clock.now()));
        },
      );
      this.ops?.start();
      this.startedAt = this.clock.now();
      this.scheduler.start();
      this.schedulePrune();
      log('started: %d sources, store %s', this.table.names.length, this.options.store ? 'custom' : this.config.storage.type);
    })().catch((error: unknown) => {
      this.starting = undefined;
      throw error;
    });
    return this.starting;
  }

  /** Opens the store once (not cached when it fails), without starting delivery. */
  private openStore(): Promise<ForwarderStore> {
    this.opening ??= (async () => {
      const storage = this.config.storage;
      const store = this.options.store ?? (await openConfiguredStore(storage, { dataDir: this.options.dataDir, clock: this.clock }));
      // The sources live in the store: the config file's are applied (see docs/sources.md for
      // which wins), then this instance serves what the store holds.
      const setup = store.setup;
      try {
        this.setupStore = setup;
        await this.manager.reconcile(this.config.sources, 'start');
        await this.reload();
        // Disabled URLs survive restarts (SQLite) and are shared by the instances (PostgreSQL).
        this.endpointStore = store.endpoints;
        await this.guard.load(store.shared);
      } catch (error) {
        this.setupStore = undefined;
        if (this.options.store === undefined) await store.close().catch(() => {});
        throw error;
      }
      this.watchSetup(setup);
      this.store = store;
      const table = this.table;
      this.ops = new Operations(
        {
          enqueue: (deliveries) => this.enqueue(deliveries),
          queueDepth: async () => {
            const { queueDepth, oldestPendingAge, inFlight } = await this.stats();
            return { queueDepth, oldestPendingAge, inFlight };
          },
          now: () => this.clock.now(),
          get sources() {
            return table.webhooksOn;
          },
          keepDelivered: storage.keepDelivered,
        },
        storage.deliveryLog ? store.openLog({ keepDelivered: storage.keepDelivered }) : undefined,
        this.metrics,
        store.cluster === null ? undefined : { store: store.cluster, owner: this.instanceId },
      );
      return store;
    })().catch((error: unknown) => {
      this.opening = undefined;
      throw error;
    });
    return this.opening;
  }

  private backgroundError(error: Error): void {
    log('background error: %s', error.message);
    if (this.listenerCount('error') > 0) this.emit('error', error);
  }

  private schedulePrune(): void {
    const timer = setInterval(() => {
      const before = this.clock.now() - this.config.storage.retention;
      this.store?.prune(before).then(
        (removed) => removed > 0 && log('pruned %d finished rows', removed),
        (error: Error) => log('prune failed: %s', error.message),
      );
      this.ops?.prune(before).then(
        (removed) => removed > 0 && log('pruned %d delivery log rows', removed),
        (error: Error) => log('delivery log prune failed: %s', error.message),
      );
    }, PRUNE_INTERVAL);
    timer.unref();
    this.pruneTimer = timer;
  }

  /** Starts the HTTP server. Resolves with the address it listens on. */
  async listen(options: ListenOptions = {}): Promise<{ url: string; host: string; port: number }> {
    if (this.closing !== undefined) throw new EventRelayError('The forwarder is closed; create a new one', 'ERR_FORWARDER_CLOSED');
    if (this.server !== undefined) throw new EventRelayError('The forwarder is already listening; call listen() once', 'ERR_ALREADY_LISTENING');
    const server = createServer({ keepAliveTimeout: 5000, requestTimeout: 30_000 }, this.handler);
    this.server = server;
    try {
      await this.start();
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(options.port ?? this.config.port, options.host ?? this.config.host, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (error) {
      // Not listening (port in use, ...): listen() may be called again.
      this.server = undefined;
      throw error;
    }
    const address = server.address() as AddressInfo;
    const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    return { url: `http://${shownHost}:${address.port}`, host: address.address, port: address.port };
  }

  private accept(messages: readonly AcceptedMessage[], calls?: readonly ValidMessage[]): Promise<AcceptResult> {
    return this.withStore(async (store) => {
      // The calls of one request come from one source. Leased to this instance as they are
      // stored, when its delivery loop takes them: attempted then without a claim.
      const first = messages[0];
      const lease = first === undefined ? undefined : this.scheduler?.handOff(first.source, first.receivedAt);
      const result = await store.accept(messages, lease);
      this.ops?.accepted(messages, calls, result);
      if (lease !== undefined && result.leased !== undefined) this.scheduler?.adopt(result.leased, lease);
      else if (result.stored > 0) this.scheduler?.stored(first!.source);
      return result;
    });
  }

  /** Stores deliveries made by no ingested call (replays) and wakes the delivery loop. */
  private enqueue(deliveries: readonly NewDelivery[]): Promise<void> {
    return this.withStore(async (store) => {
      await store.enqueue(deliveries);
      this.scheduler?.wake();
    });
  }

  /** The sources in the store, with their keys (last four characters) and settings (no secret). */
  listSources(): Promise<ShownSource[]> {
    return this.manager.list();
  }

  /**
   * Makes a source without destination and a write key for it (at least 32 random bytes),
   * returned this once: the store keeps only its digest. ValidationError or ConfigError (`field`
   * "name") for a bad or taken name.
   */
  async createSource(name: string): Promise<CreatedSource> {
    return unwrap(await this.manager.create({ name }));
  }

  /** Issues a new write key; the source's other keys keep working `graceSeconds` more (default 86400), then stop. */
  async rotateWriteKey(name: string, options: { readonly graceSeconds?: number } = {}): Promise<IssuedWriteKey> {
    return unwrap(await this.manager.rotate(name, options.graceSeconds === undefined ? {} : { graceSeconds: options.graceSeconds }));
  }

  /** A source's valid write keys: id and last four characters. */
  async writeKeys(name: string): Promise<ShownWriteKey[]> {
    return unwrap(await this.manager.keys(name));
  }

  /**
   * Sets a source's Webhooks destination, checked like the config file's `destinations.Webhooks`
   * (ConfigError with the `field` below it; secrets are values, not `{ "env" }`). Every instance
   * on the store applies it within 2 s.
   */
  async setWebhooks(name: string, settings: WebhooksDestinationConfig): Promise<ShownWebhooks> {
    return unwrap(await this.manager.putWebhooks(name, settings));
  }

  /**
   * Switches a source's Webhooks destination on or off. Off: new calls are accepted but not
   * routed, and deliveries already queued wait (their retry window still counts) until it is on again.
   */
  async setWebhooksEnabled(name: string, enabled: boolean): Promise<ShownWebhooks> {
    return unwrap(await this.manager.patchWebhooks(name, { enabled }));
  }

  /** Removes a source, its keys and audiences; its pending deliveries are failed (see docs/sources.md). */
  async deleteSource(name: string): Promise<DeletedSource> {
    return unwrap(await this.manager.remove(name));
  }

  /**
   * The state of each URL of a source's Webhooks destination: disabled or not, why, and its
   * current run of failures. ValidationError for an unknown source or one without Webhooks.
   */
  async endpoints(name: string): Promise<ShownEndpoint[]> {
    await this.openStore();
    return unwrap(this.endpointAdmin.list(name));
  }

  /**
   * Enables a URL of a source's Webhooks destination that `delivery.disableAfter` disabled,
   * named by its full URL or as `endpoints()` shows it; every instance sends to it again within 1 s.
   */
  async enableEndpoint(name: string, url: string): Promise<EnabledEndpoint> {
    await this.openStore();
    return unwrap(await this.endpointAdmin.enable(name, { url }));
  }

  /**
   * Rotates the shared secret of a source's Webhooks destination: `sharedSecret` signs from now on
   * (`X-Signature` with it alone), and the secret it replaces still signs Standard Webhooks
   * requests, beside it, for `graceSeconds` (default 86400), then stops. Every instance applies it
   * within 2 s. ConfigError or ValidationError with `field` for bad input.
   */
  async rotateSharedSecret(name: string, sharedSecret: string, options: { readonly graceSeconds?: number } = {}): Promise<RotatedSecret> {
    const body = { sharedSecret, ...(options.graceSeconds === undefined ? {} : { graceSeconds: options.graceSeconds }) };
    return unwrap(await rotateSecret(this.secretHost, name, body));
  }

  /** The disabled URLs of every source's destination (what the debugger page lists), without credentials or query. */
  private disabledEndpoints(): { source: string; url: string; disabledAt: string | null; reason: string | null }[] {
    return this.table.names.flatMap((source) => {
      const listed = this.endpointAdmin.list(source);
      return listed.ok ? listed.value.filter((e) => e.disabled).map((e) => ({ source, url: e.url, disabledAt: e.disabledAt, reason: e.reason })) : [];
    });
  }

  /** A URL this instance disabled or enabled: the `endpoint` event (and, with `notify`, a notice). */
  private endpointChanged(change: EndpointChange): void {
    this.notice(endpointNotice(change));
  }

  /** The `endpoint` event and, with `notify`, a signed notice queued like any delivery. */
  private notice(notice: Notice): void {
    try {
      this.emit('endpoint', notice);
    } catch (error) {
      this.backgroundError(error instanceof Error ? error : new Error(String(error)));
    }
    if (this.notifier === undefined || this.closing !== undefined) return;
    const delivery: NewDelivery = {
      source: NOTIFY_SOURCE,
      destination: 'notify',
      kind: 'notice',
      messageId: `notice_${randomBytes(12).toString('hex')}`,
      body: JSON.stringify(notice),
      createdAt: this.clock.now(),
    };
    this.withStore(async (store) => {
      await store.enqueue([delivery]);
      this.scheduler?.wake();
    }).catch((error: Error) => this.backgroundError(new EventRelayError(`Could not queue a ${notice.type} notice: ${error.message}`, 'ERR_STORE_UNAVAILABLE', { cause: error })));
  }

  /** Sends one signed sample message of `type` (default `track`) to every URL of the source, and reports each. */
  async testWebhooks(name: string, type: TestResult['type'] = 'track'): Promise<TestResult> {
    return unwrap(await this.manager.test(name, { type }));
  }

  /**
   * Makes the store's sources match `sources` (config file entries; `{ "env" }` secrets read from
   * `options.env`), as `eventrelay apply` does; `dryRun` only reports the difference. Sources not
   * listed are left alone.
   */
  async applySources(sources: readonly SourceConfig[], options: { readonly dryRun?: boolean } = {}): Promise<ApplyResult> {
    const parsed = parseSources(sources, this.options.env ?? process.env);
    this.checkUrls(parsed);
    return this.manager.reconcile(parsed, 'apply', options.dryRun ?? false);
  }

  /** Literal addresses of sources being applied, against `delivery.denyNetworks` and `allowNetworks`. */
  private checkUrls(sources: readonly ResolvedSource[]): void {
    checkSourceUrls(this.config.delivery.networkPolicy, sources);
  }

  /**
   * Sends a `delete` notification (spec 2.3) to every affected source whose Webhooks destination
   * is on: all sources, or those named. ValidationError for a missing userId or an unknown source.
   */
  async requestDeletion(request: DeletionRequest): Promise<DeletionResult> {
    const plan = planDeletion(request, this.table.routes, this.clock.now());
    return this.withStore(async (store) => {
      await store.enqueue(plan.deliveries);
      this.ops?.enqueued(plan.deliveries);
      this.scheduler?.wake();
      log('deletion request: %d sources notified', plan.notified.length);
      return { userId: plan.userId, notified: plan.notified, skipped: plan.skipped };
    });
  }

  /**
   * Replaces an audience's membership (spec 6): an identify with `traits: { <trait>: true }` for
   * each member added (every member on the first sync) and `false` for each member removed.
   */
  async syncAudience(request: AudienceSyncRequest): Promise<AudienceSyncResult> {
    const { source, trait, members } = checkAudienceRequest(request, this.table.routes);
    await checkMembers(members);
    const now = this.clock.now();
    return this.withStore(async (store) => {
      // Chunk by chunk (the store calls `plan` per chunk of 5,000 users and stores what it
      // returns), never the whole audience at once: memory stays bounded and the event loop free.
      // A chunk's notices are logged once it is stored, which the next call (or the end) tells.
      let sent = 0;
      let unlogged: readonly NewDelivery[] = [];
      const change = await store.syncAudience(source.name, trait, members, (c) => {
        this.ops?.enqueued(unlogged);
        if (unlogged.length > 0) this.scheduler?.wake();
        const notices = planAudienceNotices(source, trait, c, now);
        sent += notices.length;
        unlogged = notices;
        return notices;
      });
      this.ops?.enqueued(unlogged);
      this.scheduler?.wake();
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
    });
  }

  async stats(): Promise<ForwarderStats> {
    return this.withStore(async (store) => {
      const counts = await store.counts();
      const now = this.clock.now();
      return {
        accepted: counts.accepted,
        duplicates: counts.duplicates,
        refused: this.refused,
        delivered: counts.delivered,
        retrying: counts.retrying,
        failed: counts.failed,
        queueDepth: counts.pending,
        oldestPendingAge: counts.oldestPendingAt === undefined ? null : Math.max(0, now - counts.oldestPendingAt),
        inFlight: this.scheduler?.active ?? 0,
        uptime: this.startedAt === 0 ? 0 : now - this.startedAt,
        endpoints: this.ops?.endpoints() ?? [],
      };
    });
  }

  /**
   * Opens the store if needed, but does not start delivering: that is `start()`/`listen()`'s job
   * (a deletion or audience sync before it is stored, and sent once the forwarder starts).
   */
  private async withStore<T>(fn: (store: ForwarderStore) => Promise<T>): Promise<T> {
    return fn(await this.openStore());
  }

  /**
   * Graceful shutdown: stops accepting (new requests get 503, idle connections close), lets
   * requests being stored finish, waits for the webhook attempts in flight and writes their
   * outcomes, then closes the destinations and the store. Returns the same promise when called again.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      clearInterval(this.pruneTimer as NodeJS.Timeout);
      clearInterval(this.pollTimer);
      this.unwatch?.();
      // Live streams never end by themselves: end them, so that shutdown does not wait for them.
      this.ops?.live.close();
      const server = this.server;
      const serverClosed = server === undefined ? Promise.resolve() : new Promise<void>((resolve) => server.close(() => resolve()));
      server?.closeIdleConnections();
      if (this.pendingRequests > 0) {
        // Requests being read or stored may finish; a stalled upload gets 10 s, then its socket is closed.
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          new Promise<void>((resolve) => (this.idle = resolve)),
          new Promise<void>((resolve) => (timer = setTimeout(resolve, DRAIN_TIMEOUT))),
        ]);
        clearTimeout(timer);
      }
      server?.closeAllConnections();
      await serverClosed;
      // A start or open that failed left nothing to stop.
      await this.starting?.catch(() => {});
      await this.opening?.catch(() => {});
      await this.scheduler?.stop();
      await this.guard.close();
      await this.reloading?.catch(() => {});
      await Promise.all([...this.table.destinations().map((d) => d.close()), ...this.retiring, this.notifier?.close()]);
      await this.ops?.close();
      await this.store?.close();
      log('closed');
    })();
    return this.closing;
  }
}

/** A setup result, or its refusal (unknown source, taken name) as a ValidationError. */
function unwrap<T>(result: SetupResult<T>): T {
  if (result.ok) return result.value;
  throw new ValidationError(result.message, result.field);
}

/** The config file's sources as a setup snapshot: what the forwarder serves before its store opens. */
function configSnapshot(config: ResolvedConfig, now: number): SetupSnapshot {
  return {
    revision: -1,
    sources: config.sources.map((s) => ({
      name: s.name,
      enabled: s.webhooks?.enabled ?? false,
      webhooks: s.webhooks === undefined ? undefined : storedWebhooks(s.webhooks),
      applied: entryDigest(s),
      createdAt: now,
      updatedAt: now,
    })),
    keys: config.sources.map((s) => keyRecord(s.name, s.writeKey, 'config', now)),
  };
}

/**
 * Creates a forwarder from a config object (see docs/running-the-forwarder.md for the format); checks it at once
 * (ConfigError with `field`), reading `{ "env": NAME }` secrets. Nothing is opened until
 * `listen()` or `start()`.
 */
export function createForwarder(config: ForwarderConfig, options: ForwarderOptions = {}, internals: ForwarderInternals = {}): Forwarder {
  return new Forwarder(parseConfig(config, options.env ?? process.env), options, internals);
}
