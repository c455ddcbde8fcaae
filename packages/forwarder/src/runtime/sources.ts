import { ConfigError, EventRelayError, ValidationError } from 'eventrelay/internal';
import { EndpointAdmin } from '../admin/endpoints';
import type { SecretHost } from '../admin/secrets';
import type { ResolvedConfig, ResolvedSource, ResolvedWebhooks } from '../config';
import { WebhookDestination } from '../delivery/destination';
import { checkSourceUrls } from '../delivery/network-policy';
import { keyRecord } from '../registry/keys';
import { DELETED_REASON, SourceManager } from '../registry/manager';
import type { ApplyResult, SetupResult } from '../registry/manager';
import { entryDigest, fileSettings, storedWebhooks } from '../registry/reconcile';
import { SourceTable, UNSTORED } from '../registry/table';
import type { SetupSnapshot, SetupStore } from '../store/contract';
import { log } from './context';
import type { Context, StoreAccess } from './context';
import type { Deliveries } from './deliveries';

/**
 * How often an instance on a shared store (PostgreSQL) reads the setup revision, in ms: the
 * fallback when a LISTEN notification is lost, so that a change is applied within 2 s anyway.
 */
const SETUP_POLL = 1000;

/**
 * The sources a forwarder serves: the table of sources, keys and destinations (from the config
 * file until the store opens, then from the store's registry), the runtime setup the admin API
 * drives, and the following of changes other instances make.
 */
export class Sources {
  readonly table: SourceTable;
  readonly manager: SourceManager;
  /** Rotations of a destination's shared secret (`POST .../Webhooks/secret`). */
  readonly secrets: SecretHost;
  readonly endpointAdmin: EndpointAdmin;
  /** Destinations replaced by a change of settings, closing once their attempts in flight finish. */
  private readonly retiring = new Set<Promise<void>>();
  private reloading: Promise<void> | undefined;
  private reloadAgain = false;
  private unwatch: (() => void) | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  /** True while the config file's sources are loaded at construction: a bad one throws. */
  private seeding = false;

  constructor(
    private readonly ctx: Context,
    private readonly access: StoreAccess,
    private readonly deliveries: Deliveries,
  ) {
    const { config, clock, internals } = ctx;
    // While the store opens (`attach`), the lifecycle gives its store already; else it opens it.
    const setupOf = async (): Promise<SetupStore> => access.store?.setup ?? (await access.open()).store.setup;
    this.secrets = {
      snapshot: async () => (await setupOf()).read(),
      write: async (ops) => {
        const result = await (await setupOf()).write(ops);
        if (result.ok) await this.reload();
        return result;
      },
      checkSettings: (settings) => void this.makeDestination('', settings).close(),
      now: () => clock.now(),
    };
    this.table = new SourceTable(
      (name, settings) => this.makeDestination(name, settings),
      (name, error) => {
        if (this.seeding) throw error;
        ctx.backgroundError(new EventRelayError(`The Webhooks settings of source ${JSON.stringify(name)} cannot be used (${error.message}); it delivers nothing until they are set again`, 'ERR_CONFIG'));
      },
      internals.targets,
      config.sources.map((s) => s.name),
    );
    this.endpointAdmin = new EndpointAdmin({
      webhooksOf: (source) => {
        const record = this.table.record(source);
        return record === undefined ? null : record.webhooks;
      },
      guard: deliveries.guard,
    });
    // The config file's sources, until the store opens: checked at once (ConfigError with the
    // field's path), so that `eventrelay check` refuses what `serve` would.
    this.seeding = true;
    try {
      this.table.apply(configSnapshot(config, clock.now()));
    } finally {
      this.seeding = false;
    }
    this.manager = new SourceManager({
      // While the store opens, its registry is there already (the config file's sources are applied then).
      setup: setupOf,
      reload: () => this.reload(),
      destination: (name) => this.table.destination(name),
      checkSettings: (settings) => void this.makeDestination('', settings).close(),
      now: () => clock.now(),
      testWait: internals.testWait,
    });
  }

  /**
   * The store opened (the lifecycle's `StoreAccess` has it): its registry gets the config file's
   * sources (see docs/sources.md for which wins), then this instance serves what the registry holds.
   */
  async attach(): Promise<void> {
    await this.manager.reconcile(this.ctx.config.sources, 'start');
    await this.reload();
  }

  /** Makes the registry's sources match `sources`, as `eventrelay apply` does, after checking their URLs. */
  apply(sources: readonly ResolvedSource[], dryRun: boolean): Promise<ApplyResult> {
    checkSourceUrls(this.ctx.config.delivery.networkPolicy, sources);
    return this.manager.reconcile(sources, 'apply', dryRun);
  }

  /**
   * Makes the destination of a source's settings. A ConfigError names the field: in the config
   * file's terms while the file is loaded, else below the destination (as the admin API's body).
   */
  private makeDestination(name: string, settings: ResolvedWebhooks): WebhookDestination {
    const { config, clock, internals } = this.ctx;
    const { delivery } = config;
    try {
      return new WebhookDestination(
        {
          webhooks: settings.webhooks,
          sharedSecret: settings.sharedSecret,
          ...(settings.previousSecrets === undefined ? {} : { previousSecrets: settings.previousSecrets }),
          signing: settings.signing,
          timeout: delivery.timeout,
          // A 2xx answer is kept only where the delivery log keeps delivered bodies (and so answers).
          keepSuccessAnswers: config.storage.deliveryLog && config.storage.keepDelivered > 0,
          retryWindow: delivery.retryWindow,
          minRetryDelay: delivery.minRetryDelay,
          maxRetryDelay: delivery.maxRetryDelay,
          concurrency: config.sourceConcurrencyAuto === true ? delivery.concurrency : delivery.sourceConcurrency,
          ...delivery.networks,
        },
        { clock, rateBudget: this.deliveries.rateBudget, rateScope: name, onRateSlots: () => this.deliveries.wake(), ...internals.destination },
      );
    } catch (error) {
      const index = this.seeding ? config.sources.findIndex((s) => s.name === name) : -1;
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
  reload(): Promise<void> {
    if (this.reloading !== undefined) {
      this.reloadAgain = true;
      return this.reloading.then(() => this.reloading ?? undefined);
    }
    this.reloading = (async () => {
      try {
        do {
          this.reloadAgain = false;
          // Before the store opens (or when opening failed) there is no registry to read.
          const setup = this.access.store?.setup;
          if (setup === undefined) return;
          await this.applySnapshot(await setup.read());
        } while (this.reloadAgain);
      } finally {
        this.reloading = undefined;
      }
    })();
    return this.reloading;
  }

  /**
   * Serves the sources of `snapshot`. A source it no longer has under a name (deleted, perhaps
   * made again: another id) is finished here, on every instance as it learns of the deletion:
   * what the delivery loop holds for it goes back to the store (which gave it up), and its open
   * lines in the delivery log are finished as failed once this instance's buffered lines are
   * written (the log reads the same in every instance's view once each has applied it).
   */
  private async applySnapshot(snapshot: SetupSnapshot): Promise<void> {
    const before = this.table.sources.join('\u0000');
    const ids = new Map<string, string>();
    for (const name of this.table.names) {
      const id = this.table.incarnation(name);
      if (id !== undefined && id !== UNSTORED) ids.set(name, id);
    }
    const retired = this.table.apply(snapshot);
    const gone: { name: string; id: string }[] = [];
    for (const [name, id] of ids) if (this.table.incarnation(name) !== id) gone.push({ name, id });
    for (const { name } of gone) this.deliveries.loop?.forget(name);
    for (const destination of retired) {
      // Attempts in flight on it finish first (close waits for them).
      const closing = destination.close().finally(() => this.retiring.delete(closing));
      this.retiring.add(closing);
    }
    // A source switched on (or a new destination): its waiting deliveries go now.
    if (this.table.sources.join('\u0000') !== before || retired.length > 0) this.deliveries.wake();
    const at = this.ctx.clock.now();
    for (const { name, id } of gone) {
      log('source %s was deleted; its queued deliveries are given up', name);
      await this.access.ops?.abandoned(name, at, DELETED_REASON, id);
    }
  }

  /** Follows changes other instances make: LISTEN where the store has it, and polling the revision. */
  watch(): void {
    const setup = this.access.store?.setup;
    if (setup === undefined) return;
    const changed = () => {
      if (this.access.closing) return;
      this.reload().catch((error: Error) => this.ctx.backgroundError(new EventRelayError(`Could not read the sources from the store: ${error.message}`, 'ERR_STORE_UNAVAILABLE', { cause: error })));
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

  /** Stops following changes. */
  unfollow(): void {
    clearInterval(this.pollTimer);
    this.unwatch?.();
  }

  /** Closes every destination, those being replaced included, once a reload in progress ends. */
  async close(): Promise<void> {
    await this.reloading?.catch(() => {});
    await Promise.all([...this.table.destinations().map((d) => d.close()), ...this.retiring]);
  }
}

/** A setup result, or its refusal (unknown source, taken name) as a ValidationError. */
export function unwrap<T>(result: SetupResult<T>): T {
  if (result.ok) return result.value;
  throw new ValidationError(result.message, result.field);
}

/** The config file's sources as a setup snapshot: what the forwarder serves before its store opens. */
function configSnapshot(config: ResolvedConfig, now: number): SetupSnapshot {
  return {
    revision: -1,
    sources: config.sources.map((s) => ({
      name: s.name,
      id: UNSTORED,
      enabled: s.webhooks?.enabled ?? false,
      webhooks: s.webhooks === undefined ? undefined : storedWebhooks(s.webhooks),
      applied: entryDigest(s),
      ...(fileSettings(s) === undefined ? {} : { settings: fileSettings(s) }),
      createdAt: now,
      updatedAt: now,
      ...(s.schema === undefined ? {} : { schema: s.schema }),
    })),
    keys: config.sources.map((s) => keyRecord(s.name, s.writeKey, 'config', now)),
  };
}
