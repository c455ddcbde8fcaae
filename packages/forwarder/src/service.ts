import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { EnabledEndpoint, ShownEndpoint } from './admin/endpoints';
import { rotateSecret } from './admin/secrets';
import type { RotatedSecret } from './admin/secrets';
import { parseConfig, parseSources } from './config';
import type { ForwarderConfig, ResolvedConfig, SourceConfig, SourceSchemaConfig, WebhooksDestinationConfig } from './config';
import type { ShownSchema, UsageQuery, UsageReport } from './admin/schema';
import type { SourceSchema } from './store/contract';
import type { ApplyResult, CreatedSource, DeletedSource, IssuedWriteKey, ShownSettings, ShownSource, ShownWebhooks, ShownWriteKey, TestResult } from './registry/manager';
import type { AudienceSyncRequest, AudienceSyncResult } from './routing/audiences';
import type { DeletionRequest } from './routing/deletion';
import { compose } from './runtime/compose';
import type { Parts } from './runtime/compose';
import { unwrap } from './runtime/sources';
import { checkStore } from './store/open';
import type { DeletionResult, ForwarderEvents, ForwarderInternals, ForwarderOptions, ForwarderStats, ListenOptions } from './runtime/types';

export type { DeletionResult, ForwarderEvents, ForwarderInternals, ForwarderOptions, ForwarderStats, ListenOptions } from './runtime/types';

/**
 * The forwarding service: ingestion API, durable queue, routing, delivery, deletions and
 * audiences. Create it with `createForwarder(config)`, then `listen()`; `close()` stops it
 * gracefully. Events: `attempt` (one per finished webhook attempt, without the body), `endpoint`
 * (notices for the operator) and `error` (failures in the background).
 *
 * A facade: `runtime/compose.ts` builds the parts (the sources served, the delivery side, the
 * queue's inputs, observability, the admin API and HTTP) and `runtime/lifecycle.ts` opens, starts
 * and closes them in order; each method here hands its call to one of them.
 */
export class Forwarder extends EventEmitter<ForwarderEvents> {
  /** Request handler for a node:http server of your own (call `start()` first). */
  readonly handler: (req: IncomingMessage, res: ServerResponse) => void;
  /** This process among the instances sharing a store: host, pid and a random part. */
  readonly instanceId: string;
  private readonly parts: Parts;

  constructor(config: ResolvedConfig, options: ForwarderOptions = {}, internals: ForwarderInternals = {}) {
    super();
    if (options.store !== undefined) checkStore(options.store);
    this.parts = compose(config, options, internals, this);
    this.handler = this.parts.lifecycle.handler;
    this.instanceId = this.parts.ctx.instanceId;
  }

  /** Names of the sources served now (the config file's until the store opened, then the store's). */
  get sources(): readonly string[] {
    return this.parts.sources.table.names;
  }

  /**
   * Opens the store and starts delivering what it holds. Idempotent; after a failure (the database
   * unreachable, ...) it may be called again, and `close()` still works.
   */
  start(): Promise<void> {
    return this.parts.lifecycle.start();
  }

  /** Starts the HTTP server. Resolves with the address it listens on. */
  listen(options: ListenOptions = {}): Promise<{ url: string; host: string; port: number }> {
    return this.parts.lifecycle.listen(options);
  }

  /** The sources in the store, with their keys (last four characters) and settings (no secret). */
  listSources(): Promise<ShownSource[]> {
    return this.parts.sources.manager.list();
  }

  /**
   * Makes a source without destination and a write key for it (at least 32 random bytes),
   * returned this once: the store keeps only its digest. ValidationError or ConfigError (`field`
   * "name") for a bad or taken name.
   */
  async createSource(name: string): Promise<CreatedSource> {
    return unwrap(await this.parts.sources.manager.create({ name }));
  }

  /** Issues a new write key; the source's other keys keep working `graceSeconds` more (default 86400), then stop. */
  async rotateWriteKey(name: string, options: { readonly graceSeconds?: number } = {}): Promise<IssuedWriteKey> {
    return unwrap(await this.parts.sources.manager.rotate(name, options.graceSeconds === undefined ? {} : { graceSeconds: options.graceSeconds }));
  }

  /** A source's valid write keys: id and last four characters. */
  async writeKeys(name: string): Promise<ShownWriteKey[]> {
    return unwrap(await this.parts.sources.manager.keys(name));
  }

  /**
   * Sets a source's Webhooks destination, checked like the config file's `destinations.Webhooks`
   * (ConfigError with the `field` below it; secrets are values, not `{ "env" }`). Every instance
   * on the store applies it within 2 s.
   */
  async setWebhooks(name: string, settings: WebhooksDestinationConfig): Promise<ShownWebhooks> {
    return unwrap(await this.parts.sources.manager.putWebhooks(name, settings));
  }

  /**
   * Switches a source's Webhooks destination on or off. Off: new calls are accepted but not
   * routed, and deliveries already queued wait (their retry window still counts) until it is on again.
   */
  async setWebhooksEnabled(name: string, enabled: boolean): Promise<ShownWebhooks> {
    return unwrap(await this.parts.sources.manager.patchWebhooks(name, { enabled }));
  }

  /**
   * Sets a source's browser origins and ingestion limit, checked like the config file's entry
   * (ConfigError with the `field`); what `settings` leaves out is not set afterwards. Every instance
   * on the store applies it within 2 s.
   */
  async setSourceSettings(name: string, settings: Pick<SourceConfig, 'allowedOrigins' | 'ingestRateLimit'>): Promise<ShownSettings> {
    return unwrap(await this.parts.sources.manager.putSettings(name, settings));
  }

  /** Removes a source, its keys and audiences; its pending deliveries are failed (see docs/sources.md). */
  async deleteSource(name: string): Promise<DeletedSource> {
    return unwrap(await this.parts.sources.manager.remove(name));
  }

  /**
   * The state of each URL of a source's Webhooks destination: disabled or not, why, and its
   * current run of failures. ValidationError for an unknown source or one without Webhooks.
   */
  async endpoints(name: string): Promise<ShownEndpoint[]> {
    await this.parts.lifecycle.open();
    return unwrap(this.parts.sources.endpointAdmin.list(name));
  }

  /**
   * Enables a URL of a source's Webhooks destination that `delivery.disableAfter` disabled,
   * named by its full URL or as `endpoints()` shows it; every instance sends to it again within 1 s.
   */
  async enableEndpoint(name: string, url: string): Promise<EnabledEndpoint> {
    await this.parts.lifecycle.open();
    return unwrap(await this.parts.sources.endpointAdmin.enable(name, { url }));
  }

  /**
   * Rotates the shared secret of a source's Webhooks destination: `sharedSecret` signs from now on
   * (`X-Signature` with it alone), and the secret it replaces still signs Standard Webhooks
   * requests, beside it, for `graceSeconds` (default 86400), then stops. Every instance applies it
   * within 2 s. ConfigError or ValidationError with `field` for bad input.
   */
  async rotateSharedSecret(name: string, sharedSecret: string, options: { readonly graceSeconds?: number } = {}): Promise<RotatedSecret> {
    const body = { sharedSecret, ...(options.graceSeconds === undefined ? {} : { graceSeconds: options.graceSeconds }) };
    return unwrap(await rotateSecret(this.parts.sources.secrets, name, body));
  }

  /**
   * A source's schema: its controls (`blockedEvents`, `allowedEvents`, `blockedTypes`) and every
   * call type and track event name it sent, with a count, first and last time and whether the
   * controls block it now, over every instance on the store. ValidationError for an unknown source.
   */
  async sourceSchema(name: string): Promise<ShownSchema> {
    return unwrap(await this.parts.schema.get(name));
  }

  /**
   * Replaces a source's schema controls, checked like the config file's `schema` (ConfigError with
   * `field`); a list left out is empty, `allowedEvents` left out or null: no tracking plan. Every
   * instance on the store applies it within 2 s.
   */
  async setSourceSchema(name: string, schema: SourceSchemaConfig): Promise<SourceSchema> {
    return unwrap(await this.parts.schema.put(name, schema));
  }

  /**
   * Each source's calls per UTC day: received (filtered ones included), filtered, rejected,
   * delivered and failed, over every instance on the store. Default: every source, the last 30 days.
   */
  usage(query: UsageQuery = {}): Promise<UsageReport> {
    return this.parts.schema.usage(query);
  }

  /** Sends one signed sample message of `type` (default `track`) to every URL of the source, and reports each. */
  async testWebhooks(name: string, type: TestResult['type'] = 'track'): Promise<TestResult> {
    return unwrap(await this.parts.sources.manager.test(name, { type }));
  }

  /**
   * Makes the store's sources match `sources` (config file entries; `{ "env" }` secrets read from
   * `options.env`), as `eventrelay apply` does; `dryRun` only reports the difference. Sources not
   * listed are left alone.
   */
  applySources(sources: readonly SourceConfig[], options: { readonly dryRun?: boolean } = {}): Promise<ApplyResult> {
    return this.parts.sources.apply(parseSources(sources, this.parts.ctx.options.env ?? process.env), options.dryRun ?? false);
  }

  /**
   * Sends a `delete` notification (spec 2.3) to every affected source whose Webhooks destination
   * is on: all sources, or those named. ValidationError for a missing userId or an unknown source.
   */
  requestDeletion(request: DeletionRequest): Promise<DeletionResult> {
    return this.parts.work.requestDeletion(request);
  }

  /**
   * Replaces an audience's membership (spec 6): an identify with `traits: { <trait>: true }` for
   * each member added (every member on the first sync) and `false` for each member removed.
   */
  syncAudience(request: AudienceSyncRequest): Promise<AudienceSyncResult> {
    return this.parts.work.syncAudience(request);
  }

  stats(): Promise<ForwarderStats> {
    return this.parts.work.stats();
  }

  /**
   * Graceful shutdown: stops accepting (new requests get 503, idle connections close), lets
   * requests being stored finish, waits for the webhook attempts in flight and writes their
   * outcomes, then closes the destinations and the store. Returns the same promise when called again.
   */
  close(): Promise<void> {
    return this.parts.lifecycle.close();
  }
}

/**
 * Creates a forwarder from a config object (see docs/running-the-forwarder.md for the format); checks it at once
 * (ConfigError with `field`), reading `{ "env": NAME }` secrets. Nothing is opened until
 * `listen()` or `start()`.
 */
export function createForwarder(config: ForwarderConfig, options: ForwarderOptions = {}, internals: ForwarderInternals = {}): Forwarder {
  return new Forwarder(parseConfig(config, options.env ?? process.env), options, internals);
}
