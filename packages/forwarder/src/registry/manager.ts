import { randomUUID } from 'node:crypto';
import createDebug from 'debug';
import { ConfigError, integerOption, isPlainObject, serializeWebhookMessage, toWebhookMessage, ValidationError } from 'eventrelay/internal';
import type { InboundMessage } from 'eventrelay/internal';
import { emptySettings, schemaControls, sourceName, sourceSettings, webhooksDestination } from '../config';
import { NETWORK_POLICY_CODE } from '../delivery/network-policy';
import type { ResolvedSource, ResolvedWebhooks } from '../config';
import type { AttemptResult, WebhookDestination } from '../delivery/destination';
import { generateWriteKey, keyRecord, keyValid, newSourceId } from './keys';
import { DEFAULT_GRACE_SECONDS, MAX_GRACE_SECONDS } from './keys';
import { formatPlan, planReconcile, shownBatch, shownUrl, storedWebhooks } from './reconcile';
import type { ReconcileLine, ReconcileMode } from './reconcile';
import { shownSchema } from '../schema-rules';
import { mergeWebhooksPatch, PATCH_FIELDS } from './webhooks-patch';
import { checkTransformRuns, TRANSFORM_TIMEOUT } from '../transform/check';
import type { IngestRateLimit, SetupOp, SetupSnapshot, SetupStore, SetupWriteResult, SourceRecord, SourceSchema, SourceSettings, StoredWebhooks, WebhookFilter, WriteKeyRecord } from '../store/contract';

const log = createDebug('eventrelay:forwarder');

/**
 * How long a test event waits for the URLs' rate limits to allow it, in ms: a test is a real
 * request, so it takes its turn like a delivery, but an admin waiting on an answer gets one.
 */
const TEST_WAIT = 10_000;

/** The `error` of each URL's result when the rate limits allowed no request within TEST_WAIT. */
export const TEST_RATE_LIMITED = 'rate_limited';

/**
 * Why the deliveries of a deleted source were given up: in the queue and the delivery log. The
 * log's lines are finished by every instance as it applies the deletion (see runtime/sources.ts).
 */
export const DELETED_REASON = 'The source was deleted before this delivery was made';

/** The event types the test route sends a sample of. */
export const TEST_EVENT_TYPES = ['track', 'identify', 'page', 'screen', 'group', 'alias', 'delete'] as const;
export type TestEventType = (typeof TEST_EVENT_TYPES)[number];

/** Why a setup request could not be done: the status and code the admin API answers. */
export interface SetupRefusal {
  readonly ok: false;
  readonly status: 404 | 409;
  readonly code: 'not_found' | 'conflict';
  readonly message: string;
  readonly field?: string;
}

export type SetupResult<T> = { readonly ok: true; readonly value: T } | SetupRefusal;

/** A write key as shown: never the key, its digest or more than its last four characters. */
export interface ShownWriteKey {
  readonly id: string;
  readonly last4: string;
  /** `api` (issued by the admin API) or `config` (the config file's `writeKey`). */
  readonly origin: string;
  readonly createdAt: string;
  /** When it stops working (ISO 8601), or null. */
  readonly expiresAt: string | null;
}

/** A Webhooks destination as shown: URLs without credentials or query, header names only, no secret. */
export interface ShownWebhooks {
  readonly enabled: boolean;
  readonly signing: string;
  /** `user`: deliveries in order per user; `none`: as soon as each can go. */
  readonly ordering: 'none' | 'user';
  /** Whether a shared secret is set (it is never shown). */
  readonly hasSharedSecret: boolean;
  /** Each URL with its header names, its rate limit, filter, transform and batching (`null`: none). */
  readonly webhooks: readonly {
    readonly url: string;
    readonly headerNames: readonly string[];
    readonly rateLimit: { readonly perSecond: number } | null;
    readonly filter: WebhookFilter | null;
    /** Its transformation as set (the code is not a secret), or null. */
    readonly transform: { readonly code: string; readonly timeoutMs: number } | null;
    /** How its calls go together, every field shown (the defaults filled), or null: one call a request. */
    readonly batch: { readonly maxEvents: number; readonly maxBytes: number; readonly maxWaitMs: number } | null;
  }[];
}

/** A source's settings as shown: null for what is not set. */
export interface ShownSettings {
  /** Origins browser requests may come from; null: none (requests with an `Origin` are refused). */
  readonly allowedOrigins: readonly string[] | null;
  /** The ingestion limit; null: none. */
  readonly ingestRateLimit: IngestRateLimit | null;
}

export interface ShownSource extends ShownSettings {
  readonly name: string;
  readonly createdAt: string;
  readonly updatedAt: string;
  /** Keys valid now, oldest first. */
  readonly writeKeys: readonly ShownWriteKey[];
  readonly destinations: { readonly Webhooks: ShownWebhooks | null };
  /** Its schema controls (every list present; `allowedEvents` null without a tracking plan). */
  readonly schema: SourceSchema;
}

/** A source's schema controls, with the id of the source they belong to (what its counts are kept by). */
export interface SourceControls {
  readonly name: string;
  readonly id: string;
  readonly schema: SourceSchema | undefined;
}

export interface CreatedSource {
  readonly name: string;
  /** The new write key: shown this once, stored only as a digest. */
  readonly writeKey: string;
  readonly keyId: string;
}

export interface IssuedWriteKey {
  readonly source: string;
  readonly id: string;
  /** The new write key: shown this once, stored only as a digest. */
  readonly writeKey: string;
  /** When the source's other keys stop working (ISO 8601). */
  readonly previousKeysExpireAt: string;
}

export interface DeletedSource {
  readonly name: string;
  /** Pending deliveries of the source, failed by the deletion. */
  readonly failedDeliveries: number;
}

export interface TestResult {
  readonly type: TestEventType;
  readonly messageId: string;
  /** Whether a URL answered 2xx. */
  readonly delivered: boolean;
  /** One per URL, in the order of `webhooks`; `durationMs` null for a URL the network policy refused (no timing for those). */
  readonly results: readonly { readonly url: string; readonly status: number | null; readonly durationMs: number | null; readonly error: string | null }[];
}

export interface ApplyResult {
  readonly lines: readonly ReconcileLine[];
  /** The difference as text (what `eventrelay apply` prints). */
  readonly text: string;
  /** False for a dry run. */
  readonly applied: boolean;
}

/** What the manager needs of the forwarder. */
export interface SetupHost {
  /** The store's setup (opens the store). */
  setup(): Promise<SetupStore>;
  /** Reads the setup and applies it to this instance at once. */
  reload(): Promise<void>;
  /** The destination this instance uses for a source's settings now. */
  destination(name: string): WebhookDestination | undefined;
  /** Checks settings the way a destination would (signing keys, headers): throws ConfigError. */
  checkSettings(settings: ResolvedWebhooks): void;
  now(): number;
  /** How long a test event waits for the URLs' rate limits, in ms (default TEST_WAIT); for tests. */
  readonly testWait?: number;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** A body with only the listed keys; ValidationError names the first other one. */
function fields(body: unknown, allowed: readonly string[], what: string): Record<string, unknown> {
  if (!isPlainObject(body)) throw new ValidationError(`Expected a JSON object body: ${what}`);
  for (const key of Object.keys(body)) {
    if (!allowed.includes(key)) throw new ValidationError(`Unknown field \`${key}\`; expected ${allowed.map((k) => `\`${k}\``).join(', ')}`, key);
  }
  return body;
}

function showKey(k: WriteKeyRecord): ShownWriteKey {
  return { id: k.id, last4: k.last4, origin: k.origin, createdAt: iso(k.createdAt), expiresAt: k.expiresAt === undefined ? null : iso(k.expiresAt) };
}

export function showWebhooks(enabled: boolean, webhooks: StoredWebhooks): ShownWebhooks {
  return {
    enabled,
    signing: webhooks.signing,
    ordering: webhooks.ordering ?? 'none',
    hasSharedSecret: webhooks.sharedSecret !== undefined,
    webhooks: webhooks.webhooks.map((w) => ({
      url: shownUrl(w.url),
      headerNames: Object.keys(w.headers),
      rateLimit: w.rateLimit === undefined ? null : { perSecond: w.rateLimit.perSecond },
      filter: w.filter ?? null,
      transform: w.transform === undefined ? null : { code: w.transform.code, timeoutMs: w.transform.timeoutMs ?? TRANSFORM_TIMEOUT.default },
      batch: w.batch === undefined ? null : shownBatch(w.batch),
    })),
  };
}

/** Each URL's transform compiled in its sandbox and run at its top level, before it is stored: a TransformCompileError names `webhooks[i].transform.code`. */
async function checkTransforms(settings: ResolvedWebhooks): Promise<void> {
  for (const [i, w] of settings.webhooks.entries()) if (w.transform !== undefined) await checkTransformRuns(w.transform, `webhooks[${i}].transform`);
}

export function showSettings(settings: SourceSettings | undefined): ShownSettings {
  return { allowedOrigins: settings?.allowedOrigins ?? null, ingestRateLimit: settings?.ingestRateLimit ?? null };
}

/** Settings from an admin API body: `null` for a field is the same as leaving it out (not set). */
function settingsFrom(input: Record<string, unknown>): SourceSettings {
  return sourceSettings({ allowedOrigins: input.allowedOrigins ?? undefined, ingestRateLimit: input.ingestRateLimit ?? undefined }, '');
}

function showSource(record: SourceRecord, keys: readonly WriteKeyRecord[], now: number): ShownSource {
  return {
    name: record.name,
    ...showSettings(record.settings),
    createdAt: iso(record.createdAt),
    updatedAt: iso(record.updatedAt),
    writeKeys: keys.filter((k) => k.source === record.name && keyValid(k, now)).map(showKey),
    destinations: { Webhooks: record.webhooks === undefined ? null : showWebhooks(record.enabled, record.webhooks) },
    schema: shownSchema(record.schema),
  };
}

function unknownSource(name: string): SetupRefusal {
  return { ok: false, status: 404, code: 'not_found', message: `No source ${JSON.stringify(name)}`, field: 'name' };
}

/** A write's failure in the admin API's terms. */
function refusal(result: Extract<SetupWriteResult, { ok: false }>): SetupRefusal {
  switch (result.reason) {
    case 'exists':
      return { ok: false, status: 409, code: 'conflict', message: `A source named ${JSON.stringify(result.name)} exists already`, field: 'name' };
    case 'missing':
      return unknownSource(result.name);
    case 'key-taken':
      return { ok: false, status: 409, code: 'conflict', message: `That write key belongs to the source ${JSON.stringify(result.name)}`, field: 'writeKey' };
  }
}

/** A sample message of `type`, as a source's receivers get them, marked as a test. */
export function sampleMessage(type: TestEventType, messageId: string, now: number): string {
  const userId = 'test-user';
  const samples: Record<Exclude<TestEventType, 'delete'>, InboundMessage> = {
    track: { type: 'track', userId, event: 'Test Event', properties: { test: true } },
    identify: { type: 'identify', userId, traits: { test: true } },
    page: { type: 'page', userId, name: 'Test Page', properties: { path: '/test', url: 'https://example.com/test', title: 'Test Page', test: true } },
    screen: { type: 'screen', userId, name: 'Test Screen', properties: { test: true } },
    group: { type: 'group', userId, groupId: 'test-group', traits: { test: true } },
    alias: { type: 'alias', userId, previousId: 'test-previous-user' },
  };
  const message = type === 'delete' ? { type, userId } : { ...samples[type], messageId };
  return serializeWebhookMessage(toWebhookMessage(message, { receivedAt: now }));
}

/**
 * Runtime setup of sources: what the admin API and the forwarder's methods do. Every change is
 * one write to the store's setup (one transaction), then applied to this instance before it
 * resolves; other instances apply it within 2 s. Input is checked with the config file's rules
 * (ConfigError or ValidationError with `field`); an unknown source or a taken name is a refusal
 * (404 or 409), never a change.
 */
export class SourceManager {
  constructor(private readonly host: SetupHost) {}

  private async snapshot(): Promise<SetupSnapshot> {
    return (await this.host.setup()).read();
  }

  /** Writes, then applies the change here. */
  private async write(ops: readonly SetupOp[]): Promise<SetupWriteResult> {
    const result = await (await this.host.setup()).write(ops);
    if (result.ok) await this.host.reload();
    return result;
  }

  async list(): Promise<ShownSource[]> {
    const snapshot = await this.snapshot();
    const now = this.host.now();
    return snapshot.sources.map((s) => showSource(s, snapshot.keys, now));
  }

  async get(name: string): Promise<SetupResult<ShownSource>> {
    const snapshot = await this.snapshot();
    const record = snapshot.sources.find((s) => s.name === name);
    return record === undefined ? unknownSource(name) : { ok: true, value: showSource(record, snapshot.keys, this.host.now()) };
  }

  /** `POST /admin/sources {name, allowedOrigins?, ingestRateLimit?}`: a new source without destination, with a generated write key. */
  async create(body: unknown): Promise<SetupResult<CreatedSource>> {
    const input = fields(body, ['name', 'allowedOrigins', 'ingestRateLimit'], '{ "name": "..." }');
    const name = sourceName(input.name, 'name');
    const settings = settingsFrom(input);
    const now = this.host.now();
    const writeKey = generateWriteKey();
    const key = keyRecord(name, writeKey, 'api', now);
    const record: SourceRecord = { name, id: newSourceId(), enabled: false, webhooks: undefined, applied: undefined, createdAt: now, updatedAt: now };
    const result = await this.write([
      { op: 'create', source: emptySettings(settings) ? record : { ...record, settings } },
      { op: 'add-key', key },
    ]);
    if (!result.ok) return refusal(result);
    log('source %s created', name);
    return { ok: true, value: { name, writeKey, keyId: key.id } };
  }

  /** `POST /admin/sources/{name}/write-keys {graceSeconds?}`: a new key; the others stop after the grace. */
  async rotate(name: string, body: unknown): Promise<SetupResult<IssuedWriteKey>> {
    const input = fields(body ?? {}, ['graceSeconds'], '{ "graceSeconds"?: seconds }');
    const grace = integerOption('graceSeconds', input.graceSeconds ?? DEFAULT_GRACE_SECONDS, 0, MAX_GRACE_SECONDS);
    const now = this.host.now();
    const writeKey = generateWriteKey();
    const key = keyRecord(name, writeKey, 'api', now);
    const until = now + grace * 1000;
    const result = await this.write([
      // Fails for an unknown source before the key is added.
      { op: 'update', name, at: now },
      { op: 'add-key', key },
      { op: 'expire-keys', source: name, except: [key.id], at: until },
    ]);
    if (!result.ok) return refusal(result);
    log('source %s: write key rotated (grace %d s)', name, grace);
    return { ok: true, value: { source: name, id: key.id, writeKey, previousKeysExpireAt: iso(until) } };
  }

  async keys(name: string): Promise<SetupResult<ShownWriteKey[]>> {
    const snapshot = await this.snapshot();
    if (!snapshot.sources.some((s) => s.name === name)) return unknownSource(name);
    const now = this.host.now();
    return { ok: true, value: snapshot.keys.filter((k) => k.source === name && keyValid(k, now)).map(showKey) };
  }

  /** `GET /admin/sources/{name}/settings`. */
  async settings(name: string): Promise<SetupResult<ShownSettings>> {
    const record = (await this.snapshot()).sources.find((s) => s.name === name);
    return record === undefined ? unknownSource(name) : { ok: true, value: showSettings(record.settings) };
  }

  /**
   * `PUT /admin/sources/{name}/settings {allowedOrigins?, ingestRateLimit?}`: replaces both, checked
   * like the config file's; a field left out (or null) is not set afterwards.
   */
  async putSettings(name: string, body: unknown): Promise<SetupResult<ShownSettings>> {
    const input = fields(body, ['allowedOrigins', 'ingestRateLimit'], '{ "allowedOrigins": [...], "ingestRateLimit": { "perSecond", "burst" } }');
    const settings = settingsFrom(input);
    const result = await this.write([{ op: 'update', name, at: this.host.now(), settings: emptySettings(settings) ? null : settings }]);
    if (!result.ok) return refusal(result);
    log('source %s: settings set (%d allowed origins, %s)', name, settings.allowedOrigins?.length ?? 0, settings.ingestRateLimit === undefined ? 'no ingestion limit' : `${settings.ingestRateLimit.perSecond}/s`);
    return { ok: true, value: showSettings(settings) };
  }

  /** `PUT .../destinations/Webhooks`: the whole destination, checked like the config file's. */
  async putWebhooks(name: string, body: unknown): Promise<SetupResult<ShownWebhooks>> {
    const settings = webhooksDestination(body, '', null);
    this.host.checkSettings(settings);
    await checkTransforms(settings);
    const stored = storedWebhooks(settings);
    const result = await this.write([{ op: 'update', name, at: this.host.now(), enabled: settings.enabled, webhooks: stored }]);
    if (!result.ok) return refusal(result);
    log('source %s: Webhooks set (%s, %d URLs)', name, settings.enabled ? 'on' : 'off', stored.webhooks.length);
    return { ok: true, value: showWebhooks(settings.enabled, stored) };
  }

  /** A source's schema controls as the store holds them now, with its id. */
  async controls(name: string): Promise<SetupResult<SourceControls>> {
    const record = (await this.snapshot()).sources.find((s) => s.name === name);
    return record === undefined ? unknownSource(name) : { ok: true, value: { name, id: record.id, schema: record.schema } };
  }

  /** Every source's schema controls and id, as the store holds them now. */
  async controlsAll(): Promise<SourceControls[]> {
    return (await this.snapshot()).sources.map((s) => ({ name: s.name, id: s.id, schema: s.schema }));
  }

  /**
   * `PUT /admin/sources/{name}/schema {blockedEvents, allowedEvents, blockedTypes}`: replaces the
   * source's schema controls (a list left out is empty; `allowedEvents` left out or null: no
   * tracking plan), checked like the config file's `schema`.
   */
  async putSchema(name: string, body: unknown): Promise<SetupResult<SourceSchema>> {
    const schema = schemaControls(body, '');
    const result = await this.write([{ op: 'update', name, at: this.host.now(), schema: schema ?? null }]);
    if (!result.ok) return refusal(result);
    log('source %s: schema set (%d blocked events, %s, %d blocked types)', name, schema?.blockedEvents.length ?? 0, schema?.allowedEvents == null ? 'no tracking plan' : `a tracking plan of ${schema.allowedEvents.length}`, schema?.blockedTypes.length ?? 0);
    return { ok: true, value: shownSchema(schema) };
  }

  /**
   * `PATCH .../destinations/Webhooks`: changes only the fields given (see `mergeWebhooksPatch`);
   * `{enabled}` alone switches it on or off. The result is checked like `PUT`'s.
   */
  async patchWebhooks(name: string, body: unknown): Promise<SetupResult<ShownWebhooks>> {
    const input = fields(body, PATCH_FIELDS, '{ "enabled"?, "webhooks"?, "sharedSecret"?, "signing"?, "ordering"? }');
    const onlyEnabled = Object.keys(input).length === 1 && 'enabled' in input;
    if (onlyEnabled && typeof input.enabled !== 'boolean') {
      throw new ConfigError(`Expected \`enabled\` to be a boolean (true or false), got ${typeof input.enabled}`, 'enabled');
    }
    const snapshot = await this.snapshot();
    const record = snapshot.sources.find((s) => s.name === name);
    if (record === undefined) return unknownSource(name);
    if (record.webhooks === undefined) {
      return { ok: false, status: 404, code: 'not_found', message: `The source ${JSON.stringify(name)} has no Webhooks destination; PUT one first` };
    }
    if (onlyEnabled) {
      // Switching leaves the settings as stored, even ones the rules of today would refuse.
      const enabled = input.enabled as boolean;
      const result = await this.write([{ op: 'update', name, at: this.host.now(), enabled }]);
      if (!result.ok) return refusal(result);
      log('source %s: Webhooks switched %s', name, enabled ? 'on' : 'off');
      return { ok: true, value: showWebhooks(enabled, record.webhooks) };
    }
    const merged = mergeWebhooksPatch(record.enabled, record.webhooks, input);
    const settings = webhooksDestination(merged.body, '', null);
    this.host.checkSettings(settings);
    await checkTransforms(settings);
    const previous = merged.sameSecret ? record.webhooks.previousSecrets : undefined;
    const stored: StoredWebhooks = previous === undefined ? storedWebhooks(settings) : { ...storedWebhooks(settings), previousSecrets: previous };
    const result = await this.write([{ op: 'update', name, at: this.host.now(), enabled: settings.enabled, webhooks: stored }]);
    if (!result.ok) return refusal(result);
    log('source %s: Webhooks changed (%s: %s)', name, settings.enabled ? 'on' : 'off', Object.keys(input).join(', '));
    return { ok: true, value: showWebhooks(settings.enabled, stored) };
  }

  /** `DELETE /admin/sources/{name}`: the source, its keys and audiences go; its pending deliveries fail. */
  async remove(name: string): Promise<SetupResult<DeletedSource>> {
    const result = await this.write([{ op: 'delete', name, at: this.host.now(), reason: DELETED_REASON }]);
    if (!result.ok) return refusal(result);
    log('source %s deleted (%d pending deliveries failed)', name, result.failedDeliveries);
    return { ok: true, value: { name, failedDeliveries: result.failedDeliveries } };
  }

  /** `POST .../destinations/Webhooks/test {type}`: one signed sample to every URL, on or off; nothing is queued. */
  async test(name: string, body: unknown): Promise<SetupResult<TestResult>> {
    const input = fields(body ?? {}, ['type'], '{ "type": "track" }');
    const type = input.type ?? 'track';
    if (typeof type !== 'string' || !(TEST_EVENT_TYPES as readonly string[]).includes(type)) {
      throw new ValidationError(`Expected \`type\` to be one of ${TEST_EVENT_TYPES.join(', ')}, got ${typeof type === 'string' ? JSON.stringify(type.slice(0, 40)) : typeof type}`, 'type');
    }
    const snapshot = await this.snapshot();
    const record = snapshot.sources.find((s) => s.name === name);
    if (record === undefined) return unknownSource(name);
    if (record.webhooks === undefined) {
      return { ok: false, status: 404, code: 'not_found', message: `The source ${JSON.stringify(name)} has no Webhooks destination; PUT one first` };
    }
    // The settings just read may be newer than this instance's: apply them first.
    await this.host.reload();
    const now = this.host.now();
    const messageId = `test-${randomUUID()}`;
    const sample = sampleMessage(type as TestEventType, messageId, now);
    const deadline = now + (this.host.testWait ?? TEST_WAIT);
    let result: AttemptResult;
    for (;;) {
      const destination = this.host.destination(name);
      if (destination === undefined) {
        return { ok: false, status: 409, code: 'conflict', message: `The Webhooks settings of ${JSON.stringify(name)} could not be used; PUT them again` };
      }
      result = await destination.attempt(sample, { attempt: 1, firstAttemptAt: now, id: messageId, everyUrl: true });
      // Nothing sent: a rate limit had no slot yet (or the settings were being replaced); wait for its turn.
      if (result.status !== 'retry' || result.outcomes.length > 0) break;
      const wait = Math.max(1, result.nextAttemptAt - this.host.now());
      if (this.host.now() + wait > deadline) break;
      await new Promise((done) => setTimeout(done, wait));
    }
    const results =
      result.outcomes.length === 0 && result.status === 'retry'
        ? record.webhooks.webhooks.map((w) => ({ url: shownUrl(w.url), status: null, durationMs: 0, error: TEST_RATE_LIMITED }))
        : result.outcomes.map((o) => ({
            url: o.url,
            status: o.status ?? null,
            durationMs: o.error?.code === NETWORK_POLICY_CODE ? null : o.durationMs,
            error: o.error === undefined ? null : (o.error as { code?: string }).code ?? 'error',
          }));
    log('source %s: test %s sent to %d URLs', name, type, results.length);
    return { ok: true, value: { type: type as TestEventType, messageId, delivered: result.status === 'delivered', results } };
  }

  /**
   * Applies a config file's sources (`start` at every start, `apply` for `eventrelay apply`);
   * `dryRun` only plans. Two instances starting together may race on a new source: the plan is
   * made again on a conflict.
   */
  async reconcile(sources: readonly ResolvedSource[], mode: ReconcileMode, dryRun = false, graceSeconds = DEFAULT_GRACE_SECONDS): Promise<ApplyResult> {
    for (let tries = 1; ; tries++) {
      const plan = planReconcile(sources, await this.snapshot(), mode, this.host.now(), graceSeconds * 1000);
      if (dryRun || plan.ops.length === 0) return { lines: plan.lines, text: formatPlan(plan.lines), applied: !dryRun && plan.ops.length > 0 };
      const result = await this.write(plan.ops);
      if (result.ok) {
        const changed = plan.lines.filter((l) => l.action === 'create' || l.action === 'update').map((l) => l.source);
        if (changed.length > 0) log('config file sources applied to the store (%s): %s', mode, changed.join(', '));
        return { lines: plan.lines, text: formatPlan(plan.lines), applied: true };
      }
      if (result.reason === 'key-taken') {
        // Another instance gave the key to another source since the plan was made.
        throw new ConfigError(`A write key of the file belongs to the source ${JSON.stringify(result.name)} in the store; write keys must be unique`, 'sources');
      }
      // Another instance wrote the same source meanwhile: plan again from what it wrote.
      if (tries >= 5) throw new ConfigError(`The sources could not be applied: ${refusal(result).message}`, 'sources');
    }
  }
}
