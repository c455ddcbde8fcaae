import { ConfigError, showValue } from 'eventrelay/internal';
import { lazyCheck } from '../validation/check';
import { resolveWebhook } from '../delivery/options';
import { standardSigningKey } from '../delivery/signing';
import { checkSourceName } from '../source-names';
import { parseFilter, parseSchema } from '../schema-rules';
import type { IngestRateLimit, ResolvedWebhookEntry, SourceSchema, SourceSettings, WebhookBatch, WebhookFilter, WebhookTransform } from '../store/contract';
import { checkTransformSyntax, transformOption } from '../transform/check';
import { TransformCompileError } from '../transform/errors';
import { SourceSettingsFields, SourcesInput, WebhooksDestinationInput } from './shapes';
import { join, Problems, secret } from './problems';
import type { Env, ResolvedSource, ResolvedWebhooks } from './types';

/*
 * A source of the config file and the parts the admin API sets alone (its Webhooks destination,
 * its schema controls, its settings): each checked by its schema (config/shapes.ts), then by the
 * rules a schema cannot say, every problem at once.
 */

const checkWebhooks = lazyCheck(WebhooksDestinationInput);
const checkSources = lazyCheck(SourcesInput);
const checkSettings = lazyCheck(SourceSettingsFields);

/**
 * A Webhooks destination: `sources[i].destinations.Webhooks` in the config file (`env` given), or
 * the body of `PUT /admin/sources/{name}/destinations/Webhooks` (`field` '', `env` null): one
 * schema and the same rules, every problem at once (one ConfigError, or one listing them in `problems`).
 */
export function webhooksDestination(value: unknown, field: string, env: Env | null): ResolvedWebhooks {
  const problems = new Problems();
  problems.schema(checkWebhooks(value, field));
  const read = problems.typed(field) ? readWebhooksDestination(value as Record<string, unknown>, field, env, problems) : undefined;
  problems.throwIfAny();
  return read!;
}

/**
 * A source's schema controls: `sources[i].schema` in the config file, or the body of
 * `PUT /admin/sources/{name}/schema` (`field` ''): one schema, then repeats dropped and the names'
 * text checked. Undefined when it controls nothing.
 */
export function schemaControls(value: unknown, field: string): SourceSchema | undefined {
  return parseSchema(value, field);
}

/** The rules of a destination the schema found well-typed at `field`; undefined when one found a problem (noted). */
function readWebhooksDestination(raw: Record<string, unknown>, field: string, env: Env | null, problems: Problems): ResolvedWebhooks | undefined {
  const before = problems.found.length;
  const listField = join(field, 'webhooks');
  const list = problems.typed(listField) ? (raw.webhooks as unknown[]) : [];
  const webhooks = list.map((entry, i) => (problems.typed(`${listField}[${i}]`) ? webhookEntry(entry as Record<string, unknown>, i, `${listField}[${i}]`, env, problems) : undefined));
  const secretField = join(field, 'sharedSecret');
  let sharedSecret: string | (string | undefined)[] | undefined;
  if (raw.sharedSecret !== undefined && problems.clean(secretField)) {
    sharedSecret = Array.isArray(raw.sharedSecret)
      ? raw.sharedSecret.map((item: unknown, i) => problems.take(() => secret(item, `${secretField}[${i}]`, env)))
      : problems.take(() => secret(raw.sharedSecret, secretField, env));
  }
  const signing = (raw.signing ?? 'x-signature') as ResolvedWebhooks['signing'];
  if (problems.typed(join(field, 'signing')) && signing !== 'x-signature') {
    if (raw.sharedSecret === undefined) problems.add(new ConfigError(`\`${join(field, 'signing')}\` is "${signing}", which needs \`${secretField}\` to sign with`, secretField));
    // The destination decodes a whsec_ secret at start; checked here too, so that `check` refuses what `serve` would.
    const all = typeof sharedSecret === 'string' ? [sharedSecret] : (sharedSecret ?? []);
    all.forEach((one, i) => {
      if (one !== undefined) problems.take(() => standardSigningKey(one, typeof sharedSecret === 'string' ? secretField : `${secretField}[${i}]`));
    });
  }
  if (problems.found.length > before || !problems.clean(field)) return undefined;
  return {
    enabled: (raw.enabled ?? true) as boolean,
    webhooks: webhooks as ResolvedWebhookEntry[],
    sharedSecret: sharedSecret as string | string[] | undefined,
    signing,
    // Kept only when on: settings stored before the option read the same as before.
    ...(raw.ordering === 'user' ? { ordering: 'user' as const } : {}),
  };
}

/** One webhook entry: its secrets read first, so that the destination's own rules (URL scheme, header names) see what it will send. */
function webhookEntry(entry: Record<string, unknown>, index: number, field: string, env: Env | null, problems: Problems): ResolvedWebhookEntry | undefined {
  const urlField = join(field, 'url');
  const url = problems.clean(urlField) ? problems.take(() => secret(entry.url, urlField, env)) : undefined;
  const headersField = join(field, 'headers');
  const read = problems.typed(headersField)
    ? Object.entries((entry.headers ?? {}) as Record<string, unknown>).map(([name, raw]) => {
        const at = `${headersField}[${JSON.stringify(name)}]`;
        return [name, problems.clean(at) ? problems.take(() => secret(raw, at, env)) : undefined] as const;
      })
    : undefined;
  const filterField = join(field, 'filter');
  let filter: WebhookFilter | undefined;
  if (entry.filter !== undefined && problems.clean(filterField)) filter = problems.take(() => parseFilter(entry.filter, filterField));
  if (url === undefined) return undefined;
  if (read === undefined || read.some(([, v]) => v === undefined)) {
    // The URL's own rules still run, so that its problem is listed beside the headers'.
    problems.take(() => resolveWebhook({ url, headers: {} }, index, field));
    return undefined;
  }
  const headers = Object.fromEntries(read) as Record<string, string>;
  if (problems.take(() => resolveWebhook({ url, headers }, index, field)) === undefined) return undefined;
  // Read only where the schema found nothing wrong (its problem is noted): `null` is not an object to read.
  const rateLimit = problems.clean(join(field, 'rateLimit')) ? (entry.rateLimit as { perSecond: number } | undefined) : undefined;
  const batch = problems.clean(join(field, 'batch')) ? (entry.batch as WebhookBatch | undefined) : undefined;
  const transformField = join(field, 'transform');
  const given = entry.transform !== undefined && problems.clean(transformField);
  const transform = given ? problems.take(() => transformEntry(entry.transform, transformField)) : undefined;
  if (entry.transform !== undefined && transform === undefined) return undefined;
  return {
    url,
    headers,
    ...(rateLimit === undefined ? {} : { rateLimit: { perSecond: rateLimit.perSecond } }),
    ...(filter === undefined ? {} : { filter }),
    ...(transform === undefined ? {} : { transform }),
    // Kept as written (the schema checked it): a default is filled where it is used.
    ...(batch === undefined ? {} : { batch: storedBatch(batch) }),
  };
}

/** A URL's `batch` the schema took, with only the fields it sets. */
function storedBatch(batch: WebhookBatch): WebhookBatch {
  return {
    maxEvents: batch.maxEvents,
    ...(batch.maxBytes === undefined ? {} : { maxBytes: batch.maxBytes }),
    ...(batch.maxWaitMs === undefined ? {} : { maxWaitMs: batch.maxWaitMs }),
  };
}

/** A URL's `transform`, its code's syntax checked (nothing of it run): a problem is a ConfigError naming `...transform.code`. */
function transformEntry(value: unknown, field: string): WebhookTransform {
  const transform = transformOption(value, field);
  try {
    checkTransformSyntax(transform.code, field);
  } catch (error) {
    if (error instanceof TransformCompileError) throw new ConfigError(error.message, error.field);
    throw error;
  }
  return transform;
}

/** A source name, in the config file and the admin API: see `checkSourceName` for the rules. */
export function sourceName(value: unknown, field: string): string {
  return checkSourceName(value, field);
}

/** One entry of `allowedOrigins` the schema took: `*`, or an origin exactly as a browser sends it. */
function originRule(value: string, field: string): string {
  if (value === '*') return value;
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new ConfigError(`Expected \`${field}\` to be an http or https origin such as "https://shop.example" (or "*" for any), got ${showValue(value)}`, field);
  }
  if (url.origin !== value) {
    // Browsers send the scheme, the lower-case host and a port other than the scheme's own: nothing else.
    throw new ConfigError(`Expected \`${field}\` to be an origin as browsers send it, scheme, host and port only: "${url.origin}", got ${showValue(value)}`, field);
  }
  return value;
}

/**
 * A source's settings: `allowedOrigins` and `ingestRateLimit` of a config file entry (`field` its
 * path), or the body of `PUT /admin/sources/{name}/settings` (`field` ''), checked by their schema,
 * then each origin as browsers send one, every problem at once. Origins are kept in the order
 * given, without repeats; `burst` defaults to one second's worth (at least 1).
 */
export function sourceSettings(raw: { readonly allowedOrigins?: unknown; readonly ingestRateLimit?: unknown }, field: string): SourceSettings {
  const problems = new Problems();
  const given = Object.fromEntries(Object.entries(raw).filter(([, v]) => v !== undefined));
  problems.schema(checkSettings(given, field));
  const settings: { allowedOrigins?: readonly string[]; ingestRateLimit?: IngestRateLimit } = {};
  const listField = join(field, 'allowedOrigins');
  if (raw.allowedOrigins !== undefined && problems.typed(listField)) {
    const origins = (raw.allowedOrigins as string[]).map((entry, i) => (problems.typed(`${listField}[${i}]`) ? problems.take(() => originRule(entry, `${listField}[${i}]`)) : undefined));
    settings.allowedOrigins = [...new Set(origins as string[])];
  }
  const limit = raw.ingestRateLimit as { perSecond: number; burst?: number } | undefined;
  if (limit !== undefined) settings.ingestRateLimit = { perSecond: limit.perSecond, burst: limit.burst ?? Math.max(1, Math.ceil(limit.perSecond)) };
  problems.throwIfAny();
  return settings;
}

/** True when settings set nothing. */
export function emptySettings(settings: SourceSettings | undefined): boolean {
  return settings === undefined || (settings.allowedOrigins === undefined && settings.ingestRateLimit === undefined);
}

/** What `source` read of an entry: a field with a problem is undefined. */
interface ReadSource {
  readonly name?: string;
  readonly writeKey?: string;
  readonly webhooks?: ResolvedWebhooks;
  readonly settings?: SourceSettings;
  readonly schema?: SourceSchema;
}

/** The rules of one source the schema found well-typed at `field`. */
function source(raw: Record<string, unknown>, field: string, env: Env | null, problems: Problems): ReadSource {
  const nameField = join(field, 'name');
  const name = problems.typed(nameField) ? problems.take(() => sourceName(raw.name, nameField)) : undefined;
  const keyField = join(field, 'writeKey');
  const writeKey = problems.clean(keyField) ? problems.take(() => secret(raw.writeKey, keyField, env, false)) : undefined;
  const webhooksField = join(field, 'destinations.Webhooks');
  const destination = (raw.destinations as { Webhooks?: Record<string, unknown> } | undefined)?.Webhooks;
  const webhooks = destination !== undefined && problems.typed(webhooksField) ? readWebhooksDestination(destination, webhooksField, env, problems) : undefined;
  // Each part the schema found fault with is left to its problem.
  const settingsInput = {
    allowedOrigins: problems.clean(join(field, 'allowedOrigins')) ? raw.allowedOrigins : undefined,
    ingestRateLimit: problems.clean(join(field, 'ingestRateLimit')) ? raw.ingestRateLimit : undefined,
  };
  const settings = problems.take(() => sourceSettings(settingsInput, field));
  const schemaField = join(field, 'schema');
  const schema = raw.schema !== undefined && problems.clean(schemaField) ? problems.take(() => parseSchema(raw.schema, schemaField)) : undefined;
  return {
    name,
    writeKey,
    webhooks,
    ...(emptySettings(settings) ? {} : { settings }),
    ...(schema === undefined ? {} : { schema }),
  };
}

/**
 * The config file's `sources` (absent: none, since sources may all be made at runtime), checked
 * with unique names and write keys, every problem of every source at once. `env` null: the list
 * came through the admin API (`POST /admin/apply`), where secrets are values, never `{ "env": NAME }`.
 */
export function parseSources(value: unknown, env: Env | null): ResolvedSource[] {
  const problems = new Problems();
  problems.schema(checkSources(value ?? [], 'sources'));
  const sources = readSources(value, env, problems);
  problems.throwIfAny();
  return sources;
}

/** The rules of `sources` after its schema pass, noting every problem in `problems`. */
export function readSources(value: unknown, env: Env | null, problems: Problems): ResolvedSource[] {
  if (!problems.typed('sources')) return [];
  const list = (value ?? []) as Record<string, unknown>[];
  const sources = list.map((item, i) => (problems.typed(`sources[${i}]`) ? source(item, `sources[${i}]`, env, problems) : {}));
  sources.forEach((s, i) => {
    const earlier = sources.findIndex((o) => o.name === s.name);
    if (s.name !== undefined && earlier !== i) problems.add(new ConfigError(`\`sources[${i}].name\` repeats the name of sources[${earlier}]; names must be unique`, `sources[${i}].name`));
    const sameKey = sources.findIndex((o) => o.writeKey === s.writeKey);
    if (s.writeKey !== undefined && sameKey !== i) {
      problems.add(new ConfigError(`\`sources[${i}].writeKey\` is the same as the write key of sources[${sameKey}]; write keys must be unique`, `sources[${i}].writeKey`));
    }
  });
  return sources as ResolvedSource[];
}
