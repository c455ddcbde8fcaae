import { createHash } from 'node:crypto';
import { ConfigError, redactUrl } from 'eventrelay/internal';
import { emptySettings } from '../config';
import type { ResolvedSource, ResolvedWebhooks } from '../config';
import { keyRecord, keyValid, newSourceId, writeKeyDigest } from './keys';
import { BATCH_DEFAULTS } from '../batch-body';
import type { BatchSettings } from '../batch-body';
import type { SetupOp, SetupSnapshot, SourceRecord, SourceSchema, SourceSettings, StoredWebhooks, WebhookBatch, WebhookFilter, WriteKeyRecord } from '../store/contract';

/**
 * The config file's `sources` against the store: what to write, and the difference in words.
 *
 * - `start` (every `eventrelay serve`): a source the file names is written when it is not in the
 *   store, or when its entry in the file changed since the file last set it. Otherwise the store's
 *   version stays, with whatever the admin API changed since.
 * - `apply` (`eventrelay apply`): every source the file names is made to match it.
 *
 * Either way a source the file does not name is left alone, and the file's `writeKey` is made
 * valid: the keys an earlier version of the file set keep working for the grace time, then stop.
 * Keys issued by the admin API are not touched. Nothing secret is ever part of the difference.
 */

/** One source's line of the difference. */
export interface ReconcileLine {
  readonly source: string;
  /** `create`, `update`, `unchanged`; `kept`: in the store only, or (at start) changed there since. */
  readonly action: 'create' | 'update' | 'unchanged' | 'kept';
  /** What changes, in words (values of secrets never shown). */
  readonly changes: readonly string[];
}

export interface ReconcilePlan {
  readonly ops: readonly SetupOp[];
  readonly lines: readonly ReconcileLine[];
}

export type ReconcileMode = 'start' | 'apply';

/** Digest of a file entry, kept with the source: a start re-applies an entry only when it changed. */
export function entryDigest(source: ResolvedSource): string {
  // Settings and `schema` join the digest only when set, so that an entry written before them keeps its digest.
  const settings = fileSettings(source);
  const entry = {
    name: source.name,
    key: writeKeyDigest(source.writeKey),
    webhooks: source.webhooks ?? null,
    ...(settings === undefined ? {} : { settings }),
    ...(source.schema === undefined ? {} : { schema: source.schema }),
  };
  return createHash('sha256').update(JSON.stringify(entry)).digest('base64url');
}

/** A file entry's settings, or undefined when it sets none. */
export function fileSettings(source: ResolvedSource): SourceSettings | undefined {
  return emptySettings(source.settings) ? undefined : source.settings;
}

/** The differences of a source's settings (allowed origins, ingestion limit), in words. */
export function describeSettingsChange(before: SourceSettings | undefined, next: SourceSettings | undefined): string[] {
  const changes: string[] = [];
  const origins = (s: SourceSettings | undefined) => (s?.allowedOrigins === undefined ? 'none' : s.allowedOrigins.length === 0 ? '[]' : s.allowedOrigins.join(', '));
  if (origins(before) !== origins(next)) changes.push(`allowedOrigins: ${origins(before)} → ${origins(next)}`);
  const limit = (s: SourceSettings | undefined) => (s?.ingestRateLimit === undefined ? 'none' : `${s.ingestRateLimit.perSecond}/s, burst ${s.ingestRateLimit.burst}`);
  if (limit(before) !== limit(next)) changes.push(`ingestRateLimit: ${limit(before)} → ${limit(next)}`);
  return changes;
}

/** The stored form of a destination's settings (`enabled` is kept apart). */
export function storedWebhooks(webhooks: ResolvedWebhooks): StoredWebhooks {
  const { enabled: _enabled, ...rest } = webhooks;
  return rest;
}

/** A URL's `batch` as the difference and the admin API show it: every field, the defaults filled. */
export function shownBatch(batch: WebhookBatch): BatchSettings {
  return { maxEvents: batch.maxEvents, maxBytes: batch.maxBytes ?? BATCH_DEFAULTS.maxBytes, maxWaitMs: batch.maxWaitMs ?? BATCH_DEFAULTS.maxWaitMs };
}

function batchText(batch: WebhookBatch | undefined): string {
  if (batch === undefined) return 'none';
  const { maxEvents, maxBytes, maxWaitMs } = shownBatch(batch);
  return `${maxEvents} calls, ${maxBytes} bytes, ${maxWaitMs} ms`;
}

/** A URL as the difference and the admin API show it: no credentials, no query. */
export function shownUrl(url: string): string {
  try {
    return redactUrl(new URL(url));
  } catch {
    return '(a URL that does not parse)';
  }
}

function secretsOf(webhooks: StoredWebhooks | undefined): string {
  const secret = webhooks?.sharedSecret;
  return secret === undefined ? '' : JSON.stringify(typeof secret === 'string' ? [secret] : secret);
}

/** The differences from the store's `record` to the file's settings, in words. */
export function describeChange(record: Pick<SourceRecord, 'enabled' | 'webhooks'> | undefined, enabled: boolean, next: StoredWebhooks | undefined): string[] {
  const before = record?.webhooks;
  const changes: string[] = [];
  if (before === undefined && next === undefined) return changes;
  if (before === undefined) {
    changes.push(`Webhooks added (${enabled ? 'on' : 'off'}, ${next!.webhooks.length} URL${next!.webhooks.length === 1 ? '' : 's'}${next!.sharedSecret === undefined ? '' : ', signed'})`);
    return changes;
  }
  if (next === undefined) {
    changes.push('Webhooks removed');
    return changes;
  }
  if (record!.enabled !== enabled) changes.push(`Webhooks.enabled: ${record!.enabled} → ${enabled}`);
  const count = Math.max(before.webhooks.length, next.webhooks.length);
  for (let i = 0; i < count; i++) {
    const a = before.webhooks[i];
    const b = next.webhooks[i];
    const at = `Webhooks.webhooks[${i}]`;
    if (a === undefined) changes.push(`${at} added: ${shownUrl(b!.url)}`);
    else if (b === undefined) changes.push(`${at} removed: ${shownUrl(a.url)}`);
    else {
      if (a.url !== b.url) changes.push(shownUrl(a.url) === shownUrl(b.url) ? `${at}.url changed (in its credentials or query)` : `${at}.url: ${shownUrl(a.url)} → ${shownUrl(b.url)}`);
      const names = new Set([...Object.keys(a.headers), ...Object.keys(b.headers)]);
      for (const name of names) {
        const where = `${at}.headers[${JSON.stringify(name)}]`;
        if (!(name in a.headers)) changes.push(`${where} added`);
        else if (!(name in b.headers)) changes.push(`${where} removed`);
        else if (a.headers[name] !== b.headers[name]) changes.push(`${where} changed (value not shown)`);
      }
      const limit = (e: typeof a) => (e.rateLimit === undefined ? 'none' : `${e.rateLimit.perSecond}/s`);
      if (limit(a) !== limit(b)) changes.push(`${at}.rateLimit: ${limit(a)} → ${limit(b)}`);
      if (filterText(a.filter) !== filterText(b.filter)) changes.push(`${at}.filter: ${filterText(a.filter)} → ${filterText(b.filter)}`);
      if (a.transform?.code !== b.transform?.code || a.transform?.timeoutMs !== b.transform?.timeoutMs) {
        changes.push(`${at}.transform ${a.transform === undefined ? 'set' : b.transform === undefined ? 'removed' : 'changed'}`);
      }
      if (batchText(a.batch) !== batchText(b.batch)) changes.push(`${at}.batch: ${batchText(a.batch)} → ${batchText(b.batch)}`);
    }
  }
  const beforeSecrets = secretsOf(before);
  const nextSecrets = secretsOf(next);
  if (beforeSecrets !== nextSecrets) {
    changes.push(beforeSecrets === '' ? 'Webhooks.sharedSecret set' : nextSecrets === '' ? 'Webhooks.sharedSecret removed (unsigned)' : 'Webhooks.sharedSecret changed');
  }
  if (before.signing !== next.signing) changes.push(`Webhooks.signing: ${before.signing} → ${next.signing}`);
  if ((before.ordering ?? 'none') !== (next.ordering ?? 'none')) changes.push(`Webhooks.ordering: ${before.ordering ?? 'none'} → ${next.ordering ?? 'none'}`);
  return changes;
}

/** A filter in words: "none", or its types and how many events. */
function filterText(filter: WebhookFilter | undefined): string {
  if (filter === undefined) return 'none';
  const parts = [];
  if (filter.types !== undefined) parts.push(`types ${filter.types.join(', ')}`);
  if (filter.events !== undefined) parts.push(`${filter.events.length} event${filter.events.length === 1 ? '' : 's'}`);
  return parts.join('; ');
}

/** Schema controls in words: how many names each list holds. */
function schemaText(schema: SourceSchema | undefined): string {
  if (schema === undefined) return 'none';
  const names = (n: number) => `${n} name${n === 1 ? '' : 's'}`;
  return [
    `blockedEvents ${names(schema.blockedEvents.length)}`,
    `allowedEvents ${schema.allowedEvents === null ? 'none' : names(schema.allowedEvents.length)}`,
    `blockedTypes ${schema.blockedTypes.length === 0 ? 'none' : schema.blockedTypes.join(', ')}`,
  ].join(', ');
}

/** The difference between two sets of schema controls, in words (empty when they are the same). */
export function describeSchemaChange(before: SourceSchema | undefined, next: SourceSchema | undefined): string[] {
  if (JSON.stringify(before ?? null) === JSON.stringify(next ?? null)) return [];
  if (before === undefined) return [`schema set (${schemaText(next)})`];
  if (next === undefined) return ['schema removed (nothing blocked)'];
  return [`schema changed (${schemaText(next)})`];
}

/**
 * Plans the writes that bring the store's sources to the file's. `graceMs`: how long the keys an
 * earlier file set keep working. Throws ConfigError (`sources[i].writeKey`) when the file gives a
 * source a key another source of the store has.
 */
export function planReconcile(file: readonly ResolvedSource[], snapshot: SetupSnapshot, mode: ReconcileMode, now: number, graceMs: number): ReconcilePlan {
  const ops: SetupOp[] = [];
  const lines: ReconcileLine[] = [];
  const stored = new Map(snapshot.sources.map((s) => [s.name, s]));
  const keysByDigest = new Map(snapshot.keys.map((k) => [k.digest, k]));
  file.forEach((source, i) => {
    const digest = entryDigest(source);
    const keyDigest = writeKeyDigest(source.writeKey);
    const owner = keysByDigest.get(keyDigest);
    if (owner !== undefined && owner.source !== source.name) {
      throw new ConfigError(
        `\`sources[${i}].writeKey\` is a write key of the source ${JSON.stringify(owner.source)} in the store; write keys must be unique`,
        `sources[${i}].writeKey`,
      );
    }
    const enabled = source.webhooks?.enabled ?? false;
    const webhooks = source.webhooks === undefined ? undefined : storedWebhooks(source.webhooks);
    const record = stored.get(source.name);
    const last4 = source.writeKey.slice(-4);
    const settings = fileSettings(source);
    if (record === undefined) {
      const created: SourceRecord = { name: source.name, id: newSourceId(), enabled, webhooks, applied: digest, createdAt: now, updatedAt: now };
      const withSettings: SourceRecord = settings === undefined ? created : { ...created, settings };
      ops.push({ op: 'create', source: source.schema === undefined ? withSettings : { ...withSettings, schema: source.schema } });
      ops.push({ op: 'add-key', key: keyRecord(source.name, source.writeKey, 'config', now) });
      lines.push({
        source: source.name,
        action: 'create',
        changes: [
          ...describeChange(undefined, enabled, webhooks),
          ...describeSettingsChange(undefined, settings),
          ...describeSchemaChange(undefined, source.schema),
          `write key …${last4} from the file`,
        ],
      });
      return;
    }
    const changes = [
      ...describeChange(record, enabled, webhooks),
      ...describeSettingsChange(record.settings, settings),
      ...describeSchemaChange(record.schema, source.schema),
    ];
    const fileKey: WriteKeyRecord | undefined = owner;
    const keyChanges: string[] = [];
    if (fileKey === undefined || !keyValid(fileKey, now) || fileKey.origin !== 'config') keyChanges.push(`write key …${last4} from the file made valid`);
    const keyId = fileKey?.id;
    const older = snapshot.keys.filter((k) => k.source === source.name && k.origin === 'config' && k.id !== keyId && (k.expiresAt === undefined || k.expiresAt > now + graceMs));
    if (older.length > 0) keyChanges.push(`${older.length} write key${older.length === 1 ? '' : 's'} of an earlier file version stop${older.length === 1 ? 's' : ''} in ${Math.round(graceMs / 1000)} s`);
    if (mode === 'start' && record.applied === digest) {
      // The file did not change since it set this source: the store's version (admin API changes included) stays.
      lines.push({ source: source.name, action: changes.length + keyChanges.length === 0 ? 'unchanged' : 'kept', changes: [...changes, ...keyChanges] });
      return;
    }
    const all = [...changes, ...keyChanges];
    if (all.length === 0 && record.applied === digest) {
      lines.push({ source: source.name, action: 'unchanged', changes: [] });
      return;
    }
    const key = keyRecord(source.name, source.writeKey, 'config', now);
    ops.push({ op: 'update', name: source.name, at: now, enabled, webhooks: webhooks ?? null, applied: digest, settings: settings ?? null, schema: source.schema ?? null });
    ops.push({ op: 'add-key', key });
    ops.push({ op: 'expire-keys', source: source.name, origin: 'config', except: [keyId ?? key.id], at: now + graceMs });
    lines.push({ source: source.name, action: all.length === 0 ? 'unchanged' : 'update', changes: all });
  });
  const named = new Set(file.map((s) => s.name));
  for (const record of snapshot.sources) {
    if (!named.has(record.name)) lines.push({ source: record.name, action: 'kept', changes: ['in the store only (not in the file): left as it is'] });
  }
  return { ops, lines };
}

/** The difference as text, one line per source: `+` created, `~` updated, `=` unchanged, ` ` kept. */
export function formatPlan(lines: readonly ReconcileLine[]): string {
  const mark = { create: '+', update: '~', unchanged: '=', kept: ' ' } as const;
  return lines.map((l) => `${mark[l.action]} ${l.source}: ${l.action === 'unchanged' ? 'unchanged' : l.changes.join('; ') || l.action}`).join('\n');
}
