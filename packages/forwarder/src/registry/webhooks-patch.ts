import { isPlainObject, showValue, ValidationError } from 'eventrelay/internal';
import type { StoredWebhooks } from '../store/contract';

/** The fields of `PATCH .../destinations/Webhooks`: those of `PUT`, each one optional. */
export const PATCH_FIELDS = ['enabled', 'webhooks', 'sharedSecret', 'signing', 'ordering'] as const;

/** The fields of a `webhooks[]` entry of a patch that starts from a URL set now (`from`). */
const FROM_FIELDS = ['from', 'url', 'headers', 'rateLimit', 'filter', 'transform', 'batch'] as const;

export interface MergedPatch {
  /** The whole destination in the shape `PUT` takes, to be checked by the same rules. */
  readonly body: Record<string, unknown>;
  /** Whether the shared secret is the one set now (then the secrets a rotation replaced stay too). */
  readonly sameSecret: boolean;
}

/**
 * Applies a patch to a destination as the store holds it, and answers the whole destination as a
 * `PUT` body. A field left out stays as it is; `sharedSecret: null` removes the secret. In
 * `webhooks`, an entry with `from: i` is the URL now at index i (as `GET` lists them) with only
 * what the entry gives changed: `url` replaces its address; `headers` sets each header named with
 * a string and removes each named with null (names in any case), the others stay; `rateLimit`,
 * `filter`, `transform` and `batch` replace, or remove with null. An entry without `from` is a new
 * URL, as in `PUT`; a URL the list leaves out is removed. Pure: checking the result is the caller's.
 */
export function mergeWebhooksPatch(enabled: boolean, current: StoredWebhooks, patch: Record<string, unknown>): MergedPatch {
  for (const key of Object.keys(patch)) {
    if (!(PATCH_FIELDS as readonly string[]).includes(key)) {
      throw new ValidationError(`Unknown field \`${key}\`; expected ${PATCH_FIELDS.map((k) => `\`${k}\``).join(', ')}`, key);
    }
  }
  const body: Record<string, unknown> = {
    enabled: patch.enabled ?? enabled,
    signing: patch.signing ?? current.signing,
    ordering: patch.ordering ?? current.ordering ?? 'none',
    webhooks: Array.isArray(patch.webhooks) ? patch.webhooks.map((entry, i) => mergeEntry(current, entry, `webhooks[${i}]`)) : (patch.webhooks ?? current.webhooks),
  };
  const sameSecret = patch.sharedSecret === undefined;
  const secret = sameSecret ? current.sharedSecret : patch.sharedSecret;
  if (secret !== undefined && secret !== null) body.sharedSecret = secret;
  return { body, sameSecret };
}

function mergeEntry(current: StoredWebhooks, entry: unknown, field: string): unknown {
  // A new URL (or not an object at all): checked as `PUT` checks it.
  if (!isPlainObject(entry) || !('from' in entry)) return entry;
  for (const key of Object.keys(entry)) {
    if (!(FROM_FIELDS as readonly string[]).includes(key)) {
      throw new ValidationError(`Unknown field \`${field}.${key}\`; expected ${FROM_FIELDS.map((k) => `\`${k}\``).join(', ')}`, `${field}.${key}`);
    }
  }
  const from = entry.from;
  if (typeof from !== 'number' || !Number.isInteger(from) || from < 0 || from >= current.webhooks.length) {
    const range = current.webhooks.length === 1 ? '0' : `0 to ${current.webhooks.length - 1}`;
    throw new ValidationError(`Expected \`${field}.from\` to be the index of a URL set now (${range}), got ${from === undefined ? 'nothing' : showValue(from)}`, `${field}.from`);
  }
  const before = current.webhooks[from]!;
  const merged: Record<string, unknown> = { url: entry.url ?? before.url, headers: mergeHeaders(before.headers, entry.headers, `${field}.headers`) };
  for (const key of ['rateLimit', 'filter', 'transform', 'batch'] as const) {
    const value = key in entry ? entry[key] : before[key];
    if (value !== undefined && value !== null) merged[key] = value;
  }
  return merged;
}

function mergeHeaders(before: Readonly<Record<string, string>>, change: unknown, field: string): Record<string, unknown> {
  if (change === undefined) return { ...before };
  if (!isPlainObject(change)) {
    throw new ValidationError(`Expected \`${field}\` to be an object of header names to values (null removes one), got ${Array.isArray(change) ? 'a list' : typeof change}`, field);
  }
  const headers: Record<string, unknown> = { ...before };
  for (const [name, value] of Object.entries(change)) {
    // Header names are case-insensitive: `x-team` replaces or removes `X-Team`.
    for (const existing of Object.keys(headers)) if (existing.toLowerCase() === name.toLowerCase()) delete headers[existing];
    if (value !== null) headers[name] = value;
  }
  return headers;
}
